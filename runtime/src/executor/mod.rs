//! The host executor: runs host code (`compute`, `buffer`, `arith`, `math`, `scf`, and any
//! dialect's ops that implement the loop, region-branch, call and launch interfaces) on the host
//! and drives a [`Backend`] for the kernels.
//!
//! It runs only verified IR: [`Executor::new`] takes a [`Verified`] module, and relies on what
//! the verifier checked (operand counts and types, the kinds of the symbols that calls and
//! dispatches name) instead of checking it again. Each function is compiled on its first call
//! into a slot-numbered program (`compile.rs`) that is then run (`interpret.rs`) without name
//! lookups or allocation per op.
//!
//! # Execution model
//!
//! Every buffer has a host copy, which the executor owns, and a device copy, which the backend
//! holds (see `docs/` and the design brief). Host code — `buffer.load`/`store`/`copy`, host
//! functions, the caller — reads and writes only host copies; kernels only device copies. What
//! moves between them depends on the [`TransferMode`]:
//!
//! - [`TransferMode::Explicit`]: only the program's own `buffer.to_device`/`buffer.from_device`
//!   move data. This is how a compiled program (one whose transfers a pass inserted) runs.
//! - [`TransferMode::Reference`]: the reference semantics, "copy everything, every time": before
//!   each dispatch every buffer argument goes to the device, after it every one comes back, and
//!   the program's own transfers do nothing. Any program run this way gives the results every
//!   correct transfer plan must give.
//! - [`TransferMode::Tracking`]: the runtime-tracking strategy, for programs instrumented by the
//!   `track-accesses` pass. The executor keeps, per buffer, which elements are current on the
//!   host and on the device (`residency/`), and copies only when a dispatch or a hook needs it:
//!   before a dispatch, what the kernel reads or may leave unwritten and only the device lacks;
//!   at a host-read hook, what only the device has; at the return, what the caller's buffers
//!   only have on the device. The program's own transfers do nothing.
//!
//! In the explicit and reference modes the hooks of the runtime-tracking strategy
//! (`buffer.before_host_read` ...) move nothing; in every mode they are counted in the report.
//!
//! A [`Session`] (`residency/session.rs`) runs one module many times with its buffers kept on
//! the device between calls.
//!
//! Fresh memory is poison on both sides: a device copy holds what the backend's allocation left
//! (the CPU reference backend's poison pattern) until a transfer or a kernel writes it, and the
//! host copy of a buffer the program allocates is filled with [`ElementType::poison_bytes`]
//! (uninitialised host memory is undefined too). So a missing transfer changes results.
//!
//! # Arguments
//!
//! The caller passes each argument by value ([`ArgValue`]); a buffer argument's bytes become its
//! host copy and come back in [`RunOutput::buffers`]. Because each [`HostBuffer`] owns its bytes,
//! two arguments can never be the same buffer: the design's "argument aliasing" pitfall cannot
//! arise from this API, and the executor needs no entry check for it. (Inside the program, the
//! same buffer may of course reach a callee, a kernel or a host function twice.) A [`Session`]
//! passes buffers by handle, where it can arise: it checks at each call.
//!
//! # Errors
//!
//! Bad programs and bad arguments give a [`RuntimeError`] with the location of the op at fault,
//! never a panic: a missing entry, a missing, extra or ill-typed argument, a wrong shape, an op
//! the executor does not know, an out-of-bounds access on the host
//! ([`RuntimeError::HostOutOfBounds`]) or a transfer range outside its buffer, a use after
//! `buffer.dealloc`, integer division by zero, an unregistered host function, unbounded
//! recursion ([`RuntimeError::RecursionLimit`]), a dispatch over more work items than the
//! backend allows ([`RuntimeError::GridTooLarge`]), and whatever the backend reports (with the
//! location of the op that called it: [`RuntimeError::at`]).

mod buffers;
mod compile;
mod host_buffer;
pub mod host_functions;
mod interpret;
mod program;
mod queue;
mod residency;
mod timeline_log;
mod tracing;

pub use hat_dialects::compute::ArgEffect;
pub use host_buffer::HostBuffer;
pub use host_functions::{HostArg, HostCall, HostFunction, STANDARD_HOST_FUNCTIONS};
pub use residency::session::{CallArg, CallOutput, CallResult, HostMut, ResidentBuffer, Session, SessionMode};

use crate::backend::Backend;
use crate::error::RuntimeError;
use crate::report::RunReport;
use crate::value::{BufferLayout, ElementType, Scalar};
use compile::Functions;
use hat_ir::interfaces::{execution_space, CallableOpInterface, ExecutionSpace};
use hat_ir::printer::type_to_string;
use hat_ir::types::DYNAMIC;
use hat_ir::{Context, Location, Op, Type, TypeKind, Verified};
use rustc_hash::FxHashMap;

/// How buffers move between host and device. See the module documentation.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum TransferMode {
    /// Only the program's own `buffer.to_device`/`buffer.from_device` move data.
    #[default]
    Explicit,
    /// "Copy everything, every time": every buffer argument of a dispatch goes to the device
    /// before it and comes back after it; the program's own transfers do nothing.
    Reference,
    /// The runtime-tracking strategy: copies only where a dispatch or a hook of the
    /// `track-accesses` pass needs them; the program's own transfers do nothing. Runs only
    /// modules that pass instrumented.
    Tracking,
}

impl TransferMode {
    /// `explicit`, `reference` or `tracking`.
    pub fn name(self) -> &'static str {
        match self {
            TransferMode::Explicit => "explicit",
            TransferMode::Reference => "reference",
            TransferMode::Tracking => "tracking",
        }
    }
}

/// How an [`Executor`] runs programs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecutorOptions {
    /// How buffers move.
    pub mode: TransferMode,
}

/// A value passed to or returned from the entry function.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A scalar (integers, `index` and `i1` as [`Scalar::Int`], floats as [`Scalar::Float`]).
    Scalar(Scalar),
    /// A buffer: its host copy.
    Buffer(HostBuffer),
}

impl ArgValue {
    /// The scalar, if it is one.
    pub fn as_scalar(&self) -> Option<Scalar> {
        match self {
            ArgValue::Scalar(value) => Some(*value),
            ArgValue::Buffer(_) => None,
        }
    }

    /// The buffer, if it is one.
    pub fn as_buffer(&self) -> Option<&HostBuffer> {
        match self {
            ArgValue::Buffer(buffer) => Some(buffer),
            ArgValue::Scalar(_) => None,
        }
    }
}

impl From<HostBuffer> for ArgValue {
    fn from(buffer: HostBuffer) -> Self {
        ArgValue::Buffer(buffer)
    }
}

impl From<Scalar> for ArgValue {
    fn from(value: Scalar) -> Self {
        ArgValue::Scalar(value)
    }
}

/// What a run gives back.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The entry function's results (a returned buffer as a copy of its host copy).
    pub results: Vec<ArgValue>,
    /// The final host copies of the entry's buffer arguments, in parameter order.
    pub buffers: Vec<HostBuffer>,
    /// What moved, what ran, and how long it took.
    pub report: RunReport,
}

/// What kind of value a parameter of the entry function takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParameterKind {
    /// A scalar of this type.
    Scalar(ElementType),
    /// A buffer of exactly this layout.
    Buffer(BufferLayout),
    /// A buffer with dynamic dimensions (`memref<?x8xf32>`): `None` for each `?`, which any
    /// extent fits.
    DynamicBuffer {
        /// The element type.
        element: ElementType,
        /// The dimensions, `None` where dynamic.
        shape: Vec<Option<usize>>,
    },
}

/// A parameter of the entry function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameter {
    /// Its source name without `%` (`grid`), or `arg0`, `arg1`, ... when unknown.
    pub name: String,
    /// What it takes.
    pub kind: ParameterKind,
    /// Its IR type as text (`memref<16x16xi32>`), for messages.
    pub type_text: String,
}

impl Parameter {
    /// Checks that `value` fits the parameter, and gives it in the form the program sees.
    /// A float parameter takes a [`Scalar::Float`] (rounded to `f32` for `f32`); an integer one
    /// a [`Scalar::Int`] that fits its width read as signed or unsigned (`255` for an `i8` is
    /// `-1`; an `i1` takes 0 or 1). A buffer must have the element type and (static) shape of
    /// the parameter and exactly `layout.bytes()` bytes. Errors are
    /// [`RuntimeError::BadArgument`].
    pub fn check(&self, value: ArgValue) -> Result<ArgValue, RuntimeError> {
        let bad = |message: String| RuntimeError::BadArgument { name: self.name.clone(), message };
        match (&self.kind, value) {
            (ParameterKind::Scalar(ty), ArgValue::Scalar(scalar)) => {
                check_scalar(*ty, scalar).map(ArgValue::Scalar).map_err(bad)
            }
            (ParameterKind::Buffer(layout), ArgValue::Buffer(buffer)) => {
                let shape: Vec<Option<usize>> = layout.shape.iter().map(|&d| Some(d)).collect();
                check_buffer(layout.element, &shape, &self.type_text, buffer).map(ArgValue::Buffer).map_err(bad)
            }
            (ParameterKind::DynamicBuffer { element, shape }, ArgValue::Buffer(buffer)) => {
                check_buffer(*element, shape, &self.type_text, buffer).map(ArgValue::Buffer).map_err(bad)
            }
            (ParameterKind::Scalar(_), ArgValue::Buffer(buffer)) => Err(bad(format!(
                "expects a scalar of type {}, got a buffer of shape {:?}",
                self.type_text, buffer.layout.shape
            ))),
            (_, ArgValue::Scalar(_)) => Err(bad(format!("expects a buffer of type {}, got a scalar", self.type_text))),
        }
    }
}

fn check_scalar(ty: ElementType, value: Scalar) -> Result<Scalar, String> {
    let name = crate::eval::type_name(ty);
    match (ty.is_float(), value) {
        (true, Scalar::Float(v)) => Ok(crate::eval::normalize(Scalar::Float(v), ty)),
        (true, Scalar::Int(v)) => Err(format!("expects a float of type {name}, got the integer {v}")),
        (false, Scalar::Float(v)) => Err(format!("expects an integer of type {name}, got the float {v}")),
        (false, Scalar::Int(v)) => {
            let bits = ty.bits();
            let fits = match bits {
                1 => v == 0 || v == 1,
                64 => true,
                _ => v >= -(1i64 << (bits - 1)) && v < (1i64 << bits),
            };
            if fits {
                Ok(crate::eval::normalize(Scalar::Int(v), ty))
            } else {
                Err(format!("the value {v} does not fit in {name}"))
            }
        }
    }
}

fn check_buffer(
    element: ElementType,
    shape: &[Option<usize>],
    type_text: &str,
    buffer: HostBuffer,
) -> Result<HostBuffer, String> {
    let layout = &buffer.layout;
    if layout.element != element {
        return Err(format!(
            "expects {type_text}, got a buffer of {} elements",
            crate::eval::type_name(layout.element)
        ));
    }
    let fits =
        layout.shape.len() == shape.len() && layout.shape.iter().zip(shape).all(|(&d, &e)| e.is_none_or(|e| e == d));
    if !fits {
        return Err(format!("expects {type_text}, got a buffer of shape {:?}", layout.shape));
    }
    if buffer.bytes.len() != layout.bytes() {
        return Err(format!(
            "a buffer of shape {:?} and element type {} needs {} bytes, but has {}",
            layout.shape,
            crate::eval::type_name(element),
            layout.bytes(),
            buffer.bytes.len()
        ));
    }
    Ok(buffer)
}

/// What a value of IR type `ty` is at run time, or a message when the runtime cannot hold it.
pub(crate) fn parameter_kind(ctx: &Context, ty: Type) -> Result<ParameterKind, String> {
    if let TypeKind::MemRef { shape, element } = ctx.type_kind(ty) {
        let element = ElementType::of(ctx, *element)
            .ok_or_else(|| format!("the element type of {} is not supported at run time", type_to_string(ctx, ty)))?;
        let dims: Vec<Option<usize>> =
            shape.iter().map(|&d| if d == DYNAMIC { None } else { usize::try_from(d).ok() }).collect();
        if shape.iter().zip(&dims).any(|(&d, dim)| d != DYNAMIC && dim.is_none()) {
            return Err(format!("{} has a negative dimension", type_to_string(ctx, ty)));
        }
        return Ok(match dims.iter().copied().collect::<Option<Vec<usize>>>() {
            Some(shape) => {
                let layout = BufferLayout { element, shape };
                // A size that overflows is refused here, where the caller knows the place.
                layout.checked_bytes().map_err(|message| format!("{} has {message}", type_to_string(ctx, ty)))?;
                ParameterKind::Buffer(layout)
            }
            None => ParameterKind::DynamicBuffer { element, shape: dims },
        });
    }
    ElementType::of(ctx, ty)
        .map(ParameterKind::Scalar)
        .ok_or_else(|| format!("the type {} is not supported at run time", type_to_string(ctx, ty)))
}

/// The host function named `name` in the module: a callable with a body that runs on the host
/// (`compute.func`, or any dialect's function op with the `HOST_CODE` trait).
pub(crate) fn entry_function(module: Verified<'_>, name: &str) -> Result<Op, RuntimeError> {
    let ctx = module.ctx();
    ctx.body_ops(module.op())
        .into_iter()
        .find(|&op| {
            hat_ir::verifier::symbol_name(ctx, op) == Some(name)
                && execution_space(ctx, op) == Some(ExecutionSpace::Host)
                && ctx.interface::<dyn CallableOpInterface>(op).is_some_and(|c| c.body(ctx, op).is_some())
        })
        .ok_or_else(|| RuntimeError::MissingSymbol {
            what: "entry function",
            name: name.to_string(),
            location: Location::UNKNOWN,
        })
}

/// The parameters of the host function named `entry` in `module`: source names (from
/// [`Context::argument_name`]) and what each takes, so that a driver can build the arguments.
pub fn entry_parameters(module: Verified<'_>, entry: &str) -> Result<Vec<Parameter>, RuntimeError> {
    let ctx = module.ctx();
    let func = entry_function(module, entry)?;
    let location = ctx.location(func);
    let malformed =
        |message: String| RuntimeError::Unsupported { op: ctx.name_str(func).to_string(), message, location };
    let callable = ctx.interface::<dyn CallableOpInterface>(func).expect("an entry function is callable");
    let (inputs, _) = callable.signature(ctx, func).ok_or_else(|| malformed(format!("'@{entry}' has no signature")))?;
    let arguments = callable
        .body(ctx, func)
        .and_then(|r| ctx.region_blocks(r).first())
        .map(|&b| ctx.block_arguments(b).to_vec())
        .unwrap_or_default();
    inputs
        .iter()
        .enumerate()
        .map(|(index, &ty)| {
            let name = arguments
                .get(index)
                .and_then(|&a| ctx.argument_name(a))
                .map_or_else(|| format!("arg{index}"), str::to_string);
            let kind =
                parameter_kind(ctx, ty).map_err(|message| malformed(format!("parameter '{name}': {message}")))?;
            Ok(Parameter { name, kind, type_text: type_to_string(ctx, ty) })
        })
        .collect()
}

/// Runs compute functions of one module on a backend. See the module documentation.
///
/// Host functions are compiled once per executor (on their first call) and kernels once (by
/// the backend, on their first dispatch), so several runs of one executor compile each once.
pub struct Executor<'a> {
    pub(crate) module: Verified<'a>,
    pub(crate) backend: &'a mut dyn Backend,
    pub(crate) options: ExecutorOptions,
    pub(crate) host_functions: FxHashMap<String, Registered<'a>>,
    pub(crate) functions: Functions,
    pub(crate) recursion_limit: usize,
    /// Whether runs record a trace for the clairvoyant optimum, and the last run's.
    pub(crate) tracing: bool,
    pub(crate) last_trace: Option<crate::oracle::Trace>,
    /// Whether runs record their timeline, and the last run's.
    pub(crate) timeline: bool,
    pub(crate) last_timeline: Option<crate::timeline::RunTimeline>,
}

/// A registered host function, with the effects the embedding program registered it with
/// (checked against the program's declaration at each call) if it gave them.
pub(crate) struct Registered<'a> {
    pub(crate) function: HostFunction<'a>,
    pub(crate) effects: Option<Vec<ArgEffect>>,
}

/// The default limit on nested calls: 100,000. Calls recurse on the host's stack, which grows
/// as needed (a new segment whenever less than 128 KiB is left), so the limit is one of memory,
/// not of the thread's stack: each level costs a few KiB (more in a debug build), so the limit
/// costs at most some hundreds of MiB. Regions nest within a function as deep as its text does.
pub const DEFAULT_RECURSION_LIMIT: usize = 100_000;

impl<'a> Executor<'a> {
    /// An executor of the host functions of `module` (a verified `builtin.module`), on
    /// `backend`.
    pub fn new(module: Verified<'a>, backend: &'a mut dyn Backend, options: ExecutorOptions) -> Self {
        Executor {
            module,
            backend,
            options,
            host_functions: FxHashMap::default(),
            functions: Functions::default(),
            recursion_limit: DEFAULT_RECURSION_LIMIT,
            tracing: false,
            last_trace: None,
            timeline: false,
            last_timeline: None,
        }
    }

    /// The options.
    pub fn options(&self) -> ExecutorOptions {
        self.options
    }

    /// The module.
    pub fn module(&self) -> Op {
        self.module.op()
    }

    /// Sets the limit on nested calls (default [`DEFAULT_RECURSION_LIMIT`]); deeper is
    /// [`RuntimeError::RecursionLimit`]. The stack grows as needed; a high limit needs memory.
    pub fn set_recursion_limit(&mut self, limit: usize) {
        self.recursion_limit = limit;
    }

    /// Whether each run records its [`Trace`](crate::oracle::Trace) for the clairvoyant optimum
    /// (off by default; see [`crate::oracle`]): run in [`TransferMode::Reference`] on a backend
    /// that records the element accesses of dispatches (the CPU backend after
    /// [`CpuBackend::set_record_accesses`](crate::CpuBackend::set_record_accesses)); on another,
    /// the first dispatch fails with [`RuntimeError::Unsupported`]. Has it with
    /// [`take_trace`](Self::take_trace).
    pub fn set_trace(&mut self, on: bool) {
        self.tracing = on;
    }

    /// The trace of the last run (once), if [`set_trace`](Self::set_trace) was on; a run that
    /// failed leaves what it recorded up to the failure.
    pub fn take_trace(&mut self) -> Option<crate::oracle::Trace> {
        self.last_trace.take()
    }

    /// Whether each run records its [`RunTimeline`](crate::timeline::RunTimeline) (off by
    /// default): every copy and dispatch with when it ran, its dependencies and their hazards,
    /// the barriers the backend recorded, each buffer's device memory. What runs, and in what
    /// order, is the same either way. Has it with [`take_timeline`](Self::take_timeline).
    pub fn set_timeline(&mut self, on: bool) {
        self.timeline = on;
    }

    /// The timeline of the last run (once), if [`set_timeline`](Self::set_timeline) was on; a
    /// run that failed leaves what it recorded up to the failure.
    pub fn take_timeline(&mut self) -> Option<crate::timeline::RunTimeline> {
        self.last_timeline.take()
    }

    /// Registers the host function a `compute.host_func @name` declares (a later registration
    /// replaces it). Its buffer arguments get the views their declared effects allow (see
    /// [`HostCall`]).
    pub fn register_host_function(&mut self, name: &str, function: HostFunction<'a>) {
        self.host_functions.insert(name.to_string(), Registered { function, effects: None });
    }

    /// Like [`register_host_function`](Self::register_host_function), also stating the effect
    /// of each argument (`none` for scalars). Each call checks that the program's declaration
    /// says the same, and fails with [`RuntimeError::HostFunctionFailed`] if not: a declaration
    /// that understates a function's effects would let a transfer plan skip a needed copy.
    pub fn register_host_function_with_effects(
        &mut self,
        name: &str,
        effects: &[ArgEffect],
        function: HostFunction<'a>,
    ) {
        self.host_functions.insert(name.to_string(), Registered { function, effects: Some(effects.to_vec()) });
    }

    /// Registers the standard host functions, writing to standard output: `print`
    /// ([`host_functions::print`]) and `display` ([`host_functions::display`]).
    pub fn register_standard_host_functions(&mut self) {
        self.register_host_function("print", host_functions::print(std::io::stdout()));
        self.register_host_function("display", host_functions::display(std::io::stdout()));
    }

    /// Whether a host function of this name is registered.
    pub fn has_host_function(&self, name: &str) -> bool {
        self.host_functions.contains_key(name)
    }

    /// The parameters of the host function `entry` (see [`entry_parameters`]).
    pub fn entry_parameters(&self, entry: &str) -> Result<Vec<Parameter>, RuntimeError> {
        entry_parameters(self.module, entry)
    }

    /// Runs the compute function `entry` with `args`, one per parameter. See the module
    /// documentation for what moves and what can go wrong.
    pub fn run(&mut self, entry: &str, args: Vec<ArgValue>) -> Result<RunOutput, RuntimeError> {
        interpret::run(self, entry, args)
    }
}

#[cfg(test)]
mod cpu_tests;
#[cfg(test)]
mod tests;
