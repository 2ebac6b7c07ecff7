//! [`ChunkedVec`]: the storage of the context's largest arenas (ops, values).
//!
//! A `Vec` that doubles copies everything it holds each time and leaves the old buffer behind: a
//! pass that adds ops to a large module (placing transfers, inlining) then pays for a copy of
//! the whole op arena and for fresh memory twice its size. Here the entries live in chunks of a
//! fixed size that never move: pushing costs no copy, and the memory touched is the entries'.

use std::ops::{Index, IndexMut};

/// Entries per chunk (a power of two).
const CHUNK_BITS: u32 = 13;
const CHUNK: usize = 1 << CHUNK_BITS;
const MASK: usize = CHUNK - 1;

/// A growable array of `T` in fixed-size chunks that never move. See the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct ChunkedVec<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for ChunkedVec<T> {
    fn default() -> Self {
        ChunkedVec { chunks: Vec::new(), len: 0 }
    }
}

impl<T> ChunkedVec<T> {
    /// An empty array.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// How many entries it holds.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `value`.
    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        if self.len & MASK == 0 {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let chunk = self.chunks.last_mut().expect("a chunk with room");
        chunk.push(value);
        self.len += 1;
    }
}

impl<T> Index<usize> for ChunkedVec<T> {
    type Output = T;

    #[inline]
    fn index(&self, index: usize) -> &T {
        &self.chunks[index >> CHUNK_BITS][index & MASK]
    }
}

impl<T> IndexMut<usize> for ChunkedVec<T> {
    #[inline]
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self.chunks[index >> CHUNK_BITS][index & MASK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_their_index_across_chunks() {
        let mut v = ChunkedVec::new();
        for i in 0..(3 * CHUNK + 5) {
            v.push(i);
        }
        assert_eq!(v.len(), 3 * CHUNK + 5);
        for i in [0, 1, CHUNK - 1, CHUNK, 2 * CHUNK + 7, 3 * CHUNK + 4] {
            assert_eq!(v[i], i);
        }
        v[CHUNK] = 0;
        assert_eq!(v[CHUNK], 0);
    }
}
