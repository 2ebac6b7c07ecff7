//! The trace of a run for the clairvoyant optimum ([`crate::oracle`]): when
//! [`Executor::set_trace`](super::Executor::set_trace) is on, the interpreter records here, one
//! step per operation, what host code reads and writes (loads, stores, host-side copies,
//! host-function calls by their declared effects, the caller's observation at the return) and
//! what each dispatch read and wrote on the device (as the backend recorded it: see
//! [`Backend::take_dispatch_accesses`](crate::Backend::take_dispatch_accesses)). The oracle's
//! documentation says what each operation counts as.

use super::buffers::BufferId;
use super::ArgEffect;
use crate::backend::BufferAccesses;
use crate::oracle::{Access, Origin, Side, Trace};
use crate::value::BufferLayout;

/// The trace being recorded, and which trace buffer each buffer of the run is.
#[derive(Debug, Default)]
pub(super) struct Tracing {
    pub(super) trace: Trace,
    /// Per [`BufferId`], its index in the trace.
    index: Vec<Option<usize>>,
}

impl Tracing {
    /// Adds buffer `id` (an argument, or born in the run).
    pub(super) fn add(&mut self, id: BufferId, name: &str, layout: &BufferLayout, origin: Origin) {
        let index = self.trace.add_buffer(name, layout.len() as u64, layout.element.size() as u64, origin);
        if self.index.len() <= id.0 {
            self.index.resize(id.0 + 1, None);
        }
        self.index[id.0] = Some(index);
    }

    /// The trace buffer of `id`, added (as born in the run, named by its number) if unseen.
    fn of(&mut self, id: BufferId, layout: &BufferLayout) -> usize {
        match self.index.get(id.0).copied().flatten() {
            Some(index) => index,
            None => {
                self.add(id, &format!("#{}", id.0), layout, Origin::Fresh);
                self.trace.buffers.len() - 1
            }
        }
    }

    /// A host load (`write` false) or store of element `flat`.
    pub(super) fn host_element(&mut self, id: BufferId, layout: &BufferLayout, flat: u64, write: bool) {
        let buffer = self.of(id, layout);
        self.trace.step();
        let access = if write { Access::Write } else { Access::Read };
        self.trace.record(buffer, Side::Host, access, std::iter::once(flat..flat + 1));
    }

    /// Host operations on whole buffers at one step: `reads` read, then `writes` written.
    pub(super) fn host_whole(&mut self, reads: &[(BufferId, &BufferLayout)], writes: &[(BufferId, &BufferLayout)]) {
        self.trace.step();
        for &(id, layout) in reads {
            let buffer = self.of(id, layout);
            self.trace.record_all(buffer, Side::Host, Access::Read);
        }
        for &(id, layout) in writes {
            let buffer = self.of(id, layout);
            self.trace.record_all(buffer, Side::Host, Access::Write);
        }
    }

    /// A dispatch: what it read, then what it wrote, of the buffers `buffers` (the run's
    /// buffer, its layout, and its device buffer, for each distinct argument).
    pub(super) fn dispatch(
        &mut self,
        accesses: Vec<BufferAccesses>,
        buffers: &[(BufferId, &BufferLayout, crate::backend::DeviceBuffer)],
    ) {
        self.trace.step();
        let found: Vec<(usize, BufferAccesses)> = accesses
            .into_iter()
            .filter_map(|a| {
                let &(id, layout, _) = buffers.iter().find(|(_, _, device)| *device == a.buffer)?;
                Some((self.of(id, layout), a))
            })
            .collect();
        for (buffer, a) in &found {
            self.trace.record(*buffer, Side::Device, Access::Read, a.read.clone());
        }
        for (buffer, a) in found {
            self.trace.record(buffer, Side::Device, Access::Write, a.written);
        }
    }
}

/// Whether a host function's argument of this declared effect counts as read, and as written
/// (see the oracle's documentation: a `write` may leave elements, so it reads too).
pub(super) fn effect_accesses(effect: ArgEffect) -> (bool, bool) {
    match effect {
        ArgEffect::None => (false, false),
        ArgEffect::Read => (true, false),
        ArgEffect::Write | ArgEffect::ReadWrite => (true, true),
    }
}
