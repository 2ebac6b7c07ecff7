//! Barrier phases: how many workgroup barriers every work item has passed when it reaches an op,
//! so that two accesses to workgroup-local memory can be told apart as "between the same two
//! barriers" (they may race) or not (a barrier orders them).
//!
//! A barrier is an op whose memory effects synchronize workgroup memory
//! ([`EffectKind::Synchronize`] in [`MemorySpace::Workgroup`]: `kernel.barrier`, or a vendor's op
//! saying the same). The phase of an op is [`Phase::base`] barriers plus, for each enclosing
//! counted loop whose body holds barriers, the iteration number times the barriers one
//! iteration passes. It is counted on the structure alone, which is exact because barriers must
//! be reached in uniform control flow (the runtime fails a dispatch otherwise):
//! - a barrier counts 1; a call, the barriers of its callee's body; a counted loop with constant
//!   bounds, its trip count times those of its body; another op with regions, those of its
//!   regions when they all hold the same number (an `if` with a barrier in both branches);
//! - anything else holding barriers (a loop with unknown bounds, an `if` with a barrier in one
//!   branch, recursion) makes the phase unknown (`None`): the race check then takes the access
//!   to be in every phase, which can only report more.

use super::affine::Affine;
use hat_ir::interfaces::{resolve_callee, trip_count, CallOpInterface, CallableOpInterface, LoopLikeOpInterface};
use hat_ir::{Context, EffectKind, MemoryEffects, MemorySpace, Op, Region, Value};

/// How deep calls are followed when counting barriers.
const MAX_CALL_DEPTH: usize = 8;

/// The barrier phase of an op (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Phase {
    /// Barriers passed before it, outside the loops of `loops`' first iterations.
    pub(super) base: i64,
    /// Per enclosing counted loop whose body holds barriers: its induction variable, first
    /// value and step, and the barriers one iteration passes.
    pub(super) loops: Vec<PhaseLoop>,
}

/// A loop of a [`Phase`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PhaseLoop {
    /// The induction variable.
    pub(super) variable: Value,
    /// Its first value.
    pub(super) lower: Affine,
    /// Its step.
    pub(super) step: Affine,
    /// Barriers per iteration.
    pub(super) barriers: i64,
}

impl Phase {
    /// The phase of the op `function` (its body) starts with.
    pub(super) fn start() -> Phase {
        Phase { base: 0, loops: Vec::new() }
    }

    /// `self` followed by `inner` (the phase of an op of a callee, called at `self`).
    pub(super) fn then(&self, inner: &Phase) -> Phase {
        Phase { base: self.base + inner.base, loops: self.loops.iter().chain(&inner.loops).cloned().collect() }
    }
}

/// Whether `op` is a workgroup barrier.
pub(super) fn is_barrier(ctx: &Context, op: Op) -> bool {
    let effects = ctx.definition(ctx.name(op)).map_or(MemoryEffects::Unknown, |d| d.memory_effects(ctx, op));
    effects.known().is_some_and(|effects| {
        effects.iter().any(|e| e.kind == EffectKind::Synchronize && e.space == MemorySpace::Workgroup)
    })
}

/// Whether `function` (or what it calls) holds a barrier at all.
pub(super) fn has_barrier(ctx: &Context, function: Op) -> bool {
    barriers_of_function(ctx, function, 0) != Some(0)
}

/// The phase of `op` in `function` (an op nested in it, not in a function nested in it).
pub(super) fn phase(ctx: &Context, function: Op, op: Op) -> Option<Phase> {
    let mut phase = Phase::start();
    let mut loops_inner_first = Vec::new();
    let mut current = op;
    loop {
        let block = ctx.parent_block(current)?;
        for sibling in ctx.block_ops(block) {
            if sibling == current {
                break;
            }
            phase.base += barriers_of(ctx, sibling, 0)?;
        }
        let region = ctx.block_parent(block)?;
        let parent = ctx.region_parent(region)?;
        if parent == function {
            break;
        }
        if ctx.interface::<dyn CallableOpInterface>(parent).is_some() {
            return None; // in another function
        }
        let inside = barriers_of_region(ctx, region, 0)?;
        match ctx.interface::<dyn LoopLikeOpInterface>(parent) {
            Some(looping) if looping.body(ctx, parent) == region && inside > 0 => {
                let variable = looping.induction_variable(ctx, parent)?;
                let lower = looping.lower_bound(ctx, parent)?;
                let step = looping.step(ctx, parent)?;
                loops_inner_first.push((variable, lower, step, inside));
            }
            _ => {}
        }
        current = parent;
    }
    loops_inner_first.reverse();
    phase.loops = loops_inner_first
        .into_iter()
        .map(|(variable, lower, step, barriers)| {
            Some(PhaseLoop { variable, lower: affine_of(ctx, lower)?, step: affine_of(ctx, step)?, barriers })
        })
        .collect::<Option<_>>()?;
    Some(phase)
}

/// A loop bound as a form: a constant, else the induction variable of an enclosing loop is not
/// followed (the phase is unknown).
fn affine_of(ctx: &Context, value: Value) -> Option<Affine> {
    hat_ir::interfaces::constant_integer(ctx, value).map(Affine::constant)
}

/// The barriers one run of `op` passes.
fn barriers_of(ctx: &Context, op: Op, depth: usize) -> Option<i64> {
    if is_barrier(ctx, op) {
        return Some(1);
    }
    if ctx.interface::<dyn CallOpInterface>(op).is_some() {
        return match resolve_callee(ctx, op) {
            Some(callee) => barriers_of_function(ctx, callee, depth + 1),
            None => Some(0), // an unresolved callee has no barrier the analysis could see
        };
    }
    let regions = ctx.regions(op);
    if regions.is_empty() {
        return Some(0);
    }
    if let Some(looping) = ctx.interface::<dyn LoopLikeOpInterface>(op) {
        let inside = barriers_of_region(ctx, looping.body(ctx, op), depth)?;
        if inside == 0 {
            return Some(0);
        }
        return i64::try_from(trip_count(ctx, op)?).ok()?.checked_mul(inside);
    }
    let counts = regions.iter().map(|&r| barriers_of_region(ctx, r, depth)).collect::<Option<Vec<_>>>()?;
    match counts.split_first() {
        Some((&first, rest)) if rest.iter().all(|&c| c == first) => Some(first),
        _ => None,
    }
}

fn barriers_of_region(ctx: &Context, region: Region, depth: usize) -> Option<i64> {
    let mut total = 0i64;
    for &block in ctx.region_blocks(region) {
        for op in ctx.block_ops(block) {
            total = total.checked_add(barriers_of(ctx, op, depth)?)?;
        }
    }
    Some(total)
}

fn barriers_of_function(ctx: &Context, function: Op, depth: usize) -> Option<i64> {
    if depth > MAX_CALL_DEPTH {
        return None;
    }
    match ctx.interface::<dyn CallableOpInterface>(function).and_then(|c| c.body(ctx, function)) {
        Some(body) => barriers_of_region(ctx, body, depth),
        None => Some(0),
    }
}
