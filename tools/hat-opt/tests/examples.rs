//! Every example runs from the command line as `examples/README.md` documents it ("Running the
//! examples": one `hat-opt examples/NN-*.hat --run ...` line per example, read from there so that
//! the documentation and this test cannot drift apart), and under every transfer strategy its
//! run equals the reference semantics (`--run-check`): as documented, with every count it takes
//! set to 0 too (zero-trip loops).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// The documented command lines, as words after `hat-opt`.
fn documented_runs() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(root().join("examples/README.md")).expect("examples/README.md");
    let section = readme.split_once("## Running the examples").expect("a 'Running the examples' section").1;
    section
        .lines()
        .filter_map(|line| line.strip_prefix("hat-opt "))
        .map(|line| shlex::split(line).expect("a command line"))
        .collect()
}

/// Runs hat-opt with `arguments`; panics with its output unless it succeeds. Gives stdout.
fn succeed(arguments: &[String]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_hat-opt"))
        .current_dir(root())
        .args(arguments)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("hat-opt runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "hat-opt {}\nfailed:\n{stderr}\nstdout:\n{stdout}", arguments.join(" "));
    stdout.into_owned()
}

/// `arguments` with `--run` replaced by `--run-check` and `extra` added.
fn checked(arguments: &[String], extra: &[&str]) -> Vec<String> {
    let mut checked: Vec<String> =
        arguments.iter().map(|a| if a == "--run" { "--run-check".to_string() } else { a.clone() }).collect();
    checked.extend(extra.iter().map(|e| e.to_string()));
    checked
}

/// `arguments` with every `count=N` / `rounds=N` argument set to 0, if it has one.
fn zero_trip(arguments: &[String]) -> Option<Vec<String>> {
    let counted = |a: &String| a.starts_with("count=") || a.starts_with("rounds=");
    arguments.iter().any(counted).then(|| {
        arguments
            .iter()
            .map(|a| if counted(a) { format!("{}=0", a.split_once('=').unwrap().0) } else { a.clone() })
            .collect()
    })
}

#[test]
fn every_example_is_documented_once() {
    let runs = documented_runs();
    let mut files: Vec<String> = std::fs::read_dir(root().join("examples"))
        .expect("examples/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "hat"))
        .map(|p| format!("examples/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    files.sort();
    let documented: Vec<String> = runs.iter().map(|run| run[0].clone()).collect();
    assert_eq!(documented, files);
    assert!(runs.iter().all(|run| run.contains(&"--run".to_string())), "{runs:?}");
}

#[test]
fn every_example_runs_as_documented_and_equals_the_reference_semantics_under_every_strategy() {
    let default_registered = hat_passes::registry().pipeline("default").is_some();
    for run in documented_runs() {
        let report = succeed(&run);
        assert!(report.contains("ran @main"), "{report}");
        let mut variants = vec![run.clone()];
        variants.extend(zero_trip(&run));
        for variant in variants {
            succeed(&checked(&variant, &["--strategy=jic"]));
            succeed(&checked(&variant, &["--strategy=kernel"]));
            succeed(&checked(&variant, &["--pass-pipeline=builtin.module(insert-transfers{strategy=static})"]));
            if default_registered {
                succeed(&checked(&variant, &[]));
            }
        }
    }
}

#[test]
fn the_first_command_of_the_readme_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let line = readme.lines().find(|l| l.starts_with("cargo run -p hat-opt -- ")).expect("the first command");
    let command = line.split('#').next().unwrap().trim().strip_prefix("cargo run -p hat-opt -- ").unwrap();
    let report = succeed(&shlex::split(command).expect("a command line"));
    assert!(report.contains("%data: memref<64xi32> = [0, 1, 4, 9, 16, 25, 36, 49, ...]"), "{report}");
}
