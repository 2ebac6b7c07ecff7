//! A vendor's dialect, defined outside hat's crates with nothing but `hat-ir`'s public API: its
//! own function, call, loop and branch ops, which take part in hat's passes, analyses and
//! executor through the op interfaces alone (no hat code knows these names).
//!
//! Generic form only:
//! - `"vendor.proc"() ({ ^bb0(args): ... "vendor.ret"(values) }) {sym_name = "f", function_type = (..) -> (..)}`
//!   — a host function (callable; erasable when unused unless it is `@main`);
//! - `"vendor.invoke"(args) {target = @f} : (..) -> (..)` — a call (its callee attribute is named
//!   `target`, not `callee`);
//! - `"vendor.repeat"(inits..., %lb, %ub, %step) ({ ^bb0(%iv, carried...): ... "vendor.next"(values) })`
//!   — a counted loop whose bounds come last (not scf.for's layout);
//! - `"vendor.jump"()[^bb1]` — an unconditional branch: an op with a successor.

use hat_ir::interfaces::{
    CallOpInterface, CallableOpInterface, LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint,
};
use hat_ir::verifier::symbol_name;
use hat_ir::{AttributeKind, Context, Ident, Op, OpDefinition, OpTraits, Region, Value, VerifyContext};
use smallvec::{smallvec, SmallVec};
use std::ops::Range;

struct Proc;
impl OpDefinition for Proc {
    fn name(&self) -> &str {
        "vendor.proc"
    }
    fn traits(&self) -> OpTraits {
        OpTraits::ISOLATED_FROM_ABOVE | OpTraits::SYMBOL | OpTraits::HOST_CODE
    }
    fn region_count(&self) -> Option<usize> {
        Some(1)
    }
    fn successor_count(&self) -> Option<usize> {
        Some(0)
    }
}

impl CallableOpInterface for Proc {
    fn body(&self, ctx: &Context, op: Op) -> Option<Region> {
        ctx.regions(op).first().copied()
    }
    fn is_entry(&self, ctx: &Context, op: Op) -> bool {
        symbol_name(ctx, op) == Some("main")
    }
    fn is_discardable(&self, ctx: &Context, op: Op, module_has_entry: bool) -> bool {
        module_has_entry && !self.is_entry(ctx, op)
    }
}

struct Ret;
impl OpDefinition for Ret {
    fn name(&self) -> &str {
        "vendor.ret"
    }
    fn traits(&self) -> OpTraits {
        OpTraits::TERMINATOR | OpTraits::RETURN_LIKE | OpTraits::PURE
    }
    fn region_count(&self) -> Option<usize> {
        Some(0)
    }
}

struct Invoke;
impl OpDefinition for Invoke {
    fn name(&self) -> &str {
        "vendor.invoke"
    }
    fn region_count(&self) -> Option<usize> {
        Some(0)
    }
    fn verify(&self, verifier: &mut VerifyContext<'_>, op: Op) {
        if target(verifier.ctx(), op).is_none() {
            verifier.error(op, "expects a 'target' symbol");
        }
    }
}

fn target(ctx: &Context, op: Op) -> Option<Ident> {
    match ctx.attribute_kind(ctx.attribute(op, "target")?) {
        AttributeKind::SymbolRef(path) if path.len() == 1 => Some(path[0]),
        _ => None,
    }
}

impl CallOpInterface for Invoke {
    fn callee(&self, ctx: &Context, op: Op) -> Option<Ident> {
        target(ctx, op)
    }
}

/// `vendor.repeat`: operands are the carried inits, then lower bound, upper bound, step.
struct Repeat;
impl OpDefinition for Repeat {
    fn name(&self) -> &str {
        "vendor.repeat"
    }
    fn traits(&self) -> OpTraits {
        OpTraits::RECURSIVE_EFFECTS | OpTraits::SINGLE_BLOCK
    }
    fn region_count(&self) -> Option<usize> {
        Some(1)
    }
    fn verify(&self, verifier: &mut VerifyContext<'_>, op: Op) {
        let ctx = verifier.ctx();
        let carried = ctx.result_count(op);
        if ctx.operands(op).len() != carried + 3 {
            verifier.error(op, "expects the carried inits, then lower bound, upper bound and step");
        }
    }
}

fn carried(ctx: &Context, op: Op) -> usize {
    ctx.result_count(op)
}

impl RegionBranchOpInterface for Repeat {
    fn successors(&self, _: &Context, _: Op, _: RegionPoint, _: &[Option<i64>]) -> SmallVec<[RegionPoint; 2]> {
        smallvec![RegionPoint::Region(0), RegionPoint::Parent]
    }
    fn entry_operands(&self, ctx: &Context, op: Op, _: RegionPoint) -> Range<usize> {
        0..carried(ctx, op)
    }
    fn successor_inputs(&self, ctx: &Context, op: Op, to: RegionPoint) -> Range<usize> {
        match to {
            RegionPoint::Parent => 0..carried(ctx, op),
            RegionPoint::Region(_) => 1..1 + carried(ctx, op),
        }
    }
}

impl LoopLikeOpInterface for Repeat {
    fn induction_variable(&self, ctx: &Context, op: Op) -> Option<Value> {
        let block = *ctx.region_blocks(ctx.regions(op)[0]).first()?;
        ctx.block_arguments(block).first().copied()
    }
    fn lower_bound(&self, ctx: &Context, op: Op) -> Option<Value> {
        ctx.operands(op).get(carried(ctx, op)).copied()
    }
    fn upper_bound(&self, ctx: &Context, op: Op) -> Option<Value> {
        ctx.operands(op).get(carried(ctx, op) + 1).copied()
    }
    fn step(&self, ctx: &Context, op: Op) -> Option<Value> {
        ctx.operands(op).get(carried(ctx, op) + 2).copied()
    }
    fn init_operands(&self, ctx: &Context, op: Op) -> Range<usize> {
        0..carried(ctx, op)
    }
    fn region_iter_args(&self, ctx: &Context, op: Op) -> Range<usize> {
        1..1 + carried(ctx, op)
    }
}

struct Next;
impl OpDefinition for Next {
    fn name(&self) -> &str {
        "vendor.next"
    }
    fn traits(&self) -> OpTraits {
        OpTraits::TERMINATOR | OpTraits::RETURN_LIKE | OpTraits::PURE
    }
    fn region_count(&self) -> Option<usize> {
        Some(0)
    }
}

/// An unconditional branch to its one successor block.
struct Jump;
impl OpDefinition for Jump {
    fn name(&self) -> &str {
        "vendor.jump"
    }
    fn traits(&self) -> OpTraits {
        OpTraits::TERMINATOR
    }
    fn region_count(&self) -> Option<usize> {
        Some(0)
    }
    fn successor_count(&self) -> Option<usize> {
        Some(1)
    }
}

/// Registers the vendor dialect and attaches its interfaces.
pub fn register(ctx: &mut Context) {
    ctx.register_dialect("vendor", "A vendor's dialect, defined outside hat");
    ctx.register_op(Proc);
    ctx.register_op(Ret);
    ctx.register_op(Invoke);
    ctx.register_op(Repeat);
    ctx.register_op(Next);
    ctx.register_op(Jump);
    ctx.attach_interface::<dyn CallableOpInterface>("vendor.proc", &Proc);
    ctx.attach_interface::<dyn CallOpInterface>("vendor.invoke", &Invoke);
    ctx.attach_interface::<dyn RegionBranchOpInterface>("vendor.repeat", &Repeat);
    ctx.attach_interface::<dyn LoopLikeOpInterface>("vendor.repeat", &Repeat);
}

/// A context with the hat dialects and the vendor dialect.
pub fn context() -> Context {
    let mut ctx = hat_dialects::context();
    register(&mut ctx);
    ctx
}

/// A program in the vendor dialect (with `arith` for arithmetic): `@main(%n)` returns
/// `sum_{i < n} twice(i)` through a `vendor.repeat` loop and `vendor.invoke` calls of `@twice`.
pub const SUM_OF_TWICE: &str = r#"
"vendor.proc"() ({
^bb0(%x: i64):
  %y = arith.addi %x, %x : i64
  "vendor.ret"(%y) : (i64) -> ()
}) {sym_name = "twice", function_type = (i64) -> i64} : () -> ()
"vendor.proc"() ({
^bb0(%n: i64):
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %sum = "vendor.repeat"(%zero, %zero, %n, %one) ({
  ^bb0(%i: i64, %acc: i64):
    %t = "vendor.invoke"(%i) {target = @twice} : (i64) -> i64
    %next = arith.addi %acc, %t : i64
    "vendor.next"(%next) : (i64) -> ()
  }) : (i64, i64, i64, i64) -> i64
  "vendor.ret"(%sum) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;
