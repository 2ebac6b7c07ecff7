//! Device memory of the CPU backend: each buffer is an array of atomic words, one per element
//! (`AtomicU8` for `i1`/`i8`, `AtomicU16`, `AtomicU32`, `AtomicU64`), so that work items on
//! several threads may read and write it at once without undefined behaviour, and atomics are
//! compare-and-swap loops on one element. Plain loads and stores are `Relaxed`: a racy kernel gets
//! some interleaving, never torn elements; a race-free one gets deterministic results.

use crate::eval;
use crate::value::{ElementType, Scalar};
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};

/// The elements of a buffer, one atomic word each.
#[derive(Debug)]
pub(crate) enum Words {
    B1(Box<[AtomicU8]>),
    B2(Box<[AtomicU16]>),
    B4(Box<[AtomicU32]>),
    B8(Box<[AtomicU64]>),
}

/// A buffer in device memory (or in workgroup-local memory).
#[derive(Debug)]
pub(crate) struct Memory {
    pub(crate) element: ElementType,
    pub(crate) shape: Box<[usize]>,
    pub(crate) words: Words,
}

impl Memory {
    /// A buffer of the shape filled with the element type's poison pattern; `Err` when the memory
    /// cannot be had.
    pub(crate) fn try_poisoned(element: ElementType, shape: &[usize]) -> Result<Memory, String> {
        let len = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or("the size overflows")?;
        let mut raw = [0u8; 8];
        let poison = element.poison_bytes();
        raw[..poison.len()].copy_from_slice(&poison);
        let bits = u64::from_le_bytes(raw);
        fn filled<T>(len: usize, make: impl Fn() -> T) -> Result<Box<[T]>, String> {
            let mut words = Vec::new();
            words.try_reserve_exact(len).map_err(|e| e.to_string())?;
            words.extend((0..len).map(|_| make()));
            Ok(words.into_boxed_slice())
        }
        let words = match element.size() {
            1 => Words::B1(filled(len, || AtomicU8::new(bits as u8))?),
            2 => Words::B2(filled(len, || AtomicU16::new(bits as u16))?),
            4 => Words::B4(filled(len, || AtomicU32::new(bits as u32))?),
            _ => Words::B8(filled(len, || AtomicU64::new(bits))?),
        };
        Ok(Memory { element, shape: shape.into(), words })
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        match &self.words {
            Words::B1(w) => w.len(),
            Words::B2(w) => w.len(),
            Words::B4(w) => w.len(),
            Words::B8(w) => w.len(),
        }
    }

    /// Size in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.len() * self.element.size()
    }

    /// The bits of element `i` (which must be in range).
    #[inline]
    pub(crate) fn load_bits(&self, i: usize) -> u64 {
        match &self.words {
            Words::B1(w) => w[i].load(Relaxed) as u64,
            Words::B2(w) => w[i].load(Relaxed) as u64,
            Words::B4(w) => w[i].load(Relaxed) as u64,
            Words::B8(w) => w[i].load(Relaxed),
        }
    }

    /// Sets the bits of element `i` (the low bits of `bits`).
    #[inline]
    pub(crate) fn store_bits(&self, i: usize, bits: u64) {
        match &self.words {
            Words::B1(w) => w[i].store(bits as u8, Relaxed),
            Words::B2(w) => w[i].store(bits as u16, Relaxed),
            Words::B4(w) => w[i].store(bits as u32, Relaxed),
            Words::B8(w) => w[i].store(bits, Relaxed),
        }
    }

    /// Replaces element `i` by `bits` if it still holds `current`; otherwise returns what it holds.
    fn compare_exchange(&self, i: usize, current: u64, bits: u64) -> Result<u64, u64> {
        match &self.words {
            Words::B1(w) => w[i]
                .compare_exchange_weak(current as u8, bits as u8, Relaxed, Relaxed)
                .map(u64::from)
                .map_err(u64::from),
            Words::B2(w) => w[i]
                .compare_exchange_weak(current as u16, bits as u16, Relaxed, Relaxed)
                .map(u64::from)
                .map_err(u64::from),
            Words::B4(w) => w[i]
                .compare_exchange_weak(current as u32, bits as u32, Relaxed, Relaxed)
                .map(u64::from)
                .map_err(u64::from),
            Words::B8(w) => w[i].compare_exchange_weak(current, bits, Relaxed, Relaxed),
        }
    }

    /// Element `i` as a value.
    #[inline]
    pub(crate) fn load(&self, i: usize) -> Scalar {
        eval::from_bits(self.load_bits(i), self.element)
    }

    /// Stores a value into element `i`.
    #[inline]
    pub(crate) fn store(&self, i: usize, value: Scalar) {
        self.store_bits(i, eval::to_bits(value, self.element));
    }

    /// Atomically replaces element `i` by `update(old)` and returns the old value; `update` may
    /// run more than once (it must be pure) and may fail, leaving the element as it was.
    pub(crate) fn update(&self, i: usize, update: impl Fn(Scalar) -> Result<Scalar, String>) -> Result<Scalar, String> {
        let mut current = self.load_bits(i);
        loop {
            let old = eval::from_bits(current, self.element);
            let new = eval::to_bits(update(old)?, self.element);
            match self.compare_exchange(i, current, new) {
                Ok(_) => return Ok(old),
                Err(actual) => current = actual,
            }
        }
    }

    /// Copies `data` into the buffer from byte `offset` (little-endian elements).
    pub(crate) fn write_bytes(&self, offset: usize, data: &[u8]) {
        for span in element_spans(self.element.size(), offset, data.len()) {
            let mut raw = self.load_bits(span.element).to_le_bytes();
            raw[span.within.clone()].copy_from_slice(&data[span.data]);
            self.store_bits(span.element, u64::from_le_bytes(raw));
        }
    }

    /// Copies bytes from byte `offset` of the buffer into `data`.
    pub(crate) fn read_bytes(&self, offset: usize, data: &mut [u8]) {
        for span in element_spans(self.element.size(), offset, data.len()) {
            let raw = self.load_bits(span.element).to_le_bytes();
            data[span.data].copy_from_slice(&raw[span.within]);
        }
    }
}

/// The part of one element that a byte range covers.
struct ElementSpan {
    /// Which element.
    element: usize,
    /// The bytes of the element, relative to its start.
    within: std::ops::Range<usize>,
    /// The same bytes, relative to the start of the range.
    data: std::ops::Range<usize>,
}

/// The elements (of `size` bytes) that bytes `offset..offset + length` touch, in order; the
/// first and last may be partial.
fn element_spans(size: usize, offset: usize, length: usize) -> impl Iterator<Item = ElementSpan> {
    let end = offset + length;
    let mut position = offset;
    std::iter::from_fn(move || {
        if position >= end {
            return None;
        }
        let element = position / size;
        let start = element * size;
        let to = size.min(end - start);
        let span = ElementSpan { element, within: position - start..to, data: position - offset..start + to - offset };
        position = start + to;
        Some(span)
    })
}
