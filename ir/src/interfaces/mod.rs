//! Op interfaces: what analyses and transformations ask of an op instead of matching its name.
//!
//! An interface is a trait object. A dialect (or any crate, for any op: MLIR's "external
//! models") attaches an implementation to an op name with [`Context::attach_interface`]; an
//! analysis asks for it with [`Context::interface`]. Nothing here names a dialect: one inliner, one
//! dataflow solver and one executor serve every dialect that implements these, a vendor's
//! included.
//!
//! The interfaces of the core:
//! - [`CallOpInterface`] and [`CallableOpInterface`]: calls and the functions they call;
//! - [`BranchOpInterface`]: which operands of a branch become its successor blocks' arguments;
//! - [`RegionBranchOpInterface`]: which regions of an op run, in which order, and which values
//!   flow into each region's arguments and out to the op's results;
//! - [`LoopLikeOpInterface`]: counted loops (induction variable, bounds, carried values);
//! - [`LaunchOpInterface`]: device launches (the kernel, its grid, its arguments);
//! - [`ExecutionSpace`]: whether a function-like op's body runs on the host or the device (the
//!   `HOST_CODE` / `DEVICE_CODE` traits).
//!
//! Interfaces defined outside the core work the same way: any `dyn Trait + Sync` can be attached
//! and queried (hat-dialects attaches its scalar semantics this way).
//!
//! Operand positions are given as ranges of operand indices (`Range<usize>`), so that an
//! interface never allocates to answer; [`operand_slice`] turns one into values.

mod branch;
mod call;
mod constants;
mod counted_loop;
mod execution_space;
mod hop_decision;
mod launch;
mod loop_like;
mod region_branch;
mod registry;
mod symbols;

pub use branch::BranchOpInterface;
pub use call::{function_type_signature, resolve_callee, CallOpInterface, CallableOpInterface};
pub use constants::{constant_integer, constant_integers};
pub use counted_loop::CountedLoop;
pub use execution_space::{enclosing_execution_space, execution_space, ExecutionSpace};
pub use hop_decision::{describe_source, distinct_successors, undecided_hop, HopDecision};
pub use launch::LaunchOpInterface;
pub use loop_like::{loops_innermost_first, trip_count, LoopLikeOpInterface};
pub use region_branch::{RegionBranchOpInterface, RegionPoint};
pub(crate) use registry::InterfaceSet;
pub use symbols::{lookup_symbol, nearest_symbol_table, SymbolTable};

use crate::{Context, Op, Value};
use std::ops::Range;

/// The operands of `op` at `range`.
pub fn operand_slice(ctx: &Context, op: Op, range: Range<usize>) -> &[Value] {
    &ctx.operands(op)[range]
}
