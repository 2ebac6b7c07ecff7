//! Copies that an imported program does not need: a `gpu.memcpy` becomes a dispatch of a copy
//! kernel (see [`crate::upstream_import`]), and a copy whose destination is overwritten whole
//! before anything reads it, or freed unread, changes nothing a program can observe. MLIR users
//! write such copies as a habit (every buffer in before every launch); erasing them here is what
//! lets `insert-transfers` see that the bytes never need to go over.
//!
//! Two local, conservative rules, each within one block:
//!
//! 1. *Same bytes.* After a copy `src -> dst`, the two hold the same bytes until either is
//!    written; a later copy between them (either way) is erased. A write is any op naming the
//!    buffer other than `buffer.load`/`buffer.dim`, a dispatch whose kernel writes the parameter
//!    (the kernel-effects analysis; every buffer argument when it cannot tell), or any op with
//!    regions that names it inside. A write through a buffer that is not a root (an argument of
//!    the function or a `buffer.alloc`: a `select`, a loop-carried buffer, which may alias
//!    anything) forgets every pair, and a write to a root forgets the pairs of non-roots too.
//!    This is the copy back from the device of a buffer the kernels only read.
//! 2. *Destination never read.* A copy into `dst` is erased when `dst` is a buffer the
//!    importing function allocated (so the caller never sees it) and the next op of the same
//!    block that names `dst` — at any depth — is either its `buffer.dealloc`, or a dispatch (at
//!    the top of that op, not nested) that passes `dst` once, reads none of it and provably
//!    writes every element of it (the kernel-effects analysis, with the dispatch's constant grid
//!    and shapes). Anything else keeps the copy.
//!
//! Copies are recognised by the kernels the importer made for them ([`COPY_KERNEL_PREFIX`]).

use hat_ir::interfaces::LaunchOpInterface;
use hat_ir::{Context, Op, Value};
use hat_passes::transfers::kernel_effects::print::launch;
use hat_passes::transfers::kernel_effects::KernelEffects;

/// The name every copy kernel of the importer starts with.
pub const COPY_KERNEL_PREFIX: &str = "mlir_memcpy_";

/// Erases the unneeded copies of `module` (see the module documentation).
pub fn erase(ctx: &mut Context, module: Op) {
    let mut same_bytes = Vec::new();
    let blocks: Vec<hat_ir::Block> = std::iter::once(module)
        .chain(ctx.walk(module))
        .flat_map(|op| ctx.regions(op).to_vec())
        .flat_map(|region| ctx.region_blocks(region).to_vec())
        .collect();
    for block in blocks {
        same_bytes.extend(copies_of_same_bytes(ctx, block));
    }
    for copy in same_bytes {
        ctx.erase_op(copy);
    }
    let copies: Vec<Op> = ctx.walk(module).into_iter().filter(|&op| copy_destination(ctx, op).is_some()).collect();
    let dead: Vec<Op> = copies.into_iter().filter(|&copy| is_dead(ctx, copy)).collect();
    for copy in dead {
        ctx.erase_op(copy);
    }
}

/// The destination of a copy dispatch made by the importer.
fn copy_destination(ctx: &Context, op: Op) -> Option<Value> {
    let launching = ctx.interface::<dyn LaunchOpInterface>(op)?;
    let kernel = launching.kernel(ctx, op)?;
    if !ctx.ident_str(kernel).starts_with(COPY_KERNEL_PREFIX) {
        return None;
    }
    let arguments = launching.arguments(ctx, op);
    ctx.operands(op)[arguments].get(1).copied()
}

fn is_dead(ctx: &Context, copy: Op) -> bool {
    let Some(destination) = copy_destination(ctx, copy) else { return false };
    let allocated_here = ctx
        .defining_op(destination)
        .is_some_and(|def| ctx.name_str(def) == "buffer.alloc" && ctx.parent_block(def) == ctx.parent_block(copy));
    if !allocated_here {
        return false;
    }
    let mut next = ctx.next_op(copy);
    while let Some(op) = next {
        let names_it = std::iter::once(op).chain(ctx.walk(op)).any(|o| ctx.operands(o).contains(&destination));
        if names_it {
            if ctx.name_str(op) == "buffer.dealloc" {
                return true;
            }
            return overwrites_unread(ctx, op, destination);
        }
        next = ctx.next_op(op);
    }
    false
}

/// Whether `op` is a dispatch that passes `buffer` once, reads none of it and writes all of it.
fn overwrites_unread(ctx: &Context, op: Op, buffer: Value) -> bool {
    let Some(launching) = ctx.interface::<dyn LaunchOpInterface>(op) else { return false };
    if !ctx.regions(op).is_empty() {
        return false;
    }
    let arguments = &ctx.operands(op)[launching.arguments(ctx, op)];
    let positions: Vec<usize> = arguments.iter().enumerate().filter(|(_, &a)| a == buffer).map(|(i, _)| i).collect();
    let [param] = positions[..] else { return false };
    if ctx.operands(op)[launching.grid(ctx, op)].contains(&buffer) {
        return false;
    }
    let Some((kernel, dispatch)) = launch(ctx, op) else { return false };
    let effects = KernelEffects::of(ctx, kernel);
    let Some(param_effects) = effects.params.get(param) else { return false };
    !param_effects.reads && !param_effects.atomic && effects.writes_every_element_in(param, &dispatch)
}

/// The copies of `block` between two buffers known to hold the same bytes (rule 1).
fn copies_of_same_bytes(ctx: &Context, block: hat_ir::Block) -> Vec<Op> {
    let mut equal: Vec<(Value, Value)> = Vec::new();
    let mut redundant = Vec::new();
    for op in ctx.block_ops(block) {
        if let Some(destination) = copy_destination(ctx, op) {
            let source = copy_source(ctx, op);
            if is_range_copy(ctx, op) {
                // Part of the destination now equals part of the source: no pair.
                forget(ctx, &mut equal, destination);
                continue;
            }
            if equal.iter().any(|&(a, b)| (a, b) == (source, destination) || (b, a) == (source, destination)) {
                redundant.push(op);
                continue;
            }
            forget(ctx, &mut equal, destination);
            equal.push((source, destination));
            continue;
        }
        for written in written_buffers(ctx, op) {
            forget(ctx, &mut equal, written);
        }
    }
    redundant
}

/// The name every range-copy kernel of the importer starts with.
pub const RANGE_COPY_KERNEL_PREFIX: &str = "mlir_memcpy_range_";

fn is_range_copy(ctx: &Context, op: Op) -> bool {
    let launching = ctx.interface::<dyn LaunchOpInterface>(op);
    launching.and_then(|l| l.kernel(ctx, op)).is_some_and(|k| ctx.ident_str(k).starts_with(RANGE_COPY_KERNEL_PREFIX))
}

fn copy_source(ctx: &Context, op: Op) -> Value {
    let launching = ctx.interface::<dyn LaunchOpInterface>(op).expect("a copy is a launch");
    ctx.operands(op)[launching.arguments(ctx, op)][0]
}

/// Whether `buffer` is a root: a function's argument or a `buffer.alloc`'s result.
fn is_root(ctx: &Context, buffer: Value) -> bool {
    match ctx.defining_op(buffer) {
        Some(def) => ctx.name_str(def) == "buffer.alloc",
        None => ctx
            .value_block(buffer)
            .and_then(|b| ctx.block_parent(b))
            .and_then(|r| ctx.region_parent(r))
            .is_some_and(|parent| ctx.interface::<dyn hat_ir::interfaces::CallableOpInterface>(parent).is_some()),
    }
}

/// Forgets what a write to `buffer` makes unknown.
fn forget(ctx: &Context, equal: &mut Vec<(Value, Value)>, buffer: Value) {
    if is_root(ctx, buffer) {
        equal.retain(|&(a, b)| a != buffer && b != buffer && is_root(ctx, a) && is_root(ctx, b));
    } else {
        equal.clear();
    }
}

fn is_buffer(ctx: &Context, value: Value) -> bool {
    matches!(ctx.type_kind(ctx.value_type(value)), hat_ir::TypeKind::MemRef { .. })
}

/// The buffers `op` may write (see rule 1).
fn written_buffers(ctx: &Context, op: Op) -> Vec<Value> {
    if !ctx.regions(op).is_empty() {
        return ctx
            .walk(op)
            .into_iter()
            .flat_map(|o| ctx.operands(o).to_vec())
            .filter(|&v| is_buffer(ctx, v))
            .collect();
    }
    if let Some(launching) = ctx.interface::<dyn LaunchOpInterface>(op) {
        let arguments = &ctx.operands(op)[launching.arguments(ctx, op)];
        let effects = launch(ctx, op).map(|(kernel, _)| KernelEffects::of(ctx, kernel));
        return arguments
            .iter()
            .enumerate()
            .filter(|&(_, &a)| is_buffer(ctx, a))
            .filter(|&(param, _)| {
                effects.as_ref().and_then(|e| e.params.get(param)).is_none_or(|p| p.writes || p.atomic)
            })
            .map(|(_, &a)| a)
            .collect();
    }
    if matches!(ctx.name_str(op), "buffer.load" | "buffer.dim") {
        return Vec::new();
    }
    ctx.operands(op).iter().copied().filter(|&v| is_buffer(ctx, v)).collect()
}
