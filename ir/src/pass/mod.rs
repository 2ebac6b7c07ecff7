//! Passes and the pass manager.
//!
//! A [`Pass`] transforms or analyses the IR under one op (its anchor). Passes are registered by
//! name in a [`PassRegistry`] with typed options ([`PassOptionInfo`]), beside named pipelines (a
//! name standing for a pipeline's text, usable wherever a pass name is); a pipeline in MLIR's
//! syntax (`builtin.module(compute.func(cse),canonicalize{max-iterations=5})`, see [`pipeline`])
//! builds a [`PassManager`] that runs them, verifying after each pass, caching analyses, and
//! calling [`instrumentation`] hooks (IR printing, timing, statistics).

mod analysis;
pub mod instrumentation;
mod manager;
mod options;
pub mod pipeline;
mod registry;

pub use analysis::{Analysis, AnalysisManager};
pub use manager::{PassManager, PassManagerOptions, PipelineError};
pub use options::{OptionKind, OptionValue, PassOptionInfo, PassOptions};
pub use registry::{PassInfo, PassRegistry, PipelineInfo};

use crate::diagnostics::Diagnostic;
use crate::{Context, Op};
use std::any::TypeId;

/// A transformation or analysis of the IR under an op.
pub trait Pass {
    /// Runs on `op`. Report problems through `state` ([`PassState::emit`]); return `Err` to stop
    /// the pipeline (the pass failed: its errors have been emitted).
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed>;
}

/// A pass failed; its diagnostics were emitted through [`PassState::emit`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PassFailed;

/// What a running pass can do besides changing the IR: read cached analyses, say which
/// analyses it preserved, count statistics, and emit diagnostics.
pub struct PassState<'a> {
    pub(crate) analyses: &'a mut AnalysisManager,
    pub(crate) preserved: Preserved,
    pub(crate) statistics: &'a mut Vec<(String, u64)>,
    pub(crate) diagnostics: &'a mut Vec<Diagnostic>,
}

/// Which analyses a pass left valid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Preserved {
    /// None: every cached analysis of the op is dropped after the pass (the default).
    #[default]
    None,
    /// All of them (the pass changed nothing, or nothing they depend on).
    All,
    /// These.
    Some(Vec<TypeId>),
}

impl PassState<'_> {
    /// The analysis `A` of `op`, computed now or taken from the cache.
    pub fn analysis<A: Analysis>(&mut self, ctx: &Context, op: Op) -> &A {
        self.analyses.get_or_compute::<A>(ctx, op)
    }

    /// Declares that the pass kept every analysis valid.
    pub fn preserve_all(&mut self) {
        self.preserved = Preserved::All;
    }

    /// Declares that the pass kept analysis `A` valid.
    pub fn preserve<A: Analysis>(&mut self) {
        match &mut self.preserved {
            Preserved::All => {}
            Preserved::Some(list) => list.push(TypeId::of::<A>()),
            Preserved::None => self.preserved = Preserved::Some(vec![TypeId::of::<A>()]),
        }
    }

    /// Adds `amount` to the statistic `name` (shown by `--mlir-pass-statistics`).
    pub fn add_statistic(&mut self, name: &str, amount: u64) {
        match self.statistics.iter_mut().find(|(n, _)| n == name) {
            Some((_, value)) => *value += amount,
            None => self.statistics.push((name.to_string(), amount)),
        }
    }

    /// Emits a diagnostic (an error makes the run fail once the pass returns).
    pub fn emit(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }
}
