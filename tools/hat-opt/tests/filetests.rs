//! hat-opt's file tests: every `.hat` file under `tests/filetests/` (at the workspace root)
//! begins with `// RUN:` lines, each the command line of one `hat-opt` run on the file, whose
//! exit status, standard output and standard error are compared with the snapshot
//! `tests/snapshots/filetests__PATH.snap` beside this file (the harness, its RUN-line syntax and
//! its filters: the crate `hat-file-tests`, tools/file-tests/).
//!
//! Bless every snapshot with `INSTA_UPDATE=always cargo test -p hat-opt --test filetests` (which
//! also deletes the snapshots of files that are gone), or review them with `cargo insta review`.
//! `HAT_FILETEST=TEXT` runs only the files whose path contains TEXT. Files with `// REQUIRES:
//! spirv-tools` are skipped where this build has no SPIRV-Tools (`hat_lowering::spirv_tools_version`).

use std::path::Path;

#[test]
fn file_tests() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    hat_file_tests::FileTests::new(env!("CARGO_BIN_EXE_hat-opt"), "hat-opt", manifest.join("../.."))
        .snapshots(manifest.join("tests/snapshots"))
        .temporary_directory(Path::new(env!("CARGO_TARGET_TMPDIR")).join("filetests"))
        // `--emit=spirv-asm` needs the system's SPIRV-Tools; CI (HAT_REQUIRE_VULKAN=1) has it.
        .feature("spirv-tools", hat_lowering::spirv_tools_version().is_some())
        .missing_features_fail(std::env::var("HAT_REQUIRE_VULKAN").is_ok_and(|v| v == "1"))
        .check("tests/filetests");
}
