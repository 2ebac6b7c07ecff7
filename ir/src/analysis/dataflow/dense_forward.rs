//! Dense forward analyses: a lattice at every program point, flowing from the entries (reaching
//! definitions, "the last store to each buffer", "which buffers are valid on the host").
//!
//! The solver runs over a [`FlowGraph`] computed beforehand. The state before an op is the state
//! after the previous one, or the block's start state; a block starts from the join of what flows
//! along the edges into it ([`DenseForwardAnalysis::visit_edge`]), and from
//! [`DenseForwardAnalysis::entry_state`] when it is an open entry. An op's transfer function gives
//! the state after it, except for ops whose regions or callee the solver follows:
//! - after a region-branch op: the join of what flows along the edges to its results (its
//!   regions' exits, or straight past it);
//! - after a call of a callable with a body: [`DenseForwardAnalysis::visit_call_exit`] of the
//!   state before the call and the join of what the callee's exits return. The callee starts
//!   from the join of the states before all its calls (context-insensitive).
//!
//! Terminators are ops like any other: their transfer function runs, and the state after them is
//! what flows along their edges.

use super::dense_solution::{DenseSolution, Direction};
use super::flow::{Edge, FlowGraph, Role, Target};
use super::lattice::Lattice;
use super::slice::{FlowSlice, Walk};
use super::worklist::OrderedWorklist;
use crate::{Block, Context, Op};
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// A dense forward analysis.
pub trait DenseForwardAnalysis {
    /// The state at each program point.
    type Lattice: Lattice;

    /// The state after `op`, given the state before it.
    fn visit_op(&self, ctx: &Context, op: Op, before: &Self::Lattice) -> Self::Lattice;

    /// The state where control enters `block` from code the solver does not see (the root's
    /// regions, an entry function, a region of an op without interface).
    fn entry_state(&self, ctx: &Context, block: Block) -> Self::Lattice;

    /// What arrives along `edge`, given the state at its source (before `edge.from` for an edge
    /// that [leaves before](Edge::leaves_before) it, after it otherwise). By default: the same
    /// state. An analysis whose state names values renames the forwarded ones here
    /// ([`Edge::bindings`]).
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

    /// The state after a call of a callable with a body, given the state before the call and
    /// what the callee returned (the join over its exits, already through
    /// [`visit_edge`](Self::visit_edge)). By default: what the callee returned.
    fn visit_call_exit(
        &self,
        ctx: &Context,
        call: Op,
        before: &Self::Lattice,
        returned: &Self::Lattice,
    ) -> Self::Lattice {
        let _ = (ctx, call, before);
        returned.clone()
    }

    /// Whether the state where `target` joins is [`merge`](Self::merge)d from what arrives
    /// along each of its edges, rather than joined edge by edge. By default: no.
    fn merges_at(&self, target: Target) -> bool {
        let _ = target;
        false
    }

    /// The state at `target` (a block's start, or right after a region-branch op or call),
    /// given what arrived so far along each edge that reached it (through
    /// [`visit_edge`](Self::visit_edge)), when [`merges_at`](Self::merges_at) says so. An
    /// analysis that decides something where paths meet (a transfer planner placing copies on
    /// the edges into a join, from what each edge brings) decides it here, once the edges
    /// upstream have settled, within the one solve; its result need not be a join of what
    /// arrived, so termination is the analysis' to ensure (decisions that only accumulate, or
    /// that stop after a bounded number of changes). By default: the join.
    fn merge(&self, ctx: &Context, target: Target, arriving: &[(&Edge, Self::Lattice)]) -> Self::Lattice {
        let _ = (ctx, target);
        let mut state = Self::Lattice::bottom();
        for (_, arrived) in arriving {
            state.join(arrived);
        }
        state
    }
}

/// Runs a dense forward analysis over the live code of `flow` to a fixpoint.
///
/// Joins are incremental: when the state at an edge's source changes, only that edge's
/// contribution is joined into its target, so a callee with many call sites costs each call site
/// once per change (transfer functions must be monotone, as for any fixpoint).
pub fn solve_dense_forward<A: DenseForwardAnalysis>(
    ctx: &Context,
    flow: &FlowGraph,
    analysis: &A,
) -> DenseSolution<A::Lattice> {
    let work = OrderedWorklist::new(ctx, flow.root(), false);
    solve(ctx, flow, Walk::Whole, flow.live_blocks(), work, analysis).finish(None)
}

/// Runs a dense forward analysis over the ops `slice` keeps of `flow` (sparse evaluation: the
/// analysis must leave its state as it is at every other op; see [`FlowSlice`]).
pub fn solve_dense_forward_on<A: DenseForwardAnalysis>(
    ctx: &Context,
    flow: &FlowGraph,
    slice: &Rc<FlowSlice>,
    analysis: &A,
) -> DenseSolution<A::Lattice> {
    if slice.numbered_for(flow) {
        return super::sliced_forward::solve(ctx, flow, slice, analysis);
    }
    let work = OrderedWorklist::over(slice.order(), false);
    solve(ctx, flow, Walk::Slice(slice), slice.live_blocks(), work, analysis).finish(Some(slice.clone()))
}

fn solve<'a, A: DenseForwardAnalysis>(
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
        after: FxHashMap::default(),
        start: FxHashMap::default(),
        arrived: FxHashMap::default(),
        merging: FxHashMap::default(),
        work,
    };
    for &block in live {
        let state = if flow.is_open_entry(block) { analysis.entry_state(ctx, block) } else { A::Lattice::bottom() };
        solver.start.insert(block, state);
        if let Some(first) = walk.first_op(ctx, block) {
            solver.work.push(first);
        }
    }
    while let Some(op) = solver.work.pop() {
        solver.visit_op(op);
    }
    solver
}

struct Solver<'a, A: DenseForwardAnalysis> {
    ctx: &'a Context,
    analysis: &'a A,
    flow: &'a FlowGraph,
    walk: Walk<'a>,
    after: FxHashMap<Op, A::Lattice>,
    start: FxHashMap<Block, A::Lattice>,
    /// For region-branch ops and calls: the join of what arrived along the edges to right after
    /// them.
    arrived: FxHashMap<Op, A::Lattice>,
    /// Where the analysis merges ([`DenseForwardAnalysis::merges_at`]): what arrived along each
    /// edge so far.
    merging: FxHashMap<Target, Vec<(&'a Edge, A::Lattice)>>,
    work: OrderedWorklist,
}

impl<'a, A: DenseForwardAnalysis> Solver<'a, A> {
    fn finish(self, slice: Option<Rc<FlowSlice>>) -> DenseSolution<A::Lattice> {
        DenseSolution::new(Direction::Forward, self.after, self.start, slice)
    }

    /// The state before `op` (`None`: bottom).
    fn before(&self, op: Op) -> Option<&A::Lattice> {
        let ctx = self.ctx;
        match self.walk.prev_op(ctx, op) {
            Some(previous) => self.after.get(&previous),
            None => ctx.parent_block(op).and_then(|b| self.start.get(&b)),
        }
    }

    /// Joins what goes along `edge` from a source in `state` into its target (or merges it,
    /// where the analysis merges); the target is visited again when it changed.
    fn send(&mut self, edge: &'a Edge, state: &A::Lattice) {
        let arriving = self.analysis.visit_edge(self.ctx, edge, state);
        let changed = if self.analysis.merges_at(edge.to) {
            self.merge_into(edge, arriving)
        } else {
            self.slot(edge.to).join(&arriving)
        };
        if changed {
            match edge.to {
                Target::Block(block) => {
                    if let Some(first) = self.walk.first_op(self.ctx, block) {
                        self.work.push(first);
                    }
                }
                Target::After(op) => self.work.push(op),
            }
        }
    }

    /// The state where `target` starts: a block's start, or what arrived right after an op.
    fn slot(&mut self, target: Target) -> &mut A::Lattice {
        match target {
            Target::Block(block) => self.start.entry(block).or_insert_with(A::Lattice::bottom),
            Target::After(op) => self.arrived.entry(op).or_insert_with(A::Lattice::bottom),
        }
    }

    /// Records what arrived along `edge` at a target the analysis merges and merges again;
    /// whether the merged state changed.
    fn merge_into(&mut self, edge: &'a Edge, arriving: A::Lattice) -> bool {
        let arrivals = self.merging.entry(edge.to).or_default();
        match arrivals.iter_mut().find(|(e, _)| std::ptr::eq(*e, edge)) {
            Some((_, state)) if *state == arriving => return false,
            Some((_, state)) => *state = arriving,
            None => arrivals.push((edge, arriving)),
        }
        let merged = self.analysis.merge(self.ctx, edge.to, arrivals);
        let slot = self.slot(edge.to);
        if *slot == merged {
            return false;
        }
        *slot = merged;
        true
    }

    fn visit_op(&mut self, op: Op) {
        let ctx = self.ctx;
        let role = self.walk.role(ctx, self.flow, op);
        let after = match role {
            Role::Definition => self.before(op).cloned().unwrap_or_else(A::Lattice::bottom),
            Role::RegionBranch(_) | Role::Call { .. } => {
                let before = self.before(op).cloned().unwrap_or_else(A::Lattice::bottom);
                // The state before the op goes into its regions (or callee), or straight past it.
                let flow = self.flow;
                for edge in flow.edges_from(op) {
                    self.send(edge, &before);
                }
                let arrived = self.arrived.get(&op).cloned().unwrap_or_else(A::Lattice::bottom);
                match role {
                    Role::Call { .. } => self.analysis.visit_call_exit(ctx, op, &before, &arrived),
                    _ => arrived,
                }
            }
            _ => match self.before(op) {
                Some(before) => self.analysis.visit_op(ctx, op, before),
                None => self.analysis.visit_op(ctx, op, &A::Lattice::bottom()),
            },
        };
        if self.after.get(&op) == Some(&after) {
            return;
        }
        if let Some(next) = self.walk.next_op(ctx, op) {
            self.work.push(next);
        }
        let flow = self.flow;
        for edge in flow.edges_from(op).filter(|e| !e.leaves_before()) {
            self.send(edge, &after);
        }
        self.after.insert(op, after);
    }
}
