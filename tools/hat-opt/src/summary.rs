//! The report `--run` prints: `--report=text`, for a person reading what the program computed
//! and what moved, and `--report=json`, one object on one line for scripts.
//!
//! The text report has one heading per line group, in this order: what ran, what compiled it,
//! the entry's results, each buffer argument's final host copy (type and first
//! [`SHOWN_ELEMENTS`] elements, row-major), transfers (all, then per buffer: every buffer
//! argument, and each buffer the program allocated that moved), dispatches, host calls, the
//! check, the kernel cache (a backend with one: modules from disk or lowered, pipelines from
//! disk or compiled, what the driver said), and the time, which is the last line. The time and
//! the kernel cache's line are the only ones that change from run to run.

use crate::check::{Agreement, Difference};
use crate::run::buffer_parameters;
use crate::strategy::RunPlan;
use hat_runtime::executor::host_functions::format_scalar;
use hat_runtime::{ArgValue, ElementType, HostBuffer, Parameter, RunOutput, TransferCount};

/// How many elements of a buffer the text report shows.
pub const SHOWN_ELEMENTS: usize = 8;

/// Everything a report says.
pub struct Summary<'s> {
    /// The entry's name.
    pub entry: &'s str,
    /// What compiled the program and how it ran.
    pub plan: &'s RunPlan,
    /// The entry's parameters.
    pub parameters: &'s [Parameter],
    /// The entry's result types, as text and element types.
    pub result_types: &'s [(String, Option<ElementType>)],
    /// What the run gave back.
    pub output: &'s RunOutput,
    /// The outcome of `--run-check`, if asked.
    pub check: Option<&'s Result<Agreement, Difference>>,
}

/// The first [`SHOWN_ELEMENTS`] elements of `buffer`: `[0, 1, 4, ...]`.
fn first_elements(buffer: &HostBuffer) -> String {
    let element = buffer.layout.element;
    let mut parts: Vec<String> = buffer
        .bytes
        .chunks_exact(element.size())
        .take(SHOWN_ELEMENTS)
        .map(|chunk| format_scalar(element.read(chunk), element))
        .collect();
    if buffer.layout.len() > SHOWN_ELEMENTS {
        parts.push("...".to_string());
    }
    format!("[{}]", parts.join(", "))
}

/// A result as text: `42 : i32`, or a buffer's type and first elements.
fn result_text(value: &ArgValue, ty: Option<&(String, Option<ElementType>)>) -> String {
    match (value, ty) {
        (ArgValue::Scalar(scalar), Some((text, Some(element)))) => {
            format!("{} : {text}", format_scalar(*scalar, *element))
        }
        (ArgValue::Scalar(scalar), _) => format!("{scalar:?}"),
        (ArgValue::Buffer(buffer), Some((text, _))) => format!("{text} = {}", first_elements(buffer)),
        (ArgValue::Buffer(buffer), None) => {
            format!("a buffer of shape {:?} = {}", buffer.layout.shape, first_elements(buffer))
        }
    }
}

fn plural(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn copies(to_device: TransferCount, from_device: TransferCount) -> String {
    if to_device.count == 0 && from_device.count == 0 {
        return "none".to_string();
    }
    format!(
        "to device {} ({} B), from device {} ({} B)",
        plural(to_device.count, "copy", "copies"),
        to_device.bytes,
        plural(from_device.count, "copy", "copies"),
        from_device.bytes
    )
}

/// Lines under a heading: the first after `heading:` padded to the column of values, the
/// others indented to that column.
fn section(text: &mut String, heading: &str, lines: &[String]) {
    for (index, line) in lines.iter().enumerate() {
        let label = if index == 0 { format!("{heading}:") } else { String::new() };
        text.push_str(&format!("{label:<12}{line}\n"));
    }
}

/// `name: value` lines with the names padded to one width.
fn aligned(rows: &[(String, String)]) -> Vec<String> {
    let width = rows.iter().map(|(name, _)| name.len() + 1).max().unwrap_or(0);
    rows.iter().map(|(name, value)| format!("{:<width$} {value}", format!("{name}:"))).collect()
}

/// The `--report=text` summary.
pub fn text(summary: &Summary<'_>) -> String {
    let output = summary.output;
    let report = &output.report;
    let mut text = match report.backend.as_str() {
        "cpu" => format!("ran @{} ({} transfers, cpu backend)\n", summary.entry, report.mode),
        backend => {
            format!("ran @{} ({} transfers, {backend} backend on {})\n", summary.entry, report.mode, report.device)
        }
    };
    if let Some(description) = &summary.plan.description {
        section(&mut text, "compiled", std::slice::from_ref(description));
    }
    if !output.results.is_empty() {
        let results: Vec<String> = output
            .results
            .iter()
            .enumerate()
            .map(|(i, value)| result_text(value, summary.result_types.get(i)))
            .collect();
        section(&mut text, "results", &[results.join(", ")]);
    }
    let buffers: Vec<&Parameter> = buffer_parameters(summary.parameters).collect();
    let rows: Vec<(String, String)> = buffers
        .iter()
        .zip(&output.buffers)
        .map(|(parameter, buffer)| {
            (format!("%{}", parameter.name), format!("{} = {}", parameter.type_text, first_elements(buffer)))
        })
        .collect();
    if !rows.is_empty() {
        section(&mut text, "buffers", &aligned(&rows));
    }
    let mut lines = vec![copies(report.to_device, report.from_device)];
    let rows: Vec<(String, String)> = report
        .per_buffer
        .iter()
        .enumerate()
        .filter(|(index, moved)| *index < buffers.len() || moved.to_device.count + moved.from_device.count > 0)
        .map(|(index, moved)| {
            let name = if index < buffers.len() { format!("%{}", moved.name) } else { moved.name.clone() };
            (name, copies(moved.to_device, moved.from_device))
        })
        .collect();
    lines.extend(aligned(&rows).into_iter().map(|line| format!("  {line}")));
    section(&mut text, "transfers", &lines);
    let kernels: Vec<String> = report.kernels.iter().map(|k| format!("@{} {}", k.name, k.dispatches)).collect();
    let mut dispatches = report.dispatches.to_string();
    if !kernels.is_empty() {
        dispatches.push_str(&format!(" ({})", kernels.join(", ")));
    }
    section(&mut text, "dispatches", &[dispatches]);
    if report.host_calls > 0 {
        section(&mut text, "host calls", &[report.host_calls.to_string()]);
    }
    match summary.check {
        None => {}
        Some(Ok(agreement)) => section(
            &mut text,
            "check",
            &[format!(
                "the same as the reference semantics ({}, {}, {} compared)",
                plural(agreement.host_calls as u64, "host call", "host calls"),
                plural(agreement.buffers as u64, "buffer", "buffers"),
                plural(agreement.results as u64, "result", "results"),
            )],
        ),
        Some(Err(_)) => section(&mut text, "check", &["DIFFERS from the reference semantics (see the error)".into()]),
    }
    if let Some(cache) = &report.kernel_cache {
        section(&mut text, "cache", &[cache.summary()]);
    }
    section(&mut text, "time", &[format!("{:.3} ms", report.total_time.as_secs_f64() * 1e3)]);
    text
}

/// The `--report=json` object, on one line.
pub fn json(summary: &Summary<'_>) -> String {
    let output = summary.output;
    let mut json = output.report.to_json();
    let results: Vec<serde_json::Value> = output
        .results
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let ty = summary.result_types.get(i);
            let type_text = ty.map_or(String::new(), |(text, _)| text.clone());
            match value {
                ArgValue::Scalar(scalar) => {
                    let number = match scalar {
                        hat_runtime::Scalar::Int(v) => serde_json::json!(v),
                        hat_runtime::Scalar::Float(v) if v.is_finite() => serde_json::json!(v),
                        // JSON has no NaN or infinity: write them as strings.
                        hat_runtime::Scalar::Float(v) => serde_json::json!(v.to_string()),
                    };
                    serde_json::json!({ "type": type_text, "value": number })
                }
                ArgValue::Buffer(buffer) => serde_json::json!({ "type": type_text, "shape": buffer.layout.shape }),
            }
        })
        .collect();
    if let Some(object) = json.as_object_mut() {
        object.insert("entry".to_string(), serde_json::json!(summary.entry));
        object.insert("results".to_string(), serde_json::Value::Array(results));
        object.insert("compiled_by".to_string(), serde_json::json!(summary.plan.description));
        if let Some(check) = summary.check {
            let check = match check {
                Ok(agreement) => serde_json::json!({
                    "equal": true,
                    "compared": {
                        "host_calls": agreement.host_calls,
                        "buffers": agreement.buffers,
                        "results": agreement.results,
                    },
                }),
                Err(difference) => serde_json::json!({ "equal": false, "difference": difference.message }),
            };
            object.insert("check".to_string(), check);
        }
    }
    format!("{json}\n")
}
