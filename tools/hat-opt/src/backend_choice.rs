//! `--backend=vulkan|cpu|auto|NAME` and `--device`: which device `--run` uses (NAME: a backend
//! the tool adds, [`crate::Tool::backend`]).
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

use crate::tool::NamedBackend;
use hat_runtime::{Backend, CpuBackend};
use hat_runtime_vulkan::{VulkanBackend, VulkanOptions};
use std::path::PathBuf;

/// hat's own backends, as `--backend` names them, with their lines in `--help`; a tool adds
/// its own ([`crate::Tool::backend`]).
pub const BUILT_IN: [(&str, &str); 3] = [
    ("auto", "A Vulkan device when one exists (a hardware GPU before lavapipe), else the CPU backend"),
    ("vulkan", "The Vulkan backend"),
    ("cpu", "The CPU reference backend"),
];

/// The values `--backend` takes: hat's own, then the tool's.
pub fn possible_values(backends: &[NamedBackend]) -> Vec<clap::builder::PossibleValue> {
    let built_in = BUILT_IN.iter().map(|(name, help)| clap::builder::PossibleValue::new(*name).help(*help));
    let tools = backends.iter().map(|b| clap::builder::PossibleValue::new(b.name.clone()).help(b.help.clone()));
    built_in.chain(tools).collect()
}

/// The options of hat-opt that choose the device (part of `--run`'s section).
#[derive(clap::Args, Debug, Clone)]
pub struct DeviceOptions {
    /// The backend --run uses: auto (a Vulkan device when one exists, a hardware GPU before
    /// lavapipe, else the CPU backend; HAT_BACKEND overrides it), vulkan or cpu.
    #[arg(long = "backend", default_value = "auto", value_name = "BACKEND")]
    pub backend: String,
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

impl Default for DeviceOptions {
    fn default() -> DeviceOptions {
        DeviceOptions { backend: "auto".to_string(), device: None, kernel_cache: None }
    }
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

/// Opens the backend the options choose, among hat's and the tool's `backends`; `Err` holds
/// the text for standard error.
pub fn open(options: &DeviceOptions, backends: &[NamedBackend]) -> Result<Box<dyn Backend>, String> {
    let mut choice = options.backend.clone();
    if choice == "auto" {
        if let Ok(value) = std::env::var("HAT_BACKEND") {
            let known = BUILT_IN.iter().map(|(name, _)| *name).chain(backends.iter().map(|b| b.name.as_str()));
            let Some(name) = known.clone().find(|name| name.eq_ignore_ascii_case(value.trim())) else {
                let names: Vec<&str> = known.collect();
                return Err(format!("error: HAT_BACKEND={value}: expected {}", or_list(&names)));
            };
            choice = name.to_string();
        }
    }
    let vulkan = || {
        let mut vulkan = VulkanOptions { kernel_cache: options.kernel_cache_directory(), ..VulkanOptions::default() };
        if options.device.is_some() {
            vulkan.device.clone_from(&options.device);
        }
        VulkanBackend::new(&vulkan)
    };
    Ok(match choice.as_str() {
        "cpu" => Box::new(CpuBackend::new()),
        "vulkan" => Box::new(vulkan().map_err(|e| format!("error: --backend=vulkan: {e}"))?),
        "auto" => match vulkan() {
            Ok(gpu) => Box::new(gpu),
            // A device that was asked for by name must open.
            Err(error) if options.device.is_some() => return Err(format!("error: --device: {error}")),
            Err(_) => Box::new(CpuBackend::new()),
        },
        name => {
            let backend = backends.iter().find(|b| b.name == name).expect("clap accepts only registered backends");
            if options.device.is_some() {
                return Err(format!("error: --device chooses a Vulkan device, not one of --backend={name}"));
            }
            (backend.open)().map_err(|e| format!("error: --backend={name}: {e}"))?
        }
    })
}

/// `a, b or c`.
fn or_list(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}
