//! What the lowering refuses, and how it says so: a diagnostic at the op, with `file:line:col`,
//! never a panic and never a module. The rendered diagnostics are snapshotted.

mod support;

use hat_lowering::LoweringOptions;
use support::{diagnostics, diagnostics_with};

#[test]
fn a_helper_that_calls_itself() {
    let message = diagnostics(
        "kernel.helper @fact(%n: i32) -> i32 {
  %one = arith.constant 1 : i32
  %m = arith.subi %n, %one : i32
  %r = kernel.call @fact(%m) : (i32) -> i32
  kernel.return %r : i32
}
kernel.func @k(%x: i32) {
  %r = kernel.call @fact(%x) : (i32) -> i32
  kernel.return
}",
    );
    insta::assert_snapshot!(message, @"test.hat:4:3: error: recursive call: SPIR-V forbids recursion, and this call closes the cycle '@fact' -> '@fact'");
}

#[test]
fn helpers_that_call_each_other() {
    let message = diagnostics(
        "kernel.helper @even(%n: i32) -> i32 {
  %r = kernel.call @odd(%n) : (i32) -> i32
  kernel.return %r : i32
}
kernel.helper @odd(%n: i32) -> i32 {
  %r = kernel.call @even(%n) : (i32) -> i32
  kernel.return %r : i32
}
kernel.func @k(%x: i32) {
  %r = kernel.call @even(%x) : (i32) -> i32
  kernel.return
}",
    );
    insta::assert_snapshot!(message, @"test.hat:6:3: error: recursive call: SPIR-V forbids recursion, and this call closes the cycle '@even' -> '@odd' -> '@even'");
}

#[test]
fn an_op_the_lowering_does_not_know() {
    let message = diagnostics(
        r#"kernel.func @k(%x: i32) {
  %y = "vendor.mystery"(%x) : (i32) -> i32
  kernel.return
}"#,
    );
    insta::assert_snapshot!(message, @"test.hat:2:3: error: 'vendor.mystery' has no SPIR-V lowering");
}

#[test]
fn every_kernel_reports_its_own_errors() {
    let message = diagnostics(
        r#"kernel.func @a(%x: i32) {
  "vendor.one"() : () -> ()
  kernel.return
}
kernel.func @b(%x: f64) {
  kernel.return
}"#,
    );
    insta::assert_snapshot!(message, @r"
    test.hat:2:3: error: 'vendor.one' has no SPIR-V lowering
    test.hat:5:1: error: a value of type 'f64' needs 64-bit floats (Vulkan feature 'shaderFloat64'), which the device does not have (kernel '@b')
    ");
}

#[test]
fn math_that_glsl_computes_in_32_bits_only() {
    let options = LoweringOptions { features: hat_lowering::DeviceFeatures::all(), ..Default::default() };
    let message = diagnostics_with(
        "kernel.func @k(%x: f64) {
  %y = math.exp %x : f64
  kernel.return
}",
        &options,
    );
    insta::assert_snapshot!(message, @"test.hat:2:3: error: 'math.exp' on f64 has no SPIR-V lowering: GLSL.std.450 computes it in 16 or 32 bits only");
}

#[test]
fn atomics_on_index_and_narrow_elements() {
    let options = LoweringOptions { features: hat_lowering::DeviceFeatures::all(), ..Default::default() };
    let message = diagnostics_with(
        "kernel.func @k(%a: memref<4xindex>, %b: memref<4xi16>, %i: index, %s: i16) {
  %0 = kernel.atomic_rmw add %a[%i], %i : memref<4xindex>
  %1 = kernel.atomic_rmw add %b[%i], %s : memref<4xi16>
  kernel.return
}",
        &options,
    );
    insta::assert_snapshot!(message, @"test.hat:2:3: error: atomics on 'index' elements have no SPIR-V lowering: the device stores 'index' elements in 64 bits but computes 'index' in 32; use 'i32' or 'i64' elements");
}

#[test]
fn limits_of_the_device() {
    let message = diagnostics(
        "kernel.func @big() workgroup(256) {
  kernel.return
}
kernel.func @hungry() workgroup(64) {
  %tile = kernel.local_alloc : memref<4096xf32>
  %more = kernel.local_alloc : memref<16xf32>
  kernel.return
}
kernel.func @chatty(%a: f32, %b: f32, %c: f32, %d: f32, %e: f32, %f: f32, %g: f32, %h: f32, %i: f32, %j: f32, %k: f32, %l: f32, %m: f32, %n: f32, %o: f32, %p: f32, %q: f32, %r: f32, %s: f32, %t: f32, %u: f32, %v: f32, %w: f32, %x: f32, %y: f32, %z: f32, %aa: f32, %ab: f32, %ac: f32, %ad: f32) {
  kernel.return
}",
    );
    insta::assert_snapshot!(message);
}

#[test]
fn a_module_without_kernels() {
    let message = diagnostics("kernel.helper @h() {\n  kernel.return\n}");
    insta::assert_snapshot!(message, @"test.hat:1:1: error: the module has no kernel to lower to SPIR-V");
}

#[test]
fn types_that_have_no_lowering() {
    let message = diagnostics(
        "kernel.func @k(%x: bf16) {
  kernel.return
}",
    );
    insta::assert_snapshot!(message, @"test.hat:1:1: error: values of type 'bf16' have no SPIR-V lowering");
}

#[test]
fn an_index_constant_too_wide_for_the_device() {
    let message = diagnostics(
        "kernel.func @k() {
  %big = arith.constant 1099511627776 : index
  kernel.return
}",
    );
    insta::assert_snapshot!(message, @"test.hat:2:3: error: the index constant 1099511627776 does not fit in the device's 32-bit 'index'");
}
