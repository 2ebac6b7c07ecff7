//! Reshaped workgroups (`VulkanOptions::choose_workgroup_shape`) on the real driver (lavapipe in
//! CI), with validation: a kernel declared 8 x 8 that cannot observe its workgroup runs 32 x 2
//! wide, on grids that are not a multiple of either shape, and gives the CPU backend's results.

use hat_ir::{parse_source, verify_module};
use hat_runtime::{ArgValue, Backend, CpuBackend, Executor, ExecutorOptions, HostBuffer, Scalar};
use hat_runtime_vulkan::VulkanOptions;

mod support;
use support::{assert_valid, vulkan_with};

const PROGRAM: &str = r#"
kernel.func @blur(%src: memref<?x?xi32>, %dst: memref<?x?xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c1 = arith.constant 1 : index
  %rows = buffer.dim %src, 0 : memref<?x?xi32>
  %cols = buffer.dim %src, 1 : memref<?x?xi32>
  %x1 = arith.addi %x, %c1 : index
  %y1 = arith.addi %y, %c1 : index
  %xr = arith.remui %x1, %cols : index
  %yd = arith.remui %y1, %rows : index
  %a = buffer.load %src[%y, %x] : memref<?x?xi32>
  %b = buffer.load %src[%y, %xr] : memref<?x?xi32>
  %c = buffer.load %src[%yd, %x] : memref<?x?xi32>
  %ab = arith.addi %a, %b : i32
  %abc = arith.addi %ab, %c : i32
  buffer.store %abc, %dst[%y, %x] : memref<?x?xi32>
  kernel.return
}
compute.func @main(%src: memref<?x?xi32>, %dst: memref<?x?xi32>, %w: index, %h: index) {
  buffer.to_device %src : memref<?x?xi32>
  buffer.to_device %dst : memref<?x?xi32>
  compute.dispatch @blur[%w, %h](%src, %dst) : (memref<?x?xi32>, memref<?x?xi32>)
  buffer.from_device %dst : memref<?x?xi32>
  compute.return
}
"#;

fn run(backend: &mut dyn Backend, rows: usize, cols: usize, grid: (usize, usize)) -> Vec<i32> {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "shape.hat", PROGRAM).unwrap_or_else(|e| panic!("{e:?}"));
    let verified = verify_module(&ctx, module).unwrap();
    let src: Vec<i32> = (0..(rows * cols) as i32).map(|i| i * 31 % 1000).collect();
    let args = vec![
        ArgValue::Buffer(HostBuffer::from_i32(&[rows, cols], &src).unwrap()),
        ArgValue::Buffer(HostBuffer::from_i32(&[rows, cols], &vec![-1; rows * cols]).unwrap()),
        ArgValue::Scalar(Scalar::Int(grid.0 as i64)),
        ArgValue::Scalar(Scalar::Int(grid.1 as i64)),
    ];
    let output = Executor::new(verified, backend, ExecutorOptions::default()).run("main", args).unwrap();
    output.buffers[1].to_i32().unwrap()
}

#[test]
fn reshaped_and_declared_workgroups_give_the_cpu_backends_results() {
    for choose in [true, false] {
        let options = VulkanOptions { validation: true, choose_workgroup_shape: choose, ..VulkanOptions::default() };
        let Some(mut gpu) = vulkan_with(options) else { return };
        // (rows, cols) and the grid (x over columns, y over rows): whole, partial workgroups in
        // x and y, and a grid smaller than the buffer (the rest keeps -1).
        for (rows, cols, grid) in [(16, 64, (64, 16)), (13, 45, (45, 13)), (7, 33, (20, 5)), (3, 1, (1, 3))] {
            let expected = run(&mut CpuBackend::new(), rows, cols, grid);
            assert_eq!(run(&mut gpu, rows, cols, grid), expected, "{rows} x {cols}, grid {grid:?}, reshaped {choose}");
        }
        assert_valid(&gpu);
    }
}
