//! Residency: where the current contents of each buffer are (host copy, device copy, both), and
//! the copies that follow from it — for the runtime-tracking strategy
//! ([`TransferMode::Tracking`](super::TransferMode::Tracking)) and for buffers kept on the device
//! across calls ([`session::Session`]).
//!
//! - `element_set.rs`: sets of elements as ranges;
//! - `residence.rs`: one buffer's state and what each access needs copied (pure bookkeeping);
//! - `annotations.rs`: the attributes through which passes describe a program to the runtime;
//! - `tracker.rs`: every buffer of a run, and the copies, at dispatches, hooks, transfers and
//!   host accesses;
//! - `session.rs`: the library API for calling one module many times;
//! - `aliasing.rs`: the check of arguments passed twice to a session call.

pub(crate) mod aliasing;
pub(crate) mod annotations;
pub(crate) mod element_set;
pub(crate) mod residence;
pub mod session;
pub(crate) mod tracker;

pub(crate) use residence::{Policy, Residence};
pub(crate) use tracker::{HostAccess, Io, Tracker};

#[cfg(test)]
mod tests;
