//! `hat-bench nested`: the cost of running passes once per function. Modules of 1k, 4k, 16k and
//! 64k small `compute.func`s (a dozen arith and scf ops each, from the generator of `hat-bench
//! passes`: some fold, some are equal to an earlier op, some are dead) go through `hat-opt` with
//! pass pipelines nested on `compute.func` (`compute.func(canonicalize)`, `cse`, `dce`, and the
//! three together) and with the same passes run once over the whole module.
//!
//! Work per function should not depend on how many other functions the module holds. Two targets
//! say so: the pass time per function of each nested pipeline stays within 1.5x across the sizes,
//! and the nested pipeline of all three passes takes at most 2x the time of the module-level one.
//! Pass time is what `hat-opt --mlir-timing` reports for the passes (verification after each pass
//! included), the least over the runs; parsing, the first verification and printing are the same
//! for every pipeline and are in the wall time (`wall_seconds`, the best run). Ops are counted
//! inside the functions, before and after (`ops_before`, `ops_after`).

use crate::common::{progress, ratio, Bench, BenchArgs};
use crate::generate::Shape;
use crate::measure::{round1, round3, Measurement};
use crate::passes::{count_generic_ops, generate, timing_phases};
use serde_json::{json, Value};

/// Options of `hat-bench nested`.
#[derive(clap::Args, Debug)]
pub struct NestedArgs {
    /// Comma-separated numbers of functions in the generated modules.
    #[arg(long, value_delimiter = ',', default_value = "1000,4000,16000,64000")]
    pub functions: Vec<usize>,
    /// Ops in each function (nested ops and the terminator included).
    #[arg(long, default_value_t = 12)]
    pub ops_per_function: usize,
    /// Run only the pipelines whose name contains one of these (comma-separated); default: all.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// The hat-opt binary (default: the one beside this binary).
    #[arg(long)]
    pub hat_opt: Option<std::path::PathBuf>,
    /// Runs of each measurement (best and median time, largest peak memory are reported); up to
    /// 8 times as many for the modules of fewer than 16,000 functions.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Keep the generated modules (and hat-opt's output) in this directory.
    #[arg(long)]
    pub keep: Option<std::path::PathBuf>,
}

/// A measured pipeline: its short name in the report, the `--pass-pipeline`, and whether it is
/// nested on functions.
struct Pipeline {
    name: &'static str,
    text: &'static str,
    nested: bool,
}

const PIPELINES: &[Pipeline] = &[
    Pipeline { name: "compute.func(canonicalize)", text: "builtin.module(compute.func(canonicalize))", nested: true },
    Pipeline { name: "compute.func(cse)", text: "builtin.module(compute.func(cse))", nested: true },
    Pipeline { name: "compute.func(dce)", text: "builtin.module(compute.func(dce))", nested: true },
    Pipeline {
        name: "compute.func(canonicalize,cse,dce)",
        text: "builtin.module(compute.func(canonicalize,cse,dce))",
        nested: true,
    },
    Pipeline { name: "canonicalize", text: "builtin.module(canonicalize)", nested: false },
    Pipeline { name: "cse", text: "builtin.module(cse)", nested: false },
    Pipeline { name: "dce", text: "builtin.module(dce)", nested: false },
    Pipeline { name: "canonicalize,cse,dce", text: "builtin.module(canonicalize,cse,dce)", nested: false },
];

/// The nested pipeline and the module-level one that the 2x target compares.
const COMPARED: (&str, &str) = ("compute.func(canonicalize,cse,dce)", "canonicalize,cse,dce");

/// The seconds of the passes in a `--mlir-timing-display=list` report: every phase but the
/// parser, the first verification and the output.
fn pass_seconds(phases: &[(String, f64)]) -> f64 {
    phases
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "Parser" | "Verifier" | "Output"))
        .map(|(_, seconds)| seconds)
        .sum()
}

/// How many runs measure a module of `functions` functions: `--repeat`, times up to 8 for the
/// small modules. Their passes take milliseconds, so on a shared machine a run is easily
/// preempted; more runs make their least time as trustworthy as that of the large modules.
fn repeat_for(repeat: usize, functions: usize) -> usize {
    repeat.max(1) * (16_000 / functions.max(1)).clamp(1, 8)
}

/// Rounded to a tenth of a millisecond (what `--mlir-timing` prints).
fn round4(seconds: f64) -> f64 {
    (seconds * 1e4).round() / 1e4
}

/// One pipeline on one module: the measurement, the least pass time over its runs, and the ops
/// left.
struct Outcome {
    report: Value,
    pass_seconds: Option<f64>,
    ok: bool,
}

fn run_pipeline(
    bench: &Bench<'_>,
    file: &str,
    output: &std::path::Path,
    pipeline: &Pipeline,
    functions: usize,
) -> Outcome {
    let output_arg = output.display().to_string();
    let pass_pipeline = format!("--pass-pipeline={}", pipeline.text);
    let args = [
        file,
        pass_pipeline.as_str(),
        "--mlir-print-op-generic",
        "--mlir-timing",
        "--mlir-timing-display=list",
        "-o",
        output_arg.as_str(),
    ];
    let measurement: Measurement = bench.measure_hat_times(&args, repeat_for(bench.args.repeat, functions));
    let ok = measurement.ok();
    // The timing report of the run whose passes were fastest (it is short: the tail of stderr
    // holds it); the least time is the least disturbed by whatever else the machine runs.
    let phases = measurement
        .runs
        .iter()
        .filter(|r| r.ok())
        .map(|r| timing_phases(&r.stderr_tail))
        .filter(|phases| !phases.is_empty())
        .min_by(|a, b| pass_seconds(a).total_cmp(&pass_seconds(b)));
    let passes = phases.as_deref().map(pass_seconds);
    let timing: serde_json::Map<String, Value> =
        phases.unwrap_or_default().into_iter().map(|(name, seconds)| (name, json!(round4(seconds)))).collect();
    // The functions themselves are counted too: leave them out.
    let ops_after = if ok {
        std::fs::read_to_string(output).ok().map(|t| count_generic_ops(&t).saturating_sub(functions))
    } else {
        None
    };
    bench.discard(output);
    let per_function_us = |seconds: Option<f64>| seconds.map(|s| round3(s / functions.max(1) as f64 * 1e6));
    if let Some(p) = passes {
        progress(format!("  {}: passes {p:.3} s, {:.2} us per function", pipeline.name, p / functions as f64 * 1e6));
    }
    let mut report = json!({
        "pipeline": pipeline.name,
        "pass_pipeline": pipeline.text,
        "nested": pipeline.nested,
        "pass_seconds": passes.map(round4),
        "pass_us_per_function": per_function_us(passes),
        "wall_seconds": measurement.best_seconds().map(round3),
        "wall_seconds_median": measurement.median_seconds().map(round3),
        "wall_us_per_function": per_function_us(measurement.best_seconds()),
        "peak_rss_mib": measurement.peak_rss_mib().map(round1),
        "ops_after": ops_after,
        "phases": timing,
        "ok": ok,
    });
    if let Some(error) = &measurement.error {
        report["error"] = json!(error);
    }
    Outcome { report, pass_seconds: passes, ok }
}

/// Runs the benchmark; returns the report and whether hat succeeded throughout.
pub fn run(args: &NestedArgs) -> Result<(Value, bool), String> {
    let bench_args = BenchArgs {
        ops: args.ops_per_function,
        shapes: Vec::new(),
        hat_opt: args.hat_opt.clone(),
        mlir_opt: None,
        no_mlir_opt: true,
        repeat: args.repeat,
        keep: args.keep.clone(),
        no_phases: false,
    };
    let bench = Bench::new(&bench_args)?;
    let pipelines: Vec<&Pipeline> = PIPELINES
        .iter()
        .filter(|p| args.only.is_empty() || args.only.iter().any(|only| p.name.contains(only.as_str())))
        .collect();
    let mut all_ok = true;
    let mut sizes = Vec::new();
    // Per pipeline: (functions, pass seconds) of every size measured.
    let mut per_pipeline: Vec<Vec<(usize, f64)>> = vec![Vec::new(); pipelines.len()];
    let mut compared = Vec::new();
    for &functions in &args.functions {
        let shape = Shape { blocks: functions, ops_per_block: args.ops_per_function };
        progress(format!("{functions} functions of {} ops, generating", args.ops_per_function));
        let text = generate(shape);
        let bytes = text.len();
        let ops_before = count_generic_ops(&text).saturating_sub(functions);
        let stem = bench.file_name(format!("nested-{shape}"), format_args!("nested-{shape}"));
        let file = bench.dir.join(format!("{stem}.mlir"));
        let file_arg = bench.write_module(&file, &text)?;
        drop(text);
        let mut results = Vec::new();
        let (mut nested_seconds, mut module_seconds) = (None, None);
        for (k, pipeline) in pipelines.iter().enumerate() {
            let output = bench.dir.join(format!("{stem}.{k}.out.mlir"));
            let outcome = run_pipeline(&bench, &file_arg, &output, pipeline, functions);
            all_ok &= outcome.ok;
            if let Some(seconds) = outcome.pass_seconds {
                per_pipeline[k].push((functions, seconds));
                if pipeline.name == COMPARED.0 {
                    nested_seconds = Some(seconds);
                } else if pipeline.name == COMPARED.1 {
                    module_seconds = Some(seconds);
                }
            }
            results.push(outcome.report);
        }
        bench.discard(&file);
        let nested_over_module = ratio(nested_seconds, module_seconds);
        if let Value::Number(r) = &nested_over_module {
            progress(format!("  {} / {}: x{r}", COMPARED.0, COMPARED.1));
            compared.push(r.as_f64().unwrap_or(f64::INFINITY));
        }
        sizes.push(json!({
            "functions": functions,
            "ops_per_function": args.ops_per_function,
            "runs_each": repeat_for(args.repeat, functions),
            "ops_before": ops_before,
            "bytes": bytes,
            "pipelines": results,
            "nested_over_module": nested_over_module,
        }));
    }
    // Per pipeline, the largest pass time per function over the smallest, across the sizes.
    let spread: serde_json::Map<String, Value> = pipelines
        .iter()
        .zip(&per_pipeline)
        .map(|(pipeline, points)| {
            let per_function: Vec<f64> = points.iter().map(|&(n, s)| s / n.max(1) as f64).collect();
            let max = per_function.iter().copied().fold(f64::NAN, f64::max);
            let min = per_function.iter().copied().fold(f64::NAN, f64::min);
            (pipeline.name.to_string(), ratio(Some(max), Some(min)))
        })
        .collect();
    let constant_per_function = pipelines
        .iter()
        .zip(&per_pipeline)
        .filter(|(p, points)| p.nested && points.len() == args.functions.len())
        .map(|(p, _)| spread[p.name].as_f64().is_some_and(|r| r <= 1.5))
        .reduce(|a, b| a && b);
    let within_2x = (compared.len() == args.functions.len()).then(|| compared.iter().all(|&r| r <= 2.0));
    let mut report = bench.report(
        "nested",
        json!({
            "ops_per_function": args.ops_per_function,
            "sizes": sizes,
            "per_function_spread": spread,
            "targets": {
                "nested_time_per_function_within_1_5x": constant_per_function,
                "nested_within_2x_of_module": within_2x,
            },
            "ok": all_ok,
        }),
    );
    if let Value::Object(fields) = &mut report {
        fields.remove("ops");
        fields.remove("mlir_opt");
    }
    Ok((report, all_ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_time_leaves_out_parsing_verification_and_output() {
        let report = "  ----Wall Time----  ----Name----\n    1.0000 ( 25.0%)  Parser\n    0.5000 (  1.0%)  Verifier\n    0.2500 (  1.0%)  canonicalize\n    0.0001 (  1.0%)  cse\n    0.1249 (  1.0%)  cse\n    2.0000 ( 50.0%)  Output\n    3.8750 (100.0%)  Total\n";
        let phases = timing_phases(report);
        assert_eq!(phases.len(), 5, "{phases:?}");
        assert_eq!(pass_seconds(&phases), 0.375);
        assert_eq!(pass_seconds(&[]), 0.0);
    }

    #[test]
    fn small_modules_run_more_times() {
        assert_eq!([1000, 4000, 16000, 64000].map(|n| repeat_for(3, n)), [24, 12, 3, 3]);
        assert_eq!(repeat_for(0, 10), 8);
    }

    #[test]
    fn every_pipeline_parses_and_nested_ones_name_the_function() {
        for pipeline in PIPELINES {
            let elements = hat_ir::pass::pipeline::parse_pipeline(pipeline.text).expect("pipeline parses");
            let printed = hat_ir::pass::pipeline::print_pipeline(&elements);
            assert_eq!(printed, pipeline.text);
            assert_eq!(pipeline.nested, pipeline.text.contains("compute.func("), "{}", pipeline.name);
            for pass in ["canonicalize", "cse", "dce"] {
                assert_eq!(pipeline.name.contains(pass), pipeline.text.contains(pass), "{}", pipeline.name);
            }
        }
    }
}
