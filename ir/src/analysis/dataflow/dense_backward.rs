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
use super::slice::{FlowSlice, Walk};
use super::worklist::OrderedWorklist;
use crate::{Block, Context, Op};
use rustc_hash::FxHashMap;
use std::rc::Rc;

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

    /// [`visit_edge`](Self::visit_edge), borrowing `state` where it goes along `edge` as it is
    /// (the solvers then join it without a copy). By default: `visit_edge`'s state. An analysis
    /// overrides both together, so that they agree.
    fn visit_edge_cow<'s>(
        &self,
        ctx: &Context,
        edge: &Edge,
        state: &'s Self::Lattice,
    ) -> std::borrow::Cow<'s, Self::Lattice> {
        std::borrow::Cow::Owned(self.visit_edge(ctx, edge, state))
    }

    /// The state before a call of a callable with a body, given the state after the call and the
    /// state at the callee's entry (already through [`visit_edge`](Self::visit_edge)). By
    /// default: the callee's entry state.
    fn visit_call_entry(&self, ctx: &Context, call: Op, after: &Self::Lattice, entry: &Self::Lattice) -> Self::Lattice {
        let _ = (ctx, call, after);
        entry.clone()
    }
}

/// Runs a dense backward analysis over the live code of `flow` to a fixpoint (joins are
/// incremental, as in [`super::solve_dense_forward`]).
pub fn solve_dense_backward<A: DenseBackwardAnalysis>(
    ctx: &Context,
    flow: &FlowGraph,
    analysis: &A,
) -> DenseSolution<A::Lattice> {
    let work = OrderedWorklist::new(ctx, flow.root(), true);
    solve(ctx, flow, Walk::Whole, flow.live_blocks(), work, analysis).finish(None)
}

/// Runs a dense backward analysis over the ops `slice` keeps of `flow` (sparse evaluation: the
/// analysis must leave its state as it is at every other op; see [`FlowSlice`]).
pub fn solve_dense_backward_on<A: DenseBackwardAnalysis>(
    ctx: &Context,
    flow: &FlowGraph,
    slice: &Rc<FlowSlice>,
    analysis: &A,
) -> DenseSolution<A::Lattice> {
    if slice.numbered_for(flow) {
        return super::sliced_backward::solve(ctx, flow, slice, analysis);
    }
    let work = OrderedWorklist::over(slice.order(), true);
    solve(ctx, flow, Walk::Slice(slice), slice.live_blocks(), work, analysis).finish(Some(slice.clone()))
}

fn solve<'a, A: DenseBackwardAnalysis>(
    ctx: &'a Context,
    flow: &'a FlowGraph,
    walk: Walk<'a>,
    live: &[Block],
    work: OrderedWorklist,
    analysis: &'a A,
) -> Solver<'a, A> {
    let mut solver = Solver {
        ctx,
        analysis,
        flow,
        walk,
        before: FxHashMap::default(),
        end: FxHashMap::default(),
        arrived: FxHashMap::default(),
        work,
    };
    for &block in live.iter().rev() {
        let terminator = ctx.last_op(block).filter(|&l| matches!(flow.role(ctx, l), Role::Exit { .. } | Role::Branch));
        // Control leaves to code the solver does not see through an open exit, or by running
        // off the end of a block without terminator.
        let open = terminator.is_none_or(|t| flow.is_open_exit(t));
        let state = if open { analysis.exit_state(ctx, block) } else { A::Lattice::bottom() };
        match walk.last_op(ctx, block) {
            Some(last) => solver.work.push(last),
            // An empty block starts where it ends.
            None => solver.send_back(Target::Block(block), &state),
        }
        solver.end.insert(block, state);
    }
    while let Some(op) = solver.work.pop() {
        solver.visit_op(op);
    }
    solver
}

struct Solver<'a, A: DenseBackwardAnalysis> {
    ctx: &'a Context,
    analysis: &'a A,
    flow: &'a FlowGraph,
    walk: Walk<'a>,
    before: FxHashMap<Op, A::Lattice>,
    end: FxHashMap<Block, A::Lattice>,
    /// For region-branch ops and calls: the join of what came back along their edges.
    arrived: FxHashMap<Op, A::Lattice>,
    work: OrderedWorklist,
}

impl<A: DenseBackwardAnalysis> Solver<'_, A> {
    fn finish(self, slice: Option<Rc<FlowSlice>>) -> DenseSolution<A::Lattice> {
        DenseSolution::new(Direction::Backward, self.before, self.end, slice)
    }

    /// The state after `op` (`None`: bottom).
    fn after(&self, op: Op) -> Option<&A::Lattice> {
        let ctx = self.ctx;
        match self.walk.next_op(ctx, op) {
            Some(next) => self.before.get(&next),
            None => ctx.parent_block(op).and_then(|b| self.end.get(&b)),
        }
    }

    /// The state at `target` changed to `state`: what flows back along each edge into it is
    /// joined into the edge's source.
    fn send_back(&mut self, target: Target, state: &A::Lattice) {
        let flow = self.flow;
        for edge in flow.edges_into(target) {
            let returning = self.analysis.visit_edge(self.ctx, edge, state);
            if edge.leaves_before() {
                let arrived = self.arrived.entry(edge.from).or_insert_with(A::Lattice::bottom);
                if arrived.join(&returning) {
                    self.work.push(edge.from);
                }
            } else if let Some(block) = self.ctx.parent_block(edge.from) {
                // `edge.from` is a terminator: the last op of `block`.
                let end = self.end.entry(block).or_insert_with(A::Lattice::bottom);
                if end.join(&returning) {
                    self.work.push(edge.from);
                }
            }
        }
    }

    fn visit_op(&mut self, op: Op) {
        let ctx = self.ctx;
        if self.walk.next_op(ctx, op).is_none() {
            // The block's end is right after its last op (a region-branch op or a call in a block
            // without terminator): the edges to right after it carry it back.
            let after = self.after(op).cloned().unwrap_or_else(A::Lattice::bottom);
            self.send_back(Target::After(op), &after);
        }
        let role = self.walk.role(ctx, self.flow, op);
        let before = match role {
            Role::Definition => self.after(op).cloned().unwrap_or_else(A::Lattice::bottom),
            Role::RegionBranch(_) | Role::Call { .. } => {
                let arrived = self.arrived.get(&op).cloned().unwrap_or_else(A::Lattice::bottom);
                match role {
                    Role::Call { .. } => {
                        let after = self.after(op).cloned().unwrap_or_else(A::Lattice::bottom);
                        self.analysis.visit_call_entry(ctx, op, &after, &arrived)
                    }
                    _ => arrived,
                }
            }
            _ => match self.after(op) {
                Some(after) => self.analysis.visit_op(ctx, op, after),
                None => self.analysis.visit_op(ctx, op, &A::Lattice::bottom()),
            },
        };
        if self.before.get(&op) == Some(&before) {
            return;
        }
        match self.walk.prev_op(ctx, op) {
            Some(previous) => {
                self.work.push(previous);
                self.send_back(Target::After(previous), &before);
            }
            None => {
                let block = ctx.parent_block(op).expect("an op in a block");
                self.send_back(Target::Block(block), &before);
            }
        }
        self.before.insert(op, before);
    }
}
