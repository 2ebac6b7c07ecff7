//! `plan-memory`: device and host memory that lives only as long as the program uses it.
//!
//! Every buffer value a host function owns is released (`buffer.release`) where it stops being
//! used ([`lifetimes`]): a buffer born in a loop body dies in that iteration, a buffer carried
//! from one iteration to the next dies after the next one's last use of it, and the caller's
//! buffers are left alone. So a program's peak memory is what it has live at once, not
//! everything it ever allocated.
//!
//! Then the buffers only the device sees are given offsets in one arena per function
//! ([`arena`], [`packing`]), by which of them are live together: `hat.arena_offset` on each such
//! `buffer.alloc`, `hat.arena_bytes` on the function. Statistics: `planned-peak-bytes` (the
//! arenas), `naive-peak-bytes` (the same buffers without reuse) and `lower-bound-bytes` (the
//! most bytes of them live at one point, which no plan goes below).

pub mod arena;
pub mod in_place;
pub mod intervals;
pub mod lifetimes;
pub mod packing;
pub mod sparse_liveness;

use crate::transfers::aliases::BufferRoots;
use crate::transfers::kernel_effects::{Dispatch, KernelEffects};
use hat_ir::diagnostics::Diagnostic;
use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassOptions, PassState};
use hat_ir::{Context, Op, OperationState};
use lifetimes::{Kept, Point};

/// The options of `plan-memory`.
pub const OPTIONS: &[PassOptionInfo] = &[PassOptionInfo {
    name: "remarks",
    kind: OptionKind::Bool,
    default: "false",
    help: "Emit a remark for each buffer: where it is released, or why it lives on",
}];

/// The registration of `plan-memory`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "plan-memory",
        summary: "Release each buffer where its live range ends (liveness over loops, branches and calls)",
        anchor: None,
        options: OPTIONS,
        create: |options| Box::new(PlanMemory::new(options)),
    }
}

/// The `plan-memory` pass.
pub struct PlanMemory {
    remarks: bool,
}

impl PlanMemory {
    /// The pass with validated options.
    pub fn new(options: &PassOptions) -> Self {
        PlanMemory { remarks: options.get_bool("remarks") }
    }
}

impl Pass for PlanMemory {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let (mut released, mut kept) = (0u64, 0u64);
        let (mut planned, mut naive, mut lower_bound, mut arena_buffers) = (0u64, 0u64, 0u64, 0u64);
        let (mut in_place_count, mut run_time_arenas) = (0u64, 0u64);
        let mut copies = rustc_hash::FxHashMap::default();
        for function in crate::transfers::insert::host_functions(ctx, op) {
            let mut roots = BufferRoots::with_calls(ctx, function);
            let mut proves = |kernel: Op, read: usize, write: usize, dispatch: &Dispatch| {
                state.analysis::<KernelEffects>(ctx, kernel).writes_in_place(ctx, kernel, read, write, dispatch)
            };
            let handovers = in_place::find(ctx, function, &roots, &mut proves);
            if !handovers.is_empty() {
                if self.remarks {
                    for handover in &handovers {
                        state.emit(in_place_remark(ctx, handover));
                    }
                }
                in_place_count += handovers.len() as u64;
                in_place::apply(ctx, op, &handovers, &mut copies);
                roots = BufferRoots::with_calls(ctx, function);
            }
            // Releases make no buffer values: the roots hold for the arena plan after them.
            let decisions = lifetimes::decide(ctx, function, &roots);
            for decision in &decisions {
                let name = describe(ctx, decision.value);
                match decision.release {
                    Some(point) => {
                        released += 1;
                        let at = match point {
                            Point::After(op) => op,
                            Point::Start(block) => {
                                ctx.block_parent(block).and_then(|r| ctx.region_parent(r)).unwrap_or(function)
                            }
                        };
                        let location = ctx.location(at);
                        insert_release(ctx, decision.value, point, location);
                        if self.remarks {
                            state.emit(Diagnostic::remark(location, format!("{name} is released here")));
                        }
                    }
                    None => {
                        kept += 1;
                        if self.remarks {
                            let why = match decision.kept {
                                Some(Kept::MaybeLive(other)) => {
                                    format!("{} may be the same buffer and is still live", describe(ctx, other))
                                }
                                Some(Kept::UnknownOrigin) => "nothing knows which buffer it is".to_string(),
                                Some(Kept::LiveOut) | None => "it is live at the end of its block".to_string(),
                            };
                            let location = value_location(ctx, decision.value, function);
                            state.emit(Diagnostic::remark(location, format!("{name} lives on: {why}")));
                        }
                    }
                }
            }
            let plan = arena::plan(ctx, function, &roots, &decisions);
            planned += plan.packing.size;
            naive += plan.naive;
            lower_bound += plan.packing.lower_bound;
            arena_buffers += plan.buffers.len() as u64;
            run_time_arenas += u64::from(plan.run_time.is_some());
            write_plan(ctx, function, &plan);
            if self.remarks {
                for diagnostic in plan_remarks(ctx, function, &plan) {
                    state.emit(diagnostic);
                }
            }
        }
        state.add_statistic("num-arena-buffers", arena_buffers);
        state.add_statistic("planned-peak-bytes", planned);
        state.add_statistic("naive-peak-bytes", naive);
        state.add_statistic("lower-bound-bytes", lower_bound);
        state.add_statistic("num-in-place", in_place_count);
        state.add_statistic("num-run-time-arenas", run_time_arenas);
        state.add_statistic("num-released", released);
        state.add_statistic("num-kept", kept);
        if released == 0 && arena_buffers == 0 && in_place_count == 0 {
            state.preserve_all();
        }
        Ok(())
    }
}

/// The remark on a buffer that takes over the storage of the one its first dispatch reads.
fn in_place_remark(ctx: &Context, handover: &in_place::Handover) -> Diagnostic {
    let (read, src) = handover.read;
    let (write, alloc) = handover.write;
    let kernel = hat_ir::verifier::symbol_name(ctx, handover.kernel).unwrap_or("?");
    Diagnostic::remark(
        ctx.location(alloc),
        format!(
            "written in place of {} by the dispatch of @{kernel} at {} (parameter {write} over parameter {read}: \
             each work item reads its own element before writing it, and the read buffer dies there)",
            describe(ctx, src),
            ctx.sources.describe(ctx.location(handover.dispatch)),
        ),
    )
}

/// `%name`, or the op that makes it and where.
fn describe(ctx: &Context, value: hat_ir::Value) -> String {
    if let Some(name) = ctx.argument_name(value) {
        return format!("%{name}");
    }
    match ctx.defining_op(value) {
        Some(op) => format!("the buffer of '{}' at {}", ctx.name_str(op), ctx.sources.describe(ctx.location(op))),
        None => "a buffer".to_string(),
    }
}

/// Where `value` is defined (its op, or the op that holds its block).
fn value_location(ctx: &Context, value: hat_ir::Value, function: Op) -> hat_ir::Location {
    let op = ctx
        .defining_op(value)
        .or_else(|| ctx.value_block(value).and_then(|b| ctx.block_parent(b)).and_then(|r| ctx.region_parent(r)))
        .unwrap_or(function);
    ctx.location(op)
}

/// Writes `buffer.release %value` at `point`.
fn insert_release(ctx: &mut Context, value: hat_ir::Value, point: Point, location: hat_ir::Location) {
    let mut release = OperationState::new(ctx.op_name("buffer.release"), location);
    release.operands = vec![value];
    let release = ctx.create_op(release);
    match point {
        Point::After(op) => ctx.insert_op_after(op, release),
        Point::Start(block) => match ctx.first_op(block) {
            Some(first) => ctx.insert_op_before(first, release),
            None => ctx.append_op(block, release),
        },
    }
}

use hat_dialects::buffer::{
    ARENA_BYTES_ATTRIBUTE as ARENA_BYTES, ARENA_LIVE_SETS_ATTRIBUTE, ARENA_OFFSET_ATTRIBUTE as ARENA_OFFSET,
    ARENA_SLOT_ATTRIBUTE,
};

/// Writes `plan` as attributes, or, for a plan made at run time, as a `buffer.arena` and slots.
fn write_plan(ctx: &mut Context, function: Op, plan: &arena::ArenaPlan) {
    if plan.buffers.is_empty() {
        return;
    }
    if let Some(run_time) = &plan.run_time {
        return write_run_time_plan(ctx, plan, run_time);
    }
    let i64_type = ctx.integer_type(64);
    for (&(alloc, _), &offset) in plan.buffers.iter().zip(&plan.packing.offsets) {
        let value = ctx.integer_attr(offset as i64, i64_type);
        let key = ctx.ident(ARENA_OFFSET);
        ctx.set_attribute(alloc, key, value);
    }
    let value = ctx.integer_attr(plan.packing.size as i64, i64_type);
    let key = ctx.ident(ARENA_BYTES);
    ctx.set_attribute(function, key, value);
}

/// Before `run_time.before`: each slot's size in bytes (constants, and products of the dynamic
/// sizes), then `buffer.arena(sizes) {live_sets = ...}`; `hat.arena_slot` on each allocation.
fn write_run_time_plan(ctx: &mut Context, plan: &arena::ArenaPlan, run_time: &arena::RunTimePlan) {
    use crate::transfers::emit::{index_constant, index_product, Anchor};
    let location = ctx.location(run_time.before);
    let at = Anchor::Before(run_time.before);
    let mut sizes = Vec::new();
    for &(alloc, _) in &plan.buffers {
        let result = ctx.result(alloc, 0);
        let element = crate::transfers::dispatch::element_bytes(ctx, result).unwrap_or(1);
        let fixed: u64 = match ctx.type_kind(ctx.value_type(result)) {
            hat_ir::TypeKind::MemRef { shape, .. } => {
                shape.iter().filter(|&&d| d != hat_ir::types::DYNAMIC).map(|&d| d.max(0) as u64).product()
            }
            _ => 1,
        };
        let mut bytes = index_constant(ctx, at, (element * fixed) as i64, location);
        for size in ctx.operands(alloc).to_vec() {
            bytes = index_product(ctx, at, bytes, size, location);
        }
        sizes.push(bytes);
    }
    let mut state = OperationState::new(ctx.op_name("buffer.arena"), location);
    state.operands = sizes;
    let i64_type = ctx.integer_type(64);
    let sets: Vec<hat_ir::Attribute> = run_time
        .live_sets
        .iter()
        .map(|set| {
            let slots: Vec<hat_ir::Attribute> = set.iter().map(|&s| ctx.integer_attr(s as i64, i64_type)).collect();
            ctx.array_attr(&slots)
        })
        .collect();
    let sets = ctx.array_attr(&sets);
    state.attributes.push((ctx.ident(ARENA_LIVE_SETS_ATTRIBUTE), sets));
    let arena = ctx.create_op(state);
    ctx.insert_op_before(run_time.before, arena);
    for (slot, &(alloc, _)) in plan.buffers.iter().enumerate() {
        let value = ctx.integer_attr(slot as i64, i64_type);
        let key = ctx.ident(ARENA_SLOT_ATTRIBUTE);
        ctx.set_attribute(alloc, key, value);
    }
}

/// A remark per allocation of `function`: where it lives, or why it has its own allocation; and
/// one for the arena, against the lower bound.
fn plan_remarks(ctx: &Context, function: Op, plan: &arena::ArenaPlan) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(run_time) = &plan.run_time {
        for (slot, &(alloc, _)) in plan.buffers.iter().enumerate() {
            // The slots never live with this one: the packing may give them its memory.
            let apart: Vec<String> = (0..plan.buffers.len())
                .filter(|&other| other != slot)
                .filter(|&other| !run_time.live_sets.iter().any(|set| set.contains(&slot) && set.contains(&other)))
                .map(|other| ctx.sources.describe(ctx.location(plan.buffers[other].0)))
                .collect();
            let reuse = if apart.is_empty() {
                String::new()
            } else {
                format!("; may reuse the memory of the buffers made at {}", apart.join(", "))
            };
            out.push(Diagnostic::remark(
                ctx.location(alloc),
                format!("slot {slot} of the arena planned when the call runs (a size is known only then){reuse}"),
            ));
        }
    }
    for (&(alloc, size), &offset) in plan.buffers.iter().zip(&plan.packing.offsets) {
        let sharing: Vec<String> = plan
            .buffers
            .iter()
            .zip(&plan.packing.offsets)
            .filter(|&(&(other, other_size), &other_offset)| {
                other != alloc && other_offset < offset + size && offset < other_offset + other_size
            })
            .map(|(&(other, _), _)| ctx.sources.describe(ctx.location(other)))
            .collect();
        let reuse = if sharing.is_empty() {
            String::new()
        } else {
            format!("; reuses the memory of the buffers made at {}", sharing.join(", "))
        };
        out.push(Diagnostic::remark(ctx.location(alloc), format!("{size} B in the arena at offset {offset}{reuse}")));
    }
    for &(alloc, why) in &plan.left_out {
        out.push(Diagnostic::remark(ctx.location(alloc), format!("its own allocation: {why}")));
    }
    if !plan.buffers.is_empty() && plan.run_time.is_none() {
        let name = hat_ir::verifier::symbol_name(ctx, function).unwrap_or("?");
        out.push(Diagnostic::remark(
            ctx.location(function),
            format!(
                "@{name}: arena of {} B for {} buffer{} ({} B without reuse; at least {} B are live at once)",
                plan.packing.size,
                plan.buffers.len(),
                if plan.buffers.len() == 1 { "" } else { "s" },
                plan.naive,
                plan.packing.lower_bound
            ),
        ));
    }
    out
}
