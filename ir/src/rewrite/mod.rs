//! Rewriting the IR: a [`Rewriter`] that keeps uses known while it inserts, replaces, erases and
//! moves ops; [`Listener`]s that hear of every change; [`fold`]ing; [`RewritePattern`]s; and the
//! [greedy driver](greedy) that applies folders, patterns and dead-op removal to a fixpoint.
//!
//! The core keeps no use-lists, so a rewrite starts by building a [`UseMap`] of the ops under its
//! root (one walk) and every change then goes through the rewriter, which keeps the map exact.
//! Erased ops are detached from their blocks (printing and walking never see them again) and
//! their handles stay valid, marked erased, until the rewrite is over (the pass manager reclaims
//! their slots after the pass: see [`Context::reclaim_erased_ops`](crate::Context::reclaim_erased_ops)).
//!
//! Every table a rewrite keeps beside the IR (the use map, the driver's worklist marks) is a
//! [`SideTable`](crate::SideTable) sized to the ops under its root: rewriting one function costs
//! that function, not the context.
//!
//! The rules that hat's own folders and patterns follow are written in `docs/rewrites.md`.

mod canonicalization;
mod dead;
pub mod fold;
pub mod greedy;
mod listener;
mod pattern;
mod rewriter;
mod use_map;

pub use canonicalization::{collect_canonicalization_patterns, CanonicalizationPatterns, PatternsFn};
pub use dead::{
    has_droppable_effects, has_no_effects, has_no_own_effects, is_removable, no_recursive_effects, RecursiveEffectsFn,
};
pub use fold::{constant_op_value, constant_value, fold_op, FoldContext, FoldFn, FoldResult};
pub use greedy::{apply_patterns_greedily, GreedyConfig, GreedyStats, MaterializeFn};
pub use listener::{Listener, NoListener, RecordingListener};
pub use pattern::{PatternSet, RewritePattern};
pub use rewriter::{Mapping, Rewriter};
pub use use_map::{Use, UseMap, Uses};

#[cfg(test)]
mod tests;
