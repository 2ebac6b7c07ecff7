//! The hat dialects' interface answers at the edges: trip counts at the extremes of `i64` and of
//! narrow types, zero and negative steps, successors narrowed by constants, the operand ranges of
//! entries and terminators, repetitive regions, calls with several results, launches with three
//! grid dimensions.

use hat_ir::interfaces::{
    constant_integers, trip_count, CallOpInterface, LaunchOpInterface, LoopLikeOpInterface, RegionBranchOpInterface,
    RegionPoint,
};
use hat_ir::{parse_source, verify, Context, Op};
use RegionPoint::{Parent, Region};

fn parse(text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "review.hat", text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let errors = verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}\n{text}");
    (ctx, module)
}

/// Parses a loop whose constant step may be zero or negative: the verifier rejects exactly that
/// (as MLIR's does), and the interfaces must still answer safely for IR not yet verified.
fn parse_any_step(text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "review.hat", text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let errors = verify(&ctx, module);
    assert!(errors.iter().all(|e| e.message.contains("expects a positive step")), "{errors:?}\n{text}");
    (ctx, module)
}

/// Every op named `name` under `root`, in order.
fn ops_named(ctx: &Context, root: Op, name: &str) -> Vec<Op> {
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(op) = stack.pop() {
        if ctx.name_str(op) == name {
            found.push(op);
        }
        for &region in ctx.regions(op).iter().rev() {
            for &block in ctx.region_blocks(region).iter().rev() {
                let ops: Vec<Op> = ctx.block_ops(block).collect();
                stack.extend(ops.into_iter().rev());
            }
        }
    }
    found
}

/// A function with one `scf.for` of constant bounds `lower`, `upper`, `step` of type `ty`.
fn counted(lower: i64, upper: i64, step: i64, ty: &str) -> String {
    let suffix = if ty == "index" { String::new() } else { format!(" : {ty}") };
    format!(
        r#"
compute.func @f() {{
  %lo = arith.constant {lower} : {ty}
  %hi = arith.constant {upper} : {ty}
  %st = arith.constant {step} : {ty}
  scf.for %i = %lo to %hi step %st{suffix} {{
    scf.yield
  }}
  compute.return
}}
"#
    )
}

fn loop_trip_count(lower: i64, upper: i64, step: i64, ty: &str) -> Option<u64> {
    let (ctx, module) = parse_any_step(&counted(lower, upper, step, ty));
    let op = ops_named(&ctx, module, "scf.for")[0];
    trip_count(&ctx, op)
}

/// The number of values `for (i = lower; i < upper; i += step)` takes in a signed `bits`-bit
/// type, stopping where `i + step` leaves the type (as the executor and the CPU backend do).
fn iterations(lower: i64, upper: i64, step: i64, bits: u32) -> u64 {
    let max = if bits == 64 { i64::MAX as i128 } else { (1i128 << (bits - 1)) - 1 };
    let (mut i, mut count) = (lower as i128, 0u64);
    while i < upper as i128 {
        count += 1;
        i += step as i128;
        if i > max {
            break;
        }
    }
    count
}

#[test]
fn trip_counts_at_the_extremes_do_not_overflow() {
    let (min, max) = (i64::MIN, i64::MAX);
    assert_eq!(loop_trip_count(min, max, 1, "index"), Some(u64::MAX));
    assert_eq!(loop_trip_count(min, max, max, "index"), Some(3));
    assert_eq!(loop_trip_count(min, max, 1 << 62, "index"), Some(4));
    assert_eq!(loop_trip_count(max - 1, max, max, "index"), Some(1));
    assert_eq!(loop_trip_count(min, min + 1, max, "index"), Some(1));
    assert_eq!(loop_trip_count(max, min, 1, "index"), Some(0));
    assert_eq!(loop_trip_count(-3, 3, 2, "index"), Some(3));
    for (lower, upper, step) in [(min, max, max), (min, max, 1 << 62), (-3, 3, 2), (max - 7, max, 5)] {
        assert_eq!(loop_trip_count(lower, upper, step, "index"), Some(iterations(lower, upper, step, 64)));
    }
}

#[test]
fn trip_counts_of_narrow_types_follow_their_signed_values() {
    for (lower, upper, step) in [(-128, 127, 1), (-128, 127, 127), (100, 127, 10), (127, -128, 1), (-1, 0, 1)] {
        assert_eq!(
            loop_trip_count(lower, upper, step, "i8"),
            Some(iterations(lower, upper, step, 8)),
            "i8: {lower} to {upper} step {step}"
        );
    }
    // 255 as an i8 is -1: a negative step, no trip count.
    assert_eq!(loop_trip_count(0, 5, 255, "i8"), None);
    assert_eq!(loop_trip_count(0, 100, 200, "i8"), None);
    assert_eq!(loop_trip_count(i32::MIN as i64, i32::MAX as i64, 1, "i32"), Some(u32::MAX as u64));
}

#[test]
fn zero_and_negative_steps_have_no_trip_count_and_keep_both_successors() {
    for step in [0, -1, i64::MIN] {
        let (ctx, module) = parse_any_step(&counted(0, 10, step, "index"));
        let op = ops_named(&ctx, module, "scf.for")[0];
        assert_eq!(trip_count(&ctx, op), None, "step {step}");
        let branches = ctx.interface::<dyn RegionBranchOpInterface>(op).unwrap();
        let constants = constant_integers(&ctx, op);
        assert_eq!(&branches.successors(&ctx, op, Parent, &constants)[..], [Region(0), Parent], "step {step}");
    }
    // A loop that cannot start needs no step: it runs zero times whatever the step.
    let (ctx, module) = parse_any_step(&counted(10, 0, 0, "index"));
    let op = ops_named(&ctx, module, "scf.for")[0];
    assert_eq!(trip_count(&ctx, op), None, "a zero step has no trip count");
    // The verifier rejects each of them.
    for step in [0, -1] {
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, "review.hat", &counted(0, 10, step, "index")).unwrap();
        let errors = verify(&ctx, module);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].message.contains(&format!("the step is the constant {step}")), "{errors:?}");
    }
}

const SHAPES: &str = r#"
compute.func @pair(%a: index) -> (index, i1) {
  %t = arith.constant true
  compute.return %a, %t : index, i1
}
kernel.func @k(%a: memref<8xi32>, %s: i32) workgroup(2, 2, 2) {
  kernel.return
}
compute.func @f(%n: index, %a: memref<8xi32>, %p: i1) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %s = arith.constant 3 : i32
  %x, %flag = compute.call @pair(%n) : (index) -> (index, i1)
  compute.dispatch @k[%c2, %c2, %c2](%a, %s) : (memref<8xi32>, i32)
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%u = %c0, %v = %x) -> (index, index) {
    scf.yield %v, %u : index, index
  }
  scf.if %p {
    scf.yield
  }
  %w:2 = scf.while (%a0 = %c0, %b0 = %p) : (index, i1) -> (index, i1) {
    %go = arith.cmpi slt, %a0, %n : index
    scf.condition(%go) %a0, %b0 : index, i1
  } do {
  ^bb0(%a1: index, %b1: i1):
    %a2 = arith.addi %a1, %c1 : index
    scf.yield %a2, %b1 : index, i1
  }
  compute.return %r#0 : index
}
"#;

#[test]
fn operand_ranges_of_entries_terminators_calls_and_launches() {
    let (ctx, module) = parse(SHAPES);
    let call = ops_named(&ctx, module, "compute.call")[0];
    let calling = ctx.interface::<dyn CallOpInterface>(call).unwrap();
    assert_eq!(calling.arguments(&ctx, call), 0..1);
    assert_eq!(ctx.result_count(call), 2);

    let dispatch = ops_named(&ctx, module, "compute.dispatch")[0];
    let launch = ctx.interface::<dyn LaunchOpInterface>(dispatch).unwrap();
    assert_eq!((launch.grid(&ctx, dispatch), launch.arguments(&ctx, dispatch)), (0..3, 3..5));

    let for_op = ops_named(&ctx, module, "scf.for")[0];
    let branches = ctx.interface::<dyn RegionBranchOpInterface>(for_op).unwrap();
    let looping = ctx.interface::<dyn LoopLikeOpInterface>(for_op).unwrap();
    assert_eq!(branches.entry_operands(&ctx, for_op, Region(0)), 3..5);
    assert_eq!(branches.entry_operands(&ctx, for_op, Parent), 3..5);
    assert_eq!(branches.successor_inputs(&ctx, for_op, Region(0)), 1..3);
    assert_eq!(branches.successor_inputs(&ctx, for_op, Parent), 0..2);
    assert_eq!((looping.init_operands(&ctx, for_op), looping.region_iter_args(&ctx, for_op)), (3..5, 1..3));
    assert!(branches.is_repetitive_region(&ctx, for_op, 0));

    let if_op = ops_named(&ctx, module, "scf.if")[0];
    let branches = ctx.interface::<dyn RegionBranchOpInterface>(if_op).unwrap();
    assert_eq!(&branches.successors(&ctx, if_op, Parent, &[Some(0)])[..], [Parent], "no else: past the op");
    assert_eq!(&branches.successors(&ctx, if_op, Parent, &[Some(1)])[..], [Region(0)]);
    assert_eq!(&branches.successors(&ctx, if_op, Parent, &[])[..], [Region(0), Parent]);
    assert!(!branches.is_repetitive_region(&ctx, if_op, 0));

    let while_op = ops_named(&ctx, module, "scf.while")[0];
    let branches = ctx.interface::<dyn RegionBranchOpInterface>(while_op).unwrap();
    let condition = ops_named(&ctx, module, "scf.condition")[0];
    let yield_op = *ops_named(&ctx, module, "scf.yield").last().unwrap();
    assert_eq!(branches.entry_operands(&ctx, while_op, Region(0)), 0..2);
    assert_eq!(branches.terminator_operands(&ctx, while_op, condition, 0, Region(1)), 1..3);
    assert_eq!(branches.terminator_operands(&ctx, while_op, condition, 0, Parent), 1..3);
    assert_eq!(branches.terminator_operands(&ctx, while_op, yield_op, 1, Region(0)), 0..2);
    assert_eq!(&branches.successors(&ctx, while_op, Region(0), &[Some(1)])[..], [Region(1)]);
    assert_eq!(&branches.successors(&ctx, while_op, Region(0), &[Some(0)])[..], [Parent]);
    assert_eq!(&branches.successors(&ctx, while_op, Region(1), &[Some(0)])[..], [Region(0)]);
    assert!(branches.is_repetitive_region(&ctx, while_op, 0) && branches.is_repetitive_region(&ctx, while_op, 1));
}
