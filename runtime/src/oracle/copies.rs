//! The fewest copies that move a given set of element copies, for one buffer and one direction
//! — an achievable plan (an upper bound on the fewest) and a lower bound.
//!
//! The input is, per element `x` of the buffer, the *windows* of the versions of `x` that must
//! cross: window `[lo, hi]` is the points at which that copy may happen (after the write that
//! made the version, no later than the first read of it on the other side). The windows of one
//! element are disjoint and sorted (a version's window ends before the element is written
//! again). A plan of the fewest bytes moves each of these element copies exactly once and
//! nothing else, so a copy op is a point `p` and a range of elements each of which has a window
//! containing `p`; the plan must cover every window once. The number of copy ops is
//! `items - joins`, a join being two neighbouring elements moved by the same op.
//!
//! **The plan** ([`plan`]) is the best of three greedy sweeps by earliest deadline: at the
//! smallest `hi` among the windows not yet covered (a copy as late as that window allows), the
//! windows whose deadline it is (*forced*) are covered; the sweeps differ in which other open
//! windows they take along — every open window (`All`), the open windows in a run of
//! neighbouring open windows that holds a forced one (`Connected`), or only those between two
//! forced ones of a run (`Bridges`: joins that cost nothing now). Each sweep is a valid plan;
//! none is optimal on every input (taking a window early can split a later run, leaving it can
//! leave it alone later), and the exact problem is a labelling problem over a grid of
//! intervals, so the plan is an upper bound on the fewest copies.
//!
//! **The lower bound** ([`lower_bound`]) is the larger of two bounds, each valid for every plan
//! of the fewest bytes:
//! - every op happens at one point, so there are at least as many ops as the fewest points
//!   that stab every window (the classic greedy by earliest deadline gives that number);
//! - joins between elements `x` and `x + 1` pair windows of `x` with overlapping windows of
//!   `x + 1`, each window with at most one (an op moves one version of each element), so they
//!   are a matching of the two columns' overlap graph: ops >= items - sum over `x` of the
//!   maximum matching between columns `x` and `x + 1` (computed exactly by a two-pointer sweep:
//!   the window that ends first overlaps at most the current window of the other column
//!   among those left, so matching it there is safe).
//!
//! Where the plan's count equals the lower bound, it is the fewest.

use std::ops::Range;

/// A window: the first and the last point at which one element copy may happen.
pub type Window = (u64, u64);

/// Which open windows a sweep takes along with the forced ones.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Policy {
    All,
    Connected,
    Bridges,
}

/// The copy ops of the best sweep: `(point, elements)`, in order of points. `columns[x]` are
/// element `x`'s windows, sorted and disjoint.
pub fn plan(columns: &[Vec<Window>]) -> Vec<(u64, Range<u64>)> {
    [Policy::All, Policy::Connected, Policy::Bridges]
        .into_iter()
        .map(|policy| sweep(columns, policy))
        .min_by_key(Vec::len)
        .unwrap_or_default()
}

/// One greedy sweep (see the module documentation).
fn sweep(columns: &[Vec<Window>], policy: Policy) -> Vec<(u64, Range<u64>)> {
    let elements: Vec<usize> = (0..columns.len()).filter(|&x| !columns[x].is_empty()).collect();
    let mut next = vec![0usize; columns.len()];
    let mut ops = Vec::new();
    let mut take = vec![false; columns.len()];
    // Every open window has hi >= the smallest deadline: the first of each element is the one
    // that may be open.
    while let Some(point) = elements.iter().filter_map(|&x| columns[x].get(next[x]).map(|w| w.1)).min() {
        let open = |x: usize| columns[x].get(next[x]).is_some_and(|w| w.0 <= point);
        let forced = |x: usize| columns[x].get(next[x]).is_some_and(|w| w.0 <= point && w.1 == point);
        // Runs of neighbouring open windows, and what the policy takes of each.
        let mut i = 0;
        while i < elements.len() {
            let start = elements[i];
            if !open(start) {
                i += 1;
                continue;
            }
            let mut end = start + 1;
            while end < columns.len() && open(end) {
                end += 1;
            }
            let first_forced = (start..end).find(|&x| forced(x));
            let last_forced = (start..end).rev().find(|&x| forced(x));
            for (x, taken) in take.iter_mut().enumerate().take(end).skip(start) {
                *taken = match (policy, first_forced, last_forced) {
                    (Policy::All, _, _) => true,
                    (Policy::Connected, f, _) => f.is_some(),
                    (Policy::Bridges, Some(f), Some(l)) => f <= x && x <= l,
                    (Policy::Bridges, _, _) => false,
                };
            }
            while i < elements.len() && elements[i] < end {
                i += 1;
            }
        }
        let mut x = 0;
        while x < columns.len() {
            if !take[x] {
                x += 1;
                continue;
            }
            let start = x;
            while x < columns.len() && take[x] {
                take[x] = false;
                next[x] += 1;
                x += 1;
            }
            ops.push((point, start as u64..x as u64));
        }
    }
    ops
}

/// A lower bound on the copy ops of every plan that moves each window's copy once and nothing
/// else (see the module documentation).
pub fn lower_bound(columns: &[Vec<Window>]) -> u64 {
    let mut windows: Vec<Window> = columns.iter().flatten().copied().collect();
    windows.sort_unstable_by_key(|w| w.1);
    let mut points = 0u64;
    let mut last: Option<u64> = None;
    for (lo, hi) in windows.iter().copied() {
        if last.is_none_or(|p| lo > p) {
            points += 1;
            last = Some(hi);
        }
    }
    let joins: u64 = columns.windows(2).map(|pair| matching(&pair[0], &pair[1])).sum();
    points.max(windows.len() as u64 - joins)
}

/// The maximum matching between two sorted lists of disjoint windows, an edge joining two that
/// overlap.
fn matching(a: &[Window], b: &[Window]) -> u64 {
    let (mut i, mut j, mut matched) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        if a[i].1 < b[j].0 {
            i += 1;
        } else if b[j].1 < a[i].0 {
            j += 1;
        } else {
            // The one that ends first has no other partner left: matching it here is safe.
            matched += 1;
            i += 1;
            j += 1;
        }
    }
    matched
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fewest ops by trying every choice (each window's copy at one of the candidate points
    /// in it: WLOG an op is at the deadline of one of its windows).
    fn brute_force(columns: &[Vec<Window>]) -> u64 {
        let items: Vec<(usize, Window)> =
            columns.iter().enumerate().flat_map(|(x, ws)| ws.iter().map(move |&w| (x, w))).collect();
        let candidates: Vec<u64> = {
            let mut c: Vec<u64> = items.iter().map(|(_, w)| w.1).collect();
            c.sort_unstable();
            c.dedup();
            c
        };
        let choices: Vec<Vec<u64>> =
            items.iter().map(|(_, w)| candidates.iter().copied().filter(|&p| w.0 <= p && p <= w.1).collect()).collect();
        let mut best = u64::MAX;
        let mut pick = vec![0usize; items.len()];
        loop {
            let mut at: Vec<(u64, usize)> =
                items.iter().zip(&pick).enumerate().map(|(k, (it, _))| (choices[k][pick[k]], it.0)).collect();
            at.sort_unstable();
            let runs = at
                .iter()
                .enumerate()
                .filter(|&(k, &(p, x))| k == 0 || at[k - 1].0 != p || at[k - 1].1 + 1 != x)
                .count();
            best = best.min(runs as u64);
            let mut k = 0;
            loop {
                if k == items.len() {
                    return best;
                }
                pick[k] += 1;
                if pick[k] < choices[k].len() {
                    break;
                }
                pick[k] = 0;
                k += 1;
            }
        }
    }

    fn ops(columns: &[Vec<Window>]) -> u64 {
        plan(columns).len() as u64
    }

    #[test]
    fn one_window_per_element_at_one_time_is_one_op() {
        let columns = vec![vec![(1, 5)]; 8];
        assert_eq!(plan(&columns), vec![(5, 0..8)]);
        assert_eq!(lower_bound(&columns), 1);
    }

    #[test]
    fn every_other_element_is_one_op_each() {
        let columns: Vec<Vec<Window>> = (0..8).map(|x| if x % 2 == 0 { vec![(1, 5)] } else { vec![] }).collect();
        assert_eq!(ops(&columns), 4);
        assert_eq!(lower_bound(&columns), 4);
    }

    #[test]
    fn windows_that_do_not_overlap_need_an_op_each_even_for_one_element() {
        let columns = vec![vec![(1, 2), (4, 6), (8, 8)]];
        assert_eq!(plan(&columns), vec![(2, 0..1), (6, 0..1), (8, 0..1)]);
        assert_eq!(lower_bound(&columns), 3);
    }

    #[test]
    fn a_bridge_taken_early_would_split_a_later_run() {
        // x=0: [0,1] and [5,9]; x=1: [0,9]; x=2: [5,9]. Taking x=1 at point 1 with x=0 leaves
        // {0, 2} apart at 9 (three ops); leaving it joins all three at 9 (two).
        let columns = vec![vec![(0, 1), (5, 9)], vec![(0, 9)], vec![(5, 9)]];
        assert_eq!(sweep(&columns, Policy::All).len(), 3);
        assert_eq!(ops(&columns), 2);
        assert_eq!(lower_bound(&columns), 2);
        assert_eq!(brute_force(&columns), 2);
    }

    #[test]
    fn an_open_window_next_to_a_forced_one_goes_along() {
        // Leaving x=1 for later costs an op of its own.
        let columns = vec![vec![(0, 1)], vec![(0, 9)]];
        assert_eq!(sweep(&columns, Policy::Bridges).len(), 2);
        assert_eq!(plan(&columns), vec![(1, 0..2)]);
        assert_eq!(lower_bound(&columns), 1);
    }

    #[test]
    fn the_plan_is_never_below_the_optimum_and_the_bound_never_above_it() {
        // Small random instances against the exhaustive optimum.
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut exact = 0;
        for _ in 0..400 {
            let width = 1 + next(4) as usize;
            let columns: Vec<Vec<Window>> = (0..width)
                .map(|_| {
                    let mut ws = Vec::new();
                    let mut t = next(3);
                    for _ in 0..next(3) {
                        let lo = t + next(3);
                        let hi = lo + next(4);
                        ws.push((lo, hi));
                        t = hi + 1;
                    }
                    ws
                })
                .collect();
            if columns.iter().map(Vec::len).sum::<usize>() > 7 {
                continue;
            }
            let best = brute_force(&columns);
            let planned = ops(&columns);
            let bound = lower_bound(&columns);
            assert!(bound <= best && best <= planned, "{columns:?}: bound {bound}, best {best}, plan {planned}");
            exact += usize::from(planned == best);
            // The plan covers every window once, at a point inside it.
            let mut covered: Vec<Vec<bool>> = columns.iter().map(|ws| vec![false; ws.len()]).collect();
            for (point, range) in plan(&columns) {
                for x in range {
                    let k = columns[x as usize].iter().position(|w| w.0 <= point && point <= w.1).expect("inside");
                    assert!(!covered[x as usize][k], "covered twice");
                    covered[x as usize][k] = true;
                }
            }
            assert!(covered.iter().flatten().all(|&c| c));
        }
        assert!(exact > 0);
    }
}
