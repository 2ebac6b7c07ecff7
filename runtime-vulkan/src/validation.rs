//! The messages of the Khronos validation layer: a debug-utils messenger that records every
//! validation warning and error (synchronisation hazards included), so that tests can fail on
//! any of them ([`crate::VulkanBackend::validation_messages`]).

use crate::errors::vk_error;
use ash::vk;
use hat_runtime::RuntimeError;
use std::ffi::{c_void, CStr};
use std::sync::{Arc, Mutex};

/// The recorded messages, shared with the callback.
type Log = Mutex<Vec<String>>;

/// An installed messenger and what it recorded.
pub(crate) struct Messages {
    loader: ash::ext::debug_utils::Instance,
    messenger: vk::DebugUtilsMessengerEXT,
    log: Arc<Log>,
}

unsafe extern "system" fn record(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes valid callback data; `user` is the `Log` that `install` leaked
    // into an `Arc` held by `Messages` for as long as the messenger exists.
    let (data, log) = unsafe { (&*data, &*(user as *const Log)) };
    let text = if data.p_message.is_null() {
        String::new()
    } else {
        // SAFETY: a NUL-terminated string of the layer.
        unsafe { CStr::from_ptr(data.p_message) }.to_string_lossy().into_owned()
    };
    if let Ok(mut log) = log.lock() {
        log.push(format!("[{severity:?} {kind:?}] {text}"));
    }
    vk::FALSE
}

impl Messages {
    /// Installs a messenger of validation (and performance) warnings and errors.
    pub(crate) fn install(entry: &ash::Entry, instance: &ash::Instance) -> Result<Messages, RuntimeError> {
        let loader = ash::ext::debug_utils::Instance::new(entry, instance);
        let log: Arc<Log> = Arc::new(Mutex::new(Vec::new()));
        let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(
                vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
            )
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
            )
            .pfn_user_callback(Some(record))
            .user_data(Arc::as_ptr(&log) as *mut c_void);
        // SAFETY: the user data outlives the messenger (`Messages` holds the `Arc` and destroys
        // the messenger first).
        let messenger = unsafe { loader.create_debug_utils_messenger(&info, None) }
            .map_err(vk_error("install the validation messenger"))?;
        Ok(Messages { loader, messenger, log })
    }

    /// What was recorded so far.
    pub(crate) fn recorded(&self) -> Vec<String> {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }

    /// Destroys the messenger (before the instance).
    pub(crate) fn uninstall(self) {
        // SAFETY: the messenger was made from this loader's instance, which is still alive.
        unsafe { self.loader.destroy_debug_utils_messenger(self.messenger, None) };
    }
}
