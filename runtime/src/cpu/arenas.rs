//! The CPU backend's arenas ([`Backend::allocate_arena`](crate::Backend::allocate_arena)): each
//! window has memory of its own, and the arena keeps the byte range each window in use takes,
//! so that a window placed over one still in use — a memory plan that reuses memory too early —
//! is an error naming both ranges rather than data corrupted somewhere later. A new window
//! starts poisoned, as a fresh buffer does: a plan that let a buffer see what a dead one left
//! would show it as poison.

use crate::backend::DeviceBuffer;
use crate::error::RuntimeError;
use rustc_hash::FxHashMap;
use std::ops::Range;

/// The arenas and their windows in use.
#[derive(Debug, Default)]
pub(crate) struct Arenas {
    /// Per arena: its size and the windows in use, with their byte ranges.
    arenas: FxHashMap<DeviceBuffer, Arena>,
    /// Per window in use: its arena.
    windows: FxHashMap<DeviceBuffer, DeviceBuffer>,
}

#[derive(Debug)]
struct Arena {
    bytes: usize,
    windows: Vec<(DeviceBuffer, Range<usize>)>,
}

/// The alignment of windows in an arena (the contract's).
pub(crate) const WINDOW_ALIGNMENT: usize = 256;

impl Arenas {
    /// Notes a new arena of `bytes`.
    pub(crate) fn add(&mut self, arena: DeviceBuffer, bytes: usize) {
        self.arenas.insert(arena, Arena { bytes, windows: Vec::new() });
    }

    /// Checks that a window of `bytes` at `offset` fits in `arena` over no window in use.
    pub(crate) fn check(&self, arena: DeviceBuffer, offset: usize, bytes: usize) -> Result<Range<usize>, RuntimeError> {
        let found = self.arenas.get(&arena).ok_or_else(|| {
            RuntimeError::Backend(format!("a window asked of buffer #{}, which is not an arena", arena.index()))
        })?;
        let range = offset..offset.saturating_add(bytes);
        if !offset.is_multiple_of(WINDOW_ALIGNMENT) || range.end > found.bytes {
            return Err(RuntimeError::Backend(format!(
                "a window of bytes {}..{} in an arena of {} bytes (windows are within it, at multiples of {WINDOW_ALIGNMENT})",
                range.start, range.end, found.bytes
            )));
        }
        if let Some((_, taken)) = found.windows.iter().find(|(_, r)| r.start < range.end && range.start < r.end) {
            return Err(RuntimeError::Backend(format!(
                "the memory plan places a buffer at bytes {}..{} of its arena, over the buffer at bytes {}..{}, \
                 which is still in use",
                range.start, range.end, taken.start, taken.end
            )));
        }
        Ok(range)
    }

    /// Notes `window`, at `range` of `arena` (as [`Arenas::check`] found it).
    pub(crate) fn place(&mut self, arena: DeviceBuffer, window: DeviceBuffer, range: Range<usize>) {
        if let Some(found) = self.arenas.get_mut(&arena) {
            found.windows.push((window, range));
            self.windows.insert(window, arena);
        }
    }

    /// Forgets `buffer` if it is a window or an arena; the windows of an arena that is freed
    /// (their memory is the caller's to free).
    pub(crate) fn forget(&mut self, buffer: DeviceBuffer) -> Vec<DeviceBuffer> {
        if let Some(arena) = self.windows.remove(&buffer) {
            if let Some(found) = self.arenas.get_mut(&arena) {
                found.windows.retain(|(w, _)| *w != buffer);
            }
            return Vec::new();
        }
        match self.arenas.remove(&buffer) {
            Some(found) => {
                let windows: Vec<DeviceBuffer> = found.windows.into_iter().map(|(w, _)| w).collect();
                for window in &windows {
                    self.windows.remove(window);
                }
                windows
            }
            None => Vec::new(),
        }
    }
}
