//! Host↔device transfers: the analyses that say what each side reads and writes, and the passes
//! that place the copies.
//!
//! - [`kernel_effects`]: what a dispatch of each kernel reads and writes of each buffer
//!   parameter, and whether it provably writes every element.
//! - [`track_accesses`]: the runtime-tracking strategy's pass: hooks around host accesses, and
//!   each dispatch annotated with its kernel's effects.

pub mod kernel_effects;
pub mod track_accesses;
