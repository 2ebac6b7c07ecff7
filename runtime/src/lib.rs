//! hat's runtime: the [`Backend`] trait a device implements (an asynchronous device: recorded
//! commands with explicit dependencies, batches and fences; kernels as the lowering's
//! [`KernelArtifact`]), the host executor that runs compute IR and drives a backend, the CPU
//! reference backend (the test oracle: it interprets kernel IR and fills fresh device memory
//! with poison), the accounting of what moved, and the clairvoyant optimum of a run
//! ([`oracle`]: the fewest bytes and copies any transfer plan could move on it).
#![deny(missing_docs)]

pub mod artifact;
pub mod backend;
pub mod chrome_trace;
pub mod cpu;
pub mod dispatch_arguments;
pub mod error;
pub mod eval;
pub mod executor;
pub mod handles;
pub mod host_memory;
pub mod kernel_cache;
pub mod oracle;
pub mod report;
pub(crate) mod slot_code;
pub mod timeline;
pub mod value;

pub use artifact::{KernelArtifact, LoweredModule};
pub use backend::{
    Backend, BufferAccesses, Command, Completed, DeviceBuffer, DispatchTime, Fence, KernelArg, KernelHandle,
};
pub use cpu::CpuBackend;
pub use dispatch_arguments::KernelSignature;
pub use error::RuntimeError;
pub use executor::{
    entry_parameters, ArgEffect, ArgValue, CallArg, CallOutput, CallResult, Executor, ExecutorOptions, HostArg,
    HostBuffer, HostCall, HostFunction, Parameter, ParameterKind, ResidentBuffer, RunOutput, Session, SessionMode,
    TransferMode,
};
pub use handles::HandleTable;
pub use kernel_cache::{KernelCacheStats, PipelineCacheState};
pub use report::{BufferTransfers, RunReport, TransferCount};
pub use timeline::{Hazard, RunTimeline};
pub use value::{BufferLayout, ElementType, Scalar};
