//! `--to-mlir=upstream`: a hat module in upstream dialects only.

use hat_ir::{Context, Diagnostic, Op};

/// `module` in upstream dialects, verified by MLIR.
pub fn export(ctx: &Context, module: Op) -> Result<String, Vec<Diagnostic>> {
    Err(vec![Diagnostic::error(ctx.location(module), "--to-mlir=upstream is not implemented yet")])
}
