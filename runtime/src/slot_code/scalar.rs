//! The scalar instruction set of both engines: constants (any `CONSTANT_LIKE` op with an integer
//! or float `value`), `arith.select` (of scalars and buffer handles alike) and every
//! [`ScalarOp`] of [`crate::eval`] — compiled from the op once, run on a frame of slots.

use super::{Slot, SlotMap, ValueKind};
use crate::eval::{self, ScalarError, ScalarOp};
use crate::value::{ElementType, Scalar};
use hat_dialects::arith_views::SelectOp;
use hat_ir::{Context, Op, OpTraits};

/// A scalar instruction.
#[derive(Debug)]
pub(crate) enum ScalarInst {
    /// `dst = value`.
    Const { dst: Slot, value: Scalar },
    /// A one-operand scalar op.
    Unary { scalar: ScalarOp, dst: Slot, a: Slot, ty: ElementType, result: ElementType },
    /// A two-operand scalar op.
    Binary { scalar: ScalarOp, dst: Slot, a: Slot, b: Slot, ty: ElementType, result: ElementType },
    /// `dst = condition ? a : b` (scalars and buffer handles alike; an `i1` is 0 or 1).
    Select { dst: Slot, condition: Slot, a: Slot, b: Slot },
}

/// A scalar op that failed at run time: the op, and why (division by zero, say).
#[derive(Debug)]
pub(crate) struct ScalarFailure {
    pub scalar: ScalarOp,
    pub message: String,
}

impl ScalarInst {
    /// The instruction of `op` when it is a scalar op (`Ok(None)` when it is not one), defining
    /// its result's slot; `Err` says what is wrong with a scalar op.
    pub fn compile(ctx: &Context, op: Op, slots: &mut SlotMap) -> Result<Option<ScalarInst>, String> {
        if let Some(select) = SelectOp::wrap(ctx, op) {
            if ctx.operands(op).len() != 3 {
                return Err("takes three operands".into());
            }
            let condition = slots.get(select.condition(ctx))?;
            let a = slots.get(select.true_value(ctx))?;
            let b = slots.get(select.false_value(ctx))?;
            let dst = slots.define_result(ctx, op)?;
            return Ok(Some(ScalarInst::Select { dst, condition, a, b }));
        }
        if ctx.has_traits(op, OpTraits::CONSTANT_LIKE) && ctx.result_count(op) == 1 {
            let element = ValueKind::scalar(ctx, ctx.value_type(ctx.result(op, 0)))?;
            let value = ctx
                .attribute(op, "value")
                .and_then(|a| eval::constant_value(ctx.attribute_kind(a)))
                .ok_or("has no integer or float 'value'")?;
            let dst = slots.define_result(ctx, op)?;
            return Ok(Some(ScalarInst::Const { dst, value: eval::normalize(value, element) }));
        }
        let scalar = match ScalarOp::decode(ctx, op) {
            Ok(scalar) => scalar,
            Err(ScalarError::UnknownOp { .. }) => return Ok(None),
            // A comparison without a valid predicate.
            Err(error) => return Err(error.to_string()),
        };
        let operands = ctx.operands(op);
        if operands.len() != scalar.arity() || !(1..=2).contains(&operands.len()) || ctx.result_count(op) != 1 {
            return Err("has the wrong number of operands or results".into());
        }
        let ty = ValueKind::scalar(ctx, ctx.value_type(operands[0]))?;
        let result = ValueKind::scalar(ctx, ctx.value_type(ctx.result(op, 0)))?;
        let args = slots.get_all(operands)?;
        let dst = slots.define_result(ctx, op)?;
        Ok(Some(match *args {
            [a] => ScalarInst::Unary { scalar, dst, a, ty, result },
            [a, b] => ScalarInst::Binary { scalar, dst, a, b, ty, result },
            _ => unreachable!("the operand count is checked above"),
        }))
    }

    /// Runs the instruction on `frame`.
    #[inline(always)]
    pub fn run(&self, frame: &mut [Scalar]) -> Result<(), ScalarFailure> {
        match *self {
            ScalarInst::Const { dst, value } => frame[dst as usize] = value,
            ScalarInst::Unary { scalar, dst, a, ty, result } => {
                frame[dst as usize] = apply(scalar, &[frame[a as usize]], ty, result)?;
            }
            ScalarInst::Binary { scalar, dst, a, b, ty, result } => {
                frame[dst as usize] = apply(scalar, &[frame[a as usize], frame[b as usize]], ty, result)?;
            }
            ScalarInst::Select { dst, condition, a, b } => {
                let chosen = if frame[condition as usize].as_i64() & 1 != 0 { a } else { b };
                frame[dst as usize] = frame[chosen as usize];
            }
        }
        Ok(())
    }
}

#[inline(always)]
fn apply(scalar: ScalarOp, operands: &[Scalar], ty: ElementType, result: ElementType) -> Result<Scalar, ScalarFailure> {
    scalar.apply(operands, ty, result).map_err(|message| ScalarFailure { scalar, message })
}
