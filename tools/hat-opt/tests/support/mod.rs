//! What several of hat-opt's test files share.

/// Whether a Vulkan device exists; without one the caller skips (printed), and under
/// `HAT_REQUIRE_VULKAN=1` the test fails instead.
pub fn has_vulkan() -> bool {
    let there = !hat_runtime_vulkan::list_devices().is_empty();
    if !there {
        assert!(!std::env::var("HAT_REQUIRE_VULKAN").is_ok_and(|v| v == "1"), "HAT_REQUIRE_VULKAN=1: no device");
        eprintln!("skipped: no Vulkan device");
    }
    there
}

/// The workspace root: hat-opt runs there, and the examples' paths are relative to it.
#[allow(dead_code)] // Not every test file that shares this module asks for it.
pub fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}
