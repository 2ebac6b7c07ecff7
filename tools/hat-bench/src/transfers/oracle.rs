//! `hat-bench transfers --oracle`: every strategy against the clairvoyant optimum
//! (`hat_runtime::oracle`; docs/transfers-oracle.md).
//!
//! Each program runs once under the reference semantics, traced (the CPU backend records every
//! dispatch's element accesses), and the oracle computes from the trace the fewest bytes any
//! plan could move on that run, and a plan of the fewest bytes in as few copies as it finds
//! (with a lower bound on the copies). Then each strategy plans and runs the same program with
//! the same arguments; its bytes and copies over the oracle's, when its run observes what the
//! reference run does, are summarised per strategy ([`RatioSummary`]: median, 95th percentile,
//! maximum, share exactly at the oracle).
//!
//! The oracle a strategy is measured against is that of the program its pipeline left (traced
//! the same way: reference mode ignores the program's transfers and hooks), because a pipeline
//! may simplify the program too — the default pipeline's `canonicalize` deletes a load whose
//! value nothing uses, and with it a read the program as written makes; the report also counts
//! the runs below the oracle of the program as written (no bug). A strategy below its oracle in
//! bytes is a bug in the oracle or in the run, and fails the benchmark; so does one at the
//! oracle's bytes in fewer copies than the oracle's lower bound on copies, and an oracle plan
//! that [`check_plan`] finds wrong on its own trace. (A strategy may well make fewer copies than
//! the oracle's plan while moving more bytes: the oracle's copies are the fewest among plans of
//! the fewest bytes.)
//!
//! The programs: [`super::program_gen`]'s (the differential check's shapes), seeds `1..=N`, the
//! entry's `%n` = seed mod 5 (zero-trip loops included); and every scenario of `examples/` at
//! each trip count, with the hand-written optimum of [`super::optimum`] beside the oracle's.
//! The differential test's own generator (`tests/program_gen/`) is measured by the ignored
//! test `oracle_ratios` of `tests/transfer_oracle.rs`.

use super::optimum::optimum_of;
use super::program_gen::{generate, Shape};
use super::scenarios::{arguments, difference, load, run, run_traced, scenario_files, Strategy};
use crate::common::progress;
use hat_runtime::oracle::{check_plan, optimum, Optimum, RatioSummary};
use hat_runtime::TransferMode;
use serde_json::{json, Value};
use std::path::Path;

/// What one strategy did on one program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and observed what the reference run did: bytes and copies, both directions, and
    /// the oracle of the program it ran (its plan left out).
    Ran { bytes: u64, copies: u64, oracle: Optimum },
    /// Its run observed something else (what, first).
    Wrong(String),
    /// It could not plan or run (why, the first line).
    Failed(String),
}

/// One program: the oracle, and each strategy's outcome in the order of the strategies.
#[derive(Clone, Debug)]
pub struct Compared {
    /// The clairvoyant optimum of the reference run of the program as written.
    pub optimum: Optimum,
    /// Per strategy.
    pub outcomes: Vec<Outcome>,
}

/// Runs `text` (named `name`) with the entry's scalars from `scalars` under the traced
/// reference semantics and every strategy; `Err` when the reference run fails or the oracle's
/// plan is wrong on its own trace.
pub fn compare(strategies: &[Strategy], name: &str, text: &str, scalars: &[(&str, i64)]) -> Result<Compared, String> {
    let (ctx, module) = load(name, text, None)?;
    let args = arguments(&ctx, module, scalars)?;
    let (reference, optimum) = traced(&ctx, module, &args)?;
    let moved = |report: &hat_runtime::RunReport, oracle: Optimum| Outcome::Ran {
        bytes: report.to_device.bytes + report.from_device.bytes,
        copies: report.to_device.count + report.from_device.count,
        oracle,
    };
    let outcomes = strategies
        .iter()
        .map(|strategy| {
            let Some(pipeline) = strategy.pipeline.as_deref() else {
                return moved(&reference.report, optimum.clone());
            };
            let ran = load(name, text, Some(pipeline)).and_then(|(ctx, module)| {
                // The oracle of the program the pipeline left (reference mode ignores its
                // transfers and hooks), then the strategy's own run of it.
                let (_, oracle) = traced(&ctx, module, &args)?;
                Ok((run(&ctx, module, strategy.mode, args.clone())?, oracle))
            });
            match ran {
                Ok((observed, oracle)) => match difference(&observed, &reference) {
                    None => moved(&observed.report, oracle),
                    Some(what) => Outcome::Wrong(what),
                },
                Err(e) => Outcome::Failed(e.lines().next().unwrap_or("").to_string()),
            }
        })
        .collect();
    Ok(Compared { optimum, outcomes })
}

/// The traced reference run of `module` and its oracle (the plan checked on the trace, then
/// dropped).
fn traced(
    ctx: &hat_ir::Context,
    module: hat_ir::Op,
    args: &[hat_runtime::ArgValue],
) -> Result<(super::scenarios::Observed, Optimum), String> {
    let (observed, trace) = run_traced(ctx, module, TransferMode::Reference, args.to_vec(), true)?;
    let trace = trace.ok_or("the traced run left no trace")?;
    let mut optimum = optimum(&trace);
    check_plan(&trace, &optimum.plan).map_err(|e| format!("the oracle's plan is wrong on its trace: {e}"))?;
    optimum.plan = Vec::new();
    Ok((observed, optimum))
}

/// The generated programs `1..=programs` of `dispatches` dispatches over `buffers` buffers, each
/// compared (see the module documentation).
pub fn generated(
    strategies: &[Strategy],
    programs: u64,
    dispatches: usize,
    buffers: usize,
) -> Vec<(u64, Result<Compared, String>)> {
    (1..=programs)
        .map(|seed| {
            if seed % 100 == 0 {
                progress(format!("oracle: {seed} of {programs} programs"));
            }
            let text = generate(Shape { dispatches, buffers, seed }).text;
            let name = format!("generated-{dispatches}x{buffers}-seed{seed}.hat");
            (seed, compare(strategies, &name, &text, &[("n", (seed % 5) as i64)]))
        })
        .collect()
}

/// One scenario run: the file, the trip count, the comparison, the hand-written optimum.
pub type ScenarioRun = (String, Option<i64>, Result<Compared, String>, Option<(u64, u64)>);

/// Every scenario of `dir` at each of `counts` (once without a trip count), compared.
pub fn scenarios(strategies: &[Strategy], dir: &Path, counts: &[i64]) -> Result<Vec<ScenarioRun>, String> {
    let mut runs = Vec::new();
    for path in scenario_files(dir)? {
        let file = path.file_name().and_then(|n| n.to_str()).ok_or("a file name that is not UTF-8")?.to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let entry = optimum_of(&file);
        let trips: Vec<Option<i64>> = match entry.and_then(|o| o.count) {
            Some(_) => counts.iter().map(|&c| Some(c)).collect(),
            None => vec![None],
        };
        for count in trips {
            let scalars: Vec<(&str, i64)> = entry.and_then(|o| o.count).zip(count).into_iter().collect();
            let compared = compare(strategies, &format!("examples/{file}"), &text, &scalars);
            let hand = entry.map(|o| (o.bytes)(count.unwrap_or(0)));
            runs.push((file.clone(), count, compared, hand));
        }
    }
    Ok(runs)
}

/// Per strategy: (bytes, oracle bytes) and (copies, oracle copies) over the runs where it was
/// right; the seeds (or labels) where it was wrong, failed, or below the oracle in bytes.
struct PerStrategy {
    bytes: Vec<(u64, u64)>,
    copies: Vec<(u64, u64)>,
    wrong: Vec<String>,
    failed: Vec<String>,
    below: Vec<String>,
    /// Runs below the oracle of the program as written (the pipeline simplified the program:
    /// not a bug).
    below_as_written: usize,
    /// Runs at the oracle's bytes in fewer copies than its lower bound on copies (a bug in the
    /// bound).
    below_copy_bound: Vec<String>,
}

fn per_strategy<'a>(
    strategies: &[Strategy],
    runs: impl Iterator<Item = (String, &'a Compared)> + Clone,
) -> Vec<PerStrategy> {
    (0..strategies.len())
        .map(|i| {
            let mut per = PerStrategy {
                bytes: vec![],
                copies: vec![],
                wrong: vec![],
                failed: vec![],
                below: vec![],
                below_as_written: 0,
                below_copy_bound: vec![],
            };
            for (label, compared) in runs.clone() {
                match &compared.outcomes[i] {
                    Outcome::Ran { bytes, copies, oracle } => {
                        per.bytes.push((*bytes, oracle.bytes()));
                        per.copies.push((*copies, oracle.copies()));
                        per.below_as_written += usize::from(*bytes < compared.optimum.bytes());
                        if *bytes < oracle.bytes() {
                            per.below.push(label);
                        } else if *bytes == oracle.bytes() && *copies < oracle.copies_lower_bound {
                            per.below_copy_bound.push(label);
                        }
                    }
                    Outcome::Wrong(what) => per.wrong.push(format!("{label}: {what}")),
                    Outcome::Failed(why) => per.failed.push(format!("{label}: {why}")),
                }
            }
            per
        })
        .collect()
}

/// The report of the generated programs and the scenarios, the table, and whether no strategy
/// went below the oracle and every reference run and oracle plan was right.
pub fn report(
    strategies: &[Strategy],
    programs: &[(u64, Result<Compared, String>)],
    dispatches: usize,
    buffers: usize,
    scenario_runs: &[ScenarioRun],
) -> (Value, String, bool) {
    let ran: Vec<(String, &Compared)> =
        programs.iter().filter_map(|(seed, c)| c.as_ref().ok().map(|c| (format!("seed {seed}"), c))).collect();
    let broken: Vec<Value> = programs
        .iter()
        .filter_map(|(seed, c)| c.as_ref().err().map(|e| json!({ "seed": seed, "why": e })))
        .chain(scenario_runs.iter().filter_map(|(file, count, c, _)| {
            c.as_ref().err().map(|e| json!({ "scenario": file, "count": count, "why": e }))
        }))
        .collect();
    let per = per_strategy(strategies, ran.iter().map(|(l, c)| (l.clone(), *c)));
    let oracle_bytes: u64 = ran.iter().map(|(_, c)| c.optimum.bytes()).sum();
    let oracle_copies: u64 = ran.iter().map(|(_, c)| c.optimum.copies()).sum();
    let exact = ran.iter().filter(|(_, c)| c.optimum.copies_exact()).count();
    let mut ok = broken.is_empty();
    let mut table = format!(
        "clairvoyant optimum: {} generated programs of {dispatches} dispatches over {buffers} buffers (%n = seed mod 5); \
         oracle copies proven fewest on {exact} of {}\n\
         {:<10} {:>32}   {:>32}   {}\n",
        programs.len(),
        ran.len(),
        "strategy",
        "bytes/oracle: median  p95   max  at",
        "copies/oracle: median  p95   max  at",
        "wrong failed below"
    );
    let mut strategies_json = serde_json::Map::new();
    for (strategy, p) in strategies.iter().zip(&per) {
        let (b, c) = (RatioSummary::of(&p.bytes), RatioSummary::of(&p.copies));
        ok &= p.below.is_empty() && p.below_copy_bound.is_empty();
        table.push_str(&format!(
            "{:<10} {}   {}   {:>5} {:>6} {:>5}\n",
            strategy.name,
            b.columns(2),
            c.columns(2),
            p.wrong.len(),
            p.failed.len(),
            p.below.len()
        ));
        strategies_json.insert(
            strategy.name.to_string(),
            json!({
                "bytes": b.to_json(),
                "copies": c.to_json(),
                "total_bytes": p.bytes.iter().map(|(v, _)| v).sum::<u64>(),
                "total_copies": p.copies.iter().map(|(v, _)| v).sum::<u64>(),
                "wrong": p.wrong,
                "failed": p.failed,
                "below_oracle": p.below,
                "below_copy_lower_bound": p.below_copy_bound,
                "below_the_oracle_of_the_program_as_written": p.below_as_written,
            }),
        );
    }
    let scenarios_json: Vec<Value> = scenario_runs
        .iter()
        .filter_map(|(file, count, compared, hand)| {
            let compared = compared.as_ref().ok()?;
            let o = &compared.optimum;
            let per: serde_json::Map<String, Value> = strategies
                .iter()
                .zip(&compared.outcomes)
                .map(|(s, outcome)| {
                    let value = match outcome {
                        Outcome::Ran { bytes, copies, oracle } => json!({
                            "bytes": bytes,
                            "copies": copies,
                            "oracle_bytes": oracle.bytes(),
                            "oracle_copies": oracle.copies(),
                        }),
                        Outcome::Wrong(what) => json!({ "wrong": what }),
                        Outcome::Failed(why) => json!({ "failed": why }),
                    };
                    (s.name.to_string(), value)
                })
                .collect();
            Some(json!({
                "file": file,
                "count": count,
                "oracle": {
                    "to_device": { "bytes": o.to_device.bytes, "copies": o.to_device.copies },
                    "from_device": { "bytes": o.from_device.bytes, "copies": o.from_device.copies },
                    "copies_lower_bound": o.copies_lower_bound,
                },
                "hand_written_optimum": hand.map(|(a, b)| json!({ "to_device_bytes": a, "from_device_bytes": b })),
                "strategies": per,
            }))
        })
        .collect();
    if !scenario_runs.is_empty() {
        table.push_str(&scenario_table(strategies, scenario_runs));
        let scenario_pairs = scenario_runs.iter().filter_map(|(file, count, c, _)| {
            c.as_ref().ok().map(|c| (format!("{file} count {}", count.map_or("-".into(), |c| c.to_string())), c))
        });
        for p in per_strategy(strategies, scenario_pairs) {
            ok &= p.below.is_empty() && p.below_copy_bound.is_empty();
        }
    }
    // Per program: seed, the oracle's bytes and copies, each strategy's bytes (null: wrong or
    // failed), for a look at any one.
    let rows: Vec<Value> = programs
        .iter()
        .filter_map(|(seed, c)| {
            let c = c.as_ref().ok()?;
            let bytes: Vec<Value> = c
                .outcomes
                .iter()
                .map(|o| match o {
                    Outcome::Ran { bytes, oracle, .. } => json!([bytes, oracle.bytes()]),
                    _ => Value::Null,
                })
                .collect();
            Some(json!([seed, c.optimum.bytes(), c.optimum.copies(), bytes]))
        })
        .collect();
    let value = json!({
        "generator": "hat-bench transfers' program_gen",
        "programs": programs.len(),
        "dispatches": dispatches,
        "buffers": buffers,
        "n": "seed mod 5",
        "oracle": {
            "bytes": oracle_bytes,
            "copies": oracle_copies,
            "copies_proven_fewest": exact,
        },
        "broken": broken,
        "strategies": strategies_json,
        "scenarios": scenarios_json,
        "runs": rows,
        "runs_columns": [
            "seed",
            "oracle bytes (the program as written)",
            "oracle copies",
            "per strategy, in the order of 'strategies': [bytes, the oracle's bytes on the program it ran]"
        ],
        "ok": ok,
    });
    (value, table, ok)
}

/// The scenarios: the oracle's bytes (to/from) and copies beside the hand-written optimum, and
/// each strategy's bytes (copies).
fn scenario_table(strategies: &[Strategy], runs: &[ScenarioRun]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header: Vec<String> =
        ["scenario", "count", "hand optimum", "oracle"].iter().map(|s| s.to_string()).collect();
    header.extend(strategies.iter().map(|s| s.name.to_string()));
    rows.push(header);
    for (file, count, compared, hand) in runs {
        let mut row = vec![
            file.trim_end_matches(".hat").to_string(),
            count.map_or("-".to_string(), |c| c.to_string()),
            hand.map_or("?".to_string(), |(a, b)| format!("{a}/{b}")),
        ];
        match compared {
            Ok(c) => {
                let o = &c.optimum;
                row.push(format!(
                    "{}/{} ({}){}",
                    o.to_device.bytes,
                    o.from_device.bytes,
                    o.copies(),
                    if o.copies_exact() { "" } else { "~" }
                ));
                row.extend(c.outcomes.iter().map(|outcome| match outcome {
                    Outcome::Ran { bytes, copies, oracle } if oracle.bytes() != o.bytes() => {
                        format!("{bytes} ({copies}) [oracle {}]", oracle.bytes())
                    }
                    Outcome::Ran { bytes, copies, .. } => format!("{bytes} ({copies})"),
                    Outcome::Wrong(_) => "wrong".to_string(),
                    Outcome::Failed(_) => "failed".to_string(),
                }));
            }
            Err(_) => row.push("error".to_string()),
        }
        rows.push(row);
    }
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::from(
        "\nscenarios: the oracle's bytes to/from the device (copies; ~ = not proven fewest) beside the hand-written \
         optimum; each strategy's total bytes (copies)\n",
    );
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use hat_runtime::TransferMode;

    fn strategies() -> Vec<Strategy> {
        vec![
            Strategy { name: "reference", pipeline: None, mode: TransferMode::Reference },
            Strategy {
                name: "jic",
                pipeline: Some("insert-transfers{strategy=jic}".into()),
                mode: TransferMode::Explicit,
            },
            Strategy {
                name: "static",
                pipeline: Some("insert-transfers{strategy=static}".into()),
                mode: TransferMode::Explicit,
            },
        ]
    }

    #[test]
    fn peek_static_meets_the_hand_written_optimum_and_the_reference_is_above_it() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let text = std::fs::read_to_string(dir.join("04-peek.hat")).expect("readable");
        let compared = compare(&strategies(), "04-peek.hat", &text, &[("count", 3)]).expect("compares");
        // The hand-written optimum at count 3: 256 B in, 252 + 12 B back.
        assert_eq!((compared.optimum.to_device.bytes, compared.optimum.from_device.bytes), (256, 264));
        match &compared.outcomes[0] {
            Outcome::Ran { bytes, copies, .. } => assert_eq!((*bytes, *copies), (3 * 512, 6), "the reference"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(compared.outcomes[2], Outcome::Ran { bytes: 520, .. }), "{:?}", compared.outcomes[2]);
    }

    #[test]
    fn generated_programs_report_every_strategy_and_none_below_the_oracle() {
        let strategies = strategies();
        let programs = generated(&strategies, 4, 30, 8);
        assert!(programs.iter().all(|(_, c)| c.is_ok()), "{programs:?}");
        let (value, table, ok) = report(&strategies, &programs, 30, 8, &[]);
        assert!(ok, "{value}");
        assert_eq!(value["programs"], 4);
        for name in ["reference", "jic", "static"] {
            let s = &value["strategies"][name];
            assert_eq!(s["below_oracle"].as_array().map(Vec::len), Some(0), "{name}: {s}");
            assert!(s["bytes"]["median"].as_f64().is_some_and(|m| m >= 1.0), "{name}: {s}");
            assert!(table.contains(&format!("\n{name:<10} ")), "{table}");
        }
        // Copying everything every time never beats a plan of jic's kind.
        let total = |name: &str| value["strategies"][name]["total_bytes"].as_u64().expect("a total");
        assert!(total("reference") >= total("jic") && total("jic") >= total("static"));
    }
}
