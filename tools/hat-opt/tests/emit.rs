//! `hat-opt FILE --emit=spirv -o k.spv`: the binary is the module the lowering makes of the file
//! (after the pipeline), the same bytes on every run and through a pipe, valid for `spirv-val`
//! when it is installed, and `--emit=spirv-asm` is its disassembly; nothing is written when the
//! lowering fails; the binary is refused where it cannot be written whole.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

fn scratch(test: &str) -> PathBuf {
    let directory = Path::new(env!("CARGO_TARGET_TMPDIR")).join("emit").join(test);
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).expect("scratch directory");
    directory
}

fn hat_opt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hat-opt"))
        .current_dir(root())
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("hat-opt runs")
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().expect("whole words"))).collect()
}

/// Whether this build links SPIRV-Tools (for `--emit=spirv-asm` and validation); when it does
/// not, says so, and fails when `HAT_REQUIRE_VULKAN=1` (CI installs them).
fn spirv_tools_linked() -> bool {
    let linked = hat_lowering::spirv_tools_version().is_some();
    if !linked {
        assert_ne!(std::env::var("HAT_REQUIRE_VULKAN").as_deref(), Ok("1"), "hat was built without SPIRV-Tools");
        eprintln!("skipped: hat was built without SPIRV-Tools (Debian package spirv-tools)");
    }
    linked
}

/// The module the lowering makes of `file` with the default options.
fn lowered(file: &str) -> Vec<u32> {
    let text = std::fs::read_to_string(root().join(file)).expect("readable");
    let mut ctx = hat_dialects::context();
    let module = hat_ir::parse_source(&mut ctx, file, &text).expect("parses");
    let verified = hat_ir::verify_module(&ctx, module).expect("verifies");
    hat_lowering::lower_module(&ctx, verified, &hat_lowering::LoweringOptions::default()).expect("lowers").words
}

#[test]
fn the_binary_is_the_lowered_module_and_the_asm_its_disassembly() {
    if !spirv_tools_linked() {
        return;
    }
    let directory = scratch("binary");
    let path = directory.join("k.spv");
    let path_text = path.to_string_lossy().into_owned();
    let output = hat_opt(&["examples/06-life.hat", "--emit=spirv", "-o", &path_text]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stdout.is_empty(), "-o: nothing on standard output");
    let bytes = std::fs::read(&path).expect("k.spv written");
    assert_eq!(bytes.len() % 4, 0);
    let module = words(&bytes);
    assert_eq!(module[0], 0x0723_0203, "the SPIR-V magic number, little-endian");
    assert_eq!(module, lowered("examples/06-life.hat"));
    hat_lowering::validate(&module).expect("valid");

    // The same bytes through a pipe (standard output is not a terminal here), and on every run.
    let piped = hat_opt(&["examples/06-life.hat", "--emit=spirv"]);
    assert!(piped.status.success());
    assert_eq!(piped.stdout, bytes);

    let asm = hat_opt(&["examples/06-life.hat", "--emit=spirv-asm"]);
    assert!(asm.status.success());
    assert_eq!(String::from_utf8(asm.stdout).expect("text"), hat_lowering::disassemble(&module).expect("disassembles"));

    if Command::new("spirv-val").arg("--version").output().is_ok_and(|o| o.status.success()) {
        let checked = Command::new("spirv-val").args(["--target-env", "vulkan1.1"]).arg(&path).output().expect("runs");
        assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
    } else {
        eprintln!("skipped: spirv-val is not installed (Debian package spirv-tools)");
    }
}

#[test]
fn one_entry_point_per_kernel_after_the_pipeline() {
    if !spirv_tools_linked() {
        return;
    }
    let asm = hat_opt(&["examples/09-kernel-chain.hat", "--canonicalize", "--cse", "--emit=spirv-asm"]);
    assert!(asm.status.success(), "{}", String::from_utf8_lossy(&asm.stderr));
    let text = String::from_utf8(asm.stdout).expect("text");
    let kernels = std::fs::read_to_string(root().join("examples/09-kernel-chain.hat"))
        .expect("readable")
        .lines()
        .filter(|line| line.trim_start().starts_with("kernel.func"))
        .count();
    assert!(kernels >= 2, "the example has several kernels");
    assert_eq!(text.matches("OpEntryPoint GLCompute").count(), kernels, "{text}");
}

#[test]
fn a_kernel_that_does_not_lower_writes_nothing() {
    let directory = scratch("failure");
    let source = directory.join("bad.hat");
    std::fs::write(&source, "kernel.func @k(%x: f64) {\n  kernel.return\n}\n").expect("writes");
    let target = directory.join("k.spv");
    let (source, target_text) = (source.to_string_lossy().into_owned(), target.to_string_lossy().into_owned());
    let output = hat_opt(&[&source, "--emit=spirv", "-o", &target_text]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.hat:1:1"), "{stderr}");
    assert!(stderr.contains("Vulkan feature 'shaderFloat64'"), "{stderr}");
    assert!(!target.exists(), "no half-written module");
    assert_eq!(std::fs::read_dir(&directory).expect("lists").count(), 1, "no temporary left behind");
    // With the feature it lowers.
    let output = hat_opt(&[&source, "--emit=spirv", "--spirv-features=shaderFloat64", "-o", &target_text]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let written = words(&std::fs::read(&target).expect("written"));
    if spirv_tools_linked() {
        hat_lowering::validate(&written).expect("valid");
    }
}

#[test]
fn the_binary_is_refused_where_it_cannot_be_written_whole() {
    let output = hat_opt(&["examples/01-squares.hat", "--emit=spirv", "--split-input-file"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--emit=spirv writes one binary module"));
    let output = hat_opt(&["examples/01-squares.hat", "--emit=spirv-asm", "--run"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be used with"));
}

#[test]
fn the_version_says_whether_modules_are_validated_and_the_asm_needs_spirv_tools() {
    let version = hat_opt(&["--version"]);
    assert!(version.status.success());
    let version = String::from_utf8_lossy(&version.stdout);
    let binary = hat_opt(&["examples/01-squares.hat", "--emit=spirv"]);
    assert!(binary.status.success(), "the binary needs no SPIRV-Tools");
    let asm = hat_opt(&["examples/01-squares.hat", "--emit=spirv-asm"]);
    let stderr = String::from_utf8_lossy(&asm.stderr);
    match hat_lowering::spirv_tools_version() {
        Some(linked) => {
            assert!(version.contains(&format!("SPIRV-Tools {linked} (every SPIR-V module is validated)")), "{version}");
            assert!(asm.status.success(), "{stderr}");
        }
        // The build CI makes with HAT_SPIRV_TOOLS_LIB_DIR=none (.ci/run).
        None => {
            assert!(version.contains("no SPIRV-Tools (SPIR-V modules go to the driver unvalidated"), "{version}");
            assert_eq!(asm.status.code(), Some(1));
            assert!(asm.stdout.is_empty());
            assert!(
                stderr.contains("cannot disassemble") && stderr.contains("install Debian's package spirv-tools"),
                "{stderr}"
            );
        }
    }
}
