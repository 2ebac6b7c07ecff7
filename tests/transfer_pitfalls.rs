//! The planner's one regression test that is not a file test: a vendor's loop, planned by
//! `insert-transfers{strategy=static}`, run in explicit mode on the CPU backend (which poisons
//! fresh device memory) and compared with the reference semantics.
//!
//! The other regressions of the planner are file tests, each a program and its plan:
//! `tests/filetests/insert-transfers/regressions/`. This one stays here because its program is
//! written in `hat_test_dialects::vendor` (test-dialects/src/vendor.rs), a dialect defined outside hat's crates to show that ops
//! known to hat only through the interfaces take part in the passes. `hat-opt` does not register
//! it (it exists for the tests): a file test cannot parse the program, and with
//! `--allow-unregistered-dialect` its ops would have no interfaces, which is what this tests.

use hat_test_dialects::vendor as vendor_dialect;

use hat_ir::pass::PassManager;
use hat_ir::{parse_source, verify_module, Context, Op};
use hat_runtime::{ArgValue, CpuBackend, Executor, ExecutorOptions, HostBuffer, RunOutput, Scalar, TransferMode};

const STATIC: &str = "insert-transfers{strategy=static}";

/// `text` parsed with the vendor dialect registered, after `pipeline` if one is given.
fn compile(text: &str, pipeline: Option<&str>) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    vendor_dialect::register(&mut ctx);
    let module = parse_source(&mut ctx, "pitfall.hat", text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    if let Some(pipeline) = pipeline {
        let mut manager = PassManager::new("builtin.module", Default::default());
        manager.add_pipeline(&hat_passes::registry(), pipeline).unwrap_or_else(|e| panic!("{e}"));
        manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{pipeline}: {e:?}"));
    }
    verify_module(&ctx, module).unwrap_or_else(|e| panic!("does not verify after {pipeline:?}: {e:?}"));
    (ctx, module)
}

fn run(ctx: &Context, module: Op, mode: TransferMode, args: &[ArgValue]) -> RunOutput {
    let module = verify_module(ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(module, &mut backend, ExecutorOptions { mode });
    executor.run("main", args.to_vec()).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// Plans `text` with `pipeline`, runs it and the reference on `args`, asserts that the results
/// and buffer arguments are equal, and gives the plan's report and IR.
fn check(text: &str, pipeline: &str, args: &[ArgValue]) -> (RunOutput, String) {
    let (ctx, module) = compile(text, None);
    let reference = run(&ctx, module, TransferMode::Reference, args);
    let (ctx, module) = compile(text, Some(pipeline));
    let ir = hat_ir::printer::print_op(&ctx, module, Default::default());
    let planned = run(&ctx, module, TransferMode::Explicit, args);
    assert_eq!(planned.results, reference.results, "results differ\n{ir}");
    assert_eq!(planned.buffers, reference.buffers, "buffer arguments differ\n{ir}");
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
fn a_vendor_loop_gets_guarded_hoisted_transfers_through_the_interfaces() {
    // `vendor.repeat` (test-dialects/src/vendor.rs) is a counted loop known to hat only by its
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
        let (output, ir) = check(&text, STATIC, &[ramp(16), int(n)]);
        assert_eq!(moved(&output), if n > 0 { (64, 64) } else { (0, 0) }, "n = {n}\n{ir}");
        let loop_at = ir.find("vendor.repeat").expect("the loop");
        let copy_in = ir.find("buffer.to_device").expect("a copy in");
        assert!(copy_in < loop_at, "the copy in is hoisted above the loop\n{ir}");
    }
}
