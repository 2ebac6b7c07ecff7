//! Batches the backend submits on its own (a long run of commands, a copy larger than the
//! staging ring, in pieces) on the real driver (lavapipe in CI), with the Khronos validation
//! layer and synchronisation validation on: results equal to the CPU reference backend's and no
//! validation message. Without a Vulkan device the tests print why and pass, unless
//! `HAT_REQUIRE_VULKAN=1`, where they fail.

use hat_ir::{parse_source, verify_module};
use hat_runtime::{ArgValue, Backend, CpuBackend, Executor, ExecutorOptions, HostBuffer, Scalar};
use hat_runtime_vulkan::VulkanOptions;

mod support;
use support::{assert_valid, vulkan_with};

/// `%count` dispatches that each add to every element of `%a` (each depends on the one before),
/// a host read of `%a` and a host write of `%b` between the two halves of the loop (a wait in
/// the middle), and a sum into `%b`; transfers written out (explicit mode).
const PROGRAM: &str = r#"
kernel.func @add(%data: memref<?xi32>, %v: i32) workgroup(64) {
  %i = kernel.global_id x
  %x = buffer.load %data[%i] : memref<?xi32>
  %y = arith.addi %x, %v : i32
  buffer.store %y, %data[%i] : memref<?xi32>
  kernel.return
}
kernel.func @sum(%a: memref<?xi32>, %b: memref<?xi32>) workgroup(64) {
  %i = kernel.global_id x
  %x = buffer.load %a[%i] : memref<?xi32>
  %y = buffer.load %b[%i] : memref<?xi32>
  %z = arith.addi %x, %y : i32
  buffer.store %z, %b[%i] : memref<?xi32>
  kernel.return
}
compute.func @main(%a: memref<?xi32>, %b: memref<?xi32>, %count: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = buffer.dim %a, 0 : memref<?xi32>
  %one = arith.constant 1 : i32
  %three = arith.constant 3 : i32
  %half = arith.divui %count, %c2 : index
  buffer.to_device %a : memref<?xi32>
  buffer.to_device %b : memref<?xi32>
  scf.for %i = %c0 to %half step %c1 {
    compute.dispatch @add[%n](%a, %one) : (memref<?xi32>, i32)
  }
  buffer.from_device %a : memref<?xi32>
  %seen = buffer.load %a[%c0] : memref<?xi32>
  buffer.store %seen, %b[%c1] : memref<?xi32>
  buffer.to_device %b : memref<?xi32>
  scf.for %i = %half to %count step %c1 {
    compute.dispatch @add[%n](%a, %three) : (memref<?xi32>, i32)
  }
  compute.dispatch @sum[%n](%a, %b) : (memref<?xi32>, memref<?xi32>)
  buffer.from_device %a : memref<?xi32>
  buffer.from_device %b : memref<?xi32>
  compute.return
}
"#;

fn run(backend: &mut dyn Backend, elements: usize, count: i64) -> Vec<Vec<i32>> {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "batches.hat", PROGRAM).unwrap_or_else(|e| panic!("{e:?}"));
    let verified = verify_module(&ctx, module).unwrap();
    let a: Vec<i32> = (0..elements as i32).map(|i| i * 7 - 1000).collect();
    let b: Vec<i32> = (0..elements as i32).map(|i| 5 - i).collect();
    let args = vec![
        ArgValue::Buffer(HostBuffer::from_i32(&[elements], &a).unwrap()),
        ArgValue::Buffer(HostBuffer::from_i32(&[elements], &b).unwrap()),
        ArgValue::Scalar(Scalar::Int(count)),
    ];
    let output = Executor::new(verified, backend, ExecutorOptions::default()).run("main", args).unwrap();
    output.buffers.iter().map(|b| b.to_i32().unwrap()).collect()
}

#[test]
fn long_batches_and_copies_larger_than_the_ring_give_the_cpu_backends_results() {
    // Batches of 8 commands, a ring of 4 KiB (pieces of 2 KiB): 40,004 bytes per buffer go in
    // 20 pieces each way, 300 dispatches in about 40 batches.
    let options = VulkanOptions { batch_commands: 8, staging_bytes: 4096, ..VulkanOptions::default() };
    let Some(mut gpu) = vulkan_with(options) else { return };
    for (elements, count) in [(10_001, 300), (100, 1), (3, 40), (10_001, 17)] {
        let expected = run(&mut CpuBackend::new(), elements, count);
        let got = run(&mut gpu, elements, count);
        assert_eq!(got, expected, "{elements} elements, {count} dispatches");
    }
    assert_valid(&gpu);
}

#[test]
fn batches_of_one_command_are_still_ordered() {
    let options = VulkanOptions { batch_commands: 1, staging_bytes: 1024, ..VulkanOptions::default() };
    let Some(mut gpu) = vulkan_with(options) else { return };
    let expected = run(&mut CpuBackend::new(), 1000, 9);
    assert_eq!(run(&mut gpu, 1000, 9), expected);
    assert_valid(&gpu);
}
