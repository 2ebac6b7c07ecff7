//! Rewrite patterns: a match on one op and the rewrite that follows it.

use super::Rewriter;
use crate::{Context, Op, OpName};

/// A rewrite rooted at one op.
///
/// [`match_and_rewrite`](Self::match_and_rewrite) either changes nothing and returns `false`, or
/// rewrites through the rewriter (never through the context directly, so that uses stay known
/// and the driver hears of the change) and returns `true`.
pub trait RewritePattern {
    /// A short name, for debugging and docs.
    fn name(&self) -> &str;

    /// The name of the ops the pattern applies to; `None` for any op.
    fn root(&self) -> Option<&str>;

    /// Patterns with a higher benefit are tried first on an op (ties: in the order added).
    fn benefit(&self) -> u16 {
        1
    }

    /// Matches `op` and, if it matches, rewrites it.
    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool;
}

/// A set of patterns, for a driver.
#[derive(Default)]
pub struct PatternSet {
    patterns: Vec<Box<dyn RewritePattern>>,
}

impl PatternSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a pattern.
    pub fn add(&mut self, pattern: impl RewritePattern + 'static) {
        self.patterns.push(Box::new(pattern));
    }

    /// Adds a boxed pattern.
    pub fn add_boxed(&mut self, pattern: Box<dyn RewritePattern>) {
        self.patterns.push(pattern);
    }

    /// How many patterns there are.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &dyn RewritePattern> {
        self.patterns.iter().map(|p| &**p)
    }
}

/// The patterns of a set indexed by the op name they apply to, for fast lookup per op.
///
/// Built once per driver run (a pipeline nested on functions builds one per function): the rooted
/// patterns are sorted by name and best first, and an op's list is a slice of them; only when
/// some patterns apply to any op are lists merged, once per name met. Its tables are indexed by
/// op name: they grow with the names registered, not with the IR.
pub(crate) struct PatternIndex<'p> {
    set: &'p PatternSet,
    /// The rooted patterns, by name, best first within a name.
    rooted: Vec<u32>,
    /// By op name index (up to the largest rooted name): the range of `rooted` for that name.
    ranges: Vec<(u32, u32)>,
    /// Patterns for any op, best first.
    any: Vec<u32>,
    /// With patterns for any op: by op name index, the merged list of each name met.
    merged: Vec<Option<Box<[u32]>>>,
}

impl<'p> PatternIndex<'p> {
    pub(crate) fn new(ctx: &mut Context, set: &'p PatternSet) -> Self {
        let mut rooted = Vec::new();
        let mut any = Vec::new();
        for (i, pattern) in set.patterns.iter().enumerate() {
            match pattern.root() {
                Some(name) => rooted.push((ctx.op_name(name), i as u32)),
                None => any.push(i as u32),
            }
        }
        let benefit = |p: u32| std::cmp::Reverse(set.patterns[p as usize].benefit());
        rooted.sort_by_key(|&(name, p)| (name, benefit(p), p));
        any.sort_by_key(|&p| (benefit(p), p));
        let size = rooted.last().map_or(0, |&(name, _)| name.index() + 1);
        let mut ranges = vec![(0, 0); size];
        for (position, &(name, _)) in rooted.iter().enumerate() {
            let range = &mut ranges[name.index()];
            if range.0 == range.1 {
                range.0 = position as u32;
            }
            range.1 = position as u32 + 1;
        }
        let rooted = rooted.into_iter().map(|(_, p)| p).collect();
        PatternIndex { set, rooted, ranges, any, merged: Vec::new() }
    }

    /// The patterns to try on ops named `name`, best first (ties: in the order added).
    pub(crate) fn for_name(&mut self, name: OpName) -> &[u32] {
        let (start, end) = self.ranges.get(name.index()).copied().unwrap_or((0, 0));
        let rooted = &self.rooted[start as usize..end as usize];
        if self.any.is_empty() {
            return rooted;
        }
        if self.merged.len() <= name.index() {
            self.merged.resize(name.index() + 1, None);
        }
        let (set, any) = (self.set, &self.any);
        self.merged[name.index()].get_or_insert_with(|| {
            let mut list: Vec<u32> = rooted.iter().chain(any).copied().collect();
            list.sort_by_key(|&p| (std::cmp::Reverse(set.patterns[p as usize].benefit()), p));
            list.into_boxed_slice()
        })
    }

    /// The set the index is of (to look patterns up while a list of the index is borrowed).
    pub(crate) fn set(&self) -> &'p PatternSet {
        self.set
    }
}

impl PatternSet {
    /// The pattern at `index` (in the order added).
    pub(crate) fn pattern(&self, index: u32) -> &dyn RewritePattern {
        &*self.patterns[index as usize]
    }
}
