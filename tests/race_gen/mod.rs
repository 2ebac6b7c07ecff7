//! Random kernels for the race tests: those of `tests/kernel_gen` (loads from `%src`, a store
//! into `%dst`, at indices affine in the ids, through divisions, clamps, loaded data, guards,
//! loops and helpers), in three variants:
//! - [`Variant::Plain`]: as generated (races only between stores to `%dst`);
//! - [`Variant::InPlace`]: the load reads `%dst` (same shape as `%src`), so a work item may read
//!   what another stores;
//! - [`Variant::Local`]: the store (and, with `in_place`, the load) goes to workgroup memory
//!   of `%dst`'s type instead, then nothing orders the accesses within a workgroup (the
//!   generator's barrier, when there is one, comes before every access).

#![allow(dead_code)]

use crate::kernel_gen::{case, kernel_text, Case};
use proptest::prelude::*;

/// Where the kernel's accesses go.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Variant {
    Plain,
    InPlace,
    Local,
}

/// A generated kernel for the race tests.
#[derive(Clone, Debug)]
pub struct RaceCase {
    pub case: Case,
    pub variant: Variant,
    /// With [`Variant::Local`]: whether the load reads the workgroup memory too.
    pub in_place: bool,
}

pub fn race_case() -> impl Strategy<Value = RaceCase> {
    let variant = prop_oneof![Just(Variant::Plain), Just(Variant::InPlace), Just(Variant::Local)];
    (case(), variant, any::<bool>()).prop_map(|(mut case, variant, in_place)| {
        let reads_dst = variant == Variant::InPlace || (variant == Variant::Local && in_place);
        if reads_dst && case.read.len() == case.dst_shape.len() {
            case.src_shape = case.dst_shape.clone();
        }
        RaceCase { case, variant, in_place }
    })
}

/// Whether the load reads what the store writes (same shape, rewritten).
fn reads_written(race: &RaceCase) -> bool {
    let reads_dst = race.variant == Variant::InPlace || (race.variant == Variant::Local && race.in_place);
    reads_dst && race.case.src_shape == race.case.dst_shape
}

/// The module text: `@k(%src, %dst)` (and `@put`), rewritten for the variant.
pub fn race_text(race: &RaceCase) -> String {
    let text = kernel_text(&race.case);
    let dst = crate::kernel_gen::memref(&race.case.dst_shape);
    let target = match race.variant {
        Variant::Local => "%tile",
        _ => "%dst",
    };
    let mut text = text;
    if reads_written(race) {
        text = text.replace("buffer.load %src[", &format!("buffer.load {target}["));
    }
    if race.variant == Variant::Local {
        text = text.replace(", %dst[", ", %tile[").replace("kernel.call @put(%dst,", "kernel.call @put(%tile,");
        let header_end = text.find("kernel.func @k(").and_then(|at| text[at..].find('\n').map(|n| at + n + 1));
        if let Some(at) = header_end {
            text.insert_str(at, &format!("  %tile = kernel.local_alloc : {dst}\n"));
        }
    }
    text
}
