//! The `kernel` dialect: device code. Entry kernels and the helper functions they call, work-item
//! ids and sizes, the workgroup barrier, workgroup-local memory and atomics. The reference page is
//! `docs/dialects/kernel.md`.

mod interfaces;
mod work_items;

pub use interfaces::{AtomicRmwOp, BarrierOp, CallOp, FuncOp, HelperOp, LocalAllocOp, ReturnOp};
pub use work_items::WorkItemQuery;

use crate::checks;
use crate::op_spec::{OpSpec, Syntax};
use crate::syntax::{
    parse_bare, parse_call, parse_colon_memref, parse_function_like, parse_indexed, parse_operands_colon_types,
    parse_plain_function, print_bare, print_call, print_function_like, print_malformed, print_operands_colon_types,
    print_plain_function, resolve_indices,
};
use hat_ir::interfaces::ExecutionSpace;
use hat_ir::parser::{ParseResult, TokenKind};
use hat_ir::{
    AttributeKind, Context, EffectKind, EffectTarget, MemoryEffect, MemoryEffects, MemorySpace, Op, OpParser,
    OpPrinter, OpTraits, OperationState, TypeKind, VerifyContext,
};

// ----- func, helper, return --------------------------------------------------------------------

/// The `workgroup_size` attribute of a kernel when it is well formed: three `i64` values.
pub fn workgroup_size(ctx: &Context, op: Op) -> Option<[i64; 3]> {
    match ctx.attribute_kind(ctx.attribute(op, "workgroup_size")?) {
        AttributeKind::DenseArray { element, values }
            if matches!(ctx.type_kind(*element), TypeKind::Integer { width: 64, .. }) =>
        {
            <[i64; 3]>::try_from(&values[..]).ok()
        }
        _ => None,
    }
}

/// `workgroup(X)`, `workgroup(X, Y)` or `workgroup(X, Y, Z)` if next: `workgroup_size`, padded with 1s.
fn parse_workgroup(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    if !p.consume_keyword("workgroup") {
        return Ok(());
    }
    let location = p.location();
    p.expect(TokenKind::LParen, "'(' after 'workgroup'")?;
    let mut sizes = vec![p.parse_integer()?];
    while p.consume_if(TokenKind::Comma) {
        sizes.push(p.parse_integer()?);
    }
    p.expect(TokenKind::RParen, "')' after the workgroup size")?;
    if sizes.len() > 3 {
        return Err(p.error_at(location, "a workgroup size has 1 to 3 dimensions"));
    }
    sizes.resize(3, 1);
    let ctx = p.ctx();
    let key = ctx.ident("workgroup_size");
    let value = ctx.dense_i64_array_attr(&sizes);
    state.attributes.push((key, value));
    Ok(())
}

fn parse_func(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    parse_function_like(p, state, parse_workgroup)
}

fn print_func(p: &mut OpPrinter<'_, '_>, op: Op) {
    // A malformed `workgroup_size` stays in the attribute dictionary, where it can be seen.
    let sizes = workgroup_size(p.ctx(), op);
    let elided: &[&str] = if sizes.is_some() { &["workgroup_size"] } else { &[] };
    print_function_like(p, op, elided, |p| {
        if let Some([x, y, z]) = sizes {
            p.write(&format!(" workgroup({x}, {y}, {z})"));
        }
    })
}

fn verify_func(v: &mut VerifyContext<'_>, op: Op) {
    v.expect_operand_count(op, 0);
    v.expect_result_count(op, 0);
    if let Some((inputs, results)) = checks::function_like(v, op, "kernel.return") {
        checks::has_body(v, op);
        if !results.is_empty() {
            v.error(op, format!("an entry kernel returns nothing, but its type has {} result(s)", results.len()));
        }
        for (index, &ty) in inputs.iter().enumerate() {
            let kind = v.ctx().type_kind(ty);
            if !(kind.is_memref() || kind.is_integer_like() || kind.is_float()) {
                let name = v.type_name(ty);
                v.error(op, format!("input #{index} has type '{name}': kernel inputs are memrefs or scalars (integer, float, index)"));
            }
        }
    }
    if v.ctx().attribute(op, "workgroup_size").is_some() {
        if let Some(sizes) = checks::dense_array_attribute(v, op, "workgroup_size", 64) {
            if sizes.len() != 3 || sizes.iter().any(|&s| s < 1) {
                v.error(op, format!("attribute 'workgroup_size' must hold 3 positive sizes, but is {sizes:?}"));
            }
        }
    }
}

fn verify_helper(v: &mut VerifyContext<'_>, op: Op) {
    checks::function_definition(v, op, "kernel.return");
}

fn verify_return(v: &mut VerifyContext<'_>, op: Op) {
    // The operand types are checked against the function's results by the function's verifier.
    checks::has_parent(v, op, &["kernel.func", "kernel.helper"]);
    v.expect_result_count(op, 0);
}

/// Returning moves no memory; the op is not `PURE` only because a terminator must not be removed.
fn no_effects(_: &Context, _: Op) -> MemoryEffects {
    MemoryEffects::none()
}

// ----- call ------------------------------------------------------------------------------------

fn verify_call(v: &mut VerifyContext<'_>, op: Op) {
    checks::in_execution_space(v, op, ExecutionSpace::Device);
    let Some((callee, name)) = checks::symbol_target(v, op, "callee", &["kernel.helper"]) else {
        return;
    };
    if let Some((inputs, results)) = crate::syntax::function_signature(v.ctx(), callee) {
        checks::matches_signature(v, op, 0, &inputs, &results, name);
    }
}

// ----- work-item ids and sizes -----------------------------------------------------------------

/// The custom form's names of dimensions 0, 1 and 2.
const DIMENSIONS: [&str; 3] = ["x", "y", "z"];

/// `x`, `y` or `z` then attr-dict: the `dimension` attribute (0, 1, 2); the result is an `index`.
fn parse_id(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let location = p.location();
    let name = p.parse_keyword("a dimension (x, y or z)")?;
    let Some(dimension) = DIMENSIONS.iter().position(|&d| d == name) else {
        return Err(p.error_at(location, format!("expected a dimension (x, y or z), found '{name}'")));
    };
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let ctx = p.ctx();
    let i64_type = ctx.integer_type(64);
    let key = ctx.ident("dimension");
    let value = ctx.integer_attr(dimension as i64, i64_type);
    state.attributes.push((key, value));
    state.result_types = vec![ctx.index_type()];
    Ok(())
}

fn print_id(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let dimension = ctx.attribute(op, "dimension").and_then(|a| ctx.attribute_kind(a).as_i64());
    let Some(name) = dimension.and_then(|d| usize::try_from(d).ok()).and_then(|d| DIMENSIONS.get(d)) else {
        return print_malformed(p);
    };
    p.write(" ");
    p.write(name);
    p.attr_dict(&["dimension"]);
}

fn verify_id(v: &mut VerifyContext<'_>, op: Op) {
    checks::in_execution_space(v, op, ExecutionSpace::Device);
    if !checks::plain_op(v, op, 0, 1) {
        return;
    }
    let result = checks::result_type(v, op, 0);
    if !checks::is_index(v, result) {
        let name = v.type_name(result);
        v.error(op, format!("result must be 'index', but got '{name}'"));
    }
    if let Some(dimension) = checks::i64_attribute(v, op, "dimension") {
        if !(0..=2).contains(&dimension) {
            v.error(op, format!("dimension {dimension} is out of range: expected 0, 1 or 2 (x, y or z)"));
        }
    }
}

/// A work-item id or size op.
const fn id_op(name: &'static str, summary: &'static str) -> OpSpec {
    OpSpec {
        name,
        summary,
        traits: OpTraits::PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_id, print: print_id },
        verify: verify_id,
        effects: None,
    }
}

// ----- barrier, local_alloc --------------------------------------------------------------------

fn verify_barrier(v: &mut VerifyContext<'_>, op: Op) {
    checks::in_execution_space(v, op, ExecutionSpace::Device);
    checks::plain_op(v, op, 0, 0);
}

/// `attr-dict : memref<...>`.
fn parse_local_alloc(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let (ty, _) = parse_colon_memref(p)?;
    state.result_types = vec![ty];
    Ok(())
}

fn print_local_alloc(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    if ctx.result_count(op) != 1 {
        return print_malformed(p);
    }
    p.attr_dict(&[]);
    p.write(" : ");
    p.ty(ctx.value_type(ctx.result(op, 0)));
}

fn verify_local_alloc(v: &mut VerifyContext<'_>, op: Op) {
    checks::in_execution_space(v, op, ExecutionSpace::Device);
    if !checks::plain_op(v, op, 0, 1) {
        return;
    }
    let ty = checks::result_type(v, op, 0);
    let name = v.type_name(ty);
    match checks::memref_parts(v, ty) {
        None => v.error(op, format!("result must be a memref, but got '{name}'")),
        Some((shape, _)) if shape.contains(&hat_ir::types::DYNAMIC) => {
            v.error(op, format!("workgroup-local memory needs a static shape, but got '{name}'"))
        }
        Some(_) => {}
    }
}

fn local_alloc_effects(_: &Context, _: Op) -> MemoryEffects {
    MemoryEffects::of([
        MemoryEffect::new(EffectKind::Allocate, EffectTarget::Result(0)).in_space(MemorySpace::Workgroup)
    ])
}

fn barrier_effects(_: &Context, _: Op) -> MemoryEffects {
    MemoryEffects::of([MemoryEffect::synchronize(MemorySpace::Workgroup)])
}

// ----- atomic_rmw ------------------------------------------------------------------------------

/// The kinds of `atomic_rmw`; the bitwise ones take integers only.
const ATOMIC_KINDS: [&str; 7] = ["add", "min", "max", "and", "or", "xor", "exchange"];
const BITWISE_KINDS: [&str; 3] = ["and", "or", "xor"];

/// `kind %buf[%i, %j], %v attr-dict : memref<...>`. Operands: the buffer, the indices, the value
/// (of the element type); the result (the old element) has the element type too.
fn parse_atomic_rmw(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let kind = p.parse_keyword("an atomic kind (add, min, max, and, or, xor, exchange)")?;
    let (buffer, indices) = parse_indexed(p)?;
    p.expect(TokenKind::Comma, "',' before the value")?;
    let value = p.parse_operand()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let (ty, element) = parse_colon_memref(p)?;
    state.operands = vec![p.resolve_operand(&buffer, ty)?];
    state.operands.extend(resolve_indices(p, &indices)?);
    state.operands.push(p.resolve_operand(&value, element)?);
    state.result_types = vec![element];
    let ctx = p.ctx();
    let key = ctx.ident("kind");
    let kind = ctx.string_attr(kind);
    state.attributes.push((key, kind));
    Ok(())
}

fn print_atomic_rmw(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let kind =
        ctx.attribute(op, "kind").and_then(|a| ctx.attribute_kind(a).as_str()).filter(|k| ATOMIC_KINDS.contains(k));
    let (Some(kind), [buffer, .., value]) = (kind, ctx.operands(op)) else {
        return print_malformed(p);
    };
    let (buffer, value) = (*buffer, *value);
    let operands = ctx.operands(op);
    p.write(" ");
    p.write(kind);
    p.write(" ");
    p.value(buffer);
    p.write("[");
    p.values(&operands[1..operands.len() - 1]);
    p.write("], ");
    p.value(value);
    p.attr_dict(&["kind"]);
    p.write(" : ");
    p.ty(ctx.value_type(buffer));
}

fn verify_atomic_rmw(v: &mut VerifyContext<'_>, op: Op) {
    checks::in_execution_space(v, op, ExecutionSpace::Device);
    if !v.expect_result_count(op, 1) {
        return;
    }
    let kind = checks::string_attribute(v, op, "kind");
    if let Some(kind) = kind.filter(|k| !ATOMIC_KINDS.contains(k)) {
        v.error(op, format!("invalid kind '{kind}': expected one of {}", ATOMIC_KINDS.join(", ")));
    }
    let Some(element) = checks::indexed_access(v, op, 0, 1) else {
        return;
    };
    let element_name = v.type_name(element);
    let element_kind = v.ctx().type_kind(element);
    if !(element_kind.is_integer_like() || element_kind.is_float()) {
        return v
            .error(op, format!("needs an integer or float element type, but the element type is '{element_name}'"));
    }
    if let Some(kind) = kind.filter(|k| BITWISE_KINDS.contains(k)) {
        if !element_kind.is_integer_like() {
            v.error(
                op,
                format!("kind '{kind}' needs an integer element type, but the element type is '{element_name}'"),
            );
        }
    }
    let value_index = v.ctx().operands(op).len() - 1;
    let value = checks::operand_type(v, op, value_index);
    if value != element {
        let name = v.type_name(value);
        v.error(op, format!("value type '{name}' does not match the element type '{element_name}'"));
    }
    let result = checks::result_type(v, op, 0);
    if result != element {
        let name = v.type_name(result);
        v.error(op, format!("result type '{name}' does not match the element type '{element_name}'"));
    }
}

fn atomic_rmw_effects(ctx: &Context, op: Op) -> MemoryEffects {
    // Operands: the buffer, one index per dimension, the value.
    let rank = ctx.operands(op).len().saturating_sub(2);
    let on_element = |kind| MemoryEffect::on_operand(kind, 0).on_element(1, rank).atomically();
    MemoryEffects::of([on_element(EffectKind::Read), on_element(EffectKind::Write)])
}

/// The ops of `kernel`.
pub const OPS: &[OpSpec] = &[
    OpSpec {
        name: "kernel.func",
        summary: "An entry kernel: runs once per work item of a dispatch's grid",
        traits: OpTraits::ISOLATED_FROM_ABOVE.union(OpTraits::SYMBOL).union(OpTraits::DEVICE_CODE),
        regions: 1,
        syntax: Syntax::Custom { parse: parse_func, print: print_func },
        verify: verify_func,
        effects: None,
    },
    OpSpec {
        name: "kernel.helper",
        summary: "A device function that kernels call",
        traits: OpTraits::ISOLATED_FROM_ABOVE.union(OpTraits::SYMBOL).union(OpTraits::DEVICE_CODE),
        regions: 1,
        syntax: Syntax::Custom { parse: parse_plain_function, print: print_plain_function },
        verify: verify_helper,
        effects: None,
    },
    OpSpec {
        name: "kernel.return",
        summary: "Returns from a kernel.func or a kernel.helper",
        traits: OpTraits::TERMINATOR.union(OpTraits::RETURN_LIKE),
        regions: 0,
        syntax: Syntax::Custom { parse: parse_operands_colon_types, print: print_operands_colon_types },
        verify: verify_return,
        effects: Some(no_effects),
    },
    OpSpec {
        name: "kernel.call",
        summary: "Calls a kernel.helper",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_call, print: print_call },
        verify: verify_call,
        effects: None,
    },
    id_op("kernel.global_id", "The work item's id in the whole grid, in one dimension"),
    id_op("kernel.local_id", "The work item's id in its workgroup, in one dimension"),
    id_op("kernel.group_id", "The workgroup's id in the grid, in one dimension"),
    id_op("kernel.global_size", "The number of work items in the grid, in one dimension"),
    id_op("kernel.local_size", "The number of work items in a workgroup, in one dimension"),
    id_op("kernel.num_groups", "The number of workgroups in the grid, in one dimension"),
    OpSpec {
        name: "kernel.barrier",
        summary: "Waits for every work item of the workgroup; orders workgroup and buffer memory",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_bare, print: print_bare },
        verify: verify_barrier,
        effects: Some(barrier_effects),
    },
    OpSpec {
        name: "kernel.local_alloc",
        summary: "Workgroup-local memory of a static shape",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_local_alloc, print: print_local_alloc },
        verify: verify_local_alloc,
        effects: Some(local_alloc_effects),
    },
    OpSpec {
        name: "kernel.atomic_rmw",
        summary: "Atomically combines a value into an element; returns the old element",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_atomic_rmw, print: print_atomic_rmw },
        verify: verify_atomic_rmw,
        effects: Some(atomic_rmw_effects),
    },
];

/// Registers `kernel`.
pub fn register(ctx: &mut Context) {
    ctx.register_dialect("kernel", "Device code: kernels, helpers, work-item ids, barriers, local memory, atomics");
    crate::op_spec::register_specs(ctx, OPS);
    interfaces::attach(ctx);
}

#[cfg(test)]
mod tests {
    use crate::checks::testing::{assert_verify_error, parse_error, round_trip, verify_errors};

    /// A kernel around `body`, with `%a: memref<64xi32>`, `%f: memref<64xf32>`, `%n: index` and
    /// `%x: i32` in scope.
    fn kernel(body: &str) -> String {
        format!("kernel.func @k(%a: memref<64xi32>, %f: memref<64xf32>, %n: index, %x: i32) {{\n{body}\n  kernel.return\n}}")
    }

    #[test]
    fn workgroup_is_padded_and_printed_with_three_sizes() {
        let printed = round_trip(
            "kernel.func @k() workgroup(8, 8) {\n  kernel.return\n}\nkernel.func @l() {\n  kernel.return\n}",
        );
        assert!(printed.contains("kernel.func @k() workgroup(8, 8, 1) {"), "{printed}");
        assert!(printed.contains("kernel.func @l() {"), "{printed}");
        let error = parse_error("kernel.func @k() workgroup(1, 2, 3, 4) {\n  kernel.return\n}");
        assert!(error.contains("a workgroup size has 1 to 3 dimensions"), "{error}");
    }

    #[test]
    fn workgroup_must_be_positive() {
        assert_verify_error(
            "kernel.func @k() workgroup(0) {\n  kernel.return\n}",
            "attribute 'workgroup_size' must hold 3 positive sizes, but is [0, 1, 1]",
        );
    }

    #[test]
    fn kernel_has_no_results_and_scalar_or_memref_inputs() {
        assert_verify_error(
            "kernel.func @k(%x: i32) -> i32 {\n  kernel.return %x : i32\n}",
            "an entry kernel returns nothing, but its type has 1 result(s)",
        );
        assert_verify_error("kernel.func @k(%x: none) {\n  kernel.return\n}", "input #0 has type 'none'");
    }

    #[test]
    fn return_with_wrong_types() {
        assert_verify_error(
            "kernel.helper @h(%x: i32) -> i32 {\n  kernel.return\n}",
            "'kernel.return' op returns () but the enclosing function returns (i32)",
        );
        assert_verify_error(
            "kernel.helper @h(%x: i32, %n: index) -> i32 {\n  kernel.return %n : index\n}",
            "'kernel.return' op returns (index) but the enclosing function returns (i32)",
        );
    }

    #[test]
    fn return_outside_kernel_code() {
        assert_verify_error(
            "compute.func @f() {\n  kernel.return\n}",
            "expects its parent op to be one of: kernel.func, kernel.helper",
        );
    }

    #[test]
    fn call_checks_the_helper() {
        let helper = "kernel.helper @h(%x: i32) -> i32 {\n  kernel.return %x : i32\n}\n";
        let ok = format!("{helper}{}", kernel("  %0 = kernel.call @h(%x) : (i32) -> i32"));
        assert!(verify_errors(&ok).is_empty(), "{:?}", verify_errors(&ok));
        assert_verify_error(
            &format!("{helper}{}", kernel("  %0 = kernel.call @h(%n) : (index) -> i32")),
            "argument #0 has type 'index', but '@h' expects 'i32'",
        );
        assert_verify_error(
            &kernel("  kernel.call @k(%a, %f, %n, %x) : (memref<64xi32>, memref<64xf32>, index, i32) -> ()"),
            "which is a 'kernel.func', not a 'kernel.helper'",
        );
        assert_verify_error(
            &format!(
                "{helper}compute.func @f(%x: i32) {{\n  %0 = kernel.call @h(%x) : (i32) -> i32\n  compute.return\n}}"
            ),
            "'kernel.call' op expects to be nested in one of: kernel.func, kernel.helper",
        );
    }

    #[test]
    fn ids_round_trip() {
        let printed = round_trip(&kernel(
            "  %0 = kernel.global_id x\n  %1 = kernel.local_id y\n  %2 = kernel.group_id z\n  \
             %3 = kernel.global_size x\n  %4 = kernel.local_size y {tag}\n  %5 = kernel.num_groups z",
        ));
        assert!(printed.contains("kernel.local_size y {tag}"), "{printed}");
        let error = parse_error(&kernel("  %0 = kernel.global_id w"));
        assert!(error.contains("expected a dimension (x, y or z), found 'w'"), "{error}");
    }

    #[test]
    fn global_id_outside_a_kernel() {
        assert_verify_error(
            "compute.func @f() {\n  %0 = kernel.global_id x\n  compute.return\n}",
            "'kernel.global_id' op expects to be nested in one of: kernel.func, kernel.helper",
        );
    }

    #[test]
    fn id_dimension_out_of_range() {
        assert_verify_error(
            &kernel(r#"  %0 = "kernel.group_id"() {dimension = 3} : () -> index"#),
            "dimension 3 is out of range: expected 0, 1 or 2 (x, y or z)",
        );
        assert_verify_error(&kernel(r#"  %0 = "kernel.group_id"() : () -> index"#), "requires attribute 'dimension'");
    }

    #[test]
    fn barrier_outside_a_kernel() {
        assert_verify_error(
            "compute.func @f() {\n  kernel.barrier\n  compute.return\n}",
            "'kernel.barrier' op expects to be nested in one of",
        );
    }

    #[test]
    fn local_alloc_needs_a_static_shape() {
        assert_verify_error(
            &kernel("  %0 = kernel.local_alloc : memref<?xf32>"),
            "workgroup-local memory needs a static shape, but got 'memref<?xf32>'",
        );
    }

    #[test]
    fn atomic_rmw_checks() {
        round_trip(&kernel("  %0 = kernel.atomic_rmw add %a[%n], %x : memref<64xi32>\n  %1 = kernel.atomic_rmw xor %a[%n], %x {tag} : memref<64xi32>"));
        assert_verify_error(
            &kernel("  %0 = kernel.atomic_rmw mul %a[%n], %x : memref<64xi32>"),
            "invalid kind 'mul': expected one of add, min, max",
        );
        assert_verify_error(
            &kernel(
                "  %v = buffer.load %f[%n] : memref<64xf32>\n  %0 = kernel.atomic_rmw and %f[%n], %v : memref<64xf32>",
            ),
            "kind 'and' needs an integer element type, but the element type is 'f32'",
        );
        assert_verify_error(
            &kernel(r#"  %0 = "kernel.atomic_rmw"(%a, %n, %n) {kind = "add"} : (memref<64xi32>, index, index) -> i32"#),
            "value type 'index' does not match the element type 'i32'",
        );
        assert_verify_error(
            &kernel(r#"  %0 = "kernel.atomic_rmw"(%a, %x) {kind = "add"} : (memref<64xi32>, i32) -> i32"#),
            "expects 1 index operand(s), one per dimension of 'memref<64xi32>', but has 0",
        );
        assert_verify_error(
            &kernel(r#"  %0 = "kernel.atomic_rmw"() : () -> i32"#),
            "expects at least 2 operand(s), but has 0",
        );
    }

    #[test]
    fn malformed_ops_print_without_panicking() {
        let text = kernel(
            r#"  %0 = "kernel.atomic_rmw"() : () -> i32
  %1 = "kernel.global_id"() : () -> index
  "kernel.call"() : () -> ()"#,
        );
        let mut ctx = crate::context();
        let module = hat_ir::parse_source(&mut ctx, "t.hat", &text).unwrap();
        // By default the printer verifies first and prints failing ops in the generic form.
        let printed = hat_ir::print_op(&ctx, module, hat_ir::PrintOptions::default());
        assert!(printed.contains(r#"%0 = "kernel.atomic_rmw"() : () -> i32"#), "{printed}");
        assert!(printed.contains(r#""kernel.call"() : () -> ()"#), "{printed}");
        assert!(!printed.contains("<<malformed"), "{printed}");
        // Told the IR is verified when it is not, the custom printers still do not panic.
        let options = hat_ir::PrintOptions { assume_verified: true, ..Default::default() };
        let printed = hat_ir::print_op(&ctx, module, options);
        assert_eq!(printed.matches("<<malformed").count(), 3, "{printed}");
    }
}
