//! A vendor's loop, conditional, device function and call ops in kernels: the lowering knows
//! none of their names and lowers them through the op interfaces alone, as the CPU backend runs
//! them. The dialect `dev` is defined here with `hat-ir`'s public API, with layouts unlike
//! `scf`'s:
//! - `"dev.count"(%step, %upper, %lower, inits...) ({ ^bb0(carried..., %iv): ... "dev.again"(next...) })`
//!   — a counted loop, bounds first and reversed, the induction variable last;
//! - `"dev.repeat_while"(inits...) ({ ^bb0(carried...): ... "dev.again_if"(%go, next...) })` — a
//!   do-while loop: the body runs, then again while `%go`;
//! - `"dev.unless"(%skip, defaults...) ({ ... "dev.again"(values...) })` — runs its region when
//!   `%skip` is false, else its results are the defaults;
//! - `"dev.device_fn"` (a device function ending in `"dev.give"`), called by `"dev.run" {function = @f}`.
//!
//! The shared vendor dialect of `tests/vendor_dialect` (its `vendor.repeat`, bounds last) lowers
//! in a kernel too.

mod support;
#[path = "../../tests/vendor_dialect/mod.rs"]
mod vendor_dialect;

use hat_ir::interfaces::{
    CallOpInterface, CallableOpInterface, LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint,
};
use hat_ir::{AttributeKind, Context, Ident, Op, OpDefinition, OpTraits, Region, Value};
use hat_lowering::{disassemble, lower_module, LoweringOptions};
use smallvec::{smallvec, SmallVec};
use std::ops::Range;

struct Plain(&'static str, OpTraits, usize);

impl OpDefinition for Plain {
    fn name(&self) -> &str {
        self.0
    }
    fn traits(&self) -> OpTraits {
        self.1
    }
    fn region_count(&self) -> Option<usize> {
        Some(self.2)
    }
}

fn known(constants: &[Option<i64>], index: usize) -> Option<i64> {
    constants.get(index).copied().flatten()
}

struct Count;

impl LoopLikeOpInterface for Count {
    fn induction_variable(&self, ctx: &Context, op: Op) -> Option<Value> {
        let block = *ctx.region_blocks(ctx.regions(op)[0]).first()?;
        ctx.block_arguments(block).last().copied()
    }
    fn lower_bound(&self, ctx: &Context, op: Op) -> Option<Value> {
        ctx.operands(op).get(2).copied()
    }
    fn upper_bound(&self, ctx: &Context, op: Op) -> Option<Value> {
        ctx.operands(op).get(1).copied()
    }
    fn step(&self, ctx: &Context, op: Op) -> Option<Value> {
        ctx.operands(op).first().copied()
    }
    fn init_operands(&self, ctx: &Context, op: Op) -> Range<usize> {
        3..ctx.operands(op).len()
    }
    fn region_iter_args(&self, ctx: &Context, op: Op) -> Range<usize> {
        0..ctx.result_count(op)
    }
}

struct RepeatWhile;

impl RegionBranchOpInterface for RepeatWhile {
    fn successors(
        &self,
        _: &Context,
        _: Op,
        from: RegionPoint,
        constants: &[Option<i64>],
    ) -> SmallVec<[RegionPoint; 2]> {
        match (from, known(constants, 0)) {
            (RegionPoint::Parent, _) => smallvec![RegionPoint::Region(0)],
            (_, Some(0)) => smallvec![RegionPoint::Parent],
            (_, Some(_)) => smallvec![RegionPoint::Region(0)],
            (_, None) => smallvec![RegionPoint::Region(0), RegionPoint::Parent],
        }
    }
    fn entry_operands(&self, ctx: &Context, op: Op, _: RegionPoint) -> Range<usize> {
        0..ctx.operands(op).len()
    }
    fn terminator_operands(&self, ctx: &Context, _: Op, terminator: Op, _: usize, _: RegionPoint) -> Range<usize> {
        1..ctx.operands(terminator).len()
    }
}

struct Unless;

impl RegionBranchOpInterface for Unless {
    fn successors(
        &self,
        _: &Context,
        _: Op,
        from: RegionPoint,
        constants: &[Option<i64>],
    ) -> SmallVec<[RegionPoint; 2]> {
        match (from, known(constants, 0)) {
            (RegionPoint::Region(_), _) => smallvec![RegionPoint::Parent],
            (RegionPoint::Parent, Some(0)) => smallvec![RegionPoint::Region(0)],
            (RegionPoint::Parent, Some(_)) => smallvec![RegionPoint::Parent],
            (RegionPoint::Parent, None) => smallvec![RegionPoint::Parent, RegionPoint::Region(0)],
        }
    }
    fn entry_operands(&self, ctx: &Context, op: Op, to: RegionPoint) -> Range<usize> {
        match to {
            RegionPoint::Parent => 1..ctx.operands(op).len(),
            RegionPoint::Region(_) => 1..1,
        }
    }
}

struct Function;

impl CallableOpInterface for Function {
    fn body(&self, ctx: &Context, op: Op) -> Option<Region> {
        ctx.regions(op).first().copied()
    }
}

struct Run;

impl CallOpInterface for Run {
    fn callee(&self, ctx: &Context, op: Op) -> Option<Ident> {
        match ctx.attribute_kind(ctx.attribute(op, "function")?) {
            AttributeKind::SymbolRef(path) if path.len() == 1 => Some(path[0]),
            _ => None,
        }
    }
}

fn context() -> Context {
    let mut ctx = vendor_dialect::context();
    ctx.register_dialect("dev", "A vendor's device dialect, defined in a test");
    let terminator = OpTraits::TERMINATOR | OpTraits::PURE;
    let region_op = OpTraits::SINGLE_BLOCK | OpTraits::RECURSIVE_EFFECTS;
    ctx.register_op(Plain("dev.count", region_op, 1));
    ctx.register_op(Plain("dev.repeat_while", region_op, 1));
    ctx.register_op(Plain("dev.unless", region_op, 1));
    ctx.register_op(Plain("dev.again", terminator | OpTraits::RETURN_LIKE, 0));
    ctx.register_op(Plain("dev.again_if", terminator, 0));
    let function = OpTraits::ISOLATED_FROM_ABOVE | OpTraits::SYMBOL | OpTraits::DEVICE_CODE;
    ctx.register_op(Plain("dev.device_fn", function, 1));
    ctx.register_op(Plain("dev.give", terminator | OpTraits::RETURN_LIKE, 0));
    ctx.register_op(Plain("dev.run", OpTraits::NONE, 0));
    ctx.attach_interface::<dyn LoopLikeOpInterface>("dev.count", &Count);
    ctx.attach_interface::<dyn RegionBranchOpInterface>("dev.repeat_while", &RepeatWhile);
    ctx.attach_interface::<dyn RegionBranchOpInterface>("dev.unless", &Unless);
    ctx.attach_interface::<dyn CallableOpInterface>("dev.device_fn", &Function);
    ctx.attach_interface::<dyn CallOpInterface>("dev.run", &Run);
    ctx
}

fn lower(text: &str) -> Result<String, String> {
    let mut ctx = context();
    let module = hat_ir::parse_source(&mut ctx, "dev.hat", text).map_err(|e| format!("{e:?}"))?;
    let verified =
        hat_ir::verify_module(&ctx, module).map_err(|d| hat_ir::diagnostics::render_short(&ctx.sources, &d))?;
    let spirv = lower_module(&ctx, verified, &LoweringOptions::default())
        .map_err(|d| hat_ir::diagnostics::render_short(&ctx.sources, &d))?;
    support::spirv_val(&spirv.words);
    Ok(disassemble(&spirv.words).expect("disassembles"))
}

#[test]
fn vendor_loops_conditionals_and_calls_lower_through_their_interfaces() {
    let text = lower(
        r#""dev.device_fn"() ({
^bb0(%x: i32):
  %one = arith.constant 1 : i32
  %y = arith.addi %x, %one : i32
  "dev.give"(%y) : (i32) -> ()
}) {sym_name = "inc", function_type = (i32) -> i32} : () -> ()

kernel.func @k(%data: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  %ten = arith.constant 10 : i32
  %v = buffer.load %data[%i] : memref<64xi32>
  %counted = "dev.count"(%c1, %c4, %c0, %v) ({
  ^bb0(%acc: i32, %k: index):
    %next = "dev.run"(%acc) {function = @inc} : (i32) -> i32
    "dev.again"(%next) : (i32) -> ()
  }) : (index, index, index, i32) -> i32
  %grown = "dev.repeat_while"(%counted) ({
  ^bb0(%x: i32):
    %y = arith.addi %x, %x : i32
    %go = arith.cmpi slt, %y, %ten : i32
    "dev.again_if"(%go, %y) : (i1, i32) -> ()
  }) : (i32) -> i32
  %small = arith.cmpi slt, %grown, %ten : i32
  %picked = "dev.unless"(%small, %zero) ({
    %z = arith.muli %grown, %grown : i32
    "dev.again"(%z) : (i32) -> ()
  }) : (i1, i32) -> i32
  %repeated = "vendor.repeat"(%picked, %c0, %c4, %c1) ({
  ^bb0(%iv: index, %r: i32):
    %s = arith.addi %r, %r : i32
    "vendor.next"(%s) : (i32) -> ()
  }) : (i32, index, index, index) -> i32
  buffer.store %repeated, %data[%i] : memref<64xi32>
  kernel.return
}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Three loops (dev.count, dev.repeat_while, vendor.repeat) and a call of the device function.
    assert_eq!(text.matches("OpLoopMerge").count(), 3, "{text}");
    assert_eq!(text.matches("OpFunctionCall").count(), 1, "{text}");
    assert!(text.contains("OpName %k_inc \"k.inc\""), "{text}");
}

#[test]
fn a_vendor_branch_between_blocks_is_a_diagnostic() {
    let message = lower(
        r#"kernel.func @k(%x: i32) {
  "vendor.jump"()[^bb1] : () -> ()
^bb1:
  kernel.return
}"#,
    )
    .expect_err("a branch between blocks does not lower");
    assert!(message.contains("dev.hat:"), "{message}");
    assert!(message.contains("no structured SPIR-V"), "{message}");
}
