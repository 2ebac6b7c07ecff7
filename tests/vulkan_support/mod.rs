//! What the workspace's Vulkan tests share: a validated Vulkan backend, or the reason there is
//! none. Without a device a test prints why and passes, unless `HAT_REQUIRE_VULKAN=1`, where it
//! fails (CI sets it, so a test that would skip for want of a driver fails there instead).

use hat_runtime::Backend;
use hat_runtime_vulkan::{VulkanBackend, VulkanOptions};

/// A Vulkan backend with the validation layer on, or `None` (printed) without a device.
pub fn vulkan() -> Option<VulkanBackend> {
    match VulkanBackend::new(&VulkanOptions { validation: true, ..VulkanOptions::default() }) {
        Ok(backend) => {
            eprintln!("Vulkan device: {}", backend.device_name());
            Some(backend)
        }
        Err(error) if std::env::var("HAT_REQUIRE_VULKAN").is_ok_and(|v| v == "1") => {
            panic!("HAT_REQUIRE_VULKAN=1, but no Vulkan device with validation: {error}")
        }
        Err(error) => {
            eprintln!("skipped: no Vulkan device with validation ({error})");
            None
        }
    }
}
