//! The `lcm` strategy of `insert-transfers`: transfers placed by lazy code motion over hat-ir's
//! dataflow framework. A copy of elements of a buffer to one side is an "expression" in the
//! sense of partial redundancy elimination: needed where an observer reads that side, killed
//! where the other side is written, made available by a copy or by a complete write.
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
//! 4. [`merges`]: where paths join and disagree, the side completed on the incoming edges;
//! 5. [`placement`]: those copies, then lazy code motion's insertions, then a check of the
//!    whole plan;
//! 6. [`emit`]: the copies written into the function, on the edges of structured control flow.
//!
//! `docs/passes/insert-transfers-lcm.md` goes through a worked example.

pub mod access;
pub mod analyses;
pub mod emit;
pub mod facts;
pub mod merges;
pub mod placement;
pub mod roots;
pub mod settle;

use super::aliases::BufferRoots;
use super::dispatch::Kernels;
use super::emit::{Anchor, Direction};
use super::host_effects::{parameters, Summaries};
use super::insert::describe_need;
use access::{whole, Accesses, Classifier, DynamicAccess, RootAccesses};
use analyses::{Anticipation, Availability, EdgeCopies, EdgeKey, FlagSets, Later, OpCopies};
use emit::{direction, place_of_edge, Copy, Guard, Order, Place};
use facts::{Pair, DEVICE, HOST};
use hat_ir::analysis::dataflow::{solve_dense_backward_on, solve_dense_forward_on, FlowGraph, FlowSlice, ProgramOrder};
use hat_ir::interfaces::CallableOpInterface;
use hat_ir::verifier::symbol_name;
use hat_ir::{Context, Location, Op};
use merges::Merges;
use roots::Tracked;
use rustc_hash::FxHashSet;
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
    /// What planning it took.
    pub work: Work,
}

/// What planning a function took: the pass reports it as statistics (`--mlir-pass-statistics`),
/// so that the cost of a program can be read without a profiler.
#[derive(Clone, Debug, Default)]
pub struct Work {
    /// Roots planned (a root planned again after an access at a run-time index widened counts again).
    pub roots: std::cell::Cell<u64>,
    /// Ops of their slices, summed.
    pub slice_ops: std::cell::Cell<u64>,
    /// Rounds of repairs and flags at joins, summed over the roots.
    pub settle_rounds: std::cell::Cell<u64>,
    /// Dataflow solves over a slice, summed.
    pub solves: std::cell::Cell<u64>,
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
    let work = Work::default();
    for root in 0..tracked.len() {
        let entry = (body, entry_pair(ctx, function, &tracked, root));
        // Accesses at run-time indices copy one element where the other side is current
        // everywhere; where it is not, they need the whole buffer, and the root is solved again.
        let planned = loop {
            let accesses = classified.of_root(root);
            let widened = {
                let planned = plan_root(ctx, function, &flow, &order, accesses, &entry, &work)?;
                let widened: Vec<Op> = planned.widened.clone();
                if widened.is_empty() {
                    break planned;
                }
                widened
            };
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
                classified.reclassify(&classifier, op);
            }
        };
        let buffer = tracked.roots[root];
        for (edge_key, pair) in &planned.on_edges {
            let edge = placement::edge_of(&flow, edge_key).expect("a copy on an edge of the graph");
            let place = place_of_edge(ctx, &flow, edge)?;
            let repaired = planned.repairs.contains_key(edge_key) && !planned.lcm_edges.contains(edge_key);
            if positions.as_ref().is_some_and(|p| !p.in_scope(ctx, buffer, place.anchor)) {
                return Err(Unsupported {
                    what: "a copy out of its buffer's scope".into(),
                    location: ctx.location(edge.from),
                });
            }
            let flagged = planned.flagged_on_edges.get(edge_key);
            for (side, ranges, when_flag) in split_flagged(pair, flagged) {
                let reason = describer.on_edge(place, root, side, repaired).map(|r| describer.flagged(r, when_flag));
                copies.push(Copy::of(place, side, buffer, ranges, when_flag, ctx.location(edge.from), reason));
            }
        }
        // A flag no copy reads is not kept.
        let flag_read = !planned.flagged_on_edges.is_empty() || !planned.flagged_at_ops.is_empty();
        for (edge_key, &side) in planned.flags.iter().filter(|_| flag_read) {
            let edge = placement::edge_of(&flow, edge_key).expect("a flag set on an edge of the graph");
            let place = place_of_edge(ctx, &flow, edge)?;
            copies.push(Copy {
                place,
                direction: direction(side),
                buffer,
                ranges: super::ranges::RangeSet::empty(),
                element: None,
                when_flag: None,
                sets_flag: Some(side),
                location: ctx.location(edge.from),
                reason: None,
            });
        }
        for (&op, pair) in &planned.at_ops {
            for (side, ranges, when_flag) in split_flagged(pair, planned.flagged_at_ops.get(&op)) {
                let place = Place { anchor: Anchor::Before(op), order: Order::AtOp, guard: None };
                let reason = describer.at_op(op, root, side).map(|r| describer.flagged(r, when_flag));
                copies.push(Copy::of(place, side, buffer, ranges, when_flag, ctx.location(op), reason));
            }
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
                when_flag: None,
                sets_flag: None,
                location: ctx.location(*op),
                reason: describer.element(*op, read),
            });
        }
    }
    direct_copies(ctx, &classified, &describer, &mut copies);
    Ok(Plan { function, copies: emit::merge_flagged_with_plain(emit::merge_opposite_guards(copies)), work })
}

/// The plan of one root.
struct RootPlan {
    /// Copies on edges (the repairs and lazy code motion's).
    on_edges: EdgeCopies,
    /// The repairs among them.
    repairs: EdgeCopies,
    /// The edges lazy code motion put copies on.
    lcm_edges: Vec<EdgeKey>,
    /// Copies just before ops.
    at_ops: OpCopies,
    /// The flagged part of the copies on edges (guarded by the flag).
    flagged_on_edges: EdgeCopies,
    /// The flagged part of the copies before ops.
    flagged_at_ops: OpCopies,
    /// Where the root's flag is set.
    flags: FlagSets,
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
    work.roots.update(|n| n + 1);
    work.slice_ops.update(|n| n + slice.ops().len() as u64);
    let anticipated = loop {
        let anticipated = solve_dense_backward_on(ctx, flow, &slice, &Anticipation { accesses: &accesses });
        work.solves.update(|n| n + 1);
        let live = |op: Op| {
            let may = anticipated.after(ctx, op).may.pair()?;
            Some(may[HOST].union(&may[DEVICE]))
        };
        if !accesses.drop_dead_merges(live) {
            break anticipated;
        }
    };
    let merges = Merges::new(ctx, function, flow, &slice, &anticipated);
    let (available, repairs, flags) = settle::settle_merges(ctx, flow, &slice, &accesses, entry, &merges, work)
        .ok_or_else(|| Unsupported { what: "merges that do not settle".into(), location: ctx.location(function) })?;
    let mut element_copies = Vec::new();
    let mut widened = Vec::new();
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
            // other side right after it (which stays current); otherwise it is a write of the
            // range the index may reach, which needs that range current first.
            if pair[1 - read.side].contains(&all) && !pair[read.side].contains(&all) && !needed_anyway {
                element_copies.push((*op, read.clone()));
            } else {
                widened.push(*op);
            }
            continue;
        }
        if pair[read.side].contains(&all) {
            continue;
        }
        if pair[1 - read.side].contains(&all) && !needed_anyway {
            element_copies.push((*op, read.clone()));
        } else {
            widened.push(*op);
        }
    }
    if !widened.is_empty() {
        return Ok(RootPlan {
            on_edges: EdgeCopies::default(),
            repairs,
            lcm_edges: Vec::new(),
            at_ops: OpCopies::default(),
            flagged_on_edges: EdgeCopies::default(),
            flagged_at_ops: OpCopies::default(),
            flags,
            element_copies,
            widened,
        });
    }
    let later = Later::new(&accesses, flow, &available, &anticipated, &repairs, entry.clone());
    let delayed = solve_dense_forward_on(ctx, flow, &slice, &later);
    work.solves.update(|n| n + 1);
    let mut on_edges = placement::inserts(ctx, &merges, &later, &delayed);
    let at_ops =
        placement::coalesced_at_ops(ctx, &anticipated, &available, placement::at_ops(ctx, &accesses, &delayed));
    let lcm_edges: Vec<_> = on_edges.keys().copied().collect();
    placement::merge_copies(&mut on_edges, repairs.clone());

    // The whole plan, checked.
    let solve_final = |on_edges: &EdgeCopies, at_ops: &OpCopies| {
        let availability = Availability {
            accesses: &accesses,
            entry: entry.clone(),
            copies: on_edges,
            flags: &flags,
            before: Some(at_ops),
        };
        let available = solve_dense_forward_on(ctx, flow, &slice, &availability);
        work.solves.update(|n| n + 1);
        let checked = placement::check(ctx, flow, &slice, &accesses, &available, on_edges, at_ops);
        (available, checked)
    };
    // A copy of what is current already where it is made is dropped.
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
    // The copies of flagged elements are made when the flag names their source.
    let flagged_part = |pair: &Pair, flagged: super::ranges::RangeSet| {
        [pair[HOST].intersect(&flagged), pair[DEVICE].intersect(&flagged)]
    };
    let mut flagged_on_edges = EdgeCopies::default();
    for (edge_key, pair) in &on_edges {
        let Some(edge) = placement::edge_of(flow, edge_key) else { continue };
        let part = flagged_part(pair, placement::flagged_at_source(ctx, &final_available, edge));
        if !facts::is_nothing(&part) {
            flagged_on_edges.insert(*edge_key, part);
        }
    }
    let mut flagged_at_ops = OpCopies::default();
    for (&op, pair) in &at_ops {
        let part = flagged_part(pair, final_available.before(ctx, op).flagged());
        if !facts::is_nothing(&part) {
            flagged_at_ops.insert(op, part);
        }
    }
    Ok(RootPlan {
        on_edges,
        repairs,
        lcm_edges,
        at_ops,
        flagged_on_edges,
        flagged_at_ops,
        flags,
        element_copies,
        widened,
    })
}

/// The parts of a root's copies to each side: what the source holds (unguarded), and what the
/// flag holds (made when the flag names the source side).
fn split_flagged(pair: &Pair, flagged: Option<&Pair>) -> Vec<(usize, super::ranges::RangeSet, Option<usize>)> {
    let mut out = Vec::new();
    for side in [HOST, DEVICE] {
        let guarded = flagged.map_or_else(super::ranges::RangeSet::empty, |f| f[side].clone());
        let plain = pair[side].minus(&guarded);
        if !plain.is_empty() {
            out.push((side, plain, None));
        }
        if !guarded.is_empty() {
            out.push((side, guarded, Some(1 - side)));
        }
    }
    out
}

/// Writes a plan into its function; `[to_device, from_device]` counts.
pub fn emit_plan(ctx: &mut Context, plan: &Plan) -> [u64; 2] {
    emit::emit(ctx, plan.function, &plan.copies)
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
        let mut at = match anchor {
            Anchor::Before(op) => Some(op),
            Anchor::End(b) => ctx.last_op(b),
        };
        while let Some(op) = at {
            if ctx.parent_block(op) == Some(block) {
                let position = |o: Op| self.0.get(&o).copied();
                return match (position(op), position(defining)) {
                    (Some(here), Some(there)) => {
                        here > there || (here == there && matches!(anchor, Anchor::End(_)) && op != defining)
                    }
                    _ => false,
                };
            }
            at = ctx.parent_op(op);
        }
        false
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
                when_flag: None,
                sets_flag: None,
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

    fn at_op(&self, op: Op, root: usize, side: usize) -> Option<String> {
        if !self.reasons {
            return None;
        }
        let ctx = self.ctx;
        let what = if ctx.interface::<dyn hat_ir::interfaces::LaunchOpInterface>(op).is_some() {
            format!("read by @{} (or partly written: the rest must be current)", self.kernel(op))
        } else if ctx.parent_op(op) == Some(self.function) && ctx.next_op(op).is_none() {
            let name = symbol_name(ctx, self.function).unwrap_or("?");
            format!("the caller sees {} when @{name} returns", self.name(root))
        } else {
            let place = if side == HOST { "the host" } else { "the device" };
            format!("read by {place} ('{}')", ctx.name_str(op))
        };
        Some(format!("{what} at {}", self.at(op)))
    }

    fn on_edge(&self, place: Place, root: usize, side: usize, repaired: bool) -> Option<String> {
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
        Some(if repaired {
            format!(
                "paths join with {} current on different sides; its next observer wants the {side_name} copy ({edge})",
                self.name(root)
            )
        } else {
            format!("every path from here needs {} on the {side_name} ({edge}; lazy code motion)", self.name(root))
        })
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
        self.at_op(op, access.root, access.side).map(|r| format!("{r} (the element at a run-time index)"))
    }

    /// `reason`, said of a copy guarded by the flag.
    fn flagged(&self, reason: String, when_flag: Option<usize>) -> String {
        match when_flag {
            Some(side) => {
                let side = if side == HOST { "host" } else { "device" };
                format!("{reason}; made when the buffer's flag says the {side} copy is current (paths joined with it current on different sides)")
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
