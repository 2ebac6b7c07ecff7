//! `hat-bench gpu`: hat's programs on a Vulkan device, in process, beside hand-written and
//! framework references (issue 10's benchmarks). See docs/benchmarks.md.
//!
//! - `square` (`square.rs`): an elementwise square over 2^28 f32, device GB/s;
//! - `life` (`life.rs`): `examples/06-life.hat` at 8192 x 8192, end to end, under the default
//!   pipeline and under `jic`;
//! - `dispatch` (`dispatch.rs`): the wall time per dispatch in chains of 10,000 small ones;
//! - the references (`references.rs`): the JSON lines of `vkprobe`, `cuda_ref.py` and the IREE
//!   peer, given as files, each marked as measured in the same command or recorded earlier;
//! - `comparison` (`compare.rs`): the ratios and issue 10's targets;
//! - `--svg FILE` (`plot.rs`): the plot; `--from-json REPORT` redraws it (and recomputes the
//!   comparison) from a saved report without measuring.
//!
//! Everything runs on one `VulkanBackend` (pipelines cached across runs); the dispatch chains
//! also on a second one without timestamps. `--backend cpu` runs the same code on the CPU
//! reference backend (for testing the benchmark, not for figures).

mod compare;
mod dispatch;
mod life;
pub mod pipelines;
mod plot;
pub(crate) mod programs;
mod references;
pub(crate) mod runs;
mod square;

use crate::common::progress;
use hat_runtime::{Backend, CpuBackend};
use hat_runtime_vulkan::{list_devices, VulkanBackend, VulkanOptions};
use references::{Reference, References};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Which backend runs the programs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// A Vulkan device (the figures).
    Vulkan,
    /// The CPU reference backend (to try the benchmark itself).
    Cpu,
}

/// Options of `hat-bench gpu`.
#[derive(clap::Args, Debug)]
pub struct GpuArgs {
    /// The backend.
    #[arg(long, value_enum, default_value = "vulkan")]
    pub backend: BackendKind,
    /// The Vulkan device: its index or a part of its name (default: HAT_VULKAN_DEVICE, else the
    /// best).
    #[arg(long)]
    pub device: Option<String>,
    /// Print the Vulkan devices as JSON and stop.
    #[arg(long)]
    pub list_devices: bool,
    /// The parts to run (square, life, dispatch).
    #[arg(long, value_delimiter = ',', default_value = "square,life,dispatch")]
    pub parts: Vec<String>,
    /// Elements of the square.
    #[arg(long, default_value_t = 1 << 28)]
    pub square_elements: usize,
    /// Runs of each measurement (after a cold one).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// The side of the Life grid.
    #[arg(long, default_value_t = 8192)]
    pub life_size: usize,
    /// Generation counts of Life under the default pipeline.
    #[arg(long, value_delimiter = ',', default_value = "100,1000")]
    pub life_generations: Vec<usize>,
    /// The two generation counts of the jic runs (extrapolated to the largest default count).
    #[arg(long, value_delimiter = ',', default_value = "2,6")]
    pub jic_generations: Vec<usize>,
    /// Also run Life with workgroups of this shape (XxY), e.g. 16x16, beside the example's 8x8.
    #[arg(long)]
    pub life_variant_workgroup: Option<String>,
    /// Lengths of the dispatch chains (the comparison takes the longest).
    #[arg(long, value_delimiter = ',', default_value = "1000,3000,10000")]
    pub dispatches: Vec<usize>,
    /// Dispatches of the synced chain (one submission and wait each).
    #[arg(long, default_value_t = 1_000)]
    pub synced_dispatches: usize,
    /// vkprobe's JSON lines.
    #[arg(long)]
    pub probe: Option<PathBuf>,
    /// cuda_ref.py's JSON lines (PyTorch and CuPy).
    #[arg(long)]
    pub cuda: Option<PathBuf>,
    /// The IREE peer's JSON lines.
    #[arg(long)]
    pub iree: Option<PathBuf>,
    /// The references measured in the same command (probe, cuda, iree); the others are marked
    /// as recorded earlier.
    #[arg(long, value_delimiter = ',')]
    pub measured: Vec<String>,
    /// Write the plot (SVG) here.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Measure nothing: take this saved report (and any references given), recompute the
    /// comparison and print it (and the plot, with --svg).
    #[arg(long)]
    pub from_json: Option<PathBuf>,
}

fn references(args: &GpuArgs) -> Result<References, String> {
    let read = |path: &Option<PathBuf>, name: &str| {
        path.as_ref().map(|p| Reference::read(p, args.measured.iter().any(|m| m == name))).transpose()
    };
    Ok(References {
        probe: read(&args.probe, "probe")?,
        cuda: read(&args.cuda, "cuda")?,
        iree: read(&args.iree, "iree")?,
    })
}

/// The backend of `kind`: a Vulkan device (`device`: its index or a part of its name; GPU
/// timestamps on), or the CPU reference backend.
pub fn backend(kind: BackendKind, device: Option<String>) -> Result<Box<dyn hat_runtime::Backend>, String> {
    Ok(match kind {
        BackendKind::Vulkan => {
            let options = VulkanOptions { device, timestamps: true, ..VulkanOptions::default() };
            Box::new(VulkanBackend::new(&options).map_err(|e| format!("no Vulkan device: {e}"))?)
        }
        BackendKind::Cpu => Box::new(hat_runtime::CpuBackend::new()),
    })
}

fn vulkan(args: &GpuArgs, timestamps: bool) -> Result<VulkanBackend, String> {
    let mut options = VulkanOptions::default();
    if args.device.is_some() {
        options.device = args.device.clone();
    }
    options.timestamps = timestamps;
    VulkanBackend::new(&options).map_err(|e| format!("no Vulkan device: {e}"))
}

/// Runs the benchmark; the report and whether every check passed.
pub fn run(args: &GpuArgs) -> Result<(Value, bool), String> {
    if args.list_devices {
        let devices: Vec<Value> = list_devices()
            .into_iter()
            .map(|d| {
                json!({"index": d.index, "name": d.name, "cpu": d.is_cpu, "device_local_bytes": d.device_local_bytes,
                       "vulkan": format!("{}.{}", d.api_version.0, d.api_version.1)})
            })
            .collect();
        return Ok((json!({ "benchmark": "gpu", "devices": devices }), true));
    }
    let refs = references(args)?;
    let mut report = match &args.from_json {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => measure(args)?,
    };
    if refs.probe.is_some() || refs.cuda.is_some() || refs.iree.is_some() {
        report["references"] = refs.to_json();
    }
    report["comparison"] = compare::compare(&report);
    if let Some(path) = &args.svg {
        std::fs::write(path, plot::svg(&report)).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        progress(format!("wrote {}", path.display()));
    }
    let ok = checks_pass(&report);
    Ok((report, ok))
}

/// Whether every check in the report held (results equal to the CPU backend's, the squares
/// right, the counts right).
fn checks_pass(report: &Value) -> bool {
    let flags = [
        &report["square"]["verified"],
        &report["square"]["back_to_back"]["verified"],
        &report["life"]["check"]["equal_to_cpu_backend"],
        &report["life"]["jic"]["equal_to_default_at_a"],
    ];
    let chains = ["with_timestamps", "without_timestamps"]
        .iter()
        .flat_map(|t| ["chain", "independent", "synced"].map(|c| &report["dispatch"][t][c]["verified"]));
    flags.into_iter().chain(chains).all(|flag| flag.is_null() || flag == &json!(true))
}

/// `XxY` as two numbers.
fn parse_shape(text: &str) -> Result<(u32, u32), String> {
    let parse = |s: &str| s.trim().parse::<u32>().ok().filter(|&v| v > 0);
    match text.split_once(['x', 'X']).map(|(x, y)| (parse(x), parse(y))) {
        Some((Some(x), Some(y))) => Ok((x, y)),
        _ => Err(format!("'{text}' is not a workgroup shape XxY")),
    }
}

fn measure(args: &GpuArgs) -> Result<Value, String> {
    let wants = |part: &str| args.parts.iter().any(|p| p == part);
    let mut timed: Box<dyn Backend> = match args.backend {
        BackendKind::Vulkan => Box::new(vulkan(args, true)?),
        BackendKind::Cpu => Box::new(CpuBackend::new()),
    };
    let device = timed.device_name();
    progress(format!("device: {device}"));
    let mut report = json!({
        "benchmark": "gpu",
        "backend": timed.name(),
        "device": device,
        "repeat": args.repeat,
    });
    if wants("square") {
        report["square"] = square::measure(timed.as_mut(), args.square_elements, args.repeat)?;
    }
    if wants("life") {
        let &[a, b] = args.jic_generations.as_slice() else {
            return Err("--jic-generations takes two counts".into());
        };
        let setting = life::LifeSetting {
            size: args.life_size,
            generations: args.life_generations.clone(),
            jic_generations: (a, b),
            jic_target: args.life_generations.iter().copied().max().unwrap_or(b),
            repeat: args.repeat,
            jic_repeat: args.repeat.min(3),
            variant_workgroup: args.life_variant_workgroup.as_deref().map(parse_shape).transpose()?,
        };
        report["life"] = life::measure(timed.as_mut(), &setting)?;
    }
    if wants("dispatch") {
        let mut untimed: Option<Box<dyn Backend>> = match args.backend {
            BackendKind::Vulkan => Some(Box::new(vulkan(args, false)?)),
            BackendKind::Cpu => None,
        };
        let untimed = untimed.as_mut().map(|b| &mut **b as &mut dyn Backend);
        report["dispatch"] =
            dispatch::measure(timed.as_mut(), untimed, &args.dispatches, args.synced_dispatches, args.repeat)?;
    }
    Ok(report)
}
