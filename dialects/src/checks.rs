//! Verification helpers shared by the dialects' verifiers.

use crate::syntax::function_signature;
use hat_ir::interfaces::{enclosing_execution_space, ExecutionSpace};
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
    matches!(
        v.ctx().type_kind(ty),
        TypeKind::Index | TypeKind::Integer { signedness: hat_ir::types::Signedness::Signless, .. }
    )
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

/// Checks an op's counts (its region and successor counts are checked by the core, from its
/// [`OpSpec`](crate::op_spec::OpSpec)): exactly `operands` operands and `results` results. Reports every mismatch; returns whether the op has this shape, so that a verifier can
/// stop before indexing operands that are not there.
pub fn plain_op(v: &mut VerifyContext<'_>, op: Op, operands: usize, results: usize) -> bool {
    // `&`, not `&&`: report every mismatch, not only the first.
    v.expect_operand_count(op, operands) & v.expect_result_count(op, results)
}

/// The nearest op enclosing `op` (at any depth, `op` itself excluded) whose name is one of `names`.
pub fn enclosing_op(ctx: &hat_ir::Context, op: Op, names: &[&str]) -> Option<Op> {
    let mut current = ctx.parent_op(op);
    while let Some(candidate) = current {
        if names.contains(&ctx.name_str(candidate)) {
            return Some(candidate);
        }
        current = ctx.parent_op(candidate);
    }
    None
}

/// Checks that `op` is nested, at any depth, in an op named one of `ancestors`.
pub fn has_ancestor(v: &mut VerifyContext<'_>, op: Op, ancestors: &[&str]) -> bool {
    let ok = enclosing_op(v.ctx(), op, ancestors).is_some();
    if !ok {
        v.error(op, format!("expects to be nested in one of: {}", ancestors.join(", ")));
    }
    ok
}

/// Checks that `op` runs in `space`: the nearest enclosing op that declares an execution space
/// (see [`hat_ir::interfaces::ExecutionSpace`]) declares this one.
pub fn in_execution_space(v: &mut VerifyContext<'_>, op: Op, space: ExecutionSpace) -> bool {
    let ctx = v.ctx();
    if enclosing_execution_space(ctx, op).is_some_and(|(_, found)| found == space) {
        return true;
    }
    let mut declaring: Vec<&str> = ctx
        .registered_ops()
        .into_iter()
        .filter(|d| d.traits().contains(space.trait_flag()) && d.region_count() != Some(0))
        .map(|d| d.name())
        .collect();
    declaring.sort_unstable();
    v.error(op, format!("expects to be nested in one of: {}", declaring.join(", ")));
    false
}

/// Checks that `op` does not run in `space` (see [`in_execution_space`]).
pub fn outside_execution_space(v: &mut VerifyContext<'_>, op: Op, space: ExecutionSpace) -> bool {
    let ctx = v.ctx();
    match enclosing_execution_space(ctx, op) {
        Some((ancestor, found)) if found == space => {
            v.error(op, format!("is not allowed inside '{}'", ctx.name_str(ancestor)));
            false
        }
        _ => true,
    }
}

/// Checks that `op` is not nested, at any depth, in an op named one of `ancestors`.
pub fn lacks_ancestor(v: &mut VerifyContext<'_>, op: Op, ancestors: &[&str]) -> bool {
    let ctx = v.ctx();
    match enclosing_op(ctx, op, ancestors) {
        Some(ancestor) => {
            v.error(op, format!("is not allowed inside '{}'", ctx.name_str(ancestor)));
            false
        }
        None => true,
    }
}

/// The text of a string attribute named `name`, reporting when it is missing or not a string.
pub fn string_attribute<'a>(v: &mut VerifyContext<'a>, op: Op, name: &str) -> Option<&'a str> {
    let ctx = v.ctx();
    match ctx.attribute(op, name).map(|a| ctx.attribute_kind(a)) {
        Some(AttributeKind::String(text)) => Some(text),
        Some(_) => {
            v.error(op, format!("attribute '{name}' must be a string"));
            None
        }
        None => {
            v.error(op, format!("requires attribute '{name}'"));
            None
        }
    }
}

/// The value of an `i64` integer attribute named `name`, reporting when it is missing or of another
/// type (custom forms that print the bare number read it back as `i64`).
pub fn i64_attribute(v: &mut VerifyContext<'_>, op: Op, name: &str) -> Option<i64> {
    let ctx = v.ctx();
    match ctx.attribute(op, name).map(|a| ctx.attribute_kind(a)) {
        Some(AttributeKind::Integer { value, ty })
            if matches!(
                ctx.type_kind(*ty),
                TypeKind::Integer { width: 64, signedness: hat_ir::types::Signedness::Signless }
            ) =>
        {
            Some(*value)
        }
        Some(_) => {
            v.error(op, format!("attribute '{name}' must be an i64 integer"));
            None
        }
        None => {
            v.error(op, format!("requires attribute '{name}'"));
            None
        }
    }
}

/// The values of a dense integer array attribute (`array<iN: ...>`) named `name` whose elements are
/// `width` bits wide, reporting when it is missing or of another kind.
pub fn dense_array_attribute<'a>(v: &mut VerifyContext<'a>, op: Op, name: &str, width: u32) -> Option<&'a [i64]> {
    let ctx = v.ctx();
    match ctx.attribute(op, name).map(|a| ctx.attribute_kind(a)) {
        Some(AttributeKind::DenseArray { element, values }) if matches!(ctx.type_kind(*element), TypeKind::Integer { width: w, .. } if *w == width) => {
            Some(values)
        }
        Some(_) => {
            v.error(op, format!("attribute '{name}' must be an array<i{width}: ...>"));
            None
        }
        None => {
            v.error(op, format!("requires attribute '{name}'"));
            None
        }
    }
}

/// Resolves the flat symbol reference in attribute `attribute` of `op` to the op it names, which
/// must be named one of `kinds`; reports a missing attribute, an undefined symbol and a symbol of
/// the wrong kind. Returns the target and the symbol's name.
pub fn symbol_target<'a>(v: &mut VerifyContext<'a>, op: Op, attribute: &str, kinds: &[&str]) -> Option<(Op, &'a str)> {
    let name = symbol_ref_attribute(v, op, attribute)?;
    let Some(target) = v.lookup_symbol(op, name) else {
        v.error(op, format!("'{attribute}' refers to '@{name}', which is not defined"));
        return None;
    };
    let actual = v.ctx().name_str(target);
    if !kinds.contains(&actual) {
        v.error(
            op,
            format!("'{attribute}' refers to '@{name}', which is a '{actual}', not a '{}'", kinds.join("' or '")),
        );
        return None;
    }
    Some((target, name))
}

/// Checks a call-like op against its callee's signature: operands from `first_argument` on must have
/// the types `inputs`, and the results the types `results`; `callee` names the callee in messages.
pub fn matches_signature(
    v: &mut VerifyContext<'_>,
    op: Op,
    first_argument: usize,
    inputs: &[Type],
    results: &[Type],
    callee: &str,
) {
    let ctx = v.ctx();
    let arguments = ctx.operands(op).get(first_argument..).unwrap_or_default();
    if arguments.len() != inputs.len() {
        v.error(op, format!("has {} argument(s), but '@{callee}' takes {}", arguments.len(), inputs.len()));
    } else {
        for (index, (&argument, &expected)) in arguments.iter().zip(inputs).enumerate() {
            let actual = ctx.value_type(argument);
            if actual != expected {
                let (actual, expected) = (v.type_name(actual), v.type_name(expected));
                v.error(op, format!("argument #{index} has type '{actual}', but '@{callee}' expects '{expected}'"));
            }
        }
    }
    if ctx.result_count(op) != results.len() {
        v.error(op, format!("has {} result(s), but '@{callee}' returns {}", ctx.result_count(op), results.len()));
    } else {
        for (index, (result, &expected)) in ctx.results(op).zip(results).enumerate() {
            let actual = ctx.value_type(result);
            if actual != expected {
                let (actual, expected) = (v.type_name(actual), v.type_name(expected));
                v.error(op, format!("result #{index} has type '{actual}', but '@{callee}' returns '{expected}'"));
            }
        }
    }
}

/// Checks a function-like op that is defined here: no operands or results of its own, a valid
/// signature whose returns (`return_name`) match it, and a body.
pub fn function_definition(v: &mut VerifyContext<'_>, op: Op, return_name: &str) -> bool {
    v.expect_operand_count(op, 0);
    v.expect_result_count(op, 0);
    function_like(v, op, return_name).is_some() && has_body(v, op)
}

/// Checks that a function-like op has a body: a region with at least one block (the generic form
/// can give it an empty region, which the structural checks accept).
pub fn has_body(v: &mut VerifyContext<'_>, op: Op) -> bool {
    let ctx = v.ctx();
    let ok = ctx.regions(op).first().is_some_and(|&region| !ctx.region_blocks(region).is_empty());
    if !ok {
        v.error(op, "requires a body");
    }
    ok
}

/// Checks an element access `%buffer[%i, %j]` among the operands of `op`: operand `buffer` is a
/// memref, it is followed by one `index` operand per dimension, and `trailing` more operands come
/// after the indices. Returns the memref's element type when all of that holds.
pub fn indexed_access(v: &mut VerifyContext<'_>, op: Op, buffer: usize, trailing: usize) -> Option<Type> {
    let ctx = v.ctx();
    let operands = ctx.operands(op);
    if operands.len() < buffer + 1 + trailing {
        v.error(op, format!("expects at least {} operand(s), but has {}", buffer + 1 + trailing, operands.len()));
        return None;
    }
    let memref = ctx.value_type(operands[buffer]);
    let Some((shape, element)) = memref_parts(v, memref) else {
        let name = v.type_name(memref);
        v.error(op, format!("operand #{buffer} must be a memref, but got '{name}'"));
        return None;
    };
    let indices = &operands[buffer + 1..operands.len() - trailing];
    if indices.len() != shape.len() {
        let name = v.type_name(memref);
        v.error(
            op,
            format!(
                "expects {} index operand(s), one per dimension of '{name}', but has {}",
                shape.len(),
                indices.len()
            ),
        );
        return None;
    }
    let mut ok = true;
    for (position, &index) in indices.iter().enumerate() {
        let ty = ctx.value_type(index);
        if !is_index(v, ty) {
            let name = v.type_name(ty);
            v.error(op, format!("index operand #{position} must be 'index', but got '{name}'"));
            ok = false;
        }
    }
    ok.then_some(element)
}

/// Test helpers: parse and verify text with every hat dialect registered.
#[cfg(test)]
pub(crate) mod testing {
    /// The messages of the errors that verifying `text` reports (panics if it does not parse).
    pub fn verify_errors(text: &str) -> Vec<String> {
        let mut ctx = crate::context();
        let module =
            hat_ir::parse_source(&mut ctx, "test.hat", text).unwrap_or_else(|e| panic!("parse error: {e}\n{text}"));
        hat_ir::verify(&ctx, module).into_iter().map(|d| d.message).collect()
    }

    /// Asserts that verifying `text` reports an error containing `expected`.
    pub fn assert_verify_error(text: &str, expected: &str) {
        let errors = verify_errors(text);
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "expected an error containing {expected:?}, got {errors:?}"
        );
    }

    /// The message of the parse error of `text` (panics if it parses).
    pub fn parse_error(text: &str) -> String {
        let mut ctx = crate::context();
        match hat_ir::parse_source(&mut ctx, "test.hat", text) {
            Ok(_) => panic!("expected a parse error\n{text}"),
            Err(error) => error.to_string(),
        }
    }

    /// Parses and verifies `text`, checks that printing it (custom and generic forms) round-trips,
    /// and returns the custom form.
    pub fn round_trip(text: &str) -> String {
        let print = |text: &str, generic: bool| {
            let mut ctx = crate::context();
            let module =
                hat_ir::parse_source(&mut ctx, "test.hat", text).unwrap_or_else(|e| panic!("parse error: {e}\n{text}"));
            let errors = hat_ir::verify(&ctx, module);
            assert!(errors.is_empty(), "{errors:?}\n{text}");
            hat_ir::print_op(&ctx, module, hat_ir::PrintOptions { generic, debug_info: false, assume_verified: false })
        };
        let custom = print(text, false);
        assert_eq!(print(&custom, false), custom);
        let generic = print(text, true);
        assert_eq!(print(&generic, true), generic);
        assert_eq!(print(&generic, false), custom);
        custom
    }
}
