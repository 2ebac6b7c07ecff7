//! Scalar semantics of every `arith` and `math` op, shared by the host executor and the CPU
//! reference backend.
//!
//! Values are [`Scalar`]s: integers (`iN`, `index`, `i1`) as `i64` sign-extended from their
//! width (`i1` as 0 or 1), floats as `f64` (an `f32` holds a value `f32` represents exactly).
//! Every op gets the [`ElementType`] of its (first value) operand and of its result, and computes
//! in that width:
//!
//! - integer arithmetic wraps in the type's width; signed ops read their operands sign-extended
//!   from the width (so `i1`'s `1` is `-1` to `divsi`, `cmpi slt`, `extsi`, ...), unsigned ops
//!   zero-extended; results are sign-extended back ([`value::sign_extend`]);
//! - integer division and remainder by zero is an error (`Err(message)`), never a panic; the one
//!   signed overflow (`MIN / -1`, poison in MLIR) wraps to `MIN`;
//! - a shift by the width or more (poison in MLIR) gives 0, for `shli`, `shrui` and `shrsi` alike;
//!   the amount is read unsigned;
//! - float ops on `f32` compute in `f32` (one rounding, as a GPU does), on `f64` in `f64`;
//!   `remf` is C's `fmod`; `maximumf`/`minimumf` are IEEE 754-2019's (a NaN operand gives NaN, and
//!   `-0 < +0`);
//! - `fptosi`/`fptoui` (poison in MLIR when out of range) saturate to the result's range, and NaN
//!   gives 0 (Rust's `as`, which is also what most GPUs do);
//! - `select` takes `[condition, on_true, on_false]` and returns one of them unchanged, so it also
//!   selects buffer handles.
//!
//! [`ScalarOp`] is the decoded form (no string matching at run time); [`evaluate`] decodes and
//! applies in one call.

use crate::value::{self, ElementType, Scalar};
use hat_ir::AttributeKind;

/// `arith.cmpi` predicates, in MLIR's numbering (`{predicate = N : i64}`).
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
    /// The predicate numbered `value` (MLIR's numbering).
    pub fn from_i64(value: i64) -> Option<IntPredicate> {
        use IntPredicate::*;
        Some(match value {
            0 => Eq,
            1 => Ne,
            2 => Slt,
            3 => Sle,
            4 => Sgt,
            5 => Sge,
            6 => Ult,
            7 => Ule,
            8 => Ugt,
            9 => Uge,
            _ => return None,
        })
    }
}

/// `arith.cmpf` predicates, in MLIR's numbering. Ordered predicates (`o..`) are false when either
/// side is NaN, unordered ones (`u..`) true.
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
    /// The predicate numbered `value` (MLIR's numbering).
    pub fn from_i64(value: i64) -> Option<FloatPredicate> {
        use FloatPredicate::*;
        Some(match value {
            0 => False,
            1 => Oeq,
            2 => Ogt,
            3 => Oge,
            4 => Olt,
            5 => Ole,
            6 => One,
            7 => Ord,
            8 => Ueq,
            9 => Ugt,
            10 => Uge,
            11 => Ult,
            12 => Ule,
            13 => Une,
            14 => Uno,
            15 => True,
            _ => return None,
        })
    }
}

/// A decoded scalar op of `arith` or `math` (everything but `arith.constant`, whose value is an
/// attribute: see [`constant_value`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ScalarOp {
    // Integer binary.
    AddI,
    SubI,
    MulI,
    DivSI,
    DivUI,
    CeilDivSI,
    FloorDivSI,
    RemSI,
    RemUI,
    AndI,
    OrI,
    XorI,
    ShLI,
    ShRSI,
    ShRUI,
    MaxSI,
    MinSI,
    MaxUI,
    MinUI,
    // Float binary.
    AddF,
    SubF,
    MulF,
    DivF,
    RemF,
    MaximumF,
    MinimumF,
    MaxNumF,
    MinNumF,
    PowF,
    // Float unary.
    NegF,
    Sqrt,
    AbsF,
    Exp,
    Log,
    Sin,
    Cos,
    Tanh,
    Floor,
    Ceil,
    // Integer unary.
    AbsI,
    // Comparisons and select.
    CmpI(IntPredicate),
    CmpF(FloatPredicate),
    Select,
    // Casts.
    IndexCast,
    IndexCastUI,
    ExtSI,
    ExtUI,
    TruncI,
    SIToFP,
    UIToFP,
    FPToSI,
    FPToUI,
    ExtF,
    TruncF,
    Bitcast,
}

/// Which kind of operand type an op accepts.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Accepts {
    Int,
    Float,
    Any,
}

impl ScalarOp {
    /// Decodes an op name (`arith.addi`, `math.sqrt`, ...); `predicate` is the `predicate`
    /// attribute of `arith.cmpi`/`arith.cmpf` (ignored by the other ops). `Err` names what is
    /// wrong: an unknown op, a missing or out-of-range predicate.
    pub fn from_name(name: &str, predicate: Option<i64>) -> Result<ScalarOp, String> {
        use ScalarOp::*;
        Ok(match name {
            "arith.addi" => AddI,
            "arith.subi" => SubI,
            "arith.muli" => MulI,
            "arith.divsi" => DivSI,
            "arith.divui" => DivUI,
            "arith.ceildivsi" => CeilDivSI,
            "arith.floordivsi" => FloorDivSI,
            "arith.remsi" => RemSI,
            "arith.remui" => RemUI,
            "arith.andi" => AndI,
            "arith.ori" => OrI,
            "arith.xori" => XorI,
            "arith.shli" => ShLI,
            "arith.shrsi" => ShRSI,
            "arith.shrui" => ShRUI,
            "arith.maxsi" => MaxSI,
            "arith.minsi" => MinSI,
            "arith.maxui" => MaxUI,
            "arith.minui" => MinUI,
            "arith.addf" => AddF,
            "arith.subf" => SubF,
            "arith.mulf" => MulF,
            "arith.divf" => DivF,
            "arith.remf" => RemF,
            "arith.maximumf" => MaximumF,
            "arith.minimumf" => MinimumF,
            "arith.maxnumf" => MaxNumF,
            "arith.minnumf" => MinNumF,
            "arith.negf" => NegF,
            "arith.cmpi" => {
                let p = predicate.ok_or("'arith.cmpi' has no predicate")?;
                CmpI(IntPredicate::from_i64(p).ok_or_else(|| format!("'arith.cmpi' predicate {p} is out of range"))?)
            }
            "arith.cmpf" => {
                let p = predicate.ok_or("'arith.cmpf' has no predicate")?;
                CmpF(FloatPredicate::from_i64(p).ok_or_else(|| format!("'arith.cmpf' predicate {p} is out of range"))?)
            }
            "arith.select" => Select,
            "arith.index_cast" => IndexCast,
            "arith.index_castui" => IndexCastUI,
            "arith.extsi" => ExtSI,
            "arith.extui" => ExtUI,
            "arith.trunci" => TruncI,
            "arith.sitofp" => SIToFP,
            "arith.uitofp" => UIToFP,
            "arith.fptosi" => FPToSI,
            "arith.fptoui" => FPToUI,
            "arith.extf" => ExtF,
            "arith.truncf" => TruncF,
            "arith.bitcast" => Bitcast,
            "math.sqrt" => Sqrt,
            "math.absf" => AbsF,
            "math.exp" => Exp,
            "math.log" => Log,
            "math.sin" => Sin,
            "math.cos" => Cos,
            "math.tanh" => Tanh,
            "math.floor" => Floor,
            "math.ceil" => Ceil,
            "math.absi" => AbsI,
            "math.powf" => PowF,
            _ => return Err(format!("'{name}' is not a scalar arith or math op")),
        })
    }

    /// Whether `name` is an op that [`ScalarOp::from_name`] decodes.
    pub fn is_scalar_op(name: &str) -> bool {
        // The predicate is only checked for the comparisons; any valid one will do here.
        ScalarOp::from_name(name, Some(0)).is_ok()
    }

    /// The op's name.
    pub fn name(self) -> &'static str {
        use ScalarOp::*;
        match self {
            AddI => "arith.addi",
            SubI => "arith.subi",
            MulI => "arith.muli",
            DivSI => "arith.divsi",
            DivUI => "arith.divui",
            CeilDivSI => "arith.ceildivsi",
            FloorDivSI => "arith.floordivsi",
            RemSI => "arith.remsi",
            RemUI => "arith.remui",
            AndI => "arith.andi",
            OrI => "arith.ori",
            XorI => "arith.xori",
            ShLI => "arith.shli",
            ShRSI => "arith.shrsi",
            ShRUI => "arith.shrui",
            MaxSI => "arith.maxsi",
            MinSI => "arith.minsi",
            MaxUI => "arith.maxui",
            MinUI => "arith.minui",
            AddF => "arith.addf",
            SubF => "arith.subf",
            MulF => "arith.mulf",
            DivF => "arith.divf",
            RemF => "arith.remf",
            MaximumF => "arith.maximumf",
            MinimumF => "arith.minimumf",
            MaxNumF => "arith.maxnumf",
            MinNumF => "arith.minnumf",
            PowF => "math.powf",
            NegF => "arith.negf",
            Sqrt => "math.sqrt",
            AbsF => "math.absf",
            Exp => "math.exp",
            Log => "math.log",
            Sin => "math.sin",
            Cos => "math.cos",
            Tanh => "math.tanh",
            Floor => "math.floor",
            Ceil => "math.ceil",
            AbsI => "math.absi",
            CmpI(_) => "arith.cmpi",
            CmpF(_) => "arith.cmpf",
            Select => "arith.select",
            IndexCast => "arith.index_cast",
            IndexCastUI => "arith.index_castui",
            ExtSI => "arith.extsi",
            ExtUI => "arith.extui",
            TruncI => "arith.trunci",
            SIToFP => "arith.sitofp",
            UIToFP => "arith.uitofp",
            FPToSI => "arith.fptosi",
            FPToUI => "arith.fptoui",
            ExtF => "arith.extf",
            TruncF => "arith.truncf",
            Bitcast => "arith.bitcast",
        }
    }

    /// How many operands the op takes.
    pub fn arity(self) -> usize {
        use ScalarOp::*;
        match self {
            Select => 3,
            AddI | SubI | MulI | DivSI | DivUI | CeilDivSI | FloorDivSI | RemSI | RemUI | AndI | OrI | XorI | ShLI
            | ShRSI | ShRUI | MaxSI | MinSI | MaxUI | MinUI | AddF | SubF | MulF | DivF | RemF | MaximumF
            | MinimumF | MaxNumF | MinNumF | PowF | CmpI(_) | CmpF(_) => 2,
            _ => 1,
        }
    }

    /// Whether the op can fail at run time (integer division and remainder by zero).
    pub fn can_fail(self) -> bool {
        use ScalarOp::*;
        matches!(self, DivSI | DivUI | CeilDivSI | FloorDivSI | RemSI | RemUI)
    }

    fn accepts(self) -> Accepts {
        use ScalarOp::*;
        match self {
            AddI | SubI | MulI | DivSI | DivUI | CeilDivSI | FloorDivSI | RemSI | RemUI | AndI | OrI | XorI | ShLI
            | ShRSI | ShRUI | MaxSI | MinSI | MaxUI | MinUI | AbsI | CmpI(_) | IndexCast | IndexCastUI | ExtSI
            | ExtUI | TruncI | SIToFP | UIToFP => Accepts::Int,
            AddF | SubF | MulF | DivF | RemF | MaximumF | MinimumF | MaxNumF | MinNumF | PowF | NegF | Sqrt | AbsF
            | Exp | Log | Sin | Cos | Tanh | Floor | Ceil | CmpF(_) | FPToSI | FPToUI | ExtF | TruncF => Accepts::Float,
            Select | Bitcast => Accepts::Any,
        }
    }

    /// Applies the op. `operand_type` is the type of the operands (for `select`: of the values
    /// selected, not of the condition; for casts: the source type), `result_type` that of the
    /// result (`i1` for comparisons). `Err` on division by zero, a wrong operand count, an
    /// operand type the op does not take, and a `bitcast` between different widths.
    pub fn apply(
        self,
        operands: &[Scalar],
        operand_type: ElementType,
        result_type: ElementType,
    ) -> Result<Scalar, String> {
        if operands.len() != self.arity() {
            return Err(format!("'{}' takes {} operands, got {}", self.name(), self.arity(), operands.len()));
        }
        let accepted = match self.accepts() {
            Accepts::Int => !operand_type.is_float(),
            Accepts::Float => operand_type.is_float(),
            Accepts::Any => true,
        };
        if !accepted {
            return Err(format!("'{}' does not take operands of type {}", self.name(), type_name(operand_type)));
        }
        let t = operand_type;
        let a = operands[0];
        let b = operands.get(1).copied().unwrap_or(Scalar::Int(0));
        use ScalarOp::*;
        Ok(match self {
            AddI => int(t, unsigned(a, t).wrapping_add(unsigned(b, t)) as i128),
            SubI => int(t, unsigned(a, t).wrapping_sub(unsigned(b, t)) as i128),
            MulI => int(t, unsigned(a, t).wrapping_mul(unsigned(b, t)) as i128),
            DivSI | CeilDivSI | FloorDivSI | RemSI => {
                let (x, y) = (signed(a, t) as i128, signed(b, t) as i128);
                if y == 0 {
                    return Err(division_by_zero(self));
                }
                let (q, r) = (x / y, x % y);
                int(
                    t,
                    match self {
                        DivSI => q,
                        CeilDivSI if r != 0 && ((x < 0) == (y < 0)) => q + 1,
                        FloorDivSI if r != 0 && ((x < 0) != (y < 0)) => q - 1,
                        RemSI => r,
                        _ => q,
                    },
                )
            }
            DivUI | RemUI => {
                let (x, y) = (unsigned(a, t), unsigned(b, t));
                if y == 0 {
                    return Err(division_by_zero(self));
                }
                int(t, if self == DivUI { x / y } else { x % y } as i128)
            }
            AndI => int(t, (unsigned(a, t) & unsigned(b, t)) as i128),
            OrI => int(t, (unsigned(a, t) | unsigned(b, t)) as i128),
            XorI => int(t, (unsigned(a, t) ^ unsigned(b, t)) as i128),
            ShLI | ShRSI | ShRUI => {
                let amount = unsigned(b, t);
                if amount >= t.bits() as u64 {
                    Scalar::Int(0)
                } else {
                    match self {
                        ShLI => int(t, (unsigned(a, t) << amount) as i128),
                        ShRSI => int(t, (signed(a, t) >> amount) as i128),
                        _ => int(t, (unsigned(a, t) >> amount) as i128),
                    }
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
            MaximumF => Scalar::Float(maximum(a.as_f64(), b.as_f64())),
            MinimumF => Scalar::Float(minimum(a.as_f64(), b.as_f64())),
            MaxNumF => Scalar::Float(a.as_f64().max(b.as_f64())),
            MinNumF => Scalar::Float(a.as_f64().min(b.as_f64())),
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
            CmpI(p) => Scalar::Int(compare_ints(p, a, b, t) as i64),
            CmpF(p) => Scalar::Int(compare_floats(p, a.as_f64(), b.as_f64()) as i64),
            Select => {
                if operands[0].as_i64() != 0 {
                    operands[1]
                } else {
                    operands[2]
                }
            }
            IndexCast | ExtSI => int_result(result_type, signed(a, t) as i128)?,
            IndexCastUI | ExtUI | TruncI => int_result(result_type, unsigned(a, t) as i128)?,
            SIToFP => {
                let v = signed(a, t);
                float_result(result_type, || v as f32, || v as f64)?
            }
            UIToFP => {
                let v = unsigned(a, t);
                float_result(result_type, || v as f32, || v as f64)?
            }
            FPToSI => {
                if result_type.is_float() {
                    return Err(bad_result(self, result_type));
                }
                let bits = result_type.bits();
                let (min, max) = if bits == 1 { (-1, 0) } else { (signed_min(bits), signed_max(bits)) };
                // `as` saturates and maps NaN to 0.
                int(result_type, (a.as_f64() as i64).clamp(min, max) as i128)
            }
            FPToUI => {
                if result_type.is_float() {
                    return Err(bad_result(self, result_type));
                }
                int(result_type, (a.as_f64() as u64).min(mask(result_type.bits())) as i128)
            }
            ExtF | TruncF => {
                let v = a.as_f64();
                float_result(result_type, || v as f32, || v)?
            }
            Bitcast => bitcast(a, t, result_type)?,
        })
    }
}

/// Decodes and applies a scalar op in one call: see [`ScalarOp::from_name`] and
/// [`ScalarOp::apply`].
pub fn evaluate(
    op_name: &str,
    predicate: Option<i64>,
    operands: &[Scalar],
    operand_type: ElementType,
    result_type: ElementType,
) -> Result<Scalar, String> {
    ScalarOp::from_name(op_name, predicate)?.apply(operands, operand_type, result_type)
}

/// The value of an `arith.constant`'s `value` attribute (integers as they are stored,
/// sign-extended from their width; floats as `f64`), or `None` for other attributes.
pub fn constant_value(attribute: &AttributeKind) -> Option<Scalar> {
    match attribute {
        AttributeKind::Integer { value, .. } => Some(Scalar::Int(*value)),
        AttributeKind::Float { bits, .. } => Some(Scalar::Float(f64::from_bits(*bits))),
        _ => None,
    }
}

/// `value` as a value of type `ty`: integers truncated to the width and sign-extended (`i1` to 0
/// or 1), floats converted (and rounded to `f32` for `f32`); an integer converts to a float type
/// and a float to an integer type as `as` does.
pub fn normalize(value: Scalar, ty: ElementType) -> Scalar {
    match ty {
        ElementType::F32 => Scalar::Float(value.as_f64() as f32 as f64),
        ElementType::F64 => Scalar::Float(value.as_f64()),
        _ => Scalar::Int(value::sign_extend(value.as_i64(), ty.bits())),
    }
}

/// The bit pattern of `value` stored as a `ty` (the low `ty.bits()` bits; see [`from_bits`]).
pub fn to_bits(value: Scalar, ty: ElementType) -> u64 {
    match ty {
        ElementType::F32 => (value.as_f64() as f32).to_bits() as u64,
        ElementType::F64 => value.as_f64().to_bits(),
        _ => value.as_i64() as u64 & mask(ty.bits()),
    }
}

/// The value of type `ty` whose bit pattern is the low `ty.bits()` bits of `bits`.
pub fn from_bits(bits: u64, ty: ElementType) -> Scalar {
    match ty {
        ElementType::F32 => Scalar::Float(f32::from_bits(bits as u32) as f64),
        ElementType::F64 => Scalar::Float(f64::from_bits(bits)),
        _ => Scalar::Int(value::sign_extend(bits as i64, ty.bits())),
    }
}

/// MLIR's spelling of a type.
pub fn type_name(ty: ElementType) -> &'static str {
    match ty {
        ElementType::I1 => "i1",
        ElementType::I8 => "i8",
        ElementType::I16 => "i16",
        ElementType::I32 => "i32",
        ElementType::I64 => "i64",
        ElementType::Index => "index",
        ElementType::F32 => "f32",
        ElementType::F64 => "f64",
    }
}

// ----- helpers ----------------------------------------------------------------------------------

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn signed_min(bits: u32) -> i64 {
    if bits >= 64 {
        i64::MIN
    } else {
        -(1i64 << (bits - 1))
    }
}

fn signed_max(bits: u32) -> i64 {
    if bits >= 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    }
}

/// The operand read signed in the width of `ty` (`i1`'s 1 is -1).
fn signed(v: Scalar, ty: ElementType) -> i64 {
    let bits = ty.bits();
    let raw = v.as_i64();
    if bits >= 64 {
        raw
    } else {
        let shift = 64 - bits;
        (raw << shift) >> shift
    }
}

/// The operand read unsigned in the width of `ty`.
fn unsigned(v: Scalar, ty: ElementType) -> u64 {
    v.as_i64() as u64 & mask(ty.bits())
}

/// An integer result: the low bits of `v` in the width of `ty`, sign-extended (`i1`: 0 or 1).
fn int(ty: ElementType, v: i128) -> Scalar {
    Scalar::Int(value::sign_extend(v as i64, ty.bits()))
}

fn int_result(ty: ElementType, v: i128) -> Result<Scalar, String> {
    if ty.is_float() {
        return Err(format!("an integer cast cannot produce {}", type_name(ty)));
    }
    Ok(int(ty, v))
}

fn float_result(ty: ElementType, f32: impl FnOnce() -> f32, f64: impl FnOnce() -> f64) -> Result<Scalar, String> {
    match ty {
        ElementType::F32 => Ok(Scalar::Float(f32() as f64)),
        ElementType::F64 => Ok(Scalar::Float(f64())),
        _ => Err(format!("a float conversion cannot produce {}", type_name(ty))),
    }
}

fn bad_result(op: ScalarOp, ty: ElementType) -> String {
    format!("'{}' cannot produce {}", op.name(), type_name(ty))
}

fn pick(first: bool, a: Scalar, b: Scalar, t: ElementType) -> Scalar {
    normalize(if first { a } else { b }, t)
}

fn division_by_zero(op: ScalarOp) -> String {
    let what = if matches!(op, ScalarOp::RemSI | ScalarOp::RemUI) { "remainder" } else { "division" };
    format!("integer {what} by zero ('{}')", op.name())
}

fn binary_float(t: ElementType, a: Scalar, b: Scalar, f32: fn(f32, f32) -> f32, f64: fn(f64, f64) -> f64) -> Scalar {
    let (x, y) = (a.as_f64(), b.as_f64());
    Scalar::Float(match t {
        ElementType::F32 => f32(x as f32, y as f32) as f64,
        _ => f64(x, y),
    })
}

fn unary_float(t: ElementType, a: Scalar, f32: fn(f32) -> f32, f64: fn(f64) -> f64) -> Scalar {
    let x = a.as_f64();
    Scalar::Float(match t {
        ElementType::F32 => f32(x as f32) as f64,
        _ => f64(x),
    })
}

/// IEEE 754-2019 maximum: a NaN operand gives NaN (that operand), and `+0 > -0`.
fn maximum(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a == b {
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

/// IEEE 754-2019 minimum: a NaN operand gives NaN (that operand), and `-0 < +0`.
fn minimum(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a == b {
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

fn compare_ints(p: IntPredicate, a: Scalar, b: Scalar, t: ElementType) -> bool {
    let (sa, sb, ua, ub) = (signed(a, t), signed(b, t), unsigned(a, t), unsigned(b, t));
    match p {
        IntPredicate::Eq => ua == ub,
        IntPredicate::Ne => ua != ub,
        IntPredicate::Slt => sa < sb,
        IntPredicate::Sle => sa <= sb,
        IntPredicate::Sgt => sa > sb,
        IntPredicate::Sge => sa >= sb,
        IntPredicate::Ult => ua < ub,
        IntPredicate::Ule => ua <= ub,
        IntPredicate::Ugt => ua > ub,
        IntPredicate::Uge => ua >= ub,
    }
}

fn compare_floats(p: FloatPredicate, a: f64, b: f64) -> bool {
    use FloatPredicate::*;
    let ordered = !a.is_nan() && !b.is_nan();
    match p {
        False => false,
        Oeq => ordered && a == b,
        Ogt => ordered && a > b,
        Oge => ordered && a >= b,
        Olt => ordered && a < b,
        Ole => ordered && a <= b,
        One => ordered && a != b,
        Ord => ordered,
        Ueq => !ordered || a == b,
        Ugt => !ordered || a > b,
        Uge => !ordered || a >= b,
        Ult => !ordered || a < b,
        Ule => !ordered || a <= b,
        Une => !ordered || a != b,
        Uno => !ordered,
        True => true,
    }
}

fn bitcast(a: Scalar, from: ElementType, to: ElementType) -> Result<Scalar, String> {
    if from.bits() != to.bits() || from.size() != to.size() {
        return Err(format!("'arith.bitcast' from {} to {} changes the width", type_name(from), type_name(to)));
    }
    Ok(from_bits(to_bits(a, from), to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ElementType::*;

    fn i(v: i64) -> Scalar {
        Scalar::Int(v)
    }

    fn f(v: f64) -> Scalar {
        Scalar::Float(v)
    }

    fn ev(name: &str, operands: &[Scalar], t: ElementType, r: ElementType) -> Scalar {
        evaluate(name, None, operands, t, r).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn bin(name: &str, a: i64, b: i64, t: ElementType) -> i64 {
        ev(name, &[i(a), i(b)], t, t).as_i64()
    }

    fn cmpi(p: i64, a: i64, b: i64, t: ElementType) -> bool {
        evaluate("arith.cmpi", Some(p), &[i(a), i(b)], t, I1).unwrap().as_i64() == 1
    }

    fn cmpf(p: i64, a: f64, b: f64) -> bool {
        evaluate("arith.cmpf", Some(p), &[f(a), f(b)], F32, I1).unwrap().as_i64() == 1
    }

    #[test]
    fn integer_arithmetic_wraps_in_the_width() {
        assert_eq!(bin("arith.addi", 7, 8, I32), 15);
        assert_eq!(bin("arith.addi", 100, 100, I8), -56);
        assert_eq!(bin("arith.addi", i32::MAX as i64, 1, I32), i32::MIN as i64);
        assert_eq!(bin("arith.subi", -128, 1, I8), 127);
        assert_eq!(bin("arith.subi", 0, 1, I16), -1);
        assert_eq!(bin("arith.muli", 65536, 65536, I32), 0);
        assert_eq!(bin("arith.muli", i64::MAX, 2, I64), -2);
        assert_eq!(bin("arith.muli", -1, -1, Index), 1);
        assert_eq!(bin("arith.addi", 1, 1, I1), 0);
        assert_eq!(bin("arith.addi", 1, 0, I1), 1);
        assert_eq!(bin("arith.muli", 1, 1, I1), 1);
    }

    #[test]
    fn divisions_and_remainders() {
        assert_eq!(bin("arith.divsi", -7, 2, I32), -3);
        assert_eq!(bin("arith.divsi", i32::MIN as i64, -1, I32), i32::MIN as i64);
        assert_eq!(bin("arith.divsi", i64::MIN, -1, I64), i64::MIN);
        assert_eq!(bin("arith.divui", -1, 2, I8), 127);
        assert_eq!(bin("arith.divui", -2, 2, I64), i64::MAX);
        assert_eq!(bin("arith.ceildivsi", -7, 2, I32), -3);
        assert_eq!(bin("arith.ceildivsi", 7, 2, I32), 4);
        assert_eq!(bin("arith.ceildivsi", -7, -2, I32), 4);
        assert_eq!(bin("arith.ceildivsi", 6, 2, I32), 3);
        assert_eq!(bin("arith.floordivsi", -7, 2, I32), -4);
        assert_eq!(bin("arith.floordivsi", 7, -2, I32), -4);
        assert_eq!(bin("arith.floordivsi", 7, 2, I32), 3);
        assert_eq!(bin("arith.remsi", -7, 2, I32), -1);
        assert_eq!(bin("arith.remsi", 7, -2, I32), 1);
        assert_eq!(bin("arith.remsi", -128, -1, I8), 0);
        assert_eq!(bin("arith.remui", -1, 10, I8), 5);
        assert_eq!(bin("arith.remui", 17, 5, Index), 2);
        for name in ["arith.divsi", "arith.divui", "arith.ceildivsi", "arith.floordivsi", "arith.remsi", "arith.remui"]
        {
            let error = evaluate(name, None, &[i(7), i(0)], I32, I32).unwrap_err();
            assert!(error.contains("by zero") && error.contains(name), "{error}");
        }
        // Zero in the width: 256 is 0 as an i8.
        assert!(evaluate("arith.divui", None, &[i(7), i(256)], I8, I8).is_err());
    }

    #[test]
    fn bitwise_and_shifts() {
        assert_eq!(bin("arith.andi", 12, 10, I32), 8);
        assert_eq!(bin("arith.ori", 12, 10, I32), 14);
        assert_eq!(bin("arith.xori", 12, 10, I32), 6);
        assert_eq!(bin("arith.xori", 1, 1, I1), 0);
        assert_eq!(bin("arith.xori", -1, 0, I64), -1);
        assert_eq!(bin("arith.shli", 1, 31, I32), i32::MIN as i64);
        assert_eq!(bin("arith.shli", 1, 63, Index), i64::MIN);
        assert_eq!(bin("arith.shli", 3, 7, I8), -128);
        assert_eq!(bin("arith.shrsi", -8, 1, I8), -4);
        assert_eq!(bin("arith.shrui", -8, 1, I8), 124);
        assert_eq!(bin("arith.shrui", -1, 60, I64), 15);
        // Amounts of the width or more (read unsigned) give 0.
        assert_eq!(bin("arith.shli", 1, 32, I32), 0);
        assert_eq!(bin("arith.shrsi", -8, 8, I8), 0);
        assert_eq!(bin("arith.shrui", -8, -1, I8), 0);
        assert_eq!(bin("arith.shli", 1, 64, I64), 0);
        assert_eq!(bin("arith.shli", 1, -1, Index), 0);
    }

    #[test]
    fn integer_min_max_and_abs() {
        assert_eq!(bin("arith.maxsi", 3, -5, I32), 3);
        assert_eq!(bin("arith.minsi", 3, -5, I32), -5);
        assert_eq!(bin("arith.maxui", 3, -5, I32), -5);
        assert_eq!(bin("arith.minui", 3, -5, I32), 3);
        assert_eq!(bin("arith.maxsi", 1, 0, I1), 0);
        assert_eq!(bin("arith.maxui", 1, 0, I1), 1);
        assert_eq!(ev("math.absi", &[i(-5)], I32, I32), i(5));
        assert_eq!(ev("math.absi", &[i(i32::MIN as i64)], I32, I32), i(i32::MIN as i64));
        assert_eq!(ev("math.absi", &[i(i64::MIN)], I64, I64), i(i64::MIN));
    }

    #[test]
    fn integer_comparisons() {
        // eq ne slt sle sgt sge ult ule ugt uge
        assert!(cmpi(0, 5, 5, I32));
        assert!(!cmpi(0, 5, 6, I32));
        assert!(cmpi(1, 5, 6, I32));
        assert!(cmpi(2, -1, 0, I32));
        assert!(cmpi(3, 0, 0, I32));
        assert!(cmpi(4, 0, -1, I32));
        assert!(cmpi(5, -1, -1, I32));
        assert!(!cmpi(6, -1, 0, I32));
        assert!(cmpi(7, 0, -1, I32));
        assert!(cmpi(8, -1, 0, I32));
        assert!(cmpi(9, -1, -1, I32));
        // i1's 1 is -1 when signed.
        assert!(cmpi(2, 1, 0, I1));
        assert!(cmpi(8, 1, 0, I1));
        // Comparisons read operands in the width.
        assert!(cmpi(0, 256, 0, I8));
        assert!(evaluate("arith.cmpi", None, &[i(0), i(0)], I32, I1).is_err());
        assert!(evaluate("arith.cmpi", Some(10), &[i(0), i(0)], I32, I1).is_err());
    }

    #[test]
    fn float_arithmetic_rounds_to_f32() {
        let third = ev("arith.divf", &[f(1.0), f(3.0)], F32, F32).as_f64();
        assert_eq!(third, (1.0f32 / 3.0f32) as f64);
        assert_ne!(third, 1.0 / 3.0);
        assert_eq!(ev("arith.divf", &[f(1.0), f(3.0)], F64, F64), f(1.0 / 3.0));
        assert_eq!(ev("arith.addf", &[f(16777216.0), f(1.0)], F32, F32), f(16777216.0));
        assert_eq!(ev("arith.addf", &[f(16777216.0), f(1.0)], F64, F64), f(16777217.0));
        assert_eq!(ev("arith.subf", &[f(1.5), f(0.25)], F32, F32), f(1.25));
        assert_eq!(ev("arith.mulf", &[f(1.5), f(4.0)], F32, F32), f(6.0));
        assert_eq!(ev("arith.remf", &[f(7.5), f(2.0)], F32, F32), f(1.5));
        assert_eq!(ev("arith.remf", &[f(-7.5), f(2.0)], F64, F64), f(-1.5));
        assert_eq!(ev("arith.negf", &[f(2.0)], F32, F32), f(-2.0));
        assert!(ev("arith.divf", &[f(0.0), f(0.0)], F32, F32).as_f64().is_nan());
        assert_eq!(ev("arith.divf", &[f(1.0), f(0.0)], F32, F32), f(f64::INFINITY));
        assert!(evaluate("arith.addf", None, &[i(1), i(2)], I32, I32).is_err());
        assert!(evaluate("arith.addi", None, &[f(1.0), f(2.0)], F32, F32).is_err());
    }

    #[test]
    fn float_min_max() {
        assert_eq!(ev("arith.maximumf", &[f(1.0), f(2.0)], F32, F32), f(2.0));
        assert_eq!(ev("arith.minimumf", &[f(1.0), f(2.0)], F32, F32), f(1.0));
        assert!(ev("arith.maximumf", &[f(f64::NAN), f(2.0)], F32, F32).as_f64().is_nan());
        assert!(ev("arith.minimumf", &[f(1.0), f(f64::NAN)], F32, F32).as_f64().is_nan());
        assert!(ev("arith.maximumf", &[f(-0.0), f(0.0)], F32, F32).as_f64().is_sign_positive());
        assert!(ev("arith.minimumf", &[f(0.0), f(-0.0)], F32, F32).as_f64().is_sign_negative());
        assert_eq!(ev("arith.maxnumf", &[f(f64::NAN), f(2.0)], F32, F32), f(2.0));
        assert_eq!(ev("arith.minnumf", &[f(1.0), f(f64::NAN)], F32, F32), f(1.0));
    }

    #[test]
    fn float_comparisons() {
        let nan = f64::NAN;
        assert!(!cmpf(0, 1.0, 1.0));
        assert!(cmpf(1, 1.0, 1.0));
        assert!(cmpf(2, 2.0, 1.0));
        assert!(cmpf(3, 1.0, 1.0));
        assert!(cmpf(4, 1.0, 2.0));
        assert!(cmpf(5, 2.0, 2.0));
        assert!(cmpf(6, 1.0, 2.0));
        assert!(!cmpf(6, nan, 2.0));
        assert!(cmpf(7, 1.0, 2.0));
        assert!(!cmpf(7, nan, 2.0));
        assert!(cmpf(8, nan, 2.0));
        assert!(cmpf(9, nan, 2.0));
        assert!(cmpf(10, 2.0, 2.0));
        assert!(cmpf(11, 1.0, 2.0));
        assert!(cmpf(12, nan, nan));
        assert!(cmpf(13, 1.0, 2.0));
        assert!(!cmpf(13, 2.0, 2.0));
        assert!(cmpf(14, nan, 1.0));
        assert!(!cmpf(14, 1.0, 1.0));
        assert!(cmpf(15, nan, nan));
        for p in 1..=6 {
            assert!(!cmpf(p, nan, 1.0), "ordered predicate {p} on NaN");
        }
    }

    #[test]
    fn math_functions() {
        assert_eq!(ev("math.sqrt", &[f(2.0)], F32, F32), f(2.0f32.sqrt() as f64));
        assert_eq!(ev("math.sqrt", &[f(2.0)], F64, F64), f(2.0f64.sqrt()));
        assert!(ev("math.sqrt", &[f(-1.0)], F32, F32).as_f64().is_nan());
        assert_eq!(ev("math.absf", &[f(-2.5)], F32, F32), f(2.5));
        assert_eq!(ev("math.exp", &[f(1.0)], F32, F32), f(1.0f32.exp() as f64));
        assert_eq!(ev("math.log", &[f(1.0)], F32, F32), f(0.0));
        assert_eq!(ev("math.sin", &[f(0.5)], F64, F64), f(0.5f64.sin()));
        assert_eq!(ev("math.cos", &[f(0.5)], F32, F32), f(0.5f32.cos() as f64));
        assert_eq!(ev("math.tanh", &[f(0.5)], F32, F32), f(0.5f32.tanh() as f64));
        assert_eq!(ev("math.floor", &[f(-1.5)], F32, F32), f(-2.0));
        assert_eq!(ev("math.ceil", &[f(-1.5)], F32, F32), f(-1.0));
        assert_eq!(ev("math.powf", &[f(2.0), f(10.0)], F32, F32), f(1024.0));
        assert!(evaluate("math.sqrt", None, &[f(1.0), f(2.0)], F32, F32).is_err());
        assert!(evaluate("math.bogus", None, &[f(1.0)], F32, F32).is_err());
    }

    #[test]
    fn select_returns_an_operand_unchanged() {
        assert_eq!(ev("arith.select", &[i(1), i(10), i(20)], I32, I32), i(10));
        assert_eq!(ev("arith.select", &[i(0), i(10), i(20)], I32, I32), i(20));
        assert_eq!(ev("arith.select", &[i(1), f(1.5), f(2.5)], F32, F32), f(1.5));
        assert!(evaluate("arith.select", None, &[i(1), i(2)], I32, I32).is_err());
    }

    #[test]
    fn integer_casts() {
        assert_eq!(ev("arith.index_cast", &[i(-1)], I32, Index), i(-1));
        assert_eq!(ev("arith.index_cast", &[i(0x1_0000_0005)], Index, I32), i(5));
        assert_eq!(ev("arith.index_cast", &[i(0xFFFF_FFFF)], Index, I32), i(-1));
        assert_eq!(ev("arith.index_castui", &[i(-1)], I32, Index), i(0xFFFF_FFFF));
        assert_eq!(ev("arith.index_cast", &[i(1)], I1, Index), i(-1));
        assert_eq!(ev("arith.index_castui", &[i(1)], I1, Index), i(1));
        assert_eq!(ev("arith.extsi", &[i(-3)], I8, I32), i(-3));
        assert_eq!(ev("arith.extsi", &[i(1)], I1, I32), i(-1));
        assert_eq!(ev("arith.extui", &[i(-3)], I8, I32), i(253));
        assert_eq!(ev("arith.extui", &[i(1)], I1, I64), i(1));
        assert_eq!(ev("arith.trunci", &[i(0x1234_5678)], I32, I16), i(0x5678));
        assert_eq!(ev("arith.trunci", &[i(0xFF)], I32, I8), i(-1));
        assert_eq!(ev("arith.trunci", &[i(3)], I32, I1), i(1));
        assert_eq!(ev("arith.trunci", &[i(2)], I32, I1), i(0));
        assert!(evaluate("arith.extsi", None, &[i(1)], I8, F32).is_err());
    }

    #[test]
    fn float_int_conversions() {
        assert_eq!(ev("arith.sitofp", &[i(-3)], I32, F32), f(-3.0));
        assert_eq!(ev("arith.sitofp", &[i(1)], I1, F32), f(-1.0));
        assert_eq!(ev("arith.uitofp", &[i(-1)], I8, F32), f(255.0));
        assert_eq!(ev("arith.uitofp", &[i(-1)], I64, F64), f(18446744073709551615.0));
        // One rounding, to f32: 2^24 + 1 is not an f32.
        assert_eq!(ev("arith.sitofp", &[i(16777217)], I32, F32), f(16777216.0));
        assert_eq!(ev("arith.sitofp", &[i(16777217)], I32, F64), f(16777217.0));
        assert_eq!(ev("arith.fptosi", &[f(-3.7)], F32, I32), i(-3));
        assert_eq!(ev("arith.fptosi", &[f(3.7)], F32, I32), i(3));
        // Saturation, NaN to 0.
        assert_eq!(ev("arith.fptosi", &[f(1e10)], F32, I32), i(i32::MAX as i64));
        assert_eq!(ev("arith.fptosi", &[f(-1e10)], F32, I32), i(i32::MIN as i64));
        assert_eq!(ev("arith.fptosi", &[f(300.0)], F32, I8), i(127));
        assert_eq!(ev("arith.fptosi", &[f(f64::NAN)], F32, I32), i(0));
        assert_eq!(ev("arith.fptosi", &[f(1e300)], F64, I64), i(i64::MAX));
        assert_eq!(ev("arith.fptosi", &[f(-1.0)], F32, I1), i(1));
        assert_eq!(ev("arith.fptoui", &[f(300.0)], F32, I8), i(-1));
        assert_eq!(ev("arith.fptoui", &[f(200.0)], F32, I8), i(-56));
        assert_eq!(ev("arith.fptoui", &[f(-5.0)], F32, I32), i(0));
        assert_eq!(ev("arith.fptoui", &[f(4e9)], F64, I32), i(4_000_000_000u32 as i32 as i64));
        assert_eq!(ev("arith.fptoui", &[f(f64::NAN)], F64, I64), i(0));
        assert_eq!(ev("arith.extf", &[f(1.5)], F32, F64), f(1.5));
        assert_eq!(ev("arith.truncf", &[f(0.1)], F64, F32), f(0.1f32 as f64));
        assert_eq!(ev("arith.truncf", &[f(1e300)], F64, F32), f(f64::INFINITY));
        assert!(evaluate("arith.sitofp", None, &[i(1)], I32, I32).is_err());
    }

    #[test]
    fn bitcasts() {
        assert_eq!(ev("arith.bitcast", &[f(1.0)], F32, I32), i(0x3F80_0000));
        assert_eq!(ev("arith.bitcast", &[f(-0.0)], F32, I32), i(i32::MIN as i64));
        assert_eq!(ev("arith.bitcast", &[i(0x3F80_0000)], I32, F32), f(1.0));
        assert_eq!(ev("arith.bitcast", &[i(0xDEAD_BEEFu32 as i32 as i64)], I32, F32).as_f64().to_bits(), {
            (f32::from_bits(0xDEAD_BEEF) as f64).to_bits()
        });
        assert_eq!(ev("arith.bitcast", &[f(1.0)], F64, I64), i(0x3FF0_0000_0000_0000));
        assert_eq!(ev("arith.bitcast", &[i(0x3FF0_0000_0000_0000)], I64, F64), f(1.0));
        assert_eq!(ev("arith.bitcast", &[i(-1)], I64, Index), i(-1));
        let error = evaluate("arith.bitcast", None, &[f(1.0)], F32, I64).unwrap_err();
        assert!(error.contains("width"), "{error}");
    }

    #[test]
    fn decoding_and_helpers() {
        assert_eq!(ScalarOp::from_name("arith.cmpi", Some(2)), Ok(ScalarOp::CmpI(IntPredicate::Slt)));
        assert_eq!(ScalarOp::from_name("arith.cmpf", Some(4)), Ok(ScalarOp::CmpF(FloatPredicate::Olt)));
        assert!(ScalarOp::from_name("arith.cmpf", Some(16)).is_err());
        assert!(ScalarOp::from_name("arith.constant", None).is_err());
        assert!(ScalarOp::is_scalar_op("arith.cmpi"));
        assert!(ScalarOp::is_scalar_op("math.powf"));
        assert!(!ScalarOp::is_scalar_op("buffer.load"));
        for name in ["arith.addi", "arith.bitcast", "math.absi", "arith.cmpf", "arith.maxnumf"] {
            assert_eq!(ScalarOp::from_name(name, Some(1)).unwrap().name(), name);
        }
        assert_eq!(
            evaluate("arith.addi", None, &[i(1)], I32, I32).unwrap_err(),
            "'arith.addi' takes 2 operands, got 1"
        );
        assert_eq!(normalize(i(0x1FF), I8), i(-1));
        assert_eq!(normalize(i(3), I1), i(1));
        assert_eq!(normalize(f(0.1), F32), f(0.1f32 as f64));
        assert_eq!(normalize(i(2), F64), f(2.0));
        assert_eq!(to_bits(i(-1), I16), 0xFFFF);
        assert_eq!(from_bits(0xFFFF, I16), i(-1));
        assert_eq!(from_bits(0xDEAD_BEEF, I32), i(0xDEAD_BEEFu32 as i32 as i64));
        assert_eq!(to_bits(f(1.0), F32), 0x3F80_0000);
        let two = AttributeKind::Float { bits: 2.0f64.to_bits(), ty: hat_ir::Type::from_index(0) };
        assert_eq!(constant_value(&two), Some(f(2.0)));
        assert_eq!(constant_value(&AttributeKind::Unit), None);
    }
}
