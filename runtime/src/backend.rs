//! The [`Backend`] trait: what a device must do for the host executor. A vendor implements it
//! outside hat's crates (see `tools/vendor-opt/src/accelerator.rs` and `docs/vendor-backend.md`) and hands
//! it to the executor.
//!
//! The trait models an asynchronous device, as a GPU is:
//!
//! - **Recording.** [`record_write`](Backend::record_write) (host to device),
//!   [`record_read`](Backend::record_read) (device to host) and
//!   [`record_dispatch`](Backend::record_dispatch) add a command to the open batch and return
//!   its [`Command`] id. Nothing need run yet. A write takes its bytes at once (the caller may
//!   change them as soon as the call returns).
//! - **Dependencies are explicit.** Each command names the earlier commands it depends on
//!   (`after`): it must not start before they are done, and must see their writes. Commands
//!   that do not depend on each other may run in any order or at the same time; the backend
//!   adds no waits of its own between commands (on a GPU: a pipeline barrier only where a
//!   command depends on an earlier one). The executor finds the dependencies (a command that
//!   touches bytes an earlier one wrote, or writes bytes an earlier one read); a dependency on
//!   a command of a batch already waited for is allowed and costs nothing.
//! - **Batches and fences.** [`submit`](Backend::submit) closes the open batch and gives its
//!   [`Fence`]; [`wait`](Backend::wait) blocks until the batch of a fence and every batch
//!   before it are done, and gives the device time of their dispatches ([`DispatchTime`]) where
//!   the device measures it (GPU timestamps).
//! - **Asynchronous readback.** A read's bytes are there only once its batch was waited for:
//!   [`take_read`](Backend::take_read) then copies them out, once. Reads of a waited batch that
//!   are not taken before the next command is recorded are discarded.
//! - **Handles** are opaque and generational: a [`DeviceBuffer`] of a freed buffer (or of
//!   another backend) is an error ([`RuntimeError::StaleHandle`]), never another buffer.
//!   [`free`](Backend::free) may come while recorded commands still use the buffer: the backend
//!   keeps the memory until they are done.
//! - **Kernels** come as the lowering's artifact ([`KernelArtifact`]): the executor asks the
//!   backend to [`lower`](Backend::lower) the module once (a GPU backend runs the SPIR-V
//!   lowering with its device's features and limits; an interpreter lowers nothing), then hands
//!   each kernel's entry point, with its verified IR, to [`compile`](Backend::compile).
//!
//! The provided methods [`copy_to_device`](Backend::copy_to_device),
//! [`copy_from_device`](Backend::copy_from_device), [`dispatch`](Backend::dispatch),
//! [`synchronize`](Backend::synchronize) and [`compile_kernel`](Backend::compile_kernel) are
//! blocking conveniences built on the above, for tests and tools that drive a backend by hand:
//! each waits for what was recorded before, records one command, submits and waits. The
//! executor never uses them.

use crate::artifact::{KernelArtifact, LoweredModule};
use crate::error::RuntimeError;
use crate::kernel_cache::KernelCacheStats;
use crate::value::{BufferLayout, ElementType, Scalar};
use hat_ir::Verified;
use std::sync::Arc;
use std::time::Duration;

/// A buffer in device memory: an opaque handle minted by the backend that allocated it. The
/// generation tells a live buffer from a freed one whose slot was reused (see
/// [`crate::handles::HandleTable`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceBuffer {
    index: u32,
    generation: u32,
}

impl DeviceBuffer {
    /// The handle of slot `index` in its `generation` (for backends: see
    /// [`crate::handles::HandleTable`]).
    pub fn new(index: u32, generation: u32) -> Self {
        DeviceBuffer { index, generation }
    }

    /// The slot.
    pub fn index(self) -> u32 {
        self.index
    }

    /// The generation of the slot.
    pub fn generation(self) -> u32 {
        self.generation
    }
}

/// A compiled kernel, named by the backend that compiled it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelHandle(u32);

impl KernelHandle {
    /// The handle of the backend's kernel number `index`.
    pub fn new(index: u32) -> Self {
        KernelHandle(index)
    }

    /// The backend's number of the kernel.
    pub fn index(self) -> u32 {
        self.0
    }
}

/// A recorded command: its sequence number on its backend (commands are numbered from 0 in
/// the order they are recorded, across batches).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Command(u64);

impl Command {
    /// Command number `sequence`.
    pub fn new(sequence: u64) -> Self {
        Command(sequence)
    }

    /// Its sequence number.
    pub fn sequence(self) -> u64 {
        self.0
    }
}

/// A submitted batch: its sequence number on its backend (batches are numbered from 0).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fence(u64);

impl Fence {
    /// Batch number `sequence`.
    pub fn new(sequence: u64) -> Self {
        Fence(sequence)
    }

    /// Its sequence number.
    pub fn sequence(self) -> u64 {
        self.0
    }
}

/// What [`Backend::completed`] gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completed {
    /// Device times of dispatches of batches done, not given before.
    pub times: Vec<DispatchTime>,
    /// Every command numbered below this one is done.
    pub done_before: u64,
}

/// How long a dispatch ran on the device, as the device measured it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DispatchTime {
    /// The dispatch.
    pub command: Command,
    /// From its start to its end on the device.
    pub time: Duration,
}

/// An argument of a dispatch.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// A buffer (its device copy).
    Buffer(DeviceBuffer),
    /// A scalar of the given type.
    Scalar(Scalar, ElementType),
}

/// What one dispatch did to the elements of one of its buffer arguments (flat, row-major
/// indices), as a backend that records it reports ([`Backend::take_dispatch_accesses`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferAccesses {
    /// The buffer.
    pub buffer: DeviceBuffer,
    /// The elements the dispatch read before writing them: it saw what was there before it.
    pub read: Vec<std::ops::Range<u64>>,
    /// The elements it wrote.
    pub written: Vec<std::ops::Range<u64>>,
}

/// A device: memory, recorded copies and dispatches, batches, kernels. See the module
/// documentation for the contract.
///
/// Byte ranges are always within the buffer (the executor checks them first; a backend still
/// refuses one that is not, with an error).
pub trait Backend {
    /// A short name for reports (`cpu`, `vulkan`, ...).
    fn name(&self) -> &str;

    /// The device, in words, for reports (`NVIDIA H100 80GB HBM3`, `llvmpipe (LLVM 19.1.7,
    /// 256 bits)`, ...). By default the backend's name.
    fn device_name(&self) -> String {
        self.name().to_string()
    }

    /// Lowers the kernels of the verified `module` for this device, once per module: the Vulkan
    /// backend calls `hat_lowering::lower_module` with its device's features and limits (a kernel
    /// the lowering rejects is [`RuntimeError::KernelLowering`]: see
    /// [`crate::artifact::lowering_error`]). `None` (the default): the backend compiles kernels
    /// from their verified IR alone (an interpreter, or a vendor compiler of hat IR), and no
    /// lowering runs.
    fn lower(&mut self, module: Verified<'_>) -> Result<Option<Arc<dyn LoweredModule>>, RuntimeError> {
        let _ = module;
        Ok(None)
    }

    /// What the backend's kernel cache on disk did so far (see [`crate::kernel_cache`]): modules
    /// read from disk or lowered, pipelines held by the cache or compiled. `None` (the default):
    /// the backend keeps no such cache. The executor reports the counts of each run
    /// ([`crate::RunReport::kernel_cache`]).
    fn kernel_cache(&self) -> Option<KernelCacheStats> {
        None
    }

    /// The most work items one dispatch may have (the product of the grid's sizes). The executor
    /// refuses a larger grid, naming the dispatch, before recording it: a backend that runs work
    /// items one by one (the CPU reference backend) would otherwise run for hours. By default
    /// there is no limit.
    fn max_work_items(&self) -> u64 {
        u64::MAX
    }

    /// Allocates a buffer of the given layout. Its contents are undefined (the CPU reference
    /// backend fills it with poison).
    fn allocate(&mut self, layout: &BufferLayout) -> Result<DeviceBuffer, RuntimeError>;

    /// Frees a buffer; its handle is stale from now on. Commands recorded before that use it
    /// still run on it. Freeing a window ([`allocate_in`](Self::allocate_in)) frees no memory:
    /// its bytes are the arena's again.
    fn free(&mut self, buffer: DeviceBuffer) -> Result<(), RuntimeError>;

    /// An *arena* of `bytes` for memory planning (`plan-memory`): one allocation in which the
    /// executor places buffers with [`allocate_in`](Self::allocate_in), at offsets the plan
    /// gave, freed with [`free`](Self::free) once its windows are. `None` (the default): the
    /// backend has no arenas, and the executor allocates each planned buffer on its own.
    fn allocate_arena(&mut self, bytes: usize) -> Result<Option<DeviceBuffer>, RuntimeError> {
        let _ = bytes;
        Ok(None)
    }

    /// A buffer of `layout` that is the bytes `offset..offset + layout.bytes()` of `arena` (a
    /// *window*; `offset` a multiple of 256), whose contents are undefined. The executor does not
    /// place two windows that are in use at once over the same bytes; the CPU reference backend
    /// checks it, so that a wrong plan is an error rather than corrupted data. Only backends
    /// that give arenas are asked for windows.
    fn allocate_in(
        &mut self,
        arena: DeviceBuffer,
        offset: usize,
        layout: &BufferLayout,
    ) -> Result<DeviceBuffer, RuntimeError> {
        let _ = (arena, offset, layout);
        Err(RuntimeError::Backend(format!("the backend '{}' has no arenas", self.name())))
    }

    /// Prepares a kernel for dispatch, from its artifact (with its entry point in the module
    /// [`lower`](Self::lower) gave, if it gave one).
    fn compile(&mut self, kernel: &KernelArtifact<'_>) -> Result<KernelHandle, RuntimeError>;

    /// Records a copy of `data` into the buffer at byte `offset`, after the commands `after`.
    /// The bytes are taken before the call returns.
    fn record_write(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        data: &[u8],
        after: &[Command],
    ) -> Result<Command, RuntimeError>;

    /// Records a copy of `len` bytes from byte `offset` of the buffer to the host, after the
    /// commands `after`. The bytes are had with [`take_read`](Self::take_read) once the batch
    /// was waited for.
    fn record_read(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        len: usize,
        after: &[Command],
    ) -> Result<Command, RuntimeError>;

    /// Records a run of a compiled kernel over `grid` work items (x, y, z) with `args` in its
    /// parameter order, after the commands `after`. The grid's product fits in a `u64` and is at
    /// most [`max_work_items`](Self::max_work_items).
    fn record_dispatch(
        &mut self,
        kernel: KernelHandle,
        grid: [u64; 3],
        args: &[KernelArg],
        after: &[Command],
    ) -> Result<Command, RuntimeError>;

    /// Closes the open batch (which may be empty) and hands it to the device.
    fn submit(&mut self) -> Result<Fence, RuntimeError>;

    /// Waits until the batch of `fence` and every batch before it are done. Gives the device
    /// time of the dispatches of the batches it completed that the device measured (none where
    /// it has no timer). An error here (a lost device) may concern any command of those
    /// batches.
    fn wait(&mut self, fence: Fence) -> Result<Vec<DispatchTime>, RuntimeError>;

    /// What is done, without waiting: the device times of dispatches whose batches are done and
    /// that no call gave yet, and the first command not known to be done. A run that records a
    /// million dispatches before it waits books their times, and forgets what it kept for the
    /// commands that are done, as it goes (the executor asks every few thousand dispatches), so
    /// that what it keeps per command does not grow with its length. Each time is given once,
    /// here or by [`wait`](Self::wait). The default knows nothing done (every time comes from
    /// `wait`).
    fn completed(&mut self) -> Completed {
        Completed::default()
    }

    /// Copies the bytes of the read `read` (of a waited batch) into `into`, which has the read's
    /// length. Each read is taken once.
    fn take_read(&mut self, read: Command, into: &mut [u8]) -> Result<(), RuntimeError>;

    /// The element accesses of the last dispatch recorded, once per distinct buffer argument,
    /// when this backend records them (the CPU reference backend does after
    /// `CpuBackend::set_record_accesses(true)`); `None` (the default) otherwise. The host
    /// executor asks after each dispatch when it traces a run for the clairvoyant optimum
    /// ([`crate::oracle`]).
    fn take_dispatch_accesses(&mut self) -> Option<Vec<BufferAccesses>> {
        None
    }

    /// Starts recording a timeline of the commands (see [`crate::timeline`]): when each ran, on
    /// the device's clock or on the host's counted from `origin`, and the barriers recorded with
    /// the dependencies behind each; `None` stops it. Gives whether this backend records one
    /// (by default it does not, and the executor places each command where the host recorded
    /// it). Recording must not change what runs or how it is ordered.
    fn record_timeline(&mut self, origin: Option<std::time::Instant>) -> bool {
        let _ = origin;
        false
    }

    /// What the timeline holds since the last call: the spans of the commands of batches waited
    /// for, and the barriers recorded.
    fn take_timeline(&mut self) -> crate::timeline::BackendTimeline {
        crate::timeline::BackendTimeline::default()
    }

    // ----- blocking conveniences (never used by the executor) ----------------------------------

    /// Submits the open batch and waits for it (and everything before it).
    fn synchronize(&mut self) -> Result<Vec<DispatchTime>, RuntimeError> {
        let fence = self.submit()?;
        self.wait(fence)
    }

    /// Copies `data` into the buffer at byte `offset` after everything recorded before, and
    /// waits until it is there.
    fn copy_to_device(&mut self, buffer: DeviceBuffer, offset: usize, data: &[u8]) -> Result<(), RuntimeError> {
        self.synchronize()?;
        self.record_write(buffer, offset, data, &[])?;
        self.synchronize().map(drop)
    }

    /// Copies `data.len()` bytes from byte `offset` of the buffer into `data`, after everything
    /// recorded before.
    fn copy_from_device(&mut self, buffer: DeviceBuffer, offset: usize, data: &mut [u8]) -> Result<(), RuntimeError> {
        self.synchronize()?;
        let read = self.record_read(buffer, offset, data.len(), &[])?;
        self.synchronize()?;
        self.take_read(read, data)
    }

    /// Runs a kernel after everything recorded before, and waits for it.
    fn dispatch(&mut self, kernel: KernelHandle, grid: [u64; 3], args: &[KernelArg]) -> Result<(), RuntimeError> {
        self.synchronize()?;
        self.record_dispatch(kernel, grid, args, &[])?;
        self.synchronize().map(drop)
    }

    /// Compiles the kernel `kernel.op()` of a verified module (the kernel lowered on its own
    /// first, when the backend lowers).
    fn compile_kernel(&mut self, kernel: Verified<'_>) -> Result<KernelHandle, RuntimeError> {
        let module = self.lower(kernel)?;
        let artifact = KernelArtifact::new(kernel, module.as_ref());
        self.compile(&artifact)
    }
}
