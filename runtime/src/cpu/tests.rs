use super::*;
use crate::backend::KernelArg::{Buffer, Scalar as Arg};
use crate::dispatch_arguments::{Argument, KernelSignature};
use hat_ir::{parse_source, Context};

/// A backend with the kernels of `text` compiled; `kernels[name]` is the handle.
struct Fixture {
    backend: CpuBackend,
    kernels: Vec<(String, KernelHandle)>,
    ctx: Context,
    module: hat_ir::Op,
}

impl Fixture {
    fn new(text: &str) -> Fixture {
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, "test.hat", text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let verified = hat_ir::verify_module(&ctx, module).unwrap_or_else(|errors| panic!("{errors:?}"));
        let mut backend = CpuBackend::new();
        let mut kernels = Vec::new();
        for op in ctx.body_ops(module) {
            if ctx.name_str(op) == "kernel.func" {
                let name = ctx.attribute_kind(ctx.attribute(op, "sym_name").unwrap()).as_str().unwrap().to_string();
                let handle =
                    backend.compile_kernel(verified.nested(op).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
                kernels.push((name, handle));
            }
        }
        Fixture { backend, kernels, ctx, module }
    }

    /// The kernel op named `name`.
    fn kernel_op(&self, name: &str) -> hat_ir::Op {
        let named = |op: &hat_ir::Op| hat_ir::verifier::symbol_name(&self.ctx, *op) == Some(name);
        self.ctx.walk(self.module).into_iter().find(named).unwrap_or_else(|| panic!("no kernel {name}"))
    }

    fn kernel(&self, name: &str) -> KernelHandle {
        self.kernels.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no kernel {name}")).1
    }

    fn alloc(&mut self, element: ElementType, shape: &[usize]) -> DeviceBuffer {
        self.backend.allocate(&BufferLayout { element, shape: shape.to_vec() }).unwrap()
    }

    fn upload_i32(&mut self, shape: &[usize], data: &[i32]) -> DeviceBuffer {
        let buffer = self.alloc(ElementType::I32, shape);
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.backend.copy_to_device(buffer, 0, &bytes).unwrap();
        buffer
    }

    fn upload_f32(&mut self, shape: &[usize], data: &[f32]) -> DeviceBuffer {
        let buffer = self.alloc(ElementType::F32, shape);
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.backend.copy_to_device(buffer, 0, &bytes).unwrap();
        buffer
    }

    fn bytes(&mut self, buffer: DeviceBuffer) -> Vec<u8> {
        let mut bytes = vec![0u8; self.backend.layout(buffer).unwrap().bytes()];
        self.backend.copy_from_device(buffer, 0, &mut bytes).unwrap();
        bytes
    }

    fn download_i32(&mut self, buffer: DeviceBuffer) -> Vec<i32> {
        self.bytes(buffer).chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    fn download_f32(&mut self, buffer: DeviceBuffer) -> Vec<f32> {
        self.bytes(buffer).chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    fn dispatch(&mut self, kernel: &str, grid: [u64; 3], args: &[KernelArg]) -> Result<(), RuntimeError> {
        let handle = self.kernel(kernel);
        self.backend.dispatch(handle, grid, args)
    }

    fn run(&mut self, kernel: &str, grid: [u64; 3], args: &[KernelArg]) {
        self.dispatch(kernel, grid, args).unwrap_or_else(|e| panic!("{kernel}: {e}"));
    }
}

fn index(v: i64) -> KernelArg {
    Arg(Scalar::Int(v), ElementType::Index)
}

const POISON_I32: i32 = 0xDEAD_BEEFu32 as i32;

#[test]
fn fresh_allocations_hold_poison() {
    let mut f = Fixture::new("");
    let ints = f.alloc(ElementType::I32, &[4]);
    assert_eq!(f.download_i32(ints), vec![POISON_I32; 4]);
    let floats = f.alloc(ElementType::F32, &[2, 3]);
    assert!(f.download_f32(floats).iter().all(|v| v.is_nan()));
    let doubles = f.alloc(ElementType::F64, &[3]);
    assert!(f.bytes(doubles).chunks(8).all(|c| f64::from_le_bytes(c.try_into().unwrap()).is_nan()));
    let bytes = f.alloc(ElementType::I8, &[3]);
    assert_eq!(f.bytes(bytes), vec![0xEF; 3]);
    let longs = f.alloc(ElementType::I64, &[1]);
    assert_eq!(f.bytes(longs), 0xDEAD_BEEF_DEAD_BEEFu64.to_le_bytes());
    let shorts = f.alloc(ElementType::I16, &[1]);
    assert_eq!(f.bytes(shorts), vec![0xEF, 0xBE]);
    // A rank-0 buffer has one element.
    let scalar = f.alloc(ElementType::I32, &[]);
    assert_eq!(f.download_i32(scalar), vec![POISON_I32]);
    assert_eq!(f.backend.bytes_in_use(), 16 + 24 + 24 + 3 + 8 + 2 + 4);
    f.backend.free(ints).unwrap();
    assert!(f.backend.free(ints).is_err());
    assert!(f.backend.copy_to_device(ints, 0, &[0]).is_err());
}

#[test]
fn copies_with_offsets_touch_only_their_bytes() {
    let mut f = Fixture::new("");
    let buffer = f.alloc(ElementType::I32, &[4]);
    f.backend.copy_to_device(buffer, 4, &7i32.to_le_bytes()).unwrap();
    // Unaligned bytes across elements.
    f.backend.copy_to_device(buffer, 10, &[1, 2, 3]).unwrap();
    let mut expected = vec![0xEF, 0xBE, 0xAD, 0xDE, 7, 0, 0, 0, 0xEF, 0xBE, 1, 2, 3, 0xBE, 0xAD, 0xDE];
    assert_eq!(f.bytes(buffer), expected);
    let mut part = [0u8; 5];
    f.backend.copy_from_device(buffer, 3, &mut part).unwrap();
    assert_eq!(part[..], expected[3..8]);
    let error = f.backend.copy_to_device(buffer, 14, &[0, 0, 0]).unwrap_err();
    assert!(error.to_string().contains("outside a device buffer of 16 bytes"), "{error}");
    assert!(f.backend.copy_from_device(buffer, usize::MAX, &mut part).is_err());
    expected[0] = 0;
    f.backend.copy_to_device(buffer, 0, &[0]).unwrap();
    assert_eq!(f.bytes(buffer), expected);
}

const SQUARES: &str = r#"
kernel.helper @square(%x: i32) -> i32 {
  %y = arith.muli %x, %x : i32
  kernel.return %y : i32
}

kernel.func @squares(%data: memref<?xi32>, %sum: memref<1xi32>) workgroup(64) {
  %i = kernel.global_id x
  %n = buffer.dim %data, 0 : memref<?xi32>
  %in_range = arith.cmpi ult, %i, %n : index
  scf.if %in_range {
    %v = buffer.load %data[%i] : memref<?xi32>
    %s = kernel.call @square(%v) : (i32) -> i32
    buffer.store %s, %data[%i] : memref<?xi32>
    %c0 = arith.constant 0 : index
    %old = kernel.atomic_rmw add %sum[%c0], %s : memref<1xi32>
  }
  kernel.return
}
"#;

#[test]
fn squares() {
    for parallel in [true, false] {
        let mut f = Fixture::new(SQUARES);
        f.backend.set_parallel(parallel);
        let input: Vec<i32> = (0..1000).collect();
        let data = f.upload_i32(&[1000], &input);
        let sum = f.upload_i32(&[1], &[0]);
        f.run("squares", [1000, 1, 1], &[Buffer(data), Buffer(sum)]);
        let expected: Vec<i32> = input.iter().map(|v| v * v).collect();
        assert_eq!(f.download_i32(data), expected);
        assert_eq!(f.download_i32(sum), vec![expected.iter().sum::<i32>()]);
    }
}

#[test]
fn grid_of_two_dimensions_and_work_item_ids() {
    let text = r#"
kernel.func @coords(%out: memref<13x20xi32>, %info: memref<8x7xindex>) workgroup(8, 4) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %w = buffer.dim %out, 1 : memref<13x20xi32>
  %h = buffer.dim %out, 0 : memref<13x20xi32>
  %inx = arith.cmpi ult, %x, %w : index
  %iny = arith.cmpi ult, %y, %h : index
  %in = arith.andi %inx, %iny : i1
  scf.if %in {
    %c100 = arith.constant 100 : index
    %row = arith.muli %y, %c100 : index
    %v = arith.addi %row, %x : index
    %vi = arith.index_cast %v : index to i32
    buffer.store %vi, %out[%y, %x] : memref<13x20xi32>
  }
  // The last work item of the grid, in the last group (2, 3) at local (3, 0), records the ids
  // and sizes (the items past the grid, up to local (7, 3), do not exist).
  %lx = kernel.local_id x
  %ly = kernel.local_id y
  %gx = kernel.group_id x
  %gy = kernel.group_id y
  %zero = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %a = arith.cmpi eq, %lx, %c3 : index
  %b = arith.cmpi eq, %ly, %zero : index
  %c = arith.cmpi eq, %gx, %c2 : index
  %d = arith.cmpi eq, %gy, %c3 : index
  %ab = arith.andi %a, %b : i1
  %cd = arith.andi %c, %d : i1
  %last = arith.andi %ab, %cd : i1
  scf.if %last {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %sx = kernel.global_size x
    %sy = kernel.global_size y
    %sz = kernel.global_size z
    %wx = kernel.local_size x
    %wy = kernel.local_size y
    %wz = kernel.local_size z
    %nx = kernel.num_groups x
    %ny = kernel.num_groups y
    %nz = kernel.num_groups z
    %z = kernel.global_id z
    buffer.store %x, %info[%c0, %c0] : memref<8x7xindex>
    buffer.store %y, %info[%c0, %c1] : memref<8x7xindex>
    buffer.store %z, %info[%c0, %c2] : memref<8x7xindex>
    buffer.store %sx, %info[%c1, %c0] : memref<8x7xindex>
    buffer.store %sy, %info[%c1, %c1] : memref<8x7xindex>
    buffer.store %sz, %info[%c1, %c2] : memref<8x7xindex>
    buffer.store %wx, %info[%c2, %c0] : memref<8x7xindex>
    buffer.store %wy, %info[%c2, %c1] : memref<8x7xindex>
    buffer.store %wz, %info[%c2, %c2] : memref<8x7xindex>
    buffer.store %nx, %info[%c3, %c0] : memref<8x7xindex>
    buffer.store %ny, %info[%c3, %c1] : memref<8x7xindex>
    buffer.store %nz, %info[%c3, %c2] : memref<8x7xindex>
  }
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    let out = f.alloc(ElementType::I32, &[13, 20]);
    let info = f.alloc(ElementType::Index, &[8, 7]);
    f.run("coords", [20, 13, 1], &[Buffer(out), Buffer(info)]);
    let values = f.download_i32(out);
    for y in 0..13 {
        for x in 0..20 {
            assert_eq!(values[y * 20 + x], (y * 100 + x) as i32);
        }
    }
    let info: Vec<i64> = f.bytes(info).chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    let row = |r: usize| info[r * 7..r * 7 + 3].to_vec();
    // The last work item: global id (19, 12) in a 20 x 13 grid.
    assert_eq!(row(0), vec![19, 12, 0]);
    assert_eq!(row(1), vec![20, 13, 1]);
    assert_eq!(row(2), vec![8, 4, 1]);
    assert_eq!(row(3), vec![3, 4, 1]);
}

#[test]
fn default_workgroup_size_and_zero_grid() {
    let text = r#"
kernel.func @count(%n: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %old = kernel.atomic_rmw add %n[%c0], %one : memref<1xi32>
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    assert_eq!(f.backend.workgroup_size(f.kernel("count")), Some(DEFAULT_WORKGROUP_SIZE));
    let n = f.upload_i32(&[1], &[0]);
    // 65 work items: two groups of 64, of which only the 65 inside the grid exist.
    f.run("count", [65, 1, 1], &[Buffer(n)]);
    assert_eq!(f.download_i32(n), vec![65]);
    f.run("count", [0, 1, 1], &[Buffer(n)]);
    f.run("count", [10, 0, 1], &[Buffer(n)]);
    assert_eq!(f.download_i32(n), vec![65]);
}

const WORKGROUP_MEMORY: &str = r#"
kernel.func @reverse(%data: memref<256xi32>) workgroup(64) {
  %tile = kernel.local_alloc : memref<64xi32>
  %i = kernel.global_id x
  %l = kernel.local_id x
  %v = buffer.load %data[%i] : memref<256xi32>
  buffer.store %v, %tile[%l] : memref<64xi32>
  kernel.barrier
  %c63 = arith.constant 63 : index
  %r = arith.subi %c63, %l : index
  %w = buffer.load %tile[%r] : memref<64xi32>
  buffer.store %w, %data[%i] : memref<256xi32>
  kernel.return
}

kernel.func @reduce(%data: memref<?xf32>, %sums: memref<?xf32>) workgroup(32) {
  %tile = kernel.local_alloc : memref<32xf32>
  %i = kernel.global_id x
  %l = kernel.local_id x
  %g = kernel.group_id x
  %n = buffer.dim %data, 0 : memref<?xf32>
  %in = arith.cmpi ult, %i, %n : index
  %v = scf.if %in -> (f32) {
    %x = buffer.load %data[%i] : memref<?xf32>
    scf.yield %x : f32
  } else {
    %zero = arith.constant 0.0 : f32
    scf.yield %zero : f32
  }
  buffer.store %v, %tile[%l] : memref<32xf32>
  kernel.barrier
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c16 = arith.constant 16 : index
  %last = scf.for %k = %c0 to %c5 step %c1 iter_args(%stride = %c16) -> (index) {
    %active = arith.cmpi ult, %l, %stride : index
    scf.if %active {
      %j = arith.addi %l, %stride : index
      %a = buffer.load %tile[%l] : memref<32xf32>
      %b = buffer.load %tile[%j] : memref<32xf32>
      %s = arith.addf %a, %b : f32
      buffer.store %s, %tile[%l] : memref<32xf32>
    }
    kernel.barrier
    %half = arith.shrui %stride, %c1 : index
    scf.yield %half : index
  }
  %first = arith.cmpi eq, %l, %c0 : index
  scf.if %first {
    %total = buffer.load %tile[%c0] : memref<32xf32>
    buffer.store %total, %sums[%g] : memref<?xf32>
  }
  kernel.return
}

kernel.func @peek(%out: memref<64xi32>) workgroup(64) {
  %tile = kernel.local_alloc : memref<64xi32>
  %l = kernel.local_id x
  %v = buffer.load %tile[%l] : memref<64xi32>
  buffer.store %v, %out[%l] : memref<64xi32>
  kernel.return
}
"#;

#[test]
fn workgroup_memory_and_barriers() {
    for parallel in [true, false] {
        let mut f = Fixture::new(WORKGROUP_MEMORY);
        f.backend.set_parallel(parallel);
        let input: Vec<i32> = (0..256).collect();
        let data = f.upload_i32(&[256], &input);
        f.run("reverse", [256, 1, 1], &[Buffer(data)]);
        let expected: Vec<i32> = (0..256).map(|i| (i / 64) * 64 + 63 - i % 64).collect();
        assert_eq!(f.download_i32(data), expected);

        let values: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let data = f.upload_f32(&[100], &values);
        let sums = f.alloc(ElementType::F32, &[4]);
        f.run("reduce", [100, 1, 1], &[Buffer(data), Buffer(sums)]);
        let expected: Vec<f32> = values.chunks(32).map(|c| c.iter().sum()).collect();
        assert_eq!(f.download_f32(sums), expected);
    }
}

#[test]
fn workgroup_memory_starts_poisoned() {
    let mut f = Fixture::new(WORKGROUP_MEMORY);
    let out = f.alloc(ElementType::I32, &[64]);
    f.run("peek", [64, 1, 1], &[Buffer(out)]);
    assert_eq!(f.download_i32(out), vec![POISON_I32; 64]);
}

#[test]
fn non_uniform_barriers_are_errors() {
    let text = r#"
kernel.func @divergent(%out: memref<64xi32>) workgroup(64) {
  %l = kernel.local_id x
  %c10 = arith.constant 10 : index
  %low = arith.cmpi ult, %l, %c10 : index
  scf.if %low {
    kernel.barrier
  }
  kernel.return
}

kernel.func @two_barriers(%out: memref<64xi32>) workgroup(64) {
  %l = kernel.local_id x
  %c10 = arith.constant 10 : index
  %low = arith.cmpi ult, %l, %c10 : index
  scf.if %low {
    kernel.barrier
  } else {
    kernel.barrier
  }
  kernel.return
}

kernel.func @uniform(%out: memref<64xi32>) workgroup(16) {
  %g = kernel.group_id x
  %l = kernel.local_id x
  %i = kernel.global_id x
  %c1 = arith.constant 1 : index
  %odd_group = arith.cmpi eq, %g, %c1 : index
  %one = arith.constant 1 : i32
  scf.if %odd_group {
    kernel.barrier
    buffer.store %one, %out[%i] : memref<64xi32>
  }
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    let out = f.alloc(ElementType::I32, &[64]);
    let error = f.dispatch("divergent", [64, 1, 1], &[Buffer(out)]).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("non-uniform barrier in kernel 'divergent'"), "{message}");
    assert!(
        message.contains("work item (0, 0, 0) waits at a barrier, while work item (10, 0, 0) has finished"),
        "{message}"
    );
    let (_, line, _) = f.ctx.sources.file_line_col(error.location()).unwrap();
    assert_eq!(line, 7);
    let message = f.dispatch("two_barriers", [64, 1, 1], &[Buffer(out)]).unwrap_err().to_string();
    assert!(message.contains("waits at a different barrier"), "{message}");
    // Uniform in each workgroup, different across them: fine.
    f.run("uniform", [64, 1, 1], &[Buffer(out)]);
    let values = f.download_i32(out);
    assert_eq!(values[16..32], [1; 16]);
    assert_eq!(values[..16], [POISON_I32; 16]);
}

#[test]
fn atomics_across_many_workgroups() {
    let text = r#"
kernel.func @tickets(%counter: memref<1xi32>, %tickets: memref<?xi32>, %stats: memref<5xi32>, %fsum: memref<1xf32>) workgroup(32) {
  %i = kernel.global_id x
  %n = buffer.dim %tickets, 0 : memref<?xi32>
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1 : i32
    %t = kernel.atomic_rmw add %counter[%c0], %one : memref<1xi32>
    buffer.store %t, %tickets[%i] : memref<?xi32>
    %v = arith.index_cast %i : index to i32
    %a = kernel.atomic_rmw max %stats[%c0], %v : memref<5xi32>
    %b = kernel.atomic_rmw min %stats[%c1], %v : memref<5xi32>
    %c = kernel.atomic_rmw xor %stats[%c2], %v : memref<5xi32>
    %d = kernel.atomic_rmw or %stats[%c3], %v : memref<5xi32>
    %m = arith.constant 255 : i32
    %e = kernel.atomic_rmw and %stats[%c4], %m : memref<5xi32>
    %half = arith.constant 0.5 : f32
    %g = kernel.atomic_rmw add %fsum[%c0], %half : memref<1xf32>
  }
  kernel.return
}

kernel.func @swap(%cell: memref<1xi32>, %seen: memref<?xi32>) workgroup(8) {
  %i = kernel.global_id x
  %v = arith.index_cast %i : index to i32
  %c0 = arith.constant 0 : index
  %old = kernel.atomic_rmw exchange %cell[%c0], %v : memref<1xi32>
  buffer.store %old, %seen[%i] : memref<?xi32>
  kernel.return
}
"#;
    let n = 100_000usize;
    let mut f = Fixture::new(text);
    let counter = f.upload_i32(&[1], &[0]);
    let tickets = f.alloc(ElementType::I32, &[n]);
    let stats = f.upload_i32(&[5], &[i32::MIN, i32::MAX, 0, 0, -1]);
    let fsum = f.upload_f32(&[1], &[0.0]);
    f.run("tickets", [n as u64, 1, 1], &[Buffer(counter), Buffer(tickets), Buffer(stats), Buffer(fsum)]);
    assert_eq!(f.download_i32(counter), vec![n as i32]);
    let mut tickets = f.download_i32(tickets);
    tickets.sort_unstable();
    assert!(tickets.iter().enumerate().all(|(i, &t)| t == i as i32), "every old value is returned once");
    let xor = (0..n as i32).fold(0, |a, b| a ^ b);
    let or = (0..n as i32).fold(0, |a, b| a | b);
    assert_eq!(f.download_i32(stats), vec![n as i32 - 1, 0, xor, or, 255]);
    assert_eq!(f.download_f32(fsum), vec![n as f32 / 2.0]);

    // Exchange: the old values and the final one are each work item's value once, plus poison.
    let cell = f.alloc(ElementType::I32, &[1]);
    let seen = f.alloc(ElementType::I32, &[64]);
    f.run("swap", [64, 1, 1], &[Buffer(cell), Buffer(seen)]);
    let mut values = f.download_i32(seen);
    values.extend(f.download_i32(cell));
    values.sort_unstable();
    let mut expected: Vec<i32> = (0..64).collect();
    expected.push(POISON_I32);
    expected.sort_unstable();
    assert_eq!(values, expected);
}

#[test]
fn out_of_bounds_accesses_name_kernel_work_item_and_index() {
    let text = r#"
kernel.func @unguarded(%data: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %one = arith.constant 1 : i32
  buffer.store %one, %data[%i] : memref<64xi32>
  kernel.return
}

kernel.func @neighbour(%data: memref<8x8xi32>) workgroup(8, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c1 = arith.constant 1 : index
  %left = arith.subi %x, %c1 : index
  %v = buffer.load %data[%y, %left] : memref<8x8xi32>
  kernel.return
}

kernel.func @atomic(%data: memref<4xi32>) workgroup(4) {
  %c9 = arith.constant 9 : index
  %one = arith.constant 1 : i32
  %old = kernel.atomic_rmw add %data[%c9], %one : memref<4xi32>
  kernel.return
}
"#;
    for parallel in [true, false] {
        let mut f = Fixture::new(text);
        f.backend.set_parallel(parallel);
        let data = f.alloc(ElementType::I32, &[64]);
        // 100 work items: 128 run; 64 to 127 are out of bounds; the first is 64.
        let error = f.dispatch("unguarded", [100, 1, 1], &[Buffer(data)]).unwrap_err();
        let RuntimeError::DeviceOutOfBounds { ref kernel, work_item, ref index, ref shape, location } = error else {
            panic!("{error:?}");
        };
        assert_eq!(
            (kernel.as_str(), work_item, &index[..], &shape[..]),
            ("unguarded", [64, 0, 0], &[64][..], &[64][..])
        );
        assert_eq!(
            error.to_string(),
            "out-of-bounds access in kernel 'unguarded' by work item (64, 0, 0): index [64] of a buffer of shape [64]"
        );
        assert_eq!(f.ctx.sources.file_line_col(location).map(|(_, l, _)| l), Some(5));
        // The work items before the failure ran.
        assert_eq!(f.download_i32(data), vec![1; 64]);

        let grid = f.alloc(ElementType::I32, &[8, 8]);
        let message = f.dispatch("neighbour", [8, 8, 1], &[Buffer(grid)]).unwrap_err().to_string();
        assert_eq!(
            message,
            "out-of-bounds access in kernel 'neighbour' by work item (0, 0, 0): index [0, -1] of a buffer of shape [8, 8]"
        );
        let small = f.alloc(ElementType::I32, &[4]);
        let message = f.dispatch("atomic", [4, 1, 1], &[Buffer(small)]).unwrap_err().to_string();
        assert!(message.contains("kernel 'atomic' by work item (0, 0, 0): index [9] of a buffer of shape [4]"));
    }
}

#[test]
fn helpers_with_return_values() {
    let text = r#"
kernel.helper @divmod(%a: index, %b: index) -> (index, index) {
  %q = arith.divui %a, %b : index
  %r = arith.remui %a, %b : index
  kernel.return %q, %r : index, index
}

kernel.helper @coordinates() -> (index, index) {
  %i = kernel.global_id x
  %c10 = arith.constant 10 : index
  %q, %r = kernel.call @divmod(%i, %c10) : (index, index) -> (index, index)
  kernel.return %q, %r : index, index
}

kernel.helper @store_at(%buf: memref<5x10xi32>, %y: index, %x: index, %v: i32) {
  buffer.store %v, %buf[%y, %x] : memref<5x10xi32>
  kernel.return
}

kernel.helper @factorial(%n: i32) -> i32 {
  %one = arith.constant 1 : i32
  %small = arith.cmpi sle, %n, %one : i32
  %r = scf.if %small -> (i32) {
    scf.yield %one : i32
  } else {
    %m = arith.subi %n, %one : i32
    %f = kernel.call @factorial(%m) : (i32) -> i32
    %p = arith.muli %n, %f : i32
    scf.yield %p : i32
  }
  kernel.return %r : i32
}

kernel.func @grid(%buf: memref<5x10xi32>, %facts: memref<10xi32>) workgroup(16) {
  %i = kernel.global_id x
  %c50 = arith.constant 50 : index
  %in = arith.cmpi ult, %i, %c50 : index
  scf.if %in {
    %y, %x = kernel.call @coordinates() : () -> (index, index)
    %v = arith.index_cast %i : index to i32
    kernel.call @store_at(%buf, %y, %x, %v) : (memref<5x10xi32>, index, index, i32) -> ()
    %c10 = arith.constant 10 : index
    %small = arith.cmpi ult, %i, %c10 : index
    scf.if %small {
      %f = kernel.call @factorial(%v) : (i32) -> i32
      buffer.store %f, %facts[%i] : memref<10xi32>
    }
  }
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    let buf = f.alloc(ElementType::I32, &[5, 10]);
    let facts = f.alloc(ElementType::I32, &[10]);
    f.run("grid", [50, 1, 1], &[Buffer(buf), Buffer(facts)]);
    assert_eq!(f.download_i32(buf), (0..50).collect::<Vec<i32>>());
    assert_eq!(f.download_i32(facts), vec![1, 1, 2, 6, 24, 120, 720, 5040, 40320, 362880]);
}

#[test]
fn partial_writes_leave_poison() {
    let text = r#"
kernel.func @evens(%data: memref<?xi32>, %n: index) workgroup(64) {
  %i = kernel.global_id x
  %c2 = arith.constant 2 : index
  %j = arith.muli %i, %c2 : index
  %in = arith.cmpi ult, %j, %n : index
  scf.if %in {
    %v = arith.constant 7 : i32
    buffer.store %v, %data[%j] : memref<?xi32>
  }
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    let data = f.alloc(ElementType::I32, &[10]);
    f.run("evens", [5, 1, 1], &[Buffer(data), index(10)]);
    let expected: Vec<i32> = (0..10).map(|i| if i % 2 == 0 { 7 } else { POISON_I32 }).collect();
    assert_eq!(f.download_i32(data), expected);
}

#[test]
fn loops_and_scalar_arguments() {
    let text = r#"
kernel.func @collatz(%steps: memref<?xi32>, %scale: i32, %offset: f32, %out: memref<?xf32>) workgroup(16) {
  %i = kernel.global_id x
  %n = buffer.dim %steps, 0 : memref<?xi32>
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c3 = arith.constant 3 : i32
    %c0 = arith.constant 0 : i32
    %i32 = arith.index_cast %i : index to i32
    %start = arith.addi %i32, %c1 : i32
    %r:2 = scf.while (%x = %start, %k = %c0) : (i32, i32) -> (i32, i32) {
      %go = arith.cmpi ne, %x, %c1 : i32
      scf.condition(%go) %x, %k : i32, i32
    } do {
    ^bb0(%y: i32, %j: i32):
      %rem = arith.remui %y, %c2 : i32
      %even = arith.cmpi eq, %rem, %c0 : i32
      %next = scf.if %even -> (i32) {
        %h = arith.divui %y, %c2 : i32
        scf.yield %h : i32
      } else {
        %t = arith.muli %y, %c3 : i32
        %t1 = arith.addi %t, %c1 : i32
        scf.yield %t1 : i32
      }
      %j1 = arith.addi %j, %c1 : i32
      scf.yield %next, %j1 : i32, i32
    }
    %scaled = arith.muli %r#1, %scale : i32
    buffer.store %scaled, %steps[%i] : memref<?xi32>
    // Sum of 0..i with a float loop-carried value and an i32 induction variable.
    %lo = arith.constant 0 : i32
    %zero = arith.constant 0.0 : f32
    %sum = scf.for %k = %lo to %start step %c1 iter_args(%acc = %zero) -> (f32) : i32 {
      %kf = arith.sitofp %k : i32 to f32
      %acc1 = arith.addf %acc, %kf : f32
      scf.yield %acc1 : f32
    }
    %res = arith.addf %sum, %offset : f32
    buffer.store %res, %out[%i] : memref<?xf32>
  }
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    let steps = f.alloc(ElementType::I32, &[20]);
    let out = f.alloc(ElementType::F32, &[20]);
    let args =
        [Buffer(steps), Arg(Scalar::Int(10), ElementType::I32), Arg(Scalar::Float(0.5), ElementType::F32), Buffer(out)];
    f.run("collatz", [20, 1, 1], &args);
    let collatz = |mut x: i32| {
        let mut k = 0;
        while x != 1 {
            x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
            k += 1;
        }
        k
    };
    assert_eq!(f.download_i32(steps), (1..=20).map(|x| collatz(x) * 10).collect::<Vec<_>>());
    assert_eq!(f.download_f32(out), (0..20).map(|i| (i * (i + 1) / 2) as f32 + 0.5).collect::<Vec<_>>());
}

#[test]
fn arithmetic_errors_and_bad_arguments() {
    let text = r#"
kernel.func @divide(%data: memref<8xi32>, %d: i32) workgroup(8) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<8xi32>
  %q = arith.divsi %v, %d : i32
  buffer.store %q, %data[%i] : memref<8xi32>
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    let data = f.upload_i32(&[8], &[8; 8]);
    f.run("divide", [8, 1, 1], &[Buffer(data), Arg(Scalar::Int(2), ElementType::I32)]);
    assert_eq!(f.download_i32(data), vec![4; 8]);
    let error = f.dispatch("divide", [8, 1, 1], &[Buffer(data), Arg(Scalar::Int(0), ElementType::I32)]).unwrap_err();
    assert!(matches!(error, RuntimeError::Arithmetic { .. }));
    assert_eq!(error.to_string(), "integer division by zero ('arith.divsi') in kernel 'divide', work item (0, 0, 0)");
    // Arguments are checked against the kernel's signature before a backend sees them (the
    // executor does it: dispatch_arguments.rs); the backend only decodes them.
    let kernel = f.kernel_op("divide");
    let signature = KernelSignature::of(&f.ctx, kernel).unwrap();
    let eight = BufferLayout { element: ElementType::I32, shape: vec![8] };
    let nine = BufferLayout { element: ElementType::I32, shape: vec![9] };
    let check = |arguments: &[Argument<'_>]| signature.check(arguments.iter().copied()).unwrap_err().to_string();
    let message = check(&[Argument::Buffer(&eight)]);
    assert!(message.contains("takes 2 argument(s), but the dispatch passes 1"), "{message}");
    let message = check(&[Argument::Buffer(&eight), Argument::Scalar(ElementType::I64)]);
    assert_eq!(message, "argument '#1 (%d)': kernel 'divide' expects i32, got i64");
    let message = check(&[Argument::Buffer(&nine), Argument::Scalar(ElementType::I32)]);
    assert!(message.contains("expects a buffer of type memref<8xi32>, got memref<9xi32>"), "{message}");
    let message = check(&[Argument::Scalar(ElementType::I32), Argument::Scalar(ElementType::I32)]);
    assert!(message.contains("expects a buffer, got a scalar"), "{message}");
    assert!(signature.check([Argument::Buffer(&eight), Argument::Scalar(ElementType::I32)]).is_ok());
    // Arguments that do not decode reach the backend only past the check: an error, not a panic.
    for arguments in
        [&[Buffer(data)][..], &[Arg(Scalar::Int(1), ElementType::I32), Arg(Scalar::Int(1), ElementType::I32)]]
    {
        let message = f.dispatch("divide", [8, 1, 1], arguments).unwrap_err().to_string();
        assert!(message.contains("the arguments of kernel 'divide' do not fit its parameters"), "{message}");
    }
}

#[test]
fn compile_errors() {
    let mut ctx = hat_dialects::context();
    let text = r#"
compute.func @host(%b: memref<4xi32>) {
  compute.return
}
kernel.func @k(%b: memref<4xf16>) {
  kernel.return
}
"#;
    let module = parse_source(&mut ctx, "bad.hat", text).unwrap();
    let ops = ctx.body_ops(module);
    let verified = hat_ir::verify_module(&ctx, module).unwrap();
    let mut backend = CpuBackend::new();
    let message = backend.compile_kernel(verified.nested(ops[0]).unwrap()).unwrap_err().to_string();
    assert!(message.contains("only a 'kernel.func'"), "{message}");
    let message = backend.compile_kernel(verified.nested(ops[1]).unwrap()).unwrap_err().to_string();
    assert!(message.contains("buffers of type 'memref<4xf16>' are not supported (in kernel 'k')"), "{message}");
}

const LIFE: &str = r#"
kernel.func @life(%src: memref<?x?xi32>, %dst: memref<?x?xi32>) workgroup(16, 16) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %h = buffer.dim %src, 0 : memref<?x?xi32>
  %w = buffer.dim %src, 1 : memref<?x?xi32>
  %inx = arith.cmpi ult, %x, %w : index
  %iny = arith.cmpi ult, %y, %h : index
  %in = arith.andi %inx, %iny : i1
  scf.if %in {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %zero = arith.constant 0 : i32
    %xl = arith.addi %x, %w : index
    %xm = arith.subi %xl, %c1 : index
    %yl = arith.addi %y, %h : index
    %ym = arith.subi %yl, %c1 : index
    %count = scf.for %dy = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (i32) {
      %yy0 = arith.addi %ym, %dy : index
      %yy = arith.remui %yy0, %h : index
      %row = scf.for %dx = %c0 to %c3 step %c1 iter_args(%acc2 = %acc) -> (i32) {
        %xx0 = arith.addi %xm, %dx : index
        %xx = arith.remui %xx0, %w : index
        %v = buffer.load %src[%yy, %xx] : memref<?x?xi32>
        %a = arith.addi %acc2, %v : i32
        scf.yield %a : i32
      }
      scf.yield %row : i32
    }
    %self = buffer.load %src[%y, %x] : memref<?x?xi32>
    %n = arith.subi %count, %self : i32
    %three = arith.constant 3 : i32
    %two = arith.constant 2 : i32
    %is3 = arith.cmpi eq, %n, %three : i32
    %is2 = arith.cmpi eq, %n, %two : i32
    %alive = arith.cmpi ne, %self, %zero : i32
    %stay = arith.andi %is2, %alive : i1
    %live = arith.ori %is3, %stay : i1
    %r = arith.extui %live : i1 to i32
    buffer.store %r, %dst[%y, %x] : memref<?x?xi32>
  }
  kernel.return
}
"#;

fn life_reference(grid: &[i32], w: usize, h: usize) -> Vec<i32> {
    let mut out = vec![0; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut n = 0;
            for dy in [h - 1, 0, 1] {
                for dx in [w - 1, 0, 1] {
                    if dx != 0 || dy != 0 {
                        n += grid[((y + dy) % h) * w + (x + dx) % w];
                    }
                }
            }
            let alive = grid[y * w + x] != 0;
            out[y * w + x] = (n == 3 || (n == 2 && alive)) as i32;
        }
    }
    out
}

#[test]
fn game_of_life() {
    let (w, h) = (256usize, 256usize);
    let mut state = 12345u64;
    let grid: Vec<i32> = (0..w * h)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) % 3 < 1) as i32
        })
        .collect();
    let mut f = Fixture::new(LIFE);
    if std::env::var_os("HAT_CPU_SEQUENTIAL").is_some() {
        f.backend.set_parallel(false);
    }
    let a = f.upload_i32(&[h, w], &grid);
    let b = f.alloc(ElementType::I32, &[h, w]);
    let start = std::time::Instant::now();
    f.run("life", [w as u64, h as u64, 1], &[Buffer(a), Buffer(b)]);
    let elapsed = start.elapsed();
    let expected = life_reference(&grid, w, h);
    assert_eq!(f.download_i32(b), expected);
    f.run("life", [w as u64, h as u64, 1], &[Buffer(b), Buffer(a)]);
    assert_eq!(f.download_i32(a), life_reference(&expected, w, h));
    eprintln!("one 256x256 Life step on the CPU backend: {elapsed:?}");
}

#[test]
fn runaway_recursion_and_bad_steps_are_errors() {
    let text = r#"
kernel.helper @forever(%x: i32) -> i32 {
  %y = kernel.call @forever(%x) : (i32) -> i32
  kernel.return %y : i32
}

kernel.func @recurse(%b: memref<1xi32>) workgroup(1) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 1 : i32
  %r = kernel.call @forever(%v) : (i32) -> i32
  buffer.store %r, %b[%c0] : memref<1xi32>
  kernel.return
}

kernel.func @steps(%b: memref<1xi32>, %step: index, %upper: index) workgroup(1) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %n = scf.for %i = %c0 to %upper step %step iter_args(%acc = %zero) -> (i32) {
    %a = arith.addi %acc, %one : i32
    scf.yield %a : i32
  }
  buffer.store %n, %b[%c0] : memref<1xi32>
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    let b = f.alloc(ElementType::I32, &[1]);
    let message = f.dispatch("recurse", [1, 1, 1], &[Buffer(b)]).unwrap_err().to_string();
    assert!(message.contains("helper calls nest deeper than 1024"), "{message}");
    assert!(message.contains("in kernel 'recurse', work item (0, 0, 0)"), "{message}");
    f.run("steps", [1, 1, 1], &[Buffer(b), index(3), index(10)]);
    assert_eq!(f.download_i32(b), vec![4]);
    // A zero-trip loop does not look at its step.
    f.run("steps", [1, 1, 1], &[Buffer(b), index(0), index(0)]);
    assert_eq!(f.download_i32(b), vec![0]);
    let message = f.dispatch("steps", [1, 1, 1], &[Buffer(b), index(0), index(10)]).unwrap_err().to_string();
    assert!(message.contains("'scf.for' step must be positive, got 0 in kernel 'steps'"), "{message}");
    // The loop ends where the induction variable would overflow: 0, MAX/2, MAX-1, then stop.
    f.run("steps", [1, 1, 1], &[Buffer(b), index(i64::MAX / 2), index(i64::MAX)]);
    assert_eq!(f.download_i32(b), vec![3]);
}

#[test]
fn element_types_and_selected_buffers() {
    let text = r#"
kernel.helper @sync_and_read(%tile: memref<8xi32>, %i: index) -> i32 {
  kernel.barrier
  %v = buffer.load %tile[%i] : memref<8xi32>
  kernel.return %v : i32
}

kernel.func @types(%a: memref<4xi8>, %b: memref<4xf64>, %c: memref<4xi1>, %d: memref<4xindex>) workgroup(4) {
  %i = kernel.global_id x
  %va = buffer.load %a[%i] : memref<4xi8>
  %c100 = arith.constant 100 : i8
  %sa = arith.addi %va, %c100 : i8
  buffer.store %sa, %a[%i] : memref<4xi8>
  %vb = buffer.load %b[%i] : memref<4xf64>
  %tenth = arith.constant 0.1 : f64
  %sb = arith.mulf %vb, %tenth : f64
  buffer.store %sb, %b[%i] : memref<4xf64>
  %c1 = arith.constant 1 : index
  %bit = arith.andi %i, %c1 : index
  %odd = arith.index_cast %bit : index to i1
  buffer.store %odd, %c[%i] : memref<4xi1>
  %big = arith.constant 4294967296 : index
  %sd = arith.muli %i, %big : index
  buffer.store %sd, %d[%i] : memref<4xindex>
  kernel.return
}

kernel.func @ping_pong(%a: memref<8xi32>, %b: memref<8xi32>, %flip: i1) workgroup(8) {
  %tile = kernel.local_alloc : memref<8xi32>
  %l = kernel.local_id x
  %src = arith.select %flip, %b, %a : memref<8xi32>
  %dst = arith.select %flip, %a, %b : memref<8xi32>
  %v = buffer.load %src[%l] : memref<8xi32>
  buffer.store %v, %tile[%l] : memref<8xi32>
  %c7 = arith.constant 7 : index
  %r = arith.subi %c7, %l : index
  %w = kernel.call @sync_and_read(%tile, %r) : (memref<8xi32>, index) -> i32
  buffer.store %w, %dst[%l] : memref<8xi32>
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    let a = f.alloc(ElementType::I8, &[4]);
    f.backend.copy_to_device(a, 0, &[1, 27, 28, 200]).unwrap();
    let b = f.alloc(ElementType::F64, &[4]);
    let doubles: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    f.backend.copy_to_device(b, 0, &doubles).unwrap();
    let c = f.alloc(ElementType::I1, &[4]);
    let d = f.alloc(ElementType::Index, &[4]);
    f.run("types", [4, 1, 1], &[Buffer(a), Buffer(b), Buffer(c), Buffer(d)]);
    assert_eq!(f.bytes(a), vec![101, 127, 128, 44]);
    let doubles: Vec<f64> = f.bytes(b).chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(doubles, vec![0.1, 0.2, 0.30000000000000004, 0.4]);
    assert_eq!(f.bytes(c), vec![0, 1, 0, 1]);
    let longs: Vec<i64> = f.bytes(d).chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(longs, vec![0, 1 << 32, 2 << 32, 3 << 32]);

    let x = f.upload_i32(&[8], &[0, 1, 2, 3, 4, 5, 6, 7]);
    let y = f.alloc(ElementType::I32, &[8]);
    f.run("ping_pong", [8, 1, 1], &[Buffer(x), Buffer(y), Arg(Scalar::Int(0), ElementType::I1)]);
    assert_eq!(f.download_i32(y), vec![7, 6, 5, 4, 3, 2, 1, 0]);
    f.upload_i32(&[8], &[0; 8]);
    f.run("ping_pong", [8, 1, 1], &[Buffer(x), Buffer(y), Arg(Scalar::Int(1), ElementType::I1)]);
    assert_eq!(f.download_i32(x), vec![0, 1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn an_oversized_grid_is_refused_before_anything_runs() {
    let text = r#"
kernel.func @mark(%b: memref<1xi32>) workgroup(64) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  buffer.store %one, %b[%c0] : memref<1xi32>
  kernel.return
}
"#;
    let mut f = Fixture::new(text);
    let b = f.alloc(ElementType::I32, &[1]);
    let message = f.dispatch("mark", [1 << 20, 1 << 20, 1], &[Buffer(b)]).unwrap_err().to_string();
    assert_eq!(
        message,
        "cpu backend: the grid (1048576, 1048576, 1) of a dispatch of kernel 'mark' has 1099511627776 work items, \
         over the CPU backend's limit of 4294967296 work items per dispatch"
    );
    let message = f.dispatch("mark", [1 << 32, 1 << 32, 1 << 32], &[Buffer(b)]).unwrap_err().to_string();
    assert!(message.contains("the grid (4294967296, 4294967296, 4294967296)"), "{message}");
    assert!(message.contains("has more work items than fit in 64 bits"), "{message}");
    assert_eq!(f.download_i32(b), vec![POISON_I32], "no work item ran");
    f.run("mark", [DEFAULT_MAX_WORK_ITEMS, 0, 1], &[Buffer(b)]);
    assert_eq!(f.download_i32(b), vec![POISON_I32], "an empty grid runs nothing");
    f.run("mark", [1, 1, 1], &[Buffer(b)]);
    assert_eq!(f.download_i32(b), vec![1]);
}

#[test]
fn handles_of_freed_buffers_are_stale_even_when_the_slot_is_reused() {
    let mut f = Fixture::new("");
    let old = f.alloc(ElementType::I32, &[4]);
    f.backend.free(old).unwrap();
    let new = f.alloc(ElementType::I32, &[4]);
    assert_eq!(new.index(), old.index(), "the slot is reused");
    let error = f.backend.copy_to_device(old, 0, &[0; 4]).unwrap_err();
    assert!(matches!(error, RuntimeError::StaleHandle { what: "device buffer", .. }), "{error}");
    assert!(f.backend.free(old).is_err());
    assert_eq!(f.download_i32(new), vec![POISON_I32; 4], "the new buffer is untouched");
}

#[test]
fn the_asynchronous_contract_is_checked() {
    let mut f = Fixture::new("");
    let buffer = f.upload_i32(&[2], &[5, 6]);
    let read = f.backend.record_read(buffer, 0, 8, &[]).unwrap();
    let mut bytes = [0u8; 8];
    let error = f.backend.take_read(read, &mut bytes).unwrap_err();
    assert!(error.to_string().contains("before its batch"), "{error}");
    let future = Command::new(read.sequence() + 5);
    assert!(f.backend.record_write(buffer, 0, &[1], &[future]).is_err(), "a dependency on the future");
    assert!(f.backend.wait(Fence::new(99)).is_err(), "a fence of no submitted batch");
    let fence = f.backend.submit().unwrap();
    f.backend.wait(fence).unwrap();
    f.backend.take_read(read, &mut bytes).unwrap();
    assert_eq!(bytes, [5, 0, 0, 0, 6, 0, 0, 0]);
    assert!(f.backend.take_read(read, &mut bytes).is_err(), "a read is taken once");
}

#[test]
fn waits_give_each_dispatch_its_time() {
    let mut f = Fixture::new(
        "kernel.func @one(%b: memref<4xi32>) workgroup(4) {
  %i = kernel.global_id x
  %c = arith.constant 1 : i32
  buffer.store %c, %b[%i] : memref<4xi32>
  kernel.return
}",
    );
    let buffer = f.alloc(ElementType::I32, &[4]);
    let kernel = f.kernel("one");
    let first = f.backend.record_dispatch(kernel, [4, 1, 1], &[Buffer(buffer)], &[]).unwrap();
    let second = f.backend.record_dispatch(kernel, [4, 1, 1], &[Buffer(buffer)], &[first]).unwrap();
    let fence = f.backend.submit().unwrap();
    let times: Vec<Command> = f.backend.wait(fence).unwrap().into_iter().map(|t| t.command).collect();
    assert_eq!(times, [first, second]);
    assert!(f.backend.synchronize().unwrap().is_empty(), "each time is given once");
}
