//! `hat-opt`: parse a `.hat` file, verify it, and print it — following `mlir-opt`'s conventions.
//!
//! Exit status: 0 on success, 1 on any error (diagnostics on stderr with `file:line:col`), 2 on a
//! bad command line (clap's convention).

mod driver;

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Command-line options.
#[derive(Parser, Debug)]
#[command(name = "hat-opt", version, about = "Parse, verify, transform and print hat IR (an mlir-opt for hat)")]
pub struct Options {
    /// Input file (`-` for standard input).
    #[arg(default_value = "-")]
    pub input: PathBuf,
    /// Output file (`-` for standard output). Written only when everything succeeded.
    #[arg(short = 'o', default_value = "-")]
    pub output: PathBuf,
    /// Print every op in MLIR's generic form.
    #[arg(long = "mlir-print-op-generic")]
    pub print_generic: bool,
    /// Print the source location of every op as `loc("file":line:col)`.
    #[arg(long = "mlir-print-debuginfo")]
    pub print_debug_info: bool,
    /// Accept ops of dialects that are not registered.
    #[arg(long = "allow-unregistered-dialect")]
    pub allow_unregistered_dialect: bool,
    /// Split the input at `// -----` lines and process each chunk on its own.
    #[arg(long = "split-input-file")]
    pub split_input_file: bool,
    /// List the registered dialects and exit.
    #[arg(long = "show-dialects")]
    pub show_dialects: bool,
}

fn main() -> ExitCode {
    let options = Options::parse();
    match driver::run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            if !message.is_empty() {
                eprint!("{message}");
                if !message.ends_with('\n') {
                    eprintln!();
                }
            }
            ExitCode::FAILURE
        }
    }
}
