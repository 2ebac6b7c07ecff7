//! `vectorize_accesses`: which kernels run four work items per invocation with `vec4` accesses
//! (every access at the global id in x, 1-D buffers of 4-byte elements, no loop, call or atomic,
//! loads before stores), and that their modules validate. Results on a device: the Vulkan
//! backend's `tests/wide.rs`.

mod support;

use hat_lowering::{DeviceFeatures, LoweringOptions};
use support::{lower_with, spirv_val};

fn items(kernel_body: &str, parameters: &str) -> u32 {
    let text = format!(
        "kernel.func @k({parameters}) workgroup(64) {{\n  %i = kernel.global_id x\n{kernel_body}\n  kernel.return\n}}"
    );
    let all = LoweringOptions { features: DeviceFeatures::all(), ..LoweringOptions::default() };
    let options = LoweringOptions { vectorize_accesses: true, ..all.clone() };
    let module = lower_with(&text, &options).unwrap_or_else(|e| panic!("{e}\n{text}"));
    spirv_val(&module.words);
    let off = lower_with(&text, &all).unwrap();
    assert_eq!(off.entry_point("k").unwrap().items_per_invocation, 1, "the option is off");
    module.entry_point("k").expect("the kernel").items_per_invocation
}

const TWO: &str = "%a: memref<?xf32>, %b: memref<?xf32>";

#[test]
fn kernels_whose_accesses_are_all_at_the_global_id_are_wide() {
    let square = "  %v = buffer.load %a[%i] : memref<?xf32>\n  %s = arith.mulf %v, %v : f32\n  buffer.store %s, %b[%i] : memref<?xf32>";
    assert_eq!(items(square, TWO), 4);
    let guarded = "  %n = buffer.dim %b, 0 : memref<?xf32>\n  %ok = arith.cmpi ult, %i, %n : index\n  scf.if %ok {\n    %v = buffer.load %a[%i] : memref<?xf32>\n    buffer.store %v, %b[%i] : memref<?xf32>\n  }";
    assert_eq!(items(guarded, TWO), 4);
    let ints = "  %v = buffer.load %a[%i] : memref<8xi32>\n  buffer.store %v, %a[%i] : memref<8xi32>";
    assert_eq!(items(ints, "%a: memref<8xi32>"), 4);
    let store_only = "  %z = arith.constant 0.0 : f32\n  buffer.store %z, %a[%i] : memref<?xf32>";
    assert_eq!(items(store_only, TWO), 4);
}

#[test]
fn other_kernels_are_not() {
    let next = "  %c1 = arith.constant 1 : index\n  %j = arith.addi %i, %c1 : index\n  %v = buffer.load %a[%j] : memref<?xf32>\n  buffer.store %v, %b[%i] : memref<?xf32>";
    assert_eq!(items(next, TWO), 1, "another index");
    let store_first = "  %z = arith.constant 0.0 : f32\n  buffer.store %z, %b[%i] : memref<?xf32>\n  %v = buffer.load %a[%i] : memref<?xf32>\n  buffer.store %v, %b[%i] : memref<?xf32>";
    assert_eq!(items(store_first, TWO), 1, "a load after a store");
    let narrow = "  %v = buffer.load %a[%i] : memref<?xi1>\n  buffer.store %v, %a[%i] : memref<?xi1>";
    assert_eq!(items(narrow, "%a: memref<?xi1>"), 1, "1-byte elements");
    let long = "  %v = buffer.load %a[%i] : memref<?xi64>\n  buffer.store %v, %a[%i] : memref<?xi64>";
    assert_eq!(items(long, "%a: memref<?xi64>"), 1, "8-byte elements");
    let local = "  %l = kernel.local_id x\n  %v = buffer.load %a[%i] : memref<?xf32>\n  buffer.store %v, %b[%i] : memref<?xf32>";
    assert_eq!(items(local, TWO), 1, "observes the workgroup");
    let looped = "  %c0 = arith.constant 0 : index\n  %c2 = arith.constant 2 : index\n  %c1 = arith.constant 1 : index\n  scf.for %k = %c0 to %c2 step %c1 {\n    %v = buffer.load %a[%i] : memref<?xf32>\n    buffer.store %v, %b[%i] : memref<?xf32>\n  }";
    assert_eq!(items(looped, TWO), 1, "a loop");
    let rows = "  %c0 = arith.constant 0 : index\n  %v = buffer.load %a[%c0, %i] : memref<2x?xf32>\n  buffer.store %v, %a[%c0, %i] : memref<2x?xf32>";
    assert_eq!(items(rows, "%a: memref<2x?xf32>"), 1, "two dimensions");
}
