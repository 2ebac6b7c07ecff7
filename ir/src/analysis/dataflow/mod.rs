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
//!   taken from a sparse forward solution so that they skip the code it proved dead).
//!
//! Every solver iterates a worklist to a fixpoint: a state only climbs (by `join`), and what
//! depends on a state that changed is visited again. Loops need no special case: a loop's back
//! edge is an edge like any other. Calls are context-insensitive: a callee's entry is the join
//! over all its live call sites, and what it returns goes back to all of them.

mod dense_backward;
mod dense_forward;
mod dense_solution;
mod flow;
mod lattice;
mod sparse_backward;
mod sparse_forward;
mod worklist;

pub use dense_backward::{solve_dense_backward, DenseBackwardAnalysis};
pub use dense_forward::{solve_dense_forward, DenseForwardAnalysis};
pub use dense_solution::{DenseSolution, Direction};
pub use flow::{is_exit, target_inputs, Discoveries, Edge, EdgeKind, FlowGraph, Role, Target};
pub use lattice::{Flat, Lattice, LatticeMap, UnionSet};
pub use sparse_backward::{solve_sparse_backward, SparseBackwardAnalysis};
pub use sparse_forward::{solve_sparse_forward, BranchValue, LoopBounds, SparseForwardAnalysis, SparseSolution};

#[cfg(test)]
mod tests;
