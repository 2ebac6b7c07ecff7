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
//! - `buffer.dealloc` frees both; any later use is [`RuntimeError::UseAfterFree`].
//! - Errors of the backend and of host allocations get the location of the op at fault
//!   ([`RuntimeError::at`]).

use super::host_buffer::{poison, try_pattern_bytes, HostBuffer};
use crate::backend::{Backend, DeviceBuffer};
use crate::error::RuntimeError;
use crate::report::{Direction, Recorder};
use crate::value::BufferLayout;
use hat_ir::Location;
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
        BufferId(self.list.len() - 1)
    }

    /// Takes a buffer out of the run, to outlive it (a residency session's): its layout and both
    /// copies. The run then holds nothing of it, and [`Buffers::release_all`] leaves it alone.
    pub(crate) fn take_resident(
        &mut self,
        id: BufferId,
        recorder: &mut Recorder,
    ) -> (BufferLayout, Option<Vec<u8>>, Option<DeviceBuffer>) {
        let state = &mut self.list[id.0];
        state.freed = true;
        let device = state.device.take();
        if device.is_some() {
            recorder.device_freed(state.layout.bytes());
        }
        (state.layout.clone(), state.host.take(), device)
    }

    /// Adds a buffer the program allocates (no copy exists yet).
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

    /// The host copy, made (poisoned) if the buffer has none yet.
    pub(crate) fn host(
        &mut self,
        id: BufferId,
        at: At<'_>,
        recorder: &mut Recorder,
    ) -> Result<&mut Vec<u8>, RuntimeError> {
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
        recorder: &mut Recorder,
    ) -> Result<HostBuffer, RuntimeError> {
        let bytes = std::mem::take(self.host(id, at, recorder)?);
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
        recorder: &mut Recorder,
    ) -> Result<HostBuffer, RuntimeError> {
        let host = self.host(id, at, recorder)?;
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

    /// Copies the host copy (or an element range of it) to the device copy, or back. A range of
    /// no elements moves nothing and is not counted.
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
        self.host(id, at, recorder)?;
        let state = &mut self.list[id.0];
        let host = &mut state.host.as_deref_mut().expect("made above")[bytes.clone()];
        let start = Instant::now();
        match direction {
            Direction::ToDevice => backend.copy_to_device(device, bytes.start, host),
            Direction::FromDevice => backend.copy_from_device(device, bytes.start, host),
        }
        .map_err(|e| e.at(at.location))?;
        recorder.transfer(state.slot, direction, bytes.len(), start.elapsed());
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
        let state = &mut self.list[id.0];
        state.freed = true;
        state.host = None;
        if let Some(device) = state.device.take() {
            recorder.device_freed(state.layout.bytes());
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
        for state in &mut self.list {
            if let Some(device) = state.device.take() {
                recorder.device_freed(state.layout.bytes());
                let freed = backend.free(device);
                if result.is_ok() {
                    result = freed;
                }
            }
        }
        result
    }

    /// The final host copy of a caller's buffer, taken out of the run.
    pub(crate) fn final_host(&mut self, id: BufferId) -> HostBuffer {
        let state = &mut self.list[id.0];
        let bytes = state.host.take().unwrap_or_else(|| poison(&state.layout));
        HostBuffer { layout: state.layout.clone(), bytes }
    }
}
