//! Test helpers: run a pipeline on text through the pass manager and print the result.

use hat_ir::pass::PassManager;
use hat_ir::{parse_source, print_op, PrintOptions};

/// Parses `text`, runs `pipeline` on the module, and prints it (panics on any error).
pub fn run_pipeline(pipeline: &str, text: &str) -> String {
    let mut ctx = hat_dialects::context();
    let module = match parse_source(&mut ctx, "test.hat", text) {
        Ok(module) => module,
        Err(error) => panic!("{}", hat_ir::diagnostics::render(&ctx.sources, &[error.into()])),
    };
    let registry = crate::registry();
    let mut manager = PassManager::new("builtin.module", Default::default());
    manager.add_pipeline(&registry, pipeline).unwrap_or_else(|e| panic!("{e}"));
    if let Err(diagnostics) = manager.run(&mut ctx, module) {
        panic!("{}", hat_ir::diagnostics::render(&ctx.sources, &diagnostics));
    }
    print_op(&ctx, module, PrintOptions::default())
}

/// Asserts that `pipeline` turns `text` into a module whose body is `expected` (the printed body,
/// without the module's braces and with its two-space indentation of the first line removed).
pub fn assert_pipeline(pipeline: &str, text: &str, expected: &str) {
    let printed = run_pipeline(pipeline, text);
    let body = printed
        .strip_prefix("module {\n  ")
        .and_then(|b| b.strip_suffix("\n}\n"))
        .unwrap_or_else(|| panic!("unexpected module form:\n{printed}"));
    assert_eq!(body, expected, "\n--- got ---\n{printed}");
}
