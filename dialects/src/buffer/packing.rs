//! Offsets for buffers in one arena, from which of them are live together: the problem of
//! TFLite's arena planner and IREE's `LayoutSlices` (dynamic storage allocation, NP-hard in
//! general), solved by greedy best fit over several orders, the best kept.
//!
//! Input: each buffer's size and the *live sets* — the groups of buffers live at some point of
//! the program (two buffers interfere when some live set holds both). Output: an offset per
//! buffer such that interfering buffers do not overlap, and the arena's size. The lower bound on
//! any plan is the largest live set's total size (those buffers must all fit at once).
//!
//! Each order places the buffers one by one, each at the best-fitting gap among the buffers
//! already placed that it interferes with: the smallest gap that holds it (TFLite's greedy by
//! size, with its best fit), else above them all. Orders tried: by size (largest first), by size
//! times the number of buffers it interferes with, by total size of those, and by when each is
//! first live; each keeps ties in the input's order, so the plan is deterministic.

use std::collections::BTreeSet;

/// The plan of one arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packing {
    /// Per buffer, its offset in bytes (a multiple of the alignment).
    pub offsets: Vec<u64>,
    /// The arena's size in bytes: the end of the highest buffer (the gaps between buffers are
    /// aligned, the last buffer's end is not).
    pub size: u64,
    /// The most bytes live at any one point (no plan needs less).
    pub lower_bound: u64,
    /// The order that gave this plan.
    pub order: Order,
}

/// An order in which buffers are placed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Order {
    /// Largest first.
    Size,
    /// Size times how many buffers it interferes with, largest first.
    SizeTimesDegree,
    /// Total size of the buffers it interferes with, plus its own, largest first.
    Pressure,
    /// First live first.
    FirstLive,
}

/// Packs buffers of `sizes` (bytes) into one arena, offsets aligned to `alignment` (a power of
/// two), given the `live_sets` (indices into `sizes`, in program order).
pub fn pack(sizes: &[u64], live_sets: &[Vec<usize>], alignment: u64) -> Packing {
    let n = sizes.len();
    let mut neighbours: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    let mut first_live = vec![usize::MAX; n];
    let mut lower_bound = 0;
    for (point, set) in live_sets.iter().enumerate() {
        lower_bound = lower_bound.max(set.iter().map(|&b| sizes[b]).sum());
        for &a in set {
            first_live[a] = first_live[a].min(point);
            for &b in set {
                if a != b {
                    neighbours[a].insert(b);
                }
            }
        }
    }
    let aligned: Vec<u64> = sizes.iter().map(|&s| s.div_ceil(alignment) * alignment).collect();
    let orders = [Order::Size, Order::SizeTimesDegree, Order::Pressure, Order::FirstLive];
    let mut best: Option<Packing> = None;
    for order in orders {
        let key = |b: usize| -> (u64, usize) {
            match order {
                Order::Size => (sizes[b], 0),
                Order::SizeTimesDegree => (sizes[b].saturating_mul(neighbours[b].len() as u64 + 1), 0),
                Order::Pressure => (sizes[b] + neighbours[b].iter().map(|&c| sizes[c]).sum::<u64>(), 0),
                Order::FirstLive => (0, usize::MAX - first_live[b]),
            }
        };
        let mut sequence: Vec<usize> = (0..n).collect();
        // Largest key first; a stable sort keeps ties in the input's order.
        sequence.sort_by_key(|&b| std::cmp::Reverse(key(b)));
        let offsets = place(&sequence, &aligned, &neighbours);
        let size = offsets.iter().zip(sizes).map(|(o, s)| o + s).max().unwrap_or(0);
        if best.as_ref().is_none_or(|b| size < b.size) {
            best = Some(Packing { offsets, size, lower_bound, order });
        }
    }
    best.unwrap_or(Packing { offsets: Vec::new(), size: 0, lower_bound, order: Order::Size })
}

/// Places the buffers in `sequence` (of `sizes`, aligned), each at the smallest gap among its
/// placed neighbours that holds it; the offsets.
fn place(sequence: &[usize], sizes: &[u64], neighbours: &[BTreeSet<usize>]) -> Vec<u64> {
    let mut offsets: Vec<Option<u64>> = vec![None; sizes.len()];
    for &buffer in sequence {
        let mut taken: Vec<(u64, u64)> = neighbours[buffer]
            .iter()
            .filter_map(|&other| offsets[other].map(|offset| (offset, offset + sizes[other])))
            .collect();
        taken.sort_unstable();
        let need = sizes[buffer];
        // The smallest gap that fits (best fit); above everything when none does.
        let mut best: Option<(u64, u64)> = None; // (gap size, offset)
        let mut cursor = 0;
        for &(start, end) in &taken {
            if start > cursor && start - cursor >= need && best.is_none_or(|(gap, _)| start - cursor < gap) {
                best = Some((start - cursor, cursor));
            }
            cursor = cursor.max(end);
        }
        let offset = best.map_or(cursor, |(_, offset)| offset);
        offsets[buffer] = Some(offset);
    }
    offsets.into_iter().map(|o| o.unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether no two buffers that share a live set overlap.
    fn valid(sizes: &[u64], live_sets: &[Vec<usize>], packing: &Packing) -> bool {
        live_sets.iter().all(|set| {
            set.iter().all(|&a| {
                set.iter().all(|&b| {
                    let (oa, ob) = (packing.offsets[a], packing.offsets[b]);
                    a == b || oa + sizes[a] <= ob || ob + sizes[b] <= oa
                })
            })
        })
    }

    #[test]
    fn a_chain_of_temporaries_reuses_two_slots() {
        // t0 -> t1 -> t2 -> t3: each live with the next only.
        let sizes = [100, 100, 100, 100];
        let live = vec![vec![0, 1], vec![1, 2], vec![2, 3]];
        let packing = pack(&sizes, &live, 1);
        assert!(valid(&sizes, &live, &packing));
        assert_eq!((packing.size, packing.lower_bound), (200, 200));
    }

    #[test]
    fn a_smaller_buffer_fits_in_the_gap_a_dead_larger_one_left() {
        // A pooling chain: 400 -> 100 (pooled) while 400 lives; then 400 dies and two 100s
        // live with the pooled one.
        let sizes = [400, 100, 100, 100];
        let live = vec![vec![0, 1], vec![1, 2, 3]];
        let packing = pack(&sizes, &live, 1);
        assert!(valid(&sizes, &live, &packing));
        assert_eq!(packing.lower_bound, 500);
        assert_eq!(packing.size, 500);
    }

    #[test]
    fn offsets_are_aligned() {
        let sizes = [10, 10, 10];
        let live = vec![vec![0, 1, 2]];
        let packing = pack(&sizes, &live, 256);
        assert!(packing.offsets.iter().all(|o| o % 256 == 0));
        assert!(valid(&sizes, &live, &packing));
        assert_eq!(packing.size, 2 * 256 + 10);
    }

    #[test]
    fn random_instances_give_valid_plans_at_or_above_the_lower_bound() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..300 {
            let n = 1 + next(12) as usize;
            let sizes: Vec<u64> = (0..n).map(|_| 1 + next(64)).collect();
            // Interval lifetimes over 16 points.
            let spans: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let a = next(16);
                    (a, a + next(6))
                })
                .collect();
            let live: Vec<Vec<usize>> =
                (0..22).map(|p| (0..n).filter(|&b| spans[b].0 <= p && p <= spans[b].1).collect()).collect();
            let packing = pack(&sizes, &live, 1);
            assert!(valid(&sizes, &live, &packing), "{sizes:?} {spans:?} {packing:?}");
            assert!(packing.size >= packing.lower_bound);
            assert!(packing.size <= sizes.iter().sum::<u64>());
        }
    }
}
