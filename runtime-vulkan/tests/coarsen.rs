//! Coarsened kernels (`VulkanOptions::coarsen_rows`: several rows of work items per
//! invocation, the loads of buffers a kernel never writes shared between them) on the real
//! driver (lavapipe in CI), with validation: Life (`examples/06-life.hat`'s kernel), a stencil
//! whose loads sit in a guard inside an unrolled loop, a stencil that also reads and writes a
//! buffer in place, and a kernel called with one buffer for both its parameters, over grids
//! that are and are not multiples of the factor, whole buffers and parts of them, give the CPU
//! backend's results with every factor; so do 40 random stencils (terms at random offsets under
//! bounds guards, some in counted loops, random workgroups, buffer sizes and grids).

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

/// A small deterministic generator (xorshift), so that a failing case can be rerun.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) % n
    }

    fn offset(&mut self) -> i64 {
        self.below(5) as i64 - 2
    }
}

/// A random stencil `@k` over `rows x columns` buffers: terms loaded at random offsets of the
/// work item's cell, each under a bounds guard (some in a counted loop over three rows), folded
/// by random integer operations, stored at the cell.
fn random_stencil(random: &mut Random, rows: usize, columns: usize) -> String {
    let m = format!("memref<{rows}x{columns}xi32>");
    let mut body = String::new();
    let mut next = 0;
    let mut fresh = || {
        next += 1;
        format!("%v{next}")
    };
    let mut accumulator = "%s".to_string();
    let operations = ["arith.addi", "arith.subi", "arith.xori", "arith.muli"];
    let terms = 1 + random.below(5);
    for _ in 0..terms {
        let (dy, dx) = (random.offset(), random.offset());
        let looped = random.below(3) == 0;
        let (row, column, value) = (fresh(), fresh(), fresh());
        let (dy_name, dx_name, ok_row, ok_column, ok) = (fresh(), fresh(), fresh(), fresh(), fresh());
        let loaded = fresh();
        let operation = operations[random.below(4) as usize];
        let folded = fresh();
        let mut term = String::new();
        term += &format!("  {dy_name} = arith.constant {dy} : index\n  {dx_name} = arith.constant {dx} : index\n");
        let base_row = if looped {
            let shifted = fresh();
            term += &format!("  {shifted} = arith.addi %y, %d : index\n");
            shifted
        } else {
            "%y".to_string()
        };
        term += &format!(
            "  {row} = arith.addi {base_row}, {dy_name} : index
  {column} = arith.addi %x, {dx_name} : index
  {ok_row} = arith.cmpi ult, {row}, %rows : index
  {ok_column} = arith.cmpi ult, {column}, %cols : index
  {ok} = arith.andi {ok_row}, {ok_column} : i1
  {value} = scf.if {ok} -> (i32) {{
    {loaded} = buffer.load %src[{row}, {column}] : {m}
    scf.yield {loaded} : i32
  }} else {{
    scf.yield %zero : i32
  }}
"
        );
        if looped {
            let (result, carried) = (fresh(), fresh());
            body += &format!(
                "  {result} = scf.for %d = %c0 to %c3 step %c1 iter_args({carried} = {accumulator}) -> (i32) {{\n{term}  {folded} = {operation} {carried}, {value} : i32\n  scf.yield {folded} : i32\n  }}\n"
            );
            accumulator = result;
        } else {
            body += &term;
            body += &format!("  {folded} = {operation} {accumulator}, {value} : i32\n");
            accumulator = folded;
        }
    }
    let (wx, wy) = [(8, 8), (32, 2), (16, 4), (4, 16)][random.below(4) as usize];
    format!(
        "kernel.func @k(%src: {m}, %dst: {m}, %s: i32) workgroup({wx}, {wy}) {{
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %rows = arith.constant {rows} : index
  %cols = arith.constant {columns} : index
  %zero = arith.constant 0 : i32
{body}  buffer.store {accumulator}, %dst[%y, %x] : {m}
  kernel.return
}}
compute.func @main(%src: {m}, %dst: {m}, %gx: index, %gy: index) {{
  %s = arith.constant 7 : i32
  buffer.to_device %src : {m}
  buffer.to_device %dst : {m}
  compute.dispatch @k[%gx, %gy](%src, %dst, %s) : ({m}, {m}, i32)
  buffer.from_device %dst : {m}
  compute.return
}}
"
    )
}

#[test]
fn random_stencils_give_the_cpu_backends_results() {
    let mut gpus = Vec::new();
    for coarsen_rows in [8, 3] {
        let options = VulkanOptions { validation: true, coarsen_rows, ..VulkanOptions::default() };
        let Some(gpu) = vulkan_with(options) else { return };
        gpus.push((coarsen_rows, gpu));
    }
    let mut random = Random(0x2545_F491_4F6C_DD1D);
    for case in 0..40 {
        let (rows, columns) = (1 + random.below(40) as usize, 1 + random.below(40) as usize);
        let (gx, gy) = (1 + random.below(columns as u64) as usize, 1 + random.below(rows as u64) as usize);
        let text = random_stencil(&mut random, rows, columns);
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, "stencil.hat", &text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let verified = verify_module(&ctx, module).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let n = rows * columns;
        let values: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(40_503) % 2_001 - 1_000).collect();
        let args = || {
            vec![
                ArgValue::Buffer(HostBuffer::from_i32(&[rows, columns], &values).unwrap()),
                ArgValue::Buffer(HostBuffer::from_i32(&[rows, columns], &vec![-1; n]).unwrap()),
                ArgValue::Scalar(Scalar::Int(gx as i64)),
                ArgValue::Scalar(Scalar::Int(gy as i64)),
            ]
        };
        let mut cpu = CpuBackend::new();
        let expected = Executor::new(verified, &mut cpu, ExecutorOptions::default()).run("main", args()).unwrap();
        for (coarsen_rows, gpu) in &mut gpus {
            let got = Executor::new(verified, gpu, ExecutorOptions::default()).run("main", args()).unwrap();
            assert_eq!(got.buffers, expected.buffers, "case {case}, {coarsen_rows} rows, grid {gx} x {gy}:\n{text}");
        }
    }
    for (_, gpu) in &gpus {
        assert_valid(gpu);
    }
}
