//! What `kernel`'s ops tell analyses: typed views, and the callable and call interfaces.

use crate::functions::{CalleeAttributeCall, FunctionWithBody, Removal};
use crate::syntax::flat_symbol_ref;
use hat_ir::interfaces::{CallOpInterface, CallableOpInterface};
use hat_ir::{op_view, Context, Ident};

op_view! {
    /// `kernel.func @name(...) workgroup(x, y, z) { body }`: an entry kernel.
    pub struct FuncOp = "kernel.func" {
        operands: [],
        regions: [body],
    }
}

impl FuncOp {
    /// The workgroup size (x, y, z), when the attribute is well formed.
    pub fn workgroup_size(self, ctx: &Context) -> Option<[i64; 3]> {
        super::workgroup_size(ctx, self.0)
    }
}

op_view! {
    /// `kernel.helper @name(...) -> results { body }`: a device function that kernels call.
    pub struct HelperOp = "kernel.helper" {
        operands: [],
        regions: [body],
    }
}

op_view! {
    /// `kernel.return values`.
    pub struct ReturnOp = "kernel.return" {
        operands: [; ..values],
        regions: [],
    }
}

op_view! {
    /// `kernel.call @helper(arguments)`.
    pub struct CallOp = "kernel.call" {
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
    /// `kernel.barrier`: the workgroup barrier.
    pub struct BarrierOp = "kernel.barrier" {
        operands: [],
        regions: [],
    }
}

op_view! {
    /// `kernel.local_alloc : memref<...>`: workgroup-local memory.
    pub struct LocalAllocOp = "kernel.local_alloc" {
        operands: [],
        regions: [],
    }
}

op_view! {
    /// `kernel.atomic_rmw kind buffer[indices], value`.
    pub struct AtomicRmwOp = "kernel.atomic_rmw" {
        operands: [buffer; ..indices_and_value],
        regions: [],
    }
}

impl AtomicRmwOp {
    /// The element indices.
    pub fn indices(self, ctx: &Context) -> &[hat_ir::Value] {
        let rest = self.indices_and_value(ctx);
        &rest[..rest.len() - 1]
    }

    /// The value combined into the element.
    pub fn value(self, ctx: &Context) -> hat_ir::Value {
        *self.indices_and_value(ctx).last().expect("a verified atomic_rmw has a value")
    }
}

/// Attaches `kernel`'s interfaces.
pub(crate) fn attach(ctx: &mut Context) {
    ctx.attach_interface::<dyn CallableOpInterface>(FuncOp::NAME, &FunctionWithBody(Removal::Never));
    ctx.attach_interface::<dyn CallableOpInterface>(HelperOp::NAME, &FunctionWithBody(Removal::Always));
    ctx.attach_interface::<dyn CallOpInterface>(CallOp::NAME, &CalleeAttributeCall);
}
