//! Constant operands as analyses and interfaces see them: integers (including `i1` and `index`)
//! held by constant-like ops (MLIR's convention: the `value` attribute of an op with the
//! `CONSTANT_LIKE` trait).

use crate::rewrite::constant_value;
use crate::{AttributeKind, Context, Op, Value};

/// The integer a value holds when a constant-like op defines it: `i1` as 0 or 1 (true is 1
/// here, although the attribute stores it sign-extended, as -1), other widths sign-extended.
pub fn constant_integer(ctx: &Context, value: Value) -> Option<i64> {
    match ctx.attribute_kind(constant_value(ctx, value)?) {
        AttributeKind::Integer { value, ty } if ctx.type_kind(*ty).bit_width() == Some(1) => Some(value & 1),
        AttributeKind::Integer { value, .. } => Some(*value),
        _ => None,
    }
}

/// The integer constant of each operand of `op` (`None` where it is not one): the form
/// [`super::RegionBranchOpInterface::successors`] takes.
pub fn constant_integers(ctx: &Context, op: Op) -> Vec<Option<i64>> {
    ctx.operands(op).iter().map(|&v| constant_integer(ctx, v)).collect()
}
