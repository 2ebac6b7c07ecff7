//! The Vulkan backend on the real driver (lavapipe in CI), with the Khronos validation layer and
//! synchronisation validation on: every test fails on any validation message. Without a Vulkan
//! device the tests print why and pass, unless `HAT_REQUIRE_VULKAN=1`, where they fail.

use hat_ir::{parse_source, verify_module, Context, Op};
use hat_lowering::Feature;
use hat_runtime::{
    ArgValue, Backend, BufferLayout, ElementType, Executor, ExecutorOptions, HostBuffer, KernelArg, RuntimeError,
    Scalar, TransferMode,
};
use hat_runtime_vulkan::{VulkanBackend, VulkanOptions};

mod support;
use support::{assert_valid, vulkan_with};

fn vulkan() -> Option<VulkanBackend> {
    vulkan_with(VulkanOptions::default())
}

fn parse(text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "test.hat", text).unwrap_or_else(|e| panic!("{e:?}"));
    (ctx, module)
}

const CHAIN: &str = r#"
kernel.func @add(%data: memref<?xi32>, %v: i32) workgroup(64) {
  %i = kernel.global_id x
  %n = buffer.dim %data, 0 : memref<?xi32>
  %ok = arith.cmpi ult, %i, %n : index
  scf.if %ok {
    %x = buffer.load %data[%i] : memref<?xi32>
    %y = arith.addi %x, %v : i32
    buffer.store %y, %data[%i] : memref<?xi32>
  }
  kernel.return
}
kernel.func @copy(%src: memref<?xi32>, %dst: memref<?xi32>) workgroup(64) {
  %i = kernel.global_id x
  %n = buffer.dim %src, 0 : memref<?xi32>
  %ok = arith.cmpi ult, %i, %n : index
  scf.if %ok {
    %x = buffer.load %src[%i] : memref<?xi32>
    buffer.store %x, %dst[%i] : memref<?xi32>
  }
  kernel.return
}
compute.func @main(%a: memref<?xi32>, %b: memref<?xi32>, %count: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c500 = arith.constant 500 : index
  %n = buffer.dim %a, 0 : memref<?xi32>
  %one = arith.constant 1 : i32
  buffer.to_device %a : memref<?xi32>
  scf.for %i = %c0 to %count step %c1 {
    compute.dispatch @add[%n](%a, %one) : (memref<?xi32>, i32)
  }
  compute.dispatch @copy[%n](%a, %b) : (memref<?xi32>, memref<?xi32>)
  buffer.from_device %b[%c500, %c500] : memref<?xi32>
  %v = buffer.load %b[%c500] : memref<?xi32>
  buffer.from_device %a : memref<?xi32>
  compute.return %v : i32
}
"#;

#[test]
fn a_chain_of_dispatches_and_ranged_copies_waits_once_per_host_read() {
    let Some(mut gpu) = vulkan() else { return };
    let (ctx, module) = parse(CHAIN);
    let verified = verify_module(&ctx, module).unwrap();
    let a: Vec<i32> = (0..1000).collect();
    let args = || {
        vec![
            ArgValue::Buffer(HostBuffer::from_i32(&[1000], &a).unwrap()),
            ArgValue::Buffer(HostBuffer::from_i32(&[1000], &[0; 1000]).unwrap()),
            ArgValue::Scalar(Scalar::Int(50)),
        ]
    };
    let output = Executor::new(verified, &mut gpu, ExecutorOptions::default()).run("main", args()).unwrap();
    assert_eq!(output.results, vec![ArgValue::Scalar(Scalar::Int(550))]);
    let got_a = output.buffers[0].to_i32().unwrap();
    assert_eq!(got_a, (50..1050).collect::<Vec<i32>>());
    let got_b = output.buffers[1].to_i32().unwrap();
    assert_eq!(&got_b[..500], &[0; 500], "only the second half came back");
    assert_eq!(got_b[500..], (550..1050).collect::<Vec<i32>>());
    assert_eq!(output.report.backend, "vulkan");
    assert_eq!(output.report.waits, 2, "one at the load of %b, one at the end");
    let add = &output.report.kernels[0];
    assert_eq!((add.name.as_str(), add.dispatches), ("add", 50));
    assert!(add.device_time.is_some(), "timestamps on lavapipe");
    assert_valid(&gpu);
    // The same module again: the pipelines come from the cache.
    let again = Executor::new(verified, &mut gpu, ExecutorOptions::default()).run("main", args()).unwrap();
    assert_eq!(again.results, output.results);
    assert_valid(&gpu);
}

#[test]
fn copies_of_every_size_go_through_the_ring_or_their_own_staging() {
    // A ring of 4 KiB: 1 MiB copies get buffers of their own.
    let Some(mut gpu) = vulkan_with(VulkanOptions { staging_bytes: 4096, ..VulkanOptions::default() }) else {
        return;
    };
    for len in [0usize, 1, 3, 100, 4096, 1 << 20] {
        let buffer = gpu.allocate(&BufferLayout { element: ElementType::I8, shape: vec![len] }).unwrap();
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        gpu.copy_to_device(buffer, 0, &data).unwrap();
        let mut back = vec![0u8; len];
        gpu.copy_from_device(buffer, 0, &mut back).unwrap();
        assert_eq!(back, data, "{len} bytes");
        if len > 2 {
            let mut middle = vec![0u8; len - 2];
            gpu.copy_from_device(buffer, 1, &mut middle).unwrap();
            assert_eq!(middle, data[1..len - 1]);
        }
        gpu.free(buffer).unwrap();
    }
    assert_valid(&gpu);
}

#[test]
fn stale_handles_and_oversized_buffers_are_errors() {
    let Some(mut gpu) = vulkan() else { return };
    let layout = BufferLayout { element: ElementType::I32, shape: vec![16] };
    let old = gpu.allocate(&layout).unwrap();
    gpu.free(old).unwrap();
    let new = gpu.allocate(&layout).unwrap();
    assert_eq!(new.index(), old.index());
    let error = gpu.copy_to_device(old, 0, &[0; 4]).unwrap_err();
    assert!(matches!(error, RuntimeError::StaleHandle { .. }), "{error}");
    assert!(gpu.free(old).is_err());
    // Larger than any storage buffer binding allows (lavapipe: 128 MiB; most GPUs: 4 GiB).
    let huge = BufferLayout { element: ElementType::F64, shape: vec![1 << 30] };
    let error = gpu.allocate(&huge).unwrap_err();
    assert!(matches!(error, RuntimeError::BufferTooLarge { .. }), "{error}");
    assert!(error.to_string().contains("maxStorageBufferRange"), "{error}");
    gpu.free(new).unwrap();
    assert_valid(&gpu);
}

#[test]
fn a_kernel_needing_a_feature_the_device_lacks_names_it() {
    let Some(mut gpu) = vulkan_with(VulkanOptions { withhold: vec![Feature::Float64], ..VulkanOptions::default() })
    else {
        return;
    };
    let text = r#"
kernel.func @twice(%data: memref<4xf64>) workgroup(4) {
  %i = kernel.global_id x
  %x = buffer.load %data[%i] : memref<4xf64>
  %y = arith.addf %x, %x : f64
  buffer.store %y, %data[%i] : memref<4xf64>
  kernel.return
}
compute.func @main(%data: memref<4xf64>) {
  %c4 = arith.constant 4 : index
  compute.dispatch @twice[%c4](%data) : (memref<4xf64>)
  compute.return
}
"#;
    let (ctx, module) = parse(text);
    let verified = verify_module(&ctx, module).unwrap();
    let data =
        HostBuffer::from_scalars(BufferLayout { element: ElementType::F64, shape: vec![4] }, &[Scalar::Float(1.0); 4])
            .unwrap();
    let error = Executor::new(verified, &mut gpu, ExecutorOptions { mode: TransferMode::Reference })
        .run("main", vec![ArgValue::Buffer(data)])
        .unwrap_err();
    assert!(matches!(error.unlocated(), RuntimeError::KernelLowering { .. }), "{error}");
    assert!(error.to_string().contains("shaderFloat64"), "{error}");
    assert_ne!(ctx.sources.describe(error.location()), "", "the error points into the source");
    assert_valid(&gpu);
}

#[test]
fn index_arguments_past_the_device_index_are_refused() {
    let Some(mut gpu) = vulkan() else { return };
    let (ctx, module) = parse(CHAIN);
    let verified = verify_module(&ctx, module).unwrap();
    let add = gpu.compile_kernel(verified.nested(ctx.body_ops(module)[0]).unwrap()).unwrap();
    let buffer = gpu.allocate(&BufferLayout { element: ElementType::I32, shape: vec![4] }).unwrap();
    let args = [KernelArg::Buffer(buffer), KernelArg::Scalar(Scalar::Int(1), ElementType::I32)];
    let error = gpu.dispatch(add, [1 << 31, 1, 1], &args).unwrap_err();
    assert!(error.to_string().contains("32-bit index"), "{error}");
    let error = gpu.dispatch(add, [1, 1 << 30, 1], &args).unwrap_err();
    assert!(error.to_string().contains("maxComputeWorkGroupCount"), "{error}");
    gpu.dispatch(add, [4, 1, 1], &args).unwrap();
    gpu.free(buffer).unwrap();
    assert_valid(&gpu);
}
