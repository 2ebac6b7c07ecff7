//! `--to-mlir`: a hat module as an MLIR module, lossless.
//!
//! The module is written in MLIR's generic form ([`crate::generic_text`]), parsed by MLIR,
//! verified by MLIR's verifier (`arith`, `math` and `scf` are MLIR's own dialects, `buffer` the
//! ops of its IRDL declaration, `compute` and `kernel` unregistered), and printed by MLIR's
//! printer in the generic form with locations: each op keeps its `.hat` file:line:col, each
//! named region argument its name (a `NameLoc`), which is how [`crate::import`] gives back
//! exactly the same program. (MLIR's custom forms of `scf.for` and `scf.while` drop their
//! arguments' locations, and with them the names.)

use crate::session::{MlirError, Session};
use hat_ir::{Context, Diagnostic, Op};
use melior::ir::operation::{OperationLike, OperationPrintingFlags};

/// `module` as MLIR text, verified by MLIR. Errors are diagnostics at the ops MLIR named (their
/// `.hat` locations), or, for an op without one, at the module.
pub fn export(ctx: &Context, module: Op) -> Result<String, Vec<Diagnostic>> {
    let text = crate::generic_text::write_module(ctx, module);
    let session = Session::new(true);
    let mlir_module = session.parse("<hat export>", &text).map_err(|errors| diagnostics(ctx, module, errors))?;
    session.verify(&mlir_module).map_err(|errors| diagnostics(ctx, module, errors))?;
    // Generic form with locations: MLIR's custom printers of `scf.for` and `scf.while` print
    // their region arguments without locations, which would lose the arguments' names.
    let flags = OperationPrintingFlags::new().enable_debug_info(true, false).print_generic_operation_form();
    let printed = mlir_module
        .as_operation()
        .to_string_with_flags(flags)
        .map_err(|e| vec![Diagnostic::error(ctx.location(module), format!("MLIR could not print the module: {e}"))])?;
    Ok(printed)
}

/// MLIR's errors as hat diagnostics: at the `.hat` location MLIR reported when it is one of
/// `ctx`'s sources, at `module` otherwise (with MLIR's position in the message).
pub fn diagnostics(ctx: &Context, module: Op, errors: Vec<MlirError>) -> Vec<Diagnostic> {
    errors
        .into_iter()
        .map(|error| {
            let located = error
                .position
                .as_ref()
                .and_then(|(file, line, column)| crate::locations::hat_location(ctx, module, file, *line, *column));
            match located {
                Some(location) => Diagnostic::error(location, format!("MLIR: {}", error.message)),
                None => Diagnostic::error(ctx.location(module), format!("MLIR: {error}")),
            }
        })
        .collect()
}
