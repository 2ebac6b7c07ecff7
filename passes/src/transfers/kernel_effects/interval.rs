//! Ranges of index expressions: closed integer intervals, and an environment that bounds each
//! [`Atom`] so that any [`Affine`] can be bounded.
//!
//! Every bound is sound: the value of an expression, for any assignment of its atoms within
//! their intervals, lies in the interval [`Environment::bound`] gives. Bounds are `i128` so that
//! sums of `i64` products never overflow; [`INFINITY`] stands for "no bound" and absorbs what
//! goes past it.

use super::affine::{Affine, Atom, Order, Rounding};
use std::collections::BTreeMap;

/// No bound: larger than any `i64` by far, small enough that sums of a few never overflow.
pub(super) const INFINITY: i128 = 1 << 100;

/// The integers from `low` to `high`, both included; empty when `low > high`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Interval {
    /// The least value.
    pub(super) low: i128,
    /// The greatest value.
    pub(super) high: i128,
}

impl Interval {
    /// Every integer.
    pub(super) const FULL: Interval = Interval { low: -INFINITY, high: INFINITY };

    /// No integer.
    pub(super) const EMPTY: Interval = Interval { low: 1, high: 0 };

    /// `low..=high`, saturated at [`INFINITY`].
    pub(super) fn new(low: i128, high: i128) -> Interval {
        Interval { low: low.clamp(-INFINITY, INFINITY), high: high.clamp(-INFINITY, INFINITY) }
    }

    /// One value.
    pub(super) fn point(value: i64) -> Interval {
        Interval { low: value as i128, high: value as i128 }
    }

    /// `0..=INFINITY`.
    pub(super) fn non_negative() -> Interval {
        Interval { low: 0, high: INFINITY }
    }

    /// Whether no integer is in it.
    pub(super) fn is_empty(self) -> bool {
        self.low > self.high
    }

    /// The value, when it holds exactly one.
    pub(super) fn as_point(self) -> Option<i128> {
        (self.low == self.high).then_some(self.low)
    }

    /// Whether both ends are finite.
    pub(super) fn is_bounded(self) -> bool {
        self.low > -INFINITY && self.high < INFINITY
    }

    /// The integers in both.
    pub(super) fn meet(self, other: Interval) -> Interval {
        Interval { low: self.low.max(other.low), high: self.high.min(other.high) }
    }

    /// The least interval holding both.
    pub(super) fn hull(self, other: Interval) -> Interval {
        if self.is_empty() {
            return other;
        }
        if other.is_empty() {
            return self;
        }
        Interval { low: self.low.min(other.low), high: self.high.max(other.high) }
    }

    /// `{a + b}`.
    pub(super) fn add(self, other: Interval) -> Interval {
        if self.is_empty() || other.is_empty() {
            return Interval::EMPTY;
        }
        Interval::new(self.low + other.low, self.high + other.high)
    }

    /// `{factor × a}`.
    pub(super) fn scale(self, factor: i64) -> Interval {
        if self.is_empty() {
            return self;
        }
        let (a, b) = (saturating_mul(self.low, factor as i128), saturating_mul(self.high, factor as i128));
        Interval::new(a.min(b), a.max(b))
    }

    /// `{a × b}`.
    fn mul(self, other: Interval) -> Interval {
        if self.is_empty() || other.is_empty() {
            return Interval::EMPTY;
        }
        let corners = [self.low, self.high].map(|a| [other.low, other.high].map(|b| saturating_mul(a, b)));
        let flat = corners.iter().flatten();
        Interval::new(*flat.clone().min().unwrap(), *flat.max().unwrap())
    }
}

fn saturating_mul(a: i128, b: i128) -> i128 {
    a.checked_mul(b).unwrap_or(if (a < 0) == (b < 0) { INFINITY } else { -INFINITY }).clamp(-INFINITY, INFINITY)
}

/// Bounds on atoms: those given (work-item ids, loop variables, what guards imply), and the
/// non-linear ones computed from their operands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Environment {
    bounds: BTreeMap<Atom, Interval>,
}

impl Environment {
    /// Sets `atom`'s bound to `interval` (replacing what was given).
    pub(super) fn set(&mut self, atom: Atom, interval: Interval) {
        self.bounds.insert(atom, interval);
    }

    /// Narrows `atom`'s bound to `interval`; returns whether the bound changed.
    pub(super) fn restrict(&mut self, atom: &Atom, interval: Interval) -> bool {
        let current = self.bound_atom(atom);
        let narrowed = current.meet(interval);
        if narrowed == current {
            return false;
        }
        self.bounds.insert(atom.clone(), narrowed);
        true
    }

    /// The same bounds on the variables (ids, trip counts) only: what a guard implies of other
    /// atoms (data it compares, a quotient) is no longer assumed.
    pub(super) fn variables_only(&self) -> Environment {
        let bounds = self.bounds.iter().filter(|(a, _)| a.is_variable()).map(|(a, &b)| (a.clone(), b)).collect();
        Environment { bounds }
    }

    /// The variables (ids, trip counts, workgroup splits) given a bound.
    pub(super) fn variable_atoms(&self) -> Vec<Atom> {
        self.bounds.keys().filter(|a| a.is_variable()).cloned().collect()
    }

    /// Whether some bound is empty: no assignment satisfies them all.
    pub(super) fn is_infeasible(&self) -> bool {
        self.bounds.values().any(|b| b.is_empty())
    }

    /// The least atom-wise hull of two environments (what holds on either).
    pub(super) fn hull(&self, other: &Environment) -> Environment {
        if self.is_infeasible() {
            return other.clone();
        }
        if other.is_infeasible() {
            return self.clone();
        }
        let bounds = self
            .bounds
            .iter()
            .filter_map(|(atom, &a)| other.bounds.get(atom).map(|&b| (atom.clone(), a.hull(b))))
            .collect();
        Environment { bounds }
    }

    /// The values `form` may take.
    pub(super) fn bound(&self, form: &Affine) -> Interval {
        let mut total = Interval::point(form.constant_part());
        for (atom, coefficient) in form.terms() {
            total = total.add(self.bound_atom(atom).scale(coefficient));
        }
        total
    }

    /// The values `atom` may take.
    pub(super) fn bound_atom(&self, atom: &Atom) -> Interval {
        let computed = match atom {
            Atom::Div(a, b, rounding) => bound_div(self.bound(a), self.bound(b), *rounding),
            Atom::Rem(a, b, rounding) => bound_rem(self.bound(a), self.bound(b), *rounding),
            Atom::Min(a, b, order) => bound_min_max(self.bound(a), self.bound(b), *order, true),
            Atom::Max(a, b, order) => bound_min_max(self.bound(a), self.bound(b), *order, false),
            Atom::Mul(a, b) => self.bound(a).mul(self.bound(b)),
            Atom::Select(a, b) => self.bound(a).hull(self.bound(b)),
            _ => Interval::FULL,
        };
        match self.bounds.get(atom) {
            Some(&given) => computed.meet(given),
            None => computed,
        }
    }
}

/// `n / d` for `d > 0` in `i128`, rounded as said (unsigned only for `n >= 0`).
fn divide_wide(n: i128, d: i128, rounding: Rounding) -> i128 {
    match rounding {
        Rounding::Unsigned | Rounding::Truncate => n / d,
        Rounding::Floor => n.div_euclid(d),
    }
}

/// The remainder of `n / d` for `d > 0` in `i128`, rounded as said (unsigned only for `n >= 0`).
fn remainder_wide(n: i128, d: i128, rounding: Rounding) -> i128 {
    match rounding {
        Rounding::Unsigned | Rounding::Truncate => n % d,
        Rounding::Floor => n.rem_euclid(d),
    }
}

fn bound_div(e: Interval, d: Interval, rounding: Rounding) -> Interval {
    if e.is_empty() || d.is_empty() {
        return Interval::EMPTY;
    }
    if d.low < 1 {
        return Interval::FULL;
    }
    if rounding == Rounding::Unsigned && e.low < 0 {
        return Interval::non_negative();
    }
    // For a positive divisor the quotient is monotone in each operand: the extremes are corners.
    // An infinite end stays infinite (dividing "unbounded" by a finite divisor).
    let quotient = |n: i128, d: i128| -> i128 {
        if n.abs() >= INFINITY && d < INFINITY {
            n
        } else {
            divide_wide(n, d, rounding)
        }
    };
    let corners = [quotient(e.low, d.low), quotient(e.low, d.high), quotient(e.high, d.low), quotient(e.high, d.high)];
    Interval::new(*corners.iter().min().unwrap(), *corners.iter().max().unwrap())
}

fn bound_rem(e: Interval, d: Interval, rounding: Rounding) -> Interval {
    if e.is_empty() || d.is_empty() {
        return Interval::EMPTY;
    }
    if d.low < 1 {
        return Interval::FULL;
    }
    let largest = d.high.saturating_sub(1).min(INFINITY);
    if e.low >= 0 {
        if e.high < d.low {
            return e; // smaller than every divisor: unchanged
        }
        if let (Some(d), true) = (d.as_point(), e.is_bounded()) {
            if divide_wide(e.low, d, rounding) == divide_wide(e.high, d, rounding) {
                return Interval::new(remainder_wide(e.low, d, rounding), remainder_wide(e.high, d, rounding));
            }
        }
        return Interval::new(0, largest.min(e.high));
    }
    match rounding {
        Rounding::Unsigned | Rounding::Floor => Interval::new(0, largest),
        // The remainder has the dividend's sign.
        Rounding::Truncate => Interval::new(-largest, largest).meet(Interval::new(e.low.min(0), e.high.max(0))),
    }
}

fn bound_min_max(a: Interval, b: Interval, order: Order, smaller: bool) -> Interval {
    if a.is_empty() || b.is_empty() {
        return Interval::EMPTY;
    }
    if order == Order::Unsigned && (a.low < 0 || b.low < 0) {
        return a.hull(b); // it is one of them
    }
    if smaller {
        Interval::new(a.low.min(b.low), a.high.min(b.high))
    } else {
        Interval::new(a.low.max(b.low), a.high.max(b.high))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_of_expressions() {
        let mut env = Environment::default();
        env.set(Atom::Id(0), Interval::new(0, 63));
        let x = Affine::atom(Atom::Id(0));
        let eight = Affine::constant(8);
        assert_eq!(env.bound(&x.scale(2).unwrap().add(&Affine::constant(1)).unwrap()), Interval::new(1, 127));
        assert_eq!(env.bound(&x.div(&eight, Rounding::Unsigned).unwrap()), Interval::new(0, 7));
        assert_eq!(env.bound(&x.rem(&eight, Rounding::Unsigned).unwrap()), Interval::new(0, 7));
        let minus_one = x.sub(&Affine::constant(1)).unwrap();
        assert_eq!(env.bound(&minus_one), Interval::new(-1, 62));
        let clamped = minus_one.maximum(&Affine::constant(0), Order::Signed).unwrap();
        assert_eq!(env.bound(&clamped), Interval::new(0, 62));
        // Unsigned division of what may be negative: anything non-negative.
        assert_eq!(env.bound(&minus_one.div(&eight, Rounding::Unsigned).unwrap()), Interval::non_negative());
        assert_eq!(env.bound(&minus_one.rem(&eight, Rounding::Truncate).unwrap()), Interval::new(-1, 7));
        assert_eq!(env.bound(&Affine::atom(Atom::Id(1))), Interval::FULL, "unbounded unless given");
    }

    #[test]
    fn restricting_and_hulls() {
        let mut a = Environment::default();
        assert!(a.restrict(&Atom::Id(0), Interval::new(0, 9)));
        assert!(!a.restrict(&Atom::Id(0), Interval::new(-5, 20)), "no narrowing");
        let mut b = a.clone();
        b.restrict(&Atom::Id(0), Interval::new(5, 5));
        a.restrict(&Atom::Id(0), Interval::new(0, 1));
        assert_eq!(a.hull(&b).bound_atom(&Atom::Id(0)), Interval::new(0, 5));
        b.restrict(&Atom::Id(0), Interval::new(7, 8));
        assert!(b.is_infeasible());
        assert_eq!(a.hull(&b).bound_atom(&Atom::Id(0)), Interval::new(0, 1));
    }
}
