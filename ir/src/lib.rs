//! The hat IR core: an MLIR-style IR in Rust.
//!
//! A [`Context`] owns every operation, block, region and value in arenas addressed by typed
//! handles ([`Op`], [`Block`], [`Region`], [`Value`]), and uniques types, attributes and
//! identifiers. Dialects register [`OpDefinition`]s (traits, verifier, memory effects, custom
//! syntax); nothing in the core names a particular dialect except `builtin.module`, the implicit
//! top-level op. Text goes in through [`parse_source`] and out through [`print_op`]; [`verify`]
//! checks a tree and reports every error as a [`Diagnostic`] with `file:line:col`, and
//! [`verify_module`] gives a [`Verified`] token, the proof that the executor and backends require.
#![deny(missing_docs)]

pub mod analysis;
mod arena;
pub mod attributes;
mod context;
pub mod diagnostics;
pub mod dialect;
pub mod effects;
mod entity;
pub mod interfaces;
mod interner;
pub mod location;
pub mod parser;
pub mod pass;
pub mod printer;
pub mod rewrite;
pub mod side_table;
pub mod types;
pub mod verifier;
pub mod view;

pub use attributes::AttributeKind;
pub use context::{BlockOps, Context, OperationState, ValueDef};
pub use diagnostics::{Diagnostic, Severity};
pub use dialect::{OpDefinition, OpTraits};
pub use effects::{EffectKind, EffectTarget, Extent, MemoryEffect, MemoryEffects, MemorySpace};
pub use entity::{Attribute, Block, Ident, Op, OpName, Region, Type, Value};
pub use location::{Location, SourceMap};
pub use parser::{parse_bytes, parse_owned_bytes, parse_source, OpParser, ParseError, ParseResult};
pub use printer::{print_op, print_op_to, OpPrinter, PrintOptions};
pub use side_table::{IndexWindow, SideTable};
pub use types::TypeKind;
pub use verifier::{verify, verify_detailed, verify_module, Verification, Verified, VerifyContext};
