//! Finds the system's SPIRV-Tools (Debian's `spirv-tools` package: `libSPIRV-Tools.a`, found
//! through its `SPIRV-Tools.pc`) and links its validator and disassembler. Where it is absent,
//! nothing is compiled: the crate is built with `cfg(hat_spirv_tools)` unset, and emitted modules
//! go unvalidated (`hat_lowering::spirv_tools`). Compiling SPIRV-Tools' C++ from source (the
//! `spirv-tools` crate) took 6 of the 7 minutes of a fresh build on 2 cores.
//!
//! `HAT_SPIRV_TOOLS_LIB_DIR=DIR` links `DIR/libSPIRV-Tools.a` without asking pkg-config (a
//! Vulkan SDK, a build of one's own, a cross-compilation: without it a cross build links none);
//! `HAT_SPIRV_TOOLS_LIB_DIR=none` builds without.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(hat_spirv_tools)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=HAT_SPIRV_TOOLS_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let has_library = |directory: &Path| directory.join("libSPIRV-Tools.a").is_file();
    let directory = match std::env::var("HAT_SPIRV_TOOLS_LIB_DIR").ok().filter(|v| !v.is_empty()) {
        Some(value) if value == "none" => None,
        // Relative to where cargo was run from, as a user means it (rustc links from elsewhere).
        Some(value) => {
            let directory = PathBuf::from(value);
            Some(directory.canonicalize().unwrap_or(directory))
        }
        // Cross-compiling: the libraries pkg-config knows are the build machine's.
        None if std::env::var("TARGET").ok() != std::env::var("HOST").ok() => None,
        None => {
            // Installing or removing the package changes these directories: build again then.
            for searched in pkg_config_search_path() {
                if searched.is_dir() {
                    println!("cargo:rerun-if-changed={}", searched.display());
                }
            }
            library_directory_from_pkg_config().filter(|d| has_library(d)).or_else(library_directory_by_convention)
        }
    };
    let Some(directory) = directory.filter(|d| has_library(d)) else {
        println!(
            "cargo:warning=SPIRV-Tools not found (Debian package spirv-tools, or HAT_SPIRV_TOOLS_LIB_DIR): \
             SPIR-V modules will not be validated"
        );
        return;
    };
    // The library is bundled into this crate: a new one must rebuild it.
    println!("cargo:rerun-if-changed={}", directory.join("libSPIRV-Tools.a").display());
    println!("cargo:rustc-cfg=hat_spirv_tools");
    println!("cargo:rustc-link-search=native={}", directory.display());
    println!("cargo:rustc-link-lib=static=SPIRV-Tools");
    // SPIRV-Tools is C++: its standard library, as the target's toolchain names it.
    match (std::env::var("CARGO_CFG_TARGET_OS").as_deref(), std::env::var("CARGO_CFG_TARGET_ENV").as_deref()) {
        (_, Ok("msvc")) => {}
        (Ok("macos" | "ios"), _) => println!("cargo:rustc-link-lib=dylib=c++"),
        _ => println!("cargo:rustc-link-lib=dylib=stdc++"),
    }
}

/// The directory of `libSPIRV-Tools.a` as `pkg-config` gives it, if it knows the package.
fn library_directory_from_pkg_config() -> Option<PathBuf> {
    let output = Command::new("pkg-config").args(["--variable=libdir", "SPIRV-Tools"]).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let directory = String::from_utf8(output.stdout).ok()?;
    let directory = Path::new(directory.trim());
    (!directory.as_os_str().is_empty()).then(|| directory.to_path_buf())
}

/// Where distributions put the library, for a machine without `pkg-config`.
fn library_directory_by_convention() -> Option<PathBuf> {
    system_library_directories().into_iter().find(|d| d.join("libSPIRV-Tools.a").is_file())
}

fn system_library_directories() -> Vec<PathBuf> {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/lib/{arch}-linux-gnu");
    [multiarch.as_str(), "/usr/lib64", "/usr/lib", "/usr/local/lib"].into_iter().map(PathBuf::from).collect()
}

/// The directories `pkg-config` searches for `.pc` files (those of the usual installation when
/// `pkg-config` itself is missing).
fn pkg_config_search_path() -> Vec<PathBuf> {
    let mut directories: Vec<PathBuf> = std::env::var("PKG_CONFIG_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    directories.extend(system_library_directories().into_iter().map(|d| d.join("pkgconfig")));
    if let Ok(output) = Command::new("pkg-config").args(["--variable=pc_path", "pkg-config"]).output() {
        let text = String::from_utf8_lossy(&output.stdout);
        directories.extend(text.trim().split(':').filter(|d| !d.is_empty()).map(PathBuf::from));
    }
    directories.sort();
    directories.dedup();
    directories
}
