//! The dense forward solver over a [`FlowSlice`] by its numbering: the same visits, in the same
//! order, as [`super::dense_forward`]'s solver walking the slice's ops (so the same solution),
//! with the states in vectors indexed by the numbers of the kept ops and blocks, and the
//! neighbours, roles and edges of an op read from the slice instead of hashed for at each visit.

use super::dense_forward::DenseForwardAnalysis;
use super::dense_solution::{DenseSolution, Direction};
use super::flow::{Edge, FlowGraph, Role};
use super::lattice::Lattice;
use super::slice::{FlowSlice, OutEdge, SliceTarget, NONE};
use super::worklist::NumberedWorklist;
use crate::Context;
use std::borrow::Cow;
use std::rc::Rc;

/// Runs `analysis` over `slice` (numbered for `flow`: [`FlowSlice::numbered_for`]).
pub(crate) fn solve<A: DenseForwardAnalysis>(
    ctx: &Context,
    flow: &FlowGraph,
    slice: &Rc<FlowSlice>,
    analysis: &A,
) -> DenseSolution<A::Lattice> {
    let count = slice.ops().len();
    let mut solver = Solver {
        ctx,
        analysis,
        edges: flow.edges(),
        slice,
        after: vec![None; count],
        start: vec![None; slice.block_count()],
        arrived: vec![None; count],
        merging: Vec::new(),
        work: NumberedWorklist::new(count, false),
    };
    for (b, &block) in slice.live_blocks().iter().enumerate() {
        let state = if flow.is_open_entry(block) { analysis.entry_state(ctx, block) } else { A::Lattice::bottom() };
        solver.start[b] = Some(state);
        let first = slice.first_of(b as u32);
        if first != NONE {
            solver.work.push(first);
        }
    }
    while let Some(i) = solver.work.pop() {
        solver.visit(i);
    }
    DenseSolution::numbered(Direction::Forward, solver.after, solver.start, slice.clone())
}

struct Solver<'a, A: DenseForwardAnalysis> {
    ctx: &'a Context,
    analysis: &'a A,
    edges: &'a [Edge],
    slice: &'a FlowSlice,
    /// After each kept op.
    after: Vec<Option<A::Lattice>>,
    /// At each block's start.
    start: Vec<Option<A::Lattice>>,
    /// For region-branch ops and calls: the join of what arrived along the edges to right after
    /// them.
    arrived: Vec<Option<A::Lattice>>,
    /// Where the analysis merges: what arrived along each edge so far, per block and then per
    /// kept op (right after it); empty until the analysis first merges.
    merging: Vec<Vec<(&'a Edge, A::Lattice)>>,
    work: NumberedWorklist,
}

impl<'a, A: DenseForwardAnalysis> Solver<'a, A> {
    /// The state before kept op `i` (`None`: bottom).
    fn before(&self, i: u32) -> Option<&A::Lattice> {
        let previous = self.slice.previous_of(i);
        if previous == NONE {
            self.start[self.slice.block_of(i) as usize].as_ref()
        } else {
            self.after[previous as usize].as_ref()
        }
    }

    /// Joins what goes along `out` from a source in `state` into its target (or merges it, where
    /// the analysis merges); the target is visited again when it changed.
    fn send(&mut self, out: OutEdge, state: &A::Lattice) {
        let edges = self.edges;
        let edge = &edges[out.edge as usize];
        let arriving = self.analysis.visit_edge_cow(self.ctx, edge, state);
        let changed = if self.analysis.merges_at(edge.to) {
            self.merge_into(edge, out.to, arriving)
        } else {
            self.slot(out.to).join(&arriving)
        };
        if changed {
            match out.to {
                SliceTarget::Block(b) => {
                    let first = self.slice.first_of(b);
                    if first != NONE {
                        self.work.push(first);
                    }
                }
                SliceTarget::After(i) => self.work.push(i),
            }
        }
    }

    /// The state where `target` starts: a block's start, or what arrived right after an op.
    fn slot(&mut self, target: SliceTarget) -> &mut A::Lattice {
        match target {
            SliceTarget::Block(b) => self.start[b as usize].get_or_insert_with(A::Lattice::bottom),
            SliceTarget::After(i) => self.arrived[i as usize].get_or_insert_with(A::Lattice::bottom),
        }
    }

    /// Records what arrived along `edge` at a target the analysis merges and merges again;
    /// whether the merged state changed.
    fn merge_into(&mut self, edge: &'a Edge, to: SliceTarget, arriving: Cow<'_, A::Lattice>) -> bool {
        if self.merging.is_empty() {
            self.merging.resize_with(self.slice.block_count() + self.slice.ops().len(), Vec::new);
        }
        let slot = match to {
            SliceTarget::Block(b) => b as usize,
            SliceTarget::After(i) => self.slice.block_count() + i as usize,
        };
        let arrivals = &mut self.merging[slot];
        match arrivals.iter_mut().find(|(e, _)| std::ptr::eq(*e, edge)) {
            Some((_, state)) if *state == *arriving => return false,
            Some((_, state)) => *state = arriving.into_owned(),
            None => arrivals.push((edge, arriving.into_owned())),
        }
        let merged = self.analysis.merge(self.ctx, edge.to, arrivals);
        let slot = self.slot(to);
        if *slot == merged {
            return false;
        }
        *slot = merged;
        true
    }

    fn visit(&mut self, i: u32) {
        let ctx = self.ctx;
        let slice = self.slice;
        let op = slice.ops()[i as usize];
        let role = slice.role_of(i);
        let after = match role {
            Role::Definition => self.before(i).cloned().unwrap_or_else(A::Lattice::bottom),
            Role::RegionBranch(_) | Role::Call { .. } => {
                let before = self.before(i).cloned().unwrap_or_else(A::Lattice::bottom);
                // The state before the op goes into its regions (or callee), or straight past it.
                for &out in slice.out_edges(i) {
                    self.send(out, &before);
                }
                let arrived = self.arrived[i as usize].clone().unwrap_or_else(A::Lattice::bottom);
                match role {
                    Role::Call { .. } => self.analysis.visit_call_exit(ctx, op, &before, &arrived),
                    _ => arrived,
                }
            }
            _ => match self.before(i) {
                Some(before) => self.analysis.visit_op(ctx, op, before),
                None => self.analysis.visit_op(ctx, op, &A::Lattice::bottom()),
            },
        };
        if self.after[i as usize].as_ref() == Some(&after) {
            return;
        }
        let next = slice.next_of(i);
        if next != NONE {
            self.work.push(next);
        }
        for &out in slice.out_edges(i) {
            if !self.edges[out.edge as usize].leaves_before() {
                self.send(out, &after);
            }
        }
        self.after[i as usize] = Some(after);
    }
}
