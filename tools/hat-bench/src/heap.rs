//! Heap accounting for in-process measurements: this binary's global allocator is mimalloc (as
//! `hat-opt`'s is: the planner's many small, short-lived states cost about a sixth less time
//! than with glibc's malloc) wrapped so that, while a [`Window`] is open, it keeps the bytes allocated minus the
//! bytes freed since the window opened and the most that difference reached.
//!
//! The peak is of *net* growth: memory allocated before the window and freed inside it counts
//! negative, so the figure is what the measured code needed beyond what was already live. With
//! no window open the wrapper costs one relaxed atomic load per call, so the other subcommands'
//! figures are not disturbed. Windows do not nest, and the counts are process-wide: the
//! allocations of every thread (the planner plans a function's buffers on rayon's threads)
//! count, in one atomic total.

use mimalloc::MiMalloc as System;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// mimalloc, counting while a window is open.
pub struct Counting;

static OPEN: AtomicBool = AtomicBool::new(false);
static NET: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn grow(bytes: usize) {
    let now = NET.fetch_add(bytes as i64, Ordering::Relaxed) + bytes as i64;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrink(bytes: usize) {
    NET.fetch_sub(bytes as i64, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to mimalloc (`System` here); the wrapper only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System::alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && OPEN.load(Ordering::Relaxed) {
            grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && OPEN.load(Ordering::Relaxed) {
            grow(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        if OPEN.load(Ordering::Relaxed) {
            shrink(layout.size());
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; `new_size` is the caller's, checked by its contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && OPEN.load(Ordering::Relaxed) {
            if new_size >= layout.size() {
                grow(new_size - layout.size());
            } else {
                shrink(layout.size() - new_size);
            }
        }
        p
    }
}

/// An open measurement window; [`Window::close`] gives the peak net growth.
pub struct Window(());

impl Window {
    /// Starts counting from zero.
    pub fn open() -> Window {
        NET.store(0, Ordering::Relaxed);
        PEAK.store(0, Ordering::Relaxed);
        OPEN.store(true, Ordering::SeqCst);
        Window(())
    }

    /// Stops counting; the most bytes that were live at once beyond those live at the start.
    pub fn close(self) -> u64 {
        OPEN.store(false, Ordering::SeqCst);
        PEAK.load(Ordering::Relaxed).max(0) as u64
    }
}

/// The process's peak resident set so far (`VmHWM` of `/proc/self/status`), in KiB, where Linux
/// tells it.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_sees_what_is_allocated_inside_it() {
        // Other tests run on other threads meanwhile, and the window counts every thread: their
        // frees of memory allocated before it count negative (CI once saw 1 MiB - 608 bytes for
        // a 1 MiB vector). So the vector is 16 MiB, and the bounds leave them 1 MiB either way.
        let window = Window::open();
        let big = vec![1u8; 16 << 20];
        drop(big);
        let peak = window.close();
        assert!(peak >= 15 << 20, "{peak}");
        assert!(peak < 64 << 20, "{peak}");
        assert!(peak_rss_kib().is_some_and(|kib| kib > 0));
    }
}
