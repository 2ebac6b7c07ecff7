//! Dead control flow, for any op that describes its control flow through the interfaces (rules
//! S1 and S4 of `docs/rewrites.md`): no dialect is named here.
//!
//! - [`SinglePath`]: a region-branch op through which control takes one path, known from its
//!   constant operands — straight past its regions (an `if` on false with no `else`, a loop whose
//!   bounds say it never runs), or into one region that then always leaves the op (an `if` on a
//!   constant) — is replaced by that path.
//! - [`ConstantTripCount`]: a loop-like op whose constant bounds say it runs zero times is
//!   replaced by its initial values, and one that runs once by its body, with the lower bound for
//!   the induction variable and the initial values for the carried ones.
//!
//! Both need the op's regions to have one block, and every block argument of the region that
//! runs to be bound by the interfaces: otherwise the pattern does not apply.

use hat_ir::interfaces::{constant_integers, trip_count, LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint};
use hat_ir::rewrite::{constant_value, RewritePattern, Rewriter};
use hat_ir::{AttributeKind, Context, Op, TypeKind, Value};
use std::ops::Range;

/// Replaces `op` by the single block of its region `index`: the block's ops move before `op` (its
/// arguments replaced by `arguments`), the operands `yielded` of its terminator replace `op`'s
/// results, and the terminator and `op` are erased. `false` (nothing done) if the region does not
/// have one block ending in a terminator with one such operand per result.
fn replace_with_region(
    rewriter: &mut Rewriter<'_>,
    op: Op,
    index: usize,
    arguments: &[Value],
    yielded: impl Fn(&Context, Op) -> Range<usize>,
) -> bool {
    let ctx = rewriter.ctx();
    let region = ctx.regions(op)[index];
    let &[block] = ctx.region_blocks(region) else { return false };
    let Some(terminator) = ctx.last_op(block) else { return false };
    let range = yielded(ctx, terminator);
    if range.end > ctx.operands(terminator).len()
        || range.len() != ctx.result_count(op)
        || ctx.block_arguments(block).len() != arguments.len()
    {
        return false;
    }
    rewriter.inline_block_before(block, op, arguments);
    // Yielded values may be block arguments just replaced: read them again.
    let values = rewriter.ctx().operands(terminator)[range].to_vec();
    rewriter.erase_op(terminator);
    rewriter.replace_op(op, &values);
    true
}

/// A region-branch op through which control takes a single path: see the module documentation.
pub(super) struct SinglePath;

impl RewritePattern for SinglePath {
    fn name(&self) -> &str {
        "single-path"
    }

    fn root(&self) -> Option<&str> {
        None
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        if ctx.regions(op).is_empty() {
            return false;
        }
        let Some(branches) = ctx.interface::<dyn RegionBranchOpInterface>(op) else { return false };
        let results = 0..ctx.result_count(op);
        if branches.successor_inputs(ctx, op, RegionPoint::Parent) != results {
            return false;
        }
        let path = branches.successors(ctx, op, RegionPoint::Parent, &constant_integers(ctx, op));
        match path.as_slice() {
            // Past every region: the operands entering the results are the results.
            [RegionPoint::Parent] => {
                let entry = branches.entry_operands(ctx, op, RegionPoint::Parent);
                if entry.len() != results.len() {
                    return false;
                }
                let values = ctx.operands(op)[entry].to_vec();
                rewriter.replace_op(op, &values);
                true
            }
            // Into one region that always leaves the op afterwards (whatever its terminator's
            // operands): the op runs that region once.
            &[RegionPoint::Region(index)] => {
                let leaves = branches.successors(ctx, op, RegionPoint::Region(index), &[]);
                if leaves.as_slice() != [RegionPoint::Parent] {
                    return false;
                }
                let region = ctx.regions(op)[index];
                let Some(&block) = ctx.region_blocks(region).first() else { return false };
                let inputs = branches.successor_inputs(ctx, op, RegionPoint::Region(index));
                let entry = branches.entry_operands(ctx, op, RegionPoint::Region(index));
                if inputs != (0..ctx.block_arguments(block).len()) || entry.len() != inputs.len() {
                    return false;
                }
                let arguments = ctx.operands(op)[entry].to_vec();
                replace_with_region(rewriter, op, index, &arguments, |ctx, terminator| {
                    branches.terminator_operands(ctx, op, terminator, index, RegionPoint::Parent)
                })
            }
            _ => false,
        }
    }
}

/// A loop-like op that runs zero times or once: see the module documentation.
pub(super) struct ConstantTripCount;

/// Whether a bound of type `ty` compares as the signed integer its constant attribute holds
/// (`i1` aside: its `true` reads as -1 or 1 depending on who asks, so it is never folded here).
fn has_signed_bounds(ctx: &Context, value: Value) -> bool {
    matches!(ctx.type_kind(ctx.value_type(value)), TypeKind::Integer { width: 2..=64, .. } | TypeKind::Index)
}

/// The integer a constant operand's attribute holds.
fn integer(ctx: &Context, value: Value) -> Option<i64> {
    match ctx.attribute_kind(constant_value(ctx, value)?) {
        AttributeKind::Integer { value, .. } => Some(*value),
        _ => None,
    }
}

impl RewritePattern for ConstantTripCount {
    fn name(&self) -> &str {
        "constant-trip-count"
    }

    fn root(&self) -> Option<&str> {
        None
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        if ctx.regions(op).len() != 1 {
            return false;
        }
        let Some(looping) = ctx.interface::<dyn LoopLikeOpInterface>(op) else { return false };
        let (Some(lower), Some(upper)) = (looping.lower_bound(ctx, op), looping.upper_bound(ctx, op)) else {
            return false;
        };
        if !has_signed_bounds(ctx, lower) {
            return false;
        }
        let (Some(lower_value), Some(upper_value)) = (integer(ctx, lower), integer(ctx, upper)) else { return false };
        let inits = ctx.operands(op)[looping.init_operands(ctx, op)].to_vec();
        if inits.len() != ctx.result_count(op) {
            return false;
        }
        // Zero trips whatever the step: the induction variable starts at or above the bound.
        if upper_value <= lower_value {
            rewriter.replace_op(op, &inits);
            return true;
        }
        if trip_count(ctx, op) != Some(1) {
            return false;
        }
        // One trip: the body once, every argument of its block bound.
        let body = looping.body(ctx, op);
        let Some(&block) = ctx.region_blocks(body).first() else { return false };
        let parameters = ctx.block_arguments(block);
        let carried = looping.region_iter_args(ctx, op);
        if carried.len() != inits.len() || carried.end > parameters.len() {
            return false;
        }
        let induction = looping.induction_variable(ctx, op);
        let mut arguments = Vec::with_capacity(parameters.len());
        for (position, &parameter) in parameters.iter().enumerate() {
            if carried.contains(&position) {
                arguments.push(inits[position - carried.start]);
            } else if Some(parameter) == induction {
                arguments.push(lower);
            } else {
                return false;
            }
        }
        let index = ctx.regions(op).iter().position(|&r| r == body).expect("the body is a region of the loop");
        let branches = ctx.interface::<dyn RegionBranchOpInterface>(op);
        replace_with_region(rewriter, op, index, &arguments, |ctx, terminator| match branches {
            Some(branches) => branches.terminator_operands(ctx, op, terminator, index, RegionPoint::Parent),
            None => 0..ctx.operands(terminator).len(),
        })
    }
}
