//! Random kernels for tests: a small grammar of loads from `%src` and stores into `%dst` at
//! indices affine in the work-item ids and a loop variable (with divisions, remainders, clamps and
//! indices read from data), under random guards, inside a counted loop or not, through a helper
//! or not, with a random grid and workgroup size (often one that does not divide the grid) and
//! sometimes a barrier. [`case`] draws a [`Case`]; [`kernel_text`] writes it as a module holding
//! the kernel `@k(%src, %dst)` (and the helper `@put` when it stores through one).
//!
//! `tests/kernel_effects_soundness.rs` runs the cases against the kernel-effects analysis,
//! `tests/lowering_generated_kernels.rs` lowers them to SPIR-V.

#![allow(dead_code)]

use proptest::prelude::*;
use std::fmt::Write;

/// What an index is made of.
#[derive(Clone, Debug)]
pub enum Index {
    /// `coefficient × variable + offset`.
    Affine { variable: Variable, coefficient: i64, offset: i64 },
    /// A division or remainder (unsigned) by a constant.
    DivRem { inner: Box<Index>, divisor: i64, remainder: bool },
    /// Clamped to `[low, high]` with `maxsi` / `minsi`.
    Clamp { inner: Box<Index>, low: i64, high: i64 },
    /// The sum of two.
    Sum(Box<Index>, Box<Index>),
    /// The loaded value, as an index, modulo the dimension (only where a value was loaded).
    Data,
}

#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Variable {
    X,
    Y,
    LocalX,
    GroupX,
    Loop,
}

/// `lhs predicate bound`, where the bound is a constant or a dimension of `%dst`.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub lhs: Index,
    pub predicate: &'static str,
    pub bound: Bound,
}

#[derive(Clone, Debug)]
pub enum Bound {
    Constant(i64),
    /// `buffer.dim %dst, k`, plus an offset.
    Dim(usize, i64),
}

#[derive(Clone, Debug)]
pub struct Case {
    pub src_shape: Vec<usize>,
    pub dst_shape: Vec<usize>,
    pub grid: [u64; 2],
    pub workgroup: [u64; 2],
    /// Guards (joined by `andi`, or by `ori` when `any`), around everything.
    pub guards: Vec<Comparison>,
    pub any: bool,
    /// A counted loop `lower..upper step step` around the load and store.
    pub for_loop: Option<(i64, i64, i64)>,
    /// Store only where the loaded value is above this.
    pub data_guard: Option<i64>,
    /// Load only where the read indices are in bounds (`ult` the dimensions).
    pub read_in_bounds: bool,
    /// Store only where the write indices are in bounds.
    pub write_in_bounds: bool,
    pub read: Vec<Index>,
    pub write: Vec<Index>,
    pub through_helper: bool,
    /// A `kernel.barrier` first: work items past the grid then run (as padding).
    pub barrier: bool,
}

pub fn variable() -> impl Strategy<Value = Variable> {
    prop_oneof![
        4 => Just(Variable::X),
        3 => Just(Variable::Y),
        1 => Just(Variable::LocalX),
        1 => Just(Variable::GroupX),
        2 => Just(Variable::Loop),
    ]
}

pub fn index(data: bool) -> impl Strategy<Value = Index> {
    // Mostly plain ids, so that many kernels stay in bounds and some write everything.
    let coefficient = prop_oneof![6 => Just(1i64), 1 => Just(2), 1 => Just(0), 1 => Just(-1)];
    let offset = prop_oneof![6 => Just(0i64), 1 => -2i64..=2];
    let affine = (variable(), coefficient, offset).prop_map(|(variable, coefficient, offset)| Index::Affine {
        variable,
        coefficient,
        offset,
    });
    let leaf = if data { prop_oneof![8 => affine, 1 => Just(Index::Data)].boxed() } else { affine.boxed() };
    let nested = leaf.clone().prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            (inner.clone(), 2i64..=4, any::<bool>()).prop_map(|(inner, divisor, remainder)| Index::DivRem {
                inner: Box::new(inner),
                divisor,
                remainder
            }),
            (inner.clone(), 0i64..=2, 3i64..=12).prop_map(|(inner, low, high)| Index::Clamp {
                inner: Box::new(inner),
                low,
                high
            }),
            (inner.clone(), inner).prop_map(|(a, b)| Index::Sum(Box::new(a), Box::new(b))),
        ]
    });
    prop_oneof![3 => leaf, 1 => nested]
}

pub fn comparison() -> impl Strategy<Value = Comparison> {
    let predicate = prop_oneof![
        Just("ult"),
        Just("ule"),
        Just("slt"),
        Just("sle"),
        Just("sgt"),
        Just("sge"),
        Just("uge"),
        Just("eq"),
        Just("ne")
    ];
    let bound =
        prop_oneof![(0i64..=16).prop_map(Bound::Constant), (0usize..2, -1i64..=1).prop_map(|(k, o)| Bound::Dim(k, o))];
    (index(false), predicate, bound).prop_map(|(lhs, predicate, bound)| Comparison { lhs, predicate, bound })
}

pub fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..=12, 1..=2)
}

pub fn case() -> impl Strategy<Value = Case> {
    let workgroup = (prop_oneof![Just(1u64), Just(2), Just(4), Just(8)], prop_oneof![Just(1u64), Just(2), Just(4)]);
    let random_grid = prop::option::weighted(0.5, [0u64..=14, 0u64..=14]);
    (shape(), shape(), random_grid, workgroup, prop::bool::weighted(0.3))
        .prop_flat_map(|(src_shape, dst_shape, grid, (wx, wy), partial)| {
            let workgroup = [wx, wy];
            // Half the grids are shaped like %dst (x along a row).
            let mut grid = grid.unwrap_or_else(|| {
                let mut shape = dst_shape.iter().rev().map(|&d| d as u64);
                [shape.next().unwrap_or(1), shape.next().unwrap_or(1)]
            });
            // Some end one work item short of whole workgroups: the last workgroup of each
            // dimension whose workgroups hold several work items is partial.
            if partial {
                for d in 0..2 {
                    if workgroup[d] > 1 {
                        grid[d] = grid[d].max(1).next_multiple_of(workgroup[d]) - 1;
                    }
                }
            }
            let guards = prop::collection::vec(comparison(), 0..=2);
            let grid = Just(grid);
            let for_loop = prop::option::of((0i64..=2, 0i64..=5, 1i64..=2));
            let data_guard = prop::option::weighted(0.2, 0i64..=20);
            let read = prop::collection::vec(index(false), src_shape.len());
            let write = prop::collection::vec(index(true), dst_shape.len());
            (
                (Just(src_shape), Just(dst_shape), grid, Just(workgroup)),
                guards,
                any::<bool>(),
                for_loop,
                data_guard,
                read,
                write,
                (prop::bool::weighted(0.3), prop::bool::weighted(0.6), prop::bool::weighted(0.6)),
                prop::bool::weighted(0.25),
            )
        })
        .prop_map(
            |(
                (src_shape, dst_shape, grid, workgroup),
                guards,
                any,
                for_loop,
                data_guard,
                read,
                write,
                (through_helper, read_in_bounds, write_in_bounds),
                barrier,
            )| Case {
                src_shape,
                dst_shape,
                grid,
                workgroup,
                guards,
                any,
                for_loop,
                data_guard,
                read_in_bounds,
                write_in_bounds,
                read,
                write,
                through_helper,
                barrier,
            },
        )
}

/// Writes the IR of a kernel, one SSA value at a time.
pub struct Emitter {
    pub text: String,
    pub next: usize,
    pub indent: usize,
}

impl Emitter {
    pub fn line(&mut self, line: &str) {
        let _ = writeln!(self.text, "{}{line}", "  ".repeat(self.indent));
    }

    pub fn value(&mut self, definition: &str) -> String {
        let name = format!("%v{}", self.next);
        self.next += 1;
        self.line(&format!("{name} = {definition}"));
        name
    }

    /// `indices[k] <u dim(buffer, k)` for every `k`, joined.
    pub fn in_bounds(&mut self, buffer: &str, ty: &str, indices: &[String]) -> String {
        let mut joined: Option<String> = None;
        for (k, index) in indices.iter().enumerate() {
            let dim = self.value(&format!("buffer.dim {buffer}, {k} : {ty}"));
            let check = self.value(&format!("arith.cmpi ult, {index}, {dim} : index"));
            joined = Some(match joined {
                Some(previous) => self.value(&format!("arith.andi {previous}, {check} : i1")),
                None => check,
            });
        }
        joined.expect("a buffer has a dimension")
    }

    pub fn constant(&mut self, value: i64) -> String {
        self.value(&format!("arith.constant {value} : index"))
    }

    pub fn index(&mut self, index: &Index, data: Option<(&str, usize)>, in_loop: bool) -> String {
        match index {
            Index::Affine { variable, coefficient, offset } => {
                let base = match variable {
                    Variable::X => "%x",
                    Variable::Y => "%y",
                    Variable::LocalX => "%lx",
                    Variable::GroupX => "%gx",
                    Variable::Loop if in_loop => "%k",
                    Variable::Loop => "%x",
                };
                let c = self.constant(*coefficient);
                let scaled = self.value(&format!("arith.muli {base}, {c} : index"));
                let o = self.constant(*offset);
                self.value(&format!("arith.addi {scaled}, {o} : index"))
            }
            Index::DivRem { inner, divisor, remainder } => {
                let e = self.index(inner, data, in_loop);
                let d = self.constant(*divisor);
                let op = if *remainder { "remui" } else { "divui" };
                self.value(&format!("arith.{op} {e}, {d} : index"))
            }
            Index::Clamp { inner, low, high } => {
                let e = self.index(inner, data, in_loop);
                let l = self.constant(*low);
                let h = self.constant(*high);
                let raised = self.value(&format!("arith.maxsi {e}, {l} : index"));
                self.value(&format!("arith.minsi {raised}, {h} : index"))
            }
            Index::Sum(a, b) => {
                let a = self.index(a, data, in_loop);
                let b = self.index(b, data, in_loop);
                self.value(&format!("arith.addi {a}, {b} : index"))
            }
            Index::Data => {
                let (loaded, size) = data.expect("data indices only after the load");
                let wide = self.value(&format!("arith.index_cast {loaded} : i32 to index"));
                let n = self.constant(size as i64);
                self.value(&format!("arith.remui {wide}, {n} : index"))
            }
        }
    }
}

pub fn memref(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("memref<{}xi32>", dims.join("x"))
}

pub fn kernel_text(case: &Case) -> String {
    let (src, dst) = (memref(&case.src_shape), memref(&case.dst_shape));
    let mut e = Emitter { text: String::new(), next: 0, indent: 1 };
    if case.through_helper {
        let indices: Vec<String> = (0..case.dst_shape.len()).map(|k| format!("%i{k}: index")).collect();
        let names: Vec<String> = (0..case.dst_shape.len()).map(|k| format!("%i{k}")).collect();
        let _ = writeln!(
            e.text,
            "kernel.helper @put(%b: {dst}, {}, %w: i32) {{\n  buffer.store %w, %b[{}] : {dst}\n  kernel.return\n}}",
            indices.join(", "),
            names.join(", ")
        );
    }
    let [wx, wy] = case.workgroup;
    let _ = writeln!(e.text, "kernel.func @k(%src: {src}, %dst: {dst}) workgroup({wx}, {wy}) {{");
    for line in
        ["%x = kernel.global_id x", "%y = kernel.global_id y", "%lx = kernel.local_id x", "%gx = kernel.group_id x"]
    {
        e.line(line);
    }
    if case.barrier {
        e.line("kernel.barrier");
    }
    let mut conditions = Vec::new();
    for guard in &case.guards {
        let lhs = e.index(&guard.lhs, None, false);
        let rhs = match guard.bound {
            Bound::Constant(c) => e.constant(c),
            Bound::Dim(k, offset) => {
                let k = k.min(case.dst_shape.len() - 1);
                let dim = e.value(&format!("buffer.dim %dst, {k} : {dst}"));
                let o = e.constant(offset);
                e.value(&format!("arith.addi {dim}, {o} : index"))
            }
        };
        conditions.push(e.value(&format!("arith.cmpi {}, {lhs}, {rhs} : index", guard.predicate)));
    }
    let mut closes = 0;
    if let Some(first) = conditions.first().cloned() {
        let joined = conditions[1..].iter().fold(first, |acc, c| {
            let op = if case.any { "ori" } else { "andi" };
            e.value(&format!("arith.{op} {acc}, {c} : i1"))
        });
        e.line(&format!("scf.if {joined} {{"));
        e.indent += 1;
        closes += 1;
    }
    let in_loop = case.for_loop.is_some();
    if let Some((lower, upper, step)) = case.for_loop {
        let (l, u, s) = (e.constant(lower), e.constant(upper), e.constant(step));
        e.line(&format!("scf.for %k = {l} to {u} step {s} {{"));
        e.indent += 1;
        closes += 1;
    }
    let read: Vec<String> = case.read.iter().map(|i| e.index(i, None, in_loop)).collect();
    if case.read_in_bounds {
        let check = e.in_bounds("%src", &src, &read);
        e.line(&format!("scf.if {check} {{"));
        e.indent += 1;
        closes += 1;
    }
    let loaded = e.value(&format!("buffer.load %src[{}] : {src}", read.join(", ")));
    if let Some(threshold) = case.data_guard {
        let t = e.value(&format!("arith.constant {threshold} : i32"));
        let above = e.value(&format!("arith.cmpi sgt, {loaded}, {t} : i32"));
        e.line(&format!("scf.if {above} {{"));
        e.indent += 1;
        closes += 1;
    }
    let write: Vec<String> =
        case.write.iter().zip(&case.dst_shape).map(|(i, &size)| e.index(i, Some((&loaded, size)), in_loop)).collect();
    if case.write_in_bounds {
        let check = e.in_bounds("%dst", &dst, &write);
        e.line(&format!("scf.if {check} {{"));
        e.indent += 1;
        closes += 1;
    }
    let one = e.value("arith.constant 1 : i32");
    let stored = e.value(&format!("arith.addi {loaded}, {one} : i32"));
    if case.through_helper {
        let types = vec!["index"; write.len()].join(", ");
        e.line(&format!("kernel.call @put(%dst, {}, {stored}) : ({dst}, {types}, i32) -> ()", write.join(", ")));
    } else {
        e.line(&format!("buffer.store {stored}, %dst[{}] : {dst}", write.join(", ")));
    }
    for _ in 0..closes {
        e.indent -= 1;
        e.line("}");
    }
    e.line("kernel.return");
    e.text.push_str("}\n");
    e.text
}
