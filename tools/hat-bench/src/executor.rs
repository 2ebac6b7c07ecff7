//! `hat-bench executor`: the host executor's own cost, in process, on the CPU reference backend.
//!
//! Three generated programs, each a `scf.for` of N iterations in one `compute.func @main`:
//!
//! - `host_ops`: each iteration runs K scalar `arith` ops (a chain through the loop-carried value:
//!   `addi`, `xori`, `muli`, `subi`, ... that never fail) and the `scf.yield`. Reported: ns per
//!   executed host op, counting the K ops and the yield (so `N * (K + 1)` ops).
//! - `dispatch_empty`: each iteration dispatches a kernel with no parameters and an empty body
//!   over a grid of 1.
//! - `dispatch_tiny`: each iteration dispatches a kernel with one buffer parameter that stores
//!   one element, over a grid of 1 (explicit mode: no transfers, the device copy is made once).
//!
//! For the dispatch programs, ns per dispatch is reported twice: all of it (executor and CPU
//! backend), and the executor's overhead alone (the run's time minus the backend's dispatch time
//! that the run report measures around each `Backend::dispatch`).
//!
//! Each measurement makes a fresh executor (so the time includes whatever the executor prepares
//! on a first call), runs `@main` once, and takes the run report's `total_time`; `--repeat` runs,
//! best and median reported. Parsing and verifying are not timed.

use crate::common::progress;
use crate::measure::median;
use hat_runtime::{ArgValue, CpuBackend, Executor, ExecutorOptions, HostBuffer, RunReport, Scalar, TransferMode};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Options of `hat-bench executor`.
#[derive(clap::Args, Debug)]
pub struct ExecutorArgs {
    /// Loop iterations of the host-op program.
    #[arg(long, default_value_t = 1_000_000)]
    pub iterations: usize,
    /// Scalar ops per iteration of the host-op program.
    #[arg(long, default_value_t = 16)]
    pub ops_per_iteration: usize,
    /// Dispatches of each dispatch program.
    #[arg(long, default_value_t = 100_000)]
    pub dispatches: usize,
    /// Runs of each program (best and median reported).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
}

const CHAIN: &[&str] = &["addi", "xori", "muli", "subi", "ori", "maxsi", "andi", "minsi"];

/// `@main(%n: index) -> i64`: `%n` iterations of `ops` scalar ops on the carried value.
pub fn host_ops_program(ops: usize) -> String {
    let mut text = String::from(
        "compute.func @main(%n: index) -> i64 {\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  \
         %zero = arith.constant 0 : i64\n  %k = arith.constant 40503 : i64\n  %mask = arith.constant -1 : i64\n  \
         %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %zero) -> (i64) {\n",
    );
    let mut last = "%a".to_string();
    for index in 0..ops {
        let op = CHAIN[index % CHAIN.len()];
        let other = if op == "andi" { "%mask" } else { "%k" };
        writeln!(text, "    %v{index} = arith.{op} {last}, {other} : i64").expect("writing to a String");
        last = format!("%v{index}");
    }
    writeln!(text, "    scf.yield {last} : i64\n  }}\n  compute.return %r : i64\n}}").expect("writing to a String");
    text
}

/// `@main(%n: index, %b: memref<1xi32>)`: `%n` dispatches of `@empty` (no parameters) or
/// `@tiny` (stores into `%b`).
pub fn dispatch_program(tiny: bool) -> String {
    let (kernel, call) = if tiny {
        (
            "kernel.func @tiny(%b: memref<1xi32>) workgroup(1) {\n  %i = kernel.global_id x\n  \
             %v = arith.index_cast %i : index to i32\n  buffer.store %v, %b[%i] : memref<1xi32>\n  kernel.return\n}\n",
            "compute.dispatch @tiny[%c1](%b) : (memref<1xi32>)",
        )
    } else {
        ("kernel.func @empty() workgroup(1) {\n  kernel.return\n}\n", "compute.dispatch @empty[%c1]()")
    };
    format!(
        "{kernel}compute.func @main(%n: index, %b: memref<1xi32>) {{\n  %c0 = arith.constant 0 : index\n  \
         %c1 = arith.constant 1 : index\n  scf.for %i = %c0 to %n step %c1 {{\n    {call}\n  }}\n  compute.return\n}}\n"
    )
}

/// Runs `@main` of `text` `repeat` times, each with a fresh executor; the run reports.
fn run_program(text: &str, args: impl Fn() -> Vec<ArgValue>, repeat: usize) -> Result<Vec<RunReport>, String> {
    let mut ctx = hat_dialects::context();
    let module = hat_ir::parse_source(&mut ctx, "executor-bench.hat", text).map_err(|e| format!("{e:?}"))?;
    let module = hat_ir::verify_module(&ctx, module)
        .map_err(|diagnostics| hat_ir::diagnostics::render(&ctx.sources, &diagnostics))?;
    let mut reports = Vec::new();
    for _ in 0..repeat.max(1) {
        let mut backend = CpuBackend::new();
        backend.set_parallel(false);
        let mut executor = Executor::new(module, &mut backend, ExecutorOptions { mode: TransferMode::Explicit });
        let output = executor.run("main", args()).map_err(|e| e.to_string())?;
        reports.push(output.report);
    }
    Ok(reports)
}

/// Best and median of `values`, in ns per unit, rounded to 0.1 ns.
fn per_unit(values: Vec<f64>, units: usize) -> Value {
    let per = |seconds: f64| (seconds * 1e9 / units.max(1) as f64 * 10.0).round() / 10.0;
    let best = values.iter().copied().min_by(f64::total_cmp).map(per);
    json!({ "best": best, "median": median(values).map(per) })
}

/// Runs the benchmark; the report and whether everything ran.
pub fn run(args: &ExecutorArgs) -> Result<(Value, bool), String> {
    let n = args.iterations;
    let k = args.ops_per_iteration;
    progress(format!("host ops: {n} iterations of {k} scalar ops"));
    let host = run_program(&host_ops_program(k), || vec![ArgValue::Scalar(Scalar::Int(n as i64))], args.repeat)?;
    let host_ops = n * (k + 1);
    let host_seconds: Vec<f64> = host.iter().map(|r| r.total_time.as_secs_f64()).collect();
    let host_report = json!({
        "iterations": n,
        "ops_per_iteration": k,
        "executed_ops": host_ops,
        "ns_per_host_op": per_unit(host_seconds.clone(), host_ops),
        "seconds": host_seconds,
    });
    progress(format!("  ns per host op: {}", host_report["ns_per_host_op"]));

    let mut dispatch_reports = serde_json::Map::new();
    for (label, tiny) in [("dispatch_empty", false), ("dispatch_tiny", true)] {
        let d = args.dispatches;
        progress(format!("{label}: {d} dispatches"));
        let buffer = || ArgValue::Buffer(HostBuffer::from_i32(&[1], &[0]).expect("one element"));
        let reports = run_program(
            &dispatch_program(tiny),
            || vec![ArgValue::Scalar(Scalar::Int(d as i64)), buffer()],
            args.repeat,
        )?;
        let total: Vec<f64> = reports.iter().map(|r| r.total_time.as_secs_f64()).collect();
        let overhead: Vec<f64> =
            reports.iter().map(|r| r.total_time.saturating_sub(r.kernel_time).as_secs_f64()).collect();
        let report = json!({
            "dispatches": d,
            "ns_per_dispatch": per_unit(total.clone(), d),
            "executor_ns_per_dispatch": per_unit(overhead, d),
            "seconds": total,
        });
        progress(format!(
            "  ns per dispatch: {}, of which the executor: {}",
            report["ns_per_dispatch"], report["executor_ns_per_dispatch"]
        ));
        dispatch_reports.insert(label.to_string(), report);
    }
    let mut report = json!({
        "benchmark": "executor",
        "backend": "cpu (sequential workgroups)",
        "mode": "explicit",
        "repeat": args.repeat.max(1),
        "host_ops": host_report,
    });
    report.as_object_mut().expect("an object").extend(dispatch_reports);
    Ok((report, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_programs_run_and_compute_what_they_say() {
        let reports = run_program(&host_ops_program(3), || vec![ArgValue::Scalar(Scalar::Int(10))], 1).unwrap();
        assert_eq!(reports.len(), 1);
        for tiny in [false, true] {
            let buffer = ArgValue::Buffer(HostBuffer::from_i32(&[1], &[0]).unwrap());
            let args = move || vec![ArgValue::Scalar(Scalar::Int(7)), buffer.clone()];
            let reports = run_program(&dispatch_program(tiny), args, 2).unwrap();
            assert!(reports.iter().all(|r| r.dispatches == 7));
        }
    }

    #[test]
    fn the_host_op_chain_computes_in_rust_too() {
        // (0 + k) ^ k = 0, * k = 0, - k = -k: the chain's first four ops on the first iteration.
        let mut ctx = hat_dialects::context();
        let module = hat_ir::parse_source(&mut ctx, "t.hat", &host_ops_program(4)).unwrap();
        let module = hat_ir::verify_module(&ctx, module).unwrap();
        let mut backend = CpuBackend::new();
        let output = Executor::new(module, &mut backend, ExecutorOptions::default())
            .run("main", vec![ArgValue::Scalar(Scalar::Int(1))])
            .unwrap();
        assert_eq!(output.results, [ArgValue::Scalar(Scalar::Int(-40503))]);
    }
}
