//! Malformed and out-of-subset MLIR (mlir/tests/malformed/): each gives a diagnostic at its place
//! in the `.mlir` file, naming the op or quoting MLIR's own parse or verify error, and exit
//! status 1; none panics.

#![cfg(feature = "mlir")]

use std::path::Path;
use std::process::Command;

/// Each file, where its first error is, and what the error says.
const CASES: &[(&str, &str, &str)] = &[
    ("01-undefined-value.mlir", "2:23", "use of undeclared SSA value name"),
    ("02-unclosed-region.mlir", "2:33", "expected operation name in quotes"),
    ("03-verifier-return-type.mlir", "2:3", "doesn't match function result type"),
    ("04-unknown-dialect.mlir", "2:3", "'foo.bar' is outside the subset"),
    ("05-tensor.mlir", "2:8", "'tensor.empty' is outside the subset"),
    ("06-strided-subview.mlir", "2:8", "a view other than a range of a one-dimensional buffer with stride 1"),
    ("07-dynamic-block-size.mlir", "8:5", "has a block size that is not constant"),
    ("08-private-attribution.mlir", "3:5", "private attributions"),
    ("09-atomic-mulf.mlir", "6:14", "hat's atomics have no kind 'mulf'"),
    ("10-overflow-flags.mlir", "2:8", "overflowFlags = #arith.overflow<nsw>"),
    ("11-unstructured-control-flow.mlir", "1:1", "a function of several blocks"),
    ("12-declaration.mlir", "1:9", "a function declaration without a body"),
    ("13-host-shared.mlir", "2:8", "host_shared memory"),
    ("14-scf-parallel.mlir", "5:3", "'scf.parallel' is outside the subset"),
    ("15-vector-type.mlir", "1:1", "hat has no type vector<4xf32>"),
    ("16-dynamic-shared-memory.mlir", "6:5", "dynamic shared memory"),
    ("17-work-item-on-host.mlir", "2:8", "a work-item query in host code"),
    ("18-dynamic-dim-index.mlir", "2:8", "a dimension that is not a constant"),
    ("19-conflicting-block-sizes.mlir", "12:5", "launches disagree on its block size"),
    ("20-affine.mlir", "2:3", "'affine.for' is outside the subset"),
    ("21-copy-view-to-buffer.mlir", "3:3", "a copy between a view and a whole buffer"),
    ("22-never-launched.mlir", "3:5", "a kernel that is never launched"),
    ("23-hat-op-malformed.mlir", "4:10", "'buffer.load' op expects 1 index operand(s)"),
    ("24-invalid-utf8.mlir", "2:23", "unexpected character"),
    ("25-too-deep.mlir", "514:11", "regions nested more than 512 deep"),
];

#[test]
fn each_malformed_input_is_a_located_diagnostic_and_exit_1() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = std::fs::read_dir(root.join("mlir/tests/malformed")).unwrap().count();
    assert_eq!(files, CASES.len(), "every file in mlir/tests/malformed has its line here");
    assert!(CASES.len() >= 20);
    for (file, position, message) in CASES {
        let path = format!("mlir/tests/malformed/{file}");
        let output = Command::new(env!("CARGO_BIN_EXE_hat-opt"))
            .current_dir(&root)
            .args([&path, "--from-mlir"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{file}: {stderr}");
        assert!(!stderr.contains("panicked"), "{file}: {stderr}");
        assert!(output.stdout.is_empty(), "{file}: wrote output");
        let first = stderr.lines().find(|l| l.starts_with("error")).unwrap_or_default();
        assert!(first.contains(message), "{file}: the first error is '{first}', not '{message}'");
        assert!(stderr.contains(&format!("{path}:{position}")), "{file}: not at {position}: {stderr}");
    }
}
