//! `--backend=vulkan|cpu|auto` and `--device`: which device `--run` uses.
//!
//! - `cpu`: the CPU reference backend (an interpreter; the oracle).
//! - `vulkan`: the Vulkan backend on the device `--device` (or `HAT_VULKAN_DEVICE`) names, by
//!   index or by a part of its name, else the best one (a hardware GPU before lavapipe, then the
//!   most device-local memory); an error when there is none.
//! - `auto` (the default): `HAT_BACKEND` when it is set (`cpu`, `vulkan` or `auto`), else Vulkan
//!   when a device opens, else the CPU backend. The report names the backend and the device.
//!
//! - `--kernel-cache=DIR|off`: where the Vulkan backend keeps lowered modules and its pipeline
//!   cache between runs (default: `HAT_CACHE_DIR`, else `$XDG_CACHE_HOME/hat`, else
//!   `~/.cache/hat`; `off`: nothing is read or written). The report counts its hits and misses.
//!
//! `--run-check` runs the plan and the reference semantics on the same backend, so that the
//! comparison is of the transfer plan, not of two devices' float rounding.

use clap::ValueEnum;
use hat_runtime::{Backend, CpuBackend};
use hat_runtime_vulkan::{VulkanBackend, VulkanOptions};
use std::path::PathBuf;

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
    /// The kernel cache on disk (lowered modules and the Vulkan pipeline cache, kept between
    /// runs): its directory, or off (default: HAT_CACHE_DIR, else $XDG_CACHE_HOME/hat, else
    /// ~/.cache/hat).
    #[arg(long = "kernel-cache", value_name = "DIR|off")]
    pub kernel_cache: Option<String>,
}

impl DeviceOptions {
    /// The kernel cache's directory: `--kernel-cache`'s, none for `off`, else the default one.
    pub fn kernel_cache_directory(&self) -> Option<PathBuf> {
        match self.kernel_cache.as_deref() {
            Some("off") => None,
            Some(directory) => Some(PathBuf::from(directory)),
            None => hat_runtime::kernel_cache::default_directory(),
        }
    }
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
        let mut vulkan = VulkanOptions { kernel_cache: options.kernel_cache_directory(), ..VulkanOptions::default() };
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
