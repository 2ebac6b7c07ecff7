//! `hat-opt FILE --run`: after the pass pipeline, run the program's entry function on the CPU
//! reference backend and report what moved.
//!
//! - The entry is the `compute.func` named by `--entry` (`main` by default). Its arguments come
//!   from `--arg NAME=VALUE`, one per parameter (see [`crate::args`] for the values: numbers,
//!   `.npy` files, generators). `--out NAME=PATH.npy` writes a buffer parameter's final host copy
//!   (what the caller sees when the program returns) to a NumPy file.
//! - `--run-mode` picks how buffers move: `reference` (the default) copies every buffer argument
//!   of every dispatch to the device before it and back after it, and ignores the program's own
//!   transfers: any program runs right, however slowly. `explicit` moves only what the program's
//!   `buffer.to_device`/`buffer.from_device` say: how a program whose transfers a pass placed
//!   runs (a missing transfer shows as poison). `explicit` becomes the default once
//!   `insert-transfers` is in the default pipeline.
//! - The standard host functions `print` and `display` are registered (writing to standard
//!   output); a program calling any other `compute.host_func` fails with a clear error.
//! - What is printed: with `--report=text` (the default) a short summary on standard output —
//!   the entry's results, transfers each way (count and bytes), dispatches, and the run's time
//!   on a line of its own (`time: 0.123 ms`, the only line that changes from run to run);
//!   with `--report=json` one JSON object on one line: the runtime's report
//!   ([`hat_runtime::RunReport::to_json`]: `transfers.to_device`/`from_device` `{count, bytes}`,
//!   `dispatches`, per-buffer and per-kernel counts, times) with `entry` and `results` added.
//! - The IR is not printed with `--run`; `-o FILE` still writes it to FILE. The summary goes to
//!   standard output either way, after anything the program's host functions print.
//! - Errors — a missing, unknown or ill-typed argument, a `.npy` file of the wrong dtype or
//!   shape, a missing entry, and every runtime error (out-of-bounds accesses on the host or the
//!   device, a missing kernel or host function, ...) — are reported on standard error, runtime
//!   errors as diagnostics with `file:line:col`, and hat-opt exits with status 1.

use crate::args;
use clap::ValueEnum;
use hat_ir::diagnostics::render;
use hat_ir::interfaces::{execution_space, CallableOpInterface, ExecutionSpace};
use hat_ir::printer::type_to_string;
use hat_ir::{Context, Op, Verified};
use hat_runtime::executor::host_functions::{format_scalar, STANDARD_HOST_FUNCTIONS};
use hat_runtime::{
    entry_parameters, ArgValue, CpuBackend, ElementType, Executor, ExecutorOptions, RunOutput, RuntimeError,
    TransferMode,
};
use std::io::Write;

/// What `--report` prints after a run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// A short human summary: results, transfers, dispatches, time.
    #[default]
    Text,
    /// One JSON object on one line (the runtime's report, with the entry and its results).
    Json,
}

/// How buffers move during `--run`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum RunMode {
    /// Copy every buffer argument to the device before each dispatch and back after it; ignore
    /// the program's own transfers.
    #[default]
    Reference,
    /// Move only what the program's `buffer.to_device`/`buffer.from_device` say.
    Explicit,
}

/// The options of `--run` (a section of hat-opt's command line).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Running the program (--run)")]
pub struct RunOptions {
    /// After the pass pipeline, run the entry function on the CPU reference backend and print a
    /// summary instead of the IR (which `-o FILE` still writes).
    #[arg(long = "run", conflicts_with_all = ["split_input_file", "verify_diagnostics"])]
    pub run: bool,
    /// The compute function to run.
    #[arg(long = "entry", value_name = "NAME", default_value = "main", requires = "run")]
    pub entry: String,
    /// An argument of the entry (repeatable): a number for a scalar; for a buffer a .npy file or
    /// a generator: zeros, ones, iota, random[:SEED] (ints in [0, 100), floats in [0, 1)), fill:V.
    #[arg(long = "arg", value_name = "NAME=VALUE", requires = "run")]
    pub args: Vec<String>,
    /// Write the final host copy of the buffer parameter NAME to a .npy file (repeatable).
    #[arg(long = "out", value_name = "NAME=PATH", requires = "run")]
    pub outs: Vec<String>,
    /// What to print after the run.
    #[arg(long = "report", value_enum, default_value = "text", value_name = "FORMAT", requires = "run")]
    pub report: ReportFormat,
    /// How buffers move: reference ("copy everything, every time"; the default until
    /// insert-transfers is in the default pipeline) or explicit (only the program's transfers).
    #[arg(long = "run-mode", value_enum, default_value = "reference", value_name = "MODE", requires = "run")]
    pub mode: RunMode,
}

/// Runs the module as the options say and writes the report to `summary`. `Err` holds the text
/// for standard error: a message starting `error:`, or rendered diagnostics.
pub fn run(verified: Verified<'_>, options: &RunOptions, summary: &mut dyn Write) -> Result<(), String> {
    let (ctx, module) = (verified.ctx(), verified.op());
    let entry = options.entry.as_str();
    let parameters = entry_parameters(verified, entry).map_err(|error| match error {
        RuntimeError::MissingSymbol { .. } => missing_entry(ctx, module, entry),
        other => render(&ctx.sources, &[other.to_diagnostic()]),
    })?;
    let arguments = args::arguments(entry, &parameters, &options.args)?;
    let outputs = args::outputs(entry, &parameters, &options.outs)?;
    let mode = match options.mode {
        RunMode::Reference => TransferMode::Reference,
        RunMode::Explicit => TransferMode::Explicit,
    };
    let mut backend = CpuBackend::new();
    let output = {
        let mut executor = Executor::new(verified, &mut backend, ExecutorOptions { mode });
        executor.register_standard_host_functions();
        executor.run(entry, arguments)
    };
    // The program's own output (print, display) comes before the summary.
    let _ = std::io::stdout().flush();
    let output = output.map_err(|error| render(&ctx.sources, &[diagnostic(&error)]))?;
    for (index, path) in &outputs {
        let buffer = &output.buffers[*index];
        args::write_npy(path, buffer)?;
    }
    let result_types = result_types(ctx, module, entry);
    let text = match options.report {
        ReportFormat::Text => text_summary(entry, &result_types, &output),
        ReportFormat::Json => json_summary(entry, &result_types, &output),
    };
    summary
        .write_all(text.as_bytes())
        .and_then(|()| summary.flush())
        .map_err(|e| format!("error: cannot write output: {e}"))
}

/// A runtime error as a diagnostic, with a note where hat-opt can say more.
fn diagnostic(error: &RuntimeError) -> hat_ir::Diagnostic {
    let diagnostic = error.to_diagnostic();
    match error {
        RuntimeError::UnknownHostFunction { .. } => diagnostic.with_note(
            hat_ir::Location::UNKNOWN,
            format!("hat-opt --run provides the host functions {}", STANDARD_HOST_FUNCTIONS.join(" and ")),
        ),
        _ => diagnostic,
    }
}

/// The message for an `--entry` that names no compute function, listing those that exist.
fn missing_entry(ctx: &Context, module: Op, entry: &str) -> String {
    let names: Vec<String> = compute_functions(ctx, module).into_iter().map(|(name, _)| format!("@{name}")).collect();
    let known = if names.is_empty() {
        "the module has none".to_string()
    } else {
        format!("the module has {}", names.join(", "))
    };
    format!("error: no compute.func named '@{entry}' to run (--entry {entry}); {known}")
}

/// The functions of the module that `--run` can start from (the executor's rule): host code with
/// a body. Name and op.
fn compute_functions(ctx: &Context, module: Op) -> Vec<(String, Op)> {
    ctx.body_ops(module)
        .into_iter()
        .filter(|&op| execution_space(ctx, op) == Some(ExecutionSpace::Host))
        .filter(|&op| ctx.interface::<dyn CallableOpInterface>(op).is_some_and(|c| c.body(ctx, op).is_some()))
        .filter_map(|op| {
            let name = ctx.attribute(op, "sym_name").and_then(|a| ctx.attribute_kind(a).as_str())?;
            Some((name.to_string(), op))
        })
        .collect()
}

/// The entry's result types, as text and (for scalars) as runtime element types.
fn result_types(ctx: &Context, module: Op, entry: &str) -> Vec<(String, Option<ElementType>)> {
    let Some((_, func)) = compute_functions(ctx, module).into_iter().find(|(name, _)| name == entry) else {
        return Vec::new();
    };
    let signature = ctx.interface::<dyn CallableOpInterface>(func).and_then(|c| c.signature(ctx, func));
    let Some((_, results)) = signature else { return Vec::new() };
    results.into_iter().map(|ty| (type_to_string(ctx, ty), ElementType::of(ctx, ty))).collect()
}

/// A result as text: `42 : i32`, or a buffer's type.
fn result_text(value: &ArgValue, ty: Option<&(String, Option<ElementType>)>) -> String {
    match (value, ty) {
        (ArgValue::Scalar(scalar), Some((text, Some(element)))) => {
            format!("{} : {text}", format_scalar(*scalar, *element))
        }
        (ArgValue::Scalar(scalar), _) => format!("{scalar:?}"),
        (ArgValue::Buffer(buffer), Some((text, _))) => format!("a buffer ({text}, {} elements)", buffer.len()),
        (ArgValue::Buffer(buffer), None) => format!("a buffer of shape {:?}", buffer.layout.shape),
    }
}

fn plural(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// The `--report=text` summary.
fn text_summary(entry: &str, result_types: &[(String, Option<ElementType>)], output: &RunOutput) -> String {
    let report = &output.report;
    let mut text = format!("ran @{entry} ({} transfers, {} backend)\n", report.mode, report.backend);
    if !output.results.is_empty() {
        let results: Vec<String> =
            output.results.iter().enumerate().map(|(i, value)| result_text(value, result_types.get(i))).collect();
        text.push_str(&format!("results:    {}\n", results.join(", ")));
    }
    text.push_str(&format!(
        "transfers:  to device {} ({} B), from device {} ({} B)\n",
        plural(report.to_device.count, "copy", "copies"),
        report.to_device.bytes,
        plural(report.from_device.count, "copy", "copies"),
        report.from_device.bytes
    ));
    let kernels: Vec<String> = report.kernels.iter().map(|k| format!("@{} {}", k.name, k.dispatches)).collect();
    text.push_str(&format!("dispatches: {}", report.dispatches));
    if !kernels.is_empty() {
        text.push_str(&format!(" ({})", kernels.join(", ")));
    }
    text.push('\n');
    text.push_str(&format!("time:       {:.3} ms\n", report.total_time.as_secs_f64() * 1e3));
    text
}

/// The `--report=json` object, on one line.
fn json_summary(entry: &str, result_types: &[(String, Option<ElementType>)], output: &RunOutput) -> String {
    let mut json = output.report.to_json();
    let results: Vec<serde_json::Value> = output
        .results
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let ty = result_types.get(i);
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
        object.insert("entry".to_string(), serde_json::json!(entry));
        object.insert("results".to_string(), serde_json::Value::Array(results));
    }
    format!("{json}\n")
}
