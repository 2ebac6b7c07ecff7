//! hat's passes, registered by name with [`register_all`]:
//!
//! - [`canonicalize`]: folding, identities, dead control flow and dead ops, to a fixpoint;
//! - [`cse`]: common subexpression elimination, scoped by dominance;
//! - [`dce`]: dead ops, and helper functions nothing refers to;
//! - [`inline`]: calls of compute functions and kernel helpers replaced by their bodies;
//! - [`race_lint`]: data races between the work items of a kernel dispatch, reported;
//! - [`resolve_aliases`]: buffers that change roles between iterations, resolved per residue
//!   with an e-graph, and their loops specialised by residue.
//!
//! Each pass has a reference page in `docs/passes/`; the rules of the rewrites are in
//! `docs/rewrites.md`.
#![deny(missing_docs)]

pub mod canonicalize;
pub mod cse;
pub mod dce;
pub mod inline;
pub mod memory;
pub mod race_lint;
pub mod resolve_aliases;
pub mod support;
mod test_passes;
#[cfg(test)]
mod testing;
pub mod transfers;

use hat_ir::pass::PassRegistry;

pub use test_passes::register_test_passes;

/// Registers every hat pass.
pub fn register_all(registry: &mut PassRegistry) {
    registry.register(canonicalize::info());
    registry.register(cse::info());
    registry.register(dce::info());
    registry.register(inline::info());
    registry.register(resolve_aliases::pass::info());
    registry.register(transfers::insert::info());
    registry.register(transfers::hoist::info());
    registry.register(memory::info());
    registry.register_pipeline(
        "default",
        "The whole job: inline, canonicalize, warn of kernel data races, resolve the buffers that change roles by iteration, place the transfers (static strategy: lazy code motion hoists out of loops what every iteration needs), clean up, release each buffer where its live range ends",
        "builtin.module(inline,canonicalize,race-lint,resolve-aliases,canonicalize,insert-transfers{strategy=static},canonicalize,plan-memory)",
    );
    registry.register(transfers::kernel_effects::print::info());
    registry.register(transfers::track_accesses::info());
    registry.register(race_lint::info());
}

/// A registry holding every hat pass.
pub fn registry() -> PassRegistry {
    let mut registry = PassRegistry::new();
    register_all(&mut registry);
    registry
}
