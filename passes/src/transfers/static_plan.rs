//! The `static` strategy: a dataflow over a host function that places each transfer where a
//! later observer needs it, and nowhere else.
//!
//! # The state
//! For each buffer (each *root*: a parameter, or what an allocating op makes; see
//! [`super::aliases`]) the planner knows which elements of each copy hold the value the
//! reference semantics would give: `host` and `device`, sets of flat element positions. The
//! invariant: every element an observer may still see is valid in at least one copy. A
//! parameter starts valid on the host only; a fresh buffer on both sides (its contents are
//! undefined, so any copy is as good as the other).
//!
//! # Observers and effects
//! - a dispatch needs, on the device, what its kernel may read and — unless it provably writes
//!   every element — what it may write; afterwards the written elements are valid on the device
//!   only ([`super::dispatch`]);
//! - host code needs, on the host, what it reads (by the effects interface, with the element when
//!   its index is a constant, or a one-element copy when the device copy is whole and the index is
//!   not); a must-write makes its extent valid on the host only;
//! - a host function needs on the host what its declared effects read, and leaves what they
//!   write valid on the host only (an undeclared buffer counts as read and written);
//! - a compute function that was not inlined gets its buffers on the host and is planned on its
//!   own (entry: host valid; every return: host valid) — `inline` before this pass does better;
//! - a function's return needs every buffer parameter and every returned buffer on the host.
//!
//! A need that the state does not meet becomes a transfer of just the missing elements.
//!
//! # Control flow (asked of the interfaces)
//! - Branches (`scf.if`): each region runs from the state before; where the ends disagree so
//!   that an element is valid in no copy of the merged state, the copy the next observer wants
//!   is completed at the end of the regions that lack it (or, when control may skip every
//!   region, the copy the skipping path has).
//! - Counted loops (loop-like ops): the header state is taken from the back edge: what the body
//!   wants first on the device (or host) is made valid there on the entry edge — a transfer
//!   placed before the loop and guarded by "the loop runs at least once" — and iterated to a
//!   fixpoint. After the loop, the zero-trip state and the back-edge state meet; an element left
//!   valid in neither is completed by a copy guarded by whether the loop ran (and, before an
//!   observer that surely comes, one path's host elements on the other path). So nothing is
//!   copied in a loop that nothing in it needs, for any trip count, zero included.
//! - `while`-like ops (the first region always runs, then the other or the exit): the same with
//!   an unguarded entry edge.
//!
//! A shape the planner does not follow is reported ([`Unsupported`]) and the pass gives that
//! function the `kernel` strategy.
//!
//! Where buffers alias (a value that may be one of several roots), an access counts for each
//! root it may be, and a write through it counts as partial.

use super::aliases::{is_buffer, BufferRoots, Roots};
use super::dispatch::{element_count, shape, DispatchArg, Kernels};
use super::emit::{self, compare, guard, index_constant, transfer, Anchor, Direction};
use super::host_effects::{declared_parameter_access, Summaries, Touch, Touches};
use super::insert::describe_need;
use super::ranges::RangeSet;
use hat_dialects::semantics::IntPredicate;
use hat_ir::interfaces::{
    constant_integer, constant_integers, trip_count, CallOpInterface, CallableOpInterface, LaunchOpInterface,
    LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint,
};
use hat_ir::verifier::symbol_name;
use hat_ir::{
    Block, Context, EffectKind, EffectTarget, Extent, Location, MemoryEffects, MemorySpace, Op, OpTraits, Value,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

/// A construct the static planner does not follow.
#[derive(Clone, Debug)]
pub struct Unsupported {
    /// What it is.
    pub what: String,
    /// Where.
    pub location: Location,
}

/// The two copies of a buffer: which elements of each are current.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Copies {
    /// The elements whose host copy is current.
    host: RangeSet,
    /// The elements whose device copy is current.
    device: RangeSet,
    /// Whether the buffer's run-time flag says which copy is current beyond `host` and
    /// `device` (paths that merged disagreeing): when it is set the whole host copy is, when it
    /// is clear the whole device copy is.
    host_flag: bool,
}

impl Copies {
    fn new(host: RangeSet, device: RangeSet) -> Copies {
        Copies { host, device, host_flag: false }
    }

    /// Drops the flag where it says nothing more: one copy is current everywhere anyway.
    fn normalize(&mut self, whole: &RangeSet) {
        if self.host_flag && self.host.contains(whole) {
            self.host_flag = false;
        }
    }

    fn side(&mut self, side: Direction) -> &mut RangeSet {
        match side {
            Direction::ToDevice => &mut self.device,
            Direction::FromDevice => &mut self.host,
        }
    }
}

type State = super::sorted_map::SortedMap<Value, Copies>;

/// A copy the entry edge of a loop needs.
struct Fixup {
    root: Value,
    direction: Direction,
    ranges: RangeSet,
    /// Whether the copy waits for the buffer's flag to be clear (the entry state is flagged).
    flagged: bool,
    /// Instead of a copy: set the buffer's flag to this (the header state is flagged).
    set_flag: Option<bool>,
    why: String,
    /// The first observer of the buffer in the loop, when known (a copy for one in a `while`
    /// loop's body can wait for the body to run).
    observer: Option<Op>,
}

impl Fixup {
    /// Instead of a copy, setting the buffer's flag to `value` on the entry edge.
    fn set_flag(root: Value, value: bool) -> Fixup {
        Fixup {
            root,
            direction: Direction::FromDevice,
            ranges: RangeSet::empty(),
            flagged: false,
            set_flag: Some(value),
            observer: None,
            why: String::new(),
        }
    }
}

/// What following a loop to its fixpoint gives.
struct LoopOutcome {
    /// The state at the top of every iteration.
    header: State,
    /// The state where control leaves the loop (the end of a `while`'s first region).
    exit: State,
    /// The state at the end of the back edge.
    back: State,
    /// The copies the entry edge needs.
    fixups: Vec<Fixup>,
}

/// Where one path into a merge can take copies (`None`: it cannot, it skips every region) and
/// guards for them, and where it sets a run-time flag.
struct PathEnd {
    copies: Option<(Anchor, Vec<Guard>)>,
    flag: Anchor,
    label: &'static str,
}

/// One iteration of a loop from the header state: (exit state, back-edge state).
type Iteration<'i, 'p> = dyn FnMut(&mut Planner<'p>, &mut State) -> Result<(State, State), Unsupported> + 'i;

/// A guard on a planned transfer.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Guard {
    /// The loop ran at least once.
    Ran(Op),
    /// The loop did not run.
    NotRan(Op),
    /// The run-time flag of this buffer is clear (its device copy is current everywhere).
    FlagClear(Value),
    /// The run-time flag of this buffer is set (its host copy is current everywhere).
    FlagSet(Value),
    /// The copies this `while` loop defers to the first run of its body are not made yet.
    Pending(Op),
    /// They are made (the body ran).
    Entered(Op),
    /// Control skipped every region of this branch op (a run-time cell, cleared at the end of
    /// each region, says so).
    Skipped(Op),
}

/// The guard on a copy toward `direction` of a flagged buffer: a copy to the device is needed
/// only when the flag is set (the host copy is the whole one), a copy back only when it is clear.
fn flag_guard(root: Value, direction: Direction) -> Guard {
    match direction {
        Direction::ToDevice => Guard::FlagSet(root),
        Direction::FromDevice => Guard::FlagClear(root),
    }
}

/// What a planned item does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Action {
    /// A transfer.
    Transfer,
    /// Sets the buffer's run-time "host copy current" flag.
    SetFlag(bool),
    /// Sets whether the copies this `while` loop defers to the first run of its body are still
    /// to be made.
    SetPending(Op, bool),
}

/// One planned transfer.
#[derive(Clone, Debug)]
struct Planned {
    anchor: Anchor,
    guards: Vec<Guard>,
    action: Action,
    direction: Direction,
    buffer: Value,
    ranges: RangeSet,
    /// A one-element copy at this (dynamic, rank-1) index instead of `ranges`.
    element: Option<Value>,
    location: Location,
    reason: String,
}

/// Where each buffer is used, for finding the next observer in logarithmic time: the ops of a
/// function in pre-order, the last position of each op's subtree, and per root the positions of
/// the ops that name one of its values (plumbing — `arith.select`, control flow, terminators —
/// left out).
struct UseIndex {
    ops: Vec<Op>,
    positions: FxHashMap<Op, u32>,
    end: Vec<u32>,
    uses: FxHashMap<Value, Vec<u32>>,
    /// Ops naming a value of unknown roots: they may observe any buffer.
    unknown: Vec<u32>,
}

impl UseIndex {
    fn new(ctx: &Context, function: Op, roots: &BufferRoots) -> UseIndex {
        let ops = ctx.walk(function);
        let positions: FxHashMap<Op, u32> = ops.iter().enumerate().map(|(i, &op)| (op, i as u32)).collect();
        let mut end: Vec<u32> = (0..ops.len() as u32).collect();
        for i in (1..ops.len()).rev() {
            if let Some(parent) = ctx.parent_op(ops[i]).and_then(|p| positions.get(&p)) {
                end[*parent as usize] = end[*parent as usize].max(end[i]);
            }
        }
        let mut uses: FxHashMap<Value, Vec<u32>> = FxHashMap::default();
        let mut unknown = Vec::new();
        for (i, &op) in ops.iter().enumerate().skip(1) {
            let plumbing = hat_dialects::arith_views::SelectOp::wrap(ctx, op).is_some()
                || ctx.interface::<dyn RegionBranchOpInterface>(op).is_some()
                || (ctx.traits(op).contains(OpTraits::TERMINATOR) && !ctx.traits(op).contains(OpTraits::RETURN_LIKE))
                || (ctx.traits(op).contains(OpTraits::RETURN_LIKE) && ctx.parent_op(op) != Some(function));
            if plumbing {
                continue;
            }
            for &value in ctx.operands(op) {
                if !is_buffer(ctx, value) {
                    continue;
                }
                match roots.roots_ref(value) {
                    Roots::Known(set) => {
                        for root in set {
                            let list = uses.entry(*root).or_default();
                            if list.last() != Some(&(i as u32)) {
                                list.push(i as u32);
                            }
                        }
                    }
                    Roots::Unknown => {
                        if unknown.last() != Some(&(i as u32)) {
                            unknown.push(i as u32);
                        }
                    }
                }
            }
        }
        UseIndex { ops, positions, end, uses, unknown }
    }

    fn position(&self, op: Op) -> u32 {
        self.positions[&op]
    }

    /// The index of the first position at or after `from` in the sorted `list`.
    fn first_at(&self, list: &[u32], from: u32) -> usize {
        list.partition_point(|&p| p < from)
    }
}

/// The transfers planned for one function.
pub struct Plan {
    function: Op,
    items: Vec<Planned>,
}

/// What an observer wants of a buffer, and the observer (`None`: the caller, after the return).
type Observed = (Want, Option<Op>);

/// Which copy the next observer of a buffer wants.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Want {
    Device,
    Host,
    Nothing,
}

impl Want {
    fn side(self) -> Option<Direction> {
        match self {
            Want::Device => Some(Direction::ToDevice),
            Want::Host => Some(Direction::FromDevice),
            Want::Nothing => None,
        }
    }
}

/// Plans the transfers of `function` (a host function with a body), given its buffer roots if
/// already known; `reasons`: say why each transfer is there.
pub fn plan(
    ctx: &Context,
    function: Op,
    roots: Option<BufferRoots>,
    kernels: &Kernels,
    summaries: &Summaries,
    reasons: bool,
) -> Result<Plan, Unsupported> {
    let body = ctx
        .interface::<dyn CallableOpInterface>(function)
        .and_then(|c| c.body(ctx, function))
        .ok_or_else(|| Unsupported { what: "a function without a body".into(), location: ctx.location(function) })?;
    let blocks = ctx.region_blocks(body);
    let [entry] = blocks else {
        return Err(Unsupported { what: "a function of several blocks".into(), location: ctx.location(function) });
    };
    let params: Vec<Value> = ctx.block_arguments(*entry).iter().copied().filter(|&v| is_buffer(ctx, v)).collect();
    let roots = roots.unwrap_or_else(|| BufferRoots::of(ctx, function));
    // The state has one entry per root: a root that stands for several live buffers at once
    // cannot be followed.
    let outliving = roots.outliving_roots(ctx, function);
    if let Some(made) = roots.outliving_allocation(ctx, function, &outliving) {
        return Err(Unsupported {
            what: "a buffer made inside a loop or branch that outlives it and that the host touches".into(),
            location: ctx.location(made),
        });
    }
    let uses = UseIndex::new(ctx, function, &roots);
    let device_only = outliving.into_keys().collect();
    let mut planner = Planner {
        ctx,
        function,
        device_only,
        uses,
        roots,
        kernels,
        summaries,
        reasons,
        params: params.clone(),
        items: Vec::new(),
        touched: FxHashMap::default(),
        memo: FxHashMap::default(),
        body_facts: RefCell::default(),
        first_uses: RefCell::default(),
        loops: 0,
    };
    let mut state: State = params.iter().map(|&p| (p, Copies::new(RangeSet::whole(), RangeSet::empty()))).collect();
    planner.block(*entry, &mut state)?;
    Ok(Plan { function, items: planner.items })
}

struct Planner<'a> {
    ctx: &'a Context,
    function: Op,
    /// The buffers made inside a loop or branch that outlive it, which only dispatches touch
    /// (see [`BufferRoots::outliving_allocation`]): their host copies are never current.
    device_only: FxHashSet<Value>,
    roots: BufferRoots,
    kernels: &'a Kernels,
    summaries: &'a Summaries,
    /// Whether to say why each transfer is there (the texts cost time on large programs).
    reasons: bool,
    params: Vec<Value>,
    items: Vec<Planned>,
    /// [`Planner::touched_roots`], per construct.
    touched: FxHashMap<Op, Option<Rc<Vec<Value>>>>,
    uses: UseIndex,
    /// What each construct was last given, gave back and planned (see [`Planner::on_touched`]).
    memo: FxHashMap<Op, (State, State, Vec<Planned>)>,
    /// How many loop bodies are being planned around the current op: only a construct inside
    /// one can be planned again, so only those are memoized.
    loops: u32,
    /// Per loop body and buffer, what depends on the program only (not on the state), for the
    /// header's fixpoint iterations: (dead at the top, wanted on the device first on every path).
    body_facts: RefCell<FxHashMap<(Block, Value), (RangeSet, RangeSet)>>,
    /// [`Planner::first_use_from`], per buffer and op.
    first_uses: RefCell<FxHashMap<(Value, Op), Observed>>,
}

fn whole(ctx: &Context, buffer: Value) -> RangeSet {
    RangeSet::whole().clamp(element_count(ctx, buffer))
}

impl<'a> Planner<'a> {
    fn unsupported(&self, op: Op, what: impl Into<String>) -> Unsupported {
        Unsupported { what: what.into(), location: self.ctx.location(op) }
    }

    /// The text of a reason, made only when reasons are asked for (on large programs the
    /// texts cost more than the plan).
    fn reason(&self, text: impl FnOnce() -> String) -> String {
        if self.reasons {
            text()
        } else {
            String::new()
        }
    }

    fn describe(&self, location: Location) -> String {
        if !self.reasons {
            return String::new();
        }
        self.ctx.sources.describe(location)
    }

    fn name(&self, buffer: Value) -> String {
        match self.ctx.argument_name(buffer) {
            Some(name) => format!("%{name}"),
            None => match self.ctx.defining_op(buffer) {
                Some(op) => format!("the buffer made at {}", self.describe(self.ctx.location(op))),
                None => "a buffer".to_string(),
            },
        }
    }

    /// The roots `value` may be, among those in `state`.
    fn roots_of(&self, state: &State, value: Value) -> Vec<Value> {
        match self.roots.roots_ref(value) {
            Roots::Known(set) => set.iter().copied().filter(|r| state.contains_key(r)).collect(),
            Roots::Unknown => state.keys().copied().collect(),
        }
    }

    fn may_alias(&self, value: Value, root: Value) -> bool {
        match self.roots.roots_ref(value) {
            Roots::Known(set) => set.contains(&root),
            Roots::Unknown => true,
        }
    }

    /// Whether `root` can be named at `anchor` (its definition encloses the anchor).
    fn in_scope(&self, root: Value, anchor: Anchor) -> bool {
        let ctx = self.ctx;
        let Some(home) = ctx.value_block(root) else { return false };
        let mut block = match anchor {
            Anchor::Before(op) => ctx.parent_block(op),
            Anchor::End(block) => Some(block),
        };
        while let Some(b) = block {
            if b == home {
                return true;
            }
            block = ctx.block_parent(b).and_then(|r| ctx.region_parent(r)).and_then(|op| ctx.parent_block(op));
        }
        false
    }

    /// Plans a copy of the elements `ranges` of `root` to `side`, where they are not current.
    /// Against a flagged host copy the copy back is guarded by the flag.
    #[allow(clippy::too_many_arguments)]
    fn need(
        &mut self,
        state: &mut State,
        root: Value,
        side: Direction,
        ranges: &RangeSet,
        anchor: Anchor,
        location: Location,
        reason: &dyn Fn() -> String,
    ) -> Result<(), Unsupported> {
        let Some(copies) = state.get_mut(&root) else { return Ok(()) };
        let missing = ranges.clamp(element_count(self.ctx, root)).minus(copies.side(side));
        if missing.is_empty() {
            return Ok(());
        }
        let guards = match (side, copies.host_flag) {
            (Direction::FromDevice, true) => vec![Guard::FlagClear(root)],
            (Direction::ToDevice, true) => vec![Guard::FlagSet(root)],
            _ => vec![],
        };
        let updated = copies.side(side).union(&missing);
        *copies.side(side) = updated;
        copies.normalize(&whole(self.ctx, root));
        self.push(root, side, missing, anchor, guards, location, self.reason(reason))
    }

    /// Before a write to one copy of a flagged buffer: makes that copy current everywhere (a
    /// copy guarded by the flag), so that the state no longer depends on the flag.
    fn resolve(
        &mut self,
        state: &mut State,
        root: Value,
        side: Direction,
        anchor: Anchor,
        location: Location,
    ) -> Result<(), Unsupported> {
        if !state.get(&root).is_some_and(|c| c.host_flag) {
            return Ok(());
        }
        let all = whole(self.ctx, root);
        let reason = || "the copy about to be written must be current everywhere first".to_string();
        self.need(state, root, side, &all, anchor, location, &reason)?;
        state.get_mut(&root).expect("tracked").host_flag = false;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        root: Value,
        direction: Direction,
        ranges: RangeSet,
        anchor: Anchor,
        guards: Vec<Guard>,
        location: Location,
        reason: String,
    ) -> Result<(), Unsupported> {
        if ranges.is_empty() {
            return Ok(());
        }
        if !self.in_scope(root, anchor) {
            return Err(Unsupported { what: format!("a copy of {} out of its scope", self.name(root)), location });
        }
        self.items.push(Planned {
            anchor,
            guards,
            action: Action::Transfer,
            direction,
            buffer: root,
            ranges,
            element: None,
            location,
            reason,
        });
        Ok(())
    }

    /// Plans setting the run-time flag of `root` at `anchor`.
    fn set_flag(&mut self, root: Value, value: bool, anchor: Anchor, location: Location) {
        self.items.push(Planned {
            anchor,
            guards: vec![],
            action: Action::SetFlag(value),
            direction: Direction::FromDevice,
            buffer: root,
            ranges: RangeSet::empty(),
            element: None,
            location,
            reason: String::new(),
        });
    }

    /// Plans setting the "deferred copies pending" cell of the `while` loop `looped` at `anchor`
    /// (`buffer`: one of the buffers whose copies wait, for the item's record).
    fn set_pending(&mut self, looped: Op, buffer: Value, value: bool, anchor: Anchor, location: Location) {
        self.items.push(Planned {
            anchor,
            guards: vec![],
            action: Action::SetPending(looped, value),
            direction: Direction::ToDevice,
            buffer,
            ranges: RangeSet::empty(),
            element: None,
            location,
            reason: String::new(),
        });
    }

    fn block(&mut self, block: Block, state: &mut State) -> Result<(), Unsupported> {
        // Planning does not change the IR (the plan is emitted afterwards).
        let ctx = self.ctx;
        for op in ctx.block_ops(block) {
            self.op(op, state)?;
        }
        Ok(())
    }

    fn op(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        if ctx.interface::<dyn LaunchOpInterface>(op).is_some() {
            return self.dispatch(op, state);
        }
        if ctx.interface::<dyn CallOpInterface>(op).is_some() {
            return self.call(op, state);
        }
        if ctx.interface::<dyn LoopLikeOpInterface>(op).is_some() {
            return self.on_touched(op, state, Self::counted_loop);
        }
        if let Some(branch) = ctx.interface::<dyn RegionBranchOpInterface>(op) {
            let repetitive = (0..ctx.regions(op).len()).any(|i| branch.is_repetitive_region(ctx, op, i));
            return if repetitive {
                self.on_touched(op, state, Self::while_loop)
            } else {
                self.on_touched(op, state, Self::branch)
            };
        }
        if ctx.traits(op).contains(OpTraits::RETURN_LIKE) && ctx.parent_op(op) == Some(self.function) {
            return self.function_return(op, state);
        }
        if ctx.traits(op).contains(OpTraits::TERMINATOR) {
            return Ok(());
        }
        if !ctx.regions(op).is_empty() {
            return Err(self
                .unsupported(op, format!("'{}', an op with regions but no control-flow interface", ctx.name_str(op))));
        }
        self.effects(op, state)
    }

    /// Runs `construct` (a loop or a branch) on the part of `state` it may touch: the buffers
    /// its ops name (all of them if one names a value of unknown roots). The others pass through
    /// unchanged, so a construct costs what it touches, not the number of live buffers.
    fn on_touched(
        &mut self,
        op: Op,
        state: &mut State,
        construct: fn(&mut Self, Op, &mut State) -> Result<(), Unsupported>,
    ) -> Result<(), Unsupported> {
        let touched = self.touched_roots(op);
        let Some(touched) = touched else { return construct(self, op, state) };
        // Copied out and written back (every construct gives back at least the buffers it was
        // given), so that the enclosing state is not reshuffled.
        let mut inner: State = touched.iter().filter_map(|r| state.get(r).map(|c| (*r, c.clone()))).collect();
        // An enclosing loop's fixpoint runs its body again and again: a construct that meets
        // the state it met last time plans what it planned then.
        if let Some((input, output, items)) = self.memo.get(&op) {
            if *input == inner {
                self.items.extend(items.iter().cloned());
                state.extend(output.clone());
                return Ok(());
            }
        }
        if self.loops == 0 {
            let result = construct(self, op, &mut inner);
            state.extend(inner);
            return result;
        }
        let input = inner.clone();
        let mark = self.items.len();
        let result = construct(self, op, &mut inner);
        if result.is_ok() {
            self.memo.insert(op, (input, inner.clone(), self.items[mark..].to_vec()));
        }
        state.extend(inner);
        result
    }

    /// The roots the ops nested in `op` name (`None`: some value of unknown roots, so any).
    fn touched_roots(&mut self, op: Op) -> Option<Rc<Vec<Value>>> {
        if let Some(known) = self.touched.get(&op) {
            return known.clone();
        }
        let ctx = self.ctx;
        let mut set: BTreeSet<Value> = BTreeSet::new();
        let mut unknown = false;
        // The ops nested in `op` are the positions of its subtree in the use index.
        let from = self.uses.position(op) as usize;
        let to = self.uses.end[from] as usize;
        for &nested in &self.uses.ops[from..=to] {
            for &value in ctx.operands(nested) {
                if !is_buffer(ctx, value) {
                    continue;
                }
                match self.roots.roots_ref(value) {
                    Roots::Known(roots) => set.extend(roots),
                    Roots::Unknown => unknown = true,
                }
            }
        }
        let answer = (!unknown).then(|| Rc::new(set.into_iter().collect::<Vec<Value>>()));
        self.touched.insert(op, answer.clone());
        answer
    }

    fn dispatch(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let kernel = self.kernels.callee(ctx, op);
        let args = self.kernels.args(ctx, op);
        let kernel_name = kernel.and_then(|k| symbol_name(ctx, k)).unwrap_or("?");
        let location = ctx.location(op);
        let at = self.describe(location);
        // An argument that writes one of several buffers (an alias the plan cannot resolve) is
        // planned as the kernel strategy would plan it, through the alias itself: its elements
        // copied in from a current host copy, and what it writes copied back right after, so
        // that each buffer it may name keeps its state (the one written is current on both
        // sides where it was on either).
        // So is a read through such an alias where every buffer it may name has what it reads
        // current on the host but not all on the device (copying each to the device could move
        // buffers this dispatch does not read).
        // The buffers each argument may be (the state's keys do not change here).
        let arg_roots: Vec<Vec<Value>> = args.iter().map(|a| self.roots_of(state, a.value)).collect();
        let through_alias: Vec<bool> = args
            .iter()
            .zip(&arg_roots)
            .map(|(a, roots)| {
                // A copy through the alias would overwrite the device copy of a buffer whose
                // host copy is never current: each buffer's own copies instead, where it reads;
                // where it writes, the function is not followed.
                let device_only = match self.roots.roots_ref(a.value) {
                    Roots::Known(set) => set.len() > 1 && set.iter().any(|r| self.device_only.contains(r)),
                    Roots::Unknown => !self.device_only.is_empty(),
                };
                if device_only {
                    return if a.writes {
                        Err(self.unsupported(op, "a dispatch writing through a value that may be a buffer made in a loop or branch or another"))
                    } else {
                        Ok(false)
                    };
                }
                if roots.len() < 2 {
                    return Ok(false);
                }
                if a.writes {
                    return Ok(true);
                }
                let needs = |r: &Value| a.needs.clamp(element_count(ctx, *r));
                Ok(roots.iter().all(|r| state[r].host.contains(&needs(r)) && !state[r].host_flag)
                    && !roots.iter().all(|r| state[r].device.contains(&needs(r))))
            })
            .collect::<Result<_, _>>()?;
        // A partial write to a flagged buffer keeps the flag: what it needs is copied in where
        // the flag says the host copy is the whole one, and what it writes copied back there
        // right after, so that the flag still tells which copy is whole.
        // (Only the written arguments' buffers are asked: the state may hold every buffer.)
        let flagged_before: Vec<Value> = args
            .iter()
            .zip(&arg_roots)
            .filter(|(a, _)| a.writes)
            .flat_map(|(_, roots)| roots.iter().copied())
            .filter(|r| state.get(r).is_some_and(|c| c.host_flag))
            .collect();
        for ((arg, &alias), roots) in args.iter().zip(&through_alias).zip(&arg_roots) {
            let reason = || format!("{} at {at}", describe_need(arg, kernel_name));
            if alias {
                for &root in roots {
                    self.need(state, root, Direction::FromDevice, &arg.needs, Anchor::Before(op), location, &reason)?;
                }
                let needs = arg.needs.clamp(element_count(ctx, arg.value));
                self.push(
                    arg.value,
                    Direction::ToDevice,
                    needs,
                    Anchor::Before(op),
                    vec![],
                    location,
                    self.reason(reason),
                )?;
                continue;
            }
            for &root in roots {
                self.need(state, root, Direction::ToDevice, &arg.needs, Anchor::Before(op), location, &reason)?;
            }
        }
        let after = ctx
            .next_op(op)
            .map(Anchor::Before)
            .ok_or_else(|| self.unsupported(op, "a dispatch that ends its block"))?;
        for ((arg, &alias), roots) in args.iter().zip(&through_alias).zip(&arg_roots).filter(|((a, _), _)| a.writes) {
            if alias {
                let written = arg.written.clamp(element_count(ctx, arg.value));
                let why =
                    self.reason(|| format!("written by @{kernel_name} at {at} through an alias of several buffers"));
                self.push(arg.value, Direction::FromDevice, written, after, vec![], location, why)?;
                continue;
            }
            let single = roots.len() == 1;
            for &root in roots {
                let copies = state.get_mut(&root).expect("roots_of gives tracked roots");
                if single && arg.writes_all {
                    copies.device = whole(ctx, root);
                    copies.host = RangeSet::empty();
                    copies.host_flag = false;
                    continue;
                }
                copies.host = copies.host.minus(&arg.written);
                if flagged_before.contains(&root) && copies.host_flag {
                    let written = arg.written.clamp(element_count(ctx, root));
                    let why = self.reason(|| {
                        format!("written by @{kernel_name} at {at}; the flag says the host copy is the whole one")
                    });
                    self.push(root, Direction::FromDevice, written, after, vec![Guard::FlagSet(root)], location, why)?;
                }
            }
        }
        Ok(())
    }

    /// The host needs the whole of every buffer in `values` (and afterwards, when `clobbers`,
    /// the device copies are stale).
    fn on_host(
        &mut self,
        op: Op,
        state: &mut State,
        values: &[Value],
        clobbers: bool,
        what: &str,
    ) -> Result<(), Unsupported> {
        let location = self.ctx.location(op);
        let at = self.describe(location);
        for &value in values.iter().filter(|&&v| is_buffer(self.ctx, v)) {
            for root in self.roots_of(state, value) {
                let ranges = whole(self.ctx, root);
                let reason = || format!("{what} at {at}");
                self.need(state, root, Direction::FromDevice, &ranges, Anchor::Before(op), location, &reason)?;
                if clobbers {
                    let copies = state.get_mut(&root).expect("tracked");
                    copies.device = RangeSet::empty();
                    copies.host_flag = false;
                }
            }
        }
        Ok(())
    }

    fn call(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let call = ctx.interface::<dyn CallOpInterface>(op).expect("a call");
        let arguments: Vec<Value> = ctx.operands(op)[call.arguments(ctx, op)].to_vec();
        let Some(callee) = self.kernels.callee(ctx, op) else {
            return self.on_host(op, state, &arguments, true, "passed to an unknown function");
        };
        let callee_name = symbol_name(ctx, callee).unwrap_or("?").to_string();
        let callable = ctx.interface::<dyn CallableOpInterface>(callee).expect("resolve_callee gives callables");
        if let Some(summary) = self.summaries.get(&callee) {
            // A function planned on its own expects its buffers on the host; what it may write
            // is stale on the device afterwards. What it does not touch is left alone.
            let what = format!("passed to @{callee_name} (planned on its own)");
            for (index, &value) in arguments.iter().enumerate() {
                let touch = summary.get(index).copied().unwrap_or_else(Touch::all);
                if touch.any() {
                    let clobbers = touch.host_write || touch.device_write;
                    self.on_host(op, state, &[value], clobbers, &what)?;
                }
            }
            return Ok(());
        }
        if callable.body(ctx, callee).is_some() {
            return self.on_host(
                op,
                state,
                &arguments,
                true,
                &format!("passed to @{callee_name} (planned on its own)"),
            );
        }
        let declared = callable.parameter_effects(ctx, callee);
        let location = ctx.location(op);
        let at = self.describe(location);
        for (index, &value) in arguments.iter().enumerate() {
            if !is_buffer(ctx, value) {
                continue;
            }
            let (reads, must_write, writes) = declared_parameter_access(&declared, index);
            let roots = self.roots_of(state, value);
            let single = roots.len() == 1;
            for root in roots {
                if reads || (writes && !(must_write && single)) {
                    let ranges = whole(ctx, root);
                    let verb = if reads { "read" } else { "partly written" };
                    let reason = || format!("{verb} by @{callee_name} at {at}");
                    self.need(state, root, Direction::FromDevice, &ranges, Anchor::Before(op), location, &reason)?;
                }
                if writes {
                    let copies = state.get_mut(&root).expect("tracked");
                    copies.device = RangeSet::empty();
                    copies.host_flag = false;
                    if must_write && single {
                        copies.host = whole(ctx, root);
                    }
                }
            }
        }
        Ok(())
    }

    fn function_return(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let name = symbol_name(ctx, self.function).unwrap_or("?").to_string();
        let location = ctx.location(op);
        let mut values: Vec<Value> = self.params.clone();
        values.extend(ctx.operands(op).iter().copied().filter(|&v| is_buffer(ctx, v)));
        let at = self.describe(location);
        for value in values {
            for root in self.roots_of(state, value) {
                let ranges = whole(ctx, root);
                let shown = self.name(root);
                let reason = || format!("the caller sees {shown} when @{name} returns at {at}");
                self.need(state, root, Direction::FromDevice, &ranges, Anchor::Before(op), location, &reason)?;
            }
        }
        Ok(())
    }

    /// The flat elements an effect's extent names, when constant (`None`: not known).
    fn extent(&self, op: Op, buffer: Value, extent: Extent) -> Option<RangeSet> {
        let ctx = self.ctx;
        let operands = ctx.operands(op);
        match extent {
            Extent::Whole => Some(whole(ctx, buffer)),
            Extent::Element { first, count } => {
                let dims = shape(ctx, buffer);
                let indices = operands.get(first as usize..(first + count) as usize)?;
                let mut flat = 0u64;
                for (&index, dim) in indices.iter().zip(&dims) {
                    let i = u64::try_from(constant_integer(ctx, index)?).ok()?;
                    flat = flat.checked_mul((*dim)?)?.checked_add(i)?;
                }
                Some(RangeSet::of(flat..flat + 1))
            }
            Extent::Span { offset, count } => {
                let start = u64::try_from(constant_integer(ctx, *operands.get(offset as usize)?)?).ok()?;
                let len = u64::try_from(constant_integer(ctx, *operands.get(count as usize)?)?).ok()?;
                Some(RangeSet::of(start..start + len))
            }
        }
    }

    /// A host op that is neither a dispatch, a call nor control flow: by its memory effects.
    fn effects(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let Some(definition) = ctx.definition(ctx.name(op)) else {
            let operands = ctx.operands(op).to_vec();
            return self.on_host(op, state, &operands, true, "used by an unregistered op");
        };
        if definition.traits().contains(OpTraits::PURE) {
            return Ok(());
        }
        let effects = match definition.memory_effects(ctx, op) {
            MemoryEffects::Unknown => {
                let operands = ctx.operands(op).to_vec();
                let what = format!("used by '{}' (effects unknown)", ctx.name_str(op));
                return self.on_host(op, state, &operands, true, &what);
            }
            MemoryEffects::Known(effects) => effects,
        };
        let location = ctx.location(op);
        let at = self.describe(location);
        for effect in &effects {
            let side = match effect.space {
                MemorySpace::Current | MemorySpace::Host => Direction::FromDevice,
                MemorySpace::Device => Direction::ToDevice,
                MemorySpace::Workgroup => continue,
            };
            match (effect.kind, effect.target) {
                (EffectKind::Allocate, EffectTarget::Result(i)) => {
                    let result = ctx.result(op, i);
                    if is_buffer(ctx, result) {
                        state.insert(result, Copies::new(whole(ctx, result), whole(ctx, result)));
                    }
                }
                (EffectKind::Free, EffectTarget::Operand(i)) => {
                    for root in self.roots_of(state, ctx.operand(op, i)) {
                        if self.roots.is_root(ctx.operand(op, i)) {
                            state.remove(&root);
                        }
                    }
                }
                (EffectKind::Read, EffectTarget::Operand(i)) => {
                    let value = ctx.operand(op, i);
                    let where_ = if side == Direction::FromDevice { "the host" } else { "the device" };
                    for root in self.roots_of(state, value) {
                        let reason = || format!("read by {where_} at {at}");
                        match self.extent(op, root, effect.extent) {
                            Some(ranges) => {
                                let ranges = self.widened_for_host(state, root, side, ranges, op);
                                self.need(state, root, side, &ranges, Anchor::Before(op), location, &reason)?
                            }
                            None => self.dynamic_read(op, state, root, side, effect.extent, &reason)?,
                        }
                    }
                }
                (EffectKind::Write, EffectTarget::Operand(i)) => {
                    let value = ctx.operand(op, i);
                    let roots = self.roots_of(state, value);
                    let single = roots.len() == 1;
                    // A transfer-like op writes one copy from the other: the other stays current.
                    let copies_other = effects
                        .iter()
                        .any(|e| e.kind == EffectKind::Read && e.target == effect.target && e.space != effect.space);
                    for root in roots {
                        let extent = self.extent(op, root, effect.extent);
                        let ranges = extent.clone().unwrap_or_else(|| whole(ctx, root));
                        let covers =
                            effect.must && single && extent.as_ref().is_some_and(|r| r.contains(&whole(ctx, root)));
                        if !covers {
                            self.resolve(state, root, side, Anchor::Before(op), location)?;
                        }
                        if !(effect.must && single && extent.is_some()) {
                            let reason = || format!("partly written at {at}: the rest must be current");
                            self.need(state, root, side, &ranges, Anchor::Before(op), location, &reason)?;
                        }
                        let copies = state.get_mut(&root).expect("tracked");
                        let mine = copies.side(side).union(&ranges);
                        *copies.side(side) = mine;
                        if !copies_other {
                            let other = match side {
                                Direction::ToDevice => Direction::FromDevice,
                                Direction::FromDevice => Direction::ToDevice,
                            };
                            let rest = copies.side(other).minus(&ranges);
                            *copies.side(other) = rest;
                            if other == Direction::FromDevice {
                                copies.host_flag = false;
                            }
                        }
                        copies.normalize(&whole(ctx, root));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A read of one element whose index is not a constant: a one-element copy when the other
    /// copy is current everywhere and the buffer is one-dimensional, else the whole buffer.
    fn dynamic_read(
        &mut self,
        op: Op,
        state: &mut State,
        root: Value,
        side: Direction,
        extent: Extent,
        reason: &dyn Fn() -> String,
    ) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let location = ctx.location(op);
        let all = whole(ctx, root);
        let copies = state.get(&root).expect("tracked").clone();
        let mine = match side {
            Direction::ToDevice => &copies.device,
            Direction::FromDevice => &copies.host,
        };
        if mine.contains(&all) {
            return Ok(());
        }
        let other_whole = match side {
            Direction::ToDevice => copies.host.contains(&all),
            Direction::FromDevice => copies.device.contains(&all),
        };
        // (Not when the next observer surely wants the whole host copy anyway: one copy of the
        // missing part now is less than one element now and the rest then.)
        let whole_wanted_next = side == Direction::FromDevice && self.whole_host_copy_surely_wanted(root, op);
        if let (true, false, Extent::Element { first, count: 1 }) = (other_whole, whole_wanted_next, extent) {
            if shape(ctx, root).len() == 1 && self.in_scope(root, Anchor::Before(op)) {
                let index = ctx.operand(op, first as usize);
                self.items.push(Planned {
                    anchor: Anchor::Before(op),
                    guards: vec![],
                    action: Action::Transfer,
                    direction: side,
                    buffer: root,
                    ranges: RangeSet::empty(),
                    element: Some(index),
                    location,
                    reason: self.reason(reason),
                });
                return Ok(());
            }
        }
        self.need(state, root, side, &all, Anchor::Before(op), location, reason)
    }

    /// The elements of `root` a host read at `op` should bring back: `ranges`, or the whole
    /// buffer where more than `ranges` is missing on the host and the whole host copy is surely
    /// wanted later with only host reads between (one copy now rather than this part now and
    /// the pieces around it later; the same bytes).
    fn widened_for_host(&self, state: &State, root: Value, side: Direction, ranges: RangeSet, op: Op) -> RangeSet {
        if side != Direction::FromDevice {
            return ranges;
        }
        let Some(copies) = state.get(&root) else { return ranges };
        let all = whole(self.ctx, root);
        let missing = ranges.clamp(element_count(self.ctx, root)).minus(&copies.host);
        if missing.is_empty() || all.minus(&copies.host) == missing || !self.whole_host_copy_surely_wanted(root, op) {
            return ranges;
        }
        all
    }

    /// Whether, after the host read `op`, the whole host copy of `root` is surely wanted before
    /// anything but host reads touches it: the chain of observers after `op`, each surely
    /// coming after the one before, reads only parts of the host copy and ends in one that
    /// reads all of it (or the caller, for a parameter).
    fn whole_host_copy_surely_wanted(&self, root: Value, op: Op) -> bool {
        let all = whole(self.ctx, root);
        let mut at = op;
        // (A bound: each step is a scan of the uses.)
        for _ in 0..8 {
            let (want, observer) = self.wanted_after(root, at);
            if want != Want::Host || !self.surely_observed(at, want, observer) {
                return false;
            }
            let Some(next) = observer else { return true };
            if self.elements_read_on_host(root, next).contains(&all) {
                return true;
            }
            if self.writes(root, next) {
                return false;
            }
            at = next;
        }
        false
    }

    /// Whether `op` may write either copy of `root` (host effects' classifier: a call by its
    /// summary, an op of unknown effects everything).
    fn writes(&self, root: Value, op: Op) -> bool {
        let touches = Touches { ctx: self.ctx, roots: &self.roots, kernels: self.kernels, summaries: self.summaries };
        let touch = touches.own_touch(op, root);
        touch.host_write || touch.device_write
    }

    /// Which copy of `root` the first observer after `op` (in program order, around enclosing
    /// loops) wants, and that observer.
    fn wanted_after(&self, root: Value, op: Op) -> (Want, Option<Op>) {
        let ctx = self.ctx;
        let index = &self.uses;
        let mut cursor = op;
        while let Some(parent) = ctx.parent_op(cursor) {
            // The ops after `cursor` in its block, and what they nest: the positions after its
            // subtree up to the end of its parent's.
            let block = ctx.parent_block(cursor);
            let after = index.end[index.position(cursor) as usize] + 1;
            let parent_end = index.end[index.position(parent) as usize];
            let loops = parent != self.function
                && ctx
                    .interface::<dyn RegionBranchOpInterface>(parent)
                    .is_some_and(|b| (0..ctx.regions(parent).len()).any(|i| b.is_repetitive_region(ctx, parent, i)));
            // In a branch, what follows `cursor` is the rest of its own region (the other
            // regions do not run after it); in a loop, the regions after it may.
            let scan_end = if loops {
                parent_end
            } else {
                match block.and_then(|b| ctx.last_op(b)) {
                    Some(last) => index.end[index.position(last) as usize],
                    None => parent_end,
                }
            };
            if let Some(found) = self.first_in(root, after, scan_end, |n| ctx.parent_block(n) != block) {
                return found;
            }
            if parent == self.function {
                break;
            }
            if loops {
                let inside = index.position(parent) + 1;
                // The next iteration's first observer; if it overwrites the buffer, the loop may
                // exit instead, so what follows the loop decides.
                match self.first_in(root, inside, parent_end, |n| ctx.parent_op(n) != Some(parent)) {
                    Some(found) if found.0 != Want::Nothing => return found,
                    _ => {}
                }
            }
            cursor = parent;
        }
        if self.params.contains(&root) {
            (Want::Host, None)
        } else {
            (Want::Nothing, None)
        }
    }

    /// What the candidate observer `n` wants of `root`, if it observes it (`nested`: it is
    /// inside the construct being scanned, so it may not run).
    fn classify(&self, root: Value, n: Op, nested: bool) -> Option<(Want, Option<Op>)> {
        let ctx = self.ctx;
        {
            if !ctx.operands(n).iter().any(|&v| is_buffer(ctx, v) && self.may_alias(v, root)) {
                return None;
            }
            if ctx.interface::<dyn LaunchOpInterface>(n).is_some() {
                // A dispatch that only overwrites the whole buffer wants nothing of it.
                let args = self.kernels.args(ctx, n);
                // An argument the kernel neither reads nor writes is not observed.
                let mine: Vec<_> =
                    args.iter().filter(|a| (a.reads || a.writes) && self.may_alias(a.value, root)).collect();
                if mine.is_empty() {
                    return None;
                }
                // A write through an alias of several buffers is planned through the alias (see
                // `dispatch`): it leaves each buffer's state as it was, and wants the host copy
                // of what it reads.
                let alias_writer = |a: &&DispatchArg| {
                    a.writes && !matches!(self.roots.roots_ref(a.value), Roots::Known(set) if set.len() == 1)
                };
                if mine.iter().all(alias_writer) {
                    return mine.iter().any(|a| !a.needs.is_empty()).then_some((Want::Host, Some(n)));
                }
                let mine: Vec<_> = mine.into_iter().filter(|a| !alias_writer(a)).collect();
                let single = matches!(self.roots.roots_ref(mine.first()?.value), Roots::Known(set) if set.len() == 1);
                let kills = single && mine.iter().all(|a| !a.reads && a.writes_all);
                if kills && nested {
                    // Overwritten only on some paths (inside a branch or a loop of `op`):
                    // others may still observe it, so it is not dead; and as the observer is
                    // nested, nothing takes it for sure to come.
                    return Some((Want::Device, Some(n)));
                }
                return Some((if kills { Want::Nothing } else { Want::Device }, Some(n)));
            }
            if ctx.interface::<dyn CallOpInterface>(n).is_some() {
                return Some((Want::Host, Some(n)));
            }
            let Some(definition) = ctx.definition(ctx.name(n)) else { return Some((Want::Host, Some(n))) };
            if definition.traits().contains(OpTraits::PURE) {
                return None;
            }
            let effects = match definition.memory_effects(ctx, n) {
                MemoryEffects::Unknown => return Some((Want::Host, Some(n))),
                MemoryEffects::Known(effects) => effects,
            };
            let on_root = |e: &&hat_ir::MemoryEffect| match e.target {
                EffectTarget::Operand(i) => ctx.operands(n).get(i).is_some_and(|&v| self.may_alias(v, root)),
                _ => false,
            };
            let first = effects.iter().find(on_root)?;
            let reads_first = effects.iter().filter(on_root).any(|e| e.kind == EffectKind::Read);
            let overwrites = first.kind == EffectKind::Write
                && first.must
                && !reads_first
                && matches!(first.target, EffectTarget::Operand(i) if self.roots.is_root(ctx.operand(n, i)))
                && first.extent == Extent::Whole;
            let want = match (first.kind, first.space) {
                (EffectKind::Free, _) => Want::Nothing,
                _ if overwrites => Want::Nothing,
                (_, MemorySpace::Device) => Want::Device,
                _ => Want::Host,
            };
            if want == Want::Nothing && nested {
                // Freed or overwritten only on some paths: others may still observe it.
                let side = if first.space == MemorySpace::Device { Want::Device } else { Want::Host };
                return Some((side, Some(n)));
            }
            Some((want, Some(n)))
        }
    }

    /// The elements of `root` that `observer` may read or (for a partial write) keep: what a
    /// dispatch needs of the arguments that may be `root`, else the whole buffer.
    fn elements_wanted(&self, root: Value, observer: Op) -> RangeSet {
        let ctx = self.ctx;
        let all = whole(ctx, root);
        if ctx.interface::<dyn LaunchOpInterface>(observer).is_none() {
            return all;
        }
        let mut wanted = RangeSet::empty();
        for arg in self.kernels.args(ctx, observer).iter().filter(|a| self.may_alias(a.value, root)) {
            wanted = wanted.union(&arg.needs);
        }
        wanted.clamp(element_count(ctx, root))
    }

    /// The elements of `root` that the host op `observer` reads, where its effects name them
    /// (else the whole buffer).
    fn elements_read_on_host(&self, root: Value, observer: Op) -> RangeSet {
        let ctx = self.ctx;
        let all = whole(ctx, root);
        let Some(definition) = ctx.definition(ctx.name(observer)) else { return all };
        if ctx.interface::<dyn LaunchOpInterface>(observer).is_some()
            || ctx.interface::<dyn CallOpInterface>(observer).is_some()
        {
            return all;
        }
        let MemoryEffects::Known(effects) = definition.memory_effects(ctx, observer) else { return all };
        let mut read = RangeSet::empty();
        for effect in &effects {
            let EffectTarget::Operand(i) = effect.target else { continue };
            if !ctx.operands(observer).get(i).is_some_and(|&v| self.may_alias(v, root)) {
                continue;
            }
            match effect.kind {
                EffectKind::Read => match self.extent(observer, root, effect.extent) {
                    Some(ranges) => read = read.union(&ranges),
                    None => return all,
                },
                // A write of known elements keeps the others as they are, without reading them.
                EffectKind::Write if effect.must && self.extent(observer, root, effect.extent).is_some() => {}
                EffectKind::Free => {}
                _ => return all,
            }
        }
        read.clamp(element_count(ctx, root))
    }

    /// The first observer of `root` in `op` (pre-order), if any.
    fn first_use(&self, root: Value, op: Op) -> Option<(Want, Option<Op>)> {
        let index = &self.uses;
        let from = index.position(op);
        self.first_in(root, from, index.end[from as usize], |n| n != op)
    }

    /// The first observer of `root` among the ops at pre-order positions `from..=to`; `nested`
    /// says whether one is inside the construct being scanned.
    fn first_in(&self, root: Value, from: u32, to: u32, nested: impl Fn(Op) -> bool) -> Option<(Want, Option<Op>)> {
        let index = &self.uses;
        let mine = index.uses.get(&root).map_or(&[][..], Vec::as_slice);
        let (mut a, mut b) = (index.first_at(mine, from), index.first_at(&index.unknown, from));
        loop {
            let next = match (mine.get(a), index.unknown.get(b)) {
                (Some(&x), Some(&y)) if x <= y => {
                    a += 1;
                    x
                }
                (_, Some(&y)) => {
                    b += 1;
                    y
                }
                (Some(&x), None) => {
                    a += 1;
                    x
                }
                (None, None) => return None,
            };
            if next > to {
                return None;
            }
            let n = index.ops[next as usize];
            if let Some(found) = self.classify(root, n, nested(n)) {
                return Some(found);
            }
        }
    }

    /// Whether the next observer after `op` (as [`Self::wanted_after`] found it) surely comes:
    /// it is in `op`'s block, or it is the caller and `op` is at the top of the function.
    fn surely_observed(&self, op: Op, want: Want, observer: Option<Op>) -> bool {
        match observer {
            // (After `op`: one found around the loop, in the next iteration, may not come.)
            Some(o) => {
                self.ctx.parent_block(o) == self.ctx.parent_block(op) && self.uses.position(o) > self.uses.position(op)
            }
            None => want == Want::Host && self.ctx.parent_op(op) == Some(self.function),
        }
    }

    fn observer(&self, observer: Option<Op>) -> String {
        if !self.reasons {
            return String::new();
        }
        match observer {
            Some(op) => format!("'{}' at {}", self.ctx.name_str(op), self.describe(self.ctx.location(op))),
            None => "the caller".to_string(),
        }
    }

    /// The loop's header state from its entry state `entry` and back-edge state `back`, and the
    /// copies the entry edge needs to reach it.
    fn header(&self, entry: &State, back: &State, first_op: Option<Op>, loop_op: Op) -> (State, Vec<Fixup>) {
        let mut header = State::new();
        let mut fixups = Vec::new();
        let counted = self.ctx.interface::<dyn LoopLikeOpInterface>(loop_op).is_some();
        // A counted loop's body (a single block), which the header asks about per buffer.
        let counted_body = match (counted, self.ctx.regions(loop_op).first()) {
            (true, Some(&region)) => match self.ctx.region_blocks(region) {
                [body] => Some(*body),
                _ => None,
            },
            _ => None,
        };
        for (&root, e) in entry {
            let Some(b) = back.get(&root).filter(|&b| b != e) else {
                // Not in the back edge, or the body leaves it as it found it.
                header.insert(root, e.clone());
                continue;
            };
            let all = whole(self.ctx, root);
            // A `while` loop's second region may never run, so copies for it cannot wait on the
            // entry edge (no guard says whether it will run): where each edge has one copy
            // whole, a run-time flag says which at the top of the body instead.
            let one_whole = |c: &Copies| c.host_flag || c.host.contains(&all) || c.device.contains(&all);
            let same_whole = (e.host.contains(&all) && b.host.contains(&all))
                || (e.device.contains(&all) && b.device.contains(&all));
            if !counted && !b.host_flag && one_whole(e) && one_whole(b) && !same_whole {
                if !e.host_flag {
                    fixups.push(Fixup::set_flag(root, e.host.contains(&all)));
                }
                header.insert(
                    root,
                    Copies { host: e.host.intersect(&b.host), device: e.device.intersect(&b.device), host_flag: true },
                );
                continue;
            }
            if b.host_flag {
                // The back edge says which copy is whole only through the flag: the top of the
                // body must too. What the body wants first on the device is made current on the
                // entry edge as for any buffer; then the entry edge sets the flag from its state
                // (made to have one copy whole first, if it has neither).
                let (want, flag_observer) = match first_op {
                    Some(first) => self.first_use_from(root, first, loop_op),
                    None => (Want::Nothing, None),
                };
                let mut to_device = RangeSet::empty();
                let mut device = e.device.intersect(&b.device);
                if want == Want::Device {
                    to_device = b.device.minus(&e.device);
                    device = b.device.clone();
                    // As for a buffer without a flag (below), what only an observer that may
                    // not run wants is not worth a copy on the entry edge: the flag makes the
                    // observer copy it.
                    let unsure = self.wanted_only_if_observed(root, counted_body, flag_observer, &to_device);
                    to_device = to_device.minus(&unsure);
                    device = device.minus(&unsure);
                }
                let entry_device = e.device.union(&to_device);
                let mut entry_host = e.host.clone();
                let mut entry_host_whole = e.host.contains(&all);
                if !(e.host_flag || entry_host_whole || entry_device.contains(&all)) {
                    // Neither copy is whole on entry: complete the one that costs fewer
                    // elements (on a tie the host copy, which `kernel` would have made whole
                    // after the write that split the buffer).
                    let len = element_count(self.ctx, root);
                    let to_host = all.minus(&e.host);
                    let rest_to_device = all.minus(&entry_device);
                    match (to_host.count(len), rest_to_device.count(len)) {
                        (Some(back), Some(forth)) if back <= forth => {
                            let why = self.reason(|| "the loop's flag needs one copy whole".to_string());
                            fixups.push(Fixup {
                                root,
                                direction: Direction::FromDevice,
                                ranges: to_host,
                                flagged: false,
                                set_flag: None,
                                why,
                                observer: flag_observer,
                            });
                            entry_host_whole = true;
                            entry_host = all.clone();
                        }
                        _ => to_device = to_device.union(&rest_to_device),
                    }
                }
                if !to_device.is_empty() {
                    let why = self.reason(|| "the loop's body wants it there first".to_string());
                    fixups.push(Fixup {
                        root,
                        direction: Direction::ToDevice,
                        ranges: to_device,
                        flagged: e.host_flag,
                        set_flag: None,
                        why,
                        observer: flag_observer,
                    });
                }
                if !e.host_flag {
                    fixups.push(Fixup::set_flag(root, entry_host_whole));
                }
                header.insert(root, Copies { host: entry_host.intersect(&b.host), device, host_flag: true });
                continue;
            }
            let (want, observer) = match first_op {
                Some(first) => self.first_use_from(root, first, loop_op),
                None => (Want::Nothing, None),
            };
            // Elements every path through a counted loop's body overwrites before anything
            // may observe them are dead at the top of the body: no copy makes them current
            // there. The header takes them as the back edge has them (the body overwrites
            // them on every run, so no later observer sees what the header says of them).
            // (Only where the header may need a copy: the scan costs the body's size.)
            let may_copy = !e.host.contains(&b.host)
                || !e.device.contains(&b.device)
                || !e.host.intersect(&b.host).union(&e.device.intersect(&b.device)).contains(&all);
            let dead = match counted_body.filter(|_| may_copy) {
                Some(body) => self.body_facts(root, body).0,
                None => RangeSet::empty(),
            };
            let mut h = Copies::new(
                e.host.intersect(&b.host).union(&dead.intersect(&b.host)),
                e.device.intersect(&b.device).union(&dead.intersect(&b.device)),
            );
            let mut to_device = RangeSet::empty();
            let mut from_device = RangeSet::empty();
            match want {
                Want::Device => {
                    h.device = b.device.clone();
                    to_device = b.device.minus(&e.device);
                    // An observer in a branch of the body may not run: what only it wants is
                    // not worth a copy on the entry edge. That part stays on the host at the
                    // top of the body (the entry has it there; the back edge copies back what
                    // the body left only on the device, as `kernel` does after the write).
                    let unsure =
                        self.wanted_only_if_observed(root, counted_body, observer, &to_device).intersect(&e.host);
                    to_device = to_device.minus(&unsure);
                    h.device = h.device.minus(&unsure);
                    h.host = h.host.union(&unsure);
                }
                Want::Host => {
                    // What the first observer reads and the entry has on the host stays there:
                    // when the body leaves it only on the device, the back edge copies it back
                    // (as `kernel` would, after the write), rather than the observer copying it
                    // on every iteration, the first included.
                    let read = observer.map_or_else(|| whole(self.ctx, root), |o| self.elements_read_on_host(root, o));
                    h.host = b.host.union(&e.host.intersect(&read));
                    from_device = b.host.minus(&e.host);
                }
                Want::Nothing => {}
            }
            if want == Want::Host {
                // Elements current in neither copy of the header are kept on the host, where
                // the first observer wants them: the entry edge copies back what it lacks, the
                // back edge (`settle`) what the body left only on the device.
                let lost = whole(self.ctx, root).minus(&h.host.union(&h.device));
                h.host = h.host.union(&lost);
                from_device = from_device.union(&lost.minus(&e.host));
            } else if want != Want::Nothing {
                let lost = whole(self.ctx, root).minus(&h.host.union(&h.device));
                let on_device = lost.intersect(&b.device);
                let on_host = lost.minus(&on_device);
                h.device = h.device.union(&on_device);
                to_device = to_device.union(&on_device.minus(&e.device));
                h.host = h.host.union(&on_host);
                from_device = from_device.union(&on_host.minus(&e.host));
            }
            let to_device = to_device.minus(&dead);
            let from_device = from_device.minus(&dead);
            let why = self.reason(|| format!("the loop's body wants it there first ({})", self.observer(observer)));
            if !to_device.is_empty() {
                fixups.push(Fixup {
                    root,
                    direction: Direction::ToDevice,
                    ranges: to_device,
                    flagged: e.host_flag,
                    set_flag: None,
                    why: why.clone(),
                    observer,
                });
            }
            if !from_device.is_empty() {
                fixups.push(Fixup {
                    root,
                    direction: Direction::FromDevice,
                    ranges: from_device,
                    flagged: e.host_flag,
                    set_flag: None,
                    why: why.clone(),
                    observer,
                });
            }
            header.insert(root, h);
        }
        (header, fixups)
    }

    /// The part of `to_device` that only the body's first observer of `root`, `observer`, wants
    /// on the device when that observer may not run (it sits in a branch or an inner loop of the
    /// counted loop's body `body`, not in the body itself): the rest every path through the body
    /// wants there first. Empty when the observer surely runs or the loop is not counted.
    fn wanted_only_if_observed(
        &self,
        root: Value,
        body: Option<Block>,
        observer: Option<Op>,
        to_device: &RangeSet,
    ) -> RangeSet {
        match (body, observer) {
            (Some(body), Some(o)) if self.ctx.parent_block(o) != Some(body) => {
                to_device.minus(&self.body_facts(root, body).1)
            }
            _ => RangeSet::empty(),
        }
    }

    /// What the header needs to know of `root` in the loop body `body` (memoized): the elements
    /// dead at its top, and those every path wants on the device first.
    fn body_facts(&self, root: Value, body: Block) -> (RangeSet, RangeSet) {
        if let Some(known) = self.body_facts.borrow().get(&(body, root)) {
            return known.clone();
        }
        let (mut killed, mut exposed) = (RangeSet::empty(), RangeSet::empty());
        self.overwritten_first(root, body, &mut killed, &mut exposed);
        let facts = (killed.minus(&exposed), self.wanted_on_device_first(root, body));
        self.body_facts.borrow_mut().insert((body, root), facts.clone());
        facts
    }

    /// Follows every path through `block` from `killed` (the elements of `root` overwritten
    /// on every path so far): adds to `killed` what each path overwrites whole (a dispatch that
    /// provably writes every element, a host op that overwrites it, a free) and to `exposed`
    /// what an observer may see before that. Anything it cannot follow exposes the rest.
    fn overwritten_first(&self, root: Value, block: Block, killed: &mut RangeSet, exposed: &mut RangeSet) {
        let ctx = self.ctx;
        let all = whole(ctx, root);
        for op in self.children_touching(root, block) {
            if killed.contains(&all) {
                return;
            }
            if ctx.regions(op).is_empty() {
                match self.classify(root, op, false) {
                    None => {}
                    Some((Want::Nothing, _)) => *killed = all.clone(),
                    Some((_, observer)) => {
                        let seen = observer.map_or_else(|| all.clone(), |o| self.elements_wanted(root, o));
                        *exposed = exposed.union(&seen.minus(killed));
                    }
                }
                continue;
            }
            let single = |region: usize| match ctx.region_blocks(ctx.regions(op)[region]) {
                [only] => Some(*only),
                _ => None,
            };
            if ctx.interface::<dyn LoopLikeOpInterface>(op).is_some() {
                // May not run: what it overwrites is not overwritten on every path.
                match single(0) {
                    Some(body) => self.overwritten_first(root, body, &mut killed.clone(), exposed),
                    None => *exposed = exposed.union(&all.minus(killed)),
                }
                continue;
            }
            let branch = ctx.interface::<dyn RegionBranchOpInterface>(op);
            let successors =
                branch.as_ref().map(|b| b.successors(ctx, op, RegionPoint::Parent, &constant_integers(ctx, op)));
            let mut after: Option<RangeSet> = None;
            let mut followed = true;
            for to in successors.unwrap_or_default() {
                let path_killed = match to {
                    RegionPoint::Parent => killed.clone(),
                    RegionPoint::Region(index) => {
                        let exits = branch.as_ref().map(|b| b.successors(ctx, op, RegionPoint::Region(index), &[]));
                        match (single(index), exits.as_deref()) {
                            (Some(body), Some([RegionPoint::Parent])) => {
                                let mut k = killed.clone();
                                self.overwritten_first(root, body, &mut k, exposed);
                                k
                            }
                            _ => {
                                followed = false;
                                break;
                            }
                        }
                    }
                };
                after = Some(after.map_or(path_killed.clone(), |a| a.intersect(&path_killed)));
            }
            match (followed, after) {
                (true, Some(after)) => *killed = after,
                _ => *exposed = exposed.union(&all.minus(killed)),
            }
        }
    }

    /// The first observer of `root` from `first` on (to the end of the function, around loops).
    fn first_use_from(&self, root: Value, first: Op, _loop_op: Op) -> (Want, Option<Op>) {
        // Asked per buffer on every round of every enclosing fixpoint; the answer depends on
        // the program only.
        if let Some(&known) = self.first_uses.borrow().get(&(root, first)) {
            return known;
        }
        let found = match self.first_use(root, first) {
            Some(found) => found,
            None => self.wanted_after(root, first),
        };
        self.first_uses.borrow_mut().insert((root, first), found);
        found
    }

    /// Copies at the end of the back edge so that `back` reaches `header` (only when the loop
    /// did not settle).
    fn settle(&mut self, header: &State, back: &State, end: Block, location: Location) -> Result<(), Unsupported> {
        for (&root, h) in header {
            let Some(b) = back.get(&root) else { continue };
            let to_device = h.device.minus(&b.device);
            let from_device = h.host.minus(&b.host);
            let why = "the loop's next iteration expects it".to_string();
            let flag_guard = if b.host_flag { vec![Guard::FlagClear(root)] } else { vec![] };
            let set_guard = if b.host_flag { vec![Guard::FlagSet(root)] } else { vec![] };
            self.push(root, Direction::ToDevice, to_device, Anchor::End(end), set_guard, location, why.clone())?;
            self.push(root, Direction::FromDevice, from_device, Anchor::End(end), flag_guard, location, why)?;
        }
        Ok(())
    }

    fn single_block(&self, op: Op, region: usize) -> Result<Block, Unsupported> {
        match self.ctx.region_blocks(self.ctx.regions(op)[region]) {
            [block] => Ok(*block),
            _ => Err(self.unsupported(op, "a region of several blocks")),
        }
    }

    /// Runs `iteration` from the header state to a fixpoint, starting from `entry`; returns the
    /// header state and the last iteration's result (its plan items kept). A header that has
    /// not settled after a few rounds is widened (see [`Self::widen`]) and the body planned once
    /// more from it; the back edge then gets the copies that reach it.
    fn fixpoint(
        &mut self,
        op: Op,
        entry: &State,
        first_op: Option<Op>,
        iteration: &mut Iteration<'_, 'a>,
    ) -> Result<LoopOutcome, Unsupported> {
        self.loops += 1;
        let outcome = self.iterate(op, entry, first_op, iteration);
        self.loops -= 1;
        outcome
    }

    /// [`Self::fixpoint`]'s rounds.
    fn iterate(
        &mut self,
        op: Op,
        entry: &State,
        first_op: Option<Op>,
        iteration: &mut Iteration<'_, 'a>,
    ) -> Result<LoopOutcome, Unsupported> {
        const ROUNDS_BEFORE_WIDENING: usize = 6;
        let mut header = entry.clone();
        let mut rounds = 0;
        loop {
            let mark = self.items.len();
            let mut state = header.clone();
            let (exit, back) = iteration(self, &mut state)?;
            let (next, fixups) = self.header(entry, &back, first_op, op);
            // A flag beside a whole host copy says nothing: states that differ only there are
            // the same state (else the header can alternate between them and never settle).
            let mut next = next;
            for (&root, c) in next.iter_mut().filter(|(_, c)| c.host_flag) {
                c.normalize(&whole(self.ctx, root));
            }
            rounds += 1;
            if next == header {
                return Ok(LoopOutcome { header, exit, back, fixups });
            }
            self.items.truncate(mark);
            if rounds >= ROUNDS_BEFORE_WIDENING {
                let (widened, fixups) = self.widen(entry, &header, &next, fixups);
                let mut state = widened.clone();
                let (exit, back) = iteration(self, &mut state)?;
                return Ok(LoopOutcome { header: widened, exit, back, fixups });
            }
            header = next;
        }
    }

    /// A header for a loop whose header state does not settle: the buffers whose state is
    /// stable keep it (and their entry copies, `fixups` computed for `next`); the others have
    /// the device copy whole, which the entry edge and any back edge can reach with copies to
    /// the device alone (each element is current on the host where not on the device, or the
    /// flag says the host copy is whole).
    fn widen(&self, entry: &State, header: &State, next: &State, fixups: Vec<Fixup>) -> (State, Vec<Fixup>) {
        let mut widened = State::new();
        let mut unstable = BTreeSet::new();
        for (&root, h) in header {
            if next.get(&root) == Some(h) {
                widened.insert(root, h.clone());
                continue;
            }
            let all = whole(self.ctx, root);
            unstable.insert(root);
            widened.insert(root, Copies::new(RangeSet::empty(), all));
        }
        let mut kept: Vec<Fixup> = fixups.into_iter().filter(|f| !unstable.contains(&f.root)).collect();
        for &root in &unstable {
            let Some(e) = entry.get(&root) else { continue };
            let ranges = whole(self.ctx, root).minus(&e.device);
            if ranges.is_empty() {
                continue;
            }
            let why = self.reason(|| "the loop's state does not settle: the device copy is made whole".to_string());
            kept.push(Fixup {
                root,
                direction: Direction::ToDevice,
                ranges,
                flagged: e.host_flag,
                set_flag: None,
                why,
                observer: None,
            });
        }
        (widened, kept)
    }

    fn counted_loop(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let body = self.single_block(op, 0)?;
        let location = ctx.location(op);
        let entry = state.clone();
        let LoopOutcome { header, back, fixups, .. } =
            self.fixpoint(op, &entry, ctx.first_op(body), &mut |this, s| {
                this.block(body, s)?;
                // A counted loop leaves from the back edge (below): no separate exit state.
                Ok((State::new(), std::mem::take(s)))
            })?;
        // The back edge brings what the header needs that the body's end lacks (a header that
        // did not settle, or elements the header keeps on the host that the body left only on
        // the device); after that copy the back edge has both.
        self.settle(&header, &back, body, location)?;
        let back: State = back
            .into_iter()
            .map(|(root, b)| {
                let settled = match header.get(&root) {
                    Some(h) => Copies {
                        host: b.host.union(&h.host),
                        device: b.device.union(&h.device),
                        host_flag: b.host_flag,
                    },
                    None => b,
                };
                (root, settled)
            })
            .collect();
        let trips = trip_count(ctx, op);
        if trips != Some(0) {
            for Fixup { root, direction, ranges, flagged, set_flag, why, .. } in fixups {
                if let Some(value) = set_flag {
                    self.set_flag(root, value, Anchor::Before(op), location);
                    continue;
                }
                let mut guards = if trips.is_some_and(|t| t > 0) { vec![] } else { vec![Guard::Ran(op)] };
                if flagged {
                    guards.push(flag_guard(root, direction));
                }
                self.push(
                    root,
                    direction,
                    ranges,
                    Anchor::Before(op),
                    guards,
                    location,
                    self.reason(|| format!("{why}; hoisted out of the loop")),
                )?;
            }
        }
        // After the loop: the zero-trip path has the entry state, the others the back edge's.
        let after =
            ctx.next_op(op).map(Anchor::Before).ok_or_else(|| self.unsupported(op, "a loop that ends its block"))?;
        let end_of_body = body;
        let mut exit = State::new();
        for (&root, e) in &entry {
            let b = back.get(&root).unwrap_or(e);
            let ran = PathEnd {
                copies: Some((after, if trips.is_some() { vec![] } else { vec![Guard::Ran(op)] })),
                flag: Anchor::End(end_of_body),
                label: "when the loop ran",
            };
            let not_ran = PathEnd {
                copies: Some((after, if trips.is_some() { vec![] } else { vec![Guard::NotRan(op)] })),
                flag: Anchor::Before(op),
                label: "when the loop did not run",
            };
            let paths: Vec<(PathEnd, &Copies)> = match trips {
                Some(0) => vec![(not_ran, e)],
                Some(_) => vec![(ran, b)],
                None => vec![(not_ran, e), (ran, b)],
            };
            let merged = self.merge_paths(root, op, "the loop", &paths)?;
            exit.insert(root, merged);
        }
        *state = exit;
        Ok(())
    }

    /// The state of `root` where the paths `paths` meet after `op`: an element left current in
    /// no copy is completed on the paths that lack it (the copy the next observer wants, or the
    /// one a path that cannot take copies has); where every path has the device copy whole and
    /// they disagree on the host copy, the host copy becomes flagged instead, each path setting
    /// the flag.
    fn merge_paths(
        &mut self,
        root: Value,
        op: Op,
        what: &str,
        paths: &[(PathEnd, &Copies)],
    ) -> Result<Copies, Unsupported> {
        let ctx = self.ctx;
        // Paths that agree need nothing (most buffers, untouched by the construct).
        if let Some((_, first)) = paths.first() {
            if paths.iter().all(|(_, c)| c == first) {
                return Ok((*first).clone());
            }
        }
        let all = whole(ctx, root);
        let location = ctx.location(op);
        let mut host = all.clone();
        let mut device = all.clone();
        for (_, c) in paths {
            host = host.intersect(&c.host);
            device = device.intersect(&c.device);
        }
        // Each path either has one copy whole (or is flagged already): then a run-time flag
        // can say which, set at the end of each path, instead of copies on every path.
        let eligible = paths.iter().all(|(_, c)| c.host_flag || c.host.contains(&all) || c.device.contains(&all));
        let host_everywhere = paths.iter().all(|(_, c)| c.host.contains(&all));
        let host_somewhere = paths.iter().any(|(_, c)| c.host.contains(&all) || c.host_flag);
        // A flag is for observers that may not come (copies placed now could be wasted) and
        // for paths that cannot take copies; when every path can and the next observer surely
        // comes, guarded copies on the paths are simpler.
        let (want, observer) = self.wanted_after(root, op);
        let sure = self.surely_observed(op, want, observer);
        let all_take_copies = paths.iter().all(|(path, _)| path.copies.is_some());
        // (Not when the observer wants only part of the buffer: under a flag it copies just that.)
        let wanted = observer.map_or_else(|| all.clone(), |o| self.elements_wanted(root, o));
        let wants_all = wanted.contains(&all);
        // (Not when a path is flagged already: its copies would wait on the flag anyway, and
        // the merged state keeps what the flag knows.)
        let any_flagged = paths.iter().any(|(_, c)| c.host_flag);
        let prefer_copies = sure && all_take_copies && want != Want::Nothing && wants_all && !any_flagged;
        if eligible && !host_everywhere && host_somewhere && !prefer_copies {
            if paths.iter().all(|(_, c)| c.host_flag) {
                return Ok(Copies { host, device, host_flag: true });
            }
            if want != Want::Nothing {
                for (path, c) in paths {
                    if !c.host_flag {
                        self.set_flag(root, c.host.contains(&all), path.flag, location);
                    }
                }
                return Ok(Copies { host, device, host_flag: true });
            }
        }
        // A path that cannot take copies and whose state depends on its flag: the others make
        // one copy whole (the one the next observer wants) and set the flag to say which, so the
        // merged state stays flagged (completing the others to match the flagged path's copies
        // is not possible: which copy it has is known only at run time).
        if let (Some(side), true) = (want.side(), paths.iter().any(|(path, c)| path.copies.is_none() && c.host_flag)) {
            let why =
                self.reason(|| format!("{} after {what} at {}", self.observer(observer), self.describe(location)));
            for (path, c) in paths {
                let Some((anchor, guards)) = &path.copies else { continue };
                if c.host_flag {
                    continue;
                }
                let missing = match side {
                    Direction::FromDevice => all.minus(&c.host),
                    Direction::ToDevice => all.minus(&c.device),
                };
                let reason = self.reason(|| format!("{why}, {}", path.label));
                self.push(root, side, missing, *anchor, guards.clone(), location, reason)?;
                self.set_flag(root, side == Direction::FromDevice, path.flag, location);
            }
            return Ok(Copies { host, device, host_flag: true });
        }
        let Some(side) = want.side() else { return Ok(Copies::new(host, device)) };
        // Elements current in no copy must be completed; and when the next observer surely
        // comes (it is in the block the merge is in), what it wants that some path has is
        // completed on the paths that lack it now, under their own guards, rather than later
        // on every path.
        let mut lost = all.minus(&host.union(&device));
        // The elements current in `side`'s copy on some path.
        let current_somewhere = |side: Direction| {
            paths.iter().fold(RangeSet::empty(), |some, (_, c)| {
                some.union(match side {
                    Direction::ToDevice => &c.device,
                    Direction::FromDevice => &c.host,
                })
            })
        };
        // An element current on the host on some paths and only on the device on others goes
        // back to the host on the latter now (as `kernel` would have copied it back after the
        // write): left as it is, a later merge would have to copy it back on every path of
        // this construct, including those that did not write it.
        let on_host_somewhere = current_somewhere(Direction::FromDevice);
        lost = lost.union(&on_host_somewhere.minus(&host));
        if sure {
            let some = current_somewhere(side);
            let have = match side {
                Direction::ToDevice => &device,
                Direction::FromDevice => &host,
            };
            lost = lost.union(&some.minus(have).intersect(&wanted));
        }
        if lost.is_empty() {
            return Ok(Copies::new(host, device));
        }
        // Per element, the copy to complete: the one a path that takes no copies has, else the
        // one the next observer wants.
        let mut to_host = RangeSet::empty();
        let mut to_device = RangeSet::empty();
        let mut rest = lost.clone();
        for (path, c) in paths {
            if path.copies.is_none() {
                let keep_host = rest.intersect(&c.host);
                let keep_device = rest.minus(&keep_host);
                let (first, second) = match side {
                    Direction::FromDevice => (keep_host, keep_device),
                    Direction::ToDevice => (rest.minus(&rest.intersect(&c.device)), rest.intersect(&c.device)),
                };
                to_host = to_host.union(&first);
                to_device = to_device.union(&second);
                rest = RangeSet::empty();
            }
        }
        // An observer on the device that may not come is not worth a copy to the device on a
        // path that has the element on the host: the path that left it only on the device
        // copies it back instead (as the `kernel` strategy would have, right after the write).
        // Either way, what some path has current on the host and another only on the device
        // goes back to the host on the latter (as `kernel` copies back after the write): left
        // stale in the merged state, a later host observer would copy it on every path.
        match side {
            Direction::ToDevice if sure => {
                // What some path has current on the host goes back to the host on the paths
                // that left it only on the device (the zero-trip path of a loop included: else
                // the copy back waits for the caller and runs on every path, the paths that
                // brought it back in the loop too).
                let back = rest.intersect(&on_host_somewhere);
                to_host = to_host.union(&back);
                if ctx.interface::<dyn LoopLikeOpInterface>(op).is_none() && !self.is_while(op) {
                    // After a branch, what goes back to the host is current there on every
                    // path: the device copy is completed only where the observer wants it.
                    to_device = to_device.union(&rest.minus(&back)).union(&back.intersect(&wanted));
                } else {
                    // (Not after a loop: its paths meet at every iteration's header too, where
                    // the state the device copy is completed from is the last iteration's.)
                    to_device = to_device.union(&rest);
                }
            }
            _ => to_host = to_host.union(&rest),
        }
        let why = self.reason(|| format!("{} after {what} at {}", self.observer(observer), self.describe(location)));
        for (path, c) in paths {
            let Some((anchor, guards)) = &path.copies else { continue };
            let mut from_guards = guards.clone();
            let mut to_guards = guards.clone();
            if c.host_flag {
                from_guards.push(Guard::FlagClear(root));
                to_guards.push(Guard::FlagSet(root));
            }
            let reason = self.reason(|| format!("{why}, {}", path.label));
            self.push(
                root,
                Direction::FromDevice,
                to_host.minus(&c.host),
                *anchor,
                from_guards,
                location,
                reason.clone(),
            )?;
            self.push(root, Direction::ToDevice, to_device.minus(&c.device), *anchor, to_guards, location, reason)?;
        }
        let merged = Copies::new(host.union(&to_host), device.union(&to_device));
        // One copy is now whole on every path; where the other is whole on some paths only, a
        // run-time flag keeps that knowledge (a later copy toward it is then skipped there) —
        // when something may observe the buffer after the next observer (not the caller).
        if observer.is_some() && paths.iter().all(|(_, c)| !c.host_flag) {
            let host_whole: Vec<bool> = paths.iter().map(|(_, c)| c.host.union(&to_host).contains(&all)).collect();
            let device_whole: Vec<bool> =
                paths.iter().map(|(_, c)| c.device.union(&to_device).contains(&all)).collect();
            let device_everywhere = device_whole.iter().all(|&w| w);
            let host_everywhere = host_whole.iter().all(|&w| w);
            if device_everywhere && !host_everywhere && host_whole.iter().any(|&w| w) {
                for ((path, _), &whole_here) in paths.iter().zip(&host_whole) {
                    self.set_flag(root, whole_here, path.flag, location);
                }
                return Ok(Copies { host_flag: true, ..merged });
            }
            if host_everywhere && !device_everywhere && device_whole.iter().any(|&w| w) {
                for ((path, _), &whole_here) in paths.iter().zip(&device_whole) {
                    self.set_flag(root, !whole_here, path.flag, location);
                }
                return Ok(Copies { host_flag: true, ..merged });
            }
        }
        Ok(merged)
    }

    fn while_loop(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let branch = ctx.interface::<dyn RegionBranchOpInterface>(op).expect("region branch");
        let shape_ok = ctx.regions(op).len() == 2
            && branch.successors(ctx, op, RegionPoint::Parent, &[]).as_slice() == [RegionPoint::Region(0)]
            && branch.successors(ctx, op, RegionPoint::Region(1), &[]).as_slice() == [RegionPoint::Region(0)];
        if !shape_ok {
            return Err(self.unsupported(op, format!("the control flow of '{}'", ctx.name_str(op))));
        }
        let before = self.single_block(op, 0)?;
        let after = self.single_block(op, 1)?;
        let location = ctx.location(op);
        let entry = state.clone();
        let body_start = self.items.len();
        let LoopOutcome { header, exit, back, fixups } =
            self.fixpoint(op, &entry, ctx.first_op(before), &mut |this, s| {
                this.block(before, s)?;
                let exit = s.clone();
                this.block(after, s)?;
                Ok((exit, s.clone()))
            })?;
        self.settle(&header, &back, after, location)?;
        // A flagged top of the body from a back edge that is not: the back edge sets the flag.
        for (&root, h) in &header {
            if let Some(b) = back.get(&root).filter(|b| h.host_flag && !b.host_flag) {
                let host_whole = b.host.contains(&whole(ctx, root));
                self.set_flag(root, host_whole, Anchor::End(after), location);
            }
        }
        // A copy for an observer in the body (the second region, which may never run) waits for
        // the body's first run, behind a run-time "pending" cell: on the entry edge it could be
        // made for nothing. The first region does not touch such a buffer (its first observer is
        // in the body), so the state there is the entry's until then.
        let body_top = ctx.first_op(after);
        let mut deferred: Vec<Planned> = Vec::new();
        let mut deferred_roots: BTreeSet<Value> = BTreeSet::new();
        // The entry state once the entry edge's unconditional copies are made.
        let mut on_entry = entry.clone();
        for Fixup { root, direction, ranges, flagged, set_flag, why, observer } in fixups {
            if let Some(value) = set_flag {
                self.set_flag(root, value, Anchor::Before(op), location);
                continue;
            }
            let mut guards = if flagged { vec![flag_guard(root, direction)] } else { vec![] };
            let reason = self.reason(|| format!("{why}; hoisted out of the loop"));
            let in_body = observer.is_some_and(|o| self.is_within(o, after));
            match body_top {
                Some(top) if in_body && self.in_scope(root, Anchor::Before(top)) => {
                    guards.insert(0, Guard::Pending(op));
                    deferred_roots.insert(root);
                    let mark = self.items.len();
                    self.push(root, direction, ranges, Anchor::Before(top), guards, location, reason)?;
                    deferred.extend(self.items.drain(mark..));
                }
                _ => {
                    if guards.is_empty() {
                        // Made on the entry edge whatever happens next: the path on which the
                        // body never runs has it too.
                        if let Some(c) = on_entry.get_mut(&root) {
                            *c.side(direction) = c.side(direction).union(&ranges);
                            c.normalize(&whole(ctx, root));
                        }
                    }
                    self.push(root, direction, ranges, Anchor::Before(op), guards, location, reason)?
                }
            }
        }
        let entry = on_entry;
        let mut exit: State = exit.into_iter().filter(|(root, _)| entry.contains_key(root)).collect();
        // The exit state is the header's, which meets the entry with the back edge: where the
        // first region does not write a buffer, control that leaves before the body ever ran
        // still has the entry's state of it, so the exit is a merge of the two paths (a copy
        // after the loop for what only the body left stale then waits for the body to have run).
        let exit_roots: Vec<Value> = entry
            .iter()
            .filter(|&(root, e)| {
                !deferred_roots.contains(root)
                    && exit.get(root).is_some_and(|x| !e.host.minus(&x.host).is_empty())
                    && !self.may_write_in(*root, before)
            })
            .map(|(root, _)| *root)
            .collect();
        let merged_roots: Vec<Value> = deferred_roots.iter().copied().chain(exit_roots.iter().copied()).collect();
        if let (Some(top), false) = (body_top, merged_roots.is_empty()) {
            let key = merged_roots[0];
            self.set_pending(op, key, true, Anchor::Before(op), location);
            let mark = self.items.len();
            self.set_pending(op, key, false, Anchor::Before(top), location);
            self.items[mark].guards.push(Guard::Pending(op));
            deferred.extend(self.items.drain(mark..));
            // Before what the body's plan put at its top.
            self.items.splice(body_start..body_start, deferred);
            // After the loop the buffer is as on entry if the body never ran.
            let after_loop = ctx
                .next_op(op)
                .map(Anchor::Before)
                .ok_or_else(|| self.unsupported(op, "a loop that ends its block"))?;
            for &root in &merged_roots {
                let (Some(e), Some(x)) = (entry.get(&root), exit.get(&root).cloned()) else { continue };
                let not_entered = PathEnd {
                    copies: Some((after_loop, vec![Guard::Pending(op)])),
                    flag: Anchor::Before(op),
                    label: "when the body did not run",
                };
                let entered = PathEnd {
                    copies: Some((after_loop, vec![Guard::Entered(op)])),
                    flag: Anchor::End(after),
                    label: "when the body ran",
                };
                let merged = self.merge_paths(root, op, "the loop", &[(not_entered, e), (entered, &x)])?;
                exit.insert(root, merged);
            }
        }
        *state = exit;
        Ok(())
    }

    /// The elements of `root` that every path through `block` wants on the device before
    /// anything else touches it (what a dispatch directly in the block needs, or every region
    /// of a branch on the way).
    fn wanted_on_device_first(&self, root: Value, block: Block) -> RangeSet {
        let ctx = self.ctx;
        // What branches on the way want on every path (a branch that does not write the
        // buffer lets the search go on after it).
        let mut so_far = RangeSet::empty();
        for op in self.children_touching(root, block) {
            if ctx.regions(op).is_empty() {
                match self.classify(root, op, false) {
                    None => continue,
                    Some((Want::Device, Some(o))) if ctx.interface::<dyn LaunchOpInterface>(o).is_some() => {
                        return so_far.union(&self.elements_wanted(root, o));
                    }
                    Some(_) => return so_far,
                }
            }
            let Some(branch) = ctx.interface::<dyn RegionBranchOpInterface>(op) else { return so_far };
            if ctx.interface::<dyn LoopLikeOpInterface>(op).is_some() {
                return so_far;
            }
            let successors = branch.successors(ctx, op, RegionPoint::Parent, &constant_integers(ctx, op));
            let mut every: Option<RangeSet> = None;
            for to in successors {
                let wanted = match to {
                    RegionPoint::Region(index) => match ctx.region_blocks(ctx.regions(op)[index]) {
                        [only] => self.wanted_on_device_first(root, *only),
                        _ => RangeSet::empty(),
                    },
                    RegionPoint::Parent => RangeSet::empty(),
                };
                every = Some(every.map_or(wanted.clone(), |e| e.intersect(&wanted)));
            }
            so_far = so_far.union(&every.unwrap_or_else(RangeSet::empty));
            let writes = ctx
                .regions(op)
                .iter()
                .any(|&region| ctx.region_blocks(region).iter().any(|&inner| self.may_write_in(root, inner)));
            if writes {
                return so_far;
            }
        }
        so_far
    }

    /// The ops of `block` (in order) that name, or hold an op that names, a value that may be
    /// `root`: found from the use index in time proportional to them, not to the block.
    fn children_touching(&self, root: Value, block: Block) -> Vec<Op> {
        let ctx = self.ctx;
        let index = &self.uses;
        let (Some(first), Some(last)) = (ctx.first_op(block), ctx.last_op(block)) else { return Vec::new() };
        let to = index.end[index.position(last) as usize];
        let mine = index.uses.get(&root).map_or(&[][..], Vec::as_slice);
        let mut from = index.position(first);
        let mut found = Vec::new();
        loop {
            let next = [mine, &index.unknown[..]]
                .iter()
                .filter_map(|list| list.get(index.first_at(list, from)).copied())
                .min();
            let Some(next) = next.filter(|&n| n <= to) else { return found };
            let mut op = index.ops[next as usize];
            while ctx.parent_block(op) != Some(block) {
                match ctx.parent_op(op) {
                    Some(parent) => op = parent,
                    None => return found,
                }
            }
            found.push(op);
            from = index.end[index.position(op) as usize] + 1;
        }
    }

    /// Whether anything in `block` (at any depth) may write `root`, on either side, or do
    /// what the planner cannot see into (a call, an op of unknown effects).
    fn may_write_in(&self, root: Value, block: Block) -> bool {
        let ctx = self.ctx;
        let ops = self.children_touching(root, block);
        ops.into_iter().flat_map(|op| ctx.walk(op)).any(|n| {
            if !ctx.operands(n).iter().any(|&v| is_buffer(ctx, v) && self.may_alias(v, root)) {
                return false;
            }
            if ctx.interface::<dyn LaunchOpInterface>(n).is_some() {
                return self.kernels.args(ctx, n).iter().any(|a| a.writes && self.may_alias(a.value, root));
            }
            if ctx.interface::<dyn CallOpInterface>(n).is_some() {
                return true;
            }
            let Some(definition) = ctx.definition(ctx.name(n)) else { return true };
            if definition.traits().contains(OpTraits::PURE) {
                return false;
            }
            match definition.memory_effects(ctx, n) {
                MemoryEffects::Unknown => true,
                MemoryEffects::Known(effects) => effects.iter().any(|e| {
                    e.kind != EffectKind::Read
                        && match e.target {
                            EffectTarget::Operand(i) => {
                                ctx.operands(n).get(i).is_some_and(|&v| self.may_alias(v, root))
                            }
                            _ => true,
                        }
                }),
            }
        })
    }

    /// Whether `op` is a `while`-like op (a region branch whose second region returns to the
    /// first).
    fn is_while(&self, op: Op) -> bool {
        let ctx = self.ctx;
        ctx.interface::<dyn RegionBranchOpInterface>(op).is_some_and(|branch| {
            ctx.regions(op).len() == 2
                && branch.successors(ctx, op, RegionPoint::Region(1), &[]).as_slice() == [RegionPoint::Region(0)]
        })
    }

    /// Whether `op` is nested (at any depth) in `block`.
    fn is_within(&self, op: Op, block: Block) -> bool {
        let mut cursor = Some(op);
        while let Some(current) = cursor {
            if self.ctx.parent_block(current) == Some(block) {
                return true;
            }
            cursor = self.ctx.parent_op(current);
        }
        false
    }

    fn branch(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let branch = ctx.interface::<dyn RegionBranchOpInterface>(op).expect("region branch");
        let constants = constant_integers(ctx, op);
        let successors = branch.successors(ctx, op, RegionPoint::Parent, &constants);
        let mut ends: Vec<(Option<Block>, State)> = Vec::new();
        for &to in &successors {
            match to {
                RegionPoint::Parent => ends.push((None, state.clone())),
                RegionPoint::Region(index) => {
                    if branch.successors(ctx, op, RegionPoint::Region(index), &[]).as_slice() != [RegionPoint::Parent] {
                        return Err(self.unsupported(op, format!("the control flow of '{}'", ctx.name_str(op))));
                    }
                    let block = self.single_block(op, index)?;
                    let mut s = state.clone();
                    self.block(block, &mut s)?;
                    ends.push((Some(block), s));
                }
            }
        }
        let mut merged = State::new();
        let mark = self.items.len();
        let after = ctx.next_op(op);
        for &root in state.keys() {
            let empty = Copies::new(RangeSet::empty(), RangeSet::empty());
            let paths: Vec<(PathEnd, &Copies)> = ends
                .iter()
                .map(|(block, s)| {
                    let path = match block {
                        Some(block) => PathEnd {
                            copies: Some((Anchor::End(*block), vec![])),
                            flag: Anchor::End(*block),
                            label: "at the end of a region",
                        },
                        // After the op, behind a cell that each region clears (set below
                        // when a copy uses it).
                        None => PathEnd {
                            copies: after.map(|next| (Anchor::Before(next), vec![Guard::Skipped(op)])),
                            flag: Anchor::Before(op),
                            label: "when no region runs",
                        },
                    };
                    (path, s.get(&root).unwrap_or(&empty))
                })
                .collect();
            let copies = self.merge_paths(root, op, "the branch", &paths)?;
            merged.insert(root, copies);
        }
        let skipped =
            self.items[mark..].iter().find(|item| item.guards.contains(&Guard::Skipped(op))).map(|i| i.buffer);
        if let Some(key) = skipped {
            let location = ctx.location(op);
            self.set_pending(op, key, true, Anchor::Before(op), location);
            for (block, _) in &ends {
                if let Some(block) = block {
                    self.set_pending(op, key, false, Anchor::End(*block), location);
                }
            }
        }
        *state = merged;
        Ok(())
    }
}

/// Inserts the planned transfers; returns how many went each way (to the device, from it).
pub fn emit(ctx: &mut Context, plan: &Plan, reasons: bool) -> [u64; 2] {
    let mut counts = [0u64; 2];
    let mut emitter =
        Emitter { plan, guards: FxHashMap::default(), flags: FxHashMap::default(), pending: FxHashMap::default() };
    // The value each flag was last set to at each place: setting it again there is a no-op.
    let mut flag_values: FxHashMap<(Anchor, Vec<Guard>, Value), bool> = FxHashMap::default();
    for item in &plan.items {
        if let Action::SetFlag(value) = item.action {
            if flag_values.insert((item.anchor, item.guards.clone(), item.buffer), value) == Some(value) {
                continue;
            }
        }
        let anchor = emitter.guarded(ctx, item.anchor, &item.guards, item.location);
        if let Action::SetFlag(_) | Action::SetPending(..) = item.action {
            let (cell, value) = match item.action {
                Action::SetPending(looped, value) => (emitter.pending_cell(ctx, looped), value),
                Action::SetFlag(value) => (emitter.flag(ctx, item.buffer), value),
                Action::Transfer => unreachable!("matched above"),
            };
            let i1 = ctx.integer_type(1);
            let constant = emit::constant(ctx, anchor, i64::from(value), i1, item.location);
            let zero = index_constant(ctx, anchor, 0, item.location);
            emit::store(ctx, anchor, constant, cell, zero, item.location);
            continue;
        }
        let reason = reasons.then_some(item.reason.as_str());
        let slot = usize::from(item.direction == Direction::FromDevice);
        if let Some(index) = item.element {
            let one = index_constant(ctx, anchor, 1, item.location);
            let op = transfer(ctx, anchor, item.direction, item.buffer, None, item.location, reason);
            ctx.set_operands(op, &[item.buffer, index, one]);
            counts[slot] += 1;
            continue;
        }
        for range in item.ranges.ranges() {
            transfer(ctx, anchor, item.direction, item.buffer, Some(range), item.location, reason);
            counts[slot] += 1;
        }
    }
    counts
}

/// What emission builds once and reuses: the `scf.if` of each chain of guards at an anchor,
/// and the flag cell of each buffer.
struct Emitter<'p> {
    plan: &'p Plan,
    guards: FxHashMap<(Anchor, Vec<Guard>), Block>,
    flags: FxHashMap<Value, Value>,
    /// The "deferred copies pending" cell of each `while` loop that has one.
    pending: FxHashMap<Op, Value>,
}

impl Emitter<'_> {
    /// The run-time "host copy current" flag of `root`: a one-element `i1` buffer allocated at
    /// the start of the function, only ever touched by the host.
    fn flag(&mut self, ctx: &mut Context, root: Value) -> Value {
        if let Some(&cell) = self.flags.get(&root) {
            return cell;
        }
        let cell = self.new_cell(ctx);
        self.flags.insert(root, cell);
        cell
    }

    /// The cell that says whether `looped`'s deferred copies are still to be made.
    fn pending_cell(&mut self, ctx: &mut Context, looped: Op) -> Value {
        if let Some(&cell) = self.pending.get(&looped) {
            return cell;
        }
        let cell = self.new_cell(ctx);
        self.pending.insert(looped, cell);
        cell
    }

    /// A one-element `i1` buffer allocated at the start of the function.
    fn new_cell(&mut self, ctx: &mut Context) -> Value {
        let body = ctx
            .interface::<dyn CallableOpInterface>(self.plan.function)
            .and_then(|c| c.body(ctx, self.plan.function))
            .expect("a planned function has a body");
        let block = ctx.region_blocks(body)[0];
        let first = ctx.first_op(block).expect("a function body ends in a return");
        let location = ctx.location(self.plan.function);
        emit::state_cell(ctx, Anchor::Before(first), 1, location)
    }

    /// The anchor inside the chain of `guards` at `anchor` (built on first use).
    fn guarded(&mut self, ctx: &mut Context, anchor: Anchor, guards: &[Guard], location: Location) -> Anchor {
        let mut current = anchor;
        for depth in 0..guards.len() {
            let key = (anchor, guards[..=depth].to_vec());
            if let Some(&block) = self.guards.get(&key) {
                current = Anchor::End(block);
                continue;
            }
            let condition = match guards[depth] {
                Guard::Ran(looped) | Guard::NotRan(looped) => {
                    let predicate =
                        if matches!(guards[depth], Guard::Ran(_)) { IntPredicate::Slt } else { IntPredicate::Sge };
                    let looping = ctx.interface::<dyn LoopLikeOpInterface>(looped).expect("a counted loop");
                    let lower = looping.lower_bound(ctx, looped).expect("a counted loop has bounds");
                    let upper = looping.upper_bound(ctx, looped).expect("a counted loop has bounds");
                    compare(ctx, current, predicate, lower, upper, location)
                }
                Guard::FlagClear(_) | Guard::FlagSet(_) | Guard::Pending(_) | Guard::Entered(_) | Guard::Skipped(_) => {
                    let cell = match guards[depth] {
                        Guard::FlagClear(root) | Guard::FlagSet(root) => self.flag(ctx, root),
                        Guard::Pending(looped) | Guard::Entered(looped) | Guard::Skipped(looped) => {
                            self.pending_cell(ctx, looped)
                        }
                        _ => unreachable!("matched above"),
                    };
                    let zero = index_constant(ctx, current, 0, location);
                    let value = emit::load(ctx, current, cell, zero, location);
                    let i1 = ctx.integer_type(1);
                    let wanted =
                        i64::from(matches!(guards[depth], Guard::FlagSet(_) | Guard::Pending(_) | Guard::Skipped(_)));
                    let expected = emit::constant(ctx, current, wanted, i1, location);
                    compare(ctx, current, IntPredicate::Eq, value, expected, location)
                }
            };
            let block = guard(ctx, current, condition, location);
            self.guards.insert(key, block);
            current = Anchor::End(block);
        }
        current
    }
}
