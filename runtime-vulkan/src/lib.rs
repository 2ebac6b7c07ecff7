//! hat's Vulkan backend: a [`hat_runtime::Backend`] on a Vulkan device through `ash`, on a real
//! GPU or on Mesa's lavapipe (a CPU implementation, used in CI).
//!
//! ```no_run
//! use hat_runtime_vulkan::{VulkanBackend, VulkanOptions};
//! # fn demo(module: hat_ir::Verified<'_>, args: Vec<hat_runtime::ArgValue>) -> Result<(), hat_runtime::RuntimeError> {
//! let mut gpu = VulkanBackend::new(&VulkanOptions::default())?;
//! let mut executor = hat_runtime::Executor::new(module, &mut gpu, Default::default());
//! let output = executor.run("main", args)?;
//! # Ok(()) }
//! ```
//!
//! - **Device** (`gpu.rs`): the one `HAT_VULKAN_DEVICE` or [`VulkanOptions::device`] names (an
//!   index of [`list_devices`] or a part of a name), else a hardware device before a CPU one,
//!   then the most device-local memory. Every optional feature the lowering can use that the
//!   device has is enabled, and the lowering is told exactly those and the device's limits
//!   ([`hat_runtime::Backend::lower`]): a kernel that needs a feature the device lacks is
//!   [`hat_runtime::RuntimeError::KernelLowering`] naming the feature. `index` is 32 bits on the
//!   device (docs/lowering.md): grid sizes, `index` arguments and dynamic sizes of 2^31 or more
//!   are refused at the dispatch.
//! - **Memory** (`memory.rs`): device-local buffers from `gpu-allocator`; a buffer over
//!   `maxStorageBufferRange` or `maxMemoryAllocationSize` is
//!   [`hat_runtime::RuntimeError::BufferTooLarge`]; copies (whole buffers and element ranges) go
//!   through two reusable host-visible staging rings, one each way; a copy that does not fit
//!   goes through staging pieces kept for later copies, an upload submitted piece by piece.
//! - **Kernels** (`kernels.rs`): compute pipelines cached by a hash of the SPIR-V and the entry
//!   point, each with a second pipeline specialised without the check against the grid for
//!   dispatches whose grid is whole workgroups ([`VulkanOptions::whole_grid_pipelines`]);
//!   descriptor sets cached by the buffers they bind.
//! - **Kernel cache on disk** (`module_cache.rs`, `pipeline_cache.rs`): with
//!   [`VulkanOptions::kernel_cache`] (or `HAT_CACHE_DIR`), lowered modules and the device's
//!   `VkPipelineCache` are kept in a directory between processes, so that a second process
//!   running the same program lowers nothing and creates its pipelines from the cache; every
//!   entry is checked before use (a corrupt or foreign one is ignored and written anew).
//!   [`hat_runtime::Backend::kernel_cache`] counts hits and misses.
//! - **Batches** (`frames.rs`): the executor's copies and dispatches are recorded into command
//!   buffers with a pipeline barrier only where a command depends on an earlier one; a fence per
//!   batch; GPU timestamps around each dispatch give its device time. A batch is submitted when
//!   the executor submits, and also on the backend's own once it holds
//!   [`VulkanOptions::batch_commands`] commands (or 16 while the device is idle), so that the
//!   device runs while the host records; the backend never waits on its own.
//! - **Errors**: a lost device is [`hat_runtime::RuntimeError::DeviceLost`], memory the device
//!   cannot give [`hat_runtime::RuntimeError::Allocation`]; nothing panics on a program or its
//!   data.
//! - **Validation**: with [`VulkanOptions::validation`] (or `HAT_VULKAN_VALIDATION=1`), the
//!   Khronos validation layer runs with synchronisation validation, and its messages are kept
//!   ([`VulkanBackend::validation_messages`]); the tests fail on any.
#![deny(missing_docs)]

mod backend;
mod errors;
mod frames;
mod gpu;
mod kernels;
mod memory;
mod module_cache;
mod pipeline_cache;
mod validation;

pub use backend::{VulkanBackend, VulkanOptions, COARSEN_ROWS};
pub use gpu::{list_devices, DeviceDescription};
pub use kernels::SpirvLowered;
