//! What the analyses know at a program point: for every tracked root, a set of elements on each
//! side (host, device) — which are current, or which are anticipated, or which are delayed.
//!
//! The analyses keep a state at every program point, and a function may have a thousand roots
//! and a hundred thousand ops, so a state is a *persistent* vector: a tree of fixed branching
//! whose nodes are shared between states (branching 4: a narrower tree copies fewer bytes per
//! change, 1.1 to 1.3 s at 10,000 dispatches where branching 8 took 1.45 to 1.7 s and 40 %
//! more memory). Changing one root copies one path (a few dozen
//! pointers); cloning a state is a reference count; comparing, joining or diffing two states
//! skips every subtree they share, so the cost follows what differs, not the number of roots.
//!
//! [`Must`] and [`May`] make lattices of it for hat-ir's dataflow solvers: a must-state joins by
//! intersection ("on every path"), a may-state by union ("on some path"); both have a distinct
//! bottom (no path has reached the point yet).

use super::super::ranges::RangeSet;
use hat_ir::analysis::dataflow::Lattice;
use std::rc::Rc;

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

const SHIFT: u32 = 2;
const WIDTH: usize = 1 << SHIFT;
const MASK: usize = WIDTH - 1;

#[derive(Clone)]
enum Node {
    Leaf(Rc<[Pair]>),
    Inner(Rc<[Node]>),
}

impl Node {
    fn same(&self, other: &Node) -> bool {
        match (self, other) {
            (Node::Leaf(a), Node::Leaf(b)) => Rc::ptr_eq(a, b),
            (Node::Inner(a), Node::Inner(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// A pair of element sets per root, `0..len`.
#[derive(Clone)]
pub struct Facts {
    len: usize,
    /// The levels of inner nodes above the leaves.
    depth: u32,
    root: Node,
}

impl std::fmt::Debug for Facts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Facts({} roots)", self.len)
    }
}

impl PartialEq for Facts {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && equal(&self.root, &other.root)
    }
}

fn equal(a: &Node, b: &Node) -> bool {
    if a.same(b) {
        return true;
    }
    match (a, b) {
        (Node::Leaf(x), Node::Leaf(y)) => x == y,
        (Node::Inner(x), Node::Inner(y)) => x.iter().zip(y.iter()).all(|(p, q)| equal(p, q)),
        _ => false,
    }
}

impl Facts {
    /// `len` roots, each with `pair`.
    pub fn filled(len: usize, pair: Pair) -> Facts {
        let mut depth = 0;
        let mut capacity = WIDTH;
        while capacity < len {
            capacity <<= SHIFT;
            depth += 1;
        }
        let mut node = Node::Leaf(vec![pair; WIDTH].into());
        for _ in 0..depth {
            node = Node::Inner(vec![node; WIDTH].into());
        }
        Facts { len, depth, root: node }
    }

    /// Nothing for `len` roots.
    pub fn empty(len: usize) -> Facts {
        Facts::filled(len, [RangeSet::empty(), RangeSet::empty()])
    }

    /// How many roots.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no root.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The sets of root `index`.
    pub fn get(&self, index: usize) -> &Pair {
        let mut node = &self.root;
        let mut level = self.depth;
        loop {
            match node {
                Node::Inner(children) => {
                    node = &children[(index >> (SHIFT * level)) & MASK];
                    level -= 1;
                }
                Node::Leaf(pairs) => return &pairs[index & MASK],
            }
        }
    }

    /// Replaces the sets of root `index` (one path copied).
    pub fn set(&mut self, index: usize, pair: Pair) {
        if *self.get(index) == pair {
            return;
        }
        fn put(node: &Node, level: u32, index: usize, pair: Pair) -> Node {
            match node {
                Node::Leaf(pairs) => {
                    let mut copy = pairs.to_vec();
                    copy[index & MASK] = pair;
                    Node::Leaf(copy.into())
                }
                Node::Inner(children) => {
                    let slot = (index >> (SHIFT * level)) & MASK;
                    let mut copy = children.to_vec();
                    copy[slot] = put(&children[slot], level - 1, index, pair);
                    Node::Inner(copy.into())
                }
            }
        }
        self.root = put(&self.root, self.depth, index, pair);
    }

    /// Applies `f` to the sets of root `index`.
    pub fn update(&mut self, index: usize, f: impl FnOnce(&Pair) -> Pair) {
        let pair = f(self.get(index));
        self.set(index, pair);
    }

    /// Root by root, `f` of the two (`f(x, x)` must be `x`: shared subtrees are kept as they are).
    pub fn zip(&self, other: &Facts, f: &impl Fn(&Pair, &Pair) -> Pair) -> Facts {
        fn go(a: &Node, b: &Node, f: &impl Fn(&Pair, &Pair) -> Pair) -> Node {
            if a.same(b) {
                return a.clone();
            }
            match (a, b) {
                (Node::Leaf(x), Node::Leaf(y)) => {
                    // Most joins change nothing: compare before building a leaf.
                    let mut same_as_x = true;
                    let mut same_as_y = true;
                    let merged: smallvec::SmallVec<[Pair; WIDTH]> = x
                        .iter()
                        .zip(y.iter())
                        .map(|(p, q)| {
                            let m = f(p, q);
                            same_as_x &= m == *p;
                            same_as_y &= m == *q;
                            m
                        })
                        .collect();
                    if same_as_x {
                        a.clone()
                    } else if same_as_y {
                        b.clone()
                    } else {
                        Node::Leaf(merged.into_vec().into())
                    }
                }
                (Node::Inner(x), Node::Inner(y)) => {
                    let merged: Vec<Node> = x.iter().zip(y.iter()).map(|(p, q)| go(p, q, f)).collect();
                    if merged.iter().zip(x.iter()).all(|(m, p)| m.same(p)) {
                        a.clone()
                    } else if merged.iter().zip(y.iter()).all(|(m, q)| m.same(q)) {
                        b.clone()
                    } else {
                        Node::Inner(merged.into())
                    }
                }
                _ => unreachable!("facts of one function have one shape"),
            }
        }
        Facts { len: self.len, depth: self.depth, root: go(&self.root, &other.root, f) }
    }

    /// Calls `visit(index, mine, theirs)` for every root whose sets differ (subtrees the two
    /// share are skipped).
    pub fn diff(&self, other: &Facts, visit: &mut impl FnMut(usize, &Pair, &Pair)) {
        fn go(a: &Node, b: &Node, base: usize, level: u32, len: usize, visit: &mut impl FnMut(usize, &Pair, &Pair)) {
            if a.same(b) || base >= len {
                return;
            }
            match (a, b) {
                (Node::Leaf(x), Node::Leaf(y)) => {
                    for (k, (p, q)) in x.iter().zip(y.iter()).enumerate() {
                        if base + k < len && p != q {
                            visit(base + k, p, q);
                        }
                    }
                }
                (Node::Inner(x), Node::Inner(y)) => {
                    let span = WIDTH << (SHIFT * (level - 1));
                    for (k, (p, q)) in x.iter().zip(y.iter()).enumerate() {
                        go(p, q, base + k * span, level - 1, len, visit);
                    }
                }
                _ => unreachable!("facts of one function have one shape"),
            }
        }
        go(&self.root, &other.root, 0, self.depth, self.len, visit);
    }

    /// Calls `visit(index, sets)` for every root.
    pub fn each(&self, visit: &mut impl FnMut(usize, &Pair)) {
        for index in 0..self.len {
            visit(index, self.get(index));
        }
    }
}

fn meet(a: &Pair, b: &Pair) -> Pair {
    if a == b {
        return a.clone();
    }
    [a[0].intersect(&b[0]), a[1].intersect(&b[1])]
}

fn unite(a: &Pair, b: &Pair) -> Pair {
    if a == b {
        return a.clone();
    }
    [a[0].union(&b[0]), a[1].union(&b[1])]
}

/// Facts that hold on every path (joined by intersection); `Unreached` until a path arrives.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Must {
    /// No path has reached the point.
    #[default]
    Unreached,
    /// What holds on every path that has.
    At(Facts),
}

impl Must {
    /// The facts, when some path reaches the point.
    pub fn facts(&self) -> Option<&Facts> {
        match self {
            Must::Unreached => None,
            Must::At(facts) => Some(facts),
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
            (Must::At(a), Must::At(b)) => {
                let joined = a.zip(b, &meet);
                let changed = joined != *a;
                *self = Must::At(joined);
                changed
            }
        }
    }
}

/// Facts that hold on some path (joined by union); `Unreached` until a path arrives.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum May {
    /// No path has reached the point.
    #[default]
    Unreached,
    /// What holds on some path.
    At(Facts),
}

impl May {
    /// The facts, when some path reaches the point.
    pub fn facts(&self) -> Option<&Facts> {
        match self {
            May::Unreached => None,
            May::At(facts) => Some(facts),
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
            (May::At(a), May::At(b)) => {
                let joined = a.zip(b, &unite);
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
    fn a_persistent_vector_of_sets() {
        for len in [1, 7, 8, 9, 64, 65, 1000] {
            let mut facts = Facts::empty(len);
            let base = facts.clone();
            for i in (0..len).step_by(3) {
                facts.set(i, pair(i as u64, i as u64 + 2));
            }
            for i in 0..len {
                let expected = if i % 3 == 0 { pair(i as u64, i as u64 + 2) } else { Facts::empty(1).get(0).clone() };
                assert_eq!(*facts.get(i), expected, "root {i} of {len}");
                assert!(base.get(i)[0].is_empty(), "the old version is unchanged");
            }
            let mut seen = Vec::new();
            facts.diff(&base, &mut |i, _, _| seen.push(i));
            assert_eq!(seen, (0..len).step_by(3).collect::<Vec<_>>());
            assert_ne!(facts, base);
            let union = facts.zip(&base, &unite);
            assert_eq!(union, facts);
            let meet_ = facts.zip(&base, &meet);
            assert_eq!(meet_, base);
        }
    }

    #[test]
    fn must_meets_and_may_unites() {
        let mut a = Facts::empty(3);
        a.set(1, pair(0, 10));
        let mut b = Facts::empty(3);
        b.set(1, pair(5, 20));
        let mut must = Must::Unreached;
        assert!(must.join(&Must::At(a.clone())));
        assert!(must.join(&Must::At(b.clone())));
        assert_eq!(must.facts().unwrap().get(1)[0], RangeSet::of(5..10));
        let mut may = May::At(a);
        assert!(may.join(&May::At(b)));
        assert_eq!(may.facts().unwrap().get(1)[0], RangeSet::of(0..20));
    }
}
