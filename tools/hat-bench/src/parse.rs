//! `hat-bench parse`: parse + verify + print a generated module of many ops, with `hat-opt` and
//! (when installed) `mlir-opt`, as child processes; and an in-process breakdown by phase for hat.

use crate::generate::{generate, Shape};
use crate::measure::{self, find_on_path, is_executable, round3, Measurement};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The figures of the issue, for 1,000 blocks of 1,000 ops on the reference machine.
const REFERENCE_OPS: usize = 1_000_000;
const MLIR_OPT_SECONDS: f64 = 3.1;
const MLIR_OPT_MIB: f64 = 524.0;
const PLIRON_SECONDS: f64 = 7.1;
const PLIRON_MIB: f64 = 1050.0;

/// Where `mlir-opt` is looked for after `--mlir-opt` and `PATH`.
const MLIR_OPT_FALLBACK: &str = "/usr/lib/llvm-22/bin/mlir-opt";

/// Options of `hat-bench parse`.
#[derive(clap::Args, Debug)]
pub struct ParseArgs {
    /// Ops in the generated module (inside the functions, terminators included).
    #[arg(long, default_value_t = 1_000_000)]
    pub ops: usize,
    /// Comma-separated shapes, each BLOCKSxOPS_PER_BLOCK or BLOCKS (then OPS / BLOCKS each).
    /// Default: OPS/1000 blocks of 1000, and 10 blocks of OPS/10.
    #[arg(long, value_delimiter = ',')]
    pub shapes: Vec<String>,
    /// The hat-opt binary (default: the one beside this binary).
    #[arg(long)]
    pub hat_opt: Option<PathBuf>,
    /// The mlir-opt binary (default: `mlir-opt` on PATH, else /usr/lib/llvm-22/bin/mlir-opt).
    #[arg(long)]
    pub mlir_opt: Option<PathBuf>,
    /// Do not run mlir-opt even if it is installed.
    #[arg(long)]
    pub no_mlir_opt: bool,
    /// Runs of each measurement (best and median time, largest peak memory are reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Keep the generated modules in this directory (default: a temporary file, removed).
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Skip the in-process breakdown by phase.
    #[arg(long)]
    pub no_phases: bool,
}

fn progress(message: impl AsRef<str>) {
    eprintln!("hat-bench: {}", message.as_ref());
}

fn default_hat_opt() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.join("hat-opt"))
}

fn find_mlir_opt(args: &ParseArgs) -> Option<PathBuf> {
    if args.no_mlir_opt {
        return None;
    }
    if let Some(path) = &args.mlir_opt {
        return Some(path.clone());
    }
    find_on_path("mlir-opt").or_else(|| Some(PathBuf::from(MLIR_OPT_FALLBACK)).filter(|p| is_executable(p)))
}

fn shapes(args: &ParseArgs) -> Result<Vec<Shape>, String> {
    if args.shapes.is_empty() {
        let n = args.ops.max(1);
        let wide = if n >= 1000 {
            Shape { blocks: n / 1000, ops_per_block: 1000 }
        } else {
            Shape { blocks: 1, ops_per_block: n }
        };
        let long = Shape { blocks: 10.min(n), ops_per_block: n / 10.min(n) };
        return Ok(if wide == long { vec![wide] } else { vec![wide, long] });
    }
    args.shapes.iter().map(|s| Shape::parse(s, args.ops)).collect()
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

fn ratio(numerator: Option<f64>, denominator: Option<f64>) -> Value {
    match (numerator, denominator) {
        (Some(a), Some(b)) if b > 0.0 => json!((a / b * 100.0).round() / 100.0),
        _ => Value::Null,
    }
}

fn measure_tool(label: &str, program: &Path, args: &[&str], repeat: usize) -> Measurement {
    progress(format!("  {label}: {} {}", program.display(), args.join(" ")));
    let m = measure::measure(program, args, repeat);
    match (&m.error, m.best_seconds(), m.peak_rss_mib()) {
        (Some(error), _, _) => progress(format!("  {label}: FAILED: {error}")),
        (None, Some(s), Some(mib)) => progress(format!("  {label}: {s:.3} s, {mib:.1} MiB")),
        _ => {}
    }
    m
}

/// Runs the benchmark; returns the report and whether hat succeeded throughout.
pub fn run(args: &ParseArgs) -> Result<(Value, bool), String> {
    let shapes = shapes(args)?;
    let hat_opt = args.hat_opt.clone().or_else(default_hat_opt).ok_or("cannot locate hat-opt")?;
    let mlir_opt = find_mlir_opt(args);
    let dir = match &args.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            dir.clone()
        }
        None => std::env::temp_dir(),
    };
    progress(format!("hat-opt: {}", hat_opt.display()));
    progress(match &mlir_opt {
        Some(path) => format!("mlir-opt: {}", path.display()),
        None => "mlir-opt: not found, skipped".to_string(),
    });

    let mut all_ok = true;
    let mut reports = Vec::new();
    let mut hat_times = Vec::new();
    let mut hat_best_overall: Option<f64> = None;
    let mut mlir_best_overall: Option<f64> = None;
    for shape in &shapes {
        progress(format!("shape {shape}: {} blocks of {} ops, generating", shape.blocks, shape.ops_per_block));
        let text = generate(*shape);
        let bytes = text.len();
        let file = match &args.keep {
            Some(_) => dir.join(format!("parse-{shape}.mlir")),
            None => dir.join(format!("hat-bench-{}-{shape}.mlir", std::process::id())),
        };
        std::fs::write(&file, &text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        let file_arg = file.to_str().ok_or("temporary path is not UTF-8")?.to_string();
        progress(format!("  {} bytes in {}", text.len(), file.display()));

        let hat = if is_executable(&hat_opt) {
            measure_tool("hat-opt", &hat_opt, &[&file_arg, "--mlir-print-op-generic", "-o", "/dev/null"], args.repeat)
        } else {
            Measurement {
                command: vec![hat_opt.display().to_string()],
                runs: Vec::new(),
                error: Some(format!("{} not found (build it: cargo build --release -p hat-opt)", hat_opt.display())),
            }
        };
        if !hat.ok() {
            all_ok = false;
        }
        let mlir = mlir_opt.as_ref().map(|path| {
            measure_tool(
                "mlir-opt",
                path,
                &["--allow-unregistered-dialect", "--mlir-print-op-generic", &file_arg, "-o", "/dev/null"],
                args.repeat,
            )
        });

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
        if args.keep.is_none() {
            let _ = std::fs::remove_file(&file);
        }

        let mlir_ok = mlir.as_ref().filter(|m| m.ok());
        let (hat_s, hat_mib) = if hat.ok() { (hat.best_seconds(), hat.peak_rss_mib()) } else { (None, None) };
        let (mlir_s, mlir_mib) = (mlir_ok.and_then(|m| m.best_seconds()), mlir_ok.and_then(|m| m.peak_rss_mib()));
        if let Some(s) = hat_s {
            hat_times.push(s);
            hat_best_overall = Some(hat_best_overall.map_or(s, |b: f64| b.max(s)));
        }
        if let Some(s) = mlir_s {
            mlir_best_overall = Some(mlir_best_overall.map_or(s, |b: f64| b.max(s)));
        }
        let ratio_time = ratio(mlir_s, hat_s);
        let ratio_memory = ratio(mlir_mib, hat_mib);
        if let (Value::Number(t), Value::Number(m)) = (&ratio_time, &ratio_memory) {
            progress(format!("  mlir-opt / hat-opt: time x{t}, memory x{m}"));
        }
        reports.push(json!({
            "blocks": shape.blocks,
            "ops_per_block": shape.ops_per_block,
            "ops": shape.ops(),
            "bytes": bytes,
            "hat": hat_report,
            "mlir_opt": mlir.as_ref().map(Measurement::to_json),
            "ratio_time": ratio_time,
            "ratio_memory": ratio_memory,
        }));
    }

    // Nothing may grow with the square of a block's length: the same ops in fewer, longer blocks
    // must cost about the same.
    let spread =
        match (hat_times.iter().copied().max_by(f64::total_cmp), hat_times.iter().copied().min_by(f64::total_cmp)) {
            (Some(max), Some(min)) if hat_times.len() > 1 && min > 0.0 => {
                json!((max / min * 100.0).round() / 100.0)
            }
            _ => Value::Null,
        };
    let at_reference_size = shapes.iter().all(|s| s.ops() == REFERENCE_OPS);
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
    let report = json!({
        "benchmark": "parse",
        "ops": args.ops,
        "repeat": args.repeat.max(1),
        "hat_opt": hat_opt.display().to_string(),
        "mlir_opt": mlir_opt.as_ref().map(|p| p.display().to_string()),
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
    });
    Ok((report, all_ok))
}
