//! The timeline of a run: every copy and dispatch the executor recorded on the backend, when it
//! ran on the device's queue, the dependencies between them with the hazard behind each, the
//! barriers the backend recorded and which hazards made each necessary, and each buffer's device
//! memory. [`Executor::set_timeline`](crate::Executor::set_timeline) turns it on;
//! [`crate::chrome_trace`] writes it as Chrome's trace-event JSON (`hat-opt --trace`).
//!
//! Two halves meet here:
//!
//! - **The backend's** ([`BackendTimeline`], from [`Backend::take_timeline`](crate::Backend::take_timeline)):
//!   when each command ran ([`CommandSpan`]), on the backend's clock ([`SpanClock`]: device
//!   timestamps, or the host's wall clock), and the barriers it recorded ([`BarrierRecord`]),
//!   each with the dependencies that made it necessary. A backend that measures nothing gives
//!   nothing; the executor then places each command at the host time it was recorded.
//! - **The executor's**: what each command is (a copy of which bytes of which buffer, a dispatch
//!   of which kernel on which buffers), the host time it was recorded, its dependencies and the
//!   hazard of each ([`Hazard`]: the executor decides dependencies, `executor/queue.rs`), and
//!   each buffer's device copy ([`BufferSlot`]).
//!
//! **Clocks.** Every time here is from the start of the run. Host-clock spans are on that clock
//! already. Device timestamps have an origin of their own that nothing relates to the host's
//! (Vulkan offers one only through an extension), so the device's times are shifted by the
//! smallest amount that puts no command on the device before the host recorded it: a lower
//! bound of the true offset, exact when the device was idle and waiting for a command. Their
//! differences (each command's duration, the gaps between commands) are the device's own.

use crate::backend::Command;
use std::time::Duration;

/// The clock of a backend's [`CommandSpan`]s.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum SpanClock {
    /// Nanoseconds of the host's wall clock since the origin the executor gave
    /// ([`Backend::record_timeline`](crate::Backend::record_timeline)).
    #[default]
    Host,
    /// Nanoseconds of the device's timestamp counter, from an origin of its own.
    Device,
}

/// When one command ran, on the backend's clock. A command the backend ran in pieces (a copy
/// larger than its staging memory, in several batches) may have one span per piece.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CommandSpan {
    /// The command.
    pub command: Command,
    /// Its start, in nanoseconds.
    pub start_ns: u64,
    /// Its end, in nanoseconds.
    pub end_ns: u64,
}

/// A barrier a backend recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarrierRecord {
    /// The command it was recorded before (the command that waits on it).
    pub before: Command,
    /// The dependencies of that command that the barrier orders (those earlier barriers had not
    /// covered already): the reason it exists.
    pub waits_for: Vec<Command>,
    /// What it synchronises, in the backend's words (Vulkan: the source and destination stages
    /// and access masks).
    pub detail: String,
}

/// What a backend recorded of the commands since it was last asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackendTimeline {
    /// The clock of `spans`.
    pub clock: SpanClock,
    /// When commands of waited batches ran.
    pub spans: Vec<CommandSpan>,
    /// The barriers recorded.
    pub barriers: Vec<BarrierRecord>,
}

/// How a command depends on an earlier one, by what the two do to the bytes they share.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Hazard {
    /// The command reads bytes the earlier one wrote.
    ReadAfterWrite,
    /// The command writes bytes the earlier one read.
    WriteAfterRead,
    /// The command writes bytes the earlier one wrote.
    WriteAfterWrite,
}

impl Hazard {
    /// The hazard between an earlier access (a write when `earlier_writes`) and a later one
    /// that reads and writes as `later_reads` and `later_writes` say: read-after-write where
    /// the later one reads what the earlier wrote (a read-write access after a write included:
    /// the data flows), else write-after-write or write-after-read. `None` when neither writes
    /// (reads do not order reads).
    pub fn of(earlier_writes: bool, later_reads: bool, later_writes: bool) -> Option<Hazard> {
        match (earlier_writes, later_reads, later_writes) {
            (true, true, _) => Some(Hazard::ReadAfterWrite),
            (true, false, true) => Some(Hazard::WriteAfterWrite),
            (false, _, true) => Some(Hazard::WriteAfterRead),
            _ => None,
        }
    }

    /// `read-after-write`, `write-after-read` or `write-after-write`.
    pub fn name(self) -> &'static str {
        match self {
            Hazard::ReadAfterWrite => "read-after-write",
            Hazard::WriteAfterRead => "write-after-read",
            Hazard::WriteAfterWrite => "write-after-write",
        }
    }
}

/// A dependency of a command on an earlier one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Dependency {
    /// The earlier command.
    pub on: Command,
    /// The buffer they share (an index into [`RunTimeline::buffers`]).
    pub buffer: usize,
    /// What makes the order matter.
    pub hazard: Hazard,
}

/// What a command does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// A copy from the host copy to the device copy of a buffer.
    ToDevice {
        /// The buffer (an index into [`RunTimeline::buffers`]).
        buffer: usize,
        /// Its bytes copied.
        bytes: std::ops::Range<usize>,
    },
    /// A copy from the device copy to the host copy.
    FromDevice {
        /// The buffer (an index into [`RunTimeline::buffers`]).
        buffer: usize,
        /// Its bytes copied.
        bytes: std::ops::Range<usize>,
    },
    /// A dispatch.
    Dispatch {
        /// The kernel's name (without `@`).
        kernel: String,
        /// Work items per dimension.
        grid: [u64; 3],
        /// Its distinct buffers (indices into [`RunTimeline::buffers`]) and whether it reads and
        /// writes each.
        buffers: Vec<(usize, bool, bool)>,
    },
}

/// One command of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandRecord {
    /// The backend's number of it.
    pub command: Command,
    /// What it does.
    pub kind: CommandKind,
    /// When the host recorded it.
    pub recorded_at: Duration,
    /// When it ran on the queue (see the module documentation for the clock), if the backend
    /// measured it: start and end.
    pub ran: Option<(Duration, Duration)>,
    /// The earlier commands it waits for, each with its buffer and hazard.
    pub dependencies: Vec<Dependency>,
}

/// A barrier, with the hazards it resolves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarrierEvent {
    /// The command it was recorded before.
    pub before: Command,
    /// The dependencies of that command it orders (buffer, hazard, earlier command).
    pub hazards: Vec<Dependency>,
    /// What it synchronises, in the backend's words.
    pub detail: String,
}

/// The memory of one buffer of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferSlot {
    /// Its number in the run (the executor's buffer id).
    pub id: usize,
    /// Its name in the report (a parameter's name, or `alloc@line:col`).
    pub name: String,
    /// Its type, as `memref<64x64xf32>` writes it.
    pub type_text: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// When its device copy was allocated, if it had one.
    pub device_allocated: Option<Duration>,
    /// When its device copy was freed (or left the run), if it was.
    pub device_freed: Option<Duration>,
    /// Where in its call's arena its device copy lies (`plan-memory`, on a backend with arenas);
    /// `None`: an allocation of its own.
    pub arena_offset: Option<u64>,
}

/// A wait of the host for the device.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WaitRecord {
    /// When the host submitted and began to wait.
    pub start: Duration,
    /// When the wait ended.
    pub end: Duration,
}

/// The timeline of one run. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunTimeline {
    /// The entry function run.
    pub entry: String,
    /// The backend's name.
    pub backend: String,
    /// The device, in words.
    pub device: String,
    /// How the queue times of the commands were measured: `device timestamps`, `host wall
    /// clock`, or `not measured` (each command is then placed, with no duration, where the host
    /// recorded it).
    pub clock: String,
    /// The whole run, from the entry's call to its return.
    pub total: Duration,
    /// Every command, in the order recorded.
    pub commands: Vec<CommandRecord>,
    /// Every barrier the backend recorded, in order.
    pub barriers: Vec<BarrierEvent>,
    /// Every buffer of the run, by id.
    pub buffers: Vec<BufferSlot>,
    /// The host's waits for the device.
    pub waits: Vec<WaitRecord>,
}

impl RunTimeline {
    /// How many dispatches.
    pub fn dispatches(&self) -> usize {
        self.commands.iter().filter(|c| matches!(c.kind, CommandKind::Dispatch { .. })).count()
    }

    /// How many copies, both ways.
    pub fn transfers(&self) -> usize {
        self.commands.len() - self.dispatches()
    }
}
