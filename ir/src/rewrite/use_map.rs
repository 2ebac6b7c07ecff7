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

use crate::{Context, Op, Value};

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

/// One use of a value: operand `index` of `user`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Use {
    /// The op that uses the value.
    pub user: Op,
    /// Which of its operands.
    pub index: usize,
}

/// The uses of every value by the ops under a root. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct UseMap {
    /// By value index: the first node of its list.
    heads: Vec<u32>,
    /// By op index: the node of its operand 0, or `NIL` (untracked), or `ERASED`.
    first_node: Vec<u32>,
    /// By op index: how many operand nodes it has.
    node_count: Vec<u32>,
    nodes: Vec<Node>,
}

impl UseMap {
    /// The uses made by `root` and every op nested in it. O(ops + operands).
    pub fn build(ctx: &Context, root: Op) -> UseMap {
        let mut map = UseMap {
            heads: vec![NIL; ctx.value_count()],
            first_node: vec![NIL; ctx.op_count()],
            node_count: vec![0; ctx.op_count()],
            // Ops have about two operands on average; untouched capacity costs no memory.
            nodes: Vec::with_capacity(ctx.op_count().saturating_mul(2)),
        };
        let mut stack = vec![root];
        while let Some(op) = stack.pop() {
            map.track(ctx, op);
            for &region in ctx.regions(op) {
                for &block in ctx.region_blocks(region) {
                    stack.extend(ctx.block_ops(block));
                }
            }
        }
        map
    }

    fn grow_ops(&mut self, op: Op) {
        if op.index() >= self.first_node.len() {
            let size = (op.index() + 1).max(self.first_node.len() * 5 / 4);
            self.first_node.resize(size, NIL);
            self.node_count.resize(size, 0);
        }
    }

    fn grow_values(&mut self, value: Value) {
        if value.index() >= self.heads.len() {
            let size = (value.index() + 1).max(self.heads.len() * 5 / 4);
            self.heads.resize(size, NIL);
        }
    }

    /// Starts tracking the operands of `op` (not of the ops nested in it). An op already tracked
    /// is left as it is.
    pub fn track(&mut self, ctx: &Context, op: Op) {
        self.grow_ops(op);
        if self.first_node[op.index()] != NIL {
            return;
        }
        let operands = ctx.operands(op);
        let first = u32::try_from(self.nodes.len()).expect("fewer than 4G uses");
        self.first_node[op.index()] = first;
        self.node_count[op.index()] = operands.len() as u32;
        for &value in operands {
            let node = self.nodes.len() as u32;
            self.nodes.push(Node { user: op.index() as u32, value: value.index() as u32, prev: NIL, next: NIL });
            self.link(node, value);
        }
    }

    /// Stops tracking the operands of `op` (removes its uses) and marks it erased.
    pub fn untrack_erased(&mut self, op: Op) {
        self.untrack(op);
        self.first_node[op.index()] = ERASED;
    }

    /// Stops tracking the operands of `op` (removes its uses); it may be tracked again.
    pub fn untrack(&mut self, op: Op) {
        self.grow_ops(op);
        let first = self.first_node[op.index()];
        if first == NIL || first == ERASED {
            return;
        }
        for node in first..first + self.node_count[op.index()] {
            self.unlink(node);
        }
        self.first_node[op.index()] = NIL;
        self.node_count[op.index()] = 0;
    }

    /// Whether `op` has been erased (through the rewriter owning this map).
    pub fn is_erased(&self, op: Op) -> bool {
        self.first_node.get(op.index()) == Some(&ERASED)
    }

    /// Whether `op`'s operands are tracked.
    pub fn is_tracked(&self, op: Op) -> bool {
        self.first_node.get(op.index()).is_some_and(|&f| f != NIL && f != ERASED)
    }

    fn link(&mut self, node: u32, value: Value) {
        self.grow_values(value);
        let head = self.heads[value.index()];
        let data = &mut self.nodes[node as usize];
        data.value = value.index() as u32;
        data.prev = NIL;
        data.next = head;
        if head != NIL {
            self.nodes[head as usize].prev = node;
        }
        self.heads[value.index()] = node;
    }

    fn unlink(&mut self, node: u32) {
        let Node { value, prev, next, .. } = self.nodes[node as usize];
        if prev == NIL {
            self.heads[value as usize] = next;
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
        let first = self.first_node.get(op.index()).copied().unwrap_or(NIL);
        if first == NIL || first == ERASED {
            return;
        }
        debug_assert!(index < self.node_count[op.index()] as usize, "operand index out of range");
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
        self.grow_values(from);
        self.grow_values(to);
        let first = self.heads[from.index()];
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
        let old_head = self.heads[to.index()];
        self.nodes[last as usize].next = old_head;
        if old_head != NIL {
            self.nodes[old_head as usize].prev = last;
        }
        self.heads[to.index()] = first;
        self.heads[from.index()] = NIL;
    }

    /// The uses of `value`, most recent first.
    pub fn uses(&self, value: Value) -> Uses<'_> {
        Uses { map: self, node: self.heads.get(value.index()).copied().unwrap_or(NIL) }
    }

    /// Whether `value` has any use.
    pub fn has_uses(&self, value: Value) -> bool {
        self.heads.get(value.index()).is_some_and(|&h| h != NIL)
    }

    /// Whether `value` has exactly one use.
    pub fn has_one_use(&self, value: Value) -> bool {
        match self.heads.get(value.index()) {
            Some(&head) if head != NIL => self.nodes[head as usize].next == NIL,
            _ => false,
        }
    }

    /// How many uses `value` has (walks its list).
    pub fn use_count(&self, value: Value) -> usize {
        self.uses(value).count()
    }

    /// Whether no result of `op` has a use.
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
        let index = (self.node - self.map.first_node[node.user as usize]) as usize;
        self.node = node.next;
        Some(Use { user: Op::from_index(node.user as usize), index })
    }
}
