//! The allocator's policy for a compiler process (hat-opt, and hat-bench, which includes this
//! file so that its measurements are of the same process).
//!
//! mimalloc gives freed memory back to the operating system (its `purge_delay` option; 1,000 ms
//! by default in the v3 sources built here). A pass that grows large vectors frees the old buffer
//! on every doubling and soon asks for more, so the kernel zeroes fresh pages again and again: at
//! 100,000 dispatches `insert-transfers` spent 0.55 s of 1.7 s in the kernel (`/usr/bin/time`),
//! 0.02 s with purging off. A compiler run is short, so freed memory is kept for the process's
//! life.

use std::os::raw::{c_int, c_long};

extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
    // Used by hat-bench's reports and the test below, not by hat-opt itself.
    #[allow(dead_code)]
    fn mi_option_get(option: c_int) -> c_long;
}

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (the version libmimalloc-sys builds by
/// default; that crate's Rust constants follow v2's numbering, so they cannot be used here).
const PURGE_DELAY: c_int = 15;

/// Keeps freed memory in the process instead of giving it back after a delay.
pub fn keep_freed_memory() {
    // SAFETY: setting an option is allowed at any time; -1 means "never purge".
    unsafe { mi_option_set(PURGE_DELAY, -1) }
}

/// The purge delay in force, in milliseconds (-1: never).
#[allow(dead_code)] // hat-bench reports it; hat-opt only tests it
pub fn purge_delay() -> c_long {
    // SAFETY: reading an option has no precondition.
    unsafe { mi_option_get(PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_option_set_is_the_purge_delay() {
        // Its default in mimalloc's options.c (unless the environment sets it) identifies it.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(super::purge_delay(), 1000);
        }
        super::keep_freed_memory();
        assert_eq!(super::purge_delay(), -1);
    }
}
