//! When an op whose results are unused can be erased: it must not be a terminator or a symbol,
//! and erasing it must change nothing anyone can observe — its memory effects (the interface, not
//! its name) may only read memory or allocate its own results (MLIR's rule: a read whose value
//! nobody uses, or an allocation nobody uses, is dead).
//!
//! An op with regions normally has the effects its definition declares. Some region ops (`scf.for`,
//! `scf.if`) have exactly the effects of the ops inside them; the core cannot know which, so the
//! caller says it with a [`RecursiveEffectsFn`].
//!
//! Merging equal ops (CSE) needs more: [`has_no_own_effects`] — two reads of one buffer may see
//! different values, and two allocations are two buffers.

use crate::dialect::OpTraits;
use crate::effects::{EffectKind, EffectTarget, MemoryEffects};
use crate::{Context, Op};

/// Says whether an op's memory effects are those of the ops nested in it (and only those).
pub type RecursiveEffectsFn = fn(&Context, Op) -> bool;

/// No op has recursive effects: the default.
pub fn no_recursive_effects(_: &Context, _: Op) -> bool {
    false
}

/// Whether `op` itself (not counting what is nested in it) has no memory effect at all: it is
/// `PURE`, or its effects are known and empty. Unregistered ops have unknown effects.
pub fn has_no_own_effects(ctx: &Context, op: Op) -> bool {
    let Some(definition) = ctx.definition(ctx.name(op)) else { return false };
    definition.traits().contains(OpTraits::PURE) || definition.memory_effects(ctx, op).is_none()
}

/// Whether `op` itself (not counting what is nested in it) has only effects that may be dropped
/// with it once its results are unused: reads, and the allocation of its own results.
pub fn has_droppable_effects(ctx: &Context, op: Op) -> bool {
    let Some(definition) = ctx.definition(ctx.name(op)) else { return false };
    if definition.traits().contains(OpTraits::PURE) {
        return true;
    }
    match definition.memory_effects(ctx, op) {
        MemoryEffects::Known(effects) => effects.iter().all(|e| match e.kind {
            EffectKind::Read => true,
            EffectKind::Allocate => matches!(e.target, EffectTarget::Result(_)),
            EffectKind::Write | EffectKind::Free | EffectKind::Synchronize => false,
        }),
        MemoryEffects::Unknown => false,
    }
}

/// Whether executing `op` has no observable effect besides producing its results (nested ops
/// included for ops with recursive effects): see [`has_droppable_effects`].
pub fn has_no_effects(ctx: &Context, op: Op, recursive: RecursiveEffectsFn) -> bool {
    if !is_recursive(ctx, op, recursive) {
        return has_droppable_effects(ctx, op);
    }
    // The walk reaches every nested op, so an op with recursive effects needs no check of its own.
    // It looks at one op at a time (a cursor per block being walked) and stops at the first op
    // with an effect that cannot be dropped.
    let droppable = |inner: Op| is_recursive(ctx, inner, recursive) || has_droppable_effects(ctx, inner);
    let mut cursors: Vec<Op> = Vec::new();
    push_first_ops(ctx, op, &mut cursors);
    while let Some(inner) = cursors.pop() {
        if let Some(next) = ctx.next_op(inner) {
            cursors.push(next);
        }
        if !droppable(inner) {
            return false;
        }
        push_first_ops(ctx, inner, &mut cursors);
    }
    true
}

/// Pushes the first op of each block of `op`'s regions onto `cursors`.
fn push_first_ops(ctx: &Context, op: Op, cursors: &mut Vec<Op>) {
    for &region in ctx.regions(op) {
        for &block in ctx.region_blocks(region) {
            cursors.extend(ctx.first_op(block));
        }
    }
}

fn is_recursive(ctx: &Context, op: Op, recursive: RecursiveEffectsFn) -> bool {
    !ctx.regions(op).is_empty() && ctx.is_registered(op) && recursive(ctx, op)
}

/// Whether `op` may be erased once its results are unused: not a terminator, not a symbol, and
/// with no effect besides producing its results (see [`has_no_effects`]).
pub fn is_removable(ctx: &Context, op: Op, recursive: RecursiveEffectsFn) -> bool {
    let traits = ctx.traits(op);
    if traits.contains(OpTraits::TERMINATOR) || traits.contains(OpTraits::SYMBOL) {
        return false;
    }
    has_no_effects(ctx, op, recursive)
}
