//! The `buffer` dialect.

/// Registers `buffer`.
pub fn register(ctx: &mut hat_ir::Context) {
    ctx.register_dialect("buffer", "");
}
