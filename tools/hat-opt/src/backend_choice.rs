//! `--backend=vulkan|cpu|auto` and `--device`: which device `--run` uses.
//!
//! - `cpu`: the CPU reference backend (an interpreter; the oracle).
//! - `vulkan`: the Vulkan backend on the device `--device` (or `HAT_VULKAN_DEVICE`) names, by
//!   index or by a part of its name, else the best one (a hardware GPU before lavapipe, then the
//!   most device-local memory); an error when there is none.
//! - `auto` (the default): `HAT_BACKEND` when it is set (`cpu`, `vulkan` or `auto`), else Vulkan
//!   when a device opens, else the CPU backend. The report names the backend and the device.
//!
//! `--run-check` runs the plan and the reference semantics on the same backend, so that the
//! comparison is of the transfer plan, not of two devices' float rounding.

use clap::ValueEnum;
use hat_runtime::{Backend, CpuBackend};
use hat_runtime_vulkan::{VulkanBackend, VulkanOptions};

/// Which backend `--run` uses.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BackendChoice {
    /// A Vulkan device when one exists (a hardware GPU before lavapipe), else the CPU backend.
    #[default]
    Auto,
    /// The Vulkan backend.
    Vulkan,
    /// The CPU reference backend.
    Cpu,
}

/// The options of hat-opt that choose the device (part of `--run`'s section).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DeviceOptions {
    /// The backend --run uses: auto (a Vulkan device when one exists, a hardware GPU before
    /// lavapipe, else the CPU backend; HAT_BACKEND overrides it), vulkan or cpu.
    #[arg(long = "backend", value_enum, default_value = "auto", value_name = "BACKEND")]
    pub backend: BackendChoice,
    /// The Vulkan device: its index or a part of its name (default: HAT_VULKAN_DEVICE, else the
    /// best one).
    #[arg(long = "device", value_name = "DEVICE")]
    pub device: Option<String>,
}

/// Opens the backend the options choose; `Err` holds the text for standard error.
pub fn open(options: &DeviceOptions) -> Result<Box<dyn Backend>, String> {
    let mut choice = options.backend;
    if choice == BackendChoice::Auto {
        if let Ok(value) = std::env::var("HAT_BACKEND") {
            choice = BackendChoice::from_str(value.trim(), true)
                .map_err(|_| format!("error: HAT_BACKEND={value}: expected auto, vulkan or cpu"))?;
        }
    }
    let vulkan = || {
        let mut vulkan = VulkanOptions::default();
        if options.device.is_some() {
            vulkan.device.clone_from(&options.device);
        }
        VulkanBackend::new(&vulkan)
    };
    Ok(match choice {
        BackendChoice::Cpu => Box::new(CpuBackend::new()),
        BackendChoice::Vulkan => Box::new(vulkan().map_err(|e| format!("error: --backend=vulkan: {e}"))?),
        BackendChoice::Auto => match vulkan() {
            Ok(gpu) => Box::new(gpu),
            // A device that was asked for by name must open.
            Err(error) if options.device.is_some() => return Err(format!("error: --device: {error}")),
            Err(_) => Box::new(CpuBackend::new()),
        },
    })
}
