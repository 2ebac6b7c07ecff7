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
//! (`X`'s siblings, say) stay cached.

use crate::{Context, Op};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::any::{Any, TypeId};
use std::rc::Rc;

/// An analysis of the IR under an op, computed from the IR (and other analyses).
pub trait Analysis: Any {
    /// Computes it for `op`. `analyses` gives the other analyses it needs, cached (see
    /// [`AnalysisManager::get`]).
    fn compute(ctx: &Context, op: Op, analyses: &mut AnalysisManager) -> Self
    where
        Self: Sized;
}

/// The cached analyses of one op, by type.
type Entries = SmallVec<[(TypeId, Rc<dyn Any>); 2]>;

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
    pub fn get<A: Analysis>(&mut self, ctx: &Context, op: Op) -> Rc<A> {
        let ty = TypeId::of::<A>();
        if let Some(found) = self.find(ty, op) {
            return Rc::downcast::<A>(found).expect("cached under its own type id");
        }
        if self.in_progress.contains(&(ty, op)) {
            panic!("analysis {} of {op:?} requested while it is being computed", std::any::type_name::<A>());
        }
        self.in_progress.push((ty, op));
        let computed = Rc::new(A::compute(ctx, op, self));
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

    fn find(&self, ty: TypeId, op: Op) -> Option<Rc<dyn Any>> {
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
