//! `hat-bench pipelines` (issue 23): the image examples at N x N, each under the default
//! pipeline — the arena `plan-memory` gives it against the same buffers without reuse and the
//! lower bound, and on a device: the peak device bytes of a run, the device time (the sum of the
//! kernels' GPU timestamps) and the end-to-end time (the run's total, transfers included), beside
//! the PyTorch and CuPy peers' JSON lines (`../shared/reference/pipeline-peer/peer.py`) when
//! given, measured in the same command.
//!
//! The programs are the examples themselves, rescaled as `hat-bench gpu` rescales Life: every
//! memref dimension of 64, 32 or 16 becomes N, N/2 or N/4, and so do the index constants 64, 32
//! and 16 of `@main` (the grids). Nothing else changes; an example that no longer has those
//! shapes is an error, so a changed example fails loudly rather than running at 64 x 64.
//!
//! Before timing, each pipeline runs at 128 x 128 on the device and on the CPU reference backend
//! and the results are compared.
//!
//! Device time is measured as the peers measure theirs — the input already on the device, the
//! pipeline run back to back — by a loop hat compiles itself: `@bench_loop` ([`with_loop`])
//! calls `@main` in an `scf.for`; the default pipeline inlines it and hoists the image's upload
//! and the result's download out of the loop, so the device runs the pipeline's kernels one
//! repetition after another. Each run repeats the pipeline enough times for 50 ms of device work
//! (`--loop-reps` at least), after 2 s of such runs (the peers' loops, too, keep the device busy
//! before they measure). Per run, the device time per repetition is the sum of the kernels' GPU
//! timestamps divided by the repetitions (and the loop's whole time divided by them is reported
//! too); the median over `--repeat` runs is the figure. A single run
//! of `@main` (image in, result out) gives the end-to-end time, and its kernels' time is kept as
//! `single_run_device_ms`: on a GPU whose driver lowers the clocks while the device idles between
//! runs (the H200 drops from 1,980 to 345 MHz), it measures the clock state more than the code.

use super::programs::{compile, compile_with_statistics, Plan, Statistics};
use super::runs::{barriers, ms, round4, run, Samples};
use super::BackendKind;
use crate::common::progress;
use hat_runtime::{ArgValue, Backend, BufferLayout, CpuBackend, ElementType, HostBuffer, RunOutput, Scalar};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Options of `hat-bench pipelines`.
#[derive(clap::Args, Debug)]
pub struct PipelinesArgs {
    /// The backend.
    #[arg(long, value_enum, default_value = "vulkan")]
    pub backend: BackendKind,
    /// The Vulkan device: its index or a part of its name.
    #[arg(long)]
    pub device: Option<String>,
    /// The image's side (a multiple of 64).
    #[arg(long, default_value_t = 4096)]
    pub size: usize,
    /// Timed runs of each pipeline (after a cold one).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Repetitions of the pipeline, back to back on the device, per run of the device-time loop
    /// (at least; more where 50 ms of device work needs more).
    #[arg(long, default_value_t = 20)]
    pub loop_reps: usize,
    /// The peers' JSON lines (`peer.py`), measured in the same command.
    #[arg(long)]
    pub peers: Option<PathBuf>,
    /// Print a table on standard error besides the JSON.
    #[arg(long)]
    pub table: bool,
}

/// One pipeline: a name (the peers' name where they have it), the example, its arguments.
struct Pipeline {
    name: &'static str,
    example: &'static str,
    source: &'static str,
    /// Scalar arguments after the buffers (the buffers: the input image, then the output).
    scalar: Option<Scalar>,
}

const SOBEL: &str = include_str!("../../../../examples/10-sobel.hat");
const MORPHOLOGY: &str = include_str!("../../../../examples/11-morphology.hat");
const POOLING: &str = include_str!("../../../../examples/12-pooling.hat");
const IN_PLACE: &str = include_str!("../../../../examples/13-in-place.hat");

fn pipelines() -> Vec<Pipeline> {
    let morph = |name, rounds| Pipeline {
        name,
        example: "11-morphology.hat",
        source: MORPHOLOGY,
        scalar: Some(Scalar::Int(rounds)),
    };
    // A round of the example is a dilate and an erode: the peers' `morphN` is N passes.
    vec![
        Pipeline { name: "sobel", example: "10-sobel.hat", source: SOBEL, scalar: None },
        // Two levels of blur and 2 x 2 pool (N -> N/4): the peers' `blur_pool` is one level.
        Pipeline { name: "blur_pool_x2", example: "12-pooling.hat", source: POOLING, scalar: None },
        Pipeline { name: "tone_map", example: "13-in-place.hat", source: IN_PLACE, scalar: Some(Scalar::Float(0.5)) },
        morph("morph4", 2),
        morph("morph16", 8),
        morph("morph64", 32),
    ]
}

/// `source` at `n` x `n` (see the module documentation).
pub fn rescale(source: &str, n: usize) -> Result<String, String> {
    if n == 0 || !n.is_multiple_of(64) {
        return Err(format!("the side must be a positive multiple of 64, not {n}"));
    }
    let sides = [(64, n), (32, n / 2), (16, n / 4)];
    if !source.contains("memref<64x64x") {
        return Err("the example has no 64 x 64 buffer to rescale".into());
    }
    let mut text = source.to_string();
    // Types first (`memref<64x64xf32>`, `memref<32x32xf32>`, ...), every one.
    for (from, to) in sides {
        text = text.replace(&format!("memref<{from}x{from}x"), &format!("memref<{to}x{to}x"));
    }
    // Then the grid constants of @main only (kernels keep their own constants).
    let main = text.find("compute.func @main").ok_or("the example has no @main")?;
    let (head, body) = text.split_at(main);
    let mut body = body.to_string();
    for (from, to) in sides {
        body = body.replace(&format!("arith.constant {from} : index"), &format!("arith.constant {to} : index"));
    }
    Ok(format!("{head}{body}"))
}

/// `source` with `@bench_loop`: `@main`'s parameters and `%hat_reps`, calling `@main` that many
/// times in an `scf.for` (see the module documentation).
pub fn with_loop(source: &str) -> Result<String, String> {
    let start = source.find("compute.func @main(").ok_or("the example has no @main")? + "compute.func @main(".len();
    // The parameter list: up to the parenthesis that closes it (types hold `<...>`, no parens).
    let mut depth = 1;
    let end = source[start..]
        .char_indices()
        .find_map(|(i, c)| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(start + i)
        })
        .ok_or("@main's parameter list does not close")?;
    let parameters = &source[start..end];
    let mut names = Vec::new();
    let mut types = Vec::new();
    for parameter in parameters.split(", %") {
        let (name, ty) = parameter.trim_start_matches('%').split_once(": ").ok_or("a parameter without a type")?;
        names.push(format!("%{name}"));
        types.push(ty.trim().to_string());
    }
    Ok(format!(
        "{source}\ncompute.func @bench_loop({parameters}, %hat_reps: index) {{\n  %hat_c0 = arith.constant 0 : index\n  \
         %hat_c1 = arith.constant 1 : index\n  scf.for %hat_i = %hat_c0 to %hat_reps step %hat_c1 {{\n    \
         compute.call @main({}) : ({}) -> ()\n  }}\n  compute.return\n}}\n",
        names.join(", "),
        types.join(", ")
    ))
}

/// The arguments: an image of `n` x `n` (f32 in [0, 1), or i32 in 0..256), a zeroed output of
/// the entry's second parameter's shape, the scalar if any.
fn arguments(pipeline: &Pipeline, n: usize) -> Vec<ArgValue> {
    let integer = pipeline.source.contains("memref<64x64xi32>");
    let out_side = if pipeline.example == "12-pooling.hat" { n / 4 } else { n };
    let element = if integer { ElementType::I32 } else { ElementType::F32 };
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut bytes = Vec::with_capacity(n * n * 4);
    for _ in 0..n * n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let value = (seed >> 40) % 256;
        if integer {
            bytes.extend_from_slice(&(value as i32).to_le_bytes());
        } else {
            bytes.extend_from_slice(&(value as f32 / 256.0).to_le_bytes());
        }
    }
    let image = HostBuffer { layout: BufferLayout { element, shape: vec![n, n] }, bytes };
    let out = HostBuffer {
        layout: BufferLayout { element, shape: vec![out_side, out_side] },
        bytes: vec![0; out_side * out_side * 4],
    };
    let mut args = vec![ArgValue::Buffer(image), ArgValue::Buffer(out)];
    args.extend(pipeline.scalar.map(ArgValue::Scalar));
    args
}

/// Whether two runs' buffers agree: integers exactly, floats to a relative 1e-5 (a GPU's
/// `sqrt` and division need not round as the CPU backend's do).
fn same_results(a: &[HostBuffer], b: &[HostBuffer]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.layout == y.layout
                && match x.layout.element {
                    ElementType::F32 => x.bytes.chunks_exact(4).zip(y.bytes.chunks_exact(4)).all(|(p, q)| {
                        let (p, q) =
                            (f32::from_le_bytes(p.try_into().unwrap()), f32::from_le_bytes(q.try_into().unwrap()));
                        (p - q).abs() <= 1e-5 * p.abs().max(q.abs()).max(1.0)
                    }),
                    _ => x.bytes == y.bytes,
                }
        })
}

/// The arena plan `plan-memory` reported: (planned, naive, lower bound) bytes.
fn plan_of(statistics: &Statistics) -> Result<(u64, u64, u64), String> {
    let (_, plan) =
        statistics.iter().find(|(pass, _)| pass == "plan-memory").ok_or("no plan-memory in the pipeline")?;
    let statistic = |name: &str| {
        plan.iter().find(|(n, _)| n == name).map(|&(_, v)| v).ok_or(format!("plan-memory reported no {name}"))
    };
    Ok((statistic("planned-peak-bytes")?, statistic("naive-peak-bytes")?, statistic("lower-bound-bytes")?))
}

fn device_time(output: &RunOutput) -> Option<f64> {
    let times: Vec<f64> = output.report.kernels.iter().filter_map(|k| k.device_time.map(ms)).collect();
    (!times.is_empty()).then(|| times.iter().sum())
}

/// Runs the benchmark; the report and whether every check passed.
pub fn run_pipelines(args: &PipelinesArgs) -> Result<(Value, bool), String> {
    let mut backend = crate::gpu::backend(args.backend, args.device.clone())?;
    let device = backend.device_name();
    let n = args.size;
    let mut ok = true;
    let mut rows = Vec::new();
    for pipeline in pipelines() {
        progress(format!("{}: {} at {n} x {n}", pipeline.name, pipeline.example));
        // The check, at 128 x 128.
        let (small_ctx, small) = compile(pipeline.example, &rescale(pipeline.source, 128)?, "main", Plan::Default)?;
        let on_device = run(&small_ctx, small, backend.as_mut(), "main", arguments(&pipeline, 128))?;
        let on_cpu = run(&small_ctx, small, &mut CpuBackend::new(), "main", arguments(&pipeline, 128))?;
        let equal = same_results(&on_device.buffers, &on_cpu.buffers);
        ok &= equal;
        // The figures.
        let (ctx, module, statistics) =
            compile_with_statistics(pipeline.example, &rescale(pipeline.source, n)?, "main", Plan::Default)?;
        let (planned, naive, lower_bound) = plan_of(&statistics)?;
        let cold = run(&ctx, module, backend.as_mut(), "main", arguments(&pipeline, n))?;
        let barrier_count = barriers(&ctx, module, backend.as_mut(), "main", arguments(&pipeline, n))?;
        let (mut total, mut single_device_ms) = (Samples::default(), Samples::default());
        let mut peak = cold.report.peak_device_bytes;
        for _ in 0..args.repeat {
            let output = run(&ctx, module, backend.as_mut(), "main", arguments(&pipeline, n))?;
            total.0.push(ms(output.report.total_time));
            single_device_ms.0.extend(device_time(&output));
            peak = peak.max(output.report.peak_device_bytes);
        }
        // The device time: the pipeline back to back, the image on the device; enough
        // repetitions per run for 50 ms of device work, after 2 s of such runs (a driver raises
        // the clocks only under sustained work, as the peers' loops give it).
        let (loop_ctx, looped) =
            compile(pipeline.example, &with_loop(&rescale(pipeline.source, n)?)?, "bench_loop", Plan::Default)?;
        let loop_run = |backend: &mut dyn Backend, reps: usize| {
            let mut all = arguments(&pipeline, n);
            all.push(ArgValue::Scalar(Scalar::Int(reps as i64)));
            run(&loop_ctx, looped, backend, "bench_loop", all)
        };
        let first = loop_run(backend.as_mut(), args.loop_reps.max(1))?;
        let per_rep = device_time(&first).map_or(1.0, |t| t / args.loop_reps.max(1) as f64);
        let reps = ((50.0 / per_rep.max(1e-3)).ceil() as usize).clamp(args.loop_reps.max(1), 10_000);
        let warm_up = std::time::Instant::now();
        while warm_up.elapsed() < std::time::Duration::from_secs(2) {
            loop_run(backend.as_mut(), reps)?;
        }
        let (mut device_ms, mut loop_ms) = (Samples::default(), Samples::default());
        for _ in 0..args.repeat {
            let output = loop_run(backend.as_mut(), reps)?;
            device_ms.0.extend(device_time(&output).map(|t| t / reps as f64));
            loop_ms.0.push(ms(output.report.total_time) / reps as f64);
            peak = peak.max(output.report.peak_device_bytes);
        }
        progress(format!(
            "  arena {planned} B (lower bound {lower_bound}, without reuse {naive}); peak {peak} B; {} dispatches, \
             {barrier_count} barriers; device {} ms \
             (loop {} ms per repetition; one run alone {} ms); end to end {} ms",
            cold.report.dispatches,
            device_ms.median().map_or("?".into(), |t| format!("{t:.3}")),
            loop_ms.median().map_or("?".into(), |t| format!("{t:.3}")),
            single_device_ms.median().map_or("?".into(), |t| format!("{t:.3}")),
            total.median().map_or("?".into(), |t| format!("{t:.2}")),
        ));
        rows.push(json!({
            "pipeline": pipeline.name,
            "example": pipeline.example,
            "equal_to_cpu_backend_at_128": equal,
            "arena_bytes": planned,
            "naive_arena_bytes": naive,
            "lower_bound_bytes": lower_bound,
            "peak_device_bytes": peak,
            "allocations": cold.report.device_allocations,
            "dispatches": cold.report.dispatches,
            "barriers": barrier_count,
            "cold_total_ms": round4(ms(cold.report.total_time)),
            "device_ms": device_ms.to_json(),
            "loop_ms_per_rep": loop_ms.to_json(),
            "loop_reps": reps,
            "single_run_device_ms": single_device_ms.to_json(),
            "total_ms": total.to_json(),
        }));
    }
    let peers = match &args.peers {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<Value>(l).map_err(|e| format!("{}: {e}", path.display())))
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let report = json!({
        "device": device,
        "size": n,
        "repeat": args.repeat,
        "loop_reps": args.loop_reps,
        "pipelines": rows,
        "peers": peers,
    });
    if args.table {
        eprint!("{}", table(&report));
    }
    Ok((report, ok))
}

/// The report as a table: per pipeline, hat's figures and each peer's device and end-to-end ms.
fn table(report: &Value) -> String {
    let mut out = format!("pipelines at {0} x {0} on {1}\n", report["size"], report["device"]);
    out += "pipeline        arena B    lower B    naive B     peak B  barriers  hat dev ms  loop ms/rep  one run dev ms  hat e2e ms  peers (device / e2e ms)\n";
    let peers = report["peers"].as_array().cloned().unwrap_or_default();
    for row in report["pipelines"].as_array().into_iter().flatten() {
        let name = row["pipeline"].as_str().unwrap_or("?");
        let peer_text: Vec<String> = peers
            .iter()
            .filter(|p| p["pipeline"].as_str() == Some(name))
            .map(|p| format!("{} {} / {}", p["framework"].as_str().unwrap_or("?"), p["device_ms"], p["e2e_ms"]))
            .collect();
        out += &format!(
            "{:<12} {:>10} {:>10} {:>10} {:>10} {:>9} {:>11} {:>12} {:>15} {:>11}  {}\n",
            name,
            row["arena_bytes"].to_string(),
            row["lower_bound_bytes"].to_string(),
            row["naive_arena_bytes"].to_string(),
            row["peak_device_bytes"].to_string(),
            format!("{}/{}", row["barriers"], row["dispatches"]),
            row["device_ms"]["median"].to_string(),
            row["loop_ms_per_rep"]["median"].to_string(),
            row["single_run_device_ms"]["median"].to_string(),
            row["total_ms"]["median"].to_string(),
            peer_text.join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pipeline_rescales_and_compiles() {
        for pipeline in pipelines() {
            let text = rescale(pipeline.source, 512).unwrap();
            assert!(!text.contains("memref<64x64x"), "{}", pipeline.name);
            compile(pipeline.example, &text, "main", Plan::Default).unwrap();
            compile(pipeline.example, &with_loop(&text).unwrap(), "bench_loop", Plan::Default).unwrap();
        }
        assert!(rescale(SOBEL, 100).is_err());
    }
}
