//! The CPU backend's side of the asynchronous contract ([`crate::backend`]). Commands run when
//! they are recorded (so an error comes back from the `record_*` call, with the dispatch's
//! location); what this file keeps is what the contract makes the caller wait for, so that a
//! caller that forgets to wait is caught here rather than on a GPU:
//!
//! - a read's bytes are copied when it is recorded, but [`Batches::take_read`] hands them out
//!   only once the read's batch was waited for, and only once; reads of a waited batch left
//!   untaken are discarded when the next command is recorded;
//! - a dependency must name a command already recorded;
//! - a fence must name a submitted batch;
//! - each dispatch's time (the wall time of its interpretation) is handed out by the wait
//!   that completes its batch.

use crate::backend::{Command, DispatchTime, Fence};
use crate::error::RuntimeError;
use rustc_hash::FxHashMap;

/// The bytes of one read.
#[derive(Debug)]
struct Read {
    batch: u64,
    bytes: Vec<u8>,
}

/// Commands, batches and the results they hold back. See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Batches {
    /// The number of the next command.
    next_command: u64,
    /// The number of the open batch (every batch below it was submitted).
    open: u64,
    /// Batches below this one were waited for.
    waited: u64,
    reads: FxHashMap<u64, Read>,
    /// Dispatch times not handed out yet, with their batches.
    times: Vec<(u64, DispatchTime)>,
}

impl Batches {
    /// Numbers a new command of the open batch, after checking its dependencies; discards the
    /// untaken reads of waited batches.
    pub(crate) fn record(&mut self, after: &[Command]) -> Result<Command, RuntimeError> {
        if let Some(unknown) = after.iter().find(|c| c.sequence() >= self.next_command) {
            return Err(RuntimeError::Backend(format!(
                "cpu backend: a command depends on command #{}, which was not recorded yet",
                unknown.sequence()
            )));
        }
        let waited = self.waited;
        if !self.reads.is_empty() {
            self.reads.retain(|_, read| read.batch >= waited);
        }
        let command = Command::new(self.next_command);
        self.next_command += 1;
        Ok(command)
    }

    /// Keeps the bytes of the read `command` until its batch is waited for.
    pub(crate) fn hold_read(&mut self, command: Command, bytes: Vec<u8>) {
        self.reads.insert(command.sequence(), Read { batch: self.open, bytes });
    }

    /// Keeps the time of the dispatch `command` until its batch is waited for.
    pub(crate) fn hold_time(&mut self, time: DispatchTime) {
        self.times.push((self.open, time));
    }

    /// Closes the open batch.
    pub(crate) fn submit(&mut self) -> Fence {
        let fence = Fence::new(self.open);
        self.open += 1;
        fence
    }

    /// Marks the batches up to `fence` done; gives their dispatch times.
    pub(crate) fn wait(&mut self, fence: Fence) -> Result<Vec<DispatchTime>, RuntimeError> {
        if fence.sequence() >= self.open {
            return Err(RuntimeError::Backend(format!(
                "cpu backend: fence #{} names a batch that was not submitted",
                fence.sequence()
            )));
        }
        self.waited = self.waited.max(fence.sequence() + 1);
        let waited = self.waited;
        let (done, pending): (Vec<_>, Vec<_>) = self.times.drain(..).partition(|(batch, _)| *batch < waited);
        self.times = pending;
        Ok(done.into_iter().map(|(_, time)| time).collect())
    }

    /// The times of every dispatch run so far and not given out, and the next command: a
    /// command runs when it is recorded, so every one recorded is done.
    pub(crate) fn completed(&mut self) -> crate::backend::Completed {
        let times = self.times.drain(..).map(|(_, time)| time).collect();
        crate::backend::Completed { times, done_before: self.next_command }
    }

    /// Copies out the bytes of the read `command`, once its batch was waited for.
    pub(crate) fn take_read(&mut self, command: Command, into: &mut [u8]) -> Result<(), RuntimeError> {
        let read = self.reads.get(&command.sequence()).ok_or(RuntimeError::StaleHandle {
            what: "read",
            index: command.sequence(),
            generation: 0,
        })?;
        if read.batch >= self.waited {
            return Err(RuntimeError::Backend(format!(
                "cpu backend: read #{} is taken before its batch #{} was waited for",
                command.sequence(),
                read.batch
            )));
        }
        if read.bytes.len() != into.len() {
            return Err(RuntimeError::Backend(format!(
                "cpu backend: read #{} has {} bytes, taken into {}",
                command.sequence(),
                read.bytes.len(),
                into.len()
            )));
        }
        into.copy_from_slice(&read.bytes);
        self.reads.remove(&command.sequence());
        Ok(())
    }
}
