//! The kernel cache on disk (`VulkanOptions::kernel_cache`) on the real driver (lavapipe in CI),
//! with validation (the pipeline cache and the creation-feedback chain included): a backend
//! opened after another closed, on the same directory, lowers nothing and creates every pipeline
//! from the pipeline cache the first one wrote, and gives the CPU backend's results; a module
//! entry cut short is ignored, lowered again and written anew; without a directory nothing is
//! counted as from disk. Without a device the tests print why and pass, unless
//! `HAT_REQUIRE_VULKAN=1`, where they fail.

use hat_ir::{parse_source, verify_module};
use hat_runtime::{
    ArgValue, Backend, CpuBackend, Executor, ExecutorOptions, HostBuffer, KernelCacheStats, PipelineCacheState,
};
use hat_runtime_vulkan::VulkanOptions;
use std::path::{Path, PathBuf};

mod support;
use support::{assert_valid, vulkan_with};

/// Two kernels, one dispatched over a whole number of workgroups (so it gets its second,
/// specialised pipeline too).
const PROGRAM: &str = r#"
kernel.func @double(%data: memref<256xi32>) workgroup(64) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<256xi32>
  %w = arith.addi %v, %v : i32
  buffer.store %w, %data[%i] : memref<256xi32>
  kernel.return
}

kernel.func @add(%data: memref<256xi32>, %k: i32) workgroup(64) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<256xi32>
  %w = arith.addi %v, %k : i32
  buffer.store %w, %data[%i] : memref<256xi32>
  kernel.return
}

compute.func @main(%data: memref<256xi32>) {
  %n = arith.constant 256 : index
  %m = arith.constant 200 : index
  %k = arith.constant 7 : i32
  buffer.to_device %data : memref<256xi32>
  compute.dispatch @double[%n](%data) : (memref<256xi32>)
  compute.dispatch @add[%m](%data, %k) : (memref<256xi32>, i32)
  buffer.from_device %data : memref<256xi32>
  compute.return
}
"#;

fn input() -> Vec<ArgValue> {
    let values: Vec<i32> = (0..256).collect();
    vec![ArgValue::Buffer(HostBuffer::from_i32(&[256], &values).unwrap())]
}

/// The program's buffer and the run's kernel-cache counts on `backend`.
fn run(backend: &mut dyn Backend) -> (Vec<u8>, Option<KernelCacheStats>) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "cache.hat", PROGRAM).expect("parses");
    let verified = verify_module(&ctx, module).expect("verifies");
    let output = Executor::new(verified, backend, ExecutorOptions::default()).run("main", input()).expect("runs");
    (output.buffers[0].bytes.clone(), output.report.kernel_cache)
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("hat-vulkan-kernel-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    directory
}

fn files(directory: &Path, kind: &str) -> Vec<PathBuf> {
    std::fs::read_dir(directory.join(kind)).map_or_else(|_| Vec::new(), |d| d.map(|e| e.unwrap().path()).collect())
}

/// Scalar accesses: `@double` keeps its check against the grid, and so has a specialised
/// pipeline.
fn cached(directory: Option<&Path>) -> VulkanOptions {
    VulkanOptions {
        kernel_cache: directory.map(Path::to_path_buf),
        vectorize_accesses: false,
        ..VulkanOptions::default()
    }
}

#[test]
fn a_second_backend_lowers_nothing_and_creates_its_pipelines_from_disk() {
    let directory = scratch("second");
    let expected = run(&mut CpuBackend::new()).0;
    let Some(mut first) = vulkan_with(cached(Some(&directory))) else { return };
    let (bytes, stats) = run(&mut first);
    assert_eq!(bytes, expected);
    let stats = stats.expect("the Vulkan backend reports its kernel cache");
    assert_eq!((stats.modules_lowered, stats.modules_from_disk, stats.modules_ignored), (1, 0, 0));
    // Two kernels, and the specialised pipeline of the one whose grid is whole workgroups.
    assert_eq!((stats.pipelines_created, stats.pipelines_from_disk), (3, 0));
    assert_eq!(first.pipelines(), 3);
    assert_eq!(stats.pipeline_cache, PipelineCacheState::Missing);
    assert_eq!(stats.directory.as_deref(), Some(directory.as_path()));
    assert_valid(&first);
    drop(first);
    assert_eq!(files(&directory, "modules").len(), 1);
    let pipelines = files(&directory, "pipelines");
    assert_eq!(pipelines.len(), 1);
    let written = std::fs::metadata(&pipelines[0]).unwrap().modified().unwrap();

    let mut second = vulkan_with(cached(Some(&directory))).expect("the device opened before");
    let (bytes, stats) = run(&mut second);
    assert_eq!(bytes, expected);
    let stats = stats.unwrap();
    assert_eq!((stats.modules_lowered, stats.modules_from_disk), (0, 1));
    assert_eq!((stats.pipelines_created, stats.pipelines_from_disk, stats.pipelines_compiled()), (3, 3, 0));
    assert!(matches!(stats.pipeline_cache, PipelineCacheState::Loaded { bytes } if bytes >= 32), "{stats:?}");
    // Whatever the driver said, it said it of every pipeline.
    assert_eq!(stats.driver_cache_hits + stats.driver_cache_misses + stats.driver_silent, 3);
    assert_valid(&second);
    drop(second);
    // Nothing new was compiled: the pipeline cache's entry was not written again.
    assert_eq!(std::fs::metadata(&pipelines[0]).unwrap().modified().unwrap(), written);
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn a_module_entry_cut_short_is_ignored_and_written_anew() {
    let directory = scratch("cut");
    let expected = run(&mut CpuBackend::new()).0;
    let Some(mut first) = vulkan_with(cached(Some(&directory))) else { return };
    run(&mut first);
    drop(first);
    let module = files(&directory, "modules").pop().expect("a module entry");
    let whole = std::fs::read(&module).unwrap();
    std::fs::write(&module, &whole[..whole.len() - 5]).unwrap();

    let mut second = vulkan_with(cached(Some(&directory))).unwrap();
    let (bytes, stats) = run(&mut second);
    assert_eq!(bytes, expected);
    let stats = stats.unwrap();
    assert_eq!((stats.modules_lowered, stats.modules_from_disk, stats.modules_ignored), (1, 0, 1));
    assert_valid(&second);
    drop(second);
    assert_eq!(std::fs::read(&module).unwrap(), whole);
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn without_a_directory_nothing_comes_from_disk() {
    let Some(mut gpu) = vulkan_with(cached(None)) else { return };
    let (_, stats) = run(&mut gpu);
    let stats = stats.unwrap();
    assert_eq!(stats.directory, None);
    assert_eq!((stats.modules_lowered, stats.modules_from_disk), (1, 0));
    assert_eq!((stats.pipelines_created, stats.pipelines_from_disk), (3, 0));
    assert_eq!(stats.pipeline_cache, PipelineCacheState::Off);
    assert_valid(&gpu);
}
