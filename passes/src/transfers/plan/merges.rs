//! Merges: where paths join (after an `scf.if`, at a loop's header, after a loop) an element may
//! be current on the host on one path and on the device on another. No copy after the join could
//! be right on both paths, so if the element is still observed (`may` anticipation), the planner
//! completes one side on the incoming edges that lack it ([`super::placement::repairs`]).
//!
//! The side: the one the next observers want when they agree; where both may observe next, the
//! side whose copies cost less on the edges that lack it, each edge weighed by the loops around
//! it (at a loop's header: the side its back edge brings, the entry edge copying once; after a
//! branch, the side fewer paths lack); an edge current on neither side yet counts as current on
//! the host; on a tie, the device at a header and the host elsewhere.
//!
//! Only roots something inside the joining op accesses can arrive different along its edges, so
//! a join looks at those roots only.

use super::super::ranges::RangeSet;
use super::access::Accesses;
use super::analyses::Anticipated;
use super::facts::{Facts, DEVICE, HOST};
use hat_ir::analysis::dataflow::{DenseSolution, Edge, FlowGraph, Target};
use hat_ir::{Context, Op};
use rustc_hash::FxHashMap;

/// One join.
pub struct Join {
    /// Where control joins.
    pub target: Target,
    /// The edges into it.
    pub edges: Vec<Edge>,
    /// The roots accessed inside the op whose edges join here.
    pub roots: Vec<usize>,
    /// Whether it is a loop's header (the start of a region entered again).
    pub header: bool,
    /// What is observed next from here (may-anticipation), when some path reaches an exit.
    live: Option<Facts>,
    /// What every path from here needs before anything kills it (must-anticipation).
    pub needed: Option<Facts>,
}

/// Every join of a function.
pub struct Merges {
    /// The joins.
    pub joins: Vec<Join>,
}

impl Merges {
    /// The joins of `flow`, with what `anticipated` says is observed next from each.
    pub fn new(
        ctx: &Context,
        function: Op,
        flow: &FlowGraph,
        accesses: &Accesses,
        anticipated: &DenseSolution<Anticipated>,
    ) -> Merges {
        // The roots accessed under each op (each access counted at each enclosing op).
        let mut inside: FxHashMap<Op, Vec<usize>> = FxHashMap::default();
        for op in ctx.walk(function) {
            let access = accesses.of(op);
            let roots: Vec<usize> =
                access.tracked.iter().map(|a| a.root).chain(access.dynamic.as_ref().map(|d| d.root)).collect();
            if roots.is_empty() {
                continue;
            }
            let mut parent = ctx.parent_op(op);
            while let Some(p) = parent.filter(|&p| p != function) {
                inside.entry(p).or_default().extend(roots.iter().copied());
                parent = ctx.parent_op(p);
            }
        }
        for list in inside.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        let mut by_target: FxHashMap<Target, Vec<Edge>> = FxHashMap::default();
        let mut order = Vec::new();
        for edge in flow.edges() {
            let list = by_target.entry(edge.to).or_default();
            if list.is_empty() {
                order.push(edge.to);
            }
            list.push(edge.clone());
        }
        let mut joins = Vec::new();
        for target in order {
            let edges = by_target.remove(&target).unwrap_or_default();
            if edges.len() < 2 {
                continue;
            }
            let (owner, live, header) = match target {
                Target::Block(block) => {
                    let owner = ctx.block_parent(block).and_then(|r| ctx.region_parent(r));
                    (owner, anticipated.block_start(ctx, block), true)
                }
                Target::After(op) => (Some(op), anticipated.after(ctx, op), false),
            };
            let Some(owner) = owner else { continue };
            let roots = inside.get(&owner).cloned().unwrap_or_default();
            joins.push(Join {
                target,
                edges,
                roots,
                header,
                live: live.may.facts().cloned(),
                needed: live.must.facts().cloned(),
            });
        }
        Merges { joins }
    }

    /// The elements join `j` completes, per side, of root `root` arriving with `have` (the meet of
    /// its edges); `prefer(both)`: the side for elements both sides may observe next.
    pub fn completed(
        &self,
        j: usize,
        root: usize,
        have: &[RangeSet; 2],
        prefer: impl FnOnce(&RangeSet) -> Option<usize>,
    ) -> [RangeSet; 2] {
        let join = &self.joins[j];
        let Some(live) = &join.live else { return [RangeSet::empty(), RangeSet::empty()] };
        let wanted = live.get(root);
        let lost = wanted[HOST].union(&wanted[DEVICE]).minus(&have[HOST]).minus(&have[DEVICE]);
        if lost.is_empty() {
            return [RangeSet::empty(), RangeSet::empty()];
        }
        let device_only = lost.intersect(&wanted[DEVICE]).minus(&wanted[HOST]);
        let host_only = lost.intersect(&wanted[HOST]).minus(&wanted[DEVICE]);
        let both = lost.minus(&device_only).minus(&host_only);
        let side = prefer(&both).unwrap_or(if join.header { DEVICE } else { HOST });
        if side == DEVICE {
            [host_only, device_only.union(&both)]
        } else {
            [host_only.union(&both), device_only]
        }
    }
}
