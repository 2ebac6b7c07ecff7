//! A differential spot check on small generated programs ([`super::program_gen`]: the same
//! shapes as the cost measurement, small enough to run): each runs on the CPU backend under the
//! reference semantics and under every strategy, and a strategy whose run observes anything
//! the reference run does not (the results, a buffer argument's final host copy, a host
//! function's arguments) is reported with the seeds that show it. The cost figures are only
//! worth something for a pass that is right on the programs it is timed on.

use super::program_gen::{generate, Shape};
use super::scenarios::{arguments, difference, load, run, Strategy};
use crate::common::progress;
use hat_runtime::TransferMode;
use serde_json::{json, Value};

/// The trip count given to `%n`.
const TRIPS: i64 = 3;

/// What the check found for one strategy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Seeds whose program the strategy got wrong.
    pub wrong: Vec<u64>,
    /// Seeds whose program the strategy could not plan or run, with why (the first line).
    pub failed: Vec<(u64, String)>,
    /// The first difference seen, for the report.
    pub first: Option<String>,
}

/// Runs programs of `dispatches` dispatches over `buffers` buffers, for the seeds `1..=seeds`;
/// per strategy (the reference excluded), what it got wrong.
pub fn check(strategies: &[Strategy], seeds: u64, dispatches: usize, buffers: usize) -> Vec<(String, Findings)> {
    let mut findings: Vec<(String, Findings)> =
        strategies.iter().filter(|s| s.pipeline.is_some()).map(|s| (s.name.to_string(), Findings::default())).collect();
    for seed in 1..=seeds {
        let text = generate(Shape { dispatches, buffers, seed }).text;
        let name = format!("generated-{dispatches}x{buffers}-seed{seed}.hat");
        let reference = load(&name, &text, None).and_then(|(ctx, module)| {
            let args = arguments(&ctx, module, &[("n", TRIPS)])?;
            run(&ctx, module, TransferMode::Reference, args.clone()).map(|observed| (observed, args))
        });
        let (reference, args) = match reference {
            Ok(found) => found,
            Err(e) => {
                progress(format!("check: seed {seed}: the reference run failed: {e}"));
                for (_, f) in &mut findings {
                    f.failed.push((seed, format!("the reference run failed: {e}")));
                }
                continue;
            }
        };
        for (strategy, (_, f)) in strategies.iter().filter(|s| s.pipeline.is_some()).zip(&mut findings) {
            let observed = load(&name, &text, strategy.pipeline.as_deref())
                .and_then(|(ctx, module)| run(&ctx, module, strategy.mode, args.clone()));
            match observed {
                Ok(observed) => {
                    if let Some(what) = difference(&observed, &reference) {
                        f.wrong.push(seed);
                        f.first.get_or_insert_with(|| format!("seed {seed}: {what}"));
                    }
                }
                Err(e) => f.failed.push((seed, e.lines().next().unwrap_or("").to_string())),
            }
        }
    }
    findings
}

/// The report of [`check`]'s findings; and whether every strategy was right everywhere.
pub fn report(findings: &[(String, Findings)], seeds: u64, dispatches: usize, buffers: usize) -> (Value, bool) {
    let ok = findings.iter().all(|(_, f)| f.wrong.is_empty() && f.failed.is_empty());
    let per: serde_json::Map<String, Value> = findings
        .iter()
        .map(|(name, f)| {
            (
                name.clone(),
                json!({
                    "wrong": f.wrong.len(),
                    "wrong_seeds": f.wrong,
                    "first_difference": f.first,
                    "failed": f.failed.iter().map(|(seed, why)| json!({ "seed": seed, "why": why })).collect::<Vec<_>>(),
                }),
            )
        })
        .collect();
    let reproduce = format!(
        "hat-bench transfers --no-scenarios --dispatches {dispatches} --buffers {buffers} --seed SEED --repeat 1 --check-seeds 0 --keep DIR; \
         hat-bench transfers --no-cost --check-seeds 0 --examples DIR (the entry's %n is {TRIPS} in the check, 7 there)"
    );
    (
        json!({
            "programs": seeds,
            "dispatches": dispatches,
            "buffers": buffers,
            "n": TRIPS,
            "strategies": per,
            "reproduce": reproduce,
            "ok": ok,
        }),
        ok,
    )
}

/// The findings as text.
pub fn table(findings: &[(String, Findings)], seeds: u64, dispatches: usize, buffers: usize) -> String {
    let mut text = format!(
        "differential check: {seeds} generated programs of {dispatches} dispatches over {buffers} buffers, %n = {TRIPS}\n"
    );
    for (name, f) in findings {
        let seeds_text: Vec<String> = f.wrong.iter().map(u64::to_string).collect();
        text.push_str(&format!(
            "  {name:<10} wrong on {:>3} (seeds: {}), failed on {:>3}{}\n",
            f.wrong.len(),
            if seeds_text.is_empty() { "none".to_string() } else { seeds_text.join(", ") },
            f.failed.len(),
            f.first.as_ref().map(|d| format!("; first: {d}")).unwrap_or_default()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use hat_runtime::TransferMode;

    #[test]
    fn the_reference_semantics_written_out_is_right_and_no_transfers_is_wrong() {
        let strategies = vec![
            Strategy { name: "reference", pipeline: None, mode: TransferMode::Reference },
            Strategy {
                name: "jic",
                pipeline: Some("insert-transfers{strategy=jic}".into()),
                mode: TransferMode::Explicit,
            },
            // Explicit mode with no transfer at all: the device copies are poison.
            Strategy { name: "nothing", pipeline: Some("canonicalize".into()), mode: TransferMode::Explicit },
        ];
        let findings = check(&strategies, 3, 30, 8);
        assert_eq!(findings.len(), 2);
        assert_eq!(findings[0], ("jic".to_string(), Findings::default()));
        let (name, nothing) = &findings[1];
        assert_eq!(name, "nothing");
        assert_eq!(nothing.wrong, [1, 2, 3]);
        assert!(nothing.first.as_deref().is_some_and(|d| d.starts_with("seed 1: ")), "{nothing:?}");
        let (report, ok) = report(&findings, 3, 30, 8);
        assert!(!ok);
        assert_eq!(report["strategies"]["nothing"]["wrong"], 3);
        assert!(table(&findings, 3, 30, 8).contains("  nothing    wrong on   3 (seeds: 1, 2, 3)"));
    }
}
