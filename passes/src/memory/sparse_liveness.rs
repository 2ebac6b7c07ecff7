//! Liveness of a few values, found from their uses (SSA liveness by path exploration, in its
//! structured form): each use climbs from its op to the value's defining block, noting in every
//! block on the way the op of that block that holds the use. So a value costs its uses times the
//! nesting depth, not the blocks it is live through times the values live there (as a live set
//! per block does).
//!
//! In a block `B`, a tracked value is live at the end when the op `X` holding `B` is followed by a
//! use of it in `X`'s block, or `X`'s block has it live at its end, or `X` is a loop (a region
//! runs again after one ends) that uses it inside and it is defined outside `X`: the next
//! iteration may use it.

use hat_ir::interfaces::{RegionBranchOpInterface, RegionPoint};
use hat_ir::{Block, Context, Op, Value};
use rustc_hash::{FxHashMap, FxHashSet};

/// Where tracked values are used, per block, and which ops are loops.
pub struct SparseLiveness {
    /// Per block: each tracked value used there (directly or inside an op's regions) and the
    /// indices of the first and the last op of the block that use it.
    uses: FxHashMap<Block, FxHashMap<Value, (usize, usize)>>,
    /// The position of each op in its block.
    position: FxHashMap<Op, usize>,
    /// The ops with regions that run again (loops).
    loops: FxHashSet<Op>,
    /// The function.
    root: Op,
}

impl SparseLiveness {
    /// The liveness of the values `tracked` keeps, under `root` (a function).
    pub fn new(ctx: &Context, root: Op, tracked: &dyn Fn(Value) -> bool) -> SparseLiveness {
        let ops = ctx.walk(root);
        let mut position = FxHashMap::default();
        let mut loops = FxHashSet::default();
        for &op in &ops {
            if let Some(block) = ctx.parent_block(op) {
                if ctx.first_op(block) == Some(op) {
                    let mut cursor = Some(op);
                    let mut index = 0;
                    while let Some(o) = cursor {
                        position.insert(o, index);
                        index += 1;
                        cursor = ctx.next_op(o);
                    }
                }
            }
            if let Some(branch) = ctx.interface::<dyn RegionBranchOpInterface>(op) {
                let again = (0..ctx.regions(op).len()).any(|i| {
                    branch
                        .successors(ctx, op, RegionPoint::Region(i), &[])
                        .iter()
                        .any(|s| matches!(s, RegionPoint::Region(_)))
                });
                if again {
                    loops.insert(op);
                }
            } else if op != root && !ctx.regions(op).is_empty() {
                // An op with regions and no interface: its regions may run any number of times.
                loops.insert(op);
            }
        }
        let mut uses: FxHashMap<Block, FxHashMap<Value, (usize, usize)>> = FxHashMap::default();
        for &user in &ops {
            for &value in ctx.operands(user).iter().filter(|&&v| tracked(v)) {
                let defining = ctx.value_block(value);
                let mut op = user;
                while let Some(block) = ctx.parent_block(op) {
                    let index = position.get(&op).copied().unwrap_or(0);
                    let (first, last) = uses.entry(block).or_default().entry(value).or_insert((index, index));
                    *first = (*first).min(index);
                    *last = (*last).max(index);
                    if Some(block) == defining {
                        break;
                    }
                    match ctx.parent_op(op) {
                        Some(parent) if parent != root => op = parent,
                        _ => break,
                    }
                }
            }
        }
        SparseLiveness { uses, position, loops, root }
    }

    /// The index of the last op of `block` that uses `value` (tracked), if any.
    pub fn last_use(&self, block: Block, value: Value) -> Option<usize> {
        self.uses.get(&block).and_then(|m| m.get(&value)).map(|&(_, last)| last)
    }

    /// The index of the first op of `block` that uses `value` (tracked), if any.
    pub fn first_use(&self, block: Block, value: Value) -> Option<usize> {
        self.uses.get(&block).and_then(|m| m.get(&value)).map(|&(first, _)| first)
    }

    /// The index of `op` in its block.
    pub fn position(&self, op: Op) -> Option<usize> {
        self.position.get(&op).copied()
    }

    /// Whether `value` (tracked) is live at the end of `block`.
    pub fn is_live_out(&self, ctx: &Context, value: Value, block: Block) -> bool {
        let Some(defining) = ctx.value_block(value) else { return false };
        let mut block = block;
        loop {
            if block == defining {
                // Its own block's end: nothing after (a region's end leads out of its op, where
                // the value is not in scope, or to the region again, which redefines it).
                return false;
            }
            let Some(holder) = ctx.block_parent(block).and_then(|r| ctx.region_parent(r)) else { return false };
            if holder == self.root {
                return false;
            }
            let Some(outer) = ctx.parent_block(holder) else { return false };
            let index = self.position.get(&holder).copied().unwrap_or(0);
            // Not in scope in `block`: defined by the op holding it, or after it.
            if outer == defining
                && ctx.defining_op(value).is_some_and(|d| self.position.get(&d).is_none_or(|&at| at >= index))
            {
                return false;
            }
            match self.last_use(outer, value) {
                // Used after the op holding the block.
                Some(last) if last > index => return true,
                // A loop that uses it inside runs again.
                Some(last) if last == index && self.loops.contains(&holder) => return true,
                _ => {}
            }
            block = outer;
        }
    }
}
