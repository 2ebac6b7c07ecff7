//! `track-accesses` and the tracking mode on a vendor's host code (`hat_test_dialects::vendor` (test-dialects/src/vendor.rs)): the
//! hooks go inside a `vendor.proc` called through `vendor.invoke` and inside a `vendor.repeat`
//! loop, found through the callable, call and loop interfaces alone; the call itself is not
//! wrapped (its callee's body is). The results equal the reference semantics', and each
//! iteration's peek brings back one element.

use hat_test_dialects::vendor as vendor_dialect;

use hat_ir::pass::{PassManager, PassManagerOptions};
use hat_ir::{parse_source, print_op, verify_module, Context, Op, PrintOptions};
use hat_runtime::{ArgValue, CpuBackend, Executor, ExecutorOptions, HostBuffer, RunOutput, Scalar, TransferMode};

const PROGRAM: &str = r#"
kernel.func @inc(%data: memref<8xi32>) workgroup(8) {
  %i = kernel.global_id x
  %one = arith.constant 1 : i32
  %v = buffer.load %data[%i] : memref<8xi32>
  %w = arith.addi %v, %one : i32
  buffer.store %w, %data[%i] : memref<8xi32>
  kernel.return
}
"vendor.proc"() ({
^bb0(%data: memref<8xi32>):
  %c0 = arith.constant 0 : index
  %v = buffer.load %data[%c0] : memref<8xi32>
  "vendor.ret"(%v) : (i32) -> ()
}) {sym_name = "peek", function_type = (memref<8xi32>) -> i32} : () -> ()
"vendor.proc"() ({
^bb0(%data: memref<8xi32>, %n: i32):
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %c8 = arith.constant 8 : index
  %sum = "vendor.repeat"(%zero, %zero, %n, %one) ({
  ^bb0(%i: i32, %acc: i32):
    compute.dispatch @inc[%c8](%data) : (memref<8xi32>)
    %p = "vendor.invoke"(%data) {target = @peek} : (memref<8xi32>) -> i32
    %next = arith.addi %acc, %p : i32
    "vendor.next"(%next) : (i32) -> ()
  }) : (i32, i32, i32, i32) -> i32
  "vendor.ret"(%sum) : (i32) -> ()
}) {sym_name = "main", function_type = (memref<8xi32>, i32) -> i32} : () -> ()
"#;

fn load(track: bool) -> (Context, Op) {
    let mut ctx = vendor_dialect::context();
    let module = parse_source(&mut ctx, "vendor.hat", PROGRAM).unwrap_or_else(|e| panic!("{e:?}"));
    if track {
        let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
        manager.add_pipeline(&hat_passes::registry(), "builtin.module(track-accesses)").expect("valid");
        manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{e:?}"));
    }
    (ctx, module)
}

fn run(ctx: &Context, module: Op, mode: TransferMode, n: i64) -> RunOutput {
    let verified = verify_module(ctx, module).unwrap_or_else(|e| panic!("{e:?}"));
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(verified, &mut backend, ExecutorOptions { mode });
    let data = HostBuffer::from_i32(&[8], &[10, 20, 30, 40, 50, 60, 70, 80]).expect("fits");
    executor.run("main", vec![ArgValue::Buffer(data), ArgValue::Scalar(Scalar::Int(n))]).expect("runs")
}

#[test]
fn hooks_go_where_the_vendor_interfaces_lead_and_tracking_equals_the_reference() {
    let (ctx, module) = load(true);
    let printed = print_op(&ctx, module, PrintOptions::default());
    // One load, wrapped once, in @peek; the call of @peek is not wrapped.
    assert_eq!(printed.matches("buffer.before_host_read").count(), 1, "{printed}");
    let peek = printed.find("sym_name = \"peek\"").expect("peek");
    let hook = printed.find("buffer.before_host_read").expect("a hook");
    let main = printed.find("sym_name = \"main\"").expect("main");
    assert!(hook < peek && peek < main, "the hook is in @peek's body: {printed}");
    assert!(printed.contains("hat.arg_access"), "{printed}");

    let (plain_ctx, plain) = load(false);
    for n in [0, 1, 5] {
        let reference = run(&plain_ctx, plain, TransferMode::Reference, n);
        let tracking = run(&ctx, module, TransferMode::Tracking, n);
        assert_eq!(tracking.results, reference.results, "n = {n}");
        assert_eq!(tracking.buffers, reference.buffers, "n = {n}");
        let report = &tracking.report;
        let expected = if n == 0 { ((0, 0), (0, 0)) } else { ((1, 32), (n as u64 + 1, 4 * n as u64 + 28)) };
        assert_eq!(
            ((report.to_device.count, report.to_device.bytes), (report.from_device.count, report.from_device.bytes)),
            expected,
            "n = {n}"
        );
    }
}
