//! Pipelines without the check against the grid (`VulkanOptions::whole_grid_pipelines`) on the
//! real driver (lavapipe in CI), with validation: a plain kernel, a kernel with a workgroup
//! barrier and a coarsened stencil, over grids that are whole workgroups in every dimension and
//! grids that are not, each smaller than its buffers (so a work item past the grid that ran
//! would change an element the CPU backend leaves alone), give the CPU backend's results with
//! the option on and off; with it on, each kernel that ran a whole grid has its second
//! pipeline, and with it off none has.

use hat_ir::{parse_source, verify_module};
use hat_runtime::{ArgValue, Backend, CpuBackend, Executor, ExecutorOptions, HostBuffer, Scalar};
use hat_runtime_vulkan::VulkanOptions;

mod support;
use support::{assert_valid, vulkan_with};

/// Elements of the 1-D buffers; the 2-D buffers are `ROWS x COLUMNS`.
const LENGTH: usize = 160;
const ROWS: usize = 128;
const COLUMNS: usize = 64;

/// - `@inc` (workgroup 64) observes its local id, so it is neither wide nor coarsened: the
///   plain entry point's check.
/// - `@tile_sums` (workgroup 4) reaches a barrier: its work items past the grid run, with their
///   accesses to buffers skipped.
/// - `@blur` (declared 8 x 8; reshaped to 32 x 8 and coarsened 8 rows by default) loads `%src`
///   twice per work item: whole only when x is a multiple of 32 and y of 64.
const PROGRAM: &str = r#"
kernel.func @inc(%data: memref<?xi32>, %k: i32) workgroup(64) {
  %i = kernel.global_id x
  %l = kernel.local_id x
  %li = arith.index_cast %l : index to i32
  %v = buffer.load %data[%i] : memref<?xi32>
  %w = arith.addi %v, %k : i32
  %x = arith.addi %w, %li : i32
  buffer.store %x, %data[%i] : memref<?xi32>
  kernel.return
}

kernel.func @tile_sums(%data: memref<?xi32>, %sums: memref<?xi32>) workgroup(4) {
  %tile = kernel.local_alloc : memref<4xi32>
  %i = kernel.global_id x
  %l = kernel.local_id x
  %v = buffer.load %data[%i] : memref<?xi32>
  buffer.store %v, %tile[%l] : memref<4xi32>
  kernel.barrier
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  %s = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (i32) {
    %t = buffer.load %tile[%k] : memref<4xi32>
    %a = arith.addi %acc, %t : i32
    scf.yield %a : i32
  }
  buffer.store %s, %sums[%i] : memref<?xi32>
  kernel.return
}

kernel.func @blur(%src: memref<128x64xi32>, %dst: memref<128x64xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %x1 = arith.addi %x, %c1 : index
  %xr = arith.remui %x1, %c64 : index
  %a = buffer.load %src[%y, %x] : memref<128x64xi32>
  %b = buffer.load %src[%y, %xr] : memref<128x64xi32>
  %ab = arith.addi %a, %b : i32
  buffer.store %ab, %dst[%y, %x] : memref<128x64xi32>
  kernel.return
}

compute.func @main(%data: memref<?xi32>, %sums: memref<?xi32>, %src: memref<128x64xi32>,
                   %dst: memref<128x64xi32>, %n: index, %gx: index, %gy: index) {
  %five = arith.constant 5 : i32
  buffer.to_device %data : memref<?xi32>
  buffer.to_device %sums : memref<?xi32>
  buffer.to_device %src : memref<128x64xi32>
  buffer.to_device %dst : memref<128x64xi32>
  compute.dispatch @inc[%n](%data, %five) : (memref<?xi32>, i32)
  compute.dispatch @tile_sums[%n](%data, %sums) : (memref<?xi32>, memref<?xi32>)
  compute.dispatch @blur[%gx, %gy](%src, %dst) : (memref<128x64xi32>, memref<128x64xi32>)
  buffer.from_device %data : memref<?xi32>
  buffer.from_device %sums : memref<?xi32>
  buffer.from_device %dst : memref<128x64xi32>
  compute.return
}
"#;

/// Runs `@main` with `n` work items for the 1-D kernels and `grid` for `@blur`; gives
/// `%data`, `%sums` and `%dst`.
fn run(backend: &mut dyn Backend, n: usize, grid: (usize, usize)) -> Vec<Vec<i32>> {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "whole_grid.hat", PROGRAM).unwrap_or_else(|e| panic!("{e:?}"));
    let verified = verify_module(&ctx, module).unwrap();
    let data: Vec<i32> = (0..LENGTH as i32).map(|i| i * 7 % 101).collect();
    let src: Vec<i32> = (0..(ROWS * COLUMNS) as i32).map(|i| i * 31 % 1000).collect();
    let args = vec![
        ArgValue::Buffer(HostBuffer::from_i32(&[LENGTH], &data).unwrap()),
        ArgValue::Buffer(HostBuffer::from_i32(&[LENGTH], &vec![-1; LENGTH]).unwrap()),
        ArgValue::Buffer(HostBuffer::from_i32(&[ROWS, COLUMNS], &src).unwrap()),
        ArgValue::Buffer(HostBuffer::from_i32(&[ROWS, COLUMNS], &vec![-1; ROWS * COLUMNS]).unwrap()),
        ArgValue::Scalar(Scalar::Int(n as i64)),
        ArgValue::Scalar(Scalar::Int(grid.0 as i64)),
        ArgValue::Scalar(Scalar::Int(grid.1 as i64)),
    ];
    let output = Executor::new(verified, backend, ExecutorOptions::default()).run("main", args).unwrap();
    [0, 1, 3].iter().map(|&i| output.buffers[i].to_i32().unwrap()).collect()
}

#[test]
fn whole_and_partial_grids_give_the_cpu_backends_results_with_and_without_unchecked_pipelines() {
    // (n, @blur's grid): whole for all three kernels; whole for the 1-D ones only (n = 128) or
    // for @tile_sums only (n = 100); whole for none, each short of its buffers.
    let cases = [(64, (64, 64)), (128, (32, 64)), (100, (64, 120)), (130, (45, 13)), (1, (1, 1))];
    for whole_grid_pipelines in [true, false] {
        let options = VulkanOptions { validation: true, whole_grid_pipelines, ..VulkanOptions::default() };
        let Some(mut gpu) = vulkan_with(options) else { return };
        for (n, grid) in cases {
            let expected = run(&mut CpuBackend::new(), n, grid);
            let got = run(&mut gpu, n, grid);
            assert_eq!(got, expected, "n = {n}, grid {grid:?}, whole-grid pipelines {whole_grid_pipelines}");
        }
        // Three kernels, each of which ran a whole grid in the first case.
        let pipelines = if whole_grid_pipelines { 6 } else { 3 };
        assert_eq!(gpu.pipelines(), pipelines, "whole-grid pipelines {whole_grid_pipelines}");
        assert_valid(&gpu);
    }
}

#[test]
fn a_grid_that_is_whole_only_in_some_dimensions_runs_the_checked_pipeline() {
    // @blur at x = 64 (whole) and y = 63 (not): one pipeline per kernel, none unchecked.
    let Some(mut gpu) = vulkan_with(VulkanOptions::default()) else { return };
    let expected = run(&mut CpuBackend::new(), 3, (64, 63));
    assert_eq!(run(&mut gpu, 3, (64, 63)), expected);
    assert_eq!(gpu.pipelines(), 3);
    assert_valid(&gpu);
}
