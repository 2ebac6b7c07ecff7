//! Programs written as a user would write them (none of them is elsewhere in the repository),
//! run through the host executor and the CPU backend, each checked against values computed by
//! hand or in plain Rust: nested `scf.for`/`scf.if`/`scf.while` with carried values, `while`
//! loops whose `before` region computes, loops with a zero or negative step (an error, never a
//! hang), zero-trip loops carrying buffers, calls returning several values, recursion,
//! `arith.select` of buffers, dispatches in loops, and kernel helpers with loops and barriers.

use hat_ir::pass::PassManager;
use hat_ir::{parse_source, verify_module, Context, Op};
use hat_runtime::{
    ArgValue, CpuBackend, Executor, ExecutorOptions, HostBuffer, RunOutput, RuntimeError, Scalar, TransferMode,
};

/// The passes every program is also run after: its results must not change.
const PIPELINE: &str = "inline,canonicalize,cse,dce,canonicalize";

/// A parsed program that must verify, and the same program after [`PIPELINE`].
struct Program {
    ctx: Context,
    module: Op,
    optimized: Option<(Context, Op)>,
}

fn parse(text: &str, pipeline: Option<&str>) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "review.hat", text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    if let Some(pipeline) = pipeline {
        let mut manager = PassManager::new("builtin.module", Default::default());
        manager.add_pipeline(&hat_passes::registry(), pipeline).unwrap_or_else(|e| panic!("{e}"));
        manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{pipeline}: {e:?}\n{text}"));
    }
    if let Err(errors) = verify_module(&ctx, module) {
        panic!("does not verify after {pipeline:?}: {errors:?}\n{text}");
    }
    (ctx, module)
}

impl Program {
    fn new(text: &str) -> Program {
        let (ctx, module) = parse(text, None);
        Program { ctx, module, optimized: Some(parse(text, Some(PIPELINE))) }
    }

    /// A program too large to run through the passes in a test (they are measured elsewhere).
    fn unoptimized(text: &str) -> Program {
        let (ctx, module) = parse(text, None);
        Program { ctx, module, optimized: None }
    }

    /// Runs `entry` in `mode`, as written and (if kept) after the passes; both runs must give
    /// the same outcome. The first run's.
    fn run_entry(&self, entry: &str, mode: TransferMode, args: Vec<ArgValue>) -> Result<RunOutput, RuntimeError> {
        let run = |ctx: &Context, module: Op, args: Vec<ArgValue>| {
            let module = verify_module(ctx, module).expect("verified in new()");
            let mut backend = CpuBackend::new();
            let mut executor = Executor::new(module, &mut backend, ExecutorOptions { mode });
            executor.run(entry, args)
        };
        let written = run(&self.ctx, self.module, args.clone());
        if let Some((ctx, module)) = &self.optimized {
            let optimized = run(ctx, *module, args);
            match (&written, &optimized) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.results, b.results, "@{entry}: results after {PIPELINE}");
                    assert_eq!(a.buffers, b.buffers, "@{entry}: buffers after {PIPELINE}");
                }
                (Err(_), Err(_)) => {}
                _ => panic!("@{entry}: {written:?}\nafter {PIPELINE}: {optimized:?}"),
            }
        }
        written
    }

    /// Runs `@main` under the reference semantics.
    fn run(&self, args: Vec<ArgValue>) -> Result<RunOutput, RuntimeError> {
        self.run_entry("main", TransferMode::Reference, args)
    }

    /// The scalar results of a run that must succeed.
    fn ints(&self, args: &[i64]) -> Vec<i64> {
        let output = self.run(args.iter().map(|&v| int(v)).collect()).unwrap_or_else(|e| panic!("{e}"));
        output.results.iter().map(|r| r.as_scalar().expect("a scalar").as_i64()).collect()
    }
}

fn int(v: i64) -> ArgValue {
    ArgValue::Scalar(Scalar::Int(v))
}

fn i32s(shape: &[usize], values: &[i32]) -> ArgValue {
    ArgValue::Buffer(HostBuffer::from_i32(shape, values).expect("values fit the shape"))
}

fn i64s(shape: &[usize], values: &[i64]) -> ArgValue {
    ArgValue::Buffer(HostBuffer::from_i64(shape, values).expect("values fit the shape"))
}

// ----- host control flow -----------------------------------------------------------------------

/// The number of steps of the Collatz sequence from `n` to 1, and the largest value on the way:
/// a `while` whose `before` region computes the carried values it forwards.
const COLLATZ: &str = r#"
compute.func @main(%n: index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %r:3 = scf.while (%x = %n, %k = %c0, %top = %n) : (index, index, index) -> (index, index, index) {
    %notone = arith.cmpi ne, %x, %c1 : index
    %higher = arith.cmpi ugt, %x, %top : index
    %top1 = arith.select %higher, %x, %top : index
    scf.condition(%notone) %x, %k, %top1 : index, index, index
  } do {
  ^bb0(%y: index, %steps: index, %best: index):
    %rem = arith.remui %y, %c2 : index
    %odd = arith.cmpi eq, %rem, %c1 : index
    %next = scf.if %odd -> (index) {
      %t = arith.muli %y, %c3 : index
      %t1 = arith.addi %t, %c1 : index
      scf.yield %t1 : index
    } else {
      %h = arith.divui %y, %c2 : index
      scf.yield %h : index
    }
    %steps1 = arith.addi %steps, %c1 : index
    scf.yield %next, %steps1, %best : index, index, index
  }
  compute.return %r#1, %r#2 : index, index
}
"#;

fn collatz(mut n: i64) -> (i64, i64) {
    let (mut steps, mut top) = (0, n);
    while n != 1 {
        top = top.max(n);
        n = if n % 2 == 1 { 3 * n + 1 } else { n / 2 };
        steps += 1;
    }
    (steps, top.max(n))
}

#[test]
fn a_while_whose_before_region_computes_values() {
    let program = Program::new(COLLATZ);
    for n in [1, 2, 3, 7, 27, 97] {
        let (steps, top) = collatz(n);
        assert_eq!(program.ints(&[n]), [steps, top], "n = {n}");
    }
    assert_eq!(collatz(27), (111, 9232));
}

/// Primes below `n` by trial division: a `for` over candidates, in it a `while` over divisors
/// with two carried values, in it an `if` yielding two values.
const PRIMES: &str = r#"
compute.func @main(%n: index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %true = arith.constant true
  %acc:2 = scf.for %p = %c2 to %n step %c1 iter_args(%count = %c0, %last = %c0) -> (index, index) {
    %d:2 = scf.while (%d = %c2, %prime = %true) : (index, i1) -> (index, i1) {
      %sq = arith.muli %d, %d : index
      %small = arith.cmpi ule, %sq, %p : index
      %go = arith.andi %small, %prime : i1
      scf.condition(%go) %d, %prime : index, i1
    } do {
    ^bb0(%e: index, %q: i1):
      %rem = arith.remui %p, %e : index
      %divides = arith.cmpi eq, %rem, %c0 : index
      %notdiv = arith.xori %divides, %true : i1
      %e1 = arith.addi %e, %c1 : index
      scf.yield %e1, %notdiv : index, i1
    }
    %next:2 = scf.if %d#1 -> (index, index) {
      %c = arith.addi %count, %c1 : index
      scf.yield %c, %p : index, index
    } else {
      scf.yield %count, %last : index, index
    }
    scf.yield %next#0, %next#1 : index, index
  }
  compute.return %acc#0, %acc#1 : index, index
}
"#;

#[test]
fn nested_for_while_if_with_carried_values() {
    let program = Program::new(PRIMES);
    for n in [0i64, 2, 3, 10, 30, 100] {
        let primes: Vec<i64> = (2..n).filter(|&p| (2..p).take_while(|d| d * d <= p).all(|d| p % d != 0)).collect();
        let expected = [primes.len() as i64, primes.last().copied().unwrap_or(0)];
        assert_eq!(program.ints(&[n]), expected, "n = {n}");
    }
}

/// Counts the iterations of `scf.for %i = %lo to %hi step %st` (index and i8 bounds).
const COUNT: &str = r#"
compute.func @main(%lo: index, %hi: index, %st: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %lo to %hi step %st iter_args(%acc = %c0) -> (index) {
    %a = arith.addi %acc, %c1 : index
    scf.yield %a : index
  }
  compute.return %r : index
}

compute.func @small(%lo: i8, %hi: i8, %st: i8) -> index attributes {entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %lo to %hi step %st iter_args(%acc = %c0) -> (index) : i8 {
    %a = arith.addi %acc, %c1 : index
    scf.yield %a : index
  }
  compute.return %r : index
}
"#;

#[test]
fn loop_steps_zero_negative_and_at_the_extremes() {
    let program = Program::new(COUNT);
    let (min, max) = (i64::MIN, i64::MAX);
    for (lo, hi, st, expected) in [
        (0, 10, 3, 4),
        (-5, -1, 1, 4),
        (10, 0, -1, 0), // zero trips: the step is never used
        (10, 10, 0, 0),
        (min, max, 1 << 62, 4),
        (max - 7, max, 5, 2), // the next value would overflow: the loop stops
        (min, min + 3, max, 1),
    ] {
        assert_eq!(program.ints(&[lo, hi, st]), [expected], "{lo} to {hi} step {st}");
    }
    for (lo, hi, st) in [(0, 10, 0), (0, 10, -1), (min, max, min)] {
        match program.run(vec![int(lo), int(hi), int(st)]) {
            Err(RuntimeError::Arithmetic { message, .. }) => {
                assert!(message.contains("step must be positive"), "{message}")
            }
            other => panic!("{lo} to {hi} step {st}: expected a step error, got {other:?}"),
        }
    }
    let small = |args: [i64; 3]| program.run_entry("small", TransferMode::Reference, args.map(int).to_vec());
    for (lo, hi, st, expected) in [(100, 127, 10, 3), (-128, 127, 1, 255), (-128, 127, 127, 3), (5, -5, -1, 0)] {
        let results = small([lo, hi, st]).unwrap().results;
        assert_eq!(results, [int(expected)], "i8: {lo} to {hi} step {st}");
    }
    // 255 is -1 as an i8: a negative step.
    assert!(small([0, 5, 255]).is_err());
}

/// A loop that runs zero times carries buffers through: its results are its inits. A loop that
/// runs swaps them each time.
const SWAPS: &str = r#"
compute.func @main(%a: memref<2xi32>, %b: memref<2xi32>, %n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a, %y = %b) -> (memref<2xi32>, memref<2xi32>) {
    scf.yield %y, %x : memref<2xi32>, memref<2xi32>
  }
  %seven = arith.constant 7 : i32
  buffer.store %seven, %r#0[%c1] : memref<2xi32>
  %v = buffer.load %r#1[%c0] : memref<2xi32>
  compute.return %v : i32
}
"#;

#[test]
fn zero_trip_and_swapping_loops_carry_buffers() {
    let program = Program::new(SWAPS);
    for n in [0, -3, 1, 2, 5] {
        let output = program.run(vec![i32s(&[2], &[10, 11]), i32s(&[2], &[20, 21]), int(n)]).unwrap();
        let swapped = n > 0 && n % 2 == 1;
        let (first, second) = if swapped { ([10, 11], [20, 7]) } else { ([10, 7], [20, 21]) };
        assert_eq!(output.results, [ArgValue::Scalar(Scalar::Int(if swapped { 10 } else { 20 }))], "n = {n}");
        assert_eq!(output.buffers[0].to_i32().unwrap(), first, "n = {n}");
        assert_eq!(output.buffers[1].to_i32().unwrap(), second, "n = {n}");
    }
}

/// Calls returning several values, in a loop, and mutual recursion.
const CALLS: &str = r#"
compute.func @divmod(%a: index, %b: index) -> (index, index, i1) {
  %q = arith.divui %a, %b : index
  %r = arith.remui %a, %b : index
  %c0 = arith.constant 0 : index
  %exact = arith.cmpi eq, %r, %c0 : index
  compute.return %q, %r, %exact : index, index, i1
}

compute.func @is_even(%n: index) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %zero -> (i1) {
    %t = arith.constant true
    scf.yield %t : i1
  } else {
    %m = arith.subi %n, %c1 : index
    %o = compute.call @is_odd(%m) : (index) -> i1
    scf.yield %o : i1
  }
  compute.return %r : i1
}

compute.func @is_odd(%n: index) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %zero -> (i1) {
    %f = arith.constant false
    scf.yield %f : i1
  } else {
    %m = arith.subi %n, %c1 : index
    %e = compute.call @is_even(%m) : (index) -> i1
    scf.yield %e : i1
  }
  compute.return %r : i1
}

// fib(n) and fib(n + 1), recursively, returning both.
compute.func @fib2(%n: index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.cmpi eq, %n, %c0 : index
  %r:2 = scf.if %zero -> (index, index) {
    scf.yield %c0, %c1 : index, index
  } else {
    %m = arith.subi %n, %c1 : index
    %p:2 = compute.call @fib2(%m) : (index) -> (index, index)
    %s = arith.addi %p#0, %p#1 : index
    scf.yield %p#1, %s : index, index
  }
  compute.return %r#0, %r#1 : index, index
}

// The sum of the quotients, the sum of the remainders and the number of exact divisions of
// n by 1..=n; whether n is even; fib(n) and fib(n + 1).
compute.func @main(%n: index) -> (index, index, index, i1, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %top = arith.addi %n, %c1 : index
  %s:3 = scf.for %d = %c1 to %top step %c1 iter_args(%qs = %c0, %rs = %c0, %ex = %c0) -> (index, index, index) {
    %q, %r, %exact = compute.call @divmod(%n, %d) : (index, index) -> (index, index, i1)
    %q1 = arith.addi %qs, %q : index
    %r1 = arith.addi %rs, %r : index
    %e = arith.index_cast %exact : i1 to index
    %one = arith.andi %e, %c1 : index
    %ex1 = arith.addi %ex, %one : index
    scf.yield %q1, %r1, %ex1 : index, index, index
  }
  %even = compute.call @is_even(%n) : (index) -> i1
  %f:2 = compute.call @fib2(%n) : (index) -> (index, index)
  compute.return %s#0, %s#1, %s#2, %even, %f#0, %f#1 : index, index, index, i1, index, index
}
"#;

#[test]
fn calls_returning_several_values_and_recursion() {
    let program = Program::new(CALLS);
    let fib = |n: i64| (0..n).fold((0i64, 1i64), |(a, b), _| (b, a + b));
    for n in [0i64, 1, 2, 12, 30] {
        let quotients: i64 = (1..=n).map(|d| n / d).sum();
        let remainders: i64 = (1..=n).map(|d| n % d).sum();
        let exact = (1..=n).filter(|d| n % d == 0).count() as i64;
        let (f0, f1) = fib(n);
        let results = program.ints(&[n]);
        // An i1 result reads back as 0 or -1 (true, sign-extended) or 1; compare its truth.
        assert_eq!(results[..3], [quotients, remainders, exact], "n = {n}");
        assert_eq!(results[3] != 0, n % 2 == 0, "n = {n}: even");
        assert_eq!(results[4..], [f0, f1], "n = {n}");
    }
}

/// An `i1` result, passed back as an argument, is accepted: results and arguments use one
/// convention for booleans.
#[test]
fn an_i1_result_is_a_valid_i1_argument() {
    let program = Program::new(
        r#"
compute.func @main(%b: i1) -> i1 {
  %t = arith.constant true
  %x = arith.xori %b, %t : i1
  compute.return %x : i1
}
"#,
    );
    let once = program.run(vec![int(0)]).unwrap().results;
    let twice = program.run(once.clone()).unwrap_or_else(|e| panic!("{once:?} back as an argument: {e}")).results;
    assert_eq!(twice, [int(0)]);
}

// ----- buffers, dispatches and kernels -----------------------------------------------------------

/// `arith.select` of buffers on the host and in a kernel: each writes to the buffer chosen.
const SELECTS: &str = r#"
kernel.func @pick(%a: memref<4xi32>, %b: memref<4xi32>, %which: i1) workgroup(4) {
  %i = kernel.global_id x
  %target = arith.select %which, %a, %b : memref<4xi32>
  %v = arith.index_cast %i : index to i32
  buffer.store %v, %target[%i] : memref<4xi32>
  kernel.return
}

compute.func @main(%a: memref<4xi32>, %b: memref<4xi32>, %first: i1) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %target = arith.select %first, %a, %b : memref<4xi32>
  %v = arith.constant 99 : i32
  buffer.store %v, %target[%c0] : memref<4xi32>
  %true = arith.constant true
  %other = arith.xori %first, %true : i1
  compute.dispatch @pick[%c4](%a, %b, %other) : (memref<4xi32>, memref<4xi32>, i1)
  compute.return
}
"#;

#[test]
fn select_of_buffers_on_the_host_and_in_a_kernel() {
    let program = Program::new(SELECTS);
    for first in [0, 1] {
        let output = program.run(vec![i32s(&[4], &[-1; 4]), i32s(&[4], &[-2; 4]), int(first)]).unwrap();
        let (a, b) = (output.buffers[0].to_i32().unwrap(), output.buffers[1].to_i32().unwrap());
        if first == 1 {
            // The host wrote a[0]; the kernel (other = false) wrote all of b.
            assert_eq!((a, b), (vec![99, -1, -1, -1], vec![0, 1, 2, 3]));
        } else {
            assert_eq!((a, b), (vec![0, 1, 2, 3], vec![99, -2, -2, -2]));
        }
    }
}

/// Dispatches in loops: `n` rounds of a kernel adding its round number, inside a `while`
/// counting down, inside an `if`; and a loop whose trip count is zero dispatches nothing.
const ROUNDS: &str = r#"
kernel.func @add(%x: memref<8xi32>, %k: i32) workgroup(4) {
  %i = kernel.global_id x
  %v = buffer.load %x[%i] : memref<8xi32>
  %w = arith.addi %v, %k : i32
  buffer.store %w, %x[%i] : memref<8xi32>
  kernel.return
}

compute.func @main(%x: memref<8xi32>, %n: index, %twice: i1) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %rounds = scf.for %r = %c0 to %n step %c1 iter_args(%done = %c0) -> (index) {
    %k = arith.index_cast %r : index to i32
    compute.dispatch @add[%c8](%x, %k) : (memref<8xi32>, i32)
    scf.if %twice {
      %left = scf.while (%m = %c1) : (index) -> index {
        %go = arith.cmpi sgt, %m, %c0 : index
        scf.condition(%go) %m : index
      } do {
      ^bb0(%m: index):
        compute.dispatch @add[%c8](%x, %k) : (memref<8xi32>, i32)
        %m1 = arith.subi %m, %c1 : index
        scf.yield %m1 : index
      }
    }
    %d = arith.addi %done, %c1 : index
    scf.yield %d : index
  }
  compute.return %rounds : index
}
"#;

#[test]
fn dispatches_in_loops_and_branches() {
    let program = Program::new(ROUNDS);
    for (n, twice) in [(0i64, 1i64), (1, 0), (4, 0), (4, 1), (-2, 1)] {
        let start: Vec<i32> = (0..8).map(|i| i * 100).collect();
        let output = program.run(vec![i32s(&[8], &start), int(n), int(twice)]).unwrap();
        let added: i32 = (0..n.max(0) as i32).sum::<i32>() * (1 + twice as i32);
        let expected: Vec<i32> = start.iter().map(|v| v + added).collect();
        assert_eq!(output.buffers[0].to_i32().unwrap(), expected, "n = {n}, twice = {twice}");
        assert_eq!(output.results, [int(n.max(0))]);
        assert_eq!(output.report.dispatches, (n.max(0) * (1 + twice)) as u64, "n = {n}, twice = {twice}");
    }
}

/// A tree reduction per workgroup in workgroup memory: a `while` halving the stride with a
/// barrier in its body, a helper that waits at two barriers, and a helper with a loop returning
/// two values.
const REDUCE: &str = r#"
kernel.helper @triangle(%n: index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0, %b = %c1) -> (index, index) {
    %a1 = arith.addi %a, %i : index
    %b1 = arith.addi %b, %b : index
    scf.yield %a1, %b1 : index, index
  }
  kernel.return %s#0, %s#1 : index, index
}

kernel.helper @wait_twice(%t: memref<8xi32>) {
  kernel.barrier
  kernel.barrier
  kernel.return
}

kernel.func @reduce(%x: memref<16xi32>, %out: memref<2xi32>, %extra: memref<16xi64>) workgroup(8) {
  %tile = kernel.local_alloc : memref<8xi32>
  %l = kernel.local_id x
  %g = kernel.global_id x
  %grp = kernel.group_id x
  %v = buffer.load %x[%g] : memref<16xi32>
  buffer.store %v, %tile[%l] : memref<8xi32>
  kernel.call @wait_twice(%tile) : (memref<8xi32>) -> ()
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %end = scf.while (%s = %c4) : (index) -> index {
    %go = arith.cmpi sgt, %s, %c0 : index
    scf.condition(%go) %s : index
  } do {
  ^bb0(%s: index):
    %active = arith.cmpi ult, %l, %s : index
    scf.if %active {
      %o = arith.addi %l, %s : index
      %a = buffer.load %tile[%l] : memref<8xi32>
      %b = buffer.load %tile[%o] : memref<8xi32>
      %c = arith.addi %a, %b : i32
      buffer.store %c, %tile[%l] : memref<8xi32>
    }
    kernel.barrier
    %h = arith.divui %s, %c2 : index
    scf.yield %h : index
  }
  %first = arith.cmpi eq, %l, %c0 : index
  scf.if %first {
    %r = buffer.load %tile[%c0] : memref<8xi32>
    buffer.store %r, %out[%grp] : memref<2xi32>
  }
  %p:2 = kernel.call @triangle(%g) : (index) -> (index, index)
  %q = arith.addi %p#0, %p#1 : index
  %q64 = arith.index_cast %q : index to i64
  buffer.store %q64, %extra[%g] : memref<16xi64>
  kernel.return
}

compute.func @main(%x: memref<16xi32>, %out: memref<2xi32>, %extra: memref<16xi64>) {
  %c16 = arith.constant 16 : index
  compute.dispatch @reduce[%c16](%x, %out, %extra) : (memref<16xi32>, memref<2xi32>, memref<16xi64>)
  compute.return
}
"#;

#[test]
fn kernel_helpers_with_loops_and_barriers() {
    let program = Program::new(REDUCE);
    let x: Vec<i32> = (0..16).map(|i| i * i - 20).collect();
    let output = program.run(vec![i32s(&[16], &x), i32s(&[2], &[0, 0]), i64s(&[16], &[0; 16])]).unwrap();
    let sums = [x[..8].iter().sum::<i32>(), x[8..].iter().sum::<i32>()];
    assert_eq!(output.buffers[1].to_i32().unwrap(), sums);
    let extra: Vec<i64> = (0..16).map(|g: i64| g * (g - 1) / 2 + (1 << g)).collect();
    assert_eq!(output.buffers[2].to_i64().unwrap(), extra);
}

// ----- nesting as deep as the parser allows ------------------------------------------------------

/// `depth` loops nested in each other (each runs once, carrying a value), the innermost adding
/// 1 (in a kernel, by calling a helper); as a host function when `kernel` is false, else inside
/// a kernel storing the result.
fn nested_loops(depth: usize, kernel: bool) -> String {
    let mut body = String::from("  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n");
    for d in 0..depth {
        let init = if d == 0 { "%c0".to_string() } else { format!("%a{}", d - 1) };
        body += &format!("  %r{d} = scf.for %i{d} = %c0 to %c1 step %c1 iter_args(%a{d} = {init}) -> (index) {{\n");
    }
    body += &match kernel {
        false => format!("  %in = arith.addi %a{}, %c1 : index\n", depth - 1),
        true => format!("  %in = kernel.call @inc(%a{}) : (index) -> index\n", depth - 1),
    };
    for d in (0..depth).rev() {
        let value = if d == depth - 1 { "%in".to_string() } else { format!("%r{}", d + 1) };
        body += &format!("  scf.yield {value} : index\n  }}\n");
    }
    if !kernel {
        return format!("compute.func @main() -> index {{\n{body}  compute.return %r0 : index\n}}\n");
    }
    format!(
        "kernel.helper @inc(%x: index) -> index {{\n  %c1 = arith.constant 1 : index\n  \
         %y = arith.addi %x, %c1 : index\n  kernel.return %y : index\n}}\n\
         kernel.func @deep(%out: memref<1xi64>) workgroup(1) {{\n{body}  %v = arith.index_cast %r0 : index to i64\n  \
         buffer.store %v, %out[%c0] : memref<1xi64>\n  kernel.return\n}}\n\
         compute.func @main(%out: memref<1xi64>) {{\n  %c1 = arith.constant 1 : index\n  \
         compute.dispatch @deep[%c1](%out) : (memref<1xi64>)\n  compute.return\n}}\n"
    )
}

/// Regions nest as deep as the parser allows (2048 levels, counting the function's body): the
/// host executor and the CPU backend compile them without overflowing the stack of a test
/// thread (2 MiB), as the run itself does; the CPU backend's limit on nested helper calls
/// counts calls, not the regions a call is in.
#[test]
fn loops_nested_as_deep_as_the_parser_allows_compile_and_run() {
    let depth = hat_ir::parser::MAX_NESTING - 8;
    let program = Program::unoptimized(&nested_loops(depth, false));
    assert_eq!(program.ints(&[]), [1]);
    let program = Program::unoptimized(&nested_loops(depth, true));
    let output = program.run(vec![i64s(&[1], &[-1])]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.buffers[0].to_i64().unwrap(), [1]);
}

// ----- shapes for inline and canonicalize -------------------------------------------------------

/// A callee with an `scf.if` yielding two values, called from a `while`'s `before` region; a
/// callee given the same buffer twice and returning it, called in a loop.
const INLINE_SHAPES: &str = r#"
compute.func @step(%x: index, %t: index) -> (index, i1) {
  %big = arith.cmpi ugt, %x, %t : index
  %r:2 = scf.if %big -> (index, i1) {
    %h = arith.subi %x, %t : index
    scf.yield %h, %big : index, i1
  } else {
    %c1 = arith.constant 1 : index
    %s = arith.addi %x, %c1 : index
    %f = arith.constant false
    scf.yield %s, %f : index, i1
  }
  compute.return %r#0, %r#1 : index, i1
}

compute.func @double(%a: memref<4xi32>, %b: memref<4xi32>, %i: index) -> memref<4xi32> {
  %v = buffer.load %a[%i] : memref<4xi32>
  %w = arith.addi %v, %v : i32
  buffer.store %w, %b[%i] : memref<4xi32>
  compute.return %b : memref<4xi32>
}

compute.func @main(%n: index, %t: index, %buf: memref<4xi32>) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c50 = arith.constant 50 : index
  %r:2 = scf.while (%x = %n, %k = %c0) : (index, index) -> (index, index) {
    %y, %big = compute.call @step(%x, %t) : (index, index) -> (index, i1)
    %k1 = arith.addi %k, %c1 : index
    %under = arith.cmpi ult, %k1, %c50 : index
    %go = arith.andi %big, %under : i1
    scf.condition(%go) %y, %k1 : index, index
  } do {
  ^bb0(%y: index, %k: index):
    scf.yield %y, %k : index, index
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %b = compute.call @double(%buf, %buf, %i) : (memref<4xi32>, memref<4xi32>, index) -> memref<4xi32>
    %i32 = arith.index_cast %i : index to i32
    buffer.store %i32, %b[%c0] : memref<4xi32>
  }
  compute.return %r#0, %r#1 : index, index
}
"#;

#[test]
fn callees_with_conditionals_and_aliased_buffers_before_and_after_inlining() {
    let program = Program::new(INLINE_SHAPES);
    for (n, t) in [(0i64, 3i64), (10, 3), (100, 7), (1000, 1), (5, 0)] {
        let (mut x, mut k) = (n, 0);
        loop {
            let big = x > t;
            x = if big { x - t } else { x + 1 };
            k += 1;
            if !(big && k < 50) {
                break;
            }
        }
        let output = program.run(vec![int(n), int(t), i32s(&[4], &[5, 6, 7, 8])]).unwrap();
        assert_eq!(output.results, [int(x), int(k)], "n = {n}, t = {t}");
        assert_eq!(output.buffers[0].to_i32().unwrap(), [3, 12, 14, 16]);
    }
}

/// Mutual recursion through kernel helpers (never inlined), called by a helper that is not
/// recursive (inlined); a helper with a loop and barriers, called in a loop (inlined).
const DEVICE_CALLS: &str = r#"
kernel.helper @even(%n: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.cmpi eq, %n, %c0 : i32
  %r = scf.if %zero -> (i32) {
    scf.yield %c1 : i32
  } else {
    %m = arith.subi %n, %c1 : i32
    %o = kernel.call @odd(%m) : (i32) -> i32
    scf.yield %o : i32
  }
  kernel.return %r : i32
}

kernel.helper @odd(%n: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.cmpi eq, %n, %c0 : i32
  %r = scf.if %zero -> (i32) {
    scf.yield %c0 : i32
  } else {
    %m = arith.subi %n, %c1 : i32
    %e = kernel.call @even(%m) : (i32) -> i32
    scf.yield %e : i32
  }
  kernel.return %r : i32
}

kernel.helper @parities(%n: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %c10 = arith.constant 10 : i32
  %e = kernel.call @even(%n) : (i32) -> i32
  %m = arith.addi %n, %c1 : i32
  %f = kernel.call @even(%m) : (i32) -> i32
  %t = arith.muli %e, %c10 : i32
  %r = arith.addi %t, %f : i32
  kernel.return %r : i32
}

// Each work item moves its element one place to the right, in workgroup memory.
kernel.helper @shift(%tile: memref<8xi32>, %l: index) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %v = buffer.load %tile[%l] : memref<8xi32>
  kernel.barrier
  %l1 = arith.addi %l, %c1 : index
  %next = arith.remui %l1, %c8 : index
  buffer.store %v, %tile[%next] : memref<8xi32>
  kernel.barrier
  kernel.return
}

kernel.func @parity(%out: memref<16xi32>) workgroup(16) {
  %i = kernel.global_id x
  %n = arith.index_cast %i : index to i32
  %p = kernel.call @parities(%n) : (i32) -> i32
  buffer.store %p, %out[%i] : memref<16xi32>
  kernel.return
}

kernel.func @rotate(%x: memref<8xi32>, %k: index) workgroup(8) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tile = kernel.local_alloc : memref<8xi32>
  %l = kernel.local_id x
  %v = buffer.load %x[%l] : memref<8xi32>
  buffer.store %v, %tile[%l] : memref<8xi32>
  kernel.barrier
  scf.for %j = %c0 to %k step %c1 {
    kernel.call @shift(%tile, %l) : (memref<8xi32>, index) -> ()
  }
  %w = buffer.load %tile[%l] : memref<8xi32>
  buffer.store %w, %x[%l] : memref<8xi32>
  kernel.return
}

compute.func @main(%out: memref<16xi32>, %x: memref<8xi32>, %k: index) {
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  compute.dispatch @parity[%c16](%out) : (memref<16xi32>)
  compute.dispatch @rotate[%c8](%x, %k) : (memref<8xi32>, index)
  compute.return
}
"#;

#[test]
fn device_recursion_and_helpers_with_barriers_before_and_after_inlining() {
    let program = Program::new(DEVICE_CALLS);
    let optimized = &program.optimized.as_ref().unwrap();
    let text = hat_ir::print_op(&optimized.0, optimized.1, Default::default());
    assert!(text.contains("kernel.call @even") && !text.contains("kernel.call @parities"), "{text}");
    assert!(!text.contains("kernel.call @shift"), "{text}");
    let x: Vec<i32> = (0..8).map(|i| 100 + i).collect();
    for k in [0usize, 1, 3, 8, 11] {
        let output = program.run(vec![i32s(&[16], &[0; 16]), i32s(&[8], &x), int(k as i64)]).unwrap();
        let parities: Vec<i32> = (0..16).map(|i| if i % 2 == 0 { 10 } else { 1 }).collect();
        assert_eq!(output.buffers[0].to_i32().unwrap(), parities);
        let rotated: Vec<i32> = (0..8).map(|m| x[(m + 8 - k % 8) % 8]).collect();
        assert_eq!(output.buffers[1].to_i32().unwrap(), rotated, "k = {k}");
    }
}

/// Loops of constant trip count 1 and 0 at the edges of narrow types (which canonicalize folds
/// away), carrying buffers and values.
const CONSTANT_TRIPS: &str = r#"
compute.func @main(%a: memref<2xi32>, %b: memref<2xi32>) -> (i8, i8, i32) {
  %c0 = arith.constant 0 : index
  %lo = arith.constant 120 : i8
  %hi = arith.constant 127 : i8
  %st = arith.constant 100 : i8
  %min = arith.constant -128 : i8
  %big = arith.constant 127 : i8
  %once:2 = scf.for %i = %lo to %hi step %st iter_args(%x = %a, %y = %b) -> (memref<2xi32>, memref<2xi32>) : i8 {
    %v = arith.extsi %i : i8 to i32
    buffer.store %v, %x[%c0] : memref<2xi32>
    scf.yield %y, %x : memref<2xi32>, memref<2xi32>
  }
  %seven = arith.constant 7 : i32
  buffer.store %seven, %once#0[%c0] : memref<2xi32>
  %last = scf.for %i = %min to %big step %big iter_args(%l = %min) -> (i8) : i8 {
    scf.yield %i : i8
  }
  %never = scf.for %i = %hi to %lo step %st iter_args(%l = %hi) -> (i8) : i8 {
    scf.yield %lo : i8
  }
  %r = buffer.load %once#1[%c0] : memref<2xi32>
  compute.return %last, %never, %r : i8, i8, i32
}
"#;

#[test]
fn loops_of_constant_trip_count_before_and_after_canonicalize() {
    let program = Program::new(CONSTANT_TRIPS);
    let output = program.run(vec![i32s(&[2], &[1, 2]), i32s(&[2], &[3, 4])]).unwrap();
    // %last: -128, -1, 126 (the next, 253, leaves i8): the last value is 126.
    assert_eq!(output.results, [int(126), int(127), int(120)]);
    assert_eq!(output.buffers[0].to_i32().unwrap(), [120, 2]);
    assert_eq!(output.buffers[1].to_i32().unwrap(), [7, 4]);
}

/// Odd-even transposition sort of each workgroup's 8 elements in workgroup memory: a `while`
/// over the phases calls a helper whose `if` compares and swaps, between two barriers; the
/// helper returns whether it swapped, and the loop carries the count of swaps.
const SORT: &str = r#"
kernel.helper @phase(%tile: memref<8xi32>, %l: index, %p: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %parity = arith.remui %p, %c2 : index
  %mine = arith.remui %l, %c2 : index
  %left = arith.cmpi eq, %parity, %mine : index
  %inside = arith.cmpi ult, %l, %c7 : index
  %active = arith.andi %left, %inside : i1
  kernel.barrier
  %swapped = scf.if %active -> (i32) {
    %r = arith.addi %l, %c1 : index
    %a = buffer.load %tile[%l] : memref<8xi32>
    %b = buffer.load %tile[%r] : memref<8xi32>
    %out = arith.cmpi sgt, %a, %b : i32
    %s = scf.if %out -> (i32) {
      buffer.store %b, %tile[%l] : memref<8xi32>
      buffer.store %a, %tile[%r] : memref<8xi32>
      scf.yield %one : i32
    } else {
      scf.yield %zero : i32
    }
    scf.yield %s : i32
  } else {
    scf.yield %zero : i32
  }
  kernel.barrier
  kernel.return %swapped : i32
}

kernel.func @sort(%x: memref<16xi32>, %swaps: memref<16xi32>) workgroup(8) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  %tile = kernel.local_alloc : memref<8xi32>
  %l = kernel.local_id x
  %g = kernel.global_id x
  %v = buffer.load %x[%g] : memref<16xi32>
  buffer.store %v, %tile[%l] : memref<8xi32>
  %done:2 = scf.while (%p = %c0, %count = %zero) : (index, i32) -> (index, i32) {
    %more = arith.cmpi ult, %p, %c8 : index
    scf.condition(%more) %p, %count : index, i32
  } do {
  ^bb0(%q: index, %n: i32):
    %s = kernel.call @phase(%tile, %l, %q) : (memref<8xi32>, index, index) -> i32
    %n1 = arith.addi %n, %s : i32
    %q1 = arith.addi %q, %c1 : index
    scf.yield %q1, %n1 : index, i32
  }
  %w = buffer.load %tile[%l] : memref<8xi32>
  buffer.store %w, %x[%g] : memref<16xi32>
  buffer.store %done#1, %swaps[%g] : memref<16xi32>
  kernel.return
}

compute.func @main(%x: memref<16xi32>, %swaps: memref<16xi32>) {
  %c16 = arith.constant 16 : index
  compute.dispatch @sort[%c16](%x, %swaps) : (memref<16xi32>, memref<16xi32>)
  compute.return
}
"#;

#[test]
fn a_sort_in_workgroup_memory_with_barriers_in_a_helper_called_in_a_while() {
    let program = Program::new(SORT);
    let x = [5, -3, 9, 9, 0, 12, -7, 1, 8, 7, 6, 5, 4, 3, 2, 1];
    let output = program.run(vec![i32s(&[16], &x), i32s(&[16], &[0; 16])]).unwrap();
    let mut expected = x.to_vec();
    expected[..8].sort();
    expected[8..].sort();
    assert_eq!(output.buffers[0].to_i32().unwrap(), expected);
    // Each work item counts the swaps it made as the left of a pair; a group's total is the
    // number of inversions of its input.
    let swaps = output.buffers[1].to_i32().unwrap();
    let inversions =
        |s: &[i32]| (0..8).flat_map(|i| (i + 1..8).map(move |j| (i, j))).filter(|&(i, j)| s[i] > s[j]).count();
    assert_eq!(swaps[..8].iter().sum::<i32>() as usize, inversions(&x[..8]));
    assert_eq!(swaps[8..].iter().sum::<i32>() as usize, inversions(&x[8..]));
}
