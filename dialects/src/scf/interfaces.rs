//! What `scf`'s ops tell analyses: typed views of each op, the region-branch interface of `for`,
//! `if` and `while`, and the loop-like interface of `for`.

use hat_ir::interfaces::{LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint};
use hat_ir::{op_view, Context, Op, Value};
use smallvec::{smallvec, SmallVec};
use std::ops::Range;

op_view! {
    /// `scf.for %iv = %lower_bound to %upper_bound step %step iter_args(...)`.
    pub struct ForOp = "scf.for" {
        operands: [lower_bound, upper_bound, step; ..init_args],
        regions: [body],
    }
}

impl ForOp {
    /// The induction variable: the first argument of the body.
    pub fn induction_variable(self, ctx: &Context) -> Value {
        ctx.block_arguments(ctx.region_blocks(self.body(ctx))[0])[0]
    }

    /// The body's arguments that carry values between iterations.
    pub fn region_iter_args(self, ctx: &Context) -> &[Value] {
        &ctx.block_arguments(ctx.region_blocks(self.body(ctx))[0])[1..]
    }
}

op_view! {
    /// `scf.if %condition { then } else { else }`; the else region may be empty.
    pub struct IfOp = "scf.if" {
        operands: [condition],
        regions: [then_region, else_region],
    }
}

impl IfOp {
    /// Whether the op has an `else` block.
    pub fn has_else(self, ctx: &Context) -> bool {
        !ctx.region_blocks(self.else_region(ctx)).is_empty()
    }
}

op_view! {
    /// `scf.while (inits) { before ... scf.condition } do { after ... scf.yield }`.
    pub struct WhileOp = "scf.while" {
        operands: [; ..inits],
        regions: [before, after],
    }
}

op_view! {
    /// `scf.yield`: the values a region hands to its parent.
    pub struct YieldOp = "scf.yield" {
        operands: [; ..values],
        regions: [],
    }
}

op_view! {
    /// `scf.condition(%condition) forwarded...`: ends the `before` region of a `scf.while`.
    pub struct ConditionOp = "scf.condition" {
        operands: [condition; ..forwarded],
        regions: [],
    }
}

fn known(constants: &[Option<i64>], index: usize) -> Option<i64> {
    constants.get(index).copied().flatten()
}

/// `scf.for`: from the parent into the body or (zero trips) straight to the results; from the
/// body around again or out.
struct ForBranches;

impl RegionBranchOpInterface for ForBranches {
    fn successors(
        &self,
        _: &Context,
        _: Op,
        from: RegionPoint,
        constants: &[Option<i64>],
    ) -> SmallVec<[RegionPoint; 2]> {
        if from == RegionPoint::Parent {
            if let (Some(lower), Some(upper), Some(step)) =
                (known(constants, 0), known(constants, 1), known(constants, 2))
            {
                if step > 0 {
                    return smallvec![if lower < upper { RegionPoint::Region(0) } else { RegionPoint::Parent }];
                }
            }
        }
        smallvec![RegionPoint::Region(0), RegionPoint::Parent]
    }

    fn entry_operands(&self, ctx: &Context, op: Op, _: RegionPoint) -> Range<usize> {
        3..ctx.operands(op).len()
    }

    fn successor_inputs(&self, ctx: &Context, op: Op, to: RegionPoint) -> Range<usize> {
        let carried = ctx.result_count(op);
        match to {
            RegionPoint::Parent => 0..carried,
            RegionPoint::Region(_) => 1..1 + carried,
        }
    }
}

impl LoopLikeOpInterface for ForBranches {
    fn induction_variable(&self, ctx: &Context, op: Op) -> Option<Value> {
        Some(ForOp(op).induction_variable(ctx))
    }

    fn lower_bound(&self, ctx: &Context, op: Op) -> Option<Value> {
        Some(ForOp(op).lower_bound(ctx))
    }

    fn upper_bound(&self, ctx: &Context, op: Op) -> Option<Value> {
        Some(ForOp(op).upper_bound(ctx))
    }

    fn step(&self, ctx: &Context, op: Op) -> Option<Value> {
        Some(ForOp(op).step(ctx))
    }

    fn init_operands(&self, ctx: &Context, op: Op) -> Range<usize> {
        3..ctx.operands(op).len()
    }

    fn region_iter_args(&self, ctx: &Context, op: Op) -> Range<usize> {
        1..1 + ctx.result_count(op)
    }
}

/// `scf.if`: from the parent into `then` or `else` (or past the op when there is no `else`); from
/// either region to the results.
struct IfBranches;

impl RegionBranchOpInterface for IfBranches {
    fn successors(
        &self,
        ctx: &Context,
        op: Op,
        from: RegionPoint,
        constants: &[Option<i64>],
    ) -> SmallVec<[RegionPoint; 2]> {
        if from != RegionPoint::Parent {
            return smallvec![RegionPoint::Parent];
        }
        let otherwise = if IfOp(op).has_else(ctx) { RegionPoint::Region(1) } else { RegionPoint::Parent };
        match known(constants, 0) {
            Some(0) => smallvec![otherwise],
            Some(_) => smallvec![RegionPoint::Region(0)],
            None => smallvec![RegionPoint::Region(0), otherwise],
        }
    }

    fn entry_operands(&self, _: &Context, _: Op, _: RegionPoint) -> Range<usize> {
        1..1
    }
}

/// `scf.while`: from the parent into `before`; from `before` (its `scf.condition`) into `after`
/// when the condition holds, else out; from `after` back into `before`.
struct WhileBranches;

impl RegionBranchOpInterface for WhileBranches {
    fn successors(
        &self,
        _: &Context,
        _: Op,
        from: RegionPoint,
        constants: &[Option<i64>],
    ) -> SmallVec<[RegionPoint; 2]> {
        match from {
            RegionPoint::Parent | RegionPoint::Region(1..) => smallvec![RegionPoint::Region(0)],
            RegionPoint::Region(0) => match known(constants, 0) {
                Some(0) => smallvec![RegionPoint::Parent],
                Some(_) => smallvec![RegionPoint::Region(1)],
                None => smallvec![RegionPoint::Region(1), RegionPoint::Parent],
            },
        }
    }

    fn entry_operands(&self, ctx: &Context, op: Op, _: RegionPoint) -> Range<usize> {
        0..ctx.operands(op).len()
    }

    fn terminator_operands(&self, ctx: &Context, _: Op, terminator: Op, from: usize, _: RegionPoint) -> Range<usize> {
        // `scf.condition` forwards all but its condition; `scf.yield` all it has.
        let first = usize::from(from == 0);
        first..ctx.operands(terminator).len()
    }
}

/// Attaches `scf`'s interfaces.
pub(crate) fn attach(ctx: &mut Context) {
    ctx.attach_interface::<dyn RegionBranchOpInterface>(ForOp::NAME, &ForBranches);
    ctx.attach_interface::<dyn LoopLikeOpInterface>(ForOp::NAME, &ForBranches);
    ctx.attach_interface::<dyn RegionBranchOpInterface>(IfOp::NAME, &IfBranches);
    ctx.attach_interface::<dyn RegionBranchOpInterface>(WhileOp::NAME, &WhileBranches);
}
