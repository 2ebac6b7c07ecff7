//! Guards: the conditions under which an access runs, as the analysis understands them.
//!
//! A [`Guard`] is a boolean combination of integer comparisons between index expressions;
//! anything else (a comparison of loaded data, a float comparison, a value passed in) is
//! [`Guard::Unknown`]. Two questions are asked of a guard, over an [`Environment`] bounding the
//! atoms:
//!
//! - [`Guard::narrow`]: the bounds that hold wherever the guard may hold (an
//!   over-approximation: what ranges of ids can reach a guarded access). `Unknown` narrows
//!   nothing.
//! - [`Guard::holds_everywhere`]: whether the guard holds for *every* assignment within the
//!   bounds (an under-approximation: every work item in the box surely runs the access).
//!   `Unknown` never holds everywhere.
//!
//! Unsigned comparisons are read as signed ones only where both sides are known non-negative,
//! with one exception that bounds checks rely on: `a <u b` with `b >= 0` implies `0 <= a < b`
//! (a negative `a` is huge when read unsigned).

use super::affine::{Affine, Atom, Order};
use super::interval::{Environment, Interval, INFINITY};
use hat_dialects::semantics::IntPredicate;

/// A condition on index expressions. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Guard {
    /// Always true.
    True,
    /// Always false.
    False,
    /// Something the analysis does not follow.
    Unknown,
    /// `lhs predicate rhs` (built by [`Guard::compare`]).
    Compare {
        /// The left operand.
        lhs: Affine,
        /// The right operand.
        rhs: Affine,
        /// The comparison.
        predicate: IntPredicate,
        /// `lhs - rhs`, when it does not overflow (computed once: it is asked for again and
        /// again).
        difference: Option<Affine>,
    },
    /// Both.
    And(Box<Guard>, Box<Guard>),
    /// Either.
    Or(Box<Guard>, Box<Guard>),
    /// The negation.
    Not(Box<Guard>),
}

impl Guard {
    /// `lhs predicate rhs`.
    pub(super) fn compare(lhs: Affine, rhs: Affine, predicate: IntPredicate) -> Guard {
        let difference = lhs.sub(&rhs);
        Guard::Compare { lhs, rhs, predicate, difference }
    }

    /// The guard with atoms replaced (see [`Affine::substitute`]); a comparison whose operands
    /// overflow becomes `Unknown`.
    pub(super) fn substitute(&self, replace: &dyn Fn(&Atom) -> Option<Affine>) -> Guard {
        self.map_forms(&|form| form.substitute(replace))
    }

    /// The guard with each comparison's operands rewritten by `map`; a comparison whose
    /// operands `map` cannot rewrite becomes `Unknown`.
    pub(super) fn map_forms(&self, map: &dyn Fn(&Affine) -> Option<Affine>) -> Guard {
        match self {
            Guard::Compare { lhs, rhs, predicate, .. } => match (map(lhs), map(rhs)) {
                (Some(lhs), Some(rhs)) => Guard::compare(lhs, rhs, *predicate),
                _ => Guard::Unknown,
            },
            Guard::And(a, b) => Guard::And(Box::new(a.map_forms(map)), Box::new(b.map_forms(map))),
            Guard::Or(a, b) => Guard::Or(Box::new(a.map_forms(map)), Box::new(b.map_forms(map))),
            Guard::Not(a) => Guard::Not(Box::new(a.map_forms(map))),
            other => other.clone(),
        }
    }

    /// Whether the guard holds where `value` gives every atom a number, decided as
    /// [`Guard::substitute`] and [`Guard::narrow`] would decide it with those numbers, without
    /// building forms; `None` where some part is not decided that way (an atom without a
    /// number, `Unknown`, an unsigned comparison of a negative number, an overflow).
    pub(super) fn decide(&self, value: &dyn Fn(&Atom) -> Option<i64>) -> Option<bool> {
        match self {
            Guard::True => Some(true),
            Guard::False => Some(false),
            Guard::Unknown => None,
            Guard::Compare { lhs, rhs, predicate, .. } => {
                let (l, r) = (lhs.value(value)?, rhs.value(value)?);
                if is_unsigned(*predicate) && (l < 0 || r < 0) {
                    return None;
                }
                let d = l.checked_sub(r)?;
                use IntPredicate::*;
                Some(match as_signed(*predicate) {
                    Eq => d == 0,
                    Ne => d != 0,
                    Slt => d < 0,
                    Sle => d <= 0,
                    Sgt => d > 0,
                    Sge => d >= 0,
                    _ => return None,
                })
            }
            Guard::And(a, b) => Some(a.decide(value)? & b.decide(value)?),
            Guard::Or(a, b) => Some(a.decide(value)? | b.decide(value)?),
            Guard::Not(a) => Some(!a.decide(value)?),
        }
    }

    /// Narrows `env` to where the guard may be `value` (true or false); returns `false` when it
    /// cannot be (nothing in `env` makes it so).
    pub(super) fn narrow(&self, env: &mut Environment, value: bool) -> bool {
        match self {
            Guard::True => value,
            Guard::False => !value,
            Guard::Unknown => true,
            Guard::Compare { lhs, rhs, predicate, difference } => {
                let predicate = if value { *predicate } else { predicate.negated() };
                // Infeasible where the opposite holds everywhere (`ne` narrows no interval).
                !compare_holds(env, lhs, rhs, difference.as_ref(), predicate.negated())
                    && narrow_compare(env, lhs, rhs, difference.as_ref(), predicate)
            }
            Guard::Not(a) => a.narrow(env, !value),
            // `a and b` true, or `a or b` false: both narrow.
            Guard::And(a, b) | Guard::Or(a, b) if value == matches!(self, Guard::And(..)) => {
                a.narrow(env, value) && b.narrow(env, value)
            }
            // `a and b` false, or `a or b` true: what holds on either side.
            Guard::And(a, b) | Guard::Or(a, b) => {
                let (mut left, mut right) = (env.clone(), env.clone());
                let (left_feasible, right_feasible) = (a.narrow(&mut left, value), b.narrow(&mut right, value));
                *env = match (left_feasible, right_feasible) {
                    (false, false) => return false,
                    (true, false) => left,
                    (false, true) => right,
                    (true, true) => left.hull(&right),
                };
                true
            }
        }
    }

    /// Whether the guard is `value` for every assignment within `env`.
    pub(super) fn holds_everywhere(&self, env: &Environment, value: bool) -> bool {
        match self {
            Guard::True => value,
            Guard::False => !value,
            Guard::Unknown => false,
            Guard::Compare { lhs, rhs, predicate, difference } => {
                let predicate = if value { *predicate } else { predicate.negated() };
                compare_holds(env, lhs, rhs, difference.as_ref(), predicate)
            }
            Guard::Not(a) => a.holds_everywhere(env, !value),
            Guard::And(a, b) | Guard::Or(a, b) if value == matches!(self, Guard::And(..)) => {
                a.holds_everywhere(env, value) && b.holds_everywhere(env, value)
            }
            // Either side everywhere is enough (not necessary: a split box is not tried).
            Guard::And(a, b) | Guard::Or(a, b) => a.holds_everywhere(env, value) || b.holds_everywhere(env, value),
        }
    }
}

/// `predicate` read as signed, for operands known to be non-negative.
fn as_signed(predicate: IntPredicate) -> IntPredicate {
    use IntPredicate::*;
    match predicate {
        Ult => Slt,
        Ule => Sle,
        Ugt => Sgt,
        Uge => Sge,
        other => other,
    }
}

fn is_unsigned(predicate: IntPredicate) -> bool {
    use IntPredicate::*;
    matches!(predicate, Ult | Ule | Ugt | Uge)
}

/// Narrows `env` by `lhs predicate rhs` (`difference` is `lhs - rhs`); `false` when infeasible.
fn narrow_compare(
    env: &mut Environment,
    lhs: &Affine,
    rhs: &Affine,
    difference: Option<&Affine>,
    predicate: IntPredicate,
) -> bool {
    use IntPredicate::*;
    let Some(difference) = difference else { return true };
    // `a > b` is `b - a < 0`: the difference, negated.
    let (lhs, rhs, predicate, negate) = match predicate {
        Sgt | Sge | Ugt | Uge => (rhs, lhs, predicate.swapped(), true),
        _ => (lhs, rhs, predicate, false),
    };
    if is_unsigned(predicate) {
        // `a <u b` (or `<=u`) with `b >= 0`: `a` is not negative, and below `b` as signed.
        if env.bound(rhs).low < 0 {
            return true;
        }
        if !at_least_zero(env, lhs) {
            return false;
        }
    }
    let sign = if negate { -1 } else { 1 };
    match as_signed(predicate) {
        Slt => at_most_scaled(env, difference, sign, -1),
        Sle => at_most_scaled(env, difference, sign, 0),
        Eq => at_most_scaled(env, difference, 1, 0) && at_most_scaled(env, difference, -1, 0),
        _ => true, // `ne` narrows no interval
    }
}

/// Narrows `env` by `form >= 0`.
fn at_least_zero(env: &mut Environment, form: &Affine) -> bool {
    at_most_scaled(env, form, -1, 0)
}

/// Narrows `env` by `sign × form <= limit` (`sign` is 1 or -1).
fn at_most_scaled(env: &mut Environment, form: &Affine, sign: i64, limit: i128) -> bool {
    at_most_within(env, form, sign, limit, MAX_BACK_DEPTH)
}

/// How deep a bound is carried back into the operands of a division, minimum or maximum.
const MAX_BACK_DEPTH: usize = 4;

/// Narrows `env` by `sign × form <= limit`, atom by atom; `false` when infeasible.
fn at_most_within(env: &mut Environment, form: &Affine, sign: i64, limit: i128, depth: usize) -> bool {
    // The least value of each term, and of all of them: the room each term has is the limit
    // less the least value of the others.
    let terms: Vec<(Atom, i128, i128)> = form
        .terms()
        .map(|(atom, coefficient)| {
            let c = coefficient as i128 * sign as i128;
            let bound = env.bound_atom(atom);
            let least = if bound.is_empty() {
                INFINITY
            } else if c > 0 {
                saturate(c, bound.low)
            } else {
                saturate(c, bound.high)
            };
            (atom.clone(), c, least)
        })
        .collect();
    let constant = form.constant_part() as i128 * sign as i128;
    let unbounded = terms.iter().filter(|t| t.2 <= -INFINITY).count();
    let finite_sum: i128 = terms.iter().filter(|t| t.2 > -INFINITY).map(|t| t.2.min(INFINITY)).sum();
    if unbounded == 0 && constant + finite_sum > limit {
        return false;
    }
    for (atom, c, least) in terms {
        // The others' least value is finite only if every other term is bounded below.
        let others_unbounded = unbounded - usize::from(least <= -INFINITY);
        if others_unbounded > 0 {
            continue;
        }
        let others = constant + finite_sum - if least > -INFINITY { least.min(INFINITY) } else { 0 };
        let room = limit - others;
        let interval = if c > 0 {
            Interval::new(-INFINITY, room.div_euclid(c))
        } else {
            Interval::new(-room.div_euclid(-c), INFINITY)
        };
        if !restrict_atom(env, &atom, interval, depth) {
            return false;
        }
    }
    true
}

/// `c × value`, saturated at [`INFINITY`].
fn saturate(c: i128, value: i128) -> i128 {
    c.checked_mul(value).unwrap_or(if (c < 0) == (value < 0) { INFINITY } else { -INFINITY }).clamp(-INFINITY, INFINITY)
}

/// Narrows `atom` to `interval`, and what that says of the operands of a division (by a positive
/// constant, of what is not negative), a minimum or a maximum; `false` when infeasible.
fn restrict_atom(env: &mut Environment, atom: &Atom, interval: Interval, depth: usize) -> bool {
    if !env.restrict(atom, interval) {
        return !env.bound_atom(atom).is_empty();
    }
    let bound = env.bound_atom(atom);
    if bound.is_empty() {
        return false;
    }
    if depth == 0 {
        return true;
    }
    let finite_high = bound.high < INFINITY;
    let finite_low = bound.low > -INFINITY;
    match atom {
        // q = e / d with e >= 0 (any rounding): d × q <= e <= d × q + d - 1.
        Atom::Div(e, d, _) => {
            let Some(d) = d.as_constant().filter(|&d| d > 0).map(i128::from) else { return true };
            if env.bound(e).low < 0 {
                return true;
            }
            if finite_high && !at_most_within(env, e, 1, d * bound.high + d - 1, depth - 1) {
                return false;
            }
            !finite_low || at_most_within(env, e, -1, -d * bound.low, depth - 1)
        }
        Atom::Max(a, b, order) if finite_high && ordered(env, a, b, *order) => {
            at_most_within(env, a, 1, bound.high, depth - 1) && at_most_within(env, b, 1, bound.high, depth - 1)
        }
        Atom::Min(a, b, order) if finite_low && ordered(env, a, b, *order) => {
            at_most_within(env, a, -1, -bound.low, depth - 1) && at_most_within(env, b, -1, -bound.low, depth - 1)
        }
        _ => true,
    }
}

/// Whether a minimum or maximum of `a` and `b` compares them as signed integers would.
fn ordered(env: &Environment, a: &Affine, b: &Affine, order: Order) -> bool {
    order == Order::Signed || (env.bound(a).low >= 0 && env.bound(b).low >= 0)
}

/// Whether `lhs predicate rhs` for every assignment within `env` (`difference` is `lhs - rhs`).
fn compare_holds(
    env: &Environment,
    lhs: &Affine,
    rhs: &Affine,
    difference: Option<&Affine>,
    predicate: IntPredicate,
) -> bool {
    use IntPredicate::*;
    if is_unsigned(predicate) && (env.bound(lhs).low < 0 || env.bound(rhs).low < 0) {
        return false;
    }
    let Some(difference) = difference else { return false };
    let d = env.bound(difference);
    if d.is_empty() {
        return true; // nothing to check
    }
    match as_signed(predicate) {
        Eq => d.low == 0 && d.high == 0,
        Ne => d.low > 0 || d.high < 0,
        Slt => d.high <= -1,
        Sle => d.high <= 0,
        Sgt => d.low >= 1,
        Sge => d.low >= 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(d: u8) -> Affine {
        Affine::atom(Atom::Id(d))
    }

    fn compare(lhs: Affine, predicate: IntPredicate, rhs: Affine) -> Guard {
        Guard::compare(lhs, rhs, predicate)
    }

    fn grid(x: i128, y: i128) -> Environment {
        let mut env = Environment::default();
        env.set(Atom::Id(0), Interval::new(0, x - 1));
        env.set(Atom::Id(1), Interval::new(0, y - 1));
        env
    }

    #[test]
    fn bounds_checks_narrow_and_hold() {
        let c = Affine::constant;
        let in_range = Guard::And(
            Box::new(compare(id(0), IntPredicate::Ult, c(16))),
            Box::new(compare(id(1), IntPredicate::Ult, c(8))),
        );
        let mut env = grid(64, 64);
        assert!(in_range.narrow(&mut env, true));
        assert_eq!(env.bound(&id(0)), Interval::new(0, 15));
        assert_eq!(env.bound(&id(1)), Interval::new(0, 7));
        assert!(in_range.holds_everywhere(&env, true));
        assert!(!in_range.holds_everywhere(&grid(17, 8), true));
        // The negation: outside the box, on either side.
        let mut outside = grid(20, 8);
        assert!(in_range.narrow(&mut outside, false));
        assert_eq!(outside.bound(&id(0)), Interval::new(16, 19));
        let mut none = grid(16, 8);
        assert!(!in_range.narrow(&mut none, false), "every id is in range");
    }

    #[test]
    fn unsigned_comparisons_of_what_may_be_negative() {
        let c = Affine::constant;
        let left = id(0).sub(&c(1)).unwrap();
        // (x - 1) <u 64 excludes x = 0, where x - 1 wraps.
        let guard = compare(left.clone(), IntPredicate::Ult, c(64));
        let mut env = grid(100, 1);
        assert!(guard.narrow(&mut env, true));
        assert_eq!(env.bound(&id(0)), Interval::new(1, 64));
        assert!(!guard.holds_everywhere(&grid(64, 1), true), "x = 0 fails it");
        // The same signed holds for x = 0.
        let signed = compare(left, IntPredicate::Slt, c(64));
        assert!(signed.holds_everywhere(&grid(65, 1), true));
        assert!(!Guard::Unknown.holds_everywhere(&grid(1, 1), true));
        let mut env = grid(4, 4);
        assert!(Guard::Unknown.narrow(&mut env, true));
        assert_eq!(env.bound(&id(0)), Interval::new(0, 3));
    }

    #[test]
    fn disjunctions_take_the_hull() {
        let c = Affine::constant;
        let edges = Guard::Or(
            Box::new(compare(id(0), IntPredicate::Eq, c(0))),
            Box::new(compare(id(0), IntPredicate::Eq, c(9))),
        );
        let mut env = grid(10, 1);
        assert!(edges.narrow(&mut env, true));
        assert_eq!(env.bound(&id(0)), Interval::new(0, 9));
        let mut inner = grid(10, 1);
        assert!(edges.narrow(&mut inner, false));
        assert_eq!(inner.bound(&id(0)), Interval::new(0, 9), "`ne` does not narrow an interval");
        assert!(!edges.holds_everywhere(&grid(10, 1), true));
        let mut single = grid(1, 1);
        assert!(edges.holds_everywhere(&single, true));
        assert!(edges.narrow(&mut single, true));
    }
}
