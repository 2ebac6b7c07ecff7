//! The solvers' worklist: first in, first out, each item at most once in the queue.

use rustc_hash::FxHashSet;
use std::collections::VecDeque;
use std::hash::Hash;

/// Items waiting to be visited; pushing one already waiting does nothing.
#[derive(Debug)]
pub(crate) struct Worklist<T> {
    queue: VecDeque<T>,
    queued: FxHashSet<T>,
}

impl<T: Copy + Eq + Hash> Worklist<T> {
    pub(crate) fn new() -> Self {
        Worklist { queue: VecDeque::new(), queued: FxHashSet::default() }
    }

    pub(crate) fn push(&mut self, item: T) {
        if self.queued.insert(item) {
            self.queue.push_back(item);
        }
    }

    pub(crate) fn pop(&mut self) -> Option<T> {
        let item = self.queue.pop_front()?;
        self.queued.remove(&item);
        Some(item)
    }
}
