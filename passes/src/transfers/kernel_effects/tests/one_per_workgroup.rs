//! The full-write proof for kernels whose work items write one element per workgroup (the
//! group id in the index, a guard on the local id), and for narrow index arithmetic: each against
//! every small dispatch.

use super::*;

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
