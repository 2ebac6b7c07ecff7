//! [`UseMap`]: who uses each value, built once for the ops under a root.
//!
//! The core keeps no use-lists (an op knows its operands, a value does not know its users), so a
//! rewrite that replaces values builds this map first, in one walk, and keeps it up to date
//! through the [`Rewriter`](super::Rewriter)'s own operations.
//!
//! Layout: every tracked operand is a node of an intrusive doubly-linked list, one list per used
//! value. An op's operand nodes are consecutive, so the node of operand `i` of `op` is found in
//! O(1) from `op` alone; linking, unlinking and moving a use are O(1), and replacing every use of
//! a value splices its whole list.
//!
//! Invariants: a tracked op's operand `i` is `v` exactly when its node `i` is in `v`'s list; an
//! op is tracked from its creation (or the build) until it is erased. Ops outside the root are not
//! tracked: uses they make of values are not seen.
//!
//! Size: the map holds the ops under the root and the values they use, in [`SideTable`]s whose
//! windows are those of the ops and values under the root, so building it for one function costs
//! that function, however large the context.

use crate::side_table::{IndexWindow, SideTable};
use crate::{Context, Op, Value};
use std::ops::Range;

const NIL: u32 = u32::MAX;
/// The state of an op that was erased through the map's owner.
const ERASED: u32 = u32::MAX - 1;

#[derive(Copy, Clone, Debug)]
struct Node {
    /// The using op (index).
    user: u32,
    /// The used value (index).
    value: u32,
    prev: u32,
    next: u32,
}

/// Where an op's operand nodes are.
#[derive(Copy, Clone, Debug)]
struct OperandNodes {
    /// The node of operand 0, or `NIL` (untracked), or `ERASED`.
    first: u32,
    /// How many there are.
    count: u32,
}

const UNTRACKED: OperandNodes = OperandNodes { first: NIL, count: 0 };

/// One use of a value: operand `index` of `user`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Use {
    /// The op that uses the value.
    pub user: Op,
    /// Which of its operands.
    pub index: usize,
}

/// The uses of every value by the ops under a root. See the module documentation.
#[derive(Clone, Debug)]
pub struct UseMap {
    /// By value: the first node of its list.
    heads: SideTable<Value, u32>,
    /// By op: its operand nodes.
    operands: SideTable<Op, OperandNodes>,
    nodes: Vec<Node>,
    /// The dense window of the ops under the root when the map was built.
    op_window: Range<usize>,
}

impl Default for UseMap {
    fn default() -> Self {
        UseMap { heads: SideTable::new(NIL), operands: SideTable::new(UNTRACKED), nodes: Vec::new(), op_window: 0..0 }
    }
}

impl UseMap {
    /// The uses made by `root` and every op nested in it. O(ops + operands under `root`).
    pub fn build(ctx: &Context, root: Op) -> UseMap {
        let mut ops = Vec::new();
        let mut operand_count = 0;
        // Each op, then the ops nested in it from the last to the first (each with its own nested
        // ops): a cursor per block being walked, moving backwards.
        let mut cursors = vec![root];
        // The windows of the ops and of the values they define, found on the way.
        let (mut ops_seen, mut values_defined) = (IndexWindow::default(), IndexWindow::default());
        while let Some(op) = cursors.pop() {
            ops.push(op);
            operand_count += ctx.operands(op).len();
            ops_seen.add(op.index());
            values_defined.add_values_defined_by(ctx, op);
            if op != root {
                cursors.extend(ctx.prev_op(op));
            }
            for &region in ctx.regions(op) {
                for &block in ctx.region_blocks(region) {
                    cursors.extend(ctx.last_op(block));
                }
            }
        }
        let op_window = ops_seen.dense_range();
        let value_window = values_defined.dense_range();
        let mut map = UseMap {
            heads: SideTable::with_window(value_window, NIL),
            operands: SideTable::with_window(op_window.clone(), UNTRACKED),
            nodes: Vec::with_capacity(operand_count),
            op_window,
        };
        for op in ops {
            map.track(ctx, op);
        }
        map
    }

    /// The range of op indices that the ops under the root filled when the map was built, for
    /// other tables of the same run to share (see [`IndexWindow::dense_range`]).
    pub fn op_window(&self) -> Range<usize> {
        self.op_window.clone()
    }

    /// How many entries its side tables hold room for (a test's measure of its size).
    #[cfg(test)]
    pub(crate) fn table_capacity(&self) -> usize {
        self.heads.capacity() + self.operands.capacity()
    }

    /// Starts tracking the operands of `op` (not of the ops nested in it). An op already tracked
    /// is left as it is.
    pub fn track(&mut self, ctx: &Context, op: Op) {
        let slot = self.operands.get_mut(op);
        if slot.first != NIL {
            return;
        }
        let operands = ctx.operands(op);
        let first = u32::try_from(self.nodes.len()).expect("fewer than 4G uses");
        *slot = OperandNodes { first, count: operands.len() as u32 };
        for &value in operands {
            let node = self.nodes.len() as u32;
            self.nodes.push(Node { user: op.index() as u32, value: value.index() as u32, prev: NIL, next: NIL });
            self.link(node, value);
        }
    }

    /// Tracks the operands of `op` again after they changed (their number too): the same as
    /// [`UseMap::untrack`] before the change and [`UseMap::track`] after it, but reusing the op's
    /// nodes when there are enough of them, so that changing operands does not grow the map.
    pub fn retrack(&mut self, ctx: &Context, op: Op) {
        let OperandNodes { first, count } = *self.operands.get(op);
        if first == ERASED {
            return;
        }
        let operands = ctx.operands(op);
        if first == NIL || operands.len() > count as usize {
            self.untrack(op);
            self.track(ctx, op);
            return;
        }
        for node in first..first + count {
            self.unlink(node);
        }
        self.operands.set(op, OperandNodes { first, count: operands.len() as u32 });
        for (node, &value) in (first..).zip(operands) {
            self.link(node, value);
        }
    }

    /// Stops tracking the operands of `op` (removes its uses) and marks it erased.
    pub fn untrack_erased(&mut self, op: Op) {
        self.untrack(op);
        self.operands.set(op, OperandNodes { first: ERASED, count: 0 });
    }

    /// Stops tracking the operands of `op` (removes its uses); it may be tracked again.
    pub fn untrack(&mut self, op: Op) {
        let OperandNodes { first, count } = *self.operands.get(op);
        if first == NIL || first == ERASED {
            return;
        }
        for node in first..first + count {
            self.unlink(node);
        }
        self.operands.set(op, UNTRACKED);
    }

    /// Whether `op` has been erased (through the rewriter owning this map).
    pub fn is_erased(&self, op: Op) -> bool {
        self.operands.get(op).first == ERASED
    }

    /// Whether `op`'s operands are tracked.
    pub fn is_tracked(&self, op: Op) -> bool {
        let first = self.operands.get(op).first;
        first != NIL && first != ERASED
    }

    fn link(&mut self, node: u32, value: Value) {
        let head = self.heads.get_mut(value);
        let old_head = *head;
        *head = node;
        let data = &mut self.nodes[node as usize];
        data.value = value.index() as u32;
        data.prev = NIL;
        data.next = old_head;
        if old_head != NIL {
            self.nodes[old_head as usize].prev = node;
        }
    }

    fn unlink(&mut self, node: u32) {
        let Node { value, prev, next, .. } = self.nodes[node as usize];
        if prev == NIL {
            self.heads.set(Value::from_index(value as usize), next);
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        }
        let data = &mut self.nodes[node as usize];
        data.prev = NIL;
        data.next = NIL;
    }

    /// Records that operand `index` of the tracked op `op` changed to `value` (call it after or
    /// before changing the op itself; the map does not look at the op).
    pub fn set_operand(&mut self, op: Op, index: usize, value: Value) {
        let OperandNodes { first, count } = *self.operands.get(op);
        if first == NIL || first == ERASED {
            return;
        }
        debug_assert!(index < count as usize, "operand index out of range");
        let node = first + index as u32;
        self.unlink(node);
        self.link(node, value);
    }

    /// Moves every use of `from` to `to` (the ops must be changed by the caller: see
    /// [`Rewriter::replace_all_uses_with`](super::Rewriter::replace_all_uses_with)).
    pub(crate) fn splice(&mut self, from: Value, to: Value) {
        if from == to {
            return;
        }
        let first = *self.heads.get(from);
        if first == NIL {
            return;
        }
        let mut last = first;
        loop {
            self.nodes[last as usize].value = to.index() as u32;
            let next = self.nodes[last as usize].next;
            if next == NIL {
                break;
            }
            last = next;
        }
        let old_head = std::mem::replace(self.heads.get_mut(to), first);
        self.nodes[last as usize].next = old_head;
        if old_head != NIL {
            self.nodes[old_head as usize].prev = last;
        }
        self.heads.set(from, NIL);
    }

    /// The uses of `value`, most recent first.
    pub fn uses(&self, value: Value) -> Uses<'_> {
        Uses { map: self, node: *self.heads.get(value) }
    }

    /// Whether `value` has any use.
    #[inline]
    pub fn has_uses(&self, value: Value) -> bool {
        *self.heads.get(value) != NIL
    }

    /// Whether `value` has exactly one use.
    pub fn has_one_use(&self, value: Value) -> bool {
        let head = *self.heads.get(value);
        head != NIL && self.nodes[head as usize].next == NIL
    }

    /// How many uses `value` has (walks its list).
    pub fn use_count(&self, value: Value) -> usize {
        self.uses(value).count()
    }

    /// Whether no result of `op` has a use.
    #[inline]
    pub fn results_unused(&self, ctx: &Context, op: Op) -> bool {
        ctx.results(op).all(|r| !self.has_uses(r))
    }
}

/// Iterator over the uses of a value.
pub struct Uses<'a> {
    map: &'a UseMap,
    node: u32,
}

impl Iterator for Uses<'_> {
    type Item = Use;

    fn next(&mut self) -> Option<Use> {
        if self.node == NIL {
            return None;
        }
        let node = self.map.nodes[self.node as usize];
        let first = self.map.operands.get(Op::from_index(node.user as usize)).first;
        let index = (self.node - first) as usize;
        self.node = node.next;
        Some(Use { user: Op::from_index(node.user as usize), index })
    }
}
