//! The bridge between hat and MLIR, through melior (LLVM 22's MLIR C API).
//!
//! - [`export::export`] (`hat-opt --to-mlir`): a hat module as a lossless MLIR module, verified
//!   by MLIR; [`irdl::IRDL`] (`--to-mlir-irdl`) declares hat's `buffer` dialect to MLIR.
//! - [`import::import`] (`--from-mlir`): MLIR text as a hat module.
//!
//! Nothing in hat depends on this crate: `hat-opt` compiles it in only under its `mlir` feature,
//! so that building hat never needs LLVM. The crate's own `mlir` feature gates everything that
//! links MLIR (`cargo test -p hat-mlir --features mlir`); without it only the plain-Rust parts
//! ([`generic_text`], [`irdl`]) are built, so `cargo test --workspace` needs no LLVM. See
//! docs/mlir.md.

#![deny(missing_docs)]

#[cfg(feature = "mlir")]
pub mod dead_copies;
#[cfg(feature = "mlir")]
pub mod export;
pub mod generic_text;
#[cfg(feature = "mlir")]
pub mod import;
pub mod irdl;
#[cfg(feature = "mlir")]
pub mod locations;
#[cfg(feature = "mlir")]
pub mod session;
#[cfg(feature = "mlir")]
pub mod upstream;
#[cfg(feature = "mlir")]
pub mod upstream_import;
