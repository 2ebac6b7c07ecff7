//! The allocator's policy for a compiler process (hat-opt, vendor-opt, and hat-bench, which uses
//! it so that its measurements are of the same process).
//!
//! mimalloc gives freed memory back to the operating system (its `purge_delay` option; 1,000 ms
//! by default in the v3 sources built here). A pass that grows large vectors frees the old buffer
//! on every doubling and soon asks for more, so the kernel zeroes fresh pages again and again: at
//! 100,000 dispatches `insert-transfers` spent 0.55 s of 1.7 s in the kernel (`/usr/bin/time`),
//! 0.02 s with purging off. A compiler run is short, so freed memory is kept for the process's
//! life.
//!
//! Nor does it ask for transparent huge pages: with them (mimalloc's default, where the kernel's
//! THP mode is `madvise`) every first touch of a 2 MiB region zeroes all of it, though the
//! planner's arenas are used sparsely: at 100,000 dispatches `insert-transfers` spent 0.96 s in
//! the kernel with them (587 faults, about 1.2 GB zeroed for a 470 MB peak), 0.19 s without
//! (76,000 faults of 4 KiB pages).

use std::os::raw::{c_int, c_long};

/// The allocator whose options these are: a tool's binary makes it the global allocator
/// (`#[global_allocator] static A: hat_opt::allocator_policy::MiMalloc = ...;`) and calls
/// [`keep_freed_memory`] first thing (hat-opt's and vendor-opt's `main` do).
pub use mimalloc::MiMalloc;

extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
    // Used by hat-bench's reports and the test below, not by hat-opt itself.
    fn mi_option_get(option: c_int) -> c_long;
}

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (the version libmimalloc-sys builds by
/// default; that crate's Rust constants follow v2's numbering, so they cannot be used here).
const PURGE_DELAY: c_int = 15;

/// `mi_option_allow_thp` in the same enumeration (read once, when mimalloc starts: reported,
/// not set; the process opts out of huge pages itself, below).
const ALLOW_THP: c_int = 43;

/// Keeps freed memory in the process instead of giving it back after a delay, in pages of the
/// ordinary size.
pub fn keep_freed_memory() {
    // SAFETY: setting an option is allowed at any time; -1 means "never purge".
    unsafe { mi_option_set(PURGE_DELAY, -1) }
    // SAFETY: PR_SET_THP_DISABLE takes an integer flag and no pointer; it applies to the whole
    // process, its mappings made so far included. Where the kernel lacks it, nothing changes.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Whether the kernel will give this process transparent huge pages (`PR_GET_THP_DISABLE`).
pub fn huge_pages_disabled() -> bool {
    // SAFETY: PR_GET_THP_DISABLE takes no argument.
    #[cfg(target_os = "linux")]
    return unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) } == 1;
    #[cfg(not(target_os = "linux"))]
    return false;
}

/// The purge delay in force, in milliseconds (-1: never).
pub fn purge_delay() -> c_long {
    // SAFETY: reading an option has no precondition.
    unsafe { mi_option_get(PURGE_DELAY) }
}

/// Whether mimalloc asks for transparent huge pages (1) or not (0).
pub fn allow_thp() -> c_long {
    // SAFETY: reading an option has no precondition.
    unsafe { mi_option_get(ALLOW_THP) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_option_set_is_the_purge_delay() {
        // Its default in mimalloc's options.c (unless the environment sets it) identifies it.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(super::purge_delay(), 1000);
        }
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            assert_eq!(super::allow_thp(), 1, "allow_thp's default (1) identifies the option");
        }
        super::keep_freed_memory();
        assert_eq!(super::purge_delay(), -1);
        #[cfg(target_os = "linux")]
        assert!(super::huge_pages_disabled());
    }
}
