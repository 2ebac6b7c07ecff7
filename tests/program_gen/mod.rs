//! A generator of random hat compute programs, for the differential test of the transfer
//! strategies (`tests/transfer_differential.rs`) and for benchmarks of the transfer analyses.
//!
//! A [`Case`] is a program (as data, [`ast`]) and the arguments to run its `@main` with.
//! [`generate_case`] makes one from a seed; [`render`] writes its hat text; [`check`] says
//! whether one is well formed; [`shrink`] makes a failing one smaller. Every well-formed case is
//! deterministic and defined under the reference semantics: its kernels are race free even
//! when arguments alias, every buffer born in it is written whole before anything reads it,
//! and every loop ends. So a correct transfer plan must give exactly the reference results,
//! and any difference is a bug in the plan.
//!
//! The module uses only `std`, so a benchmark can include it with
//! `#[allow(dead_code)] #[path = "../../tests/program_gen/mod.rs"] mod program_gen;` (it uses
//! only part of it) and call [`generate`]: `generate(seed, 100_000)` takes about 40 s in a
//! debug build and is linear in `size`.

pub mod ast;
pub mod check;
pub mod constructs;
pub mod features;
pub mod generate;
pub mod render;
pub mod rng;
pub mod shrink;

pub use ast::Effect;
pub use constructs::{Construct, Constructs};
pub use generate::{differential_case, generate_case, Config};
pub use render::{numbered, render};
pub use shrink::shrink;

/// The hat text of the random program for `seed` with about `size` dispatches over
/// `size.clamp(2, 1000)` buffer arguments (see [`Config::sized`]).
pub fn generate(seed: u64, size: usize) -> String {
    render(&generate_case(seed, &Config::sized(size)).program)
}
