//! [`SideTable`]: data about ops, values or blocks kept beside the IR by one pass or analysis run,
//! sized to the entities the run touches rather than to the whole [`Context`].
//!
//! A pass nested on functions runs once per function; a table indexed by handle and sized to the
//! context (`vec![x; ctx.value_count()]`) costs the whole module on each run, so the pipeline
//! grows with the square of the module. A side table instead holds a dense window of the arena
//! (the handles of one function are mostly consecutive: the parser creates them in order) and a
//! hash map for the handles outside it (ops created by the run, or reused slots of erased ops).
//!
//! Invariants: an entity's entry is in the window when its index lies in it and in the map
//! otherwise, never in both; an entity never set reads as the table's default.

use crate::{Block, Context, Op, Value};
use rustc_hash::FxHashMap;
use std::marker::PhantomData;
use std::ops::Range;

/// A handle that indexes an arena of the [`Context`].
pub trait EntityIndex: Copy {
    /// Its position in the arena.
    fn arena_index(self) -> usize;
}

macro_rules! entity_index {
    ($($name:ident),*) => {$(
        impl EntityIndex for $name {
            #[inline]
            fn arena_index(self) -> usize {
                self.index()
            }
        }
    )*};
}

entity_index!(Op, Value, Block);

/// The smallest range of arena indices holding a set of entities, and how many there are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexWindow {
    start: usize,
    end: usize,
    count: usize,
}

impl IndexWindow {
    /// Adds an entity's index.
    #[inline]
    pub fn add(&mut self, index: usize) {
        if self.count == 0 {
            (self.start, self.end) = (index, index + 1);
        } else {
            self.start = self.start.min(index);
            self.end = self.end.max(index + 1);
        }
        self.count += 1;
    }

    /// How many indices were added.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The range to hold densely: all of it when at least a sixteenth of it is used, else
    /// nothing. A function parsed in one piece fills its range; a whole module after a pass that
    /// erased most of its ops fills a fifth of it, and a dense table still beats a map there
    /// (setting an entry of the window costs far less than hashing one); a few ops scattered
    /// over the arena (reused slots) go to the map.
    pub fn dense_range(&self) -> Range<usize> {
        let span = self.end - self.start;
        if span <= self.count.saturating_mul(16) + 64 {
            self.start..self.end
        } else {
            0..0
        }
    }

    /// The window of the ops in `ops`.
    pub fn of_ops(ops: &[Op]) -> IndexWindow {
        let mut window = IndexWindow::default();
        for &op in ops {
            window.add(op.index());
        }
        window
    }

    /// The window of the values that `ops` define: their results and the arguments of the blocks
    /// of their regions.
    pub fn of_values_defined_by(ctx: &Context, ops: &[Op]) -> IndexWindow {
        let mut window = IndexWindow::default();
        for &op in ops {
            window.add_values_defined_by(ctx, op);
        }
        window
    }

    /// Adds the values that `op` defines: its results and the arguments of the blocks of its
    /// regions.
    pub fn add_values_defined_by(&mut self, ctx: &Context, op: Op) {
        // Results are consecutive: the first and the last bound them.
        let count = ctx.result_count(op);
        if count > 0 {
            self.add(ctx.result(op, 0).index());
            if count > 1 {
                self.add(ctx.result(op, count - 1).index());
                self.count += count - 2;
            }
        }
        for &region in ctx.regions(op) {
            for &block in ctx.region_blocks(region) {
                for &argument in ctx.block_arguments(block) {
                    self.add(argument.index());
                }
            }
        }
    }
}

/// Values of type `V` for entities of type `K`, each reading `default` until set. See the module
/// documentation.
#[derive(Clone, Debug)]
pub struct SideTable<K, V> {
    /// The arena index of `dense[0]`.
    base: usize,
    dense: Vec<V>,
    /// By arena index, the entries outside the window.
    sparse: FxHashMap<u32, V>,
    default: V,
    _key: PhantomData<fn(K)>,
}

impl<K: EntityIndex, V: Clone> SideTable<K, V> {
    /// An empty table: the window starts at the first entity set and grows when later entities
    /// follow it closely.
    pub fn new(default: V) -> Self {
        SideTable { base: 0, dense: Vec::new(), sparse: FxHashMap::default(), default, _key: PhantomData }
    }

    /// A table whose window is `range` (see [`IndexWindow::dense_range`]).
    pub fn with_window(range: Range<usize>, default: V) -> Self {
        let dense = vec![default.clone(); range.len()];
        SideTable { base: range.start, dense, sparse: FxHashMap::default(), default, _key: PhantomData }
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: K) -> &V {
        let index = key.arena_index();
        match self.dense.get(index.wrapping_sub(self.base)) {
            Some(value) => value,
            None if self.sparse.is_empty() => &self.default,
            None => self.sparse.get(&(index as u32)).unwrap_or(&self.default),
        }
    }

    /// Sets the value of `key`.
    #[inline]
    pub fn set(&mut self, key: K, value: V) {
        *self.get_mut(key) = value;
    }

    /// The value of `key`, to change (set to the default first when absent).
    #[inline]
    pub fn get_mut(&mut self, key: K) -> &mut V {
        let index = key.arena_index();
        let offset = index.wrapping_sub(self.base);
        if offset < self.dense.len() {
            return &mut self.dense[offset];
        }
        self.get_mut_outside(index)
    }

    fn get_mut_outside(&mut self, index: usize) -> &mut V {
        if self.dense.is_empty() && self.sparse.is_empty() {
            self.base = index;
            // A small run (one function) then grows without reallocating at each step.
            self.dense.reserve(32);
            self.dense.push(self.default.clone());
            return &mut self.dense[0];
        }
        let end = self.base + self.dense.len();
        // Just past the end (entities created in order): grow the window, a half more than
        // needed so that growing one entity at a time is amortized, taking over the entries of
        // the map that it now covers.
        if index >= end && index - end <= self.dense.len() / 4 + 16 {
            let new_end = index + 1 + self.dense.len() / 2;
            self.dense.resize(new_end - self.base, self.default.clone());
            self.take_over(end..new_end);
            let offset = index - self.base;
            return &mut self.dense[offset];
        }
        let default = &self.default;
        self.sparse.entry(index as u32).or_insert_with(|| default.clone())
    }

    /// Moves the entries of the map in `covered` (just added to the window) into the window,
    /// looking up each index or going over the map, whichever is shorter.
    fn take_over(&mut self, covered: Range<usize>) {
        if self.sparse.is_empty() {
            return;
        }
        let (base, dense) = (self.base, &mut self.dense);
        if self.sparse.len() < covered.len() {
            self.sparse.retain(|&index, value| {
                let index = index as usize;
                if covered.contains(&index) {
                    dense[index - base] = value.clone();
                }
                !covered.contains(&index)
            });
        } else {
            for index in covered {
                if let Some(value) = self.sparse.remove(&(index as u32)) {
                    dense[index - base] = value;
                }
            }
        }
    }

    /// How many entries the table holds room for (the window and the map), for tests and
    /// statistics.
    pub fn capacity(&self) -> usize {
        self.dense.len() + self.sparse.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(index: usize) -> Op {
        Op::from_index(index)
    }

    #[test]
    fn unset_entries_read_as_the_default() {
        let table: SideTable<Op, u32> = SideTable::with_window(10..20, 7);
        assert_eq!(*table.get(op(3)), 7);
        assert_eq!(*table.get(op(15)), 7);
        assert_eq!(*table.get(op(1000)), 7);
    }

    #[test]
    fn entries_inside_and_outside_the_window() {
        let mut table: SideTable<Op, u32> = SideTable::with_window(10..20, 0);
        table.set(op(12), 1);
        table.set(op(3), 2);
        table.set(op(5000), 3);
        assert_eq!((*table.get(op(12)), *table.get(op(3)), *table.get(op(5000))), (1, 2, 3));
        assert_eq!(table.capacity(), 12);
    }

    #[test]
    fn the_window_grows_at_its_end_and_takes_over_the_map() {
        let mut table: SideTable<Op, u32> = SideTable::new(0);
        table.set(op(100), 1);
        // Close to the end (within a quarter of the window and 16): the window grows to 110 (and
        // a half of its length more: none yet).
        table.set(op(110), 2);
        assert_eq!((table.dense.len(), table.sparse.len()), (11, 0));
        // Far past the end: in the map.
        table.set(op(140), 4);
        assert_eq!((table.dense.len(), table.sparse.len()), (11, 1));
        // Growing to 130 (125 and 5 more), then to 150 (135 and 15 more), the window takes over
        // the map's entry for 140.
        table.set(op(125), 3);
        assert_eq!((table.dense.len(), table.sparse.len()), (31, 1));
        *table.get_mut(op(135)) += 5;
        table.set(op(141), 6);
        assert_eq!((table.dense.len(), table.sparse.len()), (51, 0));
        let read: Vec<u32> = [100, 110, 125, 135, 140, 141, 139].iter().map(|&i| *table.get(op(i))).collect();
        assert_eq!(read, [1, 2, 3, 5, 4, 6, 0]);
        // Before the window: in the map.
        table.set(op(7), 9);
        assert_eq!(*table.get(op(7)), 9);
        assert_eq!(table.sparse.len(), 1);
    }

    #[test]
    fn windows_are_dense_unless_scattered() {
        let mut window = IndexWindow::default();
        for index in 1000..1100 {
            window.add(index);
        }
        assert_eq!(window.dense_range(), 1000..1100);
        window.add(100);
        assert_eq!(window.dense_range(), 100..1100, "a tenth of it used");
        window.add(1_000_000);
        assert_eq!(window.dense_range(), 0..0);
        assert_eq!(window.count(), 102);
    }
}
