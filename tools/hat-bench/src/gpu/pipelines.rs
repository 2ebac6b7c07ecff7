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

use super::programs::{compile, compile_with_statistics, Plan, Statistics};
use super::runs::{ms, round4, run, Samples};
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
    let mut backend: Box<dyn Backend> = match args.backend {
        BackendKind::Vulkan => {
            let options = hat_runtime_vulkan::VulkanOptions {
                device: args.device.clone(),
                timestamps: true,
                ..Default::default()
            };
            Box::new(hat_runtime_vulkan::VulkanBackend::new(&options).map_err(|e| format!("no Vulkan device: {e}"))?)
        }
        BackendKind::Cpu => Box::new(CpuBackend::new()),
    };
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
        let (mut total, mut device_ms) = (Samples::default(), Samples::default());
        let mut peak = cold.report.peak_device_bytes;
        for _ in 0..args.repeat {
            let output = run(&ctx, module, backend.as_mut(), "main", arguments(&pipeline, n))?;
            total.0.push(ms(output.report.total_time));
            device_ms.0.extend(device_time(&output));
            peak = peak.max(output.report.peak_device_bytes);
        }
        progress(format!(
            "  arena {planned} B (lower bound {lower_bound}, without reuse {naive}); peak {peak} B; device {} ms; end to end {} ms",
            device_ms.median().map_or("?".into(), |t| format!("{t:.3}")),
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
            "cold_total_ms": round4(ms(cold.report.total_time)),
            "device_ms": device_ms.to_json(),
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
    let report = json!({ "device": device, "size": n, "repeat": args.repeat, "pipelines": rows, "peers": peers });
    if args.table {
        eprint!("{}", table(&report));
    }
    Ok((report, ok))
}

/// The report as a table: per pipeline, hat's figures and each peer's device and end-to-end ms.
fn table(report: &Value) -> String {
    let mut out = format!("pipelines at {0} x {0} on {1}\n", report["size"], report["device"]);
    out += "pipeline        arena B    lower B     peak B  hat dev ms  hat e2e ms  peers (device / e2e ms)\n";
    let peers = report["peers"].as_array().cloned().unwrap_or_default();
    for row in report["pipelines"].as_array().into_iter().flatten() {
        let name = row["pipeline"].as_str().unwrap_or("?");
        let peer_text: Vec<String> = peers
            .iter()
            .filter(|p| p["pipeline"].as_str() == Some(name))
            .map(|p| format!("{} {} / {}", p["framework"].as_str().unwrap_or("?"), p["device_ms"], p["e2e_ms"]))
            .collect();
        out += &format!(
            "{:<12} {:>10} {:>10} {:>10} {:>11} {:>11}  {}\n",
            name,
            row["arena_bytes"].to_string(),
            row["lower_bound_bytes"].to_string(),
            row["peak_device_bytes"].to_string(),
            row["device_ms"]["median"].to_string(),
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
        }
        assert!(rescale(SOBEL, 100).is_err());
    }
}
