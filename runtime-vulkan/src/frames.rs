//! Batches on the device: a [`Frame`] is one batch's command buffer, fence, timestamp queries
//! and the staging it holds; and [`Hazards`] decides where a pipeline barrier goes.
//!
//! **Barriers.** Consecutive copies and dispatches are recorded into one command buffer with no
//! barrier between them unless a command depends on an earlier one (the executor says which:
//! `after`). Then one global memory barrier goes before it, from the stages of the earlier
//! commands it depends on (transfer, compute) to its own stage, making their writes visible.
//! The barrier covers every command of those stages recorded before it, so per pair of stages a
//! watermark says which commands are already ordered, and a later dependency on one of them
//! needs no second barrier. With `VulkanOptions::buffer_barriers` the barrier before a dispatch
//! names the dispatch's buffers instead (its dependencies are all on them): it orders execution
//! alike but makes only their writes visible, so it raises no watermark. A dependency on a
//! command of an earlier batch that was not waited for gets a barrier from all commands
//! (submission order spans batches on one queue); one on a command of a waited batch needs
//! nothing (the wait did it). A batch with copies back ends
//! with a barrier from transfers to host reads, so the host sees their bytes after the wait.
//!
//! **Early submission.** The backend submits a batch before the executor does once it holds
//! `batch_commands` commands, or 16 (then 32, 64, ... up to `batch_commands`, a size that
//! restarts at each submit of the executor) while everything submitted before is done, and
//! after each piece of a copy larger than the staging ring: the device starts on the
//! first commands while the host records the rest. The executor's fence is the last batch's;
//! waiting for it waits for every batch before. A command that depends on one in a batch
//! submitted early gets the barrier from all commands above, which covers it.
//!
//! **Binds.** Within a command buffer, a dispatch binds the pipeline, the descriptor set and the
//! push constants only where they differ from what is bound (a chain of one kernel on the same
//! buffers binds once).
//!
//! **Timestamps.** Where the queue has them, each dispatch is bracketed by two timestamps at the
//! bottom of the pipe: the first is written when every command before the dispatch is done, the
//! second when the dispatch is, so the difference is the dispatch's own time, and the times of
//! concurrent dispatches add up to their span without counting an overlap twice. While a
//! timeline is recorded (`Backend::record_timeline`), copies are bracketed alike, and the
//! absolute times of both go to the timeline; and each barrier is noted with the dependencies
//! that made it necessary ([`Hazards::needing`]), which the executor turns into hazards on
//! buffers. Neither changes what is recorded otherwise.

use crate::memory::Block;
use ash::vk;
use hat_runtime::Command;

/// A batch: recording, or submitted.
pub(crate) struct Frame {
    /// Its batch number.
    pub sequence: u64,
    /// Its first command's number.
    pub first_command: u64,
    pub commands: vk::CommandBuffer,
    pub fence: vk::Fence,
    pub query_pools: Vec<vk::QueryPool>,
    /// Queries used (two per timed dispatch), across the pools.
    pub queries: u32,
    /// The timed dispatches and their first query.
    pub timed: Vec<(Command, u32)>,
    /// The copies timed for a timeline (`VulkanBackend`'s `record_timeline`) and their first
    /// query: one entry per piece of a copy recorded in pieces.
    pub timed_copies: Vec<(Command, u32)>,
    /// Spans of the upload ring its copies read.
    pub uploads: Vec<u64>,
    /// Upload staging pieces its copies read (copies that did not fit the ring).
    pub pieces: Vec<Block>,
    /// Its copies back, and where their bytes land.
    pub reads: Vec<(Command, Landing)>,
    /// What its command buffer has bound so far (none at its beginning): a dispatch that
    /// binds the same pipeline, set or push constants again records no bind.
    pub bound: Bound,
}

/// The compute state a command buffer has bound.
#[derive(Default)]
pub(crate) struct Bound {
    pub pipeline: vk::Pipeline,
    pub layout: vk::PipelineLayout,
    pub set: vk::DescriptorSet,
    /// The push-constant bytes set with `layout` (empty: none).
    pub push: smallvec::SmallVec<[u8; 64]>,
}

/// Where the bytes of a copy back land.
pub(crate) enum Landing {
    /// A span of the download ring: (span id, offset, length).
    Ring(u64, u64, usize),
    /// Download staging pieces, in order (each full but the last), and the length.
    Pieces(Vec<Block>, usize),
}

/// Queries per timestamp pool.
pub(crate) const QUERIES_PER_POOL: u32 = 512;

/// The pipeline stage of a command.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Transfer,
    Compute,
}

impl Stage {
    pub(crate) fn flags(self) -> vk::PipelineStageFlags {
        match self {
            Stage::Transfer => vk::PipelineStageFlags::TRANSFER,
            Stage::Compute => vk::PipelineStageFlags::COMPUTE_SHADER,
        }
    }

    fn write_access(self) -> vk::AccessFlags {
        match self {
            Stage::Transfer => vk::AccessFlags::TRANSFER_WRITE,
            Stage::Compute => vk::AccessFlags::SHADER_WRITE,
        }
    }

    /// Everything a command of this stage may do to memory.
    pub(crate) fn access(self) -> vk::AccessFlags {
        match self {
            Stage::Transfer => vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::TRANSFER_WRITE,
            Stage::Compute => vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
        }
    }

    fn index(self) -> usize {
        match self {
            Stage::Transfer => 0,
            Stage::Compute => 1,
        }
    }
}

/// A barrier to record: source stages and accesses, destination stage.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Barrier {
    pub src_stages: vk::PipelineStageFlags,
    pub src_access: vk::AccessFlags,
    pub dst: Stage,
}

/// What the open batch's barriers already order, in constant time per dependency (a chain of
/// n dispatches costs n, not n²). A barrier from stage S to stage D orders *every* command of
/// stage S recorded before it, so per (S, D) a watermark says up to where S's commands are
/// ordered before D; per stage, the last command that writes says whether the barrier must make
/// writes visible. See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Hazards {
    /// The open batch's first command.
    first: u64,
    /// The stage of each command recorded in the open batch, by its number less `first`
    /// (`None`: a command that recorded nothing).
    stages: Vec<Option<Stage>>,
    /// Per source stage and destination stage: the commands of the source stage numbered
    /// below this are ordered before the destination stage.
    covered: [[u64; 2]; 2],
    /// Per stage: one past the number of its last command that writes (0: none).
    last_write: [u64; 2],
    /// One past the number of the last command recorded.
    next: u64,
}

/// Why a dependency needs a barrier.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Reason {
    /// A command of the open batch of this stage, which no barrier has ordered yet.
    Stage(Stage),
    /// A command of an earlier batch that was not waited for.
    EarlierBatch,
}

impl Hazards {
    /// Why a command of stage index `dst` needs a barrier for its dependency on `dependency`,
    /// if it does. `first_command` and `waited_floor` as for [`Hazards::before`].
    fn reason(&self, dst: usize, dependency: Command, first_command: u64, waited_floor: u64) -> Option<Reason> {
        let sequence = dependency.sequence();
        if sequence >= first_command {
            let recorded = sequence.checked_sub(self.first).and_then(|i| self.stages.get(i as usize));
            match recorded {
                Some(&Some(source)) if sequence >= self.covered[source.index()][dst] => Some(Reason::Stage(source)),
                _ => None,
            }
        } else if sequence >= waited_floor {
            Some(Reason::EarlierBatch)
        } else {
            None
        }
    }

    /// The dependencies in `after` that make a command of stage `stage` need a barrier (what
    /// [`Hazards::before`] would order), without noting anything. Empty: no barrier.
    pub(crate) fn needing(
        &self,
        stage: Stage,
        after: &[Command],
        first_command: u64,
        waited_floor: u64,
    ) -> Vec<Command> {
        let dst = stage.index();
        after.iter().copied().filter(|&c| self.reason(dst, c, first_command, waited_floor).is_some()).collect()
    }

    /// The barrier a command of stage `stage` that depends on `after` needs, if any, and notes
    /// what it orders. `first_command` is the open batch's first command, `waited_floor` the
    /// first command of a batch not waited for. A `global` barrier makes every earlier write of
    /// its source stages visible, so it raises the watermarks; one narrowed to the command's
    /// own buffers orders execution alike but makes only their writes visible, so it leaves
    /// them: a later dependency on another buffer gets a barrier of its own.
    pub(crate) fn before(
        &mut self,
        stage: Stage,
        after: &[Command],
        first_command: u64,
        waited_floor: u64,
        global: bool,
    ) -> Option<Barrier> {
        let dst = stage.index();
        let mut sources = [false; 2];
        let mut earlier_batch = false;
        for &dependency in after {
            match self.reason(dst, dependency, first_command, waited_floor) {
                Some(Reason::Stage(source)) => sources[source.index()] = true,
                Some(Reason::EarlierBatch) => earlier_batch = true,
                None => {}
            }
        }
        if earlier_batch {
            sources = [true, true];
        }
        if !sources.iter().any(|&s| s) {
            return None;
        }
        let mut src_stages = vk::PipelineStageFlags::empty();
        let mut src_access = vk::AccessFlags::empty();
        for source in [Stage::Transfer, Stage::Compute] {
            let i = source.index();
            if !sources[i] {
                continue;
            }
            src_stages |= source.flags();
            if self.last_write[i] > self.covered[i][dst] {
                src_access |= source.write_access();
            }
            if global {
                self.covered[i][dst] = self.next;
            }
        }
        if earlier_batch {
            src_stages = vk::PipelineStageFlags::ALL_COMMANDS;
            src_access |= vk::AccessFlags::MEMORY_WRITE;
        }
        Some(Barrier { src_stages, src_access, dst: stage })
    }

    /// Notes a recorded command. A command begun in an earlier batch (a copy recorded in
    /// pieces, the batch submitted between them) is not noted: a dependency on it is one on an
    /// earlier batch.
    pub(crate) fn recorded(&mut self, command: Command, stage: Stage, writes: bool) {
        let sequence = command.sequence();
        let Some(index) = sequence.checked_sub(self.first) else {
            return;
        };
        let index = index as usize;
        if self.stages.len() <= index {
            self.stages.resize(index + 1, None);
        }
        self.stages[index] = Some(stage);
        if writes {
            self.last_write[stage.index()] = self.last_write[stage.index()].max(sequence + 1);
        }
        self.next = self.next.max(sequence + 1);
    }

    /// A new batch, beginning at command `first`: nothing recorded in it yet.
    pub(crate) fn clear(&mut self, first: u64) {
        self.stages.clear();
        self.covered = [[0; 2]; 2];
        self.last_write = [0; 2];
        self.next = 0;
        self.first = first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(n: u64) -> Command {
        Command::new(n)
    }

    #[test]
    fn barriers_only_where_a_command_depends_on_an_earlier_one() {
        let mut hazards = Hazards::default();
        // Two copies in, then two independent dispatches each on one of them.
        hazards.recorded(c(0), Stage::Transfer, true);
        hazards.recorded(c(1), Stage::Transfer, true);
        assert_eq!(hazards.needing(Stage::Compute, &[c(0)], 0, 0), [c(0)], "the reason of the barrier to come");
        let barrier = hazards.before(Stage::Compute, &[c(0)], 0, 0, true).expect("a dispatch after its copy");
        assert_eq!(barrier.src_stages, vk::PipelineStageFlags::TRANSFER);
        assert_eq!(barrier.src_access, vk::AccessFlags::TRANSFER_WRITE);
        hazards.recorded(c(2), Stage::Compute, true);
        assert!(hazards.needing(Stage::Compute, &[c(1)], 0, 0).is_empty(), "covered: no reason");
        assert_eq!(hazards.before(Stage::Compute, &[c(1)], 0, 0, true), None, "the first barrier covered copy 1 too");
        hazards.recorded(c(3), Stage::Compute, true);
        assert_eq!(hazards.before(Stage::Compute, &[], 0, 0, true), None, "independent: no barrier");
        hazards.recorded(c(4), Stage::Compute, false);
        // A copy back of what dispatch 2 wrote.
        let barrier = hazards.before(Stage::Transfer, &[c(2)], 0, 0, true).unwrap();
        assert_eq!(barrier.src_stages, vk::PipelineStageFlags::COMPUTE_SHADER);
        assert_eq!(barrier.src_access, vk::AccessFlags::SHADER_WRITE);
        // Dispatch after dispatch 3: not yet ordered before compute.
        let barrier = hazards.before(Stage::Compute, &[c(3)], 0, 0, true).unwrap();
        assert_eq!(barrier.src_stages, vk::PipelineStageFlags::COMPUTE_SHADER);
        // A dependency on a batch not waited for, and on one that was.
        assert_eq!(hazards.needing(Stage::Compute, &[c(1)], 10, 0), [c(1)]);
        assert!(hazards.needing(Stage::Compute, &[c(1)], 10, 5).is_empty());
        assert_eq!(
            hazards.before(Stage::Compute, &[c(1)], 10, 0, true).unwrap().src_stages,
            vk::PipelineStageFlags::ALL_COMMANDS
        );
        assert_eq!(hazards.before(Stage::Compute, &[c(1)], 10, 5, true), None);
    }

    #[test]
    fn a_barrier_narrowed_to_buffers_covers_nothing_else() {
        let mut hazards = Hazards::default();
        // Two dispatches writing two buffers; a third reads the first's buffer through a barrier
        // narrowed to it: a fourth that reads the second's buffer still needs its own barrier.
        hazards.recorded(c(0), Stage::Compute, true);
        hazards.recorded(c(1), Stage::Compute, true);
        assert!(hazards.before(Stage::Compute, &[c(0)], 0, 0, false).is_some());
        hazards.recorded(c(2), Stage::Compute, false);
        let barrier = hazards.before(Stage::Compute, &[c(1)], 0, 0, false).expect("not made visible yet");
        assert_eq!(barrier.src_access, vk::AccessFlags::SHADER_WRITE);
        // A global barrier covers both.
        assert!(hazards.before(Stage::Compute, &[c(1)], 0, 0, true).is_some());
        hazards.recorded(c(3), Stage::Compute, false);
        assert_eq!(hazards.before(Stage::Compute, &[c(0)], 0, 0, true), None);
    }
}
