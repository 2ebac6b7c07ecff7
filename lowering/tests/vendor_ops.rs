//! A vendor's loop, conditional, device function and call ops in kernels: the lowering knows
//! none of their names and lowers them through the op interfaces alone, as the CPU backend runs
//! them. The dialect `dev` (`hat_test_dialects::dev`) is defined with `hat-ir`'s public API, with layouts unlike
//! `scf`'s:
//! - `"dev.count"(%step, %upper, %lower, inits...) ({ ^bb0(carried..., %iv): ... "dev.again"(next...) })`
//!   — a counted loop, bounds first and reversed, the induction variable last;
//! - `"dev.repeat_while"(inits...) ({ ^bb0(carried...): ... "dev.again_if"(%go, next...) })` — a
//!   do-while loop: the body runs, then again while `%go`;
//! - `"dev.unless"(%skip, defaults...) ({ ... "dev.again"(values...) })` — runs its region when
//!   `%skip` is false, else its results are the defaults;
//! - `"dev.device_fn"` (a device function ending in `"dev.give"`), called by `"dev.run" {function = @f}`.
//!
//! The shared vendor dialect (`hat_test_dialects::vendor`) (its `vendor.repeat`, bounds last) lowers
//! in a kernel too.

mod support;
use hat_test_dialects::dev::context;

use hat_lowering::{disassemble, lower_module, LoweringOptions};

fn lower(text: &str) -> Result<String, String> {
    let mut ctx = context();
    let module = hat_ir::parse_source(&mut ctx, "dev.hat", text).map_err(|e| format!("{e:?}"))?;
    let verified =
        hat_ir::verify_module(&ctx, module).map_err(|d| hat_ir::diagnostics::render_short(&ctx.sources, &d))?;
    let spirv = lower_module(&ctx, verified, &LoweringOptions::default())
        .map_err(|d| hat_ir::diagnostics::render_short(&ctx.sources, &d))?;
    support::spirv_val(&spirv.words);
    Ok(disassemble(&spirv.words).expect("disassembles"))
}

#[test]
fn vendor_loops_conditionals_and_calls_lower_through_their_interfaces() {
    if !support::spirv_tools_linked() {
        return;
    }
    let text = lower(
        r#""dev.device_fn"() ({
^bb0(%x: i32):
  %one = arith.constant 1 : i32
  %y = arith.addi %x, %one : i32
  "dev.give"(%y) : (i32) -> ()
}) {sym_name = "inc", function_type = (i32) -> i32} : () -> ()

kernel.func @k(%data: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  %ten = arith.constant 10 : i32
  %v = buffer.load %data[%i] : memref<64xi32>
  %counted = "dev.count"(%c1, %c4, %c0, %v) ({
  ^bb0(%acc: i32, %k: index):
    %next = "dev.run"(%acc) {function = @inc} : (i32) -> i32
    "dev.again"(%next) : (i32) -> ()
  }) : (index, index, index, i32) -> i32
  %grown = "dev.repeat_while"(%counted) ({
  ^bb0(%x: i32):
    %y = arith.addi %x, %x : i32
    %go = arith.cmpi slt, %y, %ten : i32
    "dev.again_if"(%go, %y) : (i1, i32) -> ()
  }) : (i32) -> i32
  %small = arith.cmpi slt, %grown, %ten : i32
  %picked = "dev.unless"(%small, %zero) ({
    %z = arith.muli %grown, %grown : i32
    "dev.again"(%z) : (i32) -> ()
  }) : (i1, i32) -> i32
  %repeated = "vendor.repeat"(%picked, %c0, %c4, %c1) ({
  ^bb0(%iv: index, %r: i32):
    %s = arith.addi %r, %r : i32
    "vendor.next"(%s) : (i32) -> ()
  }) : (i32, index, index, index) -> i32
  buffer.store %repeated, %data[%i] : memref<64xi32>
  kernel.return
}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Three loops (dev.count, dev.repeat_while, vendor.repeat) and a call of the device function.
    assert_eq!(text.matches("OpLoopMerge").count(), 3, "{text}");
    assert_eq!(text.matches("OpFunctionCall").count(), 1, "{text}");
    assert!(text.contains("OpName %k_inc \"k.inc\""), "{text}");
}

#[test]
fn a_vendor_branch_between_blocks_is_a_diagnostic() {
    let message = lower(
        r#"kernel.func @k(%x: i32) {
  "vendor.jump"()[^bb1] : () -> ()
^bb1:
  kernel.return
}"#,
    )
    .expect_err("a branch between blocks does not lower");
    assert!(message.contains("dev.hat:"), "{message}");
    assert!(message.contains("no structured SPIR-V"), "{message}");
}
