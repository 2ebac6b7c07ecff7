//! The elementwise square (`programs/square-f32.hat`) over N f32: device throughput.
//!
//! Each run is the whole program under the default pipeline: %in goes to the device, one
//! dispatch squares it into %out, %out comes back. The throughput is `8 N` bytes (4 read and 4
//! written per element, as the probe and PyTorch count) over the dispatch's device time, from
//! the GPU timestamps the Vulkan backend writes around it. The end-to-end time of the run
//! (transfers included) is reported beside it.
//!
//! A run of `@main` keeps the GPU idle for most of its time (the host fills and drains the
//! staging memory, about a second at 2^28), so its one dispatch runs before the GPU has raised
//! its clocks (on the H100, the SM clock stays at its idle 345 MHz: see docs/benchmarks.md).
//! `@repeat` dispatches the kernel `count` times in a row, as the probe and PyTorch time theirs
//! (back to back, after a warm-up): it runs at `a` and at `b` dispatches, and the kernel's
//! steady time is `(device(b) - device(a)) / (b - a)`, which leaves out the first `a`
//! dispatches of a run, those the clocks rise during. The inputs are the probe's, `(i mod 4096) / 4 -
//! 512`, whose squares are exact in f32, so the last run's %out is checked element by element.

use super::programs::{compile, Plan, SQUARE};
use super::runs::{device_ms, ms, round4, run, transfers, Samples};
use crate::common::progress;
use hat_runtime::{ArgValue, Backend, BufferLayout, ElementType, HostBuffer, Scalar};
use serde_json::{json, Value};

/// The inputs: `(i mod 4096) / 4 - 512` as f32 bytes.
fn input(elements: usize) -> HostBuffer {
    let mut bytes = Vec::with_capacity(elements * 4);
    for i in 0..elements {
        let value = (i % 4096) as f32 * 0.25 - 512.0;
        bytes.extend_from_slice(&value.to_le_bytes());
    }
    HostBuffer { layout: BufferLayout { element: ElementType::F32, shape: vec![elements] }, bytes }
}

/// How many elements of `out` are not the square of `input`'s.
fn wrong(input: &HostBuffer, out: &HostBuffer) -> usize {
    let floats = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    input
        .bytes
        .chunks_exact(4)
        .zip(out.bytes.chunks_exact(4))
        .filter(|(i, o)| {
            let v = floats(i);
            (v * v).to_bits() != floats(o).to_bits()
        })
        .count()
        + usize::from(input.bytes.len() != out.bytes.len())
}

/// Measures the square over `elements` f32, `repeat` runs after a first (cold) one.
pub fn measure(backend: &mut dyn Backend, elements: usize, repeat: usize) -> Result<Value, String> {
    progress(format!(
        "square: {elements} f32 ({} MiB per buffer), {repeat} runs after a cold one",
        (elements * 4) >> 20
    ));
    let (ctx, module) = compile("square-f32.hat", SQUARE, "main", Plan::Default)?;
    let input = input(elements);
    let out = HostBuffer::zeroed(BufferLayout { element: ElementType::F32, shape: vec![elements] });
    let bytes = 8.0 * elements as f64;
    let mut device = Samples::default();
    let mut total = Samples::default();
    let mut cold = Value::Null;
    let mut last = None;
    for index in 0..=repeat {
        let args = vec![ArgValue::Buffer(input.clone()), ArgValue::Buffer(out.clone())];
        let output = run(&ctx, module, backend, "main", args)?;
        let report = &output.report;
        let device_time = device_ms(report, "square");
        if index == 0 {
            cold = json!({ "total_ms": round4(ms(report.total_time)), "device_ms": device_time.map(round4) });
        } else {
            device.0.extend(device_time);
            total.0.push(ms(report.total_time));
        }
        progress(format!(
            "  run {index}: device {} ms, end to end {:.1} ms",
            device_time.map_or("?".into(), |t| format!("{t:.3}")),
            ms(report.total_time)
        ));
        last = Some(output);
    }
    let last = last.expect("at least one run");
    let wrong = last.buffers.get(1).map_or(elements, |out| wrong(&input, out));
    let gbps = |ms: Option<f64>| ms.filter(|&t| t > 0.0).map(|t| round4(bytes / (t * 1e6)));
    let back_to_back = back_to_back(backend, &input, &out, repeat.min(3), (100, 600), &gbps)?;
    Ok(json!({
        "program": "tools/hat-bench/programs/square-f32.hat",
        "pipeline": Plan::Default.pipeline(),
        "elements": elements,
        "bytes_counted": bytes,
        "runs": repeat,
        "device_ms": device.to_json(),
        "device_gbps": { "median": gbps(device.median()), "best": gbps(device.best()) },
        "end_to_end_ms": total.to_json(),
        "cold_run": cold,
        "back_to_back": back_to_back,
        "transfers": transfers(&last.report),
        "time_of_last_run": last.report.to_json()["time"],
        "verified": wrong == 0,
        "wrong_elements": wrong,
    }))
}

/// `@repeat` at `a` and `b` dispatches (`runs` runs each, after an untimed one): the kernel's
/// steady device time per dispatch and its GB/s.
fn back_to_back(
    backend: &mut dyn Backend,
    input: &HostBuffer,
    out: &HostBuffer,
    runs: usize,
    (a, b): (usize, usize),
    gbps: &dyn Fn(Option<f64>) -> Option<f64>,
) -> Result<Value, String> {
    let (ctx, module) = compile("square-f32.hat", SQUARE, "repeat", Plan::Default)?;
    let args = |count: usize| {
        vec![
            ArgValue::Buffer(input.clone()),
            ArgValue::Buffer(out.clone()),
            ArgValue::Scalar(Scalar::Int(count as i64)),
        ]
    };
    run(&ctx, module, backend, "repeat", args(a))?;
    let mut device = [Samples::default(), Samples::default()];
    let mut wrong_elements = 0;
    for (slot, count) in [a, b].into_iter().enumerate() {
        for _ in 0..runs.max(1) {
            let output = run(&ctx, module, backend, "repeat", args(count))?;
            device[slot].0.extend(device_ms(&output.report, "square"));
            wrong_elements = output.buffers.get(1).map_or(input.len(), |o| wrong(input, o));
        }
    }
    let steady = match (device[0].median(), device[1].median()) {
        (Some(da), Some(db)) if b > a => Some((db - da) / (b - a) as f64),
        _ => None,
    };
    progress(format!(
        "  back to back: {a} dispatches {} ms, {b} dispatches {} ms on the device: {} ms per dispatch",
        device[0].median().map_or("?".into(), |t| format!("{t:.3}")),
        device[1].median().map_or("?".into(), |t| format!("{t:.3}")),
        steady.map_or("?".into(), |t| format!("{t:.4}"))
    ));
    Ok(json!({
        "entry": "@repeat",
        "dispatches": [a, b],
        "device_ms": [device[0].to_json(), device[1].to_json()],
        "steady_ms_per_dispatch": steady.map(round4),
        "steady_gbps": gbps(steady),
        "mean_gbps_at_b": gbps(device[1].median().map(|t| t / b as f64)),
        "how": format!("(device({b}) - device({a})) / ({b} - {a}), medians over {} runs each", runs.max(1)),
        "verified": wrong_elements == 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squares_on_the_cpu_backend_and_checks_them() {
        let mut backend = hat_runtime::CpuBackend::new();
        let report = measure(&mut backend, 1000, 1).unwrap();
        assert_eq!(report["verified"], json!(true), "{report}");
        assert_eq!(report["back_to_back"]["verified"], json!(true), "{report}");
        // %in goes in and %out comes back; the static plan also sends %out in (it does not prove
        // that the guarded store writes every element), so 4,000 or 8,000 bytes go in.
        let to_device = report["transfers"]["to_device"]["bytes"].as_u64().unwrap();
        assert!(to_device == 4000 || to_device == 8000, "{report}");
        assert_eq!(report["transfers"]["from_device"]["bytes"], json!(4000));
        let input = input(8);
        let mut out = input.clone();
        assert_eq!(wrong(&input, &out), 8, "the inputs are not their own squares");
        out.bytes[..4].copy_from_slice(&(-512.0f32 * -512.0).to_le_bytes());
        assert_eq!(wrong(&input, &out), 7);
    }
}
