//! Running a compiled program on a backend, and summarising repeated measurements.
//!
//! Each run makes a fresh executor over the same backend, so a backend's caches (pipelines,
//! descriptor sets, staging rings) are warm after its first run, as in a long-lived process;
//! the first run of each program is reported apart as the cold one. Times come from the run
//! report: `total_time` (from the entry's call to its return, transfers and waits included:
//! end to end) and the device time of each kernel (GPU timestamps).

use crate::measure::median;
use hat_ir::{verify_module, Context, Op};
use hat_runtime::{ArgValue, Backend, Executor, ExecutorOptions, RunOutput, RunReport, TransferMode};
use serde_json::{json, Value};
use std::time::Duration;

/// Runs `entry` of the compiled `module` on `backend` with `args`, in explicit transfer mode
/// (only the program's own transfers move data, as `hat-opt --run` after a pipeline).
pub fn run(
    ctx: &Context,
    module: Op,
    backend: &mut dyn Backend,
    entry: &str,
    args: Vec<ArgValue>,
) -> Result<RunOutput, String> {
    executor(ctx, module, backend)?.run(entry, args).map_err(|e| format!("@{entry} failed: {e}"))
}

/// Runs as [`run`] does, recording the run's timeline: how many barriers the backend placed.
pub fn barriers(
    ctx: &Context,
    module: Op,
    backend: &mut dyn Backend,
    entry: &str,
    args: Vec<ArgValue>,
) -> Result<usize, String> {
    let mut executor = executor(ctx, module, backend)?;
    executor.set_timeline(true);
    executor.run(entry, args).map_err(|e| format!("@{entry} failed: {e}"))?;
    Ok(executor.take_timeline().map_or(0, |timeline| timeline.barriers.len()))
}

/// An executor of the compiled `module` on `backend`, in explicit transfer mode.
fn executor<'a>(ctx: &'a Context, module: Op, backend: &'a mut dyn Backend) -> Result<Executor<'a>, String> {
    let verified = verify_module(ctx, module).map_err(|_| "the compiled module does not verify".to_string())?;
    Ok(Executor::new(verified, backend, ExecutorOptions { mode: TransferMode::Explicit }))
}

/// Milliseconds.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// The device time of the kernel named `kernel`, in milliseconds, if the backend measured it.
pub fn device_ms(report: &RunReport, kernel: &str) -> Option<f64> {
    report.kernels.iter().find(|k| k.name == kernel).and_then(|k| k.device_time).map(ms)
}

/// Rounded to 4 decimals (JSON stays readable; the figures are not that exact anyway).
pub fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// Repeated measurements of one quantity.
#[derive(Clone, Debug, Default)]
pub struct Samples(pub Vec<f64>);

impl Samples {
    /// The median, if any sample.
    pub fn median(&self) -> Option<f64> {
        median(self.0.clone())
    }

    /// The least, if any sample.
    pub fn best(&self) -> Option<f64> {
        self.0.iter().copied().min_by(f64::total_cmp)
    }

    /// `{"median": .., "best": .., "all": [..]}`.
    pub fn to_json(&self) -> Value {
        json!({
            "median": self.median().map(round4),
            "best": self.best().map(round4),
            "all": self.0.iter().map(|&x| round4(x)).collect::<Vec<_>>(),
        })
    }
}

/// The transfers of a run: `{"to_device": {"count", "bytes"}, "from_device": {..}}`.
pub fn transfers(report: &RunReport) -> Value {
    json!({ "to_device": report.to_device.to_json(), "from_device": report.from_device.to_json(), "waits": report.waits })
}
