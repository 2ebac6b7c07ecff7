//! The `static` strategy of `insert-transfers` (also named `lcm`): transfers placed by lazy code
//! motion over hat-ir's dataflow framework. A copy of elements of a buffer to one side is an
//! "expression" in the sense of partial redundancy elimination: needed where an observer reads
//! that side, killed where the other side is written, made available by a copy or by a complete
//! write.
//!
//! The steps, each in its own file:
//! 1. [`roots`]: which buffers the plan follows (its *tracked roots*); the others are kept
//!    current on the host, the `kernel` strategy's way;
//! 2. [`access`]: what each op needs of and does to each tracked root, per side;
//! 3. [`analyses`]: availability (forward, must), anticipation (backward, must and may) and lazy
//!    code motion's `later` (forward, must), on hat-ir's dense solvers, over [`facts`] (a pair of
//!    element sets). Roots are independent, so each is solved on its own over the slice of the
//!    function that touches it (hat-ir's `FlowSlice`: its accesses, the region ops around them
//!    and their terminators): the cost is the sum of the roots' slices, not the roots times the
//!    function;
//! 4. [`joins`] and [`placement`]: lazy code motion's insertions on the edges into joins and
//!    before the ops that need them, then a check of the whole plan;
//! 5. [`state`]: a copy where the paths that reach it disagree on whether its side is current
//!    is made when a run-time bit says the side is stale;
//! 6. [`emit`]: the copies written into the function, on the edges of structured control flow.
//!
//! `docs/passes/insert-transfers.md` goes through a worked example.

pub mod access;
pub mod analyses;
pub mod emit;
pub mod facts;
pub mod joins;
pub mod placement;
pub mod roots;
pub mod state;

use super::aliases::BufferRoots;
use super::dispatch::Kernels;
use super::emit::{Anchor, Direction};
use super::host_effects::{parameters, Summaries};
use super::insert::describe_need;
use access::{whole, Accesses, Classifier, DynamicAccess, RootAccesses};
use analyses::{not_read_there_next, written_again, Anticipation, Availability, EdgeCopies, Later, OpCopies};
use emit::{direction, place_of_edge, Copy, Guard, Order, Place, States};
use facts::{Pair, DEVICE, HOST};
use hat_ir::analysis::dataflow::{
    solve_dense_backward_on, solve_dense_forward_on, DenseSolution, FlowGraph, FlowSlice, ProgramOrder,
};
use hat_ir::interfaces::CallableOpInterface;
use hat_ir::verifier::symbol_name;
use hat_ir::{Context, Location, Op};
use rayon::prelude::*;
use roots::Tracked;
use rustc_hash::FxHashSet;
use state::Bit;
use std::rc::Rc;

/// A construct the planner does not follow; the pass gives the function the `kernel` strategy.
#[derive(Clone, Debug)]
pub struct Unsupported {
    /// What it is.
    pub what: String,
    /// Where.
    pub location: Location,
}

/// The plan of one function: its copies, in no particular order ([`emit::emit`] orders them).
pub struct Plan {
    /// The function.
    pub function: Op,
    /// The copies.
    pub copies: Vec<Copy>,
    /// The run-time state of the roots that have some.
    pub states: States,
    /// What planning it took.
    pub work: Work,
}

/// What planning a function took: the pass reports it as statistics (`--mlir-pass-statistics`),
/// so that the cost of a program can be read without a profiler.
#[derive(Debug, Default)]
pub struct Work {
    /// Roots planned (a root planned again after an access at a run-time index widened counts again).
    pub roots: Counter,
    /// Ops of their slices, summed.
    pub slice_ops: Counter,
    /// Run-time bits kept where paths disagree, summed over the roots.
    pub state_bits: Counter,
    /// Dataflow solves over a slice, summed.
    pub solves: Counter,
}

/// A count the roots, planned on several threads, add to.
#[derive(Debug, Default)]
pub struct Counter(std::sync::atomic::AtomicU64);

impl Counter {
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The count.
    pub fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Plans `function`. `aliased[i]`: whether a call site may pass parameter `i` a buffer it also
/// passes for another.
pub fn plan(
    ctx: &Context,
    function: Op,
    roots: &BufferRoots,
    kernels: &Kernels,
    summaries: &Summaries,
    aliased: &[bool],
    reasons: bool,
) -> Result<Plan, Unsupported> {
    let tracked = Tracked::of(ctx, function, roots, aliased)?;
    let body = ctx
        .interface::<dyn CallableOpInterface>(function)
        .and_then(|c| c.body(ctx, function))
        .and_then(|r| ctx.region_blocks(r).first().copied())
        .ok_or_else(|| Unsupported { what: "a function without body".into(), location: ctx.location(function) })?;
    let flow = FlowGraph::intraprocedural(ctx, function);
    let order = ProgramOrder::new(ctx, function);
    let mut whole_accesses: FxHashSet<Op> = FxHashSet::default();
    let mut classified = {
        let classifier =
            Classifier { ctx, function, roots, tracked: &tracked, kernels, summaries, whole_accesses: &whole_accesses };
        classifier.classify_all()
    };
    let describer = Describer { ctx, function, kernels, tracked: &tracked, reasons };
    let positions = tracked.roots.iter().any(|&r| ctx.defining_op(r).is_some()).then(|| Positions::of(ctx, function));
    let mut copies = Vec::new();
    let mut states = States::default();
    let work = Work::default();
    let entries: Vec<(hat_ir::Block, Pair)> =
        (0..tracked.len()).map(|root| (body, entry_pair(ctx, function, &tracked, root))).collect();
    // Roots are independent: each is planned on its own (on as many threads as there are).
    let first_plans: Vec<Result<RootPlan, Unsupported>> = (0..tracked.len())
        .into_par_iter()
        .map(|root| plan_root(ctx, function, &flow, &order, classified.of_root(root), &entries[root], &work))
        .collect();
    // The roots whose accesses changed after their first plan.
    let mut changed: FxHashSet<usize> = FxHashSet::default();
    for (root, first_plan) in first_plans.into_iter().enumerate() {
        let entry = &entries[root];
        // Accesses at run-time indices copy one element where the other side is current
        // everywhere; where it is not, they need the whole buffer, and the root is solved again
        // (so is a root whose accesses changed since its first plan, when another root's
        // widened).
        let mut first = (!changed.contains(&root)).then_some(first_plan);
        let planned = loop {
            let planned = match first.take() {
                Some(planned) => planned?,
                None => plan_root(ctx, function, &flow, &order, classified.of_root(root), entry, &work)?,
            };
            if planned.widened.is_empty() {
                break planned;
            }
            let widened: Vec<Op> = planned.widened.clone();
            whole_accesses.extend(widened.iter().copied());
            let classifier = Classifier {
                ctx,
                function,
                roots,
                tracked: &tracked,
                kernels,
                summaries,
                whole_accesses: &whole_accesses,
            };
            for op in widened {
                changed.extend(classified.reclassify(&classifier, op));
            }
        };
        let buffer = tracked.roots[root];
        let state::Guarded { on_edges, at_ops, bits, events } = &planned.guarded;
        if !bits.is_empty() {
            work.state_bits.add(bits.len() as u64);
            states.insert(buffer, bits.clone());
        }
        // Each part of a copy, then the bits it clears (inside its guard).
        let mut push = |place: Place,
                        location,
                        (pair, guard, clears): (&Pair, Option<Bit>, &[Bit]),
                        reason: &dyn Fn(usize) -> Option<String>| {
            for side in [HOST, DEVICE] {
                if pair[side].is_empty() {
                    continue;
                }
                let reason = reason(side).map(|r| describer.guarded(r, guard));
                copies.push(Copy::of(place, side, buffer, pair[side].clone(), guard, location, reason));
                for &bit in clears.iter().filter(|bit| bit.side == side) {
                    copies.push(Copy::state(place, buffer, bit, false, guard, location));
                }
            }
        };
        for part in on_edges {
            let edge = placement::edge_of(&flow, &part.at).expect("a copy on an edge of the graph");
            let place = place_of_edge(ctx, &flow, edge)?;
            if positions.as_ref().is_some_and(|p| !p.in_scope(ctx, buffer, place.anchor)) {
                return Err(Unsupported {
                    what: "a copy out of its buffer's scope".into(),
                    location: ctx.location(edge.from),
                });
            }
            let part_of = (&part.pair, part.guard, part.clears.as_slice());
            push(place, ctx.location(edge.from), part_of, &|side| describer.on_edge(place, root, side));
        }
        for part in at_ops {
            let op = part.at;
            let place = Place { anchor: Anchor::Before(op), order: Order::AtOp, guard: None };
            // What a dispatch needs only because it may write part of it (not what it reads).
            let merge = classified.of(op).tracked.iter().find(|a| a.root == root).map(|a| a.merge.clone());
            let reason = |side: usize| {
                let merged = merge.as_ref().is_some_and(|m| m[side].contains(&part.pair[side]));
                describer.at_op(op, root, side, merged)
            };
            push(place, ctx.location(op), (&part.pair, part.guard, part.clears.as_slice()), &reason);
        }
        for (op, bit, stale) in events {
            let Some(next) = ctx.next_op(*op) else { continue };
            let place = Place { anchor: Anchor::Before(next), order: Order::Arriving, guard: None };
            copies.push(Copy::state(place, buffer, *bit, *stale, None, ctx.location(*op)));
        }
        for (op, read) in &planned.element_copies {
            // Before a read, from the other side; after a write, to it.
            let (anchor, order, toward) = match (read.writes, ctx.next_op(*op)) {
                (false, _) => (Anchor::Before(*op), Order::AtOp, read.side),
                (true, Some(next)) => (Anchor::Before(next), Order::Arriving, 1 - read.side),
                (true, None) => continue,
            };
            copies.push(Copy {
                place: Place { anchor, order, guard: None },
                direction: direction(toward),
                buffer: read.buffer,
                ranges: super::ranges::RangeSet::empty(),
                element: Some(read.index),
                when_stale: None,
                unless_stale: None,
                sets: None,
                location: ctx.location(*op),
                reason: describer.element(*op, read),
            });
        }
    }
    direct_copies(ctx, &classified, &describer, &mut copies);
    Ok(Plan { function, copies: emit::merge_guarded_with_plain(emit::merge_opposite_guards(copies)), states, work })
}

/// The plan of one root.
struct RootPlan {
    /// Copies on edges and before ops (lazy code motion's), with their run-time state.
    guarded: state::Guarded,
    /// Accesses at run-time indices served by a copy of their element (before a read, after a
    /// write).
    element_copies: Vec<(Op, DynamicAccess)>,
    /// Accesses at run-time indices that need the whole buffer (the root is planned again).
    widened: Vec<Op>,
}

/// Plans one root over the slice of the function that touches it.
fn plan_root(
    ctx: &Context,
    function: Op,
    flow: &FlowGraph,
    order: &ProgramOrder,
    mut accesses: RootAccesses,
    entry: &(hat_ir::Block, Pair),
    work: &Work,
) -> Result<RootPlan, Unsupported> {
    let slice = Rc::new(FlowSlice::new(ctx, flow, order, accesses.touching()));
    work.roots.add(1);
    work.slice_ops.add(slice.ops().len() as u64);
    let anticipated = loop {
        let anticipated = solve_dense_backward_on(ctx, flow, &slice, &Anticipation { accesses: &accesses });
        work.solves.add(1);
        let live = |op: Op| {
            let may = anticipated.after(ctx, op).may.pair()?;
            Some(may[HOST].union(&may[DEVICE]))
        };
        if !accesses.drop_dead_merges(live) {
            break anticipated;
        }
    };
    let joins = joins::joins(ctx, function, flow, &slice);
    let no_copies = EdgeCopies::default();
    let solve_available = |on_edges: &EdgeCopies, at_ops: Option<&OpCopies>| {
        work.solves.add(1);
        let availability = Availability { accesses: &accesses, entry: entry.clone(), copies: on_edges, before: at_ops };
        solve_dense_forward_on(ctx, flow, &slice, &availability)
    };
    let available = solve_available(&no_copies, None);
    let mut element_copies = Vec::new();
    let mut widened = Vec::new();
    // Per side written at run-time indices (solved only for roots that have such writes):
    // whether, on some path, the next thing to touch the root is not a read on the other side;
    // whether such a write may come again before the other side is touched.
    let written = |side: usize| accesses.dynamic().iter().any(|(_, d)| d.writes && d.side == side);
    let not_read_next: [Option<DenseSolution<bool>>; 2] = [HOST, DEVICE].map(|side| {
        written(1 - side).then(|| {
            work.solves.add(1);
            solve_dense_backward_on(ctx, flow, &slice, &not_read_there_next(&accesses, side))
        })
    });
    let again: [Option<DenseSolution<bool>>; 2] = [HOST, DEVICE].map(|side| {
        written(side).then(|| {
            work.solves.add(1);
            solve_dense_backward_on(ctx, flow, &slice, &written_again(&accesses, side))
        })
    });
    for (op, read) in accesses.dynamic() {
        let Some(pair) = available.before(ctx, *op).pair() else { continue };
        let all = whole(ctx, read.buffer);
        // Every path from here needs the whole buffer on this side anyway: one copy of it here
        // serves the access and those needs (the element alone would be a second copy).
        // (A need, not a copy: lazy code motion places it, out of a loop where nothing in the
        // loop changes the buffer.)
        let needed_anyway = anticipated.after(ctx, *op).must.pair().is_some_and(|must| must[read.side].contains(&all));
        if read.writes {
            // A write where the other side is current everywhere and this one is not, and the
            // whole buffer is not needed on this side later anyway: the element goes to the
            // other side right after it (which stays current) where `kernel`'s copies to the
            // other side pay for it, which this plan does not make (the other side stays
            // current): either on every path the next thing to touch the root is a read of it
            // there (one write-through at most before each such read: another write first is
            // another thing touching the root), or every path reads all of it there before
            // anything overwrites it and no such write comes again before the other side is
            // touched. Otherwise (a loop of stores, say, or a write nothing reads there) it is a
            // write of the range the index may reach, which needs that range current first (a
            // copy of what this side lacks, which the other side's writes made stale), hoisted
            // where it can be.
            let next_read = not_read_next[1 - read.side].as_ref().is_some_and(|n| !*n.after(ctx, *op));
            let all_read_there =
                anticipated.after(ctx, *op).must.pair().is_some_and(|must| must[1 - read.side].contains(&all))
                    && !again[read.side].as_ref().is_some_and(|w| *w.after(ctx, *op));
            let read_there_next = next_read || all_read_there;
            if pair[1 - read.side].contains(&all)
                && !pair[read.side].contains(&all)
                && !needed_anyway
                && read_there_next
            {
                element_copies.push((*op, read.clone()));
            } else {
                widened.push(*op);
            }
            continue;
        }
        if pair[read.side].contains(&all) {
            continue;
        }
        // The element alone only where no path from here looks at what this side lacks again:
        // a later copy of it would bring the element a second time (which one was copied is
        // known at run time only); there one copy of all of it here serves both.
        let stale = all.minus(&pair[read.side]);
        let looked_at_later =
            anticipated.after(ctx, *op).may.pair().is_some_and(|may| !may[read.side].intersect(&stale).is_empty());
        if pair[1 - read.side].contains(&all) && !needed_anyway && !looked_at_later {
            element_copies.push((*op, read.clone()));
        } else {
            widened.push(*op);
        }
    }
    if !widened.is_empty() {
        let guarded = state::Guarded { on_edges: Vec::new(), at_ops: Vec::new(), bits: Vec::new(), events: Vec::new() };
        return Ok(RootPlan { guarded, element_copies, widened });
    }
    let later = Later::new(&accesses, flow, &available, &anticipated, entry.clone());
    let delayed = solve_dense_forward_on(ctx, flow, &slice, &later);
    work.solves.add(1);
    let on_edges = placement::inserts(ctx, &joins, &later, &delayed);
    let at_ops =
        placement::coalesced_at_ops(ctx, &anticipated, &available, placement::at_ops(ctx, &accesses, &delayed));

    // The whole plan, checked. A copy of what is current already where it is made is dropped.
    let solve_final = |on_edges: &EdgeCopies, at_ops: &OpCopies| {
        let available = solve_available(on_edges, Some(at_ops));
        let checked = placement::check(ctx, flow, &slice, &accesses, &available, on_edges, at_ops);
        (available, checked)
    };
    let (mut final_available, mut checked) = solve_final(&on_edges, &at_ops);
    let (needed_edges, needed_ops) = placement::without_redundant(ctx, flow, &final_available, &on_edges, &at_ops);
    let (on_edges, at_ops) = if needed_edges != on_edges || needed_ops != at_ops {
        (final_available, checked) = solve_final(&needed_edges, &needed_ops);
        (needed_edges, needed_ops)
    } else {
        (on_edges, at_ops)
    };
    checked.map_err(|failure| Unsupported {
        what: format!("a plan that fails its check: {}", failure.what),
        location: ctx.location(failure.op),
    })?;

    // Where the paths that reach a copy disagree on its side, it is made when the bit says stale.
    let guarded = state::guard(ctx, flow, &slice, &accesses, &entry.1, &on_edges, &at_ops, &final_available, work);
    Ok(RootPlan { guarded, element_copies, widened })
}

/// Writes a plan into its function; `[to_device, from_device]` counts.
pub fn emit_plan(ctx: &mut Context, plan: &Plan) -> [u64; 2] {
    emit::emit(ctx, plan.function, &plan.copies, &plan.states)
}

/// At the entry: a parameter current on the host only; a buffer not made yet counts as current
/// on both sides (no buffer of its exists, and the op that makes one makes both copies).
fn entry_pair(ctx: &Context, function: Op, tracked: &Tracked, root: usize) -> Pair {
    let buffer = tracked.roots[root];
    if parameters(ctx, function).contains(&buffer) {
        return [whole(ctx, buffer), super::ranges::RangeSet::empty()];
    }
    let all = super::ranges::RangeSet::whole();
    [all.clone(), all]
}

/// Where each op of a function is in its walk (pre-order): an op after another in one block
/// comes later.
struct Positions(rustc_hash::FxHashMap<Op, u32>);

impl Positions {
    fn of(ctx: &Context, function: Op) -> Positions {
        Positions(ctx.walk(function).into_iter().enumerate().map(|(i, op)| (op, i as u32)).collect())
    }

    /// Whether `buffer` can be named at `anchor` (a parameter anywhere; a result after its op,
    /// in its block or nested deeper).
    fn in_scope(&self, ctx: &Context, buffer: hat_ir::Value, anchor: Anchor) -> bool {
        let Some(defining) = ctx.defining_op(buffer) else { return true };
        let Some(block) = ctx.parent_block(defining) else { return false };
        // The anchor's op (an op at the end of a block comes after the block's other ops).
        let at = match anchor {
            Anchor::Before(op) => Some(op),
            Anchor::End(b) => ctx.last_op(b),
        };
        let Some(op) = at.and_then(|op| ctx.ancestor_in_block(block, op)) else { return false };
        let position = |o: Op| self.0.get(&o).copied();
        match (position(op), position(defining)) {
            (Some(here), Some(there)) => {
                here > there || (here == there && matches!(anchor, Anchor::End(_)) && op != defining)
            }
            _ => false,
        }
    }
}

/// The `kernel` strategy's copies of the buffers the plan does not track.
fn direct_copies(ctx: &Context, accesses: &Accesses, describer: &Describer<'_>, copies: &mut Vec<Copy>) {
    for (op, directs) in accesses.direct() {
        for direct in directs {
            let anchor = if direct.before {
                Anchor::Before(op)
            } else {
                match ctx.next_op(op) {
                    Some(next) => Anchor::Before(next),
                    None => continue,
                }
            };
            let order = if direct.before { Order::AtOp } else { Order::Arriving };
            copies.push(Copy {
                place: Place { anchor, order, guard: None },
                direction: direct.direction,
                buffer: direct.value,
                ranges: direct.ranges.clone(),
                element: None,
                when_stale: None,
                unless_stale: None,
                sets: None,
                location: ctx.location(op),
                reason: describer.direct(op, direct),
            });
        }
    }
}

/// The `reason` of each copy (only when asked for).
struct Describer<'a> {
    ctx: &'a Context,
    function: Op,
    kernels: &'a Kernels,
    tracked: &'a Tracked,
    reasons: bool,
}

impl Describer<'_> {
    fn name(&self, root: usize) -> String {
        let value = self.tracked.roots[root];
        self.ctx.argument_name(value).map_or_else(|| "a buffer".to_string(), |n| format!("%{n}"))
    }

    fn at(&self, op: Op) -> String {
        self.ctx.sources.describe(self.ctx.location(op))
    }

    fn kernel(&self, op: Op) -> String {
        self.kernels.callee(self.ctx, op).and_then(|k| symbol_name(self.ctx, k)).unwrap_or("?").to_string()
    }

    /// `merged`: the elements are needed only because the op may write part of them.
    fn at_op(&self, op: Op, root: usize, side: usize, merged: bool) -> Option<String> {
        if !self.reasons {
            return None;
        }
        let ctx = self.ctx;
        let what = if ctx.interface::<dyn hat_ir::interfaces::LaunchOpInterface>(op).is_some() {
            if merged {
                format!("partly written by @{}: the rest must be current", self.kernel(op))
            } else {
                format!("read by @{}", self.kernel(op))
            }
        } else if ctx.parent_op(op) == Some(self.function) && ctx.next_op(op).is_none() {
            let name = symbol_name(ctx, self.function).unwrap_or("?");
            format!("the caller sees {} when @{name} returns", self.name(root))
        } else {
            let place = if side == HOST { "the host" } else { "the device" };
            format!("read by {place} ('{}')", ctx.name_str(op))
        };
        Some(format!("{what} at {}", self.at(op)))
    }

    fn on_edge(&self, place: Place, root: usize, side: usize) -> Option<String> {
        if !self.reasons {
            return None;
        }
        let side_name = if side == HOST { "host" } else { "device" };
        let edge = match place.guard {
            Some(Guard::Ran(_)) => "when the loop ran",
            Some(Guard::NotRan(_)) => "when the loop did not run",
            Some(Guard::NotLast(_)) => "on the loop's back edge",
            Some(Guard::NotTaken(_)) => "when the branch was not taken",
            None if place.order == Order::Leaving => "on the edge leaving here",
            None => "on the edge arriving here",
        };
        Some(format!("every path from here needs {} on the {side_name} ({edge}; lazy code motion)", self.name(root)))
    }

    /// The reason of the copy of the one element an access at a run-time index touches.
    fn element(&self, op: Op, access: &DynamicAccess) -> Option<String> {
        if access.writes {
            let side = if access.side == HOST { "host" } else { "device" };
            let other = if access.side == HOST { "device" } else { "host" };
            return self.reasons.then(|| {
                format!(
                    "written by the {side} at a run-time index at {}; the {other} copy is current elsewhere, so the element follows it there",
                    self.at(op)
                )
            });
        }
        self.at_op(op, access.root, access.side, false).map(|r| format!("{r} (the element at a run-time index)"))
    }

    /// `reason`, said of a copy made when the root's bit says its side is stale.
    fn guarded(&self, reason: String, when_stale: Option<Bit>) -> String {
        match when_stale {
            Some(bit) => {
                let side = if bit.side == HOST { "host" } else { "device" };
                format!("{reason}; made when the {side} copy is stale (the paths that reach here disagree)")
            }
            None => reason,
        }
    }

    fn direct(&self, op: Op, direct: &access::Direct) -> Option<String> {
        if !self.reasons {
            return None;
        }
        let kernel = self.kernel(op);
        let arg = super::dispatch::DispatchArg {
            value: direct.value,
            param: 0,
            reads: direct.reads,
            writes: true,
            needs: direct.ranges.clone(),
            read: direct.ranges.clone(),
            written: direct.ranges.clone(),
            surely_written: super::ranges::RangeSet::empty(),
            writes_all: false,
        };
        Some(match direct.direction {
            Direction::ToDevice => format!("{} (a buffer the plan does not track)", describe_need(&arg, &kernel)),
            Direction::FromDevice => {
                format!("written by @{kernel}; the host copy is kept current (a buffer the plan does not track)")
            }
        })
    }
}

#[cfg(test)]
mod tests;
