//! `lower-kernels-to-spirv`: the kernel dialect (with `arith`, `math`, `scf`, `buffer`'s
//! element access and helper calls) lowered to a SPIR-V module for Vulkan compute, built with
//! `rspirv` and validated with the system's SPIRV-Tools where it is installed (`validate.rs`).
//!
//! ```
//! use hat_lowering::{lower_module, disassemble, LoweringOptions};
//! let mut ctx = hat_dialects::context();
//! let text = "kernel.func @double(%data: memref<?xi32>) workgroup(64) {
//!   %i = kernel.global_id x
//!   %v = buffer.load %data[%i] : memref<?xi32>
//!   %twice = arith.addi %v, %v : i32
//!   buffer.store %twice, %data[%i] : memref<?xi32>
//!   kernel.return
//! }";
//! let module = hat_ir::parse_source(&mut ctx, "double.hat", text).unwrap();
//! let verified = hat_ir::verify_module(&ctx, module).unwrap();
//! let spirv = lower_module(&ctx, verified, &LoweringOptions::default()).unwrap();
//! let entry = spirv.entry_point("double").unwrap();
//! assert_eq!(entry.workgroup_size, [64, 1, 1]);
//! assert_eq!(entry.bindings[0].binding, 0);
//! // `spirv-dis`'s text, where SPIRV-Tools is installed:
//! if hat_lowering::spirv_tools_version().is_some() {
//!     assert!(disassemble(&spirv.words).unwrap().contains("OpEntryPoint GLCompute"));
//! }
//! ```
//!
//! [`lower_module`] takes the verifier's proof ([`Verified`]) and gives a [`SpirvModule`]:
//! the words, which have passed the validator (where this build links one), and one [`EntryPoint`] per kernel (each
//! `kernel.func`, or a vendor's entry callable with the `DEVICE_CODE` trait) with what the
//! runtime needs to bind it (see [`artifact`]). Whatever the lowering cannot express is a
//! [`Diagnostic`] at the op, with its `file:line:col`: recursive helpers (which SPIR-V forbids),
//! ops it does not know, types or features the device lacks ([`LoweringOptions`]), limits the
//! kernel exceeds. It never panics on verified input and never returns an invalid module: a
//! module the validator rejects is an error too.
//!
//! # Decisions (docs/lowering.md says the same for users)
//!
//! - **`index` is 32 bits on the device** ([`IndexWidth::Bits32`]), unless the options ask for
//!   64 bits (which needs `shaderInt64`). GPUs compute in 32-bit integers: 64-bit integer
//!   arithmetic is emulated in several instructions and is optional in Vulkan, the work-item
//!   built-ins are 32-bit, a buffer binding's range is a 32-bit byte count on most devices, and
//!   CUDA, GLSL and HLSL programmers index with 32-bit integers. So `index` values on the device
//!   are signed 32-bit: the runtime must refuse `index` arguments, dynamic sizes and grid sizes
//!   that do not fit (2^31 and over), and `index` arithmetic that overflows 32 bits wraps there
//!   (the CPU backend, with 64-bit `index`, does not overflow; programs must not rely on either).
//!   Buffers of `index` keep the host layout (8 bytes per element): kernels read the low word
//!   and write both.
//! - **Which work items exist**: exactly those whose global id is below the grid in every
//!   dimension, as hat's kernel analyses assume (they give the coverage of a dispatch from the
//!   ids below the grid). The runtime dispatches `ceil(grid / workgroup size)` workgroups, so the
//!   last workgroup of a dimension may reach past the grid: in a kernel without a barrier those
//!   work items return at once; in a kernel that reaches a barrier they must run (a barrier
//!   waits for the whole workgroup), so they run with every load, store and atomic on a storage
//!   buffer skipped (a skipped load or atomic gives zero), and take part only in barriers and
//!   workgroup memory. `kernel.global_size` is the grid, `kernel.num_groups` the number of
//!   workgroups dispatched, `kernel.local_size` the workgroup size. The CPU backend runs the
//!   same work items the same way, and the kernel-effects analysis counts the accesses of the
//!   work items inside the grid only.
//! - **Undefined results** of `arith` are given hat's values where SPIR-V would leave them
//!   undefined (see `scalar.rs`): division by zero gives the dividend instead of a trap, which
//!   the device cannot report.
//! - **Memory**: atomics are relaxed; `kernel.barrier` is a workgroup control barrier with
//!   acquire-release semantics on workgroup memory and storage buffers. An access out of a
//!   buffer's bounds is undefined on the device (the CPU backend reports it): the runtime should
//!   enable `robustBufferAccess`.
//! - **SPIR-V 1.3** (Vulkan 1.1), Logical addressing, GLSL450 memory model, no extension unless
//!   a kernel needs 8-bit storage.
//! - **One specialisation constant**, `grid_is_whole_workgroups` (`SpecId`
//!   [`WHOLE_GRID_SPEC_ID`], default `false`), or'ed into every check of a work item against the
//!   grid: a pipeline specialised with it `true` checks nothing, for dispatches whose grid is a
//!   whole number of workgroups ([`EntryPoint::whole_grid_constant`]). The workgroup size is in
//!   the IR and `LocalSize` is a constant; a specialisation constant would pay only once
//!   something chose workgroup sizes per device at run time.
#![deny(missing_docs)]

pub mod artifact;
mod calls;
mod coarsen;
mod control_flow;
mod emitter;
mod function;
mod kernel;
mod memory;
pub mod options;
mod reach;
mod scalar;
mod validate;
mod wide;

pub use artifact::{
    Access, BufferBinding, DimSlot, EntryPoint, PushConstantLayout, ScalarEncoding, ScalarSlot, SpirvModule,
    StoredElement, WHOLE_GRID_SPEC_ID,
};
pub use kernel::DEFAULT_WORKGROUP_SIZE;
pub use options::{DeviceFeatures, Feature, IndexWidth, LoweringOptions};
pub use validate::{disassemble, spirv_tools_version, validate, SPIRV_TOOLS_MISSING, TARGET_ENV};

use hat_ir::interfaces::{execution_space, CallableOpInterface, ExecutionSpace};
use hat_ir::{Context, Diagnostic, Op, Verified};
use rspirv::binary::Assemble;

/// Why lowering stopped: a diagnostic was recorded, or the builder refused an instruction (a bug
/// of the lowering, reported as a diagnostic at the op being lowered).
#[derive(Debug)]
pub(crate) enum Failed {
    Reported,
    Builder(String),
}

impl From<rspirv::dr::Error> for Failed {
    fn from(error: rspirv::dr::Error) -> Self {
        Failed::Builder(error.to_string())
    }
}

/// Whether `op` is an entry kernel: a callable with a body, in device code, that something
/// outside the IR calls (`kernel.func`).
pub fn is_entry_kernel(ctx: &Context, op: Op) -> bool {
    let Some(callable) = ctx.interface::<dyn CallableOpInterface>(op) else { return false };
    execution_space(ctx, op) == Some(ExecutionSpace::Device)
        && callable.body(ctx, op).is_some()
        && callable.is_entry(ctx, op)
}

/// Lowers every entry kernel of `module` (verified, in `ctx`) into one SPIR-V module, with an
/// entry point per kernel named by the kernel's symbol. The module is validated (where this build
/// links SPIRV-Tools: [`spirv_tools_version`]); every problem
/// is a diagnostic, all of them reported at once.
pub fn lower_module(
    ctx: &Context,
    module: Verified<'_>,
    options: &LoweringOptions,
) -> Result<SpirvModule, Vec<Diagnostic>> {
    let root = module.op();
    let location = module.ctx().location(root);
    if !std::ptr::eq(ctx, module.ctx()) {
        return Err(vec![Diagnostic::error(location, "the verified module belongs to another context")]);
    }
    if options.index_width == IndexWidth::Bits64 && !options.features.has(Feature::Int64) {
        let message = format!("a 64-bit device 'index' needs {}, which the options do not enable", Feature::Int64);
        return Err(vec![Diagnostic::error(location, message)]);
    }
    let mut emitter = emitter::Emitter::new(options.index_width.bits());
    let mut diagnostics = Vec::new();
    let mut entry_points = Vec::new();
    for op in ctx.walk(root) {
        if !is_entry_kernel(ctx, op) {
            continue;
        }
        match kernel::lower_kernel(ctx, &mut emitter, options, op, &mut diagnostics) {
            Ok(entry) => entry_points.push(entry),
            Err(Failed::Reported) => {}
            Err(Failed::Builder(message)) => diagnostics
                .push(Diagnostic::error(ctx.location(op), format!("internal error while building SPIR-V: {message}"))),
        }
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    if entry_points.is_empty() {
        return Err(vec![Diagnostic::error(location, "the module has no kernel to lower to SPIR-V")]);
    }
    let words = emitter.b.module().assemble();
    // Without SPIRV-Tools in this build, the module goes on unvalidated (validate.rs).
    if spirv_tools_version().is_none() {
        return Ok(SpirvModule { words, entry_points });
    }
    if let Err(message) = validate(&words) {
        let message = format!("internal error: the SPIR-V lowering made a module that spirv-val rejects: {message}");
        return Err(vec![Diagnostic::error(location, message)]);
    }
    Ok(SpirvModule { words, entry_points })
}
