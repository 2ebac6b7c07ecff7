//! A counted loop at run time, the same in both engines: the induction variable goes from the
//! lower bound by the step while below the upper bound, compared signed; a step that is not
//! positive is an error when the loop would run; and the loop ends where the next value would
//! not fit the induction variable's type (it stops rather than wraps around).

use crate::value::{sign_extend, ElementType};

/// The error of a loop that would run with `step` (not positive), `name` the op's name.
pub(crate) fn step_error(name: &str, lower: i64, upper: i64, step: i64) -> Option<String> {
    (lower < upper && step <= 0).then(|| format!("'{name}' step must be positive, got {step}"))
}

/// The induction variable's value after `value`, or `None` when the loop ends: at `upper`, or
/// where it would leave its type `ty`.
#[inline]
pub(crate) fn next(value: i64, step: i64, upper: i64, ty: ElementType) -> Option<i64> {
    // An integer of `ty` is its low `ty.bits()` bits, sign-extended (an index is 64 bits).
    value.checked_add(step).filter(|&next| next < upper && sign_extend(next, ty.bits()) == next)
}
