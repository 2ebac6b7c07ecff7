//! Index expressions of kernel code: integer values as affine combinations of *atoms*.
//!
//! An [`Affine`] is `constant + Σ coefficient × atom`, with no zero coefficient, its terms
//! ordered, so that two equal expressions are equal as Rust values. An [`Atom`] is what the
//! analysis cannot (or not yet) break down: a work-item id, a grid size, a buffer's dimension, a
//! scalar parameter, a loop's induction variable, a value it knows nothing about, or a non-linear
//! combination of expressions (a division, a remainder, a product, a minimum...). Those depend on
//! the dispatch (grid, shapes, scalar arguments), which [`Affine::substitute`] puts in when it is
//! known; the non-linear atoms fold once their operands are constants.
//!
//! Arithmetic is on mathematical integers; an overflow of `i64` gives `None` and the caller
//! forgets the expression (an unknown value), so a result is never wrong, only less precise.
//! Index values wrap at 64 bits at run time, which the analysis does not model: an index past
//! `i64` is an out-of-bounds access anyway.
//!
//! The one rewrite beyond constant folding: `d × (e div d) + (e rem d) = e`, for a constant `d`
//! and a division and remainder of the same rounding. It holds for every `e` (it is the
//! definition of the remainder, wrapping included), and it turns the usual row/column split of a
//! flat id, `(id / cols, id % cols)`, back into `id` once the buffer's row-major strides apply.

use hat_ir::Value;
use std::collections::BTreeMap;

/// How a division rounds (and so which remainder goes with it).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Rounding {
    /// Operands read as unsigned (`divui`, `remui`, `shrui`).
    Unsigned,
    /// Signed, toward zero (`divsi`, `remsi`).
    Truncate,
    /// Signed, toward minus infinity (`floordivsi`, `shrsi`, a low-bits mask).
    Floor,
}

/// Signedness of a minimum or maximum.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Order {
    /// `minsi`, `maxsi`.
    Signed,
    /// `minui`, `maxui`.
    Unsigned,
}

/// What an [`Affine`] is a combination of.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Atom {
    /// The work item's global id in a dimension (0, 1, 2).
    Id(u8),
    /// The grid's size in a dimension (`global_size`).
    GridSize(u8),
    /// The kernel's workgroup size in a dimension (`local_size`).
    WorkgroupSize(u8),
    /// A dimension of the buffer bound to a kernel parameter (a dynamic one: static sizes are
    /// constants from the start).
    Dim {
        /// The parameter.
        param: usize,
        /// The dimension.
        dimension: u8,
    },
    /// A scalar parameter of the function summarised.
    Param(usize),
    /// The induction variable of a counted loop around the access (see `Loop` in `summary.rs`).
    Loop(Value),
    /// The iteration number (0, 1, ...) of that loop, once its bounds are known (coverage only).
    Trip(Value),
    /// The workgroup's number in a dimension, where the global id is split as
    /// `workgroup size × group + local` (coverage only: see `coverage.rs`).
    Group(u8),
    /// The work item's number inside its workgroup in a dimension, in that split.
    Local(u8),
    /// A value the analysis does not follow.
    Opaque(Value),
    /// A dimension of the buffer passed to a call, when that buffer is not one parameter: an
    /// unknown that no value of the caller names.
    CallDimension {
        /// The call.
        call: hat_ir::Op,
        /// The callee's parameter.
        param: usize,
        /// The dimension.
        dimension: u8,
    },
    /// An unknown of a callee (an opaque value, a dimension), as one call sees it: two calls of
    /// the same function compute two values.
    Via {
        /// The call.
        call: hat_ir::Op,
        /// The callee's atom.
        atom: Box<Atom>,
    },
    /// A division of the first by the second.
    Div(Box<Affine>, Box<Affine>, Rounding),
    /// A remainder of the first by the second.
    Rem(Box<Affine>, Box<Affine>, Rounding),
    /// The smaller of two.
    Min(Box<Affine>, Box<Affine>, Order),
    /// The larger of two.
    Max(Box<Affine>, Box<Affine>, Order),
    /// A product of two non-constants.
    Mul(Box<Affine>, Box<Affine>),
    /// One of two, chosen by something the analysis does not follow.
    Select(Box<Affine>, Box<Affine>),
}

impl Atom {
    /// The expressions this atom is built from.
    fn operands(&self) -> Option<(&Affine, &Affine)> {
        match self {
            Atom::Div(a, b, _)
            | Atom::Rem(a, b, _)
            | Atom::Min(a, b, _)
            | Atom::Max(a, b, _)
            | Atom::Mul(a, b)
            | Atom::Select(a, b) => Some((a, b)),
            _ => None,
        }
    }

    /// Whether the atom is built from expressions (a division, a remainder, ...).
    pub(super) fn is_nonlinear(&self) -> bool {
        self.operands().is_some()
    }

    /// Whether the atom is a variable that ranges over the work items or a loop's iterations
    /// (what a proof of coverage may quantify over).
    pub(super) fn is_variable(&self) -> bool {
        matches!(self, Atom::Id(_) | Atom::Trip(_) | Atom::Group(_) | Atom::Local(_))
    }
}

/// The largest expression kept, in atoms (nested ones included); a bigger one is forgotten, so
/// that chains of helpers cannot blow the analysis up.
const MAX_SIZE: usize = 64;

/// `constant + Σ coefficient × atom`. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Affine {
    constant: i64,
    terms: BTreeMap<Atom, i64>,
}

impl Affine {
    /// The constant `value`.
    pub(super) fn constant(value: i64) -> Affine {
        Affine { constant: value, terms: BTreeMap::new() }
    }

    /// One atom.
    pub(super) fn atom(atom: Atom) -> Affine {
        Affine { constant: 0, terms: BTreeMap::from([(atom, 1)]) }
    }

    /// The value when the expression is a constant.
    pub(super) fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// The constant part.
    pub(super) fn constant_part(&self) -> i64 {
        self.constant
    }

    /// The terms, atom by atom.
    pub(super) fn terms(&self) -> impl Iterator<Item = (&Atom, i64)> {
        self.terms.iter().map(|(a, &c)| (a, c))
    }

    /// How many atoms the expression holds, nested ones included.
    pub(super) fn size(&self) -> usize {
        self.terms.keys().map(|a| 1 + a.operands().map_or(0, |(x, y)| x.size() + y.size())).sum()
    }

    /// `self + other`.
    pub(super) fn add(&self, other: &Affine) -> Option<Affine> {
        let mut sum = self.clone();
        sum.constant = sum.constant.checked_add(other.constant)?;
        for (atom, &coefficient) in &other.terms {
            sum.add_term(atom.clone(), coefficient)?;
        }
        sum.simplify()
    }

    /// `self - other`.
    pub(super) fn sub(&self, other: &Affine) -> Option<Affine> {
        self.add(&other.scale(-1)?)
    }

    /// `factor × self`.
    pub(super) fn scale(&self, factor: i64) -> Option<Affine> {
        if factor == 0 {
            return Some(Affine::constant(0));
        }
        let mut terms = BTreeMap::new();
        for (atom, &coefficient) in &self.terms {
            terms.insert(atom.clone(), coefficient.checked_mul(factor)?);
        }
        Some(Affine { constant: self.constant.checked_mul(factor)?, terms })
    }

    /// `self × other`: linear when either is a constant.
    pub(super) fn mul(&self, other: &Affine) -> Option<Affine> {
        match (self.as_constant(), other.as_constant()) {
            (Some(k), _) => other.scale(k),
            (_, Some(k)) => self.scale(k),
            _ => Affine::nonlinear(Atom::Mul(Box::new(self.clone()), Box::new(other.clone()))),
        }
    }

    /// `self / divisor` rounded as said; `None` for a constant divisor of 0 or less (division by
    /// zero is a run-time error; a negative divisor is not worth modelling).
    pub(super) fn div(&self, divisor: &Affine, rounding: Rounding) -> Option<Affine> {
        match divisor.as_constant() {
            Some(d) if d <= 0 => None,
            Some(1) => Some(self.clone()),
            Some(d) => match self.as_constant() {
                Some(n) => divide(n, d, rounding).map(Affine::constant),
                None if rounding == Rounding::Floor => {
                    let (quotient, rest) = self.split_multiples(d)?;
                    let rest = match rest.as_constant() {
                        Some(n) => Affine::constant(n.div_euclid(d)),
                        None => Affine::nonlinear(Atom::Div(Box::new(rest), Box::new(divisor.clone()), rounding))?,
                    };
                    quotient.add(&rest)
                }
                None => Affine::nonlinear(Atom::Div(Box::new(self.clone()), Box::new(divisor.clone()), rounding)),
            },
            None => Affine::nonlinear(Atom::Div(Box::new(self.clone()), Box::new(divisor.clone()), rounding)),
        }
    }

    /// The remainder of `self / divisor`, rounded as said.
    pub(super) fn rem(&self, divisor: &Affine, rounding: Rounding) -> Option<Affine> {
        match divisor.as_constant() {
            Some(d) if d <= 0 => None,
            Some(1) => Some(Affine::constant(0)),
            Some(d) => match self.as_constant() {
                Some(n) => remainder(n, d, rounding).map(Affine::constant),
                None if rounding == Rounding::Floor => {
                    let (_, rest) = self.split_multiples(d)?;
                    match rest.as_constant() {
                        Some(n) => Some(Affine::constant(n.rem_euclid(d))),
                        None => Affine::nonlinear(Atom::Rem(Box::new(rest), Box::new(divisor.clone()), rounding)),
                    }
                }
                None => Affine::nonlinear(Atom::Rem(Box::new(self.clone()), Box::new(divisor.clone()), rounding)),
            },
            None => Affine::nonlinear(Atom::Rem(Box::new(self.clone()), Box::new(divisor.clone()), rounding)),
        }
    }

    /// `(q, r)` with `self = d × q + r`, the constant of `r` in `[0, d)` and each coefficient in
    /// `(-d/2, d/2]` (`d > 0`): a division rounded down is `q + (r div d)`, its remainder
    /// `r mod d`, so that two dividends that differ by a multiple of `d` have one remainder (a
    /// value wrapped to a narrow type, say, is one form whatever multiple of `2^bits` it is
    /// shifted by). Small coefficients keep their sign, so that `-id` stays `-id` (in one
    /// period wherever `id` is), not `(d - 1) × id`.
    fn split_multiples(&self, d: i64) -> Option<(Affine, Affine)> {
        let mut quotient = Affine::constant(self.constant.div_euclid(d));
        let mut rest = Affine::constant(self.constant.rem_euclid(d));
        for (atom, &coefficient) in &self.terms {
            let mut kept = coefficient.rem_euclid(d);
            if kept > d / 2 {
                kept -= d;
            }
            quotient.add_term(atom.clone(), (coefficient - kept) / d)?;
            rest.add_term(atom.clone(), kept)?;
        }
        Some((quotient, rest))
    }

    /// The smaller of `self` and `other`.
    pub(super) fn minimum(&self, other: &Affine, order: Order) -> Option<Affine> {
        if self == other {
            return Some(self.clone());
        }
        match (self.as_constant(), other.as_constant()) {
            (Some(a), Some(b)) => Some(Affine::constant(pick(a, b, order, true))),
            _ => Affine::nonlinear(Atom::Min(Box::new(self.clone()), Box::new(other.clone()), order)),
        }
    }

    /// The larger of `self` and `other`.
    pub(super) fn maximum(&self, other: &Affine, order: Order) -> Option<Affine> {
        if self == other {
            return Some(self.clone());
        }
        match (self.as_constant(), other.as_constant()) {
            (Some(a), Some(b)) => Some(Affine::constant(pick(a, b, order, false))),
            _ => Affine::nonlinear(Atom::Max(Box::new(self.clone()), Box::new(other.clone()), order)),
        }
    }

    /// One of `self` and `other`.
    pub(super) fn select(&self, other: &Affine) -> Option<Affine> {
        if self == other {
            return Some(self.clone());
        }
        Affine::nonlinear(Atom::Select(Box::new(self.clone()), Box::new(other.clone())))
    }

    /// The expression with atoms replaced: `replace` gives the replacement of an atom, or `None`
    /// to keep it (the operands of a non-linear atom are substituted in turn, and the atom folds
    /// when they become constants). `None` on overflow.
    pub(super) fn substitute(&self, replace: &dyn Fn(&Atom) -> Option<Affine>) -> Option<Affine> {
        let mut result = Affine::constant(self.constant);
        let mut changed = false;
        for (atom, &coefficient) in &self.terms {
            let replaced = match replace(atom) {
                Some(replacement) => Some(replacement),
                None => match atom {
                    Atom::Div(a, b, r) => Some(a.substitute(replace)?.div(&b.substitute(replace)?, *r)?),
                    Atom::Rem(a, b, r) => Some(a.substitute(replace)?.rem(&b.substitute(replace)?, *r)?),
                    Atom::Min(a, b, o) => Some(a.substitute(replace)?.minimum(&b.substitute(replace)?, *o)?),
                    Atom::Max(a, b, o) => Some(a.substitute(replace)?.maximum(&b.substitute(replace)?, *o)?),
                    Atom::Mul(a, b) => Some(a.substitute(replace)?.mul(&b.substitute(replace)?)?),
                    Atom::Select(a, b) => Some(a.substitute(replace)?.select(&b.substitute(replace)?)?),
                    _ => None,
                },
            };
            match replaced {
                Some(form) if form.as_atom_ref() != Some(atom) => {
                    changed = true;
                    result.constant = result.constant.checked_add(form.constant.checked_mul(coefficient)?)?;
                    for (inner, &c) in &form.terms {
                        result.add_term(inner.clone(), c.checked_mul(coefficient)?)?;
                    }
                }
                _ => result.add_term(atom.clone(), coefficient)?,
            }
        }
        if changed {
            result.simplify()
        } else {
            Some(result)
        }
    }

    /// The number the expression is where `value` gives every atom a number: the constant
    /// [`Affine::substitute`] would give with those numbers, computed without building forms
    /// (the race lint asks it once per work item and access). `None` where an atom has no
    /// number, or where `substitute` would not give a constant (overflow, a division by a
    /// number below 1, a `select`).
    pub(super) fn value(&self, value: &dyn Fn(&Atom) -> Option<i64>) -> Option<i64> {
        let mut total = self.constant;
        for (atom, &coefficient) in &self.terms {
            let number = match value(atom) {
                Some(number) => number,
                None => match atom {
                    Atom::Div(a, b, r) => {
                        let d = b.value(value).filter(|&d| d > 0)?;
                        divide(a.value(value)?, d, *r)?
                    }
                    Atom::Rem(a, b, r) => {
                        let d = b.value(value).filter(|&d| d > 0)?;
                        remainder(a.value(value)?, d, *r)?
                    }
                    Atom::Min(a, b, o) => pick(a.value(value)?, b.value(value)?, *o, true),
                    Atom::Max(a, b, o) => pick(a.value(value)?, b.value(value)?, *o, false),
                    Atom::Mul(a, b) => a.value(value)?.checked_mul(b.value(value)?)?,
                    _ => return None,
                },
            };
            total = total.checked_add(number.checked_mul(coefficient)?)?;
        }
        Some(total)
    }

    /// The atom, when the expression is exactly one atom with coefficient 1.
    fn as_atom_ref(&self) -> Option<&Atom> {
        match (self.constant, self.terms.len()) {
            (0, 1) => self.terms.iter().next().filter(|(_, &c)| c == 1).map(|(a, _)| a),
            _ => None,
        }
    }

    /// A non-linear atom alone, unless it is too big to keep.
    fn nonlinear(atom: Atom) -> Option<Affine> {
        let form = Affine::atom(atom);
        (form.size() <= MAX_SIZE).then_some(form)
    }

    fn add_term(&mut self, atom: Atom, coefficient: i64) -> Option<()> {
        use std::collections::btree_map::Entry;
        match self.terms.entry(atom) {
            Entry::Vacant(entry) => {
                if coefficient != 0 {
                    entry.insert(coefficient);
                }
            }
            Entry::Occupied(mut entry) => {
                let sum = entry.get().checked_add(coefficient)?;
                if sum == 0 {
                    entry.remove();
                } else {
                    *entry.get_mut() = sum;
                }
            }
        }
        Some(())
    }

    /// Applies `d × (e div d) + (e rem d) = e` (constant `d`, the same rounding) until it no
    /// longer applies; `None` when the result is too big to keep.
    fn simplify(mut self) -> Option<Affine> {
        loop {
            let mut pair = None;
            for (atom, &coefficient) in &self.terms {
                let Atom::Rem(e, d, rounding) = atom else { continue };
                let Some(divisor) = d.as_constant() else { continue };
                let quotient = Atom::Div(e.clone(), d.clone(), *rounding);
                if coefficient.checked_mul(divisor).is_some_and(|c| self.terms.get(&quotient) == Some(&c)) {
                    pair = Some((atom.clone(), quotient, (**e).clone(), coefficient));
                    break;
                }
            }
            let Some((remainder, quotient, e, coefficient)) = pair else { break };
            self.terms.remove(&remainder);
            self.terms.remove(&quotient);
            self = self.add(&e.scale(coefficient)?)?;
        }
        (self.size() <= MAX_SIZE).then_some(self)
    }
}

impl std::fmt::Display for Affine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = self
            .terms
            .iter()
            .map(|(atom, &c)| match c {
                1 => format!("{atom}"),
                -1 => format!("-{atom}"),
                _ => format!("{c}*{atom}"),
            })
            .collect();
        if self.constant != 0 || parts.is_empty() {
            parts.push(self.constant.to_string());
        }
        write!(f, "{}", parts.join(" + "))
    }
}

impl std::fmt::Display for Atom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const DIMENSIONS: [&str; 3] = ["x", "y", "z"];
        let dimension = |d: u8| DIMENSIONS.get(d as usize).copied().unwrap_or("?");
        match self {
            Atom::Id(d) => write!(f, "id.{}", dimension(*d)),
            Atom::GridSize(d) => write!(f, "grid.{}", dimension(*d)),
            Atom::WorkgroupSize(d) => write!(f, "workgroup.{}", dimension(*d)),
            Atom::Dim { param, dimension } => write!(f, "dim(#{param}, {dimension})"),
            Atom::Param(p) => write!(f, "#{p}"),
            Atom::Loop(v) => write!(f, "loop{}", v.index()),
            Atom::Trip(v) => write!(f, "trip{}", v.index()),
            Atom::Group(d) => write!(f, "group.{}", dimension(*d)),
            Atom::Local(d) => write!(f, "local.{}", dimension(*d)),
            Atom::Opaque(v) => write!(f, "?{}", v.index()),
            Atom::CallDimension { call, param, dimension } => {
                write!(f, "dim(call{}#{param}, {dimension})", call.index())
            }
            Atom::Via { call, atom } => write!(f, "{atom}@call{}", call.index()),
            Atom::Div(a, b, _) => write!(f, "({a}) / ({b})"),
            Atom::Rem(a, b, _) => write!(f, "({a}) % ({b})"),
            Atom::Min(a, b, _) => write!(f, "min({a}, {b})"),
            Atom::Max(a, b, _) => write!(f, "max({a}, {b})"),
            Atom::Mul(a, b) => write!(f, "({a}) * ({b})"),
            Atom::Select(a, b) => write!(f, "select({a}, {b})"),
        }
    }
}

/// `n / d` for `d > 0`, rounded as said.
pub(super) fn divide(n: i64, d: i64, rounding: Rounding) -> Option<i64> {
    match rounding {
        Rounding::Unsigned => i64::try_from((n as u64) / (d as u64)).ok(),
        Rounding::Truncate => n.checked_div(d),
        Rounding::Floor => n.checked_div_euclid(d),
    }
}

/// The remainder of `n / d` for `d > 0`, rounded as said.
pub(super) fn remainder(n: i64, d: i64, rounding: Rounding) -> Option<i64> {
    match rounding {
        Rounding::Unsigned => i64::try_from((n as u64) % (d as u64)).ok(),
        Rounding::Truncate => n.checked_rem(d),
        Rounding::Floor => n.checked_rem_euclid(d),
    }
}

fn pick(a: i64, b: i64, order: Order, smaller: bool) -> i64 {
    let a_first = match order {
        Order::Signed => a <= b,
        Order::Unsigned => (a as u64) <= (b as u64),
    };
    if a_first == smaller {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(d: u8) -> Affine {
        Affine::atom(Atom::Id(d))
    }

    #[test]
    fn arithmetic_cancels_and_folds() {
        let x = id(0);
        let e = x.add(&Affine::constant(3)).unwrap().sub(&x).unwrap();
        assert_eq!(e.as_constant(), Some(3));
        assert_eq!(x.scale(0).unwrap().as_constant(), Some(0));
        assert_eq!(Affine::constant(7).div(&Affine::constant(2), Rounding::Floor).unwrap().as_constant(), Some(3));
        assert_eq!(Affine::constant(-7).div(&Affine::constant(2), Rounding::Floor).unwrap().as_constant(), Some(-4));
        assert_eq!(Affine::constant(-7).div(&Affine::constant(2), Rounding::Truncate).unwrap().as_constant(), Some(-3));
        assert!(x.div(&Affine::constant(0), Rounding::Unsigned).is_none(), "division by zero is not modelled");
        assert_eq!(Affine::constant(i64::MAX).add(&Affine::constant(1)), None, "overflow forgets");
    }

    #[test]
    fn a_row_column_split_recombines() {
        // 8 * (id / 8) + id % 8 = id, for the same rounding only.
        let x = id(0);
        let eight = Affine::constant(8);
        let row = x.div(&eight, Rounding::Unsigned).unwrap();
        let column = x.rem(&eight, Rounding::Unsigned).unwrap();
        assert_eq!(row.scale(8).unwrap().add(&column).unwrap(), x);
        let signed_column = x.rem(&eight, Rounding::Truncate).unwrap();
        assert_ne!(row.scale(8).unwrap().add(&signed_column).unwrap(), x);
        // The divisor may be symbolic until the dispatch gives it.
        let cols = Affine::atom(Atom::Dim { param: 0, dimension: 1 });
        let row = x.div(&cols, Rounding::Unsigned).unwrap();
        let column = x.rem(&cols, Rounding::Unsigned).unwrap();
        let flat = row.mul(&cols).unwrap().add(&column).unwrap();
        let known =
            flat.substitute(&|a| matches!(a, Atom::Dim { .. }).then(|| Affine::constant(8))).expect("no overflow");
        assert_eq!(known, x);
    }
}
