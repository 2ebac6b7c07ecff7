//! The `arith` dialect.

/// Registers `arith`.
pub fn register(ctx: &mut hat_ir::Context) {
    ctx.register_dialect("arith", "");
}
