//! The result of a dense analysis: a lattice at every program point of the live code.
//!
//! The program points are the start of each block, the end of each block, and the points before
//! and after each op. A forward analysis stores the state after each op and at each block's start
//! (the state before an op is the state after the previous one); a backward analysis stores the
//! state before each op and at each block's end. Points in code that never runs, and around an op in no block (the root), hold bottom.

use super::lattice::Lattice;
use super::slice::FlowSlice;
use crate::{Block, Context, Op};
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// Which way a dense analysis went.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the entries to the exits.
    Forward,
    /// From the exits to the entries.
    Backward,
}

/// A lattice per program point (see the module documentation).
#[derive(Clone, Debug)]
pub struct DenseSolution<L> {
    direction: Direction,
    /// After each op (forward), or before it (backward).
    ops: FxHashMap<Op, L>,
    /// At each block's start (forward), or end (backward).
    blocks: FxHashMap<Block, L>,
    bottom: L,
    /// The slice solved over, when not the whole graph: an op it does not keep leaves the state
    /// as it is.
    slice: Option<Rc<FlowSlice>>,
}

impl<L: Lattice> DenseSolution<L> {
    pub(crate) fn new(
        direction: Direction,
        ops: FxHashMap<Op, L>,
        blocks: FxHashMap<Block, L>,
        slice: Option<Rc<FlowSlice>>,
    ) -> Self {
        DenseSolution { direction, ops, blocks, bottom: L::bottom(), slice }
    }

    /// The slice the analysis was solved over, if not the whole flow graph.
    pub fn slice(&self) -> Option<&FlowSlice> {
        self.slice.as_deref()
    }

    /// The state at a point of a slice's solution: right after the kept op `at`, or at the
    /// start of `op`'s block when `at` is `None` (forward); right before the kept op `at`, or
    /// at the end of the block (backward).
    fn sliced(&self, ctx: &Context, op: Op, at: Option<Op>) -> &L {
        match at {
            Some(kept) => self.ops.get(&kept).unwrap_or(&self.bottom),
            None => ctx.parent_block(op).and_then(|b| self.blocks.get(&b)).unwrap_or(&self.bottom),
        }
    }

    /// A forward slice's state before `op` / a backward slice's state after it.
    fn sliced_upstream(&self, ctx: &Context, slice: &FlowSlice, op: Op) -> &L {
        let at = match self.direction {
            Direction::Forward if slice.contains(op) => Ok(slice.prev_op(op)),
            Direction::Forward => slice.at_or_before(ctx, op),
            Direction::Backward if slice.contains(op) => Ok(slice.next_op(op)),
            Direction::Backward => slice.at_or_after(ctx, op),
        };
        match at {
            Ok(at) => self.sliced(ctx, op, at),
            Err(()) => &self.bottom,
        }
    }

    /// Which way the analysis went.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The state right before `op` runs.
    pub fn before(&self, ctx: &Context, op: Op) -> &L {
        if let Some(slice) = &self.slice {
            return match self.direction {
                Direction::Forward => self.sliced_upstream(ctx, slice, op),
                Direction::Backward if slice.contains(op) => self.ops.get(&op).unwrap_or(&self.bottom),
                Direction::Backward => self.sliced_upstream(ctx, slice, op),
            };
        }
        match self.direction {
            Direction::Backward => self.ops.get(&op).unwrap_or(&self.bottom),
            Direction::Forward => match ctx.prev_op(op) {
                Some(previous) => self.ops.get(&previous).unwrap_or(&self.bottom),
                None => ctx.parent_block(op).map_or(&self.bottom, |block| self.block_start(ctx, block)),
            },
        }
    }

    /// The state right after `op` has run.
    pub fn after(&self, ctx: &Context, op: Op) -> &L {
        if let Some(slice) = &self.slice {
            return match self.direction {
                Direction::Backward => self.sliced_upstream(ctx, slice, op),
                Direction::Forward if slice.contains(op) => self.ops.get(&op).unwrap_or(&self.bottom),
                Direction::Forward => self.sliced_upstream(ctx, slice, op),
            };
        }
        match self.direction {
            Direction::Forward => self.ops.get(&op).unwrap_or(&self.bottom),
            Direction::Backward => match ctx.next_op(op) {
                Some(next) => self.ops.get(&next).unwrap_or(&self.bottom),
                None => ctx.parent_block(op).map_or(&self.bottom, |block| self.block_end(ctx, block)),
            },
        }
    }

    /// The state when `block` starts.
    pub fn block_start(&self, ctx: &Context, block: Block) -> &L {
        let first = match &self.slice {
            Some(slice) => slice.first_op(block),
            None => ctx.first_op(block),
        };
        match (self.direction, first) {
            (Direction::Forward, _) => self.blocks.get(&block).unwrap_or(&self.bottom),
            (Direction::Backward, Some(first)) => self.ops.get(&first).unwrap_or(&self.bottom),
            (Direction::Backward, None) => self.blocks.get(&block).unwrap_or(&self.bottom),
        }
    }

    /// The state when `block` ends.
    pub fn block_end(&self, ctx: &Context, block: Block) -> &L {
        let last = match &self.slice {
            Some(slice) => slice.last_op(block),
            None => ctx.last_op(block),
        };
        match (self.direction, last) {
            (Direction::Backward, _) => self.blocks.get(&block).unwrap_or(&self.bottom),
            (Direction::Forward, Some(last)) => self.ops.get(&last).unwrap_or(&self.bottom),
            (Direction::Forward, None) => self.blocks.get(&block).unwrap_or(&self.bottom),
        }
    }
}
