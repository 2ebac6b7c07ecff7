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

use super::super::ranges::RangeSet;
use super::access::RootAccesses;
use super::analyses::{key, with_copies, Anticipated, EdgeCopies, EdgeKey, FlagSets, OpCopies};
use super::facts::{is_nothing, minus, unite, Available, Must, Pair, DEVICE, HOST};
use super::merges::{Join, Merges};
use hat_ir::analysis::dataflow::{DenseSolution, Edge, FlowGraph, FlowSlice, Target};
use hat_ir::{Context, Op};

/// Availability at the source of `edge` (before the copies on it).
fn state_at_source<'a>(ctx: &Context, available: &'a DenseSolution<Available>, edge: &Edge) -> &'a Available {
    if edge.leaves_before() {
        available.before(ctx, edge.from)
    } else {
        available.after(ctx, edge.from)
    }
}

/// The current elements at the source of `edge` (before the copies on it).
fn at_source(ctx: &Context, available: &DenseSolution<Available>, edge: &Edge) -> Option<Pair> {
    state_at_source(ctx, available, edge).pair().cloned()
}

/// The flagged elements at the source of `edge` (before the copies on it).
pub fn flagged_at_source(ctx: &Context, available: &DenseSolution<Available>, edge: &Edge) -> RangeSet {
    state_at_source(ctx, available, edge).flagged()
}

/// What the merges still lose is completed on the incoming edges ([`Merges`]): the elements
/// some path from the join surely needs on a side are copied there on each edge that lacks
/// them (a *repair*); the others, observed next on some paths only, are left to the root's
/// run-time flag where every edge has them on one side (or flagged already): each edge sets
/// the flag to its side, and the copies that serve the later observers are guarded by it.
/// `copies` and `flags`: those decided already, which `available` counts.
pub fn repairs(
    ctx: &Context,
    merges: &Merges,
    available: &DenseSolution<Available>,
    copies: &EdgeCopies,
    flags: &FlagSets,
    flagging: bool,
) -> Decisions {
    let mut decisions = Decisions::default();
    for (j, join) in merges.joins.iter().enumerate() {
        let reached: Vec<Reached> = join
            .edges
            .iter()
            .enumerate()
            .filter_map(|(i, e)| reached(i, state_at_source(ctx, available, e), copies.get(&key(e))))
            .collect();
        decide_join(ctx, merges, j, &reached, flags, flagging, &mut decisions);
    }
    decisions
}

/// What reaches a join along one of its edges: the edge's index, what is current on it (with
/// the copies on it), and what the flag covers on it before a flag set of its own (current on
/// the side the flag names; an element current on both sides stays covered, so an edge on which
/// it is needs no flag set for it).
pub type Reached = (usize, Pair, RangeSet);

/// What reaches along edge `i` from a source in `state`, with `copies` on the edge (`None`
/// where no path reaches the source).
pub fn reached(i: usize, state: &Available, copies: Option<&Pair>) -> Option<Reached> {
    let Available::At { current, flagged } = state else { return None };
    Some((i, with_copies(current, copies), flagged.clone()))
}

/// Decides join `j` of `merges` from what reaches it along its edges: the repairs on its edges,
/// its flag sets, and the repairs that wait for a join upstream, added to `decisions`.
pub fn decide_join(
    ctx: &Context,
    merges: &Merges,
    j: usize,
    reached: &[Reached],
    flags: &FlagSets,
    flagging: bool,
    decisions: &mut Decisions,
) {
    let Decisions { copies: out, sets, deferred } = decisions;
    let join = &merges.joins[j];
    if reached.len() < 2 {
        return;
    }
    // The flag set decided already on edge `i`; what may be observed next from the join.
    let decided = |i: usize| flags.get(&key(&join.edges[i])).copied();
    let live = merges.live(j);
    let meet =
        |side: usize| reached.iter().skip(1).fold(reached[0].1[side].clone(), |acc, (_, p, _)| acc.intersect(&p[side]));
    // Flagged after the join: on every edge, flagged or current on the side its set names.
    let flagged_after = reached.iter().fold(None::<RangeSet>, |acc, (i, pair, flagged)| {
        let here = match decided(*i) {
            Some(side) => pair[side].clone(),
            None => flagged.clone(),
        };
        Some(acc.map_or(here.clone(), |a| a.intersect(&here)))
    });
    let flagged_after = flagged_after.unwrap_or_default();
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
            reached.iter().filter(|(_, p, _)| lacks(p, side)).map(|(i, _, _)| edge_weight(ctx, &join.edges[*i])).sum()
        };
        match cost(HOST).cmp(&cost(DEVICE)) {
            std::cmp::Ordering::Less => Some(HOST),
            std::cmp::Ordering::Greater => Some(DEVICE),
            std::cmp::Ordering::Equal => None,
        }
    };
    let mut want = merges.completed(j, &[meet(HOST), meet(DEVICE)], &flagged_after, prefer);
    // What no path surely needs on the side it would be completed to: to the flag, where
    // every edge can say where it is.
    let needed = |side: usize| join.needed.as_ref().map_or_else(RangeSet::empty, |n| n[side].clone());
    let optional = want[HOST].minus(&needed(HOST)).union(&want[DEVICE].minus(&needed(DEVICE)));
    // An edge on which some of it is lost already (current on neither side, not flagged)
    // waits for the join upstream that loses it: that join may still flag it.
    let mut deferring = false;
    // A repair that only extends what lazy code motion copies on its edge anyway (what every
    // path from the join needs there and the edge lacks) adds no transfer: it is kept.
    let rides_along = [HOST, DEVICE].into_iter().all(|side| {
        let part = want[side].intersect(&optional);
        reached.iter().all(|(_, pair, _)| {
            let lack = part.minus(&pair[side]);
            let copied = needed(side).minus(&pair[side]);
            lack.is_empty() || (!copied.is_empty() && copied.union(&lack).ranges().count() <= copied.ranges().count())
        })
    });
    if flagging && !optional.is_empty() && !rides_along {
        if let Some(edge_sets) = flag_sets(reached, &optional, &live, decided, HOST) {
            apply_flag_sets(join, edge_sets, sets, out);
            want = [want[HOST].minus(&optional), want[DEVICE].minus(&optional)];
        } else if reached
            .iter()
            .any(|(_, pair, flagged)| !optional.minus(&pair[HOST]).minus(&pair[DEVICE]).minus(flagged).is_empty())
        {
            deferring = true;
        }
    }
    // Current on one side on every path and on the other on some: where the other side is
    // observed next, the flag says on which paths it is current, so that its copy is made
    // on the others only (a loop that may run no iteration, a branch that writes). And what
    // is flagged on some paths and current on one side on the others stays flagged: the
    // others set the flag to that side.
    if flagging && !sets_on(join, sets) {
        let carried = reached
            .iter()
            .fold(RangeSet::empty(), |acc, (_, _, f)| acc.union(f))
            .minus(&flagged_after)
            .intersect(&live);
        if !carried.is_empty() {
            if let Some(edge_sets) = flag_sets(reached, &carried, &live, decided, HOST) {
                apply_flag_sets(join, edge_sets, sets, out);
            }
        }
    }
    if flagging && !sets_on(join, sets) {
        for side in [HOST, DEVICE] {
            let some = reached.iter().fold(RangeSet::empty(), |acc, (_, p, _)| acc.union(&p[side]));
            let partial = some
                .minus(&meet(side))
                .intersect(&meet(1 - side))
                .intersect(&merges.live_on(j, side))
                .minus(&flagged_after);
            if partial.is_empty() {
                continue;
            }
            if let Some(edge_sets) = flag_sets(reached, &partial, &live, decided, side) {
                apply_flag_sets(join, edge_sets, sets, out);
                break;
            }
        }
    }
    for (i, pair, _) in reached {
        let missing = minus(&want, pair);
        if !is_nothing(&missing) {
            add(if deferring { &mut *deferred } else { &mut *out }, key(&join.edges[*i]), &missing);
        }
    }
}

/// What [`repairs`] decides in one round.
#[derive(Default)]
pub struct Decisions {
    /// Repairs.
    pub copies: EdgeCopies,
    /// Flag sets.
    pub sets: FlagSets,
    /// Repairs of joins that wait for a join upstream (made when nothing else changes).
    pub deferred: EdgeCopies,
}

/// Whether `sets` sets the flag on an edge into `join`.
fn sets_on(join: &Join, sets: &FlagSets) -> bool {
    join.edges.iter().any(|e| sets.contains_key(&key(e)))
}

/// Records the flag sets of a join, and the guarded copies that come before them on their edges.
fn apply_flag_sets(join: &Join, edge_sets: Vec<(usize, usize, RangeSet)>, sets: &mut FlagSets, out: &mut EdgeCopies) {
    for (i, side, guarded) in edge_sets {
        sets.insert(key(&join.edges[i]), side);
        if !guarded.is_empty() {
            let mut copy = super::facts::nothing();
            copy[side] = guarded;
            add(out, key(&join.edges[i]), &copy);
        }
    }
}

/// The flag sets that make `optional` flagged after a join: per edge, nothing where it is
/// flagged already (and the edge sets no flag, or sets it to a side that holds it); else the
/// side that holds it, or holds what is not flagged of it (the flagged part is copied there
/// first, guarded by the flag, before the flag is set anew): `(edge, side, that part)`. An edge
/// sets the flag only to a side on which the other flagged elements still observed are current
/// (they stay the flag's; on the other side they would lose their meaning). `None` where some
/// edge cannot.
fn flag_sets(
    reached: &[Reached],
    optional: &RangeSet,
    live: &RangeSet,
    decided: impl Fn(usize) -> Option<usize>,
    preferred: usize,
) -> Option<Vec<(usize, usize, RangeSet)>> {
    let mut sets = Vec::new();
    for (i, pair, flagged) in reached {
        match decided(*i) {
            Some(side) if pair[side].contains(optional) => continue,
            Some(_) => return None,
            None if flagged.contains(optional) => continue,
            None => {}
        }
        // The other flagged elements still observed stay the flag's only where they are
        // current on the side it is set to.
        let others = flagged.intersect(live).minus(optional);
        let side = [preferred, 1 - preferred]
            .into_iter()
            .find(|&s| pair[s].union(flagged).contains(optional) && pair[s].contains(&others))?;
        sets.push((*i, side, optional.intersect(flagged)));
    }
    Some(sets)
}

/// Adds `pair` to the copies on `edge`.
fn add(copies: &mut EdgeCopies, edge: EdgeKey, pair: &Pair) {
    let slot = copies.entry(edge).or_insert_with(super::facts::nothing);
    *slot = unite(slot, pair);
}

/// The repairs narrowed to what their edges still lack, without those whose source is neither
/// current nor flagged (a repair made for an earlier state of a merge that later repairs
/// complete).
pub fn prune(ctx: &Context, flow: &FlowGraph, available: &DenseSolution<Available>, copies: &EdgeCopies) -> EdgeCopies {
    let mut out = EdgeCopies::default();
    for (edge_key, pair) in copies {
        let Some(edge) = edge_of(flow, edge_key) else { continue };
        let state = state_at_source(ctx, available, edge);
        let Some(have) = state.pair() else { continue };
        let flagged = state.flagged();
        let mut kept = super::facts::nothing();
        for side in [HOST, DEVICE] {
            let missing = pair[side].minus(&have[side]);
            if !missing.is_empty() && have[1 - side].union(&flagged).contains(&missing) {
                kept[side] = missing;
            }
        }
        if !is_nothing(&kept) {
            out.insert(*edge_key, kept);
        }
    }
    out
}

/// The copies less what is current on their side already where they are made (before the
/// other copies of their place), per `available`, the availability with all of them. Such a
/// copy is never needed, and its source may be stale (lazy code motion can place a copy at a
/// join for the paths that lack it, downstream of a repair or of a copy on one branch's edge
/// that made it current on the others).
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

/// How often an edge runs, roughly: 8 to the power of the loops around it (those around both
/// its source and its target: a loop's entry and exit edges run once per run of the loop, its
/// back edge once per iteration).
fn edge_weight(ctx: &Context, edge: &Edge) -> u64 {
    let from = loops_around(ctx, ctx.parent_op(edge.from));
    let to = match edge.to {
        Target::Block(block) => loops_around(ctx, ctx.block_parent(block).and_then(|r| ctx.region_parent(r))),
        Target::After(op) => loops_around(ctx, ctx.parent_op(op)),
    };
    8u64.saturating_pow(from.min(to).min(8))
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

/// Verifies the plan of one root: with every copy in place, each need is met and each copy's
/// source is current, or flagged (such a copy is guarded by the flag) (`available` is
/// availability solved with `edges` and `ops` as copies).
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
        let (Some(have), flagged) = (state.pair(), state.flagged()) else { return true };
        [HOST, DEVICE].into_iter().all(|side| have[1 - side].contains(&copies[side].minus(&flagged)))
    };
    for &op in slice.ops() {
        for edge in flow.edges_from(op) {
            let Some(copies) = edges.get(&key(edge)) else { continue };
            if !sourced(state_at_source(ctx, available, edge), copies) {
                return fail(edge.from, format!("a copy on an edge from a stale source ({copies:?})"));
            }
        }
    }
    for &op in slice.ops() {
        let state = available.before(ctx, op);
        let Some(have) = state.pair() else { continue };
        if let Some(copies) = ops.get(&op) {
            if !sourced(state, copies) {
                return fail(
                    op,
                    format!(
                        "a copy before an op from a stale source ({copies:?}, source has {:?}, flagged {:?})",
                        state.pair(),
                        state.flagged()
                    ),
                );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_sets_the_flag_again_to_the_side_its_other_flagged_elements_are_current_on() {
        // Elements 0..15 are lost on the host along edge 1 (a kernel wrote them); 15..64 are
        // flagged there (an inner loop that may not have run left them on the host or not) and
        // current on the device. Edge 0 has everything on both sides.
        let all = RangeSet::of(0..64);
        let reached: Vec<Reached> = vec![
            (0, [all.clone(), all.clone()], RangeSet::empty()),
            (1, [RangeSet::empty(), all.clone()], RangeSet::of(15..64)),
        ];
        let optional = RangeSet::of(0..15);
        let sets = flag_sets(&reached, &optional, &all, |_| None, HOST).expect("both edges can set the flag");
        // Edge 1 sets it to the device, where 15..64 are current: they stay the flag's.
        let sides: Vec<(usize, usize)> = sets.iter().map(|(i, side, _)| (*i, *side)).collect();
        assert_eq!(sides, vec![(0, HOST), (1, DEVICE)]);
        // Where the flagged elements are current on no side the edge could set, it cannot.
        let reached: Vec<Reached> = vec![
            (0, [all.clone(), all.clone()], RangeSet::empty()),
            (1, [RangeSet::empty(), RangeSet::of(0..15)], RangeSet::of(15..64)),
        ];
        assert!(flag_sets(&reached, &optional, &all, |_| None, HOST).is_none());
    }
}
