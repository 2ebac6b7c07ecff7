//! hat-opt as a library: [`main`] runs an opt tool — hat-opt, or a vendor's `vendor-opt` with its
//! own dialects, passes and backends ([`Tool`]) — with everything hat-opt does: parse a `.hat`
//! file, verify it, run a pass pipeline, and print it, following `mlir-opt`'s conventions; or,
//! with `--run`, execute it (see `run.rs`), with `--verify-diagnostics`, check its diagnostics,
//! or, with `--emit=spirv|spirv-asm`, lower its kernels to SPIR-V (see `emit.rs`). It is MLIR's
//! `MlirOptMain`: hat-opt's own `main` is [`main`]`(`[`Tool::hat`]`())`.
//!
//! Exit status: 0 on success, 1 on any error (diagnostics on stderr with `file:line:col`, or a
//! bad command line).
//!
//! The crate `hat-file-tests` runs `// RUN:` file tests through any such tool.

pub mod allocator_policy;
mod args;
mod backend_choice;
mod check_races;
mod driver;
mod emit;
mod png_io;
mod report;
mod run;
mod strategy;
mod summary;

mod check;
#[cfg(test)]
mod driver_tests;
mod host_bindings;
mod mlir_flags;

mod op_graph;
mod tool;

pub use tool::{NamedBackend, OpenBackend, Tool};

use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum};
use hat_ir::pass::PassRegistry;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// How `--mlir-timing` and `--mlir-pass-statistics` lay out their reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Display {
    /// One line per pass, summed over every op it ran on.
    List,
    /// Nested like the pipeline.
    #[value(alias = "pipeline")]
    Tree,
}

/// Command-line options (the pass flags are added at run time from the registry).
#[derive(Parser, Debug)]
#[command(name = "hat-opt", version, about = "Parse, verify, transform and print hat IR (an mlir-opt for hat)")]
pub struct Options {
    /// Input file (`-` for standard input).
    #[arg(default_value = "-")]
    pub input: PathBuf,
    /// Output file (`-` for standard output). Written only when everything succeeded.
    #[arg(short = 'o', default_value = "-")]
    pub output: PathBuf,
    /// The pass pipeline to run, in MLIR's syntax: 'builtin.module(compute.func(cse),canonicalize)';
    /// a registered pipeline's name stands for its passes ('-p default').
    #[arg(short = 'p', long = "pass-pipeline", value_name = "PIPELINE")]
    pub pass_pipeline: Option<String>,
    /// Print every op in MLIR's generic form.
    #[arg(long = "mlir-print-op-generic")]
    pub print_generic: bool,
    /// Print the source location of every op as `loc("file":line:col)`.
    #[arg(long = "mlir-print-debuginfo")]
    pub print_debug_info: bool,
    /// Accept ops of dialects that are not registered.
    #[arg(long = "allow-unregistered-dialect")]
    pub allow_unregistered_dialect: bool,
    /// Split the input at `// -----` lines and process each chunk on its own.
    #[arg(long = "split-input-file")]
    pub split_input_file: bool,
    /// List the registered dialects and exit.
    #[arg(long = "show-dialects")]
    pub show_dialects: bool,
    /// List the registered passes (with their options) and pipelines, and exit.
    #[arg(long = "list-passes")]
    pub list_passes: bool,
    /// Check the diagnostics against `expected-error {{...}}` comments in the input instead of
    /// printing them; exit 0 when they match.
    #[arg(long = "verify-diagnostics")]
    pub verify_diagnostics: bool,
    /// Verify the IR after each pass.
    #[arg(long = "verify-each", default_value_t = true, action = ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub verify_each: bool,
    /// Print the IR before the named pass (repeatable, or comma-separated).
    #[arg(long = "mlir-print-ir-before", value_name = "PASS", value_delimiter = ',')]
    pub print_ir_before: Vec<String>,
    /// Print the IR after the named pass (repeatable, or comma-separated).
    #[arg(long = "mlir-print-ir-after", value_name = "PASS", value_delimiter = ',')]
    pub print_ir_after: Vec<String>,
    /// Print the IR before every pass.
    #[arg(long = "mlir-print-ir-before-all")]
    pub print_ir_before_all: bool,
    /// Print the IR after every pass.
    #[arg(long = "mlir-print-ir-after-all")]
    pub print_ir_after_all: bool,
    /// With the after options: print only when the pass changed the IR.
    #[arg(long = "mlir-print-ir-after-change")]
    pub print_ir_after_change: bool,
    /// Print the IR (generic form) after a pass that failed.
    #[arg(long = "mlir-print-ir-after-failure")]
    pub print_ir_after_failure: bool,
    /// Report the time spent in parsing, each pass, verification and output, on stderr.
    #[arg(long = "mlir-timing")]
    pub timing: bool,
    /// Layout of the timing report.
    #[arg(long = "mlir-timing-display", value_enum, default_value = "list")]
    pub timing_display: Display,
    /// Report the statistics of each pass, on stderr.
    #[arg(long = "mlir-pass-statistics")]
    pub pass_statistics: bool,
    /// Layout of the statistics report.
    #[arg(long = "mlir-pass-statistics-display", value_enum, default_value = "tree")]
    pub pass_statistics_display: Display,
    /// Write the IR as a Graphviz (DOT) graph of ops and data flow to stderr.
    #[arg(long = "view-op-graph")]
    pub view_op_graph: bool,
    /// `--run` and its options.
    #[command(flatten)]
    pub run: run::RunOptions,
    /// `--emit` and its options.
    #[command(flatten)]
    pub emit: emit::EmitOptions,
    /// `--to-mlir`, `--from-mlir` and `--to-mlir-irdl`.
    #[command(flatten)]
    pub mlir: mlir_flags::MlirOptions,
}

/// A pass given as its own flag (`--cse`, `--canonicalize=max-iterations=3`), or a named
/// pipeline (`--default`), in command-line order.
#[derive(Clone, Debug)]
pub struct PassFlag {
    /// The pass or pipeline.
    pub name: String,
    /// Its `key=value` options.
    pub options: Vec<(String, String)>,
}

/// The tool's command line: hat-opt's options under the tool's name, `--backend` taking hat's
/// backends and the tool's, then one flag per pass and per pipeline of its registry.
fn command(tool: &Tool) -> clap::Command {
    let registry = &tool.passes;
    let mut command = Options::command().name(tool.name.clone()).bin_name(tool.name.clone());
    if let Some(about) = &tool.about {
        command = command.about(about.clone());
    }
    let version = tool.version.clone().unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string());
    // `--version` also says whether SPIR-V modules are validated (lowering/build.rs).
    let spirv_tools = match hat_lowering::spirv_tools_version() {
        Some(linked) => format!("SPIRV-Tools {linked} (every SPIR-V module is validated)"),
        None => "no SPIRV-Tools (SPIR-V modules go to the driver unvalidated; install Debian's spirv-tools \
                 and build again)"
            .to_string(),
    };
    command = command.version(version.clone()).long_version(format!("{version}\n{spirv_tools}"));
    let backends = backend_choice::possible_values(&tool.backends);
    command = command.mut_arg("backend", |arg| arg.value_parser(clap::builder::PossibleValuesParser::new(backends)));
    // One flag per pass and per pipeline (a value given to a pipeline's flag is accepted only to
    // be refused with the pass manager's message). A name that is one of the tool's own options
    // gets no flag: `flag_clashes` refuses it before the command line is read.
    let flag = |command: clap::Command, name: &'static str, help: String| {
        if command.get_arguments().any(|arg| arg.get_long() == Some(name)) {
            return command;
        }
        let arg = Arg::new(name).long(name).help(help).num_args(0..=1).require_equals(true);
        command.arg(arg.value_name("OPTIONS").default_missing_value("").action(ArgAction::Append))
    };
    let mut command = command.next_help_heading("Passes (one flag each, run in command-line order)");
    for info in registry.iter() {
        command = flag(command, info.name, pass_help(info));
    }
    command = command.next_help_heading("Pass pipelines (one flag each, run in command-line order with the passes)");
    for info in registry.pipelines() {
        command = flag(command, info.name, format!("{}\n  = {}", info.summary, info.text));
    }
    command
}

/// The passes and pipelines whose flag would be one of the tool's own options (`--run`, say): a
/// registry a tool built on the library may hold, refused with a clear message.
fn flag_clashes(tool: &Tool) -> Result<(), String> {
    let options = Options::command();
    let names = tool.passes.iter().map(|info| info.name).chain(tool.passes.pipelines().map(|info| info.name));
    let taken: Vec<&str> =
        names.filter(|name| options.get_arguments().any(|arg| arg.get_long() == Some(*name))).collect();
    match taken[..] {
        [] => Ok(()),
        _ => Err(format!(
            "error: {}: the pass or pipeline names {} are options of the tool itself; register them under other names",
            tool.name,
            taken.iter().map(|name| format!("'--{name}'")).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// A pass's summary and options, one option a line, for `--help` and `--list-passes`.
fn pass_help(info: &hat_ir::pass::PassInfo) -> String {
    let mut help = info.summary.to_string();
    for option in info.options {
        help.push_str(&format!(
            "\n  {}={} — {} (default {})",
            option.name,
            kind_name(option.kind),
            option.help,
            option.default
        ));
    }
    help
}

/// What `--list-passes` prints: every pass with its summary and options, then every pipeline
/// with its summary and text.
pub fn pass_list(registry: &PassRegistry) -> String {
    let mut out = String::from("Available Passes:\n");
    for info in registry.iter() {
        let mut lines = pass_help(info).lines().map(str::to_string).collect::<Vec<_>>().into_iter();
        out.push_str(&format!("  --{:<20} {}\n", info.name, lines.next().unwrap_or_default()));
        for line in lines {
            out.push_str(&format!("      {}\n", line.trim_start()));
        }
    }
    out.push_str("Available Pass Pipelines:\n");
    if registry.pipelines().next().is_none() {
        out.push_str("  (none)\n");
    }
    for info in registry.pipelines() {
        out.push_str(&format!("  --{:<20} {}\n", info.name, info.summary));
        out.push_str(&format!("      = {}\n", info.text));
    }
    out
}

fn kind_name(kind: hat_ir::pass::OptionKind) -> String {
    use hat_ir::pass::OptionKind;
    match kind {
        OptionKind::Bool => "bool".into(),
        OptionKind::Unsigned => "uint".into(),
        OptionKind::Integer => "int".into(),
        OptionKind::String => "string".into(),
        OptionKind::Enum(choices) => choices.join("|"),
    }
}

/// The pass flags of `matches`, in the order they were written.
fn pass_flags(registry: &PassRegistry, matches: &ArgMatches) -> Result<Vec<PassFlag>, String> {
    let mut flags: Vec<(usize, PassFlag)> = Vec::new();
    let names = registry.iter().map(|info| info.name).chain(registry.pipelines().map(|info| info.name));
    for name in names {
        let (Some(indices), Some(values)) = (matches.indices_of(name), matches.get_many::<String>(name)) else {
            continue;
        };
        for (index, value) in indices.zip(values) {
            let options = if value.is_empty() {
                Vec::new()
            } else {
                let text = format!("{name}{{{value}}}");
                match hat_ir::pass::pipeline::parse_pipeline(&text).map_err(|e| format!("error: --{name}: {e}"))?.pop()
                {
                    Some(hat_ir::pass::pipeline::PipelineElement::Pass { options, .. }) => options,
                    _ => Vec::new(),
                }
            };
            flags.push((index, PassFlag { name: name.to_string(), options }));
        }
    }
    flags.sort_by_key(|(index, _)| *index);
    Ok(flags.into_iter().map(|(_, flag)| flag).collect())
}

/// The command line `arguments` (the program's name first), read against the tool's backends,
/// passes and pipelines: the options and clap's matches (where the pass flags are), or clap's
/// error (`--help` and `--version` included).
fn parse_command_line(
    tool: &Tool,
    arguments: impl IntoIterator<Item = OsString>,
) -> Result<(Options, ArgMatches), clap::Error> {
    let matches = command(tool).try_get_matches_from(arguments)?;
    Ok((Options::from_arg_matches(&matches)?, matches))
}

/// Runs the tool on the command line `arguments` (the program's name first), writing what goes
/// to standard output to `stdout`. `Err` holds what goes to standard error before the tool exits
/// with status 1, or, for a command line clap refuses (or `--help`), clap's message.
pub fn run(tool: &Tool, arguments: impl IntoIterator<Item = OsString>, stdout: &mut dyn Write) -> Result<(), Failure> {
    flag_clashes(tool).map_err(Failure::Message)?;
    let (options, matches) = parse_command_line(tool, arguments).map_err(Failure::CommandLine)?;
    let flags = pass_flags(&tool.passes, &matches).map_err(Failure::Message)?;
    driver::run(&options, tool, &flags, stdout).map_err(Failure::Message)
}

/// Why [`run`] did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// The command line, as clap reports it (`--help` and `--version` are reported this way too,
    /// and are not errors: [`clap::Error::use_stderr`] is false for them).
    CommandLine(clap::Error),
    /// Everything else: diagnostics, or an `error: ...` line; empty when nothing is left to say.
    Message(String),
}

/// The tool's `main`: runs it on the process's command line, prints what goes to standard error,
/// and gives the exit status (0 on success, 1 on any error; `--help` is not one).
pub fn main(tool: Tool) -> ExitCode {
    // Buffered: the IR is written in many small pieces. Host functions that draw (display)
    // flush it as they go.
    let mut stdout = std::io::BufWriter::new(std::io::stdout());
    let result = run(&tool, std::env::args_os(), &mut stdout);
    let _ = stdout.flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // As mlir-opt: a bad command line is an error like any other (status 1), `--help` is not.
        Err(Failure::CommandLine(error)) => {
            let _ = error.print();
            if error.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(Failure::Message(message)) => {
            if !message.is_empty() {
                eprint!("{message}");
                if !message.ends_with('\n') {
                    eprintln!();
                }
            }
            ExitCode::FAILURE
        }
    }
}
