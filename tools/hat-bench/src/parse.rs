//! `hat-bench parse`: parse + verify + print a generated module of many ops, with `hat-opt` and
//! (when installed) `mlir-opt`, as child processes; and an in-process breakdown by phase for hat.

use crate::common::{progress, ratio, Bench, BenchArgs, Comparison};
use crate::generate::generate;
use crate::measure::{round3, Measurement};
use serde_json::{json, Value};
use std::time::Instant;

/// The figures of the issue, for 1,000 blocks of 1,000 ops on the reference machine.
const REFERENCE_OPS: usize = 1_000_000;
const MLIR_OPT_SECONDS: f64 = 3.1;
const MLIR_OPT_MIB: f64 = 524.0;
const PLIRON_SECONDS: f64 = 7.1;
const PLIRON_MIB: f64 = 1050.0;

/// Options of `hat-bench parse`.
#[derive(clap::Args, Debug)]
#[command(
    mut_arg("ops", |a| a.help("Ops in the generated module (inside the functions, terminators included)")),
    mut_arg("shapes", |a| a.help(
        "Comma-separated shapes, each BLOCKSxOPS_PER_BLOCK or BLOCKS (then OPS / BLOCKS each). \
         Default: OPS/1000 blocks of 1000, and 10 blocks of OPS/10"
    )),
    mut_arg("keep", |a| a.help(
        "Keep the generated modules in this directory (default: a temporary file, removed)"
    )),
    mut_arg("no_phases", |a| a.help("Skip the in-process breakdown by phase")),
)]
pub struct ParseArgs {
    #[command(flatten)]
    pub bench: BenchArgs,
}

/// Best-of-`repeat` times of each phase, in process, for `text`, with every hat dialect registered
/// (as `hat-opt` runs); or the error that stopped it.
fn phases(name: &str, text: &str, repeat: usize) -> Result<Value, String> {
    let mut best = [f64::INFINITY; 4];
    let mut printed_bytes = 0;
    for _ in 0..repeat.max(1) {
        let mut ctx = hat_dialects::context();
        let t0 = Instant::now();
        let module = hat_ir::parse_source(&mut ctx, name, text).map_err(|error| {
            let diagnostic = hat_ir::Diagnostic::from(error);
            format!("parse: {}", hat_ir::diagnostics::render_short(&ctx.sources, &[diagnostic]).trim_end())
        })?;
        let t1 = Instant::now();
        let diagnostics = hat_ir::verify(&ctx, module);
        let t2 = Instant::now();
        if hat_ir::diagnostics::has_errors(&diagnostics) {
            let shown = &diagnostics[..diagnostics.len().min(5)];
            return Err(format!("verify: {}", hat_ir::diagnostics::render_short(&ctx.sources, shown).trim_end()));
        }
        let out = hat_ir::print_op(
            &ctx,
            module,
            hat_ir::PrintOptions { generic: true, debug_info: false, assume_verified: true },
        );
        let t3 = Instant::now();
        printed_bytes = out.len();
        drop(out);
        drop(ctx);
        let t4 = Instant::now();
        for (slot, (a, b)) in best.iter_mut().zip([(t0, t1), (t1, t2), (t2, t3), (t3, t4)]) {
            *slot = slot.min((b - a).as_secs_f64());
        }
    }
    Ok(json!({
        "parse": round3(best[0]),
        "verify": round3(best[1]),
        "print": round3(best[2]),
        "total": round3(best[0] + best[1] + best[2]),
        "drop": round3(best[3]),
        "printed_bytes": printed_bytes,
    }))
}

/// Runs the benchmark; returns the report and whether hat succeeded throughout.
pub fn run(args: &ParseArgs) -> Result<(Value, bool), String> {
    let bench = Bench::new(&args.bench)?;
    let args = &args.bench;

    let mut all_ok = true;
    let mut reports = Vec::new();
    let mut hat_times = Vec::new();
    let mut hat_best_overall: Option<f64> = None;
    let mut mlir_best_overall: Option<f64> = None;
    for &shape in &bench.shapes {
        progress(format!("shape {shape}: {} blocks of {} ops, generating", shape.blocks, shape.ops_per_block));
        let text = generate(shape);
        let bytes = text.len();
        let file = bench.dir.join(bench.file_name(format!("parse-{shape}.mlir"), format_args!("{shape}.mlir")));
        let file_arg = bench.write_module(&file, &text)?;

        let hat = bench.measure_hat(&[&file_arg, "--mlir-print-op-generic", "-o", "/dev/null"]);
        all_ok &= hat.ok();
        let mlir = bench.measure_mlir(&[
            "--allow-unregistered-dialect",
            "--mlir-print-op-generic",
            &file_arg,
            "-o",
            "/dev/null",
        ]);

        let mut hat_report = hat.to_json();
        if !args.no_phases {
            progress("  in process: parse, verify, print");
            match phases(&file_arg, &text, args.repeat) {
                Ok(p) => {
                    progress(format!("  in process: {p}"));
                    hat_report["phases"] = p;
                }
                Err(error) => {
                    progress(format!("  in process: FAILED: {error}"));
                    hat_report["phases"] = json!({ "error": error });
                    all_ok = false;
                }
            }
        }
        drop(text);
        bench.discard(&file);

        let comparison = Comparison::new(&hat, mlir.as_ref());
        if let Some(s) = comparison.hat_seconds {
            hat_times.push(s);
            hat_best_overall = Some(hat_best_overall.map_or(s, |b: f64| b.max(s)));
        }
        if let Some(s) = comparison.mlir_seconds {
            mlir_best_overall = Some(mlir_best_overall.map_or(s, |b: f64| b.max(s)));
        }
        let mlir_report = mlir.as_ref().map(Measurement::to_json);
        reports.push(comparison.shape_report(["blocks", "ops_per_block"], shape, bytes, hat_report, mlir_report));
    }

    // Nothing may grow with the square of a block's length: the same ops in fewer, longer blocks
    // must cost about the same.
    let spread = if hat_times.len() > 1 {
        ratio(hat_times.iter().copied().max_by(f64::total_cmp), hat_times.iter().copied().min_by(f64::total_cmp))
    } else {
        Value::Null
    };
    let at_reference_size = bench.shapes.iter().all(|s| s.ops() == REFERENCE_OPS);
    let peak_hat_mib = reports.iter().filter_map(|r| r["hat"]["peak_rss_mib"].as_f64()).max_by(f64::total_cmp);
    let targets = if at_reference_size {
        json!({
            "faster_than_mlir_opt_reference": hat_best_overall.map(|s| s < MLIR_OPT_SECONDS),
            "faster_than_pliron_reference": hat_best_overall.map(|s| s < PLIRON_SECONDS),
            "less_memory_than_mlir_opt_reference": peak_hat_mib.map(|m| m < MLIR_OPT_MIB),
            "faster_than_mlir_opt_measured": match (hat_best_overall, mlir_best_overall) {
                (Some(h), Some(m)) => json!(h < m),
                _ => Value::Null,
            },
        })
    } else {
        json!({ "note": format!("the reference figures are for {REFERENCE_OPS} ops; run with --ops {REFERENCE_OPS} to compare") })
    };
    let report = bench.report(
        "parse",
        json!({
            "shapes": reports,
            "hat_time_spread": spread,
            "targets": targets,
            "reference": {
                "ops": REFERENCE_OPS,
                "shape": "1000x1000",
                "mlir_opt": { "seconds": MLIR_OPT_SECONDS, "peak_rss_mib": MLIR_OPT_MIB },
                "pliron": { "seconds": PLIRON_SECONDS, "peak_rss_mib": PLIRON_MIB },
            },
            "ok": all_ok,
        }),
    );
    Ok((report, all_ok))
}
