//! The `math` dialect.

/// Registers `math`.
pub fn register(ctx: &mut hat_ir::Context) {
    ctx.register_dialect("math", "");
}
