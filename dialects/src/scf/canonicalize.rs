//! The canonicalization patterns of `scf` (rules S2, S3 and S5 of `docs/rewrites.md`), attached
//! to `scf.if` and `scf.for` as [`CanonicalizationPatterns`] (MLIR's
//! `getCanonicalizationPatterns`): `scf.if` to `arith.select`, adjacent `scf.if`s on one condition
//! combined, loop-carried values that never change removed.
//!
//! What holds for any region-branch or loop-like op (a branch on a constant, a loop that runs
//! zero times or once: rules S1 and S4) is the canonicalizer's, through the interfaces. The
//! canonicalizer applies these patterns with `region-simplify` only, as those of every op that
//! implements the region-branch interface.

use super::{ForOp, IfOp};
use hat_ir::rewrite::{CanonicalizationPatterns, PatternsFn, RewritePattern, Rewriter};
use hat_ir::{Context, Op, OperationState, Value};

static IF_PATTERNS: PatternsFn = PatternsFn(|_, set| {
    set.add(IfToSelect);
    set.add(CombineIfs);
});
static FOR_PATTERNS: PatternsFn = PatternsFn(|_, set| set.add(ForInvariantIterArgs));

/// Attaches the patterns to `scf.if` and `scf.for`.
pub(crate) fn attach(ctx: &mut Context) {
    ctx.attach_interface::<dyn CanonicalizationPatterns>(IfOp::NAME, &IF_PATTERNS);
    ctx.attach_interface::<dyn CanonicalizationPatterns>(ForOp::NAME, &FOR_PATTERNS);
}

/// The single block of region `index` of `op`, and the values its terminator yields.
fn branch(ctx: &Context, op: Op, index: usize) -> Option<(hat_ir::Block, Op, Vec<Value>)> {
    let region = *ctx.regions(op).get(index)?;
    let &[block] = ctx.region_blocks(region) else { return None };
    let terminator = ctx.last_op(block)?;
    Some((block, terminator, ctx.operands(terminator).to_vec()))
}

/// `scf.if` whose branches only yield (values defined before it) → `arith.select`s of the yielded
/// values (the value itself where both branches yield the same). Public: `insert-transfers`
/// applies it to the `scf.if`s that choose buffers before it unswitches what observes them.
pub struct IfToSelect;

impl RewritePattern for IfToSelect {
    fn name(&self) -> &str {
        "if-to-select"
    }

    fn root(&self) -> Option<&str> {
        Some(IfOp::NAME)
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        if ctx.result_count(op) == 0 {
            return false;
        }
        let (Some((_, then_yield, then_values)), Some((_, else_yield, else_values))) =
            (branch(ctx, op, 0), branch(ctx, op, 1))
        else {
            return false;
        };
        let only_yields = ctx.prev_op(then_yield).is_none() && ctx.prev_op(else_yield).is_none();
        if !only_yields || then_values.len() != ctx.result_count(op) || else_values.len() != then_values.len() {
            return false;
        }
        let condition = IfOp(op).condition(ctx);
        let (location, select) = (ctx.location(op), rewriter.ctx_mut().op_name(crate::arith_views::SelectOp::NAME));
        let mut values = Vec::with_capacity(then_values.len());
        for (&on_true, &on_false) in then_values.iter().zip(&else_values) {
            if on_true == on_false {
                values.push(on_true);
                continue;
            }
            let mut state = OperationState::new(select, location);
            state.operands = vec![condition, on_true, on_false];
            state.result_types = vec![rewriter.ctx().value_type(on_true)];
            let new = rewriter.build_before(op, state);
            values.push(rewriter.ctx().result(new, 0));
        }
        rewriter.replace_op(op, &values);
        true
    }
}

/// Which region of `ancestor` holds `op` (at any depth), if one does.
fn region_index_of(ctx: &Context, ancestor: Op, op: Op) -> Option<usize> {
    let mut current = op;
    loop {
        let parent = ctx.parent_op(current)?;
        if parent == ancestor {
            let region = ctx.block_parent(ctx.parent_block(current)?)?;
            return ctx.regions(ancestor).iter().position(|&r| r == region);
        }
        current = parent;
    }
}

/// Two adjacent `scf.if`s on the same condition → one `scf.if` whose branches run the first's
/// branch, then the second's, and yield the results of both (the second's uses of the first's
/// results become the values the first's branch yields).
struct CombineIfs;

impl RewritePattern for CombineIfs {
    fn name(&self) -> &str {
        "combine-ifs"
    }

    fn root(&self) -> Option<&str> {
        Some(IfOp::NAME)
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, second: Op) -> bool {
        let ctx = rewriter.ctx();
        let Some(first) = ctx.prev_op(second).filter(|&p| ctx.name(p) == ctx.name(second)) else { return false };
        let condition = IfOp(second).condition(ctx);
        if ctx.operands(first) != [condition] || ctx.regions(first).len() != 2 || ctx.regions(second).len() != 2 {
            return false;
        }
        let then_branches = [branch(ctx, first, 0), branch(ctx, second, 0)];
        let has_else = |op: Op| !ctx.region_blocks(ctx.regions(op)[1]).is_empty();
        let else_branches = [
            if has_else(first) { branch(ctx, first, 1) } else { None },
            if has_else(second) { branch(ctx, second, 1) } else { None },
        ];
        let [Some(first_then), Some(_)] = &then_branches else { return false };
        let first_then_values = first_then.2.clone();
        for (op, else_branch) in [first, second].into_iter().zip(&else_branches) {
            if has_else(op) != else_branch.is_some() || (else_branch.is_none() && ctx.result_count(op) != 0) {
                return false;
            }
        }
        let first_results: Vec<Value> = ctx.results(first).collect();
        // The second's uses of the first's results, inside its branches: the yielded values.
        for (index, &result) in first_results.iter().enumerate() {
            let uses: Vec<_> = rewriter.uses().uses(result).collect();
            for u in uses {
                let value = match region_index_of(rewriter.ctx(), second, u.user) {
                    Some(0) => first_then_values[index],
                    Some(_) => match &else_branches[0] {
                        Some(first_else) => first_else.2[index],
                        None => return false,
                    },
                    None => continue,
                };
                rewriter.set_operand(u.user, u.index, value);
            }
        }
        let ctx = rewriter.ctx_mut();
        let location = ctx.location(first);
        let yield_name = ctx.name(first_then.1);
        let mut result_types: Vec<_> = ctx.results(first).map(|r| ctx.value_type(r)).collect();
        result_types.extend(ctx.results(second).map(|r| ctx.value_type(r)));
        let any_else = else_branches.iter().any(Option::is_some);
        let mut new_yields = Vec::new();
        let mut state = OperationState::new(ctx.name(first), location);
        state.operands = vec![condition];
        state.result_types = result_types;
        for make_block in [true, any_else] {
            let region = ctx.create_region();
            if make_block {
                let block = ctx.create_block(&[]);
                ctx.append_block(region, block);
                let terminator = ctx.create_op(OperationState::new(yield_name, location));
                ctx.append_op(block, terminator);
                new_yields.push(terminator);
            }
            state.regions.push(region);
        }
        let combined = rewriter.create_op(state);
        rewriter.insert_op_before(first, combined);
        for (branches, &new_yield) in [then_branches, else_branches].iter().zip(&new_yields) {
            let mut yielded = Vec::new();
            for (block, old_yield, _) in branches.iter().flatten() {
                rewriter.inline_block_before(*block, new_yield, &[]);
                // Read now: the second's uses of the first's results were just replaced.
                yielded.extend_from_slice(rewriter.ctx().operands(*old_yield));
                rewriter.erase_op(*old_yield);
            }
            rewriter.set_operands(new_yield, &yielded);
        }
        let results: Vec<Value> = rewriter.ctx().results(combined).collect();
        let (for_first, for_second) = results.split_at(first_results.len());
        rewriter.replace_op(first, for_first);
        rewriter.replace_op(second, for_second);
        true
    }
}

/// `scf.for` iter_args that never change (the body yields the argument itself, or the initial
/// value) are removed: their results and their uses in the body become the initial values.
struct ForInvariantIterArgs;

impl RewritePattern for ForInvariantIterArgs {
    fn name(&self) -> &str {
        "for-invariant-iter-args"
    }

    fn root(&self) -> Option<&str> {
        Some(ForOp::NAME)
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let operands = ctx.operands(op).to_vec();
        if operands.len() < 3 {
            return false;
        }
        let inits = &operands[3..];
        let Some((block, terminator, yielded)) = branch(ctx, op, 0) else { return false };
        let arguments = ctx.block_arguments(block).to_vec();
        if arguments.len() != inits.len() + 1 || yielded.len() != inits.len() || ctx.result_count(op) != inits.len() {
            return false;
        }
        let invariant: Vec<bool> =
            (0..inits.len()).map(|i| yielded[i] == arguments[i + 1] || yielded[i] == inits[i]).collect();
        if !invariant.contains(&true) {
            return false;
        }
        for (i, &init) in inits.iter().enumerate() {
            if invariant[i] {
                rewriter.replace_all_uses_with(arguments[i + 1], init);
            }
        }
        // The same loop without them.
        let kept = |values: &[Value]| -> Vec<Value> {
            values.iter().zip(&invariant).filter(|(_, &inv)| !inv).map(|(&v, _)| v).collect()
        };
        let ctx = rewriter.ctx_mut();
        let mut state = OperationState::new(ctx.name(op), ctx.location(op));
        state.operands = operands[..3].to_vec();
        state.operands.extend(kept(inits));
        state.attributes = ctx.attributes(op).to_vec();
        let mut argument_types = vec![ctx.value_type(arguments[0])];
        argument_types.extend(kept(&arguments[1..]).iter().map(|&a| ctx.value_type(a)));
        state.result_types = argument_types[1..].to_vec();
        let region = ctx.create_region();
        let new_block = ctx.create_block(&argument_types);
        ctx.append_block(region, new_block);
        state.regions.push(region);
        let new_arguments = ctx.block_arguments(new_block).to_vec();
        let new_for = rewriter.create_op(state);
        rewriter.insert_op_before(op, new_for);
        let old_kept = {
            let mut list = vec![arguments[0]];
            list.extend(kept(&arguments[1..]));
            list
        };
        for (&old, &new) in old_kept.iter().zip(&new_arguments) {
            rewriter.replace_all_uses_with(old, new);
        }
        while let Some(child) = rewriter.ctx().first_op(block) {
            rewriter.move_op_to_end(child, new_block);
        }
        let new_yielded = kept(rewriter.ctx().operands(terminator));
        rewriter.set_operands(terminator, &new_yielded);
        let mut new_results = rewriter.ctx().results(new_for);
        let replacements: Vec<Value> = inits
            .iter()
            .zip(&invariant)
            .map(|(&init, &inv)| if inv { init } else { new_results.next().expect("one result per kept argument") })
            .collect();
        rewriter.replace_op(op, &replacements);
        true
    }
}
