//! Sparse backward analyses: a lattice per value, computed from how the value is used (which
//! values are used at all, which buffers a kernel reads).
//!
//! The solver runs over a [`FlowGraph`] computed beforehand (by [`FlowGraph::new`], or by a
//! sparse forward analysis that narrowed the branches): only live code is visited. An op's
//! operands get what its transfer function derives from its results; along each edge, an operand
//! gets what its bound input (block argument or result) gets. Operands that no edge forwards (a
//! branch condition, a loop bound) get [`SparseBackwardAnalysis::visit_branch_operand`]; the
//! operands of an exit through which values leave to code the solver does not see (the return of
//! an entry function) get [`SparseBackwardAnalysis::exit_state`].

use super::flow::{FlowGraph, Role, Target};
use super::lattice::Lattice;
use super::sparse_forward::SparseSolution;
use super::worklist::Worklist;
use crate::{Context, Op, Value, ValueDef};
use rustc_hash::FxHashMap;

/// A sparse backward analysis.
pub trait SparseBackwardAnalysis {
    /// The lattice of each value.
    type Lattice: Lattice;

    /// Sets `operands` (bottom on entry) from the lattices of `op`'s results. Called for ops
    /// without control flow of their own and ops with regions and no interface.
    fn visit_op(&self, ctx: &Context, op: Op, operands: &mut [Self::Lattice], results: &[&Self::Lattice]);

    /// The state of operand `index` of a control-flow op (branch, region-branch op, terminator,
    /// call) that no edge forwards: a condition or a bound, which decides where control goes.
    fn visit_branch_operand(&self, ctx: &Context, op: Op, index: usize) -> Self::Lattice;

    /// The state of a value that leaves to code the solver does not see (returned by an entry
    /// function, or yielded by a region of an op without interface).
    fn exit_state(&self, ctx: &Context, value: Value) -> Self::Lattice;

    /// Sets the operands of a call whose callee's body is not visible. By default:
    /// [`visit_op`](Self::visit_op).
    fn visit_external_call(&self, ctx: &Context, call: Op, operands: &mut [Self::Lattice], results: &[&Self::Lattice]) {
        self.visit_op(ctx, call, operands, results);
    }
}

/// Runs a sparse backward analysis over the live code of `flow` to a fixpoint.
pub fn solve_sparse_backward<A: SparseBackwardAnalysis>(
    ctx: &Context,
    flow: &FlowGraph,
    analysis: &A,
) -> SparseSolution<A::Lattice> {
    let mut solver =
        Solver { ctx, analysis, flow, values: FxHashMap::default(), work: Worklist::new(), changed: Vec::new() };
    for &block in flow.live_blocks().iter().rev() {
        let mut cursor = ctx.last_op(block);
        while let Some(op) = cursor {
            solver.work.push(op);
            cursor = ctx.prev_op(op);
        }
    }
    loop {
        if let Some(value) = solver.changed.pop() {
            solver.value_changed(value);
        } else if let Some(op) = solver.work.pop() {
            solver.visit(op);
        } else {
            break;
        }
    }
    SparseSolution::new(solver.values, flow.clone())
}

struct Solver<'a, A: SparseBackwardAnalysis> {
    ctx: &'a Context,
    analysis: &'a A,
    flow: &'a FlowGraph,
    values: FxHashMap<Value, A::Lattice>,
    work: Worklist<Op>,
    /// Values whose lattice changed and was not passed on yet.
    changed: Vec<Value>,
}

impl<A: SparseBackwardAnalysis> Solver<'_, A> {
    fn lattice(&self, value: Value) -> A::Lattice {
        self.values.get(&value).cloned().unwrap_or_else(A::Lattice::bottom)
    }

    fn join(&mut self, value: Value, state: &A::Lattice) {
        if state.is_bottom() {
            return;
        }
        let changed = match self.values.get_mut(&value) {
            Some(existing) => existing.join(state),
            None => {
                self.values.insert(value, state.clone());
                true
            }
        };
        if changed {
            self.changed.push(value);
        }
    }

    /// Passes a changed lattice on: to the operands of its defining op (visited again), or along
    /// the edges that bind it, straight into the operand each binds (so a value bound by many
    /// edges, the result of a call, costs one join per edge).
    fn value_changed(&mut self, value: Value) {
        let ctx = self.ctx;
        let target = match ctx.value_def(value) {
            ValueDef::BlockArgument { block, .. } => Target::Block(block),
            ValueDef::Result { op, .. } => match self.flow.role(ctx, op) {
                Role::RegionBranch(_) | Role::Call { .. } => Target::After(op),
                _ => {
                    self.work.push(op);
                    return;
                }
            },
        };
        let state = self.lattice(value);
        let mut operands = Vec::new();
        for edge in self.flow.edges_into(target) {
            if let Some((index, _)) = edge.binding_indices(ctx).find(|&(_, input)| input == value) {
                operands.push(ctx.operand(edge.from, index));
            }
        }
        for operand in operands {
            self.join(operand, &state);
        }
    }
    fn visit(&mut self, op: Op) {
        let ctx = self.ctx;
        let role = self.flow.role(ctx, op);
        match role {
            Role::Definition => {}
            Role::Plain | Role::Opaque | Role::ExternalCall => {
                let results: Vec<A::Lattice> = ctx.results(op).map(|v| self.lattice(v)).collect();
                let results: Vec<&A::Lattice> = results.iter().collect();
                let mut operands = vec![A::Lattice::bottom(); ctx.operands(op).len()];
                match role {
                    Role::ExternalCall => self.analysis.visit_external_call(ctx, op, &mut operands, &results),
                    _ => self.analysis.visit_op(ctx, op, &mut operands, &results),
                }
                for (&value, state) in ctx.operands(op).iter().zip(&operands) {
                    self.join(value, state);
                }
            }
            Role::RegionBranch(_) | Role::Call { .. } | Role::Exit { .. } | Role::Branch => {
                let mut forwarded = vec![false; ctx.operands(op).len()];
                let bindings: Vec<(usize, Value)> =
                    self.flow.edges_from(op).flat_map(|edge| edge.binding_indices(ctx)).collect();
                for (index, input) in bindings {
                    forwarded[index] = true;
                    let state = self.lattice(input);
                    self.join(ctx.operand(op, index), &state);
                }
                let open = self.flow.is_open_exit(op);
                for (index, &value) in ctx.operands(op).iter().enumerate() {
                    if open {
                        let state = self.analysis.exit_state(ctx, value);
                        self.join(value, &state);
                    } else if !forwarded[index] {
                        let state = self.analysis.visit_branch_operand(ctx, op, index);
                        self.join(value, &state);
                    }
                }
            }
        }
    }
}
