//! [`Rewriter`]: changes the IR under a root op while keeping a [`UseMap`] up to date and telling
//! a [`Listener`] about every change.
//!
//! Every change that affects uses (creating, inserting, replacing, erasing, moving ops, changing
//! operands) must go through the rewriter, or its use map goes stale. Reading the IR, interning
//! types and attributes, and creating detached regions and blocks may go through
//! [`Rewriter::ctx_mut`].

use super::listener::{Listener, NoListener};
use super::use_map::{Use, UseMap};
use crate::{Attribute, Block, Context, Ident, Op, OperationState, Region, Value};
use rustc_hash::FxHashMap;

/// Maps values and blocks of cloned IR to their copies.
#[derive(Clone, Debug, Default)]
pub struct Mapping {
    values: FxHashMap<Value, Value>,
    blocks: FxHashMap<Block, Block>,
}

impl Mapping {
    /// An empty mapping.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `from` to `to`.
    pub fn map_value(&mut self, from: Value, to: Value) {
        self.values.insert(from, to);
    }

    /// What `value` maps to, or `value` itself when it is not mapped.
    pub fn lookup(&self, value: Value) -> Value {
        self.values.get(&value).copied().unwrap_or(value)
    }

    /// What `block` maps to, or `block` itself.
    pub fn lookup_block(&self, block: Block) -> Block {
        self.blocks.get(&block).copied().unwrap_or(block)
    }
}

/// Changes the IR under a root op, keeping uses known. See the module documentation.
///
/// `L` is the listener; patterns see the rewriter as `Rewriter<'_>` (the listener erased to
/// `dyn Listener`), to which a `&mut Rewriter<'_, L>` coerces.
pub struct Rewriter<'c, L: Listener + ?Sized = dyn Listener + 'c> {
    pub(crate) ctx: &'c mut Context,
    uses: UseMap,
    scratch: Vec<Use>,
    /// Told about every change.
    pub listener: L,
}

impl<'c> Rewriter<'c, NoListener> {
    /// A rewriter of the ops under `root` (and `root` itself), with no listener. Builds the use
    /// map: O(ops under root).
    pub fn new(ctx: &'c mut Context, root: Op) -> Self {
        Rewriter::with_listener(ctx, root, NoListener)
    }
}

impl<'c, L: Listener> Rewriter<'c, L> {
    /// A rewriter of the ops under `root` that tells `listener` about every change.
    pub fn with_listener(ctx: &'c mut Context, root: Op, listener: L) -> Self {
        let uses = UseMap::build(ctx, root);
        Rewriter { ctx, uses, scratch: Vec::new(), listener }
    }

    /// The listener, once the rewriting is over.
    pub fn into_listener(self) -> L {
        self.listener
    }
}

impl<L: Listener + ?Sized> Rewriter<'_, L> {
    /// The context, to read the IR.
    pub fn ctx(&self) -> &Context {
        self.ctx
    }

    /// The context, to intern types and attributes or to create detached regions and blocks.
    /// Changing ops through it bypasses the use map: use the rewriter's methods for that.
    pub fn ctx_mut(&mut self) -> &mut Context {
        self.ctx
    }

    /// The uses of the values under the root.
    pub fn uses(&self) -> &UseMap {
        &self.uses
    }

    /// Whether `op` was erased by this rewriter.
    pub fn is_erased(&self, op: Op) -> bool {
        self.uses.is_erased(op)
    }

    /// Whether no result of `op` is used.
    pub fn results_unused(&self, op: Op) -> bool {
        self.uses.results_unused(self.ctx, op)
    }

    // ----- creating and inserting ---------------------------------------------------------------

    /// Creates a detached op (its uses are tracked from now on; insert it with
    /// [`insert_op_before`](Self::insert_op_before) and friends).
    pub fn create_op(&mut self, state: OperationState) -> Op {
        let has_regions = !state.regions.is_empty();
        let op = self.ctx.create_op(state);
        if has_regions {
            self.track_tree(op);
        } else {
            self.uses.track(self.ctx, op);
        }
        op
    }

    /// Creates an op from `state` and inserts it right before `anchor`.
    pub fn build_before(&mut self, anchor: Op, state: OperationState) -> Op {
        let op = self.create_op(state);
        self.insert_op_before(anchor, op);
        op
    }

    /// Creates an op from `state` and inserts it right after `anchor`.
    pub fn build_after(&mut self, anchor: Op, state: OperationState) -> Op {
        let op = self.create_op(state);
        self.insert_op_after(anchor, op);
        op
    }

    fn track_tree(&mut self, op: Op) {
        if self.ctx.regions(op).is_empty() {
            self.uses.track(self.ctx, op);
            return;
        }
        for nested in self.ctx.walk(op) {
            self.uses.track(self.ctx, nested);
        }
    }

    fn notify_inserted(&mut self, op: Op) {
        self.track_tree(op);
        if self.ctx.regions(op).is_empty() {
            self.listener.op_inserted(self.ctx, op);
            return;
        }
        for nested in self.ctx.walk(op) {
            self.listener.op_inserted(self.ctx, nested);
        }
    }

    /// Inserts a detached op right before `anchor`.
    pub fn insert_op_before(&mut self, anchor: Op, op: Op) {
        self.ctx.insert_op_before(anchor, op);
        self.notify_inserted(op);
    }

    /// Inserts a detached op right after `anchor`.
    pub fn insert_op_after(&mut self, anchor: Op, op: Op) {
        self.ctx.insert_op_after(anchor, op);
        self.notify_inserted(op);
    }

    /// Inserts a detached op at the start of `block`.
    pub fn prepend_op(&mut self, block: Block, op: Op) {
        match self.ctx.first_op(block) {
            Some(first) => self.ctx.insert_op_before(first, op),
            None => self.ctx.append_op(block, op),
        }
        self.notify_inserted(op);
    }

    /// Inserts a detached op at the end of `block`.
    pub fn append_op(&mut self, block: Block, op: Op) {
        self.ctx.append_op(block, op);
        self.notify_inserted(op);
    }

    /// A detached deep copy of `op` (its regions too), with operands looked up in `mapping`;
    /// `mapping` learns the copies of the results, blocks and block arguments.
    pub fn clone_op(&mut self, op: Op, mapping: &mut Mapping) -> Op {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.clone_op_unguarded(op, mapping))
    }

    fn clone_op_unguarded(&mut self, op: Op, mapping: &mut Mapping) -> Op {
        let ctx = &mut *self.ctx;
        let mut state = OperationState::new(ctx.name(op), ctx.location(op));
        state.operands = ctx.operands(op).iter().map(|&v| mapping.lookup(v)).collect();
        state.result_types = ctx.results(op).map(|r| ctx.value_type(r)).collect();
        state.attributes = ctx.attributes(op).to_vec();
        let regions = ctx.regions(op).to_vec();
        for region in regions {
            let copy = self.ctx.create_region();
            let blocks = self.ctx.region_blocks(region).to_vec();
            // Every block first, so that successors may name later blocks.
            for &block in &blocks {
                let types: Vec<_> = self.ctx.block_arguments(block).iter().map(|&a| self.ctx.value_type(a)).collect();
                let new_block = self.ctx.create_block(&types);
                if let Some(location) = self.ctx.block_location(block) {
                    self.ctx.set_block_location(new_block, location);
                }
                for (i, &argument) in self.ctx.block_arguments(block).iter().enumerate() {
                    mapping.values.insert(argument, self.ctx.block_arguments(new_block)[i]);
                }
                mapping.blocks.insert(block, new_block);
                self.ctx.append_block(copy, new_block);
            }
            for &block in &blocks {
                let new_block = mapping.blocks[&block];
                let mut cursor = self.ctx.first_op(block);
                while let Some(child) = cursor {
                    let child_copy = self.clone_op(child, mapping);
                    self.ctx.append_op(new_block, child_copy);
                    cursor = self.ctx.next_op(child);
                }
            }
            state.regions.push(copy);
        }
        state.successors = self.ctx.successors(op).iter().map(|&b| mapping.lookup_block(b)).collect();
        let copy = self.ctx.create_op(state);
        self.uses.track(self.ctx, copy);
        for (result, new_result) in self.ctx.results(op).zip(self.ctx.results(copy)) {
            mapping.values.insert(result, new_result);
        }
        copy
    }

    // ----- replacing --------------------------------------------------------------------------

    /// Makes every use of `from` (by tracked ops) use `to` instead; each user is reported as
    /// modified.
    pub fn replace_all_uses_with(&mut self, from: Value, to: Value) {
        if from == to {
            return;
        }
        let mut users = std::mem::take(&mut self.scratch);
        users.clear();
        users.extend(self.uses.uses(from));
        for u in &users {
            self.ctx.set_operand(u.user, u.index, to);
        }
        self.uses.splice(from, to);
        if !users.is_empty() {
            self.listener.operand_dropped(self.ctx, from);
        }
        for u in &users {
            self.listener.op_modified(self.ctx, u.user);
        }
        self.scratch = users;
    }

    /// Replaces the results of `op` by `values` (one per result), then erases `op`.
    pub fn replace_op(&mut self, op: Op, values: &[Value]) {
        assert_eq!(values.len(), self.ctx.result_count(op), "replace_op: one value per result");
        self.listener.op_replaced(self.ctx, op, values);
        for (i, &value) in values.iter().enumerate() {
            let result = self.ctx.result(op, i);
            self.replace_all_uses_with(result, value);
        }
        self.erase_op(op);
    }

    /// Replaces the results of `op` by those of `replacement`, then erases `op`.
    pub fn replace_op_with_op(&mut self, op: Op, replacement: Op) {
        let values: Vec<Value> = self.ctx.results(replacement).collect();
        self.replace_op(op, &values);
    }

    // ----- erasing ----------------------------------------------------------------------------

    /// Erases `op` and everything nested in it. Panics if a result of `op` is still used.
    pub fn erase_op(&mut self, op: Op) {
        assert!(
            self.uses.results_unused(self.ctx, op),
            "erasing '{}', whose results are still used",
            self.ctx.name_str(op)
        );
        self.erase_tree(op);
    }

    /// Erases `op` and everything nested in it even if its results are still used: their users
    /// keep operands that no longer name a live value, and must be fixed or erased by the caller.
    pub fn erase_op_forced(&mut self, op: Op) {
        self.erase_tree(op);
    }

    fn erase_tree(&mut self, op: Op) {
        if self.ctx.regions(op).is_empty() {
            self.listener.op_erased(self.ctx, op);
            self.uses.untrack_erased(op);
        } else {
            for nested in self.ctx.walk(op).into_iter().rev() {
                self.listener.op_erased(self.ctx, nested);
                self.uses.untrack_erased(nested);
            }
        }
        self.ctx.erase_op(op);
    }

    // ----- moving -----------------------------------------------------------------------------

    /// Moves `op` (in a block) right before `anchor`.
    pub fn move_op_before(&mut self, op: Op, anchor: Op) {
        if op == anchor || self.ctx.next_op(op) == Some(anchor) {
            return;
        }
        let former_next = self.ctx.next_op(op);
        self.ctx.detach_op(op);
        self.ctx.insert_op_before(anchor, op);
        self.listener.op_moved(self.ctx, op, former_next);
    }

    /// Moves `op` (in a block) right after `anchor`.
    pub fn move_op_after(&mut self, op: Op, anchor: Op) {
        if op == anchor || self.ctx.prev_op(op) == Some(anchor) {
            return;
        }
        let former_next = self.ctx.next_op(op);
        self.ctx.detach_op(op);
        self.ctx.insert_op_after(anchor, op);
        self.listener.op_moved(self.ctx, op, former_next);
    }

    /// Moves `op` to the start of `block`.
    pub fn move_op_to_start(&mut self, op: Op, block: Block) {
        match self.ctx.first_op(block) {
            Some(first) => self.move_op_before(op, first),
            None => {
                let former_next = self.ctx.next_op(op);
                self.ctx.detach_op(op);
                self.ctx.append_op(block, op);
                self.listener.op_moved(self.ctx, op, former_next);
            }
        }
    }

    /// Moves `op` to the end of `block`.
    pub fn move_op_to_end(&mut self, op: Op, block: Block) {
        if self.ctx.parent_block(op) == Some(block) && self.ctx.next_op(op).is_none() {
            return;
        }
        let former_next = self.ctx.next_op(op);
        self.ctx.detach_op(op);
        self.ctx.append_op(block, op);
        self.listener.op_moved(self.ctx, op, former_next);
    }

    /// Moves every op of `block` (its terminator included) right before `anchor`, after
    /// replacing the block's arguments by `arguments` (one per argument). The block is left
    /// empty, where it was.
    pub fn inline_block_before(&mut self, block: Block, anchor: Op, arguments: &[Value]) {
        let parameters = self.ctx.block_arguments(block).to_vec();
        assert_eq!(parameters.len(), arguments.len(), "inline_block_before: one value per block argument");
        for (&parameter, &argument) in parameters.iter().zip(arguments) {
            self.replace_all_uses_with(parameter, argument);
        }
        while let Some(op) = self.ctx.first_op(block) {
            let former_next = self.ctx.next_op(op);
            self.ctx.detach_op(op);
            self.ctx.insert_op_before(anchor, op);
            self.listener.op_moved(self.ctx, op, former_next);
        }
    }

    /// [`inline_block_before`](Self::inline_block_before) of the single block of `region`;
    /// `false` (and nothing done) when the region does not have exactly one block.
    pub fn inline_region_before(&mut self, region: Region, anchor: Op, arguments: &[Value]) -> bool {
        let [block] = self.ctx.region_blocks(region) else { return false };
        let block = *block;
        self.inline_block_before(block, anchor, arguments);
        true
    }

    // ----- changing in place ------------------------------------------------------------------

    /// Sets operand `index` of `op`.
    pub fn set_operand(&mut self, op: Op, index: usize, value: Value) {
        let old = self.ctx.operand(op, index);
        self.ctx.set_operand(op, index, value);
        self.uses.set_operand(op, index, value);
        if old != value {
            self.listener.operand_dropped(self.ctx, old);
        }
        self.listener.op_modified(self.ctx, op);
    }

    /// Sets every operand of `op` (their number may change).
    pub fn set_operands(&mut self, op: Op, operands: &[Value]) {
        let old: Vec<Value> = self.ctx.operands(op).to_vec();
        self.ctx.set_operands(op, operands);
        self.uses.retrack(self.ctx, op);
        for value in old {
            if !operands.contains(&value) {
                self.listener.operand_dropped(self.ctx, value);
            }
        }
        self.listener.op_modified(self.ctx, op);
    }

    /// Sets (or replaces) an attribute of `op`.
    pub fn set_attribute(&mut self, op: Op, name: Ident, value: Attribute) {
        self.ctx.set_attribute(op, name, value);
        self.listener.op_modified(self.ctx, op);
    }

    /// Removes an attribute of `op`; returns it if it was there.
    pub fn remove_attribute(&mut self, op: Op, name: Ident) -> Option<Attribute> {
        let removed = self.ctx.remove_attribute(op, name);
        if removed.is_some() {
            self.listener.op_modified(self.ctx, op);
        }
        removed
    }

    /// Tells the listener that `op` was changed in place (by [`ctx_mut`](Self::ctx_mut), in a way
    /// that does not touch operands).
    pub fn notify_modified(&mut self, op: Op) {
        self.listener.op_modified(self.ctx, op);
    }
}
