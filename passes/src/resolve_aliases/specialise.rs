//! Specialising a resolved loop by residue: the loop with period k becomes
//!
//! ```mlir
//! scf.for %g0 = %lb to %ub step k * %step {
//!   body on residue 0 (iv = %g0)
//!   %g1 = %g0 + %step
//!   scf.if %g1 < %ub { body on residue 1 (iv = %g1) }
//!   ...
//!   scf.if %g0 + (k - 1) * %step < %ub { body on residue k - 1 }
//! }
//! %result_j = select on (trip count mod k) among the carried values of each residue
//! ```
//!
//! In the copy of the body for residue r, every value the resolution made concrete is replaced
//! by that value (a buffer from outside, a buffer the copy allocates, a constant), the carried
//! values by what they are at the start of iteration r, and the pure ops whose results all
//! became concrete (the `select`s that chose buffers) are dropped. The loop carries only the
//! free carried values (counters, accumulators: not concrete on every residue), through the
//! guarded copies (`scf.if` yielding them, the else branch passing them on); every other value
//! it carried is known on each residue.
//!
//! Correct for every trip count, 0 and counts known only at run time included: group g of the
//! unrolled loop runs the original iterations g * k to g * k + k - 1 that are below the bound,
//! the first always (the group runs only when its first induction value is below the bound),
//! each next one when its induction value is (compared signed, as the loop compares). The
//! guards, rather than a remainder after the loop, keep every path through the loop the same
//! shape for the transfer planner. Assumes, as the rules do, that `iv + (k - 1) * step` does not
//! wrap.

use super::build::{At, Builder};
use super::residues::{LoopShape, Resolution, Resolved};
use hat_dialects::semantics::{IntPredicate, ScalarOp};
use hat_ir::interfaces::LoopLikeOpInterface;
use hat_ir::rewrite::{Mapping, Rewriter};
use hat_ir::{Block, Context, Op, OperationState, Type, Value};
use rustc_hash::FxHashMap;

/// Whether `op` (at the top of the body) is left out of the copy for residue `r`: a pure scalar
/// op (a `select` among them) whose every result is concrete there as something other than
/// itself (an op the e-graph does not model is its own leaf, and must be copied).
pub fn dropped(ctx: &Context, resolution: &Resolution, r: usize, op: Op) -> bool {
    ScalarOp::decode(ctx, op).is_ok()
        && ctx.regions(op).is_empty()
        && ctx.result_count(op) > 0
        && ctx.results(op).all(|v| matches!(resolution.values[r].get(&v), Some(&found) if found != Resolved::Local(v)))
}

/// Replaces the loop of `shape` by its specialisation by residue (see the module
/// documentation). `rw` must be a rewriter of a region holding the loop.
pub fn specialise(rw: &mut Rewriter<'_>, shape: &LoopShape, resolution: &Resolution) {
    let looped = shape.op;
    let ctx = rw.ctx();
    let looping = ctx.interface::<dyn LoopLikeOpInterface>(looped).expect("a loop-like op");
    let lower = looping.lower_bound(ctx, looped).expect("a counted loop");
    let upper = looping.upper_bound(ctx, looped).expect("a counted loop");
    let step = looping.step(ctx, looped).expect("a counted loop");
    let location = ctx.location(looped);
    let results: Vec<Value> = ctx.results(looped).collect();
    // The induction variable's type (`index`, or an integer type such as `i32`): every value
    // made here for the iteration space has it.
    let index = ctx.value_type(step);
    let mut b = Builder { rw, location, constants: FxHashMap::default(), anchor: looped };
    let before = At::Before(looped);
    let k = resolution.period as i64;
    let zero = b.constant(0, index);
    // Every later constant goes before the first one, above every op made here.
    b.anchor = b.rw.ctx().defining_op(zero).expect("a constant op");
    let period = b.constant(k, index);
    let stride = b.binary(before, "arith.muli", step, period);
    // Offsets r * step of each residue's induction variable.
    let offsets: Vec<Value> = (0..k)
        .map(|r| {
            let r_value = b.constant(r, index);
            if r == 0 {
                zero
            } else {
                b.binary(before, "arith.muli", step, r_value)
            }
        })
        .collect();
    // The unrolled loop: residue 0 always (the group's first iteration is below the upper
    // bound, or the group would not run), residue r when its induction variable is. It carries
    // the free carried values only.
    let free: Vec<usize> =
        (0..shape.iter_args.len()).filter(|&j| resolution.states[0][j] == Resolved::Carried(j)).collect();
    let free_types: Vec<Type> = free.iter().map(|&j| b.rw.ctx().value_type(shape.iter_args[j])).collect();
    let region = b.rw.ctx_mut().create_region();
    let mut block_types = vec![index];
    block_types.extend(free_types.iter().copied());
    let body = b.rw.ctx_mut().create_block(&block_types);
    b.rw.ctx_mut().append_block(region, body);
    let mut state = OperationState::new(b.rw.ctx_mut().op_name("scf.for"), location);
    state.operands.extend([lower, upper, stride]);
    state.operands.extend(free.iter().map(|&j| shape.inits[j]));
    state.result_types = free_types.clone();
    state.regions.push(region);
    let new_loop = b.place(before, state);
    let g0 = b.rw.ctx().block_arguments(body)[0];
    // The current value of each carried value (meaningful for the free ones).
    let mut current: Vec<Value> = shape.inits.clone();
    for (i, &j) in free.iter().enumerate() {
        current[j] = b.rw.ctx().block_arguments(body)[i + 1];
    }
    current = copy_body(&mut b, shape, resolution, 0, g0, body, &current);
    for (r, &offset) in offsets.iter().enumerate().skip(1) {
        let iv = b.binary(At::End(body), "arith.addi", g0, offset);
        let runs = b.compare(At::End(body), IntPredicate::Slt, iv, upper);
        let then_region = b.rw.ctx_mut().create_region();
        let then_block = b.rw.ctx_mut().create_block(&[]);
        b.rw.ctx_mut().append_block(then_region, then_block);
        let else_region = b.rw.ctx_mut().create_region();
        let mut state = OperationState::new(b.rw.ctx_mut().op_name("scf.if"), location);
        state.operands.push(runs);
        state.result_types = free_types.clone();
        let else_block = (!free.is_empty()).then(|| {
            let block = b.rw.ctx_mut().create_block(&[]);
            b.rw.ctx_mut().append_block(else_region, block);
            block
        });
        state.regions = vec![then_region, else_region];
        let guard = b.place(At::End(body), state);
        let after = copy_body(&mut b, shape, resolution, r, iv, then_block, &current);
        b.end(then_block, &free.iter().map(|&j| after[j]).collect::<Vec<_>>());
        if let Some(else_block) = else_block {
            b.end(else_block, &free.iter().map(|&j| current[j]).collect::<Vec<_>>());
        }
        for (i, &j) in free.iter().enumerate() {
            current[j] = b.rw.ctx().result(guard, i);
        }
    }
    b.end(body, &free.iter().map(|&j| current[j]).collect::<Vec<_>>());
    // The free carried values' results are the new loop's.
    for (i, &j) in free.iter().enumerate() {
        let (old, new) = (b.rw.ctx().result(looped, j), b.rw.ctx().result(new_loop, i));
        b.rw.replace_all_uses_with(old, new);
    }
    let used = results.iter().any(|&r| b.rw.uses().uses(r).next().is_some());
    if !used {
        b.rw.erase_op(looped);
        return;
    }
    // The trip count n, for the results: ceil((ub - lb) / step), 0 when ub <= lb.
    let one = b.constant(1, index);
    let span = b.binary(before, "arith.subi", upper, lower);
    let step_less_one = b.binary(before, "arith.subi", step, one);
    let rounded = b.binary(before, "arith.addi", span, step_less_one);
    let quotient = b.binary(before, "arith.divui", rounded, step);
    let runs = b.compare(before, IntPredicate::Sgt, upper, lower);
    let count = b.select(before, runs, quotient, zero);
    let remainder = b.binary(before, "arith.remui", count, period);
    // The other results: the carried values after n iterations, those of residue n mod k.
    for (j, &result) in results.iter().enumerate() {
        if free.contains(&j) {
            continue;
        }
        let ty = b.rw.ctx().value_type(result);
        let empty = Mapping::new();
        let mut chosen = b.materialize(resolution.states[resolution.period - 1][j], ty, &empty);
        for r in (0..resolution.period - 1).rev() {
            let value = b.materialize(resolution.states[r][j], ty, &empty);
            if value == chosen {
                continue;
            }
            let r_value = b.constant(r as i64, index);
            let is_r = b.compare(before, IntPredicate::Eq, remainder, r_value);
            chosen = b.select(before, is_r, value, chosen);
        }
        b.rw.replace_all_uses_with(result, chosen);
    }
    b.rw.erase_op(looped);
}

/// Appends to `block` the body of the loop on residue `r`, its induction variable `iv`, the
/// free carried values being `current`; returns the carried values it yields (meaningful for
/// the free ones).
fn copy_body(
    b: &mut Builder<'_, '_>,
    shape: &LoopShape,
    resolution: &Resolution,
    r: usize,
    iv: Value,
    block: Block,
    current: &[Value],
) -> Vec<Value> {
    let mut mapping = Mapping::new();
    mapping.map_value(shape.iv, iv);
    for (j, &argument) in shape.iter_args.iter().enumerate() {
        let value = match resolution.states[r][j] {
            Resolved::Carried(_) => current[j],
            resolved => {
                let ty = b.rw.ctx().value_type(argument);
                b.materialize(resolved, ty, &mapping)
            }
        };
        mapping.map_value(argument, value);
    }
    let ops: Vec<Op> = b.rw.ctx().block_ops(shape.body).collect();
    let terminator = ops.last().copied();
    for op in ops {
        if Some(op) == terminator {
            break;
        }
        let results: Vec<Value> = b.rw.ctx().results(op).collect();
        if !dropped(b.rw.ctx(), resolution, r, op) {
            let copy = b.rw.clone_op(op, &mut mapping);
            b.rw.append_op(block, copy);
        }
        for result in results {
            match resolution.values[r].get(&result) {
                Some(&Resolved::Local(v)) if v == result => {}
                Some(&resolved) => {
                    let ty = b.rw.ctx().value_type(result);
                    let value = b.materialize(resolved, ty, &mapping);
                    mapping.map_value(result, value);
                }
                None => {}
            }
        }
    }
    shape.yields.iter().map(|&v| mapping.lookup(v)).collect()
}
