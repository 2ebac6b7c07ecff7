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

/// A fixed order of ops: their positions, computed once and shared by the worklists of every
/// solve over the same ops.
#[derive(Debug, Default)]
pub(crate) struct OpOrder {
    ops: Vec<crate::Op>,
    position: rustc_hash::FxHashMap<crate::Op, u32>,
}

impl OpOrder {
    /// `ops`, in that order.
    pub(crate) fn new(ops: Vec<crate::Op>) -> Self {
        let position = ops.iter().enumerate().map(|(i, &op)| (op, i as u32)).collect();
        OpOrder { ops, position }
    }
}

/// Ops waiting to be visited, taken in program order (the pre-order of the root's walk) for a
/// forward analysis and in reverse for a backward one, each at most once in the queue. A loop
/// then settles before the code after it (before it, going backward) is visited, so a chain of
/// loops costs each loop its own iterations, not one more wave through everything upstream per
/// change downstream (a first-in, first-out queue's quadratic case).
#[derive(Debug)]
pub(crate) struct OrderedWorklist {
    order: std::rc::Rc<OpOrder>,
    /// Ops pushed that the order does not have (none should be), after its own.
    extra: Vec<crate::Op>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<u32>>,
    queued: Vec<bool>,
    backward: bool,
}

impl OrderedWorklist {
    /// A worklist over the ops under `root`; `backward`: latest first.
    pub(crate) fn new(ctx: &crate::Context, root: crate::Op, backward: bool) -> Self {
        Self::over(std::rc::Rc::new(OpOrder::new(ctx.walk(root))), backward)
    }

    /// A worklist over the ops of `order` (latest first when `backward`).
    pub(crate) fn over(order: std::rc::Rc<OpOrder>, backward: bool) -> Self {
        let queued = vec![false; order.ops.len()];
        OrderedWorklist { order, extra: Vec::new(), heap: Default::default(), queued, backward }
    }

    pub(crate) fn push(&mut self, op: crate::Op) {
        let index = match self.order.position.get(&op) {
            Some(&i) => i as usize,
            None => match self.extra.iter().position(|&o| o == op) {
                Some(i) => self.order.ops.len() + i,
                None => {
                    self.extra.push(op);
                    self.queued.push(false);
                    self.order.ops.len() + self.extra.len() - 1
                }
            },
        };
        if !self.queued[index] {
            self.queued[index] = true;
            let index = index as u32;
            let key = if self.backward { u32::MAX - index } else { index };
            self.heap.push(std::cmp::Reverse(key));
        }
    }

    pub(crate) fn pop(&mut self) -> Option<crate::Op> {
        let std::cmp::Reverse(key) = self.heap.pop()?;
        let index = (if self.backward { u32::MAX - key } else { key }) as usize;
        self.queued[index] = false;
        let known = self.order.ops.len();
        Some(if index < known { self.order.ops[index] } else { self.extra[index - known] })
    }
}

/// The kept ops of a slice waiting to be visited, by their numbers (program order): the
/// smallest first for a forward analysis, the largest for a backward one, each at most once in
/// the queue (the order of [`OrderedWorklist`] over the same ops, without hashing). A set of
/// bits, searched from the nearest number queued: a solve mostly moves on in one direction, so
/// a search passes few words.
#[derive(Debug)]
pub(crate) struct NumberedWorklist {
    queued: Vec<u64>,
    /// No number queued is below it (forward) or above it (backward); `None`: none queued.
    nearest: Option<u32>,
    backward: bool,
}

impl NumberedWorklist {
    /// A worklist over ops numbered `0..count`.
    pub(crate) fn new(count: usize, backward: bool) -> Self {
        NumberedWorklist { queued: vec![0; count.div_ceil(64)], nearest: None, backward }
    }

    pub(crate) fn push(&mut self, i: u32) {
        self.queued[i as usize / 64] |= 1 << (i % 64);
        self.nearest = Some(match self.nearest {
            Some(n) if self.backward => n.max(i),
            Some(n) => n.min(i),
            None => i,
        });
    }

    pub(crate) fn pop(&mut self) -> Option<u32> {
        let from = self.nearest?;
        let found = if self.backward {
            let mut word = from as usize / 64;
            // The bits at and below `from` in its word.
            let mut bits = self.queued[word] & (u64::MAX >> (63 - from % 64));
            loop {
                if bits != 0 {
                    break Some(word * 64 + 63 - bits.leading_zeros() as usize);
                }
                if word == 0 {
                    break None;
                }
                word -= 1;
                bits = self.queued[word];
            }
        } else {
            let mut word = from as usize / 64;
            // The bits at and above `from` in its word.
            let mut bits = self.queued[word] & (u64::MAX << (from % 64));
            loop {
                if bits != 0 {
                    break Some(word * 64 + bits.trailing_zeros() as usize);
                }
                word += 1;
                if word == self.queued.len() {
                    break None;
                }
                bits = self.queued[word];
            }
        };
        let Some(i) = found else {
            self.nearest = None;
            return None;
        };
        self.queued[i / 64] &= !(1 << (i % 64));
        self.nearest = Some(i as u32);
        Some(i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::NumberedWorklist;

    /// The numbered worklist pops what a heap would: the smallest (largest) number queued, each
    /// once, whatever the pushes in between.
    #[test]
    fn a_numbered_worklist_pops_in_order() {
        for backward in [false, true] {
            let mut work = NumberedWorklist::new(300, backward);
            let mut reference = std::collections::BTreeSet::new();
            let mut seed = 12345u64;
            let mut popped = 0;
            for step in 0..5000 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let n = ((seed >> 33) % 300) as u32;
                if step % 3 == 2 {
                    let expected = if backward { reference.pop_last() } else { reference.pop_first() };
                    assert_eq!(work.pop(), expected, "step {step}");
                    popped += usize::from(expected.is_some());
                } else {
                    work.push(n);
                    reference.insert(n);
                }
            }
            while let Some(expected) = if backward { reference.pop_last() } else { reference.pop_first() } {
                assert_eq!(work.pop(), Some(expected));
            }
            assert_eq!(work.pop(), None);
            assert!(popped > 100);
        }
    }
}
