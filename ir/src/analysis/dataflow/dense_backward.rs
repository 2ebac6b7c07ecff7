//! Dense backward analyses: a lattice at every program point, flowing from the exits (live
//! buffers, "will this buffer be read on the host before it is overwritten").
//!
//! The mirror of [`super::dense_forward`], over a [`FlowGraph`] computed beforehand. The state
//! after an op is the state before the next one, or the block's end state; a block ends with the
//! join of what flows back along the edges out of its terminator
//! ([`DenseBackwardAnalysis::visit_edge`], given the state at each edge's target), and with
//! [`DenseBackwardAnalysis::exit_state`] when control may leave to code the solver does not see
//! (an open exit, or a block without terminator). An op's transfer function gives the state
//! before it, except:
//! - before a region-branch op: the join of what flows back along its edges (from its regions'
//!   entries, or from right after it);
//! - before a call of a callable with a body: [`DenseBackwardAnalysis::visit_call_entry`] of the
//!   state after the call and the state at the callee's entry. The callee's exits end with the
//!   join of the states after all its calls (context-insensitive).

use super::dense_solution::{DenseSolution, Direction};
use super::flow::{Edge, FlowGraph, Role, Target};
use super::lattice::Lattice;
use super::worklist::Worklist;
use crate::{Block, Context, Op};
use rustc_hash::FxHashMap;

/// A dense backward analysis.
pub trait DenseBackwardAnalysis {
    /// The state at each program point.
    type Lattice: Lattice;

    /// The state before `op`, given the state after it.
    fn visit_op(&self, ctx: &Context, op: Op, after: &Self::Lattice) -> Self::Lattice;

    /// The state where control leaves `block` to code the solver does not see.
    fn exit_state(&self, ctx: &Context, block: Block) -> Self::Lattice;

    /// What flows back along `edge`, given the state at its target (a block's start, or right
    /// after an op). By default: the same state.
    fn visit_edge(&self, ctx: &Context, edge: &Edge, state: &Self::Lattice) -> Self::Lattice {
        let _ = (ctx, edge);
        state.clone()
    }

    /// The state before a call of a callable with a body, given the state after the call and the
    /// state at the callee's entry (already through [`visit_edge`](Self::visit_edge)). By
    /// default: the callee's entry state.
    fn visit_call_entry(&self, ctx: &Context, call: Op, after: &Self::Lattice, entry: &Self::Lattice) -> Self::Lattice {
        let _ = (ctx, call, after);
        entry.clone()
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Item {
    /// Recompute a block's end state.
    BlockEnd(Block),
    /// Recompute the state before an op.
    Op(Op),
}

/// Runs a dense backward analysis over the live code of `flow` to a fixpoint.
pub fn solve_dense_backward<A: DenseBackwardAnalysis>(
    ctx: &Context,
    flow: &FlowGraph,
    analysis: &A,
) -> DenseSolution<A::Lattice> {
    let mut solver = Solver { ctx, analysis, flow, before: FxHashMap::default(), end: FxHashMap::default() };
    let mut work = Worklist::new();
    for &block in flow.live_blocks().iter().rev() {
        work.push(Item::BlockEnd(block));
    }
    while let Some(item) = work.pop() {
        match item {
            Item::BlockEnd(block) => solver.visit_block_end(block, &mut work),
            Item::Op(op) => solver.visit_op(op, &mut work),
        }
    }
    DenseSolution::new(Direction::Backward, solver.before, solver.end)
}

struct Solver<'a, A: DenseBackwardAnalysis> {
    ctx: &'a Context,
    analysis: &'a A,
    flow: &'a FlowGraph,
    before: FxHashMap<Op, A::Lattice>,
    end: FxHashMap<Block, A::Lattice>,
}

impl<A: DenseBackwardAnalysis> Solver<'_, A> {
    fn after(&self, op: Op) -> A::Lattice {
        let ctx = self.ctx;
        let state = match ctx.next_op(op) {
            Some(next) => self.before.get(&next),
            None => ctx.parent_block(op).and_then(|b| self.end.get(&b)),
        };
        state.cloned().unwrap_or_else(A::Lattice::bottom)
    }

    fn block_start(&self, block: Block) -> A::Lattice {
        let state = match self.ctx.first_op(block) {
            Some(first) => self.before.get(&first),
            None => self.end.get(&block),
        };
        state.cloned().unwrap_or_else(A::Lattice::bottom)
    }

    /// What flows back along `edge` from its target.
    fn returning(&self, edge: &Edge) -> A::Lattice {
        let target = match edge.to {
            Target::Block(block) => self.block_start(block),
            Target::After(op) => self.after(op),
        };
        self.analysis.visit_edge(self.ctx, edge, &target)
    }

    fn visit_block_end(&mut self, block: Block, work: &mut Worklist<Item>) {
        let ctx = self.ctx;
        let last = ctx.last_op(block);
        let terminator = last.filter(|&l| matches!(self.flow.role(ctx, l), Role::Exit { .. } | Role::Branch));
        let mut state = A::Lattice::bottom();
        match terminator {
            Some(terminator) => {
                for edge in self.flow.edges_from(terminator) {
                    state.join(&self.returning(edge));
                }
                if self.flow.is_open_exit(terminator) {
                    state.join(&self.analysis.exit_state(ctx, block));
                }
            }
            // Control runs off the end of the block, out of what the solver sees.
            None => {
                state.join(&self.analysis.exit_state(ctx, block));
            }
        }
        if self.end.get(&block) == Some(&state) {
            return;
        }
        self.end.insert(block, state);
        match last {
            Some(last) => {
                work.push(Item::Op(last));
                self.after_changed(last, work);
            }
            None => self.start_changed(block, work),
        }
    }

    fn visit_op(&mut self, op: Op, work: &mut Worklist<Item>) {
        let ctx = self.ctx;
        let after = self.after(op);
        let role = self.flow.role(ctx, op);
        let before = match role {
            Role::Definition => after,
            Role::RegionBranch(_) | Role::Call { .. } => {
                let mut arrived = A::Lattice::bottom();
                for edge in self.flow.edges_from(op) {
                    arrived.join(&self.returning(edge));
                }
                match role {
                    Role::Call { .. } => self.analysis.visit_call_entry(ctx, op, &after, &arrived),
                    _ => arrived,
                }
            }
            _ => self.analysis.visit_op(ctx, op, &after),
        };
        if self.before.get(&op) == Some(&before) {
            return;
        }
        self.before.insert(op, before);
        match ctx.prev_op(op) {
            Some(previous) => {
                work.push(Item::Op(previous));
                self.after_changed(previous, work);
            }
            None => self.start_changed(ctx.parent_block(op).expect("an op in a block"), work),
        }
    }

    /// The state right after `op` changed: the edges that lead there are revisited.
    fn after_changed(&self, op: Op, work: &mut Worklist<Item>) {
        self.revisit_sources(Target::After(op), work);
    }

    /// The state at `block`'s start changed: the edges that lead there are revisited.
    fn start_changed(&self, block: Block, work: &mut Worklist<Item>) {
        self.revisit_sources(Target::Block(block), work);
    }

    fn revisit_sources(&self, target: Target, work: &mut Worklist<Item>) {
        for edge in self.flow.edges_into(target) {
            if edge.leaves_before() {
                work.push(Item::Op(edge.from));
            } else if let Some(block) = self.ctx.parent_block(edge.from) {
                work.push(Item::BlockEnd(block));
            }
        }
    }
}
