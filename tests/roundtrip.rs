//! Round trips: for every file in `tests/roundtrip/` and `examples/`, print → parse → print is the
//! identity in the custom form and in the generic form, and the two forms describe the same IR.
//! The corpora together must use every op of every registered dialect.

use hat_ir::{parse_source, print_op, verify, Context, Op, PrintOptions};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const CUSTOM: PrintOptions = PrintOptions { generic: false, debug_info: false, assume_verified: false };
const GENERIC: PrintOptions = PrintOptions { generic: true, debug_info: false, assume_verified: false };

fn corpus_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for directory in ["tests/roundtrip", "examples"] {
        let Ok(entries) = std::fs::read_dir(root.join(directory)) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "hat") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Parses and verifies `text`, panicking with rendered diagnostics on failure.
fn load(name: &str, text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = match parse_source(&mut ctx, name, text) {
        Ok(module) => module,
        Err(error) => panic!("{}", hat_ir::diagnostics::render(&ctx.sources, &[error.into()])),
    };
    let diagnostics = verify(&ctx, module);
    assert!(diagnostics.is_empty(), "{}", hat_ir::diagnostics::render(&ctx.sources, &diagnostics));
    (ctx, module)
}

fn reprint(name: &str, text: &str, options: PrintOptions) -> String {
    let (ctx, module) = load(name, text);
    print_op(&ctx, module, options)
}

#[test]
fn every_corpus_file_round_trips_in_both_forms() {
    let files = corpus_files();
    assert!(!files.is_empty(), "no corpus files found");
    for path in files {
        let name = path.display().to_string();
        let source = std::fs::read_to_string(&path).unwrap();
        let custom = reprint(&name, &source, CUSTOM);
        assert_eq!(reprint(&name, &custom, CUSTOM), custom, "custom form of {name} is not stable");
        let generic = reprint(&name, &source, GENERIC);
        assert_eq!(reprint(&name, &generic, GENERIC), generic, "generic form of {name} is not stable");
        assert_eq!(reprint(&name, &generic, CUSTOM), custom, "generic and custom forms of {name} differ");
    }
}

fn ops_used(ctx: &Context, module: Op) -> BTreeSet<String> {
    ctx.walk(module).into_iter().map(|op| ctx.name_str(op).to_string()).collect()
}

#[test]
fn the_corpora_use_every_registered_op() {
    let mut used = BTreeSet::new();
    for path in corpus_files() {
        let source = std::fs::read_to_string(&path).unwrap();
        let (ctx, module) = load(&path.display().to_string(), &source);
        used.extend(ops_used(&ctx, module));
    }
    let registered: BTreeSet<String> =
        hat_dialects::context().registered_ops().iter().map(|d| d.name().to_string()).collect();
    let missing: Vec<&String> = registered.difference(&used).collect();
    assert!(missing.is_empty(), "ops with no round-trip coverage: {missing:?}");
}

/// Where `mlir-opt` is, if installed. With `HAT_REQUIRE_MLIR_OPT=1` (CI) its absence is a failure.
fn mlir_opt() -> Option<PathBuf> {
    let candidates =
        [std::env::var_os("MLIR_OPT").map(PathBuf::from), Some(PathBuf::from("/usr/lib/llvm-22/bin/mlir-opt"))];
    let found = candidates.into_iter().flatten().find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var("HAT_REQUIRE_MLIR_OPT").is_err(),
            "HAT_REQUIRE_MLIR_OPT is set but mlir-opt was not found"
        );
        eprintln!("skipping: mlir-opt not found (install mlir-22-tools)");
    }
    found
}

#[test]
fn mlir_opt_accepts_the_generic_form_of_every_corpus_file() {
    let Some(mlir_opt) = mlir_opt() else { return };
    let scratch = std::env::temp_dir().join(format!("hat-mlir-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    for path in corpus_files() {
        let name = path.display().to_string();
        let generic = reprint(&name, &std::fs::read_to_string(&path).unwrap(), GENERIC);
        let file = scratch.join(path.file_name().unwrap()).with_extension("mlir");
        std::fs::write(&file, &generic).unwrap();
        let output =
            std::process::Command::new(&mlir_opt).arg("--allow-unregistered-dialect").arg(&file).output().unwrap();
        assert!(
            output.status.success(),
            "mlir-opt rejects the generic form of {name}:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        // And what MLIR prints back (its own custom and generic forms) reads in hat.
        let again = std::process::Command::new(&mlir_opt)
            .args(["--allow-unregistered-dialect", "--mlir-print-op-generic"])
            .arg(&file)
            .output()
            .unwrap();
        let text = String::from_utf8(again.stdout).unwrap();
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, &format!("{name} (from mlir-opt)"), &text)
            .unwrap_or_else(|e| panic!("{}", hat_ir::diagnostics::render(&ctx.sources, &[e.into()])));
        assert!(verify(&ctx, module).is_empty(), "mlir-opt's output of {name} does not verify in hat");
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
