//! Can code that did not pass the verifier reach the executor or a backend through a public
//! path? The [`hat_ir::Verified`] token vouches for an op tree; what the code it runs refers to
//! (a kernel's helpers, a function's callees) must be inside a verified tree too.

use hat_ir::{parse_source, verify, verify_module, Context};
use hat_runtime::{Backend, CpuBackend};

/// A kernel that is valid on its own, calling a helper that is not (a constant without its
/// result, and a load without operands: generic forms the parser accepts, the verifier not).
const KERNEL_WITH_A_BROKEN_HELPER: &str = r#"
kernel.helper @broken() -> index {
  "arith.constant"() {value = 1 : index} : () -> ()
  %c = "buffer.load"() : () -> index
  kernel.return %c : index
}

kernel.func @k(%out: memref<1xindex>) workgroup(1) {
  %c0 = arith.constant 0 : index
  %v = kernel.call @broken() : () -> index
  buffer.store %v, %out[%c0] : memref<1xindex>
  kernel.return
}
"#;

fn parse(text: &str) -> (Context, hat_ir::Op) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "review.hat", text).unwrap_or_else(|e| panic!("{e:?}"));
    (ctx, module)
}

#[test]
fn a_token_for_an_op_inside_an_unverified_module_is_refused() {
    let (ctx, module) = parse(KERNEL_WITH_A_BROKEN_HELPER);
    assert!(!verify(&ctx, module).is_empty(), "the module does not verify");
    let kernel = ctx.body_ops(module)[1];
    assert_eq!(ctx.name_str(kernel), "kernel.func");
    // The kernel alone has no error of its own, but the code it runs does: no token.
    let token = verify_module(&ctx, kernel);
    assert!(token.is_err(), "a kernel inside a module that does not verify got a token");
}

#[test]
fn a_backend_never_compiles_code_outside_a_verified_tree() {
    let (ctx, module) = parse(KERNEL_WITH_A_BROKEN_HELPER);
    let kernel = ctx.body_ops(module)[1];
    if let Ok(token) = verify_module(&ctx, kernel) {
        // Whatever the token covers, compiling must not panic on the unverified helper.
        let mut backend = CpuBackend::new();
        let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| backend.compile_kernel(token)));
        assert!(compiled.is_ok(), "the CPU backend panicked on a helper the verifier never saw");
        assert!(compiled.unwrap().is_err(), "the CPU backend compiled a helper the verifier rejects");
    }
}
