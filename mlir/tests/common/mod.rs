//! What the bridge's tests share: the examples, hat's printing, and mlir-opt.

#![allow(dead_code)]

use hat_ir::{Context, Op, PrintOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Every example: its name (`examples/NN-name.hat`, as locations name it) and text.
pub fn examples() -> Vec<(String, String)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "hat"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 19, "the examples are missing");
    paths
        .into_iter()
        .map(|path| {
            let name = format!("examples/{}", path.file_name().unwrap().to_string_lossy());
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// A hat program parsed and verified.
pub fn parse(name: &str, text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = hat_ir::parse_source(&mut ctx, name, text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{name}: {}", hat_ir::diagnostics::render(&ctx.sources, &errors));
    (ctx, module)
}

/// What hat-opt prints of a module.
pub fn print(ctx: &Context, module: Op) -> String {
    hat_ir::print_op(ctx, module, PrintOptions::default())
}

/// mlir-opt 22, if installed; with `HAT_REQUIRE_MLIR=1` (or the existing tests'
/// `HAT_REQUIRE_MLIR_OPT=1`) its absence fails the test instead.
pub fn mlir_opt() -> Option<PathBuf> {
    let path = PathBuf::from("/usr/lib/llvm-22/bin/mlir-opt");
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("HAT_REQUIRE_MLIR").as_deref() != Ok("1"),
        "HAT_REQUIRE_MLIR=1 but mlir-opt 22 is not installed"
    );
    eprintln!("skipped: mlir-opt 22 is not installed (/usr/lib/llvm-22/bin/mlir-opt)");
    None
}

/// Runs mlir-opt with `arguments` on `text`; Err holds its stderr.
pub fn run_mlir_opt(mlir_opt: &Path, arguments: &[&str], text: &str) -> Result<String, String> {
    let directory = tempdir();
    let input = directory.join("input.mlir");
    std::fs::write(&input, text).unwrap();
    let output = Command::new(mlir_opt).args(arguments).arg(&input).output().unwrap();
    let _ = std::fs::remove_dir_all(&directory);
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// A fresh directory under the target directory.
pub fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "hat-mlir-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&path).unwrap();
    path
}

/// `module` after hat's `default` pipeline (transfers decided).
pub fn run_default_pipeline(ctx: &mut Context, module: Op) {
    let registry = hat_passes::registry();
    let mut manager =
        hat_ir::pass::PassManager::new("builtin.module", hat_ir::pass::PassManagerOptions { verify_each: true });
    manager.add_pipeline(&registry, "default").unwrap();
    if let Err(errors) = manager.run(ctx, module) {
        panic!("the default pipeline fails: {}", hat_ir::diagnostics::render(&ctx.sources, &errors));
    }
}
