//! The interfaces of the hat dialects as analyses see them: region branches, loops, calls,
//! launches and execution spaces, asked through `Context::interface` only.

use hat_ir::interfaces::{
    constant_integers, enclosing_execution_space, resolve_callee, trip_count, CallOpInterface, CallableOpInterface,
    ExecutionSpace, LaunchOpInterface, LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint,
};
use hat_ir::{Context, Op};

const PROGRAM: &str = r#"
kernel.helper @twice(%x: i32) -> i32 {
  %y = arith.addi %x, %x : i32
  kernel.return %y : i32
}
kernel.func @k(%a: memref<64xi32>, %s: i32) {
  %i = kernel.global_id x
  %v = kernel.call @twice(%s) : (i32) -> i32
  buffer.store %v, %a[%i] : memref<64xi32>
  kernel.return
}
compute.func @helper(%n: index) -> index {
  compute.return %n : index
}
compute.func @main(%a: memref<64xi32>, %n: index, %p: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c10 = arith.constant 10 : index
  %c64 = arith.constant 64 : index
  %s = arith.constant 7 : i32
  %true = arith.constant true
  %sum = scf.for %i = %c0 to %c10 step %c2 iter_args(%acc = %c0) -> (index) {
    %next = arith.addi %acc, %i : index
    scf.yield %next : index
  }
  scf.for %i = %c10 to %c0 step %c1 {
    scf.yield
  }
  scf.for %i = %c0 to %n step %c1 {
    scf.yield
  }
  %r = scf.if %p -> (index) {
    scf.yield %c1 : index
  } else {
    scf.yield %c2 : index
  }
  scf.if %true {
    scf.yield
  }
  %w = scf.while (%x = %c0) : (index) -> index {
    %go = arith.cmpi slt, %x, %n : index
    scf.condition(%go) %x : index
  } do {
  ^bb0(%y: index):
    %z = arith.addi %y, %c1 : index
    scf.yield %z : index
  }
  %m = compute.call @helper(%n) : (index) -> index
  compute.dispatch @k[%c64](%a, %s) : (memref<64xi32>, i32)
  compute.return
}
"#;

fn parse() -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = hat_ir::parse_source(&mut ctx, "interfaces.hat", PROGRAM).expect("parses");
    assert!(hat_ir::verify(&ctx, module).is_empty());
    (ctx, module)
}

fn ops_named(ctx: &Context, module: Op, name: &str) -> Vec<Op> {
    ctx.walk(module).into_iter().filter(|&op| ctx.name_str(op) == name).collect()
}

fn branches(ctx: &Context, op: Op) -> &'static dyn RegionBranchOpInterface {
    ctx.interface::<dyn RegionBranchOpInterface>(op).expect("a region-branch op")
}

#[test]
fn counted_loops_know_their_trip_counts_and_carried_values() {
    let (ctx, module) = parse();
    let loops = ops_named(&ctx, module, "scf.for");
    let trips: Vec<Option<u64>> = loops.iter().map(|&l| trip_count(&ctx, l)).collect();
    assert_eq!(trips, [Some(5), Some(0), None]);
    let first = loops[0];
    let looping = ctx.interface::<dyn LoopLikeOpInterface>(first).unwrap();
    assert_eq!(looping.init_operands(&ctx, first), 3..4);
    assert_eq!(looping.region_iter_args(&ctx, first), 1..2);
    let body = ctx.region_blocks(looping.body(&ctx, first))[0];
    assert_eq!(looping.induction_variable(&ctx, first), Some(ctx.block_arguments(body)[0]));
    // Entering: constant bounds decide between the body and skipping it.
    let enter = |op: Op| branches(&ctx, op).successors(&ctx, op, RegionPoint::Parent, &constant_integers(&ctx, op));
    assert_eq!(enter(loops[0]).as_slice(), [RegionPoint::Region(0)]);
    assert_eq!(enter(loops[1]).as_slice(), [RegionPoint::Parent]);
    assert_eq!(enter(loops[2]).as_slice(), [RegionPoint::Region(0), RegionPoint::Parent]);
    assert!(branches(&ctx, first).is_repetitive_region(&ctx, first, 0));
}

#[test]
fn conditionals_narrow_on_constant_conditions() {
    let (ctx, module) = parse();
    let ifs = ops_named(&ctx, module, "scf.if");
    let unknown = branches(&ctx, ifs[0]).successors(&ctx, ifs[0], RegionPoint::Parent, &[None]);
    assert_eq!(unknown.as_slice(), [RegionPoint::Region(0), RegionPoint::Region(1)]);
    let constants = constant_integers(&ctx, ifs[1]);
    assert_eq!(constants, [Some(1)], "i1 true reads as 1");
    let taken = branches(&ctx, ifs[1]).successors(&ctx, ifs[1], RegionPoint::Parent, &[Some(0)]);
    assert_eq!(taken.as_slice(), [RegionPoint::Parent], "no else: a false condition skips the op");
    assert!(!branches(&ctx, ifs[0]).is_repetitive_region(&ctx, ifs[0], 0));
    assert_eq!(
        branches(&ctx, ifs[0]).successors(&ctx, ifs[0], RegionPoint::Region(1), &[]).as_slice(),
        [RegionPoint::Parent]
    );
}

#[test]
fn while_loops_forward_all_but_the_condition() {
    let (ctx, module) = parse();
    let op = ops_named(&ctx, module, "scf.while")[0];
    let interface = branches(&ctx, op);
    assert_eq!(interface.successors(&ctx, op, RegionPoint::Parent, &[]).as_slice(), [RegionPoint::Region(0)]);
    assert_eq!(
        interface.successors(&ctx, op, RegionPoint::Region(0), &[None]).as_slice(),
        [RegionPoint::Region(1), RegionPoint::Parent]
    );
    assert_eq!(interface.successors(&ctx, op, RegionPoint::Region(0), &[Some(0)]).as_slice(), [RegionPoint::Parent]);
    assert_eq!(interface.successors(&ctx, op, RegionPoint::Region(1), &[]).as_slice(), [RegionPoint::Region(0)]);
    let before = ctx.region_blocks(ctx.regions(op)[0])[0];
    let condition = ctx.last_op(before).unwrap();
    assert_eq!(interface.terminator_operands(&ctx, op, condition, 0, RegionPoint::Region(1)), 1..2);
    assert_eq!(interface.entry_operands(&ctx, op, RegionPoint::Region(0)), 0..1);
    assert!(interface.is_repetitive_region(&ctx, op, 0) && interface.is_repetitive_region(&ctx, op, 1));
}

#[test]
fn calls_resolve_to_callables_in_both_spaces() {
    let (ctx, module) = parse();
    let host_call = ops_named(&ctx, module, "compute.call")[0];
    let device_call = ops_named(&ctx, module, "kernel.call")[0];
    for call in [host_call, device_call] {
        let interface = ctx.interface::<dyn CallOpInterface>(call).unwrap();
        assert_eq!(interface.arguments(&ctx, call), 0..1);
        let callee = resolve_callee(&ctx, call).expect("resolves");
        let callable = ctx.interface::<dyn CallableOpInterface>(callee).unwrap();
        assert!(callable.body(&ctx, callee).is_some());
        assert!(callable.is_discardable(&ctx, callee, true));
    }
    let (_, space) = enclosing_execution_space(&ctx, host_call).unwrap();
    assert_eq!(space, ExecutionSpace::Host);
    let (kernel, space) = enclosing_execution_space(&ctx, device_call).unwrap();
    assert_eq!((ctx.name_str(kernel), space), ("kernel.func", ExecutionSpace::Device));
    let kernel_callable = ctx.interface::<dyn CallableOpInterface>(kernel).unwrap();
    assert!(kernel_callable.is_entry(&ctx, kernel) && !kernel_callable.is_discardable(&ctx, kernel, true));
    let main = hat_ir::interfaces::lookup_symbol(&ctx, host_call, "main").unwrap();
    let main_callable = ctx.interface::<dyn CallableOpInterface>(main).unwrap();
    assert!(main_callable.is_entry(&ctx, main) && !main_callable.is_discardable(&ctx, main, true));
    let signature = main_callable.signature(&ctx, main).unwrap();
    assert_eq!((signature.0.len(), signature.1.len()), (3, 0));
}

#[test]
fn launches_split_grid_and_arguments() {
    let (ctx, module) = parse();
    let dispatch = ops_named(&ctx, module, "compute.dispatch")[0];
    let launch = ctx.interface::<dyn LaunchOpInterface>(dispatch).unwrap();
    assert_eq!(launch.grid(&ctx, dispatch), 0..1);
    assert_eq!(launch.arguments(&ctx, dispatch), 1..3);
    assert_eq!(ctx.ident_str(launch.kernel(&ctx, dispatch).unwrap()), "k");
    // Ops without the interface answer None.
    let store = ops_named(&ctx, module, "buffer.store")[0];
    assert!(ctx.interface::<dyn LaunchOpInterface>(store).is_none());
    assert!(ctx.interface::<dyn RegionBranchOpInterface>(store).is_none());
}

#[test]
fn interfaces_are_discoverable_by_name() {
    let ctx = hat_dialects::context();
    let names = ctx.interface_names(ctx.find_op_name("scf.for").unwrap());
    assert!(names.iter().any(|n| n.contains("RegionBranchOpInterface")), "{names:?}");
    assert!(names.iter().any(|n| n.contains("LoopLikeOpInterface")), "{names:?}");
}
