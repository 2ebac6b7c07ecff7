//! The executor's half of a run's [`RunTimeline`] (see [`crate::timeline`]), recorded while
//! [`Executor::set_timeline`](super::Executor::set_timeline) is on: each command as the executor
//! recorded it (what it does, when, its dependencies with their hazards), the backend's spans and
//! barriers as each wait brings them, the life of each buffer's device copy, and the waits.
//! [`TimelineLog::finish`] puts the two halves together on one clock.

use super::buffers::BufferId;
use crate::backend::Command;
use crate::timeline::{
    BackendTimeline, BarrierEvent, BarrierRecord, BufferSlot, CommandKind, CommandRecord, CommandSpan, Dependency,
    Hazard, RunTimeline, SpanClock, WaitRecord,
};
use crate::value::BufferLayout;
use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

/// What a logged command does; buffers by id, kernels by their slot in the report.
#[derive(Clone, Debug)]
pub(crate) enum LoggedKind {
    ToDevice(BufferId, std::ops::Range<usize>),
    FromDevice(BufferId, std::ops::Range<usize>),
    Dispatch { kernel_slot: usize, grid: [u64; 3], buffers: Vec<(BufferId, bool, bool)> },
}

#[derive(Clone, Debug)]
struct Logged {
    command: Command,
    kind: LoggedKind,
    recorded_at: Duration,
    dependencies: Vec<(Command, BufferId, Hazard)>,
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct TimelineLog {
    /// The run's start: every time is counted from it.
    start: Instant,
    commands: Vec<Logged>,
    /// The index in `commands` of each command, by its number.
    by_number: FxHashMap<u64, usize>,
    clock: SpanClock,
    spans: Vec<CommandSpan>,
    barriers: Vec<BarrierRecord>,
    /// Per buffer id: when its device copy was allocated and freed.
    device_life: Vec<(Option<Duration>, Option<Duration>)>,
    /// Per buffer whose device copy is a window of an arena (`plan-memory`): its offset there.
    arena_offsets: rustc_hash::FxHashMap<usize, u64>,
    waits: Vec<WaitRecord>,
}

/// What [`TimelineLog::finish`] needs to know of the run.
pub(crate) struct RunFacts<'r> {
    pub(crate) entry: &'r str,
    pub(crate) backend: &'r str,
    pub(crate) device: &'r str,
    /// Per buffer id: its name and layout.
    pub(crate) buffers: Vec<(String, BufferLayout)>,
    /// Per kernel slot of the report: the kernel's name.
    pub(crate) kernels: Vec<String>,
}

impl TimelineLog {
    pub(crate) fn new(start: Instant) -> Self {
        TimelineLog {
            start,
            commands: Vec::new(),
            by_number: FxHashMap::default(),
            clock: SpanClock::Host,
            spans: Vec::new(),
            barriers: Vec::new(),
            device_life: Vec::new(),
            arena_offsets: rustc_hash::FxHashMap::default(),
            waits: Vec::new(),
        }
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// A command just recorded, with its dependencies and their hazards.
    pub(crate) fn command(
        &mut self,
        command: Command,
        kind: LoggedKind,
        dependencies: Vec<(Command, BufferId, Hazard)>,
    ) {
        self.by_number.insert(command.sequence(), self.commands.len());
        let recorded_at = self.now();
        self.commands.push(Logged { command, kind, recorded_at, dependencies });
    }

    fn life(&mut self, id: BufferId) -> &mut (Option<Duration>, Option<Duration>) {
        if self.device_life.len() <= id.0 {
            self.device_life.resize(id.0 + 1, (None, None));
        }
        &mut self.device_life[id.0]
    }

    /// The device copy of `id` was allocated (or, for a buffer kept from an earlier run, joined
    /// the run).
    pub(crate) fn device_allocated(&mut self, id: BufferId) {
        let now = self.now();
        self.life(id).0 = Some(now);
    }

    /// The device copy of `id` is a window at `offset` of its call's arena.
    pub(crate) fn device_window(&mut self, id: BufferId, offset: usize) {
        self.device_allocated(id);
        self.arena_offsets.insert(id.0, offset as u64);
    }

    /// The device copy of `id` was freed, or left the run.
    pub(crate) fn device_freed(&mut self, id: BufferId) {
        let now = self.now();
        self.life(id).1 = Some(now);
    }

    /// A wait that began at `began` is over; `backend` is what the backend recorded meanwhile.
    pub(crate) fn waited(&mut self, began: Instant, backend: BackendTimeline) {
        let start = began.saturating_duration_since(self.start);
        self.waits.push(WaitRecord { start, end: self.now() });
        self.take(backend);
    }

    /// Keeps what the backend recorded.
    pub(crate) fn take(&mut self, backend: BackendTimeline) {
        if !backend.spans.is_empty() {
            self.clock = backend.clock;
        }
        self.spans.extend(backend.spans);
        self.barriers.extend(backend.barriers);
    }

    /// The timeline: the commands on one clock (see [`crate::timeline`]), the barriers with their
    /// hazards, the buffers.
    pub(crate) fn finish(self, facts: RunFacts<'_>) -> RunTimeline {
        // Each command's span on the backend's clock: the first start and last end of its pieces.
        let mut ran: Vec<Option<(u64, u64)>> = vec![None; self.commands.len()];
        for span in &self.spans {
            let Some(&index) = self.by_number.get(&span.command.sequence()) else { continue };
            ran[index] = Some(match ran[index] {
                Some((start, end)) => (start.min(span.start_ns), end.max(span.end_ns)),
                None => (span.start_ns, span.end_ns),
            });
        }
        let measured = ran.iter().any(Option::is_some);
        // Device timestamps: the smallest shift that starts no command before it was recorded.
        let shift: i128 = match self.clock {
            SpanClock::Host => 0,
            SpanClock::Device => self
                .commands
                .iter()
                .zip(&ran)
                .filter_map(|(logged, ran)| ran.map(|(start, _)| logged.recorded_at.as_nanos() as i128 - start as i128))
                .max()
                .unwrap_or(0),
        };
        let on_run_clock = |ns: u64| Duration::from_nanos((ns as i128 + shift).max(0) as u64);
        let commands: Vec<CommandRecord> = self
            .commands
            .iter()
            .zip(&ran)
            .map(|(logged, ran)| CommandRecord {
                command: logged.command,
                kind: match &logged.kind {
                    LoggedKind::ToDevice(id, bytes) => CommandKind::ToDevice { buffer: id.0, bytes: bytes.clone() },
                    LoggedKind::FromDevice(id, bytes) => CommandKind::FromDevice { buffer: id.0, bytes: bytes.clone() },
                    LoggedKind::Dispatch { kernel_slot, grid, buffers } => CommandKind::Dispatch {
                        kernel: facts.kernels.get(*kernel_slot).cloned().unwrap_or_default(),
                        grid: *grid,
                        buffers: buffers.iter().map(|&(id, read, write)| (id.0, read, write)).collect(),
                    },
                },
                recorded_at: logged.recorded_at,
                ran: ran.map(|(start, end)| (on_run_clock(start), on_run_clock(end))),
                dependencies: logged
                    .dependencies
                    .iter()
                    .map(|&(on, buffer, hazard)| Dependency { on, buffer: buffer.0, hazard })
                    .collect(),
            })
            .collect();
        let barriers = self
            .barriers
            .iter()
            .map(|barrier| {
                let dependencies = self
                    .by_number
                    .get(&barrier.before.sequence())
                    .map(|&index| commands[index].dependencies.as_slice())
                    .unwrap_or_default();
                BarrierEvent {
                    before: barrier.before,
                    hazards: dependencies.iter().filter(|d| barrier.waits_for.contains(&d.on)).copied().collect(),
                    detail: barrier.detail.clone(),
                }
            })
            .collect();
        let buffers = facts
            .buffers
            .iter()
            .enumerate()
            .map(|(id, (name, layout))| {
                let (allocated, freed) = self.device_life.get(id).copied().unwrap_or((None, None));
                BufferSlot {
                    id,
                    name: name.clone(),
                    type_text: type_text(layout),
                    bytes: layout.bytes() as u64,
                    device_allocated: allocated,
                    device_freed: freed,
                    arena_offset: self.arena_offsets.get(&id).copied(),
                }
            })
            .collect();
        RunTimeline {
            entry: facts.entry.to_string(),
            backend: facts.backend.to_string(),
            device: facts.device.to_string(),
            clock: match (measured, self.clock) {
                (false, _) => "not measured",
                (true, SpanClock::Device) => "device timestamps",
                (true, SpanClock::Host) => "host wall clock",
            }
            .to_string(),
            total: self.now(),
            commands,
            barriers,
            buffers,
            waits: self.waits,
        }
    }
}

/// `memref<64x64xf32>` of a layout.
fn type_text(layout: &BufferLayout) -> String {
    let dims: String = layout.shape.iter().map(|d| format!("{d}x")).collect();
    format!("memref<{dims}{}>", crate::eval::type_name(layout.element))
}
