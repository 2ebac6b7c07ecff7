//! `track-accesses`: prepares a program for the runtime-tracking strategy
//! (`TransferMode::Tracking` of the executor). It places no transfer; it tells the runtime, at run
//! time, when the host touches a buffer and what each dispatch does to its arguments, so that the
//! runtime can copy exactly what a hook or a dispatch needs.
//!
//! # Hooks around host accesses
//!
//! In every host function (a callable with a body and the `HOST_CODE` trait), every access of a
//! buffer's host copy is wrapped in the `buffer` dialect's hooks:
//!
//! ```text
//! buffer.before_host_read  %b[%offset, %count]        // reads:  before the op
//! buffer.before_host_write %b[%offset, %count] {hat.must_write}
//! <the op>
//! buffer.after_host_read   %b[%offset, %count]        // reads:  after the op
//! buffer.after_host_write  %b[%offset, %count]        // writes: after the op
//! ```
//!
//! - What is an access is asked of the memory-effects interface, never of op names: a read or a
//!   write of an operand's `Host` copy, or its `Current` copy (host code runs on the host). The
//!   effect's extent gives the range: one element (`buffer.load`/`store`) becomes the flat,
//!   row-major element `[flat, 1]` (dimensions from the static shape, `buffer.dim` for dynamic
//!   ones), a span is used as it is, the whole buffer has no range.
//! - Calls ([`CallOpInterface`]) of a declaration (a host function) are wrapped per parameter as
//!   its [`CallableOpInterface::parameter_effects`] say; a buffer argument the declaration says
//!   nothing about, and every argument of a declaration whose effects are unknown, counts as read
//!   and (maybe) written. Calls of functions with a body are not wrapped: their bodies are.
//! - Dispatches ([`LaunchOpInterface`]) are not wrapped; they are annotated (below).
//! - Ops with regions that implement [`RegionBranchOpInterface`] or [`LoopLikeOpInterface`] are
//!   control flow: their effects are those of their bodies, which are wrapped.
//! - An op with unknown effects that takes buffers counts as reading and (maybe) writing each of
//!   them whole.
//! - Not wrapped: terminators (nothing can follow them), the hooks themselves, and ops with an
//!   effect on a `Device` copy — the transfers of a plan another pass placed, which the tracking
//!   runtime ignores (it moves data itself).
//! - A module that already has `hat.tracked` gets no second set of hooks: running the pass twice
//!   only recomputes the dispatch annotations.
//!
//! `hat.must_write` (a unit attribute on `buffer.before_host_write`) says that the op writes
//! every element of the range for certain (a must-write: `buffer.store`, the destination of
//! `buffer.copy`), so the old contents are dead and the runtime need not bring them home first.
//! Without it a write is a may-write (a host function declared `write` may leave elements
//! untouched): the runtime makes the range's host copy current before the op. The safe default is
//! the absent attribute.
//!
//! # Dispatch annotations
//!
//! Every launch gets `hat.arg_access`, one string per kernel argument, from the kernel-effects
//! analysis ([`KernelEffects`]):
//!
//! | entry           | meaning (for a buffer argument)                                        |
//! |-----------------|------------------------------------------------------------------------|
//! | `none`          | not touched (every scalar argument)                                    |
//! | `read`          | read, not written                                                       |
//! | `write`         | written, maybe not every element, not read                              |
//! | `readwrite`     | read, and written, maybe not every element                              |
//! | `write_all`     | every element written for certain (over this dispatch's grid), not read |
//! | `readwrite_all` | read, and every element written for certain                             |
//!
//! and, where the analysis knows a narrower element range than the whole buffer for some
//! argument, `hat.arg_elements`: one `array<i64: read_begin, read_end, write_begin, write_end>`
//! per argument, flat row-major element ranges, `-1, -1` for "any element" (and for scalars).
//! A dispatch without `hat.arg_access` (or with a malformed one) counts as reading and partially
//! writing every buffer argument, whole.
//!
//! The module gets the unit attribute `hat.tracked`: the executor's tracking mode refuses a module
//! without it, since hooks are what tell it about host accesses.
//!
//! Option `hooks=false` only annotates the dispatches (for a program with an explicit transfer
//! plan run in a residency `Session`, whose elisions use the annotations).

use super::kernel_effects::KernelEffects;
use hat_dialects::buffer::{AfterHostReadOp, AfterHostWriteOp, BeforeHostReadOp, BeforeHostWriteOp, DimOp};
use hat_ir::interfaces::{
    constant_integer, execution_space, lookup_symbol, resolve_callee, CallOpInterface, CallableOpInterface,
    ExecutionSpace, LaunchOpInterface, LoopLikeOpInterface, RegionBranchOpInterface,
};
use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassOptions, PassState};
use hat_ir::types::DYNAMIC;
use hat_ir::{
    Attribute, Block, Context, EffectKind, EffectTarget, Extent, Location, MemoryEffects, MemorySpace, Op, OpTraits,
    OperationState, TypeKind, Value,
};
use rustc_hash::FxHashMap;

/// The module attribute that marks a program instrumented by this pass.
pub const TRACKED: &str = "hat.tracked";
/// The dispatch attribute giving each argument's access (see the module documentation).
pub const ARG_ACCESS: &str = "hat.arg_access";
/// The dispatch attribute giving known element ranges per argument.
pub const ARG_ELEMENTS: &str = "hat.arg_elements";
/// The unit attribute of a `buffer.before_host_write` whose op writes every element of its range.
pub const MUST_WRITE: &str = "hat.must_write";

/// The options of `track-accesses`.
pub const OPTIONS: &[PassOptionInfo] = &[PassOptionInfo {
    name: "hooks",
    kind: OptionKind::Bool,
    default: "true",
    help: "Wrap host accesses in hooks (false: only annotate dispatches with their kernels' effects)",
}];

/// The registration of `track-accesses`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "track-accesses",
        summary: "Wrap host accesses of buffers in runtime-tracking hooks and annotate dispatches with their kernels' effects",
        anchor: Some("builtin.module"),
        options: OPTIONS,
        create: |options| Box::new(TrackAccesses::new(options)),
    }
}

/// The `track-accesses` pass.
pub struct TrackAccesses {
    hooks: bool,
}

impl TrackAccesses {
    /// The pass with validated options.
    pub fn new(options: &PassOptions) -> Self {
        TrackAccesses { hooks: options.get_bool("hooks") }
    }
}

impl Pass for TrackAccesses {
    fn run(&mut self, ctx: &mut Context, module: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let annotated = annotate_dispatches_with(ctx, module, &mut |ctx, kernel| {
            state.analysis::<KernelEffects>(ctx, kernel).clone()
        });
        state.add_statistic("num-annotated-dispatches", annotated as u64);
        // A module tracked already has its hooks: a second run only refreshes the annotations.
        if self.hooks && ctx.attribute(module, TRACKED).is_none() {
            let hooks = insert_hooks(ctx, module);
            state.add_statistic("num-hooks", hooks as u64);
            let key = ctx.ident(TRACKED);
            let unit = ctx.unit_attr();
            ctx.set_attribute(module, key, unit);
        }
        // Only attributes and hooks were added: no kernel changed.
        state.preserve::<KernelEffects>();
        Ok(())
    }
}

// ----- dispatch annotations --------------------------------------------------------------------

/// What a dispatch does to one argument, as `hat.arg_access` spells it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgAccess {
    /// Not touched (scalars too).
    None,
    /// Read only.
    Read,
    /// Written (maybe partly), not read.
    Write,
    /// Read and written (maybe partly).
    ReadWrite,
    /// Every element written for certain, not read.
    WriteAll,
    /// Read, and every element written for certain.
    ReadWriteAll,
}

impl ArgAccess {
    /// Every access, in keyword order.
    pub const ALL: [ArgAccess; 6] = [
        ArgAccess::None,
        ArgAccess::Read,
        ArgAccess::Write,
        ArgAccess::ReadWrite,
        ArgAccess::WriteAll,
        ArgAccess::ReadWriteAll,
    ];

    /// The access of a buffer the dispatch `reads`, `writes`, and writes every element of
    /// (`writes_all`, which implies `writes`).
    pub fn of(reads: bool, writes: bool, writes_all: bool) -> ArgAccess {
        match (reads, writes, writes_all) {
            (false, false, _) => ArgAccess::None,
            (true, false, _) => ArgAccess::Read,
            (false, true, false) => ArgAccess::Write,
            (true, true, false) => ArgAccess::ReadWrite,
            (false, true, true) => ArgAccess::WriteAll,
            (true, true, true) => ArgAccess::ReadWriteAll,
        }
    }

    /// Its keyword in `hat.arg_access`.
    pub fn keyword(self) -> &'static str {
        match self {
            ArgAccess::None => "none",
            ArgAccess::Read => "read",
            ArgAccess::Write => "write",
            ArgAccess::ReadWrite => "readwrite",
            ArgAccess::WriteAll => "write_all",
            ArgAccess::ReadWriteAll => "readwrite_all",
        }
    }

    /// The access a keyword names.
    pub fn from_keyword(keyword: &str) -> Option<ArgAccess> {
        ArgAccess::ALL.into_iter().find(|a| a.keyword() == keyword)
    }
}

/// Annotates every launch under `root` with `hat.arg_access` (and `hat.arg_elements` where
/// ranges are known), computing each kernel's effects with [`KernelEffects::of`]. Returns how
/// many launches were annotated. For passes that place transfers and want the runtime to see
/// the same effects they used.
pub fn annotate_dispatches(ctx: &mut Context, root: Op) -> usize {
    annotate_dispatches_with(ctx, root, &mut |ctx, kernel| KernelEffects::of(ctx, kernel))
}

/// [`annotate_dispatches`], with the kernels' effects from `effects_of` (a cache).
fn annotate_dispatches_with(
    ctx: &mut Context,
    root: Op,
    effects_of: &mut dyn FnMut(&Context, Op) -> KernelEffects,
) -> usize {
    let mut annotations = Vec::new();
    let mut cache: FxHashMap<Op, KernelEffects> = FxHashMap::default();
    for op in ctx.walk(root) {
        let Some(launch) = ctx.interface::<dyn LaunchOpInterface>(op) else { continue };
        let kernel = launch.kernel(ctx, op).and_then(|name| lookup_symbol(ctx, op, ctx.ident_str(name)));
        let effects = kernel.map(|kernel| cache.entry(kernel).or_insert_with(|| effects_of(ctx, kernel)).clone());
        annotations.push((op, dispatch_annotation(ctx, op, launch, effects.as_ref())));
    }
    let count = annotations.len();
    for (op, (access, elements)) in annotations {
        let entries: Vec<Attribute> = access.iter().map(|a| ctx.string_attr(a.keyword())).collect();
        let value = ctx.array_attr(&entries);
        let key = ctx.ident(ARG_ACCESS);
        ctx.set_attribute(op, key, value);
        let key = ctx.ident(ARG_ELEMENTS);
        match elements {
            Some(elements) => {
                let entries: Vec<Attribute> = elements.iter().map(|e| ctx.dense_i64_array_attr(e)).collect();
                let value = ctx.array_attr(&entries);
                ctx.set_attribute(op, key, value);
            }
            None => {
                ctx.remove_attribute(op, key);
            }
        }
    }
    count
}

/// The access of each argument of the launch `op`, and the element ranges when some is known and
/// narrower than the whole buffer.
#[allow(clippy::type_complexity)]
fn dispatch_annotation(
    ctx: &Context,
    op: Op,
    launch: &dyn LaunchOpInterface,
    effects: Option<&KernelEffects>,
) -> (Vec<ArgAccess>, Option<Vec<[i64; 4]>>) {
    let operands = ctx.operands(op);
    let grid: Vec<Option<u64>> = operands
        .get(launch.grid(ctx, op))
        .unwrap_or(&[])
        .iter()
        .map(|&g| constant_integer(ctx, g).and_then(|g| u64::try_from(g).ok()))
        .collect();
    let arguments = operands.get(launch.arguments(ctx, op)).unwrap_or(&[]);
    let mut access = Vec::with_capacity(arguments.len());
    let mut elements = Vec::with_capacity(arguments.len());
    let mut narrower = false;
    for (index, &argument) in arguments.iter().enumerate() {
        let TypeKind::MemRef { shape, .. } = ctx.type_kind(ctx.value_type(argument)) else {
            access.push(ArgAccess::None);
            elements.push([-1; 4]);
            continue;
        };
        let shape: Vec<Option<u64>> =
            shape.iter().map(|&d| if d == DYNAMIC { None } else { u64::try_from(d).ok() }).collect();
        let param = effects.and_then(|e| e.params.get(index)).filter(|p| p.is_buffer);
        let Some(param) = param else {
            // An unknown kernel, or one whose signature does not match: assume anything.
            access.push(ArgAccess::ReadWrite);
            elements.push([-1; 4]);
            continue;
        };
        let effects = effects.expect("param came from it");
        let writes_all = param.writes && effects.writes_every_element(index, &grid, &shape);
        access.push(ArgAccess::of(param.reads, param.writes, writes_all));
        let total = shape.iter().try_fold(1u64, |n, d| d.and_then(|d| n.checked_mul(d)));
        // A known range narrower than the whole buffer, else "any element".
        let range = |known: Option<std::ops::Range<u64>>| -> [i64; 2] {
            match known {
                Some(r) if r.start != 0 || Some(r.end) != total => {
                    let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
                    [to_i64(r.start), to_i64(r.end)]
                }
                _ => [-1, -1],
            }
        };
        let read = if param.reads { range(effects.read_elements(index, &grid, &shape)) } else { [-1, -1] };
        let written =
            if param.writes && !writes_all { range(effects.written_elements(index, &grid, &shape)) } else { [-1, -1] };
        narrower |= read != [-1, -1] || written != [-1, -1];
        elements.push([read[0], read[1], written[0], written[1]]);
    }
    (access, narrower.then_some(elements))
}

// ----- hooks -----------------------------------------------------------------------------------

/// One access to wrap: a buffer value, its element range (none: whole), and how.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Access {
    buffer: Value,
    range: Range,
    kind: AccessKind,
}

/// The element range of an access, as the hook will name it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Range {
    Whole,
    /// One element, indexed by the op's operands `first..first + count` (one per dimension).
    Element {
        first: usize,
        count: usize,
    },
    /// The op's operands `offset` and `offset + 1`.
    Span {
        offset: usize,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum AccessKind {
    Read,
    /// A write of every element of the range, for certain.
    MustWrite,
    /// A write that may leave elements of the range untouched.
    MayWrite,
}

/// Wraps every host access under `root` in hooks (see the module documentation); returns how
/// many hooks were inserted.
pub fn insert_hooks(ctx: &mut Context, root: Op) -> usize {
    let functions: Vec<Op> = ctx
        .walk(root)
        .into_iter()
        .filter(|&op| {
            execution_space(ctx, op) == Some(ExecutionSpace::Host)
                && ctx.interface::<dyn CallableOpInterface>(op).and_then(|c| c.body(ctx, op)).is_some()
        })
        .collect();
    let mut hooks = 0;
    for function in functions {
        let body = ctx.interface::<dyn CallableOpInterface>(function).and_then(|c| c.body(ctx, function));
        let Some(&entry) = body.and_then(|b| ctx.region_blocks(b).first()) else { continue };
        let mut wraps = Vec::new();
        collect_in_regions(ctx, function, &mut wraps);
        let mut builder = Builder { entry, anchor: ctx.first_op(entry), constants: FxHashMap::default() };
        for (op, accesses) in wraps {
            hooks += builder.wrap(ctx, op, &accesses);
        }
    }
    hooks
}

/// Collects the accesses of the ops nested in `op`'s regions.
fn collect_in_regions(ctx: &Context, op: Op, wraps: &mut Vec<(Op, Vec<Access>)>) {
    for &region in ctx.regions(op) {
        for &block in ctx.region_blocks(region) {
            for nested in ctx.block_ops(block) {
                collect(ctx, nested, wraps);
            }
        }
    }
}

/// Collects the accesses of `op` (and of the ops in its regions, when it is control flow).
fn collect(ctx: &Context, op: Op, wraps: &mut Vec<(Op, Vec<Access>)>) {
    if ctx.has_traits(op, OpTraits::TERMINATOR) || is_hook(ctx, op) {
        return;
    }
    // A nested function has its own turn (or runs elsewhere).
    if ctx.interface::<dyn CallableOpInterface>(op).is_some() {
        return;
    }
    if ctx.interface::<dyn LaunchOpInterface>(op).is_some() {
        return;
    }
    if ctx.interface::<dyn CallOpInterface>(op).is_some() {
        let accesses = call_accesses(ctx, op);
        if !accesses.is_empty() {
            wraps.push((op, accesses));
        }
        return;
    }
    let control_flow = !ctx.regions(op).is_empty()
        && (ctx.interface::<dyn RegionBranchOpInterface>(op).is_some()
            || ctx.interface::<dyn LoopLikeOpInterface>(op).is_some());
    if !control_flow {
        let accesses = op_accesses(ctx, op);
        if !accesses.is_empty() {
            wraps.push((op, accesses));
        }
    }
    collect_in_regions(ctx, op, wraps);
}

fn is_hook(ctx: &Context, op: Op) -> bool {
    BeforeHostReadOp::wrap(ctx, op).is_some()
        || AfterHostReadOp::wrap(ctx, op).is_some()
        || BeforeHostWriteOp::wrap(ctx, op).is_some()
        || AfterHostWriteOp::wrap(ctx, op).is_some()
}

fn is_buffer(ctx: &Context, value: Value) -> bool {
    ctx.type_kind(ctx.value_type(value)).is_memref()
}

/// Every buffer operand of `op`, read and maybe written whole: what an unknown effect means.
fn unknown_accesses(ctx: &Context, op: Op, operands: std::ops::Range<usize>) -> Vec<Access> {
    let mut accesses = Vec::new();
    for &buffer in ctx.operands(op).get(operands).unwrap_or(&[]) {
        if is_buffer(ctx, buffer) {
            push_unique(&mut accesses, Access { buffer, range: Range::Whole, kind: AccessKind::Read });
            push_unique(&mut accesses, Access { buffer, range: Range::Whole, kind: AccessKind::MayWrite });
        }
    }
    accesses
}

fn push_unique(accesses: &mut Vec<Access>, access: Access) {
    if !accesses.contains(&access) {
        accesses.push(access);
    }
}

/// The host accesses of a call: none for a callee with a body (its body is wrapped); the
/// declared effects for a declaration.
fn call_accesses(ctx: &Context, op: Op) -> Vec<Access> {
    let call = ctx.interface::<dyn CallOpInterface>(op).expect("a call");
    let arguments = call.arguments(ctx, op);
    let Some(callee) = resolve_callee(ctx, op) else {
        return unknown_accesses(ctx, op, arguments);
    };
    let callable = ctx.interface::<dyn CallableOpInterface>(callee).expect("resolve_callee gives callables");
    if callable.body(ctx, callee).is_some() {
        return Vec::new();
    }
    let MemoryEffects::Known(effects) = callable.parameter_effects(ctx, callee) else {
        return unknown_accesses(ctx, op, arguments);
    };
    let values = ctx.operands(op).get(arguments.clone()).unwrap_or(&[]);
    let mut accesses = Vec::new();
    for (index, &buffer) in values.iter().enumerate() {
        if !is_buffer(ctx, buffer) {
            continue;
        }
        let mut declared = false;
        for effect in effects.iter().filter(|e| e.target == EffectTarget::Parameter(index)) {
            if !matches!(effect.space, MemorySpace::Host | MemorySpace::Current) {
                continue;
            }
            // The extent of a parameter effect names no operand of the call: the whole buffer.
            let kind = match (effect.kind, effect.must) {
                (EffectKind::Read, _) => AccessKind::Read,
                (EffectKind::Write, true) => AccessKind::MustWrite,
                (EffectKind::Write, false) => AccessKind::MayWrite,
                _ => continue,
            };
            declared = true;
            push_unique(&mut accesses, Access { buffer, range: Range::Whole, kind });
        }
        if !declared {
            // An undeclared buffer argument counts as read and written.
            push_unique(&mut accesses, Access { buffer, range: Range::Whole, kind: AccessKind::Read });
            push_unique(&mut accesses, Access { buffer, range: Range::Whole, kind: AccessKind::MayWrite });
        }
    }
    accesses
}

/// The host accesses of an op that is not a call, launch or control flow, from its memory effects.
fn op_accesses(ctx: &Context, op: Op) -> Vec<Access> {
    let effects = match ctx.definition(ctx.name(op)) {
        Some(definition) => definition.memory_effects(ctx, op),
        None => MemoryEffects::Unknown,
    };
    let MemoryEffects::Known(effects) = effects else {
        return unknown_accesses(ctx, op, 0..ctx.operands(op).len());
    };
    // A transfer of a plan placed by another pass: the tracking runtime ignores it.
    if effects.iter().any(|e| e.space == MemorySpace::Device) {
        return Vec::new();
    }
    let operands = ctx.operands(op);
    let mut accesses = Vec::new();
    for effect in effects.iter() {
        if !matches!(effect.space, MemorySpace::Host | MemorySpace::Current) {
            continue;
        }
        let EffectTarget::Operand(index) = effect.target else { continue };
        let Some(&buffer) = operands.get(index).filter(|&&v| is_buffer(ctx, v)) else { continue };
        let kind = match (effect.kind, effect.must) {
            (EffectKind::Read, _) => AccessKind::Read,
            (EffectKind::Write, true) => AccessKind::MustWrite,
            (EffectKind::Write, false) => AccessKind::MayWrite,
            _ => continue,
        };
        let range = match effect.extent {
            Extent::Whole => Range::Whole,
            Extent::Element { first, count } => Range::Element { first: first as usize, count: count as usize },
            Extent::Span { offset, .. } => Range::Span { offset: offset as usize },
        };
        let in_bounds = effect.extent.operands().end <= operands.len();
        let range = if in_bounds { range } else { Range::Whole };
        push_unique(&mut accesses, Access { buffer, range, kind });
    }
    accesses
}

/// Builds the hooks of one function, with its index constants made once at the top of its body.
struct Builder {
    entry: Block,
    /// The first op the function had: constants go before it, in order.
    anchor: Option<Op>,
    constants: FxHashMap<i64, Value>,
}

impl Builder {
    /// An `index` constant, made once per function at the top of its body.
    fn constant(&mut self, ctx: &mut Context, value: i64, location: Location) -> Value {
        if let Some(&constant) = self.constants.get(&value) {
            return constant;
        }
        let ty = ctx.index_type();
        let attribute = ctx.integer_attr(value, ty);
        let state = hat_dialects::arith_canonicalize::materialize_constant(ctx, attribute, ty, location)
            .expect("an integer constant of index type");
        let op = ctx.create_op(state);
        match self.anchor {
            Some(anchor) => ctx.insert_op_before(anchor, op),
            None => ctx.append_op(self.entry, op),
        }
        let result = ctx.result(op, 0);
        self.constants.insert(value, result);
        result
    }

    /// An op inserted before `before`, with one `index` result (or none).
    fn op_before(
        &mut self,
        ctx: &mut Context,
        before: Op,
        name: &str,
        operands: Vec<Value>,
        attributes: Vec<(&str, Attribute)>,
        index_result: bool,
    ) -> Option<Value> {
        let op_name = ctx.op_name(name);
        let mut state = OperationState::new(op_name, ctx.location(before));
        state.operands = operands;
        for (key, value) in attributes {
            let key = ctx.ident(key);
            state.attributes.push((key, value));
        }
        if index_result {
            let ty = ctx.index_type();
            state.result_types.push(ty);
        }
        let op = ctx.create_op(state);
        ctx.insert_op_before(before, op);
        index_result.then(|| ctx.result(op, 0))
    }

    /// The `(offset, count)` operands of a hook on `range` of `access`'s buffer in `op`, made
    /// before `op`; `None` for the whole buffer.
    fn range_operands(&mut self, ctx: &mut Context, op: Op, access: &Access) -> Option<(Value, Value)> {
        let location = ctx.location(op);
        match access.range {
            Range::Whole => None,
            Range::Span { offset } => {
                let operands = ctx.operands(op);
                Some((operands[offset], operands[offset + 1]))
            }
            Range::Element { first, count } => {
                let indices: Vec<Value> = ctx.operands(op)[first..first + count].to_vec();
                let TypeKind::MemRef { shape, .. } = ctx.type_kind(ctx.value_type(access.buffer)).clone() else {
                    return None;
                };
                if shape.len() != indices.len() {
                    return None;
                }
                let one = self.constant(ctx, 1, location);
                let Some((&first_index, rest)) = indices.split_first() else {
                    // A rank-0 buffer has one element.
                    let zero = self.constant(ctx, 0, location);
                    return Some((zero, one));
                };
                let mut flat = first_index;
                for (dimension, &index) in rest.iter().enumerate() {
                    let extent = shape[dimension + 1];
                    let extent = if extent == DYNAMIC {
                        let i64_type = ctx.integer_type(64);
                        let attribute = ctx.integer_attr(dimension as i64 + 1, i64_type);
                        self.op_before(ctx, op, DimOp::NAME, vec![access.buffer], vec![("dimension", attribute)], true)
                            .expect("has a result")
                    } else {
                        self.constant(ctx, extent, location)
                    };
                    let scaled =
                        self.op_before(ctx, op, "arith.muli", vec![flat, extent], Vec::new(), true).expect("result");
                    flat =
                        self.op_before(ctx, op, "arith.addi", vec![scaled, index], Vec::new(), true).expect("result");
                }
                Some((flat, one))
            }
        }
    }

    /// Wraps `op` in the hooks of `accesses`; returns how many hooks.
    fn wrap(&mut self, ctx: &mut Context, op: Op, accesses: &[Access]) -> usize {
        let mut ranges = Vec::with_capacity(accesses.len());
        for access in accesses {
            ranges.push(self.range_operands(ctx, op, access));
        }
        let operands = |access: &Access, range: Option<(Value, Value)>| -> Vec<Value> {
            let mut operands = vec![access.buffer];
            if let Some((offset, count)) = range {
                operands.extend([offset, count]);
            }
            operands
        };
        let mut count = 0;
        // Before the op: reads first (bring the host copy home), then writes.
        let reads = || accesses.iter().zip(&ranges).filter(|(a, _)| a.kind == AccessKind::Read);
        let writes = || accesses.iter().zip(&ranges).filter(|(a, _)| a.kind != AccessKind::Read);
        for (access, &range) in reads() {
            self.op_before(ctx, op, BeforeHostReadOp::NAME, operands(access, range), Vec::new(), false);
            count += 1;
        }
        for (access, &range) in writes() {
            let must = if access.kind == AccessKind::MustWrite { vec![(MUST_WRITE, ctx.unit_attr())] } else { vec![] };
            self.op_before(ctx, op, BeforeHostWriteOp::NAME, operands(access, range), must, false);
            count += 1;
        }
        // After the op, in the same order.
        let mut after = Vec::new();
        for (access, &range) in reads() {
            after.push((AfterHostReadOp::NAME, operands(access, range)));
        }
        for (access, &range) in writes() {
            after.push((AfterHostWriteOp::NAME, operands(access, range)));
        }
        let location = ctx.location(op);
        let mut previous = op;
        for (name, operands) in after {
            let op_name = ctx.op_name(name);
            let mut state = OperationState::new(op_name, location);
            state.operands = operands;
            let hook = ctx.create_op(state);
            ctx.insert_op_after(previous, hook);
            previous = hook;
            count += 1;
        }
        count
    }
}
