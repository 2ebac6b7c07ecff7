//! Device launches: an op that runs a kernel once per work item of a grid (`compute.dispatch`).
//! The kernel is a callable with the `DEVICE_CODE` trait; its parameters bind, one to one, to the
//! launch's arguments. Arguments of memref type are buffers (the kernel touches their device
//! copy); the others are scalars passed by value.

use crate::{Context, Ident, Op};
use std::ops::Range;

/// An op that launches a kernel on the device.
pub trait LaunchOpInterface: Sync {
    /// The kernel's symbol.
    fn kernel(&self, ctx: &Context, op: Op) -> Option<Ident>;

    /// The operands giving the number of work items in each dimension (x first; 1 to 3 of them).
    fn grid(&self, ctx: &Context, op: Op) -> Range<usize>;

    /// The operands passed to the kernel's parameters.
    fn arguments(&self, ctx: &Context, op: Op) -> Range<usize>;
}
