//! What [`Backend::compile`](crate::Backend::compile) gets: a [`KernelArtifact`], the kernel as
//! the lowering made it for the backend's device ([`LoweredModule`]), and its verified IR.
//!
//! # The decision: the artifact carries the lowering's output and the verified IR
//!
//! A GPU backend gets what its lowering made — for Vulkan, the validated SPIR-V words and each
//! entry point's bindings, push-constant layout and workgroup size (`hat_lowering::SpirvModule`)
//! — and never looks at IR. Beside it, the artifact carries the kernel's verified IR
//! ([`KernelArtifact::ir`], a [`Verified`] token, valid for the call): the CPU reference backend
//! interprets it, as a vendor compiler of hat IR would compile it. The CPU backend does not get
//! its kernel from the SPIR-V, nor from a printed copy of the IR parsed again:
//!
//! - it is the oracle the lowering is checked against, so it must not depend on the lowering
//!   (a kernel the lowering rejects, or lowers wrongly, still runs there; a backend whose
//!   [`Backend::lower`](crate::Backend::lower) gives nothing gets no lowered module, and no
//!   lowering runs);
//! - a printed copy parsed again would need the vendor's dialects registered a second time in a
//!   context of the backend's own (the CPU backend runs vendors' loop and call ops through their
//!   interfaces), and would lose the source locations that its errors point at
//!   (`DeviceOutOfBounds` at `file:line:col`): the parser takes locations from the text it reads.
//!
//! The token proves the module verified, so the backend may rely on what the verifier checks.
//! The backend keeps what it needs: the context is not borrowed beyond the call.
//!
//! # Who lowers
//!
//! The executor asks the backend to lower the module ([`Backend::lower`](crate::Backend::lower)),
//! once, on the first dispatch: the backend knows its device's features and limits and calls its
//! lowering with them (the Vulkan backend: `hat_lowering::lower_module`); an interpreter lowers
//! nothing. The lowered module is opaque to the runtime ([`LoweredModule`]): the backend that made
//! it takes it back in [`Backend::compile`](crate::Backend::compile)
//! ([`KernelArtifact::lowered_as`]); the executor only asks it which parameters each kernel may
//! read or write, to narrow the dependencies between commands. So the runtime does not depend on
//! the SPIR-V lowering, and programs that only use the CPU backend do not carry its validator.

use crate::error::RuntimeError;
use hat_ir::interfaces::CallableOpInterface;
use hat_ir::{Diagnostic, Location, Verified};
use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

/// A module lowered by a backend for its device (for Vulkan: a SPIR-V module with its entry
/// points), opaque to the runtime.
pub trait LoweredModule: Any + Debug {
    /// What the kernel `kernel` may do to each of its parameters, in order: (may read, may
    /// write), both `false` for a scalar; `None` when the lowering does not say (then every
    /// buffer counts as read and written).
    fn parameter_access(&self, kernel: &str) -> Option<Vec<(bool, bool)>>;

    /// The module, to downcast to the backend's own type.
    fn as_any(&self) -> &dyn Any;
}

/// A kernel, ready for [`crate::Backend::compile`]. See the module documentation.
#[derive(Clone, Debug)]
pub struct KernelArtifact<'m> {
    /// The kernel's symbol (without `@`).
    pub name: String,
    /// Where the kernel is defined.
    pub location: Location,
    /// The verified kernel op (a callable with the `DEVICE_CODE` trait, such as a
    /// `kernel.func`), the helpers it calls found through the enclosing symbol tables.
    pub ir: Verified<'m>,
    /// The module the backend lowered, with this kernel in it, when it lowered one.
    pub lowered: Option<Arc<dyn LoweredModule>>,
}

impl<'m> KernelArtifact<'m> {
    /// The artifact of the verified kernel `kernel`, in the module `lowered` when the backend
    /// lowered one.
    pub fn new(kernel: Verified<'m>, lowered: Option<&Arc<dyn LoweredModule>>) -> Self {
        let (ctx, op) = (kernel.ctx(), kernel.op());
        KernelArtifact {
            name: hat_ir::verifier::symbol_name(ctx, op).unwrap_or_default().to_string(),
            location: ctx.location(op),
            ir: kernel,
            lowered: lowered.cloned(),
        }
    }

    /// The lowered module as the backend's type `T`, if it is one.
    pub fn lowered_as<T: 'static>(&self) -> Option<&T> {
        self.lowered.as_ref()?.as_any().downcast_ref::<T>()
    }

    /// What the kernel may do to each parameter (see [`LoweredModule::parameter_access`]): read
    /// and write, for every parameter, when the lowering does not say.
    pub fn parameter_access(&self) -> Vec<(bool, bool)> {
        let said = self.lowered.as_ref().and_then(|module| module.parameter_access(&self.name));
        said.unwrap_or_else(|| vec![(true, true); self.parameter_count()])
    }

    /// How many parameters the kernel has.
    pub fn parameter_count(&self) -> usize {
        let (ctx, op) = (self.ir.ctx(), self.ir.op());
        ctx.interface::<dyn CallableOpInterface>(op)
            .and_then(|callable| callable.signature(ctx, op))
            .map_or(0, |(inputs, _)| inputs.len())
    }
}

/// The lowering's diagnostics about `module` as one error: [`RuntimeError::KernelLowering`] at
/// the first diagnostic (which names the feature a kernel needs, when that is the problem).
pub fn lowering_error(module: Verified<'_>, diagnostics: &[Diagnostic]) -> RuntimeError {
    let first = diagnostics.first();
    let mut message = first.map_or_else(|| "the lowering failed".to_string(), |d| d.message.clone());
    if diagnostics.len() > 1 {
        message += &format!(" (and {} more diagnostic(s))", diagnostics.len() - 1);
    }
    RuntimeError::KernelLowering {
        message,
        location: first.map_or_else(|| module.ctx().location(module.op()), |d| d.location),
    }
}
