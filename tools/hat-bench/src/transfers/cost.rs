//! The cost of planning transfers: generated programs ([`super::program_gen`]) of a given number
//! of dispatches, each pipeline run in process on a freshly parsed copy (`--verify-each` off, so
//! that the figure is the passes' own), timed per pass (wall time, and the thread's CPU time,
//! which other load on a shared machine disturbs less), with the peak net heap growth of the run
//! ([`crate::heap`]). The growth exponent is the least-squares slope of log time over log
//! dispatches across the sizes; `n log n` over the same sizes has the slope given beside it.
//!
//! A pipeline whose run at one size takes longer than the budget is not run at the larger sizes
//! (the report says so, with an estimate from the exponent fitted so far), and a run that alone
//! takes more than the budget's share of the repetitions is not repeated.

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
use std::time::Instant;

/// The CPU time the process has used, in seconds (all threads: the planner plans roots on several).
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: `timespec` is plain old data, for which all-zero bytes are a valid value.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and a pointer to a live local.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if r != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// One pass's time: (name, wall seconds, CPU seconds).
type PassTime = (String, f64, f64);

/// Records how long each pass ran.
struct PassClock {
    started: Option<(Instant, f64)>,
    times: Rc<RefCell<Vec<PassTime>>>,
}

impl PassInstrumentation for PassClock {
    fn before_pass(&mut self, _pass: &str, _ctx: &Context, _op: Op) {
        self.started = Some((Instant::now(), process_cpu_seconds()));
    }

    fn after_pass(&mut self, pass: &str, _ctx: &Context, _op: Op) {
        if let Some((start, cpu)) = self.started.take() {
            let wall = start.elapsed().as_secs_f64();
            self.times.borrow_mut().push((pass.to_string(), wall, process_cpu_seconds() - cpu));
        }
    }
}

/// One run of a pipeline on a program.
#[derive(Clone, Debug)]
pub struct PipelineRun {
    /// The whole pipeline, wall time.
    pub seconds: f64,
    /// The whole pipeline, this thread's CPU time.
    pub cpu_seconds: f64,
    /// Per pass, in order: (name, wall seconds, CPU seconds).
    pub passes: Vec<PassTime>,
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

/// Parses `text` and runs `pipeline` on it, measured; the heap is counted only with
/// `count_heap` (counting costs atomics on every allocation, so timed runs do not count).
pub fn run_pipeline(text: &str, pipeline: &str, count_heap: bool) -> Result<PipelineRun, String> {
    let (mut ctx, module) = parse(text)?;
    let mut manager = PassManager::new("builtin.module", PassManagerOptions { verify_each: false });
    manager.add_pipeline(&hat_passes::registry(), pipeline).map_err(|e| e.to_string())?;
    let times: Rc<RefCell<Vec<PassTime>>> = Rc::default();
    manager.add_instrumentation(Box::new(PassClock { started: None, times: times.clone() }));
    let window = count_heap.then(heap::Window::open);
    let start = Instant::now();
    let cpu = process_cpu_seconds();
    let outcome = manager.run(&mut ctx, module);
    let cpu_seconds = process_cpu_seconds() - cpu;
    let seconds = start.elapsed().as_secs_f64();
    let heap_bytes = window.map_or(0, heap::Window::close);
    let diagnostics = match outcome {
        Ok(diagnostics) => diagnostics,
        Err(errors) => return Err(hat_ir::diagnostics::render(&ctx.sources, &errors)),
    };
    if let Err(errors) = verify_module(&ctx, module) {
        return Err(format!("invalid IR after {pipeline}: {}", hat_ir::diagnostics::render(&ctx.sources, &errors)));
    }
    let passes = times.borrow().clone();
    let diagnostics = diagnostics
        .iter()
        .take(3)
        .map(|d| hat_ir::diagnostics::render_short(&ctx.sources, std::slice::from_ref(d)).trim_end().to_string())
        .collect();
    Ok(PipelineRun { seconds, cpu_seconds, passes, heap_bytes, transfers: count_transfers(&ctx, module), diagnostics })
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

/// One measured point of a pipeline: dispatches, best wall seconds, best CPU seconds, peak heap
/// MiB.
#[derive(Copy, Clone, Debug)]
pub struct Point {
    /// Dispatches in the program.
    pub dispatches: usize,
    /// The least wall time over the runs.
    pub seconds: f64,
    /// The least CPU time over the runs.
    pub cpu_seconds: f64,
    /// The largest peak heap growth over the runs, in MiB.
    pub heap_mib: f64,
}

/// A pipeline measured across the sizes, for the summary: its name and points.
pub type Series = (String, Vec<Point>);

/// What to measure.
pub struct Plan<'a> {
    /// Dispatches of each program, in increasing order.
    pub sizes: &'a [usize],
    /// Buffers of each program.
    pub buffers: usize,
    /// Runs of each pipeline on each program.
    pub repeat: usize,
    /// The generator's seed.
    pub seed: u64,
    /// (name, pipeline text).
    pub pipelines: &'a [(&'a str, String)],
    /// A run longer than this many seconds stops the pipeline's larger sizes.
    pub budget_seconds: f64,
    /// Where to keep the generated programs.
    pub keep: Option<&'a Path>,
}

/// The fitted exponent of `points` (wall or CPU time), and `n log n`'s over the same sizes.
fn exponents(points: &[Point], cpu: bool) -> Option<f64> {
    let xy: Vec<(f64, f64)> =
        points.iter().map(|p| (p.dispatches as f64, if cpu { p.cpu_seconds } else { p.seconds })).collect();
    growth_exponent(&xy)
}

/// Measures every pipeline on the programs of every size; the report, the series for the
/// summary, and whether everything ran.
pub fn measure(plan: &Plan<'_>) -> (Value, Vec<Series>, bool) {
    let mut ok = true;
    let mut programs = Vec::new();
    let mut series: Vec<Series> = plan.pipelines.iter().map(|(name, _)| (name.to_string(), Vec::new())).collect();
    // Per pipeline: the size and seconds of a run over the budget, once one was.
    let mut stopped: Vec<Option<(usize, f64)>> = vec![None; plan.pipelines.len()];
    for &dispatches in plan.sizes {
        let shape = Shape { dispatches, buffers: plan.buffers, seed: plan.seed };
        progress(format!("cost: {dispatches} dispatches over {} buffers, generating", plan.buffers));
        let generated: Generated = generate(shape);
        if let Some(dir) = plan.keep {
            let file = dir.join(format!("transfers-{dispatches}x{}.hat", plan.buffers));
            if let Err(e) = std::fs::write(&file, &generated.text) {
                progress(format!("cannot write {}: {e}", file.display()));
            }
        }
        let start = Instant::now();
        let parsed = parse(&generated.text);
        let parse_seconds = start.elapsed().as_secs_f64();
        let ops = parsed.as_ref().map(|(ctx, module)| ctx.walk(*module).len()).ok();
        if let Err(e) = &parsed {
            progress(format!("  the generated program does not parse: {e}"));
            ok = false;
        }
        drop(parsed);
        let mut results = Vec::new();
        for (k, (name, pipeline)) in plan.pipelines.iter().enumerate() {
            let points = &mut series[k].1;
            if let Some((at, seconds)) = stopped[k] {
                let estimate =
                    exponents(points, false).map(|e| seconds * (dispatches as f64 / at as f64).powf(e)).map(round1);
                progress(format!("  {name}: skipped (over the budget at {at} dispatches)"));
                results.push(json!({
                    "pipeline": name,
                    "pass_pipeline": pipeline,
                    "skipped": format!(
                        "not run: at {at} dispatches one run took {seconds:.1} s, over the budget of {} s (--budget-seconds)",
                        plan.budget_seconds
                    ),
                    "estimated_seconds": estimate,
                }));
                continue;
            }
            let mut runs: Vec<PipelineRun> = Vec::new();
            let mut error = None;
            // The timed runs, then one that counts the heap (its time is not used).
            let mut heap_bytes = None;
            for _ in 0..plan.repeat.max(1) {
                match run_pipeline(&generated.text, pipeline, false) {
                    Ok(run) => {
                        let long = run.seconds * plan.repeat.max(1) as f64 > plan.budget_seconds;
                        runs.push(run);
                        if long {
                            break;
                        }
                    }
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
            if error.is_none() {
                match run_pipeline(&generated.text, pipeline, true) {
                    Ok(run) => heap_bytes = Some(run.heap_bytes),
                    Err(e) => error = Some(e),
                }
            }
            ok &= error.is_none();
            let best = runs.iter().min_by(|a, b| a.seconds.total_cmp(&b.seconds));
            let best_cpu = runs.iter().map(|r| r.cpu_seconds).min_by(f64::total_cmp);
            let heap_mib = heap_bytes.map(|b| b as f64 / (1 << 20) as f64);
            if let (Some(best), Some(cpu), Some(mib)) = (best, best_cpu, heap_mib) {
                points.push(Point { dispatches, seconds: best.seconds, cpu_seconds: cpu, heap_mib: mib });
                progress(format!("  {name}: {:.3} s ({cpu:.3} s CPU), {mib:.1} MiB heap", best.seconds));
                if best.seconds > plan.budget_seconds {
                    stopped[k] = Some((dispatches, best.seconds));
                }
            }
            if let Some(e) = &error {
                progress(format!("  {name}: FAILED: {e}"));
            }
            results.push(json!({
                "pipeline": name,
                "pass_pipeline": pipeline,
                "seconds": best.map(|b| round4(b.seconds)),
                "seconds_median": median(runs.iter().map(|r| r.seconds).collect()).map(round4),
                "cpu_seconds": best_cpu.map(round4),
                "passes": best.map(|b| b.passes.iter().map(|(p, s, c)| json!({
                    "pass": p,
                    "seconds": round4(*s),
                    "cpu_seconds": round4(*c),
                })).collect::<Vec<_>>()),
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
            "buffers": plan.buffers,
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
    let growth: Vec<Value> = series
        .iter()
        .map(|(name, points)| {
            let sizes: Vec<(f64, f64)> = points
                .iter()
                .map(|p| (p.dispatches as f64, p.dispatches as f64 * (p.dispatches as f64).ln()))
                .collect();
            let bound = growth_exponent(&sizes);
            let memory: Vec<(f64, f64)> = points.iter().map(|p| (p.dispatches as f64, p.heap_mib)).collect();
            let (wall, cpu) = (exponents(points, false), exponents(points, true));
            let at_100k = points.iter().find(|p| p.dispatches == 100_000);
            json!({
                "pipeline": name,
                "sizes_measured": points.iter().map(|p| p.dispatches).collect::<Vec<_>>(),
                "time_exponent": wall.map(round2),
                "cpu_time_exponent": cpu.map(round2),
                "n_log_n_exponent": bound.map(round2),
                "heap_exponent": growth_exponent(&memory).map(round2),
                "targets": {
                    "under_1s_at_100000": at_100k.map(|p| p.seconds < 1.0),
                    "cpu_under_1s_at_100000": at_100k.map(|p| p.cpu_seconds < 1.0),
                    "no_worse_than_n_log_n": wall.zip(bound).map(|(e, b)| e <= b),
                    "cpu_no_worse_than_n_log_n": cpu.zip(bound).map(|(e, b)| e <= b),
                },
            })
        })
        .collect();
    let report = json!({
        "buffers": plan.buffers,
        "seed": plan.seed,
        "repeat": plan.repeat.max(1),
        "budget_seconds": plan.budget_seconds,
        "verify_each": false,
        "allocator_purge_delay_ms": crate::allocator_policy::purge_delay(),
        "programs": programs,
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
        let n_log_n: Vec<(f64, f64)> = [1e3f64, 1e4, 1e5].iter().map(|&n| (n, n * n.ln())).collect();
        let e = growth_exponent(&n_log_n).unwrap();
        assert!(e > 1.1 && e < 1.12, "{e}");
        assert_eq!(growth_exponent(&[(10.0, 1.0)]), None);
    }

    #[test]
    fn a_small_generated_program_is_planned_and_measured() {
        let text = generate(Shape { dispatches: 60, buffers: 20, seed: 3 }).text;
        let run = run_pipeline(&text, "insert-transfers{strategy=static}", true).expect("plans");
        assert!(run.transfers.0 > 0 && run.transfers.1 > 0, "{:?}", run.transfers);
        assert_eq!(run.passes.len(), 1);
        assert_eq!(run.passes[0].0, "insert-transfers");
        assert!(run.heap_bytes > 0);
        assert!(run.cpu_seconds > 0.0 && run.seconds > 0.0);
        assert!(run_pipeline(&text, "no-such-pass", false).is_err());
    }

    #[test]
    fn a_pipeline_over_the_budget_skips_the_larger_sizes() {
        let pipelines = [("static", "insert-transfers{strategy=static}".to_string())];
        let plan = Plan {
            sizes: &[20, 40],
            buffers: 10,
            repeat: 3,
            seed: 1,
            pipelines: &pipelines,
            budget_seconds: 0.0,
            keep: None,
        };
        let (report, series, ok) = measure(&plan);
        assert!(ok);
        assert_eq!(series[0].1.len(), 1, "only the first size ran");
        let first = &report["programs"][0]["pipelines"][0];
        assert_eq!(first["runs"], 1, "a run over the budget is not repeated: {first}");
        let second = &report["programs"][1]["pipelines"][0];
        assert!(second["skipped"].as_str().is_some_and(|s| s.contains("at 20 dispatches")), "{second}");
        assert_eq!(second["estimated_seconds"], Value::Null, "one size measured: no exponent to estimate with");
    }
}
