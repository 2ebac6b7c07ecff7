//! Upstream MLIR GPU programs (`func`, `memref`, `gpu`) translated to hat's dialects.

use crate::session::{MlirError, Session};
use melior::ir::operation::OperationLike;
use melior::ir::Module;

/// Whether `module` has ops of `func`, `memref` or `gpu` (which hat reads by translation).
pub fn is_upstream(module: &Module<'_>) -> bool {
    let mut found = false;
    module.as_operation().walk(melior::ir::operation::WalkOrder::PreOrder, |op| {
        let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        if ["func.", "memref.", "gpu."].iter().any(|prefix| name.starts_with(prefix)) {
            found = true;
        }
        melior::ir::operation::WalkResult::Advance
    });
    found
}

/// The hat-dialect module that `module` means.
pub fn translate<'c>(_session: &'c Session, _module: &Module<'c>, _name: &str) -> Result<Module<'c>, Vec<MlirError>> {
    Err(vec![MlirError {
        position: None,
        message: "importing upstream func/memref/gpu programs is not implemented yet".into(),
    }])
}
