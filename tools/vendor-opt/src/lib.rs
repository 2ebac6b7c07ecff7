//! The vendor's opt tool, written as a vendor outside hat writes one (hat's public API only):
//! hat-opt's driver ([`hat_opt::main`]) with
//! - the vendor's dialects beside hat's: `vendor` (host functions, calls, loops) and `dev`
//!   (device loops, conditionals, functions), from the crate `hat-test-dialects`;
//! - hat's passes and pipelines, and the vendor's pipeline `vendor-cleanup`;
//! - the vendor's backend, `--backend=squarer`: [`accelerator::SquaringAccelerator`].
//!
//! Its file tests (`tests/filetests/`) run through the binary as hat-opt's run through hat-opt.

pub mod accelerator;

use hat_opt::Tool;

/// vendor-opt: what [`hat_opt::main`] needs to be the vendor's tool.
pub fn tool() -> Tool {
    let mut passes = hat_passes::registry();
    passes.register_pipeline(
        "vendor-cleanup",
        "The vendor's clean-up: folding, then common subexpressions",
        "builtin.module(canonicalize,cse)",
    );
    Tool::new("vendor-opt", hat_test_dialects::dev::context, passes)
        .about("Parse, verify, transform, print and run hat IR with the vendor's dialects and backend")
        .version(env!("CARGO_PKG_VERSION"))
        .backend("squarer", "The vendor's squaring accelerator (kernels that square an i32 buffer)", || {
            Ok(Box::new(accelerator::SquaringAccelerator::default()))
        })
}
