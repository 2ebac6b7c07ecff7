//! The interpreter of compiled kernels.
//!
//! A work item is an [`Item`]: its slots (the frames of all active functions, one after the
//! other) and an explicit control stack of [`Frame`]s (a function body, or the region of a
//! counted loop or region-branch op being run, whose op is the instruction the frame below points
//! at). Nothing lives on the Rust stack between instructions, so a work item can stop at a
//! `kernel.barrier` and be resumed later: a workgroup with barriers runs its work items in
//! lockstep, each up to the next barrier (or the end), round after round ([`run_group`]).
//!
//! Which work items exist: exactly those whose global id is below the grid in every dimension
//! (docs/lowering.md, "Which work items exist"). The last workgroup of a dimension may reach past
//! the grid. Without a barrier its work items past the grid do not run. With one they must (a
//! barrier waits for the whole workgroup, as on a GPU): they run as *padding* items, which take
//! part in barriers and workgroup memory but leave the kernel's buffer arguments alone — their
//! stores and atomics on them are skipped, their loads and atomics give zero — so that only the
//! work items inside the grid touch buffers, as the kernel-effects analysis and the SPIR-V
//! lowering assume.

use super::accesses::AccessLog;
use super::compile::{Edge, Inst, Program, Slot, Target, MAX_CALL_DEPTH};
use super::memory::Memory;
use super::races::Recorder;
use crate::error::RuntimeError;
use crate::eval;
use crate::slot_code::counted_loop;
use crate::value::Scalar;
use hat_dialects::kernel::WorkItemQuery;
use hat_ir::Location;
use std::sync::Mutex;

/// The compiler decides every hop of a kernel (`compile.rs`, `Hop`).
const UNDECIDED: &str = "a region-branch hop left to run time";

/// What a dispatch shares with every work item of one workgroup.
pub(crate) struct Env<'a> {
    pub program: &'a Program,
    /// Buffers by handle: the kernel's buffer arguments, then the workgroup's local buffers.
    pub buffers: &'a [&'a Memory],
    pub group: [u64; 3],
    pub grid: [u64; 3],
    pub num_groups: [u64; 3],
    /// The race check's records, when it is on (then workgroups run one after the other).
    pub races: Option<&'a Mutex<Recorder>>,
    /// The record of element accesses, when it is on (then workgroups run one after the other).
    pub accesses: Option<&'a Mutex<AccessLog>>,
}

/// An entry of a work item's control stack.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Frame {
    /// The instruction list being run.
    block: u32,
    /// The next instruction, or (while a nested region runs) the region's op. Only written back
    /// when the frame is left for a nested one or the work item stops.
    pc: u32,
    /// The function frame's first slot.
    base: u32,
    /// Whether this is a function body (else a region of a structured op).
    function: bool,
}

/// Why a work item stopped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// It returned from the kernel.
    Finished,
    /// It reached a `kernel.barrier` (and resumes after it).
    Barrier,
}

/// A work item's state.
#[derive(Debug)]
pub(crate) struct Item {
    slots: Vec<Scalar>,
    frames: Vec<Frame>,
    /// Helper calls being run (the function frames above the kernel's): bounded by
    /// [`MAX_CALL_DEPTH`], whatever the regions nested in each function.
    calls: usize,
    scratch: Vec<Scalar>,
    pub local: [u64; 3],
    pub global: [u64; 3],
    /// Whether the work item is past the grid (it runs only to reach barriers: see the module
    /// documentation).
    pub padding: bool,
    /// Where it waits, after [`Stop::Barrier`].
    pub barrier: Location,
}

impl Default for Item {
    fn default() -> Self {
        Item {
            slots: Vec::new(),
            frames: Vec::new(),
            calls: 0,
            scratch: Vec::new(),
            local: [0; 3],
            global: [0; 3],
            padding: false,
            barrier: Location::UNKNOWN,
        }
    }
}

impl Item {
    /// Resets the item to the start of the kernel with the given parameter values (`padding`:
    /// past the grid).
    pub fn start(&mut self, program: &Program, params: &[Scalar], local: [u64; 3], global: [u64; 3], padding: bool) {
        let entry = &program.functions[0];
        self.slots.clear();
        self.slots.resize(entry.slots as usize, Scalar::Int(0));
        self.slots[..params.len()].copy_from_slice(params);
        self.frames.clear();
        self.calls = 0;
        self.frames.push(Frame { block: entry.body, pc: 0, base: 0, function: true });
        self.local = local;
        self.global = global;
        self.padding = padding;
    }

    /// Whether an access through `handle` is skipped: the item is padding and the handle names
    /// one of the kernel's buffer arguments (which come before the workgroup's local buffers).
    #[inline]
    fn skips(&self, env: &Env<'_>, handle: Scalar) -> bool {
        self.padding
            && usize::try_from(handle.as_i64())
                .is_ok_and(|h| h < env.buffers.len().saturating_sub(env.program.locals.len()))
    }

    /// The control stack's positions, to compare where work items wait.
    pub fn same_position(&self, other: &Item) -> bool {
        self.frames == other.frames
    }

    fn error_context(&self, env: &Env<'_>) -> String {
        let [x, y, z] = self.global;
        format!("in kernel '{}', work item ({x}, {y}, {z})", env.program.name)
    }

    fn arithmetic(&self, env: &Env<'_>, message: String, location: Location) -> RuntimeError {
        RuntimeError::Arithmetic { message: format!("{message} {}", self.error_context(env)), location }
    }

    fn internal(&self, env: &Env<'_>, message: &str) -> RuntimeError {
        RuntimeError::Backend(format!("cpu backend: {message} {}", self.error_context(env)))
    }

    #[inline]
    fn buffer<'a>(&self, env: &Env<'a>, handle: Scalar) -> Result<&'a Memory, RuntimeError> {
        let handle = handle.as_i64();
        usize::try_from(handle)
            .ok()
            .and_then(|h| env.buffers.get(h).copied())
            .ok_or_else(|| self.internal(env, &format!("buffer handle {handle} is not a buffer")))
    }

    /// The flat index of `indices` in `memory`, or the out-of-bounds error.
    #[inline]
    fn flat(
        &self,
        env: &Env<'_>,
        memory: &Memory,
        indices: &[Slot],
        base: usize,
        location: Location,
    ) -> Result<usize, RuntimeError> {
        let mut flat = 0usize;
        let in_bounds = indices.len() == memory.shape.len()
            && indices.iter().zip(memory.shape.iter()).all(|(&slot, &extent)| {
                let index = self.slots[base + slot as usize].as_i64();
                if index < 0 || index as u64 >= extent as u64 {
                    return false;
                }
                flat = flat * extent + index as usize;
                true
            });
        if in_bounds {
            return Ok(flat);
        }
        Err(RuntimeError::DeviceOutOfBounds {
            kernel: env.program.name.clone(),
            work_item: self.global,
            index: indices.iter().map(|&s| self.slots[base + s as usize].as_i64()).collect(),
            shape: memory.shape.to_vec(),
            location,
        })
    }

    /// Records a load or store of element `index` of buffer `handle` for the race check.
    #[cold]
    fn record(
        &self,
        races: &Mutex<Recorder>,
        handle: Scalar,
        index: usize,
        store: bool,
        location: Location,
    ) -> Result<(), RuntimeError> {
        let handle = u32::try_from(handle.as_i64()).unwrap_or(u32::MAX);
        let mut races = races.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        races.touch(handle, index, self.global, store, location)
    }

    /// Records a load (`read`) and/or a store (`write`) of element `index` of buffer `handle`
    /// for the trace of element accesses.
    #[cold]
    fn log(accesses: &Mutex<AccessLog>, handle: Scalar, index: usize, read: bool, write: bool) {
        let handle = usize::try_from(handle.as_i64()).unwrap_or(usize::MAX);
        let mut log = accesses.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if read {
            log.load(handle, index);
        }
        if write {
            log.store(handle, index);
        }
    }

    /// Runs the work item until it finishes or reaches a barrier.
    pub fn run(&mut self, env: &Env<'_>) -> Result<Stop, RuntimeError> {
        let program = env.program;
        let Some(&top) = self.frames.last() else { return Ok(Stop::Finished) };
        let mut block: &[Inst] = &program.blocks[top.block as usize];
        let mut pc = top.pc as usize;
        let mut base = top.base as usize;

        macro_rules! slot {
            ($s:expr) => {
                self.slots[base + $s as usize]
            };
        }
        // Leaves the current frame (a finished region) and continues after its op.
        macro_rules! resume_parent {
            () => {{
                self.frames.pop();
                let parent = *self.frames.last().expect("a region frame has a parent");
                block = &program.blocks[parent.block as usize];
                pc = parent.pc as usize + 1;
                base = parent.base as usize;
            }};
        }
        // Enters a region's instruction list (the current instruction is its op).
        macro_rules! enter {
            ($target:expr) => {{
                let target = $target;
                self.frames.last_mut().expect("a running item has a frame").pc = pc as u32;
                self.frames.push(Frame { block: target, pc: 0, base: base as u32, function: false });
                block = &program.blocks[target as usize];
                pc = 0;
            }};
        }

        loop {
            match &block[pc] {
                Inst::Scalar { inst, location } => {
                    if let Err(failure) = inst.run(&mut self.slots[base..]) {
                        return Err(self.arithmetic(env, failure.message, *location));
                    }
                    pc += 1;
                }
                Inst::Id { dst, query, dimension } => {
                    let d = *dimension as usize;
                    let value = match query {
                        WorkItemQuery::GlobalId => self.global[d],
                        WorkItemQuery::LocalId => self.local[d],
                        WorkItemQuery::GroupId => env.group[d],
                        WorkItemQuery::GlobalSize => env.grid[d],
                        WorkItemQuery::LocalSize => program.workgroup[d],
                        WorkItemQuery::NumGroups => env.num_groups[d],
                    };
                    slot!(*dst) = Scalar::Int(value as i64);
                    pc += 1;
                }
                Inst::Load { dst, buffer, indices, location } => {
                    let memory = self.buffer(env, slot!(*buffer))?;
                    if self.skips(env, slot!(*buffer)) {
                        slot!(*dst) = eval::from_bits(0, memory.element);
                        pc += 1;
                        continue;
                    }
                    let index = self.flat(env, memory, indices, base, *location)?;
                    if let Some(races) = env.races {
                        self.record(races, slot!(*buffer), index, false, *location)?;
                    }
                    if let Some(accesses) = env.accesses {
                        Self::log(accesses, slot!(*buffer), index, true, false);
                    }
                    slot!(*dst) = memory.load(index);
                    pc += 1;
                }
                Inst::Store { value, buffer, indices, location } => {
                    let memory = self.buffer(env, slot!(*buffer))?;
                    if self.skips(env, slot!(*buffer)) {
                        pc += 1;
                        continue;
                    }
                    let index = self.flat(env, memory, indices, base, *location)?;
                    if let Some(races) = env.races {
                        self.record(races, slot!(*buffer), index, true, *location)?;
                    }
                    if let Some(accesses) = env.accesses {
                        Self::log(accesses, slot!(*buffer), index, false, true);
                    }
                    memory.store(index, slot!(*value));
                    pc += 1;
                }
                Inst::Dim { dst, buffer, dimension, location } => {
                    let memory = self.buffer(env, slot!(*buffer))?;
                    let Some(&extent) = memory.shape.get(*dimension as usize) else {
                        let message =
                            format!("'buffer.dim' of dimension {dimension} of a buffer of rank {}", memory.shape.len());
                        return Err(self.arithmetic(env, message, *location));
                    };
                    slot!(*dst) = Scalar::Int(extent as i64);
                    pc += 1;
                }
                Inst::Atomic { dst, op, buffer, indices, value, location } => {
                    let memory = self.buffer(env, slot!(*buffer))?;
                    if self.skips(env, slot!(*buffer)) {
                        slot!(*dst) = eval::from_bits(0, memory.element);
                        pc += 1;
                        continue;
                    }
                    let index = self.flat(env, memory, indices, base, *location)?;
                    if let Some(accesses) = env.accesses {
                        Self::log(accesses, slot!(*buffer), index, true, true);
                    }
                    let element = memory.element;
                    let operand = eval::normalize(slot!(*value), element);
                    let old = memory
                        .update(index, |old| match op {
                            None => Ok(operand),
                            Some(op) => op.apply(&[old, operand], element, element),
                        })
                        .map_err(|message| self.arithmetic(env, message, *location))?;
                    slot!(*dst) = old;
                    pc += 1;
                }
                Inst::LocalAlloc { dst, handle } => {
                    slot!(*dst) = Scalar::Int(*handle as i64);
                    pc += 1;
                }
                Inst::Barrier { location } => {
                    pc += 1;
                    self.frames.last_mut().expect("a running item has a frame").pc = pc as u32;
                    self.barrier = *location;
                    return Ok(Stop::Barrier);
                }
                Inst::Call(call) => {
                    if self.calls >= MAX_CALL_DEPTH {
                        let message = format!(
                            "helper calls nest deeper than {MAX_CALL_DEPTH} (unbounded recursion?) {}",
                            self.error_context(env)
                        );
                        let location = call.location;
                        return Err(RuntimeError::Unsupported { op: call.name.to_string(), message, location });
                    }
                    let function = &program.functions[call.function as usize];
                    let callee_base = self.slots.len();
                    self.slots.resize(callee_base + function.slots as usize, Scalar::Int(0));
                    for (i, &argument) in call.arguments.iter().enumerate().take(function.params as usize) {
                        self.slots[callee_base + i] = slot!(argument);
                    }
                    self.frames.last_mut().expect("a running item has a frame").pc = pc as u32;
                    self.frames.push(Frame { block: function.body, pc: 0, base: callee_base as u32, function: true });
                    self.calls += 1;
                    block = &program.blocks[function.body as usize];
                    pc = 0;
                    base = callee_base;
                }
                Inst::Return { values } => {
                    self.scratch.clear();
                    for &value in values.iter() {
                        self.scratch.push(slot!(value));
                    }
                    while let Some(frame) = self.frames.pop() {
                        if frame.function {
                            break;
                        }
                    }
                    let Some(&caller) = self.frames.last() else { return Ok(Stop::Finished) };
                    self.calls -= 1;
                    self.slots.truncate(base);
                    let Inst::Call(call) = &program.blocks[caller.block as usize][caller.pc as usize] else {
                        return Err(self.internal(env, "a helper returned to something other than a call"));
                    };
                    block = &program.blocks[caller.block as usize];
                    pc = caller.pc as usize + 1;
                    base = caller.base as usize;
                    for (&result, &value) in call.results.iter().zip(&self.scratch) {
                        slot!(result) = value;
                    }
                }
                Inst::Loop(looping) => {
                    let (lower, upper, step) =
                        (slot!(looping.slots.lower), slot!(looping.slots.upper), slot!(looping.slots.step));
                    let (lower, upper, step) = (lower.as_i64(), upper.as_i64(), step.as_i64());
                    if let Some(message) = counted_loop::step_error(&looping.name, lower, upper, step) {
                        return Err(self.arithmetic(env, message, looping.location));
                    }
                    if lower < upper {
                        slot!(looping.slots.induction) = Scalar::Int(lower);
                        for (&arg, &init) in looping.slots.iter_args.iter().zip(looping.slots.inits.iter()) {
                            slot!(arg) = slot!(init);
                        }
                        enter!(looping.body);
                    } else {
                        for (&result, &init) in looping.slots.results.iter().zip(looping.slots.inits.iter()) {
                            slot!(result) = slot!(init);
                        }
                        pc += 1;
                    }
                }
                Inst::Next { values } => {
                    self.scratch.clear();
                    for &value in values.iter() {
                        self.scratch.push(slot!(value));
                    }
                    let parent = self.parent_frame(env)?;
                    let Inst::Loop(looping) = &program.blocks[parent.block as usize][parent.pc as usize] else {
                        return Err(self.internal(env, "the end of a loop body outside a loop"));
                    };
                    let induction = slot!(looping.slots.induction).as_i64();
                    let step = slot!(looping.slots.step).as_i64();
                    let upper = slot!(looping.slots.upper).as_i64();
                    // The loop also ends where the induction variable would overflow its type.
                    match counted_loop::next(induction, step, upper, looping.slots.ty) {
                        Some(next) => {
                            slot!(looping.slots.induction) = Scalar::Int(next);
                            for (&arg, &value) in looping.slots.iter_args.iter().zip(&self.scratch) {
                                slot!(arg) = value;
                            }
                            pc = 0;
                        }
                        _ => {
                            for (&result, &value) in looping.slots.results.iter().zip(&self.scratch) {
                                slot!(result) = value;
                            }
                            resume_parent!();
                        }
                    }
                }
                Inst::Branch(hop) => {
                    let Ok(edge) = hop.edge(&self.slots[base..]) else {
                        return Err(self.internal(env, UNDECIDED));
                    };
                    self.forward(base, edge);
                    match edge.to {
                        Target::Parent => pc += 1,
                        Target::Region(target) => enter!(target),
                    }
                }
                Inst::Exit(hop) => {
                    self.parent_frame(env)?;
                    let Ok(edge) = hop.edge(&self.slots[base..]) else {
                        return Err(self.internal(env, UNDECIDED));
                    };
                    self.forward(base, edge);
                    match edge.to {
                        Target::Parent => resume_parent!(),
                        Target::Region(target) => {
                            self.frames.last_mut().expect("a running item has a frame").block = target;
                            block = &program.blocks[target as usize];
                            pc = 0;
                        }
                    }
                }
            }
        }
    }

    /// The frame of the op whose region the current frame runs.
    #[inline]
    fn parent_frame(&self, env: &Env<'_>) -> Result<Frame, RuntimeError> {
        match self.frames.split_last() {
            Some((current, [.., parent])) if !current.function => Ok(*parent),
            _ => Err(self.internal(env, "the end of a region outside a region")),
        }
    }

    /// Moves the values along `edge` (through `scratch`: an edge may read slots it also writes,
    /// as a loop that swaps its carried values does).
    #[inline]
    fn forward(&mut self, base: usize, edge: &Edge) {
        self.scratch.clear();
        for &source in edge.sources.iter() {
            self.scratch.push(self.slots[base + source as usize]);
        }
        for (&input, &value) in edge.targets.iter().zip(&self.scratch) {
            self.slots[base + input as usize] = value;
        }
    }
}

/// Runs one workgroup: every work item of it, in order (x fastest), to the end. Without
/// barriers, one item state (`items[0]`) is reused for each work item inside the grid in turn
/// (those past it do not exist); with barriers, all work items run in lockstep, those past the
/// grid as padding (see the module documentation), each up to the next barrier, and every round
/// checks that they all wait at the same barrier (same control stack: same op, same enclosing
/// regions and calls) or all finished — anything else is a non-uniform barrier, reported as an
/// error.
pub(crate) fn run_group(env: &Env<'_>, params: &[Scalar], items: &mut Vec<Item>) -> Result<(), RuntimeError> {
    let program = env.program;
    let [wx, wy, wz] = program.workgroup;
    let group = env.group;
    let global = |local: [u64; 3]| [0, 1, 2].map(|d| group[d] * program.workgroup[d] + local[d]);
    let past_grid = |global: [u64; 3]| (0..3).any(|d| global[d] >= env.grid[d]);
    let locals = (0..wz).flat_map(|z| (0..wy).flat_map(move |y| (0..wx).map(move |x| [x, y, z])));
    if !program.has_barrier {
        if items.is_empty() {
            items.push(Item::default());
        }
        let item = &mut items[0];
        for local in locals {
            let global = global(local);
            if past_grid(global) {
                continue;
            }
            item.start(program, params, local, global, false);
            if item.run(env)? == Stop::Barrier {
                return Err(item.internal(env, "a kernel without barriers stopped at one"));
            }
        }
        return Ok(());
    }
    let count = (wx * wy * wz) as usize;
    if items.len() < count {
        items.resize_with(count, Item::default);
    }
    let items = &mut items[..count];
    for (item, local) in items.iter_mut().zip(locals) {
        let global = global(local);
        item.start(program, params, local, global, past_grid(global));
    }
    loop {
        let mut waiting = 0;
        for item in items.iter_mut() {
            if item.run(env)? == Stop::Barrier {
                waiting += 1;
            }
        }
        if waiting == 0 {
            return Ok(());
        }
        if let Some(races) = env.races {
            races.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).barrier();
        }
        let (first, rest) = items.split_first().expect("a workgroup has work items");
        let first_waits = !first.frames.is_empty();
        for other in rest {
            let other_waits = !other.frames.is_empty();
            let uniform = first_waits == other_waits && (!first_waits || first.same_position(other));
            if !uniform {
                let (waiter, location) = if first_waits { (first, first.barrier) } else { (other, other.barrier) };
                let other_id = if first_waits { other.global } else { first.global };
                let fmt = |id: [u64; 3]| format!("({}, {}, {})", id[0], id[1], id[2]);
                let what = if first_waits && other_waits { "waits at a different barrier" } else { "has finished" };
                let message = format!(
                    "non-uniform barrier in kernel '{}' (workgroup {}): work item {} waits at a barrier, while work item {} {what}",
                    program.name,
                    fmt(group),
                    fmt(waiter.global),
                    fmt(other_id),
                );
                return Err(RuntimeError::Unsupported {
                    op: hat_dialects::kernel::BarrierOp::NAME.into(),
                    message,
                    location,
                });
            }
        }
    }
}
