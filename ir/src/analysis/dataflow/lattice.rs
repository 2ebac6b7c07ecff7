//! Lattices: the values a dataflow analysis computes, ordered by how much they say may happen.
//!
//! A [`Lattice`] has a least element, [`bottom`](Lattice::bottom) ("nothing reached here yet":
//! the state of a value whose definition has not run, of a program point no path reaches), and a
//! [`join`](Lattice::join) (least upper bound) that merges what arrives from several paths. The
//! solvers only ever join, so a state climbs; an analysis terminates when its lattice has no
//! infinite ascending chain (or its transfer functions widen). Backward analyses join too: what
//! comes from several successors is merged by the same operation, read in the other direction.
//!
//! Ready-made lattices: [`Flat`] (one known value, or "several": constants), [`UnionSet`] (sets
//! under union: reaching definitions), [`LatticeMap`] (a lattice per key, pointwise: a state per
//! buffer), and `bool` (false below true: "used", "live").

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

/// A join-semilattice with a least element.
pub trait Lattice: Clone + PartialEq + Debug {
    /// The least element: no information has arrived.
    fn bottom() -> Self;

    /// Merges `other` into `self` (least upper bound); returns whether `self` changed.
    fn join(&mut self, other: &Self) -> bool;

    /// Whether this is [`bottom`](Self::bottom).
    fn is_bottom(&self) -> bool {
        *self == Self::bottom()
    }
}

/// `false` below `true`: a flag that, once set, stays set.
impl Lattice for bool {
    fn bottom() -> Self {
        false
    }

    fn join(&mut self, other: &Self) -> bool {
        let changed = !*self && *other;
        *self |= *other;
        changed
    }
}

/// The flat lattice over `T`: nothing known yet, exactly one value, or more than one (MLIR's
/// `ConstantValue`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Flat<T> {
    /// No value has arrived (bottom).
    #[default]
    Bottom,
    /// Always this value.
    Known(T),
    /// Values that differ, or one the analysis cannot know (top).
    Top,
}

impl<T: Clone + PartialEq + Debug> Lattice for Flat<T> {
    fn bottom() -> Self {
        Flat::Bottom
    }

    fn join(&mut self, other: &Self) -> bool {
        match (&*self, other) {
            (_, Flat::Bottom) | (Flat::Top, _) => false,
            (Flat::Known(a), Flat::Known(b)) if a == b => false,
            (Flat::Bottom, _) => {
                *self = other.clone();
                true
            }
            _ => {
                *self = Flat::Top;
                true
            }
        }
    }
}

impl<T> Flat<T> {
    /// The value, when exactly one is known.
    pub fn known(&self) -> Option<&T> {
        match self {
            Flat::Known(value) => Some(value),
            _ => None,
        }
    }
}

/// Sets of `T` under union (the empty set is bottom).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnionSet<T: Ord>(pub BTreeSet<T>);

impl<T: Ord> Default for UnionSet<T> {
    fn default() -> Self {
        UnionSet(BTreeSet::new())
    }
}

impl<T: Ord + Clone + Debug> UnionSet<T> {
    /// The set of one element.
    pub fn single(element: T) -> Self {
        UnionSet(BTreeSet::from([element]))
    }
}

impl<T: Ord + Clone + Debug> Lattice for UnionSet<T> {
    fn bottom() -> Self {
        UnionSet(BTreeSet::new())
    }

    fn join(&mut self, other: &Self) -> bool {
        let before = self.0.len();
        self.0.extend(other.0.iter().cloned());
        self.0.len() != before
    }
}

/// A lattice per key, joined key by key; a missing key holds bottom (so bottom is the empty map).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LatticeMap<K: Ord, V>(pub BTreeMap<K, V>);

impl<K: Ord, V> Default for LatticeMap<K, V> {
    fn default() -> Self {
        LatticeMap(BTreeMap::new())
    }
}

impl<K: Ord + Clone + Debug, V: Lattice> LatticeMap<K, V> {
    /// The value of `key` (bottom when missing).
    pub fn get(&self, key: &K) -> V {
        self.0.get(key).cloned().unwrap_or_else(V::bottom)
    }

    /// Replaces the value of `key` (a strong update; bottom removes the key).
    pub fn set(&mut self, key: K, value: V) {
        if value.is_bottom() {
            self.0.remove(&key);
        } else {
            self.0.insert(key, value);
        }
    }

    /// Joins `value` into the value of `key` (a weak update); returns whether it changed.
    pub fn join_at(&mut self, key: K, value: &V) -> bool {
        if value.is_bottom() {
            return false;
        }
        match self.0.get_mut(&key) {
            Some(existing) => existing.join(value),
            None => {
                self.0.insert(key, value.clone());
                true
            }
        }
    }
}

impl<K: Ord + Clone + Debug, V: Lattice> Lattice for LatticeMap<K, V> {
    fn bottom() -> Self {
        LatticeMap(BTreeMap::new())
    }

    fn join(&mut self, other: &Self) -> bool {
        let mut changed = false;
        for (key, value) in &other.0 {
            changed |= self.join_at(key.clone(), value);
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_climbs_from_bottom_to_one_value_to_top() {
        let mut value = Flat::Bottom;
        assert!(value.join(&Flat::Known(3)));
        assert!(!value.join(&Flat::Known(3)));
        assert!(!value.join(&Flat::Bottom));
        assert!(value.join(&Flat::Known(4)));
        assert_eq!(value, Flat::<i64>::Top);
        assert!(!value.join(&Flat::Known(5)));
    }

    #[test]
    fn maps_join_pointwise_and_drop_bottom() {
        let mut a: LatticeMap<u32, UnionSet<u32>> = LatticeMap::default();
        a.set(1, UnionSet::single(10));
        let mut b = LatticeMap::default();
        b.set(1, UnionSet::single(11));
        b.set(2, UnionSet::default());
        assert!(a.join(&b));
        assert_eq!(a.get(&1), UnionSet([10, 11].into()));
        assert!(!a.0.contains_key(&2), "bottom values are not stored");
        assert!(!a.join(&b));
        let mut flag = false;
        assert!(flag.join(&true) && flag && !flag.join(&false));
    }
}
