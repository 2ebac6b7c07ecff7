//! Random kernels (arithmetic of every type, casts, comparisons, nested `scf.if`/`scf.for`/
//! `scf.while` with results, loads, stores, atomics, buffers chosen at run time, barriers,
//! helper calls) always lower, with the defaults and with every feature and a 64-bit `index`, to
//! a module that the validator accepts (the one compiled into the lowering, and `spirv-val` when
//! it is installed). `tests/lowering_generated_kernels.rs` at the workspace root lowers the
//! kernel-effects test's random kernels (index patterns, 2-D buffers and workgroups, helpers
//! taking buffers) the same way. A program is built from a list of random bytes, each choosing
//! the next construct, so proptest shrinks it well.

mod support;

use proptest::prelude::*;

const TYPES: [&str; 4] = ["i32", "index", "i1", "f32"];

/// Builds a kernel body from choices; values in scope are kept per type.
struct Generator<'a> {
    choices: &'a [u8],
    at: usize,
    next: usize,
    out: String,
    /// Values in scope per type (index into [`TYPES`]); a scope is a length per type.
    values: [Vec<String>; 4],
    depth: usize,
}

impl Generator<'_> {
    fn choose(&mut self, n: usize) -> usize {
        let choice = self.choices.get(self.at).copied().unwrap_or(0) as usize;
        self.at += 1;
        choice % n
    }

    fn done(&self) -> bool {
        self.at >= self.choices.len()
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%v{}", self.next)
    }

    fn pick(&mut self, ty: usize) -> String {
        let n = self.values[ty].len();
        let i = self.choose(n);
        self.values[ty][i].clone()
    }

    fn line(&mut self, text: &str) {
        self.out.push_str(&"  ".repeat(self.depth + 1));
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn define(&mut self, ty: usize, text: String) -> String {
        let name = self.fresh();
        self.line(&format!("{name} = {text}"));
        self.values[ty].push(name.clone());
        name
    }

    fn scope(&self) -> [usize; 4] {
        [0, 1, 2, 3].map(|t| self.values[t].len())
    }

    fn leave(&mut self, scope: [usize; 4]) {
        for (values, &length) in self.values.iter_mut().zip(&scope) {
            values.truncate(length);
        }
    }

    /// A short block of statements.
    fn block(&mut self, budget: usize) {
        for _ in 0..budget {
            if self.done() {
                return;
            }
            self.statement();
        }
    }

    fn statement(&mut self) {
        let ty = self.choose(4);
        let t = TYPES[ty];
        match self.choose(if self.depth < 4 { 12 } else { 8 }) {
            0 | 1 => {
                let ops: &[&str] = if ty == 3 {
                    &["addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf"]
                } else {
                    &[
                        "addi",
                        "subi",
                        "muli",
                        "divsi",
                        "divui",
                        "remsi",
                        "remui",
                        "andi",
                        "ori",
                        "xori",
                        "shli",
                        "shrsi",
                        "shrui",
                        "maxsi",
                        "minui",
                        "ceildivsi",
                        "floordivsi",
                    ]
                };
                let op = ops[self.choose(ops.len())];
                let (a, b) = (self.pick(ty), self.pick(ty));
                self.define(ty, format!("arith.{op} {a}, {b} : {t}"));
            }
            2 => {
                let (a, b) = (self.pick(ty), self.pick(ty));
                if ty == 3 {
                    let p = ["oeq", "ult", "uno", "oge", "une"][self.choose(5)];
                    self.define(2, format!("arith.cmpf {p}, {a}, {b} : f32"));
                } else {
                    let p = ["eq", "slt", "uge", "sgt", "ne"][self.choose(5)];
                    self.define(2, format!("arith.cmpi {p}, {a}, {b} : {t}"));
                }
            }
            3 => {
                let to = self.choose(4);
                let a = self.pick(ty);
                let (cast, result) = match (ty, to) {
                    (3, 3) => (format!("math.sqrt {a} : f32"), 3),
                    (3, 1) | (3, 0) => (format!("arith.fptosi {a} : f32 to i32"), 0),
                    (3, _) => (format!("arith.fptoui {a} : f32 to i1"), 2),
                    (1, 3) | (1, 1) | (1, 0) => (format!("arith.index_cast {a} : index to i32"), 0),
                    (1, _) => (format!("arith.index_cast {a} : index to i1"), 2),
                    (_, 3) => (format!("arith.sitofp {a} : {t} to f32"), 3),
                    (_, 1) => (format!("arith.index_castui {a} : {t} to index"), 1),
                    (0, 2) => (format!("arith.trunci {a} : i32 to i1"), 2),
                    (2, 0) => (format!("arith.extsi {a} : i1 to i32"), 0),
                    _ => (format!("arith.bitcast {a} : {t} to {t}"), ty),
                };
                self.define(result, cast);
            }
            4 => {
                let c = self.pick(2);
                let (a, b) = (self.pick(ty), self.pick(ty));
                self.define(ty, format!("arith.select {c}, {a}, {b} : {t}"));
            }
            5 => {
                // Loads and stores through a buffer that may be either of two.
                let (buffer, element) = if ty == 3 { ("%f", "f32") } else { ("%a", "i32") };
                let other = if ty == 3 { "%g" } else { "%b" };
                let c = self.pick(2);
                let chosen = self.fresh();
                self.line(&format!("{chosen} = arith.select {c}, {buffer}, {other} : memref<?x{element}>"));
                let loaded =
                    self.define(if ty == 3 { 3 } else { 0 }, format!("buffer.load {chosen}[%i] : memref<?x{element}>"));
                self.line(&format!("buffer.store {loaded}, {buffer}[%i] : memref<?x{element}>"));
            }
            6 => {
                let (buffer, element, v) =
                    if ty == 3 { ("%f", "f32", self.pick(3)) } else { ("%a", "i32", self.pick(0)) };
                let kind = ["add", "max", "min", "exchange"][self.choose(4)];
                self.define(
                    if ty == 3 { 3 } else { 0 },
                    format!("kernel.atomic_rmw {kind} {buffer}[%i], {v} : memref<?x{element}>"),
                );
            }
            7 => {
                let a = self.pick(0);
                self.define(0, format!("kernel.call @helper({a}) : (i32) -> i32"));
            }
            8 | 9 => {
                // scf.if with a result of type `ty`.
                let c = self.pick(2);
                let name = self.fresh();
                self.line(&format!("{name} = scf.if {c} -> ({t}) {{"));
                for branch in 0..2 {
                    let scope = self.scope();
                    self.depth += 1;
                    self.block(3);
                    let y = self.pick(ty);
                    self.line(&format!("scf.yield {y} : {t}"));
                    self.depth -= 1;
                    self.leave(scope);
                    self.line(if branch == 0 { "} else {" } else { "}" });
                }
                self.values[ty].push(name);
            }
            10 => {
                // scf.for carrying a value of type `ty`.
                let init = self.pick(ty);
                let name = self.fresh();
                let acc = self.fresh();
                let k = self.fresh();
                self.line(&format!("{name} = scf.for {k} = %c0 to %n step %c1 iter_args({acc} = {init}) -> ({t}) {{"));
                let scope = self.scope();
                self.values[ty].push(acc);
                self.values[1].push(k);
                self.depth += 1;
                self.block(3);
                let y = self.pick(ty);
                self.line(&format!("scf.yield {y} : {t}"));
                self.depth -= 1;
                self.leave(scope);
                self.line("}");
                self.values[ty].push(name);
            }
            _ => {
                // scf.while counting down an index.
                let start = self.pick(1);
                let name = self.fresh();
                let (x, y) = (self.fresh(), self.fresh());
                self.line(&format!("{name} = scf.while ({x} = {start}) : (index) -> index {{"));
                self.depth += 1;
                let more = self.fresh();
                self.line(&format!("{more} = arith.cmpi ugt, {x}, %c0 : index"));
                self.line(&format!("scf.condition({more}) {x} : index"));
                self.depth -= 1;
                self.line("} do {");
                self.line(&format!("^bb0({y}: index):"));
                let scope = self.scope();
                self.values[1].push(y.clone());
                self.depth += 1;
                self.block(2);
                let next = self.fresh();
                self.line(&format!("{next} = arith.subi {y}, %c1 : index"));
                self.line(&format!("scf.yield {next} : index"));
                self.depth -= 1;
                self.leave(scope);
                self.line("}");
                self.values[1].push(name);
            }
        }
    }
}

/// A kernel from `choices`, with a barrier when `barrier`.
fn kernel(choices: &[u8], barrier: bool) -> String {
    let mut generator = Generator {
        choices,
        at: 0,
        next: 0,
        out: String::new(),
        values: [
            vec!["%x".to_string()],
            vec!["%i".to_string(), "%n".to_string()],
            vec!["%p".to_string()],
            vec!["%s".to_string()],
        ],
        depth: 0,
    };
    if barrier {
        generator.line("kernel.barrier");
    }
    generator.block(usize::MAX);
    format!(
        "kernel.helper @helper(%h: i32) -> i32 {{
  %h2 = arith.muli %h, %h : i32
  kernel.return %h2 : i32
}}
kernel.func @random(%a: memref<?xi32>, %b: memref<?xi32>, %f: memref<?xf32>, %g: memref<?xf32>, %x: i32, %p: i1, %s: f32) workgroup(32) {{
  %i = kernel.global_id x
  %n = buffer.dim %a, 0 : memref<?xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
{}  kernel.return
}}",
        generator.out
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_kernels_lower_to_valid_modules(choices in proptest::collection::vec(any::<u8>(), 0..120), barrier in any::<bool>()) {
        let text = kernel(&choices, barrier);
        let wide = hat_lowering::LoweringOptions {
            features: hat_lowering::DeviceFeatures::all(),
            index_width: hat_lowering::IndexWidth::Bits64,
            ..Default::default()
        };
        for options in [hat_lowering::LoweringOptions::default(), wide] {
            let spirv = support::lower_with(&text, &options);
            prop_assert!(spirv.is_ok(), "{}\n{}", spirv.as_ref().err().cloned().unwrap_or_default(), text);
            // The command-line validator too, when it is installed (it panics with its message).
            support::spirv_val(&spirv.expect("lowered").words);
        }
    }
}

#[test]
fn a_few_random_kernels_pass_spirv_val_too() {
    for seed in 0..8u8 {
        let choices: Vec<u8> =
            (0..80u32).map(|i| (i.wrapping_mul(37).wrapping_add(seed as u32 * 101) % 251) as u8).collect();
        let spirv = support::lower(&kernel(&choices, seed % 2 == 0));
        assert!(!spirv.words.is_empty());
    }
}

#[test]
fn the_generator_reaches_every_construct() {
    let mut seen = String::new();
    for seed in 0..64u32 {
        let choices: Vec<u8> = (0..120u32).map(|i| ((i * 7919 + seed * 104_729) % 256) as u8).collect();
        seen.push_str(&kernel(&choices, false));
    }
    for construct in [
        "scf.if",
        "scf.for",
        "scf.while",
        "kernel.atomic_rmw",
        "kernel.call",
        "buffer.load",
        "arith.cmpf",
        "arith.select",
    ] {
        assert!(seen.contains(construct), "no {construct} in\n{seen}");
    }
}
