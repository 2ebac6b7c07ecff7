//! Placement: where each copy goes, from the analyses.
//!
//! 1. **Merges** ([`repairs`]). Where paths join (after an `scf.if`, at a loop's header, after a
//!    loop), an element may be current on the host on one path and on the device on another:
//!    then no copy after the join could be right on both. If the element is still observed
//!    (`may` anticipation), the side its next observer wants is completed on the incoming
//!    edges that lack it — at the end of a branch, on a loop's entry edge, on its back edge or
//!    exit edge. Availability is solved again with these copies until no merge loses an
//!    element.
//! 2. **Lazy code motion** ([`inserts`], [`at_ops`]): a copy goes on an edge where `later`
//!    holds and no longer holds at the edge's target (`later(e) − laterin(target)`), or just
//!    before the op that needs it when it could wait until there. So each copy is as late as
//!    possible, on no path that does not need it, hoisted out of a loop only when every
//!    iteration needs it.
//! 3. **The check** ([`check`]): availability solved once more with every copy placed, and every
//!    need and every copy's source verified current. A plan that fails it is not used.

use super::access::Accesses;
use super::analyses::{key, with_edge_copies, Anticipated, EdgeCopies, EdgeKey, OpCopies};
use super::facts::{Must, DEVICE, HOST};
use hat_ir::analysis::dataflow::{DenseSolution, Edge, EdgeKind, FlowGraph, Target};
use hat_ir::{Context, Op};
use rustc_hash::FxHashMap;

/// Every join of the flow graph (a target with several incoming edges) and its edges.
pub fn joins(flow: &FlowGraph) -> Vec<(Target, Vec<Edge>)> {
    let mut by_target: FxHashMap<Target, Vec<Edge>> = FxHashMap::default();
    let mut order = Vec::new();
    for edge in flow.edges() {
        let list = by_target.entry(edge.to).or_default();
        if list.is_empty() {
            order.push(edge.to);
        }
        list.push(edge.clone());
    }
    order.into_iter().filter_map(|t| by_target.remove(&t).filter(|e| e.len() > 1).map(|e| (t, e))).collect()
}

/// Availability where `edge` arrives, with the copies on it.
fn available_on(
    ctx: &Context,
    available: &DenseSolution<Must>,
    edge: &Edge,
    copies: &EdgeCopies,
) -> Option<super::facts::Facts> {
    let state = if edge.leaves_before() { available.before(ctx, edge.from) } else { available.after(ctx, edge.from) };
    state.facts().map(|f| with_edge_copies(f, copies.get(&key(edge))))
}

/// Whether `edge` goes around a loop (back to the start of a region it comes from).
fn is_back_edge(ctx: &Context, edge: &Edge) -> bool {
    match edge.to {
        Target::Block(block) => {
            edge.kind == EdgeKind::Exit
                && ctx.block_parent(block).and_then(|r| ctx.region_parent(r))
                    == ctx.parent_block(edge.from).and_then(|b| ctx.block_parent(b)).and_then(|r| ctx.region_parent(r))
        }
        Target::After(_) => false,
    }
}

/// New copies on the edges into joins where an element still observed is current on no side
/// on every path; `copies` are the ones decided already. Empty when no merge loses anything.
pub fn repairs(
    ctx: &Context,
    joins: &[(Target, Vec<Edge>)],
    available: &DenseSolution<Must>,
    anticipated: &DenseSolution<Anticipated>,
    copies: &EdgeCopies,
) -> EdgeCopies {
    let mut out = EdgeCopies::default();
    for (target, edges) in joins {
        let arriving: Vec<Option<super::facts::Facts>> =
            edges.iter().map(|e| available_on(ctx, available, e, copies)).collect();
        let reached: Vec<(usize, &super::facts::Facts)> =
            arriving.iter().enumerate().filter_map(|(i, f)| f.as_ref().map(|f| (i, f))).collect();
        if reached.len() < 2 {
            continue;
        }
        let live = match target {
            Target::Block(block) => anticipated.block_start(ctx, *block),
            Target::After(op) => anticipated.after(ctx, *op),
        };
        let Some(live) = live.may.facts() else { continue };
        // Only roots whose arriving states differ can lose an element here.
        let mut candidates: Vec<usize> = Vec::new();
        for &(_, facts) in &reached[1..] {
            reached[0].1.diff(facts, &mut |root, _, _| candidates.push(root));
        }
        candidates.sort_unstable();
        candidates.dedup();
        for root in candidates {
            let meet = |side: usize| {
                reached
                    .iter()
                    .skip(1)
                    .fold(reached[0].1.get(root)[side].clone(), |acc, (_, f)| acc.intersect(&f.get(root)[side]))
            };
            let (host, device) = (meet(HOST), meet(DEVICE));
            let wanted = live.get(root);
            let lost = wanted[HOST].union(&wanted[DEVICE]).minus(&host).minus(&device);
            if lost.is_empty() {
                continue;
            }
            let device_only = lost.intersect(&wanted[DEVICE]).minus(&wanted[HOST]);
            let host_only = lost.intersect(&wanted[HOST]).minus(&wanted[DEVICE]);
            let both = lost.minus(&device_only).minus(&host_only);
            // Elements both sides may observe next: the side fewer edges lack; at a loop's
            // header, the side the back edge brings (the entry edge then copies once).
            let lacking = |side: usize| reached.iter().filter(|(_, f)| !f.get(root)[side].contains(&both)).count();
            let back = reached.iter().find(|(i, _)| is_back_edge(ctx, &edges[*i]));
            let both_side = match (lacking(HOST).cmp(&lacking(DEVICE)), back) {
                (_, Some((_, f))) if f.get(root)[DEVICE].contains(&both) && !f.get(root)[HOST].contains(&both) => {
                    DEVICE
                }
                (_, Some((_, f))) if f.get(root)[HOST].contains(&both) && !f.get(root)[DEVICE].contains(&both) => HOST,
                (std::cmp::Ordering::Greater, _) => DEVICE,
                _ => HOST,
            };
            let mut want = [host_only, device_only];
            want[both_side] = want[both_side].union(&both);
            let mut planned = Vec::new();
            for &(i, facts) in &reached {
                for side in [HOST, DEVICE] {
                    let missing = want[side].minus(&facts.get(root)[side]);
                    if !missing.is_empty() {
                        planned.push((i, side, missing));
                    }
                }
            }
            // A source that is not current yet (a merge upstream loses it too): that merge is
            // repaired first, this one in a later round.
            if planned.iter().all(|(i, side, missing)| {
                arriving[*i].as_ref().is_some_and(|f| f.get(root)[1 - side].contains(missing))
            }) {
                for (i, side, missing) in planned {
                    out.entry(key(&edges[i])).or_default().push((root, side, missing));
                }
            }
        }
    }
    out
}

/// Adds `more` to `copies`.
pub fn merge_copies(copies: &mut EdgeCopies, more: EdgeCopies) {
    for (edge, list) in more {
        copies.entry(edge).or_default().extend(list);
    }
}

/// Lazy code motion's insertions on edges into joins: `later(e) − laterin(target)`.
pub fn inserts(
    ctx: &Context,
    joins: &[(Target, Vec<Edge>)],
    later: &super::analyses::Later<'_>,
    delayed: &DenseSolution<Must>,
) -> EdgeCopies {
    let mut out = EdgeCopies::default();
    for (target, edges) in joins {
        let at_target = match target {
            Target::Block(block) => delayed.block_start(ctx, *block),
            Target::After(op) => delayed.after(ctx, *op),
        };
        let Some(at_target) = at_target.facts() else { continue };
        for edge in edges {
            let source =
                if edge.leaves_before() { delayed.before(ctx, edge.from) } else { delayed.after(ctx, edge.from) };
            let Must::At(along) = later.along(ctx, edge, source) else { continue };
            along.diff(at_target, &mut |root, mine, theirs| {
                for side in [HOST, DEVICE] {
                    let extra = mine[side].minus(&theirs[side]);
                    if !extra.is_empty() {
                        out.entry(key(edge)).or_default().push((root, side, extra));
                    }
                }
            });
        }
    }
    out
}

/// Copies just before the ops that need them: `need ∩ laterin`.
pub fn at_ops(ctx: &Context, function: Op, accesses: &Accesses, delayed: &DenseSolution<Must>) -> OpCopies {
    let mut out = OpCopies::default();
    for op in ctx.walk(function) {
        let access = accesses.of(op);
        if access.tracked.is_empty() {
            continue;
        }
        let Some(waiting) = delayed.before(ctx, op).facts() else { continue };
        for a in &access.tracked {
            for side in [HOST, DEVICE] {
                let here = a.need[side].intersect(&waiting.get(a.root)[side]);
                if !here.is_empty() {
                    out.entry(op).or_default().push((a.root, side, here));
                }
            }
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

/// Verifies a plan: with every copy in place, each need is met and each copy's source is
/// current (`available` is availability solved with `edges` and `ops` as copies).
pub fn check(
    ctx: &Context,
    function: Op,
    flow: &FlowGraph,
    accesses: &Accesses,
    available: &DenseSolution<Must>,
    edges: &EdgeCopies,
    ops: &OpCopies,
) -> Result<(), CheckFailure> {
    let fail = |op: Op, what: String| Err(CheckFailure { op, what });
    for edge in flow.edges() {
        let Some(copies) = edges.get(&key(edge)) else { continue };
        let state =
            if edge.leaves_before() { available.before(ctx, edge.from) } else { available.after(ctx, edge.from) };
        let Some(facts) = state.facts() else { continue };
        for (root, side, ranges) in copies {
            if !facts.get(*root)[1 - side].contains(ranges) {
                return fail(edge.from, format!("a copy on an edge from a stale source (root {root})"));
            }
        }
    }
    for op in ctx.walk(function) {
        let Some(facts) = available.before(ctx, op).facts() else { continue };
        if let Some(copies) = ops.get(&op) {
            for (root, side, ranges) in copies {
                if !facts.get(*root)[1 - side].contains(ranges) {
                    return fail(op, format!("a copy before an op from a stale source (root {root})"));
                }
            }
        }
        let facts = with_edge_copies(facts, ops.get(&op));
        for a in &accesses.of(op).tracked {
            for side in [HOST, DEVICE] {
                if !facts.get(a.root)[side].contains(&a.need[side]) {
                    return fail(op, format!("a need not met (root {}, side {side})", a.root));
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
