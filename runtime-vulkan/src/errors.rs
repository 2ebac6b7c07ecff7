//! Vulkan's results as [`RuntimeError`]s: a lost device is [`RuntimeError::DeviceLost`],
//! memory the device or the host cannot give is [`RuntimeError::Allocation`], anything else a
//! [`RuntimeError::Backend`] that says what was being done.

use ash::vk;
use hat_runtime::RuntimeError;

/// Maps a Vulkan error met while doing `what`.
pub(crate) fn vk_error(what: &'static str) -> impl Fn(vk::Result) -> RuntimeError {
    move |result| match result {
        vk::Result::ERROR_DEVICE_LOST => {
            RuntimeError::DeviceLost { message: format!("VK_ERROR_DEVICE_LOST while trying to {what}") }
        }
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
            RuntimeError::Allocation { bytes: 0, message: format!("{result} while trying to {what}") }
        }
        _ => RuntimeError::Backend(format!("vulkan: cannot {what}: {result}")),
    }
}

/// Maps an error of the memory allocator while allocating `bytes`.
pub(crate) fn allocation_error(bytes: u64, what: &str) -> impl Fn(gpu_allocator::AllocationError) -> RuntimeError + '_ {
    move |error| RuntimeError::Allocation {
        bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
        message: format!("{what}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_device_and_exhausted_memory_are_told_apart() {
        assert!(matches!(vk_error("wait")(vk::Result::ERROR_DEVICE_LOST), RuntimeError::DeviceLost { .. }));
        assert!(matches!(vk_error("wait")(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY), RuntimeError::Allocation { .. }));
        let other = vk_error("submit")(vk::Result::ERROR_UNKNOWN).to_string();
        assert!(other.contains("cannot submit"), "{other}");
        let oom = allocation_error(64, "a buffer")(gpu_allocator::AllocationError::OutOfMemory);
        assert!(matches!(oom, RuntimeError::Allocation { bytes: 64, .. }));
    }
}
