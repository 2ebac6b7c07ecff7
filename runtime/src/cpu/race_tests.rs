//! The race check ([`CpuBackend::set_check_races`]): what it reports and what it lets pass.

use super::*;
use crate::backend::KernelArg::{Buffer, Scalar as Arg};
use hat_ir::parse_source;

const KERNELS: &str = r#"
kernel.func @constant(%out: memref<64xi32>, %v: i32) workgroup(16) {
  %c3 = arith.constant 3 : index
  buffer.store %v, %out[%c3] : memref<64xi32>
  kernel.return
}

kernel.func @identity(%out: memref<64xi32>, %v: i32) workgroup(16) {
  %i = kernel.global_id x
  buffer.store %v, %out[%i] : memref<64xi32>
  kernel.return
}

kernel.func @atomic(%out: memref<64xi32>, %v: i32) workgroup(16) {
  %c3 = arith.constant 3 : index
  %old = kernel.atomic_rmw add %out[%c3], %v : memref<64xi32>
  kernel.return
}

kernel.func @shift_in_place(%data: memref<64xi32>) workgroup(16) {
  %i = kernel.global_id x
  %c1 = arith.constant 1 : index
  %c63 = arith.constant 63 : index
  %in = arith.cmpi ult, %i, %c63 : index
  scf.if %in {
    %j = arith.addi %i, %c1 : index
    %v = buffer.load %data[%i] : memref<64xi32>
    buffer.store %v, %data[%j] : memref<64xi32>
  }
  kernel.return
}

kernel.func @local_no_barrier(%out: memref<64xi32>) workgroup(16) {
  %tile = kernel.local_alloc : memref<16xi32>
  %l = kernel.local_id x
  %i = kernel.global_id x
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %v = arith.index_cast %i : index to i32
  buffer.store %v, %tile[%l] : memref<16xi32>
  %n = arith.addi %l, %c1 : index
  %m = arith.andi %n, %c15 : index
  %w = buffer.load %tile[%m] : memref<16xi32>
  buffer.store %w, %out[%i] : memref<64xi32>
  kernel.return
}

kernel.func @local_barrier(%out: memref<64xi32>) workgroup(16) {
  %tile = kernel.local_alloc : memref<16xi32>
  %l = kernel.local_id x
  %i = kernel.global_id x
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %v = arith.index_cast %i : index to i32
  buffer.store %v, %tile[%l] : memref<16xi32>
  kernel.barrier
  %n = arith.addi %l, %c1 : index
  %m = arith.andi %n, %c15 : index
  %w = buffer.load %tile[%m] : memref<16xi32>
  buffer.store %w, %out[%i] : memref<64xi32>
  kernel.return
}
"#;

fn run(kernel: &str, args: &[Option<i32>]) -> Result<(), RuntimeError> {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "races.hat", KERNELS).unwrap_or_else(|e| panic!("{e:?}"));
    let verified = hat_ir::verify_module(&ctx, module).unwrap_or_else(|errors| panic!("{errors:?}"));
    let op = ctx
        .body_ops(module)
        .into_iter()
        .find(|&op| ctx.attribute(op, "sym_name").and_then(|a| ctx.attribute_kind(a).as_str()) == Some(kernel))
        .unwrap_or_else(|| panic!("no kernel {kernel}"));
    let mut backend = CpuBackend::new();
    backend.set_check_races(true);
    let handle = backend.compile_kernel(verified.nested(op).unwrap()).unwrap();
    let mut kernel_args = Vec::new();
    for arg in args {
        kernel_args.push(match arg {
            Some(v) => Arg(Scalar::Int(i64::from(*v)), ElementType::I32),
            None => {
                let layout = BufferLayout { element: ElementType::I32, shape: vec![64] };
                let buffer = backend.allocate(&layout).unwrap();
                backend.copy_to_device(buffer, 0, &[0u8; 256]).unwrap();
                Buffer(buffer)
            }
        });
    }
    backend.dispatch(handle, [64, 1, 1], &kernel_args)
}

fn race_text(kernel: &str, args: &[Option<i32>]) -> String {
    match run(kernel, args) {
        Err(error @ RuntimeError::DataRace(_)) => error.to_string(),
        other => panic!("{kernel}: expected a data race, got {other:?}"),
    }
}

#[test]
fn the_first_two_conflicting_work_items_are_named() {
    assert_eq!(
        race_text("constant", &[None, Some(7)]),
        "data race in kernel '@constant': work items (0, 0, 0) and (1, 0, 0) both store to %out[3], with nothing \
         ordering them"
    );
    assert_eq!(
        race_text("shift_in_place", &[None]),
        "data race in kernel '@shift_in_place': work item (1, 0, 0) loads %data[1], which work item (0, 0, 0) \
         stores to, with nothing ordering them"
    );
    let local = race_text("local_no_barrier", &[None]);
    assert!(local.contains("workgroup-local buffer #0[1]"), "{local}");
}

#[test]
fn race_free_kernels_and_atomics_pass() {
    run("identity", &[None, Some(7)]).unwrap();
    run("atomic", &[None, Some(7)]).unwrap();
    // Store, barrier, then load a neighbour's element: ordered.
    run("local_barrier", &[None]).unwrap();
}

#[test]
fn the_check_is_off_by_default() {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "races.hat", KERNELS).unwrap();
    let verified = hat_ir::verify_module(&ctx, module).unwrap();
    let op = ctx.body_ops(module)[0];
    let mut backend = CpuBackend::new();
    let handle = backend.compile_kernel(verified.nested(op).unwrap()).unwrap();
    let out = backend.allocate(&BufferLayout { element: ElementType::I32, shape: vec![64] }).unwrap();
    backend.dispatch(handle, [64, 1, 1], &[Buffer(out), Arg(Scalar::Int(7), ElementType::I32)]).unwrap();
}
