//! Cached analyses: computed on demand per op, kept until a pass that does not preserve them runs.

use crate::{Context, Op};
use rustc_hash::FxHashMap;
use std::any::{Any, TypeId};

/// An analysis of the IR under an op, computed from the IR alone.
pub trait Analysis: Any {
    /// Computes it.
    fn compute(ctx: &Context, op: Op) -> Self
    where
        Self: Sized;
}

/// The cache of analyses.
#[derive(Default)]
pub struct AnalysisManager {
    cache: FxHashMap<(TypeId, Op), Box<dyn Any>>,
    computed: u64,
}

impl AnalysisManager {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The analysis `A` of `op`, computed now or taken from the cache.
    pub fn get_or_compute<A: Analysis>(&mut self, ctx: &Context, op: Op) -> &A {
        let key = (TypeId::of::<A>(), op);
        if !self.cache.contains_key(&key) {
            self.computed += 1;
            self.cache.insert(key, Box::new(A::compute(ctx, op)));
        }
        self.cache[&key].downcast_ref::<A>().expect("cached under its own type id")
    }

    /// Drops every cached analysis except those of the listed types.
    pub fn invalidate_except(&mut self, keep: &[TypeId]) {
        self.cache.retain(|(ty, _), _| keep.contains(ty));
    }

    /// How many analyses were computed (not taken from the cache) so far.
    pub fn computed_count(&self) -> u64 {
        self.computed
    }
}
