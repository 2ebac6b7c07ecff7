//! What every Vulkan test file needs: a validated backend (or a printed skip, which fails under
//! `HAT_REQUIRE_VULKAN=1`) and the check that the validation layer said nothing.

use hat_runtime_vulkan::{VulkanBackend, VulkanOptions};

/// A backend with the Khronos validation layer on and `options` otherwise, on the default
/// device; `None` (printed) when there is none, a panic under `HAT_REQUIRE_VULKAN=1`.
pub fn vulkan_with(options: VulkanOptions) -> Option<VulkanBackend> {
    match VulkanBackend::new(&VulkanOptions { validation: true, ..options }) {
        Ok(backend) => Some(backend),
        Err(error) if std::env::var("HAT_REQUIRE_VULKAN").is_ok_and(|v| v == "1") => {
            panic!("HAT_REQUIRE_VULKAN=1, but no Vulkan device with validation: {error}")
        }
        Err(error) => {
            eprintln!("skipped: no Vulkan device with validation ({error})");
            None
        }
    }
}

/// Fails on anything the validation layer said.
pub fn assert_valid(backend: &VulkanBackend) {
    let messages = backend.validation_messages();
    assert!(messages.is_empty(), "{} validation message(s):\n{}", messages.len(), messages.join("\n"));
}
