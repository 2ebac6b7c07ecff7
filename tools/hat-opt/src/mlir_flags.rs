//! `--to-mlir`, `--to-mlir=upstream`, `--to-mlir-irdl` and `--from-mlir`: hat-opt's bridge to
//! MLIR (the `hat-mlir` crate, docs/mlir.md).
//!
//! The flags always exist; the bridge is compiled in only with the cargo feature `mlir`
//! (`cargo build -p hat-opt --features mlir`), because it links LLVM 22's MLIR. Without the
//! feature each flag is an error that says how to build with it, so the default build never
//! needs LLVM.

use clap::ValueEnum;
use hat_ir::{Context, Diagnostic, Op};

/// Which MLIR `--to-mlir` writes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum MlirForm {
    /// Lossless: upstream `arith`/`math`/`scf`, hat's own dialects as they are.
    #[default]
    Lossless,
    /// Upstream dialects only: `func`/`scf`/`memref` host code, `gpu` kernels and launches.
    Upstream,
}

/// The options of the MLIR bridge (a section of hat-opt's command line).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "MLIR (needs the `mlir` feature: cargo build -p hat-opt --features mlir)")]
pub struct MlirOptions {
    /// After the pipeline, write the module as MLIR instead of hat IR, verified by MLIR's
    /// verifier: lossless (the default), or in upstream dialects only.
    #[arg(long = "to-mlir", value_enum, value_name = "FORM", num_args = 0..=1, require_equals = true,
          default_missing_value = "lossless", conflicts_with_all = ["run", "check", "emit"])]
    pub to_mlir: Option<MlirForm>,
    /// Write the IRDL declaration of hat's `buffer` dialect (for `mlir-opt --irdl-file=`) and exit.
    #[arg(long = "to-mlir-irdl")]
    pub to_mlir_irdl: bool,
    /// Read the input as MLIR (upstream dialects, or hat's own `--to-mlir` output).
    #[arg(long = "from-mlir")]
    pub from_mlir: bool,
}

impl MlirOptions {
    /// Whether any MLIR flag is given.
    fn any(&self) -> bool {
        self.to_mlir.is_some() || self.to_mlir_irdl || self.from_mlir
    }

    /// Refuses the flags when the bridge is not compiled in.
    pub fn check(&self) -> Result<(), String> {
        if self.any() && !cfg!(feature = "mlir") {
            let flag = if self.from_mlir {
                "--from-mlir"
            } else if self.to_mlir_irdl {
                "--to-mlir-irdl"
            } else {
                "--to-mlir"
            };
            return Err(format!(
                "error: {flag} needs hat-opt built with the MLIR bridge, which links LLVM 22's MLIR: \
                 cargo build -p hat-opt --features mlir (the packages and environment it needs are in docs/mlir.md)"
            ));
        }
        Ok(())
    }

    /// What `--to-mlir-irdl` writes.
    pub fn irdl(&self) -> Option<&'static str> {
        #[cfg(feature = "mlir")]
        if self.to_mlir_irdl {
            return Some(hat_mlir::irdl::IRDL);
        }
        None
    }
}

/// The input read as MLIR into `ctx` (with `--from-mlir`), or `None` without it.
pub fn import(
    options: &MlirOptions,
    ctx: &mut Context,
    name: &str,
    bytes: &[u8],
) -> Option<Result<Op, Vec<Diagnostic>>> {
    if !options.from_mlir {
        return None;
    }
    #[cfg(feature = "mlir")]
    return Some(hat_mlir::import::import(ctx, name, bytes));
    #[cfg(not(feature = "mlir"))]
    {
        let _ = (ctx, name, bytes);
        None
    }
}

/// The module as MLIR text (with `--to-mlir`), or `None` without it.
pub fn export(options: &MlirOptions, ctx: &Context, module: Op) -> Option<Result<String, Vec<Diagnostic>>> {
    let form = options.to_mlir?;
    #[cfg(feature = "mlir")]
    return Some(match form {
        MlirForm::Lossless => hat_mlir::export::export(ctx, module),
        MlirForm::Upstream => hat_mlir::upstream::export(ctx, module),
    });
    #[cfg(not(feature = "mlir"))]
    {
        let _ = (form, ctx, module);
        None
    }
}
