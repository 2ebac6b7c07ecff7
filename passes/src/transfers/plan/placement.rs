//! Placement: where each copy goes, from the analyses.
//!
//! 1. **Merges** ([`repairs`]): what a join completes ([`super::merges`]) is copied on the
//!    incoming edges that lack it — at the end of a branch, on a loop's entry edge, on its back
//!    edge or exit edge.
//! 2. **Lazy code motion** ([`inserts`], [`at_ops`]): a copy goes on an edge where `later`
//!    holds and no longer holds at the edge's target (`later(e) − laterin(target)`), or just
//!    before the op that needs it when it could wait until there. So each copy is as late as
//!    possible, on no path that does not need it, hoisted out of a loop only when every
//!    iteration needs it.
//! 3. **The check** ([`check`]): availability solved once more with every copy placed, and every
//!    need and every copy's source verified current. A plan that fails it is not used.

use super::access::RootAccesses;
use super::analyses::{key, with_copies, EdgeCopies, EdgeKey, OpCopies};
use super::facts::{is_nothing, minus, unite, Must, Pair, DEVICE, HOST};
use super::merges::{Join, Merges};
use hat_ir::analysis::dataflow::{DenseSolution, Edge, FlowGraph, FlowSlice, Target};
use hat_ir::{Context, Op};

/// Availability at the source of `edge` (before the copies on it).
fn at_source(ctx: &Context, available: &DenseSolution<Must>, edge: &Edge) -> Option<Pair> {
    let state = if edge.leaves_before() { available.before(ctx, edge.from) } else { available.after(ctx, edge.from) };
    state.pair().cloned()
}

/// More copies on the edges into joins that still lose an element ([`Merges`]): on each edge,
/// the completed elements it lacks on that side (`copies`: those decided already, which
/// `available` counts).
pub fn repairs(ctx: &Context, merges: &Merges, available: &DenseSolution<Must>, copies: &EdgeCopies) -> EdgeCopies {
    let mut out = EdgeCopies::default();
    for (j, join) in merges.joins.iter().enumerate() {
        let reached: Vec<(usize, Pair)> = join
            .edges
            .iter()
            .enumerate()
            .filter_map(|(i, e)| at_source(ctx, available, e).map(|p| (i, with_copies(&p, copies.get(&key(e))))))
            .collect();
        if reached.len() < 2 {
            continue;
        }
        let meet = |side: usize| {
            reached.iter().skip(1).fold(reached[0].1[side].clone(), |acc, (_, p)| acc.intersect(&p[side]))
        };
        // The side whose copies on the edges that lack it cost less, an edge's copy weighed
        // by how often it runs (its loop depth): at a loop's header, the side its back edge
        // brings (the entry edge copies once); after a branch, the side fewer paths lack.
        // An edge current on neither side (lost at a join upstream, whose repair is still
        // to come) counts as current on the host, the buffer's home.
        let prefer = |both: &super::super::ranges::RangeSet| {
            let lacks = |pair: &Pair, side: usize| {
                let missing = both.minus(&pair[side]);
                if side == HOST {
                    !missing.intersect(&pair[DEVICE]).is_empty()
                } else {
                    !missing.is_empty()
                }
            };
            // A side no path from here surely needs would be copied in vain on the paths that
            // leave without looking (a loop that runs no more iterations): the host then,
            // whose copies are those the `kernel` strategy would make.
            let needed = |side: usize| join.needed.as_ref().is_some_and(|n| n[side].contains(both));
            match (needed(HOST), needed(DEVICE)) {
                (false, false) | (true, false) => return Some(HOST),
                (false, true) => return Some(DEVICE),
                (true, true) => {}
            }
            let cost = |side: usize| -> u64 {
                reached.iter().filter(|(_, p)| lacks(p, side)).map(|(i, _)| edge_weight(ctx, &join.edges[*i])).sum()
            };
            match cost(HOST).cmp(&cost(DEVICE)) {
                std::cmp::Ordering::Less => Some(HOST),
                std::cmp::Ordering::Greater => Some(DEVICE),
                std::cmp::Ordering::Equal => None,
            }
        };
        let want = merges.completed(j, &[meet(HOST), meet(DEVICE)], prefer);
        for (i, pair) in &reached {
            let missing = minus(&want, pair);
            if !is_nothing(&missing) {
                add(&mut out, key(&join.edges[*i]), &missing);
            }
        }
    }
    out
}

/// Adds `pair` to the copies on `edge`.
fn add(copies: &mut EdgeCopies, edge: EdgeKey, pair: &Pair) {
    let slot = copies.entry(edge).or_insert_with(super::facts::nothing);
    *slot = unite(slot, pair);
}

/// The repairs narrowed to what their edges still lack, without those whose source is not
/// current (a repair made for an earlier state of a merge that later repairs complete).
pub fn prune(ctx: &Context, flow: &FlowGraph, available: &DenseSolution<Must>, copies: &EdgeCopies) -> EdgeCopies {
    let mut out = EdgeCopies::default();
    for (edge_key, pair) in copies {
        let Some(edge) = edge_of(flow, edge_key) else { continue };
        let Some(have) = at_source(ctx, available, edge) else { continue };
        let mut kept = super::facts::nothing();
        for side in [HOST, DEVICE] {
            let missing = pair[side].minus(&have[side]);
            if !missing.is_empty() && have[1 - side].contains(&missing) {
                kept[side] = missing;
            }
        }
        if !is_nothing(&kept) {
            out.insert(*edge_key, kept);
        }
    }
    out
}

/// How often an edge runs, roughly: 8 to the power of the loops around it (those around both
/// its source and its target: a loop's entry and exit edges run once per run of the loop, its
/// back edge once per iteration).
fn edge_weight(ctx: &Context, edge: &Edge) -> u64 {
    let loops_around = |mut at: Option<Op>| {
        let mut depth = 0u32;
        while let Some(op) = at {
            if ctx.interface::<dyn hat_ir::interfaces::LoopLikeOpInterface>(op).is_some() {
                depth += 1;
            }
            at = ctx.parent_op(op);
        }
        depth
    };
    let from = loops_around(ctx.parent_op(edge.from));
    let to = match edge.to {
        Target::Block(block) => loops_around(ctx.block_parent(block).and_then(|r| ctx.region_parent(r))),
        Target::After(op) => loops_around(ctx.parent_op(op)),
    };
    8u64.saturating_pow(from.min(to).min(8))
}

/// Adds `more` to `copies`.
pub fn merge_copies(copies: &mut EdgeCopies, more: EdgeCopies) {
    for (edge, pair) in more {
        add(copies, edge, &pair);
    }
}

/// Lazy code motion's insertions on edges into joins: `later(e) − laterin(target)`.
pub fn inserts(
    ctx: &Context,
    merges: &Merges,
    later: &super::analyses::Later<'_>,
    delayed: &DenseSolution<Must>,
) -> EdgeCopies {
    let mut out = EdgeCopies::default();
    for Join { target, edges, .. } in &merges.joins {
        let at_target = match target {
            Target::Block(block) => delayed.block_start(ctx, *block),
            Target::After(op) => delayed.after(ctx, *op),
        };
        let Some(at_target) = at_target.pair() else { continue };
        for edge in edges {
            let source =
                if edge.leaves_before() { delayed.before(ctx, edge.from) } else { delayed.after(ctx, edge.from) };
            let Must::At(along) = later.along(ctx, edge, source) else { continue };
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

/// A failed check: what is not current where.
#[derive(Debug)]
pub struct CheckFailure {
    /// The op at or before which it was found.
    pub op: Op,
    /// What.
    pub what: String,
}

/// Verifies the plan of one root: with every copy in place, each need is met and each copy's
/// source is current (`available` is availability solved with `edges` and `ops` as copies).
pub fn check(
    ctx: &Context,
    flow: &FlowGraph,
    slice: &FlowSlice,
    accesses: &RootAccesses,
    available: &DenseSolution<Must>,
    edges: &EdgeCopies,
    ops: &OpCopies,
) -> Result<(), CheckFailure> {
    let fail = |op: Op, what: String| Err(CheckFailure { op, what });
    for &op in slice.ops() {
        for edge in flow.edges_from(op) {
            let Some(copies) = edges.get(&key(edge)) else { continue };
            let Some(have) = at_source(ctx, available, edge) else { continue };
            for side in [HOST, DEVICE] {
                if !have[1 - side].contains(&copies[side]) {
                    return fail(
                        edge.from,
                        format!(
                            "a copy on an edge from a stale source (to side {side}, {:?}, source has {:?})",
                            copies[side], have
                        ),
                    );
                }
            }
        }
    }
    for &op in slice.ops() {
        let Some(have) = available.before(ctx, op).pair() else { continue };
        if let Some(copies) = ops.get(&op) {
            for side in [HOST, DEVICE] {
                if !have[1 - side].contains(&copies[side]) {
                    return fail(op, "a copy before an op from a stale source".to_string());
                }
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
