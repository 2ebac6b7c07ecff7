//! Attributes in MLIR's builtin syntax, uniqued in the context.

use crate::{Attribute, Ident, Type};

/// The structure of an attribute. Attributes are uniqued: compare [`Attribute`] handles.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttributeKind {
    /// `unit`, or a dictionary key with no value.
    Unit,
    /// `42 : i32`; the value is sign-extended from the type's width.
    Integer {
        /// The value.
        value: i64,
        /// An integer or `index` type.
        ty: Type,
    },
    /// `1.5 : f32`; the value is kept as the bits of an `f64`.
    Float {
        /// `f64::to_bits` of the value.
        bits: u64,
        /// A float type.
        ty: Type,
    },
    /// `"text"`.
    String(Box<str>),
    /// `[a, b]`.
    Array(Box<[Attribute]>),
    /// `{a = 1, b}`, sorted by key.
    Dictionary(Box<[(Ident, Attribute)]>),
    /// `@root::@nested`.
    SymbolRef(Box<[Ident]>),
    /// A type used as an attribute: `i32`, `(i32) -> ()`.
    Type(Type),
    /// `array<i64: 1, 2>`.
    DenseArray {
        /// An integer element type.
        element: Type,
        /// The elements.
        values: Box<[i64]>,
    },
    /// A dialect attribute kept as its text, `#dialect.name<...>`, without the `#`.
    Opaque(Box<str>),
}

impl AttributeKind {
    /// The float value of a float attribute.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            AttributeKind::Float { bits, .. } => Some(f64::from_bits(*bits)),
            _ => None,
        }
    }

    /// The value of an integer attribute.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            AttributeKind::Integer { value, .. } => Some(*value),
            _ => None,
        }
    }

    /// The text of a string attribute.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttributeKind::String(s) => Some(s),
            _ => None,
        }
    }
}

/// Sign-extends `value` from `width` bits (widths of 64 and more are kept as they are). `i1` is
/// kept as 0 or 1: MLIR's `true` is `1 : i1`.
pub fn sign_extend(value: i64, width: u32) -> i64 {
    if width == 1 {
        return value & 1;
    }
    if width == 0 || width >= 64 {
        return value;
    }
    let shift = 64 - width;
    (value << shift) >> shift
}
