//! The vendor's backend (src/accelerator.rs) driven by hat's executor through the `Backend`
//! trait alone.

use hat_ir::{parse_source, verify_module, Context, Op};
use hat_runtime::{ArgValue, Executor, ExecutorOptions, HostBuffer, TransferMode};
use vendor_opt::accelerator::SquaringAccelerator;

fn squares_example() -> (Context, Op) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/01-squares.hat");
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, path, &std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(hat_ir::verify(&ctx, module).is_empty());
    (ctx, module)
}

#[test]
fn the_executor_runs_a_program_on_a_backend_from_outside_hat() {
    let (ctx, module) = squares_example();
    let mut accelerator = SquaringAccelerator::default();
    let input: Vec<i32> = (0..64).map(|i| i - 20).collect();
    let output = {
        let options = ExecutorOptions { mode: TransferMode::Reference };
        let mut executor = Executor::new(verify_module(&ctx, module).unwrap(), &mut accelerator, options);
        let data = HostBuffer::from_i32(&[64], &input).unwrap();
        executor.run("main", vec![ArgValue::Buffer(data)]).unwrap()
    };
    let expected: Vec<i32> = input.iter().map(|v| v * v).collect();
    assert_eq!(output.buffers[0].to_i32().unwrap(), expected);
    assert_eq!(accelerator.dispatches(), 1);
    assert_eq!(accelerator.waits(), 1, "one wait, for the copy back, at the end of the run");
    assert_eq!(output.report.dispatches, 1);
    assert_eq!(output.report.waits, 1);
    assert_eq!(output.report.kernels[0].device_time, None, "this device measures no time");
    assert_eq!((output.report.to_device.count, output.report.to_device.bytes), (1, 256));
    assert_eq!((output.report.from_device.count, output.report.from_device.bytes), (1, 256));
}

#[test]
fn a_kernel_the_backend_cannot_compile_is_a_clear_error() {
    let text = r#"
kernel.func @negate(%data: memref<4xi32>) workgroup(4) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<4xi32>
  %zero = arith.constant 0 : i32
  %n = arith.subi %zero, %v : i32
  buffer.store %n, %data[%i] : memref<4xi32>
  kernel.return
}
compute.func @main(%data: memref<4xi32>) {
  %c4 = arith.constant 4 : index
  compute.dispatch @negate[%c4](%data) : (memref<4xi32>)
  compute.return
}
"#;
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "negate.hat", text).unwrap();
    let module = verify_module(&ctx, module).unwrap();
    let mut accelerator = SquaringAccelerator::default();
    let mut executor = Executor::new(module, &mut accelerator, ExecutorOptions { mode: TransferMode::Reference });
    let data = HostBuffer::from_i32(&[4], &[1, 2, 3, 4]).unwrap();
    let error = executor.run("main", vec![ArgValue::Buffer(data)]).unwrap_err();
    assert_eq!(error.to_string(), "cannot run 'kernel.func': this accelerator only squares");
    assert_eq!(ctx.sources.describe(error.location()), "negate.hat:2:1");
}
