//! [`VulkanBackend`]: the [`Backend`] on a Vulkan device. See the crate documentation.

use crate::errors::vk_error;
use crate::frames::{Barrier, Frame, Hazards, Landing, Stage, QUERIES_PER_POOL};
use crate::gpu::{DeviceDescription, Gpu};
use crate::kernels::{Bound, Kernels, SpirvLowered};
use crate::memory::{check_size, Block, DeviceMemory, Ring, RingState, Storage};
use crate::memory::{copy_bytes, Pieces};
use crate::module_cache;
use crate::pipeline_cache::PipelineCache;
use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use gpu_allocator::{AllocationSizes, AllocatorDebugSettings, MemoryLocation};
use hat_ir::Verified;
use hat_lowering::ScalarEncoding;
use hat_runtime::kernel_cache::EntryProblem;
use hat_runtime::timeline::{BackendTimeline, BarrierRecord, CommandSpan, SpanClock};
use hat_runtime::{
    Backend, BufferLayout, Command, DeviceBuffer, DispatchTime, ElementType, Fence, HandleTable, KernelArg,
    KernelArtifact, KernelCacheStats, KernelHandle, LoweredModule, RuntimeError, Scalar,
};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How to open a [`VulkanBackend`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VulkanOptions {
    /// The device: its index in [`crate::list_devices`] or a part of its name; `None` for the
    /// best one (see the crate documentation).
    pub device: Option<String>,
    /// Whether to run with the Khronos validation layer (and synchronisation validation), and
    /// record its messages ([`VulkanBackend::validation_messages`]).
    pub validation: bool,
    /// Whether to time each dispatch with GPU timestamps (where the queue has them).
    pub timestamps: bool,
    /// Bytes of each staging ring (one each way). A copy that does not fit goes through
    /// pieces of half this size (at most 32 MiB).
    pub staging_bytes: u64,
    /// Bytes of staging pieces kept for later copies, each way.
    pub staging_kept_bytes: u64,
    /// Commands in a batch before the backend submits it on its own, so that the device runs
    /// the first commands of a long batch while the host records the rest (the executor's
    /// submit closes the last). A batch of 16 or more is submitted sooner when the device has
    /// finished everything submitted before it.
    pub batch_commands: u32,
    /// Whether the lowering may reshape the workgroups of kernels that cannot observe them
    /// ([`hat_lowering::LoweringOptions::choose_workgroup_shape`]).
    pub choose_workgroup_shape: bool,
    /// Whether the lowering may run kernels whose every access is at their global id in x
    /// four work items per invocation, with `vec4` accesses
    /// ([`hat_lowering::LoweringOptions::vectorize_accesses`]).
    pub vectorize_accesses: bool,
    /// Rows of work items a stencil kernel may run per invocation, sharing the loads of
    /// buffers it never writes ([`hat_lowering::LoweringOptions::coarsen_rows`]; 1: none).
    pub coarsen_rows: u32,
    /// Whether a barrier before a dispatch is narrowed to the dispatch's buffers (buffer memory
    /// barriers) rather than global (a memory barrier). On the H100 the chain of dependent
    /// dispatches ran alike either way (docs/benchmarks.md, the GPU section), so the default is
    /// global (`HAT_VULKAN_BUFFER_BARRIERS=1` narrows them).
    pub buffer_barriers: bool,
    /// Whether a dispatch whose grid is a whole number of workgroups in every dimension runs
    /// the kernel's pipeline specialised without the check against the grid
    /// ([`hat_lowering::EntryPoint::whole_grid_constant`]), made on the first such dispatch.
    /// On the H100 the chain of dependent one-workgroup dispatches took about 0.3 us less per
    /// dispatch without the check (docs/benchmarks.md, the GPU section);
    /// `HAT_VULKAN_ALWAYS_CHECK_GRID=1` turns it off.
    pub whole_grid_pipelines: bool,
    /// Optional features not to enable even where the device has them (to see what a device
    /// without them does).
    pub withhold: Vec<hat_lowering::Feature>,
    /// The directory of the kernel cache on disk (lowered modules and the device's pipeline
    /// cache, kept between processes: `module_cache.rs`, `pipeline_cache.rs`); `None`: no cache
    /// on disk (kernels are still cached in the process).
    pub kernel_cache: Option<PathBuf>,
}

impl Default for VulkanOptions {
    /// The device `HAT_VULKAN_DEVICE` names (if set), validation when `HAT_VULKAN_VALIDATION=1`,
    /// timestamps, 64 MiB rings, 1 GiB of pieces kept, batches of 256 commands
    /// (`HAT_VULKAN_BATCH_COMMANDS` sets another number), workgroups reshaped where kernels
    /// cannot tell (not with `HAT_VULKAN_DECLARED_WORKGROUPS=1`), vector accesses where they
    /// apply (not with `HAT_VULKAN_SCALAR_ACCESSES=1`), stencils coarsened by [`COARSEN_ROWS`]
    /// rows (`HAT_VULKAN_COARSEN_ROWS` sets another number, 1 none), global barriers (buffer
    /// barriers with `HAT_VULKAN_BUFFER_BARRIERS=1`), pipelines without the grid check for
    /// whole grids (not with `HAT_VULKAN_ALWAYS_CHECK_GRID=1`), and a kernel cache on disk only
    /// where `HAT_CACHE_DIR` names its directory (hat-opt keeps one in the user's cache
    /// directory by default: [`hat_runtime::kernel_cache::default_directory`]).
    fn default() -> Self {
        VulkanOptions {
            device: std::env::var("HAT_VULKAN_DEVICE").ok().filter(|d| !d.trim().is_empty()),
            validation: std::env::var("HAT_VULKAN_VALIDATION").is_ok_and(|v| v == "1"),
            timestamps: true,
            staging_bytes: 64 << 20,
            staging_kept_bytes: 1 << 30,
            batch_commands: std::env::var("HAT_VULKAN_BATCH_COMMANDS")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or(256),
            choose_workgroup_shape: !std::env::var("HAT_VULKAN_DECLARED_WORKGROUPS").is_ok_and(|v| v == "1"),
            vectorize_accesses: !std::env::var("HAT_VULKAN_SCALAR_ACCESSES").is_ok_and(|v| v == "1"),
            coarsen_rows: std::env::var("HAT_VULKAN_COARSEN_ROWS")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .filter(|&n| (1..=64).contains(&n))
                .unwrap_or(COARSEN_ROWS),
            buffer_barriers: std::env::var("HAT_VULKAN_BUFFER_BARRIERS").is_ok_and(|v| v == "1"),
            whole_grid_pipelines: !std::env::var("HAT_VULKAN_ALWAYS_CHECK_GRID").is_ok_and(|v| v == "1"),
            withhold: Vec::new(),
            kernel_cache: std::env::var_os("HAT_CACHE_DIR").filter(|d| !d.is_empty()).map(PathBuf::from),
        }
    }
}

/// Rows per invocation of a coarsened stencil kernel, by default. On the H100, Life at 8192 x
/// 8192, 1,000 generations end to end took 337.2 ms with 1 (no coarsening), 261.7 with 2, 246.7
/// with 4, 242.4 with 8 and 247.4 with 16 (docs/benchmarks.md, the GPU section).
pub const COARSEN_ROWS: u32 = 8;

/// Lowered modules kept for later executors (all are dropped when one more is lowered).
const LOWERED_KEPT: usize = 64;

/// After the executor's submit, a batch of at least this many commands is submitted early when
/// the device is idle; each early submission doubles it (up to `batch_commands`), so that a
/// long run of commands costs few submissions where the device outruns the host.
const EARLY_BATCH: u64 = 16;

/// The most batches submitted and not completed; past it, a submission completes the oldest.
const MAX_IN_FLIGHT: usize = 8;

/// What to destroy once the batches that may use it are done.
enum Retired {
    Buffer(Block),
    Sets(Vec<(vk::DescriptorSet, usize)>),
}

/// The Vulkan backend. See the crate documentation.
pub struct VulkanBackend {
    kernels: Kernels,
    buffers: HandleTable<DeviceMemory>,
    upload: Ring,
    download: Ring,
    /// Staging for copies that do not fit the rings.
    upload_pieces: Pieces,
    download_pieces: Pieces,
    batch_commands: u64,
    /// Whether barriers before dispatches name their buffers ([`VulkanOptions::buffer_barriers`]).
    buffer_barriers: bool,
    /// [`VulkanOptions::whole_grid_pipelines`].
    whole_grid_pipelines: bool,
    /// The size from which an idle device gets the open batch (see [`EARLY_BATCH`]).
    early_batch: u64,
    choose_workgroup_shape: bool,
    vectorize_accesses: bool,
    coarsen_rows: u32,
    /// Modules lowered before, by their text (see [`VulkanBackend::lower`]).
    lowered: FxHashMap<String, Arc<dyn LoweredModule>>,
    /// [`VulkanOptions::kernel_cache`].
    kernel_cache: Option<PathBuf>,
    /// The device's pipeline cache, from and to the kernel cache on disk.
    pipeline_cache: PipelineCache,
    /// Modules read from the kernel cache on disk, lowered, and entries of it ignored.
    modules_from_disk: u64,
    modules_lowered: u64,
    modules_ignored: u64,
    command_pool: vk::CommandPool,
    /// The batch being recorded.
    open: Option<Frame>,
    /// Submitted batches not waited for, oldest first.
    in_flight: VecDeque<Frame>,
    /// Dispatch times of completed batches, until a wait or `completed` gives them.
    done_times: Vec<DispatchTime>,
    /// Frames of waited batches, to reuse.
    spare: Vec<Frame>,
    hazards: Hazards,
    /// Reads of waited batches, not taken yet.
    takeable: FxHashMap<u64, Landing>,
    /// Reads of batches completed before a wait (a host far ahead, `completed`): they
    /// become takeable at the next wait.
    landed: FxHashMap<u64, Landing>,
    /// What to destroy once the batch numbered with it is done.
    retired: VecDeque<(u64, Retired)>,
    next_command: u64,
    next_batch: u64,
    /// Batches below this one were waited for.
    completed: u64,
    timestamps: bool,
    /// While a timeline is recorded: the spans and barriers not taken yet.
    timeline: Option<BackendTimeline>,
    allocator: ManuallyDrop<Allocator>,
    gpu: ManuallyDrop<Gpu>,
}

impl VulkanBackend {
    /// Opens the device the options name (or the best one) and prepares the staging rings.
    pub fn new(options: &VulkanOptions) -> Result<VulkanBackend, RuntimeError> {
        let gpu = Gpu::open(options.device.as_deref(), options.validation, &options.withhold)?;
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: gpu.instance.clone(),
            device: gpu.device.clone(),
            physical_device: gpu.physical,
            debug_settings: AllocatorDebugSettings::default(),
            buffer_device_address: false,
            allocation_sizes: AllocationSizes::default(),
        })
        .map_err(|e| RuntimeError::Backend(format!("vulkan: cannot create the memory allocator: {e}")))?;
        let mut allocator = ManuallyDrop::new(allocator);
        let mut gpu = ManuallyDrop::new(gpu);
        let made = Self::rings(&gpu, &mut allocator, options.staging_bytes);
        let (upload, download, command_pool) = match made {
            Ok(parts) => parts,
            Err(error) => {
                // SAFETY: nothing else was made from them.
                unsafe {
                    ManuallyDrop::drop(&mut allocator);
                    ManuallyDrop::drop(&mut gpu);
                }
                return Err(error);
            }
        };
        let timestamps = options.timestamps && gpu.limits.timestamp_bits > 0;
        let pipeline_cache = PipelineCache::open(
            &gpu.device,
            gpu.identity.clone(),
            options.kernel_cache.as_deref(),
            gpu.creation_feedback,
        );
        let piece = (options.staging_bytes / 2).clamp(256, 32 << 20);
        let kept = options.staging_kept_bytes;
        Ok(VulkanBackend {
            kernels: Kernels::default(),
            buffers: HandleTable::new(),
            upload,
            download,
            upload_pieces: Pieces::new(
                piece,
                kept,
                vk::BufferUsageFlags::TRANSFER_SRC,
                MemoryLocation::CpuToGpu,
                "upload staging",
            ),
            download_pieces: Pieces::new(
                piece,
                kept,
                vk::BufferUsageFlags::TRANSFER_DST,
                MemoryLocation::GpuToCpu,
                "download staging",
            ),
            batch_commands: options.batch_commands.max(1) as u64,
            buffer_barriers: options.buffer_barriers,
            whole_grid_pipelines: options.whole_grid_pipelines,
            early_batch: EARLY_BATCH,
            choose_workgroup_shape: options.choose_workgroup_shape,
            vectorize_accesses: options.vectorize_accesses,
            coarsen_rows: options.coarsen_rows.max(1),
            lowered: FxHashMap::default(),
            kernel_cache: options.kernel_cache.clone(),
            pipeline_cache,
            modules_from_disk: 0,
            modules_lowered: 0,
            modules_ignored: 0,
            command_pool,
            open: None,
            in_flight: VecDeque::new(),
            done_times: Vec::new(),
            spare: Vec::new(),
            hazards: Hazards::default(),
            takeable: FxHashMap::default(),
            landed: FxHashMap::default(),
            retired: VecDeque::new(),
            next_command: 0,
            next_batch: 0,
            completed: 0,
            timestamps,
            timeline: None,
            allocator,
            gpu,
        })
    }

    fn rings(gpu: &Gpu, allocator: &mut Allocator, bytes: u64) -> Result<(Ring, Ring, vk::CommandPool), RuntimeError> {
        let device = &gpu.device;
        let up = Block::new(
            device,
            allocator,
            bytes,
            vk::BufferUsageFlags::TRANSFER_SRC,
            MemoryLocation::CpuToGpu,
            "upload ring",
        )?;
        let down = match Block::new(
            device,
            allocator,
            bytes,
            vk::BufferUsageFlags::TRANSFER_DST,
            MemoryLocation::GpuToCpu,
            "download ring",
        ) {
            Ok(down) => down,
            Err(error) => {
                up.destroy(device, allocator);
                return Err(error);
            }
        };
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(gpu.family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: a valid create info.
        let pool = match unsafe { device.create_command_pool(&info, None) } {
            Ok(pool) => pool,
            Err(error) => {
                up.destroy(device, allocator);
                down.destroy(device, allocator);
                return Err(vk_error("create a command pool")(error));
            }
        };
        let capacity = bytes.max(4).next_multiple_of(4);
        Ok((
            Ring { block: up, state: RingState::new(capacity) },
            Ring { block: down, state: RingState::new(capacity) },
            pool,
        ))
    }

    /// The module `module` lowered with `options`: from the kernel cache on disk when it holds
    /// it (`module_cache.rs`), else lowered (and written there).
    fn lower_or_load(
        &mut self,
        module: Verified<'_>,
        options: &hat_lowering::LoweringOptions,
    ) -> Result<hat_lowering::SpirvModule, RuntimeError> {
        let lower = || {
            hat_lowering::lower_module(module.ctx(), module, options)
                .map_err(|diagnostics| hat_runtime::artifact::lowering_error(module, &diagnostics))
        };
        let Some(directory) = self.kernel_cache.clone() else {
            self.modules_lowered += 1;
            return lower();
        };
        // The key leaves locations out (the SPIR-V has none); `load` finds the entry points'.
        let print = hat_ir::PrintOptions { generic: true, debug_info: false, assume_verified: true };
        let key = module_cache::module_key(&hat_ir::print_op(module.ctx(), module.op(), print), options);
        match module_cache::load(&directory, &key, module.ctx(), module.op()) {
            Ok(loaded) => {
                self.modules_from_disk += 1;
                return Ok(loaded);
            }
            Err(EntryProblem::Missing) => {}
            Err(EntryProblem::Ignored(_)) => self.modules_ignored += 1,
        }
        let lowered = lower()?;
        self.modules_lowered += 1;
        module_cache::store(&directory, &key, &lowered);
        Ok(lowered)
    }

    /// The device in use.
    pub fn device(&self) -> &DeviceDescription {
        &self.gpu.description
    }

    /// Whether the device is a CPU implementation (lavapipe).
    pub fn is_software(&self) -> bool {
        self.gpu.description.is_cpu
    }

    /// How many compute pipelines the backend has made: one per kernel compiled, and one more
    /// per kernel that ran a grid of whole workgroups without its check against the grid
    /// ([`VulkanOptions::whole_grid_pipelines`]).
    pub fn pipelines(&self) -> usize {
        self.kernels.pipeline_count()
    }

    /// What the validation layer said so far (empty without validation).
    pub fn validation_messages(&self) -> Vec<String> {
        self.gpu.messages.as_ref().map(|m| m.recorded()).unwrap_or_default()
    }

    fn stale(buffer: DeviceBuffer) -> RuntimeError {
        RuntimeError::StaleHandle {
            what: "device buffer",
            index: buffer.index() as u64,
            generation: buffer.generation(),
        }
    }

    fn memory(&self, buffer: DeviceBuffer) -> Result<&DeviceMemory, RuntimeError> {
        self.buffers.get(buffer.index(), buffer.generation()).ok_or_else(|| Self::stale(buffer))
    }

    fn check_range(memory: &DeviceMemory, offset: usize, len: usize) -> Result<(), RuntimeError> {
        match (offset as u64).checked_add(len as u64) {
            Some(end) if end <= memory.bytes => Ok(()),
            _ => Err(RuntimeError::Backend(format!(
                "vulkan: {len} bytes at byte offset {offset} are outside a device buffer of {} bytes",
                memory.bytes
            ))),
        }
    }

    /// The open batch, begun if there is none; the untaken reads of waited batches are discarded
    /// first (the contract: they last until the next command is recorded).
    fn frame(&mut self) -> Result<&mut Frame, RuntimeError> {
        if !self.takeable.is_empty() {
            for (_, landing) in std::mem::take(&mut self.takeable) {
                self.release_landing(landing);
            }
        }
        if self.open.is_none() {
            let frame = match self.spare.pop() {
                Some(mut frame) => {
                    frame.sequence = self.next_batch;
                    frame.first_command = self.next_command;
                    frame.bound = Default::default();
                    frame
                }
                None => self.new_frame()?,
            };
            let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            // SAFETY: a command buffer not in use (fresh, or of a waited batch and reset).
            unsafe { self.gpu.device.begin_command_buffer(frame.commands, &begin) }
                .map_err(vk_error("begin a command buffer"))?;
            self.hazards.clear(frame.first_command);
            self.open = Some(frame);
        }
        Ok(self.open.as_mut().expect("opened above"))
    }

    fn new_frame(&mut self) -> Result<Frame, RuntimeError> {
        let device = &self.gpu.device;
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.command_pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: valid create infos.
        let commands =
            unsafe { device.allocate_command_buffers(&info) }.map_err(vk_error("allocate a command buffer"))?[0];
        let fence = unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) }
            .map_err(vk_error("create a fence"))?;
        Ok(Frame {
            sequence: self.next_batch,
            first_command: self.next_command,
            commands,
            fence,
            query_pools: Vec::new(),
            queries: 0,
            timed: Vec::new(),
            timed_copies: Vec::new(),
            uploads: Vec::new(),
            pieces: Vec::new(),
            reads: Vec::new(),
            bound: Default::default(),
        })
    }

    fn release_landing(&mut self, landing: Landing) {
        match landing {
            Landing::Ring(span, _, _) => self.download.state.release(span),
            Landing::Pieces(blocks, _) => {
                for block in blocks {
                    self.download_pieces.give(block, &self.gpu.device, &mut self.allocator);
                }
            }
        }
    }

    /// After a command: submits the open batch early when it holds `batch_commands` commands,
    /// or `early_batch` (a multiple of [`EARLY_BATCH`]) while the device has finished everything
    /// submitted before, so that the device works while the host records. No wait.
    fn submit_early(&mut self) -> Result<(), RuntimeError> {
        let Some(frame) = &self.open else { return Ok(()) };
        let count = self.next_command - frame.first_command;
        let due = count >= self.batch_commands
            || (count >= self.early_batch && count.is_multiple_of(EARLY_BATCH) && self.device_idle());
        if due {
            self.early_batch = (self.early_batch * 2).min(self.batch_commands.max(EARLY_BATCH));
            self.submit_open()?;
        }
        Ok(())
    }

    /// Whether every submitted batch is done (without waiting).
    fn device_idle(&self) -> bool {
        match self.in_flight.back() {
            None => true,
            // SAFETY: the fence of a submitted batch.
            Some(last) => unsafe { self.gpu.device.get_fence_status(last.fence) }.unwrap_or(false),
        }
    }

    /// The first command of a batch not waited for.
    fn waited_floor(&self) -> u64 {
        self.in_flight.front().map_or(self.next_command, |f| f.first_command)
    }

    /// Records the barrier a command of `stage` after `after` needs, if any, into the open batch.
    /// `buffers`: the command's buffers, to which the barrier is narrowed where the options say
    /// so (a dispatch's dependencies are all on its own buffers); empty: a global barrier.
    fn barrier(&mut self, stage: Stage, after: &[Command], buffers: &[vk::Buffer]) -> Result<(), RuntimeError> {
        let floor = self.waited_floor();
        let narrow = self.buffer_barriers && !buffers.is_empty();
        let frame = self.frame()?;
        let (commands, first) = (frame.commands, frame.first_command);
        let waits_for = match self.timeline {
            Some(_) => self.hazards.needing(stage, after, first, floor),
            None => Vec::new(),
        };
        if let Some(Barrier { src_stages, src_access, dst }) = self.hazards.before(stage, after, first, floor, !narrow)
        {
            if let Some(timeline) = &mut self.timeline {
                let scope = if narrow { "the dispatch's buffers" } else { "all memory" };
                timeline.barriers.push(BarrierRecord {
                    before: Command::new(self.next_command),
                    waits_for,
                    detail: format!(
                        "pipeline barrier {src_stages:?} -> {:?}, access {src_access:?} -> {:?}, on {scope}",
                        dst.flags(),
                        dst.access()
                    ),
                });
            }
            let memory = [vk::MemoryBarrier::default().src_access_mask(src_access).dst_access_mask(dst.access())];
            let mut ranges: SmallVec<[vk::BufferMemoryBarrier<'_>; 8]> = SmallVec::new();
            if narrow {
                for (index, &buffer) in buffers.iter().enumerate() {
                    if !buffers[..index].contains(&buffer) {
                        ranges.push(
                            vk::BufferMemoryBarrier::default()
                                .src_access_mask(src_access)
                                .dst_access_mask(dst.access())
                                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                                .buffer(buffer)
                                .offset(0)
                                .size(vk::WHOLE_SIZE),
                        );
                    }
                }
            }
            let memory: &[vk::MemoryBarrier<'_>] = if narrow { &[] } else { &memory };
            // SAFETY: a recording command buffer; live buffers.
            unsafe {
                self.gpu.device.cmd_pipeline_barrier(
                    commands,
                    src_stages,
                    dst.flags(),
                    vk::DependencyFlags::empty(),
                    memory,
                    &ranges,
                    &[],
                )
            };
        }
        Ok(())
    }

    fn next(&mut self) -> Command {
        self.next_command += 1;
        Command::new(self.next_command - 1)
    }

    /// The first query of two for a timed dispatch in the open batch (a pool added and reset as
    /// needed).
    fn queries(&mut self) -> Result<Option<(vk::QueryPool, u32)>, RuntimeError> {
        if !self.timestamps {
            return Ok(None);
        }
        let device = self.gpu.device.clone();
        let frame = self.open.as_mut().expect("a frame is open");
        let pool_index = (frame.queries / QUERIES_PER_POOL) as usize;
        if pool_index >= frame.query_pools.len() {
            let info =
                vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(QUERIES_PER_POOL);
            // SAFETY: a valid create info.
            let pool = unsafe { device.create_query_pool(&info, None) }.map_err(vk_error("create a query pool"))?;
            frame.query_pools.push(pool);
        }
        if frame.queries.is_multiple_of(QUERIES_PER_POOL) {
            // SAFETY: a recording command buffer; the pool's queries are not in use.
            unsafe { device.cmd_reset_query_pool(frame.commands, frame.query_pools[pool_index], 0, QUERIES_PER_POOL) };
        }
        let first = frame.queries;
        frame.queries += 2;
        Ok(Some((frame.query_pools[pool_index], first % QUERIES_PER_POOL)))
    }

    /// The queries that bracket a copy in the open batch, while a timeline is recorded (and the
    /// queue has timestamps): the first of two, its first timestamp written.
    fn copy_started(&mut self) -> Result<Option<(vk::QueryPool, u32)>, RuntimeError> {
        if self.timeline.is_none() {
            return Ok(None);
        }
        let queries = self.queries()?;
        if let Some((pool, first)) = queries {
            let frame = self.open.as_ref().expect("a frame is open");
            // SAFETY: a recording command buffer; the query was reset in it.
            unsafe {
                self.gpu.device.cmd_write_timestamp(frame.commands, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, first)
            };
        }
        Ok(queries)
    }

    /// Writes the second timestamp of a copy [`Self::copy_started`] bracketed, and notes it.
    fn copy_ended(&mut self, command: Command, queries: Option<(vk::QueryPool, u32)>) {
        let Some((pool, first)) = queries else { return };
        let frame = self.open.as_mut().expect("a frame is open");
        // SAFETY: a recording command buffer; the query was reset in it.
        unsafe {
            self.gpu.device.cmd_write_timestamp(frame.commands, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, first + 1)
        };
        frame.timed_copies.push((command, frame.queries - 2));
    }

    /// The buffers of a dispatch's bindings, binding by binding: their handles (for the
    /// descriptor set cache), Vulkan buffers (for barriers) and ranges. The executor checked the
    /// arguments against the kernel's signature (hat_runtime::dispatch_arguments); they only need
    /// decoding here.
    #[allow(clippy::type_complexity)]
    fn bound_buffers(
        &self,
        entry: &hat_lowering::EntryPoint,
        args: &[KernelArg],
    ) -> Result<(Bound, SmallVec<[vk::Buffer; 8]>, SmallVec<[(vk::Buffer, u64, u64); 8]>), RuntimeError> {
        let mut bound = Bound::new();
        let mut buffers = SmallVec::new();
        let mut ranges = SmallVec::new();
        for binding in &entry.bindings {
            let Some(&KernelArg::Buffer(buffer)) = args.get(binding.parameter) else {
                return Err(unchecked_arguments(&entry.name));
            };
            let memory = self.buffers.get(buffer.index(), buffer.generation()).ok_or_else(|| Self::stale(buffer))?;
            bound.push((buffer.index(), buffer.generation()));
            buffers.push(memory.buffer());
            ranges.push((memory.buffer(), memory.offset(), memory.bytes));
        }
        Ok((bound, buffers, ranges))
    }

    /// The workgroups a dispatch of `grid` work items runs in each dimension, and whether they
    /// cover the grid exactly (see `whole_grid_pipelines`); an error where the grid or the
    /// count exceeds what the device indexes.
    fn workgroups(&self, entry: &hat_lowering::EntryPoint, grid: [u64; 3]) -> Result<([u32; 3], bool), RuntimeError> {
        for (dimension, &size) in grid.iter().enumerate() {
            if size > i32::MAX as u64 {
                return Err(RuntimeError::Backend(format!(
                    "vulkan: the dispatch of '@{}' has a grid of {size} work items in dimension {dimension}: more \
                     than the device's 32-bit index holds (2^31 - 1)",
                    entry.name
                )));
            }
        }
        let mut workgroups = [0u32; 3];
        let mut whole = entry.whole_grid_constant.is_some() && self.whole_grid_pipelines;
        for dimension in 0..3 {
            let size = entry.workgroup_size[dimension].max(1) as u64;
            let items = match dimension {
                0 => entry.items_per_invocation.max(1) as u64,
                1 => entry.rows_per_invocation.max(1) as u64,
                _ => 1,
            };
            let count = grid[dimension].div_ceil(items).div_ceil(size);
            whole &= grid[dimension].is_multiple_of(items * size);
            let limit = self.gpu.limits.max_workgroup_count[dimension];
            workgroups[dimension] = u32::try_from(count).ok().filter(|&c| c <= limit).ok_or_else(|| {
                RuntimeError::Backend(format!(
                    "vulkan: the dispatch of '@{}' needs {count} workgroups in dimension {dimension}, more than \
                     the device's maxComputeWorkGroupCount of {limit}",
                    entry.name
                ))
            })?;
        }
        Ok((workgroups, whole))
    }

    /// Writes the push constants of a dispatch into `bytes`.
    fn push_constants(
        &self,
        kernel: u32,
        grid: [u64; 3],
        args: &[KernelArg],
        bytes: &mut [u8],
    ) -> Result<(), RuntimeError> {
        let entry = &self.kernels.list[kernel as usize].entry;
        let name = &entry.name;
        for (dimension, &size) in grid.iter().enumerate() {
            let size = u32::try_from(size).ok().filter(|&s| s <= i32::MAX as u32).ok_or_else(|| {
                RuntimeError::Backend(format!(
                    "vulkan: the dispatch of '@{name}' has a grid of {size} work items in dimension {dimension}: \
                     more than the device's 32-bit index holds (2^31 - 1)"
                ))
            })?;
            let at = entry.push_constants.grid_offset as usize + 4 * dimension;
            bytes[at..at + 4].copy_from_slice(&size.to_le_bytes());
        }
        for slot in &entry.push_constants.scalars {
            let Some(&KernelArg::Scalar(value, ty)) = args.get(slot.parameter) else {
                return Err(unchecked_arguments(name));
            };
            encode(name, slot.parameter, value, ty, slot.encoding, &mut bytes[slot.offset as usize..])?;
        }
        for slot in &entry.push_constants.dims {
            let Some(&KernelArg::Buffer(buffer)) = args.get(slot.parameter) else {
                return Err(unchecked_arguments(name));
            };
            let extent = self.memory(buffer)?.layout.shape.get(slot.dimension).copied().unwrap_or(0);
            let value = Scalar::Int(extent as i64);
            encode(name, slot.parameter, value, ElementType::Index, slot.encoding, &mut bytes[slot.offset as usize..])?;
        }
        Ok(())
    }

    /// Whether one buffer of `bytes` can be made on this device: within its storage-buffer range,
    /// its largest allocation and its memory ([`check_size`]).
    fn fits(&self, bytes: u64) -> Result<(), RuntimeError> {
        let limits = &self.gpu.limits;
        check_size(
            bytes,
            limits.max_storage_buffer_range,
            limits.max_allocation_size,
            self.gpu.description.device_local_bytes,
        )
    }

    /// Completes the oldest batch in flight (its fence signalled): books its times, keeps its
    /// reads, releases its staging, and keeps the frame for reuse.
    fn complete_oldest(&mut self) -> Result<(), RuntimeError> {
        let mut frame = self.in_flight.pop_front().expect("a batch in flight");
        let device = self.gpu.device.clone();
        // SAFETY: the fence belongs to this batch's submission.
        let waited = unsafe { device.wait_for_fences(&[frame.fence], true, u64::MAX) };
        if let Err(error) = waited {
            self.in_flight.push_front(frame);
            return Err(vk_error("wait for the device")(error));
        }
        if !frame.timed.is_empty() || !frame.timed_copies.is_empty() {
            let mut ticks = vec![0u64; frame.queries as usize];
            for (index, &pool) in frame.query_pools.iter().enumerate() {
                let start = index * QUERIES_PER_POOL as usize;
                let end = (start + QUERIES_PER_POOL as usize).min(ticks.len());
                if start >= end {
                    break;
                }
                // SAFETY: these queries were written by the batch, which is done.
                unsafe {
                    device.get_query_pool_results(
                        pool,
                        0,
                        &mut ticks[start..end],
                        vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                    )
                }
                .map_err(vk_error("read the timestamps"))?;
            }
            let bits = self.gpu.limits.timestamp_bits;
            let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
            for &(command, first) in &frame.timed {
                let (start, end) = (ticks[first as usize] & mask, ticks[first as usize + 1] & mask);
                let nanos = end.wrapping_sub(start) & mask;
                let time = Duration::from_nanos((nanos as f64 * self.gpu.limits.timestamp_period) as u64);
                self.done_times.push(DispatchTime { command, time });
            }
            if let Some(timeline) = &mut self.timeline {
                let period = self.gpu.limits.timestamp_period;
                let nanos = |tick: u64| ((tick & mask) as f64 * period) as u64;
                for &(command, first) in frame.timed.iter().chain(&frame.timed_copies) {
                    let (start, end) = (nanos(ticks[first as usize]), nanos(ticks[first as usize + 1]));
                    timeline.spans.push(CommandSpan { command, start_ns: start, end_ns: end.max(start) });
                }
            }
        }
        for span in frame.uploads.drain(..) {
            self.upload.state.release(span);
        }
        for block in frame.pieces.drain(..) {
            self.upload_pieces.give(block, &device, &mut self.allocator);
        }
        for (command, landing) in frame.reads.drain(..) {
            self.landed.insert(command.sequence(), landing);
        }
        frame.timed.clear();
        frame.timed_copies.clear();
        frame.queries = 0;
        // SAFETY: the batch is done: neither is in use.
        unsafe {
            device.reset_fences(&[frame.fence]).map_err(vk_error("reset a fence"))?;
            device
                .reset_command_buffer(frame.commands, vk::CommandBufferResetFlags::empty())
                .map_err(vk_error("reset a command buffer"))?;
        }
        self.completed = frame.sequence + 1;
        self.spare.push(frame);
        Ok(())
    }

    /// Destroys what was retired while batches now done could use it.
    fn release_retired(&mut self) {
        while self.retired.front().is_some_and(|(batch, _)| *batch < self.completed) {
            let (_, retired) = self.retired.pop_front().expect("checked above");
            match retired {
                Retired::Buffer(block) => block.destroy(&self.gpu.device, &mut self.allocator),
                Retired::Sets(sets) => self.kernels.free_sets(&self.gpu.device, &sets),
            }
        }
    }

    /// The batch after which something freed now is no longer used: the open one, else the
    /// last submitted; `None` when nothing is in flight.
    fn last_user(&self) -> Option<u64> {
        match (&self.open, self.in_flight.back()) {
            (Some(open), _) => Some(open.sequence),
            (None, Some(last)) => Some(last.sequence),
            (None, None) => None,
        }
    }

    /// Closes the open batch and submits it; gives its number.
    fn submit_open(&mut self) -> Result<u64, RuntimeError> {
        let mut frame = self.open.take().expect("a batch is open");
        let device = &self.gpu.device;
        let reads_back = frame.reads.iter().any(|(_, landing)| !matches!(landing, Landing::Ring(u64::MAX, _, _)));
        // SAFETY: the command buffer is recording; the queue is the device's.
        let submitted = unsafe {
            if reads_back {
                let memory = [vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                    .dst_access_mask(vk::AccessFlags::HOST_READ)];
                device.cmd_pipeline_barrier(
                    frame.commands,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &memory,
                    &[],
                    &[],
                );
            }
            device.end_command_buffer(frame.commands).map_err(vk_error("end a command buffer")).and_then(|()| {
                let buffers = [frame.commands];
                let submit = [vk::SubmitInfo::default().command_buffers(&buffers)];
                device.queue_submit(self.gpu.queue, &submit, frame.fence).map_err(vk_error("submit a batch"))
            })
        };
        if let Err(error) = submitted {
            // The batch is lost; its staging is released and its frame dropped.
            for span in frame.uploads.drain(..) {
                self.upload.state.release(span);
            }
            for block in frame.pieces.drain(..) {
                self.upload_pieces.give(block, &self.gpu.device, &mut self.allocator);
            }
            for (_, landing) in std::mem::take(&mut frame.reads) {
                self.release_landing(landing);
            }
            return Err(error);
        }
        let sequence = frame.sequence;
        self.next_batch = sequence + 1;
        self.in_flight.push_back(frame);
        // A host far ahead of the device waits for its oldest batch here, rather than keeping
        // every batch it submitted (each a command buffer the driver holds) until it waits.
        while self.in_flight.len() > MAX_IN_FLIGHT {
            self.complete_oldest()?;
            self.release_retired();
        }
        Ok(sequence)
    }
}

/// Arguments that do not decode as the kernel's parameters: the executor checks them first
/// (hat_runtime::dispatch_arguments), so only a caller that drives the backend directly sees this.
fn unchecked_arguments(kernel: &str) -> RuntimeError {
    RuntimeError::Backend(format!(
        "vulkan: the arguments of kernel '{kernel}' do not fit its parameters (check them with \
         KernelSignature::check before dispatching)"
    ))
}

/// Writes `value` (of type `ty`, the kernel's parameter `parameter`) into `into` as `encoding`.
fn encode(
    kernel: &str,
    parameter: usize,
    value: Scalar,
    ty: ElementType,
    encoding: ScalarEncoding,
    into: &mut [u8],
) -> Result<(), RuntimeError> {
    match encoding {
        ScalarEncoding::Bool32 => into[..4].copy_from_slice(&((value.as_i64() != 0) as u32).to_le_bytes()),
        ScalarEncoding::Int32 => {
            let v = value.as_i64();
            let narrow = i32::try_from(v).map_err(|_| RuntimeError::BadArgument {
                name: format!("#{parameter}"),
                message: format!(
                    "kernel '{kernel}' gets the {} {v}, which does not fit the device's 32-bit index",
                    hat_runtime::eval::type_name(ty)
                ),
            })?;
            into[..4].copy_from_slice(&narrow.to_le_bytes());
        }
        ScalarEncoding::Int64 => into[..8].copy_from_slice(&value.as_i64().to_le_bytes()),
        ScalarEncoding::Float32 => into[..4].copy_from_slice(&(value.as_f64() as f32).to_le_bytes()),
        ScalarEncoding::Float64 => into[..8].copy_from_slice(&value.as_f64().to_le_bytes()),
    }
    Ok(())
}

impl Backend for VulkanBackend {
    fn name(&self) -> &str {
        "vulkan"
    }

    /// Copies and dispatches are bracketed by timestamps where the queue has them (the spans
    /// are on the device's clock); barriers are noted as they are recorded. The origin is not
    /// used: nothing relates the device's clock to the host's.
    fn record_timeline(&mut self, origin: Option<std::time::Instant>) -> bool {
        self.timeline = origin.map(|_| BackendTimeline { clock: SpanClock::Device, ..BackendTimeline::default() });
        true
    }

    fn take_timeline(&mut self) -> BackendTimeline {
        match &mut self.timeline {
            Some(timeline) => BackendTimeline {
                clock: SpanClock::Device,
                spans: std::mem::take(&mut timeline.spans),
                barriers: std::mem::take(&mut timeline.barriers),
            },
            None => BackendTimeline::default(),
        }
    }

    fn device_name(&self) -> String {
        self.gpu.description.name.clone()
    }

    fn kernel_cache(&self) -> Option<KernelCacheStats> {
        let cache = &self.pipeline_cache;
        Some(KernelCacheStats {
            directory: self.kernel_cache.clone(),
            modules_from_disk: self.modules_from_disk,
            modules_lowered: self.modules_lowered,
            modules_ignored: self.modules_ignored,
            pipelines_created: cache.created,
            pipelines_from_disk: cache.from_disk,
            driver_cache_hits: cache.driver_hits,
            driver_cache_misses: cache.driver_misses,
            driver_silent: cache.driver_silent,
            pipeline_cache: cache.state.clone(),
        })
    }

    /// Lowers `module`, or gives the module lowered before from the same text. Each executor
    /// lowers its module on its first dispatch; a process that runs one program many times (a
    /// benchmark, a server) would otherwise lower and validate it again on every run, which
    /// costs milliseconds. The key is the module's generic form with locations, which holds
    /// every op, attribute, type and location: the same text lowers to the same SPIR-V and the
    /// same entry points (whose locations come from the text). The options are the backend's.
    fn lower(&mut self, module: Verified<'_>) -> Result<Option<Arc<dyn LoweredModule>>, RuntimeError> {
        let print = hat_ir::PrintOptions { generic: true, debug_info: true, assume_verified: true };
        let text = hat_ir::print_op(module.ctx(), module.op(), print);
        if let Some(lowered) = self.lowered.get(&text) {
            return Ok(Some(Arc::clone(lowered)));
        }
        let options = hat_lowering::LoweringOptions {
            choose_workgroup_shape: self.choose_workgroup_shape,
            vectorize_accesses: self.vectorize_accesses,
            coarsen_rows: self.coarsen_rows,
            ..self.gpu.lowering_options()
        };
        let lowered = Arc::new(SpirvLowered(self.lower_or_load(module, &options)?)) as Arc<dyn LoweredModule>;
        if self.lowered.len() >= LOWERED_KEPT {
            self.lowered.clear();
        }
        self.lowered.insert(text, Arc::clone(&lowered));
        Ok(Some(lowered))
    }

    fn allocate(&mut self, layout: &BufferLayout) -> Result<DeviceBuffer, RuntimeError> {
        let bytes = layout
            .shape
            .iter()
            .try_fold(layout.element.size() as u64, |a, &d| a.checked_mul(d as u64))
            .ok_or(RuntimeError::Allocation { bytes: usize::MAX, message: "the size overflows".into() })?;
        self.fits(bytes)?;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        let block =
            Block::new(&self.gpu.device, &mut self.allocator, bytes, usage, MemoryLocation::GpuOnly, "device buffer")?;
        match self.buffers.insert(DeviceMemory { storage: Storage::Own(block), layout: layout.clone(), bytes }) {
            Some((index, generation)) => Ok(DeviceBuffer::new(index, generation)),
            None => Err(RuntimeError::Allocation { bytes: bytes as usize, message: "too many buffers".into() }),
        }
    }

    fn free(&mut self, buffer: DeviceBuffer) -> Result<(), RuntimeError> {
        let memory = self.buffers.remove(buffer.index(), buffer.generation()).ok_or_else(|| Self::stale(buffer))?;
        let sets = self.kernels.evict(buffer.index(), buffer.generation());
        // A window owns no memory: only its descriptor sets go.
        let block = match memory.storage {
            Storage::Own(block) => Some(block),
            Storage::Window { .. } => None,
        };
        match self.last_user() {
            Some(batch) => {
                if let Some(block) = block {
                    self.retired.push_back((batch, Retired::Buffer(block)));
                }
                if !sets.is_empty() {
                    self.retired.push_back((batch, Retired::Sets(sets)));
                }
            }
            None => {
                if let Some(block) = block {
                    block.destroy(&self.gpu.device, &mut self.allocator);
                }
                self.kernels.free_sets(&self.gpu.device, &sets);
            }
        }
        Ok(())
    }

    fn allocate_arena(&mut self, bytes: usize) -> Result<Option<DeviceBuffer>, RuntimeError> {
        // An arena larger than one buffer may be: its buffers are allocated one by one.
        if self.fits(bytes as u64).is_err() {
            return Ok(None);
        }
        self.allocate(&BufferLayout { element: ElementType::I8, shape: vec![bytes] }).map(Some)
    }

    fn allocate_in(
        &mut self,
        arena: DeviceBuffer,
        offset: usize,
        layout: &BufferLayout,
    ) -> Result<DeviceBuffer, RuntimeError> {
        let found = self.memory(arena)?;
        let Storage::Own(block) = &found.storage else {
            return Err(RuntimeError::Backend("vulkan: a window asked of a window".into()));
        };
        let bytes = layout.bytes() as u64;
        let alignment = self.gpu.limits.min_storage_buffer_offset_alignment.max(1);
        if !(offset as u64).is_multiple_of(alignment) || offset as u64 + bytes > found.bytes {
            return Err(RuntimeError::Backend(format!(
                "vulkan: a window of {bytes} bytes at offset {offset} of an arena of {} bytes (windows lie within \
                 it, at multiples of minStorageBufferOffsetAlignment = {alignment})",
                found.bytes
            )));
        }
        let storage = Storage::Window { buffer: block.buffer, offset: offset as u64 };
        match self.buffers.insert(DeviceMemory { storage, layout: layout.clone(), bytes }) {
            Some((index, generation)) => Ok(DeviceBuffer::new(index, generation)),
            None => Err(RuntimeError::Allocation { bytes: bytes as usize, message: "too many buffers".into() }),
        }
    }

    fn compile(&mut self, kernel: &KernelArtifact<'_>) -> Result<KernelHandle, RuntimeError> {
        let unsupported = |message: String| RuntimeError::Unsupported {
            op: kernel.ir.ctx().name_str(kernel.ir.op()).to_string(),
            message,
            location: kernel.location,
        };
        let module = kernel.lowered_as::<SpirvLowered>().ok_or_else(|| {
            unsupported("the Vulkan backend runs kernels it lowered to SPIR-V, and this artifact has none".into())
        })?;
        let entry = module
            .0
            .entry_point(&kernel.name)
            .ok_or_else(|| unsupported(format!("the SPIR-V module has no entry point '{}'", kernel.name)))?;
        let index = self.kernels.compile(&self.gpu.device, &mut self.pipeline_cache, &module.0, entry)?;
        Ok(KernelHandle::new(index))
    }

    fn record_write(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        data: &[u8],
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        let memory = self.memory(buffer)?;
        Self::check_range(memory, offset, data.len())?;
        let (target, base) = (memory.buffer(), memory.offset());
        let offset = base as usize + offset;
        self.barrier(Stage::Transfer, after, &[])?;
        let command = self.next();
        if data.is_empty() {
            return Ok(command);
        }
        let len = data.len() as u64;
        if let Some(span) = self.upload.state.allocate(len) {
            copy_bytes(&mut self.upload.bytes()[span.offset as usize..][..data.len()], data);
            let queries = self.copy_started()?;
            let frame = self.open.as_mut().expect("opened by the barrier");
            frame.uploads.push(span.id);
            let region = [vk::BufferCopy::default().src_offset(span.offset).dst_offset(offset as u64).size(len)];
            // SAFETY: a recording command buffer; both ranges are inside their buffers.
            unsafe { self.gpu.device.cmd_copy_buffer(frame.commands, self.upload.block.buffer, target, &region) };
            self.copy_ended(command, queries);
        } else {
            // Piece by piece, each submitted once recorded: the device copies one piece while
            // the host fills the next. The barrier before the first orders the rest too (they
            // come after it in submission order).
            let piece = self.upload_pieces.piece as usize;
            for (index, part) in data.chunks(piece).enumerate() {
                let mut block = self.upload_pieces.take(&self.gpu.device, &mut self.allocator)?;
                copy_bytes(&mut block.mapped()[..part.len()], part);
                if let Err(error) = self.frame() {
                    self.upload_pieces.give(block, &self.gpu.device, &mut self.allocator);
                    return Err(error);
                }
                let queries = match self.copy_started() {
                    Ok(queries) => queries,
                    Err(error) => {
                        self.upload_pieces.give(block, &self.gpu.device, &mut self.allocator);
                        return Err(error);
                    }
                };
                let frame = self.open.as_mut().expect("opened above");
                let at = (offset + index * piece) as u64;
                let region = [vk::BufferCopy::default().src_offset(0).dst_offset(at).size(part.len() as u64)];
                // SAFETY: a recording command buffer; both ranges are inside their buffers.
                unsafe { self.gpu.device.cmd_copy_buffer(frame.commands, block.buffer, target, &region) };
                frame.pieces.push(block);
                self.copy_ended(command, queries);
                self.submit_open()?;
            }
        }
        self.hazards.recorded(command, Stage::Transfer, true);
        self.submit_early()?;
        Ok(command)
    }

    fn record_read(
        &mut self,
        buffer: DeviceBuffer,
        offset: usize,
        len: usize,
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        let memory = self.memory(buffer)?;
        Self::check_range(memory, offset, len)?;
        let (source, base) = (memory.buffer(), memory.offset());
        let offset = base as usize + offset;
        self.barrier(Stage::Transfer, after, &[])?;
        let command = self.next();
        if len == 0 {
            let frame = self.open.as_mut().expect("opened by the barrier");
            frame.reads.push((command, Landing::Ring(u64::MAX, 0, 0)));
            return Ok(command);
        }
        let queries = self.copy_started()?;
        let device = &self.gpu.device;
        let frame = self.open.as_mut().expect("opened by the barrier");
        let landing = match self.download.state.allocate(len as u64) {
            Some(span) => {
                let region =
                    [vk::BufferCopy::default().src_offset(offset as u64).dst_offset(span.offset).size(len as u64)];
                // SAFETY: a recording command buffer; both ranges are inside their buffers.
                unsafe { device.cmd_copy_buffer(frame.commands, source, self.download.block.buffer, &region) };
                Landing::Ring(span.id, span.offset, len)
            }
            None => {
                let piece = self.download_pieces.piece as usize;
                let mut blocks = Vec::with_capacity(len.div_ceil(piece));
                for start in (0..len).step_by(piece) {
                    let block = match self.download_pieces.take(device, &mut self.allocator) {
                        Ok(block) => block,
                        Err(error) => {
                            for block in blocks {
                                self.download_pieces.give(block, device, &mut self.allocator);
                            }
                            return Err(error);
                        }
                    };
                    let size = piece.min(len - start) as u64;
                    let region =
                        [vk::BufferCopy::default().src_offset((offset + start) as u64).dst_offset(0).size(size)];
                    // SAFETY: a recording command buffer; both ranges are inside their buffers.
                    unsafe { device.cmd_copy_buffer(frame.commands, source, block.buffer, &region) };
                    blocks.push(block);
                }
                Landing::Pieces(blocks, len)
            }
        };
        frame.reads.push((command, landing));
        self.copy_ended(command, queries);
        self.hazards.recorded(command, Stage::Transfer, false);
        self.submit_early()?;
        Ok(command)
    }

    fn record_dispatch(
        &mut self,
        kernel: KernelHandle,
        grid: [u64; 3],
        args: &[KernelArg],
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        let index = kernel.index();
        let compiled = self.kernels.list.get(index as usize).ok_or(RuntimeError::StaleHandle {
            what: "kernel",
            index: index as u64,
            generation: 0,
        })?;
        let entry = &compiled.entry;
        let (bound, buffers, ranges) = self.bound_buffers(entry, args)?;
        let (workgroups, whole) = self.workgroups(entry, grid)?;
        let push_size = entry.push_constants.size as usize;
        let mut push = [0u8; 256];
        if push_size > push.len() {
            return Err(RuntimeError::Backend(format!("vulkan: {push_size} bytes of push constants")));
        }
        self.push_constants(index, grid, args, &mut push)?;
        let set =
            if buffers.is_empty() { None } else { Some(self.kernels.set(&self.gpu.device, index, &bound, &ranges)?) };
        self.barrier(Stage::Compute, after, &buffers)?;
        let command = self.next();
        if workgroups.contains(&0) {
            return Ok(command);
        }
        let pipeline = if whole {
            self.kernels.whole_grid_pipeline(&self.gpu.device, &mut self.pipeline_cache, index)?
        } else {
            self.kernels.list[index as usize].pipeline
        };
        let queries = self.queries()?;
        let device = &self.gpu.device;
        let compiled = &self.kernels.list[index as usize];
        let frame = self.open.as_mut().expect("opened by the barrier");
        // SAFETY: a recording command buffer; the pipeline, set and push constants match the
        // kernel's layout.
        unsafe {
            if let Some((pool, first)) = queries {
                device.cmd_write_timestamp(frame.commands, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, first);
            }
            // What the command buffer has bound stays bound: a set and push constants stay
            // valid across pipelines of the same layout, and are forgotten on a change of layout.
            let bound = &mut frame.bound;
            if bound.layout != compiled.layout {
                *bound = Default::default();
                bound.layout = compiled.layout;
            }
            if bound.pipeline != pipeline {
                device.cmd_bind_pipeline(frame.commands, vk::PipelineBindPoint::COMPUTE, pipeline);
                bound.pipeline = pipeline;
            }
            if let Some(set) = set.filter(|&set| set != bound.set) {
                device.cmd_bind_descriptor_sets(
                    frame.commands,
                    vk::PipelineBindPoint::COMPUTE,
                    compiled.layout,
                    0,
                    &[set],
                    &[],
                );
                bound.set = set;
            }
            if push_size > 0 && bound.push[..] != push[..push_size] {
                device.cmd_push_constants(
                    frame.commands,
                    compiled.layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    &push[..push_size],
                );
                bound.push.clear();
                bound.push.extend_from_slice(&push[..push_size]);
            }
            device.cmd_dispatch(frame.commands, workgroups[0], workgroups[1], workgroups[2]);
            if let Some((pool, first)) = queries {
                device.cmd_write_timestamp(frame.commands, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, first + 1);
            }
        }
        if let Some((_, _)) = queries {
            let first = frame.queries - 2;
            frame.timed.push((command, first));
        }
        let writes = entry_writes(compiled);
        self.hazards.recorded(command, Stage::Compute, writes);
        self.submit_early()?;
        Ok(command)
    }

    fn submit(&mut self) -> Result<Fence, RuntimeError> {
        self.frame()?;
        self.early_batch = EARLY_BATCH;
        self.submit_open().map(Fence::new)
    }

    fn wait(&mut self, fence: Fence) -> Result<Vec<DispatchTime>, RuntimeError> {
        if fence.sequence() >= self.next_batch {
            return Err(RuntimeError::Backend(format!(
                "vulkan: fence #{} names a batch that was not submitted",
                fence.sequence()
            )));
        }
        while self.in_flight.front().is_some_and(|f| f.sequence <= fence.sequence()) {
            self.complete_oldest()?;
        }
        self.takeable.extend(self.landed.drain());
        self.release_retired();
        Ok(std::mem::take(&mut self.done_times))
    }

    fn completed(&mut self) -> hat_runtime::Completed {
        // Batches the device finished, oldest first, without waiting for any other.
        while self.in_flight.front().is_some_and(|frame| {
            // SAFETY: the fence of a submitted batch.
            unsafe { self.gpu.device.get_fence_status(frame.fence) }.unwrap_or(false)
        }) {
            if self.complete_oldest().is_err() {
                break; // the next wait reports it
            }
        }
        let times = std::mem::take(&mut self.done_times);
        self.release_retired();
        // Commands of the open batch and of batches in flight are not done.
        let open = self.open.as_ref().map_or(self.next_command, |frame| frame.first_command);
        hat_runtime::Completed { times, done_before: self.waited_floor().min(open) }
    }

    fn take_read(&mut self, read: Command, into: &mut [u8]) -> Result<(), RuntimeError> {
        let mut landing = self.takeable.remove(&read.sequence()).ok_or_else(|| {
            RuntimeError::Backend(format!(
                "vulkan: read #{} was not waited for, was taken already, or was discarded",
                read.sequence()
            ))
        })?;
        let len = match &landing {
            Landing::Ring(_, _, len) | Landing::Pieces(_, len) => *len,
        };
        let result = if len != into.len() {
            Err(RuntimeError::Backend(format!(
                "vulkan: read #{} of {len} bytes taken into {} bytes",
                read.sequence(),
                into.len()
            )))
        } else {
            match &mut landing {
                Landing::Ring(_, offset, len) => {
                    copy_bytes(into, &self.download.bytes()[*offset as usize..][..*len]);
                }
                Landing::Pieces(blocks, _) => {
                    let piece = self.download_pieces.piece as usize;
                    for (into, block) in into.chunks_mut(piece).zip(blocks.iter_mut()) {
                        let len = into.len();
                        copy_bytes(into, &block.mapped()[..len]);
                    }
                }
            }
            Ok(())
        };
        self.release_landing(landing);
        result
    }
}

/// Whether a kernel may write any of its buffers.
fn entry_writes(kernel: &crate::kernels::Kernel) -> bool {
    kernel.entry.bindings.iter().any(|b| b.access.write)
}

impl Drop for VulkanBackend {
    fn drop(&mut self) {
        let device = self.gpu.device.clone();
        // SAFETY: after the device is idle nothing is in use; each object is destroyed once,
        // the allocator before the device, the device before the instance (`Gpu`'s drop).
        unsafe {
            let _ = device.device_wait_idle();
            let mut frames: Vec<Frame> = self.spare.drain(..).collect();
            frames.extend(self.in_flight.drain(..));
            frames.extend(self.open.take());
            for mut frame in frames {
                for pool in frame.query_pools.drain(..) {
                    device.destroy_query_pool(pool, None);
                }
                device.destroy_fence(frame.fence, None);
                for block in frame.pieces.drain(..) {
                    block.destroy(&device, &mut self.allocator);
                }
                for (_, landing) in frame.reads.drain(..) {
                    if let Landing::Pieces(blocks, _) = landing {
                        for block in blocks {
                            block.destroy(&device, &mut self.allocator);
                        }
                    }
                }
            }
            for (_, landing) in std::mem::take(&mut self.takeable).into_iter().chain(std::mem::take(&mut self.landed)) {
                if let Landing::Pieces(blocks, _) = landing {
                    for block in blocks {
                        block.destroy(&device, &mut self.allocator);
                    }
                }
            }
            self.upload_pieces.destroy(&device, &mut self.allocator);
            self.download_pieces.destroy(&device, &mut self.allocator);
            self.completed = u64::MAX;
            self.release_retired();
            device.destroy_command_pool(self.command_pool, None);
            self.pipeline_cache.save(&device);
            self.pipeline_cache.destroy(&device);
            self.kernels.destroy(&device);
            for memory in self.buffers.take_all() {
                if let Storage::Own(block) = memory.storage {
                    block.destroy(&device, &mut self.allocator);
                }
            }
            self.upload.block.destroy_in_place(&device, &mut self.allocator);
            self.download.block.destroy_in_place(&device, &mut self.allocator);
            ManuallyDrop::drop(&mut self.allocator);
            ManuallyDrop::drop(&mut self.gpu);
        }
    }
}
