//! A dataflow framework over hat's IR, in the spirit of MLIR's `DataFlowFramework`: written
//! once, it follows structured control flow, branches between blocks and calls through the op
//! interfaces, so that an analysis is a lattice, a transfer function and a few pessimistic
//! states (about a page; `docs/analysis.md` has worked examples).
//!
//! - [`Lattice`]: what is computed (`bottom` and `join`); [`Flat`], [`UnionSet`], [`LatticeMap`]
//!   and `bool` are ready-made.
//! - [`FlowGraph`]: the control-flow skeleton: live blocks and the edges between program points,
//!   found through [`RegionBranchOpInterface`](crate::interfaces::RegionBranchOpInterface),
//!   [`BranchOpInterface`](crate::interfaces::BranchOpInterface),
//!   [`CallOpInterface`](crate::interfaces::CallOpInterface) /
//!   [`CallableOpInterface`](crate::interfaces::CallableOpInterface), and
//!   [`LoopLikeOpInterface`](crate::interfaces::LoopLikeOpInterface) for induction variables.
//! - Sparse analyses (a lattice per value): [`solve_sparse_forward`] (it discovers the control
//!   flow as it goes, narrowing branches on the constants it proves) and
//!   [`solve_sparse_backward`].
//! - Dense analyses (a lattice per program point): [`solve_dense_forward`] and
//!   [`solve_dense_backward`], over a flow graph computed beforehand (by [`FlowGraph::new`], or
//!   taken from a sparse forward solution so that they skip the code it proved dead);
//!   [`solve_dense_forward_on`] and [`solve_dense_backward_on`] over a [`FlowSlice`] of it, the
//!   ops an analysis of one variable can change its state at (sparse evaluation).
//!
//! Every solver iterates a worklist to a fixpoint: a state only climbs (by `join`), and what
//! depends on a state that changed is visited again. Loops need no special case: a loop's back
//! edge is an edge like any other. Calls are context-insensitive: a callee's entry is the join
//! over all its live call sites, and what it returns goes back to all of them.
//!
//! A sparse analysis in full (ops of a made-up dialect, matched by name as their own dialect
//! would; the one in `tests/dataflow.rs` propagates `arith` constants through loops and calls):
//!
//! ```
//! use hat_ir::analysis::dataflow::{solve_sparse_forward, Flat, SparseForwardAnalysis};
//! use hat_ir::{Context, Op, Value};
//!
//! /// How many `x.inc` a value went through since an `x.zero`.
//! struct Increments;
//!
//! impl SparseForwardAnalysis for Increments {
//!     type Lattice = Flat<i64>;
//!
//!     fn visit_op(&self, ctx: &Context, op: Op, operands: &[&Flat<i64>], results: &mut [Flat<i64>]) {
//!         let result = match (ctx.name_str(op), operands) {
//!             ("x.zero", []) => Flat::Known(0),
//!             ("x.inc", [Flat::Known(n)]) => Flat::Known(n + 1),
//!             ("x.inc", [Flat::Bottom]) => Flat::Bottom,
//!             _ => Flat::Top,
//!         };
//!         results.fill(result);
//!     }
//!
//!     fn entry_state(&self, _: &Context, _: Value) -> Flat<i64> {
//!         Flat::Top
//!     }
//! }
//!
//! let mut ctx = Context::new();
//! ctx.allow_unregistered = true;
//! let text = r#"
//!   %0 = "x.zero"() : () -> i32
//!   %1 = "x.inc"(%0) : (i32) -> i32
//!   %2 = "x.inc"(%1) : (i32) -> i32
//! "#;
//! let module = hat_ir::parse_source(&mut ctx, "example.hat", text).unwrap();
//! let solution = solve_sparse_forward(&ctx, module, &Increments);
//! let last = ctx.body_ops(module)[2];
//! assert_eq!(*solution.lattice(ctx.result(last, 0)), Flat::Known(2));
//! ```

mod dense_backward;
mod dense_forward;
mod dense_solution;
mod flow;
mod lattice;
mod slice;
mod sliced_backward;
mod sliced_forward;
mod sparse_backward;
mod sparse_forward;
mod worklist;

pub use dense_backward::{solve_dense_backward, solve_dense_backward_on, DenseBackwardAnalysis};
pub use dense_forward::{solve_dense_forward, solve_dense_forward_on, DenseForwardAnalysis};
pub use dense_solution::{DenseSolution, Direction};
pub use flow::{is_exit, target_inputs, Discoveries, Edge, EdgeKind, FlowGraph, Role, Target};
pub use lattice::{Flat, Lattice, LatticeMap, UnionSet};
pub use slice::{FlowSlice, ProgramOrder};
pub use sparse_backward::{solve_sparse_backward, SparseBackwardAnalysis};
pub use sparse_forward::{solve_sparse_forward, BranchValue, LoopBounds, SparseForwardAnalysis, SparseSolution};

#[cfg(test)]
mod tests;
