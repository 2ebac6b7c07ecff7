//! Unswitching what observes a chosen buffer: an op of host code whose buffer operands are
//! `arith.select`s on one condition — `compute.dispatch @step(%src, %dst)` where
//! `%src = arith.select %even, %grid, %scratch` — becomes an `scf.if` on that condition with a
//! copy of the op in each region, each naming the buffers directly:
//!
//! ```mlir
//! scf.if %even {
//!   compute.dispatch @step(%grid, %scratch)
//! } else {
//!   compute.dispatch @step(%scratch, %grid)
//! }
//! ```
//!
//! The program computes the same; the `static` plan then knows, on each path, exactly which
//! buffer each access touches, so it copies only that one (and, where the paths meet, keeps a
//! run-time flag rather than copying both). Only ops without regions or results are unswitched
//! (dispatches, calls without results, stores, copies). Operands that choose on different
//! conditions (or choose among selects) are unswitched one condition at a time, the copies in
//! each region again, up to [`MAX_DEPTH`] conditions deep (2^depth copies of the op); past that
//! the op is left as it is, and the plan treats it as touching every buffer it may name.

use super::aliases::is_buffer;
use hat_dialects::arith_views::SelectOp;
use hat_ir::interfaces::{execution_space, ExecutionSpace};
use hat_ir::{Context, Op, OpTraits, OperationState, Value};

/// How many conditions deep one op is unswitched at most.
pub const MAX_DEPTH: usize = 3;

/// Unswitches the ops under `function` (see the module documentation); returns how many.
pub fn unswitch_selected_buffers(ctx: &mut Context, function: Op) -> usize {
    if execution_space(ctx, function) != Some(ExecutionSpace::Host) {
        return 0;
    }
    let mut worklist: Vec<(Op, usize)> = ctx
        .walk(function)
        .into_iter()
        .filter(|&op| {
            op != function
                && ctx.regions(op).is_empty()
                && ctx.result_count(op) == 0
                && !ctx.traits(op).contains(OpTraits::TERMINATOR)
        })
        .map(|op| (op, 0))
        .collect();
    let mut unswitched = 0;
    while let Some((op, depth)) = worklist.pop() {
        if depth >= MAX_DEPTH {
            continue;
        }
        let Some(condition) = first_condition(ctx, op) else { continue };
        let location = ctx.location(op);
        // An operand chosen on `condition` becomes the chosen buffer in each region.
        let pick = |ctx: &Context, value: Value, first: bool| match SelectOp::wrap(ctx, ctx.defining_op(value)?) {
            Some(select) if is_buffer(ctx, value) && select.condition(ctx) == condition => {
                Some(if first { select.true_value(ctx) } else { select.false_value(ctx) })
            }
            _ => None,
        };
        let mut regions = Vec::new();
        for first in [true, false] {
            let region = ctx.create_region();
            let block = ctx.create_block(&[]);
            ctx.append_block(region, block);
            let operands: Vec<Value> = ctx.operands(op).iter().map(|&v| pick(ctx, v, first).unwrap_or(v)).collect();
            let mut state = OperationState::new(ctx.name(op), location);
            state.operands = operands;
            state.attributes = ctx.attributes(op).to_vec();
            let copy = ctx.create_op(state);
            ctx.append_op(block, copy);
            let terminator = OperationState::new(ctx.op_name("scf.yield"), location);
            let yield_op = ctx.create_op(terminator);
            ctx.append_op(block, yield_op);
            regions.push(region);
            worklist.push((copy, depth + 1));
        }
        let mut state = OperationState::new(ctx.op_name("scf.if"), location);
        state.operands.push(condition);
        state.regions = regions;
        let branch = ctx.create_op(state);
        ctx.insert_op_before(op, branch);
        ctx.erase_op(op);
        unswitched += 1;
    }
    unswitched
}

/// The condition of the first buffer operand of `op` that an `arith.select` chooses.
fn first_condition(ctx: &Context, op: Op) -> Option<Value> {
    ctx.operands(op).iter().filter(|&&v| is_buffer(ctx, v)).find_map(|&value| {
        let select = ctx.defining_op(value).and_then(|d| SelectOp::wrap(ctx, d))?;
        Some(select.condition(ctx))
    })
}
