//! Where code runs. A function-like op declares the execution space of its body with the
//! `HOST_CODE` or `DEVICE_CODE` trait; every op nested in it runs there. Ops outside any such
//! function (a module's body) have no execution space.

use crate::dialect::OpTraits;
use crate::{Context, Op};

/// Where a function's body runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExecutionSpace {
    /// On the host CPU: it reads and writes the host copies of buffers.
    Host,
    /// On the device: it reads and writes the device copies of buffers.
    Device,
}

impl ExecutionSpace {
    /// The trait that declares this space.
    pub fn trait_flag(self) -> OpTraits {
        match self {
            ExecutionSpace::Host => OpTraits::HOST_CODE,
            ExecutionSpace::Device => OpTraits::DEVICE_CODE,
        }
    }
}

/// The execution space `op` declares for its body, if any.
pub fn execution_space(ctx: &Context, op: Op) -> Option<ExecutionSpace> {
    let traits = ctx.traits(op);
    if traits.contains(OpTraits::DEVICE_CODE) {
        Some(ExecutionSpace::Device)
    } else if traits.contains(OpTraits::HOST_CODE) {
        Some(ExecutionSpace::Host)
    } else {
        None
    }
}

/// The nearest op strictly enclosing `op` that declares an execution space, and that space.
pub fn enclosing_execution_space(ctx: &Context, op: Op) -> Option<(Op, ExecutionSpace)> {
    let mut current = ctx.parent_op(op);
    while let Some(ancestor) = current {
        if let Some(space) = execution_space(ctx, ancestor) {
            return Some((ancestor, space));
        }
        current = ctx.parent_op(ancestor);
    }
    None
}
