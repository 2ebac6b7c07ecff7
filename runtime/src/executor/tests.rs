//! Tests of the host executor on a small test backend: its "kernels" are Rust functions chosen by
//! the kernel's name (the IR bodies are stubs), its memory is poisoned at allocation, and it
//! counts what it was asked to do. It is asynchronous as a GPU is: a recorded command runs only
//! when its batch is submitted, and a read's bytes are there only after the wait, so an
//! executor that forgets to wait (or to land a read) gets wrong results here. The CPU reference
//! backend's own tests run real kernel IR.

use super::*;
use crate::artifact::KernelArtifact;
use crate::backend::{Command, DeviceBuffer, DispatchTime, Fence, KernelArg, KernelHandle};
use crate::handles::HandleTable;
use crate::report::TransferCount;
use hat_ir::Context;
use std::cell::RefCell;
use std::rc::Rc;

// ----- the test backend ------------------------------------------------------------------------

/// A recorded command, run at submit.
enum Recorded {
    Write(DeviceBuffer, usize, Vec<u8>),
    Read(Command, DeviceBuffer, usize, usize),
    Dispatch(KernelHandle, [u64; 3], Vec<KernelArg>),
    /// A free, deferred until the commands recorded before it ran.
    Free(DeviceBuffer),
}

#[derive(Default)]
struct TestBackend {
    memory: HandleTable<(BufferLayout, Vec<u8>)>,
    kernels: Vec<String>,
    compiles: usize,
    waits: usize,
    frees: usize,
    next_command: u64,
    open: Vec<Recorded>,
    batches: u64,
    /// Reads run, by command, and whether their batch was waited for.
    reads: Vec<(Command, Vec<u8>, bool)>,
}

impl TestBackend {
    fn live(&self) -> usize {
        self.memory.len()
    }

    fn bytes(&mut self, buffer: DeviceBuffer) -> Result<&mut Vec<u8>, RuntimeError> {
        self.memory.get_mut(buffer.index(), buffer.generation()).map(|(_, bytes)| bytes).ok_or(
            RuntimeError::StaleHandle {
                what: "device buffer",
                index: buffer.index() as u64,
                generation: buffer.generation(),
            },
        )
    }

    fn buffer(&mut self, arg: &KernelArg) -> Result<&mut Vec<u8>, RuntimeError> {
        match arg {
            KernelArg::Buffer(b) => self.bytes(*b),
            KernelArg::Scalar(..) => Err(RuntimeError::Backend("expected a buffer".into())),
        }
    }

    fn record(&mut self, after: &[Command], command: Recorded) -> Command {
        assert!(after.iter().all(|c| c.sequence() < self.next_command), "a dependency on a future command");
        self.open.push(command);
        self.next_command += 1;
        Command::new(self.next_command - 1)
    }

    /// `square(buf)`: buf[i] *= buf[i]; `fill(buf, v)`: buf[i] = v; `copy_inc(src, dst)`:
    /// dst[i] = src[i] + 1; `add(buf, v)`: buf[i] += v — for i < grid.x (all `i32`).
    fn run(&mut self, kernel: KernelHandle, grid: [u64; 3], args: &[KernelArg]) -> Result<(), RuntimeError> {
        let name = self.kernels[kernel.index() as usize].clone();
        let n = grid[0] as usize;
        let scalar = |i: usize| match args.get(i) {
            Some(KernelArg::Scalar(v, _)) => Ok(v.as_i64() as i32),
            _ => Err(RuntimeError::Backend("expected a scalar".into())),
        };
        match name.as_str() {
            "square" => {
                let b = self.buffer(&args[0])?;
                for i in 0..n.min(b.len() / 4) {
                    let v = get_i32(b, i);
                    set_i32(b, i, v.wrapping_mul(v));
                }
            }
            "fill" | "add" => {
                let value = scalar(1)?;
                let add = name == "add";
                let b = self.buffer(&args[0])?;
                for i in 0..n.min(b.len() / 4) {
                    let old = if add { get_i32(b, i) } else { 0 };
                    set_i32(b, i, old.wrapping_add(value));
                }
            }
            "copy_inc" => {
                let src = self.buffer(&args[0])?.clone();
                let dst = self.buffer(&args[1])?;
                for i in 0..n.min(dst.len() / 4) {
                    set_i32(dst, i, get_i32(&src, i).wrapping_add(1));
                }
            }
            _ => unreachable!(),
        }
        Ok(())
    }
}

fn get_i32(bytes: &[u8], i: usize) -> i32 {
    i32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap())
}

fn set_i32(bytes: &mut [u8], i: usize, v: i32) {
    bytes[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
}

impl Backend for TestBackend {
    fn name(&self) -> &str {
        "test"
    }

    fn allocate(&mut self, layout: &BufferLayout) -> Result<DeviceBuffer, RuntimeError> {
        let (index, generation) = self.memory.insert((layout.clone(), host_buffer::poison(layout))).unwrap();
        Ok(DeviceBuffer::new(index, generation))
    }

    fn free(&mut self, buffer: DeviceBuffer) -> Result<(), RuntimeError> {
        self.frees += 1;
        let stale = RuntimeError::StaleHandle {
            what: "device buffer",
            index: buffer.index() as u64,
            generation: buffer.generation(),
        };
        let freed_before = self.open.iter().any(|c| matches!(c, Recorded::Free(b) if *b == buffer));
        if freed_before || self.memory.get(buffer.index(), buffer.generation()).is_none() {
            return Err(stale);
        }
        // Commands recorded before that use it still run on it.
        match self.open.is_empty() {
            true => drop(self.memory.remove(buffer.index(), buffer.generation())),
            false => self.open.push(Recorded::Free(buffer)),
        }
        Ok(())
    }

    fn compile(&mut self, kernel: &KernelArtifact<'_>) -> Result<KernelHandle, RuntimeError> {
        self.compiles += 1;
        if !["square", "fill", "copy_inc", "add"].contains(&kernel.name.as_str()) {
            return Err(RuntimeError::Backend(format!("the test backend has no kernel '{}'", kernel.name)));
        }
        self.kernels.push(kernel.name.clone());
        Ok(KernelHandle::new(self.kernels.len() as u32 - 1))
    }

    fn record_write(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        data: &[u8],
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        Ok(self.record(after, Recorded::Write(buffer, offset, data.to_vec())))
    }

    fn record_read(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        len: usize,
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        let command = Command::new(self.next_command);
        Ok(self.record(after, Recorded::Read(command, buffer, offset, len)))
    }

    fn record_dispatch(
        &mut self,
        kernel: KernelHandle,
        grid: [u64; 3],
        args: &[KernelArg],
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        Ok(self.record(after, Recorded::Dispatch(kernel, grid, args.to_vec())))
    }

    /// Runs the batch now (a device would start it): the executor sees nothing of it before the
    /// wait.
    fn submit(&mut self) -> Result<Fence, RuntimeError> {
        for command in std::mem::take(&mut self.open) {
            match command {
                Recorded::Write(buffer, offset, data) => {
                    self.bytes(buffer)?[offset..offset + data.len()].copy_from_slice(&data)
                }
                Recorded::Read(command, buffer, offset, len) => {
                    let bytes = self.bytes(buffer)?[offset..offset + len].to_vec();
                    self.reads.push((command, bytes, false));
                }
                Recorded::Dispatch(kernel, grid, args) => self.run(kernel, grid, &args)?,
                Recorded::Free(buffer) => drop(self.memory.remove(buffer.index(), buffer.generation())),
            }
        }
        self.batches += 1;
        Ok(Fence::new(self.batches - 1))
    }

    fn wait(&mut self, _: Fence) -> Result<Vec<DispatchTime>, RuntimeError> {
        self.waits += 1;
        self.reads.iter_mut().for_each(|read| read.2 = true);
        Ok(Vec::new())
    }

    fn take_read(&mut self, read: Command, into: &mut [u8]) -> Result<(), RuntimeError> {
        let position = self.reads.iter().position(|r| r.0 == read && r.2).expect("a read taken after its wait");
        let (_, bytes, _) = self.reads.remove(position);
        into.copy_from_slice(&bytes);
        Ok(())
    }
}

// ----- helpers ---------------------------------------------------------------------------------

const KERNELS: &str = r#"
kernel.func @square(%b: memref<8xi32>) workgroup(8) {
  kernel.return
}
kernel.func @fill(%b: memref<8xi32>, %v: i32) workgroup(8) {
  kernel.return
}
kernel.func @add(%b: memref<8xi32>, %v: i32) workgroup(8) {
  kernel.return
}
kernel.func @copy_inc(%src: memref<8xi32>, %dst: memref<8xi32>) workgroup(8) {
  kernel.return
}
"#;

/// The token of a module that verifies (panics with the diagnostics if it does not).
fn verified(ctx: &Context, module: Op) -> hat_ir::Verified<'_> {
    hat_ir::verify_module(ctx, module).unwrap_or_else(|diagnostics| panic!("{diagnostics:?}"))
}

fn parse(text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let text = format!("{KERNELS}{text}");
    let module = hat_ir::parse_source(&mut ctx, "test.hat", &text).unwrap_or_else(|e| panic!("{e:?}"));
    let diagnostics = hat_ir::verify(&ctx, module);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    (ctx, module)
}

/// Parses without verifying (for programs the verifier rejects).
fn parse_unverified(text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let text = format!("{KERNELS}{text}");
    let module = hat_ir::parse_source(&mut ctx, "test.hat", &text).unwrap_or_else(|e| panic!("{e:?}"));
    (ctx, module)
}

fn run(text: &str, mode: TransferMode, args: Vec<ArgValue>) -> Result<RunOutput, RuntimeError> {
    let (ctx, module) = parse(text);
    let mut backend = TestBackend::default();
    let output = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode }).run("main", args);
    assert_eq!(backend.live(), 0, "every device buffer is freed at the end of a run");
    output
}

fn data(values: &[i32]) -> ArgValue {
    ArgValue::Buffer(HostBuffer::from_i32(&[values.len()], values).unwrap())
}

fn ints(output: &RunOutput, index: usize) -> Vec<i32> {
    output.buffers[index].to_i32().unwrap()
}

const POISON: i32 = 0xDEAD_BEEFu32 as i32;

/// The line of a location in the test source.
fn line(ctx: &Context, location: Location) -> usize {
    ctx.sources.file_line_col(location).map(|(_, line, _)| line).unwrap_or(0)
}

fn line_of(text: &str, needle: &str) -> usize {
    let full = format!("{KERNELS}{text}");
    full.lines().position(|l| l.contains(needle)).unwrap() + 1
}

/// A writer the tests can read back (also `cpu_tests.rs`').
#[derive(Clone, Default)]
pub(super) struct Sink(Rc<RefCell<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink {
    pub(super) fn text(&self) -> String {
        String::from_utf8(self.0.borrow().clone()).unwrap()
    }
}

// ----- squares: the modes and the poison oracle -----------------------------------------------

const SQUARES: &str = r#"
compute.func @main(%data: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  compute.dispatch @square[%c8](%data) : (memref<8xi32>)
  compute.return
}
"#;

const SQUARES_EXPLICIT: &str = r#"
compute.func @main(%data: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  buffer.to_device %data : memref<8xi32>
  compute.dispatch @square[%c8](%data) : (memref<8xi32>)
  buffer.from_device %data : memref<8xi32>
  compute.return
}
"#;

#[test]
fn reference_mode_brings_the_data_back() {
    let output = run(SQUARES, TransferMode::Reference, vec![data(&[0, 1, 2, 3, 4, 5, 6, 7])]).unwrap();
    assert_eq!(ints(&output, 0), [0, 1, 4, 9, 16, 25, 36, 49]);
    let report = &output.report;
    assert_eq!(report.to_device, TransferCount { count: 1, bytes: 32 });
    assert_eq!(report.from_device, TransferCount { count: 1, bytes: 32 });
    assert_eq!(report.dispatches, 1);
    assert_eq!(report.mode, "reference");
    assert_eq!(report.per_buffer.len(), 1);
    assert_eq!(report.per_buffer[0].name, "data");
    assert_eq!(report.per_buffer[0].to_device, TransferCount { count: 1, bytes: 32 });
    assert_eq!(report.device_allocations, 1);
    assert_eq!(report.peak_device_bytes, 32);
}

#[test]
fn explicit_mode_without_transfers_leaves_the_host_copy_alone() {
    // The kernel squares poison on the device; nothing comes back: the caller sees its input,
    // not the reference result.
    let output = run(SQUARES, TransferMode::Explicit, vec![data(&[0, 1, 2, 3, 4, 5, 6, 7])]).unwrap();
    assert_eq!(ints(&output, 0), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(output.report.total_transfers(), 0);
    assert_eq!(output.report.dispatches, 1);
}

#[test]
fn explicit_mode_without_the_copy_in_shows_poison() {
    // Only the copy back: the device copy was never initialised, so poison (squared) comes back.
    let program = SQUARES_EXPLICIT.replace("  buffer.to_device %data : memref<8xi32>\n", "");
    let output = run(&program, TransferMode::Explicit, vec![data(&[0, 1, 2, 3, 4, 5, 6, 7])]).unwrap();
    assert_eq!(ints(&output, 0), [POISON.wrapping_mul(POISON); 8]);
    assert_eq!(output.report.to_device.count, 0);
    assert_eq!(output.report.from_device, TransferCount { count: 1, bytes: 32 });
}

#[test]
fn a_partial_write_without_the_copy_in_destroys_host_data() {
    // `fill` over 4 of 8 elements: the other 4 come back as poison unless the buffer went in.
    let program = |copy_in: bool| {
        format!(
            r#"
compute.func @main(%data: memref<8xi32>) {{
  %c4 = arith.constant 4 : index
  %v = arith.constant 7 : i32
  {}
  compute.dispatch @fill[%c4](%data, %v) : (memref<8xi32>, i32)
  buffer.from_device %data : memref<8xi32>
  compute.return
}}
"#,
            if copy_in { "buffer.to_device %data : memref<8xi32>" } else { "" }
        )
    };
    let input = [1, 2, 3, 4, 5, 6, 7, 8];
    let without = run(&program(false), TransferMode::Explicit, vec![data(&input)]).unwrap();
    assert_eq!(ints(&without, 0), [7, 7, 7, 7, POISON, POISON, POISON, POISON]);
    let with = run(&program(true), TransferMode::Explicit, vec![data(&input)]).unwrap();
    assert_eq!(ints(&with, 0), [7, 7, 7, 7, 5, 6, 7, 8]);
    let reference = run(&program(false), TransferMode::Reference, vec![data(&input)]).unwrap();
    assert_eq!(ints(&reference, 0), ints(&with, 0));
}

#[test]
fn explicit_mode_with_manual_transfers_matches_the_reference() {
    let input = [3, -1, 2, 0, 9, 8, 7, 6];
    let explicit = run(SQUARES_EXPLICIT, TransferMode::Explicit, vec![data(&input)]).unwrap();
    let reference = run(SQUARES_EXPLICIT, TransferMode::Reference, vec![data(&input)]).unwrap();
    assert_eq!(ints(&explicit, 0), [9, 1, 4, 0, 81, 64, 49, 36]);
    assert_eq!(ints(&explicit, 0), ints(&reference, 0));
    // In reference mode the program's own transfers do nothing: the counts are the dispatch's.
    assert_eq!(explicit.report.to_device, reference.report.to_device);
    assert_eq!(explicit.report.from_device, reference.report.from_device);
}

#[test]
fn ranged_transfers_move_only_their_elements() {
    let program = r#"
compute.func @main(%data: memref<8xi32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %v = arith.constant 100 : i32
  buffer.to_device %data : memref<8xi32>
  compute.dispatch @add[%c8](%data, %v) : (memref<8xi32>, i32)
  buffer.from_device %data[%c2, %c3] : memref<8xi32>
  buffer.from_device %data[%c1, %c1] : memref<8xi32>
  compute.return
}
"#;
    let output = run(program, TransferMode::Explicit, vec![data(&[0; 8])]).unwrap();
    assert_eq!(ints(&output, 0), [0, 100, 100, 100, 100, 0, 0, 0]);
    assert_eq!(output.report.from_device, TransferCount { count: 2, bytes: 16 });
    assert_eq!(output.report.to_device, TransferCount { count: 1, bytes: 32 });
}

#[test]
fn zero_length_transfers_move_nothing() {
    let program = r#"
compute.func @main(%data: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  buffer.to_device %data[%c8, %c0] : memref<8xi32>
  compute.return
}
"#;
    let output = run(program, TransferMode::Explicit, vec![data(&[0; 8])]).unwrap();
    assert_eq!(output.report.total_transfers(), 0);
}

// ----- accounting ------------------------------------------------------------------------------

const REPEAT: &str = r#"
compute.func @main(%data: memref<8xi32>, %count: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1 : i32
  buffer.to_device %data : memref<8xi32>
  scf.for %i = %c0 to %count step %c1 {
    compute.dispatch @add[%c8](%data, %one) : (memref<8xi32>, i32)
  }
  buffer.from_device %data : memref<8xi32>
  compute.return
}
"#;

#[test]
fn accounting_counts_every_transfer_and_dispatch() {
    let args = || vec![data(&[1; 8]), ArgValue::Scalar(Scalar::Int(5))];
    let reference = run(REPEAT, TransferMode::Reference, args()).unwrap();
    assert_eq!(ints(&reference, 0), [6; 8]);
    assert_eq!(reference.report.to_device, TransferCount { count: 5, bytes: 160 });
    assert_eq!(reference.report.from_device, TransferCount { count: 5, bytes: 160 });
    assert_eq!(reference.report.dispatches, 5);
    assert_eq!(
        reference.report.kernels,
        vec![crate::report::KernelDispatches { name: "add".into(), dispatches: 5, device_time: None }]
    );

    let explicit = run(REPEAT, TransferMode::Explicit, args()).unwrap();
    assert_eq!(ints(&explicit, 0), [6; 8]);
    assert_eq!(explicit.report.to_device, TransferCount { count: 1, bytes: 32 });
    assert_eq!(explicit.report.from_device, TransferCount { count: 1, bytes: 32 });
    assert_eq!(explicit.report.dispatches, 5);

    let json = explicit.report.to_json();
    assert_eq!(json["transfers"]["to_device"], serde_json::json!({"count": 1, "bytes": 32}));
    assert_eq!(json["transfers"]["from_device"], serde_json::json!({"count": 1, "bytes": 32}));
    assert_eq!(json["dispatches"], serde_json::json!(5));
    assert_eq!(json["transfers"]["per_buffer"][0]["name"], serde_json::json!("data"));
    assert_eq!(json["mode"], serde_json::json!("explicit"));
    assert_eq!(json["backend"], serde_json::json!("test"));
    assert!(json["time"]["total_ms"].is_number());

    // Zero trips: the reference moves nothing.
    let zero = run(REPEAT, TransferMode::Reference, vec![data(&[1; 8]), ArgValue::Scalar(Scalar::Int(0))]).unwrap();
    assert_eq!(zero.report.total_transfers(), 0);
    assert_eq!(ints(&zero, 0), [1; 8]);
}

#[test]
fn kernels_compile_once_per_executor() {
    let (ctx, module) = parse(REPEAT);
    let mut backend = TestBackend::default();
    {
        let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default());
        for _ in 0..3 {
            executor.run("main", vec![data(&[0; 8]), ArgValue::Scalar(Scalar::Int(4))]).unwrap();
        }
    }
    assert_eq!(backend.compiles, 1);
    assert_eq!(backend.live(), 0);
}

#[test]
fn sync_and_hooks_are_counted() {
    let program = r#"
compute.func @main(%data: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  buffer.before_host_read %data[%c0, %c1] : memref<8xi32>
  %v = buffer.load %data[%c0] : memref<8xi32>
  buffer.after_host_read %data[%c0, %c1] : memref<8xi32>
  buffer.before_host_write %data : memref<8xi32>
  buffer.store %v, %data[%c1] : memref<8xi32>
  buffer.after_host_write %data : memref<8xi32>
  compute.sync
  compute.return
}
"#;
    let output = run(program, TransferMode::Explicit, vec![data(&[5, 0, 0, 0, 0, 0, 0, 0])]).unwrap();
    assert_eq!(ints(&output, 0), [5, 5, 0, 0, 0, 0, 0, 0]);
    assert_eq!(output.report.hooks.total(), 4);
    assert_eq!(output.report.hooks.before_host_read, 1);
    assert_eq!(output.report.syncs, 1);
    assert_eq!(output.report.total_transfers(), 0);
}

// ----- buffers the program allocates, select, ping-pong ------------------------------------------

#[test]
fn ping_pong_through_select_on_buffers() {
    // Scenario 6's shape: two buffers swap roles by the parity of the generation; the result
    // lands in the caller's buffer, with a host-side copy when the count is odd.
    let program = r#"
compute.func @main(%grid: memref<8xi32>, %count: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %scratch = buffer.alloc() : memref<8xi32>
  scf.for %g = %c0 to %count step %c1 {
    %parity = arith.remsi %g, %c2 : index
    %even = arith.cmpi eq, %parity, %c0 : index
    %src = arith.select %even, %grid, %scratch : memref<8xi32>
    %dst = arith.select %even, %scratch, %grid : memref<8xi32>
    compute.dispatch @copy_inc[%c8](%src, %dst) : (memref<8xi32>, memref<8xi32>)
  }
  %odd = arith.remsi %count, %c2 : index
  %is_odd = arith.cmpi eq, %odd, %c1 : index
  scf.if %is_odd {
    buffer.copy %scratch, %grid : memref<8xi32>
  }
  buffer.dealloc %scratch : memref<8xi32>
  compute.return
}
"#;
    for count in [0, 1, 2, 5] {
        let output =
            run(program, TransferMode::Reference, vec![data(&[10; 8]), ArgValue::Scalar(Scalar::Int(count))]).unwrap();
        assert_eq!(ints(&output, 0), [10 + count as i32; 8], "count {count}");
        let report = &output.report;
        assert_eq!(report.dispatches, count as u64);
        assert_eq!(report.to_device.count, 2 * count as u64);
        let scratch = line_of(program, "buffer.alloc");
        let name = format!("alloc@{scratch}:3");
        let entry = report.buffer(&name).unwrap_or_else(|| panic!("{name} in {:?}", report.per_buffer));
        assert_eq!(entry.to_device.count, count as u64);
        assert_eq!(entry.device_copy, count > 0);
        assert_eq!(report.buffer("grid").unwrap().from_device.count, count as u64);
    }
}

#[test]
fn a_fresh_buffer_is_poison_on_the_host_and_a_returned_buffer_comes_back() {
    let program = r#"
compute.func @main() -> (i32, memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %v = arith.constant 42 : i32
  %b = buffer.alloc() : memref<8xi32>
  %p = buffer.load %b[%c0] : memref<8xi32>
  buffer.store %v, %b[%c3] : memref<8xi32>
  compute.return %p, %b : i32, memref<8xi32>
}
"#;
    let output = run(program, TransferMode::Explicit, vec![]).unwrap();
    assert_eq!(output.results[0], ArgValue::Scalar(Scalar::Int(POISON as i64)));
    let buffer = output.results[1].as_buffer().unwrap();
    assert_eq!(buffer.to_i32().unwrap(), [POISON, POISON, POISON, 42, POISON, POISON, POISON, POISON]);
    assert!(output.report.per_buffer[0].host_copy);
    assert!(!output.report.per_buffer[0].device_copy);
}

#[test]
fn buffers_the_host_never_touches_get_no_host_copy() {
    let program = r#"
compute.func @main(%data: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  %tmp = buffer.alloc() : memref<8xi32>
  buffer.to_device %data : memref<8xi32>
  compute.dispatch @copy_inc[%c8](%data, %tmp) : (memref<8xi32>, memref<8xi32>)
  compute.dispatch @copy_inc[%c8](%tmp, %data) : (memref<8xi32>, memref<8xi32>)
  buffer.from_device %data : memref<8xi32>
  buffer.dealloc %tmp : memref<8xi32>
  compute.return
}
"#;
    let output = run(program, TransferMode::Explicit, vec![data(&[1; 8])]).unwrap();
    assert_eq!(ints(&output, 0), [3; 8]);
    let tmp = &output.report.per_buffer[1];
    assert!(tmp.name.starts_with("alloc@"));
    assert!(!tmp.host_copy);
    assert!(tmp.device_copy);
    assert_eq!(output.report.peak_device_bytes, 64);
}

#[test]
fn dynamic_shapes() {
    let program = r#"
compute.func @main(%data: memref<?xi32>) -> index {
  %c0 = arith.constant 0 : index
  %n = buffer.dim %data, 0 : memref<?xi32>
  %b = buffer.alloc(%n) : memref<?xi32>
  buffer.copy %data, %b : memref<?xi32>
  %m = buffer.dim %b, 0 : memref<?xi32>
  compute.return %m : index
}
"#;
    let output = run(program, TransferMode::Explicit, vec![data(&[1, 2, 3])]).unwrap();
    assert_eq!(output.results, [ArgValue::Scalar(Scalar::Int(3))]);
    let (ctx, module) = parse(program);
    let parameters = entry_parameters(verified(&ctx, module), "main").unwrap();
    assert_eq!(parameters[0].name, "data");
    assert_eq!(parameters[0].kind, ParameterKind::DynamicBuffer { element: ElementType::I32, shape: vec![None] });
}

// ----- scalar code: scf, calls, recursion --------------------------------------------------------

#[test]
fn structured_control_flow_and_calls() {
    let program = r#"
compute.func @fib(%n: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %small = arith.cmpi sle, %n, %c1 : i64
  %r = scf.if %small -> (i64) {
    scf.yield %n : i64
  } else {
    %m1 = arith.subi %n, %c1 : i64
    %m2 = arith.subi %n, %c2 : i64
    %a = compute.call @fib(%m1) : (i64) -> i64
    %b = compute.call @fib(%m2) : (i64) -> i64
    %s = arith.addi %a, %b : i64
    scf.yield %s : i64
  }
  compute.return %r : i64
}

compute.func @main(%n: i64, %x: f32) -> (i64, i64, i32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %zero = arith.constant 0 : i64
  %sum = scf.for %i = %c0 to %c10 step %c1 iter_args(%acc = %zero) -> (i64) {
    %ii = arith.index_cast %i : index to i64
    %next = arith.addi %acc, %ii : i64
    scf.yield %next : i64
  }
  %f = compute.call @fib(%n) : (i64) -> i64
  %one = arith.constant 1 : i32
  %limit = arith.constant 100 : i32
  %doubled = scf.while (%v = %one) : (i32) -> i32 {
    %go = arith.cmpi slt, %v, %limit : i32
    scf.condition(%go) %v : i32
  } do {
  ^bb0(%w: i32):
    %w2 = arith.addi %w, %w : i32
    scf.yield %w2 : i32
  }
  %half = arith.constant 0.5 : f32
  %y = arith.mulf %x, %half : f32
  compute.return %sum, %f, %doubled, %y : i64, i64, i32, f32
}
"#;
    let output = run(
        program,
        TransferMode::Explicit,
        vec![ArgValue::Scalar(Scalar::Int(10)), ArgValue::Scalar(Scalar::Float(3.0))],
    )
    .unwrap();
    assert_eq!(
        output.results,
        [
            ArgValue::Scalar(Scalar::Int(45)),
            // Two calls a frame: the callee frames are reused in turn.
            ArgValue::Scalar(Scalar::Int(55)),
            ArgValue::Scalar(Scalar::Int(128)),
            ArgValue::Scalar(Scalar::Float(1.5)),
        ]
    );
}

const RECURSE: &str = r#"
compute.func @down(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (index) {
    scf.yield %c0 : index
  } else {
    %m = arith.subi %n, %c1 : index
    %d = compute.call @down(%m) : (index) -> index
    %e = arith.addi %d, %c1 : index
    scf.yield %e : index
  }
  compute.return %r : index
}

compute.func @main(%n: index) -> index {
  %r = compute.call @down(%n) : (index) -> index
  compute.return %r : index
}
"#;

#[test]
fn recursion_is_depth_limited() {
    // Just under the default limit works (on a test thread's small stack, in a debug build);
    // past it is an error. Each level of @down is a call and an scf.if region; @main is one more.
    let depth = DEFAULT_RECURSION_LIMIT as i64 / 2 - 2;
    let ok = run(RECURSE, TransferMode::Explicit, vec![ArgValue::Scalar(Scalar::Int(depth))]).unwrap();
    assert_eq!(ok.results, [ArgValue::Scalar(Scalar::Int(depth))]);
    let error = run(RECURSE, TransferMode::Explicit, vec![ArgValue::Scalar(Scalar::Int(1_000_000))]).unwrap_err();
    assert!(matches!(error, RuntimeError::RecursionLimit { limit: DEFAULT_RECURSION_LIMIT, .. }), "{error}");
    assert!(error.to_string().contains("'@down'"), "{error}");
}

// ----- host functions ----------------------------------------------------------------------------

const HOST: &str = r#"
compute.host_func @bump(readwrite memref<8xi32>, i32) -> i32
compute.host_func @peek(read memref<8xi32>) -> i32
compute.host_func @show(read memref<8xi32>, index)

compute.func @main(%data: memref<8xi32>) -> (i32, i32) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %k = arith.constant 10 : i32
  buffer.to_device %data : memref<8xi32>
  compute.dispatch @square[%c8](%data) : (memref<8xi32>)
  buffer.from_device %data : memref<8xi32>
  %sum = compute.call @bump(%data, %k) : (memref<8xi32>, i32) -> i32
  %first = compute.call @peek(%data) : (memref<8xi32>) -> i32
  compute.call @show(%data, %c0) : (memref<8xi32>, index) -> ()
  compute.return %sum, %first : i32, i32
}
"#;

fn bump<'a>() -> HostFunction<'a> {
    Box::new(|call: &mut HostCall| {
        let k = call.scalar(1)?.as_i64() as i32;
        let buffer = call.buffer_mut(0)?;
        let mut values = buffer.to_i32().ok_or("not i32")?;
        values.iter_mut().for_each(|v| *v += k);
        *buffer = HostBuffer::from_i32(&[values.len()], &values).unwrap();
        Ok(vec![Scalar::Int(values.iter().sum::<i32>() as i64)])
    })
}

fn peek<'a>() -> HostFunction<'a> {
    Box::new(|call: &mut HostCall| Ok(vec![call.buffer(0)?.get(&[0]).ok_or("empty")?]))
}

#[test]
fn host_functions_see_and_change_host_copies() {
    let (ctx, module) = parse(HOST);
    let sink = Sink::default();
    for mode in [TransferMode::Explicit, TransferMode::Reference] {
        let mut backend = TestBackend::default();
        let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode });
        executor.register_host_function("bump", bump());
        executor.register_host_function("peek", peek());
        executor.register_host_function("show", host_functions::print(sink.clone()));
        let output = executor.run("main", vec![data(&[1, 2, 3, 4, 0, 0, 0, 0])]).unwrap();
        assert_eq!(ints(&output, 0), [11, 14, 19, 26, 10, 10, 10, 10]);
        assert_eq!(output.results, [ArgValue::Scalar(Scalar::Int(110)), ArgValue::Scalar(Scalar::Int(11))]);
        assert_eq!(output.report.host_calls, 3);
    }
    assert_eq!(sink.text(), "[11, 14, 19, 26, 10, 10, 10, 10] 0\n".repeat(2));
}

#[test]
fn a_read_argument_cannot_be_written() {
    let (ctx, module) = parse(HOST);
    let mut backend = TestBackend::default();
    let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default());
    executor.register_host_function("bump", bump());
    executor.register_host_function(
        "peek",
        Box::new(|call: &mut HostCall| {
            call.buffer_mut(0)?.set(&[0], Scalar::Int(0));
            Ok(vec![Scalar::Int(0)])
        }),
    );
    executor.register_standard_host_functions();
    let error = executor.run("main", vec![data(&[0; 8])]).unwrap_err();
    let RuntimeError::HostFunctionFailed { name, message, location } = &error else { panic!("{error}") };
    assert_eq!(name, "peek");
    assert!(message.contains("declared 'read'"), "{message}");
    assert_eq!(line(&ctx, *location), line_of(HOST, "@peek(%data)"));
}

#[test]
fn host_function_errors() {
    let (ctx, module) = parse(HOST);
    let mut backend = TestBackend::default();
    let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default());
    // Not registered.
    let error = executor.run("main", vec![data(&[0; 8])]).unwrap_err();
    assert!(matches!(&error, RuntimeError::UnknownHostFunction { name, .. } if name == "bump"), "{error}");
    // Registered with other effects than declared.
    executor.register_host_function_with_effects("bump", &[ArgEffect::Read, ArgEffect::None], bump());
    let error = executor.run("main", vec![data(&[0; 8])]).unwrap_err();
    assert!(
        error.to_string().contains("declares its arguments (readwrite, none), but it was registered as (read, none)"),
        "{error}"
    );
    // Returns the wrong number of results.
    executor.register_host_function_with_effects("bump", &[ArgEffect::ReadWrite, ArgEffect::None], bump());
    executor.register_host_function("peek", Box::new(|_: &mut HostCall| Ok(vec![])));
    let error = executor.run("main", vec![data(&[0; 8])]).unwrap_err();
    assert!(error.to_string().contains("returned 0 values, but the call expects 1"), "{error}");
    // Fails.
    executor.register_host_function("peek", Box::new(|_: &mut HostCall| Err("no luck".to_string())));
    let error = executor.run("main", vec![data(&[0; 8])]).unwrap_err();
    assert_eq!(error.to_string(), "host function '@peek' failed: no luck");
    // Changes a buffer's size.
    executor.register_host_function(
        "bump",
        Box::new(|call: &mut HostCall| {
            call.buffer_mut(0)?.bytes.pop();
            Ok(vec![Scalar::Int(0)])
        }),
    );
    let error = executor.run("main", vec![data(&[0; 8])]).unwrap_err();
    assert!(error.to_string().contains("changed the layout or size"), "{error}");
}

#[test]
fn standard_print_and_display() {
    let program = r#"
compute.host_func @print(read memref<2x3xi32>, i1, f32, index)
compute.host_func @display(read memref<2x3xi32>, index)

compute.func @main(%grid: memref<2x3xi32>) {
  %t = arith.constant true
  %x = arith.constant 0.1 : f32
  %g = arith.constant 7 : index
  compute.call @print(%grid, %t, %x, %g) : (memref<2x3xi32>, i1, f32, index) -> ()
  compute.call @display(%grid, %g) : (memref<2x3xi32>, index) -> ()
  compute.return
}
"#;
    let (ctx, module) = parse(program);
    let sink = Sink::default();
    let mut backend = TestBackend::default();
    let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default());
    executor.register_host_function("print", host_functions::print(sink.clone()));
    executor.register_host_function("display", host_functions::display(sink.clone()));
    let grid = HostBuffer::from_i32(&[2, 3], &[1, 0, 1, 0, 5, 0]).unwrap();
    executor.run("main", vec![ArgValue::Buffer(grid)]).unwrap();
    assert_eq!(sink.text(), "[[1, 0, 1], [0, 5, 0]] true 0.1 7\n-- 7 --\n#.#\n.#.\n\n");
}

// ----- errors ------------------------------------------------------------------------------------

#[test]
fn bad_entry_and_arguments() {
    let (ctx, module) = parse(REPEAT);
    let mut backend = TestBackend::default();
    let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default());
    let count = ArgValue::Scalar(Scalar::Int(1));

    let error = executor.run("nope", vec![]).unwrap_err();
    assert_eq!(error.to_string(), "no entry function named '@nope'");
    let error = executor.run("square", vec![]).unwrap_err();
    assert!(matches!(error, RuntimeError::MissingSymbol { .. }), "a kernel is not an entry: {error}");

    let error = executor.run("main", vec![data(&[0; 8])]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "argument 'count': missing: '@main' takes 2 arguments (%data: memref<8xi32>, %count: index), got 1"
    );
    let error = executor.run("main", vec![data(&[0; 8]), count.clone(), count.clone()]).unwrap_err();
    assert!(matches!(&error, RuntimeError::BadArgument { name, .. } if name == "#2"), "{error}");

    let error = executor.run("main", vec![count.clone(), count.clone()]).unwrap_err();
    assert_eq!(error.to_string(), "argument 'data': expects a buffer of type memref<8xi32>, got a scalar");
    let error = executor.run("main", vec![data(&[0; 8]), data(&[0; 8])]).unwrap_err();
    assert!(error.to_string().starts_with("argument 'count': expects a scalar of type index"), "{error}");
    let error = executor.run("main", vec![data(&[0; 8]), ArgValue::Scalar(Scalar::Float(1.0))]).unwrap_err();
    assert_eq!(error.to_string(), "argument 'count': expects an integer of type index, got the float 1");

    let error = executor.run("main", vec![data(&[0; 7]), count.clone()]).unwrap_err();
    assert_eq!(error.to_string(), "argument 'data': expects memref<8xi32>, got a buffer of shape [7]");
    let floats = ArgValue::Buffer(HostBuffer::from_f32(&[8], &[0.0; 8]).unwrap());
    let error = executor.run("main", vec![floats, count.clone()]).unwrap_err();
    assert_eq!(error.to_string(), "argument 'data': expects memref<8xi32>, got a buffer of f32 elements");
    let mut short = HostBuffer::from_i32(&[8], &[0; 8]).unwrap();
    short.bytes.pop();
    let error = executor.run("main", vec![ArgValue::Buffer(short), count]).unwrap_err();
    assert!(error.to_string().contains("needs 32 bytes, but has 31"), "{error}");
    drop(executor);
    assert_eq!(backend.live(), 0);
}

#[test]
fn scalar_arguments_are_checked_against_their_width() {
    let program = r#"
compute.func @main(%a: i8, %b: i1, %c: f32) -> (i8, i1, f32) {
  compute.return %a, %b, %c : i8, i1, f32
}
"#;
    let args = |a: i64, b: i64| {
        vec![ArgValue::Scalar(Scalar::Int(a)), ArgValue::Scalar(Scalar::Int(b)), ArgValue::Scalar(Scalar::Float(0.1))]
    };
    let output = run(program, TransferMode::Explicit, args(255, 1)).unwrap();
    assert_eq!(output.results[0], ArgValue::Scalar(Scalar::Int(-1)));
    assert_eq!(output.results[2], ArgValue::Scalar(Scalar::Float(0.1f32 as f64)));
    let error = run(program, TransferMode::Explicit, args(256, 1)).unwrap_err();
    assert_eq!(error.to_string(), "argument 'a': the value 256 does not fit in i8");
    let error = run(program, TransferMode::Explicit, args(0, 2)).unwrap_err();
    assert_eq!(error.to_string(), "argument 'b': the value 2 does not fit in i1");
}

#[test]
fn out_of_bounds_on_the_host() {
    let program = r#"
compute.func @main(%data: memref<8xi32>, %i: index) -> i32 {
  %v = buffer.load %data[%i] : memref<8xi32>
  compute.return %v : i32
}
"#;
    let (ctx, module) = parse(program);
    let mut backend = TestBackend::default();
    let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default());
    let output = executor.run("main", vec![data(&[0, 1, 2, 3, 4, 5, 6, 7]), ArgValue::Scalar(Scalar::Int(7))]).unwrap();
    assert_eq!(output.results, [ArgValue::Scalar(Scalar::Int(7))]);
    for index in [8, -1] {
        let error = executor.run("main", vec![data(&[0; 8]), ArgValue::Scalar(Scalar::Int(index))]).unwrap_err();
        let RuntimeError::HostOutOfBounds { index: got, shape, location } = &error else { panic!("{error}") };
        assert_eq!((got.as_slice(), shape.as_slice()), ([index].as_slice(), [8].as_slice()));
        assert_eq!(line(&ctx, *location), line_of(program, "buffer.load"));
        assert_eq!(
            error.to_string(),
            format!("out-of-bounds access on the host: index [{index}] of a buffer of shape [8]")
        );
        let diagnostic = ctx.sources.describe(error.location());
        assert!(diagnostic.starts_with("test.hat:"), "{diagnostic}");
    }
}

#[test]
fn transfer_ranges_are_checked_in_both_modes() {
    let program = r#"
compute.func @main(%data: memref<8xi32>, %offset: index, %count: index) {
  buffer.to_device %data[%offset, %count] : memref<8xi32>
  compute.return
}
"#;
    for mode in [TransferMode::Explicit, TransferMode::Reference] {
        for (offset, count) in [(6, 3), (-1, 2), (0, -1), (i64::MAX, 2)] {
            let args = vec![data(&[0; 8]), ArgValue::Scalar(Scalar::Int(offset)), ArgValue::Scalar(Scalar::Int(count))];
            let error = run(program, mode, args).unwrap_err();
            assert!(matches!(error, RuntimeError::RangeOutOfBounds { len: 8, .. }), "{error}");
        }
        let ok = vec![data(&[0; 8]), ArgValue::Scalar(Scalar::Int(5)), ArgValue::Scalar(Scalar::Int(3))];
        assert!(run(program, mode, ok).is_ok());
    }
}

#[test]
fn bad_programs_are_errors_not_panics() {
    let cases: &[(&str, &str)] = &[
        (
            r#"compute.func @main(%d: memref<8xi32>) {
  %c0 = arith.constant 0 : i32
  %x = arith.divsi %c0, %c0 : i32
  compute.return
}"#,
            "division by zero",
        ),
        (
            r#"compute.func @main(%d: memref<8xi32>) {
  %b = buffer.alloc() : memref<8xi32>
  buffer.dealloc %b : memref<8xi32>
  buffer.dealloc %b : memref<8xi32>
  compute.return
}"#,
            "'buffer.dealloc' uses a buffer after 'buffer.dealloc' freed it",
        ),
        (
            r#"compute.func @main(%d: memref<8xi32>) {
  buffer.dealloc %d : memref<8xi32>
  compute.return
}"#,
            "the caller owns it",
        ),
        (
            r#"compute.func @main(%d: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c8 to %c0 step %c1 {
    %m = arith.constant -1 : index
    compute.dispatch @square[%m](%d) : (memref<8xi32>)
  }
  %m = arith.constant -1 : index
  compute.dispatch @square[%m](%d) : (memref<8xi32>)
  compute.return
}"#,
            "grid size -1 (dimension 0) is negative",
        ),
        (
            // A step of zero known only at run time (a constant one is the verifier's).
            r#"compute.func @main(%d: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %zero = arith.subi %c8, %c8 : index
  scf.for %i = %c0 to %c8 step %zero {
  }
  compute.return
}"#,
            "'scf.for' step must be positive, got 0",
        ),
        (
            // A host copy larger than any host memory: an error, not an abort.
            r#"compute.func @main(%d: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %b = buffer.alloc() : memref<4611686018427387904xi8>
  %v = buffer.load %b[%c0] : memref<4611686018427387904xi8>
  compute.return
}"#,
            // Refused before the allocator is asked where the available memory is known.
            if crate::host_memory::available().is_some() {
                "the buffer's host copy of shape [4611686018427387904] (i8) needs 4.61 EB of host memory"
            } else {
                "no host memory for the buffer's host copy"
            },
        ),
    ];
    for (program, expected) in cases {
        let (ctx, module) = parse(program);
        let mut backend = TestBackend::default();
        let error = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default())
            .run("main", vec![data(&[0; 8])])
            .unwrap_err();
        assert!(error.to_string().contains(expected), "expected '{expected}', got '{error}'");
        if !matches!(error, RuntimeError::Allocation { .. }) {
            assert_ne!(error.location(), Location::UNKNOWN, "{error}");
        }
        assert_eq!(backend.live(), 0, "device buffers are freed after an error too");
    }
    // What the verifier rejects never reaches the executor (it takes only a verified module):
    // a missing kernel or callee, a kernel op in host code.
    let rejected: &[(&str, &str)] = &[
        (
            r#"compute.func @main(%d: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  "compute.dispatch"(%c8, %d) {kernel = @nope, operandSegmentSizes = array<i32: 1, 1>} : (index, memref<8xi32>) -> ()
  compute.return
}"#,
            "'kernel' refers to '@nope', which is not defined",
        ),
        (
            r#"compute.func @main(%d: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  "compute.call"() {callee = @missing} : () -> ()
  compute.return
}"#,
            "'callee' refers to '@missing', which is not defined",
        ),
        (
            r#"compute.func @main(%d: memref<8xi32>) {
  %x = kernel.global_id x
  compute.return
}"#,
            "expects to be nested in one of: kernel.func, kernel.helper",
        ),
    ];
    for (program, expected) in rejected {
        let (ctx, module) = parse_unverified(program);
        let diagnostics = hat_ir::verify_module(&ctx, module).expect_err("the verifier rejects it");
        assert!(diagnostics.iter().any(|d| d.message.contains(expected)), "expected '{expected}', got {diagnostics:?}");
    }
}

#[test]
fn a_backend_error_is_passed_on() {
    let program = r#"
kernel.func @unknown(%b: memref<8xi32>) workgroup(8) {
  kernel.return
}
compute.func @main(%d: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  compute.dispatch @unknown[%c8](%d) : (memref<8xi32>)
  compute.return
}
"#;
    let error = run(program, TransferMode::Reference, vec![data(&[0; 8])]).unwrap_err();
    assert_eq!(error.to_string(), "the test backend has no kernel 'unknown'");
}

/// Runs `text` on a thread with a small stack (256 KiB): calls nest deeper only because the
/// executor grows its stack.
fn run_on_a_small_stack(text: &'static str, args: Vec<ArgValue>) -> Result<RunOutput, RuntimeError> {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || run(text, TransferMode::Explicit, args))
        .expect("spawns")
        .join()
        .expect("no stack overflow, no panic")
}

#[test]
fn deep_recursion_grows_the_stack() {
    for depth in [1_000, 10_000] {
        let output = run_on_a_small_stack(RECURSE, vec![ArgValue::Scalar(Scalar::Int(depth))]).unwrap();
        assert_eq!(output.results, [ArgValue::Scalar(Scalar::Int(depth))], "depth {depth}");
    }
}

#[test]
fn infinite_recursion_is_a_clear_error() {
    const FOREVER: &str = r#"
compute.func @forever(%n: index) -> index {
  %r = compute.call @forever(%n) : (index) -> index
  compute.return %r : index
}

compute.func @main(%n: index) -> index {
  %r = compute.call @forever(%n) : (index) -> index
  compute.return %r : index
}
"#;
    let error = run_on_a_small_stack(FOREVER, vec![ArgValue::Scalar(Scalar::Int(0))]).unwrap_err();
    let RuntimeError::RecursionLimit { limit, function, location } = &error else { panic!("{error}") };
    assert_eq!((*limit, function.as_str()), (DEFAULT_RECURSION_LIMIT, "forever"));
    let (ctx, _) = parse(FOREVER);
    // The recursive call in @forever (the first line that calls it).
    assert_eq!(line(&ctx, *location), line_of(FOREVER, "compute.call @forever(%n)"));
    assert_eq!(error.to_string(), "calls nested more than 100000 deep, in '@forever'");
}

#[test]
fn the_recursion_limit_is_the_embedding_programs() {
    let (ctx, module) = parse(RECURSE);
    let mut backend = TestBackend::default();
    let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default());
    executor.set_recursion_limit(50);
    // @main's call of @down, then one call per level below `n`.
    let ok = executor.run("main", vec![ArgValue::Scalar(Scalar::Int(48))]).unwrap();
    assert_eq!(ok.results, [ArgValue::Scalar(Scalar::Int(48))]);
    let error = executor.run("main", vec![ArgValue::Scalar(Scalar::Int(49))]).unwrap_err();
    assert!(matches!(error, RuntimeError::RecursionLimit { limit: 50, .. }), "{error}");
}

#[test]
fn a_backend_error_carries_the_location_of_the_dispatch() {
    let program = r#"
kernel.func @unknown(%b: memref<8xi32>) workgroup(8) {
  kernel.return
}
compute.func @main(%d: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  compute.dispatch @unknown[%c8](%d) : (memref<8xi32>)
  compute.return
}
"#;
    let error = run(program, TransferMode::Reference, vec![data(&[0; 8])]).unwrap_err();
    assert!(matches!(error.unlocated(), RuntimeError::Backend(_)), "{error}");
    let (ctx, _) = parse(program);
    assert_eq!(line(&ctx, error.location()), line_of(program, "compute.dispatch @unknown"));
}

// ----- the asynchronous device -------------------------------------------------------------------

#[test]
fn a_chain_of_dispatches_waits_once_at_the_end() {
    let (ctx, module) = parse(REPEAT);
    let mut backend = TestBackend::default();
    let output = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default())
        .run("main", vec![data(&[1; 8]), ArgValue::Scalar(Scalar::Int(100))])
        .unwrap();
    assert_eq!(ints(&output, 0), [101; 8], "the read landed at the final wait");
    assert_eq!(output.report.waits, 1);
    assert_eq!(backend.waits, 1, "no wait per copy or dispatch");
    assert_eq!(backend.batches, 1, "one batch: the copy in, 100 dispatches, the copy back");
}

#[test]
fn the_host_waits_only_for_bytes_a_pending_read_brings() {
    // The copy back of data[0..4] is pending when the host stores into data[4] (no wait: the
    // read does not touch it; the copy in of data[4..8] then takes the stored 7) and when it
    // loads data[1] (a wait, then the read's value). Nothing is recorded after the load, so the
    // end of the run does not wait again.
    let program = r#"
compute.func @main(%data: memref<8xi32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %seven = arith.constant 7 : i32
  buffer.to_device %data : memref<8xi32>
  compute.dispatch @square[%c8](%data) : (memref<8xi32>)
  buffer.from_device %data[%c0, %c4] : memref<8xi32>
  buffer.store %seven, %data[%c4] : memref<8xi32>
  buffer.to_device %data[%c4, %c4] : memref<8xi32>
  %v = buffer.load %data[%c1] : memref<8xi32>
  compute.return %v : i32
}
"#;
    let output = run(program, TransferMode::Explicit, vec![data(&[1, 2, 3, 4, 5, 6, 7, 8])]).unwrap();
    assert_eq!(output.results, vec![ArgValue::Scalar(Scalar::Int(4))]);
    assert_eq!(ints(&output, 0), [1, 4, 9, 16, 7, 6, 7, 8]);
    assert_eq!(output.report.waits, 1, "the load waits; the store and the copy in do not");
    assert_eq!(output.report.to_device.bytes, 32 + 16);
}

#[test]
fn a_copy_in_of_bytes_a_pending_read_brings_waits_for_it_first() {
    // Reference semantics: after @square, data comes back; before @add it goes in again, so
    // the executor must land the read first (else the device gets the old host bytes).
    let program = r#"
compute.func @main(%data: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  %one = arith.constant 1 : i32
  compute.dispatch @square[%c8](%data) : (memref<8xi32>)
  compute.dispatch @add[%c8](%data, %one) : (memref<8xi32>, i32)
  compute.return
}
"#;
    let output = run(program, TransferMode::Reference, vec![data(&[1, 2, 3, 4, 5, 6, 7, 8])]).unwrap();
    assert_eq!(ints(&output, 0), [2, 5, 10, 17, 26, 37, 50, 65]);
    assert_eq!(output.report.waits, 2);
}
