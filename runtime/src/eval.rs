//! Scalar semantics for the host executor and the CPU backend: `hat_dialects::semantics`, which
//! states the rules (wrapping, division by zero, shifts, NaN, casts) once for the folders and the
//! runtime alike, re-exported here with the conveniences the runtime needs on its
//! [`ElementType`]s.
//!
//! [`ScalarOp::apply`] takes element types directly (they convert to
//! [`hat_dialects::semantics::ScalarType`]) and gives hat's value for every result, undefined
//! ones included: the executor runs programs, it does not fold them.

use crate::value::{ElementType, Scalar};
use hat_dialects::semantics;
use hat_ir::AttributeKind;

pub use hat_dialects::semantics::{Evaluation, FloatPredicate, IntPredicate, ScalarError, ScalarOp};

/// Decodes and applies a scalar op in one call: see [`ScalarOp::from_name`] and
/// [`ScalarOp::apply`].
pub fn evaluate(
    op_name: &str,
    predicate: Option<i64>,
    operands: &[Scalar],
    operand_type: ElementType,
    result_type: ElementType,
) -> Result<Scalar, String> {
    ScalarOp::from_name(op_name, predicate)?.apply(operands, operand_type, result_type)
}

/// The value of an `arith.constant`'s `value` attribute (integers as they are stored,
/// sign-extended from their width; floats as `f64`), or `None` for other attributes.
/// [`normalize`] it to the constant's type.
pub fn constant_value(attribute: &AttributeKind) -> Option<Scalar> {
    match attribute {
        AttributeKind::Integer { value, .. } => Some(Scalar::Int(*value)),
        AttributeKind::Float { bits, .. } => Some(Scalar::Float(f64::from_bits(*bits))),
        _ => None,
    }
}

/// `value` as a value of type `ty` ([`semantics::normalize`]).
pub fn normalize(value: Scalar, ty: ElementType) -> Scalar {
    semantics::normalize(value, ty.scalar_type())
}

/// The bit pattern of `value` stored as a `ty` ([`semantics::to_bits`]).
pub fn to_bits(value: Scalar, ty: ElementType) -> u64 {
    semantics::to_bits(value, ty.scalar_type())
}

/// The value of type `ty` whose bit pattern is the low `ty.bits()` bits of `bits`
/// ([`semantics::from_bits`]).
pub fn from_bits(bits: u64, ty: ElementType) -> Scalar {
    semantics::from_bits(bits, ty.scalar_type())
}

/// MLIR's spelling of a type.
pub fn type_name(ty: ElementType) -> &'static str {
    match ty {
        ElementType::I1 => "i1",
        ElementType::I8 => "i8",
        ElementType::I16 => "i16",
        ElementType::I32 => "i32",
        ElementType::I64 => "i64",
        ElementType::Index => "index",
        ElementType::F32 => "f32",
        ElementType::F64 => "f64",
    }
}

#[cfg(test)]
mod tests {
    //! The rules themselves are tested in `hat_dialects::semantics`; these check the runtime's
    //! conveniences on element types.
    use super::*;
    use ElementType::*;

    #[test]
    fn element_types_convert_to_the_types_they_compute_in() {
        for ty in [I1, I8, I16, I32, I64, Index, F32, F64] {
            assert_eq!(ty.scalar_type().bits(), ty.bits(), "{ty:?}");
            assert_eq!(ty.scalar_type().is_float(), ty.is_float(), "{ty:?}");
            assert_eq!(ty.scalar_type().to_string(), type_name(ty), "{ty:?}");
        }
    }

    #[test]
    fn conveniences() {
        let (i, f) = (Scalar::Int, Scalar::Float);
        assert_eq!(evaluate("arith.addi", None, &[i(100), i(100)], I8, I8), Ok(i(-56)));
        assert_eq!(evaluate("arith.cmpi", Some(2), &[i(1), i(0)], I1, I1), Ok(i(1)));
        assert_eq!(evaluate("arith.shli", None, &[i(1), i(32)], I32, I32), Ok(i(0)));
        assert_eq!(
            evaluate("arith.divsi", None, &[i(7), i(0)], I32, I32),
            Err("integer division by zero ('arith.divsi')".to_string())
        );
        assert_eq!(
            evaluate("arith.addi", None, &[i(1)], I32, I32).unwrap_err(),
            "'arith.addi' takes 2 operands, got 1"
        );
        assert!(evaluate("math.bogus", None, &[f(1.0)], F32, F32).is_err());
        assert_eq!(normalize(i(0x1FF), I8), i(-1));
        assert_eq!(normalize(f(0.1), F32), f(0.1f32 as f64));
        assert_eq!(to_bits(i(-1), I16), 0xFFFF);
        assert_eq!(from_bits(0xFFFF, I16), i(-1));
        assert_eq!(to_bits(f(1.0), F32), 0x3F80_0000);
        let two = AttributeKind::Float { bits: 2.0f64.to_bits(), ty: hat_ir::Type::from_index(0) };
        assert_eq!(constant_value(&two), Some(f(2.0)));
        assert_eq!(constant_value(&AttributeKind::Unit), None);
    }
}
