//! Emission: the planned copies written into the function, apart from the analysis.
//!
//! A copy planned on an edge goes where that edge is, in structured control flow:
//! - an edge into a block or past an op that nothing else enters: at the block's start, or
//!   right after the op;
//! - a loop's entry edge: before the loop, guarded by "the loop runs at least once" (unless
//!   its bounds prove it); a `scf.while` is always entered: unguarded;
//! - a back edge: at the end of the body — guarded by "another iteration follows" for a
//!   counted loop (`iv + step < ub`);
//! - a branch's exit edge: at the end of that branch; an `scf.if`'s skip edge (no `else`):
//!   after it, guarded by the condition being false;
//! - a counted loop's exit edge: after it, guarded by "it ran"; its zero-trip edge: after it,
//!   guarded by "it did not run" — one copy that both want is made unguarded.
//!
//! At one place, copies come in the order control reaches them: those of edges arriving there
//! first, then those of edges leaving, then those just before the op.

use super::super::emit::{
    compare, constant, guard, index_constant, insert, load, state_cell, store, transfer, Anchor, Direction,
};
use super::super::ranges::RangeSet;
use super::state::Bit;
use super::Unsupported;
use hat_dialects::semantics::IntPredicate;
use hat_ir::analysis::dataflow::{Edge, EdgeKind, FlowGraph, Target};
use hat_ir::interfaces::{constant_integer, LoopLikeOpInterface};
use hat_ir::{Block, Context, Location, Op, OperationState, Value};
use rustc_hash::FxHashMap;

/// A run-time condition on a copy.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Guard {
    /// The counted loop ran at least once.
    Ran(Op),
    /// It did not run.
    NotRan(Op),
    /// Another iteration of the counted loop follows this one.
    NotLast(Op),
    /// The `scf.if`'s condition is false.
    NotTaken(Op),
}

/// When, at one place, a copy is made.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Order {
    /// On an edge arriving at the place.
    Arriving,
    /// On an edge leaving from it.
    Leaving,
    /// Just before the op there.
    AtOp,
}

/// Where a copy goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    /// The anchor.
    pub anchor: Anchor,
    /// Its order among the copies there.
    pub order: Order,
    /// A guard, or none.
    pub guard: Option<Guard>,
}

fn single_incoming(flow: &FlowGraph, target: Target) -> bool {
    flow.edges_into(target).count() == 1
}

fn may_skip(flow: &FlowGraph, looped: Op) -> bool {
    flow.edges_from(looped).any(|e| e.to == Target::After(looped))
}

/// Where a copy on `edge` goes.
pub fn place_of_edge(ctx: &Context, flow: &FlowGraph, edge: &Edge) -> Result<Place, Unsupported> {
    let unsupported = || Unsupported {
        what: format!("a copy on an edge out of '{}'", ctx.name_str(edge.from)),
        location: ctx.location(edge.from),
    };
    let counted = |op: Op| ctx.interface::<dyn LoopLikeOpInterface>(op).is_some();
    let end_of = |op: Op| ctx.parent_block(op).map(Anchor::End).ok_or_else(unsupported);
    match (edge.kind, edge.to) {
        (_, Target::Block(block)) if single_incoming(flow, edge.to) => {
            let first = ctx.first_op(block).ok_or_else(unsupported)?;
            Ok(Place { anchor: Anchor::Before(first), order: Order::Arriving, guard: None })
        }
        (_, Target::After(op)) if single_incoming(flow, edge.to) => {
            let next = ctx.next_op(op).ok_or_else(unsupported)?;
            Ok(Place { anchor: Anchor::Before(next), order: Order::Arriving, guard: None })
        }
        (EdgeKind::Enter, Target::Block(_)) => {
            let looped = edge.from;
            let guard = (counted(looped) && may_skip(flow, looped)).then_some(Guard::Ran(looped));
            if !counted(looped) && flow.edges_from(looped).count() != 1 {
                return Err(unsupported());
            }
            Ok(Place { anchor: Anchor::Before(looped), order: Order::Leaving, guard })
        }
        (EdgeKind::Exit, Target::Block(_)) => {
            let owner = ctx.parent_op(edge.from).ok_or_else(unsupported)?;
            let guard = if flow.edges_from(edge.from).count() == 1 {
                None
            } else if counted(owner) {
                Some(Guard::NotLast(owner))
            } else {
                return Err(unsupported());
            };
            Ok(Place { anchor: end_of(edge.from)?, order: Order::Leaving, guard })
        }
        (EdgeKind::Enter, Target::After(op)) => {
            let next = ctx.next_op(op).ok_or_else(unsupported)?;
            let guard = if counted(op) {
                Guard::NotRan(op)
            } else if ctx.name_str(op) == "scf.if" {
                Guard::NotTaken(op)
            } else {
                return Err(unsupported());
            };
            Ok(Place { anchor: Anchor::Before(next), order: Order::Arriving, guard: Some(guard) })
        }
        (EdgeKind::Exit, Target::After(op)) => {
            if flow.edges_from(edge.from).count() == 1 {
                return Ok(Place { anchor: end_of(edge.from)?, order: Order::Leaving, guard: None });
            }
            if !counted(op) {
                return Err(unsupported());
            }
            let next = ctx.next_op(op).ok_or_else(unsupported)?;
            let guard = may_skip(flow, op).then_some(Guard::Ran(op));
            Ok(Place { anchor: Anchor::Before(next), order: Order::Arriving, guard })
        }
        _ => Err(unsupported()),
    }
}

/// One planned copy.
#[derive(Clone, Debug)]
pub struct Copy {
    /// Where.
    pub place: Place,
    /// Which way.
    pub direction: Direction,
    /// The buffer value copied (a tracked root, or the value an untracked access names).
    pub buffer: Value,
    /// The elements.
    pub ranges: RangeSet,
    /// Instead of `ranges`: the one element at this index (a one-dimensional buffer).
    pub element: Option<Value>,
    /// Made only when the root's run-time bit says this side is stale: a copy where the paths
    /// that reach it disagree ([`super::state`]).
    pub when_stale: Option<Bit>,
    /// Made only when the bit says the side is current: the part a copy guarded by the bit
    /// makes too ([`merge_guarded_with_plain`]).
    pub unless_stale: Option<Bit>,
    /// Instead of a copy: the root's bit set (stale) or cleared.
    pub sets: Option<(Bit, bool)>,
    /// The source location.
    pub location: Location,
    /// Why (when reasons are kept).
    pub reason: Option<String>,
}

impl Copy {
    /// A copy of `ranges` of a tracked root toward `side` (`when_stale`: made only when the
    /// root's bit says so).
    pub fn of(
        place: Place,
        side: usize,
        buffer: Value,
        ranges: RangeSet,
        when_stale: Option<Bit>,
        location: Location,
        reason: Option<String>,
    ) -> Copy {
        Copy {
            place,
            direction: direction(side),
            buffer,
            ranges,
            element: None,
            when_stale,
            unless_stale: None,
            sets: None,
            location,
            reason,
        }
    }

    /// Not a copy: `bit` of `buffer`'s state set to `stale` at `place` (made when `when_stale`
    /// holds, where it follows a copy guarded by it).
    pub fn state(
        place: Place,
        buffer: Value,
        bit: Bit,
        stale: bool,
        when_stale: Option<Bit>,
        location: Location,
    ) -> Copy {
        Copy {
            place,
            direction: direction(bit.side),
            buffer,
            ranges: RangeSet::empty(),
            element: None,
            when_stale,
            unless_stale: None,
            sets: Some((bit, stale)),
            location,
            reason: None,
        }
    }
}

/// The direction of a copy toward `side`.
pub fn direction(side: usize) -> Direction {
    if side == super::facts::DEVICE {
        Direction::ToDevice
    } else {
        Direction::FromDevice
    }
}

/// Joins the copies at one anchor that a guard and its opposite both make (a loop that ran
/// and one that did not) into one unguarded copy.
pub fn merge_opposite_guards(copies: Vec<Copy>) -> Vec<Copy> {
    let mut out: Vec<Copy> = Vec::with_capacity(copies.len());
    let mut by_key: FxHashMap<(Anchor, Value, Direction, Option<Bit>), Vec<usize>> = FxHashMap::default();
    for (i, copy) in copies.iter().enumerate() {
        if matches!(copy.place.guard, Some(Guard::Ran(_) | Guard::NotRan(_))) && copy.sets.is_none() {
            by_key.entry((copy.place.anchor, copy.buffer, copy.direction, copy.when_stale)).or_default().push(i);
        }
    }
    let mut copies: Vec<Option<Copy>> = copies.into_iter().map(Some).collect();
    for indices in by_key.values() {
        let (ran, not): (Vec<usize>, Vec<usize>) = indices
            .iter()
            .partition(|&&i| matches!(copies[i].as_ref().map(|c| c.place.guard), Some(Some(Guard::Ran(_)))));
        let union = |list: &[usize], copies: &[Option<Copy>]| {
            list.iter().fold(RangeSet::empty(), |acc, &i| acc.union(&copies[i].as_ref().expect("kept").ranges))
        };
        let common = union(&ran, &copies).intersect(&union(&not, &copies));
        if common.is_empty() {
            continue;
        }
        let mut both = copies[ran[0]].clone().expect("kept");
        both.place.guard = None;
        both.ranges = common.clone();
        for &i in ran.iter().chain(&not) {
            let copy = copies[i].as_mut().expect("kept");
            copy.ranges = copy.ranges.minus(&common);
        }
        out.push(both);
    }
    out.extend(
        copies.into_iter().flatten().filter(|c| !c.ranges.is_empty() || c.element.is_some() || c.sets.is_some()),
    );
    out
}

/// The run-time state of the roots that have some: per root, its bits, each with its value at
/// the function's entry (stale or not).
pub type States = FxHashMap<Value, Vec<(Bit, bool)>>;

/// Where a copy made always and one made when a bit says stale meet (same place, buffer and
/// direction) and their union is fewer ranges than the two: the union when the bit says stale,
/// the plain part alone when it does not. The same elements move on every run, in fewer copies
/// where the bit is set (`[0, 5)` and `[6, 64)` always and `[5, 6)` when stale become `[0, 64)`
/// or the two parts).
pub fn merge_guarded_with_plain(mut copies: Vec<Copy>) -> Vec<Copy> {
    type Key = (Anchor, Order, Option<Guard>, Value, Direction);
    let copy_of_ranges = |c: &Copy| c.element.is_none() && c.sets.is_none() && !c.ranges.is_empty();
    let key = |c: &Copy| -> Key { (c.place.anchor, c.place.order, c.place.guard, c.buffer, c.direction) };
    let mut plain: FxHashMap<Key, usize> = FxHashMap::default();
    for (i, copy) in copies.iter().enumerate() {
        if copy_of_ranges(copy) && copy.when_stale.is_none() && copy.unless_stale.is_none() {
            plain.entry(key(copy)).or_insert(i);
        }
    }
    for i in 0..copies.len() {
        let Some(bit) = copies[i].when_stale.filter(|_| copy_of_ranges(&copies[i])) else { continue };
        let Some(&j) = plain.get(&key(&copies[i])) else { continue };
        let (guarded, always) = (&copies[i].ranges, &copies[j].ranges);
        let union = always.union(guarded);
        if union.ranges().count() >= always.ranges().count() + guarded.ranges().count() {
            continue;
        }
        copies[i].ranges = union;
        copies[j].unless_stale = Some(bit);
        plain.remove(&key(&copies[i]));
    }
    copies
}

/// Writes `copies` into `function`; returns how many transfers went each way (`[to_device,
/// from_device]`). A root with run-time state gets an `i1` buffer of its bits at the start of
/// the function (1: that side of that atom is stale), set where the plan says and read by the
/// copies guarded by it.
pub fn emit(ctx: &mut Context, function: Op, copies: &[Copy], states: &States) -> [u64; 2] {
    let mut counts = [0u64; 2];
    let mut order: Vec<&Copy> = copies.iter().collect();
    // At one place: in the order control reaches them, and a bit set after the copies there
    // (which may read the bit it overwrites).
    order.sort_by_key(|c| (c.place.order, c.place.guard, c.sets.is_some()));
    let mut guards: FxHashMap<(Anchor, Guard), Block> = FxHashMap::default();
    let mut stale_guards: FxHashMap<(Anchor, Value, Bit, bool), Block> = FxHashMap::default();
    let mut cells: FxHashMap<Value, (Value, FxHashMap<Bit, i64>)> = FxHashMap::default();
    for copy in order {
        let mut anchor = match copy.place.guard {
            None => copy.place.anchor,
            Some(g) => {
                let block = match guards.get(&(copy.place.anchor, g)) {
                    Some(&block) => block,
                    None => {
                        let condition = condition(ctx, copy.place.anchor, g, copy.location);
                        let block = guard(ctx, copy.place.anchor, condition, copy.location);
                        guards.insert((copy.place.anchor, g), block);
                        block
                    }
                };
                Anchor::End(block)
            }
        };
        let on_bit = copy.when_stale.map(|bit| (bit, true)).or(copy.unless_stale.map(|bit| (bit, false)));
        if let Some((bit, stale)) = on_bit {
            let key = (anchor, copy.buffer, bit, stale);
            let block = match stale_guards.get(&key) {
                Some(&block) => block,
                None => {
                    let (cell, slot) = slot_of(ctx, function, &mut cells, states, copy.buffer, bit, copy.location);
                    let index = index_constant(ctx, anchor, slot, copy.location);
                    let mut condition = load(ctx, anchor, cell, index, copy.location);
                    if !stale {
                        let i1 = ctx.integer_type(1);
                        let no = constant(ctx, anchor, 0, i1, copy.location);
                        condition = compare(ctx, anchor, IntPredicate::Eq, condition, no, copy.location);
                    }
                    let block = guard(ctx, anchor, condition, copy.location);
                    stale_guards.insert(key, block);
                    block
                }
            };
            anchor = Anchor::End(block);
        }
        if let Some((bit, stale)) = copy.sets {
            let (cell, slot) = slot_of(ctx, function, &mut cells, states, copy.buffer, bit, copy.location);
            let index = index_constant(ctx, anchor, slot, copy.location);
            let i1 = ctx.integer_type(1);
            let value = constant(ctx, anchor, i64::from(stale), i1, copy.location);
            store(ctx, anchor, value, cell, index, copy.location);
            continue;
        }
        if let Some(index) = copy.element {
            let one = index_constant(ctx, anchor, 1, copy.location);
            let op = transfer(ctx, anchor, copy.direction, copy.buffer, None, copy.location, copy.reason.as_deref());
            ctx.set_operands(op, &[copy.buffer, index, one]);
            counts[usize::from(copy.direction == Direction::FromDevice)] += 1;
            continue;
        }
        for range in copy.ranges.ranges() {
            transfer(ctx, anchor, copy.direction, copy.buffer, Some(range), copy.location, copy.reason.as_deref());
            counts[usize::from(copy.direction == Direction::FromDevice)] += 1;
        }
    }
    counts
}

/// The state buffer of `buffer` and the slot of `bit` in it; the buffer is made at the start of
/// `function`, with every bit at its entry value, on first use.
fn slot_of(
    ctx: &mut Context,
    function: Op,
    cells: &mut FxHashMap<Value, (Value, FxHashMap<Bit, i64>)>,
    states: &States,
    buffer: Value,
    bit: Bit,
    location: Location,
) -> (Value, i64) {
    let (cell, slots) = cells.entry(buffer).or_insert_with(|| {
        let first = ctx
            .regions(function)
            .first()
            .and_then(|&r| ctx.region_blocks(r).first().copied())
            .and_then(|b| ctx.first_op(b))
            .expect("a planned function has a body");
        let bits = states.get(&buffer).map_or(&[][..], Vec::as_slice);
        let anchor = Anchor::Before(first);
        let cell = state_cell(ctx, anchor, bits.len().max(1) as i64, location);
        let i1 = ctx.integer_type(1);
        let mut slots = FxHashMap::default();
        for (slot, &(b, stale)) in bits.iter().enumerate() {
            let index = index_constant(ctx, anchor, slot as i64, location);
            let value = constant(ctx, anchor, i64::from(stale), i1, location);
            store(ctx, anchor, value, cell, index, location);
            slots.insert(b, slot as i64);
        }
        (cell, slots)
    });
    (*cell, *slots.get(&bit).expect("every bit a copy reads or sets is among its root's state"))
}

/// The `i1` value of `g`, computed at `anchor`.
fn condition(ctx: &mut Context, anchor: Anchor, g: Guard, location: Location) -> Value {
    match g {
        Guard::Ran(looped) | Guard::NotRan(looped) => {
            let looping = ctx.interface::<dyn LoopLikeOpInterface>(looped).expect("a counted loop");
            let lower = looping.lower_bound(ctx, looped).expect("a counted loop has bounds");
            let upper = looping.upper_bound(ctx, looped).expect("a counted loop has bounds");
            let predicate = if matches!(g, Guard::Ran(_)) { IntPredicate::Slt } else { IntPredicate::Sge };
            compare(ctx, anchor, predicate, lower, upper, location)
        }
        Guard::NotLast(looped) => {
            let looping = ctx.interface::<dyn LoopLikeOpInterface>(looped).expect("a counted loop");
            let iv = looping.induction_variable(ctx, looped).expect("a counted loop has an induction variable");
            let step = looping.step(ctx, looped).expect("a counted loop has a step");
            let upper = looping.upper_bound(ctx, looped).expect("a counted loop has bounds");
            let ty = ctx.value_type(iv);
            let mut state = OperationState::new(ctx.op_name("arith.addi"), location);
            state.operands.extend([iv, step]);
            state.result_types.push(ty);
            let add = ctx.create_op(state);
            insert(ctx, anchor, add);
            let next = ctx.result(add, 0);
            let _ = constant_integer;
            compare(ctx, anchor, IntPredicate::Slt, next, upper, location)
        }
        Guard::NotTaken(branch) => {
            let taken = ctx.operand(branch, 0);
            let i1 = ctx.integer_type(1);
            let no = constant(ctx, anchor, 0, i1, location);
            compare(ctx, anchor, IntPredicate::Eq, taken, no, location)
        }
    }
}
