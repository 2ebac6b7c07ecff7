//! Building the ops a transfer plan inserts: the two transfers (of a whole buffer or a flat
//! element range), the `index` constants of a range, and the `scf.if` that guards a copy hoisted
//! out of a loop by "the loop runs at least once".

use super::ranges::END;
use hat_dialects::buffer::{AllocOp, DimOp, FromDeviceOp, LoadOp, StoreOp, ToDeviceOp};
use hat_dialects::semantics::IntPredicate;
use hat_ir::{Block, Context, Ident, Location, Op, OperationState, Value};
use std::ops::Range;

/// Where new ops go.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Anchor {
    /// Just before this op.
    Before(Op),
    /// At the end of this block, before its terminator (when it has one).
    End(Block),
}

/// Which way a transfer goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Host copy to device copy (`buffer.to_device`).
    ToDevice,
    /// Device copy to host copy (`buffer.from_device`).
    FromDevice,
}

impl Direction {
    /// `to_device` or `from_device`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::ToDevice => "to_device",
            Direction::FromDevice => "from_device",
        }
    }
}

/// Inserts `op` at `anchor`. Ops inserted at one anchor one after the other keep their order.
pub fn insert(ctx: &mut Context, anchor: Anchor, op: Op) {
    match anchor {
        Anchor::Before(before) => ctx.insert_op_before(before, op),
        Anchor::End(block) => match ctx.last_op(block) {
            Some(last) if ctx.traits(last).contains(hat_ir::OpTraits::TERMINATOR) => ctx.insert_op_before(last, op),
            _ => ctx.append_op(block, op),
        },
    }
}

/// An `index` constant, inserted at `anchor`.
pub fn index_constant(ctx: &mut Context, anchor: Anchor, value: i64, location: Location) -> Value {
    let index = ctx.index_type();
    constant(ctx, anchor, value, index, location)
}

/// A transfer of `buffer` (the elements `range`, or all of it), inserted at `anchor`; returns
/// the transfer op. `reason` is kept as the op's `reason` attribute when given.
pub fn transfer(
    ctx: &mut Context,
    anchor: Anchor,
    direction: Direction,
    buffer: Value,
    range: Option<Range<u64>>,
    location: Location,
    reason: Option<&str>,
) -> Op {
    let name = match direction {
        Direction::ToDevice => ToDeviceOp::NAME,
        Direction::FromDevice => FromDeviceOp::NAME,
    };
    let mut state = OperationState::new(ctx.op_name(name), location);
    state.operands.push(buffer);
    let len = super::dispatch::element_count(ctx, buffer);
    if let Some(range) = range.filter(|r| !(r.start == 0 && (r.end == END || Some(r.end) == len))) {
        let offset = index_constant(ctx, anchor, range.start as i64, location);
        let count = match (range.end, len) {
            (END, Some(len)) => index_constant(ctx, anchor, (len - range.start) as i64, location),
            (END, None) => {
                let size = flat_size(ctx, anchor, buffer, location);
                binary(ctx, anchor, "arith.subi", size, offset, location)
            }
            (end, _) => index_constant(ctx, anchor, (end - range.start) as i64, location),
        };
        state.operands.extend([offset, count]);
    }
    if let Some(reason) = reason {
        let key: Ident = ctx.ident(REASON_ATTRIBUTE);
        let text = ctx.string_attr(reason);
        state.attributes.push((key, text));
    }
    let op = ctx.create_op(state);
    insert(ctx, anchor, op);
    op
}

/// The attribute that says why a transfer is there (kept only when reasons are asked for).
pub const REASON_ATTRIBUTE: &str = "reason";

/// `arith.cmpi predicate, lhs, rhs`, inserted at `anchor`.
pub fn compare(
    ctx: &mut Context,
    anchor: Anchor,
    predicate: IntPredicate,
    lhs: Value,
    rhs: Value,
    location: Location,
) -> Value {
    let i1 = ctx.integer_type(1);
    let i64_type = ctx.integer_type(64);
    let attribute = ctx.integer_attr(predicate.to_i64(), i64_type);
    let mut state = OperationState::new(ctx.op_name("arith.cmpi"), location);
    let key = ctx.ident("predicate");
    state.attributes.push((key, attribute));
    state.operands.extend([lhs, rhs]);
    state.result_types.push(i1);
    let op = ctx.create_op(state);
    insert(ctx, anchor, op);
    ctx.result(op, 0)
}

/// `scf.if %condition { }` with an empty then-block (ending in `scf.yield`) and no else,
/// inserted at `anchor`; returns the then-block, where the guarded ops go.
pub fn guard(ctx: &mut Context, anchor: Anchor, condition: Value, location: Location) -> Block {
    let then_region = ctx.create_region();
    let block = ctx.create_block(&[]);
    ctx.append_block(then_region, block);
    let yield_op =
        ctx.create_op(OperationState::new(ctx.find_op_name("scf.yield").expect("scf is registered"), location));
    ctx.append_op(block, yield_op);
    let else_region = ctx.create_region();
    let mut state = OperationState::new(ctx.op_name("scf.if"), location);
    state.operands.push(condition);
    state.regions = vec![then_region, else_region];
    let op = ctx.create_op(state);
    insert(ctx, anchor, op);
    block
}

/// `arith.muli %lhs, %rhs : index`, inserted at `anchor`.
pub fn index_product(ctx: &mut Context, anchor: Anchor, lhs: Value, rhs: Value, location: Location) -> Value {
    binary(ctx, anchor, "arith.muli", lhs, rhs, location)
}

/// `name %lhs, %rhs : index`, inserted at `anchor`.
fn binary(ctx: &mut Context, anchor: Anchor, name: &str, lhs: Value, rhs: Value, location: Location) -> Value {
    let index = ctx.index_type();
    let mut state = OperationState::new(ctx.op_name(name), location);
    state.operands.extend([lhs, rhs]);
    state.result_types.push(index);
    let op = ctx.create_op(state);
    insert(ctx, anchor, op);
    ctx.result(op, 0)
}

/// The number of elements of `buffer`, computed at run time from its dimensions.
fn flat_size(ctx: &mut Context, anchor: Anchor, buffer: Value, location: Location) -> Value {
    let rank = super::dispatch::shape(ctx, buffer).len();
    let mut size = index_constant(ctx, anchor, 1, location);
    for dimension in 0..rank {
        let index = ctx.index_type();
        let i64_type = ctx.integer_type(64);
        let attribute = ctx.integer_attr(dimension as i64, i64_type);
        let mut state = OperationState::new(ctx.op_name(DimOp::NAME), location);
        let key = ctx.ident("dimension");
        state.attributes.push((key, attribute));
        state.operands.push(buffer);
        state.result_types.push(index);
        let op = ctx.create_op(state);
        insert(ctx, anchor, op);
        size = index_product(ctx, anchor, size, ctx.result(op, 0), location);
    }
    size
}

/// An integer constant of type `ty`, inserted at `anchor`.
pub fn constant(ctx: &mut Context, anchor: Anchor, value: i64, ty: hat_ir::Type, location: Location) -> Value {
    let attribute = ctx.integer_attr(value, ty);
    let mut state = OperationState::new(ctx.op_name("arith.constant"), location);
    let key = ctx.ident("value");
    state.attributes.push((key, attribute));
    state.result_types.push(ty);
    let op = ctx.create_op(state);
    insert(ctx, anchor, op);
    ctx.result(op, 0)
}

/// An `i1` buffer of `bits` run-time bits (`buffer.alloc() : memref<bitsxi1>`), at `anchor`.
pub fn state_cell(ctx: &mut Context, anchor: Anchor, bits: i64, location: Location) -> Value {
    let i1 = ctx.integer_type(1);
    let ty = ctx.memref_type(&[bits], i1);
    let mut state = OperationState::new(ctx.op_name(AllocOp::NAME), location);
    state.result_types.push(ty);
    let op = ctx.create_op(state);
    insert(ctx, anchor, op);
    ctx.result(op, 0)
}

/// `buffer.load %buffer[%index]` (one-dimensional), at `anchor`.
pub fn load(ctx: &mut Context, anchor: Anchor, buffer: Value, index: Value, location: Location) -> Value {
    let element = match ctx.type_kind(ctx.value_type(buffer)) {
        hat_ir::TypeKind::MemRef { element, .. } => *element,
        _ => unreachable!("a state cell is a buffer"),
    };
    let mut state = OperationState::new(ctx.op_name(LoadOp::NAME), location);
    state.operands.extend([buffer, index]);
    state.result_types.push(element);
    let op = ctx.create_op(state);
    insert(ctx, anchor, op);
    ctx.result(op, 0)
}

/// `buffer.store %value, %buffer[%index]` (one-dimensional), at `anchor`.
pub fn store(ctx: &mut Context, anchor: Anchor, value: Value, buffer: Value, index: Value, location: Location) {
    let mut state = OperationState::new(ctx.op_name(StoreOp::NAME), location);
    state.operands.extend([value, buffer, index]);
    let op = ctx.create_op(state);
    insert(ctx, anchor, op);
}
