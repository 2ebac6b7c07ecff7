//! hat's runtime: the [`Backend`] trait a device implements, the host executor that runs
//! compute IR and drives a backend, the CPU reference backend (the test oracle: it interprets
//! kernel IR and fills fresh device memory with poison), and the accounting of what moved.
#![deny(missing_docs)]

pub mod backend;
pub mod error;
pub mod value;

pub use backend::{Backend, DeviceBuffer, KernelArg, KernelHandle};
pub use error::RuntimeError;
pub use value::{BufferLayout, ElementType, Scalar};
