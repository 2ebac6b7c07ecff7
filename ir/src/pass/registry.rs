//! The registry of passes: name → how to create the pass, with its options and summary.

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

/// Passes by name. Any crate can register its own.
#[derive(Clone, Default)]
pub struct PassRegistry {
    passes: BTreeMap<&'static str, PassInfo>,
}

impl PassRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a pass (a later registration of the same name replaces it).
    pub fn register(&mut self, info: PassInfo) {
        self.passes.insert(info.name, info);
    }

    /// A registered pass.
    pub fn get(&self, name: &str) -> Option<&PassInfo> {
        self.passes.get(name)
    }

    /// All passes, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &PassInfo> {
        self.passes.values()
    }
}
