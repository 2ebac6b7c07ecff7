//! The dialects hat's tests use to stand for a vendor's: each defined once, with nothing but
//! `hat-ir`'s public API, so that a test shows what a vendor outside hat's crates can do.
//!
//! - [`vendor`]: host functions, calls, a counted loop and a branch with layouts unlike `func`'s
//!   and `scf`'s;
//! - [`dev`]: device (and host) functions, a call, a counted loop with reversed bounds, a
//!   do-while loop and a conditional, for kernels.

pub mod dev;
pub mod vendor;
