//! A counted loop's parts, as its [`LoopLikeOpInterface`] names them, checked once against the
//! op's shape: what every consumer that runs or lowers a loop needs (the host executor, the CPU
//! backend's kernel compiler, the SPIR-V lowering), so that a vendor's interface that disagrees
//! with its op is refused in one place, with one message.

use super::{LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint};
use crate::{Block, Context, Op, OpTraits, TypeKind, Value};
use std::ops::Range;

/// The parts of a counted loop (see [`CountedLoop::of`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountedLoop {
    /// The induction variable's first value.
    pub lower: Value,
    /// The bound it stays below.
    pub upper: Value,
    /// Its increment.
    pub step: Value,
    /// The induction variable, a block argument of the body, when the loop has one.
    pub induction: Option<Value>,
    /// The op's operands that initialise the carried values.
    pub inits: Vec<Value>,
    /// The body's single block.
    pub body: Block,
    /// The body's block arguments that carry values between iterations.
    pub iter_args: Vec<Value>,
    /// The body's terminator, when it has one.
    pub terminator: Option<Op>,
    /// The terminator's operands that become the next iteration's `iter_args` (and, after the
    /// last iteration, the results): those the op's [`RegionBranchOpInterface`] forwards back
    /// into the body when it has one, else all of them.
    pub yielded: Range<usize>,
    /// The op's results, one per carried value.
    pub results: Vec<Value>,
}

impl CountedLoop {
    /// The parts of the counted loop `op`, or what is wrong with them: bounds and step present
    /// and integers (as the induction variable);
    /// a body of one block; the carried block arguments, the induction variable and nothing else
    /// as the body's arguments; as many inits, carried arguments, yielded values and results.
    pub fn of(ctx: &Context, op: Op, looping: &dyn LoopLikeOpInterface) -> Result<CountedLoop, String> {
        let (Some(lower), Some(upper), Some(step)) =
            (looping.lower_bound(ctx, op), looping.upper_bound(ctx, op), looping.step(ctx, op))
        else {
            return Err("a counted loop needs a lower bound, an upper bound and a step".into());
        };
        if ctx.regions(op).is_empty() {
            return Err("a counted loop needs a body".into());
        }
        let integer =
            |value: Value| matches!(ctx.type_kind(ctx.value_type(value)), TypeKind::Integer { .. } | TypeKind::Index);
        if !integer(lower) || !integer(upper) || !integer(step) {
            return Err("a counted loop's bounds and step must be integers".into());
        }
        let region = looping.body(ctx, op);
        let body = match ctx.region_blocks(region) {
            [block] => *block,
            [] => return Err("a counted loop needs a body".into()),
            _ => return Err("regions of more than one block are not supported".into()),
        };
        let operands = ctx.operands(op);
        let inits_range = looping.init_operands(ctx, op);
        let Some(inits) = operands.get(inits_range.clone()) else {
            return Err(format!("operands {inits_range:?} are named, but the op has {} operand(s)", operands.len()));
        };
        let arguments = ctx.block_arguments(body);
        let mismatch = || "the body's arguments do not match the loop-carried values".to_string();
        let iter_args = arguments.get(looping.region_iter_args(ctx, op)).ok_or_else(mismatch)?;
        let induction = looping.induction_variable(ctx, op);
        if let Some(induction) = induction {
            if !arguments.contains(&induction) || iter_args.contains(&induction) {
                return Err(mismatch());
            }
            if !integer(induction) {
                return Err("a counted loop's induction variable must be an integer".into());
            }
        }
        if iter_args.len() + usize::from(induction.is_some()) != arguments.len() || inits.len() != iter_args.len() {
            return Err(mismatch());
        }
        let terminator = ctx.last_op(body).filter(|&t| ctx.has_traits(t, OpTraits::TERMINATOR));
        let terminator_operands = terminator.map_or(0, |t| ctx.operands(t).len());
        let yielded = match (ctx.interface::<dyn RegionBranchOpInterface>(op), terminator) {
            (Some(branches), Some(terminator)) => {
                let index = ctx.regions(op).iter().position(|&r| r == region).unwrap_or(0);
                branches.terminator_operands(ctx, op, terminator, index, RegionPoint::Region(index))
            }
            (Some(_), None) => 0..0,
            (None, _) => 0..terminator_operands,
        };
        if yielded.start > yielded.end || yielded.end > terminator_operands {
            return Err(format!(
                "its interface names operands {yielded:?} of the body's terminator, which has {terminator_operands}"
            ));
        }
        if yielded.len() != iter_args.len() {
            return Err(format!(
                "its body hands {} value(s) to the next iteration, which carries {}",
                yielded.len(),
                iter_args.len()
            ));
        }
        let results: Vec<Value> = ctx.results(op).collect();
        if results.len() != iter_args.len() {
            return Err(format!("has {} result(s) for {} carried value(s)", results.len(), iter_args.len()));
        }
        Ok(CountedLoop {
            lower,
            upper,
            step,
            induction,
            inits: inits.to_vec(),
            body,
            iter_args: iter_args.to_vec(),
            terminator,
            yielded,
            results,
        })
    }
}
