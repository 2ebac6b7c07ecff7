//! What [`Backend::compile`](crate::Backend::compile) gets: a [`KernelArtifact`], the kernel in
//! the form its backend asked for ([`KernelFormat`]).
//!
//! # The decision: the artifact carries the lowering's output and the verified IR
//!
//! A GPU backend gets what the lowering made ([`SpirvKernel`]: the validated SPIR-V words, and
//! the entry point's bindings, push-constant layout and workgroup size) and never looks at IR.
//! Beside it, the artifact carries the kernel's verified IR ([`KernelArtifact::ir`], a
//! [`Verified`] token, valid for the call): the CPU reference backend interprets it, as a vendor
//! compiler of hat IR would compile it. The CPU backend does not get its kernel from the SPIR-V,
//! nor from a printed copy of the IR parsed again:
//!
//! - it is the oracle the lowering is checked against, so it must not depend on the lowering
//!   (a kernel the lowering rejects, or lowers wrongly, still runs there; a backend that asks
//!   for [`KernelFormat::Ir`] gets no SPIR-V, and the lowering is not even run);
//! - a printed copy parsed again would need the vendor's dialects registered a second time in a
//!   context of the backend's own (the CPU backend runs vendors' loop and call ops through their
//!   interfaces), and would lose the source locations that its errors point at
//!   (`DeviceOutOfBounds` at `file:line:col`): the parser takes locations from the text it reads.
//!
//! The token proves the module verified, so the backend may rely on what the verifier checks.
//! The backend keeps what it needs: the context is not borrowed beyond the call.
//!
//! The executor lowers a module once, with the options the backend gives (its features and
//! limits), on the first dispatch that needs it, and makes one artifact per kernel from it.

use crate::error::RuntimeError;
use hat_ir::interfaces::CallableOpInterface;
use hat_ir::{Location, Verified};
use hat_lowering::{Access, EntryPoint, LoweringOptions, SpirvModule};
use std::sync::Arc;

/// The form a backend wants its kernels in (see [`crate::Backend::kernel_format`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelFormat {
    /// The verified IR alone: no lowering runs.
    Ir,
    /// SPIR-V, lowered with these options (the device's features and limits), and the IR.
    Spirv(LoweringOptions),
}

/// One kernel of a SPIR-V module and how to bind it.
#[derive(Clone, Debug)]
pub struct SpirvKernel {
    /// The module (shared by the artifacts of all its kernels).
    pub module: Arc<SpirvModule>,
    /// The kernel's entry point in it.
    pub entry: EntryPoint,
}

impl SpirvKernel {
    /// The module's words.
    pub fn words(&self) -> &[u32] {
        &self.module.words
    }
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
    /// The lowered kernel, when the backend asked for [`KernelFormat::Spirv`].
    pub spirv: Option<SpirvKernel>,
}

impl<'m> KernelArtifact<'m> {
    /// The artifact of the verified kernel `kernel` in `format`: for SPIR-V, the kernel is
    /// lowered on its own (the executor lowers whole modules instead, once: see [`lower`] and
    /// [`KernelArtifact::with_module`]).
    pub fn from_ir(kernel: Verified<'m>, format: &KernelFormat) -> Result<Self, RuntimeError> {
        match format {
            KernelFormat::Ir => Ok(Self::ir_only(kernel)),
            KernelFormat::Spirv(options) => {
                let module = lower(kernel, options)?;
                Self::with_module(kernel, &module)
            }
        }
    }

    /// The artifact of `kernel` with no lowered form.
    pub fn ir_only(kernel: Verified<'m>) -> Self {
        let (ctx, op) = (kernel.ctx(), kernel.op());
        KernelArtifact {
            name: hat_ir::verifier::symbol_name(ctx, op).unwrap_or_default().to_string(),
            location: ctx.location(op),
            ir: kernel,
            spirv: None,
        }
    }

    /// The artifact of `kernel`, whose entry point is in `module` (lowered from the module that
    /// holds the kernel).
    pub fn with_module(kernel: Verified<'m>, module: &Arc<SpirvModule>) -> Result<Self, RuntimeError> {
        let mut artifact = Self::ir_only(kernel);
        let entry = module.entry_point(&artifact.name).cloned().ok_or_else(|| RuntimeError::KernelLowering {
            message: format!("the SPIR-V module has no entry point '{}'", artifact.name),
            location: artifact.location,
        })?;
        artifact.spirv = Some(SpirvKernel { module: Arc::clone(module), entry });
        Ok(artifact)
    }

    /// What the kernel may do to its parameter number `parameter`, when the lowering said
    /// (it knows which bindings a kernel never reads or never writes); `None` otherwise.
    pub fn parameter_access(&self, parameter: usize) -> Option<Access> {
        let spirv = self.spirv.as_ref()?;
        spirv.entry.bindings.iter().find(|b| b.parameter == parameter).map(|b| b.access)
    }

    /// How many parameters the kernel has.
    pub fn parameter_count(&self) -> usize {
        let (ctx, op) = (self.ir.ctx(), self.ir.op());
        ctx.interface::<dyn CallableOpInterface>(op)
            .and_then(|callable| callable.signature(ctx, op))
            .map_or(0, |(inputs, _)| inputs.len())
    }
}

/// Lowers the kernels of the verified `module` to SPIR-V with `options`. A kernel the lowering
/// rejects (an op with no lowering, a feature the device lacks, a limit exceeded) is
/// [`RuntimeError::KernelLowering`] at the first diagnostic, which names the feature.
pub fn lower(module: Verified<'_>, options: &LoweringOptions) -> Result<Arc<SpirvModule>, RuntimeError> {
    let ctx = module.ctx();
    hat_lowering::lower_module(ctx, module, options).map(Arc::new).map_err(|diagnostics| {
        let first = diagnostics.first();
        let mut message = first.map_or_else(|| "the lowering failed".to_string(), |d| d.message.clone());
        if diagnostics.len() > 1 {
            message += &format!(" (and {} more diagnostic(s))", diagnostics.len() - 1);
        }
        RuntimeError::KernelLowering {
            message,
            location: first.map_or_else(|| ctx.location(module.op()), |d| d.location),
        }
    })
}
