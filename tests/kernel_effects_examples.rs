//! The kernel-effects analysis on every example program (`examples/*.hat`): what
//! `hat-opt --print-kernel-effects=dispatches=true` says of each kernel and each dispatch, one
//! snapshot per example (`tests/snapshots/kernel_effects_examples__NAME.snap`).
//!
//! The remarks are snapshotted without their source locations, so that editing an example's
//! header comment does not change them; only the kernels and the dispatches do.

use hat_ir::diagnostics::Severity;
use hat_ir::pass::PassManager;
use std::path::Path;

/// The remarks `print-kernel-effects{dispatches=true}` emits on `text`, one per line.
fn remarks(name: &str, text: &str) -> String {
    let mut ctx = hat_dialects::context();
    let module = hat_ir::parse_source(&mut ctx, name, text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let mut manager = PassManager::new("builtin.module", Default::default());
    manager
        .add_pipeline(&hat_passes::registry(), "builtin.module(print-kernel-effects{dispatches=true})")
        .expect("the pipeline parses");
    let diagnostics = manager.run(&mut ctx, module).unwrap_or_else(|d| panic!("{name}: {d:?}"));
    diagnostics.iter().filter(|d| d.severity == Severity::Remark).map(|d| format!("{}\n", d.message)).collect()
}

#[test]
fn every_example() {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<_> = std::fs::read_dir(&directory)
        .expect("examples/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "hat"))
        .collect();
    files.sort();
    assert!(files.len() >= 18, "the examples are there");
    for path in files {
        let name = path.file_stem().and_then(|s| s.to_str()).expect("a file name").to_string();
        let text = std::fs::read_to_string(&path).expect("readable");
        let printed = remarks(&name, &text);
        assert!(!printed.is_empty(), "{name}: no kernel described");
        insta::assert_snapshot!(name, printed);
    }
}
