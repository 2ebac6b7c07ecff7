//! Accounting of a run: what moved between host and device (count and bytes, each way, per
//! buffer), the dispatches (per kernel), host-function calls, the runtime-tracking hooks reached,
//! device memory, and time. [`RunReport::to_json`] gives the object `hat-opt --report=json` prints.

use crate::kernel_cache::KernelCacheStats;
use hat_dialects::buffer::{AfterHostReadOp, AfterHostWriteOp, BeforeHostReadOp, BeforeHostWriteOp};
use hat_ir::{Context, Op};
use serde_json::{json, Value as Json};
use std::fmt;
use std::time::Duration;

/// A number of transfers in one direction and the bytes they moved.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferCount {
    /// How many transfers.
    pub count: u64,
    /// How many bytes they moved.
    pub bytes: u64,
}

impl TransferCount {
    /// Adds one transfer of `bytes` bytes.
    pub fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
    }

    /// `{"count": N, "bytes": B}`.
    pub fn to_json(&self) -> Json {
        json!({ "count": self.count, "bytes": self.bytes })
    }
}

/// The transfers of one buffer. Buffers that the program allocates are named after the
/// `buffer.alloc` that made them (`alloc@line:col`), and every buffer one `buffer.alloc` makes
/// (say, in a loop) is counted under that one name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BufferTransfers {
    /// The entry parameter's source name (`data`, without `%`; `arg0` when unknown), or
    /// `alloc@line:col` for a buffer the program allocates.
    pub name: String,
    /// Copies to the device.
    pub to_device: TransferCount,
    /// Copies from the device.
    pub from_device: TransferCount,
    /// Whether the buffer ever had a host copy (a buffer the program allocates gets one only when
    /// host code, a host function or a transfer touches it).
    pub host_copy: bool,
    /// Whether the buffer ever had a device copy (made by its first transfer or dispatch).
    pub device_copy: bool,
}

/// How many dispatches of one kernel, and how long they ran on the device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelDispatches {
    /// The kernel's symbol name (without `@`).
    pub name: String,
    /// How many times it was dispatched.
    pub dispatches: u64,
    /// The device time of its dispatches, as the backend measured it (GPU timestamps; the CPU
    /// backend's wall time of each dispatch); `None` when the backend measured none of them.
    pub device_time: Option<Duration>,
}

/// How many times each runtime-tracking hook ([`HostHook`]) ran. In the
/// executor's explicit and reference modes the hooks move nothing; they are only counted.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct HookCounts {
    /// `buffer.before_host_read`.
    pub before_host_read: u64,
    /// `buffer.after_host_read`.
    pub after_host_read: u64,
    /// `buffer.before_host_write`.
    pub before_host_write: u64,
    /// `buffer.after_host_write`.
    pub after_host_write: u64,
}

impl HookCounts {
    /// All hooks together.
    pub fn total(&self) -> u64 {
        self.before_host_read + self.after_host_read + self.before_host_write + self.after_host_write
    }
}

/// What one run did. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunReport {
    /// The transfer mode (`explicit`, `reference` or `tracking`).
    pub mode: String,
    /// The backend's name.
    pub backend: String,
    /// The device it ran on, in words ([`crate::Backend::device_name`]).
    pub device: String,
    /// All copies to the device.
    pub to_device: TransferCount,
    /// All copies from the device.
    pub from_device: TransferCount,
    /// The same, per buffer: the entry's buffer parameters first (in parameter order, moved or
    /// not), then the buffers the program allocates, in the order they were first allocated.
    pub per_buffer: Vec<BufferTransfers>,
    /// How many dispatches.
    pub dispatches: u64,
    /// Dispatches per kernel, in the order of each kernel's first dispatch.
    pub kernels: Vec<KernelDispatches>,
    /// Calls of host functions (`compute.call` of a `compute.host_func`).
    pub host_calls: u64,
    /// The runtime-tracking hooks reached.
    pub hooks: HookCounts,
    /// `compute.sync`s run.
    pub syncs: u64,
    /// Times the executor submitted what it had recorded and waited for the device (at a
    /// `compute.sync`, where the host needed bytes a copy back brings, and at the end).
    pub waits: u64,
    /// Device buffers allocated (device copies made).
    pub device_allocations: u64,
    /// The most bytes of device memory held at once (by the layouts of the live device copies).
    pub peak_device_bytes: u64,
    /// Time spent in the backend's dispatches and waits (wall time on the host: with an
    /// asynchronous backend, the time to record, to submit and to wait).
    pub kernel_time: Duration,
    /// The part of `kernel_time` spent in the executor's waits (the submission of what it had
    /// recorded and the wait for it). With an asynchronous backend, a run whose waits are short
    /// against its recording was paced by the host; one whose waits are long, by the device.
    pub wait_time: Duration,
    /// Time spent in the backend's copies (recording them, and taking the bytes of reads).
    pub transfer_time: Duration,
    /// The device time of all dispatches, as the backend measured it (the sum over
    /// [`RunReport::kernels`]); `None` when it measured none.
    pub device_time: Option<Duration>,
    /// The whole run, from the entry's call to its return.
    pub total_time: Duration,
    /// What the backend's kernel cache on disk did during the run
    /// ([`crate::Backend::kernel_cache`]); `None` for a backend without one.
    pub kernel_cache: Option<KernelCacheStats>,
}

impl RunReport {
    /// Total bytes moved, both ways.
    pub fn total_bytes(&self) -> u64 {
        self.to_device.bytes + self.from_device.bytes
    }

    /// Total transfers, both ways.
    pub fn total_transfers(&self) -> u64 {
        self.to_device.count + self.from_device.count
    }

    /// The transfers of the buffer named `name`, if it appears.
    pub fn buffer(&self, name: &str) -> Option<&BufferTransfers> {
        self.per_buffer.iter().find(|b| b.name == name)
    }

    /// The report as one JSON object:
    ///
    /// ```json
    /// {"mode": "reference", "backend": "cpu", "device": "the CPU reference backend (an interpreter)",
    ///  "transfers": {"to_device": {"count": 1, "bytes": 256}, "from_device": {"count": 1, "bytes": 256},
    ///                "per_buffer": [{"name": "data", "to_device": {...}, "from_device": {...},
    ///                                "host_copy": true, "device_copy": true}]},
    ///  "dispatches": 1, "kernels": [{"name": "square", "dispatches": 1, "device_ms": 0.02}],
    ///  "host_calls": 0, "syncs": 0, "waits": 1,
    ///  "hooks": {"before_host_read": 0, "after_host_read": 0, "before_host_write": 0, "after_host_write": 0},
    ///  "device_memory": {"allocations": 1, "peak_bytes": 256},
    ///  "time": {"total_ms": 0.12, "kernels_ms": 0.05, "transfers_ms": 0.01, "device_ms": 0.02},
    /// ```
    ///
    /// A `device_ms` is `null` where the backend measured no device time. A backend with a
    /// kernel cache on disk adds `"kernel_cache"`: [`KernelCacheStats::to_json`].
    pub fn to_json(&self) -> Json {
        let per_buffer: Vec<Json> = self
            .per_buffer
            .iter()
            .map(|b| {
                json!({
                    "name": b.name,
                    "to_device": b.to_device.to_json(),
                    "from_device": b.from_device.to_json(),
                    "host_copy": b.host_copy,
                    "device_copy": b.device_copy,
                })
            })
            .collect();
        let kernels: Vec<Json> = self
            .kernels
            .iter()
            .map(|k| json!({ "name": k.name, "dispatches": k.dispatches, "device_ms": k.device_time.map(millis) }))
            .collect();
        let mut json = json!({
            "mode": self.mode,
            "backend": self.backend,
            "device": self.device,
            "transfers": {
                "to_device": self.to_device.to_json(),
                "from_device": self.from_device.to_json(),
                "per_buffer": per_buffer,
            },
            "dispatches": self.dispatches,
            "kernels": kernels,
            "host_calls": self.host_calls,
            "syncs": self.syncs,
            "waits": self.waits,
            "hooks": {
                "before_host_read": self.hooks.before_host_read,
                "after_host_read": self.hooks.after_host_read,
                "before_host_write": self.hooks.before_host_write,
                "after_host_write": self.hooks.after_host_write,
            },
            "device_memory": { "allocations": self.device_allocations, "peak_bytes": self.peak_device_bytes },
            "time": {
                "total_ms": millis(self.total_time),
                "kernels_ms": millis(self.kernel_time),
                "transfers_ms": millis(self.transfer_time),
                "device_ms": self.device_time.map(millis),
            },
        });
        if let (Some(cache), Some(object)) = (&self.kernel_cache, json.as_object_mut()) {
            object.insert("kernel_cache".to_string(), cache.to_json());
        }
        json
    }
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// A human-readable summary (what `--report=text` would print).
impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "run report ({} mode, {} backend)", self.mode, self.backend)?;
        writeln!(f, "  to_device   {:>6} x {:>10} B", self.to_device.count, self.to_device.bytes)?;
        writeln!(f, "  from_device {:>6} x {:>10} B", self.from_device.count, self.from_device.bytes)?;
        for b in &self.per_buffer {
            writeln!(
                f,
                "    {:<20} to_device {} x {} B, from_device {} x {} B",
                b.name, b.to_device.count, b.to_device.bytes, b.from_device.count, b.from_device.bytes
            )?;
        }
        writeln!(f, "  dispatches  {:>6}", self.dispatches)?;
        for k in &self.kernels {
            match k.device_time {
                Some(time) => {
                    writeln!(f, "    @{:<19} {} ({:.3} ms on the device)", k.name, k.dispatches, millis(time))?
                }
                None => writeln!(f, "    @{:<19} {}", k.name, k.dispatches)?,
            }
        }
        writeln!(f, "  host calls  {:>6}", self.host_calls)?;
        if self.hooks.total() > 0 {
            writeln!(
                f,
                "  hooks       {:>6} (before_host_read {}, after_host_read {}, before_host_write {}, after_host_write {})",
                self.hooks.total(),
                self.hooks.before_host_read,
                self.hooks.after_host_read,
                self.hooks.before_host_write,
                self.hooks.after_host_write
            )?;
        }
        writeln!(f, "  device      {} allocations, peak {} B", self.device_allocations, self.peak_device_bytes)?;
        write!(
            f,
            "  time        total {:.3} ms, kernels {:.3} ms, transfers {:.3} ms",
            millis(self.total_time),
            millis(self.kernel_time),
            millis(self.transfer_time)
        )?;
        match self.device_time {
            Some(time) => write!(f, ", device {:.3} ms ({} waits)", millis(time), self.waits)?,
            None => write!(f, " ({} waits)", self.waits)?,
        }
        if let Some(cache) = &self.kernel_cache {
            write!(f, "\n  kernel cache {}", cache.summary())?;
        }
        Ok(())
    }
}

/// Which way a transfer goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    ToDevice,
    FromDevice,
}

/// Collects a [`RunReport`] while a program runs.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub(crate) report: RunReport,
    live_device_bytes: u64,
}

impl Recorder {
    pub(crate) fn new(mode: &str, backend: &str, device: String) -> Self {
        Recorder {
            report: RunReport { mode: mode.to_string(), backend: backend.to_string(), device, ..RunReport::default() },
            live_device_bytes: 0,
        }
    }

    /// The slot of the buffer named `name` in `per_buffer` (made on first use).
    pub(crate) fn buffer_slot(&mut self, name: &str) -> usize {
        if let Some(slot) = self.report.per_buffer.iter().position(|b| b.name == name) {
            return slot;
        }
        self.report.per_buffer.push(BufferTransfers { name: name.to_string(), ..BufferTransfers::default() });
        self.report.per_buffer.len() - 1
    }

    pub(crate) fn transfer(&mut self, slot: usize, direction: Direction, bytes: usize, time: Duration) {
        let bytes = bytes as u64;
        let entry = &mut self.report.per_buffer[slot];
        match direction {
            Direction::ToDevice => {
                self.report.to_device.add(bytes);
                entry.to_device.add(bytes);
            }
            Direction::FromDevice => {
                self.report.from_device.add(bytes);
                entry.from_device.add(bytes);
            }
        }
        self.report.transfer_time += time;
    }

    pub(crate) fn host_copy(&mut self, slot: usize) {
        self.report.per_buffer[slot].host_copy = true;
    }

    pub(crate) fn device_allocated(&mut self, slot: usize, bytes: usize) {
        self.report.per_buffer[slot].device_copy = true;
        self.report.device_allocations += 1;
        self.live_device_bytes += bytes as u64;
        self.report.peak_device_bytes = self.report.peak_device_bytes.max(self.live_device_bytes);
    }

    /// An arena of `bytes` (`plan-memory`): one allocation that the windows placed in it share.
    pub(crate) fn arena_allocated(&mut self, bytes: usize) {
        self.report.device_allocations += 1;
        self.live_device_bytes += bytes as u64;
        self.report.peak_device_bytes = self.report.peak_device_bytes.max(self.live_device_bytes);
    }

    /// A device copy that is a window of an arena: its bytes are the arena's.
    pub(crate) fn device_window(&mut self, slot: usize) {
        self.report.per_buffer[slot].device_copy = true;
    }

    /// A device copy made before the run (a residency session's buffer): held, not allocated.
    pub(crate) fn device_resident(&mut self, slot: usize, bytes: usize) {
        self.report.per_buffer[slot].device_copy = true;
        self.live_device_bytes += bytes as u64;
        self.report.peak_device_bytes = self.report.peak_device_bytes.max(self.live_device_bytes);
    }

    pub(crate) fn device_freed(&mut self, bytes: usize) {
        self.live_device_bytes = self.live_device_bytes.saturating_sub(bytes as u64);
    }

    /// The slot of the kernel named `kernel` in [`RunReport::kernels`] (made, with no dispatch,
    /// on first use).
    pub(crate) fn kernel_slot(&mut self, kernel: &str) -> usize {
        if let Some(slot) = self.report.kernels.iter().position(|k| k.name == kernel) {
            return slot;
        }
        self.report.kernels.push(KernelDispatches { name: kernel.to_string(), dispatches: 0, device_time: None });
        self.report.kernels.len() - 1
    }

    /// Counts a dispatch of the kernel in `slot` that took `time` to record.
    pub(crate) fn dispatch(&mut self, slot: usize, time: Duration) {
        self.report.dispatches += 1;
        self.report.kernel_time += time;
        self.report.kernels[slot].dispatches += 1;
    }

    /// Adds the device time of a dispatch of the kernel in `slot`.
    pub(crate) fn device_time(&mut self, slot: usize, time: Duration) {
        let kernel = &mut self.report.kernels[slot];
        kernel.device_time = Some(kernel.device_time.unwrap_or_default() + time);
        self.report.device_time = Some(self.report.device_time.unwrap_or_default() + time);
    }

    /// Counts a wait for the device that took `wait`, and `landing` to take the bytes of its
    /// reads.
    pub(crate) fn waited(&mut self, wait: Duration, landing: Duration) {
        self.report.waits += 1;
        self.report.kernel_time += wait;
        self.report.wait_time += wait;
        self.report.transfer_time += landing;
    }

    pub(crate) fn sync(&mut self) {
        self.report.syncs += 1;
    }

    pub(crate) fn host_call(&mut self) {
        self.report.host_calls += 1;
    }

    /// Counts one run of `hook`.
    pub(crate) fn count_hook(&mut self, hook: HostHook) {
        let hooks = &mut self.report.hooks;
        match hook {
            HostHook::BeforeHostRead => hooks.before_host_read += 1,
            HostHook::AfterHostRead => hooks.after_host_read += 1,
            HostHook::BeforeHostWrite => hooks.before_host_write += 1,
            HostHook::AfterHostWrite => hooks.after_host_write += 1,
        }
    }
}

/// A runtime-tracking hook of the `buffer` dialect, as counted in [`HookCounts`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostHook {
    /// `buffer.before_host_read`.
    BeforeHostRead,
    /// `buffer.after_host_read`.
    AfterHostRead,
    /// `buffer.before_host_write`.
    BeforeHostWrite,
    /// `buffer.after_host_write`.
    AfterHostWrite,
}

impl HostHook {
    /// The hook `op` is, through the `buffer` dialect's typed views; `None` for any other op.
    pub fn of(ctx: &Context, op: Op) -> Option<HostHook> {
        if BeforeHostReadOp::wrap(ctx, op).is_some() {
            Some(HostHook::BeforeHostRead)
        } else if AfterHostReadOp::wrap(ctx, op).is_some() {
            Some(HostHook::AfterHostRead)
        } else if BeforeHostWriteOp::wrap(ctx, op).is_some() {
            Some(HostHook::BeforeHostWrite)
        } else if AfterHostWriteOp::wrap(ctx, op).is_some() {
            Some(HostHook::AfterHostWrite)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_required_shape() {
        let mut recorder = Recorder::new("reference", "test", "a test".into());
        let data = recorder.buffer_slot("data");
        recorder.transfer(data, Direction::ToDevice, 256, Duration::from_micros(3));
        recorder.transfer(data, Direction::FromDevice, 256, Duration::from_micros(3));
        recorder.transfer(data, Direction::FromDevice, 4, Duration::from_micros(1));
        let square = recorder.kernel_slot("square");
        recorder.dispatch(square, Duration::from_millis(1));
        recorder.dispatch(square, Duration::from_millis(1));
        assert_eq!(recorder.kernel_slot("square"), square);
        recorder.device_allocated(data, 256);
        assert_eq!(recorder.buffer_slot("data"), data);
        let json = recorder.report.to_json();
        assert_eq!(json["transfers"]["to_device"], json!({"count": 1, "bytes": 256}));
        assert_eq!(json["transfers"]["from_device"], json!({"count": 2, "bytes": 260}));
        assert_eq!(json["dispatches"], json!(2));
        assert_eq!(json["kernels"], json!([{"name": "square", "dispatches": 2, "device_ms": null}]));
        recorder.device_time(0, Duration::from_millis(2));
        assert_eq!(recorder.report.to_json()["kernels"][0]["device_ms"], json!(2.0));
        assert_eq!(recorder.report.to_json()["time"]["device_ms"], json!(2.0));
        assert_eq!(json["transfers"]["per_buffer"][0]["name"], json!("data"));
        assert_eq!(json["transfers"]["per_buffer"][0]["from_device"], json!({"count": 2, "bytes": 260}));
        assert_eq!(json["device_memory"], json!({"allocations": 1, "peak_bytes": 256}));
        assert!(json["time"]["kernels_ms"].as_f64().unwrap() >= 2.0);
        assert_eq!(recorder.report.total_bytes(), 516);
        assert!(recorder.report.to_string().contains("from_device      2"));
    }

    #[test]
    fn hooks_are_told_apart_by_the_buffer_views() {
        let mut ctx = hat_dialects::context();
        let text = r#"
compute.func @main(%data: memref<8xi32>) {
  buffer.before_host_read %data : memref<8xi32>
  buffer.after_host_read %data : memref<8xi32>
  buffer.before_host_write %data : memref<8xi32>
  buffer.after_host_write %data : memref<8xi32>
  buffer.after_host_write %data : memref<8xi32>
  compute.return
}
"#;
        let module = hat_ir::parse_source(&mut ctx, "hooks.hat", text).expect("parses");
        let mut recorder = Recorder::new("reference", "test", "a test".into());
        let mut others = 0;
        for op in ctx.walk(module) {
            match HostHook::of(&ctx, op) {
                Some(hook) => recorder.count_hook(hook),
                None => others += 1,
            }
        }
        assert_eq!(others, 3, "the module, the function and its return are not hooks");
        let hooks = recorder.report.hooks;
        assert_eq!(
            [hooks.before_host_read, hooks.after_host_read, hooks.before_host_write, hooks.after_host_write],
            [1, 1, 1, 2]
        );
    }
}
