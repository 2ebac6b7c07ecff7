//! Tests of the kernel-effects analysis on kernels written as text: accesses through helpers and
//! aliases, and the soundness edges of the full-write proof and the element ranges.

use super::{Dispatch, KernelEffects};
use hat_ir::{parse_source, Context, Op};

/// The effects of kernel `@name` in `text`.
fn effects_in(text: &str, name: &str) -> KernelEffects {
    let mut ctx: Context = hat_dialects::context();
    let module = match parse_source(&mut ctx, "test.hat", text) {
        Ok(module) => module,
        Err(error) => panic!("{}", hat_ir::diagnostics::render(&ctx.sources, &[error.into()])),
    };
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{}", hat_ir::diagnostics::render(&ctx.sources, &errors));
    let kernel = find(&ctx, module, name);
    KernelEffects::of(&ctx, kernel)
}

fn find(ctx: &Context, module: Op, name: &str) -> Op {
    ctx.walk(module)
        .into_iter()
        .find(|&op| hat_ir::verifier::symbol_name(ctx, op) == Some(name))
        .unwrap_or_else(|| panic!("no @{name}"))
}

/// The effects of the only kernel `@k` of a module made of `helpers` and a kernel with
/// `signature`, `workgroup` and `body`.
fn kernel(helpers: &str, signature: &str, workgroup: &str, body: &str) -> KernelEffects {
    effects_in(&format!("{helpers}\nkernel.func @k({signature}) {workgroup} {{\n{body}\n  kernel.return\n}}\n"), "k")
}

fn grid(sizes: &[u64]) -> Vec<Option<u64>> {
    sizes.iter().map(|&s| Some(s)).collect()
}

/// `(reads, writes, atomic)` of parameter `p`.
fn access(effects: &KernelEffects, p: usize) -> (bool, bool, bool) {
    let e = &effects.params[p];
    (e.reads, e.writes, e.atomic)
}

const GUARDED_ID: &str = "  %i = kernel.global_id x
  %n = buffer.dim %b, 0 : memref<64xi32>
  %in = arith.cmpi ult, %i, %n : index";

#[test]
fn examples_squares_fill_and_masked_fill() {
    let squares = effects_in(include_str!("../../../../examples/01-squares.hat"), "square");
    assert_eq!(access(&squares, 0), (true, true, false));
    assert!(squares.writes_every_element(0, &grid(&[64]), &[Some(64)]));
    assert!(!squares.writes_every_element(0, &grid(&[32]), &[Some(64)]), "a partial grid");
    assert!(!squares.writes_every_element(0, &[None], &[Some(64)]), "an unknown grid");
    // Grid 32 in one workgroup of 64: ids 32..63 would pass the guard (i < 64), but only the
    // ids below the grid exist.
    assert_eq!(squares.read_elements(0, &grid(&[32]), &[Some(64)]), Some(0..32));

    let fill = effects_in(include_str!("../../../../examples/02-fill.hat"), "fill_ramp");
    assert_eq!(access(&fill, 0), (false, true, false));
    assert!(!fill.params[1].is_buffer && !fill.params[1].reads);
    assert!(fill.writes_every_element(0, &grid(&[64]), &[Some(64)]));
    assert!(fill.writes_every_element(0, &grid(&[100]), &[Some(64)]), "the guard keeps extra ids out");
    assert_eq!(fill.read_elements(0, &grid(&[64]), &[Some(64)]), Some(0..0));
    assert_eq!(fill.written_elements(0, &grid(&[64]), &[Some(64)]), Some(0..64));

    let masked = effects_in(include_str!("../../../../examples/02b-fill-masked.hat"), "fill_masked");
    assert_eq!(access(&masked, 0), (false, true, false));
    assert_eq!(access(&masked, 1), (true, false, false));
    assert!(!masked.writes_every_element(0, &grid(&[64]), &[Some(64)]), "a data-dependent guard");
    assert_eq!(masked.written_elements(0, &grid(&[64]), &[Some(64)]), Some(0..64));
    assert_eq!(masked.read_elements(1, &grid(&[64]), &[Some(64)]), Some(0..64));
}

#[test]
fn example_life_in_two_dimensions() {
    let life = effects_in(include_str!("../../../../examples/06-life.hat"), "life_step");
    let shape = [Some(16), Some(16)];
    assert_eq!(access(&life, 0), (true, false, false));
    assert_eq!(access(&life, 1), (false, true, false));
    assert!(life.writes_every_element(1, &grid(&[16, 16]), &shape));
    assert!(!life.writes_every_element(1, &grid(&[16, 8]), &shape), "rows 8..15 are not written");
    assert!(!life.writes_every_element(1, &grid(&[16]), &shape), "one row only");
    assert_eq!(life.read_elements(0, &grid(&[16, 16]), &shape), Some(0..256));
    assert_eq!(life.written_elements(1, &grid(&[16, 16]), &shape), Some(0..256));
    // Workgroups of 8 x 8: a 4 x 4 grid runs ids 0..3 in each dimension only (the other work
    // items of its one workgroup do not exist).
    assert_eq!(life.written_elements(1, &grid(&[4, 4]), &shape), Some(0..(3 * 16 + 4)));
}

#[test]
fn pooling_reads_twice_the_grid() {
    let pooling = effects_in(include_str!("../../../../examples/12-pooling.hat"), "pool64");
    let dispatch =
        Dispatch::new(&grid(&[32, 32])).with_shape(0, &[Some(64), Some(64)]).with_shape(1, &[Some(32), Some(32)]);
    assert_eq!(pooling.read_elements_in(0, &dispatch), Some(0..4096));
    assert!(pooling.writes_every_element_in(1, &dispatch));
    // Half the grid: rows 0..15 of dst, so rows 0..31 of src.
    let half = Dispatch::new(&grid(&[32, 16])).with_shape(0, &[Some(64), Some(64)]);
    assert_eq!(pooling.read_elements_in(0, &half), Some(0..(31 * 64 + 64)));
    assert!(!pooling.writes_every_element_in(1, &half));
}

#[test]
fn guarded_partial_writes_and_strides_are_not_full() {
    let signature = "%b: memref<64xi32>, %v: i32";
    let c32 = "  %c32 = arith.constant 32 : index\n  %half = arith.cmpi ult, %i, %c32 : index";
    let partial = kernel(
        "",
        signature,
        "workgroup(64)",
        &format!("{GUARDED_ID}\n{c32}\n  scf.if %half {{\n    buffer.store %v, %b[%i] : memref<64xi32>\n  }}"),
    );
    assert!(!partial.writes_every_element(0, &grid(&[64]), &[Some(64)]));
    assert_eq!(partial.written_elements(0, &grid(&[64]), &[Some(64)]), Some(0..32));

    let stride = kernel(
        "",
        signature,
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %c2 = arith.constant 2 : index\n  %j = arith.muli %i, %c2 : index\n  %c64 = arith.constant 64 : index\n  %in = arith.cmpi ult, %j, %c64 : index\n  scf.if %in {\n    buffer.store %v, %b[%j] : memref<64xi32>\n  }",
    );
    assert!(!stride.writes_every_element(0, &grid(&[64]), &[Some(64)]), "odd elements are not written");
    assert_eq!(stride.written_elements(0, &grid(&[64]), &[Some(64)]), Some(0..63));

    let offset = kernel(
        "",
        signature,
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %c1 = arith.constant 1 : index\n  %c63 = arith.constant 63 : index\n  %j = arith.addi %i, %c1 : index\n  %clamped = arith.minui %j, %c63 : index\n  buffer.store %v, %b[%clamped] : memref<64xi32>",
    );
    assert!(!offset.writes_every_element(0, &grid(&[64]), &[Some(64)]), "element 0 is not written");
    assert_eq!(offset.written_elements(0, &grid(&[64]), &[Some(64)]), Some(1..64));
}

#[test]
fn loops_cover_only_with_no_gap() {
    let body = |trips: u32| {
        format!(
            "  %i = kernel.global_id x\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c4 = arith.constant 4 : index\n  %trips = arith.constant {trips} : index\n  %base = arith.muli %i, %c4 : index\n  scf.for %k = %c0 to %trips step %c1 {{\n    %j = arith.addi %base, %k : index\n    buffer.store %v, %b[%j] : memref<64xi32>\n  }}"
        )
    };
    let whole = kernel("", "%b: memref<64xi32>, %v: i32", "workgroup(16)", &body(4));
    assert!(whole.writes_every_element(0, &grid(&[16]), &[Some(64)]));
    assert_eq!(whole.written_elements(0, &grid(&[16]), &[Some(64)]), Some(0..64));
    let half = kernel("", "%b: memref<64xi32>, %v: i32", "workgroup(16)", &body(2));
    assert!(!half.writes_every_element(0, &grid(&[16]), &[Some(64)]), "elements 4k+2, 4k+3 are not written");
    assert_eq!(half.written_elements(0, &grid(&[16]), &[Some(64)]), Some(0..62));
}

#[test]
fn grids_larger_than_the_buffer() {
    let unguarded = kernel(
        "",
        "%b: memref<64xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  buffer.store %v, %b[%i] : memref<64xi32>",
    );
    assert!(unguarded.writes_every_element(0, &grid(&[64]), &[Some(64)]));
    // Ids 64..99 would store out of bounds: the dispatch fails, and the analysis says no.
    assert!(!unguarded.writes_every_element(0, &grid(&[100]), &[Some(64)]));
    assert_eq!(unguarded.written_elements(0, &grid(&[100]), &[Some(64)]), Some(0..64));
    let guarded = kernel(
        "",
        "%b: memref<64xi32>, %v: i32",
        "workgroup(64)",
        &format!("{GUARDED_ID}\n  scf.if %in {{\n    buffer.store %v, %b[%i] : memref<64xi32>\n  }}"),
    );
    assert!(guarded.writes_every_element(0, &grid(&[100]), &[Some(64)]));
    assert!(guarded.writes_every_element(0, &grid(&[64, 3]), &[Some(64)]), "a 2-D grid over a 1-D buffer");
    assert!(!guarded.writes_every_element(0, &grid(&[64, 0]), &[Some(64)]), "no work item at all");
    assert_eq!(guarded.written_elements(0, &grid(&[0]), &[Some(64)]), Some(0..0));
}

/// The work items that exist are exactly those below the grid (docs/lowering.md): those of the
/// last, partial workgroup past the grid touch no buffer, so ranges end at the grid, and a store
/// pattern that only they would complete is not a full write.
#[test]
fn only_the_work_items_below_the_grid_exist() {
    let unguarded = |workgroup: &str, shape: &str, indices: &str| {
        kernel(
            "",
            &format!("%b: memref<{shape}xi32>, %v: i32"),
            workgroup,
            &format!("  %x = kernel.global_id x\n  %y = kernel.global_id y\n  buffer.store %v, %b[{indices}] : memref<{shape}xi32>"),
        )
    };
    // Grid 6 in workgroups of 4: ids 6 and 7 of the second workgroup would write the last two
    // elements, but do not exist.
    let row = unguarded("workgroup(4)", "8", "%x");
    assert!(!row.writes_every_element(0, &grid(&[6]), &[Some(8)]), "only padding items would complete it");
    assert_eq!(row.written_elements(0, &grid(&[6]), &[Some(8)]), Some(0..6));
    assert!(row.writes_every_element(0, &grid(&[8]), &[Some(8)]));
    assert!(row.writes_every_element(0, &grid(&[7, 1]), &[Some(7)]), "a buffer the grid covers exactly");
    // Without a workgroup size the bound is the grid just the same.
    let default = unguarded("", "8", "%x");
    assert_eq!(default.written_elements(0, &grid(&[6]), &[Some(8)]), Some(0..6));
    // Two dimensions, each partial: rows 0..2 and columns 0..4 of an 8 x 8 buffer.
    let tile = unguarded("workgroup(4, 4)", "8x8", "%y, %x");
    assert_eq!(tile.written_elements(0, &grid(&[5, 3]), &[Some(8), Some(8)]), Some(0..(2 * 8 + 5)));
    assert!(!tile.writes_every_element(0, &grid(&[8, 7]), &[Some(8), Some(8)]), "row 7 only by padding items");
    assert!(tile.writes_every_element(0, &grid(&[8, 8]), &[Some(8), Some(8)]));
}

#[test]
fn two_dimensional_mappings() {
    let store = |indices: &str, shape: &str| {
        kernel(
            "",
            &format!("%b: memref<{shape}xi32>, %v: i32"),
            "workgroup(8, 8)",
            &format!("  %x = kernel.global_id x\n  %y = kernel.global_id y\n  buffer.store %v, %b[{indices}] : memref<{shape}xi32>"),
        )
    };
    // Transposed: x runs down the rows.
    let transposed = store("%x, %y", "16x8");
    assert!(transposed.writes_every_element(0, &grid(&[16, 8]), &[Some(16), Some(8)]));
    assert!(!transposed.writes_every_element(0, &grid(&[8, 16]), &[Some(16), Some(8)]));
    // The same id twice: the diagonal.
    let diagonal = store("%x, %x", "8x8");
    assert!(!diagonal.writes_every_element(0, &grid(&[8, 8]), &[Some(8), Some(8)]));
    assert_eq!(diagonal.written_elements(0, &grid(&[8, 8]), &[Some(8), Some(8)]), Some(0..64));
    // A grid smaller than the buffer.
    let rows = store("%y, %x", "16x16");
    assert!(!rows.writes_every_element(0, &grid(&[8, 8]), &[Some(16), Some(16)]));
    assert_eq!(rows.written_elements(0, &grid(&[8, 8]), &[Some(16), Some(16)]), Some(0..(7 * 16 + 8)));
}

#[test]
fn flat_ids_split_into_rows_and_columns() {
    let split = kernel(
        "kernel.helper @split(%i: index) -> (index, index) {
  %c8 = arith.constant 8 : index
  %q = arith.divui %i, %c8 : index
  %r = arith.remui %i, %c8 : index
  kernel.return %q, %r : index, index
}",
        "%m: memref<8x8xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %c64 = arith.constant 64 : index\n  %in = arith.cmpi ult, %i, %c64 : index\n  scf.if %in {\n    %row, %col = kernel.call @split(%i) : (index) -> (index, index)\n    buffer.store %v, %m[%row, %col] : memref<8x8xi32>\n  }",
    );
    assert!(split.writes_every_element(0, &grid(&[64]), &[Some(8), Some(8)]));
    assert!(!split.writes_every_element(0, &grid(&[32]), &[Some(8), Some(8)]));
    // The columns come from the buffer itself: dim(%m, 1), known at the dispatch.
    let dynamic = kernel(
        "",
        "%m: memref<?x?xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %rows = buffer.dim %m, 0 : memref<?x?xi32>\n  %cols = buffer.dim %m, 1 : memref<?x?xi32>\n  %row = arith.divui %i, %cols : index\n  %col = arith.remui %i, %cols : index\n  %in = arith.cmpi ult, %row, %rows : index\n  scf.if %in {\n    buffer.store %v, %m[%row, %col] : memref<?x?xi32>\n  }",
    );
    assert!(dynamic.writes_every_element(0, &grid(&[48]), &[Some(6), Some(8)]));
    assert!(!dynamic.writes_every_element(0, &grid(&[48]), &[Some(6), None]), "the columns are unknown");
    assert_eq!(dynamic.written_elements(0, &grid(&[64]), &[Some(6), Some(8)]), Some(0..48));
}

#[test]
fn local_and_group_ids_recombine() {
    let tiled = kernel(
        "",
        "%b: memref<256xi32>, %v: i32",
        "workgroup(64)",
        "  %l = kernel.local_id x\n  %g = kernel.group_id x\n  %s = kernel.local_size x\n  %base = arith.muli %g, %s : index\n  %i = arith.addi %base, %l : index\n  buffer.store %v, %b[%i] : memref<256xi32>",
    );
    assert!(tiled.writes_every_element(0, &grid(&[256]), &[Some(256)]));
    // Only the local id: each workgroup writes the same 64 elements.
    let local = kernel(
        "",
        "%b: memref<256xi32>, %v: i32",
        "workgroup(64)",
        "  %l = kernel.local_id x\n  buffer.store %v, %b[%l] : memref<256xi32>",
    );
    assert!(!local.writes_every_element(0, &grid(&[256]), &[Some(256)]));
    assert_eq!(local.written_elements(0, &grid(&[256]), &[Some(256)]), Some(0..64));
}

#[test]
fn scalar_bounds_are_known_only_at_the_dispatch() {
    let bounded = kernel(
        "",
        "%b: memref<64xi32>, %n: index, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %in = arith.cmpi slt, %i, %n : index\n  scf.if %in {\n    buffer.store %v, %b[%i] : memref<64xi32>\n  }",
    );
    assert!(!bounded.writes_every_element(0, &grid(&[64]), &[Some(64)]));
    let dispatch = |n: i64| Dispatch::new(&grid(&[64])).with_shape(0, &[Some(64)]).with_scalar(1, n);
    assert!(bounded.writes_every_element_in(0, &dispatch(64)));
    assert!(bounded.writes_every_element_in(0, &dispatch(1000)));
    assert!(!bounded.writes_every_element_in(0, &dispatch(63)));
    assert_eq!(bounded.written_elements_in(0, &dispatch(10)), Some(0..10));
}

#[test]
fn helpers_map_buffers_and_indices_through_calls() {
    let helpers = "kernel.helper @put(%dst: memref<64xi32>, %at: index, %v: i32) {
  buffer.store %v, %dst[%at] : memref<64xi32>
  kernel.return
}
kernel.helper @get(%src: memref<64xi32>, %at: index) -> i32 {
  %v = buffer.load %src[%at] : memref<64xi32>
  kernel.return %v : i32
}
kernel.helper @copy(%src: memref<64xi32>, %dst: memref<64xi32>, %at: index) {
  %v = kernel.call @get(%src, %at) : (memref<64xi32>, index) -> i32
  kernel.call @put(%dst, %at, %v) : (memref<64xi32>, index, i32) -> ()
  kernel.return
}";
    let effects = kernel(
        helpers,
        "%a: memref<64xi32>, %b: memref<64xi32>, %unused: memref<64xi32>",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  kernel.call @copy(%a, %b, %i) : (memref<64xi32>, memref<64xi32>, index) -> ()",
    );
    assert_eq!(access(&effects, 0), (true, false, false));
    assert_eq!(access(&effects, 1), (false, true, false));
    assert_eq!(access(&effects, 2), (false, false, false));
    assert!(effects.writes_every_element(1, &grid(&[64]), &[Some(64)]), "an unconditional store in a helper");
    assert_eq!(effects.read_elements(0, &grid(&[64]), &[Some(64)]), Some(0..64));
    // A guard inside the helper, on its own parameter.
    let guarded_helper = "kernel.helper @put_below(%dst: memref<64xi32>, %at: index, %limit: index, %v: i32) {
  %in = arith.cmpi ult, %at, %limit : index
  scf.if %in {
    buffer.store %v, %dst[%at] : memref<64xi32>
  }
  kernel.return
}";
    let call = |limit: i64| {
        kernel(
            guarded_helper,
            "%b: memref<64xi32>, %v: i32",
            "workgroup(64)",
            &format!("  %i = kernel.global_id x\n  %limit = arith.constant {limit} : index\n  kernel.call @put_below(%b, %i, %limit, %v) : (memref<64xi32>, index, index, i32) -> ()"),
        )
    };
    assert!(call(64).writes_every_element(0, &grid(&[64]), &[Some(64)]));
    assert!(!call(48).writes_every_element(0, &grid(&[64]), &[Some(64)]));
    assert_eq!(call(48).written_elements(0, &grid(&[64]), &[Some(64)]), Some(0..48));
}

#[test]
fn recursion_terminates_and_answers_conservatively() {
    let helpers = "kernel.helper @walk(%b: memref<64xi32>, %c: memref<64xi32>, %i: index) {
  %v = buffer.load %b[%i] : memref<64xi32>
  %c0 = arith.constant 0 : i32
  %more = arith.cmpi ne, %v, %c0 : i32
  scf.if %more {
    kernel.call @walk(%c, %b, %i) : (memref<64xi32>, memref<64xi32>, index) -> ()
  }
  kernel.return
}";
    let effects = kernel(
        helpers,
        "%a: memref<64xi32>, %b: memref<64xi32>",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  kernel.call @walk(%a, %b, %i) : (memref<64xi32>, memref<64xi32>, index) -> ()",
    );
    // The recursive call swaps the buffers: both may be read and written.
    assert_eq!(access(&effects, 0), (true, true, false));
    assert_eq!(access(&effects, 1), (true, true, false));
    assert!(!effects.writes_every_element(1, &grid(&[64]), &[Some(64)]));
    assert_eq!(effects.written_elements(1, &grid(&[64]), &[Some(64)]), Some(0..64));
}

#[test]
fn aliases_through_select_if_and_loops() {
    let select = kernel(
        "",
        "%a: memref<64xi32>, %b: memref<64xi32>, %c: memref<64xi32>, %flip: i1, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %dst = arith.select %flip, %a, %b : memref<64xi32>\n  buffer.store %v, %dst[%i] : memref<64xi32>",
    );
    assert_eq!(access(&select, 0), (false, true, false));
    assert_eq!(access(&select, 1), (false, true, false));
    assert_eq!(access(&select, 2), (false, false, false));
    assert!(!select.writes_every_element(0, &grid(&[64]), &[Some(64)]), "only when %flip is true");

    // A condition passed as a parameter decides once the dispatch gives it.
    let flag = kernel(
        "",
        "%a: memref<64xi32>, %on: i1, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  scf.if %on {\n    buffer.store %v, %a[%i] : memref<64xi32>\n  }",
    );
    let dispatch = |on: i64| Dispatch::new(&grid(&[64])).with_shape(0, &[Some(64)]).with_scalar(1, on);
    assert!(!flag.writes_every_element(0, &grid(&[64]), &[Some(64)]));
    assert!(flag.writes_every_element_in(0, &dispatch(1)));
    assert!(flag.writes_every_element_in(0, &dispatch(-1)), "true sign-extended");
    assert!(!flag.writes_every_element_in(0, &dispatch(0)));
    assert_eq!(flag.written_elements_in(0, &dispatch(0)), Some(0..0));

    let branch = kernel(
        "",
        "%a: memref<64xi32>, %b: memref<64xi32>, %flip: i1",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %src = scf.if %flip -> (memref<64xi32>) {\n    scf.yield %a : memref<64xi32>\n  } else {\n    scf.yield %b : memref<64xi32>\n  }\n  %v = buffer.load %src[%i] : memref<64xi32>\n  buffer.store %v, %a[%i] : memref<64xi32>",
    );
    assert_eq!(access(&branch, 0), (true, true, false));
    assert_eq!(access(&branch, 1), (true, false, false));
    assert!(branch.writes_every_element(0, &grid(&[64]), &[Some(64)]));

    // Ping-pong through loop-carried buffers.
    let carried = kernel(
        "",
        "%a: memref<64xi32>, %b: memref<64xi32>, %n: index",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %r:2 = scf.for %k = %c0 to %n step %c1 iter_args(%src = %a, %dst = %b) -> (memref<64xi32>, memref<64xi32>) {\n    %v = buffer.load %src[%i] : memref<64xi32>\n    buffer.store %v, %dst[%i] : memref<64xi32>\n    scf.yield %dst, %src : memref<64xi32>, memref<64xi32>\n  }",
    );
    assert_eq!(access(&carried, 0), (true, true, false));
    assert_eq!(access(&carried, 1), (true, true, false));
    assert!(!carried.writes_every_element(1, &grid(&[64]), &[Some(64)]));
}

#[test]
fn atomics_are_read_write_and_data_indices_go_anywhere() {
    let histogram = kernel(
        "",
        "%data: memref<64xi32>, %bins: memref<16xi32>",
        "workgroup(64)",
        &format!(
            "{}\n  scf.if %in {{\n    %v = buffer.load %data[%i] : memref<64xi32>\n    %bin = arith.index_cast %v : i32 to index\n    %one = arith.constant 1 : i32\n    %old = kernel.atomic_rmw add %bins[%bin], %one : memref<16xi32>\n  }}",
            GUARDED_ID.replace("%b,", "%data,")
        ),
    );
    assert_eq!(access(&histogram, 0), (true, false, false));
    assert_eq!(access(&histogram, 1), (true, true, true));
    assert!(!histogram.writes_every_element(1, &grid(&[64]), &[Some(16)]));
    assert_eq!(histogram.written_elements(1, &grid(&[64]), &[Some(16)]), Some(0..16));
    assert_eq!(histogram.read_elements(0, &grid(&[32]), &[Some(64)]), Some(0..32), "only ids below the grid");
}

#[test]
fn workgroup_memory_is_not_a_parameter() {
    let effects = kernel(
        "kernel.helper @stash(%tile: memref<64xi32>, %at: index, %v: i32) {
  buffer.store %v, %tile[%at] : memref<64xi32>
  kernel.return
}",
        "%src: memref<64xi32>, %dst: memref<64xi32>",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %l = kernel.local_id x\n  %tile = kernel.local_alloc : memref<64xi32>\n  %v = buffer.load %src[%i] : memref<64xi32>\n  kernel.call @stash(%tile, %l, %v) : (memref<64xi32>, index, i32) -> ()\n  kernel.barrier\n  %c63 = arith.constant 63 : index\n  %m = arith.subi %c63, %l : index\n  %w = buffer.load %tile[%m] : memref<64xi32>\n  buffer.store %w, %dst[%i] : memref<64xi32>",
    );
    assert_eq!(access(&effects, 0), (true, false, false));
    assert_eq!(access(&effects, 1), (false, true, false));
    assert!(effects.writes_every_element(1, &grid(&[64]), &[Some(64)]));
    assert!(!effects.writes_every_element(0, &grid(&[64]), &[Some(64)]));
}

#[test]
fn while_bodies_and_unknown_buffers_are_may() {
    // A store in the body of a while: it may not run.
    let effects = kernel(
        "",
        "%b: memref<64xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %c0 = arith.constant 0 : i32\n  %r = scf.while (%x = %c0) : (i32) -> i32 {\n    %go = arith.cmpi slt, %x, %v : i32\n    scf.condition(%go) %x : i32\n  } do {\n  ^bb0(%y: i32):\n    buffer.store %y, %b[%i] : memref<64xi32>\n    %c1 = arith.constant 1 : i32\n    %z = arith.addi %y, %c1 : i32\n    scf.yield %z : i32\n  }",
    );
    assert_eq!(access(&effects, 0), (false, true, false));
    assert!(!effects.writes_every_element(0, &grid(&[64]), &[Some(64)]));
    assert_eq!(effects.written_elements(0, &grid(&[64]), &[Some(64)]), Some(0..64));
}

#[test]
fn stencils_read_neighbours_within_the_buffer() {
    let stencil = kernel(
        "",
        "%src: memref<64xi32>, %dst: memref<64xi32>",
        "workgroup(16)",
        "  %i = kernel.global_id x\n  %c1 = arith.constant 1 : index\n  %c63 = arith.constant 63 : index\n  %low = arith.cmpi uge, %i, %c1 : index\n  %high = arith.cmpi ult, %i, %c63 : index\n  %inner = arith.andi %low, %high : i1\n  scf.if %inner {\n    %l = arith.subi %i, %c1 : index\n    %r = arith.addi %i, %c1 : index\n    %a = buffer.load %src[%l] : memref<64xi32>\n    %b = buffer.load %src[%r] : memref<64xi32>\n    %s = arith.addi %a, %b : i32\n    buffer.store %s, %dst[%i] : memref<64xi32>\n  }",
    );
    assert_eq!(stencil.read_elements(0, &grid(&[64]), &[Some(64)]), Some(0..64));
    assert_eq!(stencil.read_elements(0, &grid(&[16]), &[Some(64)]), Some(0..17));
    assert_eq!(stencil.written_elements(1, &grid(&[64]), &[Some(64)]), Some(1..63));
    assert!(!stencil.writes_every_element(1, &grid(&[64]), &[Some(64)]));
}

#[test]
fn a_guard_on_data_is_not_assumed_to_hold() {
    // The guard narrows what the loaded value may be where the store runs, but the store still
    // runs only for some work items.
    let positive = kernel(
        "",
        "%b: memref<64xi32>, %data: memref<64xi32>",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %zero = arith.constant 0 : i32\n  %d = buffer.load %data[%i] : memref<64xi32>\n  %positive = arith.cmpi sgt, %d, %zero : i32\n  scf.if %positive {\n    buffer.store %d, %b[%i] : memref<64xi32>\n  }",
    );
    assert!(!positive.writes_every_element(0, &grid(&[64]), &[Some(64)]));
    // A guard on a quotient of the id bounds the id itself.
    let rows = kernel(
        "",
        "%m: memref<8x8xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %c8 = arith.constant 8 : index\n  %row = arith.divui %i, %c8 : index\n  %col = arith.remui %i, %c8 : index\n  %in = arith.cmpi ult, %row, %c8 : index\n  scf.if %in {\n    buffer.store %v, %m[%row, %col] : memref<8x8xi32>\n  }",
    );
    assert!(rows.writes_every_element(0, &grid(&[100]), &[Some(8), Some(8)]));
}

#[test]
fn two_calls_return_two_unknowns() {
    // Both calls return a loaded value: bounding the second says nothing of the first.
    let effects = kernel(
        "kernel.helper @pick(%src: memref<64xi32>, %at: index) -> index {
  %v = buffer.load %src[%at] : memref<64xi32>
  %i = arith.index_cast %v : i32 to index
  kernel.return %i : index
}",
        "%src: memref<64xi32>, %dst: memref<64xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %a = kernel.call @pick(%src, %i) : (memref<64xi32>, index) -> index\n  %b = kernel.call @pick(%src, %i) : (memref<64xi32>, index) -> index\n  %c10 = arith.constant 10 : index\n  %small = arith.cmpi ult, %b, %c10 : index\n  scf.if %small {\n    buffer.store %v, %dst[%a] : memref<64xi32>\n  }",
    );
    assert_eq!(effects.written_elements(1, &grid(&[64]), &[Some(64)]), Some(0..64));
    // The same call's value, guarded, is bounded.
    let same = kernel(
        "kernel.helper @pick(%src: memref<64xi32>, %at: index) -> index {
  %v = buffer.load %src[%at] : memref<64xi32>
  %i = arith.index_cast %v : i32 to index
  kernel.return %i : index
}",
        "%src: memref<64xi32>, %dst: memref<64xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %a = kernel.call @pick(%src, %i) : (memref<64xi32>, index) -> index\n  %c10 = arith.constant 10 : index\n  %small = arith.cmpi ult, %a, %c10 : index\n  scf.if %small {\n    buffer.store %v, %dst[%a] : memref<64xi32>\n  }",
    );
    assert_eq!(same.written_elements(1, &grid(&[64]), &[Some(64)]), Some(0..10));
}

#[test]
fn huge_numbers_neither_panic_nor_claim_anything() {
    let big = kernel(
        "",
        "%b: memref<?xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %huge = arith.constant 4611686018427387904 : index\n  %j = arith.muli %i, %huge : index\n  %k = arith.addi %j, %huge : index\n  %in = arith.cmpi slt, %k, %huge : index\n  scf.if %in {\n    buffer.store %v, %b[%k] : memref<?xi32>\n  }\n  buffer.store %v, %b[%j] : memref<?xi32>",
    );
    for grid_size in [1, 1 << 40, u64::MAX] {
        for size in [Some(1), Some(u64::MAX), None] {
            let grid = grid(&[grid_size, grid_size]);
            let shape = [size];
            let every = big.writes_every_element(0, &grid, &shape);
            let written = big.written_elements(0, &grid, &shape);
            assert!(!every || (grid_size == 1 && size == Some(1)), "{grid_size} {size:?}");
            assert!(written.as_ref().is_none_or(|w| size.is_none_or(|s| w.end <= s)), "{written:?}");
        }
    }
    // An `i1` sign-extends to -1: no expression is made of it.
    let flag = kernel(
        "",
        "%b: memref<64xi32>, %v: i32",
        "workgroup(64)",
        "  %t = arith.constant true\n  %m = arith.extsi %t : i1 to i64\n  %i = arith.index_cast %m : i64 to index\n  %c1 = arith.constant 1 : index\n  %j = arith.addi %i, %c1 : index\n  buffer.store %v, %b[%j] : memref<64xi32>",
    );
    assert_eq!(flag.written_elements(0, &grid(&[64]), &[Some(64)]), Some(0..64));
}

/// A kernel over workgroups of `workgroup` storing `%v` to `%sums` (of `shape`) at `index`
/// under `guard`, both computed by `body` from the ids `%l`, `%g` (local and group ids in x),
/// `%ly`, `%gy` (in y) and the constants `%c0`, `%c1`, `%c2`, `%c63`.
fn one_per_group(workgroup: &str, shape: &str, body: &str, index: &str, guard: &str) -> KernelEffects {
    kernel(
        "",
        &format!("%sums: memref<{shape}xi32>, %v: i32"),
        workgroup,
        &format!(
            "  %l = kernel.local_id x\n  %g = kernel.group_id x\n  %ly = kernel.local_id y\n  %gy = kernel.group_id y\n  \
             %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c2 = arith.constant 2 : index\n  \
             %c63 = arith.constant 63 : index\n{body}\n  scf.if {guard} {{\n    buffer.store %v, %sums[{index}] : memref<{shape}xi32>\n  }}"
        ),
    )
}

#[test]
fn one_work_item_per_workgroup_writes_one_element_per_workgroup() {
    let first = one_per_group("workgroup(64)", "4", "  %first = arith.cmpi eq, %l, %c0 : index", "%g", "%first");
    assert!(first.writes_every_element(0, &grid(&[256]), &[Some(4)]));
    // A partial last workgroup still has its work item 0 (192 is below 250).
    assert!(first.writes_every_element(0, &grid(&[250]), &[Some(4)]));
    assert!(!first.writes_every_element(0, &grid(&[192]), &[Some(4)]), "three workgroups, four elements");
    assert!(!first.writes_every_element(0, &grid(&[256]), &[Some(5)]));
    assert!(!first.writes_every_element(0, &grid(&[320]), &[Some(4)]), "group 4 stores out of bounds");
    assert_eq!(first.written_elements(0, &grid(&[256]), &[Some(4)]), Some(0..4));

    // The last work item of each workgroup: in a partial last workgroup it does not exist.
    let last = one_per_group("workgroup(64)", "4", "  %last = arith.cmpi eq, %l, %c63 : index", "%g", "%last");
    assert!(last.writes_every_element(0, &grid(&[256]), &[Some(4)]));
    assert!(!last.writes_every_element(0, &grid(&[250]), &[Some(4)]), "work item 255 is past the grid");
    assert!(!last.writes_every_element(0, &grid(&[255]), &[Some(4)]));

    // A constant outside the workgroup: no work item passes.
    let outside = one_per_group(
        "workgroup(64)",
        "4",
        "  %c64 = arith.constant 64 : index\n  %none = arith.cmpi eq, %l, %c64 : index",
        "%g",
        "%none",
    );
    assert!(!outside.writes_every_element(0, &grid(&[256]), &[Some(4)]));
    assert_eq!(outside.written_elements(0, &grid(&[256]), &[Some(4)]), Some(0..0));

    // Written the other way round, with the index computed from the global id.
    let spelled = one_per_group(
        "workgroup(64)",
        "4",
        "  %i = kernel.global_id x\n  %s = kernel.local_size x\n  %q = arith.divui %i, %s : index\n  \
         %first = arith.cmpi ule, %l, %c0 : index",
        "%q",
        "%first",
    );
    assert!(spelled.writes_every_element(0, &grid(&[256]), &[Some(4)]));
}

#[test]
fn one_work_item_per_workgroup_in_two_dimensions() {
    // Both local ids 0, the group ids as row and column.
    let body = "  %x0 = arith.cmpi eq, %l, %c0 : index\n  %y0 = arith.cmpi eq, %ly, %c0 : index\n  \
                %first = arith.andi %x0, %y0 : i1";
    let both = one_per_group("workgroup(8, 8)", "2x4", body, "%gy, %g", "%first");
    assert!(both.writes_every_element(0, &grid(&[32, 16]), &[Some(2), Some(4)]));
    assert!(both.writes_every_element(0, &grid(&[30, 9]), &[Some(2), Some(4)]), "partial in both");
    assert!(!both.writes_every_element(0, &grid(&[32, 8]), &[Some(2), Some(4)]), "one row of groups");
    // Flattened with the number of groups.
    let flat = one_per_group(
        "workgroup(8, 8)",
        "8",
        &format!("{body}\n  %n = kernel.num_groups x\n  %row = arith.muli %gy, %n : index\n  %at = arith.addi %row, %g : index"),
        "%at",
        "%first",
    );
    assert!(flat.writes_every_element(0, &grid(&[32, 16]), &[Some(8)]));
    // Only x guarded, with workgroups of one row: y is the global id.
    let rows = one_per_group(
        "workgroup(64, 1)",
        "3x4",
        "  %first = arith.cmpi eq, %l, %c0 : index\n  %y = kernel.global_id y",
        "%y, %g",
        "%first",
    );
    assert!(rows.writes_every_element(0, &grid(&[256, 3]), &[Some(3), Some(4)]));
    // Only x guarded, with workgroups of two rows: the y of the workgroup is not pinned, every
    // row is still written (by both rows of each workgroup).
    let tall =
        one_per_group("workgroup(64, 2)", "2x4", "  %first = arith.cmpi eq, %l, %c0 : index", "%gy, %g", "%first");
    assert!(tall.writes_every_element(0, &grid(&[256, 4]), &[Some(2), Some(4)]));
}

#[test]
fn one_work_item_per_workgroup_through_helpers_and_aliases() {
    let helper = "kernel.helper @leader(%b: memref<4xi32>, %local: index, %at: index, %v: i32) {
  %c0 = arith.constant 0 : index
  %first = arith.cmpi eq, %local, %c0 : index
  scf.if %first {
    buffer.store %v, %b[%at] : memref<4xi32>
  }
  kernel.return
}";
    let effects = kernel(
        helper,
        "%sums: memref<4xi32>, %v: i32",
        "workgroup(64)",
        "  %l = kernel.local_id x\n  %g = kernel.group_id x\n  %t = arith.constant true\n  \
         %alias = arith.select %t, %sums, %sums : memref<4xi32>\n  \
         kernel.call @leader(%alias, %l, %g, %v) : (memref<4xi32>, index, index, i32) -> ()",
    );
    assert!(effects.writes_every_element(0, &grid(&[256]), &[Some(4)]));
    assert!(!effects.writes_every_element(0, &grid(&[128]), &[Some(4)]));
}

#[test]
fn one_work_item_per_workgroup_needs_the_group_in_the_index() {
    let first = "  %first = arith.cmpi eq, %l, %c0 : index";
    // The index ignores the group: element 0 only.
    let constant = one_per_group("workgroup(64)", "4", first, "%c0", "%first");
    assert!(!constant.writes_every_element(0, &grid(&[256]), &[Some(4)]));
    assert!(constant.writes_every_element(0, &grid(&[256]), &[Some(1)]), "a buffer of one element");
    let local = one_per_group("workgroup(64)", "4", first, "%l", "%first");
    assert!(!local.writes_every_element(0, &grid(&[256]), &[Some(4)]));
    // The workgroup size unknown: the group is not known to be one-to-one.
    let unknown = one_per_group("", "4", first, "%g", "%first");
    assert!(!unknown.writes_every_element(0, &grid(&[256]), &[Some(4)]));
    // Twice the group: every other element.
    let strided = one_per_group(
        "workgroup(64)",
        "8",
        &format!("{first}\n  %twice = arith.muli %g, %c2 : index"),
        "%twice",
        "%first",
    );
    assert!(!strided.writes_every_element(0, &grid(&[256]), &[Some(8)]));
}

#[test]
fn two_work_items_per_workgroup() {
    let two = "  %two = arith.cmpi ult, %l, %c2 : index";
    // `2 × group + local`: every element while each workgroup has both work items; a last
    // workgroup of one work item leaves the last element.
    let pairs = one_per_group(
        "workgroup(64)",
        "8",
        &format!("{two}\n  %base = arith.muli %g, %c2 : index\n  %at = arith.addi %base, %l : index"),
        "%at",
        "%two",
    );
    assert!(pairs.writes_every_element(0, &grid(&[256]), &[Some(8)]));
    assert!(pairs.writes_every_element(0, &grid(&[194]), &[Some(8)]));
    assert!(!pairs.writes_every_element(0, &grid(&[193]), &[Some(8)]), "work item 193 is past the grid");
    // Two work items store one element per workgroup: a race (the race lint's business), but
    // every element is written, as a store that ignores a dimension of the grid writes it.
    let both = one_per_group("workgroup(64)", "4", two, "%g", "%two");
    assert!(both.writes_every_element(0, &grid(&[256]), &[Some(4)]));
}

#[test]
fn a_guard_on_data_with_one_work_item_per_workgroup_is_not_proved() {
    let effects = kernel(
        "",
        "%sums: memref<4xi32>, %flags: memref<4xi32>, %v: i32",
        "workgroup(64)",
        "  %l = kernel.local_id x\n  %g = kernel.group_id x\n  %c0 = arith.constant 0 : index\n  \
         %flag = buffer.load %flags[%g] : memref<4xi32>\n  %z = arith.constant 0 : i32\n  \
         %set = arith.cmpi ne, %flag, %z : i32\n  %first = arith.cmpi eq, %l, %c0 : index\n  \
         %both = arith.andi %set, %first : i1\n  scf.if %both {\n    buffer.store %v, %sums[%g] : memref<4xi32>\n  }",
    );
    assert!(!effects.writes_every_element(0, &grid(&[256]), &[Some(4)]));
    assert_eq!(effects.written_elements(0, &grid(&[256]), &[Some(4)]), Some(0..4));
}

#[test]
fn narrow_index_arithmetic_within_its_range() {
    // The id in i32, plus one, minus one, back to index: the id, for any grid below 2^31.
    let body = |ty: &str| {
        format!(
            "  %i = kernel.global_id x\n  %n = arith.index_cast %i : index to {ty}\n  %one = arith.constant 1 : {ty}\n  \
             %up = arith.addi %n, %one : {ty}\n  %back = arith.subi %up, %one : {ty}\n  \
             %at = arith.index_cast %back : {ty} to index\n  buffer.store %v, %b[%at] : memref<256xi32>"
        )
    };
    let wide = kernel("", "%b: memref<256xi32>, %v: i32", "workgroup(64)", &body("i32"));
    assert!(wide.writes_every_element(0, &grid(&[256]), &[Some(256)]));
    assert_eq!(wide.written_elements(0, &grid(&[128]), &[Some(256)]), Some(0..128));
    // In i8, ids from 128 wrap to negative indices: not a full write (the dispatch would
    // fail); up to 127 they do not wrap.
    let byte = kernel("", "%b: memref<256xi32>, %v: i32", "workgroup(64)", &body("i8"));
    assert!(!byte.writes_every_element(0, &grid(&[256]), &[Some(256)]));
    assert!(byte.writes_every_element(0, &grid(&[128]), &[Some(128)]));
    assert_eq!(byte.written_elements(0, &grid(&[100]), &[Some(256)]), Some(0..100));
    // Zero-extended (`index_castui`), i8 ids below 256 are themselves again.
    let unsigned = kernel(
        "",
        "%b: memref<256xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %n = arith.index_cast %i : index to i8\n  \
         %at = arith.index_castui %n : i8 to index\n  buffer.store %v, %b[%at] : memref<256xi32>",
    );
    assert!(unsigned.writes_every_element(0, &grid(&[256]), &[Some(256)]));
    assert!(!unsigned.writes_every_element(0, &grid(&[512]), &[Some(256)]), "ids from 256 wrap");
    // A guard in i32 narrows like one in index.
    let guarded = kernel(
        "",
        "%b: memref<64xi32>, %v: i32",
        "workgroup(64)",
        "  %i = kernel.global_id x\n  %n = arith.index_cast %i : index to i32\n  %c64 = arith.constant 64 : i32\n  \
         %in = arith.cmpi slt, %n, %c64 : i32\n  scf.if %in {\n    %at = arith.index_cast %n : i32 to index\n    \
         buffer.store %v, %b[%at] : memref<64xi32>\n  }",
    );
    assert!(guarded.writes_every_element(0, &grid(&[100]), &[Some(64)]));
    assert_eq!(guarded.written_elements(0, &grid(&[100]), &[Some(64)]), Some(0..64));
}

/// Which elements of a buffer of `n` the work items below `grid` store to, each at `index(id)`
/// when `runs(id)`: `None` when one of them is out of bounds (the dispatch fails).
fn stored(grid: u64, n: u64, runs: impl Fn(u64) -> bool, index: impl Fn(u64) -> i64) -> Option<Vec<bool>> {
    let mut written = vec![false; n as usize];
    for id in (0..grid).filter(|&id| runs(id)) {
        let at = usize::try_from(index(id)).ok().filter(|&at| at < written.len())?;
        written[at] = true;
    }
    Some(written)
}

#[test]
fn one_per_workgroup_proofs_agree_with_every_small_dispatch() {
    // Guards `local == c` and `local < c`, indices `a × group + b × local`, against every grid
    // up to 40 and buffer up to 12: a proof is never wrong, and for `local == c` at the group it
    // is never missing.
    let mut proved = 0;
    for workgroup in [1u64, 2, 4, 8] {
        for (predicate, c) in (0..=workgroup + 1).flat_map(|c| [("eq", c), ("ult", c)]) {
            for (a, b) in [(1i64, 0i64), (2, 1), (1, 1), (workgroup as i64, 1)] {
                let body = format!(
                    "  %c = arith.constant {c} : index\n  %ca = arith.constant {a} : index\n  \
                     %cb = arith.constant {b} : index\n  %pass = arith.cmpi {predicate}, %l, %c : index\n  \
                     %ag = arith.muli %g, %ca : index\n  %bl = arith.muli %l, %cb : index\n  \
                     %at = arith.addi %ag, %bl : index"
                );
                let effects = one_per_group(&format!("workgroup({workgroup})"), "?", &body, "%at", "%pass");
                for grid_size in 1..=40u64 {
                    for n in 1..=12u64 {
                        let runs = |id: u64| if predicate == "eq" { id % workgroup == c } else { id % workgroup < c };
                        let index = |id: u64| a * (id / workgroup) as i64 + b * (id % workgroup) as i64;
                        let model = stored(grid_size, n, runs, index);
                        let full = model.as_ref().is_some_and(|w| w.iter().all(|&x| x));
                        let claim = effects.writes_every_element(0, &grid(&[grid_size]), &[Some(n)]);
                        let case = format!(
                            "workgroup {workgroup}, local {predicate} {c}, {a}g + {b}l, grid {grid_size}, n {n}"
                        );
                        assert!(!claim || full, "wrong proof: {case}");
                        if predicate == "eq" && (a, b) == (1, 0) {
                            assert_eq!(claim, full, "{case}");
                        }
                        proved += usize::from(claim);
                    }
                }
            }
        }
    }
    assert!(proved > 500, "{proved} proofs");
}

#[test]
fn narrow_index_proofs_agree_with_every_small_dispatch() {
    // `index_cast(wrap8(a × id + k))`, sign- or zero-extended, against grids up to 300 and
    // buffers up to 260: a proof is never wrong, a written range never misses an element.
    let mut proved = 0;
    for (a, k) in [(1i64, 0i64), (1, 5), (1, -3), (2, 0), (-1, 255), (3, 1)] {
        for cast in ["index_cast", "index_castui"] {
            let effects = kernel(
                "",
                "%b: memref<?xi32>, %v: i32",
                "workgroup(64)",
                &format!(
                    "  %i = kernel.global_id x\n  %n = arith.index_cast %i : index to i8\n  \
                     %a = arith.constant {a} : i8\n  %k = arith.constant {k} : i8\n  %m = arith.muli %n, %a : i8\n  \
                     %s = arith.addi %m, %k : i8\n  %at = arith.{cast} %s : i8 to index\n  \
                     buffer.store %v, %b[%at] : memref<?xi32>"
                ),
            );
            for grid_size in [1u64, 5, 100, 127, 128, 129, 200, 255, 256, 257, 300] {
                for n in [1u64, 5, 100, 128, 250, 256, 260] {
                    let wrap = |x: i64| ((x + 128).rem_euclid(256)) - 128;
                    let index = |id: u64| {
                        let s = wrap(wrap(wrap(id as i64) * wrap(a)) + wrap(k));
                        if cast == "index_cast" {
                            s
                        } else {
                            s.rem_euclid(256)
                        }
                    };
                    let model = stored(grid_size, n, |_| true, index);
                    let full = model.as_ref().is_some_and(|w| w.iter().all(|&x| x));
                    let claim = effects.writes_every_element(0, &grid(&[grid_size]), &[Some(n)]);
                    let case = format!("{cast}(wrap8({a} id + {k})), grid {grid_size}, n {n}");
                    assert!(!claim || full, "wrong proof: {case}");
                    proved += usize::from(claim);
                    if let (Some(written), Some(range)) =
                        (model, effects.written_elements(0, &grid(&[grid_size]), &[Some(n)]))
                    {
                        for (at, _) in written.iter().enumerate().filter(|(_, &w)| w) {
                            assert!(range.contains(&(at as u64)), "{case}: element {at} outside {range:?}");
                        }
                    }
                }
            }
        }
    }
    // Those of `id` below 129 (index_cast) or 257 (index_castui) at a buffer of the grid's size, and
    // `255 - id` zero-extended over 256.
    assert!(proved >= 10, "{proved} proofs");
}
