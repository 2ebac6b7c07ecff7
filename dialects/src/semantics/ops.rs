//! [`ScalarOp`]: the scalar ops of `arith` and `math`, decoded from an op's name and predicate
//! once, so that whoever computes (an executor, a backend, a folder) matches an enum instead of
//! strings. What each op computes is in `evaluate.rs`.

use super::error::ScalarError;
use super::predicate::{FloatPredicate, IntPredicate};
use hat_ir::{Context, Op};

/// A decoded scalar op of `arith` or `math`: every op of those dialects but `arith.constant`,
/// whose value is an attribute ([`super::Scalar::from_attribute`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // Each variant is the op of the same name: `AddI` is `arith.addi`.
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

/// Which operand types an op takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OperandClass {
    /// Integers and `index`.
    Integer,
    /// Floats.
    Float,
    /// Any scalar (`select`, `bitcast`).
    Any,
}

impl ScalarOp {
    /// Every op but the comparisons (which carry a predicate: see [`IntPredicate::ALL`] and
    /// [`FloatPredicate::ALL`]).
    pub const WITHOUT_PREDICATE: [ScalarOp; 53] = {
        use ScalarOp::*;
        [
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
            AbsI,
            Select,
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
        ]
    };

    /// Decodes `op` from its name and, for `arith.cmpi`/`arith.cmpf`, its `predicate` attribute.
    pub fn decode(ctx: &Context, op: Op) -> Result<ScalarOp, ScalarError> {
        ScalarOp::from_name(ctx.name_str(op), crate::arith::predicate(ctx, op))
    }

    /// Decodes an op name (`arith.addi`, `math.sqrt`, ...); `predicate` is the `predicate`
    /// attribute of `arith.cmpi`/`arith.cmpf` (ignored by the other ops). The error names what is
    /// wrong: an unknown op, a missing or out-of-range predicate.
    pub fn from_name(name: &str, predicate: Option<i64>) -> Result<ScalarOp, ScalarError> {
        let compare = |op: &'static str| predicate.ok_or(ScalarError::MissingPredicate { op });
        match name {
            "arith.cmpi" => {
                let p = compare(CMPI)?;
                IntPredicate::from_i64(p)
                    .map(ScalarOp::CmpI)
                    .ok_or(ScalarError::PredicateOutOfRange { op: CMPI, predicate: p })
            }
            "arith.cmpf" => {
                let p = compare(CMPF)?;
                FloatPredicate::from_i64(p)
                    .map(ScalarOp::CmpF)
                    .ok_or(ScalarError::PredicateOutOfRange { op: CMPF, predicate: p })
            }
            _ => ScalarOp::WITHOUT_PREDICATE
                .into_iter()
                .find(|op| op.name() == name)
                .ok_or_else(|| ScalarError::UnknownOp { name: name.to_string() }),
        }
    }

    /// Whether `name` is an op that [`ScalarOp::from_name`] decodes.
    pub fn is_scalar_op(name: &str) -> bool {
        matches!(name, "arith.cmpi" | "arith.cmpf") || ScalarOp::WITHOUT_PREDICATE.iter().any(|op| op.name() == name)
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
            CmpI(_) => CMPI,
            CmpF(_) => CMPF,
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

    /// Whether the op can fail on operands of the right types: integer division and remainder
    /// by zero ([`ScalarError::DivisionByZero`]).
    pub fn can_fail(self) -> bool {
        use ScalarOp::*;
        matches!(self, DivSI | DivUI | CeilDivSI | FloorDivSI | RemSI | RemUI)
    }

    /// The operand types the op takes (for `select`, the values it chooses between; for a cast,
    /// its source).
    pub fn operand_class(self) -> OperandClass {
        use ScalarOp::*;
        match self {
            AddI | SubI | MulI | DivSI | DivUI | CeilDivSI | FloorDivSI | RemSI | RemUI | AndI | OrI | XorI | ShLI
            | ShRSI | ShRUI | MaxSI | MinSI | MaxUI | MinUI | AbsI | CmpI(_) | IndexCast | IndexCastUI | ExtSI
            | ExtUI | TruncI | SIToFP | UIToFP => OperandClass::Integer,
            AddF | SubF | MulF | DivF | RemF | MaximumF | MinimumF | MaxNumF | MinNumF | PowF | NegF | Sqrt | AbsF
            | Exp | Log | Sin | Cos | Tanh | Floor | Ceil | CmpF(_) | FPToSI | FPToUI | ExtF | TruncF => {
                OperandClass::Float
            }
            Select | Bitcast => OperandClass::Any,
        }
    }
}

const CMPI: &str = "arith.cmpi";
const CMPF: &str = "arith.cmpf";
