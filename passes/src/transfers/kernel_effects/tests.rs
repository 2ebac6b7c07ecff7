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

mod one_per_workgroup;
