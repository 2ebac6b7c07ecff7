//! The cost of a dispatch in a long chain of small ones (`programs/chain.hat`).
//!
//! - `chain`: N dependent dispatches of a one-workgroup kernel (a barrier between each two),
//!   beside the probe's `barrier` mode;
//! - `independent`: N dispatches of a kernel with no parameters (no barrier), beside the
//!   probe's `no_barrier` mode;
//! - `synced`: a `compute.sync` after each dependent dispatch (one submission and wait each),
//!   beside the probe's `submit_wait` mode.
//!
//! The executor records the whole loop and submits it at the end (the first two); the Vulkan
//! backend submits batches of it on its own meanwhile, so the device runs while the host records
//! and the run's wall time is about the larger of the two; the probe records once and times only
//! the submission of the recorded buffer. Per dispatch the
//! report gives the run's wall time, the device time (the sum of the dispatches' timestamps:
//! with a barrier between each two, the span of the chain) and the host's part, the wall time
//! less the device time. Each is measured with the backend's per-dispatch timestamps (what
//! `hat-opt --run` does) and, where the caller gives a second backend, without them.

use super::programs::{compile, Plan, CHAIN};
use super::runs::{device_ms, ms, run, Samples};
use crate::common::progress;
use hat_runtime::{ArgValue, Backend, HostBuffer, Scalar};
use serde_json::{json, Value};

/// One chain's figures on one backend.
fn chain(backend: &mut dyn Backend, entry: &str, dispatches: usize, repeat: usize) -> Result<Value, String> {
    let (ctx, module) = compile("chain.hat", CHAIN, entry, Plan::Default)?;
    let kernel = if entry == "independent" { "nothing" } else { "bump" };
    let (mut wall, mut device, mut host) = (Samples::default(), Samples::default(), Samples::default());
    // The time the executor spent in its waits (the submit and the wait for the last batch): a
    // small wait means the host's recording set the pace, a large one the device's.
    let mut waited = Samples::default();
    // The time in the backend's `record_dispatch` (hat's recording and the driver's).
    let mut recorded = Samples::default();
    // The CPU time of this thread over the run: what the host computed (the executor, hat's
    // recording, the driver's calls, a driver spinning in a wait), not the time it slept
    // blocked in the driver. A slow run whose CPU time is its wall time was bound by the host.
    let mut cpu = Samples::default();
    let mut verified = true;
    let mut waits = 0;
    for index in 0..=repeat {
        let counts = HostBuffer::from_i32(&[64], &[0; 64]).expect("64 elements");
        let args = vec![ArgValue::Buffer(counts), ArgValue::Scalar(Scalar::Int(dispatches as i64))];
        let cpu_before = thread_cpu_ms();
        let output = run(&ctx, module, backend, entry, args)?;
        let cpu_ms = thread_cpu_ms() - cpu_before;
        let counts = output.buffers.first().and_then(HostBuffer::to_i32).unwrap_or_default();
        let expected = if entry == "independent" { 0 } else { dispatches as i32 };
        verified &= counts.len() == 64 && counts.iter().all(|&c| c == expected);
        if index == 0 {
            continue; // the cold run: compiles the pipelines
        }
        let per = |t: f64| t * 1e3 / dispatches as f64;
        let total = ms(output.report.total_time);
        wall.0.push(per(total));
        waited.0.push(per(ms(output.report.wait_time)));
        recorded.0.push(per(ms(output.report.kernel_time - output.report.wait_time)));
        cpu.0.push(per(cpu_ms));
        if let Some(d) = device_ms(&output.report, kernel) {
            device.0.push(per(d));
            host.0.push(per(total - d));
        }
        waits = output.report.waits;
    }
    progress(format!(
        "  {entry}: {dispatches} dispatches, {:.3} us each (wall), device {} us, host {} us, in waits {:.3} us, recording {:.3} us, CPU {:.3} us",
        wall.median().unwrap_or(f64::NAN),
        device.median().map_or("?".into(), |d| format!("{d:.3}")),
        host.median().map_or("?".into(), |h| format!("{h:.3}")),
        waited.median().unwrap_or(f64::NAN),
        recorded.median().unwrap_or(f64::NAN),
        cpu.median().unwrap_or(f64::NAN)
    ));
    Ok(json!({
        "dispatches": dispatches,
        "runs": repeat,
        "waits": waits,
        "wall_us_per_dispatch": wall.to_json(),
        "device_us_per_dispatch": device.to_json(),
        "host_us_per_dispatch": host.to_json(),
        "wait_us_per_dispatch": waited.to_json(),
        "record_us_per_dispatch": recorded.to_json(),
        "cpu_us_per_dispatch": cpu.to_json(),
        "verified": verified,
    }))
}

/// The CPU time this thread has used, in milliseconds.
fn thread_cpu_ms() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid out pointer.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return f64::NAN;
    }
    now.tv_sec as f64 * 1e3 + now.tv_nsec as f64 / 1e6
}

/// The chains on one backend: `chain` and `independent` at each length of `lengths` (under
/// `chain_at` and `independent_at`, and under `chain` and `independent` at the longest),
/// `synced` at `synced` dispatches.
fn chains(backend: &mut dyn Backend, lengths: &[usize], synced: usize, repeat: usize) -> Result<Value, String> {
    let mut out = serde_json::Map::new();
    let longest = lengths.iter().copied().max().unwrap_or(0);
    for entry in ["chain", "independent"] {
        let mut at = serde_json::Map::new();
        for &length in lengths {
            let figures = chain(backend, entry, length, repeat)?;
            if length == longest {
                out.insert(entry.into(), figures.clone());
            }
            at.insert(length.to_string(), figures);
        }
        out.insert(format!("{entry}_at"), Value::Object(at));
    }
    out.insert("synced".into(), chain(backend, "synced", synced, repeat)?);
    Ok(Value::Object(out))
}

/// Measures the chains on `timed` (a backend writing timestamps) and, if given, on `untimed`
/// (the same device without them). `lengths`: the dispatches of `chain` and `independent` (the
/// cost per dispatch need not be the same at every length).
pub fn measure(
    timed: &mut dyn Backend,
    untimed: Option<&mut dyn Backend>,
    lengths: &[usize],
    synced: usize,
    repeat: usize,
) -> Result<Value, String> {
    progress(format!("dispatch chains: {lengths:?} dispatches ({synced} synced), {repeat} runs after a cold one"));
    let on = chains(timed, lengths, synced, repeat)?;
    let off = match untimed {
        Some(backend) => {
            progress("  the same without timestamps:");
            chains(backend, lengths, synced, repeat)?
        }
        None => Value::Null,
    };
    Ok(json!({
        "program": "tools/hat-bench/programs/chain.hat",
        "pipeline": Plan::Default.pipeline(),
        "with_timestamps": on,
        "without_timestamps": off,
        "note": "wall = from the entry's call to its return (recording, one submission, the wait); \
                 host = wall - device time (the dispatches' timestamps); wait = the time in the executor's submit and wait; record = in the backend's record_dispatch",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_run_on_the_cpu_backend_and_count() {
        let mut backend = hat_runtime::CpuBackend::new();
        let report = measure(&mut backend, None, &[10, 20], 5, 1).unwrap();
        for entry in ["chain", "independent", "synced"] {
            assert_eq!(report["with_timestamps"][entry]["verified"], json!(true), "{entry}: {report}");
        }
        assert_eq!(report["with_timestamps"]["chain"]["dispatches"], json!(20), "the longest");
        assert_eq!(report["with_timestamps"]["chain_at"]["10"]["dispatches"], json!(10));
        assert_eq!(report["with_timestamps"]["synced"]["waits"], json!(6), "a wait per sync, and the last");
    }
}
