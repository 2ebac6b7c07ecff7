//! `hat-opt --run --kernel-cache=DIR|off`: the same program run in two processes — the second
//! lowers no module and compiles no pipeline (every pipeline comes from the cache the first
//! wrote), with the same results as the first and as the CPU backend; a module entry cut short
//! and a pipeline cache of another device are ignored (the run is still right, the report says
//! miss) and written anew; `off` writes nothing; without the flag the cache lives in
//! `HAT_CACHE_DIR`, else `$XDG_CACHE_HOME/hat`. All as the JSON report says. Without a Vulkan
//! device the tests print why and pass, unless `HAT_REQUIRE_VULKAN=1`.

use hat_runtime::kernel_cache::{fnv1a, FNV_OFFSET};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::has_vulkan;

/// Three kernels (dilate, erode, copy), two rounds.
const MORPHOLOGY: [&str; 9] = [
    "examples/11-morphology.hat",
    "--run",
    "--arg",
    "img=random:3",
    "--arg",
    "out=zeros",
    "--arg",
    "rounds=2",
    "--report=json",
];

/// Runs hat-opt on the Vulkan backend with `args` and the environment `env` (the cache's
/// variables cleared otherwise); the JSON report and the bytes of `%out`.
fn run(args: &[&str], env: &[(&str, &Path)], scratch: &Path) -> (Value, Vec<u8>) {
    let out = scratch.join("out.npy");
    let mut command = Command::new(env!("CARGO_BIN_EXE_hat-opt"));
    command
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(MORPHOLOGY)
        .args(args)
        .arg(format!("--out=out={}", out.display()))
        .env("RUST_BACKTRACE", "0")
        .env_remove("HAT_BACKEND")
        .env_remove("HAT_CACHE_DIR")
        .env_remove("XDG_CACHE_HOME")
        // Never the tester's own cache.
        .env("HOME", scratch.join("home"));
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("hat-opt runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "hat-opt failed:\n{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    let report = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (report, std::fs::read(&out).expect("--out wrote the buffer"))
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("hat-opt-kernel-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

fn flag(cache: &Path) -> String {
    format!("--kernel-cache={}", cache.display())
}

fn count(report: &Value, path: &str) -> u64 {
    let value = path.split('.').fold(&report["kernel_cache"], |value, key| &value[key]);
    value.as_u64().unwrap_or_else(|| panic!("kernel_cache.{path} in {report}"))
}

/// The one file of kind `kind` in the cache.
fn entry(cache: &Path, kind: &str) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(cache.join(kind)).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[test]
fn a_second_process_lowers_and_compiles_nothing() {
    if !has_vulkan() {
        return;
    }
    let dir = scratch("second");
    let cache = dir.join("cache");
    let (cpu, expected) = run(&["--backend=cpu"], &[], &dir);
    assert_eq!(cpu["kernel_cache"], Value::Null);
    let (first, first_out) = run(&["--backend=vulkan", &flag(&cache)], &[], &dir);
    assert_eq!(first_out, expected);
    assert_eq!(first["kernel_cache"]["directory"], cache.display().to_string());
    assert_eq!(count(&first, "modules.lowered"), 1);
    assert_eq!(count(&first, "modules.from_disk"), 0);
    let kernels = first["kernels"].as_array().unwrap().len() as u64;
    assert_eq!(kernels, 3);
    let pipelines = count(&first, "pipelines.created");
    assert!(pipelines >= kernels, "{first}");
    assert_eq!(count(&first, "pipelines.compiled"), pipelines);
    assert_eq!(first["kernel_cache"]["pipeline_cache"]["state"], "missing");

    let (second, second_out) = run(&["--backend=vulkan", &flag(&cache)], &[], &dir);
    assert_eq!(second_out, expected);
    assert_eq!(count(&second, "modules.lowered"), 0);
    assert_eq!(count(&second, "modules.from_disk"), 1);
    assert_eq!(count(&second, "pipelines.created"), pipelines);
    assert_eq!(count(&second, "pipelines.from_disk"), pipelines);
    assert_eq!(count(&second, "pipelines.compiled"), 0);
    assert_eq!(second["kernel_cache"]["pipeline_cache"]["state"], "loaded");
    let driver = &second["kernel_cache"]["pipelines"]["driver"];
    let said: u64 = ["cache_hits", "cache_misses", "silent"].iter().map(|k| driver[k].as_u64().unwrap()).sum();
    assert_eq!(said, pipelines);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `bytes` with its checksum (a hat cache entry's: see `hat_runtime::kernel_cache`) made right
/// again after an edit of its body.
fn reseal(bytes: &mut [u8]) {
    let checksum = fnv1a(FNV_OFFSET, &bytes[32..]);
    bytes[24..32].copy_from_slice(&checksum.to_le_bytes());
}

#[test]
fn a_corrupt_module_and_a_foreign_pipeline_cache_are_ignored_and_written_anew() {
    if !has_vulkan() {
        return;
    }
    let dir = scratch("corrupt");
    let cache = dir.join("cache");
    let (_, expected) = run(&["--backend=cpu"], &[], &dir);
    let args = ["--backend=vulkan".to_string(), flag(&cache)];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (first, _) = run(&args, &[], &dir);
    let pipelines = count(&first, "pipelines.created");

    // The module's entry cut short; the pipeline cache's entry whole (its checksum right) but
    // the driver's data another vendor's: the Vulkan header must be checked too.
    let module = entry(&cache, "modules");
    let whole = std::fs::read(&module).unwrap();
    std::fs::write(&module, &whole[..whole.len() / 2]).unwrap();
    let pipeline = entry(&cache, "pipelines");
    let mut bytes = std::fs::read(&pipeline).unwrap();
    let key_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let payload = 32 + key_len;
    let listed = u64::from_le_bytes(bytes[payload + 4..payload + 12].try_into().unwrap()) as usize;
    let vulkan_header = payload + 12 + 8 * listed;
    bytes[vulkan_header + 8..vulkan_header + 12].copy_from_slice(&0xdead_u32.to_le_bytes());
    reseal(&mut bytes);
    std::fs::write(&pipeline, &bytes).unwrap();

    let (second, out) = run(&args, &[], &dir);
    assert_eq!(out, expected);
    assert_eq!(count(&second, "modules.ignored"), 1);
    assert_eq!(count(&second, "modules.lowered"), 1);
    assert_eq!(count(&second, "modules.from_disk"), 0);
    assert_eq!(second["kernel_cache"]["pipeline_cache"]["state"], "ignored");
    let reason = second["kernel_cache"]["pipeline_cache"]["reason"].as_str().unwrap();
    assert!(reason.contains("another device"), "{reason}");
    assert_eq!(count(&second, "pipelines.from_disk"), 0);
    assert_eq!(count(&second, "pipelines.compiled"), pipelines);

    // Both written anew: the third run hits again.
    assert_eq!(std::fs::read(&module).unwrap(), whole);
    let (third, out) = run(&args, &[], &dir);
    assert_eq!(out, expected);
    assert_eq!(count(&third, "modules.from_disk"), 1);
    assert_eq!(count(&third, "pipelines.from_disk"), pipelines);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn off_writes_nothing_and_the_default_directory_follows_the_environment() {
    if !has_vulkan() {
        return;
    }
    let dir = scratch("off");
    let named = dir.join("named");
    let (off, _) = run(&["--backend=vulkan", "--kernel-cache=off"], &[("HAT_CACHE_DIR", &named)], &dir);
    assert_eq!(off["kernel_cache"]["directory"], Value::Null);
    assert_eq!(count(&off, "modules.lowered"), 1);
    assert_eq!(count(&off, "pipelines.from_disk"), 0);
    assert_eq!(off["kernel_cache"]["pipeline_cache"]["state"], "off");
    assert!(!named.exists(), "--kernel-cache=off wrote {}", named.display());
    assert!(!dir.join("home").exists());

    // HAT_CACHE_DIR, when set; else $XDG_CACHE_HOME/hat; else ~/.cache/hat.
    let (report, _) = run(&["--backend=vulkan"], &[("HAT_CACHE_DIR", &named)], &dir);
    assert_eq!(report["kernel_cache"]["directory"], named.display().to_string());
    entry(&named, "modules");
    let xdg = dir.join("xdg");
    let (report, _) = run(&["--backend=vulkan"], &[("XDG_CACHE_HOME", &xdg)], &dir);
    assert_eq!(report["kernel_cache"]["directory"], xdg.join("hat").display().to_string());
    entry(&xdg.join("hat"), "modules");
    let (report, _) = run(&["--backend=vulkan"], &[], &dir);
    let home = dir.join("home").join(".cache").join("hat");
    assert_eq!(report["kernel_cache"]["directory"], home.display().to_string());
    entry(&home, "modules");
    let _ = std::fs::remove_dir_all(&dir);
}
