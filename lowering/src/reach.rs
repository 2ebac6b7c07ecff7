//! What a kernel reaches: the device functions it calls (transitively), whether any of them
//! waits at a barrier, the workgroup memory they allocate, the float atomics they use, and
//! whether anything in them can tell which work items share a workgroup. One
//! walk before any code is emitted, because rspirv builds one function at a time and some
//! answers (the barrier, the storage of float buffers) shape the entry point itself.
//!
//! SPIR-V forbids recursion, so a call that closes a cycle of helper calls is a diagnostic at
//! that call, naming the cycle.

use crate::Failed;
use hat_dialects::kernel::{AtomicRmwOp, BarrierOp, LocalAllocOp, WorkItemQuery};
use hat_ir::interfaces::{execution_space, resolve_callee, CallOpInterface, CallableOpInterface, ExecutionSpace};
use hat_ir::{Context, Diagnostic, Op, TypeKind};
use rustc_hash::FxHashMap;

/// What a kernel reaches.
#[derive(Debug, Default)]
pub(crate) struct Reach {
    /// The callee of each call op reached.
    pub callees: FxHashMap<Op, Op>,
    /// Whether a barrier is reached.
    pub has_barrier: bool,
    /// The workgroup allocations reached, in the order met.
    pub local_allocs: Vec<Op>,
    /// Float widths (32, 64) of the elements of atomics reached: buffers of those floats are
    /// stored as integers, which atomics can compare and swap.
    pub float_atomic_bits: Vec<u32>,
    /// Whether anything reached depends on the workgroup's shape: a barrier, workgroup memory,
    /// or a query of the local id, the group id, the workgroup size or the number of groups.
    /// Without any, the work items of a grid compute the same whatever the workgroup size.
    pub observes_workgroup: bool,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum State {
    Visiting,
    Done,
}

/// Walks `kernel` and everything it calls.
pub(crate) fn reach(ctx: &Context, kernel: Op, diagnostics: &mut Vec<Diagnostic>) -> Result<Reach, Failed> {
    let mut walk = Walk { ctx, reach: Reach::default(), states: FxHashMap::default(), stack: Vec::new(), diagnostics };
    walk.function(kernel)?;
    Ok(walk.reach)
}

struct Walk<'a> {
    ctx: &'a Context,
    reach: Reach,
    states: FxHashMap<Op, State>,
    /// The calls on the path from the kernel, with the function each is in.
    stack: Vec<(Op, Op)>,
    diagnostics: &'a mut Vec<Diagnostic>,
}

impl Walk<'_> {
    fn function(&mut self, function: Op) -> Result<(), Failed> {
        let ctx = self.ctx;
        self.states.insert(function, State::Visiting);
        let mut result = Ok(());
        for op in ctx.walk(function).into_iter().skip(1) {
            if BarrierOp::wrap(ctx, op).is_some() {
                self.reach.has_barrier = true;
                self.reach.observes_workgroup = true;
            } else if LocalAllocOp::wrap(ctx, op).is_some() {
                self.reach.local_allocs.push(op);
                self.reach.observes_workgroup = true;
            } else if let Some(query) = WorkItemQuery::of(ctx, op) {
                if !matches!(query, WorkItemQuery::GlobalId | WorkItemQuery::GlobalSize) {
                    self.reach.observes_workgroup = true;
                }
            } else if let Some(atomic) = AtomicRmwOp::wrap(ctx, op) {
                let buffer = ctx.value_type(atomic.buffer(ctx));
                if let TypeKind::MemRef { element, .. } = ctx.type_kind(buffer) {
                    if let TypeKind::Float(kind) = ctx.type_kind(*element) {
                        if !self.reach.float_atomic_bits.contains(&kind.width()) {
                            self.reach.float_atomic_bits.push(kind.width());
                        }
                    }
                }
            } else if ctx.interface::<dyn CallOpInterface>(op).is_some() {
                if let Err(failed) = self.call(function, op) {
                    result = Err(failed);
                }
            }
        }
        self.states.insert(function, State::Done);
        result
    }

    fn call(&mut self, caller: Op, call: Op) -> Result<(), Failed> {
        let ctx = self.ctx;
        let Some(callee) = resolve_callee(ctx, call) else {
            return Err(self.report(call, "the callee is not a function this module defines".to_string()));
        };
        let has_body = ctx.interface::<dyn CallableOpInterface>(callee).and_then(|c| c.body(ctx, callee)).is_some();
        if !has_body || execution_space(ctx, callee) != Some(ExecutionSpace::Device) {
            let message = format!("calls '@{}', which is not a device function with a body", symbol(ctx, callee));
            return Err(self.report(call, message));
        }
        self.reach.callees.insert(call, callee);
        match self.states.get(&callee) {
            Some(State::Done) => Ok(()),
            Some(State::Visiting) => {
                // The functions of the cycle: from the callee's own frame to the caller, then
                // back to the callee (a helper calling itself has no frame of its own yet).
                let start = self.stack.iter().position(|&(_, function)| function == callee);
                let path = start.map_or(&[][..], |start| &self.stack[start..]);
                let mut cycle: Vec<String> =
                    path.iter().map(|&(_, function)| format!("'@{}'", symbol(ctx, function))).collect();
                cycle.push(format!("'@{}'", symbol(ctx, caller)));
                cycle.push(format!("'@{}'", symbol(ctx, callee)));
                let message = format!(
                    "recursive call: SPIR-V forbids recursion, and this call closes the cycle {}",
                    cycle.join(" -> ")
                );
                Err(self.report(call, message))
            }
            None => {
                self.stack.push((call, caller));
                let result = self.function(callee);
                self.stack.pop();
                result
            }
        }
    }

    fn report(&mut self, op: Op, message: String) -> Failed {
        self.diagnostics.push(Diagnostic::error(self.ctx.location(op), message));
        Failed::Reported
    }
}

/// A function's symbol, for messages.
pub(crate) fn symbol(ctx: &Context, op: Op) -> &str {
    ctx.attribute(op, "sym_name").and_then(|a| ctx.attribute_kind(a).as_str()).unwrap_or("<unnamed>")
}
