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

/// The live intervals of one block's tracked values. See the module documentation.
pub struct BlockIntervals<'a> {
    /// The block.
    pub block: Block,
    /// Its ops, in order.
    pub ops: Vec<Op>,
    liveness: &'a SparseLiveness,
}

impl<'a> BlockIntervals<'a> {
    /// The intervals of `block`'s tracked values.
    pub fn new(ctx: &Context, liveness: &'a SparseLiveness, block: Block) -> BlockIntervals<'a> {
        let mut ops = Vec::new();
        let mut cursor = ctx.first_op(block);
        while let Some(op) = cursor {
            ops.push(op);
            cursor = ctx.next_op(op);
        }
        BlockIntervals { block, ops, liveness }
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
        self.liveness.last_use(self.block, value)
    }

    /// The first point at which `value` may be live here: just after its op for a result of an
    /// op of the block, 0 for an argument of the block or a value defined before it.
    pub fn start(&self, ctx: &Context, value: Value) -> usize {
        match ctx.defining_op(value).filter(|&op| ctx.parent_block(op) == Some(self.block)) {
            Some(op) => self.liveness.position(op).map_or(0, |i| i + 1),
            None => 0,
        }
    }

    /// The points at which the storage of the buffer `value` makes is needed, for a buffer made
    /// in this block: from just before its first use (nothing places a buffer's device copy
    /// before a use needs it) to the end of [`interval`](Self::interval).
    pub fn storage_interval(&self, ctx: &Context, value: Value) -> Option<(usize, usize)> {
        let (start, end) = self.interval(ctx, value)?;
        let first = self.liveness.first_use(self.block, value).filter(|_| ctx.value_block(value) == Some(self.block));
        Some((first.map_or(start, |f| f.max(start)), end))
    }

    /// The points at which `value` is live, `[first, last]`; `None` where it is live at none
    /// (defined elsewhere and neither used here nor live at the end, or never used).
    pub fn interval(&self, ctx: &Context, value: Value) -> Option<(usize, usize)> {
        let live_out = self.liveness.is_live_out(ctx, value, self.block);
        let end = if live_out { Some(self.ops.len()) } else { self.last_use(value) };
        let start = self.start(ctx, value);
        end.filter(|&end| start <= end).map(|end| (start, end))
    }
}
