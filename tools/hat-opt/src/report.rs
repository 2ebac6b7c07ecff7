//! The `--mlir-timing` and `--mlir-pass-statistics` reports, laid out as `mlir-opt` lays them out.

use crate::Display;
use hat_ir::pass::instrumentation::Timing;
use std::fmt::Write;
use std::time::Duration;

const RULE: &str = "===-------------------------------------------------------------------------===";

/// What a run measured, over every chunk of the input.
#[derive(Default)]
pub struct RunReport {
    /// `(depth, name, time)`, in order of first appearance; depth 0 for the driver's phases.
    times: Vec<(usize, String, Duration)>,
    /// Per pass: statistic name and value.
    statistics: Vec<(String, Vec<(String, u64)>)>,
}

impl RunReport {
    /// Adds time to a driver phase (Parser, Verifier, Output).
    pub fn add_time(&mut self, name: &str, time: Duration) {
        self.add(0, name, time);
    }

    fn add(&mut self, depth: usize, name: &str, time: Duration) {
        match self.times.iter_mut().find(|(d, n, _)| *d == depth && n == name) {
            Some((_, _, total)) => *total += time,
            None => self.times.push((depth, name.to_string(), time)),
        }
    }

    /// Adds the pass runs a [`Timing`] recorded (one level below the pipeline).
    pub fn add_pass_times(&mut self, timing: &Timing) {
        for (depth, name, time) in timing.runs() {
            self.add(depth + 2, name, *time);
            self.add(1, "Pipeline", *time * u32::from(*depth == 0));
        }
    }

    /// Adds the statistics of a pass manager's run.
    pub fn add_statistics(&mut self, statistics: &[(String, Vec<(String, u64)>)]) {
        for (pass, values) in statistics {
            let index = match self.statistics.iter().position(|(p, _)| p == pass) {
                Some(index) => index,
                None => {
                    self.statistics.push((pass.clone(), Vec::new()));
                    self.statistics.len() - 1
                }
            };
            for (name, value) in values {
                let totals = &mut self.statistics[index].1;
                match totals.iter_mut().find(|(n, _)| n == name) {
                    Some((_, total)) => *total += value,
                    None => totals.push((name.clone(), *value)),
                }
            }
        }
    }

    /// The timing report.
    pub fn timing_report(&self, display: Display) -> String {
        let total: Duration = self.times.iter().filter(|(d, _, _)| *d <= 1).map(|(_, _, t)| *t).sum();
        let mut out = format!("{RULE}\n{:>50}\n{RULE}\n", "... Execution time report ...");
        let _ = writeln!(out, "  Total Execution Time: {:.4} seconds\n", total.as_secs_f64());
        let _ = writeln!(out, "  ----Wall Time----  ----Name----");
        let line = |out: &mut String, indent: usize, name: &str, time: Duration| {
            let share = if total.is_zero() { 0.0 } else { 100.0 * time.as_secs_f64() / total.as_secs_f64() };
            let _ = writeln!(out, "  {:>8.4} ({:>5.1}%)  {}{}", time.as_secs_f64(), share, "  ".repeat(indent), name);
        };
        match display {
            Display::Tree => {
                for (depth, name, time) in &self.times {
                    let shown = if *depth == 1 { "'builtin.module' Pipeline" } else { name };
                    line(&mut out, depth.saturating_sub(0), shown, *time);
                }
            }
            Display::List => {
                let mut totals: Vec<(String, Duration)> = Vec::new();
                for (depth, name, time) in &self.times {
                    if *depth == 1 {
                        continue;
                    }
                    match totals.iter_mut().find(|(n, _)| n == name) {
                        Some((_, t)) => *t += *time,
                        None => totals.push((name.clone(), *time)),
                    }
                }
                for (name, time) in totals {
                    line(&mut out, 0, &name, time);
                }
            }
        }
        line(&mut out, 0, "Total", total);
        out
    }

    /// The statistics report.
    pub fn statistics_report(&self, display: Display) -> String {
        let mut out = format!("{RULE}\n{:>50}\n{RULE}\n", "... Pass statistics report ...");
        let indent = match display {
            Display::Tree => {
                out.push_str("'builtin.module' Pipeline\n");
                "  "
            }
            Display::List => "",
        };
        for (pass, values) in &self.statistics {
            let _ = writeln!(out, "{indent}{pass}");
            for (name, value) in values {
                let _ = writeln!(out, "{indent}  (S) {value} {name}");
            }
        }
        out
    }
}
