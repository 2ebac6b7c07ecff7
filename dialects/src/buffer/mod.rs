//! The `buffer` dialect: buffers (`memref`s) and the two copies of each, host and device.
//!
//! `load`, `store` and `dim` run in host and kernel code and touch the copy of wherever they run
//! ([`MemorySpace::Current`]). The other ops are host code: allocation, a host-side copy between
//! buffers, the two transfers between the host and device copies (of a whole buffer or of a flat,
//! row-major element range), and the hooks that the runtime-tracking strategy wraps around host
//! accesses. The reference page is `docs/dialects/buffer.md`.

pub mod packing;
mod views;

pub use views::{
    AfterHostReadOp, AfterHostWriteOp, AllocOp, BeforeHostReadOp, BeforeHostWriteOp, CopyOp, DeallocOp, DimOp,
    FromDeviceOp, LoadOp, ReleaseOp, StoreOp, ToDeviceOp,
};

use crate::checks::{self, memref_parts};

/// The attribute `plan-memory` puts on a `buffer.alloc` whose buffer lives in its function's
/// arena: its offset there, in bytes (an integer).
pub const ARENA_OFFSET_ATTRIBUTE: &str = "hat.arena_offset";
/// The attribute `plan-memory` puts on a function whose buffers share an arena: the arena's size
/// in bytes (an integer).
pub const ARENA_BYTES_ATTRIBUTE: &str = "hat.arena_bytes";
/// The attribute `plan-memory` puts on a `buffer.alloc` whose buffer goes in the arena a
/// `buffer.arena` plans when the call runs: the buffer's slot there (an integer).
pub const ARENA_SLOT_ATTRIBUTE: &str = "hat.arena_slot";
/// The attribute of a `buffer.arena`: the groups of slots live at one point of the program
/// (an array of arrays of slot numbers); two slots in one group never overlap.
pub const ARENA_LIVE_SETS_ATTRIBUTE: &str = "live_sets";
/// The alignment of offsets in an arena: the largest `minStorageBufferOffsetAlignment` Vulkan
/// allows, so that a plan is valid on every device.
pub const ARENA_ALIGNMENT: u64 = 256;
use crate::op_spec::{OpSpec, Syntax};
use crate::syntax::{parse_colon_memref, parse_indexed, print_indexed, print_malformed, resolve_indices};
use hat_ir::interfaces::ExecutionSpace;
use hat_ir::parser::{ParseResult, TokenKind};
use hat_ir::{
    Context, EffectKind, EffectTarget, MemoryEffect, MemoryEffects, MemorySpace, Op, OpParser, OpPrinter, OpTraits,
    OperationState, Type, VerifyContext,
};

/// An effect on operand `operand` in memory space `space`.
/// An effect on operand `operand`'s copy in `space`: the whole buffer, or the element span its
/// optional `[offset, count]` operands name (transfers).
fn transfer_effect(ctx: &Context, op: Op, kind: EffectKind, space: MemorySpace) -> MemoryEffect {
    let effect = MemoryEffect::on_operand(kind, 0).in_space(space);
    if ctx.operands(op).len() == 3 {
        effect.on_span(1)
    } else {
        effect
    }
}

/// Checks that a memref-typed operand is a memref; reports `what` it is otherwise.
fn expect_memref(v: &mut VerifyContext<'_>, op: Op, operand: usize, what: &str) -> Option<(Vec<i64>, Type)> {
    let ty = checks::operand_type(v, op, operand);
    let parts = memref_parts(v, ty);
    if parts.is_none() {
        let name = v.type_name(ty);
        v.error(op, format!("{what} must be a memref, but got '{name}'"));
    }
    parts
}

/// Checks that operand `operand` is an `index`; `what` names it in the message.
fn expect_index(v: &mut VerifyContext<'_>, op: Op, operand: usize, what: &str) {
    let ty = checks::operand_type(v, op, operand);
    if !checks::is_index(v, ty) {
        let name = v.type_name(ty);
        v.error(op, format!("{what} must be 'index', but got '{name}'"));
    }
}

// ----- alloc, dealloc --------------------------------------------------------------------------

/// `(%d0, %d1) attr-dict : memref<?x?xT>`: one size operand per dynamic dimension.
fn parse_alloc(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    p.expect(TokenKind::LParen, "'(' before the dynamic sizes")?;
    let sizes = p.parse_operand_list()?;
    p.expect(TokenKind::RParen, "')' after the dynamic sizes")?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let (ty, _) = parse_colon_memref(p)?;
    state.operands = resolve_indices(p, &sizes)?;
    state.result_types = vec![ty];
    Ok(())
}

fn print_alloc(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    if ctx.result_count(op) != 1 {
        return print_malformed(p);
    }
    p.write("(");
    p.values(ctx.operands(op));
    p.write(")");
    p.attr_dict(&[]);
    p.write(" : ");
    p.ty(ctx.value_type(ctx.result(op, 0)));
}

fn verify_alloc(v: &mut VerifyContext<'_>, op: Op) {
    checks::outside_execution_space(v, op, ExecutionSpace::Device);
    let ctx = v.ctx();
    if !v.expect_result_count(op, 1) {
        return;
    }
    let ty = checks::result_type(v, op, 0);
    let Some((shape, _)) = memref_parts(v, ty) else {
        let name = v.type_name(ty);
        return v.error(op, format!("result must be a memref, but got '{name}'"));
    };
    let dynamic = shape.iter().filter(|&&d| d == hat_ir::types::DYNAMIC).count();
    let sizes = ctx.operands(op).len();
    if sizes != dynamic {
        return v.error(op, format!("expects {dynamic} size operand(s), one per dynamic dimension, but has {sizes}"));
    }
    for index in 0..sizes {
        expect_index(v, op, index, &format!("size operand #{index}"));
    }
}

fn alloc_effects(_: &Context, _: Op) -> MemoryEffects {
    MemoryEffects::of([MemoryEffect::new(EffectKind::Allocate, EffectTarget::Result(0))])
}

// ----- arena ------------------------------------------------------------------------------------

/// `(%bytes0, %bytes1, ...) attr-dict`: one size in bytes per slot.
fn parse_arena(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    p.expect(TokenKind::LParen, "'(' before the slots' sizes")?;
    let sizes = p.parse_operand_list()?;
    p.expect(TokenKind::RParen, "')' after the slots' sizes")?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    state.operands = resolve_indices(p, &sizes)?;
    Ok(())
}

fn print_arena(p: &mut OpPrinter<'_, '_>, op: Op) {
    p.write("(");
    p.values(p.ctx().operands(op));
    p.write(")");
    p.attr_dict(&[]);
}

fn verify_arena(v: &mut VerifyContext<'_>, op: Op) {
    checks::outside_execution_space(v, op, ExecutionSpace::Device);
    let ctx = v.ctx();
    if !v.expect_result_count(op, 0) {
        return;
    }
    let slots = ctx.operands(op).len();
    for index in 0..slots {
        expect_index(v, op, index, &format!("slot size #{index}"));
    }
    if arena_live_sets(ctx, op).is_none_or(|sets| sets.iter().flatten().any(|&s| s >= slots)) {
        v.error(
            op,
            format!(
                "expects '{ARENA_LIVE_SETS_ATTRIBUTE}', an array of arrays of slot numbers below {slots} \
                 (the slots live together)"
            ),
        );
    }
}

/// The groups of slots a `buffer.arena` says are live together; `None` when the attribute is
/// missing or malformed.
pub fn arena_live_sets(ctx: &Context, op: Op) -> Option<Vec<Vec<usize>>> {
    let hat_ir::AttributeKind::Array(sets) = ctx.attribute_kind(ctx.attribute(op, ARENA_LIVE_SETS_ATTRIBUTE)?) else {
        return None;
    };
    sets.iter()
        .map(|&set| match ctx.attribute_kind(set) {
            hat_ir::AttributeKind::Array(slots) => slots
                .iter()
                .map(|&slot| ctx.attribute_kind(slot).as_i64().and_then(|s| usize::try_from(s).ok()))
                .collect::<Option<Vec<usize>>>(),
            _ => None,
        })
        .collect()
}

/// A `buffer.arena` allocates device memory that no value names: it must stay where it is.
fn arena_effects(_: &Context, _: Op) -> MemoryEffects {
    let mut effect = MemoryEffect::new(EffectKind::Allocate, EffectTarget::All);
    effect.space = MemorySpace::Device;
    MemoryEffects::of([effect])
}

/// `%b attr-dict : memref<...>`: one buffer operand, no results.
fn parse_buffer_operand(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let buffer = p.parse_operand()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let (ty, _) = parse_colon_memref(p)?;
    state.operands = vec![p.resolve_operand(&buffer, ty)?];
    Ok(())
}

fn print_buffer_operand(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let [buffer] = ctx.operands(op) else {
        return print_malformed(p);
    };
    p.write(" ");
    p.value(*buffer);
    p.attr_dict(&[]);
    p.write(" : ");
    p.ty(ctx.value_type(*buffer));
}

fn verify_dealloc(v: &mut VerifyContext<'_>, op: Op) {
    checks::outside_execution_space(v, op, ExecutionSpace::Device);
    if checks::plain_op(v, op, 1, 0) {
        expect_memref(v, op, 0, "operand");
    }
}

fn dealloc_effects(_: &Context, _: Op) -> MemoryEffects {
    MemoryEffects::of([MemoryEffect::on_operand(EffectKind::Free, 0)])
}

// ----- load, store, dim ------------------------------------------------------------------------

/// `%b[%i, %j] attr-dict : memref<...>`; the result is the element type.
fn parse_load(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let (buffer, indices) = parse_indexed(p)?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let (ty, element) = parse_colon_memref(p)?;
    state.operands = vec![p.resolve_operand(&buffer, ty)?];
    state.operands.extend(resolve_indices(p, &indices)?);
    state.result_types = vec![element];
    Ok(())
}

fn print_load(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let Some(&buffer) = ctx.operands(op).first() else {
        return print_malformed(p);
    };
    p.write(" ");
    print_indexed(p, op, 0);
    p.attr_dict(&[]);
    p.write(" : ");
    p.ty(ctx.value_type(buffer));
}

fn verify_load(v: &mut VerifyContext<'_>, op: Op) {
    if !v.expect_result_count(op, 1) {
        return;
    }
    let Some(element) = checks::indexed_access(v, op, 0, 0) else {
        return;
    };
    let result = checks::result_type(v, op, 0);
    if result != element {
        let (result, element) = (v.type_name(result), v.type_name(element));
        v.error(op, format!("result type '{result}' does not match the element type '{element}'"));
    }
}

fn load_effects(ctx: &Context, op: Op) -> MemoryEffects {
    let rank = ctx.operands(op).len().saturating_sub(1);
    MemoryEffects::of([MemoryEffect::on_operand(EffectKind::Read, 0).on_element(1, rank)])
}

/// `%v, %b[%i, %j] attr-dict : memref<...>`; the value has the element type.
fn parse_store(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let value = p.parse_operand()?;
    p.expect(TokenKind::Comma, "',' after the stored value")?;
    let (buffer, indices) = parse_indexed(p)?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let (ty, element) = parse_colon_memref(p)?;
    state.operands = vec![p.resolve_operand(&value, element)?, p.resolve_operand(&buffer, ty)?];
    state.operands.extend(resolve_indices(p, &indices)?);
    Ok(())
}

fn print_store(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let [value, buffer, ..] = *ctx.operands(op) else {
        return print_malformed(p);
    };
    p.write(" ");
    p.value(value);
    p.write(", ");
    print_indexed(p, op, 1);
    p.attr_dict(&[]);
    p.write(" : ");
    p.ty(ctx.value_type(buffer));
}

fn verify_store(v: &mut VerifyContext<'_>, op: Op) {
    if !v.expect_result_count(op, 0) {
        return;
    }
    let Some(element) = checks::indexed_access(v, op, 1, 0) else {
        return;
    };
    let value = checks::operand_type(v, op, 0);
    if value != element {
        let (value, element) = (v.type_name(value), v.type_name(element));
        v.error(op, format!("value type '{value}' does not match the element type '{element}'"));
    }
}

fn store_effects(ctx: &Context, op: Op) -> MemoryEffects {
    let rank = ctx.operands(op).len().saturating_sub(2);
    MemoryEffects::of([MemoryEffect::on_operand(EffectKind::Write, 1).on_element(2, rank)])
}

/// `%b, N attr-dict : memref<...>`; `N` is the `dimension` attribute, the result an `index`.
fn parse_dim(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let buffer = p.parse_operand()?;
    p.expect(TokenKind::Comma, "',' before the dimension")?;
    let dimension = p.parse_integer()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let (ty, _) = parse_colon_memref(p)?;
    state.operands = vec![p.resolve_operand(&buffer, ty)?];
    let ctx = p.ctx();
    let i64_type = ctx.integer_type(64);
    let key = ctx.ident("dimension");
    let value = ctx.integer_attr(dimension, i64_type);
    state.attributes.push((key, value));
    state.result_types = vec![ctx.index_type()];
    Ok(())
}

fn print_dim(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let dimension = ctx.attribute(op, "dimension").and_then(|a| ctx.attribute_kind(a).as_i64());
    let ([buffer], Some(dimension)) = (ctx.operands(op), dimension) else {
        return print_malformed(p);
    };
    p.write(" ");
    p.value(*buffer);
    p.write(&format!(", {dimension}"));
    p.attr_dict(&["dimension"]);
    p.write(" : ");
    p.ty(ctx.value_type(*buffer));
}

fn verify_dim(v: &mut VerifyContext<'_>, op: Op) {
    if !checks::plain_op(v, op, 1, 1) {
        return;
    }
    let result = checks::result_type(v, op, 0);
    if !checks::is_index(v, result) {
        let name = v.type_name(result);
        v.error(op, format!("result must be 'index', but got '{name}'"));
    }
    let dimension = checks::i64_attribute(v, op, "dimension");
    let Some((shape, _)) = expect_memref(v, op, 0, "operand") else {
        return;
    };
    if let Some(dimension) = dimension {
        if dimension < 0 || dimension >= shape.len() as i64 {
            let name = v.type_name(checks::operand_type(v, op, 0));
            v.error(op, format!("dimension {dimension} is out of range for '{name}' of rank {}", shape.len()));
        }
    }
}

// ----- copy ------------------------------------------------------------------------------------

/// `%src, %dst attr-dict : memref<...>`: both operands have the one type.
fn parse_copy(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let source = p.parse_operand()?;
    p.expect(TokenKind::Comma, "',' between the source and the destination")?;
    let destination = p.parse_operand()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let (ty, _) = parse_colon_memref(p)?;
    state.operands = vec![p.resolve_operand(&source, ty)?, p.resolve_operand(&destination, ty)?];
    Ok(())
}

fn print_copy(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let [source, destination] = *ctx.operands(op) else {
        return print_malformed(p);
    };
    p.write(" ");
    p.values(&[source, destination]);
    p.attr_dict(&[]);
    p.write(" : ");
    p.ty(ctx.value_type(source));
}

fn verify_copy(v: &mut VerifyContext<'_>, op: Op) {
    checks::outside_execution_space(v, op, ExecutionSpace::Device);
    if !checks::plain_op(v, op, 2, 0) {
        return;
    }
    if expect_memref(v, op, 0, "source").is_none() {
        return;
    }
    let (source, destination) = (checks::operand_type(v, op, 0), checks::operand_type(v, op, 1));
    if source != destination {
        let (source, destination) = (v.type_name(source), v.type_name(destination));
        v.error(op, format!("source '{source}' and destination '{destination}' must have the same type"));
    }
}

fn copy_effects(_: &Context, _: Op) -> MemoryEffects {
    MemoryEffects::of([
        MemoryEffect::on_operand(EffectKind::Read, 0).in_space(MemorySpace::Host),
        MemoryEffect::on_operand(EffectKind::Write, 1).in_space(MemorySpace::Host),
    ])
}

// ----- transfers and hooks ---------------------------------------------------------------------

/// `%b attr-dict : memref<...>` or `%b[%offset, %count] attr-dict : memref<...>`: the whole buffer,
/// or a flat (row-major) element range. Operands: the buffer, then offset and count if present.
fn parse_transfer(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let buffer = p.parse_operand()?;
    let mut range = Vec::new();
    if p.peek(TokenKind::LSquare) {
        let location = p.location();
        p.expect(TokenKind::LSquare, "'['")?;
        range = p.parse_operand_list()?;
        p.expect(TokenKind::RSquare, "']' after the element range")?;
        if range.len() != 2 {
            return Err(p.error_at(location, "expected an element range '[%offset, %count]'"));
        }
    }
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let (ty, _) = parse_colon_memref(p)?;
    state.operands = vec![p.resolve_operand(&buffer, ty)?];
    state.operands.extend(resolve_indices(p, &range)?);
    Ok(())
}

fn print_transfer(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let operands = ctx.operands(op);
    if operands.len() != 1 && operands.len() != 3 {
        return print_malformed(p);
    }
    p.write(" ");
    p.value(operands[0]);
    if operands.len() == 3 {
        p.write("[");
        p.values(&operands[1..]);
        p.write("]");
    }
    p.attr_dict(&[]);
    p.write(" : ");
    p.ty(ctx.value_type(operands[0]));
}

fn verify_transfer(v: &mut VerifyContext<'_>, op: Op) {
    checks::outside_execution_space(v, op, ExecutionSpace::Device);
    let ok = v.expect_result_count(op, 0);
    let count = v.ctx().operands(op).len();
    if count != 1 && count != 3 {
        return v.error(
            op,
            format!("expects a buffer and an optional element range (offset, count): 1 or 3 operands, but has {count}"),
        );
    }
    if !ok {
        return;
    }
    expect_memref(v, op, 0, "operand #0");
    if count == 3 {
        expect_index(v, op, 1, "the range's offset");
        expect_index(v, op, 2, "the range's count");
    }
}

fn to_device_effects(ctx: &Context, op: Op) -> MemoryEffects {
    MemoryEffects::of([
        transfer_effect(ctx, op, EffectKind::Read, MemorySpace::Host),
        transfer_effect(ctx, op, EffectKind::Write, MemorySpace::Device),
    ])
}

fn from_device_effects(ctx: &Context, op: Op) -> MemoryEffects {
    MemoryEffects::of([
        transfer_effect(ctx, op, EffectKind::Read, MemorySpace::Device),
        transfer_effect(ctx, op, EffectKind::Write, MemorySpace::Host),
    ])
}

/// A transfer-shaped op (`to_device`, `from_device`, the four hooks); `effects: None` is unknown.
const fn transfer_like(
    name: &'static str,
    summary: &'static str,
    effects: Option<crate::op_spec::EffectsFn>,
) -> OpSpec {
    OpSpec {
        name,
        summary,
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_transfer, print: print_transfer },
        verify: verify_transfer,
        effects,
    }
}

/// The ops of `buffer`.
pub const OPS: &[OpSpec] = &[
    OpSpec {
        name: "buffer.alloc",
        summary: "Allocates a buffer; one index operand per dynamic dimension",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_alloc, print: print_alloc },
        verify: verify_alloc,
        effects: Some(alloc_effects),
    },
    OpSpec {
        name: "buffer.dealloc",
        summary: "Frees a buffer",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_buffer_operand, print: print_buffer_operand },
        verify: verify_dealloc,
        effects: Some(dealloc_effects),
    },
    OpSpec {
        name: "buffer.release",
        summary: "Ends the function's use of a buffer: frees it when this call of the function owns it \
                  (it allocated it, or a call it made returned it fresh), and does nothing to a buffer its \
                  caller owns",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_buffer_operand, print: print_buffer_operand },
        verify: verify_dealloc,
        effects: Some(dealloc_effects),
    },
    OpSpec {
        name: "buffer.arena",
        summary: "Plans the call's arena once its buffers' sizes are known: operand k is slot k's size in \
                  bytes, `live_sets` the groups of slots live together; packs them as `plan-memory` does \
                  (best fit over several orders, offsets aligned to 256 bytes), and each later \
                  `buffer.alloc {hat.arena_slot = k}` of the call goes at slot k's offset",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_arena, print: print_arena },
        verify: verify_arena,
        effects: Some(arena_effects),
    },
    OpSpec {
        name: "buffer.load",
        summary: "Reads an element of the copy of wherever it runs",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_load, print: print_load },
        verify: verify_load,
        effects: Some(load_effects),
    },
    OpSpec {
        name: "buffer.store",
        summary: "Writes an element of the copy of wherever it runs",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_store, print: print_store },
        verify: verify_store,
        effects: Some(store_effects),
    },
    OpSpec {
        name: "buffer.dim",
        summary: "The size of one dimension of a buffer",
        traits: OpTraits::PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_dim, print: print_dim },
        verify: verify_dim,
        effects: None,
    },
    OpSpec {
        name: "buffer.copy",
        summary: "Copies a whole buffer into another, host copy to host copy",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_copy, print: print_copy },
        verify: verify_copy,
        effects: Some(copy_effects),
    },
    transfer_like(
        "buffer.to_device",
        "Copies a buffer, or an element range, from host to device",
        Some(to_device_effects),
    ),
    transfer_like(
        "buffer.from_device",
        "Copies a buffer, or an element range, from device to host",
        Some(from_device_effects),
    ),
    transfer_like("buffer.before_host_read", "Runtime-tracking hook before the host reads a buffer", None),
    transfer_like("buffer.after_host_read", "Runtime-tracking hook after the host reads a buffer", None),
    transfer_like("buffer.before_host_write", "Runtime-tracking hook before the host writes a buffer", None),
    transfer_like("buffer.after_host_write", "Runtime-tracking hook after the host writes a buffer", None),
];

/// Registers `buffer`.
pub fn register(ctx: &mut Context) {
    ctx.register_dialect("buffer", "Buffers: allocation, element access, host-side copies, transfers, tracking hooks");
    crate::op_spec::register_specs(ctx, OPS);
    ctx.register_folder(DimOp::NAME, fold_dim);
}

/// `buffer.dim` of a static dimension is that constant.
fn fold_dim(fold: &mut hat_ir::rewrite::FoldContext<'_>, op: Op) -> Option<hat_ir::rewrite::FoldResult> {
    let ctx = fold.ctx();
    let dimension = ctx.attribute(op, "dimension").and_then(|a| ctx.attribute_kind(a).as_i64())?;
    let buffer = *ctx.operands(op).first()?;
    let hat_ir::TypeKind::MemRef { shape, .. } = ctx.type_kind(ctx.value_type(buffer)) else { return None };
    let extent = *shape.get(usize::try_from(dimension).ok()?)?;
    if extent == hat_ir::types::DYNAMIC {
        return None;
    }
    let index = ctx.result(op, 0);
    let ty = ctx.value_type(index);
    Some(hat_ir::rewrite::FoldResult::Attribute(fold.integer_attr(extent, ty)))
}

#[cfg(test)]
mod tests {
    use crate::checks::testing::{assert_verify_error, parse_error, round_trip};
    use hat_ir::{EffectKind, EffectTarget, MemoryEffect, MemoryEffects, MemorySpace};

    /// A compute function around `body`, with `%a: memref<8x8xi32>`, `%v: memref<64xf32>`,
    /// `%i: index`, `%x: i32` and `%f: f32` in scope.
    fn host(body: &str) -> String {
        format!(
            "compute.func @f(%a: memref<8x8xi32>, %v: memref<64xf32>, %i: index, %x: i32, %f: f32) {{\n{body}\n  compute.return\n}}"
        )
    }

    #[test]
    fn custom_forms_round_trip() {
        let text = host(
            "  %0 = buffer.alloc() : memref<4xi32>\n  %1 = buffer.alloc(%i, %i) {tag} : memref<?x2x?xf32>\n  \
             %2 = buffer.load %a[%i, %i] : memref<8x8xi32>\n  buffer.store %x, %a[%i, %i] : memref<8x8xi32>\n  \
             %3 = buffer.dim %1, 2 : memref<?x2x?xf32>\n  buffer.copy %a, %a : memref<8x8xi32>\n  \
             buffer.to_device %v[%i, %i] : memref<64xf32>\n  buffer.from_device %v : memref<64xf32>\n  \
             buffer.dealloc %0 : memref<4xi32>",
        );
        let printed = round_trip(&text);
        assert!(printed.contains("buffer.dim %1, 2 : memref<?x2x?xf32>"), "{printed}");
        assert!(printed.contains("buffer.alloc(%i, %i) {tag} : memref<?x2x?xf32>"), "{printed}");
    }

    #[test]
    fn load_with_wrong_index_count() {
        assert_verify_error(
            &host(r#"  %0 = "buffer.load"(%a, %i) : (memref<8x8xi32>, index) -> i32"#),
            "expects 2 index operand(s), one per dimension of 'memref<8x8xi32>', but has 1",
        );
    }

    #[test]
    fn load_with_a_non_index_index() {
        assert_verify_error(
            &host(r#"  %0 = "buffer.load"(%v, %x) : (memref<64xf32>, i32) -> f32"#),
            "index operand #0 must be 'index', but got 'i32'",
        );
    }

    #[test]
    fn load_result_must_be_the_element_type() {
        assert_verify_error(
            &host(r#"  %0 = "buffer.load"(%v, %i) : (memref<64xf32>, index) -> i32"#),
            "result type 'i32' does not match the element type 'f32'",
        );
    }

    #[test]
    fn store_value_type_mismatch() {
        assert_verify_error(
            &host(r#"  "buffer.store"(%x, %v, %i) : (i32, memref<64xf32>, index) -> ()"#),
            "value type 'i32' does not match the element type 'f32'",
        );
    }

    #[test]
    fn store_with_no_operands_does_not_panic() {
        assert_verify_error(&host(r#"  "buffer.store"() : () -> ()"#), "expects at least 2 operand(s), but has 0");
    }

    #[test]
    fn alloc_needs_one_size_per_dynamic_dimension() {
        assert_verify_error(
            &host(r#"  %0 = "buffer.alloc"(%i) : (index) -> memref<?x?xf32>"#),
            "expects 2 size operand(s), one per dynamic dimension, but has 1",
        );
        assert_verify_error(&host(r#"  %0 = "buffer.alloc"() : () -> i32"#), "result must be a memref, but got 'i32'");
    }

    #[test]
    fn dim_out_of_range_and_missing_attribute() {
        assert_verify_error(
            &host("  %0 = buffer.dim %a, 2 : memref<8x8xi32>"),
            "dimension 2 is out of range for 'memref<8x8xi32>' of rank 2",
        );
        assert_verify_error(
            &host(r#"  %0 = "buffer.dim"(%a) : (memref<8x8xi32>) -> index"#),
            "requires attribute 'dimension'",
        );
        assert_verify_error(
            &host(r#"  %0 = "buffer.dim"(%a) {dimension = 0 : i32} : (memref<8x8xi32>) -> index"#),
            "attribute 'dimension' must be an i64 integer",
        );
    }

    #[test]
    fn copy_types_must_match() {
        assert_verify_error(
            &host(r#"  "buffer.copy"(%a, %v) : (memref<8x8xi32>, memref<64xf32>) -> ()"#),
            "source 'memref<8x8xi32>' and destination 'memref<64xf32>' must have the same type",
        );
    }

    #[test]
    fn copy_inside_a_kernel() {
        let text = "kernel.func @k(%a: memref<4xi32>, %b: memref<4xi32>) {\n  buffer.copy %a, %b : memref<4xi32>\n  kernel.return\n}";
        assert_verify_error(text, "'buffer.copy' op is not allowed inside 'kernel.func'");
    }

    #[test]
    fn transfer_inside_a_kernel_helper() {
        let text = "kernel.helper @h(%a: memref<4xi32>) {\n  buffer.to_device %a : memref<4xi32>\n  kernel.return\n}";
        assert_verify_error(text, "'buffer.to_device' op is not allowed inside 'kernel.helper'");
    }

    #[test]
    fn transfer_range_must_have_two_operands() {
        let error = parse_error(&host("  buffer.to_device %v[%i] : memref<64xf32>"));
        assert!(error.contains("expected an element range '[%offset, %count]'"), "{error}");
        assert_verify_error(
            &host(r#"  "buffer.from_device"(%v, %i) : (memref<64xf32>, index) -> ()"#),
            "1 or 3 operands, but has 2",
        );
        assert_verify_error(
            &host(r#"  "buffer.after_host_write"(%v, %x, %i) : (memref<64xf32>, i32, index) -> ()"#),
            "the range's offset must be 'index', but got 'i32'",
        );
    }

    #[test]
    fn custom_form_needs_a_memref_type() {
        let error = parse_error(&host("  %0 = buffer.load %a[%i] : i32"));
        assert!(error.contains("expected a memref type"), "{error}");
    }

    #[test]
    fn memory_effects() {
        let mut ctx = crate::context();
        let text = host(
            "  buffer.to_device %v : memref<64xf32>\n  buffer.from_device %v : memref<64xf32>\n  \
             buffer.copy %a, %a : memref<8x8xi32>\n  buffer.store %f, %v[%i] : memref<64xf32>\n  \
             buffer.before_host_read %v : memref<64xf32>\n  %0 = buffer.dim %v, 0 : memref<64xf32>",
        );
        let module = hat_ir::parse_source(&mut ctx, "test.hat", &text).unwrap();
        let effects = |name: &str| {
            let op = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == name).unwrap();
            ctx.definition(ctx.name(op)).unwrap().memory_effects(&ctx, op)
        };
        let on = |kind, operand, space| MemoryEffect::on_operand(kind, operand).in_space(space);
        assert_eq!(
            effects("buffer.to_device"),
            MemoryEffects::of([
                on(EffectKind::Read, 0, MemorySpace::Host),
                on(EffectKind::Write, 0, MemorySpace::Device)
            ])
        );
        assert_eq!(
            effects("buffer.from_device"),
            MemoryEffects::of([
                on(EffectKind::Read, 0, MemorySpace::Device),
                on(EffectKind::Write, 0, MemorySpace::Host)
            ])
        );
        assert_eq!(
            effects("buffer.copy"),
            MemoryEffects::of([
                on(EffectKind::Read, 0, MemorySpace::Host),
                on(EffectKind::Write, 1, MemorySpace::Host)
            ])
        );
        let store = MemoryEffect {
            kind: EffectKind::Write,
            target: EffectTarget::Operand(1),
            space: MemorySpace::Current,
            extent: hat_ir::Extent::Element { first: 2, count: 1 },
            must: true,
            atomic: false,
        };
        assert_eq!(effects("buffer.store"), MemoryEffects::of([store]));
        assert_eq!(effects("buffer.before_host_read"), MemoryEffects::Unknown);
        assert!(effects("buffer.dim").is_none());
    }
}
