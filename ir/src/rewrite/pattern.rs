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
pub(crate) struct PatternIndex<'p> {
    set: &'p PatternSet,
    /// (op name, pattern) for rooted patterns.
    rooted: Vec<(OpName, u32)>,
    /// Patterns for any op.
    any: Vec<u32>,
    /// By op name index, the patterns to try, best first; filled on first use.
    lists: Vec<Option<Box<[u32]>>>,
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
        PatternIndex { set, rooted, any, lists: Vec::new() }
    }

    /// The patterns to try on ops named `name`, best first.
    pub(crate) fn for_name(&mut self, name: OpName) -> &[u32] {
        let index = name.index();
        if self.lists.len() <= index {
            self.lists.resize(index + 1, None);
        }
        if self.lists[index].is_none() {
            let mut list: Vec<u32> = self.rooted.iter().filter(|(n, _)| *n == name).map(|&(_, p)| p).collect();
            list.extend_from_slice(&self.any);
            list.sort_by_key(|&p| (std::cmp::Reverse(self.set.patterns[p as usize].benefit()), p));
            self.lists[index] = Some(list.into_boxed_slice());
        }
        self.lists[index].as_deref().unwrap_or_default()
    }

    pub(crate) fn pattern(&self, index: u32) -> &'p dyn RewritePattern {
        &*self.set.patterns[index as usize]
    }
}
