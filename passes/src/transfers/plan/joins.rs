//! Joins: where paths of one root's slice meet (after an `scf.if`, at a loop's header, after a
//! loop). Lazy code motion inserts copies on the edges into them (`later(e) − laterin(target)`).
//!
//! Paths that meet may disagree on what is current: an element current on the host on one path
//! and on the device on another is current on neither side on every path, and on each side on
//! some path. Nothing is decided at the join for it: a copy that a later observer needs is placed
//! by lazy code motion like any other — on the incoming edges that lack it where it is needed on
//! every path from the join, else later — and made, where the paths it runs on disagree, only
//! when the root's run-time state says its side is stale ([`super::state`]).
//!
//! Only roots something inside the joining op accesses can arrive different along its edges: the
//! joins of a root are those of the slice that touches it, whose ops enclose its accesses.

use hat_ir::analysis::dataflow::{Edge, FlowGraph, FlowSlice, Target};
use hat_ir::{Context, Op};
use rustc_hash::FxHashMap;

/// One join.
pub struct Join {
    /// Where control joins.
    pub target: Target,
    /// The edges into it.
    pub edges: Vec<Edge>,
}

/// Every join of `slice` (of `flow`, a graph of `function`), in the order the slice reaches them.
pub fn joins(ctx: &Context, function: Op, flow: &FlowGraph, slice: &FlowSlice) -> Vec<Join> {
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
    let mut out = Vec::new();
    for target in order {
        let edges = by_target.remove(&target).unwrap_or_default();
        if edges.len() < 2 {
            continue;
        }
        let owner = match target {
            Target::Block(block) => ctx.block_parent(block).and_then(|r| ctx.region_parent(r)),
            Target::After(op) => Some(op),
        };
        // Blocks of the function's own body join no region op.
        if owner.is_none_or(|o| o == function || !slice.contains(o)) {
            continue;
        }
        out.push(Join { target, edges });
    }
    out
}
