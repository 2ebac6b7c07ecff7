//! The pass manager: a tree of op pass managers built from a pipeline, run over the IR.
//!
//! An op pass manager anchored on op name `X` runs on an op named `X`: a pass element runs on
//! that op (or, if the pass is anchored on another op name `Y`, on every op named `Y` nested in
//! it); a nested element anchored on `Y` runs on every op named `Y` directly inside the op's
//! regions. After each pass the op it ran on is verified (unless `verify_each` is off), the
//! analyses it did not preserve are dropped (those of that op, of the ops nested in it and of the
//! ops enclosing it: see [`AnalysisManager`]), and the slots of the ops it erased are reclaimed
//! for reuse ([`Context::reclaim_erased_ops`]).
//!
//! Cost: the bookkeeping of a pass run on an op is proportional to that op (its walk for an
//! anchored pass, its verification), never to the whole context, so a pipeline nested on
//! functions costs the sum of the functions. A pass may erase only ops nested in the op it runs
//! on and keeps no op handles from one run to the next: the slots of the ops it erased may be
//! reused as soon as it returns.

use super::instrumentation::PassInstrumentation;
use super::pipeline::{parse_pipeline, PipelineElement};
use super::{AnalysisManager, Pass, PassInfo, PassOptions, PassRegistry, PassState, PipelineInfo, Preserved};
use crate::diagnostics::{Diagnostic, Severity};
use crate::verifier::verify;
use crate::{Context, Location, Op};

/// Options of a whole run.
#[derive(Copy, Clone, Debug)]
pub struct PassManagerOptions {
    /// Verify the IR after every pass (`--verify-each`, on by default).
    pub verify_each: bool,
}

impl Default for PassManagerOptions {
    fn default() -> Self {
        PassManagerOptions { verify_each: true }
    }
}

/// Why a pipeline could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// The text is not a pipeline.
    #[error("{0}")]
    Syntax(String),
    /// A name that is neither a registered pass nor a registered pipeline.
    #[error("'{name}' does not refer to a registered pass or pipeline{}", did_you_mean(.suggestion))]
    UnknownPass {
        /// The name as written.
        name: String,
        /// The registered name closest to it, when it looks like a misspelling of one.
        suggestion: Option<&'static str>,
    },
    /// Options given to a named pipeline, which takes none.
    #[error("'{0}' is a pipeline: it takes no options (give options to the passes it runs)")]
    PipelineOptions(String),
    /// A named pipeline that includes itself, directly or through others.
    #[error("pipeline '{}' includes itself: {}", .0[0], .0.join(" -> "))]
    RecursivePipeline(Vec<String>),
    /// An error in the text of a named pipeline.
    #[error("in pipeline '{pipeline}': {error}")]
    InPipeline {
        /// The pipeline's name.
        pipeline: String,
        /// What is wrong in its text.
        error: Box<PipelineError>,
    },
    /// Options that the pass does not accept.
    #[error("invalid options for pass '{pass}': {message}")]
    InvalidOptions {
        /// The pass.
        pass: String,
        /// What is wrong.
        message: String,
    },
}

struct PassEntry {
    info: PassInfo,
    options: PassOptions,
    pass: Box<dyn Pass>,
}

enum Element {
    Pass(PassEntry),
    Nested(OpPassManager),
}

struct OpPassManager {
    anchor: String,
    elements: Vec<Element>,
}

/// A pipeline ready to run.
pub struct PassManager {
    root: OpPassManager,
    options: PassManagerOptions,
    instrumentations: Vec<Box<dyn PassInstrumentation>>,
    statistics: Vec<(String, Vec<(String, u64)>)>,
}

impl PassManager {
    /// An empty pipeline that runs on ops named `anchor` (normally `builtin.module`).
    pub fn new(anchor: &str, options: PassManagerOptions) -> Self {
        PassManager {
            root: OpPassManager { anchor: anchor.to_string(), elements: Vec::new() },
            options,
            instrumentations: Vec::new(),
            statistics: Vec::new(),
        }
    }

    /// Appends the passes of a pipeline. A pipeline whose only element is nested on this
    /// manager's anchor (`builtin.module(...)`) is taken as its contents, as in MLIR.
    pub fn add_pipeline(&mut self, registry: &PassRegistry, text: &str) -> Result<(), PipelineError> {
        let mut elements = parse_pipeline(text).map_err(PipelineError::Syntax)?;
        if let [PipelineElement::Nested { op, .. }] = &elements[..] {
            if *op == self.root.anchor {
                let Some(PipelineElement::Nested { elements: inner, .. }) = elements.pop() else { unreachable!() };
                elements = inner;
            }
        }
        let built = build(registry, &self.root.anchor, &elements, &mut Vec::new())?;
        self.root.elements.extend(built);
        Ok(())
    }

    /// Appends one pass (or named pipeline) with `key=value` options.
    pub fn add_pass(
        &mut self,
        registry: &PassRegistry,
        name: &str,
        options: &[(String, String)],
    ) -> Result<(), PipelineError> {
        let element = PipelineElement::Pass { name: name.to_string(), options: options.to_vec() };
        let built = build(registry, &self.root.anchor, std::slice::from_ref(&element), &mut Vec::new())?;
        self.root.elements.extend(built);
        Ok(())
    }

    /// Adds an instrumentation (IR printing, timing, ...).
    pub fn add_instrumentation(&mut self, instrumentation: Box<dyn PassInstrumentation>) {
        self.instrumentations.push(instrumentation);
    }

    /// Whether the pipeline has no passes.
    pub fn is_empty(&self) -> bool {
        self.root.elements.is_empty()
    }

    /// The pipeline in MLIR's syntax, with every option's value (defaults included).
    pub fn pipeline_string(&self) -> String {
        format!("{}({})", self.root.anchor, describe(&self.root.elements))
    }

    /// Statistics gathered so far: per pass, `(name, value)` pairs.
    pub fn statistics(&self) -> &[(String, Vec<(String, u64)>)] {
        &self.statistics
    }

    /// Runs the pipeline on `op`. Warnings and remarks the passes emit come back with the errors;
    /// `Err` when a pass failed or left invalid IR.
    pub fn run(&mut self, ctx: &mut Context, op: Op) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
        if ctx.name_str(op) != self.root.anchor {
            let message = format!("can't run a '{}' pass manager on a '{}' op", self.root.anchor, ctx.name_str(op));
            return Err(vec![Diagnostic::error(ctx.location(op), message)]);
        }
        let mut runner = Runner {
            options: self.options,
            instrumentations: &mut self.instrumentations,
            analyses: AnalysisManager::new(),
            diagnostics: Vec::new(),
            statistics: &mut self.statistics,
        };
        let result = runner.run_manager(&mut self.root, ctx, op);
        let diagnostics = std::mem::take(&mut runner.diagnostics);
        for instrumentation in self.instrumentations.iter_mut() {
            instrumentation.finish();
        }
        match result {
            Ok(()) => Ok(diagnostics),
            Err(()) => Err(diagnostics),
        }
    }
}

fn did_you_mean(suggestion: &Option<&'static str>) -> String {
    suggestion.map_or_else(String::new, |name| format!("; did you mean '{name}'?"))
}

/// The elements of a pipeline run on ops named `anchor`, with named pipelines expanded
/// (`expanding`: the names of the pipelines being expanded, outermost first).
fn build(
    registry: &PassRegistry,
    anchor: &str,
    elements: &[PipelineElement],
    expanding: &mut Vec<&'static str>,
) -> Result<Vec<Element>, PipelineError> {
    let mut built = Vec::new();
    for element in elements {
        match element {
            PipelineElement::Pass { name, options } => {
                if let Some(pipeline) = registry.pipeline(name) {
                    built.extend(expand(registry, anchor, pipeline, options, expanding)?);
                    continue;
                }
                let info = registry
                    .get(name)
                    .ok_or_else(|| PipelineError::UnknownPass {
                        name: name.clone(),
                        suggestion: registry.closest_name(name),
                    })?
                    .clone();
                let options = PassOptions::validate(info.options, options)
                    .map_err(|message| PipelineError::InvalidOptions { pass: name.clone(), message })?;
                let pass = (info.create)(&options);
                built.push(Element::Pass(PassEntry { info, options, pass }));
            }
            PipelineElement::Nested { op, elements } => {
                built.push(Element::Nested(OpPassManager {
                    anchor: op.clone(),
                    elements: build(registry, op, elements, expanding)?,
                }));
            }
        }
    }
    Ok(built)
}

/// The elements a named pipeline stands for where it is used (on ops named `anchor`). Its text
/// is parsed here, so that it may name what was registered after it; a text that is one element
/// nested on `anchor` is taken as its contents, as a top-level pipeline is.
fn expand(
    registry: &PassRegistry,
    anchor: &str,
    pipeline: &PipelineInfo,
    options: &[(String, String)],
    expanding: &mut Vec<&'static str>,
) -> Result<Vec<Element>, PipelineError> {
    if !options.is_empty() {
        return Err(PipelineError::PipelineOptions(pipeline.name.to_string()));
    }
    if expanding.contains(&pipeline.name) {
        let mut chain: Vec<String> = expanding.iter().map(|name| name.to_string()).collect();
        chain.push(pipeline.name.to_string());
        let start = chain.iter().position(|name| name == pipeline.name).unwrap_or(0);
        return Err(PipelineError::RecursivePipeline(chain.split_off(start)));
    }
    let in_pipeline = |error: PipelineError| PipelineError::InPipeline {
        pipeline: pipeline.name.to_string(),
        error: Box::new(error),
    };
    let mut elements = parse_pipeline(&pipeline.text).map_err(|message| in_pipeline(PipelineError::Syntax(message)))?;
    if let [PipelineElement::Nested { op, .. }] = &elements[..] {
        if op == anchor {
            let Some(PipelineElement::Nested { elements: inner, .. }) = elements.pop() else { unreachable!() };
            elements = inner;
        }
    }
    expanding.push(pipeline.name);
    let built = build(registry, anchor, &elements, expanding);
    expanding.pop();
    // A cycle is reported once, at the outermost pipeline, not wrapped at each level.
    built.map_err(|error| match error {
        PipelineError::RecursivePipeline(_) => error,
        other => in_pipeline(other),
    })
}

fn describe(elements: &[Element]) -> String {
    let parts: Vec<String> = elements
        .iter()
        .map(|element| match element {
            Element::Pass(entry) => {
                let options: Vec<String> = entry.options.entries().map(|(k, v)| format!("{k}={v}")).collect();
                if options.is_empty() {
                    entry.info.name.to_string()
                } else {
                    format!("{}{{{}}}", entry.info.name, options.join(" "))
                }
            }
            Element::Nested(manager) => format!("{}({})", manager.anchor, describe(&manager.elements)),
        })
        .collect();
    parts.join(",")
}

struct Runner<'a> {
    options: PassManagerOptions,
    instrumentations: &'a mut Vec<Box<dyn PassInstrumentation>>,
    analyses: AnalysisManager,
    diagnostics: Vec<Diagnostic>,
    statistics: &'a mut Vec<(String, Vec<(String, u64)>)>,
}

impl Runner<'_> {
    fn run_manager(&mut self, manager: &mut OpPassManager, ctx: &mut Context, op: Op) -> Result<(), ()> {
        for element in &mut manager.elements {
            match element {
                Element::Pass(entry) => {
                    let targets = match entry.info.anchor {
                        Some(anchor) if anchor != ctx.name_str(op) => {
                            ctx.walk(op).into_iter().filter(|&o| ctx.name_str(o) == anchor).collect()
                        }
                        _ => vec![op],
                    };
                    for target in targets {
                        // (Only a pass that breaks the rule above erases another target.)
                        if !ctx.is_erased(target) {
                            self.run_pass(entry, ctx, target)?;
                        }
                    }
                }
                Element::Nested(nested) => {
                    let children: Vec<Op> = ctx
                        .regions(op)
                        .iter()
                        .flat_map(|&r| ctx.region_blocks(r).to_vec())
                        .flat_map(|b| ctx.block_ops(b).collect::<Vec<_>>())
                        .filter(|&child| ctx.name_str(child) == nested.anchor)
                        .collect();
                    for child in children {
                        if !ctx.is_erased(child) {
                            self.run_manager(nested, ctx, child)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn run_pass(&mut self, entry: &mut PassEntry, ctx: &mut Context, op: Op) -> Result<(), ()> {
        let name = entry.info.name;
        for instrumentation in self.instrumentations.iter_mut() {
            instrumentation.before_pass(name, ctx, op);
        }
        let statistics = self.statistics_of(name);
        let mut emitted = Vec::new();
        // The pass adds to its totals directly: a run allocates nothing for statistics already
        // named by an earlier run.
        let mut state = PassState {
            analyses: &mut self.analyses,
            preserved: Preserved::None,
            statistics: &mut self.statistics[statistics].1,
            diagnostics: &mut emitted,
        };
        let result = entry.pass.run(ctx, op, &mut state);
        let preserved = std::mem::take(&mut state.preserved);
        let failed = result.is_err() || emitted.iter().any(|d| d.severity == Severity::Error);
        self.diagnostics.extend(emitted);
        if failed {
            if result.is_err() && !self.diagnostics.iter().any(|d| d.severity == Severity::Error) {
                self.diagnostics.push(Diagnostic::error(ctx.location(op), format!("pass '{name}' failed")));
            }
            self.after_failure(name, ctx, op);
            return Err(());
        }
        if self.options.verify_each {
            let errors = verify(ctx, op);
            if !errors.is_empty() {
                let location = if ctx.location(op) == Location::UNKNOWN { Location::UNKNOWN } else { ctx.location(op) };
                self.diagnostics.push(Diagnostic::error(location, format!("pass '{name}' produced invalid IR")));
                self.diagnostics.extend(errors);
                self.after_failure(name, ctx, op);
                return Err(());
            }
        }
        match preserved {
            Preserved::All => {}
            Preserved::None => self.analyses.invalidate(ctx, op, &[]),
            Preserved::Some(kept) => self.analyses.invalidate(ctx, op, &kept),
        }
        // The pass is over: nobody holds the handles of the ops it erased any more.
        let reclaimed = ctx.reclaim_erased_ops();
        self.analyses.forget(&reclaimed);
        for instrumentation in self.instrumentations.iter_mut() {
            instrumentation.after_pass(name, ctx, op);
        }
        Ok(())
    }

    fn after_failure(&mut self, name: &str, ctx: &Context, op: Op) {
        for instrumentation in self.instrumentations.iter_mut() {
            instrumentation.after_pass_failed(name, ctx, op);
        }
    }

    /// The position of the statistics of `pass` (created empty at its first run).
    fn statistics_of(&mut self, pass: &str) -> usize {
        match self.statistics.iter().position(|(p, _)| p == pass) {
            Some(index) => index,
            None => {
                self.statistics.push((pass.to_string(), Vec::new()));
                self.statistics.len() - 1
            }
        }
    }
}
