//! Host↔device transfers: the analyses that say what each side reads and writes, and the passes
//! that place the copies.
//!
//! - [`kernel_effects`]: what a dispatch of each kernel reads and writes of each buffer
//!   parameter, and whether it provably writes every element;
//! - [`host_effects`]: what host code (and each host function, by a summary) does to each
//!   copy of a buffer;
//! - [`insert`]: the `insert-transfers` pass and its strategies;
//! - [`plan`]: the `static` strategy: availability, anticipation and lazy code motion;
//! - [`hoist`]: the `hoist-transfers` pass;
//! - [`unswitch`]: observers of `arith.select`ed buffers split by the condition, for exact plans.
//! - [`track_accesses`]: the runtime-tracking strategy's pass: hooks around host accesses, and
//!   each dispatch annotated with its kernel's effects.

pub mod aliases;
pub mod dispatch;
pub mod emit;
pub mod hoist;
pub mod host_effects;
pub mod insert;
pub mod kernel_effects;
pub mod plan;
pub mod ranges;
pub mod track_accesses;
pub mod unswitch;
