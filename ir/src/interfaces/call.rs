//! Calls and the functions they call (MLIR's `CallOpInterface` and `CallableOpInterface`).
//!
//! A call names its callee by a flat symbol; [`resolve_callee`] finds the callable in the nearest
//! symbol table. The call's results are the callee's results, and its arguments (a range of its
//! operands) bind to the entry block arguments of the callee's body, one to one.

use super::symbols::lookup_symbol;
use crate::{Context, Ident, MemoryEffects, Op, Region, Type, TypeKind};
use std::ops::Range;

/// An op that transfers control to a function and back.
pub trait CallOpInterface: Sync {
    /// The symbol the call names.
    fn callee(&self, ctx: &Context, op: Op) -> Option<Ident>;

    /// The operands passed to the callee, in order (by default: all of them).
    fn arguments(&self, ctx: &Context, op: Op) -> Range<usize> {
        0..ctx.operands(op).len()
    }
}

/// A function-like op that calls can target: a definition (with a body) or a declaration.
pub trait CallableOpInterface: Sync {
    /// The body, whose entry block's arguments are the function's parameters; `None` for a
    /// declaration whose code is not in the IR (a host function, say).
    fn body(&self, ctx: &Context, op: Op) -> Option<Region>;

    /// The parameter and result types (by default: the `function_type` attribute).
    fn signature(&self, ctx: &Context, op: Op) -> Option<(Vec<Type>, Vec<Type>)> {
        function_type_signature(ctx, op)
    }

    /// What a call does to the buffers it passes, as effects on [`EffectTarget::Parameter`]s:
    /// what a declaration declares, or a summary. By default unknown: an analysis either looks
    /// into the body or assumes anything.
    ///
    /// [`EffectTarget::Parameter`]: crate::EffectTarget::Parameter
    fn parameter_effects(&self, ctx: &Context, op: Op) -> MemoryEffects {
        let _ = (ctx, op);
        MemoryEffects::Unknown
    }

    /// Whether the function is a program entry: something outside the IR calls it, so it is
    /// never erased.
    fn is_entry(&self, ctx: &Context, op: Op) -> bool {
        let _ = (ctx, op);
        false
    }

    /// Whether the function may be erased once nothing in the IR refers to it. `module_has_entry`
    /// says whether its symbol table holds an entry (see [`is_entry`](Self::is_entry)): without
    /// one the module may be a library whose functions are called from outside.
    fn is_discardable(&self, ctx: &Context, op: Op, module_has_entry: bool) -> bool {
        let _ = (ctx, op, module_has_entry);
        false
    }
}

/// The inputs and results of the `function_type` attribute of `op` (MLIR's convention for
/// function-like ops), when it holds a function type.
pub fn function_type_signature(ctx: &Context, op: Op) -> Option<(Vec<Type>, Vec<Type>)> {
    let attribute = ctx.attribute(op, "function_type")?;
    let crate::AttributeKind::Type(ty) = ctx.attribute_kind(attribute) else { return None };
    match ctx.type_kind(*ty) {
        TypeKind::Function { inputs, results } => Some((inputs.to_vec(), results.to_vec())),
        _ => None,
    }
}

/// The callable a call refers to, looked up in the symbol tables enclosing the call; `None` when
/// the op is not a call, the symbol is undefined, or it is not a callable.
pub fn resolve_callee(ctx: &Context, call: Op) -> Option<Op> {
    let callee = ctx.interface::<dyn CallOpInterface>(call)?.callee(ctx, call)?;
    let target = lookup_symbol(ctx, call, ctx.ident_str(callee))?;
    ctx.interface::<dyn CallableOpInterface>(target).map(|_| target)
}
