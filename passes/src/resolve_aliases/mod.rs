//! `resolve-aliases`: see [`pass`].
mod build;
pub mod language;
pub mod pass;
pub mod residues;
pub mod rules;
pub mod specialise;
pub mod while_rotation;
