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
//!   valid in neither is completed by a copy guarded by whether the loop ran. So nothing is
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
use super::dispatch::{dispatch_args, element_count, kernel_of, shape};
use super::emit::{compare, guard, index_constant, insert, transfer, Anchor, Direction};
use super::insert::describe_need;
use super::kernel_effects::KernelEffects;
use super::ranges::RangeSet;
use hat_dialects::semantics::IntPredicate;
use hat_ir::interfaces::{
    constant_integer, constant_integers, resolve_callee, trip_count, CallOpInterface, CallableOpInterface,
    LaunchOpInterface, LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint,
};
use hat_ir::verifier::symbol_name;
use hat_ir::{
    Block, Context, EffectKind, EffectTarget, Extent, Location, MemoryEffects, MemorySpace, Op, OpTraits, Value,
};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

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
    host: RangeSet,
    device: RangeSet,
}

impl Copies {
    fn side(&mut self, side: Direction) -> &mut RangeSet {
        match side {
            Direction::ToDevice => &mut self.device,
            Direction::FromDevice => &mut self.host,
        }
    }
}

type State = BTreeMap<Value, Copies>;

/// A copy the entry edge of a loop needs.
struct Fixup {
    root: Value,
    direction: Direction,
    ranges: RangeSet,
    why: String,
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
    /// Whether the header state reached a fixpoint (else the back edge needs copies).
    settled: bool,
}

/// One iteration of a loop from the header state: (exit state, back-edge state).
type Iteration<'i, 'p> = dyn FnMut(&mut Planner<'p>, &mut State) -> Result<(State, State), Unsupported> + 'i;

/// A guard on a planned transfer: whether a loop ran at least once.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Guard {
    Ran(Op),
    NotRan(Op),
}

/// One planned transfer.
#[derive(Clone, Debug)]
struct Planned {
    anchor: Anchor,
    guard: Option<Guard>,
    direction: Direction,
    buffer: Value,
    ranges: RangeSet,
    /// A one-element copy at this (dynamic, rank-1) index instead of `ranges`.
    element: Option<Value>,
    location: Location,
    reason: String,
}

/// The transfers planned for one function.
pub struct Plan {
    items: Vec<Planned>,
}

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

/// Plans the transfers of `function` (a host function with a body).
pub fn plan(ctx: &Context, function: Op, effects: &FxHashMap<Op, KernelEffects>) -> Result<Plan, Unsupported> {
    let body = ctx
        .interface::<dyn CallableOpInterface>(function)
        .and_then(|c| c.body(ctx, function))
        .ok_or_else(|| Unsupported { what: "a function without a body".into(), location: ctx.location(function) })?;
    let blocks = ctx.region_blocks(body);
    let [entry] = blocks else {
        return Err(Unsupported { what: "a function of several blocks".into(), location: ctx.location(function) });
    };
    let params: Vec<Value> = ctx.block_arguments(*entry).iter().copied().filter(|&v| is_buffer(ctx, v)).collect();
    let mut planner = Planner {
        ctx,
        function,
        roots: BufferRoots::of(ctx, function),
        effects,
        params: params.clone(),
        items: Vec::new(),
    };
    let mut state: State =
        params.iter().map(|&p| (p, Copies { host: RangeSet::whole(), device: RangeSet::empty() })).collect();
    planner.block(*entry, &mut state)?;
    Ok(Plan { items: planner.items })
}

struct Planner<'a> {
    ctx: &'a Context,
    function: Op,
    roots: BufferRoots,
    effects: &'a FxHashMap<Op, KernelEffects>,
    params: Vec<Value>,
    items: Vec<Planned>,
}

fn whole(ctx: &Context, buffer: Value) -> RangeSet {
    RangeSet::whole().clamp(element_count(ctx, buffer))
}

impl<'a> Planner<'a> {
    fn unsupported(&self, op: Op, what: impl Into<String>) -> Unsupported {
        Unsupported { what: what.into(), location: self.ctx.location(op) }
    }

    fn describe(&self, location: Location) -> String {
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
        match self.roots.roots(value) {
            Roots::Known(set) => set.into_iter().filter(|r| state.contains_key(r)).collect(),
            Roots::Unknown => state.keys().copied().collect(),
        }
    }

    fn may_alias(&self, value: Value, root: Value) -> bool {
        match self.roots.roots(value) {
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
    #[allow(clippy::too_many_arguments)]
    fn need(
        &mut self,
        state: &mut State,
        root: Value,
        side: Direction,
        ranges: &RangeSet,
        anchor: Anchor,
        guard: Option<Guard>,
        location: Location,
        reason: &dyn Fn() -> String,
    ) -> Result<(), Unsupported> {
        let Some(copies) = state.get_mut(&root) else { return Ok(()) };
        let missing = ranges.clamp(element_count(self.ctx, root)).minus(copies.side(side));
        if missing.is_empty() {
            return Ok(());
        }
        let updated = copies.side(side).union(&missing);
        *copies.side(side) = updated;
        self.push(root, side, missing, anchor, guard, location, reason())
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        root: Value,
        direction: Direction,
        ranges: RangeSet,
        anchor: Anchor,
        guard: Option<Guard>,
        location: Location,
        reason: String,
    ) -> Result<(), Unsupported> {
        if ranges.is_empty() {
            return Ok(());
        }
        if !self.in_scope(root, anchor) {
            return Err(Unsupported { what: format!("a copy of {} out of its scope", self.name(root)), location });
        }
        self.items.push(Planned { anchor, guard, direction, buffer: root, ranges, element: None, location, reason });
        Ok(())
    }

    fn block(&mut self, block: Block, state: &mut State) -> Result<(), Unsupported> {
        let ops: Vec<Op> = self.ctx.block_ops(block).collect();
        for op in ops {
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
            return self.counted_loop(op, state);
        }
        if let Some(branch) = ctx.interface::<dyn RegionBranchOpInterface>(op) {
            let repetitive = (0..ctx.regions(op).len()).any(|i| branch.is_repetitive_region(ctx, op, i));
            return if repetitive { self.while_loop(op, state) } else { self.branch(op, state) };
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

    fn dispatch(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let unknown = KernelEffects::default();
        let kernel = kernel_of(ctx, op);
        let effects = kernel.and_then(|k| self.effects.get(&k)).unwrap_or(&unknown);
        let Some(args) = dispatch_args(ctx, op, effects) else { return Ok(()) };
        let kernel_name = kernel.and_then(|k| symbol_name(ctx, k)).unwrap_or("?").to_string();
        let location = ctx.location(op);
        let at = self.describe(location);
        for arg in &args {
            for root in self.roots_of(state, arg.value) {
                let reason = || format!("{} at {at}", describe_need(arg, &kernel_name));
                self.need(state, root, Direction::ToDevice, &arg.needs, Anchor::Before(op), None, location, &reason)?;
            }
        }
        for arg in args.iter().filter(|a| a.writes) {
            let roots = self.roots_of(state, arg.value);
            let single = roots.len() == 1;
            for root in roots {
                let copies = state.get_mut(&root).expect("roots_of gives tracked roots");
                if single && arg.writes_all {
                    copies.device = whole(ctx, root);
                    copies.host = RangeSet::empty();
                } else {
                    copies.host = copies.host.minus(&arg.written);
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
                self.need(state, root, Direction::FromDevice, &ranges, Anchor::Before(op), None, location, &reason)?;
                if clobbers {
                    state.get_mut(&root).expect("tracked").device = RangeSet::empty();
                }
            }
        }
        Ok(())
    }

    fn call(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let call = ctx.interface::<dyn CallOpInterface>(op).expect("a call");
        let arguments: Vec<Value> = ctx.operands(op)[call.arguments(ctx, op)].to_vec();
        let Some(callee) = resolve_callee(ctx, op) else {
            return self.on_host(op, state, &arguments, true, "passed to an unknown function");
        };
        let callee_name = symbol_name(ctx, callee).unwrap_or("?").to_string();
        let callable = ctx.interface::<dyn CallableOpInterface>(callee).expect("resolve_callee gives callables");
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
            let (reads, must_write, writes) = match &declared {
                MemoryEffects::Unknown => (true, false, true),
                MemoryEffects::Known(effects) => {
                    let mine = effects.iter().filter(|e| e.target == EffectTarget::Parameter(index));
                    let (mut r, mut mw, mut w) = (false, false, false);
                    for e in mine {
                        match e.kind {
                            EffectKind::Read => r = true,
                            EffectKind::Write => {
                                w = true;
                                mw |= e.must && e.extent == Extent::Whole;
                            }
                            _ => {}
                        }
                    }
                    (r, mw, w)
                }
            };
            let roots = self.roots_of(state, value);
            let single = roots.len() == 1;
            for root in roots {
                if reads || (writes && !(must_write && single)) {
                    let ranges = whole(ctx, root);
                    let verb = if reads { "read" } else { "partly written" };
                    let reason = || format!("{verb} by @{callee_name} at {at}");
                    self.need(
                        state,
                        root,
                        Direction::FromDevice,
                        &ranges,
                        Anchor::Before(op),
                        None,
                        location,
                        &reason,
                    )?;
                }
                if writes {
                    let copies = state.get_mut(&root).expect("tracked");
                    copies.device = RangeSet::empty();
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
                self.need(state, root, Direction::FromDevice, &ranges, Anchor::Before(op), None, location, &reason)?;
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
                        state.insert(result, Copies { host: whole(ctx, result), device: whole(ctx, result) });
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
                                self.need(state, root, side, &ranges, Anchor::Before(op), None, location, &reason)?
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
                        if !(effect.must && single && extent.is_some()) {
                            let reason = || format!("partly written at {at}: the rest must be current");
                            self.need(state, root, side, &ranges, Anchor::Before(op), None, location, &reason)?;
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
                        }
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
        if let (true, Extent::Element { first, count: 1 }) = (other_whole, extent) {
            if shape(ctx, root).len() == 1 && self.in_scope(root, Anchor::Before(op)) {
                let index = ctx.operand(op, first as usize);
                self.items.push(Planned {
                    anchor: Anchor::Before(op),
                    guard: None,
                    direction: side,
                    buffer: root,
                    ranges: RangeSet::empty(),
                    element: Some(index),
                    location,
                    reason: reason(),
                });
                return Ok(());
            }
        }
        self.need(state, root, side, &all, Anchor::Before(op), None, location, reason)
    }

    /// Which copy of `root` the first observer after `op` (in program order, around enclosing
    /// loops) wants, and that observer.
    fn wanted_after(&self, root: Value, op: Op) -> (Want, Option<Op>) {
        let ctx = self.ctx;
        let mut cursor = op;
        loop {
            let mut next = ctx.next_op(cursor);
            while let Some(n) = next {
                if let Some(found) = self.first_use(root, n) {
                    return found;
                }
                next = ctx.next_op(n);
            }
            let Some(parent) = ctx.parent_op(cursor) else { break };
            if parent == self.function {
                break;
            }
            let loops = ctx
                .interface::<dyn RegionBranchOpInterface>(parent)
                .is_some_and(|b| (0..ctx.regions(parent).len()).any(|i| b.is_repetitive_region(ctx, parent, i)));
            if loops {
                for &region in ctx.regions(parent) {
                    for &block in ctx.region_blocks(region) {
                        for n in ctx.block_ops(block) {
                            if let Some(found) = self.first_use(root, n) {
                                return found;
                            }
                        }
                    }
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

    /// The first observer of `root` in `op` (pre-order), if any.
    fn first_use(&self, root: Value, op: Op) -> Option<(Want, Option<Op>)> {
        let ctx = self.ctx;
        for n in ctx.walk(op) {
            let plumbing = hat_dialects::arith_views::SelectOp::wrap(ctx, n).is_some()
                || ctx.interface::<dyn RegionBranchOpInterface>(n).is_some()
                || (ctx.traits(n).contains(OpTraits::TERMINATOR) && !ctx.traits(n).contains(OpTraits::RETURN_LIKE))
                || (ctx.traits(n).contains(OpTraits::RETURN_LIKE) && ctx.parent_op(n) != Some(self.function));
            if plumbing {
                continue;
            }
            if !ctx.operands(n).iter().any(|&v| is_buffer(ctx, v) && self.may_alias(v, root)) {
                continue;
            }
            if ctx.interface::<dyn LaunchOpInterface>(n).is_some() {
                return Some((Want::Device, Some(n)));
            }
            let frees = ctx.definition(ctx.name(n)).is_some_and(|d| {
                d.memory_effects(ctx, n).known().is_some_and(|e| e.iter().any(|e| e.kind == EffectKind::Free))
            });
            return Some((if frees { Want::Nothing } else { Want::Host }, Some(n)));
        }
        None
    }

    fn observer(&self, observer: Option<Op>) -> String {
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
        for (&root, e) in entry {
            let Some(b) = back.get(&root) else {
                header.insert(root, e.clone());
                continue;
            };
            let (want, observer) = match first_op {
                Some(first) => self.first_use_from(root, first, loop_op),
                None => (Want::Nothing, None),
            };
            let mut h = Copies { host: e.host.intersect(&b.host), device: e.device.intersect(&b.device) };
            let mut to_device = RangeSet::empty();
            let mut from_device = RangeSet::empty();
            match want {
                Want::Device => {
                    h.device = b.device.clone();
                    to_device = b.device.minus(&e.device);
                }
                Want::Host => {
                    h.host = b.host.clone();
                    from_device = b.host.minus(&e.host);
                }
                Want::Nothing => {}
            }
            if want != Want::Nothing {
                let lost = whole(self.ctx, root).minus(&h.host.union(&h.device));
                let on_device = lost.intersect(&b.device);
                let on_host = lost.minus(&on_device);
                h.device = h.device.union(&on_device);
                to_device = to_device.union(&on_device.minus(&e.device));
                h.host = h.host.union(&on_host);
                from_device = from_device.union(&on_host.minus(&e.host));
            }
            let why = format!("the loop's body wants it there first ({})", self.observer(observer));
            if !to_device.is_empty() {
                fixups.push(Fixup { root, direction: Direction::ToDevice, ranges: to_device, why: why.clone() });
            }
            if !from_device.is_empty() {
                fixups.push(Fixup { root, direction: Direction::FromDevice, ranges: from_device, why });
            }
            header.insert(root, h);
        }
        (header, fixups)
    }

    /// The first observer of `root` from `first` on (to the end of the function, around loops).
    fn first_use_from(&self, root: Value, first: Op, _loop_op: Op) -> (Want, Option<Op>) {
        match self.first_use(root, first) {
            Some(found) => found,
            None => self.wanted_after(root, first),
        }
    }

    /// Copies at the end of the back edge so that `back` reaches `header` (only when the loop
    /// did not settle).
    fn settle(&mut self, header: &State, back: &State, end: Block, location: Location) -> Result<(), Unsupported> {
        for (&root, h) in header {
            let Some(b) = back.get(&root) else { continue };
            let to_device = h.device.minus(&b.device);
            let from_device = h.host.minus(&b.host);
            let why = "the loop's next iteration expects it".to_string();
            self.push(root, Direction::ToDevice, to_device, Anchor::End(end), None, location, why.clone())?;
            self.push(root, Direction::FromDevice, from_device, Anchor::End(end), None, location, why)?;
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
    /// header state and the last iteration's result (its plan items kept).
    fn fixpoint(
        &mut self,
        op: Op,
        entry: &State,
        first_op: Option<Op>,
        iteration: &mut Iteration<'_, 'a>,
    ) -> Result<LoopOutcome, Unsupported> {
        let mut header = entry.clone();
        let mut rounds = 0;
        loop {
            let mark = self.items.len();
            let mut state = header.clone();
            let (exit, back) = iteration(self, &mut state)?;
            let (next, fixups) = self.header(entry, &back, first_op, op);
            rounds += 1;
            let settled = next == header;
            if settled || rounds >= 8 {
                return Ok(LoopOutcome { header, exit, back, fixups, settled });
            }
            self.items.truncate(mark);
            header = next;
        }
    }

    fn counted_loop(&mut self, op: Op, state: &mut State) -> Result<(), Unsupported> {
        let ctx = self.ctx;
        let body = self.single_block(op, 0)?;
        let location = ctx.location(op);
        let entry = state.clone();
        let LoopOutcome { header, back, fixups, settled, .. } =
            self.fixpoint(op, &entry, ctx.first_op(body), &mut |this, s| {
                this.block(body, s)?;
                Ok((s.clone(), s.clone()))
            })?;
        if !settled {
            self.settle(&header, &back, body, location)?;
        }
        let trips = trip_count(ctx, op);
        let ran_guard = if trips.is_some_and(|t| t > 0) { None } else { Some(Guard::Ran(op)) };
        if trips != Some(0) {
            for Fixup { root, direction, ranges, why } in fixups {
                self.push(
                    root,
                    direction,
                    ranges,
                    Anchor::Before(op),
                    ran_guard,
                    location,
                    format!("{why}; hoisted out of the loop"),
                )?;
            }
        }
        // After the loop: the zero-trip path has the entry state, the others the back edge's.
        let after =
            ctx.next_op(op).map(Anchor::Before).ok_or_else(|| self.unsupported(op, "a loop that ends its block"))?;
        let mut exit = State::new();
        for (&root, e) in &entry {
            let b = match trips {
                Some(0) => e,
                _ => back.get(&root).unwrap_or(e),
            };
            let e = if trips.is_some_and(|t| t > 0) { b } else { e };
            let mut x = Copies { host: e.host.intersect(&b.host), device: e.device.intersect(&b.device) };
            let lost = whole(ctx, root).minus(&x.host.union(&x.device));
            if !lost.is_empty() {
                let (want, observer) = self.wanted_after(root, op);
                if let Some(side) = want.side() {
                    let why = format!("{} after the loop at {}", self.observer(observer), self.describe(location));
                    let (b_side, e_side) = match side {
                        Direction::ToDevice => (&b.device, &e.device),
                        Direction::FromDevice => (&b.host, &e.host),
                    };
                    let ran = lost.minus(b_side);
                    let not_ran = lost.minus(e_side);
                    let (g_ran, g_not) =
                        if trips.is_some() { (None, None) } else { (Some(Guard::Ran(op)), Some(Guard::NotRan(op))) };
                    self.push(root, side, ran, after, g_ran, location, format!("{why}, when the loop ran"))?;
                    self.push(
                        root,
                        side,
                        not_ran,
                        after,
                        g_not,
                        location,
                        format!("{why}, when the loop did not run"),
                    )?;
                    let widened = x.side(side).union(&lost);
                    *x.side(side) = widened;
                }
            }
            exit.insert(root, x);
        }
        *state = exit;
        Ok(())
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
        let LoopOutcome { header, exit, back, fixups, settled } =
            self.fixpoint(op, &entry, ctx.first_op(before), &mut |this, s| {
                this.block(before, s)?;
                let exit = s.clone();
                this.block(after, s)?;
                Ok((exit, s.clone()))
            })?;
        if !settled {
            self.settle(&header, &back, after, location)?;
        }
        for Fixup { root, direction, ranges, why } in fixups {
            self.push(
                root,
                direction,
                ranges,
                Anchor::Before(op),
                None,
                location,
                format!("{why}; hoisted out of the loop"),
            )?;
        }
        *state = exit.into_iter().filter(|(root, _)| entry.contains_key(root)).collect();
        Ok(())
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
        let location = ctx.location(op);
        let skip = ends.iter().find(|(b, _)| b.is_none()).map(|(_, s)| s.clone());
        let mut merged = State::new();
        for (&root, _) in state.iter() {
            let mut host = whole(ctx, root);
            let mut device = whole(ctx, root);
            for (_, s) in &ends {
                let c = s.get(&root).cloned().unwrap_or(Copies { host: RangeSet::empty(), device: RangeSet::empty() });
                host = host.intersect(&c.host);
                device = device.intersect(&c.device);
            }
            let lost = whole(ctx, root).minus(&host.union(&device));
            if !lost.is_empty() {
                let (want, observer) = self.wanted_after(root, op);
                if let Some(side) = want.side() {
                    // Per element, the copy to complete: the one the skipping path has (it
                    // cannot take copies), else the one the next observer wants.
                    let (to_host, to_device) = match &skip {
                        Some(s) => {
                            let c = &s[&root];
                            let preferred = match side {
                                Direction::ToDevice => lost.intersect(&c.device),
                                Direction::FromDevice => lost.intersect(&c.host),
                            };
                            let rest = lost.minus(&preferred);
                            match side {
                                Direction::ToDevice => (rest, preferred),
                                Direction::FromDevice => (preferred, rest),
                            }
                        }
                        None => match side {
                            Direction::ToDevice => (RangeSet::empty(), lost.clone()),
                            Direction::FromDevice => (lost.clone(), RangeSet::empty()),
                        },
                    };
                    let why = format!("{} after the branch at {}", self.observer(observer), self.describe(location));
                    for (block, s) in &ends {
                        let Some(block) = block else { continue };
                        let c = &s[&root];
                        self.push(
                            root,
                            Direction::FromDevice,
                            to_host.minus(&c.host),
                            Anchor::End(*block),
                            None,
                            location,
                            why.clone(),
                        )?;
                        self.push(
                            root,
                            Direction::ToDevice,
                            to_device.minus(&c.device),
                            Anchor::End(*block),
                            None,
                            location,
                            why.clone(),
                        )?;
                    }
                    host = host.union(&to_host);
                    device = device.union(&to_device);
                }
            }
            merged.insert(root, Copies { host, device });
        }
        *state = merged;
        Ok(())
    }
}

/// Inserts the planned transfers; returns how many went each way (to the device, from it).
pub fn emit(ctx: &mut Context, plan: &Plan, reasons: bool) -> [u64; 2] {
    let mut counts = [0u64; 2];
    let mut guards: FxHashMap<(Anchor, Guard), Block> = FxHashMap::default();
    for item in &plan.items {
        let anchor = match item.guard {
            None => item.anchor,
            Some(guard_kind) => {
                let block = *guards.entry((item.anchor, guard_kind)).or_insert_with(|| {
                    let (loop_op, predicate) = match guard_kind {
                        Guard::Ran(op) => (op, IntPredicate::Slt),
                        Guard::NotRan(op) => (op, IntPredicate::Sge),
                    };
                    let looped = ctx.interface::<dyn LoopLikeOpInterface>(loop_op).expect("a counted loop");
                    let lower = looped.lower_bound(ctx, loop_op).expect("a counted loop has bounds");
                    let upper = looped.upper_bound(ctx, loop_op).expect("a counted loop has bounds");
                    let condition = compare(ctx, item.anchor, predicate, lower, upper, item.location);
                    guard(ctx, item.anchor, condition, item.location)
                });
                Anchor::End(block)
            }
        };
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
    let _ = insert;
    counts
}
