//! `--to-mlir` and `--from-mlir` of hat's own export: every example goes to MLIR, verifies there,
//! and comes back printing byte for byte as hat-opt prints the original.

#![cfg(feature = "mlir")]

mod common;

use common::*;

#[test]
fn every_example_comes_back_exactly() {
    for (name, text) in examples() {
        let (ctx, module) = parse(&name, &text);
        let expected = print(&ctx, module);
        let mlir = hat_mlir::export::export(&ctx, module)
            .unwrap_or_else(|e| panic!("{name}: {}", hat_ir::diagnostics::render(&ctx.sources, &e)));
        let mut back = hat_dialects::context();
        let imported = hat_mlir::import::import(&mut back, "exported.mlir", mlir.as_bytes())
            .unwrap_or_else(|e| panic!("{name}: {}", hat_ir::diagnostics::render(&back.sources, &e)));
        let errors = hat_ir::verify(&back, imported);
        assert!(errors.is_empty(), "{name}: {}", hat_ir::diagnostics::render(&back.sources, &errors));
        assert_eq!(print(&back, imported), expected, "{name} did not come back exactly");
    }
}

#[test]
fn every_export_is_what_it_was() {
    for (name, text) in examples() {
        let (ctx, module) = parse(&name, &text);
        let mlir = hat_mlir::export::export(&ctx, module).unwrap();
        let snapshot = name.trim_start_matches("examples/").trim_end_matches(".hat").to_string();
        insta::assert_snapshot!(snapshot, mlir);
    }
}

#[test]
fn every_export_verifies_in_mlir_opt_with_the_irdl_file() {
    let Some(mlir_opt) = mlir_opt() else { return };
    let directory = tempdir();
    let irdl = directory.join("hat.irdl.mlir");
    std::fs::write(&irdl, hat_mlir::irdl::IRDL).unwrap();
    let irdl_flag = format!("--irdl-file={}", irdl.display());
    for (name, text) in examples() {
        let (ctx, module) = parse(&name, &text);
        let mlir = hat_mlir::export::export(&ctx, module).unwrap();
        if let Err(stderr) = run_mlir_opt(&mlir_opt, &[&irdl_flag, "--allow-unregistered-dialect"], &mlir) {
            panic!("{name}: mlir-opt rejects the export:\n{stderr}");
        }
    }
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn the_irdl_declaration_checks_buffer_ops() {
    let Some(mlir_opt) = mlir_opt() else { return };
    let directory = tempdir();
    let irdl = directory.join("hat.irdl.mlir");
    std::fs::write(&irdl, hat_mlir::irdl::IRDL).unwrap();
    let irdl_flag = format!("--irdl-file={}", irdl.display());
    // A load whose index is not an index: hat's verifier would refuse it, and so does MLIR's
    // with the declaration.
    let bad = r#"func.func @f(%b: memref<4xi32>, %i: i32) -> i32 {
  %v = "buffer.load"(%b, %i) : (memref<4xi32>, i32) -> i32
  return %v : i32
}"#;
    let stderr = run_mlir_opt(&mlir_opt, &[&irdl_flag], bad).unwrap_err();
    assert!(stderr.contains("buffer.load"), "{stderr}");
    let good = bad.replace("%i: i32", "%i: index").replace("memref<4xi32>, i32)", "memref<4xi32>, index)");
    run_mlir_opt(&mlir_opt, &[&irdl_flag], &good).unwrap();
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn an_op_that_mlir_refuses_is_an_error_at_it() {
    // hat reads ops of dialects it does not know with --allow-unregistered-dialect; MLIR knows
    // `func.func` and refuses one without a function type.
    let text = "compute.func @main() {\n  compute.return\n}\n\"func.func\"() ({\n}) {sym_name = \"f\"} : () -> ()\n";
    let mut ctx = hat_dialects::context();
    ctx.allow_unregistered = true;
    let module = hat_ir::parse_source(&mut ctx, "bad.hat", text).unwrap();
    let errors = hat_mlir::export::export(&ctx, module).unwrap_err();
    let rendered = hat_ir::diagnostics::render(&ctx.sources, &errors);
    assert!(rendered.contains("bad.hat:4:1"), "{rendered}");
    assert!(rendered.contains("'func.func' op"), "{rendered}");
}

#[test]
fn region_argument_names_travel_as_name_locations() {
    let (ctx, module) =
        parse("examples/03-repeat.hat", &std::fs::read_to_string(root().join("examples/03-repeat.hat")).unwrap());
    let mlir = hat_mlir::export::export(&ctx, module).unwrap();
    assert!(mlir.contains("loc(\"it\")"), "{mlir}");
    assert!(mlir.contains("loc(\"count\")"), "{mlir}");
}

#[test]
fn every_example_after_the_default_pipeline_comes_back_exactly() {
    // Transfers, hoisted guards and the pipeline's attributes go through MLIR too.
    for (name, text) in examples() {
        let (mut ctx, module) = parse(&name, &text);
        run_default_pipeline(&mut ctx, module);
        let expected = print(&ctx, module);
        let mlir = hat_mlir::export::export(&ctx, module)
            .unwrap_or_else(|e| panic!("{name}: {}", hat_ir::diagnostics::render(&ctx.sources, &e)));
        let mut back = hat_dialects::context();
        let imported = hat_mlir::import::import(&mut back, "exported.mlir", mlir.as_bytes())
            .unwrap_or_else(|e| panic!("{name}: {}", hat_ir::diagnostics::render(&back.sources, &e)));
        assert_eq!(print(&back, imported), expected, "{name} after -p default did not come back exactly");
    }
}
