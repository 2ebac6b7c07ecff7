//! Cached analyses: computed on demand per op, kept until a pass that does not preserve them runs
//! on that op, on an op nested in it, or on an op it is nested in.
//!
//! Invalidation is per op, so that a pass nested on functions costs one function per run: a pass
//! that ran on a function drops the analyses of that function, of the ops nested in it and of
//! the ops enclosing it (the module's analyses saw the function), and keeps those of the other
//! functions, which it did not touch. The cache is keyed by op; the analyses of ops whose slots
//! are reclaimed (see [`Context::reclaim_erased_ops`]) are dropped with them.

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

/// The analyses of one op, by type.
type OpAnalyses = Vec<(TypeId, Box<dyn Any>)>;

/// The cache of analyses.
#[derive(Default)]
pub struct AnalysisManager {
    /// By op, its analyses by type.
    cache: FxHashMap<Op, OpAnalyses>,
    computed: u64,
}

impl AnalysisManager {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The analysis `A` of `op`, computed now or taken from the cache.
    pub fn get_or_compute<A: Analysis>(&mut self, ctx: &Context, op: Op) -> &A {
        let id = TypeId::of::<A>();
        let analyses = self.cache.entry(op).or_default();
        let position = match analyses.iter().position(|(ty, _)| *ty == id) {
            Some(position) => position,
            None => {
                self.computed += 1;
                analyses.push((id, Box::new(A::compute(ctx, op))));
                analyses.len() - 1
            }
        };
        analyses[position].1.downcast_ref::<A>().expect("cached under its own type id")
    }

    /// Drops every cached analysis except those of the listed types.
    pub fn invalidate_except(&mut self, keep: &[TypeId]) {
        self.cache.retain(|_, analyses| {
            analyses.retain(|(ty, _)| keep.contains(ty));
            !analyses.is_empty()
        });
    }

    /// Drops the analyses, except those of the listed types, of `op`, of the ops nested in it
    /// and of the ops enclosing it: what a pass that ran on `op` may have changed.
    pub fn invalidate_op(&mut self, ctx: &Context, op: Op, keep: &[TypeId]) {
        if self.cache.is_empty() {
            return;
        }
        let drop_analyses = |cache: &mut FxHashMap<Op, OpAnalyses>, op: Op| {
            if let Some(analyses) = cache.get_mut(&op) {
                analyses.retain(|(ty, _)| keep.contains(ty));
                if analyses.is_empty() {
                    cache.remove(&op);
                }
            }
        };
        let mut ancestor = ctx.parent_op(op);
        while let Some(enclosing) = ancestor {
            drop_analyses(&mut self.cache, enclosing);
            ancestor = ctx.parent_op(enclosing);
        }
        // Whichever is smaller: the cache, or the ops under `op`.
        if self.cache.len() < 64 {
            let nested: Vec<Op> = self.cache.keys().copied().filter(|&cached| ctx.is_ancestor(op, cached)).collect();
            for cached in nested {
                drop_analyses(&mut self.cache, cached);
            }
        } else {
            for nested in ctx.walk(op) {
                drop_analyses(&mut self.cache, nested);
            }
        }
    }

    /// Drops every analysis of these ops (their slots were reclaimed).
    pub fn forget(&mut self, ops: &[Op]) {
        if self.cache.is_empty() {
            return;
        }
        for op in ops {
            self.cache.remove(op);
        }
    }

    /// How many analyses are cached.
    pub fn cached_count(&self) -> usize {
        self.cache.values().map(Vec::len).sum()
    }

    /// How many analyses were computed (not taken from the cache) so far.
    pub fn computed_count(&self) -> u64 {
        self.computed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Location, OperationState};

    /// How many ops are under an op.
    struct Size(usize);

    impl Analysis for Size {
        fn compute(ctx: &Context, op: Op) -> Self {
            Size(ctx.walk(op).len())
        }
    }

    struct Other;

    impl Analysis for Other {
        fn compute(_: &Context, _: Op) -> Self {
            Other
        }
    }

    /// An op named `name` with one region of one block holding `children`.
    fn op_with_body(ctx: &mut Context, name: &str, children: &[Op]) -> Op {
        let region = ctx.create_region();
        let block = ctx.create_block(&[]);
        ctx.append_block(region, block);
        for &child in children {
            ctx.append_op(block, child);
        }
        let name = ctx.op_name(name);
        let mut state = OperationState::new(name, Location::UNKNOWN);
        state.regions.push(region);
        ctx.create_op(state)
    }

    /// An op with no operand, result or region.
    fn leaf(ctx: &mut Context) -> Op {
        let name = ctx.op_name("t.leaf");
        ctx.create_op(OperationState::new(name, Location::UNKNOWN))
    }

    /// A module of two functions of one op each: (module, [f, g], [op in f, op in g]).
    fn module(ctx: &mut Context) -> (Op, [Op; 2], [Op; 2]) {
        let (a, b) = (leaf(ctx), leaf(ctx));
        let f = op_with_body(ctx, "t.func", &[a]);
        let g = op_with_body(ctx, "t.func", &[b]);
        (op_with_body(ctx, "t.module", &[f, g]), [f, g], [a, b])
    }

    #[test]
    fn a_pass_on_one_function_keeps_the_analyses_of_the_others() {
        let mut ctx = Context::new();
        let (module, [f, g], [a, b]) = module(&mut ctx);
        let mut analyses = AnalysisManager::new();
        for op in [module, f, g, a, b] {
            analyses.get_or_compute::<Size>(&ctx, op);
        }
        analyses.get_or_compute::<Other>(&ctx, f);
        assert_eq!((analyses.get_or_compute::<Size>(&ctx, module).0, analyses.computed_count()), (5, 6));
        // A pass ran on f, keeping `Other`: f's `Size`, a's and the module's go.
        analyses.invalidate_op(&ctx, f, &[TypeId::of::<Other>()]);
        assert_eq!(analyses.cached_count(), 3, "g, b, and f's Other");
        analyses.get_or_compute::<Size>(&ctx, g);
        analyses.get_or_compute::<Size>(&ctx, b);
        analyses.get_or_compute::<Other>(&ctx, f);
        assert_eq!(analyses.computed_count(), 6);
        analyses.get_or_compute::<Size>(&ctx, a);
        assert_eq!(analyses.computed_count(), 7);
        // The slots of g and b were reclaimed.
        analyses.forget(&[g, b]);
        assert_eq!(analyses.cached_count(), 2);
        analyses.invalidate_except(&[]);
        assert_eq!(analyses.cached_count(), 0);
    }

    #[test]
    fn invalidation_walks_the_op_when_the_cache_is_large() {
        let mut ctx = Context::new();
        let (module, [f, g], [a, b]) = module(&mut ctx);
        let mut analyses = AnalysisManager::new();
        // Many unrelated ops in the cache.
        for _ in 0..100 {
            let op = leaf(&mut ctx);
            analyses.get_or_compute::<Size>(&ctx, op);
        }
        for op in [module, f, g, a, b] {
            analyses.get_or_compute::<Size>(&ctx, op);
        }
        analyses.invalidate_op(&ctx, g, &[]);
        assert_eq!(analyses.cached_count(), 102, "module, g and b dropped");
        assert_eq!(analyses.get_or_compute::<Size>(&ctx, a).0, 1);
        assert_eq!(analyses.computed_count(), 105);
    }
}
