//! The canonicalization patterns an op contributes (MLIR's `getCanonicalizationPatterns`).
//!
//! A dialect attaches a [`CanonicalizationPatterns`] to each op name that has rewrites of its
//! own; a canonicalizer asks every registered op name for its patterns
//! ([`collect_canonicalization_patterns`]) and needs to know no dialect. Generic rewrites that hold
//! for any op with a trait or an interface (constants to the right of a commutative op, a loop
//! that runs zero times) belong to the canonicalizer itself, not to an op.
//!
//! Invariant: the patterns an op name adds are rooted at that op name, so a pattern set gathered
//! from many op names never holds the same pattern twice.

use super::PatternSet;
use crate::{Context, OpName};

/// The rewrites specific to one op, added to a canonicalizer's pattern set.
pub trait CanonicalizationPatterns: Sync {
    /// Adds the op's patterns to `patterns`, in the order they are to be tried.
    fn add_patterns(&self, ctx: &Context, patterns: &mut PatternSet);
}

/// A [`CanonicalizationPatterns`] given by a function, for dialects whose ops each have a short
/// list: `ctx.attach_interface::<dyn CanonicalizationPatterns>("d.op", &PatternsFn(add))`.
pub struct PatternsFn(pub fn(&Context, &mut PatternSet));

impl CanonicalizationPatterns for PatternsFn {
    fn add_patterns(&self, ctx: &Context, patterns: &mut PatternSet) {
        (self.0)(ctx, patterns)
    }
}

/// Adds the canonicalization patterns of every registered op name for which `include` holds, in
/// the order of the op names (sorted by name), each op's patterns in the order it gives them.
pub fn collect_canonicalization_patterns(
    ctx: &Context,
    patterns: &mut PatternSet,
    mut include: impl FnMut(&Context, OpName) -> bool,
) {
    for definition in ctx.registered_ops() {
        let Some(name) = ctx.find_op_name(definition.name()) else { continue };
        if let Some(source) = ctx.name_interface::<dyn CanonicalizationPatterns>(name) {
            if include(ctx, name) {
                source.add_patterns(ctx, patterns);
            }
        }
    }
}
