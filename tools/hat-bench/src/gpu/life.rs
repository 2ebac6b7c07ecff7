//! Game of Life (`examples/06-life.hat` rescaled to N x N): end to end under the default
//! pipeline, and under the `jic` strategy.
//!
//! A run is the whole program: the grid goes to the device, `count` generations run, the last
//! one comes back (and, for an odd count, the host-side copy). Its end-to-end time is the run
//! report's `total_time`; the device time is the sum of the generations' GPU timestamps.
//!
//! Under `jic` every generation copies both grids in and out, so it is measured at two small
//! generation counts `a < b` and extrapolated as a line through them: per generation
//! `(t(b) - t(a)) / (b - a)`, and `t(G) = t(a) + (G - a)` times that. The report says so.
//!
//! Checks: the example at 64 x 64, 10 generations, on the backend and on the CPU reference
//! backend must give the same grid; the jic run at `a` generations must give the grid the
//! default pipeline gives at `a`.

use super::programs::{compile, life, life_with_workgroup, Plan};
use super::runs::{device_ms, ms, round4, run, transfers, Samples};
use crate::common::progress;
use hat_ir::{Context, Op};
use hat_runtime::{ArgValue, Backend, BufferLayout, CpuBackend, ElementType, HostBuffer, RunOutput, Scalar};
use serde_json::{json, Value};

/// What to measure.
#[derive(Clone, Debug)]
pub struct LifeSetting {
    /// The grid's side.
    pub size: usize,
    /// Generation counts under the default pipeline.
    pub generations: Vec<usize>,
    /// The two generation counts of the jic runs.
    pub jic_generations: (usize, usize),
    /// The generation count the jic line is extrapolated to.
    pub jic_target: usize,
    /// Runs per generation count under the default pipeline (after a cold run).
    pub repeat: usize,
    /// Runs per generation count under jic (after an untimed one).
    pub jic_repeat: usize,
    /// Also run the example with workgroups of this shape (default pipeline, the largest
    /// generation count), to see what the example's 8 x 8 costs.
    pub variant_workgroup: Option<(u32, u32)>,
}

/// An `n` x `n` grid, a third of it alive, from a fixed xorshift sequence.
fn grid(n: usize, mut seed: u64) -> HostBuffer {
    let mut bytes = Vec::with_capacity(n * n * 4);
    for _ in 0..n * n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let alive = (seed >> 32).is_multiple_of(3) as i32;
        bytes.extend_from_slice(&alive.to_le_bytes());
    }
    HostBuffer { layout: BufferLayout { element: ElementType::I32, shape: vec![n, n] }, bytes }
}

fn run_life(
    ctx: &Context,
    module: Op,
    backend: &mut dyn Backend,
    grid: &HostBuffer,
    gens: usize,
) -> Result<RunOutput, String> {
    let args = vec![ArgValue::Buffer(grid.clone()), ArgValue::Scalar(Scalar::Int(gens as i64))];
    run(ctx, module, backend, "main", args)
}

fn alive(grid: &HostBuffer) -> usize {
    grid.bytes.chunks_exact(4).filter(|c| c != &[0, 0, 0, 0]).count()
}

/// The example at 64 x 64 x 10 on `backend` and on the CPU reference backend: the same grid?
fn check_small(backend: &mut dyn Backend) -> Result<Value, String> {
    let (ctx, module) = compile("06-life.hat@64", &life(64)?, "main", Plan::Default)?;
    let start = grid(64, 0x9E37_79B9_7F4A_7C15);
    let on_device = run_life(&ctx, module, backend, &start, 10)?;
    let mut cpu = CpuBackend::new();
    let on_cpu = run_life(&ctx, module, &mut cpu, &start, 10)?;
    let same = on_device.buffers.first() == on_cpu.buffers.first();
    Ok(json!({ "grid": "64x64x10", "equal_to_cpu_backend": same, "alive": on_cpu.buffers.first().map(alive) }))
}

/// Measures Life as `setting` says.
pub fn measure(backend: &mut dyn Backend, setting: &LifeSetting) -> Result<Value, String> {
    let n = setting.size;
    progress(format!(
        "life: {n} x {n}, generations {:?} (default), {:?} (jic)",
        setting.generations, setting.jic_generations
    ));
    let check = check_small(backend)?;
    progress(format!("  64 x 64 x 10 against the CPU backend: {check}"));
    let text = life(n)?;
    let start = grid(n, 12345);
    let (ctx, module) = compile("06-life.hat", &text, "main", Plan::Default)?;

    let clock = std::time::Instant::now();
    let lowered = lowered_workgroup(backend, &ctx, module)?;
    let lowering_ms = ms(clock.elapsed());
    let clock = std::time::Instant::now();
    let rows = lowered_rows(backend, &ctx, module)?;
    let lowered_again_ms = ms(clock.elapsed());
    progress(format!(
        "  lowering the module: {lowering_ms:.3} ms; again (the backend's cache): {lowered_again_ms:.3} ms"
    ));
    progress(format!("  life_step runs with workgroups of {lowered}, {rows} row(s) of work items per invocation"));
    let first = run_life(&ctx, module, backend, &start, 1)?;
    let cold = json!({ "generations": 1, "total_ms": round4(ms(first.report.total_time)) });
    progress(format!("  cold run (1 generation): {:.1} ms", ms(first.report.total_time)));
    drop(first);

    let mut default_runs = Vec::new();
    for &gens in &setting.generations {
        let (mut total, mut device) = (Samples::default(), Samples::default());
        let mut last = None;
        for _ in 0..setting.repeat.max(1) {
            let output = run_life(&ctx, module, backend, &start, gens)?;
            total.0.push(ms(output.report.total_time));
            device.0.extend(device_ms(&output.report, "life_step"));
            progress(format!(
                "  default, {gens} generations: end to end {:.1} ms, device {} ms",
                ms(output.report.total_time),
                device_ms(&output.report, "life_step").map_or("?".into(), |t| format!("{t:.2}"))
            ));
            last = Some(output);
        }
        let last = last.expect("at least one run");
        default_runs.push(json!({
            "generations": gens,
            "end_to_end_ms": total.to_json(),
            "device_ms": device.to_json(),
            "end_to_end_ms_per_generation": total.median().map(|t| round4(t / gens as f64)),
            "device_ms_per_generation": device.median().map(|t| round4(t / gens as f64)),
            "dispatches": last.report.dispatches,
            "transfers": transfers(&last.report),
            "alive": last.buffers.first().map(alive),
            "time_of_last_run": last.report.to_json()["time"],
        }));
    }
    let variant = match setting.variant_workgroup {
        Some(shape) => workgroup_variant(backend, setting, &start, shape, default_runs.last())?,
        None => Value::Null,
    };

    let (a, b) = setting.jic_generations;
    let reference_at_a = run_life(&ctx, module, backend, &start, a)?.buffers.into_iter().next();
    let (jic_ctx, jic_module) = compile("06-life.hat", &text, "main", Plan::Jic)?;
    // The first jic run lowers its module and is not timed; its grid is checked.
    let first = run_life(&jic_ctx, jic_module, backend, &start, a)?;
    let jic_same = first.buffers.first() == reference_at_a.as_ref();
    drop(first);
    let mut jic_runs = Vec::new();
    for gens in [a, b] {
        let mut total = Samples::default();
        let mut last = None;
        for _ in 0..setting.jic_repeat.max(1) {
            let output = run_life(&jic_ctx, jic_module, backend, &start, gens)?;
            progress(format!("  jic, {gens} generations: end to end {:.1} ms", ms(output.report.total_time)));
            total.0.push(ms(output.report.total_time));
            last = Some(output.report);
        }
        jic_runs.push((gens, total, last.expect("at least one run")));
    }
    let median = |samples: &Samples| samples.median().unwrap_or(f64::NAN);
    let (t_a, t_b) = (median(&jic_runs[0].1), median(&jic_runs[1].1));
    let per_generation = (b > a).then(|| (t_b - t_a) / (b - a) as f64);
    let target = setting.jic_target;
    let extrapolated = per_generation.map(|p| t_a + (target as f64 - a as f64) * p);
    let jic = json!({
        "pipeline": Plan::Jic.pipeline(),
        "runs": jic_runs.iter().map(|(gens, total, report)| json!({
            "generations": gens, "end_to_end_ms": total.to_json(), "transfers": transfers(report),
        })).collect::<Vec<_>>(),
        "ms_per_generation": per_generation.map(round4),
        "extrapolated": {
            "generations": target,
            "end_to_end_ms": extrapolated.map(round4),
            "how": format!("a line through the runs at {a} and {b} generations: t({a}) + ({target} - {a}) x (t({b}) - t({a})) / ({b} - {a})"),
        },
        "equal_to_default_at_a": jic_same,
        "note": "the median of each count's runs, after an untimed first run (which lowers the module)",
    });
    Ok(json!({
        "program": "examples/06-life.hat, its 16x16 grid rescaled",
        "size": n,
        "pipeline": Plan::Default.pipeline(),
        "semantics": "dead border (the example's); a third of the cells alive at the start",
        "cold_run": cold,
        "default": default_runs,
        "jic": jic,
        "workgroup_variant": variant,
        "lowered_workgroup": lowered,
        "lowered_rows_per_invocation": rows,
        "lowering_ms": round4(lowering_ms),
        "lowering_again_ms": round4(lowered_again_ms),
        "check": check,
    }))
}

/// The workgroup `life_step` runs with on `backend` (the lowering may reshape it:
/// `choose_workgroup_shape`), `null` where the backend lowers nothing (the CPU backend).
fn lowered_workgroup(backend: &mut dyn Backend, ctx: &hat_ir::Context, module: hat_ir::Op) -> Result<Value, String> {
    let verified = hat_ir::verify_module(ctx, module).map_err(|e| hat_ir::diagnostics::render(&ctx.sources, &e))?;
    let lowered = backend.lower(verified).map_err(|e| e.to_string())?;
    let spirv = lowered.as_ref().and_then(|l| l.as_any().downcast_ref::<hat_runtime_vulkan::SpirvLowered>());
    Ok(spirv.and_then(|s| s.0.entry_point("life_step")).map_or(Value::Null, |e| json!(e.workgroup_size)))
}

/// The rows of work items each invocation of `life_step` runs on `backend` (the lowering may
/// coarsen it: `coarsen_rows`), `null` where the backend lowers nothing.
fn lowered_rows(backend: &mut dyn Backend, ctx: &hat_ir::Context, module: hat_ir::Op) -> Result<Value, String> {
    let verified = hat_ir::verify_module(ctx, module).map_err(|e| hat_ir::diagnostics::render(&ctx.sources, &e))?;
    let lowered = backend.lower(verified).map_err(|e| e.to_string())?;
    let spirv = lowered.as_ref().and_then(|l| l.as_any().downcast_ref::<hat_runtime_vulkan::SpirvLowered>());
    Ok(spirv.and_then(|s| s.0.entry_point("life_step")).map_or(Value::Null, |e| json!(e.rows_per_invocation)))
}

/// The example with `shape` workgroups at the largest generation count: end to end and device
/// time, and whether its grid equals the example's (`example`, that count's run).
fn workgroup_variant(
    backend: &mut dyn Backend,
    setting: &LifeSetting,
    start: &HostBuffer,
    shape: (u32, u32),
    example: Option<&Value>,
) -> Result<Value, String> {
    let gens = setting.generations.iter().copied().max().unwrap_or(1);
    let (ctx, module) = compile("06-life.hat", &life_with_workgroup(setting.size, shape)?, "main", Plan::Default)?;
    let lowered = lowered_workgroup(backend, &ctx, module)?;
    let first = run_life(&ctx, module, backend, start, gens)?;
    let same_alive = first.buffers.first().map(alive) == example.and_then(|e| e["alive"].as_u64()).map(|a| a as usize);
    drop(first);
    let (mut total, mut device) = (Samples::default(), Samples::default());
    for _ in 0..setting.repeat.max(1) {
        let output = run_life(&ctx, module, backend, start, gens)?;
        total.0.push(ms(output.report.total_time));
        device.0.extend(device_ms(&output.report, "life_step"));
    }
    progress(format!(
        "  workgroup {} x {} (runs as {lowered}), {gens} generations: end to end {:.1} ms, device {:.2} ms",
        shape.0,
        shape.1,
        total.median().unwrap_or(f64::NAN),
        device.median().unwrap_or(f64::NAN)
    ));
    Ok(json!({
        "workgroup": [shape.0, shape.1],
        "lowered_workgroup": lowered,
        "generations": gens,
        "end_to_end_ms": total.to_json(),
        "device_ms": device.to_json(),
        "device_ms_per_generation": device.median().map(|t| round4(t / gens as f64)),
        "same_alive_count_as_the_example": same_alive,
        "note": "not the example: its declared workgroup shape changed, to see what the shape costs (after an untimed first run); lowered_workgroup: the shape it runs with",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn life_runs_small_on_the_cpu_backend_and_the_plans_agree() {
        let mut backend = CpuBackend::new();
        let setting = LifeSetting {
            size: 32,
            generations: vec![3],
            jic_generations: (1, 3),
            jic_target: 10,
            repeat: 1,
            jic_repeat: 2,
            variant_workgroup: Some((16, 16)),
        };
        let report = measure(&mut backend, &setting).unwrap();
        assert_eq!(report["check"]["equal_to_cpu_backend"], json!(true));
        assert_eq!(report["jic"]["equal_to_default_at_a"], json!(true));
        assert_eq!(report["default"][0]["dispatches"], json!(3));
        // The default plan moves the grid in once and one grid back (32 x 32 x 4 B each way).
        assert_eq!(report["default"][0]["transfers"]["to_device"]["bytes"], json!(4096));
        assert_eq!(report["default"][0]["transfers"]["from_device"]["bytes"], json!(4096));
        assert!(report["jic"]["extrapolated"]["end_to_end_ms"].is_number());
        assert_eq!(report["workgroup_variant"]["same_alive_count_as_the_example"], json!(true));
    }
}
