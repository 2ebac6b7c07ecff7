//! The runtime-tracking strategy on programs written the way users write them, beyond the
//! examples: host functions that may write part of a buffer, 2-D and dynamic element accesses,
//! compute helpers called from several places, a convergence loop on a flag a kernel writes,
//! partial writes of fresh buffers, host copies, element ranges of dispatches. Each runs through
//! `track-accesses` and the tracking mode, and must give the reference semantics' results; where
//! the plan is known, the bytes are checked too.

use hat_ir::pass::{PassManager, PassManagerOptions};
use hat_ir::{parse_source, Context, Op};
use hat_runtime::{
    ArgValue, CpuBackend, Executor, ExecutorOptions, HostArg, HostBuffer, HostCall, RunOutput, RunReport, Scalar,
    TransferMode,
};
use std::cell::RefCell;
use std::rc::Rc;

fn parse(text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "program.hat", text).unwrap_or_else(|e| panic!("{e:?}"));
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    (ctx, module)
}

fn tracked(text: &str) -> (Context, Op) {
    let (mut ctx, module) = parse(text);
    let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
    manager.add_pipeline(&hat_passes::registry(), "builtin.module(track-accesses)").expect("valid");
    manager.run(&mut ctx, module).expect("runs");
    (ctx, module)
}

type Log = Rc<RefCell<Vec<String>>>;

/// Host functions: `@peek(read)` logs its buffer; `@stamp(write)` writes 100 at element 0 only
/// (a may-write: the rest must keep the current values); `@bump(readwrite)` adds 1 everywhere.
fn register(executor: &mut Executor<'_>, log: &Log) {
    let seen = log.clone();
    executor.register_host_function(
        "peek",
        Box::new(move |call: &mut HostCall| {
            let Some(HostArg::Buffer(buffer, _)) = call.arg(0) else { return Err("a buffer".into()) };
            seen.borrow_mut().push(format!("{:?}", buffer.to_scalars()));
            Ok(vec![])
        }),
    );
    executor.register_host_function(
        "stamp",
        Box::new(|call: &mut HostCall| {
            call.buffer_mut(0)?.set(&[0], Scalar::Int(100));
            Ok(vec![])
        }),
    );
    executor.register_host_function(
        "bump",
        Box::new(|call: &mut HostCall| {
            let buffer = call.buffer_mut(0)?;
            let values: Vec<Scalar> = buffer.to_scalars().into_iter().map(|v| Scalar::Int(v.as_i64() + 1)).collect();
            *buffer = HostBuffer::from_scalars(buffer.layout.clone(), &values).expect("same layout");
            Ok(vec![])
        }),
    );
}

fn run(ctx: &Context, module: Op, mode: TransferMode, args: Vec<ArgValue>, log: &Log) -> RunOutput {
    let verified = hat_ir::verify_module(ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(verified, &mut backend, ExecutorOptions { mode });
    register(&mut executor, log);
    executor.run("main", args).unwrap_or_else(|e| panic!("{mode:?}: {e}"))
}

/// Runs `text` under the reference semantics and, through `track-accesses` (then `edit`), under
/// tracking; checks that everything observed is equal, and returns the tracking run's report.
fn check_with(text: &str, args: impl Fn() -> Vec<ArgValue>, edit: impl FnOnce(&mut Context, Op)) -> RunReport {
    let (plain_ctx, plain) = parse(text);
    let (mut ctx, module) = tracked(text);
    edit(&mut ctx, module);
    let (reference_log, tracking_log) = (Log::default(), Log::default());
    let reference = run(&plain_ctx, plain, TransferMode::Reference, args(), &reference_log);
    let tracking = run(&ctx, module, TransferMode::Tracking, args(), &tracking_log);
    assert_eq!(tracking.results, reference.results, "results");
    for (index, (t, r)) in tracking.buffers.iter().zip(&reference.buffers).enumerate() {
        assert_eq!(t, r, "buffer argument #{index}");
    }
    assert_eq!(*tracking_log.borrow(), *reference_log.borrow(), "what @peek saw");
    assert!(tracking.report.total_bytes() <= reference.report.total_bytes());
    tracking.report
}

fn check(text: &str, args: impl Fn() -> Vec<ArgValue>) -> RunReport {
    check_with(text, args, |_, _| {})
}

fn i32s(shape: &[usize], values: impl IntoIterator<Item = i32>) -> ArgValue {
    ArgValue::Buffer(HostBuffer::from_i32(shape, &values.into_iter().collect::<Vec<_>>()).expect("fits"))
}

fn bytes(report: &RunReport) -> (u64, u64) {
    (report.to_device.bytes, report.from_device.bytes)
}

const INC: &str = r#"
kernel.func @inc(%data: memref<16xi32>) workgroup(16) {
  %i = kernel.global_id x
  %one = arith.constant 1 : i32
  %v = buffer.load %data[%i] : memref<16xi32>
  %w = arith.addi %v, %one : i32
  buffer.store %w, %data[%i] : memref<16xi32>
  kernel.return
}
"#;

#[test]
fn a_host_function_that_may_write_part_of_a_buffer_gets_its_current_contents() {
    let text = format!(
        r#"{INC}
compute.host_func @stamp(write memref<16xi32>)
compute.host_func @peek(read memref<16xi32>)
compute.func @main(%data: memref<16xi32>) {{
  %c16 = arith.constant 16 : index
  compute.dispatch @inc[%c16](%data) : (memref<16xi32>)
  compute.call @stamp(%data) : (memref<16xi32>) -> ()
  compute.dispatch @inc[%c16](%data) : (memref<16xi32>)
  compute.call @peek(%data) : (memref<16xi32>) -> ()
  compute.return
}}
"#
    );
    let report = check(&text, || vec![i32s(&[16], 0..16)]);
    // In, back for @stamp (it may leave elements untouched), in again, back for @peek.
    assert_eq!(bytes(&report), (128, 128));
}

#[test]
fn element_accesses_of_two_dimensional_and_dynamic_buffers_move_single_elements() {
    let text = r#"
kernel.func @scale(%grid: memref<4x8xi32>, %row: memref<?xi32>) workgroup(8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %v = buffer.load %grid[%y, %x] : memref<4x8xi32>
  %two = arith.constant 2 : i32
  %w = arith.muli %v, %two : i32
  buffer.store %w, %grid[%y, %x] : memref<4x8xi32>
  %c0 = arith.constant 0 : index
  %first = arith.cmpi eq, %y, %c0 : index
  scf.if %first {
    buffer.store %w, %row[%x] : memref<?xi32>
  }
  kernel.return
}

compute.func @main(%grid: memref<4x8xi32>, %row: memref<?xi32>, %i: index, %j: index) -> i32 {
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  compute.dispatch @scale[%c8, %c4](%grid, %row) : (memref<4x8xi32>, memref<?xi32>)
  %a = buffer.load %grid[%i, %j] : memref<4x8xi32>
  %b = buffer.load %row[%j] : memref<?xi32>
  %s = arith.addi %a, %b : i32
  buffer.store %s, %grid[%j, %i] : memref<4x8xi32>
  compute.dispatch @scale[%c8, %c4](%grid, %row) : (memref<4x8xi32>, memref<?xi32>)
  compute.return %s : i32
}
"#;
    let args = || {
        vec![
            i32s(&[4, 8], 0..32),
            i32s(&[8], 100..108),
            ArgValue::Scalar(Scalar::Int(2)),
            ArgValue::Scalar(Scalar::Int(3)),
        ]
    };
    let report = check(text, args);
    // In: both whole (128 + 32), then only the element the host wrote (4); out: the two
    // elements the host read (4 + 4), then at the return both whole, which the second dispatch
    // may have changed everywhere (128 + 32).
    assert_eq!(bytes(&report), (128 + 32 + 4, 4 + 4 + 128 + 32));
}

#[test]
fn a_compute_helper_called_from_several_places_and_a_convergence_loop() {
    let text = r#"
kernel.func @halve(%data: memref<8xi32>, %flag: memref<1xi32>) workgroup(8) {
  %i = kernel.global_id x
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %v = buffer.load %data[%i] : memref<8xi32>
  %h = arith.shrsi %v, %one : i32
  buffer.store %h, %data[%i] : memref<8xi32>
  %zero = arith.constant 0 : i32
  %moving = arith.cmpi ne, %h, %zero : i32
  scf.if %moving {
    buffer.store %one, %flag[%c0] : memref<1xi32>
  }
  kernel.return
}

compute.func @clear(%flag: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i32
  buffer.store %zero, %flag[%c0] : memref<1xi32>
  compute.return
}

compute.func @main(%data: memref<8xi32>, %flag: memref<1xi32>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  compute.call @clear(%flag) : (memref<1xi32>) -> ()
  %rounds = scf.while (%n = %c0) : (index) -> index {
    compute.call @clear(%flag) : (memref<1xi32>) -> ()
    compute.dispatch @halve[%c8](%data, %flag) : (memref<8xi32>, memref<1xi32>)
    %f = buffer.load %flag[%c0] : memref<1xi32>
    %go = arith.cmpi ne, %f, %zero : i32
    scf.condition(%go) %n : index
  } do {
  ^bb0(%n: index):
    %next = arith.addi %n, %c1 : index
    scf.yield %next : index
  }
  compute.return %rounds : index
}
"#;
    let report = check(text, || vec![i32s(&[8], [1000, 3, 77, 5, 9, 0, 64, 250]), i32s(&[1], [42])]);
    // 1000 halves to 0 in 10 rounds. %data in once, back once; the flag, which the host clears
    // and reads every round, in and back every round, 4 B each way.
    assert_eq!(report.dispatches, 10);
    assert_eq!(bytes(&report), (32 + 10 * 4, 32 + 10 * 4));
}

#[test]
fn fresh_buffers_partly_written_and_host_copies() {
    let text = r#"
kernel.func @half_fill(%out: memref<8xi32>, %v: i32) workgroup(8) {
  %i = kernel.global_id x
  %c4 = arith.constant 4 : index
  %low = arith.cmpi ult, %i, %c4 : index
  scf.if %low {
    buffer.store %v, %out[%i] : memref<8xi32>
  }
  kernel.return
}

compute.host_func @bump(readwrite memref<8xi32>)

compute.func @main(%result: memref<8xi32>, %copy: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  %seven = arith.constant 7 : i32
  %nine = arith.constant 9 : i32
  %scratch = buffer.alloc() : memref<8xi32>
  compute.dispatch @half_fill[%c8](%scratch, %seven) : (memref<8xi32>, i32)
  buffer.copy %scratch, %result : memref<8xi32>
  compute.dispatch @half_fill[%c8](%result, %nine) : (memref<8xi32>, i32)
  buffer.copy %result, %copy : memref<8xi32>
  buffer.copy %copy, %copy : memref<8xi32>
  compute.call @bump(%copy) : (memref<8xi32>) -> ()
  buffer.dealloc %scratch : memref<8xi32>
  compute.return
}
"#;
    let report = check(text, || vec![i32s(&[8], 0..8), i32s(&[8], 10..18)]);
    // The kernel writes only elements [0, 4): %scratch's come back for the host copy (nothing
    // went in: it was undefined); %result's go in (a partial write keeps the rest) and come back
    // for the second copy; %copy never moves. 16 B each.
    assert_eq!(bytes(&report), (16, 32));
    assert_eq!(report.buffer("copy").map(|b| b.device_copy), Some(false));
}

#[test]
fn dispatches_with_element_ranges_move_only_those_elements() {
    let text = r#"
kernel.func @sum_head(%data: memref<16xi32>, %out: memref<16xi32>) workgroup(4) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<16xi32>
  buffer.store %v, %out[%i] : memref<16xi32>
  kernel.return
}

compute.func @main(%data: memref<16xi32>, %out: memref<16xi32>) {
  %c4 = arith.constant 4 : index
  compute.dispatch @sum_head[%c4](%data, %out) : (memref<16xi32>, memref<16xi32>)
  compute.return
}
"#;
    // What the kernel-effects analysis will say once it knows affine ranges: reads data[0, 4),
    // writes out[0, 4) (not every element: the rest of %out keeps the caller's values).
    let report = check_with(
        text,
        || vec![i32s(&[16], 0..16), i32s(&[16], 100..116)],
        |ctx, module| {
            let dispatch = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "compute.dispatch").unwrap();
            let access: Vec<_> = ["read", "write"].iter().map(|a| ctx.string_attr(a)).collect();
            let access = ctx.array_attr(&access);
            let ranges = [ctx.dense_i64_array_attr(&[0, 4, -1, -1]), ctx.dense_i64_array_attr(&[-1, -1, 0, 4])];
            let ranges = ctx.array_attr(&ranges);
            let (key, elements) = (ctx.ident("hat.arg_access"), ctx.ident("hat.arg_elements"));
            ctx.set_attribute(dispatch, key, access);
            ctx.set_attribute(dispatch, elements, ranges);
        },
    );
    // 16 B of %data in, 16 B of %out in (its written range, which a partial write needs
    // current) and 16 B back.
    assert_eq!(bytes(&report), (32, 16));
}

#[test]
fn an_access_out_of_bounds_reports_the_same_error_tracked_or_not() {
    let text = r#"
compute.func @main(%grid: memref<4x8xi32>, %i: index) -> i32 {
  %c0 = arith.constant 0 : index
  %v = buffer.load %grid[%c0, %i] : memref<4x8xi32>
  compute.return %v : i32
}
"#;
    // Index 40 is out of bounds in its dimension and its flat element (40) outside the buffer.
    for i in [9, 40] {
        let args = || vec![i32s(&[4, 8], 0..32), ArgValue::Scalar(Scalar::Int(i))];
        let run = |ctx: &Context, module: Op, mode| {
            let verified = hat_ir::verify_module(ctx, module).expect("verified");
            let mut backend = CpuBackend::new();
            let mut executor = Executor::new(verified, &mut backend, ExecutorOptions { mode });
            executor.run("main", args()).unwrap_err()
        };
        let (plain_ctx, plain) = parse(text);
        let (ctx, module) = tracked(text);
        let reference = run(&plain_ctx, plain, TransferMode::Reference);
        let tracking = run(&ctx, module, TransferMode::Tracking);
        assert_eq!(tracking.to_string(), reference.to_string(), "index {i}");
        assert!(reference.to_string().starts_with("out-of-bounds access on the host"), "{reference}");
    }
}

/// The pass writes `hat.arg_access`, the runtime reads it: each keyword the pass can write moves
/// what it means (on a kernel that does nothing, so only the annotation decides), and one the
/// runtime does not know counts as "may do anything".
#[test]
fn every_access_the_pass_writes_is_one_the_runtime_reads() {
    use hat_passes::transfers::track_accesses::ArgAccess;
    let text = r#"
kernel.func @nothing(%data: memref<8xi32>) workgroup(8) {
  kernel.return
}

compute.func @main(%data: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  compute.dispatch @nothing[%c8](%data) : (memref<8xi32>)
  compute.return
}
"#;
    let keywords = ArgAccess::ALL.iter().map(|a| a.keyword()).chain(["bogus"]);
    let mut seen = Vec::new();
    for keyword in keywords {
        let (mut ctx, module) = tracked(text);
        let dispatch = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "compute.dispatch").unwrap();
        let entry = ctx.string_attr(keyword);
        let access = ctx.array_attr(&[entry]);
        let key = ctx.ident("hat.arg_access");
        ctx.set_attribute(dispatch, key, access);
        let log = Log::default();
        let output = run(&ctx, module, TransferMode::Tracking, vec![i32s(&[8], 0..8)], &log);
        seen.push((keyword, bytes(&output.report)));
    }
    assert_eq!(
        seen,
        [
            ("none", (0, 0)),
            ("read", (32, 0)),
            ("write", (32, 32)),
            ("readwrite", (32, 32)),
            ("write_all", (0, 32)),
            ("readwrite_all", (32, 32)),
            ("bogus", (32, 32)),
        ]
    );
}
