//! What an opt tool built on hat registers: its dialects, its passes and pipelines, and the
//! backends `--run --backend=NAME` may choose beside hat's own. hat-opt is [`Tool::hat`]; a
//! vendor's `vendor-opt` is a `Tool` with the vendor's dialect, passes and backend, handed to
//! [`crate::main`] — MLIR's `MlirOptMain(argc, argv, name, registry)`.
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     let mut passes = hat_passes::registry();
//!     // register the vendor's passes here: passes.register::<MyPass>();
//!     hat_opt::main(hat_opt::Tool::new("vendor-opt", hat_dialects::context, passes))
//! }
//! ```

use hat_ir::pass::PassRegistry;
use hat_ir::Context;
use hat_runtime::Backend;

/// Opens a backend a tool registered: `Err` holds the reason, which hat-opt prints after
/// `error: --backend=NAME: `.
pub type OpenBackend = Box<dyn Fn() -> Result<Box<dyn Backend>, String>>;

/// A backend `--backend=NAME` chooses, registered by the tool.
pub struct NamedBackend {
    /// The value of `--backend` that chooses it.
    pub name: String,
    /// One line for `--help`.
    pub help: String,
    /// Opens it.
    pub open: OpenBackend,
}

/// An opt tool: the command's name and description, the dialects every input is parsed with,
/// the pass registry its flags and pipelines come from, and its own backends.
pub struct Tool {
    pub(crate) name: String,
    pub(crate) about: Option<String>,
    pub(crate) version: Option<String>,
    pub(crate) dialects: Box<dyn Fn() -> Context>,
    pub(crate) passes: PassRegistry,
    pub(crate) backends: Vec<NamedBackend>,
}

impl Tool {
    /// A tool named `name` (its `--help` and `--version` say so) whose inputs are parsed in the
    /// contexts `dialects` builds (a fresh one per input chunk) and whose passes are `passes`.
    pub fn new(name: impl Into<String>, dialects: impl Fn() -> Context + 'static, passes: PassRegistry) -> Tool {
        Tool {
            name: name.into(),
            about: None,
            version: None,
            dialects: Box::new(dialects),
            passes,
            backends: Vec::new(),
        }
    }

    /// hat-opt: hat's dialects, hat's passes and pipelines, and the test passes.
    pub fn hat() -> Tool {
        let mut passes = hat_passes::registry();
        hat_passes::register_test_passes(&mut passes);
        Tool::new("hat-opt", hat_dialects::context, passes)
    }

    /// The one-line description `--help` opens with.
    pub fn about(mut self, about: impl Into<String>) -> Tool {
        self.about = Some(about.into());
        self
    }

    /// What `--version` prints (hat's version unless set).
    pub fn version(mut self, version: impl Into<String>) -> Tool {
        self.version = Some(version.into());
        self
    }

    /// Adds a backend that `--backend=NAME` (or `HAT_BACKEND=NAME`) chooses; `help` is its line
    /// in `--help` (the list of possible values). Panics when the name is taken already (by
    /// hat's own `auto`, `vulkan`, `cpu`, or an earlier call): two backends of one name are a
    /// mistake in the tool's `main`, not in its input.
    pub fn backend(
        mut self,
        name: impl Into<String>,
        help: impl Into<String>,
        open: impl Fn() -> Result<Box<dyn Backend>, String> + 'static,
    ) -> Tool {
        let name = name.into();
        assert!(
            !crate::backend_choice::BUILT_IN.iter().any(|(built_in, _)| *built_in == name)
                && !self.backends.iter().any(|b| b.name == name),
            "backend `{name}` is registered twice"
        );
        self.backends.push(NamedBackend { name, help: help.into(), open: Box::new(open) });
        self
    }

    /// The pass registry, to add passes and pipelines to.
    pub fn passes_mut(&mut self) -> &mut PassRegistry {
        &mut self.passes
    }

    /// The pass registry.
    pub fn passes(&self) -> &PassRegistry {
        &self.passes
    }

    /// A fresh context with the tool's dialects.
    pub fn context(&self) -> Context {
        (self.dialects)()
    }
}
