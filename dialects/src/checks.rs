//! Verification helpers shared by the dialects' verifiers.

use crate::syntax::function_signature;
use hat_ir::{AttributeKind, Op, Type, TypeKind, VerifyContext};

/// The type of operand `index`.
pub fn operand_type(v: &VerifyContext<'_>, op: Op, index: usize) -> Type {
    v.ctx().value_type(v.ctx().operand(op, index))
}

/// The type of result `index`.
pub fn result_type(v: &VerifyContext<'_>, op: Op, index: usize) -> Type {
    v.ctx().value_type(v.ctx().result(op, index))
}

/// Whether a type is a signless integer or `index` (what arith's integer ops take).
pub fn is_signless_integer_like(v: &VerifyContext<'_>, ty: Type) -> bool {
    matches!(v.ctx().type_kind(ty), TypeKind::Index | TypeKind::Integer { signedness: hat_ir::types::Signedness::Signless, .. })
}

/// Whether a type is a float.
pub fn is_float(v: &VerifyContext<'_>, ty: Type) -> bool {
    v.ctx().type_kind(ty).is_float()
}

/// Whether a type is a memref.
pub fn is_memref(v: &VerifyContext<'_>, ty: Type) -> bool {
    v.ctx().type_kind(ty).is_memref()
}

/// Whether a type is `index`.
pub fn is_index(v: &VerifyContext<'_>, ty: Type) -> bool {
    matches!(v.ctx().type_kind(ty), TypeKind::Index)
}

/// Whether a type is `i1`.
pub fn is_i1(v: &VerifyContext<'_>, ty: Type) -> bool {
    matches!(v.ctx().type_kind(ty), TypeKind::Integer { width: 1, .. })
}

/// Checks `n` operands and one result, all of one type accepted by `accept`; `what` names it.
pub fn uniform_operands_and_result(
    v: &mut VerifyContext<'_>,
    op: Op,
    operands: usize,
    accept: fn(&VerifyContext<'_>, Type) -> bool,
    what: &str,
) {
    if !v.expect_operand_count(op, operands) || !v.expect_result_count(op, 1) {
        return;
    }
    let ty = result_type(v, op, 0);
    if !accept(v, ty) {
        let name = v.type_name(ty);
        v.error(op, format!("result must be {what}, but got '{name}'"));
        return;
    }
    for index in 0..operands {
        let operand = operand_type(v, op, index);
        if operand != ty {
            let (a, b) = (v.type_name(operand), v.type_name(ty));
            v.error(op, format!("requires the same type for all operands and results, but operand #{index} is '{a}' and the result '{b}'"));
        }
    }
}

/// The value of an integer attribute named `name`, reporting when it is missing or not an integer.
pub fn integer_attribute(v: &mut VerifyContext<'_>, op: Op, name: &str) -> Option<i64> {
    match v.ctx().attribute(op, name).map(|a| v.ctx().attribute_kind(a)) {
        Some(AttributeKind::Integer { value, .. }) => Some(*value),
        Some(_) => {
            v.error(op, format!("attribute '{name}' must be an integer"));
            None
        }
        None => {
            v.error(op, format!("requires attribute '{name}'"));
            None
        }
    }
}

/// The text of a flat symbol-reference attribute named `name`, reporting when it is missing.
pub fn symbol_ref_attribute<'a>(v: &mut VerifyContext<'a>, op: Op, name: &str) -> Option<&'a str> {
    let ctx = v.ctx();
    match ctx.attribute(op, name).map(|a| ctx.attribute_kind(a)) {
        Some(AttributeKind::SymbolRef(path)) if path.len() == 1 => Some(ctx.ident_str(path[0])),
        _ => {
            v.error(op, format!("requires a flat symbol reference attribute '{name}'"));
            None
        }
    }
}

/// Checks a function-like op: `sym_name`, `function_type`, one region whose entry block's
/// arguments match the inputs, and returns whose operands match the results (the ops named
/// `return_name` directly in the body). Returns the signature when it is well formed.
pub fn function_like(v: &mut VerifyContext<'_>, op: Op, return_name: &str) -> Option<(Vec<Type>, Vec<Type>)> {
    let ctx = v.ctx();
    if hat_ir::verifier::symbol_name(ctx, op).is_none() {
        v.error(op, "requires a string attribute 'sym_name'");
    }
    let Some((inputs, results)) = function_signature(ctx, op) else {
        v.error(op, "requires a function type attribute 'function_type'");
        return None;
    };
    if !v.expect_region_count(op, 1) {
        return None;
    }
    let region = ctx.regions(op)[0];
    let Some(&entry) = ctx.region_blocks(region).first() else {
        return Some((inputs, results));
    };
    let argument_types: Vec<Type> = ctx.block_arguments(entry).iter().map(|&a| ctx.value_type(a)).collect();
    if argument_types != inputs {
        v.error(op, "entry block arguments must match the function type's inputs");
    }
    for &block in ctx.region_blocks(region) {
        if let Some(last) = ctx.last_op(block) {
            if ctx.name_str(last) == return_name {
                let returned: Vec<Type> = ctx.operands(last).iter().map(|&x| ctx.value_type(x)).collect();
                if returned != results {
                    let message = format!(
                        "'{}' op returns ({}) but the enclosing function returns ({})",
                        return_name,
                        returned.iter().map(|&t| v.type_name(t)).collect::<Vec<_>>().join(", "),
                        results.iter().map(|&t| v.type_name(t)).collect::<Vec<_>>().join(", ")
                    );
                    v.report(hat_ir::Diagnostic::error(ctx.location(last), message));
                }
            }
        }
    }
    Some((inputs, results))
}

/// Checks that `op` is directly inside an op named one of `parents`.
pub fn has_parent(v: &mut VerifyContext<'_>, op: Op, parents: &[&str]) -> bool {
    let ctx = v.ctx();
    let ok = ctx.parent_op(op).is_some_and(|p| parents.contains(&ctx.name_str(p)));
    if !ok {
        v.error(op, format!("expects its parent op to be one of: {}", parents.join(", ")));
    }
    ok
}

/// The memref shape and element type of `ty`.
pub fn memref_parts(v: &VerifyContext<'_>, ty: Type) -> Option<(Vec<i64>, Type)> {
    match v.ctx().type_kind(ty) {
        TypeKind::MemRef { shape, element } => Some((shape.to_vec(), *element)),
        _ => None,
    }
}
