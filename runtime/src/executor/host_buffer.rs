//! [`HostBuffer`]: a buffer's bytes in host memory with its layout — what the caller passes in,
//! what a host function sees, and what comes back.

use crate::error::RuntimeError;
use crate::value::{BufferLayout, ElementType, Scalar};
use hat_ir::Location;
use std::fmt;

/// A buffer in host memory: a layout and its bytes, row-major and little-endian (`i1` as one
/// byte, 0 or 1). `bytes.len()` is `layout.bytes()` in every buffer the executor makes or accepts.
#[derive(Clone, PartialEq, Eq)]
pub struct HostBuffer {
    /// Element type and shape.
    pub layout: BufferLayout,
    /// The elements' bytes.
    pub bytes: Vec<u8>,
}

impl fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostBuffer({:?} {:?}, ", self.layout.element, self.layout.shape)?;
        f.debug_list().entries(self.to_scalars().iter().take(16)).finish()?;
        if self.len() > 16 {
            write!(f, " ... {} elements", self.len())?;
        }
        write!(f, ")")
    }
}

impl HostBuffer {
    /// A buffer of the layout with every byte zero. For a layout from input use
    /// [`HostBuffer::try_zeroed`]: this one aborts when host memory cannot hold it.
    pub fn zeroed(layout: BufferLayout) -> Self {
        let bytes = vec![0; layout.bytes()];
        HostBuffer { layout, bytes }
    }

    /// A buffer of the layout with every byte zero, or [`RuntimeError::HostAllocation`] when its
    /// size overflows or host memory cannot hold it (rather than aborting the process).
    pub fn try_zeroed(layout: BufferLayout) -> Result<Self, RuntimeError> {
        let bytes = try_pattern_bytes(&layout, &[0], "a buffer", Location::UNKNOWN)?;
        Ok(HostBuffer { layout, bytes })
    }

    /// A buffer of the layout filled with the element type's poison pattern
    /// ([`ElementType::poison_bytes`]).
    pub fn poisoned(layout: BufferLayout) -> Self {
        let bytes = poison(&layout);
        HostBuffer { layout, bytes }
    }

    /// A buffer of the layout with every element `value`.
    pub fn filled(layout: BufferLayout, value: Scalar) -> Self {
        let size = layout.element.size();
        let mut element = vec![0; size];
        layout.element.write(value, &mut element);
        let bytes = element.repeat(layout.len());
        HostBuffer { layout, bytes }
    }

    /// A buffer from its elements (converted to the element type as
    /// [`ElementType::write`] does); `None` when their number does not fit the shape.
    pub fn from_scalars(layout: BufferLayout, values: &[Scalar]) -> Option<Self> {
        if values.len() != layout.len() {
            return None;
        }
        let size = layout.element.size();
        let mut bytes = vec![0; layout.bytes()];
        for (value, chunk) in values.iter().zip(bytes.chunks_exact_mut(size)) {
            layout.element.write(*value, chunk);
        }
        Some(HostBuffer { layout, bytes })
    }

    /// A `memref<shape x i32>`; `None` when the number of values does not fit the shape.
    pub fn from_i32(shape: &[usize], values: &[i32]) -> Option<Self> {
        Self::from_bytes(ElementType::I32, shape, values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// A `memref<shape x i64>`; `None` when the number of values does not fit the shape.
    pub fn from_i64(shape: &[usize], values: &[i64]) -> Option<Self> {
        Self::from_bytes(ElementType::I64, shape, values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// A `memref<shape x f32>`; `None` when the number of values does not fit the shape.
    pub fn from_f32(shape: &[usize], values: &[f32]) -> Option<Self> {
        Self::from_bytes(ElementType::F32, shape, values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// A `memref<shape x f64>`; `None` when the number of values does not fit the shape.
    pub fn from_f64(shape: &[usize], values: &[f64]) -> Option<Self> {
        Self::from_bytes(ElementType::F64, shape, values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    fn from_bytes(element: ElementType, shape: &[usize], bytes: Vec<u8>) -> Option<Self> {
        let layout = BufferLayout { element, shape: shape.to_vec() };
        (bytes.len() == layout.bytes()).then_some(HostBuffer { layout, bytes })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.layout.len()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.layout.is_empty()
    }

    /// The elements as scalars (row-major).
    pub fn to_scalars(&self) -> Vec<Scalar> {
        let size = self.layout.element.size();
        self.bytes.chunks_exact(size).map(|chunk| self.layout.element.read(chunk)).collect()
    }

    /// The elements of an `i32` buffer; `None` for another element type.
    pub fn to_i32(&self) -> Option<Vec<i32>> {
        (self.layout.element == ElementType::I32)
            .then(|| self.bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect())
    }

    /// The elements of any integer buffer (`i1` ... `i64`, `index`) as `i64`; `None` for floats.
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        (!self.layout.element.is_float()).then(|| self.to_scalars().into_iter().map(Scalar::as_i64).collect())
    }

    /// The elements of an `f32` buffer; `None` for another element type.
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        (self.layout.element == ElementType::F32)
            .then(|| self.bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect())
    }

    /// The elements of any float buffer as `f64`; `None` for integers.
    pub fn to_f64(&self) -> Option<Vec<f64>> {
        self.layout.element.is_float().then(|| self.to_scalars().into_iter().map(Scalar::as_f64).collect())
    }

    /// The element at `indices`, or `None` when they are out of bounds.
    pub fn get(&self, indices: &[i64]) -> Option<Scalar> {
        let size = self.layout.element.size();
        let flat = self.layout.flatten(indices)?;
        Some(self.layout.element.read(self.bytes.get(flat * size..(flat + 1) * size)?))
    }

    /// Sets the element at `indices`; `false` (and no change) when they are out of bounds.
    pub fn set(&mut self, indices: &[i64], value: Scalar) -> bool {
        let size = self.layout.element.size();
        let Some(flat) = self.layout.flatten(indices) else { return false };
        match self.bytes.get_mut(flat * size..(flat + 1) * size) {
            Some(chunk) => {
                self.layout.element.write(value, chunk);
                true
            }
            None => false,
        }
    }
}

/// The bytes of a buffer of `layout` filled with its poison pattern.
pub(crate) fn poison(layout: &BufferLayout) -> Vec<u8> {
    layout.element.poison_bytes().repeat(layout.len())
}

/// The bytes of a buffer of `layout` (`what` it is, for messages), every element's bytes
/// `pattern` (one byte, repeated, is also accepted), allocated fallibly: [`RuntimeError::HostAllocation`] at `location` when the
/// size overflows or host memory cannot hold it. Every host copy whose size comes from input
/// (a type, an argument) is made here, so no such size aborts the process.
pub(crate) fn try_pattern_bytes(
    layout: &BufferLayout,
    pattern: &[u8],
    what: &str,
    location: Location,
) -> Result<Vec<u8>, RuntimeError> {
    let size = layout.checked_bytes().map_err(|message| RuntimeError::HostAllocation {
        bytes: usize::MAX,
        message: format!("{what} of shape {:?} has {message}", layout.shape),
        location,
    })?;
    if let Some(available) = crate::host_memory::refuses(size as u64) {
        let what = format!("{what} of shape {:?} ({})", layout.shape, crate::eval::type_name(layout.element));
        return Err(RuntimeError::HostMemory { what, bytes: size as u64, available, location });
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size).map_err(|e| RuntimeError::HostAllocation {
        bytes: size,
        message: format!("no host memory for {what} of shape {:?} ({e})", layout.shape),
        location,
    })?;
    match pattern {
        [byte] => bytes.resize(size, *byte),
        _ => {
            for _ in 0..layout.len() {
                bytes.extend_from_slice(pattern);
            }
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        let b = HostBuffer::from_i32(&[2, 2], &[1, 2, 3, 4]).unwrap();
        assert_eq!(b.to_i32(), Some(vec![1, 2, 3, 4]));
        assert_eq!(b.get(&[1, 0]), Some(Scalar::Int(3)));
        assert_eq!(b.get(&[2, 0]), None);
        assert_eq!(b.to_f32(), None);
        assert!(HostBuffer::from_i32(&[3], &[1, 2]).is_none());
        let mut f = HostBuffer::from_f32(&[2], &[0.5, 1.5]).unwrap();
        assert!(f.set(&[1], Scalar::Float(2.5)));
        assert!(!f.set(&[2], Scalar::Float(2.5)));
        assert_eq!(f.to_f32(), Some(vec![0.5, 2.5]));
        let p = HostBuffer::poisoned(BufferLayout { element: ElementType::I32, shape: vec![2] });
        assert_eq!(p.to_i32(), Some(vec![0xDEAD_BEEFu32 as i32; 2]));
        let z = HostBuffer::filled(BufferLayout { element: ElementType::I16, shape: vec![3] }, Scalar::Int(-2));
        assert_eq!(z.to_i64(), Some(vec![-2, -2, -2]));
    }

    #[test]
    fn allocations_sized_by_input_fail_cleanly() {
        let zeroed = HostBuffer::try_zeroed(BufferLayout { element: ElementType::I32, shape: vec![2, 3] }).unwrap();
        assert_eq!(zeroed.to_i32(), Some(vec![0; 6]));
        // 4 PB: more than any host's memory (and any x86-64 address space).
        let error = HostBuffer::try_zeroed(BufferLayout { element: ElementType::I32, shape: vec![1 << 50] });
        let error = error.unwrap_err();
        if crate::host_memory::available().is_some() {
            // Refused before the allocator is asked (crate::host_memory).
            assert!(matches!(error, RuntimeError::HostMemory { bytes: 4503599627370496, .. }), "{error:?}");
            assert!(
                error.to_string().starts_with("a buffer of shape [1125899906842624] (i32) needs 4.50 PB"),
                "{error}"
            );
        } else {
            assert!(matches!(error, RuntimeError::HostAllocation { bytes: 4503599627370496, .. }), "{error:?}");
            assert!(error.to_string().starts_with("host allocation of 4503599627370496 bytes failed"), "{error}");
        }
        // A size that overflows is an error too, with the exact size.
        let error = HostBuffer::try_zeroed(BufferLayout { element: ElementType::I32, shape: vec![usize::MAX / 2, 4] });
        let error = error.unwrap_err().to_string();
        assert!(
            error.contains("has 147573952589676412912 bytes, more than the largest possible allocation"),
            "{error}"
        );
    }
}
