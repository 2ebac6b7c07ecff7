//! The buffers of a run: for each, its layout, its host copy (bytes the executor owns) and its
//! device copy (a backend buffer), and the transfers between the two, counted in the report.
//!
//! - The host copy of an entry argument is the caller's bytes. A buffer that the program
//!   allocates gets a host copy only when something on the host needs one (a load, a store, a
//!   host-side copy, a host function, a transfer, or its return to the caller); it is then filled
//!   with the poison pattern, because uninitialised host memory is as undefined as uninitialised
//!   device memory. The report says which buffers ever had a host copy.
//! - The device copy is allocated on the buffer's first transfer or dispatch. The backend leaves
//!   its contents undefined (the CPU reference backend fills them with poison).
//! - Copies and dispatches are recorded on the backend with their dependencies (`queue.rs`),
//!   not waited for: a copy to the device takes the host bytes at once; a copy from the device
//!   lands in the host copy at the next wait ([`Buffers::flush`]), which comes before anything
//!   reads or writes those bytes of the host copy (every host access goes through
//!   [`Buffers::host`] and friends, which wait when a pending read concerns the buffer).
//! - `buffer.dealloc` frees both; any later use is [`RuntimeError::UseAfterFree`].
//! - Errors of the backend and of host allocations get the location of the op at fault
//!   ([`RuntimeError::at`]).

use super::host_buffer::{poison, try_pattern_bytes, HostBuffer};
use super::queue::Queue;
use super::timeline_log::{LoggedKind, TimelineLog};
use crate::backend::{Backend, Command, DeviceBuffer, KernelArg, KernelHandle};
use crate::error::RuntimeError;
use crate::report::{Direction, Recorder};
use crate::value::BufferLayout;
use hat_ir::Location;
use smallvec::SmallVec;
use std::time::Instant;

/// A host copy of `layout` filled with poison, or [`RuntimeError::HostAllocation`] at
/// `location` (the op that needs the host copy) when host memory cannot hold it, rather than
/// aborting.
fn try_poison(layout: &BufferLayout, location: Location) -> Result<Vec<u8>, RuntimeError> {
    try_pattern_bytes(layout, &layout.element.poison_bytes(), "the buffer's host copy", location)
}

/// Every this many dispatches held for their times, the executor asks the backend what is done
/// ([`Backend::completed`]) and forgets what it kept for those commands.
const BOOK_EVERY: usize = 4096;

/// A buffer of the run (an index into [`Buffers`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BufferId(pub(crate) usize);

#[derive(Debug)]
struct BufferState {
    layout: BufferLayout,
    host: Option<Vec<u8>>,
    device: Option<DeviceBuffer>,
    freed: bool,
    /// Its entry in the report's `per_buffer`.
    slot: usize,
    /// Whether the caller passed it (the program must not free it).
    argument: bool,
    /// The depth of the call that owns it (the entry's call is at 1; 0 for the caller's
    /// buffers): the call that allocated it, until a call returns it to its caller.
    owner: usize,
    /// Where `plan-memory` placed it: (its arena, its offset there in bytes).
    placement: Option<(ArenaId, usize)>,
    /// Whether its device copy is a window of its arena (which holds its bytes).
    window: bool,
}

impl BufferState {
    /// A buffer the caller owns (`owner` 0, never freed by the program): an argument, a resident
    /// buffer, or an arena's stand-in.
    fn callers(layout: BufferLayout, host: Option<Vec<u8>>, device: Option<DeviceBuffer>, slot: usize) -> Self {
        BufferState {
            layout,
            host,
            device,
            freed: false,
            slot,
            argument: true,
            owner: 0,
            placement: None,
            window: false,
        }
    }
}

/// An arena of a call (`plan-memory`): an index into [`Buffers::arenas`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArenaId(usize);

/// One call's arena.
#[derive(Debug)]
struct Arena {
    bytes: usize,
    device: ArenaDevice,
    /// The buffers whose device copies are windows of it.
    windows: Vec<BufferId>,
}

#[derive(Debug)]
enum ArenaDevice {
    /// Not made yet (it is, at its first window's device copy).
    NotYet,
    /// Made: the backend's arena, and the buffer that stands for its bytes in the queue's
    /// dependencies (two windows that share bytes are ordered like two accesses of one buffer).
    Made(DeviceBuffer, BufferId),
    /// The backend has no arenas: each planned buffer is its own allocation.
    Unavailable,
    /// Freed, at the end of its call.
    Freed,
}

/// Where an access comes from, for errors.
#[derive(Copy, Clone, Debug)]
pub(crate) struct At<'s> {
    pub(crate) op: &'s str,
    pub(crate) location: Location,
}

/// Every buffer of one run. See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    list: Vec<BufferState>,
    arenas: Vec<Arena>,
    /// The arena each arena's stand-in buffer stands for (by the buffer's index).
    arena_keys: rustc_hash::FxHashMap<usize, usize>,
    /// The commands recorded since the last wait.
    queue: Queue,
    /// The run's timeline, when the executor records one.
    pub(crate) timeline: Option<TimelineLog>,
}

/// How a dispatch uses one of its buffers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Use {
    pub(crate) buffer: BufferId,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

impl Buffers {
    /// Adds a buffer passed by the caller.
    pub(crate) fn add_argument(&mut self, buffer: HostBuffer, slot: usize, recorder: &mut Recorder) -> BufferId {
        recorder.host_copy(slot);
        self.list.push(BufferState::callers(buffer.layout, Some(buffer.bytes), None, slot));
        BufferId(self.list.len() - 1)
    }

    /// Adds a buffer that outlives the run (a residency session's): its host copy, if it has one,
    /// and its device copy, if it has one. Like an argument, the program must not free it.
    pub(crate) fn add_resident(
        &mut self,
        layout: BufferLayout,
        host: Option<Vec<u8>>,
        device: Option<DeviceBuffer>,
        slot: usize,
        recorder: &mut Recorder,
    ) -> BufferId {
        if host.is_some() {
            recorder.host_copy(slot);
        }
        if device.is_some() {
            recorder.device_resident(slot, layout.bytes());
        }
        self.list.push(BufferState::callers(layout, host, device, slot));
        let id = BufferId(self.list.len() - 1);
        if let (Some(timeline), true) = (&mut self.timeline, device.is_some()) {
            timeline.device_allocated(id);
        }
        id
    }

    /// Takes a buffer out of the run, to outlive it (a residency session's): its layout and both
    /// copies. The run then holds nothing of it, and [`Buffers::release_all`] leaves it alone.
    pub(crate) fn take_resident(
        &mut self,
        id: BufferId,
        recorder: &mut Recorder,
    ) -> (BufferLayout, Option<Vec<u8>>, Option<DeviceBuffer>) {
        debug_assert!(!self.queue.has_pending(id, None), "the run waits for its reads before it ends");
        let state = &mut self.list[id.0];
        state.freed = true;
        let device = state.device.take();
        if device.is_some() {
            recorder.device_freed(state.layout.bytes());
            if let Some(timeline) = &mut self.timeline {
                timeline.device_freed(id);
            }
        }
        (state.layout.clone(), state.host.take(), device)
    }

    /// Adds a buffer the program allocates (no copy exists yet).
    /// The id the next buffer added will have.
    pub(crate) fn next_id(&self) -> usize {
        self.list.len()
    }

    /// Adds a buffer the call at `depth` allocates, at `placement` in an arena if `plan-memory`
    /// placed it.
    pub(crate) fn allocate(
        &mut self,
        layout: BufferLayout,
        slot: usize,
        depth: usize,
        placement: Option<(ArenaId, usize)>,
    ) -> BufferId {
        let state = BufferState {
            layout,
            host: None,
            device: None,
            freed: false,
            slot,
            argument: false,
            owner: depth,
            placement,
            window: false,
        };
        self.list.push(state);
        BufferId(self.list.len() - 1)
    }

    /// A new arena of `bytes` for a call (made on the device when its first buffer is).
    pub(crate) fn new_arena(&mut self, bytes: usize) -> ArenaId {
        self.arenas.push(Arena { bytes, device: ArenaDevice::NotYet, windows: Vec::new() });
        ArenaId(self.arenas.len() - 1)
    }

    /// Frees `arena` at the end of its call, with the buffers placed in it that are still held
    /// (none of them outlives the call: `plan-memory` places no buffer the function returns).
    pub(crate) fn free_arena(
        &mut self,
        arena: ArenaId,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<(), RuntimeError> {
        let state = std::mem::replace(&mut self.arenas[arena.0].device, ArenaDevice::Freed);
        let ArenaDevice::Made(device, key) = state else { return Ok(()) };
        for id in std::mem::take(&mut self.arenas[arena.0].windows) {
            let buffer = &mut self.list[id.0];
            if !buffer.freed {
                buffer.freed = true;
                buffer.host = None;
                if let Some(window) = buffer.device.take() {
                    backend.free(window)?;
                }
            }
        }
        self.queue.forget(key);
        self.list[key.0].freed = true;
        self.list[key.0].device = None;
        recorder.device_freed(self.arenas[arena.0].bytes);
        if let Some(timeline) = &mut self.timeline {
            timeline.device_freed(key);
        }
        backend.free(device)
    }

    /// The buffer and bytes that stand for `bytes` of buffer `id` in the queue's dependencies:
    /// a window's are its arena's.
    fn memory(&self, id: BufferId, bytes: &std::ops::Range<usize>) -> (BufferId, std::ops::Range<usize>) {
        let state = &self.list[id.0];
        match (state.window, state.placement) {
            (true, Some((arena, offset))) => match self.arenas[arena.0].device {
                ArenaDevice::Made(_, key) => (key, bytes.start + offset..bytes.end + offset),
                _ => (id, bytes.clone()),
            },
            _ => (id, bytes.clone()),
        }
    }

    /// A call at `depth` returns buffer `id` to its caller: the buffer is the caller's if it was
    /// the call's.
    pub(crate) fn return_to_caller(&mut self, id: BufferId, depth: usize) {
        if let Some(state) = self.list.get_mut(id.0).filter(|s| s.owner == depth && !s.argument) {
            state.owner = depth - 1;
        }
    }

    /// `buffer.release` in the call at `depth`: frees the buffer when that call owns it (see
    /// [`Buffers::deallocate`]); nothing otherwise, and nothing to a buffer already freed (two
    /// values that may be one buffer may both be released where both die). Whether it freed it.
    pub(crate) fn release(
        &mut self,
        id: BufferId,
        depth: usize,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<bool, RuntimeError> {
        let Some(state) = self.list.get(id.0).filter(|s| !s.freed) else { return Ok(false) };
        if state.argument || state.owner != depth {
            return Ok(false);
        }
        self.deallocate(id, at, backend, recorder)?;
        Ok(true)
    }

    fn state(&self, id: BufferId, at: At<'_>) -> Result<&BufferState, RuntimeError> {
        match self.list.get(id.0) {
            Some(state) if !state.freed => Ok(state),
            _ => Err(RuntimeError::UseAfterFree { op: at.op.to_string(), location: at.location }),
        }
    }

    /// The buffer's layout.
    pub(crate) fn layout(&self, id: BufferId, at: At<'_>) -> Result<&BufferLayout, RuntimeError> {
        Ok(&self.state(id, at)?.layout)
    }

    /// The host copy, made (poisoned) if the buffer has none yet, once the reads pending for it
    /// have landed (the backend is waited for if any is).
    pub(crate) fn host(
        &mut self,
        id: BufferId,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<&mut Vec<u8>, RuntimeError> {
        self.host_bytes(id, None, at, backend, recorder)
    }

    /// The host copy, made (poisoned) if the buffer has none yet, once the reads pending for
    /// `bytes` of it (all of it, when `None`) have landed. Only those bytes may be used.
    pub(crate) fn host_bytes(
        &mut self,
        id: BufferId,
        bytes: Option<std::ops::Range<usize>>,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<&mut Vec<u8>, RuntimeError> {
        self.state(id, at)?;
        if self.queue.has_pending(id, bytes.as_ref()) {
            self.flush(at, backend, recorder)?;
        }
        self.host_as_is(id, at, recorder)
    }

    /// The host copy as it is now (pending reads not landed), made (poisoned) if the buffer has
    /// none yet.
    fn host_as_is(&mut self, id: BufferId, at: At<'_>, recorder: &mut Recorder) -> Result<&mut Vec<u8>, RuntimeError> {
        self.state(id, at)?;
        let state = &mut self.list[id.0];
        if state.host.is_none() {
            recorder.host_copy(state.slot);
            state.host = Some(try_poison(&state.layout, at.location)?);
        }
        Ok(state.host.as_mut().expect("made above"))
    }

    /// Takes the host copy out as a [`HostBuffer`] (for a host function); put it back with
    /// [`Buffers::put_host`].
    pub(crate) fn take_host(
        &mut self,
        id: BufferId,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<HostBuffer, RuntimeError> {
        let bytes = std::mem::take(self.host(id, at, backend, recorder)?);
        Ok(HostBuffer { layout: self.list[id.0].layout.clone(), bytes })
    }

    /// Puts back the bytes taken by [`Buffers::take_host`].
    pub(crate) fn put_host(&mut self, id: BufferId, bytes: Vec<u8>) {
        self.list[id.0].host = Some(bytes);
    }

    /// A copy of the host copy (made, poisoned, if the buffer has none yet).
    pub(crate) fn host_snapshot(
        &mut self,
        id: BufferId,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<HostBuffer, RuntimeError> {
        let host = self.host(id, at, backend, recorder)?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(host.len()).map_err(|e| RuntimeError::HostAllocation {
            bytes: host.len(),
            message: format!("no host memory for a copy of the buffer's host copy ({e})"),
            location: at.location,
        })?;
        bytes.extend_from_slice(host);
        Ok(HostBuffer { layout: self.list[id.0].layout.clone(), bytes })
    }

    /// The device copy, allocated if the buffer has none yet.
    pub(crate) fn device(
        &mut self,
        id: BufferId,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<DeviceBuffer, RuntimeError> {
        self.state(id, at)?;
        if let Some(device) = self.list[id.0].device {
            return Ok(device);
        }
        if let Some((arena, offset)) = self.list[id.0].placement {
            if let Some(arena_device) = self.arena_device(arena, id, at, backend, recorder)? {
                let state = &mut self.list[id.0];
                let window = backend.allocate_in(arena_device, offset, &state.layout).map_err(|e| e.at(at.location))?;
                recorder.device_window(state.slot);
                state.device = Some(window);
                state.window = true;
                self.arenas[arena.0].windows.push(id);
                if let Some(timeline) = &mut self.timeline {
                    timeline.device_window(id, offset);
                }
                return Ok(window);
            }
        }
        let state = &mut self.list[id.0];
        let device = backend.allocate(&state.layout).map_err(|e| e.at(at.location))?;
        recorder.device_allocated(state.slot, state.layout.bytes());
        state.device = Some(device);
        if let Some(timeline) = &mut self.timeline {
            timeline.device_allocated(id);
        }
        Ok(device)
    }

    /// The device allocation of `arena`, made if it is not yet (for buffer `id`'s window);
    /// `None` when the backend has no arenas.
    fn arena_device(
        &mut self,
        arena: ArenaId,
        id: BufferId,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<Option<DeviceBuffer>, RuntimeError> {
        match self.arenas[arena.0].device {
            ArenaDevice::Made(device, _) => return Ok(Some(device)),
            ArenaDevice::Unavailable | ArenaDevice::Freed => return Ok(None),
            ArenaDevice::NotYet => {}
        }
        let bytes = self.arenas[arena.0].bytes;
        let Some(device) = backend.allocate_arena(bytes).map_err(|e| e.at(at.location))? else {
            self.arenas[arena.0].device = ArenaDevice::Unavailable;
            return Ok(None);
        };
        recorder.arena_allocated(bytes);
        // The arena's stand-in in the queue: a buffer of its bytes that nothing else names.
        let layout = BufferLayout { element: crate::value::ElementType::I8, shape: vec![bytes] };
        let slot = self.list[id.0].slot;
        let key = BufferId(self.list.len());
        self.list.push(BufferState::callers(layout, None, None, slot));
        self.arenas[arena.0].device = ArenaDevice::Made(device, key);
        self.arena_keys.insert(key.0, arena.0);
        if let Some(timeline) = &mut self.timeline {
            timeline.device_allocated(key);
        }
        Ok(Some(device))
    }

    /// The byte range of the element range `[offset, offset + count)` (the whole buffer without a
    /// range), or [`RuntimeError::RangeOutOfBounds`].
    pub(crate) fn byte_range(
        &self,
        id: BufferId,
        range: Option<(i64, i64)>,
        at: At<'_>,
    ) -> Result<std::ops::Range<usize>, RuntimeError> {
        let layout = self.layout(id, at)?;
        let len = layout.len();
        let size = layout.element.size();
        let Some((offset, count)) = range else { return Ok(0..len * size) };
        let fits = offset >= 0 && count >= 0 && offset.checked_add(count).is_some_and(|end| end as u64 <= len as u64);
        if !fits {
            return Err(RuntimeError::RangeOutOfBounds { offset, count, len, location: at.location });
        }
        Ok(offset as usize * size..(offset + count) as usize * size)
    }

    /// Copies the host copy (or an element range of it) to the device copy, or back: records the
    /// copy, after the commands it depends on. A copy back lands at the next wait. A range of no
    /// elements moves nothing and is not counted.
    pub(crate) fn transfer(
        &mut self,
        direction: Direction,
        id: BufferId,
        range: Option<(i64, i64)>,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<(), RuntimeError> {
        let bytes = self.byte_range(id, range, at)?;
        if bytes.is_empty() {
            return Ok(());
        }
        let device = self.device(id, at, backend, recorder)?;
        // The host bytes a copy to the device takes must be current; a copy back lands after
        // the reads pending before it, in order.
        if direction == Direction::ToDevice && self.queue.has_pending(id, Some(&bytes)) {
            self.flush(at, backend, recorder)?;
        }
        self.host_as_is(id, at, recorder)?;
        let write = direction == Direction::ToDevice;
        let mut after = SmallVec::new();
        let (key, key_bytes) = self.memory(id, &bytes);
        self.queue.dependencies(key, &key_bytes, write, &mut after);
        let mut hazards = Vec::new();
        if self.timeline.is_some() {
            self.queue.hazards(key, &key_bytes, !write, write, &mut hazards);
            // Named by the buffer this command touches (a window's stand-in is its arena's).
            hazards.iter_mut().for_each(|h| h.1 = id);
        }
        let state = &mut self.list[id.0];
        let start = Instant::now();
        let command = match direction {
            Direction::ToDevice => {
                let host = &state.host.as_deref().expect("made above")[bytes.clone()];
                backend.record_write(device, bytes.start, host, &after)
            }
            Direction::FromDevice => backend.record_read(device, bytes.start, bytes.len(), &after),
        }
        .map_err(|e| e.at(at.location))?;
        recorder.transfer(state.slot, direction, bytes.len(), start.elapsed());
        if direction == Direction::FromDevice {
            self.queue.read_pending(id, bytes.clone(), command);
        }
        if let Some(timeline) = &mut self.timeline {
            let kind = match direction {
                Direction::ToDevice => LoggedKind::ToDevice(id, bytes.clone()),
                Direction::FromDevice => LoggedKind::FromDevice(id, bytes.clone()),
            };
            timeline.command(command, kind, hazards);
        }
        self.queue.note(key, key_bytes, write, command);
        Ok(())
    }

    /// Records a dispatch of `kernel` (the report's kernel `kernel_slot`) with `args`, which use
    /// the buffers as `uses` says, after the commands it depends on.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn dispatch(
        &mut self,
        kernel: KernelHandle,
        kernel_slot: usize,
        grid: [u64; 3],
        args: &[KernelArg],
        uses: &[Use],
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<Command, RuntimeError> {
        let mut after = SmallVec::new();
        let mut whole = SmallVec::<[(BufferId, std::ops::Range<usize>); 8]>::new();
        let mut hazards = Vec::new();
        for usage in uses {
            let (key, bytes) = self.memory(usage.buffer, &(0..self.layout(usage.buffer, at)?.bytes()));
            if usage.write {
                self.queue.dependencies(key, &bytes, true, &mut after);
            } else if usage.read {
                self.queue.dependencies(key, &bytes, false, &mut after);
            }
            if self.timeline.is_some() && (usage.read || usage.write) {
                let from = hazards.len();
                self.queue.hazards(key, &bytes, usage.read, usage.write, &mut hazards);
                hazards[from..].iter_mut().for_each(|h| h.1 = usage.buffer);
            }
            whole.push((key, bytes));
        }
        let command = backend.record_dispatch(kernel, grid, args, &after).map_err(|e| e.at(at.location))?;
        if let Some(timeline) = &mut self.timeline {
            let buffers = uses.iter().map(|u| (u.buffer, u.read, u.write)).collect();
            timeline.command(command, LoggedKind::Dispatch { kernel_slot, grid, buffers }, hazards);
        }
        for (usage, (key, bytes)) in uses.iter().zip(whole) {
            if usage.read || usage.write {
                self.queue.note(key, bytes, usage.write, command);
            }
        }
        self.queue.dispatched(command, kernel_slot);
        if self.queue.dispatches_held() >= BOOK_EVERY && self.queue.dispatches_held().is_multiple_of(BOOK_EVERY) {
            let done = backend.completed();
            self.book_times(done.times, recorder);
            self.queue.forget_done(done.done_before);
        }
        Ok(command)
    }

    /// Submits what was recorded since the last wait and waits for it: books the device times of
    /// its dispatches, and lands its reads in the host copies. Nothing happens when nothing was
    /// recorded. An error of the backend gets `at`'s location (the op that had to wait).
    pub(crate) fn flush(
        &mut self,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<(), RuntimeError> {
        if self.queue.is_idle() {
            return Ok(());
        }
        let start = Instant::now();
        let fence = backend.submit().map_err(|e| e.at(at.location))?;
        let times = backend.wait(fence).map_err(|e| e.at(at.location))?;
        self.book_times(times, recorder);
        if let Some(timeline) = &mut self.timeline {
            timeline.waited(start, backend.take_timeline());
        }
        let landing = self.queue.finished();
        let landed_from = Instant::now();
        for read in landing {
            let state = &mut self.list[read.buffer.0];
            let Some(host) = state.host.as_deref_mut().filter(|_| !state.freed) else { continue };
            backend.take_read(read.command, &mut host[read.bytes]).map_err(|e| e.at(at.location))?;
        }
        recorder.waited(landed_from - start, landed_from.elapsed());
        Ok(())
    }

    /// Books the device times of dispatches the backend gave, each to its kernel's report.
    fn book_times(&self, times: Vec<crate::backend::DispatchTime>, recorder: &mut Recorder) {
        for time in times {
            if let Some(kernel) = self.queue.kernel_of(time.command) {
                recorder.device_time(kernel, time.time);
            }
        }
    }

    /// Frees a buffer the program allocated: both copies.
    pub(crate) fn deallocate(
        &mut self,
        id: BufferId,
        at: At<'_>,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<(), RuntimeError> {
        if self.state(id, at)?.argument {
            return Err(RuntimeError::Unsupported {
                op: at.op.to_string(),
                message: "the buffer is an argument of the entry function: the caller owns it".to_string(),
                location: at.location,
            });
        }
        self.queue.forget(id);
        let state = &mut self.list[id.0];
        state.freed = true;
        state.host = None;
        if let Some(device) = state.device.take() {
            if !state.window {
                recorder.device_freed(state.layout.bytes());
            }
            if let Some(timeline) = &mut self.timeline {
                timeline.device_freed(id);
            }
            backend.free(device).map_err(|e| e.at(at.location))?;
        }
        Ok(())
    }

    /// Frees every device copy still held (at the end of a run), reporting the first error.
    pub(crate) fn release_all(
        &mut self,
        backend: &mut dyn Backend,
        recorder: &mut Recorder,
    ) -> Result<(), RuntimeError> {
        let mut result = Ok(());
        for (id, state) in self.list.iter_mut().enumerate() {
            if let Some(device) = state.device.take() {
                if !state.window {
                    recorder.device_freed(state.layout.bytes());
                }
                if let Some(timeline) = &mut self.timeline {
                    timeline.device_freed(BufferId(id));
                }
                let freed = backend.free(device);
                if result.is_ok() {
                    result = freed;
                }
            }
        }
        // The arenas after their windows.
        for arena in &mut self.arenas {
            if let ArenaDevice::Made(device, key) = std::mem::replace(&mut arena.device, ArenaDevice::Freed) {
                recorder.device_freed(arena.bytes);
                if let Some(timeline) = &mut self.timeline {
                    timeline.device_freed(key);
                }
                let freed = backend.free(device);
                if result.is_ok() {
                    result = freed;
                }
            }
        }
        result
    }

    /// Each buffer's entry in the report's `per_buffer` and its layout, by id.
    pub(crate) fn slots_and_layouts(&self) -> impl Iterator<Item = (Result<usize, String>, &BufferLayout)> {
        self.list.iter().enumerate().map(|(id, state)| {
            // An arena's stand-in is named by its arena, not by the buffer whose slot it borrowed.
            let arena = self.arena_keys.get(&id);
            (arena.map_or(Ok(state.slot), |index| Err(format!("arena#{index}"))), &state.layout)
        })
    }

    /// The final host copy of a caller's buffer, taken out of the run (which waited for its
    /// reads: [`Buffers::flush`]).
    pub(crate) fn final_host(&mut self, id: BufferId) -> HostBuffer {
        debug_assert!(!self.queue.has_pending(id, None), "the run waits for its reads before it ends");
        let state = &mut self.list[id.0];
        let bytes = state.host.take().unwrap_or_else(|| poison(&state.layout));
        HostBuffer { layout: state.layout.clone(), bytes }
    }
}
