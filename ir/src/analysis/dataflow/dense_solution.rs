//! The result of a dense analysis: a lattice at every program point of the live code.
//!
//! The program points are the start of each block, the end of each block, and the points before
//! and after each op. A forward analysis stores the state after each op and at each block's start
//! (the state before an op is the state after the previous one); a backward analysis stores the
//! state before each op and at each block's end. Points in code that never runs, and around an op in no block (the root), hold bottom.

use super::lattice::Lattice;
use crate::{Block, Context, Op};
use rustc_hash::FxHashMap;

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
}

impl<L: Lattice> DenseSolution<L> {
    pub(crate) fn new(direction: Direction, ops: FxHashMap<Op, L>, blocks: FxHashMap<Block, L>) -> Self {
        DenseSolution { direction, ops, blocks, bottom: L::bottom() }
    }

    /// Which way the analysis went.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The state right before `op` runs.
    pub fn before(&self, ctx: &Context, op: Op) -> &L {
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
        match (self.direction, ctx.first_op(block)) {
            (Direction::Forward, _) => self.blocks.get(&block).unwrap_or(&self.bottom),
            (Direction::Backward, Some(first)) => self.ops.get(&first).unwrap_or(&self.bottom),
            (Direction::Backward, None) => self.blocks.get(&block).unwrap_or(&self.bottom),
        }
    }

    /// The state when `block` ends.
    pub fn block_end(&self, ctx: &Context, block: Block) -> &L {
        match (self.direction, ctx.last_op(block)) {
            (Direction::Backward, _) => self.blocks.get(&block).unwrap_or(&self.bottom),
            (Direction::Forward, Some(last)) => self.ops.get(&last).unwrap_or(&self.bottom),
            (Direction::Forward, None) => self.blocks.get(&block).unwrap_or(&self.bottom),
        }
    }
}
