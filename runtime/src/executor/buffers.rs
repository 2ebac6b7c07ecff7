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
        self.list.push(BufferState {
            layout: buffer.layout,
            host: Some(buffer.bytes),
            device: None,
            freed: false,
            slot,
            argument: true,
        });
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
        self.list.push(BufferState { layout, host, device, freed: false, slot, argument: true });
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

    pub(crate) fn allocate(&mut self, layout: BufferLayout, slot: usize) -> BufferId {
        self.list.push(BufferState { layout, host: None, device: None, freed: false, slot, argument: false });
        BufferId(self.list.len() - 1)
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
        let state = &mut self.list[id.0];
        if let Some(device) = state.device {
            return Ok(device);
        }
        let device = backend.allocate(&state.layout).map_err(|e| e.at(at.location))?;
        recorder.device_allocated(state.slot, state.layout.bytes());
        state.device = Some(device);
        if let Some(timeline) = &mut self.timeline {
            timeline.device_allocated(id);
        }
        Ok(device)
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
        self.queue.dependencies(id, &bytes, write, &mut after);
        let mut hazards = Vec::new();
        if self.timeline.is_some() {
            self.queue.hazards(id, &bytes, !write, write, &mut hazards);
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
        self.queue.note(id, bytes, write, command);
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
    ) -> Result<Command, RuntimeError> {
        let mut after = SmallVec::new();
        let mut whole = SmallVec::<[std::ops::Range<usize>; 8]>::new();
        let mut hazards = Vec::new();
        for usage in uses {
            let bytes = 0..self.layout(usage.buffer, at)?.bytes();
            if usage.write {
                self.queue.dependencies(usage.buffer, &bytes, true, &mut after);
            } else if usage.read {
                self.queue.dependencies(usage.buffer, &bytes, false, &mut after);
            }
            if self.timeline.is_some() && (usage.read || usage.write) {
                self.queue.hazards(usage.buffer, &bytes, usage.read, usage.write, &mut hazards);
            }
            whole.push(bytes);
        }
        let command = backend.record_dispatch(kernel, grid, args, &after).map_err(|e| e.at(at.location))?;
        if let Some(timeline) = &mut self.timeline {
            let buffers = uses.iter().map(|u| (u.buffer, u.read, u.write)).collect();
            timeline.command(command, LoggedKind::Dispatch { kernel_slot, grid, buffers }, hazards);
        }
        for (usage, bytes) in uses.iter().zip(whole) {
            if usage.read || usage.write {
                self.queue.note(usage.buffer, bytes, usage.write, command);
            }
        }
        self.queue.dispatched(command, kernel_slot);
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
        for time in times {
            if let Some(kernel) = self.queue.kernel_of(time.command) {
                recorder.device_time(kernel, time.time);
            }
        }
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
            recorder.device_freed(state.layout.bytes());
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
                recorder.device_freed(state.layout.bytes());
                if let Some(timeline) = &mut self.timeline {
                    timeline.device_freed(BufferId(id));
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
    pub(crate) fn slots_and_layouts(&self) -> impl Iterator<Item = (usize, &BufferLayout)> {
        self.list.iter().map(|state| (state.slot, &state.layout))
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
