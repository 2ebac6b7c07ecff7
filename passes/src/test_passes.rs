//! Passes that exist to test the pass manager and hat-opt from the command line, as mlir-opt's
//! `-test-*` passes do: one that fails, one that leaves invalid IR. `hat-opt` registers them;
//! [`crate::registry`] does not.

use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassOptions, PassRegistry, PassState};
use hat_ir::{Context, Diagnostic, Op};

/// Emits an error at the op it runs on and fails.
struct Fail {
    message: String,
}

impl Pass for Fail {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        state.emit(Diagnostic::error(ctx.location(op), self.message.clone()));
        Err(PassFailed)
    }
}

/// Removes the terminator of every block of the op's first region's ops (leaving invalid IR).
struct DropTerminators;

impl Pass for DropTerminators {
    fn run(&mut self, ctx: &mut Context, op: Op, _: &mut PassState<'_>) -> Result<(), PassFailed> {
        for child in ctx.body_ops(op) {
            for region in ctx.regions(child).to_vec() {
                for block in ctx.region_blocks(region).to_vec() {
                    if let Some(last) = ctx.last_op(block).filter(|&l| ctx.has_traits(l, hat_ir::OpTraits::TERMINATOR))
                    {
                        ctx.detach_op(last);
                    }
                }
            }
        }
        Ok(())
    }
}

const FAIL_OPTIONS: &[PassOptionInfo] = &[PassOptionInfo {
    name: "message",
    kind: OptionKind::String,
    default: "test-fail failed on purpose",
    help: "the error to emit",
}];

/// Registers the test passes.
pub fn register_test_passes(registry: &mut PassRegistry) {
    registry.register(PassInfo {
        name: "test-fail",
        summary: "Test pass: emits an error and fails",
        anchor: None,
        options: FAIL_OPTIONS,
        create: |options: &PassOptions| Box::new(Fail { message: options.get("message").to_string() }),
    });
    registry.register(PassInfo {
        name: "test-drop-terminator",
        summary: "Test pass: removes the terminators of the functions' bodies, leaving invalid IR",
        anchor: Some("builtin.module"),
        options: &[],
        create: |_: &PassOptions| Box::new(DropTerminators),
    });
}
