//! `resolve-aliases`: see [`pass`].
pub mod language;
pub mod pass;
pub mod residues;
pub mod rules;
pub mod specialise;
