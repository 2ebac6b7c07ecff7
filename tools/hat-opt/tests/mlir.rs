//! hat-opt's MLIR flags: without the `mlir` feature they fail saying how to build with it; with
//! it, `--to-mlir`, `--to-mlir-irdl` and `--from-mlir` work end to end (the bridge's own tests are
//! in mlir/tests/).

use std::path::Path;
#[cfg(feature = "mlir")]
use std::path::PathBuf;
use std::process::{Command, Output};

fn hat_opt(arguments: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_hat-opt")).current_dir(root).args(arguments).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[cfg(feature = "mlir")]
fn scratch(name: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("hat-opt-mlir-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    directory.join(name)
}

#[cfg(not(feature = "mlir"))]
#[test]
fn without_the_feature_each_flag_says_how_to_build_with_it() {
    // The feature's tests are compiled out here: with HAT_REQUIRE_MLIR=1 that is a failure.
    assert!(
        std::env::var("HAT_REQUIRE_MLIR").as_deref() != Ok("1"),
        "HAT_REQUIRE_MLIR=1, but hat-opt is built without its `mlir` feature: cargo test -p hat-opt --features mlir"
    );
    for flags in [
        &["examples/01-squares.hat", "--to-mlir"][..],
        &["examples/01-squares.hat", "--to-mlir=upstream"],
        &["--to-mlir-irdl"],
        &["examples/01-squares.hat", "--from-mlir"],
    ] {
        let output = hat_opt(flags);
        assert_eq!(output.status.code(), Some(1), "{flags:?}");
        let message = stderr(&output);
        assert!(message.contains("cargo build -p hat-opt --features mlir"), "{flags:?}: {message}");
        assert!(output.stdout.is_empty(), "{flags:?}");
    }
}

#[cfg(feature = "mlir")]
#[test]
fn an_example_goes_to_mlir_and_comes_back() {
    let mlir = scratch("squares.mlir");
    let output = hat_opt(&["examples/01-squares.hat", "--to-mlir", "-o", mlir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = std::fs::read_to_string(&mlir).unwrap();
    assert!(text.contains("\"compute.dispatch\""), "{text}");
    let back = hat_opt(&[mlir.to_str().unwrap(), "--from-mlir"]);
    assert!(back.status.success(), "{}", stderr(&back));
    let original = hat_opt(&["examples/01-squares.hat"]);
    assert_eq!(String::from_utf8_lossy(&back.stdout), String::from_utf8_lossy(&original.stdout));
}

#[cfg(feature = "mlir")]
#[test]
fn the_irdl_declaration_is_written_without_input() {
    let output = hat_opt(&["--to-mlir-irdl"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("irdl.dialect @buffer"));
}

#[cfg(feature = "mlir")]
#[test]
fn mlir_parse_errors_keep_their_position() {
    let bad = scratch("bad.mlir");
    std::fs::write(&bad, "func.func @f() {\n  %x = arith.constant 1 : i32\n  return %y : i32\n}\n").unwrap();
    let output = hat_opt(&[bad.to_str().unwrap(), "--from-mlir"]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(message.contains("use of undeclared SSA value name"), "{message}");
    assert!(message.contains("bad.mlir:3:10"), "{message}");
}

#[cfg(feature = "mlir")]
#[test]
fn the_readme_mlir_command_runs_and_moves_the_optimum() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let prefix = "cargo run -p hat-opt --features mlir -- ";
    let line = readme.lines().find(|l| l.starts_with(prefix)).expect("the README's MLIR command");
    let command = line.split('#').next().unwrap().trim().strip_prefix(prefix).unwrap();
    let arguments = shlex::split(command).unwrap();
    let output = hat_opt(&arguments.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(output.status.success(), "{}", stderr(&output));
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(report.contains("transfers:  to device 2 copies (2048 B), from device 1 copy (1024 B)"), "{report}");
}
