//! What the executor knows of the commands it recorded on the backend since it last waited:
//! which commands touched which bytes of which buffer (to give each new command its
//! dependencies), the reads whose bytes have not reached the host copies yet, and which kernel
//! each dispatch ran (to book the device times the wait gives).
//!
//! - **Dependencies** are found per buffer, on byte ranges: a new command depends on every
//!   earlier one since the last wait that touched overlapping bytes of the same buffer, where
//!   one of the two writes (read after write, write after read, write after write). Reads of a
//!   buffer do not depend on each other, and nor do commands on different buffers, so the
//!   device may overlap them. A dispatch touches its buffers whole; it reads and writes them
//!   unless the lowering says the kernel never writes (or never reads) one.
//! - **Pruning.** A write depends on everything it overlaps, so the earlier accesses it covers
//!   are dropped: whatever depends on the write later is ordered after them through it. The
//!   reads of a buffer that nothing writes accumulate until the next wait.
//! - **Pending reads** land in the host copies, in the order recorded, at the next wait
//!   (`Buffers::flush`), which happens before anything on the host looks at bytes a pending
//!   read will write: a host access, a copy to the device of those bytes, a host function, the
//!   end of a run, `compute.sync`.
//! - After a wait every command is done: everything here is forgotten.

use super::buffers::BufferId;
use crate::backend::Command;
use crate::timeline::Hazard;
use smallvec::SmallVec;
use std::ops::Range;

/// One command's access to a buffer.
#[derive(Clone, Debug)]
struct Access {
    command: Command,
    bytes: Range<usize>,
    write: bool,
}

/// A read recorded but not landed: its bytes go to `bytes` of the host copy of `buffer`.
#[derive(Clone, Debug)]
pub(crate) struct PendingRead {
    pub(crate) buffer: BufferId,
    pub(crate) bytes: Range<usize>,
    pub(crate) command: Command,
}

/// The commands recorded since the last wait. See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    /// By buffer: the accesses since the last wait (not pruned).
    accesses: Vec<SmallVec<[Access; 4]>>,
    /// Reads not landed, in the order recorded.
    pending: Vec<PendingRead>,
    /// The dispatches since the last wait and their kernels' slots in the report.
    dispatches: Vec<(Command, usize)>,
    /// Whether anything was recorded since the last wait.
    recorded: bool,
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

impl Queue {
    /// The earlier accesses an access of `bytes` of `buffer` (a write when `write`) conflicts
    /// with: those that overlap it where one of the two writes. Their commands, each with
    /// whether it wrote (one per conflicting access: a command may come twice).
    pub(crate) fn conflicts<'q>(
        &'q self,
        buffer: BufferId,
        bytes: &'q Range<usize>,
        write: bool,
    ) -> impl Iterator<Item = (Command, bool)> + 'q {
        self.accesses.get(buffer.0).into_iter().flatten().filter_map(move |access| {
            ((write || access.write) && overlaps(&access.bytes, bytes)).then_some((access.command, access.write))
        })
    }

    /// The dependencies of an access of `bytes` of `buffer` that reads and writes as `read` and
    /// `write` say, each with its hazard (see [`Hazard::of`]).
    pub(crate) fn hazards(
        &self,
        buffer: BufferId,
        bytes: &Range<usize>,
        read: bool,
        write: bool,
        into: &mut Vec<(Command, BufferId, Hazard)>,
    ) {
        for (command, earlier_writes) in self.conflicts(buffer, bytes, write) {
            if let Some(hazard) = Hazard::of(earlier_writes, read, write) {
                into.push((command, buffer, hazard));
            }
        }
    }

    /// Adds to `into` the commands an access of `bytes` of `buffer` (a write when `write`)
    /// depends on: those of [`Queue::conflicts`].
    pub(crate) fn dependencies(
        &self,
        buffer: BufferId,
        bytes: &Range<usize>,
        write: bool,
        into: &mut SmallVec<[Command; 8]>,
    ) {
        for (command, _) in self.conflicts(buffer, bytes, write) {
            if !into.contains(&command) {
                into.push(command);
            }
        }
    }

    /// Notes that `command` accesses `bytes` of `buffer` (writes them when `write`). Its
    /// dependencies must have been those [`Queue::dependencies`] gave.
    pub(crate) fn note(&mut self, buffer: BufferId, bytes: Range<usize>, write: bool, command: Command) {
        if self.accesses.len() <= buffer.0 {
            self.accesses.resize_with(buffer.0 + 1, SmallVec::new);
        }
        let accesses = &mut self.accesses[buffer.0];
        if write {
            accesses.retain(|a| !(bytes.start <= a.bytes.start && a.bytes.end <= bytes.end));
        }
        accesses.push(Access { command, bytes, write });
        self.recorded = true;
    }

    /// Notes a read whose bytes go to the host copy of `buffer` at the next wait.
    pub(crate) fn read_pending(&mut self, buffer: BufferId, bytes: Range<usize>, command: Command) {
        self.pending.push(PendingRead { buffer, bytes, command });
    }

    /// Whether a pending read goes to bytes of `buffer`'s host copy that overlap `bytes` (any
    /// bytes, when `None`).
    pub(crate) fn has_pending(&self, buffer: BufferId, bytes: Option<&Range<usize>>) -> bool {
        self.pending.iter().any(|read| read.buffer == buffer && bytes.is_none_or(|bytes| overlaps(&read.bytes, bytes)))
    }

    /// Notes the dispatch `command` of the kernel in slot `kernel` of the report.
    pub(crate) fn dispatched(&mut self, command: Command, kernel: usize) {
        self.dispatches.push((command, kernel));
        self.recorded = true;
    }

    /// The report slot of the kernel that the dispatch `command` ran.
    pub(crate) fn kernel_of(&self, command: Command) -> Option<usize> {
        // Commands are recorded in increasing order.
        let position = self.dispatches.binary_search_by_key(&command, |&(c, _)| c).ok()?;
        Some(self.dispatches[position].1)
    }

    /// How many dispatches are kept for their times.
    pub(crate) fn dispatches_held(&self) -> usize {
        self.dispatches.len()
    }

    /// Forgets the dispatches and accesses of the commands numbered below `done_before`, all
    /// done (their times booked): no later command depends on a done one, and no time of theirs
    /// is still to come. Pending reads stay: they land at the next wait.
    pub(crate) fn forget_done(&mut self, done_before: u64) {
        self.dispatches.retain(|&(command, _)| command.sequence() >= done_before);
        for accesses in &mut self.accesses {
            accesses.retain(|access| access.command.sequence() >= done_before);
        }
    }

    /// Whether anything was recorded since the last wait.
    pub(crate) fn is_idle(&self) -> bool {
        !self.recorded
    }

    /// After a wait: the reads to land, in order; everything else is forgotten.
    pub(crate) fn finished(&mut self) -> Vec<PendingRead> {
        self.accesses.iter_mut().for_each(SmallVec::clear);
        self.dispatches.clear();
        self.recorded = false;
        std::mem::take(&mut self.pending)
    }

    /// Forgets the accesses of a freed buffer (its commands still run; nothing else can touch
    /// it), and its pending reads (its host copy is gone).
    pub(crate) fn forget(&mut self, buffer: BufferId) {
        if let Some(accesses) = self.accesses.get_mut(buffer.0) {
            accesses.clear();
        }
        self.pending.retain(|read| read.buffer != buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deps(queue: &Queue, buffer: usize, bytes: Range<usize>, write: bool) -> Vec<u64> {
        let mut into = SmallVec::new();
        queue.dependencies(BufferId(buffer), &bytes, write, &mut into);
        let mut list: Vec<u64> = into.iter().map(|c| c.sequence()).collect();
        list.sort();
        list
    }

    #[test]
    fn dependencies_follow_conflicting_overlaps_only() {
        let mut queue = Queue::default();
        queue.note(BufferId(0), 0..16, true, Command::new(0)); // write a[0..16]
        queue.note(BufferId(1), 0..16, true, Command::new(1)); // write b
        assert_eq!(deps(&queue, 0, 0..4, false), [0], "read after write");
        assert_eq!(deps(&queue, 0, 16..20, false), [] as [u64; 0], "disjoint bytes");
        queue.note(BufferId(0), 0..4, false, Command::new(2)); // read a[0..4]
        queue.note(BufferId(0), 4..8, false, Command::new(3)); // read a[4..8]
        assert_eq!(deps(&queue, 0, 0..8, false), [0], "reads do not order reads");
        assert_eq!(deps(&queue, 0, 2..6, true), [0, 2, 3], "write after reads and write");
        let hazards = |bytes: Range<usize>, read: bool, write: bool| {
            let mut into = Vec::new();
            queue.hazards(BufferId(0), &bytes, read, write, &mut into);
            into.into_iter().map(|(c, _, h)| (c.sequence(), h)).collect::<Vec<_>>()
        };
        assert_eq!(
            hazards(2..6, false, true),
            [(0, Hazard::WriteAfterWrite), (2, Hazard::WriteAfterRead), (3, Hazard::WriteAfterRead)],
            "each dependency with its hazard"
        );
        assert_eq!(hazards(0..4, true, false), [(0, Hazard::ReadAfterWrite)]);
        assert_eq!(
            hazards(2..6, true, true),
            [(0, Hazard::ReadAfterWrite), (2, Hazard::WriteAfterRead), (3, Hazard::WriteAfterRead)],
            "a read-write access reads what was written"
        );
        queue.note(BufferId(0), 0..16, true, Command::new(4));
        assert_eq!(deps(&queue, 0, 0..16, false), [4], "the covering write pruned what it ordered");
        assert_eq!(deps(&queue, 1, 0..16, false), [1]);
        assert!(queue.kernel_of(Command::new(4)).is_none());
        queue.dispatched(Command::new(4), 7);
        assert_eq!(queue.kernel_of(Command::new(4)), Some(7));
        queue.read_pending(BufferId(1), 8..12, Command::new(5));
        assert!(queue.has_pending(BufferId(1), Some(&(10..20))));
        assert!(!queue.has_pending(BufferId(1), Some(&(0..8))));
        assert!(!queue.has_pending(BufferId(0), None));
        assert!(!queue.is_idle());
        assert_eq!(queue.finished().len(), 1);
        assert!(queue.is_idle());
        assert_eq!(deps(&queue, 0, 0..16, true), [] as [u64; 0], "a wait orders everything");
    }
}
