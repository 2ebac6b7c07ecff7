//! The function, call and return shapes that `compute` and `kernel` share: the callable
//! interface of a function with a body (or of a declaration), and the call interface of an op
//! naming its callee in a `callee` attribute.

use crate::syntax::flat_symbol_ref;
use hat_ir::interfaces::{CallOpInterface, CallableOpInterface};
use hat_ir::verifier::symbol_name;
use hat_ir::{Context, Ident, MemoryEffects, Op, Region};

/// A call naming its callee in its `callee` attribute and passing all its operands.
pub(crate) struct CalleeAttributeCall;

impl CallOpInterface for CalleeAttributeCall {
    fn callee(&self, ctx: &Context, op: Op) -> Option<Ident> {
        flat_symbol_ref(ctx, op, "callee")
    }
}

/// Whether a function is a program entry: `@main`, or one with the `entry` attribute.
pub fn is_entry(ctx: &Context, op: Op) -> bool {
    symbol_name(ctx, op) == Some("main") || ctx.attribute(op, "entry").is_some()
}

/// How a function with a body may be removed once nothing refers to it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Removal {
    /// Never: something outside the IR may call it (a kernel: the runtime launches it by name).
    Never,
    /// When the module names its entries and this is not one of them (a host function: without
    /// an entry the module may be a library whose functions are called by name).
    UnlessEntryOrLibrary,
    /// Always: only the IR can call it (a kernel helper).
    Always,
}

/// A function whose body is its first region.
pub(crate) struct FunctionWithBody(pub Removal);

impl CallableOpInterface for FunctionWithBody {
    fn body(&self, ctx: &Context, op: Op) -> Option<Region> {
        ctx.regions(op).first().copied()
    }

    fn is_entry(&self, ctx: &Context, op: Op) -> bool {
        match self.0 {
            Removal::Never => true,
            Removal::UnlessEntryOrLibrary => is_entry(ctx, op),
            Removal::Always => false,
        }
    }

    fn is_discardable(&self, ctx: &Context, op: Op, module_has_entry: bool) -> bool {
        match self.0 {
            Removal::Never => false,
            Removal::UnlessEntryOrLibrary => module_has_entry && !is_entry(ctx, op),
            Removal::Always => true,
        }
    }
}

/// A declaration: a function whose code is outside the IR, kept whatever refers to it, with the
/// effects it declares on its parameters.
pub(crate) struct Declaration(pub fn(&Context, Op) -> MemoryEffects);

impl CallableOpInterface for Declaration {
    fn body(&self, _: &Context, _: Op) -> Option<Region> {
        None
    }

    fn parameter_effects(&self, ctx: &Context, op: Op) -> MemoryEffects {
        (self.0)(ctx, op)
    }
}
