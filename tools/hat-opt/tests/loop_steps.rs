//! Issue 24: one rule for an `scf.for` step known only at run time (docs/dialects/scf.md), on
//! the CPU reference backend and on Vulkan: positive steps give the same results on both; zero
//! and negative steps are an error at the loop (`file:line:col`) on the host and on the CPU
//! backend, and run no iteration on the GPU (the device cannot report errors). A constant step
//! of zero or less is the verifier's (`tests/malformed/91-*`, `92-*`).

mod support;

use std::process::{Command, Output};
use support::root;

const FILE: &str = "tests/run/loop-steps.hat";

fn hat_opt(backend: &str, entry: &str, step: i64) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hat-opt"))
        .current_dir(root())
        .args([FILE, "--run", "--entry", entry, "--arg", "out=fill:7", "--arg", &format!("step={step}")])
        .env("HAT_BACKEND", backend)
        .output()
        .expect("hat-opt runs")
}

/// The buffer of a successful run, as its line shows it: `%out: memref<4xi32> = [...]` (it
/// starts as 7s: the kernel stores its count over them).
fn out(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let line = stdout.lines().find(|l| l.contains("%out:")).expect("the buffer line");
    line[line.find("%out:").expect("the buffer")..].trim().to_string()
}

fn backends() -> Vec<&'static str> {
    let mut backends = vec!["cpu"];
    if support::has_vulkan() {
        backends.push("vulkan");
    }
    backends
}

#[test]
fn positive_steps_agree_on_every_backend() {
    for (step, iterations) in [(3, 3), (1, 8)] {
        for backend in backends() {
            let expected = format!("%out: memref<4xi32> = [{iterations}, {iterations}, {iterations}, {iterations}]");
            assert_eq!(out(&hat_opt(backend, "main", step)), expected, "{backend}, step {step}");
        }
    }
}

#[test]
fn a_step_of_zero_or_less_is_an_error_at_the_loop_on_the_host_and_the_cpu_backend() {
    for step in [0, -1] {
        let kernel = hat_opt("cpu", "main", step);
        let stderr = String::from_utf8_lossy(&kernel.stderr);
        assert_eq!(kernel.status.code(), Some(1), "{stderr}");
        for expected in [format!("step must be positive, got {step}"), format!("{FILE}:12:3"), "kernel 'count'".into()]
        {
            assert!(stderr.contains(&expected), "stderr lacks `{expected}`:\n{stderr}");
        }
        for backend in backends() {
            let host = hat_opt(backend, "host", step);
            let stderr = String::from_utf8_lossy(&host.stderr);
            assert_eq!(host.status.code(), Some(1), "{backend}: {stderr}");
            assert!(stderr.contains(&format!("step must be positive, got {step}")), "{stderr}");
            assert!(stderr.contains(&format!("{FILE}:29:3")), "{stderr}");
        }
    }
}

#[test]
fn a_step_of_zero_or_less_runs_no_iteration_on_the_gpu() {
    if !support::has_vulkan() {
        return;
    }
    for step in [0, -1] {
        assert_eq!(out(&hat_opt("vulkan", "main", step)), "%out: memref<4xi32> = [0, 0, 0, 0]", "step {step}");
    }
}
