//! File tests, as LLVM's `lit` runs them, for any opt tool built on hat (`hat_opt::main`): every
//! `.hat` file under a directory begins with `// RUN:` lines, each the command line of one run of
//! the tool on the file. A run's exit status, standard output and standard error are compared
//! with an `insta` snapshot, `PREFIX__PATH.snap` in the snapshot directory, PATH being the file's
//! path under the directory without `.hat` and with `/` written `__` (and `-runN` appended when
//! the file has several runs).
//!
//! RUN lines follow `lit`:
//! - the words are split as a shell splits them (quotes, backslashes); a line ending in `\`
//!   continues on the next RUN line; the leading tool name may be left out;
//! - `%s` is the file (its path relative to the root, where the tool runs); without `%s`, and
//!   without `< FILE` (standard input), the file is the last argument;
//! - `%t` is a temporary file: what the tool writes there is shown in the snapshot;
//! - `not` first: the run must fail (exit status not 0); otherwise it must succeed. This is
//!   checked besides the snapshot, so a failing `--verify-diagnostics` run cannot be blessed.
//!
//! A `// REQUIRES: NAME, ...` line (anywhere in the file) names features the file needs, as
//! `lit`'s does: the tests declare each one and whether this machine has it ([`FileTests::feature`]). A
//! file that needs a missing feature is skipped (its snapshots are kept), or fails under
//! [`FileTests::missing_features_fail`], as CI runs them; a name never declared is an error.
//!
//! Times (`--mlir-timing`, the `time:` line of a `--run` summary and the `..._ms` of its JSON
//! form) are replaced by `[time]`. Bless every snapshot with `INSTA_UPDATE=always` (which also
//! deletes the snapshots of files that are gone), or review them with `cargo insta review`.
//! `HAT_FILETEST=TEXT` runs only the files whose path contains TEXT.
//!
//! ```no_run
//! // tests/filetests.rs of a vendor's crate, whose binary is `vendor-opt`:
//! #[test]
//! fn file_tests() {
//!     let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
//!     hat_file_tests::FileTests::new(env!("CARGO_BIN_EXE_vendor-opt"), "vendor-opt", root)
//!         .snapshots(root.join("tests/snapshots"))
//!         .check("tests/filetests");
//! }
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A tool's file tests: where its binary is, what RUN lines call it, and where it runs.
pub struct FileTests {
    binary: PathBuf,
    tool_name: String,
    root: PathBuf,
    snapshots: PathBuf,
    prefix: String,
    environment: Vec<(String, String)>,
    temporary_directory: PathBuf,
    /// The features `REQUIRES:` lines may name, and whether each is available.
    features: Vec<(String, bool)>,
    missing_features_fail: bool,
}

impl FileTests {
    /// The file tests of the tool at `binary`, which RUN lines may name `tool_name`, run in
    /// `root` (paths in RUN lines and snapshots are relative to it). Snapshots go to
    /// `ROOT/tests/snapshots` with the prefix `filetests`, and every run has `HAT_BACKEND=cpu`
    /// (snapshots are of the CPU backend, whatever devices exist) unless changed.
    pub fn new(binary: impl Into<PathBuf>, tool_name: &str, root: impl Into<PathBuf>) -> FileTests {
        let root: PathBuf = root.into();
        let root = root.canonicalize().unwrap_or(root);
        FileTests {
            binary: binary.into(),
            tool_name: tool_name.to_string(),
            snapshots: root.join("tests/snapshots"),
            root,
            prefix: "filetests".to_string(),
            environment: vec![("HAT_BACKEND".to_string(), "cpu".to_string())],
            temporary_directory: std::env::temp_dir().join(format!("{tool_name}-filetests-{}", std::process::id())),
            features: Vec::new(),
            missing_features_fail: false,
        }
    }

    /// Declares a feature that `// REQUIRES:` lines may name, and whether it is available here.
    pub fn feature(mut self, name: &str, available: bool) -> FileTests {
        self.features.retain(|(n, _)| n != name);
        self.features.push((name.to_string(), available));
        self
    }

    /// Whether a file that requires a missing feature fails (`true`) instead of being skipped:
    /// on a machine that must have everything, as CI's.
    pub fn missing_features_fail(mut self, fail: bool) -> FileTests {
        self.missing_features_fail = fail;
        self
    }

    /// The directory of the snapshots.
    pub fn snapshots(mut self, directory: impl Into<PathBuf>) -> FileTests {
        self.snapshots = directory.into();
        self
    }

    /// The prefix of the snapshots' names (`filetests` unless changed).
    pub fn prefix(mut self, prefix: &str) -> FileTests {
        self.prefix = prefix.to_string();
        self
    }

    /// Sets an environment variable for every run.
    pub fn env(mut self, name: &str, value: &str) -> FileTests {
        self.environment.retain(|(n, _)| n != name);
        self.environment.push((name.to_string(), value.to_string()));
        self
    }

    /// Where `%t` files are written (a directory of the system's temporary one unless changed).
    pub fn temporary_directory(mut self, directory: impl Into<PathBuf>) -> FileTests {
        self.temporary_directory = directory.into();
        self
    }

    /// Checks every file test under `directory` (relative to the root), and panics with every
    /// problem found: a run whose output differs from its snapshot, a run whose exit status is
    /// not the one expected, a file without RUN lines, a snapshot without a file test.
    pub fn check(&self, directory: &str) {
        let filter = std::env::var("HAT_FILETEST").ok();
        let directory = self.root.join(directory);
        let files = hat_files(&directory);
        assert!(!files.is_empty(), "no file tests under {}", directory.display());
        let mut failures = Vec::new();
        let mut snapshots = Vec::new();
        for path in &files {
            let display = path.strip_prefix(&self.root).unwrap_or(path).display().to_string();
            if filter.as_ref().is_some_and(|f| !display.contains(f.as_str())) {
                continue;
            }
            match self.check_file(&directory, path) {
                Ok(names) => snapshots.extend(names),
                Err(problems) => failures.extend(problems.into_iter().map(|problem| format!("{display}: {problem}"))),
            }
        }
        if filter.is_none() && failures.is_empty() {
            let stale = self.stale_snapshots(&snapshots);
            if std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always") {
                for path in &stale {
                    std::fs::remove_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                }
            } else if !stale.is_empty() {
                let list: Vec<String> = stale.iter().map(|p| p.display().to_string()).collect();
                failures.push(format!(
                    "snapshots without a file test (delete them, or bless with INSTA_UPDATE=always):\n  {}",
                    list.join("\n  ")
                ));
            }
        }
        assert!(failures.is_empty(), "{} problem(s) in file tests:\n{}", failures.len(), failures.join("\n"));
    }

    /// Runs the tool as `run` says.
    fn execute(&self, run: &Run, temporary: &Path) -> Outcome {
        let _ = std::fs::remove_file(temporary);
        let mut command = Command::new(&self.binary);
        command.current_dir(&self.root).args(&run.arguments).env("RUST_BACKTRACE", "0").env_remove("RUST_LOG");
        for (name, value) in &self.environment {
            command.env(name, value);
        }
        command.stdin(match &run.stdin {
            Some(file) => {
                Stdio::from(std::fs::File::open(self.root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}")))
            }
            None => Stdio::null(),
        });
        let output = command.output().unwrap_or_else(|e| panic!("{}: {e}", self.binary.display()));
        let names_temporary = run.line.contains("%t");
        Outcome {
            // A signal (no status) shows as -1.
            status: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            temporary: names_temporary.then(|| std::fs::read_to_string(temporary).ok()),
        }
    }

    /// Checks one file of `directory`: every run against its snapshot and its expected exit
    /// status. Returns the names of its snapshots, or what went wrong (insta shows the
    /// differences from snapshots).
    fn check_file(&self, directory: &Path, path: &Path) -> Result<Vec<String>, Vec<String>> {
        let root = &self.root;
        let relative_to_root = path.strip_prefix(root).expect("file under the root");
        let relative = path.strip_prefix(directory).expect("file under the tests' directory");
        let display = relative_to_root.to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).map_err(|e| vec![format!("cannot read: {e}")])?;
        std::fs::create_dir_all(&self.temporary_directory).map_err(|e| vec![e.to_string()])?;
        let base_name = snapshot_name(relative, 0, 1);
        let temporary = self.temporary_directory.join(format!("{base_name}.tmp"));
        let header =
            parse_header(&text, &self.tool_name, &display, &temporary.to_string_lossy()).map_err(|e| vec![e])?;
        let runs = header.runs;
        let snapshot_names =
            || (0..runs.len()).map(|index| format!("{}__{}", self.prefix, snapshot_name(relative, index, runs.len())));
        let mut missing = Vec::new();
        for required in &header.requires {
            match self.features.iter().find(|(name, _)| name == required) {
                Some((_, true)) => {}
                Some((_, false)) => missing.push(required.as_str()),
                None => {
                    let known: Vec<&str> = self.features.iter().map(|(name, _)| name.as_str()).collect();
                    return Err(vec![format!(
                        "REQUIRES names `{required}`, which is not a declared feature (declared: {})",
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    )]);
                }
            }
        }
        if !missing.is_empty() {
            let missing = missing.join(", ");
            if self.missing_features_fail {
                return Err(vec![format!("requires {missing}, which this machine lacks")]);
            }
            eprintln!("skipped: {display} (requires {missing}, which this machine lacks)");
            return Ok(snapshot_names().collect());
        }
        let mut names = Vec::new();
        let mut problems = Vec::new();
        for (index, run) in runs.iter().enumerate() {
            let name = snapshot_names().nth(index).expect("one name per run");
            let outcome = self.execute(run, &temporary);
            let mut settings = insta::Settings::clone_current();
            settings.set_snapshot_path(&self.snapshots);
            settings.set_prepend_module_to_snapshot(false);
            settings.set_omit_expression(true);
            settings.set_description(format!("{display}, RUN: {}", run.line));
            settings.add_filter(&regex::escape(&temporary.to_string_lossy()), "%t");
            settings.add_filter(&regex::escape(&format!("{}/", root.display())), "");
            if run.arguments.iter().any(|a| a.starts_with("--mlir-timing")) {
                // Right-aligned numbers: the spaces before them vary too.
                settings.add_filter(r" *\d+\.\d+", " [time]");
            }
            // The last line of a `--run` summary, and the times of its JSON form.
            settings.add_filter(r"(?m)^time: +\d+\.\d+ ms$", "time:       [time] ms");
            settings.add_filter(r#""(\w+_ms)":[-+0-9.e]+"#, r#""$1":"[time]""#);
            let snapshot = snapshot_text(&outcome);
            // Catch insta's panic so that every file is checked (and gets a `.snap.new` to review).
            let matched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                settings.bind(|| insta::assert_snapshot!(name.clone(), snapshot));
            }));
            if matched.is_err() {
                problems.push(format!("run {} (`{}`): output differs from snapshot {name}", index + 1, run.line));
            }
            let failed = outcome.status != 0;
            if failed != run.must_fail {
                problems.push(format!(
                    "run {} (`{}`) exited with status {}; {}\n{}",
                    index + 1,
                    run.line,
                    outcome.status,
                    if run.must_fail { "expected a failure (`not`)" } else { "expected success" },
                    outcome.stderr
                ));
            }
            names.push(name);
        }
        if problems.is_empty() {
            Ok(names)
        } else {
            Err(problems)
        }
    }

    /// Snapshots with the prefix whose file test is gone: deleted when blessing, an error
    /// otherwise.
    fn stale_snapshots(&self, expected: &[String]) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.snapshots) else { return Vec::new() };
        let prefix = format!("{}__", self.prefix);
        let mut stale = Vec::new();
        for entry in entries.flatten() {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if !file_name.starts_with(&prefix) {
                continue;
            }
            let Some(name) = file_name.strip_suffix(".snap") else { continue };
            if !expected.iter().any(|e| e == name) {
                stale.push(entry.path());
            }
        }
        stale.sort();
        stale
    }
}

/// Every `.hat` file under `directory`, sorted.
fn hat_files(directory: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let entries = std::fs::read_dir(&directory).unwrap_or_else(|e| panic!("{}: {e}", directory.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "hat") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// One run of the tool, as a RUN line describes it.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    /// The RUN line as written (continuations joined), for the snapshot's header.
    line: String,
    arguments: Vec<String>,
    /// A file to read standard input from (`< FILE`).
    stdin: Option<String>,
    /// `not`: the run must fail.
    must_fail: bool,
}

/// What the comment lines that begin a file test say.
struct Header {
    runs: Vec<Run>,
    /// The features named by `REQUIRES:` lines.
    requires: Vec<String>,
}

/// The runs of the RUN lines that begin `text`; `file` replaces `%s`, `temporary` replaces `%t`.
#[cfg(test)]
fn parse_runs(text: &str, tool_name: &str, file: &str, temporary: &str) -> Result<Vec<Run>, String> {
    parse_header(text, tool_name, file, temporary).map(|header| header.runs)
}

/// The RUN and REQUIRES lines that begin `text`.
fn parse_header(text: &str, tool_name: &str, file: &str, temporary: &str) -> Result<Header, String> {
    let mut lines = Vec::new();
    let mut requires = Vec::new();
    let mut pending: Option<String> = None;
    let mut header = true;
    for line in text.lines() {
        // A REQUIRES line counts wherever it is, as in lit; RUN lines only in the header.
        if let Some(features) = line.trim_start().strip_prefix("// REQUIRES:") {
            if pending.is_some() {
                return Err("a RUN line ends with `\\` but a REQUIRES line follows".into());
            }
            let names = features.split(',').map(str::trim);
            if names.clone().any(str::is_empty) {
                return Err(format!("REQUIRES line without a feature name: `{}`", line.trim()));
            }
            requires.extend(names.map(str::to_string));
            continue;
        }
        if !header {
            continue;
        }
        let Some(command) = line.trim_start().strip_prefix("// RUN:") else {
            if pending.is_some() {
                return Err("the last RUN line ends with `\\` but no RUN line follows".into());
            }
            header = false;
            continue;
        };
        let joined = match pending.take() {
            Some(previous) => format!("{previous} {}", command.trim()),
            None => command.trim().to_string(),
        };
        match joined.strip_suffix('\\') {
            Some(head) => pending = Some(head.trim_end().to_string()),
            None => lines.push(joined),
        }
    }
    if pending.is_some() {
        return Err("the last RUN line ends with `\\` but no RUN line follows".into());
    }
    if lines.is_empty() {
        return Err("a file test must begin with a `// RUN: ARGS` line".into());
    }
    let runs = lines.into_iter().map(|line| parse_run(line, tool_name, file, temporary)).collect::<Result<_, _>>()?;
    Ok(Header { runs, requires })
}

fn parse_run(line: String, tool_name: &str, file: &str, temporary: &str) -> Result<Run, String> {
    let mut words = shlex::split(&line).ok_or_else(|| format!("unbalanced quotes in RUN line `{line}`"))?;
    let must_fail = words.first().is_some_and(|w| w == "not");
    if must_fail {
        words.remove(0);
    }
    if words.first().is_some_and(|w| w == tool_name) {
        words.remove(0);
    }
    let substitute = |word: &str| word.replace("%s", file).replace("%t", temporary);
    let mut arguments = Vec::new();
    let mut stdin = None;
    let mut names_file = false;
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        if word == "<" {
            let source = words.next().ok_or_else(|| format!("`<` without a file in RUN line `{line}`"))?;
            stdin = Some(substitute(&source));
            names_file = true;
            continue;
        }
        names_file |= word.contains("%s");
        arguments.push(substitute(&word));
    }
    if !names_file {
        arguments.push(file.to_string());
    }
    Ok(Run { line, arguments, stdin, must_fail })
}

/// What a run did.
struct Outcome {
    status: i32,
    stdout: String,
    stderr: String,
    /// What the run wrote to `%t`, when it names it: `None` if it wrote nothing there.
    temporary: Option<Option<String>>,
}

fn snapshot_text(outcome: &Outcome) -> String {
    let mut text = format!("exit: {}\n--- stdout\n{}", outcome.status, outcome.stdout);
    let section = |text: &mut String, name: &str, body: &str| {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("--- {name}\n{body}"));
    };
    section(&mut text, "stderr", &outcome.stderr);
    if let Some(written) = &outcome.temporary {
        section(&mut text, "%t", written.as_deref().unwrap_or("(not written)\n"));
    }
    text
}

/// The snapshot's name: the path under the tests' directory, without `.hat`, `/` written `__`.
fn snapshot_name(relative: &Path, run_index: usize, run_count: usize) -> String {
    let stem = relative.with_extension("");
    let parts: Vec<String> = stem.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let name = parts.join("__");
    if run_count > 1 {
        format!("{name}-run{}", run_index + 1)
    } else {
        name
    }
}

#[cfg(test)]
mod harness {
    use super::*;

    fn run(line: &str) -> Run {
        let mut runs = parse_runs(&format!("// RUN: {line}\nmodule {{}}\n"), "hat-opt", "t.hat", "/tmp/x").unwrap();
        assert_eq!(runs.len(), 1);
        runs.remove(0)
    }

    #[test]
    fn the_file_is_appended_unless_named() {
        assert_eq!(run("--cse").arguments, ["--cse", "t.hat"]);
        assert_eq!(run("hat-opt %s --cse").arguments, ["t.hat", "--cse"]);
        assert_eq!(run("--split-input-file -o %t").arguments, ["--split-input-file", "-o", "/tmp/x", "t.hat"]);
    }

    #[test]
    fn words_are_split_like_a_shell() {
        let parsed =
            run(r#"--pass-pipeline='builtin.module(canonicalize{max-iterations=3 region-simplify})' "a b" c\ d"#);
        assert_eq!(
            parsed.arguments,
            ["--pass-pipeline=builtin.module(canonicalize{max-iterations=3 region-simplify})", "a b", "c d", "t.hat"]
        );
        assert!(parse_runs("// RUN: 'open\n", "hat-opt", "t.hat", "t").is_err());
    }

    #[test]
    fn standard_input_and_expected_failures() {
        let parsed = run("not hat-opt - < %s");
        assert_eq!(parsed.arguments, ["-"]);
        assert_eq!(parsed.stdin.as_deref(), Some("t.hat"));
        assert!(parsed.must_fail);
    }

    #[test]
    fn several_runs_and_continuations() {
        let text = "// RUN: --cse \\\n// RUN:   --dce\n// RUN: --inline\n// RUN: not --bad\nx\n// RUN: --ignored\n";
        let runs = parse_runs(text, "hat-opt", "t.hat", "t").unwrap();
        let arguments: Vec<&[String]> = runs.iter().map(|r| r.arguments.as_slice()).collect();
        assert_eq!(arguments.len(), 3);
        assert_eq!(arguments[0], ["--cse", "--dce", "t.hat"]);
        assert_eq!(arguments[1], ["--inline", "t.hat"]);
        assert!(runs[2].must_fail);
    }

    #[test]
    fn a_file_without_run_lines_is_an_error() {
        assert!(parse_runs("module {}\n", "hat-opt", "t.hat", "t").is_err());
        assert!(parse_runs("// RUN: --cse \\\nmodule {}\n", "hat-opt", "t.hat", "t").is_err());
        // At the end of the file as in the middle: a continuation needs a next RUN line.
        assert!(parse_runs("// RUN: --cse \\", "hat-opt", "t.hat", "t").is_err());
    }

    #[test]
    fn requires_lines_name_features() {
        let text = "// REQUIRES: spirv-tools\n// RUN: --emit=spirv-asm\n// REQUIRES: a, b\nmodule {}\n// REQUIRES: c\n";
        let header = parse_header(text, "hat-opt", "t.hat", "t").unwrap();
        assert_eq!(header.requires, ["spirv-tools", "a", "b", "c"], "anywhere in the file, as in lit");
        assert_eq!(header.runs.len(), 1);
        assert!(parse_header("// REQUIRES: a,\n// RUN: x\n", "hat-opt", "t.hat", "t").is_err());
        assert!(parse_header("// RUN: x \\\n// REQUIRES: a\n// RUN: y\n", "hat-opt", "t.hat", "t").is_err());
    }

    #[test]
    fn a_file_that_needs_a_missing_feature_is_skipped_or_fails() {
        let root = std::env::temp_dir().join(format!("hat-file-tests-requires-{}", std::process::id()));
        let directory = root.join("tests");
        std::fs::create_dir_all(&directory).unwrap();
        let file = directory.join("needs.hat");
        std::fs::write(&file, "// REQUIRES: gpu\n// RUN: --run\n// RUN: --emit\nmodule {}\n").unwrap();
        // The binary does not exist: a skipped file never runs it.
        let tests = |available| FileTests::new(root.join("no-such-tool"), "t", &root).feature("gpu", available);
        let names = tests(false).check_file(&directory, &file).expect("skipped");
        assert_eq!(names, ["filetests__needs-run1", "filetests__needs-run2"]);
        let problems = tests(false).missing_features_fail(true).check_file(&directory, &file).unwrap_err();
        assert!(problems[0].contains("requires gpu"), "{problems:?}");
        let undeclared = FileTests::new(root.join("no-such-tool"), "t", &root).check_file(&directory, &file);
        assert!(undeclared.unwrap_err()[0].contains("not a declared feature"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn snapshot_names_follow_the_path() {
        assert_eq!(snapshot_name(Path::new("hat-opt/cse.hat"), 0, 1), "hat-opt__cse");
        assert_eq!(snapshot_name(Path::new("a/b/c.hat"), 1, 2), "a__b__c-run2");
    }
}
