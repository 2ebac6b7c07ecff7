//! Placement: where each copy goes, from the analyses.
//!
//! 1. **Lazy code motion** ([`inserts`], [`at_ops`]): a copy goes on an edge where `later`
//!    holds and no longer holds at the edge's target (`later(e) − laterin(target)`), or just
//!    before the op that needs it when it could wait until there. So each copy is as late as
//!    possible, on no path that does not need it, hoisted out of a loop only when every
//!    iteration needs it.
//! 2. **Coalescing** ([`coalesced_at_ops`]) and **redundancy** ([`without_redundant`]): a copy
//!    before an op outside loops widened to what every path needs anyway, and what is current
//!    where a copy is made dropped from it.
//! 3. **The check** ([`check`]): availability solved once more with every copy placed, and every
//!    need and every copy's source verified current. A plan that fails it is not used.

use super::access::RootAccesses;
use super::analyses::{key, with_copies, Anticipated, EdgeCopies, EdgeKey, OpCopies};
use super::facts::{is_nothing, minus, unite, Available, Must, Pair, DEVICE, HOST};
use super::joins::Join;
use hat_ir::analysis::dataflow::{DenseSolution, Edge, FlowGraph, FlowSlice};
use hat_ir::{Context, Op};

/// The current elements at the source of `edge` (before the copies on it).
fn at_source(ctx: &Context, available: &DenseSolution<Available>, edge: &Edge) -> Option<Pair> {
    available.at_source(ctx, edge).pair().cloned()
}

/// Adds `pair` to the copies on `edge`.
fn add(copies: &mut EdgeCopies, edge: EdgeKey, pair: &Pair) {
    let slot = copies.entry(edge).or_insert_with(super::facts::nothing);
    *slot = unite(slot, pair);
}

/// The copies less what is current on their side already where they are made (before the
/// other copies of their place), per `available`, the availability with all of them. Such a
/// copy is never needed, and its source may be stale (lazy code motion can place a copy after a
/// join for the paths that lack it, downstream of a copy on one branch's edge that made it
/// current on the others, or of a coalesced copy).
pub fn without_redundant(
    ctx: &Context,
    flow: &FlowGraph,
    available: &DenseSolution<Available>,
    edges: &EdgeCopies,
    ops: &OpCopies,
) -> (EdgeCopies, OpCopies) {
    let needed = |pair: &Pair, have: Option<&Pair>| match have {
        Some(have) => minus(pair, have),
        None => pair.clone(),
    };
    let mut on_edges = EdgeCopies::default();
    for (edge_key, pair) in edges {
        let have = edge_of(flow, edge_key).and_then(|e| at_source(ctx, available, e));
        let left = needed(pair, have.as_ref());
        if !is_nothing(&left) {
            on_edges.insert(*edge_key, left);
        }
    }
    let mut at_ops = OpCopies::default();
    for (&op, pair) in ops {
        let left = needed(pair, available.before(ctx, op).pair());
        if !is_nothing(&left) {
            at_ops.insert(op, left);
        }
    }
    (on_edges, at_ops)
}

/// How many loops (`scf.while`s and loop-like ops such as `scf.for`) enclose `at`, it included.
fn loops_around(ctx: &Context, mut at: Option<Op>) -> u32 {
    let mut depth = 0;
    while let Some(op) = at {
        if ctx.interface::<dyn hat_ir::interfaces::LoopLikeOpInterface>(op).is_some()
            || hat_dialects::scf::WhileOp::wrap(ctx, op).is_some()
        {
            depth += 1;
        }
        at = ctx.parent_op(op);
    }
    depth
}

/// Lazy code motion's insertions on edges into joins: `later(e) − laterin(target)`.
pub fn inserts(
    ctx: &Context,
    joins: &[Join],
    later: &super::analyses::Later<'_>,
    delayed: &DenseSolution<Must>,
) -> EdgeCopies {
    let mut out = EdgeCopies::default();
    for Join { target, edges } in joins {
        let Some(at_target) = delayed.at_target(ctx, *target).pair() else { continue };
        for edge in edges {
            let Must::At(along) = later.along(ctx, edge, delayed.at_source(ctx, edge)) else { continue };
            let extra = minus(&along, at_target);
            if !is_nothing(&extra) {
                add(&mut out, key(edge), &extra);
            }
        }
    }
    out
}

/// Copies just before the ops that need them: `need ∩ laterin`.
pub fn at_ops(ctx: &Context, accesses: &RootAccesses, delayed: &DenseSolution<Must>) -> OpCopies {
    let mut out = OpCopies::default();
    for (op, a) in accesses.ops() {
        let Some(waiting) = delayed.before(ctx, op).pair() else { continue };
        let here = [a.need[HOST].intersect(&waiting[HOST]), a.need[DEVICE].intersect(&waiting[DEVICE])];
        if !is_nothing(&here) {
            out.insert(op, here);
        }
    }
    out
}

/// The copies before ops, each widened to the elements every path from it needs on its side
/// anyway (must-anticipated) whose source is current there: the same bytes move on every path,
/// in one copy rather than one here and more later (the later ones are then current already,
/// and [`without_redundant`] drops them). Adjacent ranges needed at one point become one copy.
/// Only at ops outside loops: inside one the copy would run every iteration for a need met once.
pub fn coalesced_at_ops(
    ctx: &Context,
    anticipated: &DenseSolution<Anticipated>,
    available: &DenseSolution<Available>,
    mut ops: OpCopies,
) -> OpCopies {
    for (&op, pair) in ops.iter_mut() {
        let must = anticipated.before(ctx, op).must.pair();
        let (Some(must), Some(have)) = (must, available.before(ctx, op).pair()) else { continue };
        if loops_around(ctx, ctx.parent_op(op)) > 0 {
            continue;
        }
        for side in [HOST, DEVICE] {
            if !pair[side].is_empty() {
                let more = must[side].intersect(&have[1 - side]).minus(&have[side]);
                pair[side] = pair[side].union(&more);
            }
        }
    }
    ops
}

/// A failed check: what is not current where.
#[derive(Debug)]
pub struct CheckFailure {
    /// The op at or before which it was found.
    pub op: Op,
    /// What.
    pub what: String,
}

/// Verifies the plan of one root: with every copy in place, each need is met, and each copy's
/// source is current wherever its side is stale on every path (where the side is current on
/// some paths, the copy is made only when the run-time state says it is stale, and then the
/// source is current) (`available` is availability solved with `edges` and `ops` as copies).
pub fn check(
    ctx: &Context,
    flow: &FlowGraph,
    slice: &FlowSlice,
    accesses: &RootAccesses,
    available: &DenseSolution<Available>,
    edges: &EdgeCopies,
    ops: &OpCopies,
) -> Result<(), CheckFailure> {
    let fail = |op: Op, what: String| Err(CheckFailure { op, what });
    let sourced = |state: &Available, copies: &Pair| {
        let (Some(have), Some(may)) = (state.pair(), state.may()) else { return true };
        [HOST, DEVICE].into_iter().all(|side| have[1 - side].contains(&copies[side].minus(&may[side])))
    };
    for &op in slice.ops() {
        for edge in flow.edges_from(op) {
            let Some(copies) = edges.get(&key(edge)) else { continue };
            if !sourced(available.at_source(ctx, edge), copies) {
                return fail(edge.from, format!("a copy on an edge from a stale source ({copies:?})"));
            }
        }
    }
    for &op in slice.ops() {
        let state = available.before(ctx, op);
        let Some(have) = state.pair() else { continue };
        if let Some(copies) = ops.get(&op) {
            if !sourced(state, copies) {
                return fail(op, format!("a copy before an op from a stale source ({copies:?}, source has {have:?})"));
            }
        }
        let have = with_copies(have, ops.get(&op));
        if let Some(a) = accesses.of(op) {
            for side in [HOST, DEVICE] {
                if !have[side].contains(&a.need[side]) {
                    return fail(op, format!("a need not met (side {side})"));
                }
            }
        }
    }
    Ok(())
}

/// The edge a key names.
pub fn edge_of<'f>(flow: &'f FlowGraph, key: &EdgeKey) -> Option<&'f Edge> {
    flow.edges_from(key.0).find(|e| e.to == key.1)
}
