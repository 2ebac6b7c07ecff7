//! Sets of flat (row-major) element positions of a buffer, as sorted disjoint half-open ranges.
//! [`END`] stands for "the end of the buffer", so a buffer whose size is not known statically has
//! a whole range too.

use smallvec::{smallvec, SmallVec};
use std::ops::Range;

/// The end of a buffer whatever its size.
pub const END: u64 = u64::MAX;

/// A set of element positions.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct RangeSet(SmallVec<[(u64, u64); 1]>);

/// The planner clones states (and so these sets) on every round of a loop's fixpoint:
/// `SmallVec`'s own `clone` goes through `extend`, a copy of the slice is a few times cheaper.
impl Clone for RangeSet {
    fn clone(&self) -> Self {
        RangeSet(SmallVec::from_slice(&self.0))
    }
}

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
        if other.is_empty() || self.is_whole() {
            return self.clone();
        }
        if self.is_empty() || other.is_whole() {
            return other.clone();
        }
        if let ([a], [b]) = (self.0.as_slice(), other.0.as_slice()) {
            // One range each (the common case): the merge below, unrolled.
            let (first, second) = if a <= b { (*a, *b) } else { (*b, *a) };
            return if second.0 <= first.1 {
                RangeSet(smallvec![(first.0, first.1.max(second.1))])
            } else {
                RangeSet(smallvec![first, second])
            };
        }
        // Both are sorted: merge them, joining ranges that touch or overlap.
        let mut out: SmallVec<[(u64, u64); 1]> = SmallVec::with_capacity(self.0.len() + other.0.len());
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() || j < other.0.len() {
            let next = if j == other.0.len() || (i < self.0.len() && self.0[i] <= other.0[j]) {
                i += 1;
                self.0[i - 1]
            } else {
                j += 1;
                other.0[j - 1]
            };
            match out.last_mut() {
                Some(last) if next.0 <= last.1 => last.1 = last.1.max(next.1),
                _ => out.push(next),
            }
        }
        RangeSet(out)
    }

    /// The intersection.
    pub fn intersect(&self, other: &RangeSet) -> RangeSet {
        if self.is_empty() || other.is_empty() {
            return RangeSet::empty();
        }
        if self.is_whole() {
            return other.clone();
        }
        if other.is_whole() {
            return self.clone();
        }
        if let ([(a, b)], [(c, d)]) = (self.0.as_slice(), other.0.as_slice()) {
            let (lo, hi) = (*a.max(c), *b.min(d));
            return if lo < hi { RangeSet(smallvec![(lo, hi)]) } else { RangeSet::empty() };
        }
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
        if self.is_empty() {
            return RangeSet::empty();
        }
        if other.is_empty() {
            return self.clone();
        }
        if other.is_whole() {
            return RangeSet::empty();
        }
        if let ([(a, b)], [(c, d)]) = (self.0.as_slice(), other.0.as_slice()) {
            let (a, b, c, d) = (*a, *b, *c, *d);
            if d <= a || c >= b {
                return self.clone();
            }
            let mut out = SmallVec::new();
            if c > a {
                out.push((a, c));
            }
            if d < b {
                out.push((d, b));
            }
            return RangeSet(out);
        }
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

    /// How many elements it holds in a buffer of `len` elements (`None`: it runs to [`END`] of a
    /// buffer whose size is not known).
    pub fn count(&self, len: Option<u64>) -> Option<u64> {
        self.0.iter().try_fold(0u64, |n, &(a, b)| {
            let end = if b == END { len? } else { b };
            Some(n + end.saturating_sub(a))
        })
    }

    /// Whether every element of `other` is in `self`.
    pub fn contains(&self, other: &RangeSet) -> bool {
        // Walk both in order: each range of `other` is covered from its start by consecutive
        // ranges of `self` (without building the difference).
        let mut i = 0;
        other.0.iter().all(|&(a, b)| {
            let mut at = a;
            while at < b {
                while i < self.0.len() && self.0[i].1 <= at {
                    i += 1;
                }
                match self.0.get(i) {
                    Some(&(c, d)) if c <= at => at = d,
                    _ => return false,
                }
            }
            true
        })
    }

    /// The set within a buffer of `len` elements (when known): ranges past the end dropped,
    /// and one that reaches the end written as reaching [`END`], so that sets of one buffer
    /// compare equal however they were built.
    pub fn clamp(&self, len: Option<u64>) -> RangeSet {
        let Some(len) = len else { return self.clone() };
        let mut out: SmallVec<[(u64, u64); 1]> = SmallVec::new();
        for &(a, b) in self.0.iter().take_while(|&&(a, _)| a < len) {
            out.push((a, if b >= len { END } else { b }));
        }
        RangeSet(out)
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

    /// The sets over positions 0..10 (bit k: position k) and, beside them, the ones that
    /// run on to [`END`] (bit 10: everything from 10 on).
    fn from_bits(bits: u32) -> RangeSet {
        let mut set = RangeSet::empty();
        for k in 0..10 {
            if bits & (1 << k) != 0 {
                set = set.union(&RangeSet::of(k..k + 1));
            }
        }
        if bits & (1 << 10) != 0 {
            set = set.union(&RangeSet::of(10..END));
        }
        set
    }

    fn to_bits(set: &RangeSet) -> u32 {
        let mut bits = 0;
        for r in set.ranges() {
            for k in r.start.min(11)..r.end.min(11) {
                bits |= 1 << k;
            }
        }
        bits
    }

    #[test]
    fn set_algebra_agrees_with_bit_sets() {
        // Every pair of sets drawn from a spread of the 2^11 bit patterns (all of them for one
        // side would take long in a debug build), normalised: no empty and no touching ranges.
        let picks: Vec<u32> = (0..2048u32).step_by(7).chain([0, 2047, 1024, 1023]).collect();
        for &x in &picks {
            let a = from_bits(x);
            assert_eq!(to_bits(&a), x);
            assert!(a.0.iter().all(|&(s, e)| s < e));
            assert!(a.0.windows(2).all(|w| w[0].1 < w[1].0), "{a:?} is not normalised");
            // Clamped to 7 elements: what reaches the seventh reaches the end.
            let clamped = a.clamp(Some(7));
            let tail = if x & (1 << 6) != 0 { 0b111_1000_0000 } else { 0 };
            assert_eq!(clamped, from_bits((x & 0x7f) | tail), "{a:?} clamped to 7");
            assert_eq!(a.clamp(None), a);
            let ones = |bits: u32| u64::from(bits.count_ones());
            assert_eq!(a.count(Some(12)), Some(ones(x & 0x3ff) + if x & (1 << 10) != 0 { 2 } else { 0 }));
            assert_eq!(a.count(None).is_none(), x & (1 << 10) != 0);
            for &y in &picks {
                let b = from_bits(y);
                let (u, i, m) = (a.union(&b), a.intersect(&b), a.minus(&b));
                assert_eq!(to_bits(&u), x | y, "{a:?} union {b:?} = {u:?}");
                assert_eq!(to_bits(&i), x & y, "{a:?} intersect {b:?} = {i:?}");
                assert_eq!(to_bits(&m), x & !y, "{a:?} minus {b:?} = {m:?}");
                assert_eq!(a.contains(&b), y & !x == 0, "{a:?} contains {b:?}");
                for set in [&u, &i, &m] {
                    assert!(set.0.windows(2).all(|w| w[0].1 < w[1].0), "{set:?} is not normalised");
                }
                assert_eq!(u, from_bits(x | y));
                assert_eq!(i, from_bits(x & y));
                assert_eq!(m, from_bits(x & !y));
            }
        }
    }
}
