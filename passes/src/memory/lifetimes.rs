//! Where each buffer of a host function stops being used: the end of its live range, from
//! liveness over structured control flow (loops, branches, `scf.while`, calls), found from the
//! uses of the buffers a call may own ([`SparseLiveness`]).
//!
//! A buffer value is released in the block that defines it (a block argument or an op's result),
//! after the op of that block that uses it last — directly or inside its regions — at the first
//! point from there on where no buffer still live may be the same buffer (so a value that an
//! `scf.if` may yield is released with the result, where both are dead). It is not released when
//! - it is live at the end of that block (another block may use it);
//! - its last use is the block's terminator, which passes it on (`scf.yield` to the next
//!   iteration or to the op's results, `compute.return` to the caller): whoever receives it is
//!   released in its turn;
//! - it is a parameter of the function, or may only be one: the caller owns those;
//! - until the block's terminator, some value still live may be the same buffer, one the
//!   function may own.
//!   Two values are not when every root ([`BufferRoots`], with a call's result a fresh buffer or
//!   one of the buffers it passes) common to both is a parameter (the release leaves the
//!   caller's buffers alone), or when one is the result of an allocation that the other's
//!   definition strictly precedes (an allocation makes a buffer no earlier value holds: this is
//!   what tells the buffer a loop iteration allocates from the one it received);
//! - nothing knows where it comes from (an op of another dialect that makes a buffer);
//! - its last use frees it (`buffer.dealloc`).
//!
//! A value that is never used is released right after its definition (at the start of its
//! block, for a block argument).
//!
//! `buffer.release` frees a buffer only when the running call of the function owns it, so a
//! value that may be a parameter on one path and an allocation on another (a loop that starts
//! from the caller's image and carries its own buffers after) is released without a run-time
//! flag in the IR: the first iteration's release leaves the caller's image alone.

use super::intervals::BlockIntervals;
use super::sparse_liveness::SparseLiveness;
use crate::transfers::aliases::{allocates, is_buffer, BufferRoots, Roots};
use hat_ir::analysis::dominance::DominanceInfo;
use hat_ir::{Block, Context, EffectKind, EffectTarget, MemoryEffects, Op, Value};
use rustc_hash::{FxHashMap, FxHashSet};

/// Where a release goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Point {
    /// Right after this op.
    After(Op),
    /// At the start of this block (before its first op).
    Start(Block),
}

/// One decision about a buffer value that the function owns at some point.
#[derive(Clone, Debug)]
pub struct Decision {
    /// The value.
    pub value: Value,
    /// Where its last use is (`None`: kept, see `kept`).
    pub release: Option<Point>,
    /// Why it is not released, when it is not.
    pub kept: Option<Kept>,
}

/// Why a value is not released.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kept {
    /// Another value, live until the end of the block or passed on by its terminator, may be
    /// the same buffer.
    MaybeLive(Value),
    /// Nothing knows where it comes from.
    UnknownOrigin,
    /// Live at the end of its block.
    LiveOut,
}

/// The decisions for every buffer value `function` defines, but its parameters and the values
/// its blocks' terminators pass on; `roots`: [`BufferRoots::with_calls`] of `function`.
pub fn decide(ctx: &Context, function: Op, roots: &BufferRoots) -> Vec<Decision> {
    let dominance = DominanceInfo::new(ctx, function);
    let parameters = parameters_of(ctx, function);
    let liveness = SparseLiveness::new(ctx, function, &|v| may_be_owned(ctx, roots, &parameters, v));
    let only_parameters = |value: Value| match roots.roots_ref(value) {
        Roots::Known(set) => !set.is_empty() && set.iter().all(|r| parameters.contains(r)),
        Roots::Unknown => false,
    };
    let blocks = blocks_under(ctx, function);
    let (holders, unknown) = holders(ctx, &blocks, roots, &parameters);
    let decider = Decider { ctx, roots, dominance: &dominance, parameters: &parameters };
    let mut decisions = Vec::new();
    for block in blocks {
        let intervals = BlockIntervals::new(ctx, &liveness, block);
        let n = intervals.len();
        let mut owned: Vec<Value> = ctx.block_arguments(block).to_vec();
        owned.extend(intervals.ops.iter().flat_map(|&op| ctx.results(op)));
        owned.retain(|&v| is_buffer(ctx, v) && !parameters.contains(&v) && !only_parameters(v));
        for value in owned {
            if liveness.is_live_out(ctx, value, block) {
                decisions.push(Decision { value, release: None, kept: Some(Kept::LiveOut) });
                continue;
            }
            // The first point the release may go: after the last use (or the definition of a
            // value never used).
            let first = match intervals.last_use(value) {
                // A terminator passes the value on; a `buffer.dealloc` frees it.
                Some(last) if last + 1 == n || frees(ctx, intervals.ops[last], value) => continue,
                Some(last) => last + 1,
                None => intervals.start(ctx, value),
            };
            let Roots::Known(set) = roots.roots_ref(value) else {
                decisions.push(Decision { value, release: None, kept: Some(Kept::UnknownOrigin) });
                continue;
            };
            let mut candidates: Vec<Value> =
                set.iter().flat_map(|r| holders.get(r).into_iter().flatten().copied()).collect();
            candidates.extend(unknown.iter().copied());
            candidates.sort_unstable();
            candidates.dedup();
            // The points at which a buffer that may be this one is live.
            let mut blocked: Vec<(usize, usize, Value)> = candidates
                .into_iter()
                .filter(|&w| w != value && !decider.distinct(value, w))
                .filter_map(|w| intervals.interval(ctx, w).map(|(a, b)| (a, b, w)))
                .collect();
            blocked.sort_unstable();
            // The first free point from `first` on, before the terminator (point n - 1 at most).
            let mut point = first;
            let mut blocking = None;
            for &(start, end, w) in &blocked {
                if start > point {
                    break;
                }
                if end >= point {
                    point = end + 1;
                    blocking = Some(w);
                }
            }
            if point + 1 > n {
                decisions.push(Decision {
                    value,
                    release: None,
                    kept: Some(blocking.map_or(Kept::LiveOut, Kept::MaybeLive)),
                });
                continue;
            }
            let release = match point {
                0 => Point::Start(block),
                p => Point::After(intervals.ops[p - 1]),
            };
            decisions.push(Decision { value, release: Some(release), kept: None });
        }
    }
    decisions
}

/// Which buffer values of `blocks` may be each root the function owns (its parameters are the
/// caller's), and the buffer values nothing knows the roots of.
pub fn holders(
    ctx: &Context,
    blocks: &[Block],
    roots: &BufferRoots,
    parameters: &FxHashSet<Value>,
) -> (FxHashMap<Value, Vec<Value>>, Vec<Value>) {
    let mut holders: FxHashMap<Value, Vec<Value>> = FxHashMap::default();
    let mut unknown: Vec<Value> = Vec::new();
    for &block in blocks {
        let mut values: Vec<Value> = ctx.block_arguments(block).to_vec();
        let mut cursor = ctx.first_op(block);
        while let Some(op) = cursor {
            values.extend(ctx.results(op));
            cursor = ctx.next_op(op);
        }
        for value in values.into_iter().filter(|&v| is_buffer(ctx, v)) {
            match roots.roots_ref(value) {
                Roots::Known(set) => {
                    for &root in set.iter().filter(|r| !parameters.contains(r)) {
                        holders.entry(root).or_default().push(value);
                    }
                }
                Roots::Unknown => unknown.push(value),
            }
        }
    }
    (holders, unknown)
}

/// The parameters of `function` (its entry block's arguments).
pub fn parameters_of(ctx: &Context, function: Op) -> FxHashSet<Value> {
    ctx.regions(function)
        .first()
        .and_then(|&r| ctx.region_blocks(r).first())
        .map(|&entry| ctx.block_arguments(entry).iter().copied().collect())
        .unwrap_or_default()
}

/// Whether `value` is a buffer the running call may own: one of whose roots is not a parameter,
/// or whose roots nothing knows. Only these matter to a release (the caller's buffers are left
/// alone), so liveness is asked of these alone.
pub fn may_be_owned(ctx: &Context, roots: &BufferRoots, parameters: &FxHashSet<Value>, value: Value) -> bool {
    is_buffer(ctx, value)
        && match roots.roots_ref(value) {
            Roots::Known(set) => set.iter().any(|r| !parameters.contains(r)),
            Roots::Unknown => true,
        }
}

/// Whether `op` frees `value` (a `Free` effect on an operand that is `value`).
fn frees(ctx: &Context, op: Op, value: Value) -> bool {
    let Some(definition) = ctx.definition(ctx.name(op)) else { return false };
    match definition.memory_effects(ctx, op) {
        MemoryEffects::Known(effects) => effects.iter().any(|e| {
            e.kind == EffectKind::Free
                && matches!(e.target, EffectTarget::Operand(i) if ctx.operands(op).get(i) == Some(&value))
        }),
        MemoryEffects::Unknown => false,
    }
}

/// Every block nested in `function` (its body included), kernels' bodies excluded (they are not
/// nested in host functions).
pub fn blocks_under(ctx: &Context, function: Op) -> Vec<Block> {
    let mut blocks = Vec::new();
    for op in ctx.walk(function) {
        for &region in ctx.regions(op) {
            blocks.extend(ctx.region_blocks(region).iter().copied());
        }
    }
    blocks
}

struct Decider<'a> {
    ctx: &'a Context,
    roots: &'a BufferRoots,
    dominance: &'a DominanceInfo,
    parameters: &'a FxHashSet<Value>,
}

impl Decider<'_> {
    /// Whether releasing `a` cannot free the buffer `b` holds, whenever both are live: they
    /// are different buffers, or the only buffers they may both be are the caller's (which a
    /// release leaves alone).
    fn distinct(&self, a: Value, b: Value) -> bool {
        if let (Roots::Known(x), Roots::Known(y)) = (self.roots.roots_ref(a), self.roots.roots_ref(b)) {
            if x.intersection(y).all(|root| self.parameters.contains(root)) {
                return true;
            }
        }
        // One is an allocation that the other is available at: a buffer no earlier value holds.
        let made_after = |fresh: Value, other: Value| {
            self.ctx
                .defining_op(fresh)
                .is_some_and(|op| allocates(self.ctx, op, fresh) && self.dominance.value_dominates(self.ctx, other, op))
        };
        made_after(a, b) || made_after(b, a)
    }
}
