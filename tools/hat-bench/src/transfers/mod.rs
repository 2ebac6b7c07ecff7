//! `hat-bench transfers`: what each transfer strategy moves on every scenario, next to the
//! optimum, and what planning costs on large generated programs.
//!
//! - Scenarios ([`scenarios`]): every `examples/*.hat` under the reference semantics and each
//!   strategy (jic, kernel, static, the default pipeline, and tracking where the build has it),
//!   on the CPU backend, at trip counts 0, 1 and 10 where the scenario has one: counts and bytes
//!   each way, whether the run observed what the reference run did, and the optimum of
//!   [`optimum`] with the text of the file's `optimal:` line beside it.
//! - A differential check ([`check`]): small generated programs of the same shapes as the cost
//!   measurement's, under the reference semantics and every strategy: the seeds a strategy gets
//!   wrong.
//! - Cost ([`cost`]): `insert-transfers{strategy=static}` and the default pipeline on programs
//!   of 1,000, 10,000 and 100,000 dispatches over 1,000 buffers ([`program_gen`]): time, peak
//!   heap, the fitted growth exponent. Target: under 1 s at 100,000, growth no worse than
//!   n log n.
//!
//! - With `--oracle`, instead: every strategy against the clairvoyant optimum ([`oracle`]) on
//!   `--oracle-programs` generated programs (the check's shapes) and on the scenarios: bytes
//!   and copies over the oracle's, median, 95th percentile, maximum, share at the oracle.
//!
//! Output: the JSON report on stdout and the tables on stderr (`--format=table`: the tables on
//! stdout, no JSON). `--markdown FILE` writes the scenario table as a page (docs/scenarios.md),
//! which holds no timing, so that it changes only when a plan does.

pub mod check;
pub mod cost;
pub mod markdown;
pub mod optimum;
pub mod oracle;
pub mod program_gen;
pub mod scenarios;

use crate::common::progress;
use scenarios::{Scenario, Strategy};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Where the output goes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The JSON report on stdout, the tables on stderr.
    Json,
    /// The tables on stdout, no JSON.
    Table,
}

/// Options of `hat-bench transfers`.
#[derive(clap::Args, Debug)]
pub struct TransfersArgs {
    /// The directory of the scenarios (default: the repository's examples/).
    #[arg(long)]
    pub examples: Option<PathBuf>,
    /// Comma-separated trip counts for the scenarios that take one.
    #[arg(long, value_delimiter = ',', default_value = "0,1,10")]
    pub counts: Vec<i64>,
    /// Comma-separated dispatch counts of the generated programs of the cost measurement.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    pub dispatches: Vec<usize>,
    /// Buffers of each generated program.
    #[arg(long, default_value_t = 1000)]
    pub buffers: usize,
    /// The seed of the generated programs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Runs of each pipeline on each generated program (best time and largest heap reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// A pipeline whose run takes longer than this is not run at the larger sizes.
    #[arg(long, default_value_t = 120.0)]
    pub budget_seconds: f64,
    /// Skip the scenarios.
    #[arg(long)]
    pub no_scenarios: bool,
    /// Skip the cost measurement.
    #[arg(long)]
    pub no_cost: bool,
    /// Generated programs in the differential check (0: no check).
    #[arg(long, default_value_t = 500)]
    pub check_seeds: u64,
    /// Dispatches of each program of the check.
    #[arg(long, default_value_t = 40)]
    pub check_dispatches: usize,
    /// Buffers of each program of the check.
    #[arg(long, default_value_t = 12)]
    pub check_buffers: usize,
    /// Write the scenario table as a Markdown page to this file (docs/scenarios.md).
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// json: the JSON report on stdout and the tables on stderr; table: the tables on stdout.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
    /// Compare every strategy with the clairvoyant optimum instead (on `--oracle-programs`
    /// generated programs of `--check-dispatches` over `--check-buffers`, and the scenarios
    /// unless `--no-scenarios`); nothing else runs.
    #[arg(long)]
    pub oracle: bool,
    /// Generated programs of the oracle comparison.
    #[arg(long, default_value_t = 2000)]
    pub oracle_programs: u64,
    /// Keep the generated programs in this directory.
    #[arg(long)]
    pub keep: Option<PathBuf>,
}

fn examples_dir(args: &TransfersArgs) -> PathBuf {
    args.examples.clone().unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples"))
}

/// `to / from` bytes and `(to / from)` counts of a run, marked `*` at the optimum and `!` when
/// the run observed something the reference run did not.
fn cell(moved: &scenarios::Moved, optimum: Option<(u64, u64)>) -> String {
    if moved.error.is_some() {
        return "error".to_string();
    }
    let mark = match (moved.correct, moved.bytes() == optimum) {
        (Some(false), _) => " !",
        (_, true) => " *",
        _ => "",
    };
    format!("{}/{} ({}/{}){mark}", moved.to_device.1, moved.from_device.1, moved.to_device.0, moved.from_device.0)
}

/// The scenario table as text.
pub fn scenario_table(strategies: &[Strategy], results: &[Scenario]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["scenario".to_string(), "count".to_string(), "optimum".to_string()];
    header.extend(strategies.iter().map(|s| s.name.to_string()));
    rows.push(header);
    for scenario in results {
        for row in &scenario.rows {
            let mut line = vec![
                scenario.file.trim_end_matches(".hat").to_string(),
                row.count.map_or("-".to_string(), |c| c.to_string()),
                row.optimum.map_or("?".to_string(), |(a, b)| format!("{a}/{b}")),
            ];
            line.extend(row.moved.iter().map(|m| cell(m, row.optimum)));
            rows.push(line);
        }
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut text = String::from(
        "bytes to/from the device (copies to/from); * = the optimum, ! = observed something the reference did not\n",
    );
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}

/// The cost table as text.
fn cost_table(series: &[cost::Series], report: &Value) -> String {
    let mut text =
        String::from("planning cost (in process, verify-each off; best wall time, its CPU time, peak heap growth)\n");
    for (name, points) in series {
        for p in points {
            text.push_str(&format!(
                "  {name:<8} {:>7} dispatches: {:>9.3} s wall {:>9.3} s CPU {:>8.1} MiB\n",
                p.dispatches, p.seconds, p.cpu_seconds, p.heap_mib
            ));
        }
    }
    for program in report["programs"].as_array().into_iter().flatten() {
        for p in program["pipelines"].as_array().into_iter().flatten() {
            if let Some(skipped) = p["skipped"].as_str() {
                text.push_str(&format!(
                    "  {:<8} {:>7} dispatches: {skipped} (estimate at the fitted exponent: {} s)\n",
                    p["pipeline"].as_str().unwrap_or("?"),
                    program["dispatches"],
                    p["estimated_seconds"]
                ));
            }
        }
    }
    for g in report["growth"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "  {:<8} exponent: wall {}, CPU {} (n log n over these sizes: {}); heap {}\n",
            g["pipeline"].as_str().unwrap_or("?"),
            g["time_exponent"],
            g["cpu_time_exponent"],
            g["n_log_n_exponent"],
            g["heap_exponent"]
        ));
    }
    text
}

fn moved_json(moved: &scenarios::Moved, optimum: Option<(u64, u64)>) -> Value {
    json!({
        "to_device": { "count": moved.to_device.0, "bytes": moved.to_device.1 },
        "from_device": { "count": moved.from_device.0, "bytes": moved.from_device.1 },
        "bytes": moved.to_device.1 + moved.from_device.1,
        "optimal": optimum.map(|o| moved.bytes() == Some(o)),
        "correct": moved.correct,
        "difference": moved.difference,
        "error": moved.error,
    })
}

fn scenarios_json(strategies: &[Strategy], results: &[Scenario]) -> Value {
    let list: Vec<Value> = results
        .iter()
        .map(|s| {
            let rows: Vec<Value> = s
                .rows
                .iter()
                .map(|row| {
                    let per: serde_json::Map<String, Value> = strategies
                        .iter()
                        .zip(&row.moved)
                        .map(|(strategy, moved)| (strategy.name.to_string(), moved_json(moved, row.optimum)))
                        .collect();
                    json!({
                        "count": row.count,
                        "optimum": row.optimum.map(|(a, b)| json!({ "to_device_bytes": a, "from_device_bytes": b })),
                        "strategies": per,
                    })
                })
                .collect();
            json!({
                "file": s.file,
                "count_parameter": s.count_parameter,
                "header_optimal": s.header_optimal,
                "runs": rows,
            })
        })
        .collect();
    // Per strategy: runs, runs observing what the reference does, runs at the optimum.
    let summary: serde_json::Map<String, Value> = strategies
        .iter()
        .enumerate()
        .map(|(i, strategy)| {
            let runs: Vec<(&scenarios::Moved, Option<(u64, u64)>)> =
                results.iter().flat_map(|s| s.rows.iter().map(move |r| (&r.moved[i], r.optimum))).collect();
            let correct = runs.iter().filter(|(m, _)| m.correct != Some(false) && m.error.is_none()).count();
            let optimal = runs.iter().filter(|(m, o)| o.is_some() && m.bytes() == *o).count();
            let bytes: u64 = runs.iter().filter_map(|(m, _)| m.bytes()).map(|(a, b)| a + b).sum();
            (
                strategy.name.to_string(),
                json!({ "runs": runs.len(), "correct": correct, "at_optimum": optimal, "bytes": bytes }),
            )
        })
        .collect();
    json!({ "scenarios": list, "summary": summary })
}

/// Runs the benchmark; the report, the text tables, and whether everything ran and every plan
/// observed what the reference semantics does.
pub fn run(args: &TransfersArgs) -> Result<(Value, String, bool), String> {
    let (strategies, skipped) = scenarios::strategies();
    let default_pipeline =
        strategies.iter().find(|s| s.name == "default").and_then(|s| s.pipeline.clone()).expect("a default strategy");
    let mut ok = true;
    let mut tables = String::new();
    let mut report = json!({
        "benchmark": "transfers",
        "backend": "cpu",
        "strategies": strategies.iter().map(|s| json!({
            "name": s.name,
            "pass_pipeline": s.pipeline,
            "mode": s.mode.name(),
        })).collect::<Vec<_>>(),
        "skipped_strategies": skipped.iter().map(|(name, why)| json!({ "name": name, "why": why })).collect::<Vec<_>>(),
    });
    for (name, why) in &skipped {
        progress(format!("{name}: skipped: {why}"));
    }
    if args.oracle {
        let scenario_runs = match args.no_scenarios {
            true => Vec::new(),
            false => {
                progress("oracle: the scenarios");
                oracle::scenarios(&strategies, &examples_dir(args), &args.counts)?
            }
        };
        progress(format!("oracle: {} generated programs", args.oracle_programs));
        let programs = oracle::generated(&strategies, args.oracle_programs, args.check_dispatches, args.check_buffers);
        let (oracle_report, table, oracle_ok) =
            oracle::report(&strategies, &programs, args.check_dispatches, args.check_buffers, &scenario_runs);
        report["oracle"] = oracle_report;
        report["ok"] = json!(oracle_ok);
        return Ok((report, table, oracle_ok));
    }
    if !args.no_scenarios {
        let dir = examples_dir(args);
        let mut results = Vec::new();
        for path in scenarios::scenario_files(&dir)? {
            progress(format!("scenario {}", path.display()));
            let scenario = scenarios::run_scenario(&path, &strategies, &args.counts)?;
            ok &= scenario.rows.iter().flat_map(|r| &r.moved).all(|m| m.error.is_none() && m.correct != Some(false));
            results.push(scenario);
        }
        tables.push_str(&scenario_table(&strategies, &results));
        if let Some(file) = &args.markdown {
            let page = markdown::page(&strategies, &skipped, &args.counts, &results);
            std::fs::write(file, page).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            progress(format!("wrote {}", file.display()));
        }
        let scenario_report = scenarios_json(&strategies, &results);
        report["scenarios"] = scenario_report["scenarios"].clone();
        report["summary"] = scenario_report["summary"].clone();
    }
    if args.check_seeds > 0 {
        progress(format!("check: {} generated programs", args.check_seeds));
        let findings = check::check(&strategies, args.check_seeds, args.check_dispatches, args.check_buffers);
        let (check_report, check_ok) =
            check::report(&findings, args.check_seeds, args.check_dispatches, args.check_buffers);
        ok &= check_ok;
        tables.push('\n');
        tables.push_str(&check::table(&findings, args.check_seeds, args.check_dispatches, args.check_buffers));
        report["check"] = check_report;
    }
    if !args.no_cost {
        if let Some(dir) = &args.keep {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let pipelines = [("static", "insert-transfers{strategy=static}".to_string()), ("default", default_pipeline)];
        let mut sizes = args.dispatches.clone();
        sizes.sort_unstable();
        let plan = cost::Plan {
            sizes: &sizes,
            buffers: args.buffers,
            repeat: args.repeat,
            seed: args.seed,
            pipelines: &pipelines,
            budget_seconds: args.budget_seconds,
            keep: args.keep.as_deref(),
        };
        let (cost_report, series, cost_ok) = cost::measure(&plan);
        ok &= cost_ok;
        tables.push('\n');
        tables.push_str(&cost_table(&series, &cost_report));
        report["cost"] = cost_report;
        report["process_peak_rss_mib"] = json!(crate::heap::peak_rss_kib().map(|k| k as f64 / 1024.0));
    }
    report["ok"] = json!(ok);
    Ok((report, tables, ok))
}
