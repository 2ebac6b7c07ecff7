//! Scenario 17 through the library API: `examples/17-residency.hat` compiled once by
//! `track-accesses`, then called 100 times from Rust in a `Session`, with its buffers kept on the
//! device between calls. The inputs go to the device once for all the calls, `%acc` comes back
//! once, when the caller reads it — and the results are the reference semantics'.

use hat_ir::pass::{PassManager, PassManagerOptions};
use hat_ir::{parse_source, Context, Op};
use hat_runtime::{
    ArgValue, CallArg, CpuBackend, Executor, ExecutorOptions, HostBuffer, Scalar, Session, SessionMode, TransferMode,
};
use std::path::Path;

fn example_17(pipeline: Option<&str>) -> (Context, Op) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/17-residency.hat");
    let text = std::fs::read_to_string(&path).expect("example 17");
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "examples/17-residency.hat", &text).expect("parses");
    if let Some(pipeline) = pipeline {
        let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
        manager.add_pipeline(&hat_passes::registry(), pipeline).expect("a valid pipeline");
        manager.run(&mut ctx, module).expect("the pipeline runs");
    }
    (ctx, module)
}

fn inputs() -> [Vec<f32>; 3] {
    let w = (0..64).map(|i| (i % 9) as f32 / 8.0 - 0.5).collect();
    let x = (0..64).map(|i| (i % 4) as f32 * 0.75).collect();
    let acc = (0..64).map(|i| i as f32 / 4.0).collect();
    [w, x, acc]
}

fn f32s(values: &[f32]) -> HostBuffer {
    HostBuffer::from_f32(&[64], values).expect("fits")
}

/// `%acc` after `@main` (100 calls of `@mac_step`) under the reference semantics.
fn reference_after_main(times: usize) -> Vec<f32> {
    let (ctx, module) = example_17(None);
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(verified, &mut backend, ExecutorOptions { mode: TransferMode::Reference });
    let [w, x, mut acc] = inputs();
    for _ in 0..times {
        let args = vec![ArgValue::Buffer(f32s(&w)), ArgValue::Buffer(f32s(&x)), ArgValue::Buffer(f32s(&acc))];
        acc = executor.run("main", args).expect("runs").buffers[2].to_f32().expect("f32");
    }
    acc
}

#[test]
fn a_hundred_calls_move_the_inputs_once() {
    let (ctx, module) = example_17(Some("builtin.module(track-accesses)"));
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut session = Session::new(verified, &mut backend);
    assert_eq!(session.mode(), SessionMode::Tracking);
    let [w, x, acc] = inputs();
    let (hw, hx, hacc) = (session.buffer(f32s(&w)), session.buffer(f32s(&x)), session.buffer(f32s(&acc)));
    let args: [CallArg; 3] = [hw.into(), hx.into(), hacc.into()];
    for call in 0..100 {
        let report = session.call("mac_step", &args).expect("runs").report;
        let expected_in = if call == 0 { 3 } else { 0 };
        assert_eq!((report.to_device.count, report.from_device.count), (expected_in, 0), "call {call}");
    }
    // 100 calls of @mac_step from Rust are @main once.
    assert_eq!(session.host(hacc).expect("reads").to_f32(), Some(reference_after_main(1)));
    for (handle, back) in [(hw, 0), (hx, 0), (hacc, 1)] {
        let moved = session.transfers(handle).expect("resident");
        assert_eq!((moved.to_device.count, moved.to_device.bytes), (1, 256), "{}", moved.name);
        assert_eq!((moved.from_device.count, moved.from_device.bytes), (back, back * 256), "{}", moved.name);
    }
}

#[test]
fn calling_main_a_hundred_times_keeps_the_buffers_on_the_device() {
    let (ctx, module) = example_17(Some("builtin.module(track-accesses)"));
    let verified = hat_ir::verify_module(&ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut session = Session::new(verified, &mut backend);
    let [w, x, acc] = inputs();
    let handles = [session.buffer(f32s(&w)), session.buffer(f32s(&x)), session.buffer(f32s(&acc))];
    let args: Vec<CallArg> = handles.iter().map(|&h| h.into()).collect();
    let mut dispatches = 0;
    for _ in 0..100 {
        dispatches += session.call("main", &args).expect("runs").report.dispatches;
    }
    assert_eq!(dispatches, 100 * 100);
    assert_eq!(session.host(handles[2]).expect("reads").to_f32(), Some(reference_after_main(100)));
    let total: u64 =
        handles.iter().map(|&h| session.transfers(h).map_or(0, |t| t.to_device.bytes + t.from_device.bytes)).sum();
    // 10,000 dispatches: 3 x 256 B in, 256 B out; the reference semantics move 7,680,000 B.
    assert_eq!(total, 4 * 256);
    // A scalar where a buffer goes is refused, naming the parameter.
    let error = session.call("main", &[args[0], args[1], CallArg::Scalar(Scalar::Int(0))]).unwrap_err();
    assert_eq!(error.to_string(), "argument 'acc': expects a buffer of type memref<64xf32>, got a scalar");
}
