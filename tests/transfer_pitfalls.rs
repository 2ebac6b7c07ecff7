//! The pitfalls of DESIGN.md, each with its own program written for this test (none is an
//! example), planned by `insert-transfers{strategy=static}` (and the default pipeline), run in
//! explicit mode on the CPU backend (which poisons fresh device memory) and compared with the
//! reference semantics; each also checks what moved.

mod vendor_dialect;

use hat_ir::pass::PassManager;
use hat_ir::{parse_source, verify_module, Context, Op};
use hat_runtime::{
    ArgValue, CpuBackend, Executor, ExecutorOptions, HostArg, HostBuffer, HostCall, RunOutput, Scalar, TransferMode,
};
use std::cell::RefCell;
use std::rc::Rc;

const STATIC: &str = "insert-transfers{strategy=static}";
const DEFAULT: &str = "default";

fn compile(text: &str, pipeline: Option<&str>, vendor: bool) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    if vendor {
        vendor_dialect::register(&mut ctx);
    }
    let module = parse_source(&mut ctx, "pitfall.hat", text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    if let Some(pipeline) = pipeline {
        let mut manager = PassManager::new("builtin.module", Default::default());
        manager.add_pipeline(&hat_passes::registry(), pipeline).unwrap_or_else(|e| panic!("{e}"));
        manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{pipeline}: {e:?}"));
    }
    verify_module(&ctx, module).unwrap_or_else(|e| panic!("does not verify after {pipeline:?}: {e:?}"));
    (ctx, module)
}

fn print(ctx: &Context, module: Op) -> String {
    hat_ir::printer::print_op(ctx, module, Default::default())
}

/// Runs `@main`; the calls of every host function are logged.
fn run(ctx: &Context, module: Op, mode: TransferMode, args: &[ArgValue]) -> (RunOutput, Vec<String>) {
    let module = verify_module(ctx, module).expect("verified");
    let log: Rc<RefCell<Vec<String>>> = Rc::default();
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(module, &mut backend, ExecutorOptions { mode });
    for name in ["observe", "edit", "opaque"] {
        let log = log.clone();
        executor.register_host_function(
            name,
            Box::new(move |call: &mut HostCall| {
                let seen: Vec<String> = call
                    .args()
                    .map(|a| match a {
                        HostArg::Scalar(v, _) => format!("{v:?}"),
                        HostArg::Buffer(b, _) => format!("{:?}", b.to_i32()),
                    })
                    .collect();
                log.borrow_mut().push(format!("{}({})", call.name(), seen.join(", ")));
                // Functions that may write add 1 to element 0 of their first buffer.
                if let Ok(buffer) = call.buffer_mut(0) {
                    let mut values = buffer.to_i32().expect("i32");
                    values[0] += 1;
                    *buffer = HostBuffer::from_i32(&buffer.layout.shape.clone(), &values).expect("same shape");
                }
                Ok(Vec::new())
            }),
        );
    }
    let output = executor.run("main", args.to_vec()).unwrap_or_else(|e| panic!("run failed: {e}"));
    let calls = log.borrow().clone();
    (output, calls)
}

/// Plans `text` with `pipeline`, runs it and the reference on `args`, asserts that every
/// observation is equal, and gives the plan's report and IR.
fn check(text: &str, pipeline: &str, args: &[ArgValue]) -> (RunOutput, String) {
    check_with(text, pipeline, args, false)
}

fn check_with(text: &str, pipeline: &str, args: &[ArgValue], vendor: bool) -> (RunOutput, String) {
    let (ctx, module) = compile(text, None, vendor);
    let (reference, reference_calls) = run(&ctx, module, TransferMode::Reference, args);
    let (ctx, module) = compile(text, Some(pipeline), vendor);
    let ir = print(&ctx, module);
    let (planned, calls) = run(&ctx, module, TransferMode::Explicit, args);
    assert_eq!(planned.results, reference.results, "results differ\n{ir}");
    assert_eq!(planned.buffers, reference.buffers, "buffer arguments differ\n{ir}");
    assert_eq!(calls, reference_calls, "host calls differ\n{ir}");
    (planned, ir)
}

fn int(v: i64) -> ArgValue {
    ArgValue::Scalar(Scalar::Int(v))
}

fn ramp(n: usize) -> ArgValue {
    let values: Vec<i32> = (0..n as i32).map(|v| v * 3 + 1).collect();
    ArgValue::Buffer(HostBuffer::from_i32(&[n], &values).expect("fits"))
}

fn moved(output: &RunOutput) -> (u64, u64) {
    (output.report.to_device.bytes, output.report.from_device.bytes)
}

const INCREMENT: &str = r#"
kernel.func @increment(%data: memref<16xi32>) workgroup(16) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<16xi32>
  %one = arith.constant 1 : i32
  %w = arith.addi %v, %one : i32
  buffer.store %w, %data[%i] : memref<16xi32>
  kernel.return
}
"#;

#[test]
fn zero_trip_loops_move_nothing_and_keep_the_callers_data() {
    let text = format!(
        "{INCREMENT}
compute.func @main(%data: memref<16xi32>, %lo: index, %hi: index) {{
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %lo to %hi step %c1 {{
    compute.dispatch @increment[%c16](%data) : (memref<16xi32>)
  }}
  compute.return
}}"
    );
    for pipeline in [STATIC, DEFAULT] {
        for (lo, hi) in [(0, 0), (5, 2), (0, 1), (3, 7)] {
            let (output, ir) = check(&text, pipeline, &[ramp(16), int(lo), int(hi)]);
            let expected = if hi > lo { (64, 64) } else { (0, 0) };
            assert_eq!(moved(&output), expected, "lo {lo} hi {hi}\n{ir}");
        }
    }
}

#[test]
fn partial_coverage_needs_the_copy_in() {
    // Each kernel writes only part of %data: a guard, a smaller grid, a stride.
    let kernels = [
        ("guarded", "%half = arith.constant 8 : index\n  %in = arith.cmpi ult, %i, %half : index\n  scf.if %in {\n    buffer.store %z, %data[%i] : memref<16xi32>\n  }", 16),
        ("small grid", "buffer.store %z, %data[%i] : memref<16xi32>", 8),
        ("stride", "%two = arith.constant 2 : index\n  %j = arith.muli %i, %two : index\n  buffer.store %z, %data[%j] : memref<16xi32>", 8),
    ];
    for (name, body, grid) in kernels {
        let text = format!(
            "kernel.func @part(%data: memref<16xi32>) workgroup(8) {{
  %i = kernel.global_id x
  %z = arith.constant 0 : i32
  {body}
  kernel.return
}}
compute.func @main(%data: memref<16xi32>) {{
  %g = arith.constant {grid} : index
  compute.dispatch @part[%g](%data) : (memref<16xi32>)
  compute.return
}}"
        );
        let (output, ir) = check(&text, STATIC, &[ramp(16)]);
        assert!(output.report.to_device.bytes > 0, "{name}: a partial write needs the copy in\n{ir}");
    }
}

#[test]
fn the_same_buffer_passed_twice_is_planned_for_both_roles() {
    let text = r#"
kernel.func @shift(%src: memref<16xi32>, %dst: memref<16xi32>) workgroup(16) {
  %i = kernel.global_id x
  %v = buffer.load %src[%i] : memref<16xi32>
  %one = arith.constant 1 : i32
  %w = arith.addi %v, %one : i32
  buffer.store %w, %dst[%i] : memref<16xi32>
  kernel.return
}
compute.func @twice(%a: memref<16xi32>, %b: memref<16xi32>) {
  %c16 = arith.constant 16 : index
  compute.dispatch @shift[%c16](%a, %b) : (memref<16xi32>, memref<16xi32>)
  compute.return
}
compute.func @main(%data: memref<16xi32>) {
  %c16 = arith.constant 16 : index
  compute.dispatch @shift[%c16](%data, %data) : (memref<16xi32>, memref<16xi32>)
  compute.call @twice(%data, %data) : (memref<16xi32>, memref<16xi32>) -> ()
  compute.return
}"#;
    for pipeline in [STATIC, DEFAULT, "insert-transfers{strategy=kernel}"] {
        check(text, pipeline, &[ramp(16)]);
    }
}

#[test]
fn host_side_copies_read_the_source_host_copy_and_stale_the_destination_device_copy() {
    let text = format!(
        "{INCREMENT}
compute.func @main(%data: memref<16xi32>, %other: memref<16xi32>) {{
  %c16 = arith.constant 16 : index
  compute.dispatch @increment[%c16](%data) : (memref<16xi32>)
  compute.dispatch @increment[%c16](%other) : (memref<16xi32>)
  buffer.copy %data, %other : memref<16xi32>
  compute.dispatch @increment[%c16](%other) : (memref<16xi32>)
  compute.return
}}"
    );
    let (output, ir) = check(&text, STATIC, &[ramp(16), ramp(16)]);
    // in: %data, %other, then %other again after the host copy; out: %data before the copy,
    // %other at the end.
    assert_eq!(moved(&output), (192, 128), "{ir}");
}

#[test]
fn a_loop_on_a_flag_the_kernel_writes_brings_back_only_that_element() {
    let text = r#"
kernel.func @halve(%data: memref<16xi32>, %flag: memref<1xi32>) workgroup(16) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<16xi32>
  %one = arith.constant 1 : i32
  %w = arith.shrsi %v, %one : i32
  buffer.store %w, %data[%i] : memref<16xi32>
  %zero = arith.constant 0 : i32
  %busy = arith.cmpi ne, %w, %zero : i32
  scf.if %busy {
    %c0 = arith.constant 0 : index
    buffer.store %one, %flag[%c0] : memref<1xi32>
  }
  kernel.return
}
kernel.func @clear(%flag: memref<1xi32>) workgroup(1) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i32
  buffer.store %zero, %flag[%c0] : memref<1xi32>
  kernel.return
}
compute.func @main(%data: memref<16xi32>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0 : i32
  %flag = buffer.alloc() : memref<1xi32>
  %rounds = scf.while (%n = %c0) : (index) -> index {
    compute.dispatch @clear[%c1](%flag) : (memref<1xi32>)
    compute.dispatch @halve[%c16](%data, %flag) : (memref<16xi32>, memref<1xi32>)
    %f = buffer.load %flag[%c0] : memref<1xi32>
    %again = arith.cmpi ne, %f, %zero : i32
    %next = arith.addi %n, %c1 : index
    scf.condition(%again) %next : index
  } do {
  ^bb0(%m: index):
    scf.yield %m : index
  }
  compute.return %rounds : index
}"#;
    let (output, ir) = check(text, STATIC, &[ramp(16)]);
    let rounds = output.results[0].as_scalar().expect("a scalar").as_i64() as u64;
    assert!(rounds > 1, "the loop runs several times");
    // %data in once and out once; the flag's one element back each round.
    assert_eq!(moved(&output), (64, 64 + 4 * rounds), "{ir}");
}

#[test]
fn buffers_born_in_the_program_that_the_host_never_sees_never_move() {
    let text = format!(
        "{INCREMENT}
kernel.func @copy(%src: memref<16xi32>, %dst: memref<16xi32>) workgroup(16) {{
  %i = kernel.global_id x
  %v = buffer.load %src[%i] : memref<16xi32>
  buffer.store %v, %dst[%i] : memref<16xi32>
  kernel.return
}}
compute.func @main(%data: memref<16xi32>) {{
  %c16 = arith.constant 16 : index
  %tmp = buffer.alloc() : memref<16xi32>
  compute.dispatch @copy[%c16](%data, %tmp) : (memref<16xi32>, memref<16xi32>)
  compute.dispatch @increment[%c16](%tmp) : (memref<16xi32>)
  compute.dispatch @copy[%c16](%tmp, %data) : (memref<16xi32>, memref<16xi32>)
  buffer.dealloc %tmp : memref<16xi32>
  compute.return
}}"
    );
    let (output, ir) = check(&text, STATIC, &[ramp(16)]);
    let born = output.report.per_buffer.iter().find(|b| b.name.starts_with("alloc@")).expect("the born buffer");
    assert_eq!((born.to_device.count, born.from_device.count), (0, 0), "{ir}");
    assert!(!born.host_copy, "a buffer the host never sees gets no host copy\n{ir}");
}

#[test]
fn opaque_host_functions_touch_what_they_declare_and_undeclared_means_read_and_write() {
    let text = format!(
        "{INCREMENT}
compute.host_func @observe(read memref<16xi32>)
compute.host_func @edit(write memref<16xi32>)
compute.host_func @opaque(memref<16xi32>)
compute.func @main(%a: memref<16xi32>, %b: memref<16xi32>, %c: memref<16xi32>) {{
  %c16 = arith.constant 16 : index
  compute.dispatch @increment[%c16](%a) : (memref<16xi32>)
  compute.dispatch @increment[%c16](%b) : (memref<16xi32>)
  compute.dispatch @increment[%c16](%c) : (memref<16xi32>)
  compute.call @observe(%a) : (memref<16xi32>) -> ()
  compute.call @edit(%b) : (memref<16xi32>) -> ()
  compute.call @opaque(%c) : (memref<16xi32>) -> ()
  compute.dispatch @increment[%c16](%a) : (memref<16xi32>)
  compute.dispatch @increment[%c16](%b) : (memref<16xi32>)
  compute.dispatch @increment[%c16](%c) : (memref<16xi32>)
  compute.return
}}"
    );
    let (output, ir) = check(&text, STATIC, &[ramp(16), ramp(16), ramp(16)]);
    let per = |name: &str| {
        let b = output.report.buffer(name).expect("a parameter");
        (b.to_device.count, b.from_device.count)
    };
    // %a: read by @observe, so the device copy stays current: in once, out twice.
    assert_eq!(per("a"), (1, 2), "{ir}");
    // %b: @edit may write only part of it (a may-write), so it comes back first, then goes in.
    assert_eq!(per("b"), (2, 2), "{ir}");
    // %c: undeclared counts as read and written.
    assert_eq!(per("c"), (2, 2), "{ir}");
}

#[test]
fn a_vendor_loop_gets_guarded_hoisted_transfers_through_the_interfaces() {
    // `vendor.repeat` (tests/vendor_dialect) is a counted loop known to hat only by its
    // LoopLikeOpInterface and RegionBranchOpInterface; `vendor.proc` a host function.
    let text = format!(
        r#"{INCREMENT}
"vendor.proc"() ({{
^bb0(%data: memref<16xi32>, %n: i64):
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %c16 = arith.constant 16 : index
  "vendor.repeat"(%zero, %n, %one) ({{
  ^bb0(%i: i64):
    compute.dispatch @increment[%c16](%data) : (memref<16xi32>)
    "vendor.next"() : () -> ()
  }}) : (i64, i64, i64) -> ()
  "vendor.ret"() : () -> ()
}}) {{sym_name = "main", function_type = (memref<16xi32>, i64) -> ()}} : () -> ()"#
    );
    for n in [0, 1, 4] {
        let (output, ir) = check_with(&text, STATIC, &[ramp(16), int(n)], true);
        assert_eq!(moved(&output), if n > 0 { (64, 64) } else { (0, 0) }, "n = {n}\n{ir}");
        let loop_at = ir.find("vendor.repeat").expect("the loop");
        let copy_in = ir.find("buffer.to_device").expect("a copy in");
        assert!(copy_in < loop_at, "the copy in is hoisted above the loop\n{ir}");
    }
}

// ----- programs the differential test found (shrunk, then written out by hand) ---------------

/// Plans `text` with the static strategy and the default pipeline for each argument list,
/// checks them against the reference, and checks that neither moves more bytes than `kernel`.
fn check_within_kernel(text: &str, runs: &[Vec<ArgValue>]) {
    check_within_kernel_under(text, runs, &[STATIC, DEFAULT]);
}

/// [`check_within_kernel`] for the given pipelines only.
fn check_within_kernel_under(text: &str, runs: &[Vec<ArgValue>], pipelines: &[&str]) {
    for args in runs {
        let (kernel, _) = check(text, "insert-transfers{strategy=kernel}", args);
        let kernel_bytes = moved(&kernel).0 + moved(&kernel).1;
        for &pipeline in pipelines {
            let (output, ir) = check(text, pipeline, args);
            let bytes = moved(&output).0 + moved(&output).1;
            assert!(bytes <= kernel_bytes, "{pipeline} moved {bytes} bytes, kernel {kernel_bytes}\n{ir}");
        }
    }
}

/// Stores `5` to every element of its second parameter (a whole write, reading nothing).
const FILL_SECOND: &str = r#"
kernel.func @fill_second(%a: memref<16xi32>, %b: memref<16xi32>) workgroup(1) {
  %i = kernel.global_id x
  %c16 = arith.constant 16 : index
  %in = arith.cmpi ult, %i, %c16 : index
  %five = arith.constant 5 : i32
  scf.if %in {
    buffer.store %five, %b[%i] : memref<16xi32>
  }
  kernel.return
}
"#;

#[test]
fn a_whole_write_through_a_select_of_two_buffers_keeps_the_other_one_current() {
    // Only one of %x and %y is written; both are copied back at the end, so the device copy of
    // the other must be current too (the differential test's seed 290).
    let text = format!(
        r#"{FILL_SECOND}
compute.func @main(%x: memref<16xi32>, %y: memref<16xi32>, %n: index, %pick: i1) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  %s = arith.select %pick, %x, %y : memref<16xi32>
  scf.for %i = %c0 to %n step %c1 {{
    compute.dispatch @fill_second[%c20](%x, %s) : (memref<16xi32>, memref<16xi32>)
  }}
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> =
        [(1, 0), (1, 1), (0, 1), (3, 0)].iter().map(|&(n, p)| vec![ramp(16), ramp(16), int(n), int(p)]).collect();
    check_within_kernel(&text, &runs);
}

#[test]
fn an_overwrite_at_the_top_of_the_next_iteration_does_not_hide_the_observer_after_the_loop() {
    // The host copy into %y at the top of the outer body overwrites it; but the outer loop may
    // end instead, and then the caller sees %y (seed 485).
    let text = format!(
        r#"{FILL_SECOND}
compute.func @main(%x: memref<16xi32>, %y: memref<16xi32>, %n: index, %m: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %n step %c1 {{
    buffer.copy %x, %y : memref<16xi32>
    %r:2 = scf.for %j = %c0 to %m step %c1 iter_args(%a = %x, %b = %y) -> (memref<16xi32>, memref<16xi32>) {{
      compute.dispatch @fill_second[%c16](%a, %b) : (memref<16xi32>, memref<16xi32>)
      scf.yield %b, %a : memref<16xi32>, memref<16xi32>
    }}
  }}
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> = [(1, 0), (1, 1), (2, 1), (1, 2), (0, 3)]
        .iter()
        .map(|&(n, m)| vec![ramp(16), ramp(16), int(n), int(m)])
        .collect();
    check_within_kernel(&text, &runs);
}

#[test]
fn nested_while_loops_whose_header_does_not_settle_are_planned_soundly() {
    // The outer loop's header state alternates between two answers; it is widened (seed 526).
    let text = r#"
kernel.func @increment(%data: memref<16xi32>) workgroup(1) {
  %i = kernel.global_id x
  %c16 = arith.constant 16 : index
  %in = arith.cmpi ult, %i, %c16 : index
  scf.if %in {
    %v = buffer.load %data[%i] : memref<16xi32>
    %one = arith.constant 1 : i32
    %w = arith.addi %v, %one : i32
    buffer.store %w, %data[%i] : memref<16xi32>
  }
  kernel.return
}
kernel.func @sum(%data: memref<16xi32>, %out: memref<16xi32>) workgroup(16) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<16xi32>
  buffer.store %v, %out[%i] : memref<16xi32>
  kernel.return
}
compute.func @main(%data: memref<16xi32>, %out: memref<16xi32>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %r = scf.while (%i = %c0) : (index) -> index {
    %go = arith.cmpi ult, %i, %n : index
    scf.condition(%go) %i : index
  } do {
  ^bb0(%i: index):
    %s = scf.while (%j = %c0) : (index) -> index {
      %more = arith.cmpi ult, %j, %m : index
      scf.condition(%more) %j : index
    } do {
    ^bb0(%j: index):
      %grid = arith.addi %i, %c16 : index
      compute.dispatch @increment[%grid](%data) : (memref<16xi32>)
      %j1 = arith.addi %j, %c1 : index
      scf.yield %j1 : index
    }
    compute.dispatch @sum[%c16](%data, %out) : (memref<16xi32>, memref<16xi32>)
    %i1 = arith.addi %i, %c1 : index
    scf.yield %i1 : index
  }
  compute.return
}"#;
    for (n, m) in [(0, 0), (1, 0), (1, 2), (2, 1), (3, 3)] {
        check(text, STATIC, &[ramp(16), ramp(16), int(n), int(m)]);
        check(text, DEFAULT, &[ramp(16), ramp(16), int(n), int(m)]);
    }
}

#[test]
fn an_argument_the_kernel_does_not_touch_is_not_an_observer() {
    // @ignore takes %data and touches nothing: after a loop that may not run, no copy is made
    // for it (seed 1423).
    let text = format!(
        r#"{INCREMENT}
kernel.func @ignore(%data: memref<16xi32>) workgroup(16) {{
  kernel.return
}}
compute.func @main(%data: memref<16xi32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %n step %c1 {{
    compute.dispatch @increment[%c16](%data) : (memref<16xi32>)
  }}
  compute.dispatch @ignore[%c16](%data) : (memref<16xi32>)
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> = [0, 1, 3].iter().map(|&n| vec![ramp(16), int(n)]).collect();
    check_within_kernel(&text, &runs);
}

#[test]
fn a_while_body_that_never_runs_costs_no_copy() {
    // The copy in for the body's dispatch waits for the body's first run (seed 148).
    let text = format!(
        r#"{INCREMENT}
compute.func @main(%data: memref<16xi32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %r = scf.while (%i = %c0) : (index) -> index {{
    %go = arith.cmpi ult, %i, %n : index
    scf.condition(%go) %i : index
  }} do {{
  ^bb0(%i: index):
    compute.dispatch @increment[%c16](%data) : (memref<16xi32>)
    %i1 = arith.addi %i, %c1 : index
    scf.yield %i1 : index
  }}
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> = [0, 1, 3].iter().map(|&n| vec![ramp(16), int(n)]).collect();
    check_within_kernel(&text, &runs);
    let (output, ir) = check(&text, STATIC, &[ramp(16), int(0)]);
    assert_eq!(moved(&output), (0, 0), "{ir}");
    let (output, ir) = check(&text, STATIC, &[ramp(16), int(3)]);
    assert_eq!(moved(&output), (64, 64), "one copy each way, whatever the count\n{ir}");
}

#[test]
fn a_dispatch_on_buffers_chosen_by_two_conditions_is_unswitched_on_both() {
    // A ping-pong written with two selects, each on its own comparison (seed 138): each path
    // names its buffers, so no copy is made for a buffer the path does not touch.
    let text = format!(
        r#"{FILL_SECOND}
compute.func @main(%x: memref<16xi32>, %y: memref<16xi32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c20 = arith.constant 20 : index
  scf.for %i = %c0 to %n step %c1 {{
    %r = arith.remui %i, %c2 : index
    %even = arith.cmpi eq, %r, %c0 : index
    %r2 = arith.remui %i, %c2 : index
    %odd = arith.cmpi eq, %r2, %c1 : index
    %src = arith.select %even, %x, %y : memref<16xi32>
    %dst = arith.select %odd, %x, %y : memref<16xi32>
    compute.dispatch @fill_second[%c20](%src, %dst) : (memref<16xi32>, memref<16xi32>)
  }}
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> = [0, 1, 2, 5].iter().map(|&n| vec![ramp(16), ramp(16), int(n)]).collect();
    check_within_kernel(&text, &runs);
    let (_, ir) = check(&text, STATIC, &[ramp(16), ramp(16), int(2)]);
    // The loop is specialised by parity (the static strategy resolves rotations first): each
    // dispatch names its buffers, and no select of buffers is left.
    let dispatches: Vec<&str> = ir.lines().filter(|l| l.contains("compute.dispatch")).collect();
    assert!(!dispatches.is_empty(), "{ir}");
    assert!(
        dispatches.iter().all(|l| l.contains("(%x, %y)") || l.contains("(%y, %x)")),
        "every dispatch names its buffers\n{ir}"
    );
    assert!(!ir.contains("arith.select"), "no select of buffers left\n{ir}");
}

#[test]
fn a_dispatch_on_buffers_chosen_by_two_conditions_on_an_argument_is_unswitched_on_both() {
    // The same two selects on two comparisons of a run-time argument (not an iteration): no
    // rotation to resolve, so the dispatch is unswitched on both conditions.
    let text = format!(
        r#"{FILL_SECOND}
compute.func @main(%x: memref<16xi32>, %y: memref<16xi32>, %n: index, %m: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c20 = arith.constant 20 : index
  scf.for %i = %c0 to %n step %c1 {{
    %r = arith.remui %m, %c2 : index
    %even = arith.cmpi eq, %r, %c0 : index
    %r2 = arith.remui %m, %c2 : index
    %odd = arith.cmpi eq, %r2, %c1 : index
    %src = arith.select %even, %x, %y : memref<16xi32>
    %dst = arith.select %odd, %x, %y : memref<16xi32>
    compute.dispatch @fill_second[%c20](%src, %dst) : (memref<16xi32>, memref<16xi32>)
  }}
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> =
        [(0, 0), (1, 1), (2, 0), (5, 1)].iter().map(|&(n, m)| vec![ramp(16), ramp(16), int(n), int(m)]).collect();
    check_within_kernel(&text, &runs);
    let (_, ir) = check(&text, STATIC, &[ramp(16), ramp(16), int(2), int(1)]);
    assert_eq!(ir.matches("compute.dispatch").count(), 4, "one copy per pair of choices\n{ir}");
}

#[test]
fn a_branch_without_else_after_a_flagged_buffer_keeps_the_flag() {
    // After the first branch the host copy of %x is whole only if @fill_second did not run (a
    // run-time flag says which). The second branch reads it on the host (the flag resolved
    // there) and writes one element on the device; its skip path cannot take copies, so the merge stays flagged rather than copying toward what
    // the skip path has (seed 3305 of an 8,000-program survey).
    let text = format!(
        r#"{FILL_SECOND}
kernel.func @poke(%data: memref<16xi32>) workgroup(1) {{
  %c3 = arith.constant 3 : index
  %seven = arith.constant 7 : i32
  buffer.store %seven, %data[%c3] : memref<16xi32>
  kernel.return
}}
compute.host_func @observe(read memref<16xi32>)
compute.func @main(%x: memref<16xi32>, %y: memref<16xi32>, %a: i1, %b: i1) {{
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  scf.if %a {{
    compute.dispatch @fill_second[%c20](%y, %x) : (memref<16xi32>, memref<16xi32>)
  }}
  scf.if %b {{
    compute.call @observe(%x) : (memref<16xi32>) -> ()
    compute.dispatch @poke[%c1](%x) : (memref<16xi32>)
  }}
  compute.return
}}"#
    );
    for (a, b) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        let args = vec![ramp(16), ramp(16), int(a), int(b)];
        check_within_kernel(&text, &[args]);
    }
}

#[test]
fn a_branch_that_wrote_on_the_device_copies_back_rather_than_the_other_copying_in() {
    // After `if %c {} else { write on the device }`, the written elements are current on the
    // device on one path and on the host on the other. The next dispatch may not run (it is in
    // a branch): the path that wrote copies back (as `kernel` would, after the write), rather
    // than the path that wrote nothing copying to the device for a dispatch that may not come
    // (seed 140).
    let text = r#"
kernel.func @half(%data: memref<16xi32>) workgroup(16) {
  %i = kernel.global_id x
  %c8 = arith.constant 8 : index
  %low = arith.cmpi ult, %i, %c8 : index
  %seven = arith.constant 7 : i32
  scf.if %low {
    buffer.store %seven, %data[%i] : memref<16xi32>
  }
  kernel.return
}
compute.func @main(%data: memref<16xi32>, %c: index, %d: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %first = arith.cmpi ne, %c, %c0 : index
  scf.if %first {
  } else {
    compute.dispatch @half[%c16](%data) : (memref<16xi32>)
  }
  %second = arith.cmpi ne, %d, %c0 : index
  scf.if %second {
    compute.dispatch @half[%c16](%data) : (memref<16xi32>)
  }
  compute.return
}"#;
    let runs: Vec<Vec<ArgValue>> =
        [(0, 0), (0, 1), (1, 0), (1, 1)].iter().map(|&(c, d)| vec![ramp(16), int(c), int(d)]).collect();
    check_within_kernel(text, &runs);
    let (output, ir) = check(text, STATIC, &[ramp(16), int(1), int(0)]);
    assert_eq!(moved(&output), (0, 0), "no dispatch ran, nothing moves\n{ir}");
}

/// Ping-pong through two selects on the iteration's parity (two conditions, computed twice):
/// of the four paths unswitching makes, those that write %a are not those that write %b.
const PARITY_PING_PONG: &str = r#"
kernel.func @step(%src: memref<16xi32>, %dst: memref<16xi32>) workgroup(2) {
  %i = kernel.global_id x
  %v = buffer.load %src[%i] : memref<16xi32>
  %one = arith.constant 1 : i32
  %w = arith.addi %v, %one : i32
  buffer.store %w, %dst[%i] : memref<16xi32>
  kernel.return
}
compute.func @main(%a: memref<16xi32>, %b: memref<16xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %n step %c1 {
    %parity = arith.remui %i, %c2 : index
    %even = arith.cmpi eq, %parity, %c0 : index
    %src = arith.select %even, %b, %a : memref<16xi32>
    %parity2 = arith.remui %i, %c2 : index
    %even2 = arith.cmpi eq, %parity2, %c0 : index
    %dst = arith.select %even2, %a, %b : memref<16xi32>
    compute.dispatch @step[%c2](%src, %dst) : (memref<16xi32>, memref<16xi32>)
  }
  compute.return
}"#;

/// Counts 0 to 3 of [`PARITY_PING_PONG`].
fn parity_ping_pong_runs() -> Vec<Vec<ArgValue>> {
    [0, 1, 2, 3].iter().map(|&n| vec![ramp(16), ramp(16), int(n)]).collect()
}

#[test]
fn a_buffer_written_on_one_unswitched_path_is_copied_back_on_that_path_only() {
    // Unswitched on both conditions, each written buffer goes back to the host on the paths
    // that wrote it, not at the end of an enclosing region on paths that only read it (seeds
    // 106, 455).
    check_within_kernel_under(PARITY_PING_PONG, &parity_ping_pong_runs(), &[STATIC]);
}

#[test]
fn a_buffer_written_in_the_guarded_half_of_a_resolved_ping_pong_is_copied_back_only_if_written() {
    // The program of the test above, under `default` (resolve-aliases first).
    check_within_kernel_under(PARITY_PING_PONG, &parity_ping_pong_runs(), &[DEFAULT]);
}

#[test]
fn a_loop_that_may_not_run_copies_back_on_its_zero_trip_path_what_it_brought_back() {
    // A dispatch writes part of %b, a loop that may not run reads it on the host (bringing the
    // written part back), then a dispatch reads it again and writes part of %a. Where the loop
    // ran, the host copy is whole; where it did not, the written part goes back to the host on
    // that path, after the loop, rather than before returning on every path (seed 1566: 456
    // bytes against `kernel`'s 368 when the loop ran).
    let text = r#"
kernel.func @touch(%src: memref<2x16xi32>, %dst: memref<2x16xi32>) workgroup(4, 4) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  %five = arith.constant 5 : i32
  %old = kernel.atomic_rmw max %src[%c1, %c13], %five : memref<2x16xi32>
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %in_x = arith.cmpi ult, %x, %c16 : index
  %in_y = arith.cmpi ult, %y, %c2 : index
  %in = arith.andi %in_x, %in_y : i1
  scf.if %in {
    buffer.store %old, %dst[%y, %x] : memref<2x16xi32>
  }
  kernel.return
}
compute.func @main(%a: memref<2x16xi32>, %b: memref<2x16xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  compute.dispatch @touch[%c6, %c2](%a, %b) : (memref<2x16xi32>, memref<2x16xi32>)
  scf.for %i = %c0 to %n step %c1 {
    %tmp = buffer.alloc() : memref<2x16xi32>
    buffer.copy %b, %tmp : memref<2x16xi32>
  }
  compute.dispatch @touch[%c6, %c2](%b, %a) : (memref<2x16xi32>, memref<2x16xi32>)
  compute.return
}"#;
    let rows = || {
        let values: Vec<i32> = (0..32).map(|v| v * 3 + 1).collect();
        ArgValue::Buffer(HostBuffer::from_i32(&[2, 16], &values).expect("fits"))
    };
    let runs: Vec<Vec<ArgValue>> = [0, 1, 2].iter().map(|&n| vec![rows(), rows(), int(n)]).collect();
    check_within_kernel(text, &runs);
}

/// Writes `%k + id` to the first `%n`-element rows it covers: elements `[0, grid)` of `%data`
/// (the guard keeps it inside the buffer; the grid says how many it writes).
const WRITE_PREFIX: &str = r#"
kernel.func @prefix(%data: memref<32xi32>, %k: i32) workgroup(1) {
  %i = kernel.global_id x
  %c32 = arith.constant 32 : index
  %inside = arith.cmpi ult, %i, %c32 : index
  %v = arith.index_cast %i : index to i32
  %w = arith.addi %v, %k : i32
  scf.if %inside {
    buffer.store %w, %data[%i] : memref<32xi32>
  }
  kernel.return
}
"#;

#[test]
fn an_inner_loop_that_may_not_run_leaves_the_copy_back_after_the_outer_loop_to_the_flag() {
    // The host reads %a in an inner loop that may not run; the caller reads it after the outer
    // loop. Where the inner loop ran, %a is current on the host already: the copy for the caller
    // waits on the flag instead of running on every path (seed 13).
    let text = format!(
        r#"{WRITE_PREFIX}
compute.func @main(%a: memref<32xi32>, %out: memref<32xi32>, %n: index, %m: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %k = arith.constant 5 : i32
  compute.dispatch @prefix[%c32](%a, %k) : (memref<32xi32>, i32)
  scf.for %i = %c0 to %n step %c1 {{
    scf.for %j = %c0 to %m step %c1 {{
      buffer.copy %a, %out : memref<32xi32>
    }}
  }}
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> = [(1, 1), (1, 0), (2, 1), (0, 1), (3, 2)]
        .iter()
        .map(|&(n, m)| vec![ramp(32), ramp(32), int(n), int(m)])
        .collect();
    check_within_kernel(&text, &runs);
}

#[test]
fn the_path_that_skips_a_branch_copies_back_what_the_branch_copied_back_for_itself() {
    // A branch with no `else` reads on the host what a dispatch before it wrote, so it copies it
    // back there; the caller needs it too. The path that skips the branch copies back after the
    // branch (behind a cell the branch clears), so no path copies twice (seed 1402).
    let text = format!(
        r#"{WRITE_PREFIX}
compute.func @main(%a: memref<32xi32>, %t: index) {{
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c10 = arith.constant 10 : index
  %k = arith.constant 1 : i32
  compute.dispatch @prefix[%c10](%a, %k) : (memref<32xi32>, i32)
  %odd = arith.remui %t, %c2 : index
  %take = arith.cmpi ne, %odd, %c0 : index
  scf.if %take {{
    %copy = buffer.alloc() : memref<32xi32>
    buffer.copy %a, %copy : memref<32xi32>
  }}
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> = [0, 1, 2, 3].iter().map(|&t| vec![ramp(32), int(t)]).collect();
    check_within_kernel(&text, &runs);
    let (output, ir) = check(&text, STATIC, &[ramp(32), int(1)]);
    assert_eq!(moved(&output), (40, 40), "10 elements in and back once\n{ir}");
}

#[test]
fn a_loop_whose_every_path_overwrites_a_buffer_first_copies_none_of_it_in() {
    // Each iteration overwrites all of %a on the device, through one of two kernels chosen by a
    // flag, before anything reads it: nothing of %a needs copying in before the loop (seed 617).
    let text = format!(
        r#"{WRITE_PREFIX}
compute.func @main(%a: memref<32xi32>, %n: index, %f: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %k1 = arith.constant 1 : i32
  %k2 = arith.constant 2 : i32
  scf.for %i = %c0 to %n step %c1 {{
    %which = arith.cmpi ne, %f, %c0 : index
    scf.if %which {{
      compute.dispatch @prefix[%c32](%a, %k1) : (memref<32xi32>, i32)
    }} else {{
      compute.dispatch @prefix[%c32](%a, %k2) : (memref<32xi32>, i32)
    }}
  }}
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> =
        [(0, 0), (1, 0), (1, 1), (3, 1)].iter().map(|&(n, f)| vec![ramp(32), int(n), int(f)]).collect();
    check_within_kernel(&text, &runs);
    let (output, ir) = check(&text, STATIC, &[ramp(32), int(2), int(1)]);
    assert_eq!(moved(&output).0, 0, "nothing copied in\n{ir}");
}

#[test]
fn a_while_loop_whose_body_never_runs_leaves_the_buffer_as_the_entry_had_it() {
    // The condition reads one element on the host; the body writes on the device and the next
    // condition reads that element again. When the body never runs, %a is as the entry had it:
    // nothing is copied back after the loop for the caller (seed 944).
    let text = format!(
        r#"{WRITE_PREFIX}
compute.func @main(%a: memref<32xi32>, %limit: i32) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c4 = arith.constant 4 : index
  %c15 = arith.constant 15 : index
  %k = arith.constant 7 : i32
  %n = scf.while (%it = %c0) : (index) -> index {{
    %v = buffer.load %a[%c5] : memref<32xi32>
    %big = arith.cmpi sgt, %v, %limit : i32
    %few = arith.cmpi ult, %it, %c4 : index
    %go = arith.andi %big, %few : i1
    scf.condition(%go) %it : index
  }} do {{
  ^bb0(%i: index):
    compute.dispatch @prefix[%c15](%a, %k) : (memref<32xi32>, i32)
    %next = arith.addi %i, %c1 : index
    scf.yield %next : index
  }}
  compute.return
}}"#
    );
    let runs: Vec<Vec<ArgValue>> = [100, 3, -100].iter().map(|&l| vec![ramp(32), int(l)]).collect();
    check_within_kernel(&text, &runs);
    let (output, ir) = check(&text, STATIC, &[ramp(32), int(100)]);
    assert_eq!(moved(&output), (0, 0), "the body never ran\n{ir}");
}

#[test]
fn a_loop_hoists_only_what_every_path_wants_on_the_device_first() {
    // The first dispatch of %a in the body is in a branch that may not run; the one after the
    // branch surely runs and reads only elements [0, 8). Only those are copied in before the
    // loop; the rest of the branch's need is met in the branch (seed 127).
    let text = r#"
kernel.func @read_prefix(%src: memref<32xi32>, %dst: memref<32xi32>) workgroup(1) {
  %i = kernel.global_id x
  %v = buffer.load %src[%i] : memref<32xi32>
  buffer.store %v, %dst[%i] : memref<32xi32>
  kernel.return
}
compute.func @main(%a: memref<32xi32>, %out: memref<32xi32>, %n: index, %f: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  scf.for %i = %c0 to %n step %c1 {
    %take = arith.cmpi ne, %f, %c0 : index
    scf.if %take {
      compute.dispatch @read_prefix[%c32](%a, %out) : (memref<32xi32>, memref<32xi32>)
    }
    compute.dispatch @read_prefix[%c8](%a, %out) : (memref<32xi32>, memref<32xi32>)
  }
  compute.return
}"#;
    let runs: Vec<Vec<ArgValue>> = [(0, 0), (1, 0), (1, 1), (3, 0), (3, 1)]
        .iter()
        .map(|&(n, f)| vec![ramp(32), ramp(32), int(n), int(f)])
        .collect();
    check_within_kernel(text, &runs);
    let (output, ir) = check(text, STATIC, &[ramp(32), ramp(32), int(1), int(0)]);
    // 8 elements of %a, and 8 of %out (the dispatch writes them but not all of %out).
    assert_eq!(moved(&output).0, 64, "only what the dispatch after the branch reads goes in\n{ir}");
}

#[test]
fn a_flagged_loop_header_completes_the_cheaper_copy_on_entry() {
    // %s is %a or %b, chosen by %f's parity; @lower_one changes one element of %a on the
    // device. In the `while` loop the condition reads %s on the host and the body passes %a to
    // a dispatch and %s to another, so the header's state of %a is known only through the
    // run-time flag, which needs one copy of %a whole on entry. The host copy lacks one
    // element, the device copy fourteen: the entry copies the one element back (as `kernel`
    // does after @lower_one), not the fourteen in (seed 280: 68 bytes against `kernel`'s 8).
    let text = r#"
kernel.func @lower_one(%a: memref<3x5xi32>, %x: i32) workgroup(1) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %old = kernel.atomic_rmw min %a[%c2, %c1], %x : memref<3x5xi32>
  kernel.return
}
kernel.func @touch_nothing(%a: memref<3x5xi32>, %x: i32) workgroup(8) {
  kernel.return
}
kernel.func @step(%g: memref<3x5xi32>) workgroup(4, 2) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %x_in = arith.cmpi ult, %x, %c5 : index
  %y_in = arith.cmpi ult, %y, %c3 : index
  %in = arith.andi %x_in, %y_in : i1
  scf.if %in {
    %v = buffer.load %g[%y, %x] : memref<3x5xi32>
    %two = arith.constant 2 : i32
    %w = arith.subi %v, %two : i32
    buffer.store %w, %g[%y, %x] : memref<3x5xi32>
  }
  kernel.return
}
compute.func @main(%a: memref<3x5xi32>, %b: memref<3x5xi32>, %f: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  %nine = arith.constant 9 : i32
  %parity = arith.remsi %f, %c2 : index
  %even = arith.cmpi eq, %parity, %c0 : index
  %s = arith.select %even, %a, %b : memref<3x5xi32>
  compute.dispatch @lower_one[%c1](%a, %zero) : (memref<3x5xi32>, i32)
  %n = scf.while (%it = %c0) : (index) -> index {
    %v = buffer.load %s[%c2, %c0] : memref<3x5xi32>
    %big = arith.cmpi sgt, %v, %nine : i32
    %first = arith.cmpi ult, %it, %c1 : index
    %go = arith.andi %big, %first : i1
    scf.condition(%go) %it : index
  } do {
  ^bb0(%i: index):
    %col = arith.remui %f, %c5 : index
    %w = buffer.load %s[%c2, %col] : memref<3x5xi32>
    compute.dispatch @touch_nothing[%c8](%a, %w) : (memref<3x5xi32>, i32)
    compute.dispatch @step[%c7, %c3](%s) : (memref<3x5xi32>)
    %next = arith.addi %i, %c1 : index
    scf.yield %next : index
  }
  compute.return
}"#;
    let grid = |values: Vec<i32>| ArgValue::Buffer(HostBuffer::from_i32(&[3, 5], &values).expect("fits"));
    let zeros = || grid(vec![0; 15]);
    let ramp = || grid((0..15).map(|v| v * 3 + 1).collect());
    // Zeros: the condition fails at once; the ramp: the body runs once.
    let runs: Vec<Vec<ArgValue>> =
        [0, 1].iter().flat_map(|&f| [vec![zeros(), zeros(), int(f)], vec![ramp(), ramp(), int(f)]]).collect();
    check_within_kernel(text, &runs);
    let (output, ir) = check(text, STATIC, &[zeros(), zeros(), int(0)]);
    assert_eq!(moved(&output), (4, 4), "one element in for @lower_one and back for the flag\n{ir}");
}

/// Stores into `%dst` the elements its grid reaches below 4, reading nothing (`%unused` is not
/// touched): a partial write.
const WRITE_BELOW_FOUR: &str = r#"
kernel.func @write_from_one(%unused: memref<4xi32>, %dst: memref<4xi32>) workgroup(8) {
  %i = kernel.global_id x
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %j = arith.addi %i, %c1 : index
  %in = arith.cmpi ult, %j, %c4 : index
  %v = arith.index_cast %j : index to i32
  scf.if %in {
    buffer.store %v, %dst[%j] : memref<4xi32>
  }
  kernel.return
}
kernel.func @write_prefix(%unused: memref<4xi32>, %dst: memref<4xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %w = kernel.global_size x
  %row = arith.muli %y, %w : index
  %i = arith.addi %row, %x : index
  %c4 = arith.constant 4 : index
  %in = arith.cmpi ult, %i, %c4 : index
  %v = arith.index_cast %i : index to i32
  scf.if %in {
    buffer.store %v, %dst[%i] : memref<4xi32>
  }
  kernel.return
}
"#;

#[test]
fn a_loop_header_copies_nothing_in_for_an_observer_in_an_inner_loop_that_may_not_run() {
    // Three buffers rotate through an inner loop with a run-time trip count, so the outer
    // loop's header knows %b only through the run-time flag. Its body wants elements [1, 4) of
    // %b on the device first only in the inner loop, which may not run, and the dispatch after
    // it copies them in under the flag anyway: the entry edge copies nothing for it (seed 385:
    // 12 bytes before the loop that `kernel` does not move, 60 against 48).
    let text = format!(
        "{WRITE_BELOW_FOUR}{}",
        r#"
compute.func @main(%a: memref<4xi32>, %b: memref<4xi32>, %c: memref<4xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %round = %c0 to %c2 step %c1 {
    %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a, %y = %b, %z = %c) -> (memref<4xi32>, memref<4xi32>, memref<4xi32>) {
      compute.call @edit(%x) : (memref<4xi32>) -> ()
      compute.dispatch @write_prefix[%c8, %c8](%z, %y) : (memref<4xi32>, memref<4xi32>)
      scf.yield %y, %z, %x : memref<4xi32>, memref<4xi32>, memref<4xi32>
    }
    compute.dispatch @write_from_one[%c4](%c, %b) : (memref<4xi32>, memref<4xi32>)
  }
  compute.return
}
compute.host_func @edit(write memref<4xi32>)"#
    );
    let runs: Vec<Vec<ArgValue>> = [0, 1, 2, 3, 4].iter().map(|&n| vec![ramp(4), ramp(4), ramp(4), int(n)]).collect();
    check_within_kernel(&text, &runs);
    let (output, ir) = check(&text, STATIC, &[ramp(4), ramp(4), ramp(4), int(0)]);
    assert_eq!(moved(&output), (24, 24), "elements [1, 4) of %b in and out around each @write_from_one\n{ir}");
}

#[test]
fn a_rotation_mixed_with_a_select_on_loaded_data_is_still_resolved() {
    // %x and %y swap every iteration; the second dispatch writes into %a or %x, chosen on a
    // value the host loads. `resolve-aliases` specialises the loop by parity all the same (each
    // copy of the select then chooses between named buffers, which `insert-transfers`
    // unswitches), so neither buffer is copied in before the loop for an iteration that may not
    // come (seed 1180: 464 bytes against `kernel`'s 360 for one iteration).
    let text = r#"
kernel.func @read_prefix(%src: memref<32xi32>, %other: memref<32xi32>) workgroup(1) {
  %i = kernel.global_id x
  %v = buffer.load %src[%i] : memref<32xi32>
  kernel.return
}
kernel.func @write_some(%unused: memref<32xi32>, %dst: memref<32xi32>) workgroup(1) {
  %i = kernel.global_id x
  %c3 = arith.constant 3 : index
  %j = arith.muli %i, %c3 : index
  %c32 = arith.constant 32 : index
  %in = arith.cmpi ult, %j, %c32 : index
  %v = arith.index_cast %j : index to i32
  scf.if %in {
    buffer.store %v, %dst[%j] : memref<32xi32>
  }
  kernel.return
}
compute.func @main(%a: memref<32xi32>, %b: memref<32xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c11 = arith.constant 11 : index
  %c26 = arith.constant 26 : index
  %three = arith.constant 3 : i32
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a, %y = %b) -> (memref<32xi32>, memref<32xi32>) {
    compute.dispatch @read_prefix[%c26](%x, %y) : (memref<32xi32>, memref<32xi32>)
    %v = buffer.load %b[%c8] : memref<32xi32>
    %big = arith.cmpi sgt, %v, %three : i32
    %s = arith.select %big, %a, %x : memref<32xi32>
    compute.dispatch @write_some[%c11](%y, %s) : (memref<32xi32>, memref<32xi32>)
    scf.yield %y, %x : memref<32xi32>, memref<32xi32>
  }
  compute.return
}"#;
    let zeros = || ArgValue::Buffer(HostBuffer::from_i32(&[32], &[0; 32]).expect("fits"));
    let runs: Vec<Vec<ArgValue>> =
        [0, 1, 2, 3].iter().flat_map(|&n| [vec![ramp(32), ramp(32), int(n)], vec![zeros(), zeros(), int(n)]]).collect();
    check_within_kernel(text, &runs);
    let (ctx, module) = compile(text, Some("resolve-aliases"), false);
    let resolved = print(&ctx, module);
    assert!(!resolved.contains("iter_args"), "the loop is specialised by parity\n{resolved}");
    assert_eq!(resolved.matches("arith.select").count(), 1, "only the odd copy still chooses\n{resolved}");
    // One iteration: %a's elements [0, 26) for @read_prefix and, with them, [0, 31) for
    // @write_some's partial write go in, and [0, 31) come back. Nothing of %b moves.
    let (output, ir) = check(text, STATIC, &[zeros(), zeros(), int(1)]);
    assert_eq!(moved(&output), (124, 124), "{ir}");
}

#[test]
fn the_path_that_skips_a_branch_completes_on_the_device_only_what_the_next_dispatch_reads() {
    // The branch adds 1 to elements [0, 10) of %g on the device and copies them back (as
    // `kernel` does); the dispatch after it reads element 0 only. The path that skips the
    // branch has %g whole on the host: it copies element 0 in, not all ten (seed 1240: 40
    // bytes against `kernel`'s 4).
    let text = r#"
kernel.func @bump_prefix(%g: memref<16xi32>) workgroup(16) {
  %i = kernel.global_id x
  %c10 = arith.constant 10 : index
  %in = arith.cmpi ult, %i, %c10 : index
  scf.if %in {
    %v = buffer.load %g[%i] : memref<16xi32>
    %one = arith.constant 1 : i32
    %w = arith.addi %v, %one : i32
    buffer.store %w, %g[%i] : memref<16xi32>
  }
  kernel.return
}
kernel.func @copy_first(%g: memref<16xi32>, %out: memref<16xi32>) workgroup(1) {
  %c0 = arith.constant 0 : index
  %v = buffer.load %g[%c0] : memref<16xi32>
  buffer.store %v, %out[%c0] : memref<16xi32>
  kernel.return
}
compute.func @main(%g: memref<16xi32>, %f: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %scratch = buffer.alloc() : memref<16xi32>
  %take = arith.cmpi ne, %f, %c0 : index
  scf.if %take {
    compute.dispatch @bump_prefix[%c16](%g) : (memref<16xi32>)
  }
  compute.dispatch @copy_first[%c1](%g, %scratch) : (memref<16xi32>, memref<16xi32>)
  compute.return
}"#;
    let runs: Vec<Vec<ArgValue>> = [0, 1].iter().map(|&f| vec![ramp(16), int(f)]).collect();
    check_within_kernel(text, &runs);
    let (output, ir) = check(text, STATIC, &[ramp(16), int(0)]);
    assert_eq!(moved(&output), (4, 0), "element 0 in for @copy_first\n{ir}");
}
