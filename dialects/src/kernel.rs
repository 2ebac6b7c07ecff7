//! The `kernel` dialect.

/// Registers `kernel`.
pub fn register(ctx: &mut hat_ir::Context) {
    ctx.register_dialect("kernel", "");
}
