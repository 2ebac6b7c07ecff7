//! `hat-bench`: benchmarks of hat, each printing one JSON object to stdout (progress goes to
//! stderr).
//!
//! - `hat-bench parse`: parse + verify + print a generated module of a million ops with `hat-opt`,
//!   and with `mlir-opt --allow-unregistered-dialect` when it is installed; time and peak memory of
//!   each, and hat's time by phase.

mod generate;
mod measure;
mod parse;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "hat-bench",
    version,
    about = "Benchmarks for hat, printing JSON"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse + verify + print a generated module (hat-opt against mlir-opt), in several shapes.
    Parse(parse::ParseArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Parse(args) => parse::run(args),
    };
    match result {
        Ok((report, ok)) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&report).expect("JSON values serialize")
            );
            if ok {
                ExitCode::SUCCESS
            } else {
                eprintln!("hat-bench: hat failed (see \"error\" in the report)");
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("hat-bench: {error}");
            ExitCode::from(2)
        }
    }
}
