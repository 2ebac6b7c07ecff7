//! Divisions and remainders that an [`Environment`] makes linear.
//!
//! A division `e div d` by a positive constant `d` splits its dividend as `e = d × q + r`: `q`
//! gathers the terms whose coefficients (and the part of the constant) `d` divides, `r` the
//! rest. Where the environment bounds `r` to one period `[k × d, (k + 1) × d)`, the quotient is
//! `q + k` and the remainder `r - k × d`, exactly, for every assignment within the environment:
//! - rounded down (`Floor`) always; rounded toward zero or read unsigned only where `e` is known
//!   not to be negative (then all three agree).
//!
//! Two uses, one rule:
//! - narrow integers: a value of `bits` bits wraps, `wrap(e) = ((e + 2^(bits-1)) mod 2^bits) -
//!   2^(bits-1)` (`narrow.rs`); where `e` stays within the type's range the remainder is `e + 2^
//!   (bits-1)` and the wrap disappears;
//! - workgroups: with the global id written `size × group + local` (`local` in `[0, size)`),
//!   `id div size` is `group` and `id mod size` is `local` (`coverage.rs`).
//!
//! The result equals the form wherever the environment holds, nowhere else: it is used only
//! under that environment, or one it contains.

use super::affine::{Affine, Atom, Rounding};
use super::interval::Environment;

/// `form` with every division and remainder the environment makes linear rewritten (see the
/// module documentation); `None` on overflow.
pub(super) fn reduce(form: &Affine, env: &Environment) -> Option<Affine> {
    if !form.terms().any(|(atom, _)| atom.is_nonlinear()) {
        return Some(form.clone());
    }
    form.substitute(&|atom| reduce_atom(atom, env))
}

/// The rewrite of one atom (its operands reduced first); `None` keeps it.
fn reduce_atom(atom: &Atom, env: &Environment) -> Option<Affine> {
    let (Atom::Div(e, d, rounding) | Atom::Rem(e, d, rounding)) = atom else { return None };
    let divide = matches!(atom, Atom::Div(..));
    let (e, d) = (reduce(e, env)?, reduce(d, env)?);
    if let Some(divisor) = d.as_constant().filter(|&d| d > 0) {
        if let Some((quotient, remainder)) = split(&e, divisor, *rounding, env) {
            return Some(if divide { quotient } else { remainder });
        }
    }
    if divide {
        e.div(&d, *rounding)
    } else {
        e.rem(&d, *rounding)
    }
}

/// The quotient and remainder of `e` by `d`, when the environment keeps `r` in one period.
fn split(e: &Affine, d: i64, rounding: Rounding, env: &Environment) -> Option<(Affine, Affine)> {
    if rounding != Rounding::Floor && env.bound(e).low < 0 {
        return None;
    }
    let constant = e.constant_part();
    let mut q = Affine::constant(constant.div_euclid(d));
    let mut r = Affine::constant(constant.rem_euclid(d));
    for (atom, coefficient) in e.terms() {
        let term = Affine::atom(atom.clone());
        if coefficient % d == 0 {
            q = q.add(&term.scale(coefficient / d)?)?;
        } else {
            r = r.add(&term.scale(coefficient)?)?;
        }
    }
    let bound = env.bound(&r);
    if bound.is_empty() || !bound.is_bounded() {
        return None;
    }
    let period = bound.low.div_euclid(d as i128);
    if bound.high.div_euclid(d as i128) != period {
        return None;
    }
    let k = i64::try_from(period).ok()?;
    Some((q.add(&Affine::constant(k))?, r.sub(&Affine::constant(k.checked_mul(d)?))?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfers::kernel_effects::interval::Interval;

    fn atom(a: Atom) -> Affine {
        Affine::atom(a)
    }

    #[test]
    fn a_split_id_divides_into_group_and_local() {
        let mut env = Environment::default();
        env.set(Atom::Group(0), Interval::new(0, 3));
        env.set(Atom::Local(0), Interval::new(0, 63));
        let id = atom(Atom::Group(0)).scale(64).unwrap().add(&atom(Atom::Local(0))).unwrap();
        let size = Affine::constant(64);
        for rounding in [Rounding::Unsigned, Rounding::Truncate, Rounding::Floor] {
            assert_eq!(reduce(&id.div(&size, rounding).unwrap(), &env), Some(atom(Atom::Group(0))));
            assert_eq!(reduce(&id.rem(&size, rounding).unwrap(), &env), Some(atom(Atom::Local(0))));
        }
        // `(id + 1) / 64` crosses into the next group for local = 63: not linear.
        let next = id.add(&Affine::constant(1)).unwrap().div(&size, Rounding::Unsigned).unwrap();
        assert_eq!(reduce(&next, &env), Some(next.clone()));
        // A divisor the split does not match: `id / 32` is not linear either.
        let half = id.div(&Affine::constant(32), Rounding::Unsigned).unwrap();
        assert_eq!(reduce(&half, &env), Some(half.clone()));
    }

    #[test]
    fn remainders_of_what_may_be_negative() {
        let mut env = Environment::default();
        env.set(Atom::Id(0), Interval::new(-3, 2));
        let x = atom(Atom::Id(0));
        let eight = Affine::constant(8);
        // Rounded down, -3..2 is not one period of 8 ([-8, 0) and [0, 8)).
        let floor = x.rem(&eight, Rounding::Floor).unwrap();
        assert_eq!(reduce(&floor, &env), Some(floor.clone()));
        env.set(Atom::Id(0), Interval::new(-3, -1));
        assert_eq!(reduce(&floor, &env), Some(x.add(&eight).unwrap()), "-3..-1 mod 8 is x + 8");
        // Toward zero or unsigned: only what is not negative.
        let truncate = x.rem(&eight, Rounding::Truncate).unwrap();
        assert_eq!(reduce(&truncate, &env), Some(truncate.clone()));
    }
}
