//! The `compute` dialect.

/// Registers `compute`.
pub fn register(ctx: &mut hat_ir::Context) {
    ctx.register_dialect("compute", "");
}
