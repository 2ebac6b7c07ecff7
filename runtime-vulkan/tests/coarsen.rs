//! Coarsened kernels (`VulkanOptions::coarsen_rows`: several rows of work items per
//! invocation, the loads of buffers a kernel never writes shared between them) on the real
//! driver (lavapipe in CI), with validation: Life (`examples/06-life.hat`'s kernel), a stencil
//! whose loads sit in a guard inside an unrolled loop, a stencil that also reads and writes a
//! buffer in place, and a kernel called with one buffer for both its parameters, over grids
//! that are and are not multiples of the factor, whole buffers and parts of them, give the CPU
//! backend's results with every factor.

use hat_ir::{parse_source, verify_module};
use hat_runtime::{ArgValue, Backend, CpuBackend, Executor, ExecutorOptions, HostBuffer, Scalar};
use hat_runtime_vulkan::VulkanOptions;

mod support;
use support::{assert_valid, vulkan_with};

/// `examples/06-life.hat`'s kernel, over `HxW` cells.
fn life_kernel(shape: &str) -> String {
    let example = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/06-life.hat")).unwrap();
    let start = example.find("kernel.func @life_step").unwrap();
    let end = example[start..].find("\n}\n").unwrap() + start + 3;
    example[start..end].replace("16x16", shape)
}

/// The program over `rows x columns` buffers; the other kernels' grid is the `%gx x %gy`
/// corner.
fn program(rows: usize, columns: usize) -> String {
    let m = format!("memref<{rows}x{columns}xi32>");
    let life = life_kernel(&format!("{rows}x{columns}"));
    let last = rows as i64 - 1;
    format!(
        r#"{life}
kernel.func @blur(%src: {m}, %dst: {m}, %k: i32) workgroup(8, 4) {{
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %rows = arith.constant {rows} : index
  %zero = arith.constant 0 : i32
  %sum = scf.for %d = %c0 to %c3 step %c1 iter_args(%acc = %k) -> (i32) {{
    %r0 = arith.addi %y, %d : index
    %r = arith.subi %r0, %c1 : index
    %ok = arith.cmpi ult, %r, %rows : index
    %v = scf.if %ok -> (i32) {{
      %l = buffer.load %src[%r, %x] : {m}
      %w = arith.index_cast %d : index to i32
      %lw = arith.muli %l, %w : i32
      %lv = arith.addi %lw, %l : i32
      scf.yield %lv : i32
    }} else {{
      scf.yield %zero : i32
    }}
    %n = arith.addi %acc, %v : i32
    scf.yield %n : i32
  }}
  buffer.store %sum, %dst[%y, %x] : {m}
  kernel.return
}}
kernel.func @in_place(%a: {m}, %s: {m}) workgroup(4, 4) {{
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c1 = arith.constant 1 : index
  %last = arith.constant {last} : index
  %three = arith.constant 3 : i32
  %above = arith.cmpi ugt, %y, %c1 : index
  %below = arith.cmpi ult, %y, %last : index
  %inner = arith.andi %above, %below : i1
  scf.if %inner {{
    %up = arith.subi %y, %c1 : index
    %down = arith.addi %y, %c1 : index
    %u = buffer.load %s[%up, %x] : {m}
    %d = buffer.load %s[%down, %x] : {m}
    %v = buffer.load %a[%y, %x] : {m}
    %v3 = arith.muli %v, %three : i32
    %t = arith.subi %u, %d : i32
    %r = arith.addi %t, %v3 : i32
    buffer.store %r, %a[%y, %x] : {m}
  }}
  kernel.return
}}
kernel.func @pair(%src: {m}, %dst: {m}) workgroup(8, 8) {{
  %x = kernel.global_id x
  %y = kernel.global_id y
  %seven = arith.constant 7 : i32
  %u = buffer.load %src[%y, %x] : {m}
  %v = buffer.load %src[%y, %x] : {m}
  %v7 = arith.muli %v, %seven : i32
  %w = arith.addi %u, %v7 : i32
  buffer.store %w, %dst[%y, %x] : {m}
  kernel.return
}}
compute.func @main(%g: {m}, %h: {m}, %a: {m}, %b: {m}, %gx: index, %gy: index) {{
  %k = arith.constant 5 : i32
  %cols = arith.constant {columns} : index
  %rows = arith.constant {rows} : index
  buffer.to_device %g : {m}
  buffer.to_device %h : {m}
  buffer.to_device %a : {m}
  buffer.to_device %b : {m}
  compute.dispatch @life_step[%cols, %rows](%g, %h) : ({m}, {m})
  compute.dispatch @blur[%gx, %gy](%g, %a, %k) : ({m}, {m}, i32)
  compute.dispatch @in_place[%gx, %gy](%a, %h) : ({m}, {m})
  compute.dispatch @pair[%gx, %gy](%b, %b) : ({m}, {m})
  buffer.from_device %g : {m}
  buffer.from_device %h : {m}
  buffer.from_device %a : {m}
  buffer.from_device %b : {m}
  compute.return
}}
"#
    )
}

/// The host copies after `@main` over `rows x columns` buffers, the corner grid `gx x gy`.
fn run(backend: &mut dyn Backend, rows: usize, columns: usize, gx: usize, gy: usize) -> Vec<HostBuffer> {
    let text = program(rows, columns);
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "coarsen.hat", &text).unwrap_or_else(|e| panic!("{e:?}"));
    let verified = verify_module(&ctx, module).unwrap();
    let n = rows * columns;
    let cells: Vec<i32> = (0..n).map(|i| ((i * 7919 + i / 3) % 5 < 2) as i32).collect();
    let ints: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(2_654_435) % 1000 - 500).collect();
    let buffer = |values: &[i32]| ArgValue::Buffer(HostBuffer::from_i32(&[rows, columns], values).unwrap());
    let args = vec![
        buffer(&cells),
        buffer(&vec![-1; n]),
        buffer(&ints),
        buffer(&ints.iter().map(|i| i ^ 0x55).collect::<Vec<_>>()),
        ArgValue::Scalar(Scalar::Int(gx as i64)),
        ArgValue::Scalar(Scalar::Int(gy as i64)),
    ];
    let output = Executor::new(verified, backend, ExecutorOptions::default()).run("main", args).unwrap();
    output.buffers
}

#[test]
fn coarsened_kernels_give_the_cpu_backends_results_for_every_size() {
    // (rows, columns, grid x, grid y)
    let sizes = [
        (1, 1, 1, 1),
        (1, 8, 8, 1),
        (3, 5, 5, 3),
        (4, 4, 4, 4),
        (5, 9, 9, 5),
        (16, 16, 16, 16),
        (37, 23, 23, 37),
        (37, 23, 20, 30),
        (64, 40, 33, 61),
        (67, 129, 129, 67),
    ];
    for coarsen_rows in [4, 3, 8, 1] {
        let options = VulkanOptions { validation: true, coarsen_rows, ..VulkanOptions::default() };
        let Some(mut gpu) = vulkan_with(options) else { return };
        for (rows, columns, gx, gy) in sizes {
            let expected = run(&mut CpuBackend::new(), rows, columns, gx, gy);
            let got = run(&mut gpu, rows, columns, gx, gy);
            assert_eq!(got, expected, "{rows} x {columns}, grid {gx} x {gy}, {coarsen_rows} rows per invocation");
        }
        assert_valid(&gpu);
    }
}
