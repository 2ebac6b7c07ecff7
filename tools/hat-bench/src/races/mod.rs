//! `hat-bench races`: the race lint (`race-lint`) over a module of generated kernels, in
//! process: parse and verify time, then the pass's time (best of `--repeat` runs, each on a
//! fresh parse), with the number of kernels, ops and diagnostics. The target: 1,000
//! kernels of about 100 ops in under 1 s.
//!
//! Each kernel (`kernel_text`, deterministic) has three buffer parameters and a scalar and is
//! dispatched once from `@main` over a constant grid (so the lint looks at that grid): work-item
//! ids in one or two dimensions, index arithmetic (affine, `divui`/`remui` by constants,
//! `minsi` clamps, indices loaded from data), guards on ids and on data, counted loops of 2 to
//! 4 iterations, loads from `%a`, stores to `%b` (seven in eight at the work item's own
//! element, the others at a computed index: often a race), atomics on `%c`, and in
//! one kernel in four workgroup memory with a barrier.

use crate::generate::Rng;
use hat_ir::diagnostics::Severity;
use hat_ir::pass::PassManager;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Options of `hat-bench races`.
#[derive(clap::Args, Debug)]
pub struct RacesArgs {
    /// Kernels in the generated module.
    #[arg(long, default_value_t = 1000)]
    pub kernels: usize,
    /// Ops per kernel (about; nested ops included).
    #[arg(long, default_value_t = 100)]
    pub ops: usize,
    /// Runs of the pass (the best is reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Write the generated module here.
    #[arg(long)]
    pub keep: Option<std::path::PathBuf>,
}

/// One kernel's body, an op at a time.
struct Kernel<'a> {
    out: &'a mut String,
    rng: &'a mut Rng,
    next: usize,
    ops: usize,
    /// Ops to stop at.
    target: usize,
    indent: usize,
    /// Index values usable as indices (ids and what is computed from them).
    indices: Vec<String>,
    /// i32 values.
    ints: Vec<String>,
}

impl Kernel<'_> {
    fn line(&mut self, line: &str) {
        let _ = writeln!(self.out, "{}{line}", "  ".repeat(self.indent));
        self.ops += 1;
    }

    fn value(&mut self, definition: &str) -> String {
        self.next += 1;
        let name = format!("%v{}", self.next);
        self.line(&format!("{name} = {definition}"));
        name
    }

    fn below(&mut self, n: usize) -> i64 {
        self.rng.below(n) as i64
    }

    fn constant(&mut self, value: i64) -> String {
        self.value(&format!("arith.constant {value} : index"))
    }

    fn pick_index(&mut self) -> String {
        self.rng.pick(&self.indices).clone()
    }

    /// An index in `0..64` for a `memref<64xi32>` (kept in bounds with `remui`).
    fn index(&mut self) -> String {
        let base = self.pick_index();
        let index = match self.rng.below(6) {
            0 | 1 => {
                let n = self.below(4);
                let c = self.constant(n);
                self.value(&format!("arith.addi {base}, {c} : index"))
            }
            2 => {
                let n = 1 + self.below(3);
                let c = self.constant(n);
                self.value(&format!("arith.divui {base}, {c} : index"))
            }
            3 => {
                let n = 2 + self.below(3);
                let c = self.constant(n);
                self.value(&format!("arith.muli {base}, {c} : index"))
            }
            4 => {
                let c = self.constant(63);
                self.value(&format!("arith.minsi {base}, {c} : index"))
            }
            _ => base,
        };
        let n = self.constant(64);
        let wrapped = self.value(&format!("arith.remui {index}, {n} : index"));
        self.indices.push(wrapped.clone());
        wrapped
    }

    fn statement(&mut self, depth: usize) {
        match self.rng.below(10) {
            0..=2 => {
                let at = self.index();
                let v = self.value(&format!("buffer.load %a[{at}] : memref<64xi32>"));
                self.ints.push(v);
            }
            3 | 4 => {
                // Most stores are at the id itself (no race); some elsewhere.
                let at = if self.rng.below(8) == 0 { self.index() } else { "%x".to_string() };
                let v = self.rng.pick(&self.ints).clone();
                self.line(&format!("buffer.store {v}, %b[{at}] : memref<64xi32>"));
            }
            5 => {
                let at = self.index();
                let v = self.rng.pick(&self.ints).clone();
                let old = self.value(&format!("kernel.atomic_rmw add %c[{at}], {v} : memref<64xi32>"));
                self.ints.push(old);
            }
            6 => {
                let a = self.rng.pick(&self.ints).clone();
                let b = self.rng.pick(&self.ints).clone();
                let v = self.value(&format!("arith.addi {a}, {b} : i32"));
                self.ints.push(v);
            }
            7 if depth < 2 => {
                let lhs = self.pick_index();
                let n = 8 + self.below(56);
                let bound = self.constant(n);
                let condition = self.value(&format!("arith.cmpi ult, {lhs}, {bound} : index"));
                self.block(&format!("scf.if {condition} {{"), depth);
            }
            8 if depth < 2 => {
                let n = 2 + self.below(3);
                let (l, u, s) = (self.constant(0), self.constant(n), self.constant(1));
                self.next += 1;
                let k = format!("%k{}", self.next);
                self.indices.push(k.clone());
                self.block(&format!("scf.for {k} = {l} to {u} step {s} {{"), depth);
                self.indices.retain(|i| *i != k);
            }
            _ => {
                let v = self.rng.pick(&self.ints).clone();
                let n = self.below(100);
                let t = self.value(&format!("arith.constant {n} : i32"));
                let condition = self.value(&format!("arith.cmpi sgt, {v}, {t} : i32"));
                self.block(&format!("scf.if {condition} {{"), depth);
            }
        }
    }

    /// A nested region of two to four statements; values defined inside stay inside.
    fn block(&mut self, header: &str, depth: usize) {
        self.line(header);
        self.indent += 1;
        let (indices, ints) = (self.indices.len(), self.ints.len());
        for _ in 0..2 + self.rng.below(3) {
            if self.ops >= self.target {
                break;
            }
            self.statement(depth + 1);
        }
        self.indices.truncate(indices);
        self.ints.truncate(ints);
        self.indent -= 1;
        self.line("}");
    }
}

/// The text of kernel `@k{n}` of about `ops` ops, and its grid.
fn kernel_text(out: &mut String, rng: &mut Rng, n: usize, ops: usize) -> [u64; 2] {
    let two_d = rng.below(4) == 0;
    let grid = if two_d { [8, 8] } else { [64, 1] };
    let workgroup = if two_d { "8, 8, 1" } else { "64" };
    let _ = writeln!(
        out,
        "kernel.func @k{n}(%a: memref<64xi32>, %b: memref<64xi32>, %c: memref<64xi32>, %s: i32) workgroup({workgroup}) {{"
    );
    let mut kernel =
        Kernel { out, rng, next: 0, ops: 0, target: ops, indent: 1, indices: Vec::new(), ints: vec!["%s".to_string()] };
    kernel.line("%x0 = kernel.global_id x");
    if two_d {
        kernel.line("%y = kernel.global_id y");
        let eight = kernel.constant(8);
        let row = kernel.value(&format!("arith.muli %y, {eight} : index"));
        kernel.line(&format!("%x = arith.addi {row}, %x0 : index"));
        kernel.indices.push("%y".to_string());
    } else {
        let zero = kernel.constant(0);
        kernel.line(&format!("%x = arith.addi %x0, {zero} : index"));
    }
    kernel.indices.push("%x".to_string());
    kernel.indices.push("%x0".to_string());
    if kernel.rng.below(4) == 0 {
        // Workgroup memory: store at the local id, barrier, read a neighbour.
        kernel.line("%tile = kernel.local_alloc : memref<64xi32>");
        kernel.line("%l = kernel.local_id x");
        kernel.line("buffer.store %s, %tile[%l] : memref<64xi32>");
        kernel.line("kernel.barrier");
        let one = kernel.constant(1);
        let n = kernel.constant(64);
        let next = kernel.value(&format!("arith.addi %l, {one} : index"));
        let wrapped = kernel.value(&format!("arith.remui {next}, {n} : index"));
        let v = kernel.value(&format!("buffer.load %tile[{wrapped}] : memref<64xi32>"));
        kernel.ints.push(v);
    }
    while kernel.ops < ops {
        kernel.statement(0);
    }
    kernel.line("kernel.return");
    out.push_str("}\n\n");
    grid
}

/// The module: `kernels` kernels and `@main` dispatching each once.
pub fn module_text(kernels: usize, ops: usize) -> String {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut out = String::new();
    let mut grids = Vec::new();
    for n in 0..kernels {
        grids.push(kernel_text(&mut out, &mut rng, n, ops));
    }
    out.push_str("compute.func @main(%a: memref<64xi32>, %b: memref<64xi32>, %c: memref<64xi32>, %s: i32) {\n");
    out.push_str("  %c8 = arith.constant 8 : index\n  %c64 = arith.constant 64 : index\n");
    for (n, grid) in grids.iter().enumerate() {
        let grid = if grid[1] > 1 { "%c8, %c8" } else { "%c64" };
        let _ = writeln!(
            out,
            "  compute.dispatch @k{n}[{grid}](%a, %b, %c, %s) : (memref<64xi32>, memref<64xi32>, memref<64xi32>, i32)"
        );
    }
    out.push_str("  compute.return\n}\n");
    out
}

/// Runs the benchmark; the report and whether hat succeeded.
pub fn run(args: &RacesArgs) -> Result<(Value, bool), String> {
    let text = module_text(args.kernels, args.ops);
    if let Some(path) = &args.keep {
        std::fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let registry = hat_passes::registry();
    let mut best: Option<Duration> = None;
    let mut parse_best: Option<Duration> = None;
    let (mut diagnostics, mut warnings, mut remarks, mut ops) = (0, 0, 0, 0);
    for _ in 0..args.repeat.max(1) {
        let start = Instant::now();
        let mut ctx = hat_dialects::context();
        let module = hat_ir::parse_source(&mut ctx, "races.hat", &text).map_err(|e| format!("{e:?}"))?;
        hat_ir::verify_module(&ctx, module).map_err(|e| format!("{e:?}"))?;
        let parsed = start.elapsed();
        ops = ctx.walk(module).len() - args.kernels - 4; // less @main's ops and the module
        let mut manager = PassManager::new("builtin.module", Default::default());
        manager.add_pipeline(&registry, "builtin.module(race-lint)").map_err(|e| format!("{e:?}"))?;
        let start = Instant::now();
        let found = manager.run(&mut ctx, module).map_err(|e| format!("{e:?}"))?;
        let linted = start.elapsed();
        diagnostics = found.len();
        warnings = found.iter().filter(|d| d.severity == Severity::Warning).count();
        remarks = found.iter().filter(|d| d.severity == Severity::Remark).count();
        best = Some(best.map_or(linted, |b| b.min(linted)));
        parse_best = Some(parse_best.map_or(parsed, |b| b.min(parsed)));
    }
    let seconds = best.unwrap_or_default().as_secs_f64();
    let report = json!({
        "benchmark": "races",
        "kernels": args.kernels,
        "ops_per_kernel": args.ops,
        "ops_in_kernels": ops,
        "parse_and_verify_s": parse_best.unwrap_or_default().as_secs_f64(),
        "lint_s": seconds,
        "lint_us_per_kernel": seconds * 1e6 / args.kernels.max(1) as f64,
        "target_s": 1.0,
        "under_target": seconds < 1.0,
        "diagnostics": diagnostics,
        "warnings": warnings,
        "remarks": remarks,
        "repeat": args.repeat.max(1),
    });
    Ok((report, true))
}
