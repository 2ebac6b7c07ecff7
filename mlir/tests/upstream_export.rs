//! `--to-mlir=upstream`: every example, after hat's default pipeline, in upstream dialects only,
//! verified by mlir-opt 22 without `--allow-unregistered-dialect`; what has no upstream spelling
//! is an error at the op.

#![cfg(feature = "mlir")]

mod common;

use common::*;

/// The examples with something that has no upstream spelling, and what.
const REFUSED: &[(&str, &str)] = &[
    ("examples/07-life-display.hat", "'compute.host_func' has no upstream spelling"),
    ("examples/11-morphology.hat", "'scf.for' carrying a buffer"),
    ("examples/18-conditional-escape.hat", "'compute.host_func' has no upstream spelling"),
];

fn upstream(name: &str, text: &str) -> (hat_ir::Context, Result<String, Vec<hat_ir::Diagnostic>>) {
    let (mut ctx, module) = parse(name, text);
    run_default_pipeline(&mut ctx, module);
    let exported = hat_mlir::upstream::export(&ctx, module);
    (ctx, exported)
}

#[test]
fn every_example_with_upstream_spellings_verifies_in_mlir_opt() {
    let mlir_opt = mlir_opt();
    for (name, text) in examples() {
        let (ctx, exported) = upstream(&name, &text);
        match REFUSED.iter().find(|(refused, _)| *refused == name) {
            Some((_, why)) => {
                let errors = exported.expect_err(&name);
                let rendered = hat_ir::diagnostics::render(&ctx.sources, &errors);
                assert!(rendered.contains(why), "{name}: {rendered}");
            }
            None => {
                let mlir =
                    exported.unwrap_or_else(|e| panic!("{name}: {}", hat_ir::diagnostics::render(&ctx.sources, &e)));
                assert!(
                    !mlir.contains("\"compute.") && !mlir.contains("\"kernel.") && !mlir.contains("\"buffer."),
                    "{name}"
                );
                let snapshot = format!("upstream-{}", name.trim_start_matches("examples/").trim_end_matches(".hat"));
                insta::assert_snapshot!(snapshot, mlir);
                if let Some(mlir_opt) = &mlir_opt {
                    if let Err(stderr) = run_mlir_opt(mlir_opt, &[], &mlir) {
                        panic!("{name}: mlir-opt rejects the upstream export:\n{stderr}");
                    }
                }
            }
        }
    }
}

#[test]
fn a_module_whose_transfers_are_not_decided_is_refused() {
    let text = std::fs::read_to_string(root().join("examples/01-squares.hat")).unwrap();
    let (ctx, module) = parse("examples/01-squares.hat", &text);
    let errors = hat_mlir::upstream::export(&ctx, module).unwrap_err();
    let rendered = hat_ir::diagnostics::render(&ctx.sources, &errors);
    assert!(rendered.contains("no transfer op"), "{rendered}");
    assert!(rendered.contains("examples/01-squares.hat:31:3"), "{rendered}");
}
