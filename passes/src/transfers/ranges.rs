//! Sets of flat (row-major) element positions of a buffer, as sorted disjoint half-open ranges.
//! [`END`] stands for "the end of the buffer", so a buffer whose size is not known statically has
//! a whole range too.

use smallvec::{smallvec, SmallVec};
use std::ops::Range;

/// The end of a buffer whatever its size.
pub const END: u64 = u64::MAX;

/// A set of element positions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RangeSet(SmallVec<[(u64, u64); 2]>);

impl RangeSet {
    /// No element.
    pub fn empty() -> Self {
        RangeSet(SmallVec::new())
    }

    /// Every element.
    pub fn whole() -> Self {
        RangeSet(smallvec![(0, END)])
    }

    /// The elements of `range` (empty when the range is).
    pub fn of(range: Range<u64>) -> Self {
        if range.start < range.end {
            RangeSet(smallvec![(range.start, range.end)])
        } else {
            RangeSet::empty()
        }
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether it holds every element.
    pub fn is_whole(&self) -> bool {
        self.0.as_slice() == [(0, END)]
    }

    /// The ranges, in order.
    pub fn ranges(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.0.iter().map(|&(a, b)| a..b)
    }

    /// The union.
    pub fn union(&self, other: &RangeSet) -> RangeSet {
        let mut all: SmallVec<[(u64, u64); 4]> = self.0.iter().chain(&other.0).copied().collect();
        all.sort_unstable();
        let mut out: SmallVec<[(u64, u64); 2]> = SmallVec::with_capacity(all.len());
        for (a, b) in all {
            match out.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        RangeSet(out)
    }

    /// The intersection.
    pub fn intersect(&self, other: &RangeSet) -> RangeSet {
        let mut out = SmallVec::new();
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            let (a, b) = self.0[i];
            let (c, d) = other.0[j];
            let (lo, hi) = (a.max(c), b.min(d));
            if lo < hi {
                out.push((lo, hi));
            }
            if b < d {
                i += 1;
            } else {
                j += 1;
            }
        }
        RangeSet(out)
    }

    /// The elements of `self` not in `other`.
    pub fn minus(&self, other: &RangeSet) -> RangeSet {
        let mut out = SmallVec::new();
        for &(a, b) in &self.0 {
            let mut start = a;
            for &(c, d) in &other.0 {
                if d <= start || c >= b {
                    continue;
                }
                if c > start {
                    out.push((start, c));
                }
                start = start.max(d);
                if start >= b {
                    break;
                }
            }
            if start < b {
                out.push((start, b));
            }
        }
        RangeSet(out)
    }

    /// Whether every element of `other` is in `self`.
    pub fn contains(&self, other: &RangeSet) -> bool {
        other.minus(self).is_empty()
    }

    /// The same set with [`END`] replaced by `len` when the buffer's size is known, and ranges
    /// past it dropped.
    pub fn clamp(&self, len: Option<u64>) -> RangeSet {
        match len {
            Some(len) => self.intersect(&RangeSet::of(0..len)).widen_to_end(len),
            None => self.clone(),
        }
    }

    /// Writes a range that reaches `len` as reaching [`END`], so that sets of one buffer compare
    /// equal however they were built.
    fn widen_to_end(mut self, len: u64) -> RangeSet {
        if let Some(last) = self.0.last_mut() {
            if last.1 >= len {
                last.1 = END;
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_algebra() {
        let a = RangeSet::of(0..10).union(&RangeSet::of(20..30));
        let b = RangeSet::of(5..25);
        assert_eq!(a.intersect(&b), RangeSet(smallvec![(5, 10), (20, 25)]));
        assert_eq!(a.minus(&b), RangeSet(smallvec![(0, 5), (25, 30)]));
        assert_eq!(a.union(&b), RangeSet::of(0..30));
        assert!(RangeSet::whole().contains(&a));
        assert!(!a.contains(&b));
        assert_eq!(RangeSet::whole().minus(&RangeSet::of(0..1)), RangeSet(smallvec![(1, END)]));
        assert_eq!(RangeSet::of(1..64).clamp(Some(64)), RangeSet(smallvec![(1, END)]));
        assert!(RangeSet::of(0..64).clamp(Some(64)).is_whole());
        assert!(RangeSet::of(3..3).is_empty());
    }
}
