//! Where tracked values are live within one block, as intervals of *points*: point `p` is just before the
//! block's op `p`, point `n` just after its last op. A value is live at a point when some path from
//! there reaches a use of it ([`Liveness`]); within one block of structured control flow that is
//! one interval: from just after its definition (point 0 for a value defined before the block or
//! as its argument) to its last use in the block — an op that uses it directly or inside its
//! regions — or to point `n` when it is live at the block's end.
//!
//! The last uses come from [`SparseLiveness`] (only the values it tracks), so asking for many
//! values costs the block once, not once per value.

use super::sparse_liveness::SparseLiveness;
use hat_ir::{Block, Context, Op, Value};
use rustc_hash::FxHashMap;

/// The live intervals of one block's values. See the module documentation.
pub struct BlockIntervals {
    /// The block.
    pub block: Block,
    /// Its ops, in order.
    pub ops: Vec<Op>,
    /// Per value defined in the block: the first point it is live at (its op's index + 1; 0 for
    /// an argument).
    defined: FxHashMap<Value, usize>,
    /// Per value used in the block: the index of the last op that uses it.
    last_use: FxHashMap<Value, usize>,
}

impl BlockIntervals {
    /// The intervals of `block`'s tracked values.
    pub fn new(ctx: &Context, liveness: &SparseLiveness, block: Block) -> BlockIntervals {
        let mut ops = Vec::new();
        let mut cursor = ctx.first_op(block);
        while let Some(op) = cursor {
            ops.push(op);
            cursor = ctx.next_op(op);
        }
        let mut defined: FxHashMap<Value, usize> = ctx.block_arguments(block).iter().map(|&a| (a, 0)).collect();
        for (index, &op) in ops.iter().enumerate() {
            for result in ctx.results(op) {
                defined.insert(result, index + 1);
            }
        }
        let last_use = liveness.uses_in(block).collect();
        BlockIntervals { block, ops, defined, last_use }
    }

    /// The number of ops (the last point).
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the block has no ops.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The index of the last op of the block that uses `value`, if any.
    pub fn last_use(&self, value: Value) -> Option<usize> {
        self.last_use.get(&value).copied()
    }

    /// The points at which `value` is live, `[first, last]`; `None` where it is live at none
    /// (defined elsewhere and neither used here nor live at the end, or never used).
    pub fn interval(&self, ctx: &Context, liveness: &SparseLiveness, value: Value) -> Option<(usize, usize)> {
        let live_out = liveness.is_live_out(ctx, value, self.block);
        let end = if live_out { Some(self.ops.len()) } else { self.last_use(value) };
        let start = match self.defined.get(&value) {
            Some(&start) => start,
            // Defined before the block: live from its start if live anywhere in it.
            None => 0,
        };
        end.filter(|&end| start <= end).map(|end| (start, end))
    }
}
