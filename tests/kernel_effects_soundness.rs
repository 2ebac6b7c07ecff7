//! The kernel-effects analysis checked against the CPU reference backend on random kernels.
//!
//! Each case is a kernel that loads from `%src` and stores what it loaded plus one into `%dst`,
//! at indices drawn from a small grammar (affine in the global, local and group ids and a loop
//! variable; divisions, remainders, clamps; indices read from data), under random guards (on
//! ids, on buffer dimensions, on loaded data), possibly inside a counted loop, possibly through
//! a helper; and a random grid and workgroup size — often a grid that is not a multiple of the
//! workgroup size, whose last workgroup has work items past the grid, which must touch no buffer
//! (docs/lowering.md, "Which work items exist"), and sometimes a barrier, with which those work
//! items run, their buffer accesses skipped. The case runs on the CPU backend, whose fresh device
//! memory holds a poison pattern:
//!
//! - `%src` gets real values only inside the range the analysis says the kernel may read, and
//!   keeps poison elsewhere: a stored value of poison + 1 means a read outside that range;
//! - `%dst` gets nothing: an element that is no longer poison was written, and must lie in the
//!   range the analysis says the kernel may write;
//! - when the analysis says the dispatch writes every element of `%dst`, no poison may remain.
//!
//! A dispatch that fails (an index out of bounds: a kernel bug) is only checked for the
//! elements it wrote. `wrong_claims_are_caught` shows that the checks fail on wrong claims. `PROPTEST_CASES` sets the number of cases (default 256).

use hat_ir::{parse_source, verify_module, Op};
use hat_passes::transfers::kernel_effects::{Dispatch, KernelEffects};
use hat_runtime::{Backend, BufferLayout, CpuBackend, ElementType, KernelArg};
use proptest::prelude::*;
use std::fmt::Write;
use std::ops::Range;

const POISON: i32 = 0xDEAD_BEEFu32 as i32;

/// What an index is made of.
#[derive(Clone, Debug)]
enum Index {
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
enum Variable {
    X,
    Y,
    LocalX,
    GroupX,
    Loop,
}

/// `lhs predicate bound`, where the bound is a constant or a dimension of `%dst`.
#[derive(Clone, Debug)]
struct Comparison {
    lhs: Index,
    predicate: &'static str,
    bound: Bound,
}

#[derive(Clone, Debug)]
enum Bound {
    Constant(i64),
    /// `buffer.dim %dst, k`, plus an offset.
    Dim(usize, i64),
}

#[derive(Clone, Debug)]
struct Case {
    src_shape: Vec<usize>,
    dst_shape: Vec<usize>,
    grid: [u64; 2],
    workgroup: [u64; 2],
    /// Guards (joined by `andi`, or by `ori` when `any`), around everything.
    guards: Vec<Comparison>,
    any: bool,
    /// A counted loop `lower..upper step step` around the load and store.
    for_loop: Option<(i64, i64, i64)>,
    /// Store only where the loaded value is above this.
    data_guard: Option<i64>,
    /// Load only where the read indices are in bounds (`ult` the dimensions).
    read_in_bounds: bool,
    /// Store only where the write indices are in bounds.
    write_in_bounds: bool,
    read: Vec<Index>,
    write: Vec<Index>,
    through_helper: bool,
    /// A `kernel.barrier` first: work items past the grid then run (as padding).
    barrier: bool,
}

fn variable() -> impl Strategy<Value = Variable> {
    prop_oneof![
        4 => Just(Variable::X),
        3 => Just(Variable::Y),
        1 => Just(Variable::LocalX),
        1 => Just(Variable::GroupX),
        2 => Just(Variable::Loop),
    ]
}

fn index(data: bool) -> impl Strategy<Value = Index> {
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

fn comparison() -> impl Strategy<Value = Comparison> {
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

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..=12, 1..=2)
}

fn case() -> impl Strategy<Value = Case> {
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
struct Emitter {
    text: String,
    next: usize,
    indent: usize,
}

impl Emitter {
    fn line(&mut self, line: &str) {
        let _ = writeln!(self.text, "{}{line}", "  ".repeat(self.indent));
    }

    fn value(&mut self, definition: &str) -> String {
        let name = format!("%v{}", self.next);
        self.next += 1;
        self.line(&format!("{name} = {definition}"));
        name
    }

    /// `indices[k] <u dim(buffer, k)` for every `k`, joined.
    fn in_bounds(&mut self, buffer: &str, ty: &str, indices: &[String]) -> String {
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

    fn constant(&mut self, value: i64) -> String {
        self.value(&format!("arith.constant {value} : index"))
    }

    fn index(&mut self, index: &Index, data: Option<(&str, usize)>, in_loop: bool) -> String {
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

fn memref(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("memref<{}xi32>", dims.join("x"))
}

fn kernel_text(case: &Case) -> String {
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

fn elements(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn find_kernel(ctx: &hat_ir::Context, module: Op) -> Op {
    ctx.walk(module).into_iter().find(|&op| hat_ir::verifier::symbol_name(ctx, op) == Some("k")).expect("@k")
}

/// What the analysis claims of a dispatch.
#[derive(Clone, Debug)]
struct Claims {
    read: Option<Range<u64>>,
    written: Option<Range<u64>>,
    every: bool,
}

/// What a run showed: `%dst` after the dispatch, and whether the dispatch succeeded.
struct Run {
    text: String,
    values: Vec<i32>,
    succeeded: bool,
}

/// The analysis' claims on `case`.
fn claims(case: &Case) -> Claims {
    let text = kernel_text(case);
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "case.hat", &text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let effects = KernelEffects::of(&ctx, find_kernel(&ctx, module));
    let dispatch = dispatch(case);
    Claims {
        read: effects.read_elements_in(0, &dispatch),
        written: effects.written_elements_in(1, &dispatch),
        every: effects.writes_every_element_in(1, &dispatch),
    }
}

fn dispatch(case: &Case) -> Dispatch {
    let shape = |s: &[usize]| -> Vec<Option<u64>> { s.iter().map(|&d| Some(d as u64)).collect() };
    Dispatch::new(&[Some(case.grid[0]), Some(case.grid[1])])
        .with_shape(0, &shape(&case.src_shape))
        .with_shape(1, &shape(&case.dst_shape))
}

/// Runs `case` on the CPU backend, `%src` holding values only in `readable` (poison elsewhere).
fn run(case: &Case, readable: &Option<Range<u64>>) -> Run {
    let text = kernel_text(case);
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "case.hat", &text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let verified = verify_module(&ctx, module).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let kernel = find_kernel(&ctx, module);
    let mut backend = CpuBackend::new();
    backend.set_parallel(false);
    let layout = |s: &[usize]| BufferLayout { element: ElementType::I32, shape: s.to_vec() };
    let src = backend.allocate(&layout(&case.src_shape)).expect("allocates");
    let dst = backend.allocate(&layout(&case.dst_shape)).expect("allocates");
    let src_len = elements(&case.src_shape);
    let readable: Range<usize> = match readable {
        Some(r) => (r.start as usize).min(src_len)..(r.end as usize).min(src_len),
        None => 0..src_len,
    };
    if !readable.is_empty() {
        let values: Vec<i32> = readable.clone().map(|i| i as i32 + 1).collect();
        backend.copy_to_device(src, readable.start * 4, &bytes(&values)).expect("copies");
    }
    let handle = backend.compile_kernel(verified.nested(kernel).expect("nested")).expect("compiles");
    let grid = [case.grid[0], case.grid[1], 1];
    let succeeded = backend.dispatch(handle, grid, &[KernelArg::Buffer(src), KernelArg::Buffer(dst)]).is_ok();
    let mut out = vec![0u8; elements(&case.dst_shape) * 4];
    backend.copy_from_device(dst, 0, &mut out).expect("copies back");
    let values = out.chunks(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    Run { text, values, succeeded }
}

/// Whether what the run showed agrees with the claims (the run filled `%src` per `claims.read`).
fn judge(claims: &Claims, run: &Run) -> Result<(), String> {
    let context = || format!("{}claims {claims:?}, dispatch succeeded: {}", run.text, run.succeeded);
    for (element, &value) in run.values.iter().enumerate() {
        if value == POISON {
            if claims.every && run.succeeded {
                return Err(format!("element {element} was not written\n{}", context()));
            }
            continue;
        }
        if value == POISON.wrapping_add(1) {
            return Err(format!("element {element} got a value read outside the read range\n{}", context()));
        }
        if claims.written.as_ref().is_some_and(|w| !w.contains(&(element as u64))) {
            return Err(format!("element {element} was written outside the write range\n{}", context()));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_analysis_is_sound_on_the_cpu_backend(case in case()) {
        let claims = claims(&case);
        let run = run(&case, &claims.read);
        judge(&claims, &run).map_err(TestCaseError::fail)?;
    }
}

/// The checks can fail: claims narrower than what the kernel does are caught.
#[test]
fn wrong_claims_are_caught() {
    let at_x = Index::Affine { variable: Variable::X, coefficient: 1, offset: 0 };
    let case = Case {
        src_shape: vec![8],
        dst_shape: vec![8],
        grid: [4, 1],
        workgroup: [4, 1],
        guards: Vec::new(),
        any: false,
        for_loop: None,
        data_guard: None,
        read_in_bounds: false,
        write_in_bounds: false,
        read: vec![at_x.clone()],
        write: vec![at_x],
        through_helper: false,
        barrier: false,
    };
    let truth = claims(&case);
    assert_eq!((truth.read.clone(), truth.written.clone(), truth.every), (Some(0..4), Some(0..4), false));
    assert_eq!(judge(&truth, &run(&case, &truth.read)), Ok(()));
    let narrower_write = Claims { written: Some(0..3), ..truth.clone() };
    assert!(judge(&narrower_write, &run(&case, &truth.read)).unwrap_err().contains("written outside"));
    let narrower_read = Claims { read: Some(0..3), ..truth.clone() };
    assert!(judge(&narrower_read, &run(&case, &narrower_read.read)).unwrap_err().contains("read outside"));
    let every = Claims { every: true, ..truth };
    assert!(judge(&every, &run(&case, &every.read)).unwrap_err().contains("not written"));
}

/// A grid of 6 in workgroups of 4, writing `%dst[x]` of 8 elements unguarded: the analysis
/// claims elements 0..6, not every element, and the CPU backend's work items 6 and 7 (past the
/// grid, in the last workgroup) write nothing, with or without a barrier (with one they run, as
/// padding, and their load of `%src` gives zero instead of reading poison past the read range).
#[test]
fn work_items_past_the_grid_touch_no_buffer() {
    let at_x = Index::Affine { variable: Variable::X, coefficient: 1, offset: 0 };
    for barrier in [false, true] {
        let case = Case {
            src_shape: vec![8],
            dst_shape: vec![8],
            grid: [6, 1],
            workgroup: [4, 1],
            guards: Vec::new(),
            any: false,
            for_loop: None,
            data_guard: None,
            read_in_bounds: false,
            write_in_bounds: false,
            read: vec![at_x.clone()],
            write: vec![at_x.clone()],
            through_helper: false,
            barrier,
        };
        let claims = claims(&case);
        assert_eq!((claims.read.clone(), claims.written.clone(), claims.every), (Some(0..6), Some(0..6), false));
        let run = run(&case, &claims.read);
        assert!(run.succeeded);
        assert_eq!(&run.values[6..], &[POISON, POISON], "barrier {barrier}");
        assert_eq!(judge(&claims, &run), Ok(()));
    }
}
