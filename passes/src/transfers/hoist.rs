//! `hoist-transfers`: moves transfers out of counted loops when nothing in the loop needs them
//! there, whatever placed them (`insert-transfers{strategy=kernel}`, an author, a vendor's
//! pass). Innermost loops first, so a copy can leave a whole nest.
//!
//! A `buffer.to_device` of `b` at the top level of a loop body moves before the loop when
//! - nothing in the body before it touches `b` (but host reads), and
//! - from it to the end of the body the two copies of `b` end equal: every later device write of
//!   `b` is followed by a whole copy back and no host write after it, every host write by a
//!   whole copy in;
//!
//! So every iteration after the first finds the device copy already equal to the host's.
//!
//! A `buffer.from_device` of `b` at the top level of a body moves after the loop when nothing
//! else in the loop reads or writes the host copy of `b`, and nothing after it in the body writes
//! the device copy (so the copy after the last iteration gives what the last one gave).
//!
//! Either way the moved copy is guarded by "the loop runs at least once" (unless its trip count
//! is a known positive constant; a loop known to run zero times loses it): a copy in hoisted
//! above a loop that does not run would be wasted, and a copy back below it would overwrite the
//! host copy with stale device memory.
//!
//! What touches `b` is asked of the interfaces: the memory effects of each op (nested ops
//! included), the kernel effects of each dispatch, and a call's effects (unknown: everything);
//! any value that may be `b` ([`super::aliases`]) counts.

use super::aliases::BufferRoots;
use super::dispatch::Kernels;
use super::emit::{compare, guard, Anchor};
use super::host_effects::{summarize_with_roots, Summaries, Touches};
use super::insert::{host_functions, kernel_effects};
use hat_dialects::buffer::{FromDeviceOp, ToDeviceOp};
use hat_dialects::semantics::IntPredicate;
use hat_ir::interfaces::{loops_innermost_first, trip_count, LoopLikeOpInterface};
use hat_ir::pass::{Pass, PassFailed, PassInfo, PassState};
use hat_ir::{Block, Context, Op, Value};

/// The registration of `hoist-transfers`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "hoist-transfers",
        summary: "Move transfers out of loops when nothing in the loop needs them (guarded by the trip count)",
        anchor: None,
        options: &[],
        create: |_| Box::new(HoistTransfers),
    }
}

/// The `hoist-transfers` pass.
pub struct HoistTransfers;

impl Pass for HoistTransfers {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let effects = kernel_effects(ctx, op, state);
        let (summaries, mut all_roots) = summarize_with_roots(ctx, op, &effects);
        let mut moved = 0u64;
        for function in host_functions(ctx, op) {
            // Moving transfers (ops without results) leaves the roots as summarize found them.
            let roots = all_roots.remove(&function).unwrap_or_else(|| BufferRoots::of(ctx, function));
            // Innermost loops first.
            let loops = loops_innermost_first(ctx, function);
            for looped in loops {
                moved += hoist_out_of(ctx, looped, &roots, &effects, &summaries);
            }
        }
        state.add_statistic("num-hoisted", moved);
        if moved == 0 {
            state.preserve_all();
        }
        Ok(())
    }
}

/// Whether `op` is a whole transfer of exactly `buffer` in `direction` (`true`: to the device).
fn whole_transfer_of(ctx: &Context, op: Op, buffer: Value, to_device: bool) -> bool {
    let matches = if to_device { ToDeviceOp::wrap(ctx, op).is_some() } else { FromDeviceOp::wrap(ctx, op).is_some() };
    matches && ctx.operands(op) == [buffer]
}

/// Whether `value` is defined outside `looped`.
fn defined_outside(ctx: &Context, value: Value, looped: Op) -> bool {
    let owner = match ctx.defining_op(value) {
        Some(op) => Some(op),
        None => ctx.value_block(value).and_then(|b| ctx.block_parent(b)).and_then(|r| ctx.region_parent(r)),
    };
    owner.is_none_or(|op| op != looped && !ctx.is_ancestor(looped, op))
}

/// Moves what can leave `looped`; returns how many transfers moved.
fn hoist_out_of(ctx: &mut Context, looped: Op, roots: &BufferRoots, kernels: &Kernels, summaries: &Summaries) -> u64 {
    let body = ctx.interface::<dyn LoopLikeOpInterface>(looped).expect("a loop").body(ctx, looped);
    let [block] = ctx.region_blocks(body) else { return 0 };
    let looping = ctx.interface::<dyn LoopLikeOpInterface>(looped).expect("a loop");
    let guardable = trip_count(ctx, looped).is_some()
        || (looping.lower_bound(ctx, looped).is_some() && looping.upper_bound(ctx, looped).is_some());
    if !guardable {
        return 0;
    }
    let block: Block = *block;
    let mut moved = 0;
    loop {
        let ops: Vec<Op> = ctx.block_ops(block).collect();
        let view = Touches { ctx, roots, kernels, summaries };
        let mut found = None;
        for (position, &op) in ops.iter().enumerate() {
            let to_device = ToDeviceOp::wrap(ctx, op).is_some();
            let from_device = FromDeviceOp::wrap(ctx, op).is_some();
            if !(to_device || from_device) || !ctx.operands(op).iter().all(|&v| defined_outside(ctx, v, looped)) {
                continue;
            }
            let buffer = ctx.operand(op, 0);
            let hoistable = if to_device {
                let before_clean = ops[..position].iter().all(|&o| {
                    let t = view.touch(o, buffer);
                    !(t.host_write || t.device_read || t.device_write)
                });
                let mut equal = true;
                for &o in &ops[position + 1..] {
                    let t = view.touch(o, buffer);
                    if whole_transfer_of(ctx, o, buffer, false) || whole_transfer_of(ctx, o, buffer, true) {
                        equal = true;
                    } else if t.device_write || t.host_write {
                        equal = false;
                    }
                }
                before_clean && equal
            } else {
                let others_leave_host = ops.iter().enumerate().all(|(i, &o)| {
                    let t = view.touch(o, buffer);
                    i == position || !(t.host_read || t.host_write)
                });
                let no_later_device_write = ops[position + 1..].iter().all(|&o| !view.touch(o, buffer).device_write);
                others_leave_host && no_later_device_write
            };
            if hoistable {
                found = Some((op, to_device));
                break;
            }
        }
        let Some((op, to_device)) = found else { break };
        place_outside(ctx, looped, op, to_device);
        moved += 1;
    }
    moved
}

/// Moves the transfer `op` before (`before`) or after `looped`, guarded by "it runs".
fn place_outside(ctx: &mut Context, looped: Op, op: Op, before: bool) {
    let trips = trip_count(ctx, looped);
    ctx.detach_op(op);
    if trips == Some(0) {
        ctx.erase_op(op);
        return;
    }
    let anchor = if before {
        Anchor::Before(looped)
    } else {
        Anchor::Before(ctx.next_op(looped).expect("a loop is not a terminator"))
    };
    if trips.is_some_and(|t| t > 0) {
        super::emit::insert(ctx, anchor, op);
        return;
    }
    let looping = ctx.interface::<dyn LoopLikeOpInterface>(looped).expect("a loop");
    let (Some(lower), Some(upper)) = (looping.lower_bound(ctx, looped), looping.upper_bound(ctx, looped)) else {
        unreachable!("hoist_out_of checks that the loop can be guarded")
    };
    let location = ctx.location(op);
    let condition = compare(ctx, anchor, IntPredicate::Slt, lower, upper, location);
    let then_block = guard(ctx, anchor, condition, location);
    super::emit::insert(ctx, Anchor::End(then_block), op);
}
