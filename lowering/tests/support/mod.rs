//! What the lowering tests share: parsing and lowering a program, and `spirv-val` (the
//! command-line validator of the Khronos SPIR-V tools) when it is installed.

#![allow(dead_code)]

use hat_lowering::{lower_module, LoweringOptions, SpirvModule};
use std::process::Command;

/// Parses, verifies and lowers `text`; the error is the rendered diagnostics.
pub fn lower_with(text: &str, options: &LoweringOptions) -> Result<SpirvModule, String> {
    let mut ctx = hat_dialects::context();
    ctx.allow_unregistered = true;
    let module = hat_ir::parse_source(&mut ctx, "test.hat", text).map_err(|e| format!("parse: {e:?}"))?;
    let verified = hat_ir::verify_module(&ctx, module)
        .map_err(|d| format!("verify: {}", hat_ir::diagnostics::render_short(&ctx.sources, &d)))?;
    lower_module(&ctx, verified, options).map_err(|d| hat_ir::diagnostics::render_short(&ctx.sources, &d))
}

/// [`lower_with`] the default options, which must succeed; also checks the module with the
/// `spirv-val` tool when it is installed.
pub fn lower(text: &str) -> SpirvModule {
    let spirv = lower_with(text, &LoweringOptions::default()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    spirv_val(&spirv.words);
    spirv
}

/// The diagnostics of a program that must not lower with `options`.
pub fn diagnostics_with(text: &str, options: &LoweringOptions) -> String {
    match lower_with(text, options) {
        Ok(_) => panic!("expected diagnostics, but the program lowered:\n{text}"),
        Err(message) => message,
    }
}

/// The diagnostics of a program that must not lower with the default options.
pub fn diagnostics(text: &str) -> String {
    diagnostics_with(text, &LoweringOptions::default())
}

/// Whether this build links SPIRV-Tools (`hat_lowering::disassemble` works and modules are
/// validated); when it does not, says so (and fails when `HAT_REQUIRE_VULKAN=1`, where CI
/// installs the SPIR-V tools).
pub fn spirv_tools_linked() -> bool {
    let linked = hat_lowering::spirv_tools_version().is_some();
    if !linked {
        if std::env::var("HAT_REQUIRE_VULKAN").as_deref() == Ok("1") {
            panic!("HAT_REQUIRE_VULKAN=1, but hat was built without SPIRV-Tools (Debian package spirv-tools)");
        }
        eprintln!("skipped: hat was built without SPIRV-Tools (Debian package spirv-tools)");
    }
    linked
}

/// Whether the `spirv-val` tool is installed; when it is not, says so once per test (and fails
/// when `HAT_REQUIRE_VULKAN=1`, where CI installs the SPIR-V tools).
pub fn spirv_val_available() -> bool {
    let found = Command::new("spirv-val").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        if std::env::var("HAT_REQUIRE_VULKAN").as_deref() == Ok("1") {
            panic!("HAT_REQUIRE_VULKAN=1, but the spirv-val tool is not installed (Debian package spirv-tools)");
        }
        eprintln!("skipped: spirv-val is not installed (Debian package spirv-tools)");
    }
    found
}

/// Runs `spirv-val --target-env vulkan1.1` on `words` when the tool is installed; panics with
/// its message when it rejects them.
pub fn spirv_val(words: &[u32]) {
    if !spirv_val_available() {
        return;
    }
    let path = std::env::temp_dir().join(format!(
        "hat-lowering-{}-{}.spv",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
    ));
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).expect("writes the module");
    let output = Command::new("spirv-val")
        .args(["--target-env", hat_lowering::TARGET_ENV])
        .arg(&path)
        .output()
        .expect("spirv-val runs");
    let _ = std::fs::remove_file(&path);
    assert!(
        output.status.success(),
        "spirv-val rejects the module:\n{}{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        hat_lowering::disassemble(words).unwrap_or_default()
    );
}
