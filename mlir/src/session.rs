//! One MLIR context through melior: every upstream dialect registered, hat's `buffer` dialect
//! loaded from its IRDL declaration ([`crate::irdl`]), unregistered dialects allowed (for
//! `compute` and `kernel`: see docs/mlir.md), and MLIR's diagnostics collected rather than
//! printed.
//!
//! Invariant: every MLIR error reaches the caller as an [`MlirError`] with MLIR's own location
//! (`file:line:col` where MLIR has one) and message; nothing is printed by MLIR itself.

use melior::ir::block::BlockLike;
use melior::ir::operation::OperationLike;
use melior::ir::{Location, Module};
use melior::{diagnostic::DiagnosticSeverity, Context};
use std::cell::RefCell;
use std::rc::Rc;

/// One diagnostic of MLIR's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlirError {
    /// Where: file, line and column, when MLIR's location has them.
    pub position: Option<(String, usize, usize)>,
    /// MLIR's message.
    pub message: String,
}

impl std::fmt::Display for MlirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.position {
            Some((file, line, column)) => write!(f, "{file}:{line}:{column}: error: {}", self.message),
            None => write!(f, "error: {}", self.message),
        }
    }
}

/// The file, line and column of a location: its own, or the first of a fused one, or a name's
/// child's, or a call site's callee's.
pub fn position(location: Location<'_>) -> Option<(String, usize, usize)> {
    if location.is_file_line_col_range() {
        let file = location.file_line_col_range_filename().as_string_ref().as_str().ok()?.to_string();
        return Some((file, location.file_line_col_range_start_line(), location.file_line_col_range_start_column()));
    }
    if location.is_name() {
        return position(location.name_child_location());
    }
    if location.is_call_site() {
        return position(location.call_site_callee());
    }
    if location.is_fused() {
        return (0..location.fused_num_locations()).find_map(|i| position(location.fused_location(i)));
    }
    None
}

/// An MLIR context set up for hat, with its collected diagnostics.
pub struct Session {
    /// The context.
    pub context: Context,
    errors: Rc<RefCell<Vec<MlirError>>>,
}

impl Session {
    /// A context with every upstream dialect and hat's IRDL-declared dialect; unregistered
    /// dialects are allowed when `allow_unregistered`.
    pub fn new(allow_unregistered: bool) -> Session {
        let registry = melior::dialect::DialectRegistry::new();
        melior::utility::register_all_dialects(&registry);
        let context = Context::new_with_registry(&registry, false);
        context.load_all_available_dialects();
        let errors: Rc<RefCell<Vec<MlirError>>> = Rc::default();
        let sink = errors.clone();
        context.attach_diagnostic_handler(move |diagnostic| {
            if matches!(diagnostic.severity(), DiagnosticSeverity::Error) {
                let mut message = diagnostic.to_string();
                for i in 0..diagnostic.note_count() {
                    if let Ok(note) = diagnostic.note(i) {
                        // "see current operation" repeats the op generically: the position says it.
                        let text = note.to_string();
                        if !text.starts_with("see current operation") {
                            message.push_str(&format!("\nnote: {text}"));
                        }
                    }
                }
                sink.borrow_mut().push(MlirError { position: position(diagnostic.location()), message });
            }
            true
        });
        let irdl = Module::parse(&context, crate::irdl::IRDL).expect("hat's IRDL declaration parses");
        assert!(melior::utility::load_irdl_dialects(&irdl), "hat's IRDL declaration loads");
        context.set_allow_unregistered_dialects(allow_unregistered);
        Session { context, errors }
    }

    /// The errors collected since the last call.
    pub fn take_errors(&self) -> Vec<MlirError> {
        std::mem::take(&mut self.errors.borrow_mut())
    }

    /// Parses `text` (named `name` in locations) into a module: a single top-level
    /// `builtin.module`, or any other top-level ops, wrapped in one as `mlir-opt` does.
    pub fn parse<'c>(&'c self, name: &str, text: &str) -> Result<Module<'c>, Vec<MlirError>> {
        let raw = unsafe {
            mlir_sys::mlirOperationCreateParse(
                self.context.to_raw(),
                melior::StringRef::new(text).to_raw(),
                melior::StringRef::new(name).to_raw(),
            )
        };
        let errors = self.take_errors();
        let operation = unsafe { melior::ir::Operation::from_option_raw(raw) };
        let single_top_level = errors.iter().any(|e| e.message.contains("single top-level operation"));
        match operation {
            Some(operation) => {
                if operation.name().as_string_ref().as_str() == Ok("builtin.module") {
                    return Module::from_operation(operation).ok_or_else(Vec::new);
                }
                let module = Module::new(Location::unknown(&self.context));
                module.body().append_operation(operation);
                Ok(module)
            }
            None if single_top_level => {
                // Several top-level ops: in an implicit module, as mlir-opt. The wrapper opens on
                // the first line, so that every line keeps its number (the first line's columns
                // move by 8).
                let wrapped = format!("module {{{text}\n}}");
                let raw = unsafe {
                    mlir_sys::mlirOperationCreateParse(
                        self.context.to_raw(),
                        melior::StringRef::new(&wrapped).to_raw(),
                        melior::StringRef::new(name).to_raw(),
                    )
                };
                let errors = self.take_errors();
                match unsafe { melior::ir::Operation::from_option_raw(raw) } {
                    Some(operation) => Module::from_operation(operation).ok_or(errors),
                    None => Err(errors),
                }
            }
            None => Err(errors),
        }
    }

    /// Runs MLIR's verifier on `module`.
    pub fn verify(&self, module: &Module<'_>) -> Result<(), Vec<MlirError>> {
        self.take_errors();
        if module.as_operation().verify() {
            return Ok(());
        }
        let errors = self.take_errors();
        Err(if errors.is_empty() {
            vec![MlirError { position: None, message: "MLIR's verifier failed".into() }]
        } else {
            errors
        })
    }
}
