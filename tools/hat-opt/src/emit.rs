//! `hat-opt FILE --emit=spirv|spirv-asm`: after the pass pipeline, lower the module's kernels to
//! SPIR-V (`hat_lowering`) instead of printing the IR.
//!
//! - `--emit=spirv` writes the binary: one SPIR-V module per input (per chunk with
//!   `--split-input-file`, which is refused for the binary: modules cannot be concatenated), an
//!   entry point per kernel. It goes to `-o FILE`, or to standard output when that is not a
//!   terminal (`| spirv-dis -`).
//! - `--emit=spirv-asm` writes the module's disassembly (text), to standard output without `-o`.
//! - `--spirv-features` names the optional Vulkan features the target device has
//!   (`shaderInt64,shaderFloat64`, `all`, or `none`, the default: what every Vulkan 1.1 device
//!   has), `--spirv-index-width` the width of `index` on the device (32 by default; see
//!   docs/lowering.md). A kernel that needs more is a diagnostic at the op, like every other
//!   lowering error, so `--verify-diagnostics` checks them.
//!
//! The module is verified (again) before it is lowered: the lowering takes verified IR only.

use clap::ValueEnum;
use hat_ir::{Context, Diagnostic, Op};
use hat_lowering::{DeviceFeatures, Feature, IndexWidth, LoweringOptions};
use std::io::{IsTerminal, Write};

/// What hat-opt writes after the pipeline.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The IR, in the custom (or generic) form.
    #[default]
    Ir,
    /// The kernels lowered to one SPIR-V module (binary).
    Spirv,
    /// The same module's disassembly.
    SpirvAsm,
}

/// The width of `index` on the device.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum IndexBits {
    /// 32-bit `index` (the default).
    #[default]
    #[value(name = "32")]
    Bits32,
    /// 64-bit `index` (needs shaderInt64).
    #[value(name = "64")]
    Bits64,
}

/// The options of `--emit` (a section of hat-opt's command line).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Emitting SPIR-V (--emit)")]
pub struct EmitOptions {
    /// What to write after the pipeline: the IR, the kernels as a SPIR-V module (binary: to -o
    /// FILE, or to a standard output that is not a terminal), or its disassembly.
    #[arg(long = "emit", value_enum, default_value = "ir", conflicts_with_all = ["run", "check"])]
    pub emit: Emit,
    /// The optional Vulkan features of the target device, comma-separated (shaderInt8,
    /// shaderInt16, shaderInt64, shaderFloat16, shaderFloat64, storageBuffer8BitAccess,
    /// storageBuffer16BitAccess, shaderBufferInt64Atomics), or 'all' or 'none'.
    #[arg(long = "spirv-features", value_name = "FEATURES", default_value = "none", value_parser = parse_features)]
    pub features: DeviceFeatures,
    /// The width of 'index' on the device.
    #[arg(long = "spirv-index-width", value_enum, value_name = "BITS", default_value = "32")]
    pub index_width: IndexBits,
}

/// `--spirv-features`' value: Vulkan feature names, `all` or `none`.
fn parse_features(text: &str) -> Result<DeviceFeatures, String> {
    let mut features = DeviceFeatures::none();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match name {
            "none" => {}
            "all" => features = DeviceFeatures::all(),
            _ => match Feature::ALL.into_iter().find(|f| f.vulkan_name() == name) {
                Some(feature) => features.enable(feature),
                None => {
                    let known: Vec<&str> = Feature::ALL.iter().map(|f| f.vulkan_name()).collect();
                    return Err(format!("unknown feature '{name}' (known: {}, all, none)", known.join(", ")));
                }
            },
        }
    }
    Ok(features)
}

impl EmitOptions {
    /// Whether SPIR-V is emitted instead of the IR.
    pub fn lowers(&self) -> bool {
        self.emit != Emit::Ir
    }

    /// The options the lowering gets.
    fn lowering_options(&self) -> LoweringOptions {
        let index_width = match self.index_width {
            IndexBits::Bits32 => IndexWidth::Bits32,
            IndexBits::Bits64 => IndexWidth::Bits64,
        };
        LoweringOptions { features: self.features.clone(), index_width, ..LoweringOptions::default() }
    }

    /// What refuses these options with the rest of the command line, before any input is read.
    pub fn check(&self, split_input_file: bool, output_is_stdout: bool) -> Result<(), String> {
        if self.emit != Emit::Spirv {
            return Ok(());
        }
        if split_input_file {
            return Err("error: --emit=spirv writes one binary module, which --split-input-file would split: use --emit=spirv-asm".into());
        }
        if output_is_stdout && std::io::stdout().is_terminal() {
            return Err(
                "error: --emit=spirv writes a binary module: name a file with -o FILE (or pipe standard output)".into(),
            );
        }
        Ok(())
    }
}

/// Why [`emit`] wrote nothing.
pub enum EmitError {
    /// The module does not verify or does not lower: diagnostics at the ops.
    Diagnostics(Vec<Diagnostic>),
    /// The output could not be written.
    Output(String),
}

/// Lowers the kernels of `module` (in `ctx`, after the pipeline) and writes the binary or its
/// disassembly to `sink`.
pub fn emit(ctx: &Context, module: Op, options: &EmitOptions, sink: &mut dyn Write) -> Result<(), EmitError> {
    let verified = hat_ir::verify_module(ctx, module).map_err(EmitError::Diagnostics)?;
    let spirv =
        hat_lowering::lower_module(ctx, verified, &options.lowering_options()).map_err(EmitError::Diagnostics)?;
    let bytes = match options.emit {
        Emit::Spirv => spirv.to_bytes(),
        Emit::SpirvAsm => {
            let text = hat_lowering::disassemble(&spirv.words)
                .map_err(|e| EmitError::Output(format!("error: cannot disassemble the SPIR-V module: {e}")))?;
            text.into_bytes()
        }
        Emit::Ir => return Ok(()),
    };
    sink.write_all(&bytes).map_err(|e| EmitError::Output(format!("error: cannot write output: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_named_as_vulkan_names_them() {
        let features = parse_features("shaderInt64, shaderFloat64").unwrap();
        assert!(features.has(Feature::Int64) && features.has(Feature::Float64) && !features.has(Feature::Float16));
        assert_eq!(parse_features("all").unwrap(), DeviceFeatures::all());
        assert_eq!(parse_features("none").unwrap(), DeviceFeatures::none());
        let error = parse_features("shaderInt64,float128").unwrap_err();
        assert!(error.starts_with("unknown feature 'float128' (known: shaderInt8, "), "{error}");
    }
}
