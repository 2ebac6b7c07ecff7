//! `hat-opt --run --backend=vulkan|cpu|auto`: the report names the backend and the device; a
//! Vulkan run gives the CPU backend's results. Without a Vulkan device the Vulkan cases print why
//! and pass, unless `HAT_REQUIRE_VULKAN=1`.

use std::path::Path;
use std::process::{Command, Output};

mod support;
use support::has_vulkan;

fn hat_opt(args: &[&str], backend_env: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hat-opt"));
    command.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")).args(args).env("RUST_BACKTRACE", "0");
    match backend_env {
        Some(value) => command.env("HAT_BACKEND", value),
        None => command.env_remove("HAT_BACKEND"),
    };
    command.output().expect("hat-opt runs")
}

fn stdout(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "hat-opt failed:\n{}\n{text}", String::from_utf8_lossy(&output.stderr));
    text
}

const SQUARES: [&str; 5] = ["examples/01-squares.hat", "--run", "--arg", "data=iota", "--report=json"];

#[test]
fn vulkan_and_cpu_runs_agree_and_the_report_says_which_ran() {
    let cpu: serde_json::Value =
        serde_json::from_str(&stdout(&hat_opt(&[&SQUARES[..], &["--backend=cpu"]].concat(), None))).unwrap();
    assert_eq!(cpu["backend"], "cpu");
    if !has_vulkan() {
        return;
    }
    let gpu: serde_json::Value =
        serde_json::from_str(&stdout(&hat_opt(&[&SQUARES[..], &["--backend=vulkan"]].concat(), None))).unwrap();
    assert_eq!(gpu["backend"], "vulkan");
    assert_eq!(gpu["transfers"], cpu["transfers"]);
    let device = gpu["device"].as_str().unwrap().to_string();
    assert!(!device.is_empty());
    // auto picks Vulkan when a device exists; HAT_BACKEND overrides it; the text names the device.
    let auto = stdout(&hat_opt(&["examples/01-squares.hat", "--run", "--arg", "data=iota"], None));
    assert!(auto.starts_with(&format!("ran @main (explicit transfers, vulkan backend on {device})\n")), "{auto}");
    let forced = stdout(&hat_opt(&["examples/01-squares.hat", "--run", "--arg", "data=iota"], Some("cpu")));
    assert!(forced.starts_with("ran @main (explicit transfers, cpu backend)\n"), "{forced}");
    // The same buffers either way.
    let buffers = |text: &str| text.lines().find(|l| l.starts_with("buffers:")).map(str::to_string);
    assert_eq!(buffers(&auto), buffers(&forced));
}

#[test]
fn a_device_that_does_not_exist_is_an_error() {
    let output = hat_opt(&[&SQUARES[..], &["--backend=vulkan", "--device=no-such-gpu"]].concat(), None);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no-such-gpu") || stderr.contains("no Vulkan"), "{stderr}");
    let output = hat_opt(&SQUARES, Some("gpu-please"));
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("HAT_BACKEND=gpu-please"));
}
