//! The registry of passes and named pipelines: name → how to create the pass (with its options
//! and summary), or name → the pipeline text it stands for.
//!
//! A name refers to at most one thing: registering a pass or a pipeline under a name already
//! taken replaces what was there, whichever kind it was. A pipeline's name can be used wherever
//! a pass name can (in a pipeline's text, as a `hat-opt` flag); it is expanded when the pipeline
//! is built ([`PassManager::add_pipeline`](super::PassManager::add_pipeline)), so a pipeline may
//! name passes and pipelines registered after it. Its text is checked then too: an error in it
//! is reported as an error in that pipeline.

use super::options::closest_match;
use super::{Pass, PassOptionInfo, PassOptions};
use std::collections::BTreeMap;

/// How to create a pass, and what `--help` says about it.
#[derive(Clone)]
pub struct PassInfo {
    /// The pipeline name and `hat-opt` flag, such as `cse`.
    pub name: &'static str,
    /// One line for `--help` and the docs.
    pub summary: &'static str,
    /// The op the pass runs on (`compute.func`, ...), or `None` for any op.
    pub anchor: Option<&'static str>,
    /// Its options.
    pub options: &'static [PassOptionInfo],
    /// Creates an instance from validated options.
    pub create: fn(&PassOptions) -> Box<dyn Pass>,
}

/// A named pipeline: a name that stands for a pipeline's text, as MLIR's registered pass
/// pipelines (`mlir-opt --my-pipeline`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineInfo {
    /// The name used in pipelines and as a `hat-opt` flag, such as `default`.
    pub name: &'static str,
    /// One line for `--help` and the docs.
    pub summary: &'static str,
    /// What it stands for, in the pipeline syntax (see [`pipeline`](super::pipeline)): a list
    /// of passes, or one `builtin.module(...)` (taken as its contents where the pipeline is used
    /// on a `builtin.module`).
    pub text: String,
}

/// What a name refers to.
#[derive(Clone)]
enum Entry {
    Pass(PassInfo),
    Pipeline(PipelineInfo),
}

/// Passes and named pipelines by name. Any crate can register its own.
#[derive(Clone, Default)]
pub struct PassRegistry {
    entries: BTreeMap<&'static str, Entry>,
}

impl PassRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a pass (replacing a pass or pipeline of the same name).
    pub fn register(&mut self, info: PassInfo) {
        self.entries.insert(info.name, Entry::Pass(info));
    }

    /// Registers a named pipeline: `name` stands for the pipeline `text` (replacing a pass or
    /// pipeline of the same name). The text is parsed and its names resolved when a pipeline
    /// that uses `name` is built.
    pub fn register_pipeline(&mut self, name: &'static str, summary: &'static str, text: impl Into<String>) {
        self.entries.insert(name, Entry::Pipeline(PipelineInfo { name, summary, text: text.into() }));
    }

    /// A registered pass.
    pub fn get(&self, name: &str) -> Option<&PassInfo> {
        match self.entries.get(name)? {
            Entry::Pass(info) => Some(info),
            Entry::Pipeline(_) => None,
        }
    }

    /// A registered pipeline.
    pub fn pipeline(&self, name: &str) -> Option<&PipelineInfo> {
        match self.entries.get(name)? {
            Entry::Pipeline(info) => Some(info),
            Entry::Pass(_) => None,
        }
    }

    /// All passes, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &PassInfo> {
        self.entries.values().filter_map(|entry| match entry {
            Entry::Pass(info) => Some(info),
            Entry::Pipeline(_) => None,
        })
    }

    /// All named pipelines, sorted by name.
    pub fn pipelines(&self) -> impl Iterator<Item = &PipelineInfo> {
        self.entries.values().filter_map(|entry| match entry {
            Entry::Pipeline(info) => Some(info),
            Entry::Pass(_) => None,
        })
    }

    /// The registered name (of a pass or a pipeline) closest to `name`, when it is close enough
    /// to be a misspelling of it (the rule of the options' "did you mean").
    pub fn closest_name(&self, name: &str) -> Option<&'static str> {
        let names: Vec<&'static str> = self.entries.keys().copied().collect();
        closest_match(name, &names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::{PassFailed, PassManager, PassManagerOptions, PassState, PipelineError};
    use crate::{Context, Op};

    struct Nothing;

    impl Pass for Nothing {
        fn run(&mut self, _: &mut Context, _: Op, _: &mut PassState<'_>) -> Result<(), PassFailed> {
            Ok(())
        }
    }

    fn pass(name: &'static str) -> PassInfo {
        PassInfo { name, summary: "", anchor: None, options: &[], create: |_| Box::new(Nothing) }
    }

    #[test]
    fn passes_and_pipelines_share_one_namespace() {
        let mut registry = PassRegistry::new();
        registry.register(pass("cse"));
        registry.register(pass("canonicalize"));
        registry.register_pipeline("default", "the whole job", "canonicalize,cse");
        assert_eq!(registry.iter().map(|p| p.name).collect::<Vec<_>>(), ["canonicalize", "cse"]);
        assert_eq!(registry.pipelines().map(|p| p.name).collect::<Vec<_>>(), ["default"]);
        assert_eq!(registry.pipeline("default").unwrap().text, "canonicalize,cse");
        assert!(registry.get("default").is_none());
        assert!(registry.pipeline("cse").is_none());
        // A later registration replaces the earlier one, whatever its kind.
        registry.register_pipeline("cse", "", "canonicalize");
        assert!(registry.get("cse").is_none());
        assert!(registry.pipeline("cse").is_some());
        registry.register(pass("default"));
        assert!(registry.pipeline("default").is_none());
        assert!(registry.get("default").is_some());
    }

    fn manager(registry: &PassRegistry, text: &str) -> Result<String, PipelineError> {
        let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
        manager.add_pipeline(registry, text)?;
        Ok(manager.pipeline_string())
    }

    #[test]
    fn a_pipeline_name_expands_where_a_pass_name_can_stand() {
        let mut registry = PassRegistry::new();
        registry.register(pass("cse"));
        registry.register(pass("dce"));
        // Written as a whole module pipeline, taken as its contents on a module; registered
        // before a pipeline it names.
        registry.register_pipeline("default", "", "builtin.module(cleanup,compute.func(cse))");
        registry.register_pipeline("cleanup", "", "cse,dce");
        assert_eq!(manager(&registry, "default").unwrap(), "builtin.module(cse,dce,compute.func(cse))");
        assert_eq!(
            manager(&registry, "builtin.module(dce,default,cse)").unwrap(),
            "builtin.module(dce,cse,dce,compute.func(cse),cse)"
        );
        // Nested on another op, the module pipeline stays nested.
        assert_eq!(
            manager(&registry, "compute.func(default)").unwrap(),
            "builtin.module(compute.func(builtin.module(cse,dce,compute.func(cse))))"
        );
        let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
        manager.add_pass(&registry, "cleanup", &[]).unwrap();
        assert_eq!(manager.pipeline_string(), "builtin.module(cse,dce)");
    }

    #[test]
    fn pipeline_errors_name_the_pipeline() {
        let mut registry = PassRegistry::new();
        registry.register(pass("cse"));
        registry.register_pipeline("broken", "", "cse,,cse");
        registry.register_pipeline("misspelt", "", "cse,cse-all");
        registry.register_pipeline("outer", "", "misspelt");
        registry.register_pipeline("a", "", "cse,b");
        registry.register_pipeline("b", "", "a");
        registry.register_pipeline("c", "", "a");
        let error = |text: &str| manager(&registry, text).unwrap_err().to_string();
        assert_eq!(
            error("broken"),
            "in pipeline 'broken': invalid pass pipeline 'cse,,cse': expected a pass or op name at character 5"
        );
        assert_eq!(
            error("outer"),
            "in pipeline 'outer': in pipeline 'misspelt': 'cse-all' does not refer to a registered pass or pipeline"
        );
        assert_eq!(error("a"), "pipeline 'a' includes itself: a -> b -> a");
        assert_eq!(error("c"), "pipeline 'a' includes itself: a -> b -> a");
        assert_eq!(
            error("cse{x=1},outer{y=2}").as_str(),
            "invalid options for pass 'cse': unknown option 'x': the pass takes no options"
        );
        assert_eq!(
            error("outer{y=2}"),
            "'outer' is a pipeline: it takes no options (give options to the passes it runs)"
        );
        assert_eq!(
            manager(&registry, "builtin.module(csee)").unwrap_err(),
            PipelineError::UnknownPass { name: "csee".into(), suggestion: Some("cse") }
        );
        assert_eq!(error("outr"), "'outr' does not refer to a registered pass or pipeline; did you mean 'outer'?");
    }

    #[test]
    fn the_closest_name_covers_passes_and_pipelines() {
        let mut registry = PassRegistry::new();
        registry.register(pass("canonicalize"));
        registry.register_pipeline("default", "", "canonicalize");
        assert_eq!(registry.closest_name("canonicalise"), Some("canonicalize"));
        assert_eq!(registry.closest_name("defualt"), Some("default"));
        assert_eq!(registry.closest_name("inline"), None);
    }
}
