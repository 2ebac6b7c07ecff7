//! The random kernels of the kernel-effects soundness test (`tests/kernel_gen/`: indices affine in
//! the ids, divisions, clamps, data-dependent indices, guards, counted loops, helpers taking a
//! buffer, 1- and 2-D buffers and workgroups, barriers) lowered to SPIR-V: each lowers (with the
//! device's defaults, and with a 64-bit `index` and every feature), and every module passes
//! `spirv-val` (the Khronos validator's command line, besides the copy compiled into the
//! lowering that `lower_module` runs) when it is installed; without it the test says it skips,
//! and fails when `HAT_REQUIRE_VULKAN=1`. `PROPTEST_CASES` sets the number of cases (default 256).

mod kernel_gen;

use hat_lowering::{lower_module, DeviceFeatures, IndexWidth, LoweringOptions, SpirvModule};
use proptest::prelude::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Whether `spirv-val` is installed (checked once).
fn spirv_val_installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let found = Command::new("spirv-val").arg("--version").output().is_ok_and(|o| o.status.success());
        if !found {
            assert_ne!(
                std::env::var("HAT_REQUIRE_VULKAN").as_deref(),
                Ok("1"),
                "HAT_REQUIRE_VULKAN=1, but spirv-val is not installed (Debian package spirv-tools)"
            );
            eprintln!("skipped: spirv-val is not installed (Debian package spirv-tools)");
        }
        found
    })
}

/// `spirv-val`'s verdict on `module` (read from standard input); `Ok` when it is not installed.
fn spirv_val(module: &SpirvModule) -> Result<(), String> {
    if !spirv_val_installed() {
        return Ok(());
    }
    let mut child = Command::new("spirv-val")
        .args(["--target-env", hat_lowering::TARGET_ENV, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    child.stdin.take().expect("piped").write_all(&module.to_bytes()).map_err(|e| e.to_string())?;
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)))
}

/// Lowers `text` with `options`, checks the module with `spirv-val`, and gives whether the
/// kernel `@k` has a barrier.
fn lower(text: &str, options: &LoweringOptions) -> Result<bool, String> {
    let mut ctx = hat_dialects::context();
    let module = hat_ir::parse_source(&mut ctx, "case.hat", text).map_err(|e| format!("parse: {e:?}"))?;
    let verified = hat_ir::verify_module(&ctx, module)
        .map_err(|d| format!("verify: {}", hat_ir::diagnostics::render_short(&ctx.sources, &d)))?;
    let spirv = lower_module(&ctx, verified, options)
        .map_err(|d| format!("lower: {}", hat_ir::diagnostics::render_short(&ctx.sources, &d)))?;
    spirv_val(&spirv).map_err(|e| format!("spirv-val: {e}"))?;
    Ok(spirv.entry_point("k").ok_or("no entry point '@k'")?.has_barrier)
}

fn wide() -> LoweringOptions {
    LoweringOptions { features: DeviceFeatures::all(), index_width: IndexWidth::Bits64, ..LoweringOptions::default() }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_kernels_lower_to_modules_spirv_val_accepts(case in kernel_gen::case()) {
        let text = kernel_gen::kernel_text(&case);
        for options in [LoweringOptions::default(), wide()] {
            let has_barrier = lower(&text, &options).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(has_barrier, case.barrier, "{}", text);
        }
    }
}
