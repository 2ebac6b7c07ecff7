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

/// Ops waiting to be visited, taken in program order (the pre-order of the root's walk) for a
/// forward analysis and in reverse for a backward one, each at most once in the queue. A loop
/// then settles before the code after it (before it, going backward) is visited, so a chain of
/// loops costs each loop its own iterations, not one more wave through everything upstream per
/// change downstream (a first-in, first-out queue's quadratic case).
#[derive(Debug)]
pub(crate) struct OrderedWorklist {
    ops: Vec<crate::Op>,
    position: rustc_hash::FxHashMap<crate::Op, u32>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<u32>>,
    queued: FxHashSet<u32>,
    backward: bool,
}

impl OrderedWorklist {
    /// A worklist over the ops under `root`; `backward`: latest first.
    pub(crate) fn new(ctx: &crate::Context, root: crate::Op, backward: bool) -> Self {
        Self::over(ctx.walk(root), backward)
    }

    /// A worklist over `ops`, in that order (latest first when `backward`).
    pub(crate) fn over(ops: Vec<crate::Op>, backward: bool) -> Self {
        let position = ops.iter().enumerate().map(|(i, &op)| (op, i as u32)).collect();
        OrderedWorklist { ops, position, heap: Default::default(), queued: FxHashSet::default(), backward }
    }

    pub(crate) fn push(&mut self, op: crate::Op) {
        let index = match self.position.get(&op) {
            Some(&i) => i,
            None => {
                // An op the walk did not see (none should be): appended.
                let i = self.ops.len() as u32;
                self.ops.push(op);
                self.position.insert(op, i);
                i
            }
        };
        if self.queued.insert(index) {
            let key = if self.backward { u32::MAX - index } else { index };
            self.heap.push(std::cmp::Reverse(key));
        }
    }

    pub(crate) fn pop(&mut self) -> Option<crate::Op> {
        let std::cmp::Reverse(key) = self.heap.pop()?;
        let index = if self.backward { u32::MAX - key } else { key };
        self.queued.remove(&index);
        Some(self.ops[index as usize])
    }
}
