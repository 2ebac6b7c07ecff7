//! Scalar values and the types they are computed in.
//!
//! A [`Scalar`] does not carry its type; every operation takes the [`ScalarType`] beside it. A
//! scalar is *normal* for its type when it is what [`normalize`] gives:
//!
//! - an integer of `width` bits (`index`: 64) is `Scalar::Int`, sign-extended from the width,
//!   except `i1`, which is 0 or 1 (MLIR's `true` is `1 : i1`, and that is how constants store it);
//! - an `f64` is `Scalar::Float`; an `f32` is `Scalar::Float` holding a value that `f32`
//!   represents exactly (the widening of an `f32`).
//!
//! Every result of [`crate::semantics::ScalarOp::evaluate`] is normal for its result type, so
//! that equal values are equal scalars (floats: equal bits).

use hat_ir::types::{FloatKind, TypeKind};
use hat_ir::{AttributeKind, Context, Type};
use std::fmt;

/// A scalar value: integers (`iN`, `index`, `i1`) as `i64`, floats (`f32`, `f64`) as `f64`. See
/// the module docs for the normal form of each type.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    /// An integer, `index` or `i1`.
    Int(i64),
    /// A float.
    Float(f64),
}

impl Scalar {
    /// The integer value (floats truncate, as `as` does).
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Int(v) => v,
            Scalar::Float(v) => v as i64,
        }
    }

    /// The float value (integers convert, as `as` does).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Int(v) => v as f64,
            Scalar::Float(v) => v,
        }
    }

    /// Whether two scalars are the same value: integers equal, floats of equal bits (so NaN is
    /// the same as itself, and `-0.0` is not `+0.0`).
    pub fn same_as(self, other: Scalar) -> bool {
        match (self, other) {
            (Scalar::Int(a), Scalar::Int(b)) => a == b,
            (Scalar::Float(a), Scalar::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }

    /// The value of an integer or float attribute as a scalar of type `ty`, normalized; `None`
    /// for other attributes and for an integer attribute of a float type or the reverse.
    pub fn from_attribute(attribute: &AttributeKind, ty: ScalarType) -> Option<Scalar> {
        match attribute {
            AttributeKind::Integer { value, .. } if !ty.is_float() => Some(normalize(Scalar::Int(*value), ty)),
            AttributeKind::Float { bits, .. } if ty.is_float() => {
                Some(normalize(Scalar::Float(f64::from_bits(*bits)), ty))
            }
            _ => None,
        }
    }
}

/// The type a scalar is computed in: a signless integer of 1 to 64 bits, `index` (64 bits), `f32`
/// or `f64`. Other IR types (wider integers, the 16-bit floats) have no `ScalarType`: nothing
/// computes on them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ScalarType(Repr);

/// Private so that an integer's width is always 1 to 64.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Repr {
    Integer(u8),
    Index,
    F32,
    F64,
}

impl ScalarType {
    /// `i1`.
    pub const I1: ScalarType = ScalarType(Repr::Integer(1));
    /// `i8`.
    pub const I8: ScalarType = ScalarType(Repr::Integer(8));
    /// `i16`.
    pub const I16: ScalarType = ScalarType(Repr::Integer(16));
    /// `i32`.
    pub const I32: ScalarType = ScalarType(Repr::Integer(32));
    /// `i64`.
    pub const I64: ScalarType = ScalarType(Repr::Integer(64));
    /// `index`.
    pub const INDEX: ScalarType = ScalarType(Repr::Index);
    /// `f32`.
    pub const F32: ScalarType = ScalarType(Repr::F32);
    /// `f64`.
    pub const F64: ScalarType = ScalarType(Repr::F64);

    /// The integer type of `width` bits, if `width` is 1 to 64.
    pub fn integer(width: u32) -> Option<ScalarType> {
        (1..=64).contains(&width).then_some(ScalarType(Repr::Integer(width as u8)))
    }

    /// The scalar type of an IR type: integers of 1 to 64 bits (any signedness: the ops that
    /// compute on them take signless ones), `index`, `f32`, `f64`.
    pub fn of(ctx: &Context, ty: Type) -> Option<ScalarType> {
        match ctx.type_kind(ty) {
            TypeKind::Integer { width, .. } => ScalarType::integer(*width),
            TypeKind::Index => Some(ScalarType::INDEX),
            TypeKind::Float(FloatKind::F32) => Some(ScalarType::F32),
            TypeKind::Float(FloatKind::F64) => Some(ScalarType::F64),
            _ => None,
        }
    }

    /// Its width in bits (`index`: 64).
    pub fn bits(self) -> u32 {
        match self.0 {
            Repr::Integer(width) => width as u32,
            Repr::Index | Repr::F64 => 64,
            Repr::F32 => 32,
        }
    }

    /// Whether it is `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self.0, Repr::F32 | Repr::F64)
    }

    /// Whether it is an integer type or `index`.
    pub fn is_integer(self) -> bool {
        !self.is_float()
    }

    /// Whether it is `index`.
    pub fn is_index(self) -> bool {
        self.0 == Repr::Index
    }
}

impl fmt::Display for ScalarType {
    /// MLIR's spelling: `i32`, `index`, `f32`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Repr::Integer(width) => write!(f, "i{width}"),
            Repr::Index => f.write_str("index"),
            Repr::F32 => f.write_str("f32"),
            Repr::F64 => f.write_str("f64"),
        }
    }
}

/// Sign-extends the low `bits` bits of `value`; 1-bit values stay 0 or 1, and 64 bits or more
/// keep `value` as it is.
pub fn sign_extend(value: i64, bits: u32) -> i64 {
    match bits {
        1 => value & 1,
        64.. => value,
        0 => value,
        _ => (value << (64 - bits)) >> (64 - bits),
    }
}

/// `value` rounded to `f32`. A NaN keeps its sign and the top of its payload and is quieted, as
/// x86's and Arm's conversions do, written out on the bits: Rust leaves the NaN an `as` cast
/// gives unspecified, and LLVM's constant folder gives another than the instruction does, so
/// the result would depend on how the caller was compiled.
pub fn narrow(value: f64) -> f32 {
    if !value.is_nan() {
        return value as f32;
    }
    let bits = value.to_bits();
    let sign = ((bits >> 63) as u32) << 31;
    let payload = ((bits >> 29) as u32) & 0x007F_FFFF;
    f32::from_bits(sign | 0x7F80_0000 | 0x0040_0000 | payload)
}

/// `value` as an `f64` (exact). A NaN keeps its sign and payload and is quieted (see [`narrow`]).
pub fn widen(value: f32) -> f64 {
    if !value.is_nan() {
        return value as f64;
    }
    let bits = value.to_bits();
    let sign = u64::from(bits >> 31) << 63;
    let payload = u64::from((bits & 0x007F_FFFF) | 0x0040_0000) << 29;
    f64::from_bits(sign | 0x7FF0_0000_0000_0000 | payload)
}

/// `value` as a normal scalar of type `ty` (see the module docs): integers truncated to the width
/// and sign-extended (`i1` to 0 or 1), floats rounded to `f32` for `f32`; an integer converts to
/// a float type and a float to an integer type as `as` does.
pub fn normalize(value: Scalar, ty: ScalarType) -> Scalar {
    match ty.0 {
        Repr::F32 => Scalar::Float(widen(narrow(value.as_f64()))),
        Repr::F64 => Scalar::Float(value.as_f64()),
        _ => Scalar::Int(sign_extend(value.as_i64(), ty.bits())),
    }
}

/// The bit pattern of `value` stored as a `ty`: the low `ty.bits()` bits, the rest zero (see
/// [`from_bits`]).
pub fn to_bits(value: Scalar, ty: ScalarType) -> u64 {
    match ty.0 {
        Repr::F32 => narrow(value.as_f64()).to_bits() as u64,
        Repr::F64 => value.as_f64().to_bits(),
        _ => value.as_i64() as u64 & mask(ty.bits()),
    }
}

/// The normal scalar of type `ty` whose bit pattern is the low `ty.bits()` bits of `bits`.
pub fn from_bits(bits: u64, ty: ScalarType) -> Scalar {
    match ty.0 {
        Repr::F32 => Scalar::Float(widen(f32::from_bits(bits as u32))),
        Repr::F64 => Scalar::Float(f64::from_bits(bits)),
        _ => Scalar::Int(sign_extend(bits as i64, ty.bits())),
    }
}

/// The low `bits` bits set.
pub(crate) fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}
