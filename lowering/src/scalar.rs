//! Scalar ops (`arith`, `math`) in SPIR-V, computing what `hat_dialects::semantics` says they
//! compute wherever SPIR-V would leave the result undefined:
//!
//! - **Division and remainder**: the divisor is replaced by 1 when it is 0 or when the division
//!   is `MIN / -1`, so no instruction has undefined behaviour. `MIN / -1` then gives `MIN` and
//!   `remsi(MIN, -1)` gives 0, as hat defines them; division by zero, an error on the CPU
//!   backend, gives the dividend (a value, not a trap: the device cannot report errors).
//! - **Shifts** by the width or more give 0, as on the CPU backend.
//! - **`fptosi`/`fptoui`** saturate, NaN giving 0, as on the CPU backend.
//! - **`maximumf`/`minimumf`** propagate NaN and order `-0 < +0`; `addf`, `subf`, `mulf` and
//!   `divf` are decorated `NoContraction`, so each rounds once (a driver may not fuse them into
//!   an FMA, which the CPU backend does not do).
//! - **`i1`** is SPIR-V's `bool`; its integer ops are the logic of 1-bit wrapping arithmetic
//!   (`addi` is exclusive or, `muli` is and, signed `1` is -1).
//! - **`math`** functions are `GLSL.std.450`'s, whose precision the Vulkan spec bounds (not
//!   correctly rounded, like the CPU backend's libm). `exp`, `log`, `sin`, `cos`, `tanh` and
//!   `powf` exist there for 16- and 32-bit floats only: on `f64` they are a diagnostic.
//!
//! What remains as SPIR-V defines it: `truncf` rounds as the device rounds, and NaN payloads may
//! differ from the CPU backend's.

use crate::function::{FunctionEmitter, Kind, Lowered};
use crate::Failed;
use hat_dialects::semantics::{sign_extend, FloatPredicate, IntPredicate, ScalarOp};
use hat_ir::interfaces::constant_integer;
use hat_ir::Op;
use rspirv::spirv::{Decoration, GLOp, Word};

impl FunctionEmitter<'_> {
    pub(crate) fn scalar_op(&mut self, op: Op, scalar: ScalarOp) -> Result<(), Failed> {
        let ctx = self.ctx;
        let operands = ctx.operands(op).to_vec();
        if operands.len() != scalar.arity() || ctx.result_count(op) != 1 {
            return Err(self.error(op, "has the wrong number of operands or results"));
        }
        let operand_type = ctx.value_type(operands[if scalar == ScalarOp::Select { 1 } else { 0 }]);
        let result_type = ctx.value_type(ctx.result(op, 0));
        let from = self.kind(op, operand_type)?;
        let to = self.kind(op, result_type)?;
        let values = operands.iter().map(|&v| self.scalar(op, v)).collect::<Result<Vec<_>, _>>()?;
        // A constant divisor or shift amount needs no guard when it is in range.
        self.constant_operand = operands.get(1).and_then(|&v| constant_integer(ctx, v));
        let value = match scalar.arity() {
            1 => self.unary(op, scalar, values[0], from, to)?,
            2 => self.binary(op, scalar, values[0], values[1], from)?,
            _ => {
                let ty = self.kind_type(to);
                self.e.b.select(ty, None, values[0], values[1], values[2])?
            }
        };
        self.define_result(op, Lowered::Scalar(value))
    }

    fn binary(&mut self, op: Op, scalar: ScalarOp, a: Word, b: Word, kind: Kind) -> Result<Word, Failed> {
        match kind {
            Kind::Bool => self.bool_binary(scalar, a, b),
            Kind::Int(bits) => self.int_binary(scalar, a, b, bits),
            Kind::Float(bits) => self.float_binary(op, scalar, a, b, bits),
        }
    }

    // ----- integers -----------------------------------------------------------------------------

    fn int_binary(&mut self, scalar: ScalarOp, a: Word, b: Word, bits: u32) -> Result<Word, Failed> {
        use ScalarOp::*;
        let ty = self.e.int(bits);
        let bool = self.e.bool();
        let b_ = &mut self.e.b;
        Ok(match scalar {
            AddI => b_.i_add(ty, None, a, b)?,
            SubI => b_.i_sub(ty, None, a, b)?,
            MulI => b_.i_mul(ty, None, a, b)?,
            AndI => b_.bitwise_and(ty, None, a, b)?,
            OrI => b_.bitwise_or(ty, None, a, b)?,
            XorI => b_.bitwise_xor(ty, None, a, b)?,
            DivSI => {
                let divisor = self.safe_signed_divisor(a, b, bits)?;
                self.e.b.s_div(ty, None, a, divisor)?
            }
            RemSI => {
                let divisor = self.safe_signed_divisor(a, b, bits)?;
                self.e.b.s_rem(ty, None, a, divisor)?
            }
            DivUI | RemUI => {
                let zero = self.e.int_constant(bits, 0);
                let one = self.e.int_constant(bits, 1);
                let divisor = if self.constant_operand.is_some_and(|d| sign_extend(d, bits) != 0) {
                    b
                } else {
                    let is_zero = self.e.b.i_equal(bool, None, b, zero)?;
                    self.e.b.select(ty, None, is_zero, one, b)?
                };
                if scalar == DivUI {
                    self.e.b.u_div(ty, None, a, divisor)?
                } else {
                    self.e.b.u_mod(ty, None, a, divisor)?
                }
            }
            CeilDivSI | FloorDivSI => {
                // The quotient rounded toward zero, moved by one when the remainder is not zero
                // and the exact quotient is positive (ceil) or negative (floor).
                let divisor = self.safe_signed_divisor(a, b, bits)?;
                let quotient = self.e.b.s_div(ty, None, a, divisor)?;
                let remainder = self.e.b.s_rem(ty, None, a, divisor)?;
                let zero = self.e.int_constant(bits, 0);
                let one = self.e.int_constant(bits, 1);
                let inexact = self.e.b.i_not_equal(bool, None, remainder, zero)?;
                let a_negative = self.e.b.s_less_than(bool, None, a, zero)?;
                let b_negative = self.e.b.s_less_than(bool, None, divisor, zero)?;
                let same_sign = self.e.b.logical_equal(bool, None, a_negative, b_negative)?;
                if scalar == CeilDivSI {
                    let adjust = self.e.b.logical_and(bool, None, inexact, same_sign)?;
                    let step = self.e.b.select(ty, None, adjust, one, zero)?;
                    self.e.b.i_add(ty, None, quotient, step)?
                } else {
                    let different = self.e.b.logical_not(bool, None, same_sign)?;
                    let adjust = self.e.b.logical_and(bool, None, inexact, different)?;
                    let step = self.e.b.select(ty, None, adjust, one, zero)?;
                    self.e.b.i_sub(ty, None, quotient, step)?
                }
            }
            ShLI | ShRSI | ShRUI => {
                let shifted = match scalar {
                    ShLI => self.e.b.shift_left_logical(ty, None, a, b)?,
                    ShRSI => self.e.b.shift_right_arithmetic(ty, None, a, b)?,
                    _ => self.e.b.shift_right_logical(ty, None, a, b)?,
                };
                let amount = self.constant_operand.map(|a| sign_extend(a, bits) as u64 & (u64::MAX >> (64 - bits)));
                if amount.is_some_and(|amount| amount < bits as u64) {
                    return Ok(shifted);
                }
                let width = self.e.int_constant(bits, bits as i64);
                let zero = self.e.int_constant(bits, 0);
                let too_far = self.e.b.u_greater_than_equal(bool, None, b, width)?;
                self.e.b.select(ty, None, too_far, zero, shifted)?
            }
            MaxSI => self.e.glsl(ty, GLOp::SMax, &[a, b])?,
            MinSI => self.e.glsl(ty, GLOp::SMin, &[a, b])?,
            MaxUI => self.e.glsl(ty, GLOp::UMax, &[a, b])?,
            MinUI => self.e.glsl(ty, GLOp::UMin, &[a, b])?,
            CmpI(predicate) => {
                let b_ = &mut self.e.b;
                match predicate {
                    IntPredicate::Eq => b_.i_equal(bool, None, a, b)?,
                    IntPredicate::Ne => b_.i_not_equal(bool, None, a, b)?,
                    IntPredicate::Slt => b_.s_less_than(bool, None, a, b)?,
                    IntPredicate::Sle => b_.s_less_than_equal(bool, None, a, b)?,
                    IntPredicate::Sgt => b_.s_greater_than(bool, None, a, b)?,
                    IntPredicate::Sge => b_.s_greater_than_equal(bool, None, a, b)?,
                    IntPredicate::Ult => b_.u_less_than(bool, None, a, b)?,
                    IntPredicate::Ule => b_.u_less_than_equal(bool, None, a, b)?,
                    IntPredicate::Ugt => b_.u_greater_than(bool, None, a, b)?,
                    IntPredicate::Uge => b_.u_greater_than_equal(bool, None, a, b)?,
                }
            }
            _ => return Err(Failed::Builder(format!("'{}' is not an integer binary op", scalar.name()))),
        })
    }

    /// `b`, or 1 where `a / b` is undefined in SPIR-V (`b == 0`, or `a == MIN && b == -1`).
    fn safe_signed_divisor(&mut self, a: Word, b: Word, bits: u32) -> Result<Word, Failed> {
        let on_device = self.constant_operand.map(|d| sign_extend(d, bits));
        if on_device.is_some_and(|d| d != 0 && d != -1) {
            return Ok(b);
        }
        let ty = self.e.int(bits);
        let bool = self.e.bool();
        let zero = self.e.int_constant(bits, 0);
        let one = self.e.int_constant(bits, 1);
        let minus_one = self.e.int_constant(bits, -1);
        let min = self.e.int_constant(bits, i64::MIN >> (64 - bits));
        let is_zero = self.e.b.i_equal(bool, None, b, zero)?;
        let is_minus_one = self.e.b.i_equal(bool, None, b, minus_one)?;
        let is_min = self.e.b.i_equal(bool, None, a, min)?;
        let overflows = self.e.b.logical_and(bool, None, is_min, is_minus_one)?;
        let undefined = self.e.b.logical_or(bool, None, is_zero, overflows)?;
        Ok(self.e.b.select(ty, None, undefined, one, b)?)
    }

    /// Integer ops on `i1` (SPIR-V `bool`): wrapping 1-bit arithmetic, where signed `true` is -1.
    fn bool_binary(&mut self, scalar: ScalarOp, a: Word, b: Word) -> Result<Word, Failed> {
        use ScalarOp::*;
        let bool = self.e.bool();
        let not_a = self.e.b.logical_not(bool, None, a)?;
        let not_b = self.e.b.logical_not(bool, None, b)?;
        let b_ = &mut self.e.b;
        Ok(match scalar {
            AddI | SubI | XorI => b_.logical_not_equal(bool, None, a, b)?,
            MulI | AndI | MaxSI | MinUI => b_.logical_and(bool, None, a, b)?,
            OrI | MinSI | MaxUI => b_.logical_or(bool, None, a, b)?,
            // The divisor is 1 (signed: -1, and `-x` wraps to `x`), or 0, which is an error on
            // the CPU backend and gives the dividend here.
            DivSI | DivUI | CeilDivSI | FloorDivSI => a,
            RemSI | RemUI => self.e.bool_constant(false),
            // A shift by 1 is a shift by the width: 0.
            ShLI | ShRSI | ShRUI => b_.logical_and(bool, None, a, not_b)?,
            CmpI(predicate) => match predicate {
                IntPredicate::Eq => b_.logical_equal(bool, None, a, b)?,
                IntPredicate::Ne => b_.logical_not_equal(bool, None, a, b)?,
                // Signed: true (-1) < false (0). Unsigned: false (0) < true (1).
                IntPredicate::Slt | IntPredicate::Ugt => b_.logical_and(bool, None, a, not_b)?,
                IntPredicate::Sle | IntPredicate::Uge => b_.logical_or(bool, None, a, not_b)?,
                IntPredicate::Sgt | IntPredicate::Ult => b_.logical_and(bool, None, not_a, b)?,
                IntPredicate::Sge | IntPredicate::Ule => b_.logical_or(bool, None, not_a, b)?,
            },
            _ => return Err(Failed::Builder(format!("'{}' is not an integer binary op", scalar.name()))),
        })
    }

    // ----- floats -------------------------------------------------------------------------------

    fn float_binary(&mut self, op: Op, scalar: ScalarOp, a: Word, b: Word, bits: u32) -> Result<Word, Failed> {
        use ScalarOp::*;
        let ty = self.e.float(bits);
        let exact = |this: &mut Self, id: Word| {
            this.e.b.decorate(id, Decoration::NoContraction, []);
            id
        };
        Ok(match scalar {
            AddF => {
                let id = self.e.b.f_add(ty, None, a, b)?;
                exact(self, id)
            }
            SubF => {
                let id = self.e.b.f_sub(ty, None, a, b)?;
                exact(self, id)
            }
            MulF => {
                let id = self.e.b.f_mul(ty, None, a, b)?;
                exact(self, id)
            }
            DivF => {
                let id = self.e.b.f_div(ty, None, a, b)?;
                exact(self, id)
            }
            RemF => self.e.b.f_rem(ty, None, a, b)?,
            MaximumF | MinimumF => self.float_extremum(a, b, bits, scalar == MaximumF, true)?,
            MaxNumF | MinNumF => self.float_extremum(a, b, bits, scalar == MaxNumF, false)?,
            PowF => {
                self.glsl_precision(op, scalar, bits)?;
                self.power(a, b, bits)?
            }
            CmpF(predicate) => self.float_compare(predicate, a, b)?,
            _ => return Err(Failed::Builder(format!("'{}' is not a float binary op", scalar.name()))),
        })
    }

    /// IEEE 754-2019 `maximum`/`minimum` (`propagate_nan`) or `maximumNumber`/`minimumNumber`:
    /// `-0 < +0` either way.
    pub(crate) fn float_extremum(
        &mut self,
        a: Word,
        b: Word,
        bits: u32,
        max: bool,
        propagate_nan: bool,
    ) -> Result<Word, Failed> {
        if bits == 16 {
            // Compared in f32, which holds every f16 exactly: the result is one of the operands,
            // and 16-bit integers (for the sign of a zero) may be missing.
            let (half, single) = (self.e.float(16), self.e.float(32));
            let (a, b) = (self.e.b.f_convert(single, None, a)?, self.e.b.f_convert(single, None, b)?);
            let result = self.float_extremum(a, b, 32, max, propagate_nan)?;
            return Ok(self.e.b.f_convert(half, None, result)?);
        }
        let ty = self.e.float(bits);
        let int = self.e.int(bits);
        let bool = self.e.bool();
        let (a_wins, b_wins) = if max {
            (self.e.b.f_ord_greater_than(bool, None, a, b)?, self.e.b.f_ord_greater_than(bool, None, b, a)?)
        } else {
            (self.e.b.f_ord_less_than(bool, None, a, b)?, self.e.b.f_ord_less_than(bool, None, b, a)?)
        };
        // Equal values differ only in the sign of a zero: the maximum has the sign bits and-ed,
        // the minimum or-ed.
        let a_bits = self.e.b.bitcast(int, None, a)?;
        let b_bits = self.e.b.bitcast(int, None, b)?;
        let tie_bits = if max {
            self.e.b.bitwise_and(int, None, a_bits, b_bits)?
        } else {
            self.e.b.bitwise_or(int, None, a_bits, b_bits)?
        };
        let tie = self.e.b.bitcast(ty, None, tie_bits)?;
        let otherwise = self.e.b.select(ty, None, b_wins, b, tie)?;
        let ordered = self.e.b.select(ty, None, a_wins, a, otherwise)?;
        let a_nan = self.e.b.is_nan(bool, None, a)?;
        let b_nan = self.e.b.is_nan(bool, None, b)?;
        if propagate_nan {
            let on_b = self.e.b.select(ty, None, b_nan, b, ordered)?;
            Ok(self.e.b.select(ty, None, a_nan, a, on_b)?)
        } else {
            let on_b = self.e.b.select(ty, None, b_nan, a, ordered)?;
            Ok(self.e.b.select(ty, None, a_nan, b, on_b)?)
        }
    }

    /// `powf` with C's rules where `GLSL.std.450`'s `Pow` is undefined: a negative base with
    /// an integral exponent (the sign follows the exponent's parity), a zero base, and `y = 0`.
    fn power(&mut self, x: Word, y: Word, bits: u32) -> Result<Word, Failed> {
        let ty = self.e.float(bits);
        let bool = self.e.bool();
        let zero = self.e.float_constant(bits, 0.0);
        let one = self.e.float_constant(bits, 1.0);
        let half = self.e.float_constant(bits, 0.5);
        let infinity = self.e.float_constant(bits, f64::INFINITY);
        let nan = self.e.float_constant(bits, f64::NAN);
        let magnitude = self.e.glsl(ty, GLOp::FAbs, &[x])?;
        let power = self.e.glsl(ty, GLOp::Pow, &[magnitude, y])?;
        // Parity of an integral y: y / 2 is integral exactly when y is even.
        let y_floor = self.e.glsl(ty, GLOp::Floor, &[y])?;
        let integral = self.e.b.f_ord_equal(bool, None, y_floor, y)?;
        let y_half = self.e.b.f_mul(ty, None, y, half)?;
        let y_half_floor = self.e.glsl(ty, GLOp::Floor, &[y_half])?;
        let even = self.e.b.f_ord_equal(bool, None, y_half_floor, y_half)?;
        let negative = self.e.b.f_ord_less_than(bool, None, x, zero)?;
        let negated = self.e.b.f_negate(ty, None, power)?;
        let signed = self.e.b.select(ty, None, even, power, negated)?;
        let from_negative = self.e.b.select(ty, None, integral, signed, nan)?;
        let general = self.e.b.select(ty, None, negative, from_negative, power)?;
        // A zero base: +inf for y < 0, 0 for y > 0 (1 for y = 0, below); -0 keeps its sign for
        // odd integral y.
        let y_negative = self.e.b.f_ord_less_than(bool, None, y, zero)?;
        let from_zero = self.e.b.select(ty, None, y_negative, infinity, zero)?;
        let odd = self.e.b.logical_not(bool, None, even)?;
        let odd_integral = self.e.b.logical_and(bool, None, integral, odd)?;
        let signed_zero = self.e.b.f_mul(ty, None, from_zero, x)?;
        let signed_zero = self.e.b.select(ty, None, y_negative, from_zero, signed_zero)?;
        let x_zero_result = self.e.b.select(ty, None, odd_integral, signed_zero, from_zero)?;
        let x_is_zero = self.e.b.f_ord_equal(bool, None, x, zero)?;
        let with_zero = self.e.b.select(ty, None, x_is_zero, x_zero_result, general)?;
        let y_is_zero = self.e.b.f_ord_equal(bool, None, y, zero)?;
        Ok(self.e.b.select(ty, None, y_is_zero, one, with_zero)?)
    }

    fn float_compare(&mut self, predicate: FloatPredicate, a: Word, b: Word) -> Result<Word, Failed> {
        use FloatPredicate::*;
        let bool = self.e.bool();
        let b_ = &mut self.e.b;
        Ok(match predicate {
            False => self.e.bool_constant(false),
            True => self.e.bool_constant(true),
            Oeq => b_.f_ord_equal(bool, None, a, b)?,
            Ogt => b_.f_ord_greater_than(bool, None, a, b)?,
            Oge => b_.f_ord_greater_than_equal(bool, None, a, b)?,
            Olt => b_.f_ord_less_than(bool, None, a, b)?,
            Ole => b_.f_ord_less_than_equal(bool, None, a, b)?,
            One => b_.f_ord_not_equal(bool, None, a, b)?,
            Ueq => b_.f_unord_equal(bool, None, a, b)?,
            Ugt => b_.f_unord_greater_than(bool, None, a, b)?,
            Uge => b_.f_unord_greater_than_equal(bool, None, a, b)?,
            Ult => b_.f_unord_less_than(bool, None, a, b)?,
            Ule => b_.f_unord_less_than_equal(bool, None, a, b)?,
            Une => b_.f_unord_not_equal(bool, None, a, b)?,
            // `OpOrdered` and `OpUnordered` need the Kernel capability: test NaN instead.
            Ord | Uno => {
                let a_nan = b_.is_nan(bool, None, a)?;
                let b_nan = b_.is_nan(bool, None, b)?;
                let either = b_.logical_or(bool, None, a_nan, b_nan)?;
                if predicate == Uno {
                    either
                } else {
                    b_.logical_not(bool, None, either)?
                }
            }
        })
    }

    /// `exp`, `log`, `sin`, `cos`, `tanh` and `pow` of `GLSL.std.450` take 16- and 32-bit
    /// floats only.
    fn glsl_precision(&mut self, op: Op, scalar: ScalarOp, bits: u32) -> Result<(), Failed> {
        if bits == 64 {
            let message = format!(
                "'{}' on f64 has no SPIR-V lowering: GLSL.std.450 computes it in 16 or 32 bits only",
                scalar.name()
            );
            return Err(self.error(op, message));
        }
        Ok(())
    }

    // ----- unary ops and casts ----------------------------------------------------------------

    fn unary(&mut self, op: Op, scalar: ScalarOp, a: Word, from: Kind, to: Kind) -> Result<Word, Failed> {
        use ScalarOp::*;
        let ty = self.kind_type(to);
        let glsl = |this: &mut Self, instruction: GLOp| this.e.glsl(ty, instruction, &[a]);
        match (scalar, from) {
            (NegF, _) => Ok(self.e.b.f_negate(ty, None, a)?),
            (AbsF, _) => glsl(self, GLOp::FAbs),
            (Sqrt, _) => glsl(self, GLOp::Sqrt),
            (Floor, _) => glsl(self, GLOp::Floor),
            (Ceil, _) => glsl(self, GLOp::Ceil),
            (Exp | Log | Sin | Cos | Tanh, Kind::Float(bits)) => {
                self.glsl_precision(op, scalar, bits)?;
                let instruction = match scalar {
                    Exp => GLOp::Exp,
                    Log => GLOp::Log,
                    Sin => GLOp::Sin,
                    Cos => GLOp::Cos,
                    _ => GLOp::Tanh,
                };
                glsl(self, instruction)
            }
            // |true| is |-1| = 1, which wraps back to true.
            (AbsI, Kind::Bool) => Ok(a),
            (AbsI, _) => glsl(self, GLOp::SAbs),
            _ => self.cast(scalar, a, from, to),
        }
    }

    fn cast(&mut self, scalar: ScalarOp, a: Word, from: Kind, to: Kind) -> Result<Word, Failed> {
        use ScalarOp::*;
        let ty = self.kind_type(to);
        let bool = self.e.bool();
        match (scalar, from, to) {
            (_, _, _) if from == to && matches!(scalar, IndexCast | IndexCastUI | Bitcast) => Ok(a),
            (IndexCast | ExtSI | IndexCastUI | ExtUI | TruncI, Kind::Bool, Kind::Int(bits)) => {
                let signed = matches!(scalar, IndexCast | ExtSI);
                let one = self.e.int_constant(bits, if signed { -1 } else { 1 });
                let zero = self.e.int_constant(bits, 0);
                Ok(self.e.b.select(ty, None, a, one, zero)?)
            }
            (IndexCast | IndexCastUI | TruncI, Kind::Int(bits), Kind::Bool) => {
                let one = self.e.int_constant(bits, 1);
                let zero = self.e.int_constant(bits, 0);
                let int = self.e.int(bits);
                let low = self.e.b.bitwise_and(int, None, a, one)?;
                Ok(self.e.b.i_not_equal(bool, None, low, zero)?)
            }
            (IndexCast | ExtSI, Kind::Int(_), Kind::Int(_)) => Ok(self.e.b.s_convert(ty, None, a)?),
            (IndexCastUI | ExtUI | TruncI, Kind::Int(_), Kind::Int(_)) => Ok(self.e.b.u_convert(ty, None, a)?),
            (SIToFP | UIToFP, Kind::Bool, Kind::Float(bits)) => {
                let one = self.e.float_constant(bits, if scalar == SIToFP { -1.0 } else { 1.0 });
                let zero = self.e.float_constant(bits, 0.0);
                Ok(self.e.b.select(ty, None, a, one, zero)?)
            }
            (SIToFP, Kind::Int(_), _) => Ok(self.e.b.convert_s_to_f(ty, None, a)?),
            (UIToFP, Kind::Int(_), _) => Ok(self.e.b.convert_u_to_f(ty, None, a)?),
            (FPToSI | FPToUI, Kind::Float(bits), Kind::Bool) => {
                // Saturated to i1's range: -1 (signed) or 1 (unsigned) once the truncated value
                // reaches it; NaN is 0.
                let bound = self.e.float_constant(bits, if scalar == FPToSI { -1.0 } else { 1.0 });
                if scalar == FPToSI {
                    Ok(self.e.b.f_ord_less_than_equal(bool, None, a, bound)?)
                } else {
                    Ok(self.e.b.f_ord_greater_than_equal(bool, None, a, bound)?)
                }
            }
            (FPToSI | FPToUI, Kind::Float(float_bits), Kind::Int(bits)) => {
                self.saturating_float_to_int(a, float_bits, bits, scalar == FPToSI)
            }
            (ExtF | TruncF, Kind::Float(_), Kind::Float(_)) => Ok(self.e.b.f_convert(ty, None, a)?),
            (Bitcast, _, _) => Ok(self.e.b.bitcast(ty, None, a)?),
            _ => Err(Failed::Builder(format!("'{}' from {from:?} to {to:?} is not a cast", scalar.name()))),
        }
    }

    /// A float converted toward zero and saturated to the integer's range, NaN giving 0. The
    /// operand is clamped into range before the conversion, whose result SPIR-V leaves
    /// undefined outside it.
    fn saturating_float_to_int(&mut self, a: Word, float_bits: u32, bits: u32, signed: bool) -> Result<Word, Failed> {
        let float = self.e.float(float_bits);
        let int = self.e.int(bits);
        let bool = self.e.bool();
        // The range's ends as powers of two, exact in every float type wide enough to hold
        // them; `below_upper` is the largest float under the upper end.
        let (lower, upper) = if signed {
            (-(2f64.powi(bits as i32 - 1)), 2f64.powi(bits as i32 - 1))
        } else {
            (0.0, 2f64.powi(bits as i32))
        };
        let below_upper = match float_bits {
            64 => f64::from_bits(upper.to_bits() - 1),
            32 => f32::from_bits((upper as f32).to_bits() - 1) as f64,
            _ => 65504.0,
        };
        let maximum = if signed { (1i64 << (bits - 1)).wrapping_sub(1) } else { -1 };
        let zero = self.e.float_constant(float_bits, 0.0);
        let lower = self.e.float_constant(float_bits, lower);
        let upper = self.e.float_constant(float_bits, upper);
        let below_upper = self.e.float_constant(float_bits, below_upper);
        let maximum = self.e.int_constant(bits, maximum);
        let nan = self.e.b.is_nan(bool, None, a)?;
        let number = self.e.b.select(float, None, nan, zero, a)?;
        let raised = self.e.glsl(float, GLOp::FMax, &[number, lower])?;
        let clamped = self.e.glsl(float, GLOp::FMin, &[raised, below_upper])?;
        let converted = if signed {
            self.e.b.convert_f_to_s(int, None, clamped)?
        } else {
            self.e.b.convert_f_to_u(int, None, clamped)?
        };
        let above = self.e.b.f_ord_greater_than_equal(bool, None, number, upper)?;
        Ok(self.e.b.select(int, None, above, maximum, converted)?)
    }
}
