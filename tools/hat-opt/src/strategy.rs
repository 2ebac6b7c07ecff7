//! What `hat-opt --run` compiles and how it then runs the program: the transfer strategy's
//! pipeline and the executor's transfer mode.
//!
//! | command line | pipeline after the given passes | transfers at run time |
//! |---|---|---|
//! | `--run` (no pass given) | `default` (the static strategy) | explicit: only the program's |
//! | `--run --strategy=jic\|kernel` | `insert-transfers{strategy=jic\|kernel}` | explicit |
//! | `--run --strategy=static` | `default` | explicit |
//! | `--run --strategy=tracking` | `inline,canonicalize,track-accesses` | tracking (the runtime's dirty sets) |
//! | `--run` with passes | none: the passes given are the pipeline (their IR may hold transfers already) | explicit |
//! | `--run --run-mode=reference` | none (the passes given, if any) | reference: copy everything, every time |
//!
//! `--run-mode=explicit` only says what is the default anyway. `--strategy` with passes given,
//! or with `--run-mode=reference`, is an error: it would be ignored. `--run-check` (see
//! `check.rs`) compares a plan with the reference semantics, so it refuses
//! `--run-mode=reference`.

use crate::run::RunOptions;
use clap::ValueEnum;
use hat_runtime::TransferMode;

/// The name of the pipeline that does the whole job.
pub const DEFAULT_PIPELINE: &str = "default";

/// A transfer strategy (`--strategy`): the ladder of `insert-transfers`, and the runtime's.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Strategy {
    /// Copy every buffer argument in and out around every dispatch.
    Jic,
    /// Copy in what each kernel reads, out what it writes.
    Kernel,
    /// A dataflow over the whole program: copy only where a later observer needs it (the
    /// `default` pipeline).
    Static,
    /// Hooks around host accesses; the runtime copies when a hook or a dispatch needs it.
    Tracking,
}

/// How buffers move at run time (`--run-mode`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum RunMode {
    /// Copy every buffer argument to the device before each dispatch and back after it; ignore
    /// the program's own transfers. The oracle.
    Reference,
    /// Move only what the program's `buffer.to_device`/`buffer.from_device` say.
    Explicit,
}

impl Strategy {
    fn name(self) -> &'static str {
        match self {
            Strategy::Jic => "jic",
            Strategy::Kernel => "kernel",
            Strategy::Static => "static",
            Strategy::Tracking => "tracking",
        }
    }

    /// The pipeline that places this strategy's transfers.
    fn pipeline(self) -> &'static str {
        match self {
            Strategy::Jic => "insert-transfers{strategy=jic}",
            Strategy::Kernel => "insert-transfers{strategy=kernel}",
            Strategy::Static => DEFAULT_PIPELINE,
            Strategy::Tracking => "builtin.module(inline,canonicalize,track-accesses)",
        }
    }
}

/// What a `--run` compiles and how it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPlan {
    /// The pipeline added after the passes given (none when they are the pipeline).
    pub pipeline: Option<&'static str>,
    /// How buffers move.
    pub mode: TransferMode,
    /// What compiled the program, for the report: `static strategy (pipeline 'default')`, `the
    /// passes given`; `None` when nothing did.
    pub description: Option<String>,
}

/// The plan of a run whose command line has `options`, `passes_given` telling whether it gives
/// passes (`--pass-pipeline`, pass flags).
pub fn run_plan(options: &RunOptions, passes_given: bool) -> Result<RunPlan, String> {
    if options.mode == Some(RunMode::Reference) {
        if let Some(strategy) = options.strategy {
            return Err(format!(
                "error: --strategy={} needs a transfer plan, but --run-mode=reference runs the reference semantics, \
                 which ignores transfers",
                strategy.name()
            ));
        }
        if options.check {
            return Err("error: --run-check compares a transfer plan with the reference semantics; \
                        --run-mode=reference has no plan"
                .to_string());
        }
        return Ok(RunPlan {
            pipeline: None,
            mode: TransferMode::Reference,
            description: passes_given.then(|| "the passes given".to_string()),
        });
    }
    if passes_given {
        if let Some(strategy) = options.strategy {
            return Err(format!(
                "error: --strategy={} picks the pipeline of a --run that is given no passes; with passes given, they \
                 are the pipeline (add insert-transfers{{strategy={}}} to them)",
                strategy.name(),
                strategy.name()
            ));
        }
        return Ok(RunPlan {
            pipeline: None,
            mode: TransferMode::Explicit,
            description: Some("the passes given".to_string()),
        });
    }
    let strategy = options.strategy.unwrap_or(Strategy::Static);
    let description = match strategy {
        Strategy::Static => format!("{} strategy (pipeline '{DEFAULT_PIPELINE}')", strategy.name()),
        _ => format!("{} strategy ({})", strategy.name(), strategy.pipeline()),
    };
    let mode = if strategy == Strategy::Tracking { TransferMode::Tracking } else { TransferMode::Explicit };
    Ok(RunPlan { pipeline: Some(strategy.pipeline()), mode, description: Some(description) })
}
