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
//! Only roots something inside the joining op accesses can arrive different along its edges: the
//! joins of a root are those of the slice that touches it, whose ops enclose its accesses.

use super::super::ranges::RangeSet;
use super::analyses::{anticipation_at, Anticipated};
use super::facts::{Pair, DEVICE, HOST};
use hat_ir::analysis::dataflow::{DenseSolution, Edge, FlowGraph, FlowSlice, Target};
use hat_ir::{Context, Op};
use rustc_hash::FxHashMap;

/// One join.
pub struct Join {
    /// Where control joins.
    pub target: Target,
    /// The edges into it.
    pub edges: Vec<Edge>,
    /// Whether it is a loop's header (the start of a region entered again).
    pub header: bool,
    /// What is observed next from here (may-anticipation), when some path reaches an exit.
    live: Option<Pair>,
    /// What every path from here needs before anything kills it (must-anticipation).
    pub needed: Option<Pair>,
}

/// Every join of one root's slice of a function.
pub struct Merges {
    /// The joins.
    pub joins: Vec<Join>,
}

impl Merges {
    /// The joins of `slice` (of `flow`), with what `anticipated` says is observed next from each.
    pub fn new(
        ctx: &Context,
        function: Op,
        flow: &FlowGraph,
        slice: &FlowSlice,
        anticipated: &DenseSolution<Anticipated>,
    ) -> Merges {
        let mut by_target: FxHashMap<Target, Vec<Edge>> = FxHashMap::default();
        let mut order = Vec::new();
        for &op in slice.ops() {
            for edge in flow.edges_from(op) {
                let list = by_target.entry(edge.to).or_default();
                if list.is_empty() {
                    order.push(edge.to);
                }
                list.push(edge.clone());
            }
        }
        let mut joins = Vec::new();
        for target in order {
            let edges = by_target.remove(&target).unwrap_or_default();
            if edges.len() < 2 {
                continue;
            }
            let (owner, header) = match target {
                Target::Block(block) => (ctx.block_parent(block).and_then(|r| ctx.region_parent(r)), true),
                Target::After(op) => (Some(op), false),
            };
            // Blocks of the function's own body join no region op.
            if owner.is_none_or(|o| o == function || !slice.contains(o)) {
                continue;
            }
            let live = anticipation_at(ctx, anticipated, target);
            joins.push(Join {
                target,
                edges,
                header,
                live: live.may.pair().cloned(),
                needed: live.must.pair().cloned(),
            });
        }
        Merges { joins }
    }

    /// What may be observed next from join `j` on either side (nothing where no path reaches an
    /// exit).
    pub fn live(&self, j: usize) -> RangeSet {
        self.joins[j].live.as_ref().map_or_else(RangeSet::empty, |l| l[HOST].union(&l[DEVICE]))
    }

    /// What may be observed next from join `j` on `side`.
    pub fn live_on(&self, j: usize, side: usize) -> RangeSet {
        self.joins[j].live.as_ref().map_or_else(RangeSet::empty, |l| l[side].clone())
    }

    /// The elements join `j` completes, per side, arriving with `have` (the meet of its edges)
    /// and `flagged` (what the root's flag says where it is, on every edge); `prefer(both)`: the
    /// side for elements both sides may observe next.
    pub fn completed(
        &self,
        j: usize,
        have: &[RangeSet; 2],
        flagged: &RangeSet,
        prefer: impl FnOnce(&RangeSet) -> Option<usize>,
    ) -> Pair {
        let join = &self.joins[j];
        let Some(wanted) = &join.live else { return [RangeSet::empty(), RangeSet::empty()] };
        let lost = wanted[HOST].union(&wanted[DEVICE]).minus(&have[HOST]).minus(&have[DEVICE]).minus(flagged);
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
