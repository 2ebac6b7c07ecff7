//! A backend written outside hat's crates, as a vendor would: its own device memory, and kernels
//! "compiled" by recognising them and running a native implementation (think of a vendor library
//! of hand-tuned kernels). The host executor drives it through the `Backend` trait alone.

use hat_ir::{parse_source, verify_module, Context, Op};
use hat_runtime::{
    ArgValue, Backend, BufferLayout, Command, DeviceBuffer, DispatchTime, Executor, ExecutorOptions, Fence,
    HandleTable, HostBuffer, KernelArg, KernelArtifact, KernelHandle, RuntimeError, TransferMode,
};

/// Device memory is a table of byte vectors; the only kernel it knows is an elementwise square
/// of a one-dimensional `i32` buffer, recognised by its body's ops. Commands run as they are
/// recorded (the device is synchronous), in the order recorded, which respects every
/// dependency; reads are kept until the executor takes them after its wait.
#[derive(Default)]
struct SquaringAccelerator {
    memory: HandleTable<Vec<u8>>,
    next_command: u64,
    batches: u64,
    reads: Vec<(Command, Vec<u8>)>,
    dispatches: usize,
    waits: usize,
}

impl SquaringAccelerator {
    fn buffer(&mut self, buffer: DeviceBuffer) -> Result<&mut Vec<u8>, RuntimeError> {
        self.memory.get_mut(buffer.index(), buffer.generation()).ok_or(RuntimeError::StaleHandle {
            what: "device buffer",
            index: buffer.index() as u64,
            generation: buffer.generation(),
        })
    }

    fn command(&mut self) -> Command {
        self.next_command += 1;
        Command::new(self.next_command - 1)
    }
}

/// Whether `kernel` squares its single `memref<?xi32>` parameter in place: it loads, multiplies
/// the value by itself, and stores it back.
fn is_square_kernel(ctx: &Context, kernel: Op) -> bool {
    let names: Vec<&str> = ctx.walk(kernel).into_iter().map(|op| ctx.name_str(op)).collect();
    let squares = ctx
        .walk(kernel)
        .into_iter()
        .any(|op| ctx.name_str(op) == "arith.muli" && ctx.operand(op, 0) == ctx.operand(op, 1));
    squares && names.contains(&"buffer.load") && names.contains(&"buffer.store")
}

impl Backend for SquaringAccelerator {
    fn name(&self) -> &str {
        "squaring-accelerator"
    }

    fn allocate(&mut self, layout: &BufferLayout) -> Result<DeviceBuffer, RuntimeError> {
        let (index, generation) = self.memory.insert(vec![0; layout.bytes()]).expect("fewer than 2^32 buffers");
        Ok(DeviceBuffer::new(index, generation))
    }

    fn free(&mut self, buffer: DeviceBuffer) -> Result<(), RuntimeError> {
        self.buffer(buffer)?;
        self.memory.remove(buffer.index(), buffer.generation());
        Ok(())
    }

    /// The default kernel format: the verified IR, which this device recognises.
    fn compile(&mut self, kernel: &KernelArtifact<'_>) -> Result<KernelHandle, RuntimeError> {
        let (ctx, op) = (kernel.ir.ctx(), kernel.ir.op());
        if is_square_kernel(ctx, op) {
            Ok(KernelHandle::new(0))
        } else {
            Err(RuntimeError::Unsupported {
                op: ctx.name_str(op).to_string(),
                message: "this accelerator only squares".to_string(),
                location: kernel.location,
            })
        }
    }

    fn record_write(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        data: &[u8],
        _after: &[Command],
    ) -> Result<Command, RuntimeError> {
        self.buffer(buffer)?[offset..offset + data.len()].copy_from_slice(data);
        Ok(self.command())
    }

    fn record_read(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        len: usize,
        _after: &[Command],
    ) -> Result<Command, RuntimeError> {
        let bytes = self.buffer(buffer)?[offset..offset + len].to_vec();
        let command = self.command();
        self.reads.push((command, bytes));
        Ok(command)
    }

    fn record_dispatch(
        &mut self,
        _: KernelHandle,
        grid: [u64; 3],
        args: &[KernelArg],
        _after: &[Command],
    ) -> Result<Command, RuntimeError> {
        let [KernelArg::Buffer(buffer)] = args else {
            return Err(RuntimeError::Backend("the square kernel takes one buffer".into()));
        };
        let bytes = self.buffer(*buffer)?;
        for element in bytes.chunks_exact_mut(4).take(grid[0] as usize) {
            let value = i32::from_le_bytes(element.try_into().expect("chunks of 4"));
            element.copy_from_slice(&value.wrapping_mul(value).to_le_bytes());
        }
        self.dispatches += 1;
        Ok(self.command())
    }

    fn submit(&mut self) -> Result<Fence, RuntimeError> {
        self.batches += 1;
        Ok(Fence::new(self.batches - 1))
    }

    fn wait(&mut self, _: Fence) -> Result<Vec<DispatchTime>, RuntimeError> {
        self.waits += 1;
        Ok(Vec::new())
    }

    fn take_read(&mut self, read: Command, into: &mut [u8]) -> Result<(), RuntimeError> {
        let position = self
            .reads
            .iter()
            .position(|(command, _)| *command == read)
            .ok_or_else(|| RuntimeError::Backend(format!("no read #{}", read.sequence())))?;
        into.copy_from_slice(&self.reads.remove(position).1);
        Ok(())
    }
}

fn squares_example() -> (Context, Op) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/01-squares.hat");
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
    assert_eq!(accelerator.dispatches, 1);
    assert_eq!(accelerator.waits, 1, "one wait, for the copy back, at the end of the run");
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
