//! [`Listener`]: what a [`Rewriter`](super::Rewriter) tells about each change it makes. The
//! greedy driver listens to requeue what a change may have made simplifiable; a pass may listen
//! to count or log.

use crate::{Context, Op, Value};

/// Notified of every change a rewriter makes. Every method has an empty default.
pub trait Listener {
    /// `op` was inserted into a block: created and inserted, or cloned. Called for the op and, in
    /// pre-order, for every op nested in it.
    fn op_inserted(&mut self, ctx: &Context, op: Op) {
        let _ = (ctx, op);
    }

    /// `op`, already in a block, was moved to another place; `former_next` is the op that
    /// followed it before.
    fn op_moved(&mut self, ctx: &Context, op: Op, former_next: Option<Op>) {
        let _ = (ctx, op, former_next);
    }

    /// `op` was changed in place: an operand or an attribute.
    fn op_modified(&mut self, ctx: &Context, op: Op) {
        let _ = (ctx, op);
    }

    /// `value` lost at least one use: an operand that named it was changed, or all its uses were
    /// replaced. (Its definition may have become dead.)
    fn operand_dropped(&mut self, ctx: &Context, value: Value) {
        let _ = (ctx, value);
    }

    /// The results of `op` are about to be replaced by `replacement` (then `op` is erased).
    fn op_replaced(&mut self, ctx: &Context, op: Op, replacement: &[Value]) {
        let _ = (ctx, op, replacement);
    }

    /// `op` is about to be erased: it is still in place, with its operands. Called for every op
    /// nested in it first (in reverse pre-order: each block from its end, so users come before
    /// definitions), then for `op`.
    fn op_erased(&mut self, ctx: &Context, op: Op) {
        let _ = (ctx, op);
    }
}

/// A listener that ignores everything.
#[derive(Copy, Clone, Debug, Default)]
pub struct NoListener;

impl Listener for NoListener {}

/// Two listeners, both notified (`a` first).
impl<A: Listener, B: Listener> Listener for (A, B) {
    fn op_inserted(&mut self, ctx: &Context, op: Op) {
        self.0.op_inserted(ctx, op);
        self.1.op_inserted(ctx, op);
    }

    fn op_moved(&mut self, ctx: &Context, op: Op, former_next: Option<Op>) {
        self.0.op_moved(ctx, op, former_next);
        self.1.op_moved(ctx, op, former_next);
    }

    fn op_modified(&mut self, ctx: &Context, op: Op) {
        self.0.op_modified(ctx, op);
        self.1.op_modified(ctx, op);
    }

    fn operand_dropped(&mut self, ctx: &Context, value: Value) {
        self.0.operand_dropped(ctx, value);
        self.1.operand_dropped(ctx, value);
    }

    fn op_replaced(&mut self, ctx: &Context, op: Op, replacement: &[Value]) {
        self.0.op_replaced(ctx, op, replacement);
        self.1.op_replaced(ctx, op, replacement);
    }

    fn op_erased(&mut self, ctx: &Context, op: Op) {
        self.0.op_erased(ctx, op);
        self.1.op_erased(ctx, op);
    }
}

/// A log of changes, for tests and debugging: one line per notification.
#[derive(Clone, Debug, Default)]
pub struct RecordingListener {
    /// `"inserted arith.addi"`, `"erased scf.if"`, ...
    pub events: Vec<String>,
}

impl Listener for RecordingListener {
    fn op_inserted(&mut self, ctx: &Context, op: Op) {
        self.events.push(format!("inserted {}", ctx.name_str(op)));
    }

    fn op_moved(&mut self, ctx: &Context, op: Op, _: Option<Op>) {
        self.events.push(format!("moved {}", ctx.name_str(op)));
    }

    fn op_modified(&mut self, ctx: &Context, op: Op) {
        self.events.push(format!("modified {}", ctx.name_str(op)));
    }

    fn op_replaced(&mut self, ctx: &Context, op: Op, replacement: &[Value]) {
        self.events.push(format!("replaced {} with {} value(s)", ctx.name_str(op), replacement.len()));
    }

    fn op_erased(&mut self, ctx: &Context, op: Op) {
        self.events.push(format!("erased {}", ctx.name_str(op)));
    }
}
