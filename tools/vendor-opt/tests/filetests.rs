//! vendor-opt's file tests: every `.hat` file under `tests/filetests/` of this crate begins with
//! `// RUN:` lines, each one run of the `vendor-opt` binary, whose exit status and output are
//! compared with the snapshot `tests/snapshots/filetests__PATH.snap` (the harness: the crate
//! `hat-file-tests`). Bless with `INSTA_UPDATE=always cargo test -p vendor-opt --test filetests`.

use std::path::Path;

#[test]
fn file_tests() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    hat_file_tests::FileTests::new(env!("CARGO_BIN_EXE_vendor-opt"), "vendor-opt", manifest)
        .snapshots(manifest.join("tests/snapshots"))
        .temporary_directory(Path::new(env!("CARGO_TARGET_TMPDIR")).join("filetests"))
        .check("tests/filetests");
}
