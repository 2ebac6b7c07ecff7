//! Sparse forward analyses: a lattice per value, computed from the values an op uses (constant
//! propagation, integer ranges).
//!
//! The solver discovers the control flow as it goes (as MLIR's `DeadCodeAnalysis` does beside a
//! sparse analysis): an op is visited only once its block is live, and an analysis that can tell
//! a branch's condition ([`SparseForwardAnalysis::branch_value`]) narrows the branch: an `scf.if`
//! on a value it proved constant opens one region only. Values flow along the edges of the
//! [`FlowGraph`] (operands to block arguments and results); inputs no edge binds get
//! [`SparseForwardAnalysis::entry_state`], except the induction variable of a loop-like op, which
//! gets [`SparseForwardAnalysis::visit_induction_variable`]. The solution keeps the flow graph it
//! found, so that later analyses (dense ones, say) run on the same narrowed control flow.

use super::flow::{Discoveries, Edge, EdgeKind, FlowGraph, Role, Target};
use super::lattice::Lattice;
use super::worklist::Worklist;
use crate::analysis::call_graph::CallGraph;
use crate::interfaces::{BranchOpInterface, LoopLikeOpInterface, RegionBranchOpInterface};
use crate::{Context, Op, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// What a lattice value says about a branch condition (or any operand a branch may narrow on).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BranchValue {
    /// Nothing has arrived yet (bottom): wait before opening any successor.
    Pending,
    /// The value is always this integer (`i1`: 0 or 1).
    Constant(i64),
    /// Not one known integer: every successor may run.
    Unknown,
}

/// The bounds of a loop-like op, as lattice values (`None` where the interface names none).
#[derive(Debug)]
pub struct LoopBounds<'a, L> {
    /// The first value of the induction variable.
    pub lower: Option<&'a L>,
    /// The bound it stays below.
    pub upper: Option<&'a L>,
    /// The increment.
    pub step: Option<&'a L>,
}

/// A sparse forward analysis: a transfer function per op and what to assume where nothing is
/// known.
pub trait SparseForwardAnalysis {
    /// The lattice of each value.
    type Lattice: Lattice;

    /// Sets `results` (bottom on entry) from the lattices of `op`'s operands. Called for ops
    /// without control flow of their own, and for ops with regions and no interface (whose regions
    /// are entered with [`entry_state`](Self::entry_state)).
    fn visit_op(&self, ctx: &Context, op: Op, operands: &[&Self::Lattice], results: &mut [Self::Lattice]);

    /// The pessimistic state of a value the solver cannot follow: an argument of an entry
    /// function, of a block entered from code it does not see, an input no edge binds.
    fn entry_state(&self, ctx: &Context, value: Value) -> Self::Lattice;

    /// Sets the results of a call whose callee's body is not visible (a declaration, an
    /// unresolved symbol). By default: [`entry_state`](Self::entry_state).
    fn visit_external_call(&self, ctx: &Context, call: Op, operands: &[&Self::Lattice], results: &mut [Self::Lattice]) {
        let _ = operands;
        for (result, value) in results.iter_mut().zip(ctx.results(call)) {
            *result = self.entry_state(ctx, value);
        }
    }

    /// The induction variable of a loop-like op, given its bounds. By default:
    /// [`entry_state`](Self::entry_state).
    fn visit_induction_variable(
        &self,
        ctx: &Context,
        op: Op,
        variable: Value,
        bounds: LoopBounds<'_, Self::Lattice>,
    ) -> Self::Lattice {
        let _ = (op, bounds);
        self.entry_state(ctx, variable)
    }

    /// What a lattice value says about a branch condition. By default `Unknown`: the analysis
    /// does not narrow branches. An analysis that narrows must move every result it visits off
    /// bottom, or the branches waiting on them never open.
    fn branch_value(&self, lattice: &Self::Lattice) -> BranchValue {
        let _ = lattice;
        BranchValue::Unknown
    }
}

/// The result of a sparse analysis: a lattice per value, and the control flow it ran over.
#[derive(Clone, Debug)]
pub struct SparseSolution<L> {
    values: FxHashMap<Value, L>,
    flow: FlowGraph,
    bottom: L,
}

impl<L: Lattice> SparseSolution<L> {
    /// The lattice of `value` (bottom for a value in code that never runs).
    pub fn lattice(&self, value: Value) -> &L {
        self.values.get(&value).unwrap_or(&self.bottom)
    }

    /// The control flow the analysis found (narrowed by it, for a forward analysis that narrows).
    pub fn flow(&self) -> &FlowGraph {
        &self.flow
    }

    /// The flow graph, for the next analysis to run on.
    pub fn into_flow(self) -> FlowGraph {
        self.flow
    }

    pub(crate) fn new(values: FxHashMap<Value, L>, flow: FlowGraph) -> Self {
        SparseSolution { values, flow, bottom: L::bottom() }
    }
}

/// Runs a sparse forward analysis over everything nested in `root` to a fixpoint.
pub fn solve_sparse_forward<A: SparseForwardAnalysis>(
    ctx: &Context,
    root: Op,
    analysis: &A,
) -> SparseSolution<A::Lattice> {
    let flow = FlowGraph::start(ctx, root, std::sync::Arc::new(CallGraph::new(ctx, root)));
    let mut users: FxHashMap<Value, SmallVec<[Op; 4]>> = FxHashMap::default();
    for op in ctx.walk(root) {
        for &operand in ctx.operands(op) {
            let list = users.entry(operand).or_default();
            if list.last() != Some(&op) {
                list.push(op);
            }
        }
    }
    let mut solver = Solver { ctx, analysis, flow, values: FxHashMap::default(), users, work: Worklist::new() };
    let initial = Discoveries { blocks: solver.flow.live_blocks().to_vec(), ..Discoveries::default() };
    solver.react(&initial, None);
    while let Some(op) = solver.work.pop() {
        solver.visit(op);
    }
    SparseSolution::new(solver.values, solver.flow)
}

struct Solver<'a, A: SparseForwardAnalysis> {
    ctx: &'a Context,
    analysis: &'a A,
    flow: FlowGraph,
    values: FxHashMap<Value, A::Lattice>,
    users: FxHashMap<Value, SmallVec<[Op; 4]>>,
    work: Worklist<Op>,
}

impl<A: SparseForwardAnalysis> Solver<'_, A> {
    fn lattice(&self, value: Value) -> A::Lattice {
        self.values.get(&value).cloned().unwrap_or_else(A::Lattice::bottom)
    }

    /// Joins `state` into `value`'s lattice; its users are visited again when it changed.
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
            for &user in self.users.get(&value).into_iter().flatten() {
                self.work.push(user);
            }
        }
    }

    fn visit(&mut self, op: Op) {
        let ctx = self.ctx;
        if !self.flow.is_op_live(ctx, op) {
            return;
        }
        let role = self.flow.role(ctx, op);
        match role {
            Role::Definition => {}
            Role::Plain | Role::ExternalCall | Role::Opaque => {
                if let Role::Opaque = role {
                    let mut found = Discoveries::default();
                    self.flow.explore(ctx, op, role, &[], &mut found);
                    self.react(&found, Some(op));
                }
                let operands: Vec<A::Lattice> = ctx.operands(op).iter().map(|&v| self.lattice(v)).collect();
                let operands: Vec<&A::Lattice> = operands.iter().collect();
                let mut results = vec![A::Lattice::bottom(); ctx.result_count(op)];
                match role {
                    Role::ExternalCall => self.analysis.visit_external_call(ctx, op, &operands, &mut results),
                    _ => self.analysis.visit_op(ctx, op, &operands, &mut results),
                }
                for (value, state) in ctx.results(op).zip(&results) {
                    self.join(value, state);
                }
            }
            Role::RegionBranch(_) | Role::Branch | Role::Exit { .. } | Role::Call { .. } => {
                // Only the operands the interfaces narrow on are worth waiting for.
                let narrows = match role {
                    Role::RegionBranch(_) => true,
                    Role::Branch => ctx.interface::<dyn BranchOpInterface>(op).is_some(),
                    Role::Exit { owner } => {
                        owner != self.flow.root()
                            && self.flow.call_graph().node(owner).is_none()
                            && ctx.interface::<dyn RegionBranchOpInterface>(owner).is_some()
                    }
                    _ => false,
                };
                let mut constants: SmallVec<[Option<i64>; 4]> = SmallVec::new();
                if narrows {
                    for &operand in ctx.operands(op) {
                        match self.analysis.branch_value(&self.lattice(operand)) {
                            BranchValue::Pending => return,
                            BranchValue::Constant(c) => constants.push(Some(c)),
                            BranchValue::Unknown => constants.push(None),
                        }
                    }
                }
                let mut found = Discoveries::default();
                self.flow.explore(ctx, op, role, &constants, &mut found);
                self.react(&found, Some(op));
                let edges: Vec<Edge> = self.flow.edges_from(op).cloned().collect();
                for edge in &edges {
                    self.propagate(edge);
                }
            }
        }
    }

    /// Values flow along `edge`: bound inputs join their operands, the others get their
    /// pessimistic state (or the induction variable's).
    fn propagate(&mut self, edge: &Edge) {
        let ctx = self.ctx;
        let bindings: Vec<(Value, Value)> = edge.bindings(ctx).collect();
        for (operand, input) in bindings {
            let state = self.lattice(operand);
            self.join(input, &state);
        }
        let loop_op = match (edge.kind, edge.to) {
            (EdgeKind::Enter, Target::Block(_)) => Some(edge.from),
            (EdgeKind::Exit, Target::Block(_)) => ctx.parent_op(edge.from),
            _ => None,
        };
        for input in edge.unbound_inputs(ctx) {
            let state = match loop_op.and_then(|l| ctx.interface::<dyn LoopLikeOpInterface>(l).map(|i| (l, i))) {
                Some((l, looping)) if looping.induction_variable(ctx, l) == Some(input) => {
                    let (lower, upper, step) = (
                        looping.lower_bound(ctx, l).map(|v| self.lattice(v)),
                        looping.upper_bound(ctx, l).map(|v| self.lattice(v)),
                        looping.step(ctx, l).map(|v| self.lattice(v)),
                    );
                    let bounds = LoopBounds { lower: lower.as_ref(), upper: upper.as_ref(), step: step.as_ref() };
                    self.analysis.visit_induction_variable(ctx, l, input, bounds)
                }
                _ => self.analysis.entry_state(ctx, input),
            };
            self.join(input, &state);
        }
    }

    /// Newly live blocks get their ops visited; open entries get pessimistic arguments; new
    /// edges carry values.
    fn react(&mut self, found: &Discoveries, explored: Option<Op>) {
        let ctx = self.ctx;
        for &block in found.blocks.iter().chain(&found.opened) {
            if self.flow.is_open_entry(block) {
                for &argument in ctx.block_arguments(block) {
                    let state = self.analysis.entry_state(ctx, argument);
                    self.join(argument, &state);
                }
            }
        }
        for &block in &found.blocks {
            for op in ctx.block_ops(block) {
                self.work.push(op);
            }
        }
        // Edges found from other ops (a new call site's return edges) carry what their source
        // holds already; the explored op's own edges are propagated by its visit.
        for &index in &found.edges {
            let edge = self.flow.edges()[index as usize].clone();
            if Some(edge.from) != explored {
                self.propagate(&edge);
            }
        }
    }
}
