//! A vendor's region-branch op decided by an `i1`, written as a vendor reads the interface's
//! contract: `successors` gets the constants of the deciding operands as
//! [`hat_ir::interfaces::constant_integer`] gives them, so an `i1` is 0 or 1. The host executor,
//! the CPU backend and the analyses must all pass the same values.

use hat_ir::interfaces::constant_integer;
use hat_ir::{parse_source, verify_module};
use hat_runtime::{ArgValue, CpuBackend, Executor, ExecutorOptions, Scalar};
use hat_test_dialects::dev::context;

/// `@main(%n)`: `n > 0 ? 10 * n : -n`, through `dev.choose` (which answers only for 0 and 1).
const CHOOSE: &str = r#"
"vendor.proc"() ({
^bb0(%n: i64):
  %zero = arith.constant 0 : i64
  %ten = arith.constant 10 : i64
  %positive = arith.cmpi sgt, %n, %zero : i64
  %r = "dev.choose"(%positive) ({
    %t = arith.muli %n, %ten : i64
    "dev.again"(%t) : (i64) -> ()
  }, {
    %m = arith.subi %zero, %n : i64
    "dev.again"(%m) : (i64) -> ()
  }) : (i1) -> i64
  "vendor.ret"(%r) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;

#[test]
fn the_executor_passes_an_i1_to_successors_as_constant_integer_does() {
    let mut ctx = context();
    let module = parse_source(&mut ctx, "choose.hat", CHOOSE).expect("parses");
    // The convention: a true i1 constant is 1.
    let t = parse_source(&mut ctx, "t.hat", "%t = arith.constant true").expect("parses");
    let constant = ctx.result(ctx.body_ops(t)[0], 0);
    assert_eq!(constant_integer(&ctx, constant), Some(1));

    let verified = verify_module(&ctx, module).unwrap_or_else(|e| panic!("{e:?}"));
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(verified, &mut backend, ExecutorOptions::default());
    for (n, expected) in [(3i64, 30i64), (0, 0), (-4, 4)] {
        let output =
            executor.run("main", vec![ArgValue::Scalar(Scalar::Int(n))]).unwrap_or_else(|e| panic!("n = {n}: {e}"));
        assert_eq!(output.results, [ArgValue::Scalar(Scalar::Int(expected))], "n = {n}");
    }
}

/// A callee in CFG form with two returns (one in a block nothing branches to, which may use only
/// its own values: hat's dominance is stricter than LLVM's there), called from a loop; a
/// procedure that calls itself.
const CFG_CALLEE: &str = r#"
"vendor.proc"() ({
^bb0(%x: i64):
  %one = arith.constant 1 : i64
  %y = arith.addi %x, %one : i64
  "vendor.jump"()[^bb1] : () -> ()
^bb1:
  "vendor.ret"(%y) : (i64) -> ()
^bb2(%z: i64):
  "vendor.ret"(%z) : (i64) -> ()
}) {sym_name = "next", function_type = (i64) -> i64} : () -> ()
"vendor.proc"() ({
^bb0(%x: i64):
  %r = "vendor.invoke"(%x) {target = @self} : (i64) -> i64
  "vendor.ret"(%r) : (i64) -> ()
}) {sym_name = "self", function_type = (i64) -> i64} : () -> ()
"vendor.proc"() ({
^bb0(%n: i64):
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %sum = "vendor.repeat"(%zero, %zero, %n, %one) ({
  ^bb0(%i: i64, %acc: i64):
    %t = "vendor.invoke"(%acc) {target = @next} : (i64) -> i64
    "vendor.next"(%t) : (i64) -> ()
  }) : (i64, i64, i64, i64) -> i64
  %never = arith.cmpi slt, %n, %zero : i64
  "vendor.ret"(%sum) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;

#[test]
fn inline_keeps_calls_of_cfg_and_recursive_callees_and_the_result_verifies() {
    use hat_ir::pass::PassManager;
    for pipeline in ["inline", "inline,canonicalize,cse,dce", "canonicalize"] {
        let mut ctx = context();
        let module = parse_source(&mut ctx, "cfg.hat", CFG_CALLEE).expect("parses");
        let errors = hat_ir::verify(&ctx, module);
        assert!(errors.is_empty(), "{errors:?}");
        let mut manager = PassManager::new("builtin.module", Default::default());
        manager.add_pipeline(&hat_passes::registry(), pipeline).unwrap();
        manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{pipeline}: {e:?}"));
        let errors = hat_ir::verify(&ctx, module);
        let text = hat_ir::print_op(&ctx, module, Default::default());
        assert!(errors.is_empty(), "{pipeline}: {errors:?}\n{text}");
        assert!(text.contains("target = @next"), "{pipeline}: the CFG callee's call is kept\n{text}");
        assert!(text.contains("\"next\""), "{pipeline}: the CFG callee is kept\n{text}");
        // The host executor runs structured control flow only: a clean error, located.
        let verified = verify_module(&ctx, module).unwrap();
        let mut backend = CpuBackend::new();
        let mut executor = Executor::new(verified, &mut backend, ExecutorOptions::default());
        let error = executor.run("main", vec![ArgValue::Scalar(Scalar::Int(3))]).unwrap_err();
        assert!(error.to_string().contains("structured control flow only"), "{pipeline}: {error}");
    }
}

/// canonicalize hoists a constant of a block nothing branches to into the entry block, whose
/// values that block may not use (hat's dominance: an unreachable block is dominated by itself
/// only), so the pass produces invalid IR. The constant placement of the greedy driver
/// (`ir/src/rewrite/greedy.rs`, `place_constant`) should leave constants of unreachable blocks
/// where they are (or dominance should follow LLVM's rule there).
#[test]
fn canonicalize_leaves_constants_of_unreachable_blocks_valid() {
    use hat_ir::pass::PassManager;
    let text = r#"
"vendor.proc"() ({
^bb0(%x: i64):
  %one = arith.constant 1 : i64
  %y = arith.addi %x, %one : i64
  "vendor.jump"()[^bb1] : () -> ()
^bb1:
  "vendor.ret"(%y) : (i64) -> ()
^bb2:
  %zero = arith.constant 0 : i64
  "vendor.ret"(%zero) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;
    let mut ctx = context();
    let module = parse_source(&mut ctx, "unreachable.hat", text).expect("parses");
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    let mut manager = PassManager::new("builtin.module", Default::default());
    manager.add_pipeline(&hat_passes::registry(), "canonicalize").unwrap();
    manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{e:?}"));
}

/// A vendor's region-branch interface that forwards more values than the successor takes
/// (`dev.unless` forwards its defaults to the results: here two defaults, one result). Both
/// engines read hops through one compiler (`slot_code::region_hop`), which refuses it with the
/// op's location before anything runs, on the host and in a kernel.
#[test]
fn a_hop_that_forwards_more_values_than_its_successor_takes_is_refused_by_both_engines() {
    let unless = r#"%r = "dev.unless"(%no, %one, %one) ({
    "dev.again"(%one) : (i64) -> ()
  }) : (i1, i64, i64) -> i64"#;
    let host = format!(
        r#"
"vendor.proc"() ({{
^bb0(%n: i64):
  %no = arith.constant false
  %one = arith.constant 1 : i64
  {unless}
  "vendor.ret"(%r) : (i64) -> ()
}}) {{sym_name = "main", function_type = (i64) -> i64}} : () -> ()
"#
    );
    let kernel = format!(
        r#"
kernel.func @k(%b: memref<4xi64>) workgroup(4) {{
  %i = kernel.global_id x
  %no = arith.constant false
  %one = arith.constant 1 : i64
  {unless}
  buffer.store %r, %b[%i] : memref<4xi64>
  kernel.return
}}
compute.func @main(%b: memref<4xi64>) {{
  %c4 = arith.constant 4 : index
  compute.dispatch @k[%c4](%b) : (memref<4xi64>)
  compute.return
}}
"#
    );
    for (name, text, argument) in [
        ("host.hat", host, ArgValue::Scalar(Scalar::Int(1))),
        ("kernel.hat", kernel, ArgValue::Buffer(hat_runtime::HostBuffer::from_i64(&[4], &[0; 4]).expect("fits"))),
    ] {
        let mut ctx = context();
        let module = parse_source(&mut ctx, name, &text).expect("parses");
        let verified = verify_module(&ctx, module).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let mut backend = CpuBackend::new();
        let mut executor = Executor::new(verified, &mut backend, ExecutorOptions::default());
        let error = executor.run("main", vec![argument]).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("2 value(s) are forwarded to the op's results, which take 1"), "{name}: {message}");
        assert!(message.contains("dev.unless"), "{name}: {message}");
        let (file, line, column) = ctx.sources.file_line_col(error.location()).expect("located");
        assert_eq!((file, line, column), (name, 6, 3), "{name}: at the op");
    }
}

/// A vendor's call that passes fewer arguments than its callee has parameters (the verifier
/// knows only its own calls): both engines find callees through one compiler, which refuses it
/// at the call, on the host and in a kernel, instead of leaving a parameter unset.
#[test]
fn a_call_whose_arguments_do_not_fit_its_callee_is_refused_by_both_engines() {
    let host = r#"
"dev.host_fn"() ({
^bb0(%a: i64, %b: i64):
  %s = arith.addi %a, %b : i64
  "dev.give"(%s) : (i64) -> ()
}) {sym_name = "add", function_type = (i64, i64) -> i64} : () -> ()
"vendor.proc"() ({
^bb0(%n: i64):
  %r = "dev.run"(%n) {function = @add} : (i64) -> i64
  "vendor.ret"(%r) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;
    let kernel = r#"
"dev.device_fn"() ({
^bb0(%a: i64, %b: i64):
  %s = arith.addi %a, %b : i64
  "dev.give"(%s) : (i64) -> ()
}) {sym_name = "add", function_type = (i64, i64) -> i64} : () -> ()
kernel.func @k(%b: memref<4xi64>) workgroup(4) {
  %i = kernel.global_id x
  %one = arith.constant 1 : i64
  %r = "dev.run"(%one) {function = @add} : (i64) -> i64
  buffer.store %r, %b[%i] : memref<4xi64>
  kernel.return
}
compute.func @main(%b: memref<4xi64>) {
  %c4 = arith.constant 4 : index
  compute.dispatch @k[%c4](%b) : (memref<4xi64>)
  compute.return
}
"#;
    for (name, text, argument, line) in [
        ("host.hat", host, ArgValue::Scalar(Scalar::Int(1)), 9),
        ("kernel.hat", kernel, ArgValue::Buffer(hat_runtime::HostBuffer::from_i64(&[4], &[0; 4]).expect("fits")), 10),
    ] {
        let mut ctx = context();
        let module = parse_source(&mut ctx, name, text).expect("parses");
        let verified = verify_module(&ctx, module).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let mut backend = CpuBackend::new();
        let mut executor = Executor::new(verified, &mut backend, ExecutorOptions::default());
        let error = executor.run("main", vec![argument]).unwrap_err();
        let message = error.to_string();
        assert!(
            message
                .contains("passes 1 arguments and takes 1 results, but '@add' has 2 parameters and returns 1 values"),
            "{name}: {message}"
        );
        let at = ctx.sources.file_line_col(error.location()).expect("located");
        assert_eq!(at, (name, line, 3), "{name}: at the call");
    }
}
