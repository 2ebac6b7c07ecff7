//! `--to-mlir=upstream`: every example, after hat's default pipeline, in upstream dialects only,
//! verified by mlir-opt 22 without `--allow-unregistered-dialect`; what has no upstream spelling
//! is an error at the op.

#![cfg(feature = "mlir")]

mod common;

use common::*;

/// The examples with something that has no upstream spelling, and what.
const REFUSED: &[(&str, &str)] = &[
    ("examples/07-life-display.hat", "'compute.host_func' has no upstream spelling"),
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

#[test]
fn kernels_with_atomics_barriers_and_workgroup_memory_go_there_and_back() {
    let text = r#"
kernel.func @histogram(%data: memref<64xi32>, %bins: memref<4xi32>) workgroup(64) {
  %tile = kernel.local_alloc : memref<64xi32>
  %i = kernel.global_id x
  %l = kernel.local_id x
  %v = buffer.load %data[%i] : memref<64xi32>
  buffer.store %v, %tile[%l] : memref<64xi32>
  kernel.barrier
  %w = buffer.load %tile[%l] : memref<64xi32>
  %c3 = arith.constant 3 : i32
  %bin = arith.andi %w, %c3 : i32
  %b = arith.index_cast %bin : i32 to index
  %one = arith.constant 1 : i32
  %old = kernel.atomic_rmw add %bins[%b], %one : memref<4xi32>
  %x = kernel.atomic_rmw xor %bins[%b], %one : memref<4xi32>
  kernel.return
}
compute.func @main(%data: memref<64xi32>, %bins: memref<4xi32>) {
  %c64 = arith.constant 64 : index
  buffer.to_device %data : memref<64xi32>
  buffer.to_device %bins : memref<4xi32>
  compute.dispatch @histogram[%c64](%data, %bins) : (memref<64xi32>, memref<4xi32>)
  buffer.from_device %bins : memref<4xi32>
  compute.return
}
"#;
    let (ctx, module) = parse("histogram.hat", text);
    let mlir = hat_mlir::upstream::export(&ctx, module)
        .unwrap_or_else(|e| panic!("{}", hat_ir::diagnostics::render(&ctx.sources, &e)));
    for expected in [
        "memref.atomic_rmw addi",
        "memref.atomic_rmw xori",
        "gpu.barrier",
        "workgroup(",
        "#gpu.address_space<workgroup>",
    ] {
        assert!(mlir.contains(expected), "{expected}: {mlir}");
    }
    if let Some(mlir_opt) = mlir_opt() {
        run_mlir_opt(&mlir_opt, &[], &mlir).unwrap_or_else(|e| panic!("{e}\n{mlir}"));
    }
    let mut back = hat_dialects::context();
    let imported = hat_mlir::import::import(&mut back, "histogram.mlir", mlir.as_bytes())
        .unwrap_or_else(|e| panic!("{}", hat_ir::diagnostics::render(&back.sources, &e)));
    let errors = hat_ir::verify(&back, imported);
    assert!(errors.is_empty(), "{}", hat_ir::diagnostics::render(&back.sources, &errors));
    let printed = print(&back, imported);
    for expected in
        ["kernel.atomic_rmw add", "kernel.atomic_rmw xor", "kernel.barrier", "kernel.local_alloc : memref<64xi32>"]
    {
        assert!(printed.contains(expected), "{expected}: {printed}");
    }
}
