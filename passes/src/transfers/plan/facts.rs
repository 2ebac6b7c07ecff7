//! What the analyses know of one root at a program point: a set of elements on each side (host,
//! device) — which are current, or which are anticipated, or which are delayed.
//!
//! The planner solves each tracked root on its own, over the slice of the function that touches
//! it (the problem is separable: no root's facts depend on another's), so a state is one pair of
//! element sets. [`Must`] and [`May`] make lattices of it for hat-ir's dataflow solvers: a
//! must-state joins by intersection ("on every path"), a may-state by union ("on some path");
//! both have a distinct bottom (no path has reached the point yet).

use super::super::ranges::RangeSet;
use hat_ir::analysis::dataflow::Lattice;

/// The sets of one root: `[host, device]`.
pub type Pair = [RangeSet; 2];

/// The host side's index in a [`Pair`].
pub const HOST: usize = 0;
/// The device side's index in a [`Pair`].
pub const DEVICE: usize = 1;

/// The other side.
pub fn other(side: usize) -> usize {
    1 - side
}

/// Nothing on either side.
pub fn nothing() -> Pair {
    [RangeSet::empty(), RangeSet::empty()]
}

/// Both sides' sets united with `more`'s.
pub fn unite(a: &Pair, more: &Pair) -> Pair {
    [a[HOST].union(&more[HOST]), a[DEVICE].union(&more[DEVICE])]
}

/// Both sides' sets less `less`'s.
pub fn minus(a: &Pair, less: &Pair) -> Pair {
    [a[HOST].minus(&less[HOST]), a[DEVICE].minus(&less[DEVICE])]
}

/// Whether neither side has an element.
pub fn is_nothing(a: &Pair) -> bool {
    a[HOST].is_empty() && a[DEVICE].is_empty()
}

fn meet(a: &Pair, b: &Pair) -> Pair {
    [a[HOST].intersect(&b[HOST]), a[DEVICE].intersect(&b[DEVICE])]
}

/// Whether every element of `b` is in `a`, on both sides.
fn covers(a: &Pair, b: &Pair) -> bool {
    a[HOST].contains(&b[HOST]) && a[DEVICE].contains(&b[DEVICE])
}

/// A copy of `pair` (the two sets cloned one by one: an array's own `clone` goes through an
/// iterator, several times slower, and the solvers copy states on every visit).
pub fn copy(pair: &Pair) -> Pair {
    [pair[HOST].clone(), pair[DEVICE].clone()]
}

/// Facts that hold on every path (joined by intersection); `Unreached` until a path arrives.
#[derive(Debug, PartialEq, Default)]
pub enum Must {
    /// No path has reached the point.
    #[default]
    Unreached,
    /// What holds on every path that has.
    At(Pair),
}

impl Must {
    /// The sets, when some path reaches the point.
    pub fn pair(&self) -> Option<&Pair> {
        match self {
            Must::Unreached => None,
            Must::At(pair) => Some(pair),
        }
    }
}

impl Clone for Must {
    fn clone(&self) -> Self {
        match self {
            Must::Unreached => Must::Unreached,
            Must::At(pair) => Must::At(copy(pair)),
        }
    }
}

impl Lattice for Must {
    fn bottom() -> Self {
        Must::Unreached
    }

    fn join(&mut self, other: &Self) -> bool {
        match (&*self, other) {
            (_, Must::Unreached) => false,
            (Must::Unreached, _) => {
                *self = other.clone();
                true
            }
            // Nothing lost: the meet is `a` itself (sets are kept in one normal form).
            (Must::At(a), Must::At(b)) if covers(b, a) => false,
            (Must::At(a), Must::At(b)) => {
                let joined = meet(a, b);
                let changed = joined != *a;
                *self = Must::At(joined);
                changed
            }
        }
    }
}

/// What is current of one root: on every path (`current`, must) and on some path (`may`). An
/// element current on a side on some paths only is *uncertain* there: a copy to that side is
/// made when the root's run-time state says the side is stale ([`super::state`]).
#[derive(Debug, PartialEq, Default)]
pub enum Available {
    /// No path has reached the point.
    #[default]
    Unreached,
    /// What holds on the paths that have.
    At {
        /// Current on each side on every path.
        current: Pair,
        /// Current on each side on some path (a superset of `current`).
        may: Pair,
    },
}

impl Available {
    /// `current` on every path.
    pub fn of(current: Pair) -> Available {
        Available::At { may: copy(&current), current }
    }

    /// The elements current on every path, when some path reaches the point.
    pub fn pair(&self) -> Option<&Pair> {
        match self {
            Available::Unreached => None,
            Available::At { current, .. } => Some(current),
        }
    }

    /// The elements current on some path, when some path reaches the point.
    pub fn may(&self) -> Option<&Pair> {
        match self {
            Available::Unreached => None,
            Available::At { may, .. } => Some(may),
        }
    }

    /// Both sets with `f` applied to each.
    pub fn map(&self, f: impl Fn(&Pair) -> Pair) -> Available {
        match self {
            Available::Unreached => Available::Unreached,
            Available::At { current, may } => Available::At { current: f(current), may: f(may) },
        }
    }
}

impl Clone for Available {
    fn clone(&self) -> Self {
        match self {
            Available::Unreached => Available::Unreached,
            Available::At { current, may } => Available::At { current: copy(current), may: copy(may) },
        }
    }
}

impl Lattice for Available {
    fn bottom() -> Self {
        Available::Unreached
    }

    fn join(&mut self, other: &Self) -> bool {
        match (&*self, other) {
            (_, Available::Unreached) => false,
            (Available::Unreached, _) => {
                *self = other.clone();
                true
            }
            // Nothing lost, nothing added (sets are kept in one normal form).
            (Available::At { current: a, may: m }, Available::At { current: b, may: n })
                if covers(b, a) && covers(m, n) =>
            {
                false
            }
            (Available::At { current: a, may: m }, Available::At { current: b, may: n }) => {
                let current = meet(a, b);
                let may = unite(m, n);
                let changed = current != *a || may != *m;
                *self = Available::At { current, may };
                changed
            }
        }
    }
}

/// Facts that hold on some path (joined by union); `Unreached` until a path arrives.
#[derive(Debug, PartialEq, Default)]
pub enum May {
    /// No path has reached the point.
    #[default]
    Unreached,
    /// What holds on some path.
    At(Pair),
}

impl May {
    /// The sets, when some path reaches the point.
    pub fn pair(&self) -> Option<&Pair> {
        match self {
            May::Unreached => None,
            May::At(pair) => Some(pair),
        }
    }
}

impl Clone for May {
    fn clone(&self) -> Self {
        match self {
            May::Unreached => May::Unreached,
            May::At(pair) => May::At(copy(pair)),
        }
    }
}

impl Lattice for May {
    fn bottom() -> Self {
        May::Unreached
    }

    fn join(&mut self, other: &Self) -> bool {
        match (&*self, other) {
            (_, May::Unreached) => false,
            (May::Unreached, _) => {
                *self = other.clone();
                true
            }
            // Nothing new: the union is `a` itself.
            (May::At(a), May::At(b)) if covers(a, b) => false,
            (May::At(a), May::At(b)) => {
                let joined = unite(a, b);
                let changed = joined != *a;
                *self = May::At(joined);
                changed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: u64, b: u64) -> Pair {
        [RangeSet::of(a..b), RangeSet::empty()]
    }

    #[test]
    fn must_meets_and_may_unites() {
        let mut must = Must::Unreached;
        assert!(must.join(&Must::At(pair(0, 10))));
        assert!(must.join(&Must::At(pair(5, 20))));
        assert!(!must.join(&Must::Unreached), "an unreached path changes nothing");
        assert_eq!(must.pair().unwrap()[HOST], RangeSet::of(5..10));
        let mut may = May::At(pair(0, 10));
        assert!(may.join(&May::At(pair(5, 20))));
        assert!(!may.join(&May::At(pair(2, 3))));
        assert_eq!(may.pair().unwrap()[HOST], RangeSet::of(0..20));
    }

    #[test]
    fn availability_meets_what_is_current_and_unites_what_may_be() {
        // Path one: elements 0..8 current on the host. Path two: 0..4 on the host, 4..8 on the
        // device.
        let one = Available::of(pair(0, 8));
        let two = Available::of([RangeSet::of(0..4), RangeSet::of(4..8)]);
        let mut joined = Available::Unreached;
        assert!(joined.join(&one));
        assert!(joined.join(&two));
        assert_eq!(joined.pair().unwrap()[HOST], RangeSet::of(0..4), "current on the host on both paths");
        assert_eq!(joined.may().unwrap()[HOST], RangeSet::of(0..8), "on the host on some path");
        assert_eq!(joined.may().unwrap()[DEVICE], RangeSet::of(4..8), "on the device on some path");
        assert!(!joined.join(&two), "a fixpoint");
    }
}
