//! The hat dialects, registered with [`register_all`]:
//!
//! - `builtin` — `module`;
//! - `arith`, `math`, `scf` — scalar arithmetic and structured control flow, spelled as in MLIR so
//!   that the generic form moves between hat and `mlir-opt` unchanged;
//! - `buffer` — buffers: allocation, element access, host-side copies, the two transfers, and the
//!   hooks of the runtime-tracking strategy;
//! - `compute` — host code: functions, dispatches, calls, host-function declarations, sync;
//! - `kernel` — device code: kernels, helpers, work-item ids, barriers, local memory, atomics.
//!
//! Each dialect is a table of [`op_spec::OpSpec`]s; their memory effects are what analyses ask.
//! What the scalar ops of `arith` and `math` compute is written once, in [`semantics`].
#![deny(missing_docs)]

pub mod arith;
pub mod arith_canonicalize;
pub mod arith_fold;
pub mod arith_views;
pub mod buffer;
pub mod builtin;
pub mod checks;
pub mod compute;
pub mod functions;
pub mod kernel;
pub mod math;
pub mod op_spec;
pub mod scf;
pub mod semantics;
pub mod syntax;
mod views_check;

/// Registers every hat dialect with `ctx`.
pub fn register_all(ctx: &mut hat_ir::Context) {
    builtin::register(ctx);
    arith::register(ctx);
    arith_canonicalize::attach(ctx);
    math::register(ctx);
    scf::register(ctx);
    buffer::register(ctx);
    compute::register(ctx);
    kernel::register(ctx);
}

/// A context with every hat dialect registered.
pub fn context() -> hat_ir::Context {
    let mut ctx = hat_ir::Context::new();
    register_all(&mut ctx);
    ctx
}
