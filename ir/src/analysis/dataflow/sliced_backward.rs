//! The dense backward solver over a [`FlowSlice`] by its numbering: the same visits, in the
//! same order, as [`super::dense_backward`]'s solver walking the slice's ops (so the same
//! solution), with the states in vectors indexed by the numbers of the kept ops and blocks.

use super::dense_backward::DenseBackwardAnalysis;
use super::dense_solution::{DenseSolution, Direction};
use super::flow::{Edge, FlowGraph, Role};
use super::lattice::Lattice;
use super::slice::{FlowSlice, InEdge, NONE};
use super::worklist::NumberedWorklist;
use crate::Context;
use std::rc::Rc;

/// Runs `analysis` over `slice` (numbered for `flow`: [`FlowSlice::numbered_for`]).
pub(crate) fn solve<A: DenseBackwardAnalysis>(
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
        before: vec![None; count],
        end: vec![None; slice.block_count()],
        arrived: vec![None; count],
        work: NumberedWorklist::new(count, true),
    };
    for (b, &block) in slice.live_blocks().iter().enumerate().rev() {
        let b = b as u32;
        let state = if slice.open_end(b) { analysis.exit_state(ctx, block) } else { A::Lattice::bottom() };
        let last = slice.last_of(b);
        if last == NONE {
            // An empty block starts where it ends.
            solver.send_back(slice.edges_into_block(b), &state);
        } else {
            solver.work.push(last);
        }
        solver.end[b as usize] = Some(state);
    }
    while let Some(i) = solver.work.pop() {
        solver.visit(i);
    }
    DenseSolution::numbered(Direction::Backward, solver.before, solver.end, slice.clone())
}

struct Solver<'a, A: DenseBackwardAnalysis> {
    ctx: &'a Context,
    analysis: &'a A,
    edges: &'a [Edge],
    slice: &'a FlowSlice,
    /// Before each kept op.
    before: Vec<Option<A::Lattice>>,
    /// At each block's end.
    end: Vec<Option<A::Lattice>>,
    /// For region-branch ops and calls: the join of what came back along their edges.
    arrived: Vec<Option<A::Lattice>>,
    work: NumberedWorklist,
}

impl<A: DenseBackwardAnalysis> Solver<'_, A> {
    /// The state after kept op `i` (`None`: bottom).
    fn after(&self, i: u32) -> Option<&A::Lattice> {
        let next = self.slice.next_of(i);
        if next == NONE {
            self.end[self.slice.block_of(i) as usize].as_ref()
        } else {
            self.before[next as usize].as_ref()
        }
    }

    /// The state at a target changed to `state`: what flows back along each edge into it
    /// (`edges`) is joined into the edge's source.
    fn send_back(&mut self, edges: &[InEdge], state: &A::Lattice) {
        for &into in edges {
            let edge = &self.edges[into.edge as usize];
            let returning = self.analysis.visit_edge_cow(self.ctx, edge, state);
            let slot = if edge.leaves_before() {
                &mut self.arrived[into.from as usize]
            } else {
                // `edge.from` is a terminator: the last op of its block.
                &mut self.end[self.slice.block_of(into.from) as usize]
            };
            if slot.get_or_insert_with(A::Lattice::bottom).join(&returning) {
                self.work.push(into.from);
            }
        }
    }

    fn visit(&mut self, i: u32) {
        let ctx = self.ctx;
        let slice = self.slice;
        let op = slice.ops()[i as usize];
        if slice.next_of(i) == NONE {
            // The block's end is right after its last op (a region-branch op or a call in a block
            // without terminator): the edges to right after it carry it back.
            let after = self.after(i).cloned().unwrap_or_else(A::Lattice::bottom);
            self.send_back(slice.edges_into_after(i), &after);
        }
        let role = slice.role_of(i);
        let before = match role {
            Role::Definition => self.after(i).cloned().unwrap_or_else(A::Lattice::bottom),
            Role::RegionBranch(_) | Role::Call { .. } => {
                let arrived = self.arrived[i as usize].clone().unwrap_or_else(A::Lattice::bottom);
                match role {
                    Role::Call { .. } => {
                        let after = self.after(i).cloned().unwrap_or_else(A::Lattice::bottom);
                        self.analysis.visit_call_entry(ctx, op, &after, &arrived)
                    }
                    _ => arrived,
                }
            }
            _ => match self.after(i) {
                Some(after) => self.analysis.visit_op(ctx, op, after),
                None => self.analysis.visit_op(ctx, op, &A::Lattice::bottom()),
            },
        };
        if self.before[i as usize].as_ref() == Some(&before) {
            return;
        }
        let previous = slice.previous_of(i);
        if previous == NONE {
            self.send_back(slice.edges_into_block(slice.block_of(i)), &before);
        } else {
            self.work.push(previous);
            self.send_back(slice.edges_into_after(previous), &before);
        }
        self.before[i as usize] = Some(before);
    }
}
