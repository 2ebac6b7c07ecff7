//! The race-lint catalogue (`tests/filetests/race-lint/*.hat`), checked by execution: every
//! kernel runs on the CPU backend with its race check on (`hat-opt --run --check-races`'s),
//! over the grids the lint looks at it over, with buffers of zeros and of `iota`, and the check
//! must find a race exactly where the file expects a `warning`, `remark` or `error` of
//! `race-lint`. So a label of the catalogue is not trusted to whoever wrote it.

mod race_support;

use race_support::{kernels, symbol, verdict};
use std::path::Path;

/// The kernels the catalogue holds, run: (file:kernel, whether the file says it races, the
/// check's verdict).
#[test]
fn every_label_agrees_with_the_race_check() {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests/race-lint");
    let mut files: Vec<_> = std::fs::read_dir(&directory)
        .expect("tests/filetests/race-lint/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "hat"))
        .collect();
    files.sort();
    let mut checked = 0;
    let mut disagreements = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a catalogue file");
        if !text.contains("--race-lint --verify-diagnostics") {
            continue; // not a catalogue file (check-races.hat runs hat-opt --check-races)
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for split in text.split("\n// -----\n") {
            let racy = ["expected-warning", "expected-remark", "expected-error"].iter().any(|e| split.contains(e));
            let mut ctx = hat_dialects::context();
            let module = hat_ir::parse_source(&mut ctx, &name, split).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let verified = hat_ir::verify_module(&ctx, module).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let list = kernels(&ctx, module);
            assert_eq!(list.len(), 1, "{name}: each split of the catalogue holds one kernel");
            for kernel in list {
                let verdict = verdict(verified, module, kernel);
                let kernel = symbol(&ctx, kernel);
                println!("{name} @{kernel}: labelled {}, check: {verdict:?}", if racy { "racy" } else { "race-free" });
                checked += 1;
                if racy != verdict.is_race() {
                    disagreements.push(format!("{name} @{kernel}: labelled racy={racy}, the check says {verdict:?}"));
                }
            }
        }
    }
    assert!(checked >= 30, "the catalogue has {checked} kernels, fewer than 30");
    assert!(disagreements.is_empty(), "labels the race check disagrees with:\n{}", disagreements.join("\n"));
}
