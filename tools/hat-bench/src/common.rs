//! What `hat-bench parse` and `hat-bench passes` share: their common options, how they find the
//! tools and the shapes to run, where the generated modules go, and how each tool is measured and
//! compared with the other.

use crate::generate::Shape;
use crate::measure::{self, find_on_path, is_executable, Measurement};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Where `mlir-opt` is looked for after `--mlir-opt` and `PATH`.
const MLIR_OPT_FALLBACK: &str = "/usr/lib/llvm-22/bin/mlir-opt";

/// The options of every benchmark, flattened into each subcommand's own. The help of `ops`,
/// `shapes`, `keep` and `no_phases` is set by each subcommand (`mut_arg`), as it differs.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Ops in the generated module.
    #[arg(long, default_value_t = 1_000_000)]
    pub ops: usize,
    /// Comma-separated shapes of the generated module.
    #[arg(long, value_delimiter = ',')]
    pub shapes: Vec<String>,
    /// The hat-opt binary (default: the one beside this binary).
    #[arg(long)]
    pub hat_opt: Option<PathBuf>,
    /// The mlir-opt binary (default: `mlir-opt` on PATH, else /usr/lib/llvm-22/bin/mlir-opt).
    #[arg(long)]
    pub mlir_opt: Option<PathBuf>,
    /// Do not run mlir-opt even if it is installed.
    #[arg(long)]
    pub no_mlir_opt: bool,
    /// Runs of each measurement (best and median time, largest peak memory are reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Keep the generated modules in this directory.
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Skip the extra measurements by phase.
    #[arg(long)]
    pub no_phases: bool,
}

impl BenchArgs {
    /// The shapes to run: those of `--shapes`, or by default OPS/1000 blocks of 1000 and 10
    /// blocks of OPS/10 (once where they are the same).
    fn shapes(&self) -> Result<Vec<Shape>, String> {
        if self.shapes.is_empty() {
            let n = self.ops.max(1);
            let wide = if n >= 1000 {
                Shape { blocks: n / 1000, ops_per_block: 1000 }
            } else {
                Shape { blocks: 1, ops_per_block: n }
            };
            let long = Shape { blocks: 10.min(n), ops_per_block: n / 10.min(n) };
            return Ok(if wide == long { vec![wide] } else { vec![wide, long] });
        }
        self.shapes.iter().map(|s| Shape::parse(s, self.ops)).collect()
    }

    /// `--mlir-opt`, else `mlir-opt` on `PATH`, else the fallback if installed; none with
    /// `--no-mlir-opt`.
    fn find_mlir_opt(&self) -> Option<PathBuf> {
        if self.no_mlir_opt {
            return None;
        }
        if let Some(path) = &self.mlir_opt {
            return Some(path.clone());
        }
        find_on_path("mlir-opt").or_else(|| Some(PathBuf::from(MLIR_OPT_FALLBACK)).filter(|p| is_executable(p)))
    }
}

/// Prints a progress line to stderr.
pub fn progress(message: impl AsRef<str>) {
    eprintln!("hat-bench: {}", message.as_ref());
}

fn default_hat_opt() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.join("hat-opt"))
}

/// `numerator / denominator`, to two decimals; null unless both are known and the denominator is
/// positive.
pub fn ratio(numerator: Option<f64>, denominator: Option<f64>) -> Value {
    match (numerator, denominator) {
        (Some(a), Some(b)) if b > 0.0 => json!((a / b * 100.0).round() / 100.0),
        _ => Value::Null,
    }
}

fn measure_tool(label: &str, program: &Path, args: &[&str], repeat: usize) -> Measurement {
    progress(format!("  {label}: {} {}", program.display(), args.join(" ")));
    let m = measure::measure(program, args, repeat);
    match (&m.error, m.best_seconds(), m.peak_rss_mib()) {
        (Some(error), _, _) => progress(format!("  {label}: FAILED: {error}")),
        (None, Some(s), Some(mib)) => progress(format!("  {label}: {s:.3} s, {mib:.1} MiB")),
        _ => {}
    }
    m
}

/// One benchmark's setting: its options, shapes, tools and the directory of its files.
pub struct Bench<'a> {
    pub args: &'a BenchArgs,
    pub shapes: Vec<Shape>,
    pub hat_opt: PathBuf,
    /// None when not installed or with `--no-mlir-opt`.
    pub mlir_opt: Option<PathBuf>,
    /// `--keep`, else the temporary directory.
    pub dir: PathBuf,
}

impl<'a> Bench<'a> {
    /// Resolves the shapes and the tools, creates the `--keep` directory, and tells which tools
    /// run.
    pub fn new(args: &'a BenchArgs) -> Result<Bench<'a>, String> {
        let shapes = args.shapes()?;
        let hat_opt = args.hat_opt.clone().or_else(default_hat_opt).ok_or("cannot locate hat-opt")?;
        let mlir_opt = args.find_mlir_opt();
        let dir = match &args.keep {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                dir.clone()
            }
            None => std::env::temp_dir(),
        };
        progress(format!("hat-opt: {}", hat_opt.display()));
        progress(match &mlir_opt {
            Some(path) => format!("mlir-opt: {}", path.display()),
            None => "mlir-opt: not found, skipped".to_string(),
        });
        Ok(Bench { args, shapes, hat_opt, mlir_opt, dir })
    }

    /// A file name: `kept` with `--keep`, else `hat-bench-PID-{temporary}` (unique to this run).
    pub fn file_name(&self, kept: String, temporary: impl std::fmt::Display) -> String {
        match &self.args.keep {
            Some(_) => kept,
            None => format!("hat-bench-{}-{temporary}", std::process::id()),
        }
    }

    /// Writes the module `text` to `file`; returns the path as an argument for the tools.
    pub fn write_module(&self, file: &Path, text: &str) -> Result<String, String> {
        std::fs::write(file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        let file_arg = file.to_str().ok_or("temporary path is not UTF-8")?.to_string();
        progress(format!("  {} bytes in {}", text.len(), file.display()));
        Ok(file_arg)
    }

    /// Removes `file`, unless `--keep`.
    pub fn discard(&self, file: &Path) {
        if self.args.keep.is_none() {
            let _ = std::fs::remove_file(file);
        }
    }

    /// `hat-opt args...`, `--repeat` times (an error, without running, if there is no hat-opt).
    pub fn measure_hat(&self, args: &[&str]) -> Measurement {
        self.measure_hat_times(args, self.args.repeat)
    }

    /// `hat-opt args...`, `repeat` times (an error, without running, if there is no hat-opt).
    pub fn measure_hat_times(&self, args: &[&str], repeat: usize) -> Measurement {
        if is_executable(&self.hat_opt) {
            measure_tool("hat-opt", &self.hat_opt, args, repeat)
        } else {
            Measurement {
                command: vec![self.hat_opt.display().to_string()],
                runs: Vec::new(),
                error: Some(format!(
                    "{} not found (build it: cargo build --release -p hat-opt)",
                    self.hat_opt.display()
                )),
            }
        }
    }

    /// `mlir-opt args...`, `--repeat` times, if it runs at all.
    pub fn measure_mlir(&self, args: &[&str]) -> Option<Measurement> {
        self.mlir_opt.as_ref().map(|path| measure_tool("mlir-opt", path, args, self.args.repeat))
    }

    /// The report: `benchmark`, the options and tools common to every benchmark, and `fields`
    /// (an object).
    pub fn report(&self, benchmark: &str, fields: Value) -> Value {
        let mut report = Map::new();
        report.insert("benchmark".to_string(), json!(benchmark));
        report.insert("ops".to_string(), json!(self.args.ops));
        report.insert("repeat".to_string(), json!(self.args.repeat.max(1)));
        report.insert("hat_opt".to_string(), json!(self.hat_opt.display().to_string()));
        report.insert("mlir_opt".to_string(), json!(self.mlir_opt.as_ref().map(|p| p.display().to_string())));
        let Value::Object(fields) = fields else { panic!("report fields must be an object") };
        report.extend(fields);
        Value::Object(report)
    }
}

/// hat-opt against mlir-opt on one shape: the best time and peak memory of each that succeeded,
/// and their ratios (mlir-opt / hat-opt).
pub struct Comparison {
    pub hat_seconds: Option<f64>,
    pub hat_mib: Option<f64>,
    pub mlir_seconds: Option<f64>,
    pub mlir_mib: Option<f64>,
    pub ratio_time: Value,
    pub ratio_memory: Value,
}

impl Comparison {
    /// Compares `hat` with `mlir` (when run), and tells the ratios when both are known.
    pub fn new(hat: &Measurement, mlir: Option<&Measurement>) -> Comparison {
        let mlir_ok = mlir.filter(|m| m.ok());
        let (hat_seconds, hat_mib) = if hat.ok() { (hat.best_seconds(), hat.peak_rss_mib()) } else { (None, None) };
        let (mlir_seconds, mlir_mib) = (mlir_ok.and_then(|m| m.best_seconds()), mlir_ok.and_then(|m| m.peak_rss_mib()));
        let ratio_time = ratio(mlir_seconds, hat_seconds);
        let ratio_memory = ratio(mlir_mib, hat_mib);
        if let (Value::Number(t), Value::Number(m)) = (&ratio_time, &ratio_memory) {
            progress(format!("  mlir-opt / hat-opt: time x{t}, memory x{m}"));
        }
        Comparison { hat_seconds, hat_mib, mlir_seconds, mlir_mib, ratio_time, ratio_memory }
    }

    /// The report of one shape: its size (the count of blocks and of ops in each under the names
    /// `units`), each tool's report, and the ratios.
    pub fn shape_report(
        self,
        units: [&str; 2],
        shape: Shape,
        bytes: usize,
        hat: Value,
        mlir_opt: Option<Value>,
    ) -> Value {
        let mut report = Map::new();
        report.insert(units[0].to_string(), json!(shape.blocks));
        report.insert(units[1].to_string(), json!(shape.ops_per_block));
        report.insert("ops".to_string(), json!(shape.ops()));
        report.insert("bytes".to_string(), json!(bytes));
        report.insert("hat".to_string(), hat);
        report.insert("mlir_opt".to_string(), json!(mlir_opt));
        report.insert("ratio_time".to_string(), self.ratio_time);
        report.insert("ratio_memory".to_string(), self.ratio_memory);
        Value::Object(report)
    }
}
