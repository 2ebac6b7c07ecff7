//! The meaning of every scalar op of `arith` and `math`, written once. The folders
//! ([`crate::arith_fold`]), the host executor and the CPU backend (`hat_runtime`) all compute
//! through [`ScalarOp::evaluate`]; a lowering or a rewrite rule that needs to know what an op
//! computes asks here too. `docs/dialects/arith.md` states the same rules for users.
//!
//! - [`predicate`]: [`IntPredicate`] and [`FloatPredicate`], in MLIR's numbering, with their
//!   names, swap and negation.
//! - [`scalar`]: [`Scalar`] values and the [`ScalarType`]s they are computed in.
//! - [`ops`]: [`ScalarOp`], decoded from an op's name and predicate.
//! - `evaluate`: [`ScalarOp::evaluate`], which gives an [`Evaluation`] (the value, and whether
//!   MLIR leaves it undefined) or a [`ScalarError`].
//!
//! # The rules
//!
//! Every op computes in the type of its operands (casts: from the source type to the result
//! type). Integers are signless bit patterns of 1 to 64 bits (`index` is 64 bits).
//!
//! - **Integers wrap** in the width (`addi`, `subi`, `muli`, `absi`, `trunci`, ...). Signed ops
//!   read their operands sign-extended from the width, unsigned ops zero-extended, so `i1`'s `1`
//!   is `-1` to `divsi`, `cmpi slt`, `extsi`, `sitofp`, `maxsi`.
//! - **Division and remainder by zero** (`divsi`, `divui`, `ceildivsi`, `floordivsi`, `remsi`,
//!   `remui`) is an error ([`ScalarError::DivisionByZero`]): the executor and the CPU backend
//!   report it, and nothing folds it.
//! - **Signed division overflow**, `MIN / -1` (`divsi`, `ceildivsi`, `floordivsi`), is undefined
//!   in MLIR; hat wraps it to `MIN`. `remsi(MIN, -1)` is 0, defined. `ceildivsi` rounds toward
//!   +infinity, `floordivsi` toward -infinity, `divsi` toward zero; `remsi` has the dividend's
//!   sign.
//! - **Shifts** read the amount unsigned; an amount of the width or more is undefined in MLIR,
//!   and hat gives 0 for `shli`, `shrui` and `shrsi` alike.
//! - **Min, max, abs**: `maxsi`/`minsi` signed, `maxui`/`minui` unsigned; `absi(MIN)` is `MIN`.
//! - **Comparisons** give `i1` (0 or 1). `cmpi`'s signed predicates read signed, unsigned ones
//!   unsigned, `eq`/`ne` compare the bits. `cmpf`'s ordered predicates are false when either side
//!   is NaN, unordered ones true; `-0 == +0`.
//! - **Floats** compute in their own precision: `f32` ops in `f32`, rounded once to nearest
//!   even, as a GPU does; `f64` in `f64`. `remf` is C's `fmod`. `maximumf`/`minimumf` are
//!   IEEE 754-2019's `maximum`/`minimum` (a NaN operand gives NaN, `-0 < +0`); `maxnumf`/
//!   `minnumf` are `maximumNumber`/`minimumNumber` (a NaN operand is ignored, `-0 < +0`). The
//!   `math` functions (`sqrt`, `exp`, `log`, `sin`, `cos`, `tanh`, `powf`, ...) are the host
//!   libm's, in the operand's precision: not correctly rounded, so nothing folds them.
//! - **NaN results** do not depend on the host (IEEE 754 and LLVM's APFloat): when a result is
//!   NaN, it is the first NaN operand, quieted (sign and payload kept), or, when no operand is
//!   NaN (`inf - inf`, `0 / 0`, `sqrt(-1)`), the canonical quiet NaN (`0x7FC00000` for `f32`,
//!   positive). `negf` and `absf` only change the sign bit, of a NaN too.
//! - **Casts**: `extsi`/`index_cast` sign-extend, `extui`/`index_castui` zero-extend, `trunci`
//!   (and the narrowing direction of the index casts) keeps the low bits. `sitofp`/`uitofp` round
//!   once, to nearest even. `fptosi`/`fptoui` round toward zero; NaN and values out of the
//!   result's range are undefined in MLIR, and hat saturates to the range, NaN giving 0 (what
//!   most GPUs do). `extf` is exact, `truncf` rounds to nearest even (overflow gives infinity).
//!   `bitcast` keeps the bits (same width only).
//! - **`select`** returns the chosen operand unchanged, so it also chooses between buffers.
//!
//! "Undefined in MLIR" results are flagged ([`Evaluation::undefined`]): the executor and the CPU
//! backend give hat's value, folders do not fold them, and programs must not rely on them.

pub mod error;
mod evaluate;
pub mod ops;
pub mod predicate;
pub mod scalar;

pub use error::ScalarError;
pub use evaluate::Evaluation;
pub use ops::{OperandClass, ScalarOp};
pub use predicate::{FloatPredicate, IntPredicate};
pub use scalar::{from_bits, narrow, normalize, sign_extend, to_bits, widen, Scalar, ScalarType};

#[cfg(test)]
mod tests;
