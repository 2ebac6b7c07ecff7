//! `coarsen_rows`: which kernels run several rows of work items per invocation, sharing the
//! loads of buffers they never write (stencils: two loads or more of one such buffer per work
//! item), that their modules validate, and that a shared element is loaded once per
//! invocation. Results on a device: the Vulkan backend's `tests/coarsen.rs`.

mod support;

use hat_lowering::{disassemble, DeviceFeatures, LoweringOptions};
use support::{lower_with, spirv_val};

/// The rows per invocation of kernel `@k` in `text` with `coarsen_rows = 4`, and the number of
/// `OpLoad`s of storage-buffer elements in its module.
fn rows(text: &str) -> (u32, usize) {
    let all = LoweringOptions { features: DeviceFeatures::all(), ..LoweringOptions::default() };
    let options = LoweringOptions { coarsen_rows: 4, ..all.clone() };
    let module = lower_with(text, &options).unwrap_or_else(|e| panic!("{e}\n{text}"));
    spirv_val(&module.words);
    let off = lower_with(text, &all).unwrap();
    assert_eq!(off.entry_point("k").unwrap().rows_per_invocation, 1, "the option is off");
    let asm = disassemble(&module.words).unwrap();
    let element_pointers: Vec<&str> = asm
        .lines()
        .filter(|l| l.contains("OpAccessChain %_ptr_StorageBuffer"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let loads = asm
        .lines()
        .filter(|l| l.contains("OpLoad") && element_pointers.iter().any(|p| l.split_whitespace().last() == Some(p)))
        .count();
    (module.entry_point("k").expect("the kernel").rows_per_invocation, loads)
}

/// `examples/06-life.hat`'s kernel, renamed `@k`, over a grid of `size`.
fn life(size: &str) -> String {
    let example = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/06-life.hat")).unwrap();
    let start = example.find("kernel.func @life_step").unwrap();
    let end = example[start..].find("\n}\n").unwrap() + start + 3;
    example[start..end].replace("@life_step", "@k").replace("16x16", size)
}

#[test]
fn a_stencil_runs_four_rows_and_loads_each_element_once() {
    if !support::spirv_tools_linked() {
        return;
    }
    // Life: 9 loads of %src per cell, 36 for four cells; the four rows and the rows above and
    // below them, 3 columns each: 18 distinct elements.
    assert_eq!(rows(&life("64x64")), (4, 18));
    assert_eq!(rows(&life("37x23")), (4, 18), "sizes that are not multiples of 4");
}

#[test]
fn a_stencil_on_a_buffer_it_also_writes_shares_only_the_other_buffer() {
    if !support::spirv_tools_linked() {
        return;
    }
    let text = "kernel.func @k(%a: memref<16x16xi32>, %s: memref<16x16xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %up = arith.subi %y, %c1 : index
  %down = arith.addi %y, %c1 : index
  %top = arith.cmpi ugt, %y, %c1 : index
  %bottom = arith.cmpi ult, %y, %c15 : index
  %inner = arith.andi %top, %bottom : i1
  scf.if %inner {
    %u = buffer.load %s[%up, %x] : memref<16x16xi32>
    %d = buffer.load %s[%down, %x] : memref<16x16xi32>
    %v = buffer.load %a[%y, %x] : memref<16x16xi32>
    %w = buffer.load %a[%y, %x] : memref<16x16xi32>
    %t = arith.addi %u, %d : i32
    %r = arith.addi %t, %v : i32
    %q = arith.addi %r, %w : i32
    buffer.store %q, %a[%y, %x] : memref<16x16xi32>
  }
  kernel.return
}";
    // %s: rows y - 1 .. y + 4, 6 loads; %a: 2 per work item, in place, 8.
    assert_eq!(rows(text), (4, 14));
}

#[test]
fn other_kernels_are_not_coarsened() {
    if !support::spirv_tools_linked() {
        return;
    }
    let one_dimension = "kernel.func @k(%a: memref<64xi32>, %b: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %c1 = arith.constant 1 : index
  %j = arith.addi %i, %c1 : index
  %u = buffer.load %a[%i] : memref<64xi32>
  %v = buffer.load %a[%j] : memref<64xi32>
  %w = arith.addi %u, %v : i32
  buffer.store %w, %b[%i] : memref<64xi32>
  kernel.return
}";
    assert_eq!(rows(one_dimension).0, 1, "no global id in y");
    let elementwise = "kernel.func @k(%a: memref<8x8xi32>, %b: memref<8x8xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %u = buffer.load %a[%y, %x] : memref<8x8xi32>
  %w = arith.addi %u, %u : i32
  buffer.store %w, %b[%y, %x] : memref<8x8xi32>
  kernel.return
}";
    assert_eq!(rows(elementwise).0, 1, "one load per work item: nothing to share");
    let in_place = "kernel.func @k(%a: memref<8x8xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c0 = arith.constant 0 : index
  %u = buffer.load %a[%y, %x] : memref<8x8xi32>
  %v = buffer.load %a[%c0, %x] : memref<8x8xi32>
  %w = arith.addi %u, %v : i32
  buffer.store %w, %a[%y, %x] : memref<8x8xi32>
  kernel.return
}";
    assert_eq!(rows(in_place).0, 1, "the only buffer read is written");
    let dynamic = "kernel.func @k(%a: memref<?x?xi32>, %b: memref<?x?xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c0 = arith.constant 0 : index
  %u = buffer.load %a[%y, %x] : memref<?x?xi32>
  %v = buffer.load %a[%c0, %x] : memref<?x?xi32>
  %w = arith.addi %u, %v : i32
  buffer.store %w, %b[%y, %x] : memref<?x?xi32>
  kernel.return
}";
    assert_eq!(rows(dynamic).0, 1, "dynamic sizes (the clamp needs the size)");
    let after_store = "kernel.func @k(%a: memref<8x8xi32>, %b: memref<8x8xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c0 = arith.constant 0 : index
  %z = arith.constant 0 : i32
  buffer.store %z, %b[%y, %x] : memref<8x8xi32>
  %u = buffer.load %a[%y, %x] : memref<8x8xi32>
  %v = buffer.load %a[%c0, %x] : memref<8x8xi32>
  %w = arith.addi %u, %v : i32
  buffer.store %w, %b[%y, %x] : memref<8x8xi32>
  kernel.return
}";
    assert_eq!(rows(after_store).0, 1, "the loads come after a store");
    let barrier = "kernel.func @k(%a: memref<8x8xi32>, %b: memref<8x8xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c0 = arith.constant 0 : index
  %u = buffer.load %a[%y, %x] : memref<8x8xi32>
  %v = buffer.load %a[%c0, %x] : memref<8x8xi32>
  kernel.barrier
  %w = arith.addi %u, %v : i32
  buffer.store %w, %b[%y, %x] : memref<8x8xi32>
  kernel.return
}";
    assert_eq!(rows(barrier).0, 1, "a barrier");
}
