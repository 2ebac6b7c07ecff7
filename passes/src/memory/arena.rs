//! Which buffers of a host function can share one arena, and where each goes in it.
//!
//! A buffer is planned when it is made by a `buffer.alloc` of static shape in the function and
//! only the device sees it: every value that may be it ([`BufferRoots`]) is only passed to
//! dispatches, carried by structured control flow or `arith.select`, or released. One that the
//! host reads or writes, a transfer moves, a call or a return passes on, or that is not released
//! where its data dies (see [`super::lifetimes`]) keeps its own allocation, as does one that may
//! have two buffers live at once (an allocation in a loop whose previous buffer is still live
//! when it runs again).
//!
//! Two planned buffers interfere when values that may be them are live at one point
//! ([`SparseLiveness`]: before and after each op, so the buffers one dispatch reads and writes always
//! interfere). [`super::packing`] gives the offsets.

use super::intervals::BlockIntervals;
use super::lifetimes::Decision;
use super::packing::{pack, Packing};
use super::sparse_liveness::SparseLiveness;
use crate::transfers::aliases::{allocates, is_buffer, BufferRoots, Roots};
use crate::transfers::dispatch::{element_bytes, element_count};
use hat_dialects::arith_views::SelectOp;
use hat_ir::interfaces::{LaunchOpInterface, RegionBranchOpInterface};
use hat_ir::{Context, Op, Value};
use rustc_hash::{FxHashMap, FxHashSet};

/// The alignment of offsets in an arena: the largest `minStorageBufferOffsetAlignment` Vulkan
/// allows, so that a plan is valid on every device.
pub const ALIGNMENT: u64 = hat_dialects::buffer::ARENA_ALIGNMENT;

/// The arena plan of one function.
#[derive(Clone, Debug)]
pub struct ArenaPlan {
    /// The planned buffers: the `buffer.alloc` and its size in bytes, in program order.
    pub buffers: Vec<(Op, u64)>,
    /// Their offsets and the arena's size.
    pub packing: Packing,
    /// The bytes they would take with no reuse (each its own allocation).
    pub naive: u64,
    /// The allocations left out, and why.
    pub left_out: Vec<(Op, &'static str)>,
    /// Where some planned buffer's size is known only at run time: the plan is made when the
    /// call runs, by a `buffer.arena` placed before this op (of the function's entry block),
    /// over `live_sets`; `buffers` then holds every planned buffer with size 0 where dynamic,
    /// and `packing` is empty.
    pub run_time: Option<RunTimePlan>,
}

/// A plan the call makes when it runs (see [`ArenaPlan::run_time`]).
#[derive(Clone, Debug)]
pub struct RunTimePlan {
    /// The op of the entry block the `buffer.arena` goes before.
    pub before: Op,
    /// The groups of planned buffers (indices into [`ArenaPlan::buffers`]) live together.
    pub live_sets: Vec<Vec<usize>>,
}

/// Plans the arena of `function`, given the release decisions of [`super::lifetimes::decide`]
/// and `roots` ([`BufferRoots::with_calls`] of `function`, which releases do not change).
pub fn plan(ctx: &Context, function: Op, roots: &BufferRoots, decisions: &[Decision]) -> ArenaPlan {
    let ops = ctx.walk(function);
    let allocs: Vec<Op> =
        ops.iter().copied().filter(|&op| ctx.results(op).any(|r| is_buffer(ctx, r) && allocates(ctx, op, r))).collect();
    let site_of: FxHashMap<Value, usize> = allocs.iter().enumerate().map(|(i, &op)| (ctx.result(op, 0), i)).collect();
    // The sites each value may be.
    let sites = |value: Value| -> Vec<usize> {
        if !is_buffer(ctx, value) {
            return Vec::new();
        }
        match roots.roots_ref(value) {
            Roots::Known(set) => set.iter().filter_map(|r| site_of.get(r).copied()).collect(),
            Roots::Unknown => (0..allocs.len()).collect(),
        }
    };
    let mut excluded: Vec<Option<&'static str>> = vec![None; allocs.len()];
    fn exclude(excluded: &mut [Option<&'static str>], site: usize, why: &'static str) {
        excluded[site].get_or_insert(why);
    }
    // A size known only at run time must be known where the call starts planning: computed in
    // the function's entry block, not in a loop or a branch.
    let entry = ctx.regions(function).first().and_then(|&r| ctx.region_blocks(r).first().copied());
    for (site, &op) in allocs.iter().enumerate() {
        let result = ctx.result(op, 0);
        if element_bytes(ctx, result).is_none() {
            exclude(&mut excluded, site, "its element size is not known");
        } else if element_count(ctx, result).is_none()
            && !ctx.operands(op).iter().all(|&size| entry.is_some() && ctx.value_block(size) == entry)
        {
            exclude(&mut excluded, site, "its size is computed inside a loop or a branch");
        }
    }
    // Every use of a value that may be a site must be one that keeps the buffer on the device.
    for &op in &ops {
        for &operand in ctx.operands(op) {
            if !is_buffer(ctx, operand) {
                continue;
            }
            if let Some(why) = host_visible_use(ctx, op) {
                for site in sites(operand) {
                    exclude(&mut excluded, site, why);
                }
            }
        }
    }
    for decision in decisions.iter().filter(|d| d.release.is_none()) {
        for site in sites(decision.value) {
            exclude(&mut excluded, site, "a value that may be it is not released where its data dies");
        }
    }
    // Every buffer value that may be a site still planned (nothing knows an unknown one: it may
    // be any, which leaves no site planned).
    let parameters = super::lifetimes::parameters_of(ctx, function);
    let liveness = SparseLiveness::new(ctx, function, &|v| super::lifetimes::may_be_owned(ctx, roots, &parameters, v));
    let mut holders: Vec<(Value, Vec<usize>)> = Vec::new();
    for &op in &ops {
        let arguments = ctx.regions(op).iter().flat_map(|&r| ctx.region_blocks(r).to_vec());
        let values = arguments.flat_map(|b| ctx.block_arguments(b).to_vec()).chain(ctx.results(op));
        for value in values.filter(|&v| is_buffer(ctx, v)) {
            let of: Vec<usize> = sites(value).into_iter().filter(|&s| excluded[s].is_none()).collect();
            if !of.is_empty() {
                holders.push((value, of));
            }
        }
    }
    // Per block: the interval of each holder live in it; a site is live where a holder is. The
    // live sets are taken where an interval starts (where the most are live at once).
    let mut live_sets: Vec<Vec<usize>> = Vec::new();
    let mut self_interfering = FxHashSet::default();
    for block in ops.iter().flat_map(|&op| ctx.regions(op).iter().flat_map(|&r| ctx.region_blocks(r).to_vec())) {
        let intervals = BlockIntervals::new(ctx, &liveness, block);
        let live: Vec<(usize, usize, &[usize], Value)> = holders
            .iter()
            .filter_map(|(value, of)| {
                // A buffer made here needs its storage from its first use on; another value
                // that may be a buffer holds it from its definition.
                let interval = if site_of.contains_key(value) {
                    intervals.storage_interval(ctx, *value)
                } else {
                    intervals.interval(ctx, *value)
                };
                interval.map(|(a, b)| (a, b, of.as_slice(), *value))
            })
            .collect();
        // A clique of intervals holds the start of its latest one; one that starts before this
        // block (live through it) is live where the block's op starts in the block around it,
        // whose own starts took it. So only the starts of what the block defines are new.
        for &(start, _, _, value) in &live {
            if ctx.value_block(value) != Some(block) {
                continue;
            }
            let mut set: Vec<usize> = live
                .iter()
                .filter(|&&(a, b, _, _)| a <= start && start <= b)
                .flat_map(|(_, _, of, _)| of.iter().copied())
                .collect();
            set.sort_unstable();
            set.dedup();
            live_sets.push(set);
        }
        // A site allocated here while a buffer it made before may still be live (just before
        // the allocation) has two buffers live at once.
        for (index, &op) in intervals.ops.iter().enumerate() {
            let Some(&site) = ctx.results(op).next().and_then(|r| site_of.get(&r)) else { continue };
            let result = ctx.result(op, 0);
            if live.iter().any(|&(a, b, of, value)| value != result && a <= index && index <= b && of.contains(&site)) {
                self_interfering.insert(site);
            }
        }
    }
    for site in self_interfering {
        exclude(&mut excluded, site, "two of its buffers may be live at once");
    }
    // A plan made at run time goes before the first planned allocation (its op in the entry
    // block), after the sizes: a buffer whose size comes later is left out, which may move the
    // first planned allocation on.
    let dynamic = |site: usize| element_count(ctx, ctx.result(allocs[site], 0)).is_none();
    let mut before = None;
    if let Some(entry) = entry {
        let liveness_position = |op: Op| liveness.position(op).unwrap_or(0);
        loop {
            let planned = (0..allocs.len()).filter(|&s| excluded[s].is_none());
            let first =
                planned.filter_map(|s| ctx.ancestor_in_block(entry, allocs[s])).min_by_key(|&op| liveness_position(op));
            let Some(first) = first else { break };
            let at = liveness_position(first);
            let late: Vec<usize> = (0..allocs.len())
                .filter(|&s| excluded[s].is_none() && dynamic(s))
                .filter(|&s| {
                    ctx.operands(allocs[s])
                        .iter()
                        .filter_map(|&size| ctx.defining_op(size))
                        .any(|op| liveness_position(op) >= at)
                })
                .collect();
            if late.is_empty() {
                before = Some(first);
                break;
            }
            for site in late {
                exclude(&mut excluded, site, "its size is computed after the first planned buffer is allocated");
            }
        }
    }
    let planned: Vec<usize> = (0..allocs.len()).filter(|&s| excluded[s].is_none()).collect();
    let index: FxHashMap<usize, usize> = planned.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    let size = |site: usize| {
        let result = ctx.result(allocs[site], 0);
        element_count(ctx, result).zip(element_bytes(ctx, result)).map_or(0, |(n, b)| n * b)
    };
    let sizes: Vec<u64> = planned.iter().map(|&s| size(s)).collect();
    let mut sets: Vec<Vec<usize>> = live_sets
        .into_iter()
        .map(|set| set.into_iter().filter_map(|s| index.get(&s).copied()).collect::<Vec<_>>())
        .filter(|set| !set.is_empty())
        .collect();
    sets.sort();
    sets.dedup();
    let buffers = planned.iter().map(|&s| (allocs[s], size(s))).collect();
    let left_out = (0..allocs.len()).filter_map(|s| excluded[s].map(|why| (allocs[s], why))).collect();
    if let Some(before) = before.filter(|_| planned.iter().any(|&s| dynamic(s))) {
        let packing = Packing { offsets: Vec::new(), size: 0, lower_bound: 0, order: super::packing::Order::Size };
        return ArenaPlan {
            buffers,
            packing,
            naive: 0,
            left_out,
            run_time: Some(RunTimePlan { before, live_sets: sets }),
        };
    }
    let packing = pack(&sizes, &sets, ALIGNMENT);
    ArenaPlan { buffers, packing, naive: sizes.iter().sum(), left_out, run_time: None }
}

/// Why passing a buffer to `op` lets the host see it, or takes it out of the function; `None`
/// for a dispatch, a release, a select and structured control flow.
fn host_visible_use(ctx: &Context, op: Op) -> Option<&'static str> {
    let name = ctx.name_str(op);
    if ctx.interface::<dyn LaunchOpInterface>(op).is_some()
        || SelectOp::wrap(ctx, op).is_some()
        || matches!(name, "buffer.release" | "buffer.dealloc" | "scf.yield" | "scf.condition")
        || ctx.interface::<dyn RegionBranchOpInterface>(op).is_some()
    {
        return None;
    }
    Some(match name {
        "compute.return" => "the function returns it",
        "compute.call" => "a call passes it",
        "buffer.to_device" | "buffer.from_device" => "a transfer moves it",
        _ => "the host uses it",
    })
}
