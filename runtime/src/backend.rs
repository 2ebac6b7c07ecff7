//! The [`Backend`] trait: what a device must do for the host executor. A vendor implements it
//! outside hat's crates (see `tests/vendor_backend.rs`) and hands it to the executor.
//!
//! A backend only ever sees verified IR: [`Backend::compile_kernel`] takes a [`Verified`] token,
//! so it may rely on what the verifier checks (the kernel's signature, its ops' operand counts
//! and types, the helpers its calls name) instead of checking again.

use crate::error::RuntimeError;
use crate::value::{BufferLayout, ElementType, Scalar};
use hat_ir::Verified;

/// A buffer in device memory, named by the backend that allocated it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceBuffer(pub u32);

/// A compiled kernel, named by the backend that compiled it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelHandle(pub u32);

/// An argument of a dispatch.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// A buffer (its device copy).
    Buffer(DeviceBuffer),
    /// A scalar of the given type.
    Scalar(Scalar, ElementType),
}

/// A device: memory, copies, kernels, dispatch, synchronisation.
///
/// Byte ranges are always within the buffer (the executor checks them first). Dispatches may run
/// asynchronously; copies from the device and [`synchronize`](Backend::synchronize) wait for the
/// work before them.
pub trait Backend {
    /// A short name for reports (`cpu`, `vulkan`, ...).
    fn name(&self) -> &str;

    /// Allocates a buffer of the given layout. Its contents are undefined (the CPU reference
    /// backend fills it with poison).
    fn allocate(&mut self, layout: &BufferLayout) -> Result<DeviceBuffer, RuntimeError>;

    /// Frees a buffer.
    fn free(&mut self, buffer: DeviceBuffer) -> Result<(), RuntimeError>;

    /// Copies `data` into the buffer at byte `offset`.
    fn copy_to_device(&mut self, buffer: DeviceBuffer, offset: usize, data: &[u8]) -> Result<(), RuntimeError>;

    /// Copies `data.len()` bytes from byte `offset` of the buffer into `data`.
    fn copy_from_device(&mut self, buffer: DeviceBuffer, offset: usize, data: &mut [u8]) -> Result<(), RuntimeError>;

    /// Prepares `kernel` for dispatch: `kernel.op()` is a kernel function (a callable with the
    /// `DEVICE_CODE` trait, such as a `kernel.func`) of a verified module, in `kernel.ctx()`,
    /// with the helpers it calls. The backend keeps what it needs: the context is not borrowed
    /// beyond this call.
    fn compile_kernel(&mut self, kernel: Verified<'_>) -> Result<KernelHandle, RuntimeError>;

    /// The most work items one dispatch may have (the product of the grid's sizes). The executor
    /// refuses a larger grid, naming the dispatch, before calling [`dispatch`](Self::dispatch):
    /// a backend that runs work items one by one (the CPU reference backend) would otherwise run
    /// for hours. By default there is no limit.
    fn max_work_items(&self) -> u64 {
        u64::MAX
    }

    /// Runs a compiled kernel over `grid` work items (x, y, z) with `args` in its parameter order.
    /// The grid's product fits in a `u64` and is at most [`max_work_items`](Self::max_work_items).
    fn dispatch(&mut self, kernel: KernelHandle, grid: [u64; 3], args: &[KernelArg]) -> Result<(), RuntimeError>;

    /// Waits for all work submitted so far.
    fn synchronize(&mut self) -> Result<(), RuntimeError>;
}
