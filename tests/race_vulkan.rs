//! Every race-free kernel of the race-lint catalogue (`tests/filetests/race-lint/*.hat`: no
//! expected `warning`, `remark` or `error`) runs on Vulkan (lavapipe where there is no GPU) with
//! the validation layer on, and must leave every buffer argument bit for bit as the CPU
//! reference backend does. A race-free kernel's results do not depend on the schedule, so any
//! difference is a bug of a backend or of the label.
//!
//! Grids: those the lint looks at the kernel over (its launch's, else the sample grid), each
//! dimension capped at 64 so that the catalogue's 64-element buffers are not indexed past their
//! end; buffers hold `k % 16` at element `k` (so indices read from data stay in bounds), scalars
//! 0. A kernel that the CPU backend stops with an error on (an out-of-bounds access) is counted
//! and printed, not compared. Without a Vulkan device the test prints why and passes, unless
//! `HAT_REQUIRE_VULKAN=1`, where it fails.

mod race_support;
mod vulkan_support;

use hat_runtime::{Backend, CpuBackend};
use race_support::{grids, kernels, run_on, symbol, Fill};
use std::path::Path;
use vulkan_support::vulkan;

#[test]
fn race_free_catalogue_kernels_agree_on_vulkan_and_the_cpu() {
    let Some(mut gpu) = vulkan() else { return };
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests/race-lint");
    let mut files: Vec<_> = std::fs::read_dir(&directory)
        .expect("tests/filetests/race-lint/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "hat"))
        .collect();
    files.sort();
    let (mut compared, mut skipped) = (0, Vec::new());
    let mut differences = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a catalogue file");
        if !text.contains("--race-lint --verify-diagnostics") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for split in text.split("\n// -----\n") {
            if ["expected-warning", "expected-remark", "expected-error"].iter().any(|e| split.contains(e)) {
                continue; // racy: its results depend on the schedule
            }
            let mut ctx = hat_dialects::context();
            let module = hat_ir::parse_source(&mut ctx, &name, split).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let verified = hat_ir::verify_module(&ctx, module).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            for kernel in kernels(&ctx, module) {
                let label = format!("{name} @{}", symbol(&ctx, kernel));
                for grid in grids(&ctx, module, kernel) {
                    let grid = grid.map(|g| g.min(64));
                    let mut cpu = CpuBackend::new();
                    let expected = match run_on(&mut cpu, verified, kernel, grid, Fill::Mod16) {
                        Ok(contents) => contents,
                        Err(error) => {
                            skipped.push(format!("{label} over {grid:?}: {error}"));
                            continue;
                        }
                    };
                    let actual = run_on(&mut gpu, verified, kernel, grid, Fill::Mod16)
                        .unwrap_or_else(|e| panic!("{label} over {grid:?} on Vulkan: {e}"));
                    compared += 1;
                    if actual != expected {
                        differences.push(format!("{label} over {grid:?}"));
                    }
                }
            }
        }
    }
    let messages = gpu.validation_messages();
    println!("compared {compared} race-free dispatches on {}; not compared: {skipped:#?}", gpu.device_name());
    assert!(messages.is_empty(), "{} validation message(s):\n{}", messages.len(), messages.join("\n"));
    assert!(differences.is_empty(), "Vulkan and the CPU backend differ on:\n{}", differences.join("\n"));
    assert!(compared >= 15, "only {compared} race-free dispatches compared");
}
