//! What `compute`'s ops tell analyses: typed views, and the callable, call and launch interfaces.

use crate::functions::{CalleeAttributeCall, Declaration, FunctionWithBody, Removal};
use crate::syntax::flat_symbol_ref;
use hat_ir::interfaces::{CallOpInterface, CallableOpInterface, LaunchOpInterface};
use hat_ir::{op_view, Context, Ident, Op, Value};
use std::ops::Range;

op_view! {
    /// `compute.func @name(...) { body }`: a host function.
    pub struct FuncOp = "compute.func" {
        operands: [],
        regions: [body],
    }
}

op_view! {
    /// `compute.return values`.
    pub struct ReturnOp = "compute.return" {
        operands: [; ..values],
        regions: [],
    }
}

op_view! {
    /// `compute.call @callee(arguments)`: calls a `compute.func` or a `compute.host_func`.
    pub struct CallOp = "compute.call" {
        operands: [; ..arguments],
        regions: [],
    }
}

impl CallOp {
    /// The callee's symbol.
    pub fn callee(self, ctx: &Context) -> Option<Ident> {
        flat_symbol_ref(ctx, self.0, "callee")
    }
}

op_view! {
    /// `compute.host_func @name(args with effects)`: an opaque host function.
    pub struct HostFuncOp = "compute.host_func" {
        operands: [],
        regions: [],
    }
}

op_view! {
    /// `compute.sync`: waits for the device.
    pub struct SyncOp = "compute.sync" {
        operands: [],
        regions: [],
    }
}

op_view! {
    /// `compute.dispatch @kernel[grid](arguments)`.
    pub struct DispatchOp = "compute.dispatch" {
        operands: [; ..all_operands],
        regions: [],
    }
}

impl DispatchOp {
    /// The kernel's symbol.
    pub fn kernel(self, ctx: &Context) -> Option<Ident> {
        flat_symbol_ref(ctx, self.0, "kernel")
    }

    /// The grid operands (x first).
    pub fn grid(self, ctx: &Context) -> &[Value] {
        &ctx.operands(self.0)[Launch.grid(ctx, self.0)]
    }

    /// The kernel's arguments.
    pub fn arguments(self, ctx: &Context) -> &[Value] {
        &ctx.operands(self.0)[Launch.arguments(ctx, self.0)]
    }
}

struct Launch;

impl LaunchOpInterface for Launch {
    fn kernel(&self, ctx: &Context, op: Op) -> Option<Ident> {
        flat_symbol_ref(ctx, op, "kernel")
    }

    fn grid(&self, ctx: &Context, op: Op) -> Range<usize> {
        let (grid, _) = super::dispatch_segments(ctx, op).unwrap_or((0, 0));
        0..grid
    }

    fn arguments(&self, ctx: &Context, op: Op) -> Range<usize> {
        let (grid, arguments) = super::dispatch_segments(ctx, op).unwrap_or((0, 0));
        grid..grid + arguments
    }
}

/// Attaches `compute`'s interfaces.
pub(crate) fn attach(ctx: &mut Context) {
    ctx.attach_interface::<dyn CallableOpInterface>(FuncOp::NAME, &FunctionWithBody(Removal::UnlessEntryOrLibrary));
    ctx.attach_interface::<dyn CallableOpInterface>(HostFuncOp::NAME, &Declaration(super::host_func_parameter_effects));
    ctx.attach_interface::<dyn CallOpInterface>(CallOp::NAME, &CalleeAttributeCall);
    ctx.attach_interface::<dyn LaunchOpInterface>(DispatchOp::NAME, &Launch);
}
