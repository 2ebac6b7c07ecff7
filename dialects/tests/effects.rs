//! The memory effects of the hat dialects as analyses see them: which operands index an access,
//! must- and may-writes, effects on parameters of host functions, workgroup memory, atomics and
//! synchronisation.

use hat_ir::interfaces::CallableOpInterface;
use hat_ir::{Context, EffectKind, EffectTarget, Extent, MemoryEffect, MemoryEffects, MemorySpace, Op};

const PROGRAM: &str = r#"
compute.host_func @show(read memref<8x8xi32>, write memref<4xf32>, memref<4xf32>, index)
kernel.func @k(%a: memref<8x8xi32>) workgroup(8, 8) {
  %i = kernel.global_id x
  %j = kernel.global_id y
  %tile = kernel.local_alloc : memref<8x8xi32>
  %v = buffer.load %a[%i, %j] : memref<8x8xi32>
  buffer.store %v, %tile[%j, %i] : memref<8x8xi32>
  kernel.barrier
  %one = arith.constant 1 : i32
  %old = kernel.atomic_rmw add %a[%j, %i], %one : memref<8x8xi32>
  kernel.return
}
compute.func @main(%a: memref<8x8xi32>, %f: memref<4xf32>, %g: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  buffer.to_device %a[%c0, %c2] : memref<8x8xi32>
  compute.dispatch @k[%c8, %c8](%a) : (memref<8x8xi32>)
  compute.sync
  buffer.from_device %a : memref<8x8xi32>
  compute.call @show(%a, %f, %g, %c0) : (memref<8x8xi32>, memref<4xf32>, memref<4xf32>, index) -> ()
  compute.return
}
"#;

fn parse() -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = hat_ir::parse_source(&mut ctx, "effects.hat", PROGRAM).expect("parses");
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    (ctx, module)
}

fn effects_of(ctx: &Context, module: Op, name: &str) -> MemoryEffects {
    let op = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == name).unwrap();
    ctx.definition(ctx.name(op)).unwrap().memory_effects(ctx, op)
}

#[test]
fn element_accesses_name_their_index_operands() {
    let (ctx, module) = parse();
    let load = effects_of(&ctx, module, "buffer.load");
    let [read] = load.known().unwrap() else { panic!("{load:?}") };
    assert_eq!(
        (read.kind, read.target, read.extent),
        (EffectKind::Read, EffectTarget::Operand(0), Extent::Element { first: 1, count: 2 })
    );
    assert_eq!(read.extent.operands(), 1..3);
    let store = effects_of(&ctx, module, "buffer.store");
    let [write] = store.known().unwrap() else { panic!("{store:?}") };
    assert_eq!((write.target, write.extent.operands(), write.must), (EffectTarget::Operand(1), 2..4, true));
}

#[test]
fn ranged_transfers_name_offset_and_count() {
    let (ctx, module) = parse();
    let to_device = effects_of(&ctx, module, "buffer.to_device");
    let effects = to_device.known().unwrap();
    assert!(effects.iter().all(|e| e.extent == Extent::Span { offset: 1, count: 2 }), "{effects:?}");
    assert_eq!(effects[0].extent.operands(), 1..3);
    assert_eq!((effects[0].space, effects[1].space), (MemorySpace::Host, MemorySpace::Device));
    let whole = effects_of(&ctx, module, "buffer.from_device");
    assert!(whole.known().unwrap().iter().all(|e| e.extent == Extent::Whole));
}

#[test]
fn atomics_workgroup_memory_and_synchronisation() {
    let (ctx, module) = parse();
    let atomic = effects_of(&ctx, module, "kernel.atomic_rmw");
    let effects = atomic.known().unwrap();
    assert_eq!(effects.len(), 2);
    assert!(effects.iter().all(|e| e.atomic && e.extent == Extent::Element { first: 1, count: 2 }), "{effects:?}");
    let local = effects_of(&ctx, module, "kernel.local_alloc");
    assert_eq!(local.known().unwrap()[0].space, MemorySpace::Workgroup);
    let barrier = effects_of(&ctx, module, "kernel.barrier");
    assert_eq!(barrier, MemoryEffects::of([MemoryEffect::synchronize(MemorySpace::Workgroup)]));
    assert!(barrier.synchronizes());
    let sync = effects_of(&ctx, module, "compute.sync");
    assert_eq!(sync, MemoryEffects::of([MemoryEffect::synchronize(MemorySpace::Device)]));
    // A dispatch's effects are for the kernel-effects analysis to work out.
    assert_eq!(effects_of(&ctx, module, "compute.dispatch"), MemoryEffects::Unknown);
}

#[test]
fn host_functions_declare_effects_on_their_parameters() {
    let (ctx, module) = parse();
    let show = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "compute.host_func").unwrap();
    let callable = ctx.interface::<dyn CallableOpInterface>(show).unwrap();
    let on = |kind, index| MemoryEffect::new(kind, EffectTarget::Parameter(index)).in_space(MemorySpace::Host);
    assert_eq!(
        callable.parameter_effects(&ctx, show),
        MemoryEffects::of([
            on(EffectKind::Read, 0),
            on(EffectKind::Write, 1).may(),
            on(EffectKind::Read, 2),
            on(EffectKind::Write, 2).may(),
        ])
    );
    // A function with a body has no declared summary: analyses look into the body.
    let main = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "compute.func").unwrap();
    let body_callable = ctx.interface::<dyn CallableOpInterface>(main).unwrap();
    assert_eq!(body_callable.parameter_effects(&ctx, main), MemoryEffects::Unknown);
}
