//! Sessions on the CPU reference backend: residency across calls in both modes, borrows, results,
//! bad handles and arguments, and the argument-aliasing check (accepted, refused, and what goes
//! wrong without it). The programs are written as the passes leave them: transfers where
//! `insert-transfers` would put them, hooks and `hat.arg_access` where `track-accesses` would.

use super::session::{CallArg, CallResult, ResidentBuffer, Session, SessionMode};
use crate::executor::{ArgValue, Executor, ExecutorOptions, TransferMode};
use crate::{CpuBackend, HostBuffer, RuntimeError, Scalar};
use hat_ir::{Context, Op};

fn parse(text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = hat_ir::parse_source(&mut ctx, "session.hat", text).unwrap_or_else(|e| panic!("{e:?}"));
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    (ctx, module)
}

const MAC_KERNEL: &str = r#"
kernel.func @mac(%w: memref<64xf32>, %x: memref<64xf32>, %acc: memref<64xf32>) workgroup(64) {
  %i = kernel.global_id x
  %a = buffer.load %w[%i] : memref<64xf32>
  %b = buffer.load %x[%i] : memref<64xf32>
  %s = buffer.load %acc[%i] : memref<64xf32>
  %p = arith.mulf %a, %b : f32
  %t = arith.addf %s, %p : f32
  buffer.store %t, %acc[%i] : memref<64xf32>
  kernel.return
}
"#;

/// Scenario 17's `@mac_step` with the transfers of a per-call plan (`kernel` strategy).
fn mac_explicit(annotated: bool) -> String {
    let access = if annotated { r#" {hat.arg_access = ["read", "read", "readwrite"]}"# } else { "" };
    format!(
        r#"{MAC_KERNEL}
compute.func @mac_step(%w: memref<64xf32>, %x: memref<64xf32>, %acc: memref<64xf32>) {{
  %c64 = arith.constant 64 : index
  buffer.to_device %w : memref<64xf32>
  buffer.to_device %x : memref<64xf32>
  buffer.to_device %acc : memref<64xf32>
  compute.dispatch @mac[%c64](%w, %x, %acc){access} : (memref<64xf32>, memref<64xf32>, memref<64xf32>)
  buffer.from_device %acc : memref<64xf32>
  compute.return
}}
"#
    )
}

/// Scenario 17's `@mac_step` as `track-accesses` leaves it.
fn mac_tracked() -> String {
    format!(
        r#"module attributes {{hat.tracked}} {{
{MAC_KERNEL}
compute.func @mac_step(%w: memref<64xf32>, %x: memref<64xf32>, %acc: memref<64xf32>) {{
  %c64 = arith.constant 64 : index
  compute.dispatch @mac[%c64](%w, %x, %acc) {{hat.arg_access = ["read", "read", "readwrite"]}} : (memref<64xf32>, memref<64xf32>, memref<64xf32>)
  compute.return
}}
}}
"#
    )
}

fn inputs() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let w: Vec<f32> = (0..64).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
    let x: Vec<f32> = (0..64).map(|i| (i % 5) as f32 * 0.5).collect();
    let acc: Vec<f32> = (0..64).map(|i| i as f32).collect();
    (w, x, acc)
}

fn f32s(values: &[f32]) -> HostBuffer {
    HostBuffer::from_f32(&[values.len()], values).expect("fits")
}

fn mac(acc: &[f32], w: &[f32], x: &[f32], calls: usize) -> Vec<f32> {
    (0..acc.len()).map(|i| (0..calls).fold(acc[i], |a, _| a + w[i] * x[i])).collect()
}

/// (count, bytes) to the device and from the device of one session buffer.
fn moved(session: &Session<'_>, buffer: ResidentBuffer) -> ((u64, u64), (u64, u64)) {
    let t = session.transfers(buffer).expect("in the session");
    ((t.to_device.count, t.to_device.bytes), (t.from_device.count, t.from_device.bytes))
}

/// 100 calls of `@mac_step`; returns the session's figures for w, x, acc after reading acc.
fn hundred_calls(text: &str, mode: SessionMode) -> [((u64, u64), (u64, u64)); 3] {
    let (ctx, module) = parse(text);
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut session = Session::with_mode(verified, &mut backend, mode).expect("the mode fits");
    let (w, x, acc) = inputs();
    let (hw, hx, hacc) = (session.buffer(f32s(&w)), session.buffer(f32s(&x)), session.buffer(f32s(&acc)));
    for call in 0..100 {
        let output = session.call("mac_step", &[hw.into(), hx.into(), hacc.into()]).expect("runs");
        // Nothing comes back during the calls: the caller has not looked.
        assert_eq!(output.report.from_device.count, 0, "call {call}");
    }
    assert_eq!(session.host(hacc).expect("reads").to_f32(), Some(mac(&acc, &w, &x, 100)));
    // Reading again copies nothing more.
    session.host(hacc).expect("reads");
    assert_eq!(session.host(hw).expect("reads").to_f32(), Some(w));
    [moved(&session, hw), moved(&session, hx), moved(&session, hacc)]
}

#[test]
fn an_explicit_plan_moves_unchanged_inputs_once_across_calls() {
    let figures = hundred_calls(&mac_explicit(true), SessionMode::Explicit);
    // w and x: in once, never back; acc: in once, back once (when read).
    assert_eq!(figures, [((1, 256), (0, 0)), ((1, 256), (0, 0)), ((1, 256), (1, 256))]);
}

#[test]
fn tracking_moves_unchanged_inputs_once_across_calls() {
    let figures = hundred_calls(&mac_tracked(), SessionMode::Tracking);
    assert_eq!(figures, [((1, 256), (0, 0)), ((1, 256), (0, 0)), ((1, 256), (1, 256))]);
}

#[test]
fn without_kernel_effects_an_explicit_plan_is_still_right_but_sends_inputs_again() {
    // Every argument of an unannotated dispatch may be written: the device copies of w and x
    // may differ from their host copies after each call, so the plan's copies in are made.
    let figures = hundred_calls(&mac_explicit(false), SessionMode::Explicit);
    assert_eq!(figures[0], ((100, 100 * 256), (0, 0)));
    assert_eq!(figures[2], ((1, 256), (1, 256)));
}

#[test]
fn a_host_edit_sends_only_what_changed() {
    for (text, mode) in [(mac_explicit(true), SessionMode::Explicit), (mac_tracked(), SessionMode::Tracking)] {
        let (ctx, module) = parse(&text);
        let verified = hat_ir::verify_module(&ctx, module).expect("verified");
        let mut backend = CpuBackend::new();
        let mut session = Session::with_mode(verified, &mut backend, mode).expect("the mode fits");
        let (mut w, x, acc) = inputs();
        let (hw, hx, hacc) = (session.buffer(f32s(&w)), session.buffer(f32s(&x)), session.buffer(f32s(&acc)));
        let args: [CallArg; 3] = [hw.into(), hx.into(), hacc.into()];
        session.call("mac_step", &args).expect("runs");
        assert!(session.host_mut(hw).expect("borrows").set(&[3], Scalar::Float(4.0)));
        w[3] = 4.0;
        let output = session.call("mac_step", &args).expect("runs");
        assert_eq!((output.report.to_device.count, output.report.to_device.bytes), (1, 4), "{mode:?}");
        let expected: Vec<f32> = mac(&mac(&acc, &inputs().0, &x, 1), &w, &x, 1);
        assert_eq!(session.host(hacc).expect("reads").to_f32(), Some(expected), "{mode:?}");
        // bytes_mut marks the whole buffer.
        session.host_mut(hx).expect("borrows").bytes_mut()[0] ^= 0;
        let output = session.call("mac_step", &args).expect("runs");
        assert_eq!(output.report.to_device.bytes, 256, "{mode:?}");
    }
}

/// A correct plan that peeks at one element after each dispatch, and copies the buffer back at
/// the return (the caller observes it).
const PEEK: &str = r#"
kernel.func @inc(%data: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %one = arith.constant 1 : i32
  %v = buffer.load %data[%i] : memref<64xi32>
  %w = arith.addi %v, %one : i32
  buffer.store %w, %data[%i] : memref<64xi32>
  kernel.return
}

compute.func @peek(%data: memref<64xi32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  buffer.to_device %data : memref<64xi32>
  compute.dispatch @inc[%c64](%data) {hat.arg_access = ["readwrite"]} : (memref<64xi32>)
  buffer.from_device %data[%c0, %c1] : memref<64xi32>
  %v = buffer.load %data[%c0] : memref<64xi32>
  buffer.from_device %data : memref<64xi32>
  compute.return %v : i32
}
"#;

#[test]
fn an_explicit_plan_fetches_what_the_host_reads_and_defers_the_rest() {
    let (ctx, module) = parse(PEEK);
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut session = Session::new(verified, &mut backend);
    assert_eq!(session.mode(), SessionMode::Explicit);
    let data: Vec<i32> = (0..64).map(|i| i * 3).collect();
    let handle = session.buffer(HostBuffer::from_i32(&[64], &data).expect("fits"));
    for call in 1..=3 {
        let output = session.call("peek", &[handle.into()]).expect("runs");
        assert_eq!(output.results, vec![CallResult::Scalar(Scalar::Int(call))]);
        let report = &output.report;
        let expected_in = if call == 1 { 256 } else { 0 };
        assert_eq!((report.to_device.bytes, report.from_device.count, report.from_device.bytes), (expected_in, 1, 4));
    }
    let expected: Vec<i32> = data.iter().map(|v| v + 3).collect();
    assert_eq!(session.host(handle).expect("reads").to_i32(), Some(expected));
    // The rest of the buffer came back once, when the caller looked.
    assert_eq!(moved(&session, handle), ((1, 256), (4, 3 * 4 + 252)));
}

/// A function returning a buffer it allocates and a kernel fills.
const MAKE: &str = r#"
kernel.func @ramp(%out: memref<8xi32>) workgroup(8) {
  %i = kernel.global_id x
  %v = arith.index_cast %i : index to i32
  buffer.store %v, %out[%i] : memref<8xi32>
  kernel.return
}

compute.func @make() -> memref<8xi32> {
  %c8 = arith.constant 8 : index
  %out = buffer.alloc() : memref<8xi32>
  compute.dispatch @ramp[%c8](%out) {hat.arg_access = ["write_all"]} : (memref<8xi32>)
  buffer.from_device %out : memref<8xi32>
  compute.return %out : memref<8xi32>
}
"#;

#[test]
fn returned_buffers_become_resident_handles_without_a_host_copy() {
    for (text, mode) in [
        (MAKE.to_string(), SessionMode::Explicit),
        (format!("module attributes {{hat.tracked}} {{\n{MAKE}\n}}"), SessionMode::Tracking),
    ] {
        let (ctx, module) = parse(&text);
        let verified = hat_ir::verify_module(&ctx, module).expect("verified");
        let mut backend = CpuBackend::new();
        let mut session = Session::with_mode(verified, &mut backend, mode).expect("fits");
        let output = session.call("make", &[]).expect("runs");
        let [CallResult::Buffer(made)] = output.results[..] else { panic!("{:?}", output.results) };
        assert!(!session.transfers(made).expect("resident").host_copy, "{mode:?}: no host copy until read");
        assert_eq!(session.host(made).expect("reads").to_i32(), Some((0..8).collect()), "{mode:?}");
        assert_eq!(moved(&session, made), ((0, 0), (1, 32)), "{mode:?}");
        let taken = session.take(made).expect("takes");
        assert_eq!(taken.to_i32(), Some((0..8).collect()));
        let error = session.host(made).unwrap_err().to_string();
        assert!(error.contains("was taken back from the session"), "{error}");
    }
}

#[test]
fn bad_handles_and_arguments_are_refused_before_anything_moves() {
    let text = mac_explicit(true);
    let (ctx, module) = parse(&text);
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let (mut backend, mut other_backend) = (CpuBackend::new(), CpuBackend::new());
    let mut other = Session::new(verified, &mut other_backend);
    let foreign = other.buffer(f32s(&[0.0; 64]));
    let mut session = Session::new(verified, &mut backend);
    let (w, x, acc) = inputs();
    let (hw, hx, hacc) = (session.buffer(f32s(&w)), session.buffer(f32s(&x)), session.buffer(f32s(&acc)));
    let small = session.buffer(f32s(&[0.0; 8]));
    let call = |session: &mut Session<'_>, args: &[CallArg]| session.call("mac_step", args).unwrap_err().to_string();
    assert!(call(&mut session, &[hw.into(), hx.into(), foreign.into()]).contains("belongs to another session"));
    assert!(call(&mut session, &[hw.into(), hx.into(), small.into()]).contains("expects memref<64xf32>"));
    assert!(call(&mut session, &[hw.into(), hx.into()]).contains("takes 3 arguments"));
    assert!(call(&mut session, &[hw.into(), hx.into(), Scalar::Int(1).into()]).contains("expects a buffer"));
    let error = session.call("nope", &[]).unwrap_err();
    assert!(matches!(error, RuntimeError::MissingSymbol { .. }), "{error}");
    // Nothing moved.
    assert_eq!(moved(&session, hacc), ((0, 0), (0, 0)));
    // Tracking needs a module instrumented by track-accesses.
    let mut third = CpuBackend::new();
    let refused = Session::with_mode(verified, &mut third, SessionMode::Tracking).err().expect("refused");
    assert!(refused.to_string().contains("track-accesses"), "{refused}");
}

// ----- argument aliasing -------------------------------------------------------------------------

/// `%out = %x + %y`, with the plan `insert-transfers` would place and the effects it would declare.
fn add_program(effects: bool) -> String {
    let effects = if effects { r#" attributes {hat.arg_effects = ["read", "read", "write"]}"# } else { "" };
    format!(
        r#"
kernel.func @add(%x: memref<8xi32>, %y: memref<8xi32>, %out: memref<8xi32>) workgroup(8) {{
  %i = kernel.global_id x
  %a = buffer.load %x[%i] : memref<8xi32>
  %b = buffer.load %y[%i] : memref<8xi32>
  %s = arith.addi %a, %b : i32
  buffer.store %s, %out[%i] : memref<8xi32>
  kernel.return
}}

compute.func @main(%x: memref<8xi32>, %y: memref<8xi32>, %out: memref<8xi32>){effects} {{
  %c8 = arith.constant 8 : index
  buffer.to_device %x : memref<8xi32>
  buffer.to_device %y : memref<8xi32>
  compute.dispatch @add[%c8](%x, %y, %out) {{hat.arg_access = ["read", "read", "write_all"]}} : (memref<8xi32>, memref<8xi32>, memref<8xi32>)
  buffer.from_device %out : memref<8xi32>
  compute.return
}}
"#
    )
}

fn i32s(values: &[i32]) -> HostBuffer {
    HostBuffer::from_i32(&[values.len()], values).expect("fits")
}

#[test]
fn the_same_buffer_passed_to_parameters_the_program_only_reads_is_accepted() {
    let (ctx, module) = parse(&add_program(true));
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let x: Vec<i32> = (0..8).map(|i| i * i).collect();
    // The reference semantics, with two separate buffers of the same contents.
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(verified, &mut backend, ExecutorOptions { mode: TransferMode::Reference });
    let args = vec![ArgValue::Buffer(i32s(&x)), ArgValue::Buffer(i32s(&x)), ArgValue::Buffer(i32s(&[0; 8]))];
    let reference = executor.run("main", args).expect("runs").buffers[2].to_i32();
    let mut backend = CpuBackend::new();
    let mut session = Session::new(verified, &mut backend);
    let (hx, out) = (session.buffer(i32s(&x)), session.buffer(i32s(&[0; 8])));
    session.call("main", &[hx.into(), hx.into(), out.into()]).expect("accepted");
    assert_eq!(session.host(out).expect("reads").to_i32(), reference);
    assert_eq!(reference, Some(x.iter().map(|v| 2 * v).collect()));
    // One buffer, one copy in.
    assert_eq!(moved(&session, hx), ((1, 32), (0, 0)));
}

#[test]
fn the_same_buffer_passed_to_a_parameter_the_program_writes_is_refused_naming_both() {
    let (ctx, module) = parse(&add_program(true));
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut session = Session::new(verified, &mut backend);
    let (hx, hy) = (session.buffer(i32s(&[1; 8])), session.buffer(i32s(&[2; 8])));
    let error = session.call("main", &[hx.into(), hy.into(), hx.into()]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "argument 'out': is the same buffer as argument '%x': '@main' may write '%out', and its transfer plan \
         assumes distinct buffers; pass a separate buffer"
    );
    // Nothing ran, nothing moved.
    assert_eq!(moved(&session, hx), ((0, 0), (0, 0)));
    assert_eq!(session.host(hx).expect("reads").to_i32(), Some(vec![1; 8]));
}

#[test]
fn without_declared_effects_any_aliasing_is_refused() {
    let (ctx, module) = parse(&add_program(false));
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut session = Session::new(verified, &mut backend);
    let (hx, out) = (session.buffer(i32s(&[1; 8])), session.buffer(i32s(&[0; 8])));
    let error = session.call("main", &[hx.into(), hx.into(), out.into()]).unwrap_err().to_string();
    assert!(
        error.starts_with("argument 'y': is the same buffer as argument '%x': '@main' does not declare"),
        "{error}"
    );
    // Distinct buffers are fine.
    let hy = session.buffer(i32s(&[2; 8]));
    session.call("main", &[hx.into(), hy.into(), out.into()]).expect("runs");
    assert_eq!(session.host(out).expect("reads").to_i32(), Some(vec![3; 8]));
}

/// A kernel writes `%a`; the host then reads `%b[1]`. The plan (correct for distinct buffers)
/// copies `%a` back only at the end, since the host never reads it.
const STALE: &str = r#"
kernel.func @ramp(%a: memref<4xi32>) workgroup(4) {
  %i = kernel.global_id x
  %ten = arith.constant 10 : i32
  %v = arith.index_cast %i : index to i32
  %w = arith.muli %v, %ten : i32
  buffer.store %w, %a[%i] : memref<4xi32>
  kernel.return
}
"#;

fn stale_explicit() -> String {
    format!(
        r#"{STALE}
compute.func @main(%a: memref<4xi32>, %b: memref<4xi32>, %out: memref<1xi32>) attributes {{hat.arg_effects = ["write", "read", "write"]}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  compute.dispatch @ramp[%c4](%a) {{hat.arg_access = ["write_all"]}} : (memref<4xi32>)
  %v = buffer.load %b[%c1] : memref<4xi32>
  buffer.store %v, %out[%c0] : memref<1xi32>
  buffer.from_device %a : memref<4xi32>
  compute.return
}}
"#
    )
}

fn stale_tracked() -> String {
    format!(
        r#"module attributes {{hat.tracked}} {{
{STALE}
compute.func @main(%a: memref<4xi32>, %b: memref<4xi32>, %out: memref<1xi32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  compute.dispatch @ramp[%c4](%a) {{hat.arg_access = ["write_all"]}} : (memref<4xi32>)
  buffer.before_host_read %b[%c1, %c1] : memref<4xi32>
  %v = buffer.load %b[%c1] : memref<4xi32>
  buffer.after_host_read %b[%c1, %c1] : memref<4xi32>
  buffer.before_host_write %out[%c0, %c1] {{hat.must_write}} : memref<1xi32>
  buffer.store %v, %out[%c0] : memref<1xi32>
  buffer.after_host_write %out[%c0, %c1] : memref<1xi32>
  compute.return
}}
}}
"#
    )
}

/// The reference semantics of `@main(%h, %h, %out)`: the kernel writes the buffer the host then
/// reads, so `%out[0]` is the ramp's element 1.
const ALIASED_REFERENCE: i32 = 10;

#[test]
fn what_aliasing_would_break_and_how_tracking_gets_it_right() {
    let start = [5, 6, 7, 8];
    // The explicit plan: refused when aliased...
    let (ctx, module) = parse(&stale_explicit());
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut session = Session::new(verified, &mut backend);
    let (h, out) = (session.buffer(i32s(&start)), session.buffer(i32s(&[0])));
    let error = session.call("main", &[h.into(), h.into(), out.into()]).unwrap_err().to_string();
    assert!(error.contains("argument 'b': is the same buffer as argument '%a': '@main' may write '%a'"), "{error}");
    // ... because, run anyway, the host reads the stale host copy: 6, not the ramp's 10.
    session.call_checked("main", &[h.into(), h.into(), out.into()], false).expect("runs unchecked");
    assert_eq!(session.host(out).expect("reads").to_i32(), Some(vec![6]));
    assert_ne!(6, ALIASED_REFERENCE);

    // The reference: the same program with one buffer for both parameters.
    let single = stale_explicit()
        .replace("%b: memref<4xi32>, ", "")
        .replace("buffer.load %b", "buffer.load %a")
        .replace(r#"["write", "read", "write"]"#, r#"["write", "write"]"#);
    let (ctx, module) = parse(&single);
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(verified, &mut backend, ExecutorOptions { mode: TransferMode::Reference });
    let output = executor.run("main", vec![ArgValue::Buffer(i32s(&start)), ArgValue::Buffer(i32s(&[0]))]).unwrap();
    assert_eq!(output.buffers[1].to_i32(), Some(vec![ALIASED_REFERENCE]));

    // Tracking decides per buffer at run time: aliasing is right by construction, and accepted.
    let (ctx, module) = parse(&stale_tracked());
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut session = Session::new(verified, &mut backend);
    assert_eq!(session.mode(), SessionMode::Tracking);
    let (h, out) = (session.buffer(i32s(&start)), session.buffer(i32s(&[0])));
    session.call("main", &[h.into(), h.into(), out.into()]).expect("accepted");
    assert_eq!(session.host(out).expect("reads").to_i32(), Some(vec![ALIASED_REFERENCE]));
    assert_eq!(session.host(h).expect("reads").to_i32(), Some(vec![0, 10, 20, 30]));
}
