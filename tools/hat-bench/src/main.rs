//! `hat-bench`: benchmarks of hat, each printing one JSON object to stdout (progress goes to
//! stderr).
//!
//! - `hat-bench parse`: parse + verify + print a generated module of a million ops with `hat-opt`,
//!   and with `mlir-opt --allow-unregistered-dialect` when it is installed; time and peak memory of
//!   each, and hat's time by phase.
//! - `hat-bench passes`: `canonicalize,cse` over a generated module of a million arith and scf ops
//!   with `hat-opt`, and with `mlir-opt --allow-unregistered-dialect --canonicalize --cse` on the
//!   same generic text; time and peak memory of each, their phases, and the ops each leaves.
//! - `hat-bench executor`: the host executor's overhead per executed host op and per dispatch on
//!   the CPU backend, in process.
//! - `hat-bench nested`: canonicalize, cse and dce nested on `compute.func` and over the whole
//!   module, on modules of 1k to 64k small functions; pass time per function across the sizes.
//! - `hat-bench transfers`: what each transfer strategy moves on every scenario of `examples/`,
//!   next to the optimum (`--markdown docs/scenarios.md` writes the table as a page), and the
//!   cost of planning on generated programs of 1,000 to 100,000 dispatches (time, peak heap,
//!   growth exponent). Its tables go to stderr (`--format=table`: to stdout, without the JSON).
//! - `hat-bench gpu`: on a Vulkan device, in process: an elementwise square's GB/s, Game of
//!   Life end to end under the default pipeline and under `jic`, the wall time per dispatch in
//!   long chains; beside the Vulkan probe's, PyTorch's, CuPy's and IREE's figures from their
//!   JSON lines, with issue 10's targets and a plot (`--svg`).
//! - `hat-bench aliases`: `resolve-aliases` on k-way rotations (k = 2..8) and on a ping-pong
//!   loop of 1,000 dispatches: time, period, e-graph size; target under 50 ms each.
//! - `hat-bench soak`: a million dependent dispatches and a million host-loop iterations with
//!   element peeks, on the CPU backend or a Vulkan device: resident memory after warm-up and at
//!   the end; target growth under 1 MiB.

mod aliases;
/// The allocator's policy, hat-opt's own (the figures are of the process hat-opt would be).
use hat_opt::allocator_policy;
mod common;
mod executor;
mod generate;
mod gpu;
mod heap;
mod measure;
mod nested;
mod parse;
mod passes;
mod races;
mod soak;
mod transfers;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "hat-bench", version, about = "Benchmarks for hat, printing JSON")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse + verify + print a generated module (hat-opt against mlir-opt), in several shapes.
    Parse(parse::ParseArgs),
    /// canonicalize + cse over a generated module of arith and scf (hat-opt against mlir-opt).
    Passes(passes::PassesArgs),
    /// Host-executor overhead per executed host op and per dispatch (CPU backend, in process).
    Executor(executor::ExecutorArgs),
    /// canonicalize, cse and dce per function (`compute.func(...)`) and per module, on 1k to 64k functions.
    Nested(nested::NestedArgs),
    /// Bytes each transfer strategy moves on every scenario (beside the optimum), and the cost of
    /// planning on generated programs of 1k to 100k dispatches.
    Transfers(transfers::TransfersArgs),
    /// On a Vulkan device: square GB/s, Life end to end (default and jic), wall time per
    /// dispatch; beside the probe's, PyTorch's, CuPy's and IREE's figures.
    Gpu(gpu::GpuArgs),
    /// The image examples at 4096 x 4096: plan-memory's arena against the lower bound, and on a
    /// Vulkan device the peak, device and end-to-end times beside PyTorch's and CuPy's.
    Pipelines(gpu::pipelines::PipelinesArgs),
    /// The race lint on 1,000 generated kernels of 100 ops (in process): time, target 1 s.
    Races(races::RacesArgs),
    /// resolve-aliases on k-way rotations and a 1,000-dispatch ping-pong body: time, e-graph size.
    Aliases(aliases::AliasesArgs),
    /// A million dependent dispatches and a million host-loop iterations with element peeks:
    /// resident memory after warm-up and at the end, target growth under 1 MiB.
    Soak(soak::SoakArgs),
    /// Internal: run PROGRAM ARGS... once and print its wall time and peak memory as JSON.
    #[command(hide = true)]
    MeasureChild {
        /// The program to run.
        program: std::path::PathBuf,
        /// Its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    allocator_policy::keep_freed_memory();
    let cli = Cli::parse();
    // The report to print as JSON (none where the subcommand printed its own output) and
    // whether hat succeeded throughout.
    let result: Result<(Option<serde_json::Value>, bool), String> = match &cli.command {
        Command::Parse(args) => parse::run(args).map(|(report, ok)| (Some(report), ok)),
        Command::Passes(args) => passes::run(args).map(|(report, ok)| (Some(report), ok)),
        Command::Executor(args) => executor::run(args).map(|(report, ok)| (Some(report), ok)),
        Command::Nested(args) => nested::run(args).map(|(report, ok)| (Some(report), ok)),
        Command::Gpu(args) => gpu::run(args).map(|(report, ok)| (Some(report), ok)),
        Command::Pipelines(args) => gpu::pipelines::run_pipelines(args).map(|(report, ok)| (Some(report), ok)),
        Command::Races(args) => races::run(args).map(|(report, ok)| (Some(report), ok)),
        Command::Soak(args) => soak::run_soak(args).map(|(report, ok)| (Some(report), ok)),
        Command::Transfers(args) => transfers::run(args).map(|(report, tables, ok)| match args.format {
            transfers::Format::Table => {
                print!("{tables}");
                (None, ok)
            }
            transfers::Format::Json => {
                eprint!("{tables}");
                (Some(report), ok)
            }
        }),
        Command::Aliases(args) => aliases::run(args).map(|(report, table, ok)| match args.format {
            aliases::Format::Table => {
                print!("{table}");
                (None, ok)
            }
            aliases::Format::Json => {
                eprint!("{table}");
                (Some(report), ok)
            }
        }),
        Command::MeasureChild { program, args } => {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            return match measure::run_once(program, &args) {
                Ok(run) => {
                    println!("{}", run.to_helper_json());
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    println!("{error}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    match result {
        Ok((report, ok)) => {
            let printed = report.is_some();
            if let Some(report) = report {
                println!("{}", serde_json::to_string_pretty(&report).expect("JSON values serialize"));
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                if printed {
                    eprintln!("hat-bench: hat failed (see \"error\" in the report)");
                } else {
                    eprintln!(
                        "hat-bench: a plan observed what the reference semantics did not, or failed (see the tables)"
                    );
                }
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("hat-bench: {error}");
            ExitCode::from(2)
        }
    }
}
