//! `dev`: a vendor's device dialect, with operand and block-argument layouts unlike `scf`'s:
//! - `"dev.count"(%step, %upper, %lower, inits...) ({ ^bb0(carried..., %iv): ... "dev.again"(next...) })`
//!   — a counted loop (`LoopLikeOpInterface` only): bounds first and reversed, the induction
//!   variable the body's LAST argument;
//! - `"dev.repeat_while"(inits...) ({ ^bb0(carried...): ... "dev.again_if"(%go, next...) })` — a
//!   do-while loop (`RegionBranchOpInterface` only): the body runs, then again while `%go`;
//! - `"dev.unless"(%skip, defaults...) ({ ... "dev.again"(values...) })` — runs its region when
//!   `%skip` is false (results: what it yields), else its results are the defaults;
//! - `"dev.choose"(%flag) ({ then }, { else })` — runs `then` when `%flag` is 1, `else` when it is
//!   0 (`RegionBranchOpInterface` answering only for the values an `i1` constant has);
//! - `"dev.switch"(%selector) ({...}, {...}, ...)` — runs region `selector` (the last when past
//!   the end, the first when negative): a multi-way branch on an integer;
//! - each region of `dev.unless`, `dev.choose` and `dev.switch` ends in `"dev.again"(values...)`,
//!   which become the results;
//! - `"dev.device_fn"` / `"dev.host_fn"` — functions (callables) of device / host code, ending in
//!   `"dev.give"(values)`; `"dev.run"(args...) {function = @f}` calls one;
//! - `"dev.extern"() {sym_name, function_type}` — a function declared, its code outside the IR
//!   (a host function the embedding program provides).

use hat_ir::interfaces::{
    CallOpInterface, CallableOpInterface, LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint,
};
use hat_ir::{AttributeKind, Context, Ident, Op, OpDefinition, OpTraits, Region, Value};
use smallvec::{smallvec, SmallVec};
use std::ops::Range;

/// An op definition with a name, traits and a fixed region count, and nothing else.
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

fn entry_block_arguments(ctx: &Context, op: Op) -> &[Value] {
    ctx.region_blocks(ctx.regions(op)[0]).first().map_or(&[], |&b| ctx.block_arguments(b))
}

/// `dev.count`: step, upper, lower, then the inits; body arguments: the carried values, then
/// the induction variable.
struct Count;

impl LoopLikeOpInterface for Count {
    fn induction_variable(&self, ctx: &Context, op: Op) -> Option<Value> {
        entry_block_arguments(ctx, op).last().copied()
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

/// `dev.repeat_while`: the body first, then again while the terminator's first operand holds.
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

/// `dev.unless`: into the region when the first operand is false, else straight to the results
/// (the other operands).
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

/// `dev.choose`: into region 0 when the flag is 1, region 1 when it is 0; both when unknown.
struct Choose;

impl RegionBranchOpInterface for Choose {
    fn successors(
        &self,
        _: &Context,
        _: Op,
        from: RegionPoint,
        constants: &[Option<i64>],
    ) -> SmallVec<[RegionPoint; 2]> {
        match (from, known(constants, 0)) {
            (RegionPoint::Region(_), _) => smallvec![RegionPoint::Parent],
            (RegionPoint::Parent, Some(1)) => smallvec![RegionPoint::Region(0)],
            (RegionPoint::Parent, Some(0)) => smallvec![RegionPoint::Region(1)],
            (RegionPoint::Parent, _) => smallvec![RegionPoint::Region(0), RegionPoint::Region(1)],
        }
    }
    fn entry_operands(&self, _: &Context, _: Op, _: RegionPoint) -> Range<usize> {
        1..1
    }
}

/// `dev.switch`: into the region the selector names (clamped to the regions there are).
struct Switch;

impl OpDefinition for Switch {
    fn name(&self) -> &str {
        "dev.switch"
    }
    fn traits(&self) -> OpTraits {
        OpTraits::SINGLE_BLOCK | OpTraits::RECURSIVE_EFFECTS
    }
}

impl RegionBranchOpInterface for Switch {
    fn successors(
        &self,
        ctx: &Context,
        op: Op,
        from: RegionPoint,
        constants: &[Option<i64>],
    ) -> SmallVec<[RegionPoint; 2]> {
        let regions = ctx.regions(op).len();
        match (from, known(constants, 0)) {
            (RegionPoint::Region(_), _) => smallvec![RegionPoint::Parent],
            // Without regions control goes nowhere: consumers report it.
            (RegionPoint::Parent, _) if regions == 0 => smallvec![],
            (RegionPoint::Parent, Some(selector)) => {
                smallvec![RegionPoint::Region(selector.clamp(0, regions as i64 - 1) as usize)]
            }
            (RegionPoint::Parent, None) => (0..regions).map(RegionPoint::Region).collect(),
        }
    }
    fn entry_operands(&self, _: &Context, _: Op, _: RegionPoint) -> Range<usize> {
        1..1
    }
}

/// `dev.extern`: a declaration.
struct Extern;

impl CallableOpInterface for Extern {
    fn body(&self, _: &Context, _: Op) -> Option<Region> {
        None
    }
}

/// `dev.device_fn` and `dev.host_fn`.
struct Function;

impl CallableOpInterface for Function {
    fn body(&self, ctx: &Context, op: Op) -> Option<Region> {
        ctx.regions(op).first().copied()
    }
}

/// `dev.run`: its callee is the `function` attribute.
struct Run;

impl CallOpInterface for Run {
    fn callee(&self, ctx: &Context, op: Op) -> Option<Ident> {
        match ctx.attribute_kind(ctx.attribute(op, "function")?) {
            AttributeKind::SymbolRef(path) if path.len() == 1 => Some(path[0]),
            _ => None,
        }
    }
}

/// A context with the hat dialects, the [`vendor`](crate::vendor) dialect and `dev`.
pub fn context() -> Context {
    let mut ctx = crate::vendor::context();
    ctx.register_dialect("dev", "A vendor's device dialect, defined in a test");
    let function = OpTraits::ISOLATED_FROM_ABOVE | OpTraits::SYMBOL;
    let terminator = OpTraits::TERMINATOR | OpTraits::PURE;
    let region_op = OpTraits::SINGLE_BLOCK | OpTraits::RECURSIVE_EFFECTS;
    ctx.register_op(Plain("dev.count", region_op, 1));
    ctx.register_op(Plain("dev.repeat_while", region_op, 1));
    ctx.register_op(Plain("dev.unless", region_op, 1));
    ctx.register_op(Plain("dev.choose", region_op, 2));
    ctx.register_op(Switch);
    ctx.register_op(Plain("dev.extern", OpTraits::SYMBOL, 0));
    ctx.register_op(Plain("dev.again", terminator | OpTraits::RETURN_LIKE, 0));
    ctx.register_op(Plain("dev.again_if", terminator, 0));
    ctx.register_op(Plain("dev.device_fn", function | OpTraits::DEVICE_CODE, 1));
    ctx.register_op(Plain("dev.host_fn", function | OpTraits::HOST_CODE, 1));
    ctx.register_op(Plain("dev.give", terminator | OpTraits::RETURN_LIKE, 0));
    ctx.register_op(Plain("dev.run", OpTraits::NONE, 0));
    ctx.attach_interface::<dyn LoopLikeOpInterface>("dev.count", &Count);
    ctx.attach_interface::<dyn RegionBranchOpInterface>("dev.repeat_while", &RepeatWhile);
    ctx.attach_interface::<dyn RegionBranchOpInterface>("dev.unless", &Unless);
    ctx.attach_interface::<dyn RegionBranchOpInterface>("dev.choose", &Choose);
    ctx.attach_interface::<dyn RegionBranchOpInterface>("dev.switch", &Switch);
    ctx.attach_interface::<dyn CallableOpInterface>("dev.extern", &Extern);
    ctx.attach_interface::<dyn CallableOpInterface>("dev.device_fn", &Function);
    ctx.attach_interface::<dyn CallableOpInterface>("dev.host_fn", &Function);
    ctx.attach_interface::<dyn CallOpInterface>("dev.run", &Run);
    ctx
}
