//! `--check-races`: `--run` on the CPU reference backend with its race check on
//! ([`CpuBackend::set_check_races`]): every dispatch records which work item stored to and
//! loaded each element (and each workgroup-local slot between barriers), and the first two work
//! items that conflict stop the run with an error naming the kernel, the element and both items,
//! at the second access with a note at the first; the exit status is then non-zero. Atomics are
//! exempt. The check needs the CPU backend: `--backend=vulkan` with it is an error, `auto`
//! becomes `cpu`.

use crate::backend_choice::DeviceOptions;
use crate::tool::NamedBackend;
use hat_runtime::{Backend, CpuBackend};

/// The option (part of `--run`'s section).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RaceOptions {
    /// Run on the CPU reference backend, checking every dispatch for data races: the first two
    /// work items that touch one element (at least one storing, not atomically) with nothing
    /// ordering them make the run fail, naming the kernel, the element and both items.
    #[arg(long = "check-races", requires = "running")]
    pub check_races: bool,
}

/// The backend `--run` uses: the CPU backend with the race check when it is asked for, else the
/// one the device options choose. `Err` holds the text for standard error.
pub fn open(
    races: &RaceOptions,
    device: &DeviceOptions,
    backends: &[NamedBackend],
) -> Result<Box<dyn Backend>, String> {
    if !races.check_races {
        return crate::backend_choice::open(device, backends);
    }
    if !matches!(device.backend.as_str(), "auto" | "cpu") || device.device.is_some() {
        let leave_out = match device.backend.as_str() {
            "auto" | "cpu" | "vulkan" => "--backend=vulkan and --device".to_string(),
            tools => format!("--backend={tools}"),
        };
        return Err(format!("error: --check-races runs on the CPU reference backend; leave out {leave_out}"));
    }
    let mut backend = CpuBackend::new();
    backend.set_check_races(true);
    Ok(Box::new(backend))
}
