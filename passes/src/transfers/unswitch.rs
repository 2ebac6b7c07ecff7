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
//! buffer each access touches, so it copies only that one (and, where the paths meet, copies
//! only what a run-time bit says is stale rather than copying both). Only ops without regions or results are unswitched
//! (dispatches, calls without results, stores, copies). Operands that choose on different
//! conditions (or choose among selects) are unswitched one condition at a time, the copies in
//! each region again, up to [`MAX_DEPTH`] conditions deep (2^depth copies of the op); past that
//! the op is left as it is, and the plan treats it as touching every buffer it may name.
//!
//! An `scf.if` that only yields values from outside it (`scf.if %c { yield %a, %b } else { yield
//! %b, %a }`: a swap through branch results) is a choice on its condition too: it becomes
//! `arith.select`s first (`scf`'s own canonicalization `if-to-select`, MLIR's), so that what
//! observes its results is unswitched the same way.

use super::aliases::is_buffer;
use hat_dialects::arith_views::SelectOp;
use hat_dialects::scf::{IfOp, IfToSelect};
use hat_ir::interfaces::{execution_space, ExecutionSpace};
use hat_ir::rewrite::{RewritePattern, Rewriter};
use hat_ir::{Context, Op, OpTraits, OperationState, Value};

/// How many conditions deep one op is unswitched at most.
pub const MAX_DEPTH: usize = 3;

/// How many ops right after one `scf.if` are moved into its branches at most.
pub const MAX_SUNK: usize = 4;

/// Unswitches the ops under `function` (see the module documentation); returns how many.
pub fn unswitch_selected_buffers(ctx: &mut Context, function: Op) -> usize {
    if execution_space(ctx, function) != Some(ExecutionSpace::Host) {
        return 0;
    }
    let made = selects_for_trivial_ifs(ctx, function);
    let sunk = sink_into_branches(ctx, function);
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
            let copy = copy_on(ctx, op, operands);
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
    erase_unused(ctx, function, &made);
    unswitched + sunk
}

/// Moves the ops right after an `scf.if` that observe a buffer it yields into the end of each
/// of its branches, each naming the buffer that branch yields: `%r = scf.if %c { ... yield %a }
/// else { %n = buffer.alloc ... yield %n }` then `compute.dispatch @k(%r)` becomes a dispatch on
/// `%a` at the end of the first branch and on `%n` at the end of the second. The program runs
/// the same ops in the same order (nothing comes between the branch's end and the op); the plan
/// then knows on each path which buffer the op touches (where the `scf.if` yields a buffer made
/// inside it, `if-to-select` cannot make the choice a select). Only ops without regions or
/// results move, [`MAX_SUNK`] at most after one `scf.if`; pure ops between them and the
/// `scf.if` that do not use its results go before it. Returns how many moved.
pub fn sink_into_branches(ctx: &mut Context, function: Op) -> usize {
    let choices = ifs_yielding_buffers(ctx, function);
    let mut sunk = 0;
    for branch in choices {
        let results: Vec<Value> = ctx.results(branch).collect();
        let yields: Vec<Op> = ctx
            .regions(branch)
            .iter()
            .filter_map(|&region| ctx.region_blocks(region).first().and_then(|&block| ctx.last_op(block)))
            .collect();
        if yields.len() != 2 {
            continue;
        }
        for _ in 0..MAX_SUNK {
            // Pure ops in between that do not use what the `scf.if` yields (the constants of a
            // dispatch's grid) go before it, so that what observes its results comes right
            // after it.
            while let Some(pure) = ctx.next_op(branch).filter(|&op| {
                ctx.traits(op).contains(OpTraits::PURE)
                    && ctx.regions(op).is_empty()
                    && !ctx.operands(op).iter().any(|v| results.contains(v))
            }) {
                ctx.detach_op(pure);
                ctx.insert_op_before(branch, pure);
            }
            let Some(next) = ctx.next_op(branch) else { break };
            let movable = ctx.regions(next).is_empty()
                && ctx.result_count(next) == 0
                && !ctx.traits(next).contains(OpTraits::TERMINATOR);
            let observes = ctx.operands(next).iter().any(|v| results.contains(v) && is_buffer(ctx, *v));
            if !movable || !observes {
                break;
            }
            for &end in &yields {
                let yielded: Vec<Value> = ctx.operands(end).to_vec();
                let operands: Vec<Value> = ctx
                    .operands(next)
                    .iter()
                    .map(|v| results.iter().position(|r| r == v).map_or(*v, |i| yielded[i]))
                    .collect();
                let copy = copy_on(ctx, next, operands);
                ctx.insert_op_before(end, copy);
            }
            ctx.erase_op(next);
            sunk += 1;
        }
    }
    sunk
}

/// Erases those of `selects` (made here) whose result nothing under `function` uses any more.
fn erase_unused(ctx: &mut Context, function: Op, selects: &[Op]) {
    if selects.is_empty() {
        return;
    }
    let used: rustc_hash::FxHashSet<Value> =
        ctx.walk(function).into_iter().flat_map(|op| ctx.operands(op).to_vec()).collect();
    for &select in selects {
        if !used.contains(&ctx.result(select, 0)) {
            ctx.erase_op(select);
        }
    }
}

/// The condition of the first buffer operand of `op` that an `arith.select` chooses.
fn first_condition(ctx: &Context, op: Op) -> Option<Value> {
    ctx.operands(op).iter().filter(|&&v| is_buffer(ctx, v)).find_map(|&value| {
        let select = ctx.defining_op(value).and_then(|d| SelectOp::wrap(ctx, d))?;
        Some(select.condition(ctx))
    })
}

/// The `scf.if`s under `function` one of whose results is a buffer.
fn ifs_yielding_buffers(ctx: &mut Context, function: Op) -> Vec<Op> {
    let if_name = ctx.op_name(IfOp::NAME);
    ctx.walk(function)
        .into_iter()
        .filter(|&op| ctx.name(op) == if_name && ctx.results(op).any(|r| is_buffer(ctx, r)))
        .collect()
}

/// A copy of `op` (an op without regions or results) on `operands`, not inserted anywhere.
fn copy_on(ctx: &mut Context, op: Op, operands: Vec<Value>) -> Op {
    let mut state = OperationState::new(ctx.name(op), ctx.location(op));
    state.operands = operands;
    state.attributes = ctx.attributes(op).to_vec();
    ctx.create_op(state)
}

/// Applies `scf`'s canonicalization `if-to-select` ([`IfToSelect`]) to each `scf.if` under
/// `function` one of whose results is a buffer; returns the selects it made.
pub fn selects_for_trivial_ifs(ctx: &mut Context, function: Op) -> Vec<Op> {
    let choices = ifs_yielding_buffers(ctx, function);
    let mut made = Vec::new();
    if choices.is_empty() {
        return made;
    }
    let mut rewriter = Rewriter::new(ctx, function);
    for branch in choices {
        let ctx = rewriter.ctx();
        let (block, before, after) = (ctx.parent_block(branch), ctx.prev_op(branch), ctx.next_op(branch));
        if !IfToSelect.match_and_rewrite(&mut rewriter, branch) {
            continue;
        }
        // The selects stand where the `scf.if` stood: after `before`, up to `after`.
        let ctx = rewriter.ctx();
        let mut at = match before {
            Some(op) => ctx.next_op(op),
            None => block.and_then(|b| ctx.first_op(b)),
        };
        while let Some(op) = at.filter(|&op| Some(op) != after) {
            made.push(op);
            at = ctx.next_op(op);
        }
    }
    made
}
