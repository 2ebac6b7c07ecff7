//! A run's [`RunTimeline`] as Chrome's trace-event JSON (the "JSON Object Format" of the Trace
//! Event Format), which Perfetto (<https://ui.perfetto.dev>) and `chrome://tracing` open.
//! `docs/trace.md` walks through reading it.
//!
//! ```text
//! {"displayTimeUnit": "ns", "traceEvents": [ ... ]}
//! ```
//!
//! Times (`ts`, `dur`) are microseconds from the start of the run. Two processes:
//!
//! - **pid 1, the run** (`hat run @main: <backend> (<device>)`), with two threads:
//!   - tid 1, **`queue`**: one complete event (`"ph": "X"`) per command, in the order
//!     recorded, at the time it ran on the device's queue (see [`crate::timeline`] for the
//!     clocks): category `transfer` (named `to device %img`, `from device %mag`) or `dispatch`
//!     (named `@kernel`). `args`: the command's number, its buffer(s), bytes, grid, `recorded_us`
//!     (when the host recorded it), `clock`, and `dependencies`: `[{"command", "buffer",
//!     "hazard"}]`, hazard being `read-after-write`, `write-after-read` or `write-after-write`.
//!     Before a command that waits on a barrier, an instant event (`"ph": "i"`) named `barrier`,
//!     category `barrier`, with `args.hazards`: the dependencies it orders, each with its buffer
//!     and hazard, and `args.detail`: what the backend synchronised.
//!   - tid 2, **`host`**: the whole run (`run @main`), and each wait of the host for the device
//!     (`wait for the device`).
//! - **pid 2, `device memory`**: one thread per buffer that had a device copy (tid 100 + its
//!   id), named after it, with one complete event from the allocation of its device copy to its
//!   release, category `memory`; `args`: `buffer` (its id), `name`, `type`, `bytes`, and
//!   `arena_offset` (the offset of its device copy in its call's arena, where `plan-memory`
//!   placed it and the backend gives arenas; `null`: an allocation of its own). A counter (`"ph": "C"`) `device bytes` follows the bytes held.

use crate::timeline::{CommandKind, Dependency, RunTimeline};
use serde_json::{json, Value as Json};
use std::time::Duration;

const RUN: u32 = 1;
const MEMORY: u32 = 2;
const QUEUE: u32 = 1;
const HOST: u32 = 2;
/// A buffer's thread in the memory process: this plus its id.
const BUFFER_THREADS: usize = 100;

fn micros(duration: Duration) -> f64 {
    duration.as_nanos() as f64 / 1e3
}

/// The name of buffer `index`, as the IR writes it (`%img`, or `alloc@12:3`).
fn buffer_name(timeline: &RunTimeline, index: usize) -> String {
    match timeline.buffers.get(index) {
        // Buffers the program allocates (`alloc@line:col`) and arenas (`arena#n`) have no SSA
        // name.
        Some(slot) if slot.name.starts_with("alloc@") || slot.name.starts_with("arena#") => slot.name.clone(),
        Some(slot) => format!("%{}", slot.name),
        None => format!("#{index}"),
    }
}

fn dependencies_json(timeline: &RunTimeline, dependencies: &[Dependency]) -> Json {
    dependencies
        .iter()
        .map(|d| json!({ "command": d.on.sequence(), "buffer": buffer_name(timeline, d.buffer), "hazard": d.hazard.name() }))
        .collect()
}

fn metadata(pid: u32, tid: Option<u32>, key: &str, name: &str) -> Json {
    let mut event = json!({ "ph": "M", "pid": pid, "name": key, "args": { "name": name } });
    if let Some(tid) = tid {
        event["tid"] = json!(tid);
    }
    event
}

/// The trace of `timeline` (see the module documentation).
pub fn to_chrome_trace(timeline: &RunTimeline) -> Json {
    let mut events = vec![
        metadata(
            RUN,
            None,
            "process_name",
            &format!("hat run @{}: {} ({})", timeline.entry, timeline.backend, timeline.device),
        ),
        metadata(RUN, Some(QUEUE), "thread_name", "queue"),
        metadata(RUN, Some(HOST), "thread_name", "host"),
        metadata(MEMORY, None, "process_name", "device memory"),
    ];
    events.push(json!({
        "ph": "X", "pid": RUN, "tid": HOST, "cat": "run", "name": format!("run @{}", timeline.entry),
        "ts": 0.0, "dur": micros(timeline.total),
    }));
    for wait in &timeline.waits {
        events.push(json!({
            "ph": "X", "pid": RUN, "tid": HOST, "cat": "wait", "name": "wait for the device",
            "ts": micros(wait.start), "dur": micros(wait.end.saturating_sub(wait.start)),
        }));
    }
    // Where each command sits on the queue: where it ran, else where the host recorded it.
    let place = |record: &crate::timeline::CommandRecord| match record.ran {
        Some((start, end)) => (start, end.saturating_sub(start)),
        None => (record.recorded_at, Duration::ZERO),
    };
    let mut barriers = timeline.barriers.iter().peekable();
    for record in &timeline.commands {
        let (start, duration) = place(record);
        while let Some(barrier) = barriers.next_if(|b| b.before <= record.command) {
            let hazards: Vec<Json> = barrier
                .hazards
                .iter()
                .map(|d| {
                    json!({ "buffer": buffer_name(timeline, d.buffer), "hazard": d.hazard.name(), "after_command": d.on.sequence() })
                })
                .collect();
            events.push(json!({
                "ph": "i", "s": "t", "pid": RUN, "tid": QUEUE, "cat": "barrier", "name": "barrier", "ts": micros(start),
                "args": { "before_command": barrier.before.sequence(), "hazards": hazards, "detail": barrier.detail },
            }));
        }
        let mut args = json!({
            "command": record.command.sequence(),
            "recorded_us": micros(record.recorded_at),
            "clock": if record.ran.is_some() { timeline.clock.as_str() } else { "not measured" },
            "dependencies": dependencies_json(timeline, &record.dependencies),
        });
        let (category, name) = match &record.kind {
            CommandKind::ToDevice { buffer, bytes } | CommandKind::FromDevice { buffer, bytes } => {
                let to_device = matches!(record.kind, CommandKind::ToDevice { .. });
                args["buffer"] = json!(buffer_name(timeline, *buffer));
                args["bytes"] = json!(bytes.len());
                args["offset"] = json!(bytes.start);
                let way = if to_device { "to device" } else { "from device" };
                ("transfer", format!("{way} {}", buffer_name(timeline, *buffer)))
            }
            CommandKind::Dispatch { kernel, grid, buffers } => {
                args["grid"] = json!(grid);
                args["buffers"] = buffers
                    .iter()
                    .map(|&(buffer, read, write)| {
                        let access = match (read, write) {
                            (true, true) => "read-write",
                            (true, false) => "read",
                            (false, true) => "write",
                            (false, false) => "none",
                        };
                        json!({ "buffer": buffer_name(timeline, buffer), "access": access })
                    })
                    .collect();
                ("dispatch", format!("@{kernel}"))
            }
        };
        events.push(json!({
            "ph": "X", "pid": RUN, "tid": QUEUE, "cat": category, "name": name,
            "ts": micros(start), "dur": micros(duration), "args": args,
        }));
    }
    // Device memory: a thread per buffer with a device copy, and the bytes held.
    let mut changes: Vec<(Duration, i128)> = Vec::new();
    for slot in &timeline.buffers {
        let Some(allocated) = slot.device_allocated else { continue };
        let freed = slot.device_freed.unwrap_or(timeline.total).max(allocated);
        let tid = BUFFER_THREADS + slot.id;
        events.push(json!({ "ph": "M", "pid": MEMORY, "tid": tid, "name": "thread_name", "args": { "name": buffer_name(timeline, slot.id) } }));
        events.push(json!({
            "ph": "X", "pid": MEMORY, "tid": tid, "cat": "memory", "name": buffer_name(timeline, slot.id),
            "ts": micros(allocated), "dur": micros(freed - allocated),
            "args": { "buffer": slot.id, "name": buffer_name(timeline, slot.id), "type": slot.type_text, "bytes": slot.bytes, "arena_offset": slot.arena_offset },
        }));
        changes.push((allocated, slot.bytes as i128));
        changes.push((freed, -(slot.bytes as i128)));
    }
    changes.sort_by_key(|&(at, delta)| (at, delta));
    let mut held: i128 = 0;
    for (at, delta) in changes {
        held += delta;
        events.push(
            json!({ "ph": "C", "pid": MEMORY, "name": "device bytes", "ts": micros(at), "args": { "bytes": held } }),
        );
    }
    json!({ "displayTimeUnit": "ns", "traceEvents": events })
}
