//! Branches between the blocks of a region (MLIR's `BranchOpInterface`).
//!
//! A block's last op may name successor blocks of the same region ([`Context::successors`]);
//! control goes to one of them. This interface says which of the op's operands become the
//! arguments of each successor, one to one. An op with successors and without this interface is
//! still followed by the analyses, conservatively: every successor may run and its arguments are
//! unknown.

use crate::{Context, Op};
use std::ops::Range;

/// An op that branches to its successor blocks, passing them arguments.
pub trait BranchOpInterface: Sync {
    /// The operands passed to the arguments of successor `index` (an index into
    /// [`Context::successors`]).
    fn successor_operands(&self, ctx: &Context, op: Op, index: usize) -> Range<usize>;

    /// The one successor taken when the operands have these constants (`constants` as in
    /// [`super::RegionBranchOpInterface::successors`]: an entry per operand, `None` when not
    /// known, possibly shorter than the operand list); `None` when it cannot be told.
    fn successor_for_constants(&self, ctx: &Context, op: Op, constants: &[Option<i64>]) -> Option<usize> {
        let _ = (ctx, op, constants);
        None
    }
}
