//! [`Session`]: compile once, call many times, with buffers kept on the device between calls.
//!
//! ```no_run
//! # use hat_runtime::*;
//! # fn demo(module: hat_ir::Verified<'_>, w: HostBuffer, x: HostBuffer, acc: HostBuffer) -> Result<(), RuntimeError> {
//! let mut backend = CpuBackend::new();
//! let mut session = Session::new(module, &mut backend);
//! let (w, x, acc) = (session.buffer(w), session.buffer(x), session.buffer(acc));
//! for _ in 0..100 {
//!     session.call("mac_step", &[w.into(), x.into(), acc.into()])?;
//! }
//! println!("{:?}", session.host(acc)?.to_f32()); // the only copy back
//! session.host_mut(w)?.set(&[0], Scalar::Float(2.0)); // only w[0] goes in again
//! session.call("mac_step", &[w.into(), x.into(), acc.into()])?;
//! # Ok(()) }
//! ```
//!
//! - **Handles.** [`Session::buffer`] hands a [`HostBuffer`] to the session and gives back a
//!   [`ResidentBuffer`], a `Copy` handle. The session owns both copies of the buffer from then
//!   on; a handle of another session, or of a buffer taken back with [`Session::take`], is an
//!   error, never another buffer.
//! - **Borrows.** The host copy is reached through [`Session::host`] (a shared borrow) and
//!   [`Session::host_mut`] (a [`HostMut`] guard). Both first bring home what only the device has
//!   (the only time a copy back happens: lazily, when someone looks). The guard records what the
//!   caller writes — the elements it [`set`](HostMut::set), or everything once it hands out
//!   [`bytes_mut`](HostMut::bytes_mut) — and only that becomes "newer on the host", so only that
//!   goes back to the device at the next call that needs it. Borrows end before the next call:
//!   the borrow checker sees to it.
//! - **Calls.** [`Session::call`] runs an entry function with handles and scalars. What moves
//!   depends on the [`SessionMode`]:
//!   - [`SessionMode::Tracking`] (a module instrumented by `track-accesses`): the runtime-tracking
//!     strategy, with each buffer's residency carried from call to call. A dispatch copies in only
//!     what the device lacks; nothing is copied back at the return.
//!   - [`SessionMode::Explicit`] (a module with its own transfers): the program's transfers run,
//!     except that a `buffer.to_device` whose elements the device already holds is skipped, and a
//!     `buffer.from_device` is deferred until the host looks (a host access in the program, a
//!     borrow, [`Session::take`]). Dispatches need `hat.arg_access` (which `track-accesses{hooks=false}`
//!     adds) to know what their kernels leave unchanged; without it every buffer argument counts as
//!     written, and unchanged inputs go in again at each call.
//!
//!   Under either mode an unchanged input goes to the device once, across all calls.
//! - **Aliasing.** The same handle passed as two arguments is checked at every call
//!   (`aliasing.rs`): accepted where the plan is provably right, else refused with
//!   [`RuntimeError::BadArgument`] naming both parameters.
//! - **Results.** A returned buffer comes back as a handle: the argument's own when the program
//!   returns an argument, a new one (resident, nothing copied) for a buffer the program allocated.
//! - **Accounting.** Each call's [`RunReport`] says what moved during it; [`Session::transfers`]
//!   what moved for a buffer since it joined the session, borrows included.
//! - **Errors** of a call leave every buffer in the session, its state as far as the call got.

use super::aliasing::check_aliasing;
use super::annotations::is_tracked;
use super::residence::{Policy, Residence};
use super::tracker::Tracker;
use crate::backend::{Backend, DeviceBuffer};
use crate::error::RuntimeError;
use crate::executor::buffers::{At, BufferId};
use crate::executor::interpret::{check_tracked, Interpreter};
use crate::executor::{
    entry_function, entry_parameters, ArgEffect, ArgValue, Executor, ExecutorOptions, HostBuffer, HostFunction,
    Parameter, ParameterKind, TransferMode,
};
use crate::report::{BufferTransfers, RunReport};
use crate::value::{BufferLayout, Scalar};
use hat_ir::Verified;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// How a [`Session`] moves data. See the module documentation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SessionMode {
    /// The program's own transfers, skipped or deferred where their effect is already there.
    Explicit,
    /// The runtime-tracking strategy (modules instrumented by `track-accesses`).
    Tracking,
}

impl SessionMode {
    fn policy(self) -> Policy {
        match self {
            SessionMode::Explicit => Policy::Explicit,
            SessionMode::Tracking => Policy::Tracking,
        }
    }

    fn transfer_mode(self) -> TransferMode {
        match self {
            SessionMode::Explicit => TransferMode::Explicit,
            SessionMode::Tracking => TransferMode::Tracking,
        }
    }
}

/// A buffer of a [`Session`]. See the module documentation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResidentBuffer {
    session: u64,
    index: usize,
}

/// An argument of [`Session::call`].
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum CallArg {
    /// A buffer of the session.
    Buffer(ResidentBuffer),
    /// A scalar (as [`ArgValue::Scalar`]).
    Scalar(Scalar),
}

impl From<ResidentBuffer> for CallArg {
    fn from(buffer: ResidentBuffer) -> Self {
        CallArg::Buffer(buffer)
    }
}

impl From<Scalar> for CallArg {
    fn from(value: Scalar) -> Self {
        CallArg::Scalar(value)
    }
}

/// A result of [`Session::call`].
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum CallResult {
    /// A scalar.
    Scalar(Scalar),
    /// A buffer, resident in the session.
    Buffer(ResidentBuffer),
}

/// What a call gives back.
#[derive(Clone, Debug)]
pub struct CallOutput {
    /// The entry function's results.
    pub results: Vec<CallResult>,
    /// What moved during the call (the buffers named by their parameters).
    pub report: RunReport,
}

/// One buffer of a session.
#[derive(Debug)]
struct Resident {
    /// Its host copy; its bytes are empty while it has none (a buffer the program allocated and
    /// the host never touched).
    host: HostBuffer,
    device: Option<DeviceBuffer>,
    residence: Residence,
    /// What moved since it joined the session.
    transfers: BufferTransfers,
}

impl Resident {
    fn host_bytes(&mut self) -> Option<Vec<u8>> {
        let bytes = std::mem::take(&mut self.host.bytes);
        (bytes.len() == self.host.layout.bytes()).then_some(bytes)
    }
}

/// Runs one module many times, its buffers kept on the device between calls. See the module
/// documentation.
pub struct Session<'a> {
    executor: Executor<'a>,
    mode: SessionMode,
    /// Tells this session's handles from another's.
    id: u64,
    /// By handle index; `None` once taken back.
    buffers: Vec<Option<Resident>>,
}

static SESSIONS: AtomicU64 = AtomicU64::new(0);

impl<'a> Session<'a> {
    /// A session of `module` on `backend`: in [`SessionMode::Tracking`] when `track-accesses`
    /// instrumented the module, else [`SessionMode::Explicit`].
    pub fn new(module: Verified<'a>, backend: &'a mut dyn Backend) -> Self {
        let mode = if is_tracked(module.ctx(), module.op()) { SessionMode::Tracking } else { SessionMode::Explicit };
        Session::with_mode(module, backend, mode).expect("the mode fits the module")
    }

    /// A session in `mode`; [`SessionMode::Tracking`] needs a module instrumented by
    /// `track-accesses`.
    pub fn with_mode(
        module: Verified<'a>,
        backend: &'a mut dyn Backend,
        mode: SessionMode,
    ) -> Result<Self, RuntimeError> {
        let executor = Executor::new(module, backend, ExecutorOptions { mode: mode.transfer_mode() });
        if mode == SessionMode::Tracking {
            check_tracked(&executor)?;
        }
        Ok(Session { executor, mode, id: SESSIONS.fetch_add(1, Ordering::Relaxed), buffers: Vec::new() })
    }

    /// Its mode.
    pub fn mode(&self) -> SessionMode {
        self.mode
    }

    /// Registers a host function (see [`Executor::register_host_function`]).
    pub fn register_host_function(&mut self, name: &str, function: HostFunction<'a>) {
        self.executor.register_host_function(name, function);
    }

    /// Registers a host function with its effects (see
    /// [`Executor::register_host_function_with_effects`]).
    pub fn register_host_function_with_effects(
        &mut self,
        name: &str,
        effects: &[ArgEffect],
        function: HostFunction<'a>,
    ) {
        self.executor.register_host_function_with_effects(name, effects, function);
    }

    /// Registers the standard host functions (see [`Executor::register_standard_host_functions`]).
    pub fn register_standard_host_functions(&mut self) {
        self.executor.register_standard_host_functions();
    }

    /// Hands `buffer` to the session: its host copy is current, it has no device copy yet.
    pub fn buffer(&mut self, buffer: HostBuffer) -> ResidentBuffer {
        let name = format!("buffer{}", self.buffers.len());
        let residence = Residence::on_host(buffer.len() as u64);
        self.adopt(Resident {
            host: buffer,
            device: None,
            residence,
            transfers: BufferTransfers { name, host_copy: true, ..BufferTransfers::default() },
        })
    }

    fn adopt(&mut self, resident: Resident) -> ResidentBuffer {
        self.buffers.push(Some(resident));
        ResidentBuffer { session: self.id, index: self.buffers.len() - 1 }
    }

    fn resident(&mut self, buffer: ResidentBuffer) -> Result<&mut Resident, RuntimeError> {
        let id = self.id;
        match self.buffers.get_mut(buffer.index).and_then(Option::as_mut) {
            Some(resident) if buffer.session == id => Ok(resident),
            _ => Err(unknown_buffer(id, buffer)),
        }
    }

    /// What moved for `buffer` since it joined the session (calls and borrows), named
    /// `bufferN` or, for a buffer a call returned, after its `buffer.alloc`.
    pub fn transfers(&self, buffer: ResidentBuffer) -> Option<&BufferTransfers> {
        (buffer.session == self.id).then(|| self.buffers.get(buffer.index)?.as_ref().map(|r| &r.transfers))?
    }

    /// Brings home what only the device has of `buffer`.
    fn fetch(&mut self, buffer: ResidentBuffer) -> Result<&mut Resident, RuntimeError> {
        // Split the borrows: the backend is the executor's, the resident the table's.
        let backend: &mut dyn Backend = &mut *self.executor.backend;
        let id = self.id;
        let resident = match self.buffers.get_mut(buffer.index).and_then(Option::as_mut) {
            Some(resident) if buffer.session == id => resident,
            _ => return Err(unknown_buffer(id, buffer)),
        };
        let copies = resident.residence.read_on_host(resident.residence.whole());
        let layout = resident.host.layout.clone();
        if resident.host.bytes.len() != layout.bytes() {
            resident.host = HostBuffer::poisoned(layout.clone());
            resident.transfers.host_copy = true;
        }
        if copies.is_empty() {
            return Ok(resident);
        }
        let device =
            resident.device.ok_or_else(|| RuntimeError::Backend("a device-only buffer has no device copy".into()))?;
        let size = layout.element.size() as u64;
        // Every range in one batch, and one wait (nothing else is recorded between calls).
        let mut reads = Vec::new();
        for range in copies {
            let bytes = (range.start * size) as usize..(range.end * size) as usize;
            reads.push((backend.record_read(device, bytes.start, bytes.len(), &[])?, bytes));
        }
        backend.synchronize()?;
        for (read, bytes) in reads {
            backend.take_read(read, &mut resident.host.bytes[bytes.clone()])?;
            resident.transfers.from_device.add(bytes.len() as u64);
        }
        Ok(resident)
    }

    /// The host copy of `buffer`, brought up to date first (copied back where only the device has
    /// the current contents).
    pub fn host(&mut self, buffer: ResidentBuffer) -> Result<&HostBuffer, RuntimeError> {
        Ok(&self.fetch(buffer)?.host)
    }

    /// The host copy of `buffer` to change, brought up to date first. What the guard changes is
    /// newer on the host than on the device from then on (see [`HostMut`]).
    pub fn host_mut(&mut self, buffer: ResidentBuffer) -> Result<HostMut<'_>, RuntimeError> {
        let resident = self.fetch(buffer)?;
        Ok(HostMut { resident })
    }

    /// Takes `buffer` out of the session: its host copy, up to date, and its device copy freed.
    pub fn take(&mut self, buffer: ResidentBuffer) -> Result<HostBuffer, RuntimeError> {
        self.fetch(buffer)?;
        let resident = self.buffers[buffer.index].take().expect("fetched above");
        if let Some(device) = resident.device {
            self.executor.backend.free(device)?;
        }
        Ok(resident.host)
    }

    /// Calls the entry function `entry` with `args`, one per parameter: handles for buffers,
    /// scalars for scalars. See the module documentation for what moves and what is refused.
    pub fn call(&mut self, entry: &str, args: &[CallArg]) -> Result<CallOutput, RuntimeError> {
        self.call_checked(entry, args, true)
    }

    /// [`Session::call`], with the check of aliased arguments only when `check_aliasing` (tests
    /// show what goes wrong without it).
    pub(crate) fn call_checked(
        &mut self,
        entry: &str,
        args: &[CallArg],
        check_aliases: bool,
    ) -> Result<CallOutput, RuntimeError> {
        let start = Instant::now();
        let module = self.executor.module;
        let parameters = entry_parameters(module, entry)?;
        let entry_op = entry_function(module, entry)?;
        if args.len() != parameters.len() {
            let list: Vec<String> = parameters.iter().map(|p| format!("%{}: {}", p.name, p.type_text)).collect();
            return Err(RuntimeError::BadArgument {
                name: parameters.get(args.len()).map_or_else(|| format!("#{}", parameters.len()), |p| p.name.clone()),
                message: format!(
                    "'@{entry}' takes {} arguments ({}), got {}",
                    parameters.len(),
                    list.join(", "),
                    args.len()
                ),
            });
        }
        // Check every argument before anything moves.
        let mut values = Vec::with_capacity(args.len());
        let mut handles: Vec<(usize, ResidentBuffer)> = Vec::new();
        for (index, (parameter, arg)) in parameters.iter().zip(args).enumerate() {
            match *arg {
                CallArg::Scalar(value) => match parameter.check(ArgValue::Scalar(value))? {
                    ArgValue::Scalar(value) => values.push(Some(value)),
                    ArgValue::Buffer(_) => unreachable!("a scalar checks as a scalar"),
                },
                CallArg::Buffer(handle) => {
                    let layout = self.resident(handle)?.host.layout.clone();
                    check_layout(parameter, &layout)?;
                    values.push(None);
                    handles.push((index, handle));
                }
            }
        }
        if check_aliases {
            check_aliasing(module.ctx(), entry_op, self.mode, &parameters, &handles)?;
        }

        let mut interpreter = Interpreter::new(&mut self.executor, Some(Tracker::new(self.mode.policy())));
        // Each distinct handle becomes one buffer of the run, named after its first parameter.
        let mut placed: Vec<(ResidentBuffer, BufferId, usize)> = Vec::new();
        for &(index, handle) in &handles {
            if let Some(&(_, id, _)) = placed.iter().find(|(h, _, _)| *h == handle) {
                values[index] = Some(Scalar::Int(id.0 as i64));
                continue;
            }
            let resident = self.buffers[handle.index].as_mut().expect("checked above");
            let slot = interpreter.recorder.buffer_slot(&parameters[index].name);
            let host = resident.host_bytes();
            let id = interpreter.buffers.add_resident(
                resident.host.layout.clone(),
                host,
                resident.device.take(),
                slot,
                &mut interpreter.recorder,
            );
            let residence = resident.residence.clone();
            interpreter.tracker.as_mut().expect("made above").place(id, residence);
            placed.push((handle, id, slot));
            values[index] = Some(Scalar::Int(id.0 as i64));
        }
        let values: Vec<Scalar> = values.into_iter().map(|v| v.expect("every argument placed")).collect();

        let index = interpreter.ex.functions.function(entry_op);
        let outcome = interpreter.call_entry(index, entry_op, &values).map_err(|e| *e);
        // Whatever happened, wait for what the call recorded: nothing stays in flight between
        // calls, and the reads land in the host copies the session keeps.
        let ctx = module.ctx();
        let at = At { op: ctx.name_str(entry_op), location: ctx.location(entry_op) };
        let flushed = interpreter.buffers.flush(at, interpreter.ex.backend, &mut interpreter.recorder);

        // Whatever happened, the buffers stay in the session.
        let mut tracker = interpreter.tracker.take().expect("made above");
        let mut take_back =
            |interpreter: &mut Interpreter<'_, 'a>, id: BufferId, resident: &mut Resident, slot: usize| {
                let (layout, host, device) = interpreter.buffers.take_resident(id, &mut interpreter.recorder);
                resident.residence = tracker.take(id, layout.len() as u64);
                resident.host = HostBuffer { bytes: host.unwrap_or_default(), layout };
                resident.device = device;
                let moved = &interpreter.recorder.report.per_buffer[slot];
                resident.transfers.to_device.count += moved.to_device.count;
                resident.transfers.to_device.bytes += moved.to_device.bytes;
                resident.transfers.from_device.count += moved.from_device.count;
                resident.transfers.from_device.bytes += moved.from_device.bytes;
                resident.transfers.host_copy |= moved.host_copy;
                resident.transfers.device_copy |= moved.device_copy;
            };
        for &(handle, id, slot) in &placed {
            let resident = self.buffers[handle.index].as_mut().expect("placed above");
            take_back(&mut interpreter, id, resident, slot);
        }
        let mut results = Vec::new();
        let mut adopted = Vec::new();
        if let Ok((function, scalars)) = &outcome {
            for (&value, &is_buffer) in scalars.iter().zip(function.buffer_results.iter()) {
                if !is_buffer {
                    results.push(CallResult::Scalar(value));
                    continue;
                }
                let id = BufferId(value.as_i64() as usize);
                let known = placed.iter().map(|&(h, i, _)| (h, i)).chain(adopted.iter().map(|&(h, i, _)| (h, i)));
                if let Some((handle, _)) = known.clone().find(|&(_, i)| i == id) {
                    results.push(CallResult::Buffer(handle));
                    continue;
                }
                let layout = interpreter.buffers.layout(id, at)?.clone();
                let slot = interpreter.recorder.buffer_slot(&format!("result{}", results.len()));
                let mut resident = Resident {
                    host: HostBuffer { layout, bytes: Vec::new() },
                    device: None,
                    residence: Residence::fresh(self.mode.policy(), 0),
                    transfers: BufferTransfers { name: format!("buffer{}", self.buffers.len()), ..Default::default() },
                };
                take_back(&mut interpreter, id, &mut resident, slot);
                let handle = ResidentBuffer { session: self.id, index: self.buffers.len() };
                self.buffers.push(Some(resident));
                adopted.push((handle, id, slot));
                results.push(CallResult::Buffer(handle));
            }
        }
        let released = interpreter.buffers.release_all(interpreter.ex.backend, &mut interpreter.recorder);
        let mut report = std::mem::take(&mut interpreter.recorder.report);
        outcome?;
        flushed?;
        released?;
        report.total_time = start.elapsed();
        Ok(CallOutput { results, report })
    }
}

fn unknown_buffer(session: u64, buffer: ResidentBuffer) -> RuntimeError {
    RuntimeError::BadArgument {
        name: format!("buffer #{}", buffer.index),
        message: if buffer.session != session {
            "belongs to another session".to_string()
        } else {
            "was taken back from the session".to_string()
        },
    }
}

/// Checks that a buffer of `layout` fits `parameter`.
fn check_layout(parameter: &Parameter, layout: &BufferLayout) -> Result<(), RuntimeError> {
    let fits = match &parameter.kind {
        ParameterKind::Buffer(expected) => expected == layout,
        ParameterKind::DynamicBuffer { element, shape } => {
            *element == layout.element
                && shape.len() == layout.shape.len()
                && shape.iter().zip(&layout.shape).all(|(e, &d)| e.is_none_or(|e| e == d))
        }
        ParameterKind::Scalar(_) => {
            return Err(RuntimeError::BadArgument {
                name: parameter.name.clone(),
                message: format!("expects a scalar of type {}, got a buffer", parameter.type_text),
            })
        }
    };
    if fits {
        return Ok(());
    }
    Err(RuntimeError::BadArgument {
        name: parameter.name.clone(),
        message: format!(
            "expects {}, got a buffer of {} elements and shape {:?}",
            parameter.type_text,
            crate::eval::type_name(layout.element),
            layout.shape
        ),
    })
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        for resident in self.buffers.iter_mut().filter_map(Option::as_mut) {
            if let Some(device) = resident.device.take() {
                // Nothing to report to: the session is going away.
                let _ = self.executor.backend.free(device);
            }
        }
    }
}

/// A borrow of a session buffer's host copy for writing (from [`Session::host_mut`]). It reads
/// as the [`HostBuffer`]; what it writes — the elements passed to [`set`](Self::set), or the
/// whole buffer once [`bytes_mut`](Self::bytes_mut) is called — is marked newer on the host, so
/// that only that goes to the device again. It cannot change the buffer's layout or size.
pub struct HostMut<'s> {
    resident: &'s mut Resident,
}

impl HostMut<'_> {
    /// Sets the element at `indices`; `false` (and no change) when out of bounds.
    pub fn set(&mut self, indices: &[i64], value: Scalar) -> bool {
        let Some(flat) = self.resident.host.layout.flatten(indices) else { return false };
        self.resident.host.set(indices, value);
        self.resident.residence.after_host_write(flat as u64..flat as u64 + 1);
        true
    }

    /// The bytes, to change at will: the whole buffer counts as written.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let whole = self.resident.residence.whole();
        self.resident.residence.after_host_write(whole);
        &mut self.resident.host.bytes
    }
}

impl std::ops::Deref for HostMut<'_> {
    type Target = HostBuffer;

    fn deref(&self) -> &HostBuffer {
        &self.resident.host
    }
}
