//! Uniquing storage: each distinct value is stored once and named by a handle.

use rustc_hash::FxHashMap;
use std::hash::Hash;

/// Stores each distinct `T` once; equal values get equal handles.
#[derive(Debug)]
pub(crate) struct Interner<T: Hash + Eq + Clone> {
    items: Vec<T>,
    lookup: FxHashMap<T, u32>,
}

impl<T: Hash + Eq + Clone> Default for Interner<T> {
    fn default() -> Self {
        Self { items: Vec::new(), lookup: FxHashMap::default() }
    }
}

impl<T: Hash + Eq + Clone> Interner<T> {
    /// The index of `item`, storing it first if it is new.
    pub(crate) fn intern(&mut self, item: T) -> usize {
        if let Some(&index) = self.lookup.get(&item) {
            return index as usize;
        }
        let index = self.items.len();
        self.items.push(item.clone());
        self.lookup.insert(item, index as u32);
        index
    }

    pub(crate) fn get(&self, index: usize) -> &T {
        &self.items[index]
    }

    pub(crate) fn find<Q>(&self, key: &Q) -> Option<usize>
    where
        T: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.lookup.get(key).map(|&i| i as usize)
    }
}
