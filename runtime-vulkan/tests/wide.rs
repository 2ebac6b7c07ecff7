//! Wide kernels (`VulkanOptions::vectorize_accesses`: four work items per invocation, `vec4`
//! accesses) on the real driver (lavapipe in CI), with validation: grids and buffers of every
//! size around multiples of 4 and of the workgroup, guards, a buffer read and written through
//! two parameters, give the CPU backend's results; kernels that do not qualify run as before.

use hat_ir::{parse_source, verify_module};
use hat_runtime::{ArgValue, Backend, CpuBackend, Executor, ExecutorOptions, HostBuffer, Scalar};
use hat_runtime_vulkan::VulkanOptions;

mod support;
use support::{assert_valid, vulkan_with};

const PROGRAM: &str = r#"
kernel.func @square(%in: memref<?xf32>, %out: memref<?xf32>) workgroup(64) {
  %i = kernel.global_id x
  %n = buffer.dim %out, 0 : memref<?xf32>
  %in_range = arith.cmpi ult, %i, %n : index
  scf.if %in_range {
    %v = buffer.load %in[%i] : memref<?xf32>
    %sq = arith.mulf %v, %v : f32
    buffer.store %sq, %out[%i] : memref<?xf32>
  }
  kernel.return
}
kernel.func @mix(%a: memref<?xi32>, %b: memref<?xi32>, %k: i32) workgroup(32) {
  %i = kernel.global_id x
  %x = buffer.load %a[%i] : memref<?xi32>
  %y = buffer.load %b[%i] : memref<?xi32>
  %odd = arith.andi %x, %k : i32
  %z = arith.addi %x, %y : i32
  %is = arith.cmpi ne, %odd, %k : i32
  scf.if %is {
    buffer.store %z, %b[%i] : memref<?xi32>
  }
  %w = arith.muli %z, %k : i32
  buffer.store %w, %a[%i] : memref<?xi32>
  kernel.return
}
compute.func @main(%in: memref<?xf32>, %out: memref<?xf32>, %a: memref<?xi32>, %b: memref<?xi32>, %n: index) {
  %k = arith.constant 3 : i32
  buffer.to_device %in : memref<?xf32>
  buffer.to_device %out : memref<?xf32>
  buffer.to_device %a : memref<?xi32>
  buffer.to_device %b : memref<?xi32>
  compute.dispatch @square[%n](%in, %out) : (memref<?xf32>, memref<?xf32>)
  compute.dispatch @square[%n](%out, %out) : (memref<?xf32>, memref<?xf32>)
  compute.dispatch @mix[%n](%a, %b, %k) : (memref<?xi32>, memref<?xi32>, i32)
  compute.dispatch @mix[%n](%a, %a, %k) : (memref<?xi32>, memref<?xi32>, i32)
  buffer.from_device %out : memref<?xf32>
  buffer.from_device %a : memref<?xi32>
  buffer.from_device %b : memref<?xi32>
  compute.return
}
"#;

/// The host copies after `@main` over buffers of `len` elements with a grid of `grid`
/// (`grid <= len`: `@mix` has no guard).
fn run(backend: &mut dyn Backend, len: usize, grid: usize) -> Vec<HostBuffer> {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "wide.hat", PROGRAM).unwrap_or_else(|e| panic!("{e:?}"));
    let verified = verify_module(&ctx, module).unwrap();
    let floats: Vec<f32> = (0..len).map(|i| (i % 97) as f32 * 0.25 - 7.0).collect();
    let ints: Vec<i32> = (0..len as i32).map(|i| i * 13 - 50).collect();
    let args = vec![
        ArgValue::Buffer(HostBuffer::from_f32(&[len], &floats).unwrap()),
        ArgValue::Buffer(HostBuffer::from_f32(&[len], &vec![-1.0; len]).unwrap()),
        ArgValue::Buffer(HostBuffer::from_i32(&[len], &ints).unwrap()),
        ArgValue::Buffer(HostBuffer::from_i32(&[len], &ints.iter().map(|i| i ^ 5).collect::<Vec<_>>()).unwrap()),
        ArgValue::Scalar(Scalar::Int(grid as i64)),
    ];
    let output = Executor::new(verified, backend, ExecutorOptions::default()).run("main", args).unwrap();
    output.buffers
}

#[test]
fn wide_kernels_give_the_cpu_backends_results_for_every_size() {
    for vectorize in [true, false] {
        let options = VulkanOptions { validation: true, vectorize_accesses: vectorize, ..VulkanOptions::default() };
        let Some(mut gpu) = vulkan_with(options) else { return };
        let sizes = [
            (1, 1),
            (3, 3),
            (4, 4),
            (5, 5),
            (7, 6),
            (8, 8),
            (63, 63),
            (64, 61),
            (65, 65),
            (130, 127),
            (1000, 999),
            (4099, 4099),
        ];
        for (len, grid) in sizes {
            let expected = run(&mut CpuBackend::new(), len, grid);
            let got = run(&mut gpu, len, grid);
            assert_eq!(got, expected, "{len} elements, grid {grid}, vectorized {vectorize}");
        }
        assert_valid(&gpu);
    }
}
