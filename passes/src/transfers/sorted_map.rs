//! A map kept as a vector sorted by key: the static planner's per-buffer state. Its states are
//! cloned, compared and merged far more often than they grow (every round of a loop's fixpoint
//! clones one, every memo lookup compares two), and most hold a few buffers, so one contiguous
//! allocation beats a B-tree's nodes. Lookups and overwrites are binary searches; inserting a new
//! key moves the entries after it, which is cheap where new keys come in creation order (the
//! buffers a function allocates, in program order).

use std::ops::Index;

/// A map from `K` to `V`, iterated in key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortedMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K: Ord + Copy, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap { entries: Vec::new() }
    }
}

impl<K: Ord + Copy, V> SortedMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, key: &K) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.cmp(key))
    }

    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    /// The value of `key`, to change.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.find(key).ok().map(|i| &mut self.entries[i].1)
    }

    /// Whether `key` has a value.
    pub fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }

    /// Sets the value of `key`; gives the one it replaces.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`; gives its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.find(key).ok().map(|i| self.entries.remove(i).1)
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The entries, in key order, the values to change.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> + '_ {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }

    /// The entries, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// How many keys have a value.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key has a value.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<K: Ord + Copy, V> Extend<(K, V)> for SortedMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: Ord + Copy, V> FromIterator<(K, V)> for SortedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut entries: Vec<(K, V)> = iter.into_iter().collect();
        // Most maps are built from another map's entries, already in order: keep them.
        if entries.windows(2).all(|w| w[0].0 < w[1].0) {
            return SortedMap { entries };
        }
        // Stable, so that of equal keys the last wins once duplicates are dropped below.
        entries.sort_by_key(|e| e.0);
        let mut out: Vec<(K, V)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match out.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => out.push(entry),
            }
        }
        SortedMap { entries: out }
    }
}

impl<K, V> IntoIterator for SortedMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a, K, V> IntoIterator for &'a SortedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl<K: Ord + Copy, V> Index<&K> for SortedMap<K, V> {
    type Output = V;

    fn index(&self, key: &K) -> &V {
        self.get(key).expect("a key of the map")
    }
}

#[cfg(test)]
mod tests {
    use super::SortedMap;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_as_a_btree_map() {
        let mut sorted: SortedMap<u32, u32> = SortedMap::new();
        let mut reference: BTreeMap<u32, u32> = BTreeMap::new();
        // A fixed pseudo-random sequence of inserts, overwrites and removals.
        let mut x = 12345u32;
        for step in 0..2000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let key = (x >> 16) % 64;
            if step % 5 == 4 {
                assert_eq!(sorted.remove(&key), reference.remove(&key));
            } else {
                assert_eq!(sorted.insert(key, step), reference.insert(key, step));
            }
            assert_eq!(sorted.get(&key), reference.get(&key));
        }
        let pairs: Vec<(u32, u32)> = sorted.iter().map(|(k, v)| (*k, *v)).collect();
        let expected: Vec<(u32, u32)> = reference.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(pairs, expected);
        let collected: SortedMap<u32, u32> = [(3, 1), (1, 2), (3, 4)].into_iter().collect();
        assert_eq!(collected.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(), vec![(1, 2), (3, 4)]);
        assert_eq!(collected.len(), 2);
    }
}
