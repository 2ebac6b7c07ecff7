//! Checking and reading emitted modules with `spirv-tools` (compiled into the crate, so no
//! tool needs to be installed): [`validate`] runs the validator for Vulkan 1.1 (SPIR-V 1.3),
//! the environment the lowering targets; [`disassemble`] gives the text that snapshots hold.

use spirv_tools::assembler::{Assembler, DisassembleOptions};
use spirv_tools::val::Validator;
use spirv_tools::TargetEnv;

/// The environment emitted modules are for.
pub const TARGET_ENV: &str = "vulkan1.1";

/// Validates a module for Vulkan 1.1; the error is the validator's message.
pub fn validate(words: &[u32]) -> Result<(), String> {
    let validator = spirv_tools::val::create(Some(TargetEnv::Vulkan_1_1));
    validator.validate(words, None).map_err(|error| error.to_string())
}

/// The module's disassembly: one instruction per line, ids named by their `OpName`s where the
/// lowering gave them, no header comment (so the text depends only on the module).
pub fn disassemble(words: &[u32]) -> Result<String, String> {
    let assembler = spirv_tools::assembler::create(Some(TargetEnv::Vulkan_1_1));
    let options = DisassembleOptions {
        print: false,
        color: false,
        indent: true,
        show_byte_offset: false,
        no_header: true,
        use_friendly_names: true,
        comment: false,
    };
    match assembler.disassemble(words, options) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err("the disassembler returned no text".to_string()),
        Err(error) => Err(error.to_string()),
    }
}
