//! Upstream MLIR GPU programs written as an MLIR user writes them (mlir/tests/upstream/), read
//! with `--from-mlir`: each gives the reference semantics' results (`--run-check`, on Vulkan
//! where a device exists) and moves, under the default pipeline, the bytes stated here. And
//! every example's `--to-mlir=upstream` reads back to a program with the same results on the CPU
//! backend.

#![cfg(feature = "mlir")]

use serde_json::Value as Json;
use std::path::Path;
use std::process::{Command, Output};

fn hat_opt(arguments: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_hat-opt")).current_dir(root).args(arguments).output().unwrap()
}

/// Runs `arguments` with `--run --run-check --report=json`; the report.
fn report(arguments: &[&str]) -> Json {
    let mut all = arguments.to_vec();
    all.extend(["--run", "--run-check", "--report=json"]);
    let output = hat_opt(&all);
    assert!(output.status.success(), "{all:?}: {}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{all:?}: {e}: {stdout}"))
}

fn bytes(report: &Json, direction: &str) -> u64 {
    report["transfers"][direction]["bytes"].as_u64().unwrap()
}

/// A program, its arguments, and the bytes it moves in and out: the optimum, plus what hat moves
/// beyond it today and why.
struct Program {
    file: &'static str,
    arguments: &'static [&'static str],
    optimum: (u64, u64),
    excess: (u64, u64),
}

const PROGRAMS: &[Program] = &[
    // %a and %b in, %c out: the copies of %c in and of %a, %b out are erased on import.
    Program {
        file: "1-vector-add.mlir",
        arguments: &["a=iota", "b=ones", "c=zeros"],
        optimum: (2048, 1024),
        excess: (0, 0),
    },
    // %data in once and out once, for any count: the copies around each launch run on the device.
    Program {
        file: "2-loop-of-launches.mlir",
        arguments: &["data=iota", "count=5"],
        optimum: (1024, 1024),
        excess: (0, 0),
    },
    // %grid in once, out once: resolve-aliases (in the default pipeline) names the buffer each
    // loop-carried value holds at every step, so nothing goes back inside the loop.
    Program { file: "3-ping-pong.mlir", arguments: &["grid=iota", "steps=3"], optimum: (1024, 1024), excess: (0, 0) },
    // %input in, %sums out: the kernel-effects analysis proves that `if thread_id == 0:
    // sums[block_id] = ...` writes every element (one work item per workgroup, one element per
    // workgroup), so %sums never goes in.
    Program { file: "4-reduction.mlir", arguments: &["input=iota", "sums=zeros"], optimum: (1024, 16), excess: (0, 0) },
    // %in in, %out out; the temporary never moves.
    Program { file: "5-two-kernels.mlir", arguments: &["in=iota", "out=zeros"], optimum: (1024, 1024), excess: (0, 0) },
    // The inline gpu.launch, outlined: %data in, out.
    Program { file: "6-inline-launch.mlir", arguments: &["data=iota"], optimum: (1024, 1024), excess: (0, 0) },
];

#[test]
fn user_programs_move_what_is_stated_and_give_the_reference_results() {
    for program in PROGRAMS {
        let path = format!("mlir/tests/upstream/{}", program.file);
        let mut arguments = vec![path.as_str(), "--from-mlir"];
        for argument in program.arguments {
            arguments.extend(["--arg", argument]);
        }
        let report = report(&arguments);
        assert_eq!(report["check"]["equal"], Json::Bool(true), "{}: {report}", program.file);
        let moved = (bytes(&report, "to_device"), bytes(&report, "from_device"));
        let expected = (program.optimum.0 + program.excess.0, program.optimum.1 + program.excess.1);
        assert_eq!(moved, expected, "{}: bytes to and from the device", program.file);
    }
}

/// Arguments for every parameter of an entry, from the types `--run` lists when none is given.
fn arguments_for(file: &str, extra: &[&str]) -> Vec<String> {
    let mut probe = vec![file, "--run", "--backend=cpu"];
    probe.extend(extra);
    let output = hat_opt(&probe);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let mut arguments = Vec::new();
    for line in stderr.lines() {
        let Some((name, ty)) = line.trim().strip_prefix('%').and_then(|l| l.split_once(": ")) else { continue };
        let value = if ty.starts_with("memref") {
            "random:7"
        } else if ty.starts_with('f') {
            "0.5"
        } else if ty == "i1" {
            "true"
        } else {
            "3"
        };
        arguments.push(format!("{name}={value}"));
    }
    arguments
}

#[test]
fn upstream_exports_read_back_to_the_same_results() {
    let directory = std::env::temp_dir().join(format!("hat-opt-mlir-upstream-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let mut examples: Vec<_> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hat"))
        .collect();
    examples.sort();
    let mut read_back = 0;
    for example in examples {
        let name = format!("examples/{}", example.file_name().unwrap().to_string_lossy());
        let mlir = directory.join(example.with_extension("mlir").file_name().unwrap());
        let exported = hat_opt(&[&name, "-p", "default", "--to-mlir=upstream", "-o", mlir.to_str().unwrap()]);
        if !exported.status.success() {
            // What has no upstream spelling is the export test's business (mlir/tests/).
            continue;
        }
        let original_arguments = arguments_for(&name, &[]);
        let buffers: Vec<(usize, String)> = original_arguments
            .iter()
            .enumerate()
            .filter(|(_, a)| a.ends_with("random:7"))
            .map(|(i, a)| (i, a.split_once('=').unwrap().0.to_string()))
            .collect();
        let stem = example.file_stem().unwrap().to_string_lossy().into_owned();
        let out = |side: &str, i: usize| directory.join(format!("{stem}-{side}-{i}.npy")).to_str().unwrap().to_string();
        let mut original = vec![name.clone(), "--backend=cpu".to_string()];
        for argument in &original_arguments {
            original.extend(["--arg".to_string(), argument.clone()]);
        }
        for (i, buffer) in &buffers {
            original.extend(["--out".to_string(), format!("{buffer}={}", out("original", *i))]);
        }
        let original = report(&original.iter().map(String::as_str).collect::<Vec<_>>());
        // The upstream program names its arguments %arg0, %arg1, ... in the same order.
        let mut back = vec![mlir.to_str().unwrap().to_string(), "--from-mlir".to_string(), "--backend=cpu".to_string()];
        for (i, argument) in original_arguments.iter().enumerate() {
            back.extend(["--arg".to_string(), format!("arg{i}={}", argument.split_once('=').unwrap().1)]);
        }
        for (i, _) in &buffers {
            back.extend(["--out".to_string(), format!("arg{i}={}", out("back", *i))]);
        }
        let back = report(&back.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(back["results"], original["results"], "{name}: results");
        for (i, buffer) in &buffers {
            let (a, b) = (std::fs::read(out("original", *i)).unwrap(), std::fs::read(out("back", *i)).unwrap());
            assert!(a == b, "{name}: %{buffer} differs after the trip through upstream MLIR");
        }
        read_back += 1;
    }
    assert_eq!(read_back, 18, "every example but 07 and 18 (host functions) goes through upstream MLIR");
    let _ = std::fs::remove_dir_all(&directory);
}
