//! Comparison predicates of `arith.cmpi` and `arith.cmpf`, in MLIR's numbering: the number is
//! what the generic form stores (`{predicate = 2 : i64}`), the name what the custom form prints
//! (`arith.cmpi slt, ...`). Both enums list their variants in that order, so `ALL[n]` is the
//! predicate numbered `n` and `NAMES[n]` its name.
//!
//! Besides evaluating a comparison, each predicate knows the two rewrites that rules need:
//! [`swapped`](IntPredicate::swapped) (`a p b` is `b p' a`) and [`negated`](IntPredicate::negated)
//! (`!(a p b)` is `a p' b`). Both are exact, NaN included for floats.

use super::scalar::mask;

/// `arith.cmpi` predicates. Signed ones read their operands sign-extended from the width, unsigned
/// ones zero-extended; `eq` and `ne` compare the bits.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntPredicate {
    /// 0: equal.
    Eq,
    /// 1: not equal.
    Ne,
    /// 2: signed less than.
    Slt,
    /// 3: signed less or equal.
    Sle,
    /// 4: signed greater than.
    Sgt,
    /// 5: signed greater or equal.
    Sge,
    /// 6: unsigned less than.
    Ult,
    /// 7: unsigned less or equal.
    Ule,
    /// 8: unsigned greater than.
    Ugt,
    /// 9: unsigned greater or equal.
    Uge,
}

impl IntPredicate {
    /// Every predicate, in MLIR's numbering.
    pub const ALL: [IntPredicate; 10] = {
        use IntPredicate::*;
        [Eq, Ne, Slt, Sle, Sgt, Sge, Ult, Ule, Ugt, Uge]
    };

    /// The names of the custom form, in MLIR's numbering.
    pub const NAMES: [&'static str; 10] = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"];

    /// The predicate numbered `value`.
    pub fn from_i64(value: i64) -> Option<IntPredicate> {
        usize::try_from(value).ok().and_then(|i| Self::ALL.get(i)).copied()
    }

    /// Its number.
    pub fn to_i64(self) -> i64 {
        self as i64
    }

    /// The predicate named `name` in the custom form.
    pub fn from_name(name: &str) -> Option<IntPredicate> {
        Self::NAMES.iter().position(|&n| n == name).map(|i| Self::ALL[i])
    }

    /// Its name in the custom form.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The predicate `p'` with `a p b == b p' a`.
    pub fn swapped(self) -> IntPredicate {
        use IntPredicate::*;
        match self {
            Eq => Eq,
            Ne => Ne,
            Slt => Sgt,
            Sle => Sge,
            Sgt => Slt,
            Sge => Sle,
            Ult => Ugt,
            Ule => Uge,
            Ugt => Ult,
            Uge => Ule,
        }
    }

    /// The predicate `p'` with `a p' b == !(a p b)`.
    pub fn negated(self) -> IntPredicate {
        use IntPredicate::*;
        match self {
            Eq => Ne,
            Ne => Eq,
            Slt => Sge,
            Sle => Sgt,
            Sgt => Sle,
            Sge => Slt,
            Ult => Uge,
            Ule => Ugt,
            Ugt => Ule,
            Uge => Ult,
        }
    }

    /// Whether it orders its operands as signed integers.
    pub fn is_signed(self) -> bool {
        use IntPredicate::*;
        matches!(self, Slt | Sle | Sgt | Sge)
    }

    /// Whether it orders its operands as unsigned integers.
    pub fn is_unsigned(self) -> bool {
        use IntPredicate::*;
        matches!(self, Ult | Ule | Ugt | Uge)
    }

    /// Whether `x p x` holds (for every `x`): `eq`, `sle`, `sge`, `ule`, `uge`.
    pub fn is_reflexive(self) -> bool {
        self.compare(0, 0, 1)
    }

    /// Compares the low `width` bits of `lhs` and `rhs` (`width` is 1 to 64; higher bits are
    /// ignored).
    pub fn compare(self, lhs: u64, rhs: u64, width: u32) -> bool {
        let (ua, ub) = (lhs & mask(width), rhs & mask(width));
        let (sa, sb) = (signed(ua, width), signed(ub, width));
        use IntPredicate::*;
        match self {
            Eq => ua == ub,
            Ne => ua != ub,
            Slt => sa < sb,
            Sle => sa <= sb,
            Sgt => sa > sb,
            Sge => sa >= sb,
            Ult => ua < ub,
            Ule => ua <= ub,
            Ugt => ua > ub,
            Uge => ua >= ub,
        }
    }
}

fn signed(bits: u64, width: u32) -> i64 {
    let shift = 64 - width.clamp(1, 64);
    ((bits << shift) as i64) >> shift
}

/// `arith.cmpf` predicates. Ordered predicates (`o..`) are false when either side is NaN,
/// unordered ones (`u..`) true; otherwise both compare as IEEE 754 does (`-0 == +0`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FloatPredicate {
    /// 0: always false.
    False,
    /// 1: ordered and equal.
    Oeq,
    /// 2: ordered and greater than.
    Ogt,
    /// 3: ordered and greater or equal.
    Oge,
    /// 4: ordered and less than.
    Olt,
    /// 5: ordered and less or equal.
    Ole,
    /// 6: ordered and not equal.
    One,
    /// 7: neither is NaN.
    Ord,
    /// 8: unordered or equal.
    Ueq,
    /// 9: unordered or greater than.
    Ugt,
    /// 10: unordered or greater or equal.
    Uge,
    /// 11: unordered or less than.
    Ult,
    /// 12: unordered or less or equal.
    Ule,
    /// 13: unordered or not equal.
    Une,
    /// 14: either is NaN.
    Uno,
    /// 15: always true.
    True,
}

impl FloatPredicate {
    /// Every predicate, in MLIR's numbering.
    pub const ALL: [FloatPredicate; 16] = {
        use FloatPredicate::*;
        [False, Oeq, Ogt, Oge, Olt, Ole, One, Ord, Ueq, Ugt, Uge, Ult, Ule, Une, Uno, True]
    };

    /// The names of the custom form, in MLIR's numbering.
    pub const NAMES: [&'static str; 16] = [
        "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno",
        "true",
    ];

    /// The predicate numbered `value`.
    pub fn from_i64(value: i64) -> Option<FloatPredicate> {
        usize::try_from(value).ok().and_then(|i| Self::ALL.get(i)).copied()
    }

    /// Its number.
    pub fn to_i64(self) -> i64 {
        self as i64
    }

    /// The predicate named `name` in the custom form.
    pub fn from_name(name: &str) -> Option<FloatPredicate> {
        Self::NAMES.iter().position(|&n| n == name).map(|i| Self::ALL[i])
    }

    /// Its name in the custom form.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The predicate `p'` with `a p b == b p' a`.
    pub fn swapped(self) -> FloatPredicate {
        use FloatPredicate::*;
        match self {
            Ogt => Olt,
            Oge => Ole,
            Olt => Ogt,
            Ole => Oge,
            Ugt => Ult,
            Uge => Ule,
            Ult => Ugt,
            Ule => Uge,
            symmetric @ (False | Oeq | One | Ord | Ueq | Une | Uno | True) => symmetric,
        }
    }

    /// The predicate `p'` with `a p' b == !(a p b)`: ordered and unordered trade places.
    pub fn negated(self) -> FloatPredicate {
        use FloatPredicate::*;
        match self {
            False => True,
            Oeq => Une,
            Ogt => Ule,
            Oge => Ult,
            Olt => Uge,
            Ole => Ugt,
            One => Ueq,
            Ord => Uno,
            Ueq => One,
            Ugt => Ole,
            Uge => Olt,
            Ult => Oge,
            Ule => Ogt,
            Une => Oeq,
            Uno => Ord,
            True => False,
        }
    }

    /// Whether it is true when either operand is NaN (`u..` and `true`).
    pub fn is_unordered(self) -> bool {
        self.compare(f64::NAN, f64::NAN)
    }

    /// Compares two floats (an `f32` compares exactly as its `f64` widening).
    pub fn compare(self, lhs: f64, rhs: f64) -> bool {
        use FloatPredicate::*;
        let ordered = !lhs.is_nan() && !rhs.is_nan();
        match self {
            False => false,
            Oeq => ordered && lhs == rhs,
            Ogt => ordered && lhs > rhs,
            Oge => ordered && lhs >= rhs,
            Olt => ordered && lhs < rhs,
            Ole => ordered && lhs <= rhs,
            One => ordered && lhs != rhs,
            Ord => ordered,
            Ueq => !ordered || lhs == rhs,
            Ugt => !ordered || lhs > rhs,
            Uge => !ordered || lhs >= rhs,
            Ult => !ordered || lhs < rhs,
            Ule => !ordered || lhs <= rhs,
            Une => !ordered || lhs != rhs,
            Uno => !ordered,
            True => true,
        }
    }
}
