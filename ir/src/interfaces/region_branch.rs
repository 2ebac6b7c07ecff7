//! Structured control flow between an op and its regions (MLIR's `RegionBranchOpInterface`).
//!
//! Control enters the op from its parent block ([`RegionPoint::Parent`]), runs some of its
//! regions, and leaves back to the parent. Each hop goes from a point to a successor point:
//!
//! - from `Parent` (entering the op) to a region, or straight back to `Parent` (a loop that runs
//!   zero times, an `if` with no `else`);
//! - from `Region(i)` (its return-like terminator ran) to a region, or to `Parent` (the op ends).
//!
//! Values flow along each hop: entering, the op's operands at
//! [`entry_operands`](RegionBranchOpInterface::entry_operands) bind to the successor's
//! [`successor_inputs`](RegionBranchOpInterface::successor_inputs) (block arguments of the
//! region's entry block, or the op's results); leaving a region, the terminator's operands at
//! [`terminator_operands`](RegionBranchOpInterface::terminator_operands) bind likewise. Block
//! arguments that no hop binds (the induction variable of a counted loop) are set by the op
//! itself; [`super::LoopLikeOpInterface`] describes them.

use crate::{Context, Op};
use smallvec::SmallVec;
use std::ops::Range;

/// Where control is, between an op and its regions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegionPoint {
    /// The op itself, seen from its parent block: before it runs (as a source) or after it (as a
    /// successor).
    Parent,
    /// The region at this index.
    Region(usize),
}

/// Control flow between an op and its regions.
pub trait RegionBranchOpInterface: Sync {
    /// The points control may go to from `from`. `constants` holds the integer constant of each
    /// operand when known (`None` when not): the op's own operands when `from` is `Parent`, the
    /// operands of region `i`'s terminator when `from` is `Region(i)`; it may be shorter than the
    /// operand list, even empty, and a missing entry is unknown. An implementation narrows its
    /// answer with them (`scf.if` on a constant condition has one successor), and must list every
    /// point control may reach when they are unknown.
    fn successors(
        &self,
        ctx: &Context,
        op: Op,
        from: RegionPoint,
        constants: &[Option<i64>],
    ) -> SmallVec<[RegionPoint; 2]>;

    /// The operands of `op` bound to `to`'s inputs when control enters `to` from `Parent`.
    fn entry_operands(&self, ctx: &Context, op: Op, to: RegionPoint) -> Range<usize>;

    /// The operands of region `from`'s terminator `terminator` bound to `to`'s inputs.
    fn terminator_operands(&self, ctx: &Context, op: Op, terminator: Op, from: usize, to: RegionPoint) -> Range<usize> {
        let _ = (op, from, to);
        0..ctx.operands(terminator).len()
    }

    /// The inputs of `to`: indices of the entry block's arguments of region `i` for
    /// `Region(i)`, of the op's results for `Parent`. By default: every block argument, every
    /// result.
    fn successor_inputs(&self, ctx: &Context, op: Op, to: RegionPoint) -> Range<usize> {
        match to {
            RegionPoint::Parent => 0..ctx.result_count(op),
            RegionPoint::Region(i) => {
                let region = ctx.regions(op)[i];
                let count = ctx.region_blocks(region).first().map_or(0, |&b| ctx.block_arguments(b).len());
                0..count
            }
        }
    }

    /// Whether region `index` may run more than once per execution of the op (a loop body).
    fn is_repetitive_region(&self, ctx: &Context, op: Op, index: usize) -> bool {
        let mut seen = vec![false; ctx.regions(op).len()];
        let mut stack: Vec<usize> = Vec::new();
        // Region `index` repeats when it can reach itself.
        for to in self.successors(ctx, op, RegionPoint::Region(index), &[]) {
            if let RegionPoint::Region(r) = to {
                stack.push(r);
            }
        }
        while let Some(r) = stack.pop() {
            if r == index {
                return true;
            }
            if std::mem::replace(&mut seen[r], true) {
                continue;
            }
            for to in self.successors(ctx, op, RegionPoint::Region(r), &[]) {
                if let RegionPoint::Region(next) = to {
                    stack.push(next);
                }
            }
        }
        false
    }
}
