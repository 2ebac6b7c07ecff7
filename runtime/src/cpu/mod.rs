//! The CPU reference backend: the test oracle. It interprets kernel IR on the host's cores, with
//! device memory of its own.
//!
//! - **Memory.** Every allocation (and every `kernel.local_alloc`, fresh for each workgroup) is
//!   filled with its element type's poison pattern ([`ElementType::poison_bytes`]: NaN for
//!   floats, 0xDEADBEEF for 32-bit integers, repeated or truncated for other widths), so that a
//!   missing transfer changes results. Elements are atomic words (see `memory.rs`): workgroups
//!   on different threads share buffers without undefined behaviour, and `kernel.atomic_rmw` is
//!   a compare-and-swap loop on one element, atomic across workgroups.
//! - **Compilation.** [`Backend::compile`] takes the kernel's verified IR from the artifact
//!   (it lowers nothing: the oracle does not depend on the SPIR-V lowering; see
//!   [`crate::artifact`]) and turns the kernel (a `kernel.func`, or any callable with a body
//!   and the `DEVICE_CODE` trait) and every device function it calls
//!   (looked up in the enclosing symbol tables, transitively) into an owned program: values
//!   numbered into slots, ops as an enum with slot operands, nested regions as instruction lists
//!   of their own. Calls, loops and other region ops are compiled through the op interfaces
//!   (`CallOpInterface`, `LoopLikeOpInterface`, `RegionBranchOpInterface`), memory and work-item
//!   ops through typed views, so a vendor's loop or call op runs here too (see `compile.rs`). No
//!   name or hash lookup happens at run time.
//! - **Grid.** The grid of a dispatch is the number of work items per dimension. The workgroup
//!   size is the kernel's `workgroup_size` ([`DEFAULT_WORKGROUP_SIZE`], 64 × 1 × 1, when absent);
//!   the number of workgroups is `ceil(grid / workgroup size)` per dimension. The work items that
//!   exist are exactly those below the grid: in the last, partial workgroup those past the grid
//!   do not run, or, in a kernel that reaches a barrier, run only to take part in barriers and
//!   workgroup memory, leaving buffers alone (see `interp.rs`; docs/lowering.md says the same of
//!   the device). `kernel.global_size` is the grid itself. A dispatch may have at most
//!   [`DEFAULT_MAX_WORK_ITEMS`] work items (2^32; [`CpuBackend::set_max_work_items`] changes
//!   it): the executor refuses a larger grid with the dispatch's location, since this backend
//!   runs every work item in turn and a grid of 2^40 would run for hours.
//! - **Barriers.** Work items are resumable interpreter states. A workgroup whose kernel has no
//!   barrier runs its work items one after the other; one with barriers runs them in lockstep:
//!   each up to its next barrier, then the next round. Barriers inside loops, conditionals and
//!   helpers work as long as control flow is uniform in the workgroup; when work
//!   items wait at different barriers, or some wait while others have finished, the dispatch
//!   fails with a "non-uniform barrier" error.
//! - **Parallelism.** Workgroups are independent (the execution model), so a dispatch of more
//!   than one workgroup runs them in parallel with rayon (unless [`CpuBackend::set_parallel`]
//!   turned it off). Race-free kernels give the same results either way.
//! - **Commands run when recorded**, in the order recorded (which respects every dependency);
//!   a dispatch's error comes back from [`Backend::record_dispatch`]. What the asynchronous
//!   contract makes a caller wait for is still held back until it waits (`batches.rs`): a
//!   read's bytes, dispatch times (the wall time of each dispatch). Buffer handles are
//!   generational: a freed buffer's handle is [`RuntimeError::StaleHandle`].
//! - **Errors.** An out-of-bounds load, store or atomic stops the dispatch with
//!   [`RuntimeError::DeviceOutOfBounds`] (kernel, global id of the work item, indices, shape,
//!   location); integer division by zero with [`RuntimeError::Arithmetic`]. With several failing
//!   workgroups, the error reported is that of the first workgroup in linear order (x fastest),
//!   and in it the first work item to fail: the same error whether or not the run is parallel.
//!   Nothing panics.
//!
//! - **Element accesses.** With [`CpuBackend::set_record_accesses`], each dispatch records which
//!   elements of each buffer argument it read before writing them and which it wrote
//!   (`accesses.rs`), for [`Backend::take_dispatch_accesses`]: the device side of the trace of
//!   the clairvoyant optimum ([`crate::oracle`]).
//!
//! Scalar semantics are those of [`crate::eval`].

mod accesses;
mod arenas;
mod batches;
mod compile;
mod grid;
mod interp;
mod memory;
#[cfg(test)]
mod race_tests;
mod races;
#[cfg(test)]
mod tests;

pub use compile::DEFAULT_WORKGROUP_SIZE;

use crate::artifact::KernelArtifact;
use crate::backend::{Backend, BufferAccesses, Command, DeviceBuffer, DispatchTime, Fence, KernelArg, KernelHandle};
use crate::dispatch_arguments::KernelParameter;
use crate::error::RuntimeError;
use crate::eval;
use crate::handles::HandleTable;
use crate::timeline::{BackendTimeline, CommandSpan, SpanClock};
use crate::value::{BufferLayout, ElementType, Scalar};
use accesses::AccessLog;
use batches::Batches;
use compile::Program;
use interp::{Env, Item};
use memory::Memory;
use races::{BufferName, Recorder};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The CPU reference backend. See the module documentation.
#[derive(Debug)]
pub struct CpuBackend {
    buffers: HandleTable<Memory>,
    arenas: arenas::Arenas,
    kernels: Vec<Program>,
    batches: Batches,
    parallel: bool,
    max_work_items: u64,
    check_races: bool,
    /// Whether dispatches record their element accesses, and the last dispatch's.
    record_accesses: bool,
    last_accesses: Option<Vec<BufferAccesses>>,
    /// While a timeline is recorded: its origin, and the spans of the commands run since it was
    /// last taken.
    timeline: Option<(Instant, Vec<CommandSpan>)>,
}

/// The default limit on the work items of one dispatch on the CPU backend: 2^32.
pub const DEFAULT_MAX_WORK_ITEMS: u64 = 1 << 32;

impl Default for CpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuBackend {
    /// A backend with no buffers and no kernels, running workgroups in parallel.
    pub fn new() -> Self {
        CpuBackend {
            buffers: HandleTable::new(),
            arenas: arenas::Arenas::default(),
            kernels: Vec::new(),
            batches: Batches::default(),
            parallel: true,
            max_work_items: DEFAULT_MAX_WORK_ITEMS,
            check_races: false,
            record_accesses: false,
            last_accesses: None,
            timeline: None,
        }
    }

    /// Sets the most work items one dispatch may have (default [`DEFAULT_MAX_WORK_ITEMS`]).
    pub fn set_max_work_items(&mut self, limit: u64) {
        self.max_work_items = limit;
    }

    /// Whether dispatches run workgroups on several threads (the default) or one after the
    /// other, in linear order (useful to make racy kernels deterministic).
    pub fn set_parallel(&mut self, parallel: bool) {
        self.parallel = parallel;
    }

    /// Whether dispatches check for data races (off by default): every load and store of a
    /// buffer argument or of workgroup-local memory is recorded, workgroups run one after the
    /// other, and the first access that conflicts with an earlier one by another work item,
    /// with nothing ordering them, stops the dispatch with [`RuntimeError::DataRace`]. Atomics
    /// are exempt. See `races.rs`.
    pub fn set_check_races(&mut self, check: bool) {
        self.check_races = check;
    }

    /// Whether dispatches record which elements of each buffer argument they read (before
    /// writing them) and write (off by default), for [`Backend::take_dispatch_accesses`]: the
    /// trace of the clairvoyant optimum ([`crate::oracle`]). Workgroups then run one after the
    /// other. See `accesses.rs`.
    pub fn set_record_accesses(&mut self, record: bool) {
        self.record_accesses = record;
        self.last_accesses = None;
    }

    /// The layout of a live buffer.
    pub fn layout(&self, buffer: DeviceBuffer) -> Option<BufferLayout> {
        let memory = self.memory(buffer).ok()?;
        Some(BufferLayout { element: memory.element, shape: memory.shape.to_vec() })
    }

    /// Bytes of device memory in use (live buffers).
    pub fn bytes_in_use(&self) -> usize {
        self.buffers.values().map(Memory::bytes).sum()
    }

    /// The name of a compiled kernel.
    pub fn kernel_name(&self, kernel: KernelHandle) -> Option<&str> {
        self.kernels.get(kernel.index() as usize).map(|p| p.name.as_str())
    }

    /// The workgroup size of a compiled kernel.
    pub fn workgroup_size(&self, kernel: KernelHandle) -> Option<[u64; 3]> {
        self.kernels.get(kernel.index() as usize).map(|p| p.workgroup)
    }

    fn memory(&self, buffer: DeviceBuffer) -> Result<&Memory, RuntimeError> {
        self.buffers.get(buffer.index(), buffer.generation()).ok_or(RuntimeError::StaleHandle {
            what: "device buffer",
            index: buffer.index() as u64,
            generation: buffer.generation(),
        })
    }

    fn check_range(memory: &Memory, offset: usize, len: usize) -> Result<(), RuntimeError> {
        match offset.checked_add(len) {
            Some(end) if end <= memory.bytes() => Ok(()),
            _ => Err(RuntimeError::Backend(format!(
                "cpu backend: {len} bytes at byte offset {offset} are outside a device buffer of {} bytes",
                memory.bytes()
            ))),
        }
    }

    /// The parameter values (scalars, and buffer handles) and the buffer table of a dispatch.
    /// Notes, when a timeline is recorded, that `command` ran from `start` until now.
    fn ran(&mut self, command: Command, start: Instant) {
        if let Some((origin, spans)) = &mut self.timeline {
            let nanos = |at: Instant| at.saturating_duration_since(*origin).as_nanos() as u64;
            spans.push(CommandSpan { command, start_ns: nanos(start), end_ns: nanos(Instant::now()) });
        }
    }

    /// Decodes a dispatch's arguments: the parameter values (scalars, and buffer handles) and
    /// the buffer table. The executor checked them against the kernel's signature
    /// (`dispatch_arguments.rs`); arguments that do not even decode are an internal error.
    fn bind<'a>(
        &'a self,
        program: &Program,
        args: &[KernelArg],
    ) -> Result<(Vec<Scalar>, Vec<&'a Memory>), RuntimeError> {
        let unchecked = || {
            RuntimeError::Backend(format!(
                "cpu backend: the arguments of kernel '{}' do not fit its parameters (check them with \
                 KernelSignature::check before dispatching)",
                program.signature.name
            ))
        };
        if args.len() != program.signature.params.len() {
            return Err(unchecked());
        }
        let mut params = Vec::with_capacity(args.len());
        let mut buffers = Vec::new();
        for (param, arg) in program.signature.params.iter().zip(args) {
            match (param, arg) {
                (KernelParameter::Buffer { .. }, KernelArg::Buffer(buffer)) => {
                    params.push(Scalar::Int(buffers.len() as i64));
                    buffers.push(self.memory(*buffer)?);
                }
                (KernelParameter::Scalar { ty, .. }, KernelArg::Scalar(value, _)) => {
                    params.push(eval::normalize(*value, *ty));
                }
                _ => return Err(unchecked()),
            }
        }
        Ok((params, buffers))
    }
}

/// The race check's recorder for a dispatch of `program` with buffer arguments `buffers`.
fn race_recorder(program: &Program, buffers: &[&Memory]) -> Recorder {
    let mut names: Vec<BufferName> = program
        .signature
        .params
        .iter()
        .filter_map(|p| match p {
            KernelParameter::Buffer { name, .. } => Some(name.clone()),
            KernelParameter::Scalar { .. } => None,
        })
        .zip(buffers)
        .map(|(name, memory)| {
            // `#0 (%out)`: the race report says `%out`.
            let name = match name.find("(%") {
                Some(start) => name[start + 1..].trim_end_matches(')').to_string(),
                None => name,
            };
            BufferName { name, shape: memory.shape.to_vec(), local: false }
        })
        .collect();
    names.extend(program.locals.iter().enumerate().map(|(k, local)| BufferName {
        name: format!("workgroup-local buffer #{k}"),
        shape: local.shape.clone(),
        local: true,
    }));
    Recorder::new(&program.name, names)
}

/// How a dispatch runs its workgroups.
enum Schedule<'a> {
    /// On several threads.
    Parallel,
    /// One after the other, in linear order.
    Serial,
    /// One after the other, recording accesses for the race check.
    Checked(&'a Mutex<Recorder>),
}

/// Runs the workgroups `groups` (linear indices, x fastest) of a dispatch. Returns the error of
/// the lowest failing workgroup, if any.
#[allow(clippy::too_many_arguments)]
fn run_groups(
    program: &Program,
    params: &[Scalar],
    args: &[&Memory],
    grid: [u64; 3],
    num_groups: [u64; 3],
    total: usize,
    schedule: Schedule<'_>,
    accesses: Option<&Mutex<AccessLog>>,
) -> Result<(), RuntimeError> {
    let (parallel, races) = match schedule {
        Schedule::Parallel => (true, None),
        Schedule::Serial => (false, None),
        Schedule::Checked(races) => (false, Some(races)),
    };
    // The lowest failing workgroup so far (groups above it are skipped) and its error.
    let lowest_failure = AtomicUsize::new(usize::MAX);
    let failure: Mutex<Option<(usize, RuntimeError)>> = Mutex::new(None);
    let record = |linear: usize, error: RuntimeError| {
        let mut failure = failure.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if failure.as_ref().is_none_or(|(index, _)| linear < *index) {
            *failure = Some((linear, error));
        }
        lowest_failure.fetch_min(linear, Ordering::Relaxed);
    };
    let run_one = |items: &mut Vec<Item>, linear: usize| {
        if linear > lowest_failure.load(Ordering::Relaxed) {
            return;
        }
        let l = linear as u64;
        let group = [l % num_groups[0], (l / num_groups[0]) % num_groups[1], l / (num_groups[0] * num_groups[1])];
        let locals: Result<Vec<Memory>, RuntimeError> = program
            .locals
            .iter()
            .map(|b| {
                Memory::try_poisoned(b.element, &b.shape).map_err(|message| RuntimeError::Allocation {
                    bytes: b.shape.iter().fold(b.element.size(), |a, &d| a.saturating_mul(d)),
                    message: format!("workgroup-local memory of kernel '{}': {message}", program.name),
                })
            })
            .collect();
        let locals = match locals {
            Ok(locals) => locals,
            Err(error) => {
                record(linear, error);
                return;
            }
        };
        let mut buffers: Vec<&Memory> = Vec::with_capacity(args.len() + locals.len());
        buffers.extend_from_slice(args);
        buffers.extend(locals.iter());
        if let Some(races) = races {
            races.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).start_group(l);
        }
        let env = Env { program, buffers: &buffers, group, grid, num_groups, races, accesses };
        if let Err(error) = interp::run_group(&env, params, items) {
            record(linear, error);
        }
    };
    let parallel = parallel && accesses.is_none();
    if parallel && total > 1 {
        (0..total).into_par_iter().for_each_init(Vec::new, run_one);
    } else {
        let mut items = Vec::new();
        for linear in 0..total {
            if lowest_failure.load(Ordering::Relaxed) != usize::MAX {
                break;
            }
            run_one(&mut items, linear);
        }
    }
    match failure.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()) {
        Some((_, error)) => Err(error),
        None => Ok(()),
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn device_name(&self) -> String {
        "the CPU reference backend (an interpreter)".to_string()
    }

    fn allocate(&mut self, layout: &BufferLayout) -> Result<DeviceBuffer, RuntimeError> {
        let too_big = |message: &str| RuntimeError::Allocation {
            bytes: layout.shape.iter().try_fold(layout.element.size(), |a, &d| a.checked_mul(d)).unwrap_or(usize::MAX),
            message: message.to_string(),
        };
        let len = layout
            .shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| too_big("the size overflows"))?;
        let bytes = len.checked_mul(layout.element.size()).ok_or_else(|| too_big("the size overflows"))?;
        if bytes > isize::MAX as usize / 2 {
            return Err(too_big("the buffer exceeds the CPU backend's limits"));
        }
        // The CPU backend's device memory is host memory.
        if let Some(available) = crate::host_memory::refuses(bytes as u64) {
            return Err(too_big(&crate::host_memory::message(
                "the CPU backend's device copy",
                bytes as u64,
                available,
            )));
        }
        let memory = Memory::try_poisoned(layout.element, &layout.shape).map_err(|message| too_big(&message))?;
        let (index, generation) = self.buffers.insert(memory).ok_or_else(|| too_big("too many buffers"))?;
        Ok(DeviceBuffer::new(index, generation))
    }

    fn free(&mut self, buffer: DeviceBuffer) -> Result<(), RuntimeError> {
        self.memory(buffer)?;
        for window in self.arenas.forget(buffer) {
            self.buffers.remove(window.index(), window.generation());
        }
        self.buffers.remove(buffer.index(), buffer.generation());
        Ok(())
    }

    fn allocate_arena(&mut self, bytes: usize) -> Result<Option<DeviceBuffer>, RuntimeError> {
        // The arena's bytes are its windows' own memory (see `arenas`): the handle holds none.
        let arena = self.allocate(&BufferLayout { element: ElementType::I8, shape: vec![0] })?;
        self.arenas.add(arena, bytes);
        Ok(Some(arena))
    }

    fn allocate_in(
        &mut self,
        arena: DeviceBuffer,
        offset: usize,
        layout: &BufferLayout,
    ) -> Result<DeviceBuffer, RuntimeError> {
        let range = self.arenas.check(arena, offset, layout.bytes())?;
        let window = self.allocate(layout)?;
        self.arenas.place(arena, window, range);
        Ok(window)
    }

    fn compile(&mut self, kernel: &KernelArtifact<'_>) -> Result<KernelHandle, RuntimeError> {
        let program = compile::compile(kernel.ir.ctx(), kernel.ir.op())?;
        let id = u32::try_from(self.kernels.len()).map_err(|_| RuntimeError::Backend("too many kernels".into()))?;
        self.kernels.push(program);
        Ok(KernelHandle::new(id))
    }

    fn max_work_items(&self) -> u64 {
        self.max_work_items
    }

    fn record_write(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        data: &[u8],
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        Self::check_range(self.memory(buffer)?, offset, data.len())?;
        let command = self.batches.record(after)?;
        let start = Instant::now();
        self.memory(buffer)?.write_bytes(offset, data);
        self.ran(command, start);
        Ok(command)
    }

    fn record_read(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        len: usize,
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        Self::check_range(self.memory(buffer)?, offset, len)?;
        let command = self.batches.record(after)?;
        let start = Instant::now();
        let memory = self.memory(buffer)?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len).map_err(|e| RuntimeError::HostAllocation {
            bytes: len,
            message: format!("the CPU backend's copy of a read: {e}"),
            location: hat_ir::Location::UNKNOWN,
        })?;
        bytes.resize(len, 0);
        memory.read_bytes(offset, &mut bytes);
        self.batches.hold_read(command, bytes);
        self.ran(command, start);
        Ok(command)
    }

    fn record_dispatch(
        &mut self,
        kernel: KernelHandle,
        grid: [u64; 3],
        args: &[KernelArg],
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        let command = self.batches.record(after)?;
        let start = Instant::now();
        let program = self.kernels.get(kernel.index() as usize).ok_or(RuntimeError::StaleHandle {
            what: "kernel",
            index: kernel.index() as u64,
            generation: 0,
        })?;
        let (params, buffers) = self.bind(program, args)?;
        let workgroups = grid::workgroups(&program.name, grid, program.workgroup, self.max_work_items)?;
        let accesses = self.record_accesses.then(|| Mutex::new(AccessLog::new(&buffers)));
        if workgroups.total > 0 {
            let races = self.check_races.then(|| Mutex::new(race_recorder(program, &buffers)));
            let (count, total) = (workgroups.count, workgroups.total);
            let schedule = match &races {
                Some(races) => Schedule::Checked(races),
                None if self.parallel => Schedule::Parallel,
                None => Schedule::Serial,
            };
            run_groups(program, &params, &buffers, grid, count, total, schedule, accesses.as_ref())?;
        }
        if let Some(accesses) = accesses {
            let devices: Vec<DeviceBuffer> = args
                .iter()
                .filter_map(|a| match a {
                    KernelArg::Buffer(buffer) => Some(*buffer),
                    KernelArg::Scalar(..) => None,
                })
                .collect();
            let log = accesses.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
            self.last_accesses = Some(log.finish(&devices));
        }
        self.batches.hold_time(DispatchTime { command, time: start.elapsed() });
        self.ran(command, start);
        Ok(command)
    }

    fn submit(&mut self) -> Result<Fence, RuntimeError> {
        Ok(self.batches.submit())
    }

    fn wait(&mut self, fence: Fence) -> Result<Vec<DispatchTime>, RuntimeError> {
        self.batches.wait(fence)
    }

    fn completed(&mut self) -> crate::backend::Completed {
        self.batches.completed()
    }

    fn take_read(&mut self, read: Command, into: &mut [u8]) -> Result<(), RuntimeError> {
        self.batches.take_read(read, into)
    }

    fn take_dispatch_accesses(&mut self) -> Option<Vec<BufferAccesses>> {
        self.last_accesses.take()
    }

    /// Commands run when recorded, one after the other: each span is the host's wall time of
    /// its run. There are no barriers to record (nothing runs out of order).
    fn record_timeline(&mut self, origin: Option<Instant>) -> bool {
        self.timeline = origin.map(|origin| (origin, Vec::new()));
        true
    }

    fn take_timeline(&mut self) -> BackendTimeline {
        let spans = self.timeline.as_mut().map(|(_, spans)| std::mem::take(spans)).unwrap_or_default();
        BackendTimeline { clock: SpanClock::Host, spans, barriers: Vec::new() }
    }
}
