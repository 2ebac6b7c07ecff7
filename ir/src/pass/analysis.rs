//! Cached analyses: computed on demand per op, kept until a pass that does not preserve them runs
//! on that op, an op nested in it, or an op enclosing it.
//!
//! An analysis is keyed by its type and the op it describes. Computing one may request others
//! through the [`AnalysisManager`] it is given (the dominance of the same op, the call graph of
//! the enclosing module): they are taken from the cache or computed and cached too. A request
//! that comes back to an analysis still being computed is a cycle, and panics.
//!
//! Invalidation follows what a pass can change: a pass running on op `X` may change anything
//! nested in `X`, so after it the analyses it did not preserve are dropped for `X`, for every op
//! nested in `X`, and for every op enclosing `X` (their IR contains `X`'s). Analyses of other ops
//! (`X`'s siblings, say) stay cached. The analyses of ops whose slots are reclaimed (see
//! [`Context::reclaim_erased_ops`]) are dropped with them.

use crate::{Context, Op};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::any::{Any, TypeId};
use std::sync::Arc;

/// An analysis of the IR under an op, computed from the IR (and other analyses). Analyses are
/// `Send + Sync`: a pass may read one from several threads (the transfer planner plans a
/// function's buffers in parallel over its flow graph, which holds the cached call graph).
pub trait Analysis: Any + Send + Sync {
    /// Computes it for `op`. `analyses` gives the other analyses it needs, cached (see
    /// [`AnalysisManager::get`]).
    fn compute(ctx: &Context, op: Op, analyses: &mut AnalysisManager) -> Self
    where
        Self: Sized;
}

/// The cached analyses of one op, by type.
type Entries = SmallVec<[(TypeId, Arc<dyn Any + Send + Sync>); 2]>;

/// Above this many ops with cached analyses, invalidation walks the IR under the op rather than
/// scanning the cache (so a pass on one small function never pays for the whole cache).
const SCAN_LIMIT: usize = 64;

/// The cache of analyses.
#[derive(Default)]
pub struct AnalysisManager {
    cache: FxHashMap<Op, Entries>,
    /// The analyses being computed (to report cycles).
    in_progress: Vec<(TypeId, Op)>,
    computed: u64,
}

impl AnalysisManager {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The analysis `A` of `op`, computed now or taken from the cache.
    pub fn get_or_compute<A: Analysis>(&mut self, ctx: &Context, op: Op) -> &A {
        self.get::<A>(ctx, op);
        self.cached::<A>(op).expect("just cached")
    }

    /// The analysis `A` of `op`, computed now or taken from the cache, as a shared handle (one an
    /// analysis can hold while it requests others).
    ///
    /// # Panics
    /// When `A` of `op` is being computed already (analyses that request each other).
    pub fn get<A: Analysis>(&mut self, ctx: &Context, op: Op) -> Arc<A> {
        let ty = TypeId::of::<A>();
        if let Some(found) = self.find(ty, op) {
            return Arc::downcast::<A>(found).expect("cached under its own type id");
        }
        if self.in_progress.contains(&(ty, op)) {
            panic!("analysis {} of {op:?} requested while it is being computed", std::any::type_name::<A>());
        }
        self.in_progress.push((ty, op));
        let computed = Arc::new(A::compute(ctx, op, self));
        self.in_progress.pop();
        self.computed += 1;
        self.cache.entry(op).or_default().push((ty, computed.clone()));
        computed
    }

    /// The analysis `A` of `op` if it is cached (never computes).
    pub fn cached<A: Analysis>(&self, op: Op) -> Option<&A> {
        let (_, found) = self.cache.get(&op)?.iter().find(|(t, _)| *t == TypeId::of::<A>())?;
        found.downcast_ref::<A>()
    }

    fn find(&self, ty: TypeId, op: Op) -> Option<Arc<dyn Any + Send + Sync>> {
        self.cache.get(&op)?.iter().find(|(t, _)| *t == ty).map(|(_, a)| a.clone())
    }

    /// Drops the analyses a pass that ran on `op` may have made stale: those of `op`, of the ops
    /// nested in it and of the ops enclosing it, except the types in `preserved`.
    pub fn invalidate(&mut self, ctx: &Context, op: Op, preserved: &[TypeId]) {
        if self.cache.is_empty() {
            return;
        }
        let mut ancestor = ctx.parent_op(op);
        while let Some(current) = ancestor {
            self.drop_entries(current, preserved);
            ancestor = ctx.parent_op(current);
        }
        if self.cache.len() <= SCAN_LIMIT {
            let nested: Vec<Op> = self.cache.keys().copied().filter(|&o| ctx.is_ancestor(op, o)).collect();
            for nested in nested {
                self.drop_entries(nested, preserved);
            }
        } else {
            for nested in ctx.walk(op) {
                self.drop_entries(nested, preserved);
            }
        }
    }

    fn drop_entries(&mut self, op: Op, preserved: &[TypeId]) {
        if let Some(entries) = self.cache.get_mut(&op) {
            entries.retain(|(ty, _)| preserved.contains(ty));
            if entries.is_empty() {
                self.cache.remove(&op);
            }
        }
    }

    /// Drops every analysis of `ops`, whose slots were reclaimed for reuse (see
    /// [`Context::reclaim_erased_ops`]): a new op in the same slot must not find them.
    pub fn forget(&mut self, ops: &[Op]) {
        if self.cache.is_empty() {
            return;
        }
        for op in ops {
            self.cache.remove(op);
        }
    }

    /// Drops every cached analysis, of every op, except those of the listed types.
    pub fn invalidate_except(&mut self, keep: &[TypeId]) {
        self.cache.retain(|_, entries| {
            entries.retain(|(ty, _)| keep.contains(ty));
            !entries.is_empty()
        });
    }

    /// How many analyses were computed (not taken from the cache) so far.
    pub fn computed_count(&self) -> u64 {
        self.computed
    }

    /// How many analyses are cached now.
    pub fn cached_count(&self) -> usize {
        self.cache.values().map(|entries| entries.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{ops_named, parse, tagged};
    use crate::pass::{Pass, PassFailed, PassInfo, PassManager, PassManagerOptions, PassRegistry, PassState};
    use std::cell::Cell;

    thread_local! {
        static COMPUTED: Cell<usize> = const { Cell::new(0) };
    }

    /// The ops under an op; counts its computations.
    struct OpCount(usize);
    impl Analysis for OpCount {
        fn compute(ctx: &Context, op: Op, _: &mut AnalysisManager) -> Self {
            COMPUTED.with(|c| c.set(c.get() + 1));
            OpCount(ctx.walk(op).len())
        }
    }

    /// Twice the op count: an analysis built on another.
    struct Doubled(usize);
    impl Analysis for Doubled {
        fn compute(ctx: &Context, op: Op, analyses: &mut AnalysisManager) -> Self {
            Doubled(2 * analyses.get::<OpCount>(ctx, op).0)
        }
    }

    /// Asks for itself.
    struct Cyclic;
    impl Analysis for Cyclic {
        fn compute(ctx: &Context, op: Op, analyses: &mut AnalysisManager) -> Self {
            analyses.get::<Cyclic>(ctx, op);
            Cyclic
        }
    }

    const PROGRAM: &str = r#"
"t.func"() ({
  "t.loop"() ({
    "t.yield"() : () -> ()
  }) {tag = "loop"} : () -> ()
  "t.return"() : () -> ()
}) {sym_name = "f1"} : () -> ()
"t.func"() ({
  "t.return"() : () -> ()
}) {sym_name = "f2"} : () -> ()
"#;

    #[test]
    fn a_pass_on_one_function_invalidates_it_its_nested_ops_and_ancestors_not_its_siblings() {
        let (ctx, module) = parse(PROGRAM);
        let functions = ops_named(&ctx, module, "t.func");
        let looping = tagged(&ctx, module, "loop");
        let mut analyses = AnalysisManager::new();
        for op in [module, functions[0], functions[1], looping] {
            analyses.get::<OpCount>(&ctx, op);
        }
        analyses.get::<Doubled>(&ctx, functions[1]);
        assert_eq!(analyses.cached_count(), 5);
        analyses.invalidate(&ctx, functions[0], &[]);
        assert!(analyses.cached::<OpCount>(module).is_none(), "an ancestor contains the changed IR");
        assert!(analyses.cached::<OpCount>(functions[0]).is_none());
        assert!(analyses.cached::<OpCount>(looping).is_none(), "a nested op may have changed");
        assert_eq!(analyses.cached::<OpCount>(functions[1]).map(|c| c.0), Some(2), "a sibling is untouched");
        assert_eq!(analyses.cached::<Doubled>(functions[1]).map(|c| c.0), Some(4));
        analyses.invalidate(&ctx, functions[1], &[TypeId::of::<Doubled>()]);
        assert!(analyses.cached::<OpCount>(functions[1]).is_none());
        assert!(analyses.cached::<Doubled>(functions[1]).is_some(), "preserved");
    }

    #[test]
    fn an_analysis_gets_the_analyses_it_needs_from_the_cache() {
        let (ctx, module) = parse(PROGRAM);
        let mut analyses = AnalysisManager::new();
        assert_eq!(analyses.get_or_compute::<Doubled>(&ctx, module).0, 14);
        assert_eq!(analyses.computed_count(), 2, "the op count was computed for it");
        assert_eq!(analyses.get_or_compute::<OpCount>(&ctx, module).0, 7);
        assert_eq!(analyses.computed_count(), 2, "and cached");
    }

    #[test]
    #[should_panic(expected = "requested while it is being computed")]
    fn an_analysis_that_needs_itself_is_a_cycle() {
        let (ctx, module) = parse(PROGRAM);
        AnalysisManager::new().get::<Cyclic>(&ctx, module);
    }

    /// Reads the op count of every function.
    struct ReadAll;
    impl Pass for ReadAll {
        fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
            for function in ops_named(ctx, op, "t.func") {
                state.analysis::<OpCount>(ctx, function);
            }
            state.preserve_all();
            Ok(())
        }
    }

    /// Changes `@f1` only; preserves everything elsewhere.
    struct TouchFirst;
    impl Pass for TouchFirst {
        fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
            if crate::verifier::symbol_name(ctx, op) == Some("f1") {
                let (name, value) = (ctx.ident("touched"), ctx.unit_attr());
                ctx.set_attribute(op, name, value);
            } else {
                state.preserve_all();
            }
            Ok(())
        }
    }

    #[test]
    fn the_pass_manager_invalidates_per_op() {
        let mut registry = PassRegistry::new();
        registry.register(PassInfo {
            name: "read-all",
            summary: "",
            anchor: None,
            options: &[],
            create: |_| Box::new(ReadAll),
        });
        registry.register(PassInfo {
            name: "touch-first",
            summary: "",
            anchor: Some("t.func"),
            options: &[],
            create: |_| Box::new(TouchFirst),
        });
        let (mut ctx, module) = parse(PROGRAM);
        let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
        manager.add_pipeline(&registry, "read-all,t.func(touch-first),read-all").unwrap();
        COMPUTED.with(|c| c.set(0));
        manager.run(&mut ctx, module).unwrap();
        assert_eq!(COMPUTED.with(|c| c.get()), 3, "two functions, then only the one that changed again");
    }
}

#[cfg(test)]
mod reclaim_tests {
    use super::*;
    use crate::{Location, OperationState};

    /// How many ops are under an op.
    struct Size(usize);

    impl Analysis for Size {
        fn compute(ctx: &Context, op: Op, _: &mut AnalysisManager) -> Self {
            Size(ctx.walk(op).len())
        }
    }

    struct Other;

    impl Analysis for Other {
        fn compute(_: &Context, _: Op, _: &mut AnalysisManager) -> Self {
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
        analyses.invalidate(&ctx, f, &[TypeId::of::<Other>()]);
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
        analyses.invalidate(&ctx, g, &[]);
        assert_eq!(analyses.cached_count(), 102, "module, g and b dropped");
        assert_eq!(analyses.get_or_compute::<Size>(&ctx, a).0, 1);
        assert_eq!(analyses.computed_count(), 105);
    }
}
