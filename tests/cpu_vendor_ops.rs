//! A vendor's loop, branch, call and function ops running in kernels on the CPU backend, which
//! knows none of their names: it compiles them through the op interfaces and traits alone.
//!
//! The dialect `dev` (`hat_test_dialects::dev`) is defined with nothing but `hat-ir`'s public API, with operand and
//! block-argument layouts unlike `scf`'s:
//! - `"dev.count"(%step, %upper, %lower, inits...) ({ ^bb0(carried..., %iv): ... "dev.again"(next...) })`
//!   — a counted loop (`LoopLikeOpInterface` only): bounds first and reversed, the induction
//!   variable the body's LAST argument;
//! - `"dev.repeat_while"(inits...) ({ ^bb0(carried...): ... "dev.again_if"(%go, next...) })` — a
//!   do-while loop (`RegionBranchOpInterface` only): the body runs, then again while `%go`;
//! - `"dev.unless"(%skip, defaults...) ({ ... "dev.again"(values...) })` — runs its region when
//!   `%skip` is false (results: what it yields), else its results are the defaults;
//! - `"dev.device_fn"` / `"dev.host_fn"` — functions (callables) of device / host code, ending in
//!   `"dev.give"(values)`; `"dev.run"(args...) {function = @f}` calls one.
//!
//! The shared vendor dialect (`hat_test_dialects::vendor`) (its `vendor.repeat`, bounds last) runs in
//! a kernel too.

use hat_test_dialects::dev::context;

use hat_ir::{parse_source, Context, Op};
use hat_runtime::{Backend, BufferLayout, CpuBackend, DeviceBuffer, ElementType, KernelArg, KernelHandle, Scalar};

/// A parsed and verified module and its top-level ops by symbol name.
struct Module {
    ctx: Context,
    module: Op,
    ops: Vec<(String, Op)>,
}

impl Module {
    fn new(text: &str) -> Module {
        let mut ctx = context();
        let module = parse_source(&mut ctx, "dev.hat", text).unwrap_or_else(|e| panic!("{e:?}"));
        let errors = hat_ir::verify(&ctx, module);
        assert!(errors.is_empty(), "{errors:?}");
        let ops = ctx
            .body_ops(module)
            .into_iter()
            .filter_map(|op| Some((hat_ir::verifier::symbol_name(&ctx, op)?.to_string(), op)))
            .collect();
        Module { ctx, module, ops }
    }

    fn op(&self, name: &str) -> Op {
        self.ops.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no @{name}")).1
    }

    fn compile(&self, backend: &mut CpuBackend, name: &str) -> Result<KernelHandle, String> {
        let verified = hat_ir::verify_module(&self.ctx, self.module).expect("verified in new()");
        backend.compile_kernel(verified.nested(self.op(name)).expect("in the module")).map_err(|e| e.to_string())
    }
}

fn index(value: i64) -> KernelArg {
    KernelArg::Scalar(Scalar::Int(value), ElementType::Index)
}

fn download_i64(backend: &mut CpuBackend, buffer: DeviceBuffer) -> Vec<i64> {
    let mut bytes = vec![0u8; backend.layout(buffer).unwrap().bytes()];
    backend.copy_from_device(buffer, 0, &mut bytes).unwrap();
    bytes.chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

const LOOPS: &str = r#"
"dev.device_fn"() ({
^bb0(%x: i64):
  %y = arith.muli %x, %x : i64
  "dev.give"(%y) : (i64) -> ()
}) {sym_name = "square", function_type = (i64) -> i64} : () -> ()

kernel.func @loops(%out: memref<5x8xi64>, %lower: index, %upper: index, %step: index) workgroup(8) {
  %i = kernel.global_id x
  %i64 = arith.index_cast %i : index to i64
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %fib:2 = "dev.count"(%c1, %i, %c0, %zero, %one) ({
  ^bb0(%a: i64, %b: i64, %k: index):
    %s = arith.addi %a, %b : i64
    "dev.again"(%b, %s) : (i64, i64) -> ()
  }) : (index, index, index, i64, i64) -> (i64, i64)
  buffer.store %fib#0, %out[%c0, %i] : memref<5x8xi64>
  %sum = "dev.count"(%step, %upper, %lower, %i64) ({
  ^bb0(%acc: i64, %k: index):
    %k64 = arith.index_cast %k : index to i64
    %sq = "dev.run"(%k64) {function = @square} : (i64) -> i64
    %next = arith.addi %acc, %sq : i64
    "dev.again"(%next) : (i64) -> ()
  }) : (index, index, index, i64) -> i64
  buffer.store %sum, %out[%c1, %i] : memref<5x8xi64>
  %runs:2 = "dev.repeat_while"(%i64, %zero) ({
  ^bb0(%n: i64, %count: i64):
    %n1 = arith.subi %n, %one : i64
    %count1 = arith.addi %count, %one : i64
    %go = arith.cmpi sgt, %n1, %zero : i64
    "dev.again_if"(%go, %n1, %count1) : (i1, i64, i64) -> ()
  }) : (i64, i64) -> (i64, i64)
  buffer.store %runs#1, %out[%c2, %i] : memref<5x8xi64>
  %bit = arith.andi %i64, %one : i64
  %odd = arith.cmpi ne, %bit, %zero : i64
  %ten = arith.constant 10 : i64
  %picked = "dev.unless"(%odd, %i64) ({
    %tenfold = arith.muli %i64, %ten : i64
    "dev.again"(%tenfold) : (i64) -> ()
  }) : (i1, i64) -> i64
  buffer.store %picked, %out[%c3, %i] : memref<5x8xi64>
  %total = "vendor.repeat"(%zero, %c0, %i, %c1) ({
  ^bb0(%k: index, %acc: i64):
    %k64 = arith.index_cast %k : index to i64
    %next = arith.addi %acc, %k64 : i64
    "vendor.next"(%next) : (i64) -> ()
  }) : (i64, index, index, index) -> i64
  buffer.store %total, %out[%c4, %i] : memref<5x8xi64>
  kernel.return
}
"#;

#[test]
fn vendor_loops_branches_and_calls_run_in_a_kernel() {
    let module = Module::new(LOOPS);
    let mut backend = CpuBackend::new();
    let kernel = module.compile(&mut backend, "loops").expect("compiles");
    let out = backend.allocate(&BufferLayout { element: ElementType::I64, shape: vec![5, 8] }).unwrap();
    let args = |lower, upper, step| [KernelArg::Buffer(out), index(lower), index(upper), index(step)];
    backend.dispatch(kernel, [8, 1, 1], &args(1, 10, 3)).unwrap();
    let rows = download_i64(&mut backend, out);
    let row = |r: usize| rows[r * 8..(r + 1) * 8].to_vec();
    assert_eq!(row(0), [0, 1, 1, 2, 3, 5, 8, 13], "dev.count carries a swapped pair");
    // Squares of 1, 4 and 7 (by a call of a device function), plus the work item's id.
    assert_eq!(row(1), (0..8).map(|i| 66 + i).collect::<Vec<_>>(), "dev.count with its bounds reversed");
    assert_eq!(row(2), [1, 1, 2, 3, 4, 5, 6, 7], "a do-while loop runs at least once");
    assert_eq!(row(3), [0, 1, 20, 3, 40, 5, 60, 7], "dev.unless runs its region when its operand is false");
    assert_eq!(row(4), (0..8).map(|i| i * (i - 1) / 2).collect::<Vec<_>>(), "vendor.repeat, bounds last");

    // A zero-trip loop gives its inits; a loop that would not end is reported under its own name.
    backend.dispatch(kernel, [8, 1, 1], &args(5, 5, 0)).unwrap();
    assert_eq!(download_i64(&mut backend, out)[8..16], (0..8).collect::<Vec<_>>());
    let message = backend.dispatch(kernel, [8, 1, 1], &args(0, 5, 0)).unwrap_err().to_string();
    assert!(message.contains("'dev.count' step must be positive, got 0 in kernel 'loops'"), "{message}");
}

#[test]
fn a_vendor_device_function_is_a_kernel_entry() {
    let text = r#"
"dev.device_fn"() ({
^bb0(%out: memref<8xi64>):
  %i = kernel.global_id x
  %v = arith.index_cast %i : index to i64
  buffer.store %v, %out[%i] : memref<8xi64>
  "dev.give"() : () -> ()
}) {sym_name = "ids", function_type = (memref<8xi64>) -> (), workgroup_size = array<i64: 4, 1, 1>} : () -> ()
"dev.host_fn"() ({
^bb0(%out: memref<8xi64>):
  "dev.give"() : () -> ()
}) {sym_name = "on_host", function_type = (memref<8xi64>) -> ()} : () -> ()
"#;
    let module = Module::new(text);
    let mut backend = CpuBackend::new();
    let kernel = module.compile(&mut backend, "ids").expect("a device function with a body compiles");
    assert_eq!(backend.workgroup_size(kernel), Some([4, 1, 1]));
    let out = backend.allocate(&BufferLayout { element: ElementType::I64, shape: vec![8] }).unwrap();
    backend.dispatch(kernel, [8, 1, 1], &[KernelArg::Buffer(out)]).unwrap();
    assert_eq!(download_i64(&mut backend, out), (0..8).collect::<Vec<_>>());
    let message = module.compile(&mut backend, "on_host").unwrap_err();
    assert!(message.contains("only a 'kernel.func'"), "{message}");
}

#[test]
fn calls_of_host_code_and_undecidable_branches_are_compile_errors() {
    let text = r#"
"dev.host_fn"() ({
^bb0(%x: i64):
  "dev.give"(%x) : (i64) -> ()
}) {sym_name = "host_identity", function_type = (i64) -> i64} : () -> ()
"vendor.proc"() ({
^bb0(%x: i64):
  "vendor.ret"(%x) : (i64) -> ()
}) {sym_name = "vendor_identity", function_type = (i64) -> i64} : () -> ()

kernel.func @calls_host(%out: memref<1xi64>) workgroup(1) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i64
  %v = "dev.run"(%one) {function = @host_identity} : (i64) -> i64
  buffer.store %v, %out[%c0] : memref<1xi64>
  kernel.return
}

kernel.func @invokes_host(%out: memref<1xi64>) workgroup(1) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i64
  %v = "vendor.invoke"(%one) {target = @vendor_identity} : (i64) -> i64
  buffer.store %v, %out[%c0] : memref<1xi64>
  kernel.return
}

kernel.func @undecided(%out: memref<1xi64>, %skip: i32) workgroup(1) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i64
  %v = "dev.unless"(%skip, %one) ({
    "dev.again"(%one) : (i64) -> ()
  }) : (i32, i64) -> i64
  buffer.store %v, %out[%c0] : memref<1xi64>
  kernel.return
}
"#;
    let module = Module::new(text);
    let mut backend = CpuBackend::new();
    let message = module.compile(&mut backend, "calls_host").unwrap_err();
    assert!(
        message.contains("cannot run 'dev.run': '@host_identity' is a 'dev.host_fn', not device code"),
        "{message}"
    );
    assert!(message.contains("(in kernel 'calls_host')"), "{message}");
    let message = module.compile(&mut backend, "invokes_host").unwrap_err();
    assert!(message.contains("'@vendor_identity' is a 'vendor.proc', not device code"), "{message}");
    let message = module.compile(&mut backend, "undecided").unwrap_err();
    assert!(
        message.contains(
            "cannot run 'dev.unless': control goes past the op or into region #0 on entering the op, and no single 'i1' operand decides which"
        ),
        "{message}"
    );
}
