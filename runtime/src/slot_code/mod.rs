//! Slot code: the runtime's one compiler from regions of IR to code where every value of a
//! function is a numbered slot of a frame of [`Scalar`]s, serving both engines — the host
//! executor (`executor/compile.rs` adds the host's instruction set: dispatches, allocations,
//! transfers, host calls) and the CPU backend (`cpu/compile.rs` adds the device's: work-item ids,
//! atomics, barriers, workgroup memory).
//!
//! - [`compiler`]: the walk over blocks, terminators, counted loops, region-branch ops and
//!   scalars, generic over the engine's [`compiler::InstructionSet`].
//! - [`SlotMap`]: the values' slots, defined in program order, each checked to be a type the
//!   runtime holds ([`ValueKind`]): a scalar of an [`ElementType`], or a buffer (a memref, held as
//!   `Scalar::Int` of the engine's buffer handle).
//! - [`ScalarInst`] ([`scalar`]): the scalar instruction set both engines run — constants,
//!   `arith.select` and every [`ScalarOp`](crate::eval::ScalarOp) — compiled and executed once.
//! - [`Symbols`]: the op a call or dispatch names, innermost symbol table first.
//! - [`region_hop`]: a region's one block, and each hop of a region-branch op: decided when
//!   compiled, or asked of the interface when it runs (the host only), with the values it moves.
//! - [`counted_loop`]: the one rule for a counted loop's induction variable at run time (its
//!   parts come from [`hat_ir::interfaces::CountedLoop`], shared with the SPIR-V lowering).
//!
//! Errors are messages: each compiler places them at the op and adds its own context (the
//! kernel's name on the CPU backend).
//!
//! [`Scalar`]: crate::value::Scalar

pub(crate) mod compiler;
pub(crate) mod counted_loop;
pub(crate) mod region_hop;
pub(crate) mod scalar;
pub(crate) mod symbols;

pub(crate) use scalar::ScalarInst;
pub(crate) use symbols::Symbols;

use crate::value::ElementType;
use hat_ir::printer::type_to_string;
use hat_ir::{Block, Context, Op, Type, Value};
use rustc_hash::FxHashMap;
use std::ops::Range;

/// A slot of a function's frame.
pub(crate) type Slot = u32;

/// What a value is at run time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ValueKind {
    Scalar(ElementType),
    Buffer,
}

impl ValueKind {
    /// The kind of a value of type `ty`, or why the runtime cannot hold one.
    pub fn of(ctx: &Context, ty: Type) -> Result<ValueKind, String> {
        if ctx.type_kind(ty).is_memref() {
            return Ok(ValueKind::Buffer);
        }
        ElementType::of(ctx, ty)
            .map(ValueKind::Scalar)
            .ok_or_else(|| format!("values of type '{}' are not supported at run time", type_to_string(ctx, ty)))
    }

    /// The element type of a scalar value of type `ty`.
    pub fn scalar(ctx: &Context, ty: Type) -> Result<ElementType, String> {
        match ValueKind::of(ctx, ty)? {
            ValueKind::Scalar(element) => Ok(element),
            ValueKind::Buffer => Err("expects a scalar, got a buffer".into()),
        }
    }
}

/// The slots of the function being compiled: each value's, numbered from 0 in definition order.
#[derive(Default)]
pub(crate) struct SlotMap {
    slots: FxHashMap<Value, Slot>,
    next: Slot,
}

impl SlotMap {
    /// How many slots a frame needs.
    pub fn count(&self) -> u32 {
        self.next
    }

    /// A new slot for `value` (of a type the runtime holds).
    pub fn define(&mut self, ctx: &Context, value: Value) -> Result<Slot, String> {
        ValueKind::of(ctx, ctx.value_type(value))?;
        let slot = self.fresh();
        self.slots.insert(value, slot);
        Ok(slot)
    }

    /// A slot that holds no value of the IR.
    pub fn fresh(&mut self) -> Slot {
        let slot = self.next;
        self.next += 1;
        slot
    }

    /// New slots for `op`'s results.
    pub fn define_results(&mut self, ctx: &Context, op: Op) -> Result<Box<[Slot]>, String> {
        ctx.results(op).map(|value| self.define(ctx, value)).collect()
    }

    /// The slot of `op`'s one result.
    pub fn define_result(&mut self, ctx: &Context, op: Op) -> Result<Slot, String> {
        if ctx.result_count(op) != 1 {
            return Err("must have one result".into());
        }
        self.define(ctx, ctx.result(op, 0))
    }

    /// New slots for `block`'s arguments.
    pub fn define_arguments(&mut self, ctx: &Context, block: Block) -> Result<Box<[Slot]>, String> {
        ctx.block_arguments(block).iter().map(|&value| self.define(ctx, value)).collect()
    }

    /// The slot of `value`, defined before.
    pub fn get(&self, value: Value) -> Result<Slot, String> {
        self.slots.get(&value).copied().ok_or_else(|| "uses a value that is not defined before it".to_string())
    }

    /// The slots of `values`.
    pub fn get_all(&self, values: &[Value]) -> Result<Box<[Slot]>, String> {
        values.iter().map(|&value| self.get(value)).collect()
    }

    /// The slots of `op`'s operands at `range` (an interface's answer, checked).
    pub fn operands(&self, ctx: &Context, op: Op, range: Range<usize>) -> Result<Box<[Slot]>, String> {
        let operands = ctx.operands(op);
        match operands.get(range.clone()) {
            Some(values) => self.get_all(values),
            None => Err(format!("operands {range:?} are named, but the op has {} operand(s)", operands.len())),
        }
    }
}
