//! Malformed input never crashes `hat-opt`: every file of `tests/malformed/` (each exercising one
//! error, its first line saying `// error: <text the diagnostic contains>`) and input generated
//! here (regions, attributes and types nested thousands of levels deep) gives a diagnostic with
//! `file:line:col` on stderr and exit status 1 — never a panic (101), a stack overflow (a signal)
//! or success. The rendered diagnostics are snapshotted, one snapshot per file
//! (`cargo insta review` to accept changes).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `tests/malformed/` of the workspace.
fn malformed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/malformed")
}

/// The files of the corpus, sorted by name.
fn malformed_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(malformed_dir())
        .expect("tests/malformed exists")
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "hat"))
        .collect();
    files.sort();
    files
}

/// Runs hat-opt in `directory` with `args`, feeding `stdin` to it.
fn hat_opt(directory: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hat-opt"))
        .current_dir(directory)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hat-opt starts");
    let mut input = child.stdin.take().expect("piped stdin");
    // hat-opt may stop reading early; a broken pipe is not the test's concern.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().expect("hat-opt runs")
}

/// Runs hat-opt on `name` (a file in the corpus directory, named relative to it so that the
/// diagnostics, and their snapshots, do not depend on where the workspace lives).
fn hat_opt_on_file(name: &str, extra_args: &[&str]) -> Output {
    let mut args = extra_args.to_vec();
    args.push(name);
    hat_opt(&malformed_dir(), &args, b"")
}

/// Whether `text` contains `name:LINE:COL` with LINE and COL decimal numbers.
fn has_location(text: &str, name: &str) -> bool {
    let prefix = format!("{name}:");
    text.match_indices(&prefix).any(|(at, _)| {
        let rest = &text[at + prefix.len()..];
        let line_digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let rest = &rest[line_digits..];
        line_digits > 0 && rest.starts_with(':') && rest[1..].bytes().next().is_some_and(|b| b.is_ascii_digit())
    })
}

/// What is wrong with a run that should have failed cleanly on `name`; `None` when it did.
fn clean_failure_problem(name: &str, output: &Output) -> Option<String> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut problems = Vec::new();
    match output.status.code() {
        Some(1) => {}
        Some(code) => problems.push(format!("exit status {code}, expected 1")),
        None => problems.push(format!("killed by a signal ({:?}): a crash or a stack overflow", output.status)),
    }
    if stderr.contains("panicked") || stderr.contains("overflowed its stack") {
        problems.push("stderr reports a panic or a stack overflow".to_string());
    }
    if !stderr.contains("error") {
        problems.push("stderr has no 'error'".to_string());
    }
    if !has_location(&stderr, name) {
        problems.push(format!("stderr has no '{name}:LINE:COL' location"));
    }
    if problems.is_empty() {
        return None;
    }
    let shown: String = stderr.chars().take(2000).collect();
    Some(format!("{name}: {}\n--- stderr ---\n{shown}", problems.join("; ")))
}

/// The expected diagnostic written on the file's first line, after `// error:`.
fn expected_diagnostic(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let first_line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let first_line = std::str::from_utf8(first_line).map_err(|_| "the first line is not UTF-8".to_string())?;
    match first_line.strip_prefix("// error:") {
        Some(text) if !text.trim().is_empty() => Ok(text.trim().to_string()),
        _ => Err("the first line must be '// error: <expected diagnostic>'".to_string()),
    }
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).expect("a UTF-8 file name")
}

#[test]
fn corpus_is_large_enough() {
    let files = malformed_files();
    assert!(
        files.len() >= 40,
        "tests/malformed has {} files; the acceptance criterion asks for at least 40",
        files.len()
    );
}

/// Every malformed file: exit status exactly 1, an error with `file:line:col`, no panic, and the
/// diagnostic its first line promises. All files are run before reporting, so one failure does not
/// hide another.
#[test]
fn every_malformed_file_fails_with_its_diagnostic() {
    let mut failures = Vec::new();
    for path in malformed_files() {
        let name = file_name(&path);
        let output = hat_opt_on_file(name, &[]);
        if let Some(problem) = clean_failure_problem(name, &output) {
            failures.push(problem);
            continue;
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        match expected_diagnostic(&path) {
            Ok(expected) if stderr.contains(&expected) => {}
            Ok(expected) => failures
                .push(format!("{name}: stderr lacks the expected diagnostic '{expected}'\n--- stderr ---\n{stderr}")),
            Err(problem) => failures.push(format!("{name}: {problem}")),
        }
    }
    assert!(failures.is_empty(), "{} malformed input(s) misbehaved:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// The rendered diagnostics of every malformed file, one snapshot each.
#[test]
fn malformed_diagnostics_snapshots() {
    for path in malformed_files() {
        let name = file_name(&path);
        let output = hat_opt_on_file(name, &[]);
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 file stem");
        let stderr = String::from_utf8_lossy(&output.stderr);
        insta::assert_snapshot!(stem, stderr);
    }
}

// ----- generated input ------------------------------------------------------------------------

/// Writes `text` to a fresh file named `name` in a scratch directory and runs hat-opt on it there.
fn hat_opt_on_generated(name: &str, text: &str, extra_args: &[&str]) -> Output {
    let directory = std::env::temp_dir().join(format!("hat-opt-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("scratch directory");
    std::fs::write(directory.join(name), text).expect("scratch file");
    let mut args = extra_args.to_vec();
    args.push(name);
    let output = hat_opt(&directory, &args, b"");
    let _ = std::fs::remove_file(directory.join(name));
    output
}

/// `depth` generic ops, each holding the next in its single region; `closed` says whether the
/// regions are closed again (otherwise the input is truncated at the innermost region).
fn nested_regions(depth: usize, closed: bool) -> String {
    let mut text = String::with_capacity(depth * 32);
    for _ in 0..depth {
        text.push_str("\"test.op\"() ({\n");
    }
    if closed {
        for _ in 0..depth {
            text.push_str("}) : () -> ()\n");
        }
    }
    text
}

/// `depth` nested `scf.if` ops in their custom form (registered ops, no flag needed).
fn nested_ifs(depth: usize) -> String {
    let mut text = String::from("%c = arith.constant true\n");
    for _ in 0..depth {
        text.push_str("scf.if %c {\n");
    }
    for _ in 0..depth {
        text.push_str("}\n");
    }
    text
}

fn assert_fails_cleanly(name: &str, text: &str, extra_args: &[&str]) {
    let output = hat_opt_on_generated(name, text, extra_args);
    if let Some(problem) = clean_failure_problem(name, &output) {
        panic!("{problem}");
    }
}

#[test]
fn regions_nested_5000_deep_give_a_diagnostic() {
    assert_fails_cleanly("nested-5000.hat", &nested_regions(5000, true), &["--allow-unregistered-dialect"]);
}

#[test]
fn regions_nested_100000_deep_give_a_diagnostic() {
    assert_fails_cleanly("nested-100000.hat", &nested_regions(100_000, true), &["--allow-unregistered-dialect"]);
}

#[test]
fn regions_nested_deep_without_the_flag_give_a_diagnostic() {
    assert_fails_cleanly("nested-unregistered.hat", &nested_regions(5000, true), &[]);
}

#[test]
fn truncated_deep_nesting_gives_a_diagnostic() {
    assert_fails_cleanly("nested-truncated.hat", &nested_regions(100_000, false), &["--allow-unregistered-dialect"]);
}

#[test]
fn scf_if_nested_5000_deep_gives_a_diagnostic() {
    assert_fails_cleanly("nested-if-5000.hat", &nested_ifs(5000), &[]);
}

#[test]
fn regions_nested_500_deep_are_accepted() {
    let output = hat_opt_on_generated("nested-500.hat", &nested_regions(500, true), &["--allow-unregistered-dialect"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "500 nested regions must be accepted; stderr:\n{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.matches("\"test.op\"").count(), 500, "every nested op is printed");
}

#[test]
fn scf_if_nested_500_deep_is_accepted() {
    let output = hat_opt_on_generated("nested-if-500.hat", &nested_ifs(500), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "500 nested scf.if must be accepted; stderr:\n{stderr}");
}

/// Attributes and types nest without regions: `{a = {a = ...}}`, `[[...]]`, `((...) -> i32)`,
/// `memref<memref<...>>`. They must not overflow the stack either.
#[test]
fn deeply_nested_attributes_and_types_give_a_diagnostic() {
    const DEPTH: usize = 100_000;
    let cases = [
        (
            "nested-dictionary.hat",
            format!("\"test.op\"() {{a = {}1{}}} : () -> ()\n", "{a = ".repeat(DEPTH), "}".repeat(DEPTH)),
        ),
        ("nested-array.hat", format!("\"test.op\"() {{a = {}1{}}} : () -> ()\n", "[".repeat(DEPTH), "]".repeat(DEPTH))),
        (
            "nested-function-type.hat",
            format!("\"test.op\"() : () -> {}){}\n", "(".repeat(DEPTH), " -> i32)".repeat(DEPTH)),
        ),
        ("nested-memref.hat", format!("\"test.op\"() : () -> {}i32{}\n", "memref<".repeat(DEPTH), ">".repeat(DEPTH))),
        ("nested-unclosed-array.hat", format!("\"test.op\"() {{a = {}", "[".repeat(DEPTH))),
    ];
    let mut failures = Vec::new();
    for (name, text) in &cases {
        let output = hat_opt_on_generated(name, text, &["--allow-unregistered-dialect"]);
        if let Some(problem) = clean_failure_problem(name, &output) {
            failures.push(problem);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ----- standard input -------------------------------------------------------------------------

#[test]
fn diagnostic_for_standard_input() {
    let text = b"%a = arith.constant 1 : i32\n%b = arith.addi %a, %missing : i32\n";
    let output = hat_opt(&malformed_dir(), &["-"], text);
    if let Some(problem) = clean_failure_problem("<stdin>", &output) {
        panic!("{problem}");
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("<stdin>:2:21"), "the diagnostic points at the use of %missing:\n{stderr}");
    assert!(stderr.contains("use of undeclared SSA value name '%missing'"), "{stderr}");
}

#[test]
fn diagnostic_for_invalid_utf8_on_standard_input() {
    let output = hat_opt(&malformed_dir(), &["-"], b"%a = arith.constant 1 : i32\n%b = \xff\xfe\n");
    if let Some(problem) = clean_failure_problem("<stdin>", &output) {
        panic!("{problem}");
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("<stdin>:2:6"), "{stderr}");
    assert!(stderr.contains("input is not valid UTF-8"), "{stderr}");
}

#[test]
fn empty_standard_input_is_an_empty_module() {
    let output = hat_opt(&malformed_dir(), &["-"], b"");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
}

// ----- line endings ---------------------------------------------------------------------------

/// The same two-line program after a comment line, with each kind of line ending: the comment
/// ends at the line ending (a CR alone included, as old Mac files have), nothing is lost, and a
/// diagnostic points at the right line.
#[test]
fn every_line_ending_ends_a_line() {
    for (ending, name) in [("\n", "lf"), ("\r\n", "crlf"), ("\r", "cr")] {
        let valid = ["// a comment", "%a = arith.constant 1 : i32", "%b = arith.addi %a, %a : i32", ""].join(ending);
        let output = hat_opt(&malformed_dir(), &["-"], valid.as_bytes());
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{name}: {stderr}");
        assert!(stdout.contains("arith.addi"), "{name}: the program after the comment is kept:\n{stdout}");

        let invalid =
            ["// a comment", "%a = arith.constant 1 : i32", "%b = arith.addi %a, %missing : i32", ""].join(ending);
        let output = hat_opt(&malformed_dir(), &["-"], invalid.as_bytes());
        if let Some(problem) = clean_failure_problem("<stdin>", &output) {
            panic!("{name}: {problem}");
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("<stdin>:3:21"), "{name}: the diagnostic points at the use of %missing:\n{stderr}");
        // The snippet shows line 3 alone, without a stray carriage return.
        assert!(stderr.contains("3 │ %b = arith.addi %a, %missing : i32\n"), "{name}: {stderr:?}");
        assert!(!stderr.contains('\r'), "{name}: {stderr:?}");
    }
}

/// `--split-input-file` and `--verify-diagnostics` count lines as the diagnostics do, whatever the
/// line endings: a separator ends a chunk, and a directive's line is the line it is on.
#[test]
fn split_input_and_expected_diagnostics_count_every_line_ending() {
    for (ending, name) in [("\n", "lf"), ("\r\n", "crlf"), ("\r", "cr")] {
        let split = ["%a = arith.constant 1 : i32", "// -----", "%b = arith.addi %a, %missing : i32", ""].join(ending);
        let output = hat_opt(&malformed_dir(), &["-", "--split-input-file"], split.as_bytes());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains("<stdin>:3:17"), "{name}: the second chunk keeps its line numbers:\n{stderr}");
        assert!(String::from_utf8_lossy(&output.stdout).contains("arith.constant"), "{name}: the first chunk runs");

        let expected = [
            "%a = arith.constant 1 : i32",
            "// expected-error@+1 {{use of undeclared SSA value name}}",
            "%b = arith.addi %a, %missing : i32",
            "",
        ]
        .join(ending);
        let output = hat_opt(&malformed_dir(), &["-", "--verify-diagnostics"], expected.as_bytes());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{name}: the directive matches the error on its line:\n{stderr}");
        let misplaced = expected.replace("@+1", "@+2");
        let output = hat_opt(&malformed_dir(), &["-", "--verify-diagnostics"], misplaced.as_bytes());
        assert_eq!(output.status.code(), Some(1), "{name}: a directive for another line does not match");
    }
}

// ----- long lines -------------------------------------------------------------------------------

/// A 50 MB literal on one line: the diagnostic shows a window of the line around the error, not
/// the whole line and an underline as long, and still gives the exact `file:line:col`.
#[test]
fn a_huge_literal_gives_a_short_diagnostic() {
    // The size reported; the other cases use less, to keep the test quick (the output does not
    // depend on the size once a line is longer than a snippet shows).
    const SIZE: usize = 50_000_000;
    const SMALLER: usize = 5_000_000;
    let cases = [
        // The error is at the literal: its underline is clipped.
        ("huge-integer.hat", format!("%a = arith.constant {} : i32\n", "1".repeat(SIZE)), "huge-integer.hat:1:21"),
        // The error is after it: the line is shown from shortly before the error.
        (
            "huge-string.hat",
            format!("\"test.op\"() {{a = \"{}\"}} : () -> (), %bad\n", "x".repeat(SMALLER)),
            "huge-string.hat:1:5000032",
        ),
        // The error is at a 50 MB name, which the message echoes: the message is clipped too.
        ("huge-name.hat", format!("%a = arith.constant 1 : i32\n  {}\n", "x".repeat(SMALLER)), "huge-name.hat:2:3"),
    ];
    for (name, text, location) in &cases {
        let output = hat_opt_on_generated(name, text, &["--allow-unregistered-dialect"]);
        if let Some(problem) = clean_failure_problem(name, &output) {
            panic!("{problem}");
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let shown: String = stderr.chars().take(4000).collect();
        assert!(stderr.len() < 4000, "{name}: {} bytes of diagnostics:\n{shown}", stderr.len());
        assert!(stderr.contains(location), "{name}: {stderr}");
        assert!(stderr.contains('…'), "{name}: the cut is marked:\n{stderr}");
    }
}
