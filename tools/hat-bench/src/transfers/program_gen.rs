//! Generated compute programs for the cost of transfer planning: a given number of dispatches
//! over a given number of buffers, written the way users write them.
//!
//! `@main(%n: index, %b0, ..., %bP)` takes 9/10 of the buffers (`memref<64xi32>`) and allocates
//! the rest (`%t0`, ...: buffers born in the program, which the host never touches). Its body is
//! a sequence of segments, each working on a window of 8 neighbouring buffers (so that, over the
//! program, every buffer is used) inside 0 to 3 nested `scf.for`s (the outermost bound by `%n`
//! half the time, else a constant 2 to 4; inner ones by constants). A segment's body holds 2 to
//! 8 items, each one of:
//!
//! - a dispatch of one of six kernels: `@k_copy` (reads one buffer, writes every element of
//!   another), `@k_fill` (writes every element), `@k_step` (reads and writes), `@k_mix` (reads
//!   two, reads and writes a third), `@k_even` (writes the even elements only: a partial write)
//!   and `@k_reduce` (reads one, writes one element of another: a partial write);
//! - a host load of a constant element (or, inside a loop, of the element at the induction
//!   variable: a sparse host read in a loop) and a store of it plus one into another buffer;
//! - a call of a compute helper (`@helper_J`: five dispatches and a host access on its four
//!   buffer parameters), the helpers taken in turn so that each is called from several places;
//! - a call of a host function declared to read (`@observe`) or to read and write (`@edit`);
//! - an `scf.if` on an element the host loads, around a dispatch.
//!
//! The dispatches written in the text are the requested number exactly: one hundredth of it, at
//! least one, are the helpers' bodies (5 each), the rest are in `@main`. Arguments of one
//! dispatch or call are distinct buffers (no aliasing). Everything comes from one seeded
//! xorshift sequence: the same shape and seed give the same text.

use std::fmt::Write as _;

/// The size of a generated program.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Dispatch ops written in the text (the helpers' bodies counted once).
    pub dispatches: usize,
    /// Buffers: the entry's buffer parameters and those it allocates.
    pub buffers: usize,
    /// The seed of the choices.
    pub seed: u64,
}

/// What the generator wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Generated {
    /// The program.
    pub text: String,
    /// Dispatch ops in the text.
    pub dispatches: usize,
    /// Dispatch ops once every helper call is inlined.
    pub dispatches_inlined: usize,
    /// Compute helpers.
    pub helpers: usize,
    /// Calls of compute helpers.
    pub helper_calls: usize,
    /// `scf.for` ops.
    pub loops: usize,
    /// `scf.if` ops.
    pub branches: usize,
    /// Host loads and stores.
    pub host_accesses: usize,
    /// Calls of the declared host functions.
    pub host_function_calls: usize,
}

const TY: &str = "memref<64xi32>";
/// Dispatches in each helper's body.
const HELPER_DISPATCHES: usize = 5;
/// Buffer parameters of each helper.
const HELPER_PARAMS: usize = 4;
/// Buffers a segment works on.
const WINDOW: usize = 8;

const KERNELS: &str = r#"kernel.func @k_copy(%src: memref<64xi32>, %dst: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %n = buffer.dim %dst, 0 : memref<64xi32>
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    %v = buffer.load %src[%i] : memref<64xi32>
    buffer.store %v, %dst[%i] : memref<64xi32>
  }
  kernel.return
}

kernel.func @k_fill(%dst: memref<64xi32>, %x: i32) workgroup(64) {
  %i = kernel.global_id x
  %n = buffer.dim %dst, 0 : memref<64xi32>
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    buffer.store %x, %dst[%i] : memref<64xi32>
  }
  kernel.return
}

kernel.func @k_step(%a: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %n = buffer.dim %a, 0 : memref<64xi32>
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    %three = arith.constant 3 : i32
    %one = arith.constant 1 : i32
    %v = buffer.load %a[%i] : memref<64xi32>
    %t = arith.muli %v, %three : i32
    %r = arith.addi %t, %one : i32
    buffer.store %r, %a[%i] : memref<64xi32>
  }
  kernel.return
}

kernel.func @k_mix(%a: memref<64xi32>, %b: memref<64xi32>, %c: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %n = buffer.dim %c, 0 : memref<64xi32>
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    %x = buffer.load %a[%i] : memref<64xi32>
    %y = buffer.load %b[%i] : memref<64xi32>
    %z = buffer.load %c[%i] : memref<64xi32>
    %p = arith.muli %x, %y : i32
    %r = arith.addi %z, %p : i32
    buffer.store %r, %c[%i] : memref<64xi32>
  }
  kernel.return
}

kernel.func @k_even(%dst: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %n = buffer.dim %dst, 0 : memref<64xi32>
  %in = arith.cmpi ult, %i, %n : index
  %r = arith.remui %i, %c2 : index
  %even = arith.cmpi eq, %r, %c0 : index
  %both = arith.andi %in, %even : i1
  scf.if %both {
    %v = arith.index_cast %i : index to i32
    buffer.store %v, %dst[%i] : memref<64xi32>
  }
  kernel.return
}

kernel.func @k_reduce(%src: memref<64xi32>, %out: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %c0 = arith.constant 0 : index
  %c63 = arith.constant 63 : index
  %first = arith.cmpi eq, %i, %c0 : index
  scf.if %first {
    %a = buffer.load %src[%c0] : memref<64xi32>
    %b = buffer.load %src[%c63] : memref<64xi32>
    %s = arith.addi %a, %b : i32
    buffer.store %s, %out[%c0] : memref<64xi32>
  }
  kernel.return
}

compute.host_func @observe(read memref<64xi32>)
compute.host_func @edit(readwrite memref<64xi32>)

"#;

/// (kernel, buffer arguments, takes the scalar `%one`), with the weight of each.
const DISPATCHES: &[(&str, usize, bool, u64)] = &[
    ("k_copy", 2, false, 25),
    ("k_fill", 1, true, 10),
    ("k_step", 1, false, 25),
    ("k_mix", 3, false, 20),
    ("k_even", 1, false, 10),
    ("k_reduce", 2, false, 10),
];

/// The constants every compute function defines first.
const CONSTANTS: &str = "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  \
                         %c2 = arith.constant 2 : index\n  %c3 = arith.constant 3 : index\n  \
                         %c4 = arith.constant 4 : index\n  %c64 = arith.constant 64 : index\n  \
                         %one = arith.constant 1 : i32\n  %zero = arith.constant 0 : i32\n";

struct Writer {
    text: String,
    seed: u64,
    fresh: usize,
    stats: Generated,
}

impl Writer {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.seed ^= self.seed >> 12;
        self.seed ^= self.seed << 25;
        self.seed ^= self.seed >> 27;
        self.seed.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("%{prefix}{}", self.fresh)
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth + 1 {
            self.text.push_str("  ");
        }
        self.text.push_str(text);
        self.text.push('\n');
    }

    /// `k` distinct buffers of `pool`.
    fn distinct(&mut self, pool: &[String], k: usize) -> Vec<String> {
        let mut chosen: Vec<usize> = Vec::new();
        while chosen.len() < k.min(pool.len()) {
            let i = self.below(pool.len());
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        chosen.into_iter().map(|i| pool[i].clone()).collect()
    }

    fn dispatch(&mut self, depth: usize, pool: &[String]) {
        let total: u64 = DISPATCHES.iter().map(|d| d.3).sum();
        let mut pick = self.next() % total;
        let &(kernel, arity, scalar, _) = DISPATCHES
            .iter()
            .find(|d| {
                let hit = pick < d.3;
                pick = pick.saturating_sub(d.3);
                hit
            })
            .expect("a kernel");
        let mut args = self.distinct(pool, arity);
        let mut types = vec![TY; args.len()];
        if scalar {
            args.push("%one".to_string());
            types.push("i32");
        }
        let line = format!("compute.dispatch @{kernel}[%c64]({}) : ({})", args.join(", "), types.join(", "));
        self.line(depth, &line);
        self.stats.dispatches += 1;
    }

    /// A host load and a store of it plus one; at an induction variable's element when given.
    fn host_access(&mut self, depth: usize, pool: &[String], index: Option<&str>) {
        let [from, to] = <[String; 2]>::try_from(self.distinct(pool, 2)).expect("two buffers");
        let element = match index {
            Some(iv) => iv.to_string(),
            None => format!("%c{}", self.below(4)),
        };
        let (v, w) = (self.name("v"), self.name("w"));
        self.line(depth, &format!("{v} = buffer.load {from}[{element}] : {TY}"));
        self.line(depth, &format!("{w} = arith.addi {v}, %one : i32"));
        let target = format!("%c{}", self.below(4));
        self.line(depth, &format!("buffer.store {w}, {to}[{target}] : {TY}"));
        self.stats.host_accesses += 2;
    }

    fn branch(&mut self, depth: usize, pool: &[String], host: &[String]) {
        let [tested] = <[String; 1]>::try_from(self.distinct(host, 1)).expect("one buffer");
        let (v, p) = (self.name("v"), self.name("p"));
        self.line(depth, &format!("{v} = buffer.load {tested}[%c1] : {TY}"));
        self.line(depth, &format!("{p} = arith.cmpi sgt, {v}, %zero : i32"));
        self.line(depth, &format!("scf.if {p} {{"));
        self.dispatch(depth + 1, pool);
        self.line(depth, "}");
        self.stats.host_accesses += 1;
        self.stats.branches += 1;
    }

    fn helper(&mut self, index: usize) {
        let params: Vec<String> = (0..HELPER_PARAMS).map(|k| format!("%x{k}")).collect();
        let signature: Vec<String> = params.iter().map(|p| format!("{p}: {TY}")).collect();
        writeln!(self.text, "compute.func @helper_{index}({}) {{\n{CONSTANTS}", signature.join(", "))
            .expect("writing to a String");
        for k in 0..HELPER_DISPATCHES {
            self.dispatch(0, &params);
            if k == 2 {
                self.host_access(0, &params, None);
            }
        }
        self.text.push_str("  compute.return\n}\n\n");
    }
}

/// The program of `shape` (see the module documentation).
pub fn generate(shape: Shape) -> Generated {
    let buffers = shape.buffers.max(4);
    let allocated = buffers / 10;
    let params = buffers - allocated;
    let names: Vec<String> =
        (0..params).map(|k| format!("%b{k}")).chain((0..allocated).map(|k| format!("%t{k}"))).collect();
    let helpers = (shape.dispatches / 100).max(1).min(shape.dispatches / HELPER_DISPATCHES);
    let mut w = Writer {
        text: String::from(KERNELS),
        seed: shape.seed.max(1),
        fresh: 0,
        stats: Generated { helpers, ..Generated::default() },
    };
    for j in 0..helpers {
        w.helper(j);
    }
    let signature: Vec<String> = names[..params].iter().map(|b| format!("{b}: {TY}")).collect();
    writeln!(w.text, "compute.func @main(%n: index, {}) {{\n{CONSTANTS}", signature.join(", "))
        .expect("writing to a String");
    for t in &names[params..] {
        w.line(0, &format!("{t} = buffer.alloc() : {TY}"));
    }
    let mut next_helper = 0;
    while w.stats.dispatches < shape.dispatches {
        let start = w.below(buffers);
        let pool: Vec<String> = (0..WINDOW.min(buffers)).map(|k| names[(start + k) % buffers].clone()).collect();
        let host: Vec<String> = pool.iter().filter(|b| b.starts_with("%b")).cloned().collect();
        let host = if host.len() >= 2 { host } else { names[..2].to_vec() };
        let depth = w.below(4);
        let mut ivs = Vec::new();
        for d in 0..depth {
            let bound = if d == 0 && w.below(2) == 0 { "%n".to_string() } else { format!("%c{}", 2 + w.below(3)) };
            let iv = w.name("i");
            w.line(d, &format!("scf.for {iv} = %c0 to {bound} step %c1 {{"));
            ivs.push(iv);
            w.stats.loops += 1;
        }
        let items = 2 + w.below(7);
        for _ in 0..items {
            if w.stats.dispatches >= shape.dispatches {
                break;
            }
            match w.below(100) {
                87..=89 if helpers > 0 => {
                    let args = w.distinct(&pool, HELPER_PARAMS);
                    let line = format!(
                        "compute.call @helper_{}({}) : ({}) -> ()",
                        next_helper % helpers,
                        args.join(", "),
                        [TY; HELPER_PARAMS].join(", ")
                    );
                    w.line(depth, &line);
                    next_helper += 1;
                    w.stats.helper_calls += 1;
                }
                0..=74 | 87..=89 => w.dispatch(depth, &pool),
                75..=86 => {
                    let iv = if ivs.is_empty() || w.below(2) == 0 { None } else { Some(ivs[ivs.len() - 1].clone()) };
                    w.host_access(depth, &host, iv.as_deref());
                }
                90..=94 => {
                    let [b] = <[String; 1]>::try_from(w.distinct(&host, 1)).expect("one buffer");
                    let callee = if w.below(2) == 0 { "observe" } else { "edit" };
                    w.line(depth, &format!("compute.call @{callee}({b}) : ({TY}) -> ()"));
                    w.stats.host_function_calls += 1;
                }
                _ => w.branch(depth, &pool, &host),
            }
        }
        for d in (0..depth).rev() {
            w.line(d, "}");
        }
    }
    w.text.push_str("  compute.return\n}\n");
    w.stats.dispatches_inlined =
        w.stats.dispatches - helpers * HELPER_DISPATCHES + w.stats.helper_calls * HELPER_DISPATCHES;
    Generated { text: w.text, ..w.stats }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfers::scenarios::{arguments, difference, load, run};
    use hat_runtime::TransferMode;

    #[test]
    fn the_text_has_the_dispatches_and_calls_it_reports() {
        for (dispatches, buffers) in [(1, 4), (60, 20), (1000, 1000)] {
            let g = generate(Shape { dispatches, buffers, seed: 7 });
            assert_eq!(g.text.matches("compute.dispatch @").count(), dispatches, "{dispatches} dispatches");
            assert_eq!(g.dispatches, dispatches);
            assert_eq!(g.text.matches("compute.call @helper_").count(), g.helper_calls);
            assert_eq!(g.text.matches("compute.func @helper_").count(), g.helpers);
            assert_eq!(g.text.matches("scf.for ").count(), g.loops);
            assert_eq!(g.text.matches("scf.if %p").count(), g.branches);
            assert_eq!(g.dispatches_inlined, dispatches - 5 * g.helpers + 5 * g.helper_calls);
            assert_eq!(g.text.matches(" = buffer.alloc()").count(), buffers / 10);
        }
        let big = generate(Shape { dispatches: 10_000, buffers: 1000, seed: 1 });
        assert_eq!(big.helpers, 100);
        assert!(big.helper_calls >= 2 * big.helpers, "each helper is called from several places");
        assert!(big.loops > 0 && big.branches > 0 && big.host_accesses > 0 && big.host_function_calls > 0);
        // Every buffer is used.
        let used =
            (0..900).filter(|k| big.text.contains(&format!("%b{k},")) || big.text.contains(&format!("%b{k})"))).count();
        assert_eq!(used, 900);
    }

    #[test]
    fn the_same_shape_gives_the_same_text() {
        let shape = Shape { dispatches: 200, buffers: 50, seed: 5 };
        assert_eq!(generate(shape), generate(shape));
        assert_ne!(generate(shape).text, generate(Shape { seed: 6, ..shape }).text);
    }

    #[test]
    fn a_generated_program_runs_and_every_plan_gives_the_reference_results() {
        let text = generate(Shape { dispatches: 80, buffers: 12, seed: 11 }).text;
        let (ctx, module) = load("generated.hat", &text, None).expect("parses and verifies");
        let args = arguments(&ctx, module, &[("n", 3)]).expect("arguments");
        let reference = run(&ctx, module, TransferMode::Reference, args.clone()).expect("runs");
        assert!(reference.report.dispatches > 80, "the loops repeat dispatches: {}", reference.report.dispatches);
        for pipeline in ["insert-transfers{strategy=jic}", "insert-transfers{strategy=static}"] {
            let (ctx, module) = load("generated.hat", &text, Some(pipeline)).expect("plans");
            let planned = run(&ctx, module, TransferMode::Explicit, args.clone()).expect("runs");
            assert_eq!(difference(&planned, &reference), None, "{pipeline}");
            assert!(planned.report.total_bytes() > 0, "{pipeline}");
        }
    }
}
