//! Which work items exist: exactly those whose global id is below the grid (docs/lowering.md,
//! "Which work items exist"). Kernels whose last workgroup is partial run on the CPU reference
//! backend, and the kernel-effects analysis and the SPIR-V lowering are checked against it:
//!
//! - `@mark` (no barrier) stores unguarded at its id: over a grid of 6 in workgroups of 4 the
//!   work items 6 and 7 do not exist, so elements 6 and 7 keep their poison, the analysis says
//!   elements 0..6 and not every element, and the lowering returns at once past the grid;
//! - `@sums` (a barrier) loads unguarded at its id from a buffer of 6 into workgroup memory, waits,
//!   and sums its workgroup's tile: the padding items 6 and 7 run (the barrier needs them), their
//!   load gives zero instead of failing out of bounds, they write the tile (so the partial
//!   workgroup's sum is 5 + 6), and the store that only padding item 7 would make is not made;
//!   the lowering guards every access to a storage buffer by the grid check.

use hat_ir::{parse_source, verify_module, Context, Op};
use hat_passes::transfers::kernel_effects::{Dispatch, KernelEffects};
use hat_runtime::{Backend, BufferLayout, CpuBackend, DeviceBuffer, ElementType, KernelArg};

const POISON: i32 = 0xDEAD_BEEFu32 as i32;

const PROGRAM: &str = r#"
kernel.func @mark(%out: memref<8xi32>) workgroup(4) {
  %i = kernel.global_id x
  %one = arith.constant 1 : i32
  buffer.store %one, %out[%i] : memref<8xi32>
  kernel.return
}

kernel.func @sums(%data: memref<?xi32>, %first: memref<2xi32>, %last: memref<2xi32>) workgroup(4) {
  %tile = kernel.local_alloc : memref<4xi32>
  %i = kernel.global_id x
  %l = kernel.local_id x
  %g = kernel.group_id x
  %v = buffer.load %data[%i] : memref<?xi32>
  buffer.store %v, %tile[%l] : memref<4xi32>
  kernel.barrier
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  %s = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (i32) {
    %t = buffer.load %tile[%k] : memref<4xi32>
    %a = arith.addi %acc, %t : i32
    scf.yield %a : i32
  }
  %is_first = arith.cmpi eq, %l, %c0 : index
  scf.if %is_first {
    buffer.store %s, %first[%g] : memref<2xi32>
  }
  %is_last = arith.cmpi eq, %l, %c3 : index
  scf.if %is_last {
    buffer.store %s, %last[%g] : memref<2xi32>
  }
  kernel.return
}
"#;

fn kernel(ctx: &Context, module: Op, name: &str) -> Op {
    ctx.walk(module).into_iter().find(|&op| hat_ir::verifier::symbol_name(ctx, op) == Some(name)).expect("kernel")
}

fn bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Runs kernel `name` over `grid` on the CPU backend with buffers holding `inputs` (`None`:
/// fresh, poisoned), and gives every buffer afterwards.
fn run(name: &str, grid: [u64; 3], inputs: &[(usize, Option<Vec<i32>>)]) -> Vec<Vec<i32>> {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "out_of_grid.hat", PROGRAM).expect("parses");
    let verified = verify_module(&ctx, module).expect("verifies");
    let mut backend = CpuBackend::new();
    backend.set_parallel(false);
    let buffers: Vec<DeviceBuffer> = inputs
        .iter()
        .map(|(len, values)| {
            let layout = BufferLayout { element: ElementType::I32, shape: vec![*len] };
            let buffer = backend.allocate(&layout).expect("allocates");
            if let Some(values) = values {
                backend.copy_to_device(buffer, 0, &bytes(values)).expect("copies");
            }
            buffer
        })
        .collect();
    let handle =
        backend.compile_kernel(verified.nested(kernel(&ctx, module, name)).expect("nested")).expect("compiles");
    let args: Vec<KernelArg> = buffers.iter().map(|&b| KernelArg::Buffer(b)).collect();
    backend.dispatch(handle, grid, &args).expect("the dispatch succeeds");
    buffers
        .iter()
        .zip(inputs)
        .map(|(&buffer, (len, _))| {
            let mut out = vec![0u8; len * 4];
            backend.copy_from_device(buffer, 0, &mut out).expect("copies back");
            out.chunks(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
        })
        .collect()
}

fn effects(name: &str) -> KernelEffects {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "out_of_grid.hat", PROGRAM).expect("parses");
    KernelEffects::of(&ctx, kernel(&ctx, module, name))
}

/// The disassembly of the entry function of `name` (one trimmed instruction a line), the id of
/// its grid check, and whether the kernel has a barrier; `None` where this build has no
/// SPIRV-Tools to disassemble with (an error when `HAT_REQUIRE_VULKAN=1`, as in CI).
fn entry_function(name: &str) -> Option<(Vec<String>, String, bool)> {
    if hat_lowering::spirv_tools_version().is_none() {
        assert_ne!(std::env::var("HAT_REQUIRE_VULKAN").as_deref(), Ok("1"), "hat was built without SPIRV-Tools");
        eprintln!("skipped: the disassembly (hat was built without SPIRV-Tools)");
        return None;
    }
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "out_of_grid.hat", PROGRAM).expect("parses");
    let verified = verify_module(&ctx, module).expect("verifies");
    let spirv = hat_lowering::lower_module(&ctx, verified, &Default::default()).expect("lowers");
    let has_barrier = spirv.entry_point(name).expect("entry point").has_barrier;
    let text = hat_lowering::disassemble(&spirv.words).expect("disassembles");
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .skip_while(|line| !line.starts_with(&format!("%{name} = OpFunction ")))
        .take_while(|line| *line != "OpFunctionEnd")
        .map(str::to_string)
        .collect();
    // The grid check: x < grid.x, and y, and z (two `OpLogicalAnd`s), or'ed with the
    // whole-grid specialisation constant (which only a dispatch of a whole grid sets).
    let in_grid = lines
        .iter()
        .find(|line| line.contains("= OpLogicalOr %bool %grid_is_whole_workgroups"))
        .and_then(|line| line.split_whitespace().next())
        .expect("the grid check")
        .to_string();
    Some((lines, in_grid, has_barrier))
}

/// The label of the block holding each access to a storage buffer, and whether the block was
/// entered by a branch on `in_grid` (`OpBranchConditional in_grid label ...`).
fn storage_accesses_guarded(lines: &[String], in_grid: &str) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if !line.contains("OpAccessChain %_ptr_StorageBuffer") {
            continue;
        }
        let label = lines[..at].iter().rev().find(|l| l.ends_with("= OpLabel")).expect("in a block");
        let label = label.split_whitespace().next().expect("an id").to_string();
        let guarded = lines.iter().any(|l| l.starts_with(&format!("OpBranchConditional {in_grid} {label} ")));
        found.push((label, guarded));
    }
    found
}

#[test]
fn without_a_barrier_work_items_past_the_grid_do_not_run() {
    let out = run("mark", [6, 1, 1], &[(8, None)]).remove(0);
    assert_eq!(out, [1, 1, 1, 1, 1, 1, POISON, POISON]);

    let effects = effects("mark");
    let dispatch = Dispatch::new(&[Some(6)]).with_shape(0, &[Some(8)]);
    assert_eq!(effects.written_elements_in(0, &dispatch), Some(0..6));
    assert!(!effects.writes_every_element_in(0, &dispatch), "only work items past the grid would write 6 and 7");
    assert!(effects.writes_every_element_in(0, &Dispatch::new(&[Some(8)]).with_shape(0, &[Some(8)])));

    // The entry branches on the grid check before anything else: past the grid, it returns.
    let Some((lines, in_grid, has_barrier)) = entry_function("mark") else { return };
    assert!(!has_barrier);
    let first_branch = lines.iter().position(|l| l.starts_with("OpBranchConditional")).expect("a branch");
    assert!(lines[first_branch].starts_with(&format!("OpBranchConditional {in_grid} ")), "{lines:#?}");
    assert!(!lines[..first_branch].iter().any(|l| l.contains("StorageBuffer")), "{lines:#?}");
}

#[test]
fn with_a_barrier_work_items_past_the_grid_run_but_touch_no_buffer() {
    let data = vec![1, 2, 3, 4, 5, 6];
    let outputs = run("sums", [6, 1, 1], &[(6, Some(data)), (2, None), (2, None)]);
    assert_eq!(outputs[1], [10, 11], "the padding items wrote zeros to the tile");
    assert_eq!(outputs[2], [10, POISON], "local id 3 of the second workgroup is a padding item");

    let effects = effects("sums");
    let dispatch = Dispatch::new(&[Some(6)]).with_shape(0, &[Some(6)]);
    assert_eq!(effects.read_elements_in(0, &dispatch), Some(0..6));
    assert_eq!(effects.written_elements_in(2, &dispatch), Some(0..2));
    assert!(!effects.writes_every_element_in(2, &dispatch), "only a padding item would write last[1]");

    let Some((lines, in_grid, has_barrier)) = entry_function("sums") else { return };
    assert!(has_barrier);
    let accesses = storage_accesses_guarded(&lines, &in_grid);
    assert_eq!(accesses.len(), 3, "the load of %data, the stores to %first and %last: {lines:#?}");
    assert!(accesses.iter().all(|(_, guarded)| *guarded), "{accesses:?}\n{lines:#?}");
}
