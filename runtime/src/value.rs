//! Runtime values: scalars, element types and buffer shapes, shared by the host executor and
//! every backend. [`Scalar`] and what it means to compute on one are `hat_dialects::semantics`'s;
//! an [`ElementType`] is how the runtime stores a scalar, and converts to the
//! [`ScalarType`] it is computed in.

use hat_dialects::semantics::ScalarType;
pub use hat_dialects::semantics::{sign_extend, Scalar};
use hat_ir::types::{FloatKind, TypeKind};
use hat_ir::{Context, Type};

/// The type of a buffer element or a scalar as the runtime stores it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// `i1`, stored in one byte (0 or 1).
    I1,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `index`, stored as a signed 64-bit integer.
    Index,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl ElementType {
    /// The element type of an IR scalar type, if the runtime supports it.
    pub fn of(ctx: &Context, ty: Type) -> Option<ElementType> {
        Some(match ctx.type_kind(ty) {
            TypeKind::Integer { width: 1, .. } => ElementType::I1,
            TypeKind::Integer { width: 8, .. } => ElementType::I8,
            TypeKind::Integer { width: 16, .. } => ElementType::I16,
            TypeKind::Integer { width: 32, .. } => ElementType::I32,
            TypeKind::Integer { width: 64, .. } => ElementType::I64,
            TypeKind::Index => ElementType::Index,
            TypeKind::Float(FloatKind::F32) => ElementType::F32,
            TypeKind::Float(FloatKind::F64) => ElementType::F64,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ElementType::I1 | ElementType::I8 => 1,
            ElementType::I16 => 2,
            ElementType::I32 | ElementType::F32 => 4,
            ElementType::I64 | ElementType::Index | ElementType::F64 => 8,
        }
    }

    /// Whether it is a float type.
    pub fn is_float(self) -> bool {
        matches!(self, ElementType::F32 | ElementType::F64)
    }

    /// Bits of an integer type (`index` counts as 64).
    pub fn bits(self) -> u32 {
        match self {
            ElementType::I1 => 1,
            ElementType::I8 => 8,
            ElementType::I16 => 16,
            ElementType::I32 | ElementType::F32 => 32,
            ElementType::I64 | ElementType::Index | ElementType::F64 => 64,
        }
    }

    /// The type the element is computed in.
    pub fn scalar_type(self) -> ScalarType {
        match self {
            ElementType::I1 => ScalarType::I1,
            ElementType::I8 => ScalarType::I8,
            ElementType::I16 => ScalarType::I16,
            ElementType::I32 => ScalarType::I32,
            ElementType::I64 => ScalarType::I64,
            ElementType::Index => ScalarType::INDEX,
            ElementType::F32 => ScalarType::F32,
            ElementType::F64 => ScalarType::F64,
        }
    }

    /// Reads one element from little-endian bytes.
    pub fn read(self, bytes: &[u8]) -> Scalar {
        let mut buffer = [0u8; 8];
        buffer[..self.size()].copy_from_slice(&bytes[..self.size()]);
        let raw = u64::from_le_bytes(buffer);
        match self {
            ElementType::F32 => Scalar::Float(hat_dialects::semantics::widen(f32::from_bits(raw as u32))),
            ElementType::F64 => Scalar::Float(f64::from_bits(raw)),
            ElementType::I1 => Scalar::Int((raw & 1) as i64),
            _ => Scalar::Int(sign_extend(raw as i64, self.bits())),
        }
    }

    /// Writes one element as little-endian bytes.
    pub fn write(self, value: Scalar, bytes: &mut [u8]) {
        let raw: u64 = match (self, value) {
            (ElementType::F32, v) => hat_dialects::semantics::narrow(v.as_f64()).to_bits() as u64,
            (ElementType::F64, v) => v.as_f64().to_bits(),
            (_, v) => v.as_i64() as u64,
        };
        bytes[..self.size()].copy_from_slice(&raw.to_le_bytes()[..self.size()]);
    }

    /// The poison pattern a fresh device buffer is filled with: NaN for floats, 0xDEADBEEF
    /// (repeated or truncated to the width) for integers.
    pub fn poison_bytes(self) -> Vec<u8> {
        match self {
            ElementType::F32 => f32::NAN.to_bits().to_le_bytes().to_vec(),
            ElementType::F64 => f64::NAN.to_bits().to_le_bytes().to_vec(),
            _ => 0xDEAD_BEEF_DEAD_BEEFu64.to_le_bytes()[..self.size()].to_vec(),
        }
    }
}

impl From<ElementType> for ScalarType {
    fn from(element: ElementType) -> ScalarType {
        element.scalar_type()
    }
}

/// A buffer's element type and shape (row-major), as its `memref` type gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferLayout {
    /// Element type.
    pub element: ElementType,
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
}

/// The most bytes one buffer can have: the largest allocation Rust (and C's `malloc`) can make.
/// A layout larger than this is refused by [`BufferLayout::checked_bytes`] before anything is
/// allocated.
pub const MAX_BUFFER_BYTES: usize = isize::MAX as usize;

impl BufferLayout {
    /// Number of elements; `usize::MAX` when the product overflows (a layout that
    /// [`BufferLayout::checked_bytes`] refuses), so that it never wraps to a small size.
    pub fn len(&self) -> usize {
        self.shape.iter().fold(1usize, |total, &extent| total.saturating_mul(extent))
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size in bytes; `usize::MAX` when it overflows, as [`BufferLayout::len`].
    pub fn bytes(&self) -> usize {
        self.len().saturating_mul(self.element.size())
    }

    /// Size in bytes, or what is wrong when no buffer can be that large (more than
    /// [`MAX_BUFFER_BYTES`]): the message gives the exact size (`147573952589676412912 bytes, more
    /// than ...`), so that a caller can prefix the type and the place.
    pub fn checked_bytes(&self) -> Result<usize, String> {
        if self.shape.contains(&0) {
            return Ok(0);
        }
        let exact =
            self.shape.iter().try_fold(self.element.size() as u128, |total, &extent| total.checked_mul(extent as u128));
        let limit = format!("more than the largest possible allocation ({MAX_BUFFER_BYTES} bytes)");
        match exact {
            Some(bytes) if bytes <= MAX_BUFFER_BYTES as u128 => Ok(bytes as usize),
            Some(bytes) => Err(format!("{bytes} bytes, {limit}")),
            None => Err(format!("over 2^128 bytes, {limit}")),
        }
    }

    /// The flat (row-major) index of `indices`, or `None` when any is out of bounds.
    pub fn flatten(&self, indices: &[i64]) -> Option<usize> {
        if indices.len() != self.shape.len() {
            return None;
        }
        let mut flat = 0usize;
        for (&index, &extent) in indices.iter().zip(&self.shape) {
            if index < 0 || index as usize >= extent {
                return None;
            }
            flat = flat * extent + index as usize;
        }
        Some(flat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_checked_not_wrapped() {
        let layout = |element, shape: &[usize]| BufferLayout { element, shape: shape.to_vec() };
        assert_eq!(layout(ElementType::I32, &[3, 4]).checked_bytes(), Ok(48));
        assert_eq!(layout(ElementType::I32, &[usize::MAX, 0]).checked_bytes(), Ok(0));
        let overflowing = layout(ElementType::I32, &[9223372036854775807, 4]);
        assert_eq!(
            overflowing.checked_bytes(),
            Err("147573952589676412912 bytes, more than the largest possible allocation (9223372036854775807 bytes)"
                .to_string())
        );
        // The unchecked sizes saturate rather than wrap (or panic).
        assert_eq!(overflowing.len(), usize::MAX);
        assert_eq!(overflowing.bytes(), usize::MAX);
        let huge = layout(ElementType::F64, &[usize::MAX; 4]);
        assert!(huge.checked_bytes().unwrap_err().starts_with("over 2^128 bytes"));
        // The largest size allowed is allowed.
        assert_eq!(layout(ElementType::I8, &[MAX_BUFFER_BYTES]).checked_bytes(), Ok(MAX_BUFFER_BYTES));
        assert!(layout(ElementType::I16, &[MAX_BUFFER_BYTES]).checked_bytes().is_err());
    }
}
