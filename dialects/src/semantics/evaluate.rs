//! What each [`ScalarOp`] computes: [`ScalarOp::evaluate`], the one implementation of the rules
//! stated in the [module docs](super). Helpers here read operands in a width and build normal
//! results ([`super::scalar`]).

use super::error::ScalarError;
use super::ops::{OperandClass, ScalarOp};
use super::scalar::{from_bits, mask, narrow, sign_extend, to_bits, widen, Scalar, ScalarType};

/// The result of evaluating a scalar op on operands it accepts.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The value hat's executor and CPU backend produce, normal for the result type.
    pub value: Scalar,
    /// Whether MLIR leaves this result undefined (poison, or undefined behaviour): a shift by the
    /// width or more, a signed division overflow, a float-to-integer conversion of NaN or out of
    /// range. `value` is then hat's choice, which a folder must not fold and a program must not
    /// rely on: another backend may give something else.
    pub undefined: bool,
}

impl Evaluation {
    fn defined(value: Scalar) -> Evaluation {
        Evaluation { value, undefined: false }
    }

    /// The value, when MLIR defines it.
    pub fn defined_value(self) -> Option<Scalar> {
        (!self.undefined).then_some(self.value)
    }
}

impl ScalarOp {
    /// Evaluates the op. `operand_type` is the type of its operands (for `select`: of the values
    /// it chooses between, not of the condition; for casts: the source type); `result_type` is
    /// read by the casts only (the other ops produce `operand_type`, comparisons `i1`). Operands
    /// should be normal for their type ([`super::normalize`]); the result is.
    ///
    /// Errors: [`ScalarError::DivisionByZero`], and the errors of a malformed op (operand count,
    /// operand or result type, `bitcast` width).
    pub fn evaluate(
        self,
        operands: &[Scalar],
        operand_type: ScalarType,
        result_type: ScalarType,
    ) -> Result<Evaluation, ScalarError> {
        if operands.len() != self.arity() {
            return Err(ScalarError::OperandCount { op: self.name(), expected: self.arity(), actual: operands.len() });
        }
        let accepted = match self.operand_class() {
            OperandClass::Integer => operand_type.is_integer(),
            OperandClass::Float => operand_type.is_float(),
            OperandClass::Any => true,
        };
        if !accepted {
            return Err(ScalarError::OperandType { op: self.name(), ty: operand_type });
        }
        let t = operand_type;
        let a = operands[0];
        let b = operands.get(1).copied().unwrap_or(Scalar::Int(0));
        use ScalarOp::*;
        let value = match self {
            AddI => int(t, unsigned(a, t).wrapping_add(unsigned(b, t)) as i128),
            SubI => int(t, unsigned(a, t).wrapping_sub(unsigned(b, t)) as i128),
            MulI => int(t, unsigned(a, t).wrapping_mul(unsigned(b, t)) as i128),
            DivSI | CeilDivSI | FloorDivSI | RemSI => {
                // In i128, so that `MIN / -1` and `MIN % -1` do not overflow before wrapping.
                let (x, y) = (signed(a, t) as i128, signed(b, t) as i128);
                if y == 0 {
                    return Err(ScalarError::DivisionByZero { op: self.name() });
                }
                let (quotient, remainder) = (x / y, x % y);
                let exact = match self {
                    RemSI => return Ok(Evaluation::defined(int(t, remainder))),
                    CeilDivSI if remainder != 0 && ((x < 0) == (y < 0)) => quotient + 1,
                    FloorDivSI if remainder != 0 && ((x < 0) != (y < 0)) => quotient - 1,
                    _ => quotient,
                };
                // The only quotient out of range is `MIN / -1`'s.
                return Ok(Evaluation { value: int(t, exact), undefined: !fits_signed(exact, t.bits()) });
            }
            DivUI | RemUI => {
                let (x, y) = (unsigned(a, t), unsigned(b, t));
                if y == 0 {
                    return Err(ScalarError::DivisionByZero { op: self.name() });
                }
                int(t, if self == DivUI { x / y } else { x % y } as i128)
            }
            AndI => int(t, (unsigned(a, t) & unsigned(b, t)) as i128),
            OrI => int(t, (unsigned(a, t) | unsigned(b, t)) as i128),
            XorI => int(t, (unsigned(a, t) ^ unsigned(b, t)) as i128),
            ShLI | ShRSI | ShRUI => {
                let amount = unsigned(b, t);
                if amount >= t.bits() as u64 {
                    return Ok(Evaluation { value: Scalar::Int(0), undefined: true });
                }
                match self {
                    ShLI => int(t, (unsigned(a, t) << amount) as i128),
                    ShRSI => int(t, (signed(a, t) >> amount) as i128),
                    _ => int(t, (unsigned(a, t) >> amount) as i128),
                }
            }
            MaxSI => pick(signed(a, t) >= signed(b, t), a, b, t),
            MinSI => pick(signed(a, t) <= signed(b, t), a, b, t),
            MaxUI => pick(unsigned(a, t) >= unsigned(b, t), a, b, t),
            MinUI => pick(unsigned(a, t) <= unsigned(b, t), a, b, t),
            AbsI => int(t, (signed(a, t) as i128).abs()),
            AddF => binary_float(t, a, b, |x, y| x + y, |x, y| x + y),
            SubF => binary_float(t, a, b, |x, y| x - y, |x, y| x - y),
            MulF => binary_float(t, a, b, |x, y| x * y, |x, y| x * y),
            DivF => binary_float(t, a, b, |x, y| x / y, |x, y| x / y),
            RemF => binary_float(t, a, b, |x, y| x % y, |x, y| x % y),
            PowF => binary_float(t, a, b, f32::powf, f64::powf),
            // Exact in f64: the result is one of the operands.
            MaximumF => binary_float(t, a, b, maximum, maximum),
            MinimumF => binary_float(t, a, b, minimum, minimum),
            MaxNumF => binary_float(t, a, b, maximum_number, maximum_number),
            MinNumF => binary_float(t, a, b, minimum_number, minimum_number),
            // Sign-bit operations: a NaN keeps its payload and quietness, and its sign changes.
            NegF => Scalar::Float(-a.as_f64()),
            AbsF => Scalar::Float(a.as_f64().abs()),
            Sqrt => unary_float(t, a, f32::sqrt, f64::sqrt),
            Exp => unary_float(t, a, f32::exp, f64::exp),
            Log => unary_float(t, a, f32::ln, f64::ln),
            Sin => unary_float(t, a, f32::sin, f64::sin),
            Cos => unary_float(t, a, f32::cos, f64::cos),
            Tanh => unary_float(t, a, f32::tanh, f64::tanh),
            Floor => unary_float(t, a, f32::floor, f64::floor),
            Ceil => unary_float(t, a, f32::ceil, f64::ceil),
            CmpI(p) => Scalar::Int(p.compare(unsigned(a, t), unsigned(b, t), t.bits()) as i64),
            CmpF(p) => Scalar::Int(p.compare(a.as_f64(), b.as_f64()) as i64),
            // The chosen operand unchanged: `select` also chooses between buffer handles.
            Select => {
                if operands[0].as_i64() != 0 {
                    operands[1]
                } else {
                    operands[2]
                }
            }
            IndexCast | ExtSI => int_result(self, result_type, signed(a, t) as i128)?,
            IndexCastUI | ExtUI | TruncI => int_result(self, result_type, unsigned(a, t) as i128)?,
            SIToFP => {
                let v = signed(a, t);
                float_result(self, result_type, v as f32, v as f64)?
            }
            UIToFP => {
                let v = unsigned(a, t);
                float_result(self, result_type, v as f32, v as f64)?
            }
            FPToSI | FPToUI => return float_to_int(self, a.as_f64(), result_type),
            ExtF | TruncF => {
                let v = nan_result(a.as_f64(), &[a.as_f64()]);
                float_result(self, result_type, narrow(v), v)?
            }
            Bitcast => {
                if t.bits() != result_type.bits() {
                    return Err(ScalarError::BitcastWidth { from: t, to: result_type });
                }
                from_bits(to_bits(a, t), result_type)
            }
        };
        Ok(Evaluation::defined(value))
    }

    /// [`ScalarOp::evaluate`] as an executor needs it: the value hat gives, whether MLIR defines
    /// it or not, and the error as its message. The types are anything that converts to
    /// [`ScalarType`] (the runtime's element types do).
    pub fn apply(
        self,
        operands: &[Scalar],
        operand_type: impl Into<ScalarType>,
        result_type: impl Into<ScalarType>,
    ) -> Result<Scalar, String> {
        match self.evaluate(operands, operand_type.into(), result_type.into()) {
            Ok(evaluation) => Ok(evaluation.value),
            Err(error) => Err(error.to_string()),
        }
    }
}

// ----- integers -------------------------------------------------------------------------------

/// The operand read signed in the width of `ty` (`i1`'s 1 is -1).
fn signed(v: Scalar, ty: ScalarType) -> i64 {
    let shift = 64 - ty.bits();
    (v.as_i64() << shift) >> shift
}

/// The operand read unsigned in the width of `ty`.
fn unsigned(v: Scalar, ty: ScalarType) -> u64 {
    v.as_i64() as u64 & mask(ty.bits())
}

/// An integer result: the low bits of `v` in the width of `ty`, normal (sign-extended; `i1`: 0
/// or 1).
fn int(ty: ScalarType, v: i128) -> Scalar {
    Scalar::Int(sign_extend(v as i64, ty.bits()))
}

fn int_result(op: ScalarOp, ty: ScalarType, v: i128) -> Result<Scalar, ScalarError> {
    if ty.is_float() {
        return Err(ScalarError::ResultType { op: op.name(), ty });
    }
    Ok(int(ty, v))
}

fn fits_signed(value: i128, bits: u32) -> bool {
    let half = 1i128 << (bits - 1);
    (-half..half).contains(&value)
}

fn pick(first: bool, a: Scalar, b: Scalar, t: ScalarType) -> Scalar {
    let chosen = if first { a } else { b };
    int(t, chosen.as_i64() as i128)
}

/// `fptosi`/`fptoui`: rounds toward zero; NaN and values out of the result's range are undefined
/// in MLIR, and here saturate to the range, NaN giving 0 (Rust's `as`, and what GPUs do).
fn float_to_int(op: ScalarOp, x: f64, ty: ScalarType) -> Result<Evaluation, ScalarError> {
    if ty.is_float() {
        return Err(ScalarError::ResultType { op: op.name(), ty });
    }
    let bits = ty.bits();
    let truncated = x.trunc();
    // Powers of two are exact in f64, so these bounds are exact.
    let (value, in_range) = if op == ScalarOp::FPToSI {
        let half = 2f64.powi(bits as i32 - 1);
        let (min, max) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
        ((x as i128).clamp(min, max), truncated >= -half && truncated < half)
    } else {
        ((x as u64).min(mask(bits)) as i128, truncated >= 0.0 && truncated < 2f64.powi(bits as i32))
    };
    Ok(Evaluation { value: int(ty, value), undefined: x.is_nan() || !in_range })
}

// ----- floats ---------------------------------------------------------------------------------

/// A NaN that is a quiet one: the quiet bit set, sign and payload kept. An `f32` NaN widened to
/// `f64` has its quiet bit where `f64` has it.
fn quiet(nan: f64) -> f64 {
    f64::from_bits(nan.to_bits() | 0x0008_0000_0000_0000)
}

/// The NaN rule (module docs): a NaN result is the first NaN operand, quieted; with no NaN
/// operand, the canonical quiet NaN (positive, no payload). Results that are not NaN stay.
fn nan_result(result: f64, operands: &[f64]) -> f64 {
    if !result.is_nan() {
        return result;
    }
    operands.iter().find(|x| x.is_nan()).map_or(f64::from_bits(0x7FF8_0000_0000_0000), |&x| quiet(x))
}

/// A float result of a cast, in the result type's precision (one rounding, from `f32` or `f64`).
fn float_result(op: ScalarOp, ty: ScalarType, as_f32: f32, as_f64: f64) -> Result<Scalar, ScalarError> {
    match ty {
        ScalarType::F32 => Ok(Scalar::Float(widen(as_f32))),
        ScalarType::F64 => Ok(Scalar::Float(as_f64)),
        _ => Err(ScalarError::ResultType { op: op.name(), ty }),
    }
}

/// A binary float op computed in `t`'s precision (`f32` arithmetic for `f32`: one rounding).
fn binary_float(t: ScalarType, a: Scalar, b: Scalar, f32: fn(f32, f32) -> f32, f64: fn(f64, f64) -> f64) -> Scalar {
    let (x, y) = (a.as_f64(), b.as_f64());
    let result = if t == ScalarType::F32 { widen(f32(narrow(x), narrow(y))) } else { f64(x, y) };
    Scalar::Float(round_to(t, nan_result(result, &[x, y])))
}

fn unary_float(t: ScalarType, a: Scalar, f32: fn(f32) -> f32, f64: fn(f64) -> f64) -> Scalar {
    let x = a.as_f64();
    let result = if t == ScalarType::F32 { widen(f32(narrow(x))) } else { f64(x) };
    Scalar::Float(round_to(t, nan_result(result, &[x])))
}

fn round_to(t: ScalarType, v: f64) -> f64 {
    if t == ScalarType::F32 {
        widen(narrow(v))
    } else {
        v
    }
}

/// The little of a float type that the min/max functions need, so that they are written once
/// for `f32` and `f64`.
trait Float: Copy + PartialOrd {
    fn is_nan(self) -> bool;
    fn is_sign_negative(self) -> bool;
}

impl Float for f32 {
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f32::is_sign_negative(self)
    }
}

impl Float for f64 {
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
}

/// The larger, with `+0 > -0`; NaN when both are NaN (or, for `maximum`, either).
fn larger<T: Float>(a: T, b: T) -> T {
    if a == b {
        if a.is_sign_negative() {
            b
        } else {
            a
        }
    } else if a > b {
        a
    } else {
        b
    }
}

fn smaller<T: Float>(a: T, b: T) -> T {
    if a == b {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else if a < b {
        a
    } else {
        b
    }
}

/// IEEE 754-2019 `maximum`: a NaN operand gives NaN; `-0 < +0`.
fn maximum<T: Float>(a: T, b: T) -> T {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else {
        larger(a, b)
    }
}

/// IEEE 754-2019 `minimum`: a NaN operand gives NaN; `-0 < +0`.
fn minimum<T: Float>(a: T, b: T) -> T {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else {
        smaller(a, b)
    }
}

/// IEEE 754-2019 `maximumNumber` (`arith.maxnumf`): a NaN operand is ignored; `-0 < +0`.
fn maximum_number<T: Float>(a: T, b: T) -> T {
    if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else {
        larger(a, b)
    }
}

/// IEEE 754-2019 `minimumNumber` (`arith.minnumf`): a NaN operand is ignored; `-0 < +0`.
fn minimum_number<T: Float>(a: T, b: T) -> T {
    if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else {
        smaller(a, b)
    }
}
