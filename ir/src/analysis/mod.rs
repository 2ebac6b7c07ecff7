//! Analyses of the IR that passes stand on: dominance, the call graph, liveness, and a dataflow
//! framework. Each looks at ops only through their traits and interfaces, so that a vendor's
//! dialect takes part by implementing them.
//!
//! - [`DominanceInfo`] / [`DominatorTree`]: which ops and blocks run before which (the verifier
//!   checks that values dominate their uses with it);
//! - [`CallGraph`]: callables and the calls between them, strongly connected components callees
//!   first, recursion;
//! - [`Liveness`]: the values live into and out of each block, and after each op, across nested
//!   regions and loops;
//! - [`dataflow`]: sparse (per value) and dense (per program point) analyses, forward and
//!   backward, solved to a fixpoint over structured control flow, branches and calls.
//!
//! The first three are [`Analysis`](crate::pass::Analysis)es that passes get, cached, from the
//! pass manager (`state.analysis::<Liveness>(ctx, op)`); `docs/analysis.md` says how.

pub mod call_graph;
pub mod dataflow;
pub mod dominance;
pub mod liveness;
pub mod symbol_resolver;
#[cfg(test)]
pub(crate) mod testing;

pub use call_graph::{CallGraph, CallGraphNode, CallSite};
pub use dominance::{DominanceInfo, DominatorTree};
pub use liveness::Liveness;
pub use symbol_resolver::SymbolResolver;
