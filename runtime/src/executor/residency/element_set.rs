//! [`ElementSet`]: a set of a buffer's elements (flat, row-major indices) as sorted, disjoint,
//! non-adjacent half-open ranges. The residency state of a buffer is two of these (see
//! `residence.rs`); a run touches whole buffers or single elements far more often than anything
//! else, so a set holds a handful of ranges and every operation is linear in them.
//!
//! Invariant: `ranges` is sorted, every range is non-empty, and consecutive ranges neither
//! overlap nor touch (`a.end < b.start`).

use smallvec::SmallVec;
use std::ops::Range;

/// Ranges of elements; small enough to live inline in the common cases.
pub(crate) type Ranges = SmallVec<[Range<u64>; 2]>;

/// A set of elements. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ElementSet {
    ranges: Ranges,
}

impl ElementSet {
    /// No element.
    pub(crate) fn empty() -> Self {
        ElementSet::default()
    }

    /// Elements `0..len`.
    pub(crate) fn full(len: u64) -> Self {
        let mut set = ElementSet::empty();
        set.insert(0..len);
        set
    }

    /// Whether it holds no element.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Its ranges, in order.
    #[cfg(test)]
    pub(crate) fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Adds the elements of `range`.
    pub(crate) fn insert(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        let mut merged = range;
        let mut out = Ranges::new();
        let mut placed = false;
        for r in self.ranges.drain(..) {
            if r.end < merged.start {
                out.push(r);
            } else if merged.end < r.start {
                if !placed {
                    out.push(merged.clone());
                    placed = true;
                }
                out.push(r);
            } else {
                merged = merged.start.min(r.start)..merged.end.max(r.end);
            }
        }
        if !placed {
            out.push(merged);
        }
        self.ranges = out;
    }

    /// Removes the elements of `range`.
    pub(crate) fn remove(&mut self, range: Range<u64>) {
        if range.is_empty() || self.ranges.is_empty() {
            return;
        }
        let mut out = Ranges::new();
        for r in self.ranges.drain(..) {
            if r.end <= range.start || range.end <= r.start {
                out.push(r);
                continue;
            }
            if r.start < range.start {
                out.push(r.start..range.start);
            }
            if range.end < r.end {
                out.push(range.end..r.end);
            }
        }
        self.ranges = out;
    }

    /// The parts of `range` in the set, in order.
    pub(crate) fn intersection(&self, range: Range<u64>) -> Ranges {
        self.ranges
            .iter()
            .filter(|r| r.start < range.end && range.start < r.end)
            .map(|r| r.start.max(range.start)..r.end.min(range.end))
            .collect()
    }

    /// The parts of `range` not in the set, in order.
    pub(crate) fn gaps(&self, range: Range<u64>) -> Ranges {
        let mut out = Ranges::new();
        let mut next = range.start;
        for r in self.ranges.iter().filter(|r| r.start < range.end && range.start < r.end) {
            if next < r.start {
                out.push(next..r.start);
            }
            next = next.max(r.end);
        }
        if next < range.end {
            out.push(next..range.end);
        }
        out
    }

    /// The parts of `ranges` not in the set.
    pub(crate) fn gaps_of(&self, ranges: &[Range<u64>]) -> Ranges {
        ranges.iter().flat_map(|r| self.gaps(r.clone())).collect()
    }

    /// Whether every element of `range` is in the set.
    #[cfg(test)]
    pub(crate) fn contains(&self, range: Range<u64>) -> bool {
        range.is_empty() || self.gaps(range).is_empty()
    }
}

#[cfg(test)]
// Ranges of elements are what these tests are about.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_overlapping_and_touching_ranges() {
        let mut set = ElementSet::empty();
        set.insert(4..6);
        set.insert(0..1);
        set.insert(8..10);
        assert_eq!(set.ranges(), [0..1, 4..6, 8..10]);
        set.insert(6..8);
        assert_eq!(set.ranges(), [0..1, 4..10]);
        set.insert(1..4);
        assert_eq!(set.ranges(), [0..10]);
        set.insert(3..3);
        assert_eq!(set.ranges(), [0..10]);
        set.insert(12..20);
        set.insert(2..15);
        assert_eq!(set.ranges(), [0..20]);
    }

    #[test]
    fn remove_splits_and_trims() {
        let mut set = ElementSet::full(10);
        set.remove(3..5);
        assert_eq!(set.ranges(), [0..3, 5..10]);
        set.remove(0..1);
        set.remove(9..12);
        assert_eq!(set.ranges(), [1..3, 5..9]);
        set.remove(2..6);
        assert_eq!(set.ranges(), [1..2, 6..9]);
        set.remove(0..100);
        assert!(set.is_empty());
        assert!(ElementSet::full(0).is_empty());
    }

    #[test]
    fn intersection_and_gaps_partition_a_range() {
        let mut set = ElementSet::empty();
        set.insert(2..4);
        set.insert(6..8);
        assert_eq!(&set.intersection(3..7)[..], [3..4, 6..7]);
        assert_eq!(&set.gaps(0..10)[..], [0..2, 4..6, 8..10]);
        assert_eq!(&set.gaps(2..4)[..], [] as [Range<u64>; 0]);
        assert_eq!(&set.gaps_of(&[0..3, 7..9])[..], [0..2, 8..9]);
        assert!(set.contains(6..8));
        assert!(!set.contains(5..8));
        assert!(set.contains(5..5));
    }

    /// Against a plain boolean array, over every small range.
    #[test]
    fn agrees_with_a_bitmap() {
        let mut set = ElementSet::empty();
        let mut bits = [false; 12];
        let mut seed = 7u32;
        for step in 0..400 {
            seed = seed.wrapping_mul(1103515245).wrapping_add(12345);
            let a = (seed >> 8) % 12;
            let b = (seed >> 16) % 13;
            let (start, end) = (a.min(b) as u64, a.max(b) as u64);
            if step % 3 == 0 {
                set.remove(start..end);
                bits[start as usize..end as usize].iter_mut().for_each(|b| *b = false);
            } else {
                set.insert(start..end);
                bits[start as usize..end as usize].iter_mut().for_each(|b| *b = true);
            }
            let from_set: Vec<bool> = (0..12).map(|i| set.contains(i..i + 1)).collect();
            assert_eq!(from_set, bits, "after step {step}");
            for w in set.ranges().windows(2) {
                assert!(w[0].end < w[1].start, "{:?}", set.ranges());
            }
            let covered: u64 = set.intersection(0..12).iter().map(|r| r.end - r.start).sum();
            let missing: u64 = set.gaps(0..12).iter().map(|r| r.end - r.start).sum();
            assert_eq!(covered + missing, 12);
        }
    }
}
