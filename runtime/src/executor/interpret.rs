//! Runs compiled host functions (see `compile.rs`): one [`Interpreter`] per run, holding the
//! run's buffers and report.
//!
//! - **Frames.** Each call of a function gets a frame of its slots (a `Vec<Scalar>`, reused from
//!   a pool); regions run in their function's frame. Buffers are `Scalar::Int(id)` of the run's
//!   [`Buffers`].
//! - **Control flow.** A counted loop runs its body from the lower bound by the step while below
//!   the upper bound (an induction variable that would leave its type stops the loop). Another
//!   region op asks its [`RegionBranchOpInterface`](hat_ir::interfaces::RegionBranchOpInterface)
//!   where control goes, passing the run-time integers of the deciding values (the op's operands
//!   on entry, the region terminator's operands on leaving a region); the answer must be one
//!   point, and the values move along the hop the compiler prepared.
//! - **Depth.** Calls nest on the host's stack, which grows as needed (`stacker`), so depth is
//!   bounded by [`Executor::set_recursion_limit`](super::Executor::set_recursion_limit) (calls;
//!   default [`DEFAULT_RECURSION_LIMIT`](super::DEFAULT_RECURSION_LIMIT)), never by a stack
//!   overflow.
//! - **What is checked here** is what only the run knows: bounds, extents and ranges, division by
//!   zero, use after free, a loop's step, a grid's size, a host function's answer.

use super::buffers::{At, BufferId, Buffers, Use};
use super::compile::{self, CompiledKernel};
use super::host_functions::HostCall;
use super::program::{
    AllocInst, ArenaInst, ArgSlot, BranchInst, CallInst, Code, DispatchInst, Edge, Function, HostCallInst, Inst,
    LoopInst, Slot, Target,
};
use super::residency::{annotations, HostAccess, Io, Policy, Residence, Tracker};
use super::timeline_log::{RunFacts, TimelineLog};
use super::tracing::{effect_accesses, Tracing};
use super::{entry_function, entry_parameters, ArgEffect, ArgValue, Executor, RunOutput, TransferMode};
use crate::artifact::KernelArtifact;
use crate::backend::KernelArg;
use crate::error::RuntimeError;
use crate::eval;
use crate::oracle::Origin;
use crate::report::{Direction, HostHook, Recorder};
use crate::slot_code::counted_loop;
use crate::slot_code::scalar::ScalarFailure;
use crate::value::{BufferLayout, Scalar};
use hat_ir::interfaces::RegionPoint;
use hat_ir::{Context, Op};
use smallvec::SmallVec;
use std::rc::Rc;
use std::time::Instant;

/// The interpreter's results: errors are boxed, so that the frames of the (recursive) walk
/// stay small.
type Res<T> = Result<T, Box<RuntimeError>>;

fn fail<T>(error: RuntimeError) -> Res<T> {
    Err(Box::new(error))
}

/// Stack kept free before a call or a region runs, and the size of each new stack segment.
pub(super) const RED_ZONE: usize = 128 * 1024;
pub(super) const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Whether less than [`RED_ZONE`] of stack is left: a call or a region op then continues on a
/// new segment (`stacker::grow`). Not `stacker::maybe_grow` on every call: the check alone keeps
/// the frames of the recursion small.
fn stack_is_low() -> bool {
    stacker::remaining_stack().is_none_or(|remaining| remaining < RED_ZONE)
}

/// Runs `entry` (see [`Executor::run`]).
pub(super) fn run(ex: &mut Executor<'_>, entry: &str, args: Vec<ArgValue>) -> Result<RunOutput, RuntimeError> {
    let start = Instant::now();
    let cache_before = ex.backend.kernel_cache();
    let ctx = ex.module.ctx();
    let parameters = entry_parameters(ex.module, entry)?;
    let func = entry_function(ex.module, entry)?;
    if args.len() != parameters.len() {
        let list: Vec<String> = parameters.iter().map(|p| format!("%{}: {}", p.name, p.type_text)).collect();
        let takes =
            format!("'@{entry}' takes {} arguments ({}), got {}", parameters.len(), list.join(", "), args.len());
        return Err(match parameters.get(args.len()) {
            Some(missing) => {
                RuntimeError::BadArgument { name: missing.name.clone(), message: format!("missing: {takes}") }
            }
            None => RuntimeError::BadArgument {
                name: format!("#{}", parameters.len()),
                message: format!("too many: {takes}"),
            },
        });
    }

    let tracker = match ex.options.mode {
        TransferMode::Tracking => {
            check_tracked(ex)?;
            Some(Tracker::new(Policy::Tracking))
        }
        _ => None,
    };
    let mut interpreter = Interpreter::new(ex, tracker);
    if interpreter.ex.timeline {
        interpreter.ex.backend.record_timeline(Some(start));
        interpreter.buffers.timeline = Some(TimelineLog::new(start));
    }
    let mut values = Vec::with_capacity(args.len());
    let mut caller_buffers = Vec::new();
    for (parameter, arg) in parameters.iter().zip(args) {
        match parameter.check(arg)? {
            ArgValue::Scalar(value) => values.push(value),
            ArgValue::Buffer(buffer) => {
                let slot = interpreter.recorder.buffer_slot(&parameter.name);
                let len = buffer.len() as u64;
                let layout = buffer.layout.clone();
                let id = interpreter.buffers.add_argument(buffer, slot, &mut interpreter.recorder);
                if let Some(trace) = &mut interpreter.trace {
                    trace.add(id, &parameter.name, &layout, Origin::Argument);
                }
                if let Some(tracker) = &mut interpreter.tracker {
                    tracker.place(id, Residence::on_host(len));
                }
                caller_buffers.push(id);
                values.push(handle(id));
            }
        }
    }

    let index = interpreter.ex.functions.function(func);
    let outcome = interpreter.call_entry(index, func, &values).map_err(|e| *e).and_then(|(function, results)| {
        let at = At { op: ctx.name_str(func), location: ctx.location(func) };
        // The caller observes its buffers and the returned ones: under tracking, bring them home.
        let returned =
            results.iter().zip(function.buffer_results.iter()).filter(|(_, &b)| b).map(|(&v, _)| buffer_id(v));
        let observed: Vec<BufferId> = caller_buffers.iter().copied().chain(returned).collect();
        for &id in &observed {
            interpreter.bring_home(id, at)?;
        }
        if interpreter.trace.is_some() {
            let layouts = observed
                .iter()
                .map(|&id| interpreter.buffers.layout(id, at).cloned())
                .collect::<Result<Vec<_>, _>>()?;
            let reads: Vec<(BufferId, &BufferLayout)> = observed.iter().copied().zip(&layouts).collect();
            if let Some(trace) = &mut interpreter.trace {
                trace.host_whole(&reads, &[]);
            }
        }
        results
            .into_iter()
            .zip(function.buffer_results.iter())
            .map(|(value, &buffer)| match buffer {
                false => Ok(ArgValue::Scalar(value)),
                true => interpreter
                    .buffers
                    .host_snapshot(buffer_id(value), at, interpreter.ex.backend, &mut interpreter.recorder)
                    .map(ArgValue::Buffer),
            })
            .collect::<Result<Vec<_>, _>>()
    });
    // Whatever happened, wait for what was recorded: the caller's buffers get their reads.
    let at = At { op: ctx.name_str(func), location: ctx.location(func) };
    let flushed = interpreter.buffers.flush(at, interpreter.ex.backend, &mut interpreter.recorder);
    let released = interpreter.buffers.release_all(interpreter.ex.backend, &mut interpreter.recorder);
    interpreter.ex.last_trace = interpreter.trace.take().map(|t| t.trace);
    if let Some(mut timeline) = interpreter.buffers.timeline.take() {
        timeline.take(interpreter.ex.backend.take_timeline());
        interpreter.ex.backend.record_timeline(None);
        let report = &interpreter.recorder.report;
        let facts = RunFacts {
            entry,
            backend: &report.backend,
            device: &report.device,
            buffers: interpreter
                .buffers
                .slots_and_layouts()
                .map(|(slot, layout)| {
                    (slot.map_or_else(|arena| arena, |s| report.per_buffer[s].name.clone()), layout.clone())
                })
                .collect(),
            kernels: report.kernels.iter().map(|k| k.name.clone()).collect(),
        };
        interpreter.ex.last_timeline = Some(timeline.finish(facts));
    }
    let results = outcome?;
    flushed?;
    released?;
    let buffers = caller_buffers.into_iter().map(|id| interpreter.buffers.final_host(id)).collect();
    let mut report = interpreter.recorder.report;
    report.total_time = start.elapsed();
    report.kernel_cache = interpreter.ex.backend.kernel_cache().map(|now| match &cache_before {
        Some(before) => now.since(before),
        None => now,
    });
    Ok(RunOutput { results, buffers, report })
}

/// A buffer as a slot holds it.
fn handle(id: BufferId) -> Scalar {
    Scalar::Int(id.0 as i64)
}

/// The buffer a slot holds (the compiler only reads buffers from memref-typed slots).
fn buffer_id(value: Scalar) -> BufferId {
    BufferId(value.as_i64() as usize)
}

/// Moves the values at `sources` to `targets` (which may overlap them, as when a loop yields its
/// carried values swapped).
fn move_values(frame: &mut [Scalar], sources: &[Slot], targets: &[Slot]) {
    let values: SmallVec<[Scalar; 8]> = sources.iter().map(|&s| frame[s as usize]).collect();
    for (&target, value) in targets.iter().zip(values) {
        frame[target as usize] = value;
    }
}

/// Checks that a program run in tracking mode was instrumented by `track-accesses`: without its
/// hooks, host accesses would go unseen.
pub(super) fn check_tracked(ex: &Executor<'_>) -> Result<(), RuntimeError> {
    let (ctx, module) = (ex.module.ctx(), ex.module.op());
    if annotations::is_tracked(ctx, module) {
        return Ok(());
    }
    Err(RuntimeError::Unsupported {
        op: ctx.name_str(module).to_string(),
        message: "tracking mode runs programs instrumented by the 'track-accesses' pass (the module has no \
                  'hat.tracked'): run the pass first"
            .to_string(),
        location: ctx.location(module),
    })
}

/// The arenas of one call being run.
struct CallArenas {
    /// The arena `plan-memory` sized before the run (`hat.arena_bytes`).
    fixed: Option<super::buffers::ArenaId>,
    /// The arena the call's latest `buffer.arena` planned, and its slots' offsets.
    planned: Option<super::buffers::ArenaId>,
    slots: Vec<usize>,
    /// Arenas of earlier `buffer.arena`s of the call.
    replaced: Vec<super::buffers::ArenaId>,
}

/// One run of an executor: its buffers, report and (in tracking mode, or in a residency session)
/// the residency of its buffers.
pub(super) struct Interpreter<'e, 'a> {
    ctx: &'a Context,
    pub(super) ex: &'e mut Executor<'a>,
    pub(super) buffers: Buffers,
    pub(super) recorder: Recorder,
    /// Where each buffer's current contents are, when the run tracks it.
    pub(super) tracker: Option<Tracker>,
    /// The trace for the clairvoyant optimum, when the executor records one.
    pub(super) trace: Option<Tracing>,
    /// Calls being run (see [`Executor::set_recursion_limit`]).
    calls: usize,
    /// Per call being run, innermost last: its arenas, when `plan-memory` planned them.
    arenas: Vec<CallArenas>,
    /// Frames to reuse.
    frames: Vec<Vec<Scalar>>,
}

impl<'e, 'a> Interpreter<'e, 'a> {
    /// A run of `ex`, its buffers tracked by `tracker` if given.
    pub(super) fn new(ex: &'e mut Executor<'a>, tracker: Option<Tracker>) -> Self {
        let recorder = Recorder::new(ex.options.mode.name(), ex.backend.name(), ex.backend.device_name());
        let trace = ex.tracing.then(Tracing::default);
        ex.last_trace = None;
        ex.last_timeline = None;
        Interpreter {
            ctx: ex.module.ctx(),
            ex,
            buffers: Buffers::default(),
            recorder,
            tracker,
            trace,
            calls: 0,
            arenas: Vec::new(),
            frames: Vec::new(),
        }
    }

    /// The tracker, with what its copies go through.
    fn tracked(&mut self, at: At<'a>) -> Option<(&mut Tracker, Io<'_, 'a>)> {
        let tracker = self.tracker.as_mut()?;
        Some((
            tracker,
            Io { buffers: &mut self.buffers, backend: &mut *self.ex.backend, recorder: &mut self.recorder, at },
        ))
    }

    /// The tracker, when it intercepts host accesses itself (a program with its own transfers in a
    /// residency session: it has no hooks).
    fn intercepting(&mut self, at: At<'a>) -> Option<(&mut Tracker, Io<'_, 'a>)> {
        self.tracked(at).filter(|(tracker, _)| tracker.policy() == Policy::Explicit)
    }

    /// Makes the host copy of `id` current, when the run tracks it.
    pub(super) fn bring_home(&mut self, id: BufferId, at: At<'a>) -> Result<(), RuntimeError> {
        match self.tracked(at) {
            Some((tracker, mut io)) => tracker.bring_home(&mut io, id),
            None => Ok(()),
        }
    }

    /// Before a host access of `id` (in a residency session's explicit mode; nothing otherwise).
    fn host_access(&mut self, id: BufferId, range: Option<(i64, i64)>, access: HostAccess, at: At<'a>) -> Res<()> {
        if let Some((tracker, mut io)) = self.intercepting(at) {
            tracker.before_host_access(&mut io, id, range, access)?;
        }
        Ok(())
    }

    /// After the host wrote `id` (in a residency session's explicit mode; nothing otherwise).
    fn host_wrote(&mut self, id: BufferId, range: Option<(i64, i64)>, at: At<'a>) -> Res<()> {
        if let Some((tracker, mut io)) = self.intercepting(at) {
            tracker.after_host_write(&mut io, id, range)?;
        }
        Ok(())
    }

    fn at(&self, op: Op) -> At<'a> {
        At { op: self.ctx.name_str(op), location: self.ctx.location(op) }
    }

    fn unsupported(&self, op: Op, message: impl Into<String>) -> Box<RuntimeError> {
        Box::new(RuntimeError::Unsupported {
            op: self.ctx.name_str(op).to_string(),
            message: message.into(),
            location: self.ctx.location(op),
        })
    }

    // ----- functions -----------------------------------------------------------------------

    /// The compiled function `index`, compiled now if this is its first call.
    fn function(&mut self, index: u32) -> Res<Rc<Function>> {
        let functions = &mut self.ex.functions;
        if let Some(function) = &functions.compiled[index as usize] {
            return Ok(function.clone());
        }
        let op = functions.ops[index as usize];
        let function = Rc::new(compile::compile(self.ctx, functions, op)?);
        functions.compiled[index as usize] = Some(function.clone());
        Ok(function)
    }

    /// Calls the entry `func` (function `index`) with `args`; the function and its results.
    pub(super) fn call_entry(&mut self, index: u32, func: Op, args: &[Scalar]) -> Res<(Rc<Function>, Vec<Scalar>)> {
        let function = self.function(index)?;
        if args.len() != function.params as usize {
            return Err(self.unsupported(
                func,
                format!(
                    "'@{}' has {} parameters in its body, {} in its signature",
                    function.name,
                    function.params,
                    args.len()
                ),
            ));
        }
        let mut frame = vec![Scalar::Int(0); function.slots as usize];
        frame[..args.len()].copy_from_slice(args);
        self.enter(&function, func)?;
        self.open_arena(&function);
        let outcome = stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.run_code(&mut frame, &function.body));
        self.calls -= 1;
        outcome?;
        self.close_arena(func)?;
        let results = function.body.exits.iter().map(|&s| frame[s as usize]).collect();
        Ok((function, results))
    }

    /// Opens the arena of a call of `function`, if `plan-memory` gave it one.
    fn open_arena(&mut self, function: &Function) {
        let fixed = function.arena_bytes.map(|bytes| self.buffers.new_arena(bytes));
        self.arenas.push(CallArenas { fixed, planned: None, slots: Vec::new(), replaced: Vec::new() });
    }

    /// Frees the arenas of the call that ends (`at`: the call, for errors).
    fn close_arena(&mut self, at: Op) -> Res<()> {
        let Some(call) = self.arenas.pop() else { return Ok(()) };
        for arena in call.fixed.into_iter().chain(call.planned).chain(call.replaced) {
            self.buffers
                .free_arena(arena, self.ex.backend, &mut self.recorder)
                .map_err(|e| Box::new(e.at(self.ctx.location(at))))?;
        }
        Ok(())
    }

    /// `buffer.arena`: packs the slots by their sizes now known, as `plan-memory` packs them
    /// when they are known before, and opens an arena of the size the packing needs. A second
    /// one in the same call (in a loop) opens another; the earlier one lives to the call's end,
    /// for the buffers already placed in it.
    #[inline(never)]
    fn plan_arena(&mut self, frame: &[Scalar], arena: &ArenaInst) -> Res<()> {
        let mut sizes = Vec::with_capacity(arena.sizes.len());
        for &slot in arena.sizes.iter() {
            let size = frame[slot as usize].as_i64();
            let size =
                u64::try_from(size).map_err(|_| self.unsupported(arena.op, format!("slot size {size} is negative")))?;
            sizes.push(size);
        }
        let packing =
            hat_dialects::buffer::packing::pack(&sizes, &arena.live_sets, hat_dialects::buffer::ARENA_ALIGNMENT);
        let bytes = usize::try_from(packing.size)
            .map_err(|_| self.unsupported(arena.op, format!("an arena of {} bytes", packing.size)))?;
        let id = self.buffers.new_arena(bytes);
        let call = self.arenas.last_mut().expect("a call is running");
        if let Some(earlier) = call.planned.replace(id) {
            call.replaced.push(earlier);
        }
        call.slots = packing.offsets.iter().map(|&o| o as usize).collect();
        Ok(())
    }

    /// Counts one more call of `function` by `call`, or fails past the limit.
    fn enter(&mut self, function: &Function, call: Op) -> Res<()> {
        if self.calls >= self.ex.recursion_limit {
            return fail(RuntimeError::RecursionLimit {
                limit: self.ex.recursion_limit,
                function: function.name.clone(),
                location: self.ctx.location(call),
            });
        }
        self.calls += 1;
        Ok(())
    }

    #[inline(never)]
    fn call(&mut self, frame: &mut [Scalar], call: &CallInst) -> Res<()> {
        if stack_is_low() {
            return stacker::grow(STACK_SEGMENT, || self.call(frame, call));
        }
        let function = self.function(call.callee)?;
        // The verifier checks this for the calls it knows; another dialect's call may disagree
        // with its callee.
        if call.arguments.len() != function.params as usize || call.results.len() != function.body.exits.len() {
            return Err(self.mismatched_call(call, &function));
        }
        self.enter(&function, call.op)?;
        let mut callee = self.frames.pop().unwrap_or_default();
        callee.clear();
        callee.resize(function.slots as usize, Scalar::Int(0));
        for (index, &argument) in call.arguments.iter().enumerate() {
            callee[index] = frame[argument as usize];
        }
        self.open_arena(&function);
        let outcome = self.run_code(&mut callee, &function.body);
        self.calls -= 1;
        outcome?;
        self.close_arena(call.op)?;
        for (&result, &exit) in call.results.iter().zip(function.body.exits.iter()) {
            frame[result as usize] = callee[exit as usize];
        }
        for (&result, _) in call.results.iter().zip(function.buffer_results.iter()).filter(|(_, &buffer)| buffer) {
            self.buffers.return_to_caller(buffer_id(frame[result as usize]), self.calls + 1);
        }
        self.frames.push(callee);
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn mismatched_call(&self, call: &CallInst, function: &Function) -> Box<RuntimeError> {
        self.unsupported(
            call.op,
            format!(
                "passes {} arguments and takes {} results, but '@{}' has {} parameters and returns {} values",
                call.arguments.len(),
                call.results.len(),
                function.name,
                function.params,
                function.body.exits.len()
            ),
        )
    }

    // ----- code ----------------------------------------------------------------------------

    /// Runs the instructions of `code` in `frame`.
    fn run_code(&mut self, frame: &mut [Scalar], code: &Code) -> Res<()> {
        for inst in code.insts.iter() {
            match inst {
                Inst::Scalar { inst, op } => {
                    if let Err(failure) = inst.run(frame) {
                        return Err(self.scalar_error(failure, *op));
                    }
                }
                Inst::Loop(looping) => self.run_loop(frame, looping)?,
                Inst::Branch(branch) => self.run_branch(frame, branch)?,
                Inst::Call(call) => self.call(frame, call)?,
                Inst::HostCall(call) => self.host_call(frame, call)?,
                Inst::Dispatch(dispatch) => self.dispatch(frame, dispatch)?,
                Inst::Sync => self.sync()?,
                Inst::Alloc(alloc) => self.alloc(frame, alloc)?,
                Inst::Arena(arena) => self.plan_arena(frame, arena)?,
                Inst::Dealloc { buffer, op } => self.dealloc(frame, *buffer, *op)?,
                Inst::Release { buffer, op } => self.release(frame, *buffer, *op)?,
                Inst::Load { dst, buffer, indices, op } => self.load(frame, *dst, *buffer, indices, *op)?,
                Inst::Store { value, buffer, indices, op } => self.store(frame, *value, *buffer, indices, *op)?,
                Inst::Dim { dst, buffer, dimension, op } => self.dim(frame, *dst, *buffer, *dimension, *op)?,
                Inst::Copy { source, destination, op } => self.copy(frame, *source, *destination, *op)?,
                Inst::Transfer { direction, buffer, range, op } => {
                    self.transfer(frame, Some(*direction), *buffer, *range, *op)?
                }
                Inst::Hook { hook, buffer, range, op } => {
                    match self.tracker {
                        None => self.transfer(frame, None, *buffer, *range, *op)?,
                        Some(_) => self.tracked_hook(frame, *hook, *buffer, *range, *op)?,
                    }
                    self.recorder.count_hook(*hook);
                }
            }
        }
        Ok(())
    }

    /// A hook when the run tracks its buffers. A range outside the buffer (an access out of
    /// bounds, flattened) is left to the access itself, which reports it as it would untracked.
    #[inline(never)]
    fn tracked_hook(
        &mut self,
        frame: &mut [Scalar],
        hook: HostHook,
        buffer: Slot,
        range: Option<(Slot, Slot)>,
        op: Op,
    ) -> Res<()> {
        let range = range.map(|(o, c)| (frame[o as usize].as_i64(), frame[c as usize].as_i64()));
        let id = buffer_id(frame[buffer as usize]);
        let at = self.at(op);
        match self.buffers.byte_range(id, range, at) {
            Err(RuntimeError::RangeOutOfBounds { .. }) => return Ok(()),
            checked => checked?,
        };
        let every_element = annotations::must_write(self.ctx, op);
        if let Some((tracker, mut io)) = self.tracked(at) {
            tracker.hook(&mut io, hook, id, range, every_element)?;
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn scalar_error(&self, failure: ScalarFailure, op: Op) -> Box<RuntimeError> {
        let ScalarFailure { scalar, message } = failure;
        if scalar.can_fail() {
            let name = self.ctx.name_str(op);
            Box::new(RuntimeError::Arithmetic {
                message: format!("'{name}': {message}"),
                location: self.ctx.location(op),
            })
        } else {
            self.unsupported(op, message)
        }
    }

    /// A counted loop.
    #[inline(never)]
    fn run_loop(&mut self, frame: &mut [Scalar], looping: &LoopInst) -> Res<()> {
        if stack_is_low() {
            return stacker::grow(STACK_SEGMENT, || self.run_loop(frame, looping));
        }
        let lower = frame[looping.slots.lower as usize].as_i64();
        let upper = frame[looping.slots.upper as usize].as_i64();
        let step = frame[looping.slots.step as usize].as_i64();
        if let Some(message) = counted_loop::step_error(self.ctx.name_str(looping.op), lower, upper, step) {
            return fail(RuntimeError::Arithmetic { message, location: self.ctx.location(looping.op) });
        }
        for (&target, &source) in looping.slots.iter_args.iter().zip(looping.slots.inits.iter()) {
            frame[target as usize] = frame[source as usize];
        }
        let yields = &looping.body.exits;
        let mut i = lower;
        while i < upper {
            frame[looping.slots.induction as usize] = Scalar::Int(i);
            self.run_code(frame, &looping.body)?;
            move_values(frame, yields, &looping.slots.iter_args);
            match counted_loop::next(i, step, upper, looping.slots.ty) {
                Some(next) => i = next,
                None => break,
            }
        }
        for (&result, &carried) in looping.slots.results.iter().zip(looping.slots.iter_args.iter()) {
            frame[result as usize] = frame[carried as usize];
        }
        Ok(())
    }

    /// An op with regions, hop by hop as its interface says.
    #[inline(never)]
    fn run_branch(&mut self, frame: &mut [Scalar], branch: &BranchInst) -> Res<()> {
        if stack_is_low() {
            return stacker::grow(STACK_SEGMENT, || self.run_branch(frame, branch));
        }
        let (mut hop, mut from) = (&branch.entry, RegionPoint::Parent);
        loop {
            let edge = match hop.edge(frame) {
                Ok(edge) => edge,
                Err((edges, deciders)) => self.ask_hop(frame, branch, edges, deciders, from)?,
            };
            move_values(frame, &edge.sources, &edge.targets);
            let Target::Region(position) = edge.to else { return Ok(()) };
            let region = &branch.regions[position];
            self.run_code(frame, &region.code)?;
            (hop, from) = (&region.exit, RegionPoint::Region(region.index));
        }
    }

    /// The edge from `from` that the op's interface chooses among `edges`, asked with the
    /// run-time integers of the deciding values (`deciders`: a hop no single `i1` decides, a
    /// multi-way switch).
    #[cold]
    #[inline(never)]
    fn ask_hop<'b>(
        &self,
        frame: &[Scalar],
        branch: &BranchInst,
        edges: &'b [(RegionPoint, Edge)],
        deciders: &[Option<Slot>],
        from: RegionPoint,
    ) -> Res<&'b Edge> {
        let constants: SmallVec<[Option<i64>; 8]> =
            deciders.iter().map(|slot| slot.map(|slot| frame[slot as usize].as_i64())).collect();
        let successors = branch.branches.successors(self.ctx, branch.op, from, &constants);
        let [to] = successors[..] else {
            return Err(self.unsupported(
                branch.op,
                format!(
                    "its region-branch interface gives {} successors of {from:?} for known operands, not one",
                    successors.len()
                ),
            ));
        };
        edges.iter().find(|(point, _)| *point == to).map(|(_, edge)| edge).ok_or_else(|| {
            self.unsupported(
                branch.op,
                format!("its region-branch interface goes {from:?} -> {to:?}, which it did not list"),
            )
        })
    }

    // ----- host functions ------------------------------------------------------------------

    #[inline(never)]
    fn host_call(&mut self, frame: &mut [Scalar], call: &HostCallInst) -> Res<()> {
        let ctx = self.ctx;
        let location = ctx.location(call.op);
        let at = self.at(call.op);
        let name = call.name.as_str();
        let failed = |message: String| RuntimeError::HostFunctionFailed { name: name.to_string(), message, location };
        let Some(registered) = self.ex.host_functions.get(name) else {
            return fail(RuntimeError::UnknownHostFunction { name: name.to_string(), location });
        };
        if let Some(registered) = &registered.effects {
            if registered[..] != call.effects[..] {
                let words = |e: &[ArgEffect]| e.iter().map(|e| e.keyword()).collect::<Vec<_>>().join(", ");
                return fail(failed(format!(
                    "the program declares its arguments ({}), but it was registered as ({})",
                    words(&call.effects),
                    words(registered)
                )));
            }
        }

        // Check every buffer before taking any out, so that nothing is left taken on error.
        for argument in call.arguments.iter() {
            if let ArgSlot::Buffer(slot) = argument {
                self.buffers.layout(buffer_id(frame[*slot as usize]), at)?;
            }
        }
        // In a residency session, each buffer's host copy must be current where the function reads
        // it or may leave it unwritten.
        if self.tracker.is_some() {
            for (argument, &effect) in call.arguments.iter().zip(call.effects.iter()) {
                if let ArgSlot::Buffer(slot) = argument {
                    let access = if effect == ArgEffect::Read { HostAccess::Read } else { HostAccess::MayWrite };
                    self.host_access(buffer_id(frame[*slot as usize]), None, access, at)?;
                }
            }
        }
        if self.trace.is_some() {
            self.trace_host_call(frame, call, at)?;
        }
        let mut host_call = HostCall::new(name, location, call.result_types.clone());
        let mut views: Vec<BufferId> = Vec::new();
        for (argument, &effect) in call.arguments.iter().zip(call.effects.iter()) {
            match *argument {
                ArgSlot::Scalar(slot, ty) => host_call.push_scalar(frame[slot as usize], ty),
                ArgSlot::Buffer(slot) => {
                    let id = buffer_id(frame[slot as usize]);
                    match views.iter().position(|&v| v == id) {
                        Some(view) => host_call.push_same_buffer(view, effect),
                        None => {
                            let buffer = self.buffers.take_host(id, at, self.ex.backend, &mut self.recorder)?;
                            views.push(id);
                            host_call.push_new_buffer(buffer, effect);
                        }
                    }
                }
            }
        }

        self.recorder.host_call();
        let registered = self.ex.host_functions.get_mut(name).expect("looked up above");
        let outcome = (registered.function)(&mut host_call);

        // Put every view back, whatever happened; a view whose size changed is an error (its
        // host copy is then padded or cut back to size).
        let mut resized = None;
        for (id, view) in views.into_iter().zip(host_call.into_views()) {
            let layout = self.buffers.layout(id, at)?.clone();
            let mut bytes = view.bytes;
            if view.layout != layout || bytes.len() != layout.bytes() {
                resized.get_or_insert_with(|| {
                    format!("changed the layout or size of a buffer argument of shape {:?}", layout.shape)
                });
                bytes.resize(layout.bytes(), 0);
            }
            self.buffers.put_host(id, bytes);
        }
        if self.tracker.is_some() {
            for (argument, &effect) in call.arguments.iter().zip(call.effects.iter()) {
                if let (ArgSlot::Buffer(slot), ArgEffect::Write | ArgEffect::ReadWrite) = (argument, effect) {
                    self.host_wrote(buffer_id(frame[*slot as usize]), None, at)?;
                }
            }
        }
        let values = outcome.map_err(failed)?;
        if let Some(message) = resized {
            return fail(failed(message));
        }
        if values.len() != call.result_types.len() {
            return fail(failed(format!(
                "returned {} values, but the call expects {}",
                values.len(),
                call.result_types.len()
            )));
        }
        for ((value, &ty), &result) in values.into_iter().zip(call.result_types.iter()).zip(call.results.iter()) {
            match (value, ty.is_float()) {
                (Scalar::Int(_), false) | (Scalar::Float(_), true) => {
                    frame[result as usize] = eval::normalize(value, ty)
                }
                _ => return fail(failed(format!("returned {value:?} for a result of type {}", eval::type_name(ty)))),
            }
        }
        Ok(())
    }

    // ----- the device ----------------------------------------------------------------------

    /// The backend's kernel `index`, compiled on its first dispatch: from the artifact in the form
    /// the backend asks for (the module is lowered to SPIR-V once, on the first kernel that needs
    /// it).
    fn kernel(&mut self, index: u32, op: Op) -> Res<Rc<CompiledKernel>> {
        let (kernel, compiled) = &self.ex.functions.kernels[index as usize];
        if let Some(compiled) = compiled {
            return Ok(Rc::clone(compiled));
        }
        let kernel = *kernel;
        let location = self.ctx.location(op);
        let verified = self
            .ex
            .module
            .nested(kernel)
            .ok_or_else(|| self.unsupported(op, "launches a kernel outside the module"))?;
        if self.ex.functions.lowered.is_none() {
            let lowered = self.ex.backend.lower(self.ex.module).map_err(|e| e.at(location))?;
            self.ex.functions.lowered = Some(lowered);
        }
        let module = self.ex.functions.lowered.as_ref().and_then(Option::as_ref);
        let artifact = KernelArtifact::new(verified, module);
        let handle = self.ex.backend.compile(&artifact).map_err(|e| e.at(location))?;
        let access = artifact.parameter_access();
        let compiled = Rc::new(CompiledKernel { handle, access });
        self.ex.functions.kernels[index as usize].1 = Some(Rc::clone(&compiled));
        Ok(compiled)
    }

    #[inline(never)]
    fn dispatch(&mut self, frame: &mut [Scalar], dispatch: &DispatchInst) -> Res<()> {
        let ctx = self.ctx;
        let op = dispatch.op;
        let location = ctx.location(op);
        let at = self.at(op);
        let mut grid = [1u64; 3];
        for (dimension, &slot) in dispatch.grid.iter().enumerate() {
            let size = frame[slot as usize].as_i64();
            grid[dimension] = u64::try_from(size)
                .map_err(|_| self.unsupported(op, format!("grid size {size} (dimension {dimension}) is negative")))?;
        }
        let limit = self.ex.backend.max_work_items();
        let work_items = grid.iter().try_fold(1u64, |total, &size| total.checked_mul(size));
        if work_items.is_none_or(|items| items > limit) {
            return fail(RuntimeError::GridTooLarge {
                kernel: dispatch.name.clone(),
                grid,
                work_items,
                limit,
                location,
            });
        }
        let kernel = self.kernel(dispatch.kernel, op)?;

        let mut buffers: SmallVec<[BufferId; 8]> = SmallVec::new();
        for argument in dispatch.arguments.iter() {
            if let ArgSlot::Buffer(slot) = argument {
                let id = buffer_id(frame[*slot as usize]);
                self.buffers.layout(id, at)?;
                if !buffers.contains(&id) {
                    buffers.push(id);
                }
            }
        }
        let tracked_buffers: SmallVec<[(usize, BufferId); 8]> = match self.tracker {
            Some(_) => dispatch
                .arguments
                .iter()
                .enumerate()
                .filter_map(|(index, a)| match a {
                    ArgSlot::Buffer(slot) => Some((index, buffer_id(frame[*slot as usize]))),
                    ArgSlot::Scalar(..) => None,
                })
                .collect(),
            None => SmallVec::new(),
        };
        let count = dispatch.arguments.len();
        if let Some((tracker, mut io)) = self.tracked(at) {
            tracker.before_dispatch(&mut io, ctx, op, count, &tracked_buffers)?;
        }
        let reference = self.ex.options.mode == TransferMode::Reference;
        if reference {
            for &id in &buffers {
                self.buffers.transfer(Direction::ToDevice, id, None, at, self.ex.backend, &mut self.recorder)?;
            }
        }
        // The arguments' types were checked against the kernel's when the dispatch was compiled;
        // what they leave open is checked here. Backends trust them.
        for check in dispatch.extent_checks.iter() {
            if let ArgSlot::Buffer(slot) = dispatch.arguments[check.argument] {
                check
                    .check(self.buffers.layout(buffer_id(frame[slot as usize]), at)?)
                    .map_err(|e| e.at(at.location))?;
            }
        }
        let mut kernel_args: SmallVec<[KernelArg; 8]> = SmallVec::with_capacity(dispatch.arguments.len());
        let mut uses: SmallVec<[Use; 8]> = SmallVec::new();
        for (parameter, argument) in dispatch.arguments.iter().enumerate() {
            kernel_args.push(match *argument {
                ArgSlot::Buffer(slot) => {
                    let id = buffer_id(frame[slot as usize]);
                    let (read, write) = kernel.access.get(parameter).copied().unwrap_or((true, true));
                    match uses.iter_mut().find(|u| u.buffer == id) {
                        Some(usage) => {
                            usage.read |= read;
                            usage.write |= write;
                        }
                        None => uses.push(Use { buffer: id, read, write }),
                    }
                    KernelArg::Buffer(self.buffers.device(id, at, self.ex.backend, &mut self.recorder)?)
                }
                ArgSlot::Scalar(slot, ty) => KernelArg::Scalar(frame[slot as usize], ty),
            });
        }
        let start = Instant::now();
        let slot = self.recorder.kernel_slot(&dispatch.name);
        self.buffers.dispatch(
            kernel.handle,
            slot,
            grid,
            &kernel_args,
            &uses,
            at,
            self.ex.backend,
            &mut self.recorder,
        )?;
        self.recorder.dispatch(slot, start.elapsed());
        if self.trace.is_some() {
            self.trace_dispatch(&buffers, &kernel_args, dispatch, frame, at)?;
        }
        if let Some((tracker, mut io)) = self.tracked(at) {
            tracker.after_dispatch(&mut io, ctx, op, count, &tracked_buffers)?;
        }
        if reference {
            for &id in &buffers {
                self.buffers.transfer(Direction::FromDevice, id, None, at, self.ex.backend, &mut self.recorder)?;
            }
        }
        Ok(())
    }

    /// `compute.sync`: waits for everything recorded (and lands the reads).
    #[inline(never)]
    fn sync(&mut self) -> Res<()> {
        let at = At { op: "compute.sync", location: hat_ir::Location::UNKNOWN };
        self.buffers.flush(at, self.ex.backend, &mut self.recorder)?;
        self.recorder.sync();
        Ok(())
    }

    // ----- buffers -------------------------------------------------------------------------

    #[inline(never)]
    fn alloc(&mut self, frame: &mut [Scalar], alloc: &AllocInst) -> Res<()> {
        let mut sizes = alloc.sizes.iter();
        let mut shape = Vec::with_capacity(alloc.shape.len());
        for extent in alloc.shape.iter() {
            shape.push(match extent {
                Some(extent) => *extent,
                None => {
                    let size = sizes.next().map_or(0, |&s| frame[s as usize].as_i64());
                    usize::try_from(size).map_err(|_| self.unsupported(alloc.op, format!("size {size} is negative")))?
                }
            });
        }
        let layout = BufferLayout { element: alloc.element, shape };
        if layout.shape.iter().try_fold(layout.element.size(), |total, &d| total.checked_mul(d)).is_none() {
            return Err(self.unsupported(
                alloc.op,
                format!(
                    "a buffer of shape {:?} and element type {} has more bytes than the host can address",
                    layout.shape,
                    eval::type_name(layout.element)
                ),
            ));
        }
        let slot = self.recorder.buffer_slot(&alloc.name);
        if let Some(trace) = &mut self.trace {
            let id = BufferId(self.buffers.next_id());
            trace.add(id, &alloc.name, &layout, Origin::Fresh);
        }
        let placement = self.arenas.last().and_then(|call| match (alloc.arena_offset, alloc.arena_slot) {
            (Some(offset), _) => call.fixed.map(|arena| (arena, offset)),
            (None, Some(slot)) => call.planned.zip(call.slots.get(slot).copied()),
            (None, None) => None,
        });
        let id = self.buffers.allocate(layout, slot, self.calls, placement);
        frame[alloc.dst as usize] = handle(id);
        Ok(())
    }

    #[inline(never)]
    fn dealloc(&mut self, frame: &mut [Scalar], buffer: Slot, op: Op) -> Res<()> {
        let id = buffer_id(frame[buffer as usize]);
        self.buffers.deallocate(id, self.at(op), self.ex.backend, &mut self.recorder)?;
        if let Some(tracker) = &mut self.tracker {
            tracker.forget(id);
        }
        Ok(())
    }

    #[inline(never)]
    fn release(&mut self, frame: &mut [Scalar], buffer: Slot, op: Op) -> Res<()> {
        let id = buffer_id(frame[buffer as usize]);
        let freed = self.buffers.release(id, self.calls, self.at(op), self.ex.backend, &mut self.recorder)?;
        if freed {
            if let Some(tracker) = &mut self.tracker {
                tracker.forget(id);
            }
        }
        Ok(())
    }

    #[inline(never)]
    fn load(&mut self, frame: &mut [Scalar], dst: Slot, buffer: Slot, indices: &[Slot], op: Op) -> Res<()> {
        let id = buffer_id(frame[buffer as usize]);
        let (offset, element) = self.host_element(frame, op, id, indices)?;
        if self.tracker.is_some() {
            let flat = (offset / element.size()) as i64;
            self.host_access(id, Some((flat, 1)), HostAccess::Read, self.at(op))?;
        }
        if self.trace.is_some() {
            self.trace_element(id, (offset / element.size()) as u64, false, op)?;
        }
        let bytes = Some(offset..offset + element.size());
        let host = self.buffers.host_bytes(id, bytes, self.at(op), self.ex.backend, &mut self.recorder)?;
        frame[dst as usize] = element.read(&host[offset..offset + element.size()]);
        Ok(())
    }

    #[inline(never)]
    fn store(&mut self, frame: &mut [Scalar], value: Slot, buffer: Slot, indices: &[Slot], op: Op) -> Res<()> {
        let id = buffer_id(frame[buffer as usize]);
        let (offset, element) = self.host_element(frame, op, id, indices)?;
        let flat = (offset / element.size()) as i64;
        if self.tracker.is_some() {
            self.host_access(id, Some((flat, 1)), HostAccess::MustWrite, self.at(op))?;
        }
        if self.trace.is_some() {
            self.trace_element(id, flat as u64, true, op)?;
        }
        let bytes = Some(offset..offset + element.size());
        let host = self.buffers.host_bytes(id, bytes, self.at(op), self.ex.backend, &mut self.recorder)?;
        element.write(frame[value as usize], &mut host[offset..offset + element.size()]);
        if self.tracker.is_some() {
            self.host_wrote(id, Some((flat, 1)), self.at(op))?;
        }
        Ok(())
    }

    #[inline(never)]
    fn dim(&mut self, frame: &mut [Scalar], dst: Slot, buffer: Slot, dimension: usize, op: Op) -> Res<()> {
        let shape = &self.buffers.layout(buffer_id(frame[buffer as usize]), self.at(op))?.shape;
        let extent = shape.get(dimension).copied().ok_or_else(|| {
            self.unsupported(op, format!("dimension {dimension} of a buffer of rank {}", shape.len()))
        })?;
        frame[dst as usize] = Scalar::Int(extent as i64);
        Ok(())
    }

    /// `buffer.copy`: host copy to host copy.
    #[inline(never)]
    fn copy(&mut self, frame: &mut [Scalar], source: Slot, destination: Slot, op: Op) -> Res<()> {
        let (source, destination) = (buffer_id(frame[source as usize]), buffer_id(frame[destination as usize]));
        let at = self.at(op);
        let (from, to) = (self.buffers.layout(source, at)?.clone(), self.buffers.layout(destination, at)?.clone());
        if from != to {
            return Err(self.unsupported(
                op,
                format!("copies a buffer of shape {:?} into one of shape {:?}", from.shape, to.shape),
            ));
        }
        if self.tracker.is_some() {
            self.host_access(source, None, HostAccess::Read, at)?;
            self.host_access(destination, None, HostAccess::MustWrite, at)?;
        }
        if let Some(trace) = &mut self.trace {
            // A copy onto itself changes nothing: it only reads.
            let writes: &[(BufferId, &BufferLayout)] = if source != destination { &[(destination, &to)] } else { &[] };
            trace.host_whole(&[(source, &from)], writes);
        }
        if source != destination {
            let data = self.buffers.host(source, at, self.ex.backend, &mut self.recorder)?.clone();
            self.buffers.host(destination, at, self.ex.backend, &mut self.recorder)?.copy_from_slice(&data);
        }
        if self.tracker.is_some() {
            self.host_wrote(destination, None, at)?;
        }
        Ok(())
    }

    /// A transfer (`direction`): a copy in explicit mode (in a residency session, only where its
    /// effect is not there already); in reference and tracking modes, and for a hook (no
    /// direction), nothing but the check of the range.
    #[inline(never)]
    fn transfer(
        &mut self,
        frame: &mut [Scalar],
        direction: Option<Direction>,
        buffer: Slot,
        range: Option<(Slot, Slot)>,
        op: Op,
    ) -> Res<()> {
        let id = buffer_id(frame[buffer as usize]);
        let range = range.map(|(o, c)| (frame[o as usize].as_i64(), frame[c as usize].as_i64()));
        let at = self.at(op);
        match (self.ex.options.mode, direction) {
            (TransferMode::Explicit, Some(direction)) => match self.tracked(at) {
                // In a residency session: only where the copy's effect is not there already.
                Some((tracker, mut io)) => {
                    io.buffers.byte_range(id, range, at)?;
                    tracker.transfer(&mut io, direction, id, range)?
                }
                None => self.buffers.transfer(direction, id, range, at, self.ex.backend, &mut self.recorder)?,
            },
            _ => self.buffers.byte_range(id, range, at).map(drop)?,
        }
        Ok(())
    }

    // ----- the trace for the clairvoyant optimum -------------------------------------------

    /// A host load (`write` false) or store of element `flat` of `id`.
    #[cold]
    fn trace_element(&mut self, id: BufferId, flat: u64, write: bool, op: Op) -> Res<()> {
        let layout = self.buffers.layout(id, self.at(op))?.clone();
        if let Some(trace) = &mut self.trace {
            trace.host_element(id, &layout, flat, write);
        }
        Ok(())
    }

    /// A host-function call: each distinct buffer argument by its declared effects.
    #[cold]
    fn trace_host_call(&mut self, frame: &[Scalar], call: &HostCallInst, at: At<'a>) -> Res<()> {
        let mut seen: SmallVec<[(BufferId, bool, bool); 8]> = SmallVec::new();
        for (argument, &effect) in call.arguments.iter().zip(call.effects.iter()) {
            if let ArgSlot::Buffer(slot) = argument {
                let id = buffer_id(frame[*slot as usize]);
                let (read, write) = effect_accesses(effect);
                match seen.iter_mut().find(|(b, _, _)| *b == id) {
                    Some(entry) => {
                        entry.1 |= read;
                        entry.2 |= write;
                    }
                    None => seen.push((id, read, write)),
                }
            }
        }
        let layouts =
            seen.iter().map(|&(id, _, _)| self.buffers.layout(id, at).cloned()).collect::<Result<Vec<_>, _>>()?;
        let reads: Vec<(BufferId, &BufferLayout)> =
            seen.iter().zip(&layouts).filter(|(s, _)| s.1).map(|(s, l)| (s.0, l)).collect();
        let writes: Vec<(BufferId, &BufferLayout)> =
            seen.iter().zip(&layouts).filter(|(s, _)| s.2).map(|(s, l)| (s.0, l)).collect();
        if let Some(trace) = &mut self.trace {
            trace.host_whole(&reads, &writes);
        }
        Ok(())
    }

    /// A dispatch: what the backend recorded of its element accesses.
    #[cold]
    fn trace_dispatch(
        &mut self,
        buffers: &[BufferId],
        kernel_args: &[KernelArg],
        dispatch: &DispatchInst,
        frame: &[Scalar],
        at: At<'a>,
    ) -> Res<()> {
        let Some(accesses) = self.ex.backend.take_dispatch_accesses() else {
            return Err(self.unsupported(
                dispatch.op,
                format!(
                    "the run is traced for the clairvoyant optimum, but the backend '{}' does not record the \
                     element accesses of dispatches (the CPU backend does with set_record_accesses)",
                    self.ex.backend.name()
                ),
            ));
        };
        let mut devices: SmallVec<[(BufferId, crate::backend::DeviceBuffer); 8]> = SmallVec::new();
        for (argument, kernel_arg) in dispatch.arguments.iter().zip(kernel_args) {
            if let (ArgSlot::Buffer(slot), KernelArg::Buffer(device)) = (argument, kernel_arg) {
                devices.push((buffer_id(frame[*slot as usize]), *device));
            }
        }
        let layouts = buffers.iter().map(|&id| self.buffers.layout(id, at).cloned()).collect::<Result<Vec<_>, _>>()?;
        let list: Vec<(BufferId, &BufferLayout, crate::backend::DeviceBuffer)> = buffers
            .iter()
            .zip(&layouts)
            .filter_map(|(&id, layout)| devices.iter().find(|(b, _)| *b == id).map(|&(_, device)| (id, layout, device)))
            .collect();
        if let Some(trace) = &mut self.trace {
            trace.dispatch(accesses, &list);
        }
        Ok(())
    }

    /// The byte offset and the element type of the element of buffer `id` that `indices` name,
    /// or [`RuntimeError::HostOutOfBounds`].
    fn host_element(
        &self,
        frame: &[Scalar],
        op: Op,
        id: BufferId,
        indices: &[Slot],
    ) -> Res<(usize, crate::value::ElementType)> {
        let indices: SmallVec<[i64; 4]> = indices.iter().map(|&s| frame[s as usize].as_i64()).collect();
        let layout = self.buffers.layout(id, self.at(op))?;
        match layout.flatten(&indices) {
            Some(flat) => Ok((flat * layout.element.size(), layout.element)),
            None => fail(RuntimeError::HostOutOfBounds {
                index: indices.to_vec(),
                shape: layout.shape.clone(),
                location: self.ctx.location(op),
            }),
        }
    }
}
