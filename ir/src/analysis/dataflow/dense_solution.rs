//! The result of a dense analysis: a lattice at every program point of the live code.
//!
//! The program points are the start of each block, the end of each block, and the points before
//! and after each op. A forward analysis stores the state after each op and at each block's start
//! (the state before an op is the state after the previous one); a backward analysis stores the
//! state before each op and at each block's end. Points in code that never runs, and around an op in no block (the root), hold bottom.

use super::flow::{Edge, Target};
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

/// Where a solution keeps its states.
#[derive(Clone, Debug)]
enum States<L> {
    /// By op and by block.
    Keyed {
        /// After each op (forward), or before it (backward).
        ops: FxHashMap<Op, L>,
        /// At each block's start (forward), or end (backward).
        blocks: FxHashMap<Block, L>,
    },
    /// By the numbers of a slice's kept ops and blocks (`None`: bottom).
    Numbered {
        /// After each kept op (forward), or before it (backward).
        ops: Vec<Option<L>>,
        /// At each block's start (forward), or end (backward).
        blocks: Vec<Option<L>>,
    },
}

/// A lattice per program point (see the module documentation).
#[derive(Clone, Debug)]
pub struct DenseSolution<L> {
    direction: Direction,
    states: States<L>,
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
        DenseSolution { direction, states: States::Keyed { ops, blocks }, bottom: L::bottom(), slice }
    }

    /// A solution over `slice`, by the numbers of its kept ops and blocks.
    pub(crate) fn numbered(
        direction: Direction,
        ops: Vec<Option<L>>,
        blocks: Vec<Option<L>>,
        slice: Rc<FlowSlice>,
    ) -> Self {
        DenseSolution { direction, states: States::Numbered { ops, blocks }, bottom: L::bottom(), slice: Some(slice) }
    }

    /// The slice the analysis was solved over, if not the whole flow graph.
    pub fn slice(&self) -> Option<&FlowSlice> {
        self.slice.as_deref()
    }

    /// The state stored for `op` (after it, forward; before it, backward).
    fn at_op(&self, op: Op) -> &L {
        match &self.states {
            States::Keyed { ops, .. } => ops.get(&op),
            States::Numbered { ops, .. } => {
                self.slice.as_ref().and_then(|s| s.number(op)).and_then(|i| ops[i as usize].as_ref())
            }
        }
        .unwrap_or(&self.bottom)
    }

    /// The state stored for `block` (at its start, forward; at its end, backward).
    fn at_block(&self, block: Block) -> &L {
        match &self.states {
            States::Keyed { blocks, .. } => blocks.get(&block),
            States::Numbered { blocks, .. } => {
                self.slice.as_ref().and_then(|s| s.block_number(block)).and_then(|b| blocks[b as usize].as_ref())
            }
        }
        .unwrap_or(&self.bottom)
    }

    /// In a numbered solution, the state at a kept op: the one stored for it where the solve
    /// went `stored` (after it forward, before it backward), else its neighbour's upstream or
    /// its block's (one look-up of the op's number). `None`: another kind of solution, or an
    /// op the slice does not keep.
    fn at_kept(&self, op: Op, stored: Direction) -> Option<&L> {
        let (States::Numbered { ops, blocks }, Some(slice)) = (&self.states, &self.slice) else { return None };
        let i = slice.number(op)?;
        let state = if self.direction == stored {
            &ops[i as usize]
        } else {
            let neighbour = match self.direction {
                Direction::Forward => slice.previous_of(i),
                Direction::Backward => slice.next_of(i),
            };
            if neighbour == super::slice::NONE {
                &blocks[slice.block_of(i) as usize]
            } else {
                &ops[neighbour as usize]
            }
        };
        Some(state.as_ref().unwrap_or(&self.bottom))
    }

    /// The state at a point of a slice's solution: right after the kept op `at`, or at the
    /// start of `op`'s block when `at` is `None` (forward); right before the kept op `at`, or
    /// at the end of the block (backward).
    fn sliced(&self, ctx: &Context, op: Op, at: Option<Op>) -> &L {
        match at {
            Some(kept) => self.at_op(kept),
            None => ctx.parent_block(op).map_or(&self.bottom, |b| self.at_block(b)),
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
        if let Some(state) = self.at_kept(op, Direction::Backward) {
            return state;
        }
        if let Some(slice) = &self.slice {
            return match self.direction {
                Direction::Forward => self.sliced_upstream(ctx, slice, op),
                Direction::Backward if slice.contains(op) => self.at_op(op),
                Direction::Backward => self.sliced_upstream(ctx, slice, op),
            };
        }
        match self.direction {
            Direction::Backward => self.at_op(op),
            Direction::Forward => match ctx.prev_op(op) {
                Some(previous) => self.at_op(previous),
                None => ctx.parent_block(op).map_or(&self.bottom, |block| self.block_start(ctx, block)),
            },
        }
    }

    /// The state right after `op` has run.
    pub fn after(&self, ctx: &Context, op: Op) -> &L {
        if let Some(state) = self.at_kept(op, Direction::Forward) {
            return state;
        }
        if let Some(slice) = &self.slice {
            return match self.direction {
                Direction::Backward => self.sliced_upstream(ctx, slice, op),
                Direction::Forward if slice.contains(op) => self.at_op(op),
                Direction::Forward => self.sliced_upstream(ctx, slice, op),
            };
        }
        match self.direction {
            Direction::Forward => self.at_op(op),
            Direction::Backward => match ctx.next_op(op) {
                Some(next) => self.at_op(next),
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
            (Direction::Forward, _) => self.at_block(block),
            (Direction::Backward, Some(first)) => self.at_op(first),
            (Direction::Backward, None) => self.at_block(block),
        }
    }

    /// The state when `block` ends.
    pub fn block_end(&self, ctx: &Context, block: Block) -> &L {
        let last = match &self.slice {
            Some(slice) => slice.last_op(block),
            None => ctx.last_op(block),
        };
        match (self.direction, last) {
            (Direction::Backward, _) => self.at_block(block),
            (Direction::Forward, Some(last)) => self.at_op(last),
            (Direction::Forward, None) => self.at_block(block),
        }
    }

    /// The state where control arrives at `target` (a block's start, or right after an op).
    pub fn at_target(&self, ctx: &Context, target: Target) -> &L {
        match target {
            Target::Block(block) => self.block_start(ctx, block),
            Target::After(op) => self.after(ctx, op),
        }
    }

    /// The state where `edge` leaves its source: before it for an edge into its regions (or a
    /// callee), after it otherwise.
    pub fn at_source(&self, ctx: &Context, edge: &Edge) -> &L {
        if edge.leaves_before() {
            self.before(ctx, edge.from)
        } else {
            self.after(ctx, edge.from)
        }
    }
}
