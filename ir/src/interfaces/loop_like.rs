//! Counted loops (MLIR's `LoopLikeOpInterface`, with the bounds of `scf.for`).
//!
//! A loop-like op runs its single body region once per value of its induction variable, from the
//! lower bound (inclusive) to the upper bound (exclusive) by a positive step, compared signed.
//! Values carried from one iteration to the next are the body's "region iter args": the op's
//! [`init_operands`](LoopLikeOpInterface::init_operands) bind to them on the first iteration,
//! the body terminator's operands on each next one, and the last ones become the op's results
//! (the inits, when the loop runs zero times). The op also implements
//! [`super::RegionBranchOpInterface`], which describes the same flow for generic analyses.

use super::constants::constant_integer;
use crate::{Context, Op, Region, Value};
use std::ops::Range;

/// A counted loop.
pub trait LoopLikeOpInterface: Sync {
    /// The region that repeats.
    fn body(&self, ctx: &Context, op: Op) -> Region {
        ctx.regions(op)[0]
    }

    /// The induction variable (a block argument of the body), if the loop has one.
    fn induction_variable(&self, ctx: &Context, op: Op) -> Option<Value>;

    /// The first value of the induction variable.
    fn lower_bound(&self, ctx: &Context, op: Op) -> Option<Value>;

    /// The bound the induction variable stays below.
    fn upper_bound(&self, ctx: &Context, op: Op) -> Option<Value>;

    /// The increment, positive.
    fn step(&self, ctx: &Context, op: Op) -> Option<Value>;

    /// The operands that initialise the carried values.
    fn init_operands(&self, ctx: &Context, op: Op) -> Range<usize>;

    /// The indices of the body's entry block arguments that carry values between iterations.
    fn region_iter_args(&self, ctx: &Context, op: Op) -> Range<usize>;
}

/// The number of iterations of a loop-like op when its bounds and step are constants (0 when the
/// upper bound is not above the lower bound); `None` when unknown or when the step is not
/// positive (a loop that would not terminate, which the verifier or the executor reports).
pub fn trip_count(ctx: &Context, op: Op) -> Option<u64> {
    let looping = ctx.interface::<dyn LoopLikeOpInterface>(op)?;
    let lower = constant_integer(ctx, looping.lower_bound(ctx, op)?)?;
    let upper = constant_integer(ctx, looping.upper_bound(ctx, op)?)?;
    let step = constant_integer(ctx, looping.step(ctx, op)?)?;
    if step <= 0 {
        return None;
    }
    if upper <= lower {
        return Some(0);
    }
    let span = (upper as i128) - (lower as i128);
    Some(((span + step as i128 - 1) / step as i128) as u64)
}

/// The loop-like ops nested in `op` (itself included), innermost first: `walk` is pre-order,
/// so reversed it visits inner loops before the loops around them.
pub fn loops_innermost_first(ctx: &Context, op: Op) -> Vec<Op> {
    let mut loops = Vec::new();
    ctx.walk_with(op, |o| {
        if ctx.interface::<dyn LoopLikeOpInterface>(o).is_some() {
            loops.push(o);
        }
    });
    loops.reverse();
    loops
}
