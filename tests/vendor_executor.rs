//! The host executor runs a vendor's dialect through the op interfaces alone: the vendor's
//! function (`vendor.proc`), call (`vendor.invoke`, callee attribute `target`) and counted loop
//! (`vendor.repeat`, bounds last) of `hat_test_dialects::vendor`, and ops of
//! `hat_test_dialects::dev` that only implement `RegionBranchOpInterface` (`dev.switch`, a
//! multi-way branch on an integer; `dev.repeat_while`, a do-while loop whose terminator decides)
//! and a function declaration (`dev.extern`) that the embedding program implements as a host
//! function. No hat crate knows any of these names.

use hat_test_dialects::vendor as vendor_dialect;

use hat_ir::{parse_source, verify_module, Context, Op};
use hat_runtime::{ArgValue, CpuBackend, Executor, ExecutorOptions, HostCall, RuntimeError, Scalar};

fn run(ctx: &Context, module: Op, n: i64) -> Result<Vec<ArgValue>, RuntimeError> {
    let module = verify_module(ctx, module).unwrap_or_else(|errors| panic!("{errors:?}"));
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(module, &mut backend, ExecutorOptions::default());
    executor.register_host_function(
        "triple",
        Box::new(|call: &mut HostCall| Ok(vec![Scalar::Int(3 * call.scalar(0)?.as_i64())])),
    );
    executor.run("main", vec![ArgValue::Scalar(Scalar::Int(n))]).map(|output| output.results)
}

#[test]
fn the_executor_runs_the_vendor_program_through_interfaces() {
    let mut ctx = vendor_dialect::context();
    let module = parse_source(&mut ctx, "vendor.hat", vendor_dialect::SUM_OF_TWICE).expect("parses");
    for (n, expected) in [(0, 0), (1, 0), (10, 90)] {
        // sum of twice(i) for i < n.
        assert_eq!(expected, (0..n).map(|i| 2 * i).sum::<i64>());
        let results = run(&ctx, module, n).unwrap_or_else(|e| panic!("n = {n}: {e}"));
        assert_eq!(results, [ArgValue::Scalar(Scalar::Int(expected))], "n = {n}");
    }
}

/// `@main(%n)`: a do-while loop sums `triple(k)` (a host function) for `k < max(n, 1)`; then a
/// switch on `n % 3` returns the sum, twice the sum, or the sum plus 1000.
const PROBE: &str = r#"
"dev.extern"() {sym_name = "triple", function_type = (i64) -> i64} : () -> ()
"vendor.proc"() ({
^bb0(%n: i64):
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %two = arith.constant 2 : i64
  %three = arith.constant 3 : i64
  %thousand = arith.constant 1000 : i64
  %k, %sum = "dev.repeat_while"(%zero, %zero) ({
  ^bb0(%i: i64, %acc: i64):
    %t = "vendor.invoke"(%i) {target = @triple} : (i64) -> i64
    %acc2 = arith.addi %acc, %t : i64
    %i2 = arith.addi %i, %one : i64
    %more = arith.cmpi slt, %i2, %n : i64
    "dev.again_if"(%more, %i2, %acc2) : (i1, i64, i64) -> ()
  }) : (i64, i64) -> (i64, i64)
  %which = arith.remsi %n, %three : i64
  %r = "dev.switch"(%which) ({
    "dev.again"(%sum) : (i64) -> ()
  }, {
    %twice = arith.muli %sum, %two : i64
    "dev.again"(%twice) : (i64) -> ()
  }, {
    %plus = arith.addi %sum, %thousand : i64
    "dev.again"(%plus) : (i64) -> ()
  }) : (i64) -> i64
  "vendor.ret"(%r) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;

#[test]
fn region_branch_ops_and_declarations_of_another_dialect_run() {
    let mut ctx = hat_test_dialects::dev::context();
    let module = parse_source(&mut ctx, "dev.hat", PROBE).expect("parses");
    for n in [0i64, 1, 2, 3, 4, 5, 10] {
        let sum: i64 = (0..n.max(1)).map(|k| 3 * k).sum();
        let expected = match n % 3 {
            0 => sum,
            1 => 2 * sum,
            _ => sum + 1000,
        };
        let results = run(&ctx, module, n).unwrap_or_else(|e| panic!("n = {n}: {e}"));
        assert_eq!(results, [ArgValue::Scalar(Scalar::Int(expected))], "n = {n}");
    }
}

#[test]
fn an_op_the_executor_does_not_know_is_an_error_at_its_location() {
    let text = r#"
"vendor.proc"() ({
^bb0(%n: i64):
  %m = "dev.mystery"(%n) : (i64) -> i64
  "vendor.ret"(%m) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;
    let mut ctx = hat_test_dialects::dev::context();
    ctx.allow_unregistered = true;
    let module = parse_source(&mut ctx, "mystery.hat", text).expect("parses");
    let error = run(&ctx, module, 1).unwrap_err();
    assert!(
        error.to_string().starts_with("cannot run 'dev.mystery': the host executor does not know this op"),
        "{error}"
    );
    assert_eq!(ctx.sources.describe(error.location()), "mystery.hat:4:3");
}

#[test]
fn the_verified_token_covers_the_ops_nested_in_its_module() {
    let mut ctx = vendor_dialect::context();
    let module = parse_source(&mut ctx, "vendor.hat", vendor_dialect::SUM_OF_TWICE).expect("parses");
    let other = parse_source(&mut ctx, "other.hat", vendor_dialect::SUM_OF_TWICE).expect("parses");
    let verified = verify_module(&ctx, module).expect("verifies");
    let function = ctx.body_ops(module)[0];
    assert_eq!(verified.nested(function).map(|v| v.op()), Some(function));
    assert!(verified.nested(ctx.body_ops(other)[0]).is_none(), "an op of another module is not covered");
    // A module that does not verify gives no token, only the diagnostics.
    let broken = vendor_dialect::SUM_OF_TWICE.replace("\"vendor.ret\"(%y) : (i64) -> ()", "");
    let mut bad = vendor_dialect::context();
    let module = parse_source(&mut bad, "broken.hat", &broken).expect("parses");
    assert!(verify_module(&bad, module).is_err());
}

#[test]
fn a_call_that_disagrees_with_its_callee_is_an_error_not_a_panic() {
    // The vendor's call has no verifier of its arguments: the executor checks them.
    let text = vendor_dialect::SUM_OF_TWICE.replace(
        "\"vendor.invoke\"(%i) {target = @twice} : (i64) -> i64",
        "\"vendor.invoke\"(%i, %i) {target = @twice} : (i64, i64) -> i64",
    );
    let mut ctx = vendor_dialect::context();
    let module = parse_source(&mut ctx, "vendor.hat", &text).expect("parses");
    let error = run(&ctx, module, 3).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot run 'vendor.invoke': passes 2 arguments and takes 1 results, but '@twice' has 1 parameters and returns 1 values"
    );
}
