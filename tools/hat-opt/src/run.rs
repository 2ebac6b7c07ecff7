//! `hat-opt FILE --run`: after the pass pipeline, run the program's entry function on the CPU
//! reference backend and report what it computed and what moved.
//!
//! - What is compiled and how it runs (see `strategy.rs`): with no pass given, `--run` adds the
//!   `default` pipeline (the static transfer strategy; `--strategy=jic|kernel|static|tracking`
//!   picks another) and runs the program in explicit mode: only the transfers the pipeline
//!   placed move data. With passes given, they are the pipeline. `--run-mode=reference` runs the
//!   reference semantics ("copy everything, every time", the program's own transfers ignored):
//!   the oracle.
//! - `--run-check` (alone or with `--run`) also runs the program as written by the reference
//!   semantics, and fails, naming the first observation that differs (see `check.rs`), if any
//!   value does.
//! - The entry is the `compute.func` named by `--entry` (`main` by default). Its arguments come
//!   from `--arg NAME=VALUE`, one per parameter (see [`crate::args`] for the values: numbers,
//!   `.npy` files, generators). `--out NAME=PATH.npy` writes a buffer parameter's final host copy
//!   (what the caller sees when the program returns) to a NumPy file.
//! - Host functions (see `host_bindings.rs`): the standard `print` and `display` write to
//!   standard output; `--host-func NAME=print|ignore|bump` binds another declared one. Calling a
//!   host function nothing provides is an error that names the flag.
//! - What is printed: with `--report=text` (the default) a summary on standard output — what
//!   compiled the program, the entry's results, each buffer argument's final host copy (type and
//!   first elements), transfers each way (count and bytes) in all and per buffer, dispatches, the
//!   check, and the run's time on a line of its own (`time: 0.123 ms`, the only line that changes
//!   from run to run); with `--report=json` one JSON object on one line: the runtime's report
//!   ([`hat_runtime::RunReport::to_json`]) with `entry`, `results`, `compiled_by` and `check`
//!   added.
//! - `--trace=PATH` writes the run's timeline (every copy and dispatch on the queue, barriers
//!   with their hazards, device memory) as Chrome's trace-event JSON
//!   ([`hat_runtime::chrome_trace`], docs/trace.md); with `--run-check`, of the plan's run.
//! - The IR is not printed with `--run`; `-o FILE` still writes it to FILE. The summary goes to
//!   standard output either way, after anything the program's host functions print.
//! - Errors — a missing, unknown or ill-typed argument, a `.npy` file of the wrong dtype or
//!   shape, a missing entry, a bad `--host-func`, every runtime error (out-of-bounds accesses on
//!   the host or the device, a missing kernel or host function, ...), and a failed check — are
//!   reported on standard error, runtime errors and differences as diagnostics with
//!   `file:line:col` where they have a place, and hat-opt exits with status 1.

use crate::args;
use crate::check::{self, HostCallLog, Observations, ObservedBuffer, ObservedResult};
use crate::host_bindings::HostBindings;
use crate::strategy::{RunMode, RunPlan, Strategy};
use crate::summary::{self, Summary};
use clap::ValueEnum;
use hat_ir::diagnostics::render;
use hat_ir::interfaces::{execution_space, CallableOpInterface, ExecutionSpace};
use hat_ir::printer::type_to_string;
use hat_ir::{Context, Diagnostic, Location, Op, Verified};
use hat_runtime::{
    entry_parameters, ArgValue, Backend, ElementType, Executor, ExecutorOptions, Parameter, ParameterKind, RunOutput,
    RunTimeline, RuntimeError, TransferMode,
};
use std::cell::RefCell;
use std::io::Write;

/// What `--report` prints after a run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// A short human summary: results, buffers, transfers, dispatches, time.
    #[default]
    Text,
    /// One JSON object on one line (the runtime's report, with the entry and its results).
    Json,
}

/// The options of `--run` (a section of hat-opt's command line).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Running the program (--run)")]
#[command(group(clap::ArgGroup::new("running").multiple(true).args(["run", "check"])))]
pub struct RunOptions {
    /// After the pass pipeline (the default pipeline when no pass is given), run the entry
    /// function (on the backend --backend chooses) and print a summary instead of the IR (which
    /// `-o FILE` still writes).
    #[arg(long = "run", conflicts_with_all = ["split_input_file", "verify_diagnostics"])]
    pub run: bool,
    /// As --run, and also run the program by the reference semantics; fail, naming the first
    /// value that differs (buffer, result or host-function argument, element, both values), if
    /// any does.
    #[arg(long = "run-check", conflicts_with_all = ["split_input_file", "verify_diagnostics"])]
    pub check: bool,
    /// The compute function to run.
    #[arg(long = "entry", value_name = "NAME", default_value = "main", requires = "running")]
    pub entry: String,
    /// An argument of the entry (repeatable): a number for a scalar; for a buffer a .npy file or
    /// a generator: zeros, ones, iota, random[:SEED] (ints in [0, 100), floats in [0, 1)), fill:V;
    /// or a .png image (an HxW buffer takes grey, an HxWx4 buffer RGBA).
    #[arg(long = "arg", value_name = "NAME=VALUE", requires = "running")]
    pub args: Vec<String>,
    /// Write the final host copy of the buffer parameter NAME to a .npy file, or to a .png image
    /// (an HxW buffer as grey, an HxWx4 buffer as RGBA) when PATH ends in .png (repeatable).
    #[arg(long = "out", value_name = "NAME=PATH", requires = "running")]
    pub outs: Vec<String>,
    /// Write a trace of the run to PATH: Chrome's trace-event JSON, which Perfetto
    /// (ui.perfetto.dev) and chrome://tracing open. Every copy and dispatch on the device's
    /// queue with its times, the barriers with the hazard behind each, each buffer's device
    /// memory (docs/trace.md).
    #[arg(long = "trace", value_name = "PATH", requires = "running")]
    pub trace: Option<std::path::PathBuf>,
    /// What to print after the run.
    #[arg(long = "report", value_enum, default_value = "text", value_name = "FORMAT", requires = "running")]
    pub report: ReportFormat,
    /// The transfer strategy whose pipeline --run adds when no pass is given (default: static,
    /// the 'default' pipeline).
    #[arg(long = "strategy", value_enum, value_name = "STRATEGY", requires = "running")]
    pub strategy: Option<Strategy>,
    /// How buffers move: explicit (only the program's transfers, as the pipeline placed them;
    /// the default) or reference ("copy everything, every time", no pipeline added: the oracle).
    #[arg(long = "run-mode", value_enum, value_name = "MODE", requires = "running")]
    pub mode: Option<RunMode>,
    /// Provide the declared host function NAME (repeatable): print writes its arguments as the
    /// standard print does; ignore does nothing; bump adds 1 to element 0 of every buffer
    /// argument the declaration lets it write (write, readwrite or undeclared) and prints nothing.
    #[arg(long = "host-func", value_name = "NAME=print|ignore|bump", requires = "running")]
    pub host_funcs: Vec<String>,
    /// `--backend` and `--device` (backend_choice.rs).
    #[command(flatten)]
    pub device: crate::backend_choice::DeviceOptions,
    /// `--check-races` (check_races.rs).
    #[command(flatten)]
    pub races: crate::check_races::RaceOptions,
}

impl RunOptions {
    /// Whether the program runs (`--run` or `--run-check`).
    pub fn running(&self) -> bool {
        self.run || self.check
    }
}

/// Runs `program` (the module after the pipeline) as `plan` and the options say, and writes
/// what its host functions print and then the report to `out`. `original` is the module as
/// written: the host functions that `--host-func` binds are looked up there, and `--run-check`
/// runs it by the reference semantics. `Err` holds the text for standard error: a message
/// starting `error:`, or rendered diagnostics.
pub fn run(
    program: Verified<'_>,
    original: Verified<'_>,
    options: &RunOptions,
    plan: &RunPlan,
    backends: &[crate::tool::NamedBackend],
    out: &mut dyn Write,
) -> Result<(), String> {
    let (ctx, module) = (program.ctx(), program.op());
    let entry = options.entry.as_str();
    let parameters = entry_parameters(program, entry).map_err(|error| match error {
        // The functions the program as written has: the pipeline may have inlined the others.
        RuntimeError::MissingSymbol { .. } => missing_entry(original.ctx(), original.op(), entry),
        other => render(&ctx.sources, &[other.to_diagnostic()]),
    })?;
    let arguments = args::arguments(entry, &parameters, &options.args)?;
    let outputs = args::outputs(entry, &parameters, &options.outs)?;
    let bindings = HostBindings::parse(original.ctx(), original.op(), &options.host_funcs)?;
    let result_types = result_types(ctx, module, entry);

    let plan_log = HostCallLog::default();
    let reference_arguments = options.check.then(|| arguments.clone());
    let mut backend = crate::check_races::open(&options.races, &options.device, backends)?;
    let output = {
        let shared = RefCell::new(&mut *out as &mut dyn Write);
        let log = options.check.then_some(&plan_log);
        let timeline = options.trace.is_some();
        execute(&mut *backend, program, plan.mode, entry, arguments, &bindings, &shared, log, timeline)
    };
    // The program's own output (print, display) comes before the summary.
    let _ = out.flush();
    let (output, timeline) = output.map_err(|error| render(&ctx.sources, &[diagnostic(&error)]))?;
    if let (Some(path), Some(timeline)) = (&options.trace, timeline) {
        write_trace(path, &timeline)?;
    }
    for (index, path) in &outputs {
        let parameter = buffer_parameters(&parameters).nth(*index).expect("outputs index the buffer parameters");
        args::write_output(path, parameter, &output.buffers[*index])?;
    }

    let checked = match reference_arguments {
        None => None,
        Some(arguments) => {
            let log = HostCallLog::default();
            let mut silent = std::io::sink();
            let shared = RefCell::new(&mut silent as &mut dyn Write);
            let reference = TransferMode::Reference;
            let (expected, _) =
                execute(&mut *backend, original, reference, entry, arguments, &bindings, &shared, Some(&log), false)
                    .map_err(|error| {
                        format!(
                            "error: --run-check: the reference semantics failed:\n{}",
                            render(&original.ctx().sources, &[diagnostic(&error)])
                        )
                    })?;
            let ours = observations(plan_log.into_calls(), &parameters, &output, &result_types);
            let theirs = observations(log.into_calls(), &parameters, &expected, &result_types);
            Some(check::compare(&ours, &theirs))
        }
    };

    let summary = Summary {
        entry,
        plan,
        parameters: &parameters,
        result_types: &result_types,
        output: &output,
        check: checked.as_ref(),
    };
    let text = match options.report {
        ReportFormat::Text => summary::text(&summary),
        ReportFormat::Json => summary::json(&summary),
    };
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("error: cannot write output: {e}"))?;
    match checked {
        Some(Err(difference)) => {
            let message = format!("--run-check: the plan differs from the reference semantics: {}", difference.message);
            if difference.location == Location::UNKNOWN {
                return Err(format!("error: {message}"));
            }
            Err(render(&ctx.sources, &[Diagnostic::error(difference.location, message)]))
        }
        _ => Ok(()),
    }
}

/// Runs `entry` of `module` once on `backend`, with the host functions of `bindings` writing to
/// `output` (and recording their calls in `log`); with `timeline`, also gives the run's
/// timeline.
#[allow(clippy::too_many_arguments)]
fn execute(
    backend: &mut dyn Backend,
    module: Verified<'_>,
    mode: TransferMode,
    entry: &str,
    arguments: Vec<ArgValue>,
    bindings: &HostBindings,
    output: &RefCell<&mut dyn Write>,
    log: Option<&HostCallLog>,
    timeline: bool,
) -> Result<(RunOutput, Option<RunTimeline>), RuntimeError> {
    let mut executor = Executor::new(module, backend, ExecutorOptions { mode });
    executor.set_timeline(timeline);
    for (name, function) in bindings.functions(output, log) {
        executor.register_host_function(&name, function);
    }
    let output = executor.run(entry, arguments)?;
    Ok((output, executor.take_timeline()))
}

/// Writes `timeline` as Chrome's trace-event JSON (`--trace`).
fn write_trace(path: &std::path::Path, timeline: &RunTimeline) -> Result<(), String> {
    let text = hat_runtime::chrome_trace::to_chrome_trace(timeline).to_string();
    std::fs::write(path, text).map_err(|e| format!("error: --trace={}: cannot write it: {e}", path.display()))
}

/// What a run let anyone observe (see `check.rs`).
fn observations(
    host_calls: Vec<check::HostCallRecord>,
    parameters: &[Parameter],
    output: &RunOutput,
    result_types: &[(String, Option<ElementType>)],
) -> Observations {
    let buffers = buffer_parameters(parameters)
        .zip(&output.buffers)
        .map(|(parameter, buffer)| ObservedBuffer {
            name: format!("%{}", parameter.name),
            type_text: parameter.type_text.clone(),
            buffer: buffer.clone(),
        })
        .collect();
    let results = output
        .results
        .iter()
        .enumerate()
        .map(|(index, value)| {
            let (type_text, element) = result_types.get(index).cloned().unwrap_or_default();
            ObservedResult { type_text, element, value: value.clone() }
        })
        .collect();
    Observations { host_calls, buffers, results }
}

/// The entry's buffer parameters, in order (those whose final host copies a run gives back).
pub fn buffer_parameters(parameters: &[Parameter]) -> impl Iterator<Item = &Parameter> {
    parameters.iter().filter(|p| !matches!(p.kind, ParameterKind::Scalar(_)))
}

/// A runtime error as a diagnostic, with a note where hat-opt can say more.
fn diagnostic(error: &RuntimeError) -> Diagnostic {
    let diagnostic = error.to_diagnostic();
    match error {
        RuntimeError::UnknownHostFunction { name, .. } => diagnostic.with_note(
            Location::UNKNOWN,
            format!(
                "hat-opt --run provides print and display; bind '@{name}' with --host-func {name}=print (writes its \
                 arguments) or --host-func {name}=ignore (does nothing)"
            ),
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
