//! The `arith` dialect: MLIR's scalar arithmetic, with MLIR's names, attributes and custom forms,
//! so that the generic form is accepted by `mlir-opt` unchanged.
//!
//! - `%c = arith.constant 42 : i32`, `arith.constant 1.5 : f32`, `arith.constant true`
//! - binary: `%r = arith.addi %a, %b : i32` (integer ops take signless integers or `index`,
//!   float ops floats)
//! - `%r = arith.negf %a : f32`
//! - comparisons: `%p = arith.cmpi slt, %a, %b : i32`, `%p = arith.cmpf olt, %a, %b : f32`; the
//!   generic form stores the predicate as MLIR does, `{predicate = 2 : i64}`
//! - `%r = arith.select %p, %a, %b : T` (any type, buffers included)
//! - casts: `%r = arith.index_cast %a : index to i32`, ...
//!
//! What the ops compute is [`crate::semantics`]'s; the predicates are its [`IntPredicate`] and
//! [`FloatPredicate`].

use crate::checks::{
    integer_attribute, is_float, is_i1, is_signless_integer_like, operand_type, result_type,
    uniform_operands_and_result,
};
use crate::op_spec::{register_specs, OpSpec, Syntax};
use crate::semantics::{FloatPredicate, IntPredicate};
use crate::syntax::{parse_binary, parse_cast, parse_unary, print_binary, print_cast, print_unary};
use hat_ir::parser::{ParseResult, TokenKind};
use hat_ir::{
    AttributeKind, Context, Op, OpParser, OpPrinter, OpTraits, OperationState, Type, TypeKind, VerifyContext,
};

/// Predicates of `arith.cmpi`, in MLIR's numbering ([`IntPredicate::NAMES`]).
pub const CMPI_PREDICATES: &[&str] = &IntPredicate::NAMES;
/// Predicates of `arith.cmpf`, in MLIR's numbering ([`FloatPredicate::NAMES`]).
pub const CMPF_PREDICATES: &[&str] = &FloatPredicate::NAMES;

const PURE: OpTraits = OpTraits::PURE;
const PURE_COMMUTATIVE: OpTraits = OpTraits::PURE.union(OpTraits::COMMUTATIVE);

// ----- constant -----------------------------------------------------------------------------

fn parse_constant(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let location = p.location();
    let value = p.parse_attribute()?;
    let ty = match p.ctx().attribute_kind(value) {
        AttributeKind::Integer { ty, .. } | AttributeKind::Float { ty, .. } => *ty,
        _ => return Err(p.error_at(location, "expected an integer or float constant")),
    };
    let ctx = p.ctx();
    let key = ctx.ident("value");
    state.attributes.push((key, value));
    state.result_types.push(ty);
    Ok(())
}

fn print_constant(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    p.attr_dict(&["value"]);
    p.write(" ");
    match ctx.attribute(op, "value") {
        Some(value) => p.attribute(value),
        None => p.write("<<missing value>>"),
    }
}

fn verify_constant(v: &mut VerifyContext<'_>, op: Op) {
    if !v.expect_operand_count(op, 0) || !v.expect_result_count(op, 1) {
        return;
    }
    let ctx = v.ctx();
    let result = result_type(v, op, 0);
    let attribute_type = match ctx.attribute(op, "value").map(|a| ctx.attribute_kind(a)) {
        Some(AttributeKind::Integer { ty, .. } | AttributeKind::Float { ty, .. }) => *ty,
        Some(_) => return v.error(op, "attribute 'value' must be an integer or float"),
        None => return v.error(op, "requires attribute 'value'"),
    };
    if attribute_type != result {
        let (a, r) = (v.type_name(attribute_type), v.type_name(result));
        v.error(op, format!("value's type '{a}' does not match the result type '{r}'"));
    }
}

// ----- binary and unary ---------------------------------------------------------------------

fn verify_integer_binary(v: &mut VerifyContext<'_>, op: Op) {
    uniform_operands_and_result(v, op, 2, is_signless_integer_like, "a signless integer or index");
}

fn verify_float_binary(v: &mut VerifyContext<'_>, op: Op) {
    uniform_operands_and_result(v, op, 2, is_float, "a float");
}

fn verify_float_unary(v: &mut VerifyContext<'_>, op: Op) {
    uniform_operands_and_result(v, op, 1, is_float, "a float");
}

const fn integer_binary(name: &'static str, summary: &'static str, traits: OpTraits) -> OpSpec {
    OpSpec {
        name,
        summary,
        traits,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_binary, print: print_binary },
        verify: verify_integer_binary,
        effects: None,
    }
}

const fn float_binary(name: &'static str, summary: &'static str, traits: OpTraits) -> OpSpec {
    OpSpec {
        name,
        summary,
        traits,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_binary, print: print_binary },
        verify: verify_float_binary,
        effects: None,
    }
}

// ----- comparisons --------------------------------------------------------------------------

/// The comparison predicate of an `arith.cmpi` or `arith.cmpf` (its position in
/// [`CMPI_PREDICATES`] or [`CMPF_PREDICATES`]), if it has one.
pub fn predicate(ctx: &Context, op: Op) -> Option<i64> {
    ctx.attribute(op, "predicate").and_then(|a| ctx.attribute_kind(a).as_i64())
}

/// The predicate of an `arith.cmpi`, if it has a valid one.
pub fn int_predicate(ctx: &Context, op: Op) -> Option<IntPredicate> {
    predicate(ctx, op).and_then(IntPredicate::from_i64)
}

/// The predicate of an `arith.cmpf`, if it has a valid one.
pub fn float_predicate(ctx: &Context, op: Op) -> Option<FloatPredicate> {
    predicate(ctx, op).and_then(FloatPredicate::from_i64)
}

/// The attribute entry `predicate = N : i64`, as MLIR stores a comparison's predicate.
pub fn predicate_attribute(ctx: &mut Context, predicate: i64) -> (hat_ir::Ident, hat_ir::Attribute) {
    let i64_type = ctx.integer_type(64);
    (ctx.ident("predicate"), ctx.integer_attr(predicate, i64_type))
}

fn parse_compare(p: &mut OpParser<'_, '_>, state: &mut OperationState, predicates: &[&str]) -> ParseResult<()> {
    let location = p.location();
    let keyword = p.parse_keyword("a comparison predicate")?;
    let Some(predicate) = predicates.iter().position(|&k| k == keyword) else {
        return Err(p.error_at(location, format!("unknown comparison predicate '{keyword}'")));
    };
    p.expect(TokenKind::Comma, "','")?;
    let lhs = p.parse_operand()?;
    p.expect(TokenKind::Comma, "','")?;
    let rhs = p.parse_operand()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    p.expect(TokenKind::Colon, "':'")?;
    let ty = p.parse_type()?;
    state.operands = vec![p.resolve_operand(&lhs, ty)?, p.resolve_operand(&rhs, ty)?];
    let ctx = p.ctx();
    state.attributes.push(predicate_attribute(ctx, predicate as i64));
    state.result_types = vec![ctx.integer_type(1)];
    Ok(())
}

fn print_compare(p: &mut OpPrinter<'_, '_>, op: Op, predicates: &[&str]) {
    let ctx = p.ctx();
    let name = predicate(ctx, op)
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| predicates.get(i))
        .copied()
        .unwrap_or("<<invalid>>");
    p.write(" ");
    p.write(name);
    p.write(", ");
    p.values(ctx.operands(op));
    p.attr_dict(&["predicate"]);
    p.write(" : ");
    p.ty(ctx.value_type(ctx.operand(op, 0)));
}

fn verify_compare(
    v: &mut VerifyContext<'_>,
    op: Op,
    accept: fn(&VerifyContext<'_>, Type) -> bool,
    predicates: usize,
    what: &str,
) {
    if !v.expect_operand_count(op, 2) || !v.expect_result_count(op, 1) {
        return;
    }
    let (lhs, rhs) = (operand_type(v, op, 0), operand_type(v, op, 1));
    if lhs != rhs {
        v.error(op, "requires both operands to have the same type");
    } else if !accept(v, lhs) {
        let name = v.type_name(lhs);
        v.error(op, format!("operands must be {what}, but got '{name}'"));
    }
    if !is_i1(v, result_type(v, op, 0)) {
        v.error(op, "result must be i1");
    }
    if let Some(predicate) = integer_attribute(v, op, "predicate") {
        if !(0..predicates as i64).contains(&predicate) {
            v.error(op, format!("predicate {predicate} is out of range"));
        }
        let ctx = v.ctx();
        let typed_i64 = ctx.attribute(op, "predicate").is_some_and(|a| {
            matches!(ctx.attribute_kind(a), AttributeKind::Integer { ty, .. } if matches!(ctx.type_kind(*ty), TypeKind::Integer { width: 64, .. }))
        });
        if !typed_i64 {
            v.error(op, "attribute 'predicate' must be an i64 integer");
        }
    }
}

fn parse_cmpi(p: &mut OpParser<'_, '_>, s: &mut OperationState) -> ParseResult<()> {
    parse_compare(p, s, CMPI_PREDICATES)
}
fn print_cmpi(p: &mut OpPrinter<'_, '_>, op: Op) {
    print_compare(p, op, CMPI_PREDICATES)
}
fn verify_cmpi(v: &mut VerifyContext<'_>, op: Op) {
    verify_compare(v, op, is_signless_integer_like, CMPI_PREDICATES.len(), "signless integers or index")
}
fn parse_cmpf(p: &mut OpParser<'_, '_>, s: &mut OperationState) -> ParseResult<()> {
    parse_compare(p, s, CMPF_PREDICATES)
}
fn print_cmpf(p: &mut OpPrinter<'_, '_>, op: Op) {
    print_compare(p, op, CMPF_PREDICATES)
}
fn verify_cmpf(v: &mut VerifyContext<'_>, op: Op) {
    verify_compare(v, op, is_float, CMPF_PREDICATES.len(), "floats")
}

// ----- select -------------------------------------------------------------------------------

fn parse_select(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let condition = p.parse_operand()?;
    p.expect(TokenKind::Comma, "','")?;
    let on_true = p.parse_operand()?;
    p.expect(TokenKind::Comma, "','")?;
    let on_false = p.parse_operand()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    p.expect(TokenKind::Colon, "':'")?;
    let ty = p.parse_type()?;
    let i1 = p.ctx().integer_type(1);
    state.operands =
        vec![p.resolve_operand(&condition, i1)?, p.resolve_operand(&on_true, ty)?, p.resolve_operand(&on_false, ty)?];
    state.result_types = vec![ty];
    Ok(())
}

fn print_select(p: &mut OpPrinter<'_, '_>, op: Op) {
    print_binary(p, op)
}

fn verify_select(v: &mut VerifyContext<'_>, op: Op) {
    if !v.expect_operand_count(op, 3) || !v.expect_result_count(op, 1) {
        return;
    }
    if !is_i1(v, operand_type(v, op, 0)) {
        v.error(op, "condition must be i1");
    }
    let result = result_type(v, op, 0);
    if operand_type(v, op, 1) != result || operand_type(v, op, 2) != result {
        v.error(op, "requires both choices and the result to have the same type");
    }
}

// ----- casts --------------------------------------------------------------------------------

fn integer_width(v: &VerifyContext<'_>, ty: Type) -> Option<u32> {
    match v.ctx().type_kind(ty) {
        TypeKind::Integer { width, .. } => Some(*width),
        _ => None,
    }
}

fn float_width(v: &VerifyContext<'_>, ty: Type) -> Option<u32> {
    match v.ctx().type_kind(ty) {
        TypeKind::Float(kind) => Some(kind.width()),
        _ => None,
    }
}

fn cast_types(v: &mut VerifyContext<'_>, op: Op) -> Option<(Type, Type)> {
    if !v.expect_operand_count(op, 1) || !v.expect_result_count(op, 1) {
        return None;
    }
    Some((operand_type(v, op, 0), result_type(v, op, 0)))
}

fn cast_error(v: &mut VerifyContext<'_>, op: Op, from: Type, to: Type) {
    let (a, b) = (v.type_name(from), v.type_name(to));
    v.error(op, format!("invalid cast from '{a}' to '{b}'"));
}

fn verify_index_cast(v: &mut VerifyContext<'_>, op: Op) {
    let Some((from, to)) = cast_types(v, op) else { return };
    let index_int = |x: Type, y: Type| matches!(v.ctx().type_kind(x), TypeKind::Index) && integer_width(v, y).is_some();
    if !(index_int(from, to) || index_int(to, from)) {
        cast_error(v, op, from, to);
    }
}

fn verify_int_to_float(v: &mut VerifyContext<'_>, op: Op) {
    let Some((from, to)) = cast_types(v, op) else { return };
    if integer_width(v, from).is_none() || float_width(v, to).is_none() {
        cast_error(v, op, from, to);
    }
}

fn verify_float_to_int(v: &mut VerifyContext<'_>, op: Op) {
    let Some((from, to)) = cast_types(v, op) else { return };
    if float_width(v, from).is_none() || integer_width(v, to).is_none() {
        cast_error(v, op, from, to);
    }
}

fn verify_integer_extend(v: &mut VerifyContext<'_>, op: Op) {
    let Some((from, to)) = cast_types(v, op) else { return };
    match (integer_width(v, from), integer_width(v, to)) {
        (Some(a), Some(b)) if a < b => {}
        _ => {
            let (a, b) = (v.type_name(from), v.type_name(to));
            v.error(op, format!("result type '{b}' must be wider than operand type '{a}'"));
        }
    }
}

fn verify_integer_truncate(v: &mut VerifyContext<'_>, op: Op) {
    let Some((from, to)) = cast_types(v, op) else { return };
    match (integer_width(v, from), integer_width(v, to)) {
        (Some(a), Some(b)) if a > b => {}
        _ => {
            let (a, b) = (v.type_name(from), v.type_name(to));
            v.error(op, format!("result type '{b}' must be narrower than operand type '{a}'"));
        }
    }
}

fn verify_float_extend(v: &mut VerifyContext<'_>, op: Op) {
    let Some((from, to)) = cast_types(v, op) else { return };
    match (float_width(v, from), float_width(v, to)) {
        (Some(a), Some(b)) if a < b => {}
        _ => cast_error(v, op, from, to),
    }
}

fn verify_float_truncate(v: &mut VerifyContext<'_>, op: Op) {
    let Some((from, to)) = cast_types(v, op) else { return };
    match (float_width(v, from), float_width(v, to)) {
        (Some(a), Some(b)) if a > b => {}
        _ => cast_error(v, op, from, to),
    }
}

fn verify_bitcast(v: &mut VerifyContext<'_>, op: Op) {
    let Some((from, to)) = cast_types(v, op) else { return };
    let scalar_width = |ty: Type| integer_width(v, ty).or_else(|| float_width(v, ty));
    match (scalar_width(from), scalar_width(to)) {
        (Some(a), Some(b)) if a == b => {}
        _ => cast_error(v, op, from, to),
    }
}

const fn cast(name: &'static str, summary: &'static str, verify: crate::op_spec::VerifyFn) -> OpSpec {
    OpSpec {
        name,
        summary,
        traits: PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_cast, print: print_cast },
        verify,
        effects: None,
    }
}

/// The ops of `arith`.
pub const OPS: &[OpSpec] = &[
    OpSpec {
        name: "arith.constant",
        summary: "An integer or float constant",
        traits: PURE.union(OpTraits::CONSTANT_LIKE),
        regions: 0,
        syntax: Syntax::Custom { parse: parse_constant, print: print_constant },
        verify: verify_constant,
        effects: None,
    },
    integer_binary("arith.addi", "Integer addition (wrapping)", PURE_COMMUTATIVE),
    integer_binary("arith.subi", "Integer subtraction (wrapping)", PURE),
    integer_binary("arith.muli", "Integer multiplication (wrapping)", PURE_COMMUTATIVE),
    integer_binary("arith.divsi", "Signed integer division, rounding toward zero", PURE),
    integer_binary("arith.divui", "Unsigned integer division", PURE),
    integer_binary("arith.ceildivsi", "Signed integer division, rounding up", PURE),
    integer_binary("arith.floordivsi", "Signed integer division, rounding down", PURE),
    integer_binary("arith.remsi", "Signed remainder (sign of the dividend)", PURE),
    integer_binary("arith.remui", "Unsigned remainder", PURE),
    integer_binary("arith.andi", "Bitwise and", PURE_COMMUTATIVE),
    integer_binary("arith.ori", "Bitwise or", PURE_COMMUTATIVE),
    integer_binary("arith.xori", "Bitwise exclusive or", PURE_COMMUTATIVE),
    integer_binary("arith.shli", "Shift left", PURE),
    integer_binary("arith.shrsi", "Arithmetic shift right", PURE),
    integer_binary("arith.shrui", "Logical shift right", PURE),
    integer_binary("arith.maxsi", "Signed maximum", PURE_COMMUTATIVE),
    integer_binary("arith.minsi", "Signed minimum", PURE_COMMUTATIVE),
    integer_binary("arith.maxui", "Unsigned maximum", PURE_COMMUTATIVE),
    integer_binary("arith.minui", "Unsigned minimum", PURE_COMMUTATIVE),
    float_binary("arith.addf", "Float addition", PURE_COMMUTATIVE),
    float_binary("arith.subf", "Float subtraction", PURE),
    float_binary("arith.mulf", "Float multiplication", PURE_COMMUTATIVE),
    float_binary("arith.divf", "Float division", PURE),
    float_binary("arith.remf", "Float remainder", PURE),
    float_binary("arith.maximumf", "Float maximum (NaN-propagating)", PURE_COMMUTATIVE),
    float_binary("arith.minimumf", "Float minimum (NaN-propagating)", PURE_COMMUTATIVE),
    OpSpec {
        name: "arith.negf",
        summary: "Float negation",
        traits: PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_unary, print: print_unary },
        verify: verify_float_unary,
        effects: None,
    },
    OpSpec {
        name: "arith.cmpi",
        summary: "Integer comparison",
        traits: PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_cmpi, print: print_cmpi },
        verify: verify_cmpi,
        effects: None,
    },
    OpSpec {
        name: "arith.cmpf",
        summary: "Float comparison",
        traits: PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_cmpf, print: print_cmpf },
        verify: verify_cmpf,
        effects: None,
    },
    OpSpec {
        name: "arith.select",
        summary: "Chooses between two values of any type (buffers too) by an i1",
        traits: PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_select, print: print_select },
        verify: verify_select,
        effects: None,
    },
    cast("arith.index_cast", "Between index and an integer type (sign-extending)", verify_index_cast),
    cast("arith.index_castui", "Between index and an integer type (zero-extending)", verify_index_cast),
    cast("arith.sitofp", "Signed integer to float", verify_int_to_float),
    cast("arith.uitofp", "Unsigned integer to float", verify_int_to_float),
    cast("arith.fptosi", "Float to signed integer", verify_float_to_int),
    cast("arith.fptoui", "Float to unsigned integer", verify_float_to_int),
    cast("arith.extsi", "Sign-extends an integer", verify_integer_extend),
    cast("arith.extui", "Zero-extends an integer", verify_integer_extend),
    cast("arith.trunci", "Truncates an integer", verify_integer_truncate),
    cast("arith.extf", "Widens a float", verify_float_extend),
    cast("arith.truncf", "Narrows a float", verify_float_truncate),
    cast("arith.bitcast", "Reinterprets the bits of a scalar of the same width", verify_bitcast),
];

/// Registers `arith`.
pub fn register(ctx: &mut Context) {
    ctx.register_dialect("arith", "Scalar integer and float arithmetic (MLIR's arith)");
    register_specs(ctx, OPS);
    crate::arith_fold::register(ctx);
}
