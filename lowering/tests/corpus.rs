//! A corpus of small kernels, one per construct the lowering handles (barriers, workgroup
//! memory, atomics, loops of every kind, buffers chosen at run time, helpers, dynamic shapes,
//! every scalar op and cast, device features): each lowers to a module that the validator (and
//! `spirv-val`, when installed) accepts, and what the artifact says about it is checked.

mod support;

use hat_lowering::{
    disassemble, Access, DeviceFeatures, Feature, IndexWidth, LoweringOptions, ScalarEncoding, StoredElement,
};
use support::{diagnostics_with, lower, lower_with, spirv_val};

#[test]
fn a_workgroup_reduction_with_barriers_local_memory_and_atomics() {
    if !support::spirv_tools_linked() {
        return;
    }
    let spirv = lower(
        "kernel.func @sum(%data: memref<?xi32>, %total: memref<1xi32>) workgroup(64) {
  %tile = kernel.local_alloc : memref<64xi32>
  %i = kernel.global_id x
  %l = kernel.local_id x
  %n = buffer.dim %data, 0 : memref<?xi32>
  %inside = arith.cmpi ult, %i, %n : index
  %zero = arith.constant 0 : i32
  %v = scf.if %inside -> (i32) {
    %x = buffer.load %data[%i] : memref<?xi32>
    scf.yield %x : i32
  } else {
    scf.yield %zero : i32
  }
  buffer.store %v, %tile[%l] : memref<64xi32>
  kernel.barrier
  %c0 = arith.constant 0 : index
  %first = arith.cmpi eq, %l, %c0 : index
  scf.if %first {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %s = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (i32) {
      %t = buffer.load %tile[%k] : memref<64xi32>
      %a = arith.addi %acc, %t : i32
      scf.yield %a : i32
    }
    %old = kernel.atomic_rmw add %total[%c0], %s : memref<1xi32>
  }
  kernel.return
}",
    );
    let entry = &spirv.entry_points[0];
    assert!(entry.has_barrier);
    assert_eq!(entry.workgroup_memory_bytes, 256);
    assert_eq!(entry.bindings[0].access, Access { read: true, write: false });
    assert_eq!(entry.bindings[1].access, Access { read: true, write: true });
    assert_eq!(entry.bindings[0].shape, vec![None]);
    assert_eq!(entry.push_constants.dims.len(), 1);
    assert_eq!(entry.push_constants.dims[0].offset, 12);
    let text = disassemble(&spirv.words).unwrap();
    assert!(text.contains("OpControlBarrier %uint_2 %uint_2 %uint_328"), "{text}");
    assert!(text.contains("OpAtomicIAdd"), "{text}");
    // Work items past the grid run (the barrier needs them) but skip the load of %data and the
    // atomic on %total: the snapshot shows both under a selection on the grid check, the
    // workgroup memory's accesses under none.
    assert_eq!(text.matches("OpReturn\n").count(), 1, "{text}");
    insta::assert_snapshot!("reduction_with_barrier", text);
}

#[test]
fn float_atomics_compare_and_swap_the_bits() {
    if !support::spirv_tools_linked() {
        return;
    }
    let spirv = lower(
        "kernel.func @histogram(%values: memref<64xf32>, %bins: memref<4xf32>) workgroup(64) {
  %i = kernel.global_id x
  %c3 = arith.constant 3 : index
  %bin = arith.andi %i, %c3 : index
  %v = buffer.load %values[%i] : memref<64xf32>
  %a = kernel.atomic_rmw add %bins[%bin], %v : memref<4xf32>
  %b = kernel.atomic_rmw max %bins[%bin], %a : memref<4xf32>
  %c = kernel.atomic_rmw min %bins[%bin], %b : memref<4xf32>
  %d = kernel.atomic_rmw exchange %bins[%bin], %c : memref<4xf32>
  kernel.return
}",
    );
    let text = disassemble(&spirv.words).unwrap();
    assert_eq!(text.matches("OpAtomicCompareExchange").count(), 4, "{text}");
    assert_eq!(spirv.entry_points[0].bindings[1].element, StoredElement::F32);
}

#[test]
fn every_integer_atomic_kind_and_workgroup_atomics() {
    lower(
        "kernel.func @atomics(%a: memref<8xi32>, %x: i32) workgroup(8) {
  %local = kernel.local_alloc : memref<8xi32>
  %i = kernel.local_id x
  %0 = kernel.atomic_rmw add %a[%i], %x : memref<8xi32>
  %1 = kernel.atomic_rmw min %a[%i], %0 : memref<8xi32>
  %2 = kernel.atomic_rmw max %a[%i], %1 : memref<8xi32>
  %3 = kernel.atomic_rmw and %a[%i], %2 : memref<8xi32>
  %4 = kernel.atomic_rmw or %a[%i], %3 : memref<8xi32>
  %5 = kernel.atomic_rmw xor %a[%i], %4 : memref<8xi32>
  %6 = kernel.atomic_rmw exchange %a[%i], %5 : memref<8xi32>
  %7 = kernel.atomic_rmw add %local[%i], %6 : memref<8xi32>
  kernel.barrier
  %8 = buffer.load %local[%i] : memref<8xi32>
  buffer.store %8, %a[%i] : memref<8xi32>
  kernel.return
}",
    );
}

#[test]
fn a_while_loop_and_a_do_while_shape() {
    lower(
        "kernel.func @collatz(%data: memref<?xi32>) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<?xi32>
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %steps:2 = scf.while (%x = %v, %s = %zero) : (i32, i32) -> (i32, i32) {
    %more = arith.cmpi sgt, %x, %one : i32
    scf.condition(%more) %x, %s : i32, i32
  } do {
  ^bb0(%y: i32, %t: i32):
    %odd_bit = arith.andi %y, %one : i32
    %odd = arith.cmpi ne, %odd_bit, %zero : i32
    %half = arith.shrsi %y, %one : i32
    %three = arith.constant 3 : i32
    %tripled = arith.muli %y, %three : i32
    %up = arith.addi %tripled, %one : i32
    %next = arith.select %odd, %up, %half : i32
    %t1 = arith.addi %t, %one : i32
    scf.yield %next, %t1 : i32, i32
  }
  buffer.store %steps#1, %data[%i] : memref<?xi32>
  kernel.return
}",
    );
}

#[test]
fn buffers_chosen_at_run_time_and_carried_by_loops() {
    if !support::spirv_tools_linked() {
        return;
    }
    let spirv = lower(
        "kernel.func @ping_pong(%a: memref<16xf32>, %b: memref<16xf32>, %steps: index) workgroup(16) {
  %i = kernel.global_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f32
  %src:2 = scf.for %k = %c0 to %steps step %c1 iter_args(%from = %a, %to = %b) -> (memref<16xf32>, memref<16xf32>) {
    %v = buffer.load %from[%i] : memref<16xf32>
    %w = arith.mulf %v, %half : f32
    buffer.store %w, %to[%i] : memref<16xf32>
    kernel.barrier
    scf.yield %to, %from : memref<16xf32>, memref<16xf32>
  }
  %odd = arith.cmpi eq, %steps, %c1 : index
  %last = arith.select %odd, %src#0, %a : memref<16xf32>
  %x = buffer.load %last[%i] : memref<16xf32>
  buffer.store %x, %b[%i] : memref<16xf32>
  kernel.return
}",
    );
    let text = disassemble(&spirv.words).unwrap();
    assert!(text.contains("OpSwitch"), "a buffer carried by the loop is one of two: {text}");
    let entry = &spirv.entry_points[0];
    assert_eq!(
        entry.bindings.iter().map(|b| b.access).collect::<Vec<_>>(),
        vec![Access { read: true, write: true }; 2]
    );
    assert_eq!(entry.push_constants.scalars[0].encoding, ScalarEncoding::Int32);
}

#[test]
fn helpers_with_buffers_several_results_and_instances() {
    if !support::spirv_tools_linked() {
        return;
    }
    let spirv = lower(
        "kernel.helper @bump(%buf: memref<8xi32>, %i: index, %by: i32) -> (i32, index) {
  %v = buffer.load %buf[%i] : memref<8xi32>
  %w = arith.addi %v, %by : i32
  buffer.store %w, %buf[%i] : memref<8xi32>
  kernel.return %w, %i : i32, index
}
kernel.helper @twice(%x: i32) -> i32 {
  %y = arith.addi %x, %x : i32
  kernel.return %y : i32
}
kernel.helper @pick(%p: i1, %a: memref<8xi32>, %b: memref<8xi32>) -> memref<8xi32> {
  %c = arith.select %p, %a, %b : memref<8xi32>
  kernel.return %c : memref<8xi32>
}
kernel.func @use(%a: memref<8xi32>, %b: memref<8xi32>, %p: i1) workgroup(8) {
  %i = kernel.global_id x
  %one = arith.constant 1 : i32
  %two = kernel.call @twice(%one) : (i32) -> i32
  %r:2 = kernel.call @bump(%a, %i, %two) : (memref<8xi32>, index, i32) -> (i32, index)
  %s:2 = kernel.call @bump(%b, %r#1, %r#0) : (memref<8xi32>, index, i32) -> (i32, index)
  %c = kernel.call @pick(%p, %a, %b) : (i1, memref<8xi32>, memref<8xi32>) -> memref<8xi32>
  %t:2 = kernel.call @bump(%c, %i, %s#0) : (memref<8xi32>, index, i32) -> (i32, index)
  kernel.return
}
kernel.func @other(%a: memref<8xi32>) workgroup(8) {
  %i = kernel.global_id x
  %one = arith.constant 1 : i32
  %r:2 = kernel.call @bump(%a, %i, %one) : (memref<8xi32>, index, i32) -> (i32, index)
  kernel.return
}",
    );
    let text = disassemble(&spirv.words).unwrap();
    // @bump: an instance for %a, one for %b, one for a buffer that is either; one in @other.
    assert_eq!(text.matches("\"use.bump\"").count(), 3, "{text}");
    assert_eq!(text.matches("\"other.bump\"").count(), 1, "{text}");
    assert_eq!(spirv.entry_points[0].push_constants.scalars[0].encoding, ScalarEncoding::Bool32);
}

#[test]
fn multi_dimensional_dynamic_buffers_and_every_work_item_query() {
    let spirv = lower(
        "kernel.func @grid(%m: memref<?x4x?xf32>, %out: memref<?x?xindex>) workgroup(4, 4, 2) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %z = kernel.global_id z
  %lx = kernel.local_id x
  %gy = kernel.group_id y
  %sz = kernel.global_size z
  %ly = kernel.local_size y
  %nx = kernel.num_groups x
  %d0 = buffer.dim %m, 0 : memref<?x4x?xf32>
  %d1 = buffer.dim %m, 1 : memref<?x4x?xf32>
  %d2 = buffer.dim %m, 2 : memref<?x4x?xf32>
  %v = buffer.load %m[%z, %y, %x] : memref<?x4x?xf32>
  %s0 = arith.addi %lx, %gy : index
  %s1 = arith.addi %s0, %sz : index
  %s2 = arith.addi %s1, %ly : index
  %s3 = arith.addi %s2, %nx : index
  %s4 = arith.addi %s3, %d0 : index
  %s5 = arith.addi %s4, %d1 : index
  %s6 = arith.addi %s5, %d2 : index
  %old = buffer.load %out[%y, %x] : memref<?x?xindex>
  %s7 = arith.addi %s6, %old : index
  buffer.store %s7, %out[%y, %x] : memref<?x?xindex>
  buffer.store %v, %m[%z, %y, %x] : memref<?x4x?xf32>
  kernel.return
}",
    );
    let entry = &spirv.entry_points[0];
    assert_eq!(entry.workgroup_size, [4, 4, 2]);
    assert_eq!(entry.bindings[1].element, StoredElement::Index);
    let dims: Vec<_> = entry.push_constants.dims.iter().map(|d| (d.parameter, d.dimension, d.offset)).collect();
    assert_eq!(dims, vec![(0, 0, 12), (0, 2, 16), (1, 0, 20), (1, 1, 24)]);
    assert_eq!(entry.push_constants.size, 28);
}

#[test]
fn every_scalar_op_on_i32_index_i1_and_f32() {
    if !support::spirv_tools_linked() {
        return;
    }
    let integer_ops = [
        "addi",
        "subi",
        "muli",
        "divsi",
        "divui",
        "ceildivsi",
        "floordivsi",
        "remsi",
        "remui",
        "andi",
        "ori",
        "xori",
        "shli",
        "shrsi",
        "shrui",
        "maxsi",
        "minsi",
        "maxui",
        "minui",
    ];
    let float_ops = ["addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf"];
    let int_predicates = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"];
    let float_predicates = [
        "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno",
        "true",
    ];
    let mut body = String::new();
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        format!("%v{n}")
    };
    for ty in ["i32", "index", "i1"] {
        let (a, b) = match ty {
            "i32" => ("%x", "%y"),
            "index" => ("%i", "%j"),
            _ => ("%p", "%q"),
        };
        for op in integer_ops {
            body.push_str(&format!("  {} = arith.{op} {a}, {b} : {ty}\n", fresh()));
        }
        for predicate in int_predicates {
            body.push_str(&format!("  {} = arith.cmpi {predicate}, {a}, {b} : {ty}\n", fresh()));
        }
        body.push_str(&format!("  {} = math.absi {a} : {ty}\n", fresh()));
        if ty != "index" {
            body.push_str(&format!("  {} = arith.sitofp {a} : {ty} to f32\n", fresh()));
            body.push_str(&format!("  {} = arith.uitofp {a} : {ty} to f32\n", fresh()));
            body.push_str(&format!("  {} = arith.fptosi %f : f32 to {ty}\n", fresh()));
            body.push_str(&format!("  {} = arith.fptoui %f : f32 to {ty}\n", fresh()));
        }
        body.push_str(&format!("  {} = arith.select %p, {a}, {b} : {ty}\n", fresh()));
        body.push_str(
            &format!("  {} = arith.index_cast {a} : {ty} to index\n", fresh())
                .replace(" : index to index", " : index to i32"),
        );
        body.push_str(
            &format!("  {} = arith.index_castui %i : index to {ty}\n", fresh())
                .replace("index to index", "index to i32"),
        );
    }
    for op in float_ops {
        body.push_str(&format!("  {} = arith.{op} %f, %g : f32\n", fresh()));
    }
    for predicate in float_predicates {
        body.push_str(&format!("  {} = arith.cmpf {predicate}, %f, %g : f32\n", fresh()));
    }
    for op in ["sqrt", "absf", "exp", "log", "sin", "cos", "tanh", "floor", "ceil"] {
        body.push_str(&format!("  {} = math.{op} %f : f32\n", fresh()));
    }
    body.push_str(&format!("  {} = math.powf %f, %g : f32\n", fresh()));
    body.push_str(&format!("  {} = arith.negf %f : f32\n", fresh()));
    body.push_str(&format!("  {} = arith.bitcast %f : f32 to i32\n", fresh()));
    body.push_str(&format!("  {} = arith.bitcast %x : i32 to f32\n", fresh()));
    body.push_str(&format!("  {} = arith.extui %p : i1 to i32\n", fresh()));
    body.push_str(&format!("  {} = arith.extsi %p : i1 to i32\n", fresh()));
    body.push_str(&format!("  {} = arith.trunci %x : i32 to i1\n", fresh()));
    body.push_str(&format!("  {} = arith.constant -7 : i32\n", fresh()));
    body.push_str(&format!("  {} = arith.constant 2.5 : f32\n", fresh()));
    body.push_str(&format!("  {} = arith.constant true\n", fresh()));
    let text = format!(
        "kernel.func @scalars(%x: i32, %y: i32, %i: index, %j: index, %p: i1, %q: i1, %f: f32, %g: f32) {{\n{body}  kernel.return\n}}"
    );
    let spirv = lower(&text);
    let slots: Vec<_> = spirv.entry_points[0].push_constants.scalars.iter().map(|s| (s.offset, s.encoding)).collect();
    assert_eq!(slots[4], (28, ScalarEncoding::Bool32));
    assert_eq!(slots[7], (40, ScalarEncoding::Float32));
    let disassembly = disassemble(&spirv.words).unwrap();
    assert!(disassembly.contains("NoContraction"), "{disassembly}");
}

#[test]
fn kernels_in_one_module_share_it_with_an_entry_point_each() {
    let spirv = lower(
        "kernel.func @a(%x: memref<4xi32>) workgroup(4) {
  kernel.return
}
kernel.func @b(%x: memref<4xf32>, %y: memref<4xf32>) {
  %i = kernel.global_id x
  %v = buffer.load %x[%i] : memref<4xf32>
  buffer.store %v, %y[%i] : memref<4xf32>
  kernel.return
}",
    );
    let names: Vec<_> = spirv.entry_points.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, vec!["a", "b"]);
    assert_eq!(spirv.entry_points[1].workgroup_size, [64, 1, 1]);
    let untouched = spirv.entry_points[0].bindings[0].access;
    assert_eq!(untouched, Access { read: false, write: false });
    assert_eq!(spirv.entry_point("b").unwrap().bindings[1].access, Access { read: false, write: true });
    assert_eq!(spirv.to_bytes().len(), spirv.words.len() * 4);
}

#[test]
fn wide_and_narrow_types_lower_with_their_features() {
    let text = "kernel.func @wide(%a: memref<4xi64>, %b: memref<4xf64>, %c: memref<4xi8>, %d: memref<4xi1>, %e: memref<4xi16>, %x: i64, %y: f64) workgroup(4) {
  %i = kernel.global_id x
  %v = buffer.load %a[%i] : memref<4xi64>
  %w = arith.addi %v, %x : i64
  buffer.store %w, %a[%i] : memref<4xi64>
  %f = buffer.load %b[%i] : memref<4xf64>
  %g = arith.mulf %f, %y : f64
  %h = math.sqrt %g : f64
  buffer.store %h, %b[%i] : memref<4xf64>
  %k = buffer.load %c[%i] : memref<4xi8>
  %k2 = arith.addi %k, %k : i8
  buffer.store %k2, %c[%i] : memref<4xi8>
  %p = buffer.load %d[%i] : memref<4xi1>
  %q = arith.xori %p, %p : i1
  buffer.store %q, %d[%i] : memref<4xi1>
  %s = buffer.load %e[%i] : memref<4xi16>
  buffer.store %s, %e[%i] : memref<4xi16>
  %old = kernel.atomic_rmw add %a[%i], %w : memref<4xi64>
  %oldf = kernel.atomic_rmw add %b[%i], %h : memref<4xf64>
  kernel.return
}";
    let all = LoweringOptions { features: DeviceFeatures::all(), ..Default::default() };
    let spirv = lower_with(text, &all).unwrap_or_else(|e| panic!("{e}"));
    spirv_val(&spirv.words);
    let slots: Vec<_> = spirv.entry_points[0].push_constants.scalars.iter().map(|s| (s.offset, s.encoding)).collect();
    assert_eq!(slots, vec![(16, ScalarEncoding::Int64), (24, ScalarEncoding::Float64)]);
    // Each missing feature is named.
    for (feature, name) in [
        (Feature::Int64, "shaderInt64"),
        (Feature::Float64, "shaderFloat64"),
        (Feature::Int8, "shaderInt8"),
        (Feature::Int16, "shaderInt16"),
        (Feature::StorageBuffer8Bit, "storageBuffer8BitAccess"),
        (Feature::StorageBuffer16Bit, "storageBuffer16BitAccess"),
        (Feature::Int64Atomics, "shaderBufferInt64Atomics"),
    ] {
        let features = DeviceFeatures::with(hat_lowering::Feature::ALL.into_iter().filter(|&f| f != feature));
        let message = diagnostics_with(text, &LoweringOptions { features, ..Default::default() });
        assert!(message.contains(name), "{name}: {message}");
        assert!(message.starts_with("test.hat:"), "{message}");
    }
}

#[test]
fn a_64_bit_index_needs_int64_and_lowers_with_it() {
    let text = "kernel.func @k(%a: memref<?xindex>, %n: index) {
  %i = kernel.global_id x
  %v = buffer.load %a[%i] : memref<?xindex>
  %w = arith.addi %v, %n : index
  buffer.store %w, %a[%i] : memref<?xindex>
  kernel.return
}";
    let options = LoweringOptions {
        index_width: IndexWidth::Bits64,
        features: DeviceFeatures::with([Feature::Int64]),
        ..Default::default()
    };
    let spirv = lower_with(text, &options).unwrap_or_else(|e| panic!("{e}"));
    spirv_val(&spirv.words);
    let entry = &spirv.entry_points[0];
    assert_eq!(entry.push_constants.scalars[0].encoding, ScalarEncoding::Int64);
    assert_eq!(entry.push_constants.dims[0].encoding, ScalarEncoding::Int64);
    let message = diagnostics_with(text, &LoweringOptions { index_width: IndexWidth::Bits64, ..Default::default() });
    assert!(message.contains("shaderInt64"), "{message}");
}

#[test]
fn nested_control_flow_deeply() {
    let mut body = String::from("  %i = kernel.global_id x\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c2 = arith.constant 2 : index\n");
    let depth = 40;
    for level in 0..depth {
        if level % 2 == 0 {
            body.push_str(&format!("  scf.for %k{level} = %c0 to %c2 step %c1 {{\n"));
        } else {
            body.push_str(&format!(
                "  %p{level} = arith.cmpi ult, %k{}, %c1 : index\n  scf.if %p{level} {{\n",
                level - 1
            ));
        }
    }
    body.push_str("  %v = buffer.load %a[%i] : memref<?xi32>\n  %w = arith.addi %v, %v : i32\n  buffer.store %w, %a[%i] : memref<?xi32>\n");
    for _ in 0..depth {
        body.push_str("  }\n");
    }
    lower(&format!("kernel.func @deep(%a: memref<?xi32>) {{\n{body}  kernel.return\n}}"));
}

#[test]
fn booleans_in_buffers_need_only_8_bit_storage_and_in_workgroup_memory_nothing() {
    let text = "kernel.func @flags(%f: memref<8xi1>) workgroup(8) {
  %local = kernel.local_alloc : memref<8xi1>
  %l = kernel.local_id x
  %v = buffer.load %f[%l] : memref<8xi1>
  buffer.store %v, %local[%l] : memref<8xi1>
  kernel.barrier
  %w = buffer.load %local[%l] : memref<8xi1>
  %n = arith.xori %v, %w : i1
  buffer.store %n, %f[%l] : memref<8xi1>
  kernel.return
}";
    let options =
        LoweringOptions { features: DeviceFeatures::with([Feature::StorageBuffer8Bit]), ..Default::default() };
    let spirv = lower_with(text, &options).unwrap_or_else(|e| panic!("{e}"));
    spirv_val(&spirv.words);
    assert_eq!(spirv.entry_points[0].bindings[0].element, StoredElement::I1);
    let message = diagnostics_with(text, &LoweringOptions::default());
    assert!(message.contains("storageBuffer8BitAccess"), "{message}");
}

#[test]
fn half_floats_lower_with_their_features() {
    let text = "kernel.func @half(%h: memref<4xf16>, %s: f16) workgroup(4) {
  %i = kernel.global_id x
  %v = buffer.load %h[%i] : memref<4xf16>
  %one = arith.constant 1.5 : f16
  %w = arith.addf %v, %one : f16
  %x = arith.mulf %w, %s : f16
  %y = math.exp %x : f16
  %z = arith.maximumf %y, %v : f16
  %wide = arith.extf %z : f16 to f32
  %back = arith.truncf %wide : f32 to f16
  %n = arith.fptosi %back : f16 to i32
  %m = arith.sitofp %n : i32 to f16
  buffer.store %m, %h[%i] : memref<4xf16>
  kernel.return
}";
    let features = DeviceFeatures::with([Feature::Float16, Feature::StorageBuffer16Bit]);
    let spirv = lower_with(text, &LoweringOptions { features, ..Default::default() }).unwrap_or_else(|e| panic!("{e}"));
    spirv_val(&spirv.words);
    let entry = &spirv.entry_points[0];
    assert_eq!(entry.bindings[0].element, StoredElement::F16);
    assert_eq!(entry.push_constants.scalars[0].encoding, ScalarEncoding::Float32);
    let message = diagnostics_with(text, &LoweringOptions::default());
    assert!(message.contains("shaderFloat16"), "{message}");
}
