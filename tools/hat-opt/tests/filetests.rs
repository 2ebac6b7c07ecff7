//! hat-opt's file tests: every `.hat` file under `tests/filetests/` (at the workspace root)
//! begins with `// RUN:` lines, each the command line of one `hat-opt` run on the file, whose
//! exit status, standard output and standard error are compared with the snapshot
//! `tests/snapshots/filetests__PATH.snap` beside this file (the harness, its RUN-line syntax and
//! its filters: the crate `hat-file-tests`, tools/file-tests/).
//!
//! Bless every snapshot with `INSTA_UPDATE=always cargo test -p hat-opt --test filetests` (which
//! also deletes the snapshots of files that are gone), or review them with `cargo insta review`.
//! `HAT_FILETEST=TEXT` runs only the files whose path contains TEXT.

use std::path::Path;

#[test]
fn file_tests() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    hat_file_tests::FileTests::new(env!("CARGO_BIN_EXE_hat-opt"), "hat-opt", manifest.join("../.."))
        .snapshots(manifest.join("tests/snapshots"))
        .temporary_directory(Path::new(env!("CARGO_TARGET_TMPDIR")).join("filetests"))
        .check("tests/filetests");
}
