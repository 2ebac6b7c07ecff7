//! `hat-bench passes`: `canonicalize,cse` over a generated module of arith and scf, with `hat-opt`
//! and (when installed) `mlir-opt --allow-unregistered-dialect --canonicalize --cse` on the same
//! generic text, as child processes: time and peak memory of each, each tool's own time per phase
//! (`--mlir-timing`), and the ops left by each.
//!
//! The module (generic form, deterministic) has functions of a fixed number of ops each, nested
//! ops included. Its ops are what canonicalization and CSE are for: constants (many repeated),
//! arithmetic on constants (foldable), identities (`x + 0`, `x * 1`, `x - x`, ...), expressions
//! repeated verbatim (CSE), comparisons and selects, `scf.if` on constant and on unknown
//! conditions, `scf.for` with constant trip counts (0, 1, several) and unknown ones; and
//! `buffer.store`s (unregistered for MLIR: unknown effects in both tools) that keep values alive.

use crate::common::{progress, Bench, BenchArgs, Comparison};
use crate::generate::{Rng, Shape};
use crate::measure::{round3, Measurement};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::Path;

/// Options of `hat-bench passes`.
#[derive(clap::Args, Debug)]
#[command(
    mut_arg("ops", |a| a.help(
        "Ops in the generated module (inside the functions, nested ops and terminators included)"
    )),
    mut_arg("shapes", |a| a.help(
        "Comma-separated shapes, each FUNCTIONSxOPS_PER_FUNCTION or FUNCTIONS (then OPS / FUNCTIONS each). \
         Default: OPS/1000 functions of 1000, and 10 functions of OPS/10"
    )),
    mut_arg("keep", |a| a.help("Keep the generated modules (and each tool's output) in this directory")),
    mut_arg("no_phases", |a| a.help("Skip the extra runs that report time per phase and count the ops left")),
)]
pub struct PassesArgs {
    #[command(flatten)]
    pub bench: BenchArgs,
}

const BINARY: &[&str] = &["addi", "subi", "muli", "xori", "andi", "ori", "maxsi", "minui"];

/// The generator of one function body.
struct Function<'a> {
    out: &'a mut String,
    rng: &'a mut Rng,
    next: usize,
    /// i32 values visible at the top level of the body.
    ints: Vec<String>,
    /// i32 constants at the top level, with their values.
    constants: Vec<String>,
    bools: Vec<String>,
    /// index constants, for store indices.
    indices: Vec<String>,
    /// Binary ops emitted, to repeat verbatim: (op, lhs, rhs).
    emitted: Vec<(&'static str, String, String)>,
    /// Ops emitted so far (nested ones included).
    ops: usize,
}

impl Function<'_> {
    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%{}", self.next - 1)
    }

    fn line(&mut self, indent: usize, text: std::fmt::Arguments<'_>) {
        for _ in 0..indent {
            self.out.push_str("  ");
        }
        self.out.write_fmt(text).expect("writing to a String");
        self.out.push('\n');
        self.ops += 1;
    }

    fn constant(&mut self, value: i64, ty: &str) -> String {
        let name = self.fresh();
        self.line(2, format_args!("{name} = \"arith.constant\"() {{value = {value} : {ty}}} : () -> {ty}"));
        name
    }

    fn binary(&mut self, indent: usize, op: &str, a: &str, b: &str) -> String {
        let name = self.fresh();
        self.line(indent, format_args!("{name} = \"arith.{op}\"({a}, {b}) : (i32, i32) -> i32"));
        name
    }

    /// Emits one item (1 to 7 ops).
    fn item(&mut self) {
        let roll = self.rng.below(100);
        match roll {
            // A constant, from a small set of values: many repeat.
            0..=13 => {
                let value = self.rng.below(16) as i64 - 8;
                let c = self.constant(value, "i32");
                self.constants.push(c.clone());
                self.ints.push(c);
            }
            // Arithmetic on values.
            14..=47 => {
                let op = BINARY[self.rng.below(BINARY.len())];
                let (a, b) = (self.rng.pick(&self.ints).to_string(), self.rng.pick(&self.ints).to_string());
                let r = self.binary(2, op, &a, &b);
                self.emitted.push((op, a, b));
                self.ints.push(r);
            }
            // Arithmetic on two constants: folds.
            48..=55 if self.constants.len() >= 2 => {
                let op = BINARY[self.rng.below(3)];
                let (a, b) = (self.rng.pick(&self.constants).to_string(), self.rng.pick(&self.constants).to_string());
                let r = self.binary(2, op, &a, &b);
                self.ints.push(r);
            }
            // An identity: x + 0, x * 1, x - x, x ^ x, x | 0.
            56..=61 => {
                let x = self.rng.pick(&self.ints).to_string();
                let r = match self.rng.below(5) {
                    0 => {
                        let zero = self.constant(0, "i32");
                        self.binary(2, "addi", &x, &zero)
                    }
                    1 => {
                        let one = self.constant(1, "i32");
                        self.binary(2, "muli", &one, &x)
                    }
                    2 => self.binary(2, "subi", &x, &x),
                    3 => self.binary(2, "xori", &x, &x),
                    _ => {
                        let zero = self.constant(0, "i32");
                        self.binary(2, "ori", &x, &zero)
                    }
                };
                self.ints.push(r);
            }
            // An expression repeated verbatim (or with commuted operands): CSE.
            62..=71 if !self.emitted.is_empty() => {
                let k = self.emitted.len();
                let (op, a, b) = self.emitted[k - 1 - self.rng.below(k.min(64))].clone();
                let r = self.binary(2, op, &a, &b);
                self.ints.push(r);
            }
            // A comparison, or a select on one.
            72..=79 => {
                if self.bools.is_empty() || self.rng.below(2) == 0 {
                    let (a, b) = (self.rng.pick(&self.ints).to_string(), self.rng.pick(&self.ints).to_string());
                    let name = self.fresh();
                    let predicate = self.rng.below(10);
                    self.line(
                        2,
                        format_args!(
                            "{name} = \"arith.cmpi\"({a}, {b}) {{predicate = {predicate} : i64}} : (i32, i32) -> i1"
                        ),
                    );
                    self.bools.push(name);
                } else {
                    let c = self.rng.pick(&self.bools).to_string();
                    let (a, b) = (self.rng.pick(&self.ints).to_string(), self.rng.pick(&self.ints).to_string());
                    let name = self.fresh();
                    self.line(2, format_args!("{name} = \"arith.select\"({c}, {a}, {b}) : (i1, i32, i32) -> i32"));
                    self.ints.push(name);
                }
            }
            // scf.if on a constant (dead control flow) or on an unknown condition.
            80..=85 => {
                let condition = if self.rng.below(2) == 0 {
                    let value = self.rng.below(2) as i64;
                    let name = self.fresh();
                    self.line(2, format_args!("{name} = \"arith.constant\"() {{value = {value} : i1}} : () -> i1"));
                    name
                } else if let Some(b) = self.bools.last().cloned() {
                    b
                } else {
                    "%arg3".to_string()
                };
                let (a, b) = (self.rng.pick(&self.ints).to_string(), self.rng.pick(&self.ints).to_string());
                let name = self.fresh();
                self.line(2, format_args!("{name} = \"scf.if\"({condition}) ({{"));
                self.ops -= 1;
                let inner = self.binary(3, "muli", &a, &b);
                self.line(3, format_args!("\"scf.yield\"({inner}) : (i32) -> ()"));
                self.out.push_str("    }, {\n");
                let inner = self.binary(3, "addi", &a, &b);
                self.line(3, format_args!("\"scf.yield\"({inner}) : (i32) -> ()"));
                self.out.push_str("    }) : (i1) -> i32\n");
                self.ops += 1;
                self.ints.push(name);
            }
            // scf.for with a constant trip count (0, 1 or 4) or an unknown one (%arg2).
            86..=91 => {
                let lower = self.constant(0, "index");
                let upper = match self.rng.below(4) {
                    0 => self.constant(0, "index"),
                    1 => self.constant(1, "index"),
                    2 => self.constant(4, "index"),
                    _ => "%arg2".to_string(),
                };
                let step = self.constant(1, "index");
                let init = self.rng.pick(&self.ints).to_string();
                let x = self.rng.pick(&self.ints).to_string();
                let name = self.fresh();
                let (iv, acc) = (format!("%i{}", self.next), format!("%acc{}", self.next));
                self.line(2, format_args!("{name} = \"scf.for\"({lower}, {upper}, {step}, {init}) ({{"));
                self.out.push_str(&format!("    ^bb0({iv}: index, {acc}: i32):\n"));
                let inner = self.binary(3, "addi", &acc, &x);
                self.line(3, format_args!("\"scf.yield\"({inner}) : (i32) -> ()"));
                self.out.push_str("    }) : (index, index, index, i32) -> i32\n");
                self.ints.push(name);
            }
            // A store that keeps a value alive.
            _ => {
                if self.indices.is_empty() || self.rng.below(4) == 0 {
                    let k = self.rng.below(64) as i64;
                    let index = self.constant(k, "index");
                    self.indices.push(index);
                }
                let v = self.rng.pick(&self.ints).to_string();
                let index = self.indices[self.rng.below(self.indices.len())].clone();
                self.line(
                    2,
                    format_args!("\"buffer.store\"({v}, %arg4, {index}) : (i32, memref<64xi32>, index) -> ()"),
                );
            }
        }
    }
}

/// The module text for `shape`: `blocks` functions of `ops_per_block` ops each (nested ops and
/// the terminator included).
pub fn generate(shape: Shape) -> String {
    let mut out = String::with_capacity(shape.ops() * 64 + shape.blocks * 200 + 64);
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    out.push_str("\"builtin.module\"() ({\n");
    for f in 0..shape.blocks {
        out.push_str(
            "  \"compute.func\"() ({\n  ^bb0(%arg0: i32, %arg1: i32, %arg2: index, %arg3: i1, %arg4: memref<64xi32>):\n",
        );
        let mut function = Function {
            out: &mut out,
            rng: &mut rng,
            next: 0,
            ints: vec!["%arg0".to_string(), "%arg1".to_string()],
            constants: Vec::new(),
            bools: Vec::new(),
            indices: Vec::new(),
            emitted: Vec::new(),
            ops: 0,
        };
        // The largest item has 7 ops; the rest is filled with single ops.
        let body = shape.ops_per_block.saturating_sub(1);
        while function.ops + 7 <= body {
            function.item();
        }
        while function.ops < body {
            let (a, b) = (function.rng.pick(&function.ints).to_string(), function.rng.pick(&function.ints).to_string());
            let r = function.binary(2, "addi", &a, &b);
            function.ints.push(r);
        }
        if shape.ops_per_block > 0 {
            out.push_str("    \"compute.return\"() : () -> ()\n");
        }
        writeln!(
            out,
            "  }}) {{function_type = (i32, i32, index, i1, memref<64xi32>) -> (), sym_name = \"f{f}\"}} : () -> ()"
        )
        .expect("writing to a String");
    }
    out.push_str("}) : () -> ()\n");
    out
}

/// The lines `  0.1234 ( 12.3%)  Name` of an `--mlir-timing-display=list` report, as
/// `{name: seconds}` (summed when a name repeats), rounded to milliseconds.
pub(crate) fn parse_timing(report: &str) -> Value {
    let phases = timing_phases(report).into_iter().map(|(name, seconds)| (name, json!(round3(seconds))));
    Value::Object(phases.collect::<Map<_, _>>())
}

/// The phases of a `--mlir-timing-display=list` report as written (to a tenth of a millisecond),
/// in order, summed when a name repeats.
pub(crate) fn timing_phases(report: &str) -> Vec<(String, f64)> {
    let mut phases: Vec<(String, f64)> = Vec::new();
    for line in report.lines() {
        let line = line.trim();
        let Some((seconds, rest)) = line.split_once(' ') else { continue };
        let Ok(seconds) = seconds.parse::<f64>() else { continue };
        let Some((_, name)) = rest.split_once(')') else { continue };
        let name = name.trim();
        if name.is_empty() || name == "Total" {
            continue;
        }
        match phases.iter_mut().find(|(n, _)| n == name) {
            Some((_, total)) => *total += seconds,
            None => phases.push((name.to_string(), seconds)),
        }
    }
    phases
}

/// Ops in a module printed in the generic form: one per line that holds an op name in quotes.
pub(crate) fn count_generic_ops(text: &str) -> usize {
    text.lines()
        .filter(|line| {
            let line = line.trim_start();
            line.starts_with('"') || (line.starts_with('%') && line.contains(" = \""))
        })
        .count()
        .saturating_sub(1) // the module
}

/// Runs `program args... -o OUTPUT --mlir-timing` once: its phases, and the ops it left.
fn phases_and_ops(program: &Path, args: &[&str], output: &Path) -> Value {
    let output_arg = output.display().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--mlir-timing", "--mlir-timing-display=list", "-o", &output_arg]);
    let result = std::process::Command::new(program).args(&all).stdin(std::process::Stdio::null()).output();
    match result {
        Ok(run) if run.status.success() => {
            let report = String::from_utf8_lossy(&run.stderr);
            let ops_left = std::fs::read_to_string(output).map(|t| count_generic_ops(&t)).ok();
            json!({ "phases": parse_timing(&report), "ops_left": ops_left })
        }
        Ok(run) => json!({ "error": String::from_utf8_lossy(&run.stderr).chars().take(2000).collect::<String>() }),
        Err(error) => json!({ "error": error.to_string() }),
    }
}

/// Runs the benchmark; returns the report and whether hat succeeded throughout.
pub fn run(args: &PassesArgs) -> Result<(Value, bool), String> {
    let bench = Bench::new(&args.bench)?;
    let mut all_ok = true;
    let mut reports = Vec::new();
    let mut faster_everywhere: Option<bool> = None;
    let mut less_memory_everywhere: Option<bool> = None;
    for &shape in &bench.shapes {
        progress(format!("shape {shape}: {} functions of {} ops, generating", shape.blocks, shape.ops_per_block));
        let text = generate(shape);
        let bytes = text.len();
        let stem = bench.file_name(format!("passes-{shape}"), format_args!("passes-{shape}"));
        let file = bench.dir.join(format!("{stem}.mlir"));
        let file_arg = bench.write_module(&file, &text)?;
        drop(text);

        let hat_args = [file_arg.as_str(), "--canonicalize", "--cse", "--mlir-print-op-generic"];
        let hat = bench.measure_hat(&[&hat_args[..], &["-o", "/dev/null"]].concat());
        all_ok &= hat.ok();
        let mlir_args =
            ["--allow-unregistered-dialect", "--canonicalize", "--cse", "--mlir-print-op-generic", file_arg.as_str()];
        let mlir = bench.measure_mlir(&[&mlir_args[..], &["-o", "/dev/null"]].concat());

        let mut hat_report = hat.to_json();
        let mut mlir_report = mlir.as_ref().map(Measurement::to_json);
        if !bench.args.no_phases {
            progress("  phases and ops left (one more run each, with --mlir-timing)");
            let output = bench.dir.join(format!("{stem}.hat-out.mlir"));
            let detail = phases_and_ops(&bench.hat_opt, &hat_args, &output);
            progress(format!("  hat-opt: {detail}"));
            all_ok &= detail.get("error").is_none();
            hat_report["detail"] = detail;
            bench.discard(&output);
            if let (Some(path), Some(report)) = (&bench.mlir_opt, mlir_report.as_mut()) {
                let output = bench.dir.join(format!("{stem}.mlir-out.mlir"));
                let detail = phases_and_ops(path, &mlir_args, &output);
                progress(format!("  mlir-opt: {detail}"));
                report["detail"] = detail;
                bench.discard(&output);
            }
        }
        bench.discard(&file);

        let comparison = Comparison::new(&hat, mlir.as_ref());
        if let (Some(h), Some(m)) = (comparison.hat_seconds, comparison.mlir_seconds) {
            faster_everywhere = Some(faster_everywhere.unwrap_or(true) && h < m);
        }
        if let (Some(h), Some(m)) = (comparison.hat_mib, comparison.mlir_mib) {
            less_memory_everywhere = Some(less_memory_everywhere.unwrap_or(true) && h < m);
        }
        reports.push(comparison.shape_report(["functions", "ops_per_function"], shape, bytes, hat_report, mlir_report));
    }
    let report = bench.report(
        "passes",
        json!({
            "pipeline": "canonicalize,cse",
            "shapes": reports,
            "targets": {
                "faster_than_mlir_opt": faster_everywhere,
                "less_memory_than_mlir_opt": less_memory_everywhere,
            },
            "ok": all_ok,
        }),
    );
    Ok((report, all_ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_module_has_the_ops_asked_and_verifies() {
        let shape = Shape { blocks: 3, ops_per_block: 400 };
        let text = generate(shape);
        assert_eq!(count_generic_ops(&text), shape.ops() + shape.blocks);
        let mut ctx = hat_dialects::context();
        let module = crate::generate::parse_generated(&mut ctx, &text);
        let diagnostics = hat_ir::verify(&ctx, module);
        assert!(diagnostics.is_empty(), "{}", hat_ir::diagnostics::render(&ctx.sources, &diagnostics));
        // Every function holds exactly `ops_per_block` ops, nested ones included.
        for function in ctx.body_ops(module) {
            assert_eq!(ctx.walk(function).len() - 1, shape.ops_per_block);
        }
        for needed in ["\"scf.for\"", "\"scf.if\"", "\"arith.select\"", "\"buffer.store\"", "value = 0 : i32"] {
            assert!(text.contains(needed), "{needed} missing");
        }
    }

    #[test]
    fn timing_reports_parse() {
        let report = "  ----Wall Time----  ----Name----\n    0.0003 ( 55.1%)  Parser\n    0.0100 (  9.1%)  canonicalize\n    0.0006 (100.0%)  Total\n";
        assert_eq!(parse_timing(report), json!({ "Parser": 0.0, "canonicalize": 0.01 }));
    }
}
