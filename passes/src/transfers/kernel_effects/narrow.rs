//! Integers narrower than 64 bits: their arithmetic wraps, and the expressions say so.
//!
//! The expression of a value of `bits` bits (2 to 62) is its value read as signed (sign-extended,
//! as `arith.extsi` and `arith.index_cast` read it). An operation that may leave the range
//! `[-2^(bits-1), 2^(bits-1))` (`addi`, `subi`, `muli`, `shli`, a truncation, an unsigned
//! result) is wrapped explicitly:
//!
//! `wrap(e) = ((e + 2^(bits-1)) mod 2^bits) - 2^(bits-1)`, the remainder rounded down,
//!
//! which is exact for every `e`. Where the dispatch bounds `e` to the range (work-item ids below
//! the grid, loop variables within their bounds), `reduce.rs` rewrites the remainder away and
//! the expression is `e` again; elsewhere the remainder stays, so an index that may wrap is not
//! mistaken for one that does not. Wrapping commutes with addition and multiplication (both are
//! ring operations modulo `2^bits`), so an operand's own wrap is dropped before the next one is
//! applied ([`unwrapped`]), which keeps chains of narrow arithmetic small.
//!
//! Unsigned operations read their operands zero-extended: `e mod 2^bits` ([`zero_extend`]).
//! Unsigned comparisons and `minui`/`maxui` need nothing: sign extension keeps the unsigned
//! order of two values of one width. `i1` is not followed (its `1` is `-1` read signed).

use super::affine::{Affine, Atom, Rounding};

/// The widths whose arithmetic is followed, besides 64 (where the analysis' integers are taken
/// as exact: docs/passes/print-kernel-effects.md).
pub(super) fn is_followed(bits: u32) -> bool {
    (2..=62).contains(&bits)
}

/// `e` wrapped to `bits` bits (read as signed); `None` on overflow.
pub(super) fn wrap(e: &Affine, bits: u32) -> Option<Affine> {
    let half = 1i64 << (bits - 1);
    if let Some(c) = e.as_constant() {
        return Some(Affine::constant((c.wrapping_add(half)).rem_euclid(2 * half) - half));
    }
    let e = unwrapped(e, bits);
    e.add(&Affine::constant(half))?.rem(&Affine::constant(2 * half), Rounding::Floor)?.sub(&Affine::constant(half))
}

/// A form equal to `e` modulo `2^bits` without its terms' wraps to `bits` bits or more (each
/// remainder, rounded down, by a multiple of `2^bits` is replaced by its dividend), else `e`:
/// what [`wrap`] and [`zero_extend`] give is the same for both.
pub(super) fn unwrapped(e: &Affine, bits: u32) -> Affine {
    let modulus = 1i64 << bits;
    let is_wrap = |atom: &Atom| match atom {
        Atom::Rem(_, m, Rounding::Floor) => m.as_constant().is_some_and(|m| m > 0 && m % modulus == 0),
        _ => false,
    };
    if !e.terms().any(|(atom, _)| is_wrap(atom)) {
        return e.clone();
    }
    let replace = |atom: &Atom| match atom {
        Atom::Rem(inner, _, _) if is_wrap(atom) => Some((**inner).clone()),
        _ => None,
    };
    // Only the top level: a wrap inside a division or a product is not a ring operation's.
    let mut result = Affine::constant(e.constant_part());
    for (atom, coefficient) in e.terms() {
        let term = replace(atom).unwrap_or_else(|| Affine::atom(atom.clone()));
        match term.scale(coefficient).and_then(|t| result.add(&t)) {
            Some(sum) => result = sum,
            None => return e.clone(),
        }
    }
    result
}

/// The value of `e` (a `bits`-bit value read as signed) read unsigned: `e mod 2^bits`.
pub(super) fn zero_extend(e: &Affine, bits: u32) -> Option<Affine> {
    let modulus = Affine::constant(1i64 << bits);
    unwrapped(e, bits).rem(&modulus, Rounding::Floor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfers::kernel_effects::interval::{Environment, Interval};
    use crate::transfers::kernel_effects::reduce::reduce;

    #[test]
    fn wraps_fold_and_disappear_within_the_range() {
        assert_eq!(wrap(&Affine::constant(200), 8), Some(Affine::constant(-56)));
        assert_eq!(wrap(&Affine::constant(-129), 8), Some(Affine::constant(127)));
        assert_eq!(zero_extend(&Affine::constant(-1), 8), Some(Affine::constant(255)));
        let id = Affine::atom(Atom::Id(0));
        let plus_one = wrap(&wrap(&id, 32).unwrap().add(&Affine::constant(1)).unwrap(), 32).unwrap();
        assert_eq!(plus_one, wrap(&id.add(&Affine::constant(1)).unwrap(), 32).unwrap(), "inner wraps are dropped");
        let mut env = Environment::default();
        env.set(Atom::Id(0), Interval::new(0, 255));
        assert_eq!(reduce(&plus_one, &env), id.add(&Affine::constant(1)));
        // In 8 bits, ids up to 255 plus one leave the range: the wrap stays, and its bound is
        // the type's range.
        let narrow = wrap(&id.add(&Affine::constant(1)).unwrap(), 8).unwrap();
        let kept = reduce(&narrow, &env).unwrap();
        assert_eq!(kept, narrow);
        assert_eq!(env.bound(&kept), Interval::new(-128, 127));
        // Zero-extended, an id below 2^8 is itself.
        assert_eq!(reduce(&zero_extend(&wrap(&id, 8).unwrap(), 8).unwrap(), &env), Some(id));
    }
}
