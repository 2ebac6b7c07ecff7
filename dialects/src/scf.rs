//! The `scf` dialect.

/// Registers `scf`.
pub fn register(ctx: &mut hat_ir::Context) {
    ctx.register_dialect("scf", "");
}
