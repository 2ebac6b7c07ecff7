//! Checking and reading emitted modules with the system's SPIRV-Tools (Debian's `spirv-tools`
//! package, linked by `build.rs`): [`validate`] runs the validator for Vulkan 1.1 (SPIR-V 1.3),
//! the environment the lowering targets; [`disassemble`] gives the text that snapshots hold.
//!
//! A build on a machine without the package links nothing ([`spirv_tools_version`] is `None`):
//! [`crate::lower_module`] then hands modules on unvalidated, as wgpu hands drivers the SPIR-V
//! naga writes, and [`disassemble`] is an error that says what to install.

/// The environment emitted modules are for.
pub const TARGET_ENV: &str = "vulkan1.1";

/// Why [`disassemble`] or [`validate`] could not run: this build has no SPIRV-Tools.
pub const SPIRV_TOOLS_MISSING: &str = "hat was built without SPIRV-Tools: install Debian's package spirv-tools \
     (or set HAT_SPIRV_TOOLS_LIB_DIR to the directory of libSPIRV-Tools.a) and build again";

/// The version of the SPIRV-Tools this build links, or `None` where it links none (and modules
/// go unvalidated).
pub fn spirv_tools_version() -> Option<String> {
    linked::version()
}

/// Validates a module for Vulkan 1.1; the error is the validator's message (or
/// [`SPIRV_TOOLS_MISSING`]).
pub fn validate(words: &[u32]) -> Result<(), String> {
    linked::validate(words)
}

/// The module's disassembly: one instruction per line, ids named by their `OpName`s where the
/// lowering gave them, no header comment (so the text depends only on the module): `spirv-dis
/// --no-header`'s text.
pub fn disassemble(words: &[u32]) -> Result<String, String> {
    linked::disassemble(words)
}

#[cfg(hat_spirv_tools)]
mod linked {
    //! The C interface of `libSPIRV-Tools` (`spirv-tools/libspirv.h`), the few functions used.

    use std::ffi::{c_char, c_int, CStr};
    use std::ptr;

    #[repr(C)]
    struct Position {
        line: usize,
        column: usize,
        index: usize,
    }

    #[repr(C)]
    struct Diagnostic {
        position: Position,
        error: *mut c_char,
        is_text_source: bool,
    }

    #[repr(C)]
    struct Text {
        text: *const c_char,
        length: usize,
    }

    #[repr(C)]
    struct Context {
        _opaque: [u8; 0],
    }

    /// `SPV_ENV_VULKAN_1_1` of the `spv_target_env` enumeration (whose values only grow).
    const ENV_VULKAN_1_1: c_int = 18;
    const SUCCESS: c_int = 0;
    const OPTION_INDENT: u32 = 1 << 3;
    const OPTION_NO_HEADER: u32 = 1 << 5;
    const OPTION_FRIENDLY_NAMES: u32 = 1 << 6;

    extern "C" {
        fn spvSoftwareVersionString() -> *const c_char;
        fn spvContextCreate(env: c_int) -> *mut Context;
        fn spvContextDestroy(context: *mut Context);
        fn spvValidateBinary(
            context: *const Context,
            words: *const u32,
            word_count: usize,
            diagnostic: *mut *mut Diagnostic,
        ) -> c_int;
        fn spvBinaryToText(
            context: *const Context,
            words: *const u32,
            word_count: usize,
            options: u32,
            text: *mut *mut Text,
            diagnostic: *mut *mut Diagnostic,
        ) -> c_int;
        fn spvTextDestroy(text: *mut Text);
        fn spvDiagnosticDestroy(diagnostic: *mut Diagnostic);
    }

    /// A context for Vulkan 1.1, destroyed when dropped.
    struct Vulkan11(*mut Context);

    impl Vulkan11 {
        fn new() -> Result<Vulkan11, String> {
            // SAFETY: creating a context has no precondition; null is checked.
            let context = unsafe { spvContextCreate(ENV_VULKAN_1_1) };
            if context.is_null() {
                return Err("SPIRV-Tools could not create a context for Vulkan 1.1".to_string());
            }
            Ok(Vulkan11(context))
        }
    }

    impl Drop for Vulkan11 {
        fn drop(&mut self) {
            // SAFETY: the context was created by spvContextCreate and is destroyed once.
            unsafe { spvContextDestroy(self.0) }
        }
    }

    /// The message of a failed call: the diagnostic's text (then destroyed), else the result code.
    fn message(result: c_int, diagnostic: *mut Diagnostic) -> String {
        if diagnostic.is_null() {
            return format!("SPIRV-Tools failed with result {result}");
        }
        // SAFETY: a non-null diagnostic returned by SPIRV-Tools points to a valid
        // spv_diagnostic_t whose error is a NUL-terminated string or null; destroyed once.
        unsafe {
            let error = (*diagnostic).error;
            let text = if error.is_null() {
                format!("SPIRV-Tools failed with result {result}")
            } else {
                CStr::from_ptr(error).to_string_lossy().into_owned()
            };
            let index = (*diagnostic).position.index;
            spvDiagnosticDestroy(diagnostic);
            if index == 0 {
                text
            } else {
                format!("{text} (at word {index})")
            }
        }
    }

    pub(super) fn version() -> Option<String> {
        // SAFETY: returns a static NUL-terminated string.
        let version = unsafe { CStr::from_ptr(spvSoftwareVersionString()) };
        Some(version.to_string_lossy().into_owned())
    }

    pub(super) fn validate(words: &[u32]) -> Result<(), String> {
        let context = Vulkan11::new()?;
        let mut diagnostic = ptr::null_mut();
        // SAFETY: the context is live, `words` is valid for its length, and the diagnostic
        // out-pointer is a local.
        let result = unsafe { spvValidateBinary(context.0, words.as_ptr(), words.len(), &mut diagnostic) };
        if result == SUCCESS {
            if !diagnostic.is_null() {
                // SAFETY: as in `message`; a success may still leave a (warning) diagnostic.
                unsafe { spvDiagnosticDestroy(diagnostic) }
            }
            Ok(())
        } else {
            Err(message(result, diagnostic))
        }
    }

    pub(super) fn disassemble(words: &[u32]) -> Result<String, String> {
        let context = Vulkan11::new()?;
        let options = OPTION_INDENT | OPTION_NO_HEADER | OPTION_FRIENDLY_NAMES;
        let mut text = ptr::null_mut();
        let mut diagnostic = ptr::null_mut();
        // SAFETY: as in `validate`; the text out-pointer is a local.
        let result =
            unsafe { spvBinaryToText(context.0, words.as_ptr(), words.len(), options, &mut text, &mut diagnostic) };
        if result != SUCCESS {
            // SAFETY: a text left by a failed call (none is expected) is destroyed once.
            unsafe { spvTextDestroy(text) };
            return Err(message(result, diagnostic));
        }
        if text.is_null() {
            return Err("the disassembler returned no text".to_string());
        }
        // SAFETY: on success `text` points to a spv_text_t holding `length` bytes of text; it is
        // destroyed once, after the bytes are copied.
        let disassembly = unsafe {
            let bytes = std::slice::from_raw_parts((*text).text.cast::<u8>(), (*text).length);
            let disassembly = String::from_utf8_lossy(bytes).into_owned();
            spvTextDestroy(text);
            disassembly
        };
        Ok(disassembly)
    }
}

#[cfg(not(hat_spirv_tools))]
mod linked {
    pub(super) fn version() -> Option<String> {
        None
    }

    pub(super) fn validate(_words: &[u32]) -> Result<(), String> {
        Err(super::SPIRV_TOOLS_MISSING.to_string())
    }

    pub(super) fn disassemble(_words: &[u32]) -> Result<String, String> {
        Err(super::SPIRV_TOOLS_MISSING.to_string())
    }
}

#[cfg(all(test, hat_spirv_tools))]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_module_is_rejected_with_the_validators_message() {
        let error = validate(&[0x0723_0203, 0x0001_0300]).unwrap_err();
        assert!(!error.is_empty() && !error.contains("result"), "{error}");
        assert!(disassemble(&[0x0723_0203]).is_err());
        assert!(spirv_tools_version().is_some_and(|v| v.starts_with("v20")), "{:?}", spirv_tools_version());
    }
}
