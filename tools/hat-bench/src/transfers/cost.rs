//! The cost of planning transfers: generated programs ([`super::program_gen`]) of a given number
//! of dispatches, each pipeline run in process on a freshly parsed copy (`--verify-each` off, so
//! that the figure is the passes' own), timed per pass, with the peak net heap growth of the run
//! ([`crate::heap`]). The growth exponent is the least-squares slope of log time over log
//! dispatches across the sizes; `n log n` over the same sizes has the slope given beside it.

use super::program_gen::{generate, Generated, Shape};
use crate::common::progress;
use crate::heap;
use crate::measure::{median, round1};
use hat_ir::pass::instrumentation::PassInstrumentation;
use hat_ir::pass::{PassManager, PassManagerOptions};
use hat_ir::{parse_source, verify_module, Context, Op};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Records how long each pass ran.
struct PassClock {
    started: Option<Instant>,
    times: Rc<RefCell<Vec<(String, Duration)>>>,
}

impl PassInstrumentation for PassClock {
    fn before_pass(&mut self, _pass: &str, _ctx: &Context, _op: Op) {
        self.started = Some(Instant::now());
    }

    fn after_pass(&mut self, pass: &str, _ctx: &Context, _op: Op) {
        if let Some(start) = self.started.take() {
            self.times.borrow_mut().push((pass.to_string(), start.elapsed()));
        }
    }
}

/// One run of a pipeline on a program.
#[derive(Clone, Debug)]
pub struct PipelineRun {
    /// The whole pipeline.
    pub seconds: f64,
    /// Per pass, in order.
    pub passes: Vec<(String, f64)>,
    /// Peak net heap growth during the run, in bytes.
    pub heap_bytes: u64,
    /// Transfers in the program afterwards: (to the device, from the device).
    pub transfers: (usize, usize),
    /// Warnings and remarks the passes emitted (a function the static planner does not follow
    /// is one), the first few.
    pub diagnostics: Vec<String>,
}

fn parse(text: &str) -> Result<(Context, Op), String> {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "generated.hat", text).map_err(|e| format!("{e:?}"))?;
    if let Err(errors) = verify_module(&ctx, module) {
        return Err(hat_ir::diagnostics::render(&ctx.sources, &errors));
    }
    Ok((ctx, module))
}

/// Counts the transfer ops in `module`: (to the device, from the device).
fn count_transfers(ctx: &Context, module: Op) -> (usize, usize) {
    let ops = ctx.walk(module);
    let named = |name: &str| ops.iter().filter(|&&op| ctx.name_str(op) == name).count();
    (named("buffer.to_device"), named("buffer.from_device"))
}

/// Parses `text` and runs `pipeline` on it, measured.
pub fn run_pipeline(text: &str, pipeline: &str) -> Result<PipelineRun, String> {
    let (mut ctx, module) = parse(text)?;
    let mut manager = PassManager::new("builtin.module", PassManagerOptions { verify_each: false });
    manager.add_pipeline(&hat_passes::registry(), pipeline).map_err(|e| e.to_string())?;
    let times: Rc<RefCell<Vec<(String, Duration)>>> = Rc::default();
    manager.add_instrumentation(Box::new(PassClock { started: None, times: times.clone() }));
    let window = heap::Window::open();
    let start = Instant::now();
    let outcome = manager.run(&mut ctx, module);
    let seconds = start.elapsed().as_secs_f64();
    let heap_bytes = window.close();
    let diagnostics = match outcome {
        Ok(diagnostics) => diagnostics,
        Err(errors) => return Err(hat_ir::diagnostics::render(&ctx.sources, &errors)),
    };
    if let Err(errors) = verify_module(&ctx, module) {
        return Err(format!("invalid IR after {pipeline}: {}", hat_ir::diagnostics::render(&ctx.sources, &errors)));
    }
    let passes = times.borrow().iter().map(|(name, d)| (name.clone(), d.as_secs_f64())).collect();
    let diagnostics = diagnostics
        .iter()
        .take(3)
        .map(|d| hat_ir::diagnostics::render_short(&ctx.sources, std::slice::from_ref(d)).trim_end().to_string())
        .collect();
    Ok(PipelineRun { seconds, passes, heap_bytes, transfers: count_transfers(&ctx, module), diagnostics })
}

/// The least-squares slope of `ln y` over `ln x`; `None` with fewer than two distinct x.
pub fn growth_exponent(points: &[(f64, f64)]) -> Option<f64> {
    let logs: Vec<(f64, f64)> =
        points.iter().filter(|(x, y)| *x > 0.0 && *y > 0.0).map(|(x, y)| (x.ln(), y.ln())).collect();
    let n = logs.len() as f64;
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = logs.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    (logs.len() >= 2 && sxx > 0.0).then(|| sxy / sxx)
}

/// Rounded to two decimals.
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Rounded to a tenth of a millisecond.
fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// A pipeline measured across the sizes, for the summary: (name, [(dispatches, best seconds,
/// peak heap MiB)]).
pub type Series = (String, Vec<(usize, f64, f64)>);

/// Measures every pipeline of `pipelines` ((name, text)) on the programs of every size; the
/// report, the series for the summary, and whether everything ran.
pub fn measure(
    sizes: &[usize],
    buffers: usize,
    repeat: usize,
    seed: u64,
    pipelines: &[(&str, String)],
    keep: Option<&Path>,
) -> (Value, Vec<Series>, bool) {
    let mut ok = true;
    let mut programs = Vec::new();
    let mut series: Vec<Series> = pipelines.iter().map(|(name, _)| (name.to_string(), Vec::new())).collect();
    for &dispatches in sizes {
        let shape = Shape { dispatches, buffers, seed };
        progress(format!("cost: {dispatches} dispatches over {buffers} buffers, generating"));
        let generated: Generated = generate(shape);
        if let Some(dir) = keep {
            let file = dir.join(format!("transfers-{dispatches}x{buffers}.hat"));
            if let Err(e) = std::fs::write(&file, &generated.text) {
                progress(format!("cannot write {}: {e}", file.display()));
            }
        }
        let start = Instant::now();
        let parsed = parse(&generated.text);
        let parse_seconds = start.elapsed().as_secs_f64();
        let ops = parsed.as_ref().map(|(ctx, module)| ctx.walk(*module).len()).ok();
        drop(parsed);
        let mut results = Vec::new();
        for ((name, pipeline), (_, points)) in pipelines.iter().zip(series.iter_mut()) {
            let mut runs = Vec::new();
            let mut error = None;
            for _ in 0..repeat.max(1) {
                match run_pipeline(&generated.text, pipeline) {
                    Ok(run) => runs.push(run),
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
            ok &= error.is_none();
            let best = runs.iter().min_by(|a, b| a.seconds.total_cmp(&b.seconds));
            let heap_mib = runs.iter().map(|r| r.heap_bytes).max().map(|b| b as f64 / (1 << 20) as f64);
            if let (Some(best), Some(mib)) = (best, heap_mib) {
                points.push((dispatches, best.seconds, mib));
                progress(format!("  {name}: {:.3} s, {mib:.1} MiB heap", best.seconds));
            }
            if let Some(e) = &error {
                progress(format!("  {name}: FAILED: {e}"));
            }
            results.push(json!({
                "pipeline": name,
                "pass_pipeline": pipeline,
                "seconds": best.map(|b| round4(b.seconds)),
                "seconds_median": median(runs.iter().map(|r| r.seconds).collect()).map(round4),
                "passes": best.map(|b| b.passes.iter().map(|(p, s)| json!({ "pass": p, "seconds": round4(*s) })).collect::<Vec<_>>()),
                "peak_heap_mib": heap_mib.map(round1),
                "transfers": best.map(|b| json!({ "to_device": b.transfers.0, "from_device": b.transfers.1 })),
                "diagnostics": best.map(|b| b.diagnostics.clone()),
                "runs": runs.len(),
                "error": error,
            }));
        }
        programs.push(json!({
            "dispatches": generated.dispatches,
            "dispatches_inlined": generated.dispatches_inlined,
            "buffers": buffers,
            "helpers": generated.helpers,
            "helper_calls": generated.helper_calls,
            "loops": generated.loops,
            "branches": generated.branches,
            "host_accesses": generated.host_accesses,
            "host_function_calls": generated.host_function_calls,
            "ops": ops,
            "bytes": generated.text.len(),
            "parse_and_verify_seconds": round4(parse_seconds),
            "pipelines": results,
        }));
    }
    let n_log_n: Vec<(f64, f64)> = sizes.iter().map(|&n| (n as f64, n as f64 * (n as f64).ln())).collect();
    let n_log_n_exponent = growth_exponent(&n_log_n);
    let largest = sizes.iter().copied().max();
    let growth: Vec<Value> = series
        .iter()
        .map(|(name, points)| {
            let time: Vec<(f64, f64)> = points.iter().map(|&(n, s, _)| (n as f64, s)).collect();
            let memory: Vec<(f64, f64)> = points.iter().map(|&(n, _, m)| (n as f64, m)).collect();
            let exponent = growth_exponent(&time);
            let at_100k = points.iter().find(|p| p.0 == 100_000).map(|p| p.1);
            json!({
                "pipeline": name,
                "time_exponent": exponent.map(round2),
                "heap_exponent": growth_exponent(&memory).map(round2),
                "seconds_at_largest": points.iter().find(|p| Some(p.0) == largest).map(|p| round4(p.1)),
                "under_1s_at_100000": at_100k.map(|s| s < 1.0),
                "no_worse_than_n_log_n": exponent.zip(n_log_n_exponent).map(|(e, bound)| e <= bound),
            })
        })
        .collect();
    let report = json!({
        "buffers": buffers,
        "seed": seed,
        "repeat": repeat.max(1),
        "verify_each": false,
        "programs": programs,
        "n_log_n_exponent": n_log_n_exponent.map(round2),
        "growth": growth,
    });
    (report, series, ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponents_of_known_curves() {
        let linear: Vec<(f64, f64)> = [1e3, 1e4, 1e5].iter().map(|&n| (n, 3.0 * n)).collect();
        assert!((growth_exponent(&linear).unwrap() - 1.0).abs() < 1e-9);
        let square: Vec<(f64, f64)> = [1e3, 1e4, 1e5].iter().map(|&n| (n, n * n)).collect();
        assert!((growth_exponent(&square).unwrap() - 2.0).abs() < 1e-9);
        let n_log_n: Vec<(f64, f64)> = [1e3, 1e4, 1e5].iter().map(|&n| (n, n * n.ln())).collect();
        let e = growth_exponent(&n_log_n).unwrap();
        assert!(e > 1.1 && e < 1.12, "{e}");
        assert_eq!(growth_exponent(&[(10.0, 1.0)]), None);
    }

    #[test]
    fn a_small_generated_program_is_planned_and_measured() {
        let text = generate(Shape { dispatches: 60, buffers: 20, seed: 3 }).text;
        let run = run_pipeline(&text, "insert-transfers{strategy=static}").expect("plans");
        assert!(run.transfers.0 > 0 && run.transfers.1 > 0, "{:?}", run.transfers);
        assert_eq!(run.passes.len(), 1);
        assert_eq!(run.passes[0].0, "insert-transfers");
        assert!(run.heap_bytes > 0);
        assert!(run_pipeline(&text, "no-such-pass").is_err());
    }
}
