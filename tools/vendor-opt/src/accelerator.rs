//! A backend written outside hat's crates, as a vendor would: its own device memory, and kernels
//! "compiled" by recognising them and running a native implementation (think of a vendor library
//! of hand-tuned kernels). The host executor drives it through the `Backend` trait alone.

use hat_ir::{Context, Op};
use hat_runtime::{
    Backend, BufferLayout, Command, DeviceBuffer, DispatchTime, Fence, HandleTable, KernelArg, KernelArtifact,
    KernelHandle, RuntimeError,
};

/// Device memory is a table of byte vectors; the only kernel it knows is an elementwise square
/// of a one-dimensional `i32` buffer, recognised by its body's ops. Commands run as they are
/// recorded (the device is synchronous), in the order recorded, which respects every
/// dependency; reads are kept until the executor takes them after its wait.
#[derive(Default)]
pub struct SquaringAccelerator {
    memory: HandleTable<Vec<u8>>,
    next_command: u64,
    batches: u64,
    reads: Vec<(Command, Vec<u8>)>,
    dispatches: usize,
    waits: usize,
}

impl SquaringAccelerator {
    /// The dispatches it ran.
    pub fn dispatches(&self) -> usize {
        self.dispatches
    }

    /// The waits the executor asked for.
    pub fn waits(&self) -> usize {
        self.waits
    }

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
