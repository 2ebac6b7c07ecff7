//! `hat-bench soak` (issue 24): a run's memory is bounded by its live data, not by its length.
//! Two programs, compiled by the default pipeline and run in process on the CPU backend or a
//! Vulkan device:
//!
//! - `dispatches`: a host loop of dependent dispatches (each adds 1 to every element of one
//!   buffer), with no host access until the end: the executor and the backend must forget each
//!   command once it is done, though nothing waits for a million of them;
//! - `peeks`: a host loop whose iterations each dispatch and then read one element on the host
//!   (a range copy back and a wait per iteration), summing them.
//!
//! Each runs `--warm-up` iterations, then `--iterations`; the peak resident memory of each run
//! (`VmHWM`, reset before it through `/proc/self/clear_refs`) is read, and the growth is the
//! long run's peak less the warm-up's. Target: under 1 MiB over a million iterations. Each run's
//! result is checked (the buffer is its start plus the iterations; the sum of the peeks is
//! known), so a run that did not do its work cannot pass.

use crate::common::progress;
use crate::gpu::programs::{compile, Plan};
use crate::gpu::runs::run;
use crate::gpu::BackendKind;

use hat_runtime::{ArgValue, Backend, HostBuffer, Scalar};
use serde_json::{json, Value};
use std::time::Instant;

/// Options of `hat-bench soak`.
#[derive(clap::Args, Debug)]
pub struct SoakArgs {
    /// The backend.
    #[arg(long, value_enum, default_value = "vulkan")]
    pub backend: BackendKind,
    /// The Vulkan device: its index or a part of its name.
    #[arg(long)]
    pub device: Option<String>,
    /// Iterations of the measured runs.
    #[arg(long, default_value_t = 1_000_000)]
    pub iterations: u64,
    /// Iterations of the warm-up runs.
    #[arg(long, default_value_t = 10_000)]
    pub warm_up: u64,
}

/// The growth allowed over a run, in KiB.
const TARGET_GROWTH_KIB: u64 = 1024;

const PROGRAM: &str = r#"
kernel.func @step(%data: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<64xi32>
  %one = arith.constant 1 : i32
  %w = arith.addi %v, %one : i32
  buffer.store %w, %data[%i] : memref<64xi32>
  kernel.return
}

compute.func @dispatches(%data: memref<64xi32>, %count: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %it = %c0 to %count step %c1 {
    compute.dispatch @step[%c64](%data) : (memref<64xi32>)
  }
  compute.return
}

compute.func @peeks(%data: memref<64xi32>, %count: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0 : i32
  %sum = scf.for %it = %c0 to %count step %c1 iter_args(%acc = %zero) -> (i32) {
    compute.dispatch @step[%c64](%data) : (memref<64xi32>)
    %v = buffer.load %data[%c0] : memref<64xi32>
    %next = arith.addi %acc, %v : i32
    scf.yield %next : i32
  }
  compute.return %sum : i32
}
"#;

/// (current, peak) resident memory of this process in KiB (`VmRSS`, `VmHWM`).
fn resident() -> Result<(u64, u64), String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| format!("/proc/self/status: {e}"))?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or(format!("no {name} in /proc/self/status"))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// Resets the peak resident memory to the current one.
fn reset_peak() -> Result<(), String> {
    std::fs::write("/proc/self/clear_refs", "5").map_err(|e| format!("/proc/self/clear_refs: {e}"))
}

/// The program's entry `entry` over `iterations`: its peak resident memory (KiB) and seconds,
/// after checking its result.
fn measured(
    ctx: &hat_ir::Context,
    module: hat_ir::Op,
    backend: &mut dyn Backend,
    entry: &str,
    iterations: u64,
) -> Result<(u64, u64, f64), String> {
    let start: Vec<i32> = (0..64).collect();
    let data = HostBuffer::from_i32(&[64], &start).ok_or("the buffer")?;
    let arguments = vec![ArgValue::Buffer(data), ArgValue::Scalar(Scalar::Int(iterations as i64))];
    reset_peak()?;
    let began = Instant::now();
    let output = run(ctx, module, backend, entry, arguments)?;
    let seconds = began.elapsed().as_secs_f64();
    let (current, peak) = resident()?;
    let values = output.buffers[0].to_i32().ok_or("an i32 buffer")?;
    let expected: Vec<i32> = start.iter().map(|&v| v.wrapping_add(iterations as i32)).collect();
    if values != expected {
        return Err(format!("@{entry} over {iterations}: the buffer is not its start plus the iterations"));
    }
    if entry == "peeks" {
        // Element 0 after iteration k is k: the sum of 1..=n, wrapping as i32.
        let n = iterations as u128;
        let sum = ((n * (n + 1) / 2) as u32) as i32;
        if !matches!(output.results.first(), Some(ArgValue::Scalar(Scalar::Int(v))) if *v == sum as i64) {
            return Err(format!("@peeks over {iterations}: the sum is {:?}, not {sum}", output.results));
        }
    }
    Ok((current, peak, seconds))
}

/// Runs the benchmark; the report and whether every growth is under the target.
pub fn run_soak(args: &SoakArgs) -> Result<(Value, bool), String> {
    let mut backend = crate::gpu::backend(args.backend, args.device.clone())?;
    let device = backend.device_name();
    let mut rows = Vec::new();
    let mut ok = true;
    for entry in ["dispatches", "peeks"] {
        let (ctx, module) = compile("soak.hat", PROGRAM, entry, Plan::Default)?;
        progress(format!("{entry}: {} iterations of warm-up, then {}", args.warm_up, args.iterations));
        let (warm_rss, warm_peak, warm_seconds) = measured(&ctx, module, backend.as_mut(), entry, args.warm_up)?;
        let (end_rss, peak, seconds) = measured(&ctx, module, backend.as_mut(), entry, args.iterations)?;
        let growth = peak.saturating_sub(warm_peak);
        let under = growth < TARGET_GROWTH_KIB;
        ok &= under;
        progress(format!(
            "  resident after warm-up {warm_rss} KiB (peak {warm_peak}); peak over {} iterations {peak} KiB, {end_rss} at \
             the end: growth {growth} KiB ({:.2} us per iteration)",
            args.iterations,
            seconds * 1e6 / args.iterations.max(1) as f64
        ));
        rows.push(json!({
            "program": entry,
            "warm_up_iterations": args.warm_up,
            "iterations": args.iterations,
            "resident_after_warm_up_kib": warm_rss,
            "peak_warm_up_kib": warm_peak,
            "warm_up_seconds": warm_seconds,
            "peak_kib": peak,
            "resident_at_end_kib": end_rss,
            "growth_kib": growth,
            "seconds": seconds,
            "us_per_iteration": seconds * 1e6 / args.iterations.max(1) as f64,
            "target_growth_kib": TARGET_GROWTH_KIB,
            "under_target": under,
        }));
    }
    Ok((json!({ "device": device, "runs": rows }), ok))
}
