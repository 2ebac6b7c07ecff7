//! [`Tracker`]: the residency state of every buffer of a run, and the copies it makes — at the
//! dispatches and hooks of a program instrumented by `track-accesses` ([`Policy::Tracking`]), or
//! at the transfers and host accesses of a program with its own transfers run in a `Session`
//! ([`Policy::Explicit`]). The interpreter calls it at those points; it decides from each
//! buffer's [`Residence`] what to copy, and copies through the run's [`Buffers`], so every copy is
//! counted in the report like any other.
//!
//! What a dispatch does to its arguments comes from the attributes `track-accesses` puts on it
//! (the format is defined in `annotations.rs`); a dispatch without them reads and may write every
//! buffer argument, whole.

use super::annotations::{dispatch_uses, ArgUse, Span};
use super::element_set::Ranges;
use super::residence::{Policy, Residence};
use crate::backend::Backend;
use crate::error::RuntimeError;
use crate::executor::buffers::{At, BufferId, Buffers};
use crate::report::{Direction, HostHook, Recorder};
use hat_ir::{Context, Op};
use rustc_hash::FxHashMap;
use std::ops::Range;
use std::rc::Rc;

/// What a run's copies go through: its buffers, its backend, its report, and the op that needs
/// them (for errors).
pub(crate) struct Io<'r, 'a> {
    pub(crate) buffers: &'r mut Buffers,
    pub(crate) backend: &'r mut dyn Backend,
    pub(crate) recorder: &'r mut Recorder,
    pub(crate) at: At<'a>,
}

/// How the host touches a range of a buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostAccess {
    /// Reads it.
    Read,
    /// Writes every element of it.
    MustWrite,
    /// May write some elements of it.
    MayWrite,
}

/// The residency of every buffer of a run. See the module documentation.
#[derive(Debug)]
pub(crate) struct Tracker {
    policy: Policy,
    /// By [`BufferId`]; `None` for a buffer not seen yet (allocated by the program: fresh) or freed.
    residences: Vec<Option<Residence>>,
    /// The decoded annotations of each dispatch op run so far.
    uses: FxHashMap<Op, Rc<[ArgUse]>>,
}

impl Tracker {
    /// No buffer yet.
    pub(crate) fn new(policy: Policy) -> Self {
        Tracker { policy, residences: Vec::new(), uses: FxHashMap::default() }
    }

    /// Its policy.
    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    /// Sets the residency of buffer `id` (an argument: the caller's, or a session's resident).
    pub(crate) fn place(&mut self, id: BufferId, residence: Residence) {
        if self.residences.len() <= id.0 {
            self.residences.resize(id.0 + 1, None);
        }
        self.residences[id.0] = Some(residence);
    }

    /// Takes the residency of buffer `id` out (fresh if it was never touched).
    pub(crate) fn take(&mut self, id: BufferId, len: u64) -> Residence {
        self.residences.get_mut(id.0).and_then(Option::take).unwrap_or_else(|| Residence::fresh(self.policy, len))
    }

    /// Forgets a freed buffer.
    pub(crate) fn forget(&mut self, id: BufferId) {
        if let Some(slot) = self.residences.get_mut(id.0) {
            *slot = None;
        }
    }

    fn residence(&mut self, id: BufferId, io: &Io<'_, '_>) -> Result<&mut Residence, RuntimeError> {
        let len = io.buffers.layout(id, io.at)?.len() as u64;
        if self.residences.len() <= id.0 {
            self.residences.resize(id.0 + 1, None);
        }
        let policy = self.policy;
        Ok(self.residences[id.0].get_or_insert_with(|| Residence::fresh(policy, len)))
    }

    /// Makes the copies `ranges` of buffer `id` (out of `len` elements) in `direction`.
    fn copy(
        io: &mut Io<'_, '_>,
        direction: Direction,
        id: BufferId,
        len: u64,
        ranges: Ranges,
    ) -> Result<(), RuntimeError> {
        for range in ranges {
            let element_range = (range != (0..len)).then(|| (range.start as i64, (range.end - range.start) as i64));
            io.buffers.transfer(direction, id, element_range, io.at, io.backend, io.recorder)?;
        }
        Ok(())
    }

    /// The element range of an op's `(offset, count)` (already checked to be inside the buffer),
    /// or the whole buffer.
    fn elements(residence: &Residence, range: Option<(i64, i64)>) -> Range<u64> {
        match range {
            Some((offset, count)) => offset as u64..(offset + count) as u64,
            None => residence.whole(),
        }
    }

    // ----- the host ----------------------------------------------------------------------------

    /// Before the host accesses `range` of buffer `id` (the whole buffer without one): copies
    /// home what it needs.
    pub(crate) fn before_host_access(
        &mut self,
        io: &mut Io<'_, '_>,
        id: BufferId,
        range: Option<(i64, i64)>,
        access: HostAccess,
    ) -> Result<(), RuntimeError> {
        let residence = self.residence(id, io)?;
        let elements = Self::elements(residence, range);
        let copies = match access {
            HostAccess::Read => residence.read_on_host(elements),
            HostAccess::MustWrite => residence.before_host_write(elements, true),
            HostAccess::MayWrite => residence.before_host_write(elements, false),
        };
        let len = residence.len();
        Self::copy(io, Direction::FromDevice, id, len, copies)
    }

    /// After the host wrote `range` of buffer `id`.
    pub(crate) fn after_host_write(
        &mut self,
        io: &mut Io<'_, '_>,
        id: BufferId,
        range: Option<(i64, i64)>,
    ) -> Result<(), RuntimeError> {
        let residence = self.residence(id, io)?;
        let elements = Self::elements(residence, range);
        residence.after_host_write(elements);
        Ok(())
    }

    /// A runtime-tracking hook (under [`Policy::Tracking`]; the others ignore hooks).
    /// `every_element`: the `hat.must_write` of a `before_host_write`.
    pub(crate) fn hook(
        &mut self,
        io: &mut Io<'_, '_>,
        hook: HostHook,
        id: BufferId,
        range: Option<(i64, i64)>,
        every_element: bool,
    ) -> Result<(), RuntimeError> {
        if self.policy != Policy::Tracking {
            return Ok(());
        }
        match hook {
            HostHook::BeforeHostRead => self.before_host_access(io, id, range, HostAccess::Read),
            HostHook::BeforeHostWrite => {
                let access = if every_element { HostAccess::MustWrite } else { HostAccess::MayWrite };
                self.before_host_access(io, id, range, access)
            }
            HostHook::AfterHostWrite => self.after_host_write(io, id, range),
            HostHook::AfterHostRead => Ok(()),
        }
    }

    /// Brings the whole host copy of `id` up to date (at the entry's return, or when a session's
    /// caller borrows it).
    pub(crate) fn bring_home(&mut self, io: &mut Io<'_, '_>, id: BufferId) -> Result<(), RuntimeError> {
        self.before_host_access(io, id, None, HostAccess::Read)
    }

    // ----- the program's transfers -------------------------------------------------------------

    /// A `buffer.to_device` / `buffer.from_device` of the program (under [`Policy::Explicit`]):
    /// made only where its effect is not there already; a copy back is deferred until the host
    /// looks.
    pub(crate) fn transfer(
        &mut self,
        io: &mut Io<'_, '_>,
        direction: Direction,
        id: BufferId,
        range: Option<(i64, i64)>,
    ) -> Result<(), RuntimeError> {
        let residence = self.residence(id, io)?;
        let elements = Self::elements(residence, range);
        let len = residence.len();
        match direction {
            Direction::ToDevice => {
                let copies = residence.copy_to_device(elements);
                Self::copy(io, Direction::ToDevice, id, len, copies)
            }
            Direction::FromDevice => {
                residence.copy_from_device(elements);
                Ok(())
            }
        }
    }

    // ----- dispatches --------------------------------------------------------------------------

    /// The uses of the arguments of dispatch `op` (`count` of them), decoded once per op.
    fn uses(&mut self, ctx: &Context, op: Op, count: usize) -> Rc<[ArgUse]> {
        self.uses.entry(op).or_insert_with(|| dispatch_uses(ctx, op, count).into()).clone()
    }

    /// For each distinct buffer of a dispatch's `arguments` (`(argument index, buffer)`), the
    /// ranges the kernel needs current on the device and the ranges it may write.
    fn per_buffer(
        &mut self,
        ctx: &Context,
        op: Op,
        count: usize,
        arguments: &[(usize, BufferId)],
        io: &Io<'_, '_>,
    ) -> Result<Vec<(BufferId, Ranges, Ranges)>, RuntimeError> {
        let uses = self.uses(ctx, op, count);
        let mut buffers: Vec<(BufferId, Ranges, Ranges, bool)> = Vec::new();
        for &(index, id) in arguments {
            let len = io.buffers.layout(id, io.at)?.len() as u64;
            let usage = uses.get(index).copied().unwrap_or(ArgUse::ANYTHING);
            let position = match buffers.iter().position(|b| b.0 == id) {
                Some(position) => position,
                None => {
                    buffers.push((id, Ranges::new(), Ranges::new(), false));
                    buffers.len() - 1
                }
            };
            let entry = &mut buffers[position];
            if let Some(range) = usage.read.elements(len) {
                entry.1.push(range);
            }
            if let Some(range) = usage.write.elements(len) {
                entry.2.push(range);
            }
            entry.3 |= usage.writes_every_element;
        }
        Ok(buffers
            .into_iter()
            .map(|(id, reads, writes, writes_all)| {
                let len = io.buffers.layout(id, io.at).map_or(0, |l| l.len() as u64);
                // Elements a dispatch may leave unwritten keep their old value: it must be on the
                // device. A dispatch that writes every element leaves none.
                let mut needed = reads;
                let written = if writes_all {
                    std::iter::once(0..len).collect()
                } else {
                    needed.extend(writes.iter().cloned());
                    writes
                };
                (id, needed, written)
            })
            .collect())
    }

    /// Before dispatch `op` (`count` arguments, the buffers among them at `arguments`): copies to
    /// the device what the kernel needs (under [`Policy::Tracking`]).
    pub(crate) fn before_dispatch(
        &mut self,
        io: &mut Io<'_, '_>,
        ctx: &Context,
        op: Op,
        count: usize,
        arguments: &[(usize, BufferId)],
    ) -> Result<(), RuntimeError> {
        if self.policy != Policy::Tracking {
            return Ok(());
        }
        for (id, needed, _) in self.per_buffer(ctx, op, count, arguments, io)? {
            let policy = self.policy;
            let residence = self.residence(id, io)?;
            let copies = residence.before_dispatch(policy, &needed);
            let len = residence.len();
            Self::copy(io, Direction::ToDevice, id, len, copies)?;
        }
        Ok(())
    }

    /// After dispatch `op`: what it may have written is now on the device.
    pub(crate) fn after_dispatch(
        &mut self,
        io: &mut Io<'_, '_>,
        ctx: &Context,
        op: Op,
        count: usize,
        arguments: &[(usize, BufferId)],
    ) -> Result<(), RuntimeError> {
        for (id, _, written) in self.per_buffer(ctx, op, count, arguments, io)? {
            let policy = self.policy;
            self.residence(id, io)?.after_dispatch(policy, &written);
        }
        Ok(())
    }
}

impl Span {
    /// The range of a buffer of `len` elements, `None` when the span is empty.
    fn elements(self, len: u64) -> Option<Range<u64>> {
        match self {
            Span::Nothing => None,
            Span::Whole => Some(0..len),
            Span::Range(start, end) => Some(start.min(len)..end.min(len)).filter(|r| !r.is_empty()),
        }
    }
}
