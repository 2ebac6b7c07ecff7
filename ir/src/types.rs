//! Types in MLIR's builtin syntax: integers, floats, `index`, `none`, `memref`, functions, and opaque
//! dialect types (`!dialect.name<...>`), uniqued in the context.

/// A float format.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FloatKind {
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
}

impl FloatKind {
    /// Width in bits.
    pub fn width(self) -> u32 {
        match self {
            FloatKind::F16 | FloatKind::BF16 => 16,
            FloatKind::F32 => 32,
            FloatKind::F64 => 64,
        }
    }

    /// The keyword MLIR spells this format with.
    pub fn keyword(self) -> &'static str {
        match self {
            FloatKind::F16 => "f16",
            FloatKind::BF16 => "bf16",
            FloatKind::F32 => "f32",
            FloatKind::F64 => "f64",
        }
    }
}

/// Signedness of an integer type: `i32` is signless, `si32` signed, `ui32` unsigned.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Signedness {
    /// `iN`.
    Signless,
    /// `siN`.
    Signed,
    /// `uiN`.
    Unsigned,
}

/// A dynamic dimension of a shaped type (`?`).
pub const DYNAMIC: i64 = i64::MIN;

/// The structure of a type. Types are uniqued: compare [`Type`](crate::Type) handles, not these.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// `iN`, `siN`, `uiN`.
    Integer {
        /// Bits.
        width: u32,
        /// Signedness.
        signedness: Signedness,
    },
    /// `f16`, `bf16`, `f32`, `f64`.
    Float(FloatKind),
    /// `index`.
    Index,
    /// `none`.
    None,
    /// `memref<4x?xf32>`; dynamic dimensions are [`DYNAMIC`].
    MemRef {
        /// Dimensions, outermost first.
        shape: Box<[i64]>,
        /// Element type.
        element: crate::Type,
    },
    /// `(i32, f32) -> index`.
    Function {
        /// Argument types.
        inputs: Box<[crate::Type]>,
        /// Result types.
        results: Box<[crate::Type]>,
    },
    /// A dialect type kept as its text, `!dialect.name<...>`, without the `!`.
    Opaque(Box<str>),
}

impl TypeKind {
    /// Whether this is an integer type of any signedness.
    pub fn is_integer(&self) -> bool {
        matches!(self, TypeKind::Integer { .. })
    }

    /// Whether this is an integer or `index`.
    pub fn is_integer_like(&self) -> bool {
        matches!(self, TypeKind::Integer { .. } | TypeKind::Index)
    }

    /// Whether this is a float type.
    pub fn is_float(&self) -> bool {
        matches!(self, TypeKind::Float(_))
    }

    /// Whether this is a memref.
    pub fn is_memref(&self) -> bool {
        matches!(self, TypeKind::MemRef { .. })
    }

    /// Bit width of a scalar type (`index` counts as 64).
    pub fn bit_width(&self) -> Option<u32> {
        match self {
            TypeKind::Integer { width, .. } => Some(*width),
            TypeKind::Float(kind) => Some(kind.width()),
            TypeKind::Index => Some(64),
            _ => None,
        }
    }
}
