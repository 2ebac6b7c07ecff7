//! `hat-opt --run --trace=PATH`: the file is Chrome's trace-event JSON (it parses; every event
//! has the fields Perfetto needs) and holds every dispatch and transfer of the run — the same
//! counts and bytes as the run's report, per kernel and in all — each with its dependencies and
//! their hazards, and a slice per device copy of a buffer with its memory slot. On the CPU
//! backend and on Vulkan (lavapipe in CI; without a device the Vulkan case prints why and passes,
//! unless `HAT_REQUIRE_VULKAN=1`), where the barriers are there too, each with the hazards that
//! made it necessary.

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

use support::has_vulkan;
use support::root;

fn scratch(test: &str) -> PathBuf {
    let directory = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace").join(test);
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).expect("scratch directory");
    directory
}

/// Runs `run` (words after `hat-opt`) on `backend` with `--report=json --trace`; gives the
/// report and the trace.
fn traced(run: &str, backend: &str, trace: &Path) -> (Json, Json) {
    let output = Command::new(env!("CARGO_BIN_EXE_hat-opt"))
        .current_dir(root())
        .args(run.split_whitespace())
        .args([format!("--backend={backend}"), "--kernel-cache=off".into(), "--report=json".into()])
        .arg(format!("--trace={}", trace.display()))
        .env("RUST_BACKTRACE", "0")
        .env_remove("HAT_BACKEND")
        .output()
        .expect("hat-opt runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "hat-opt {run} --backend={backend} failed:\n{stderr}");
    let report: Json = serde_json::from_slice(&output.stdout).expect("the JSON report");
    let text = std::fs::read_to_string(trace).expect("the trace file");
    (report, serde_json::from_str(&text).expect("the trace parses as JSON"))
}

/// The events of `trace` of phase `ph` and category `cat`.
fn events<'t>(trace: &'t Json, ph: &str, cat: &str) -> Vec<&'t Json> {
    trace["traceEvents"].as_array().expect("traceEvents").iter().filter(|e| e["ph"] == ph && e["cat"] == cat).collect()
}

/// Checks the trace against the report; gives the queue's events (transfers and dispatches) in
/// order.
fn check_against_report(report: &Json, trace: &Json) -> Vec<Json> {
    let all = trace["traceEvents"].as_array().expect("traceEvents");
    for event in all {
        let ph = event["ph"].as_str().expect("every event has a phase");
        assert!(event["pid"].is_u64() && event["name"].is_string(), "{event}");
        if ph != "M" {
            assert!(event["ts"].as_f64().is_some_and(|ts| ts >= 0.0), "{event}");
        }
        if ph == "X" {
            assert!(event["dur"].as_f64().is_some_and(|d| d >= 0.0), "{event}");
        }
    }
    let dispatches = events(trace, "X", "dispatch");
    let transfers = events(trace, "X", "transfer");
    assert_eq!(dispatches.len() as u64, report["dispatches"].as_u64().unwrap(), "every dispatch");
    for kernel in report["kernels"].as_array().unwrap() {
        let name = format!("@{}", kernel["name"].as_str().unwrap());
        let count = dispatches.iter().filter(|e| e["name"] == name.as_str()).count() as u64;
        assert_eq!(count, kernel["dispatches"].as_u64().unwrap(), "dispatches of {name}");
    }
    for (way, key) in [("to device", "to_device"), ("from device", "from_device")] {
        let these: Vec<_> = transfers.iter().filter(|e| e["name"].as_str().unwrap().starts_with(way)).collect();
        let expected = &report["transfers"][key];
        assert_eq!(these.len() as u64, expected["count"].as_u64().unwrap(), "every transfer {way}");
        let bytes: u64 = these.iter().map(|e| e["args"]["bytes"].as_u64().unwrap()).sum();
        assert_eq!(bytes, expected["bytes"].as_u64().unwrap(), "the bytes {way}");
    }
    // The queue in the order recorded: command numbers increase; dependencies name earlier
    // commands, with a hazard.
    let mut queue: Vec<Json> = dispatches.into_iter().chain(transfers).cloned().collect();
    queue.sort_by_key(|e| e["args"]["command"].as_u64().unwrap());
    let numbers: Vec<u64> = queue.iter().map(|e| e["args"]["command"].as_u64().unwrap()).collect();
    for event in &queue {
        let command = event["args"]["command"].as_u64().unwrap();
        for dependency in event["args"]["dependencies"].as_array().unwrap() {
            let on = dependency["command"].as_u64().unwrap();
            assert!(on < command && numbers.contains(&on), "{event}");
            let hazard = dependency["hazard"].as_str().unwrap();
            assert!(["read-after-write", "write-after-read", "write-after-write"].contains(&hazard), "{event}");
            assert!(dependency["buffer"].is_string());
        }
    }
    // A slice per device copy, with its memory slot: an allocation (a buffer's own, or an
    // arena) has no arena offset; a buffer plan-memory placed in an arena (a window) has its
    // offset, inside an arena the trace holds.
    let memory = events(trace, "X", "memory");
    let (windows, allocations): (Vec<&Json>, Vec<&Json>) =
        memory.iter().partition(|slot| slot["args"]["arena_offset"].is_u64());
    assert_eq!(
        allocations.len() as u64,
        report["device_memory"]["allocations"].as_u64().unwrap(),
        "a slice per allocation"
    );
    for slot in &memory {
        assert!(slot["args"]["bytes"].as_u64().unwrap() > 0 && slot["args"]["buffer"].is_u64(), "{slot}");
        assert!(slot["args"].get("arena_offset").is_some(), "{slot}");
    }
    let arenas: Vec<&&Json> = allocations
        .iter()
        .filter(|slot| slot["args"]["name"].as_str().is_some_and(|n| n.starts_with("arena#")))
        .collect();
    for window in &windows {
        let end = window["args"]["arena_offset"].as_u64().unwrap() + window["args"]["bytes"].as_u64().unwrap();
        assert!(arenas.iter().any(|arena| arena["args"]["bytes"].as_u64().unwrap() >= end), "{window}");
    }
    queue
}

const RUNS: [&str; 5] = [
    "examples/10-sobel.hat --run --arg img=tests/data/images/shapes.png --arg mag=zeros",
    "examples/11-morphology.hat --run --arg img=random --arg out=zeros --arg rounds=3",
    "examples/04-peek.hat --run --arg data=iota --arg count=5",
    "examples/06-life.hat --run --arg grid=random:7 --arg count=3",
    "examples/05-host-edit.hat --run --arg data=iota --arg seed=3",
];

#[test]
fn on_the_cpu_backend_the_trace_holds_every_dispatch_and_transfer() {
    let directory = scratch("cpu");
    for (index, run) in RUNS.iter().enumerate() {
        let (report, trace) = traced(run, "cpu", &directory.join(format!("{index}.json")));
        let queue = check_against_report(&report, &trace);
        assert!(queue.iter().all(|e| e["args"]["clock"] == "host wall clock"), "{run}");
        // The CPU backend runs commands one after the other: no two overlap.
        let mut spans: Vec<(f64, f64)> = queue
            .iter()
            .map(|e| (e["ts"].as_f64().unwrap(), e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap()))
            .collect();
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0 + 1e-3), "{run}: {spans:?}");
        // No barriers: nothing runs out of order on it.
        assert!(events(&trace, "i", "barrier").is_empty());
    }
    // Peek: the copy back of element 0 reads what the dispatch before it wrote.
    let (report, trace) = traced(RUNS[2], "cpu", &directory.join("peek.json"));
    let queue = check_against_report(&report, &trace);
    let peek = queue.iter().find(|e| e["name"] == "from device %data").expect("a copy back");
    let hazards: Vec<&str> =
        peek["args"]["dependencies"].as_array().unwrap().iter().map(|d| d["hazard"].as_str().unwrap()).collect();
    assert_eq!(hazards, ["read-after-write"], "{peek}");
}

#[test]
fn on_vulkan_the_trace_holds_every_dispatch_transfer_and_barrier_with_its_hazard() {
    if !has_vulkan() {
        return;
    }
    let directory = scratch("vulkan");
    for (index, run) in RUNS.iter().enumerate() {
        let (report, trace) = traced(run, "vulkan", &directory.join(format!("{index}.json")));
        check_against_report(&report, &trace);
        for barrier in events(&trace, "i", "barrier") {
            let hazards = barrier["args"]["hazards"].as_array().unwrap();
            assert!(!hazards.is_empty(), "every barrier has a cause: {barrier}");
            assert!(hazards.iter().all(|h| h["buffer"].is_string() && h["hazard"].is_string()), "{barrier}");
        }
    }
    // Sobel: a barrier before the first gradient pass (it reads the image the copy wrote), none
    // between the two independent passes, one before @magnitude for the gradients it reads, one
    // before the copy back.
    let (_, trace) = traced(RUNS[0], "vulkan", &directory.join("sobel.json"));
    let all = trace["traceEvents"].as_array().unwrap();
    let on_queue: Vec<&Json> =
        all.iter().filter(|e| e["tid"] == 1 && e["pid"] == 1 && (e["ph"] == "X" || e["ph"] == "i")).collect();
    let names: Vec<&str> = on_queue.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["to device %img", "barrier", "@sobel_x", "@sobel_y", "barrier", "@magnitude", "barrier", "from device %mag"]
    );
    let hazards = |event: &Json| -> Vec<(String, String)> {
        event["args"]["hazards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["buffer"].as_str().unwrap().to_string(), h["hazard"].as_str().unwrap().to_string()))
            .collect()
    };
    assert_eq!(hazards(on_queue[1]), [("%img".to_string(), "read-after-write".to_string())]);
    let merge = hazards(on_queue[4]);
    assert_eq!(merge.len(), 2, "both gradients: {merge:?}");
    assert!(merge.iter().all(|(buffer, hazard)| buffer.starts_with("alloc@") && hazard == "read-after-write"));
    assert_eq!(hazards(on_queue[6]), [("%mag".to_string(), "read-after-write".to_string())]);
    let clock = on_queue[2]["args"]["clock"].as_str().unwrap();
    assert!(["device timestamps", "not measured"].contains(&clock), "{clock}");
}
