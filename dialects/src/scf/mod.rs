//! The `scf` dialect: MLIR's structured control flow, with MLIR's custom forms.
//!
//! - `scf.for %i = %lb to %ub step %s iter_args(%acc = %init) -> (i32) { ... scf.yield %x : i32 }`
//!   (the `iter_args` part is optional; so is a yield without operands, which is implicit)
//! - `scf.if %p -> (i32) { ... } else { ... }`
//! - `scf.while (%a = %init) : (i32) -> i32 { ... scf.condition(%c) %a : i32 } do { ^bb0(%b: i32): ... }`
//! - `scf.yield %a, %b : i32, f32` and `scf.condition(%c) %a : i32`, the terminators.

mod canonicalize;
mod interfaces;

pub use canonicalize::IfToSelect;
pub use interfaces::{ConditionOp, ForOp, IfOp, WhileOp, YieldOp};

use crate::checks::{has_parent, is_i1, is_signless_integer_like, operand_type};
use crate::op_spec::{register_specs, OpSpec, Syntax};
use crate::syntax::{parse_operands_colon_types, print_operands_colon_types};
use hat_ir::parser::{Argument, ParseResult, TokenKind};
use hat_ir::{Block, Context, Op, OpParser, OpPrinter, OpTraits, OperationState, Region, Type, Value, VerifyContext};

const YIELD: &str = "scf.yield";

fn types_of(ctx: &Context, values: &[Value]) -> Vec<Type> {
    values.iter().map(|&v| ctx.value_type(v)).collect()
}

fn type_list(v: &VerifyContext<'_>, types: &[Type]) -> String {
    types.iter().map(|&t| v.type_name(t)).collect::<Vec<_>>().join(", ")
}

/// The single block of a region, reporting when there is not exactly one.
fn single_block(v: &mut VerifyContext<'_>, op: Op, region: Region, what: &str) -> Option<Block> {
    let blocks = v.ctx().region_blocks(region);
    if blocks.len() != 1 {
        v.error(op, format!("expects its {what} region to have one block, but it has {}", blocks.len()));
        return None;
    }
    Some(blocks[0])
}

/// Checks that `block` ends in `terminator` whose operand types are `expected`.
fn check_terminator(v: &mut VerifyContext<'_>, op: Op, block: Block, terminator: &str, skip: usize, expected: &[Type]) {
    let ctx = v.ctx();
    let Some(last) = ctx.last_op(block) else { return };
    if ctx.name_str(last) != terminator {
        return v.error(op, format!("expects its region to end with '{terminator}'"));
    }
    let operands = ctx.operands(last);
    if operands.len() < skip {
        return;
    }
    let actual = types_of(ctx, &operands[skip..]);
    if actual != expected {
        let message = format!(
            "'{terminator}' op types ({}) do not match the parent's expected types ({})",
            type_list(v, &actual),
            type_list(v, expected)
        );
        v.report(hat_ir::Diagnostic::error(ctx.location(last), message));
    }
}

// ----- scf.for ------------------------------------------------------------------------------

fn parse_for(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let induction = p.parse_operand()?;
    p.expect(TokenKind::Equal, "'='")?;
    let lower = p.parse_operand()?;
    p.expect_keyword("to")?;
    let upper = p.parse_operand()?;
    p.expect_keyword("step")?;
    let step = p.parse_operand()?;
    let mut carried_names = Vec::new();
    let mut inits = Vec::new();
    let mut carried_types = Vec::new();
    if p.consume_keyword("iter_args") {
        p.expect(TokenKind::LParen, "'(' after 'iter_args'")?;
        loop {
            carried_names.push(p.parse_operand()?);
            p.expect(TokenKind::Equal, "'='")?;
            inits.push(p.parse_operand()?);
            if !p.consume_if(TokenKind::Comma) {
                break;
            }
        }
        p.expect(TokenKind::RParen, "')'")?;
        let location = p.location();
        carried_types = p.parse_optional_arrow_types()?;
        if carried_types.len() != inits.len() {
            return Err(p.error_at(location, format!("expected {} result type(s) for the iter_args", inits.len())));
        }
    }
    let induction_type = if p.consume_if(TokenKind::Colon) { p.parse_type()? } else { p.ctx().index_type() };
    let mut operands = vec![
        p.resolve_operand(&lower, induction_type)?,
        p.resolve_operand(&upper, induction_type)?,
        p.resolve_operand(&step, induction_type)?,
    ];
    for (init, &ty) in inits.iter().zip(&carried_types) {
        operands.push(p.resolve_operand(init, ty)?);
    }
    let mut arguments = vec![Argument { name: induction.name, ty: induction_type, location: induction.location }];
    for (name, &ty) in carried_names.iter().zip(&carried_types) {
        arguments.push(Argument { name: name.name, ty, location: name.location });
    }
    let body = p.parse_region(&arguments, false)?;
    p.ensure_terminator(body, YIELD);
    p.parse_optional_attr_dict_with_keyword(&mut state.attributes)?;
    state.operands = operands;
    state.result_types = carried_types;
    state.regions.push(body);
    Ok(())
}

fn print_for(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let operands = ctx.operands(op);
    let Some(&body) = ctx.regions(op).first() else { return };
    let Some(&block) = ctx.region_blocks(body).first() else { return };
    let arguments = ctx.block_arguments(block);
    if operands.len() < 3 || arguments.len() != operands.len() - 2 {
        return;
    }
    p.write(" ");
    p.value(arguments[0]);
    p.write(" = ");
    p.value(operands[0]);
    p.write(" to ");
    p.value(operands[1]);
    p.write(" step ");
    p.value(operands[2]);
    if operands.len() > 3 {
        p.write(" iter_args(");
        for (i, (&argument, &init)) in arguments[1..].iter().zip(&operands[3..]).enumerate() {
            if i > 0 {
                p.write(", ");
            }
            p.value(argument);
            p.write(" = ");
            p.value(init);
        }
        p.write(")");
        let results: Vec<Type> = ctx.results(op).map(|r| ctx.value_type(r)).collect();
        p.write(" -> (");
        p.types(&results);
        p.write(")");
    }
    let induction_type = ctx.value_type(operands[0]);
    if !matches!(ctx.type_kind(induction_type), hat_ir::TypeKind::Index) {
        p.write(" : ");
        p.ty(induction_type);
    }
    p.write(" ");
    p.region(body, false, Some(YIELD));
    p.attr_dict_with_keyword(&[]);
}

fn verify_for(v: &mut VerifyContext<'_>, op: Op) {
    let ctx = v.ctx();
    let operands = ctx.operands(op);
    if operands.len() < 3 {
        return v.error(
            op,
            format!("expects at least 3 operands (lower bound, upper bound, step), but has {}", operands.len()),
        );
    }
    let induction_type = operand_type(v, op, 0);
    if !is_signless_integer_like(v, induction_type)
        || operand_type(v, op, 1) != induction_type
        || operand_type(v, op, 2) != induction_type
    {
        v.error(op, "expects the bounds and step to have one signless integer or index type");
    }
    // As MLIR's: a step known to be zero or negative can never be right.
    if let Some(step) = hat_ir::interfaces::constant_integer(ctx, operands[2]).filter(|&s| s <= 0) {
        v.error(op, format!("expects a positive step, but the step is the constant {step}"));
    }
    let inits = types_of(ctx, &operands[3..]);
    let results: Vec<Type> = ctx.results(op).map(|r| ctx.value_type(r)).collect();
    if inits != results {
        v.error(
            op,
            format!(
                "expects its results ({}) to match its iter_args ({})",
                type_list(v, &results),
                type_list(v, &inits)
            ),
        );
    }
    if !v.expect_region_count(op, 1) {
        return;
    }
    let Some(block) = single_block(v, op, ctx.regions(op)[0], "body") else { return };
    let mut expected = vec![induction_type];
    expected.extend_from_slice(&inits);
    if types_of(ctx, ctx.block_arguments(block)) != expected {
        v.error(op, "expects its body's arguments to be the induction variable and the iter_args, with their types");
    }
    check_terminator(v, op, block, YIELD, 0, &results);
}

// ----- scf.if -------------------------------------------------------------------------------

fn parse_if(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let condition = p.parse_operand()?;
    let results = p.parse_optional_arrow_types()?;
    let then_region = p.parse_region(&[], false)?;
    p.ensure_terminator(then_region, YIELD);
    let else_region = if p.consume_keyword("else") {
        let region = p.parse_region(&[], false)?;
        p.ensure_terminator(region, YIELD);
        region
    } else {
        p.ctx().create_region()
    };
    p.parse_optional_attr_dict_with_keyword(&mut state.attributes)?;
    let i1 = p.ctx().integer_type(1);
    state.operands = vec![p.resolve_operand(&condition, i1)?];
    state.result_types = results;
    state.regions = vec![then_region, else_region];
    Ok(())
}

fn print_if(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let (Some(&condition), [then_region, else_region]) = (ctx.operands(op).first(), ctx.regions(op)) else { return };
    p.write(" ");
    p.value(condition);
    let results: Vec<Type> = ctx.results(op).map(|r| ctx.value_type(r)).collect();
    if !results.is_empty() {
        p.write(" -> (");
        p.types(&results);
        p.write(")");
    }
    p.write(" ");
    p.region(*then_region, false, Some(YIELD));
    if !ctx.region_blocks(*else_region).is_empty() {
        p.write(" else ");
        p.region(*else_region, false, Some(YIELD));
    }
    p.attr_dict_with_keyword(&[]);
}

fn verify_if(v: &mut VerifyContext<'_>, op: Op) {
    let ctx = v.ctx();
    if !v.expect_operand_count(op, 1) || !v.expect_region_count(op, 2) {
        return;
    }
    if !is_i1(v, operand_type(v, op, 0)) {
        v.error(op, "expects an i1 condition");
    }
    let results: Vec<Type> = ctx.results(op).map(|r| ctx.value_type(r)).collect();
    let [then_region, else_region] = [ctx.regions(op)[0], ctx.regions(op)[1]];
    if let Some(block) = single_block(v, op, then_region, "then") {
        if !ctx.block_arguments(block).is_empty() {
            v.error(op, "expects its regions to have no arguments");
        }
        check_terminator(v, op, block, YIELD, 0, &results);
    }
    match ctx.region_blocks(else_region).len() {
        0 if !results.is_empty() => v.error(op, "must have an else region when it has results"),
        0 => {}
        _ => {
            if let Some(block) = single_block(v, op, else_region, "else") {
                if !ctx.block_arguments(block).is_empty() {
                    v.error(op, "expects its regions to have no arguments");
                }
                check_terminator(v, op, block, YIELD, 0, &results);
            }
        }
    }
}

// ----- scf.while ----------------------------------------------------------------------------

fn parse_while(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let mut names = Vec::new();
    let mut inits = Vec::new();
    if p.consume_if(TokenKind::LParen) && !p.consume_if(TokenKind::RParen) {
        loop {
            names.push(p.parse_operand()?);
            p.expect(TokenKind::Equal, "'='")?;
            inits.push(p.parse_operand()?);
            if !p.consume_if(TokenKind::Comma) {
                break;
            }
        }
        p.expect(TokenKind::RParen, "')'")?;
    }
    p.expect(TokenKind::Colon, "':' before the loop's type")?;
    let location = p.location();
    let function_type = p.parse_type()?;
    let hat_ir::TypeKind::Function { inputs, results } = p.ctx().type_kind(function_type).clone() else {
        return Err(p.error_at(location, "expected a function type"));
    };
    state.operands = p.resolve_operands(&inits, &inputs, location)?;
    let arguments: Vec<Argument<'_>> =
        names.iter().zip(inputs.iter()).map(|(n, &ty)| Argument { name: n.name, ty, location: n.location }).collect();
    let before = p.parse_region(&arguments, false)?;
    p.expect_keyword("do")?;
    let after = p.parse_region(&[], false)?;
    p.parse_optional_attr_dict_with_keyword(&mut state.attributes)?;
    state.result_types = results.to_vec();
    state.regions = vec![before, after];
    Ok(())
}

fn print_while(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let [before, after] = ctx.regions(op) else { return };
    let Some(&entry) = ctx.region_blocks(*before).first() else { return };
    let operands = ctx.operands(op);
    let arguments = ctx.block_arguments(entry);
    if arguments.len() != operands.len() {
        return;
    }
    if !operands.is_empty() {
        p.write(" (");
        for (i, (&argument, &init)) in arguments.iter().zip(operands).enumerate() {
            if i > 0 {
                p.write(", ");
            }
            p.value(argument);
            p.write(" = ");
            p.value(init);
        }
        p.write(")");
    }
    let inputs = types_of(ctx, operands);
    let results: Vec<Type> = ctx.results(op).map(|r| ctx.value_type(r)).collect();
    p.write(" : (");
    p.types(&inputs);
    p.write(") ->");
    if results.len() == 1 {
        p.write(" ");
        p.ty(results[0]);
    } else {
        p.write(" (");
        p.types(&results);
        p.write(")");
    }
    p.write(" ");
    p.region(*before, false, None);
    p.write(" do ");
    p.region(*after, true, None);
    p.attr_dict_with_keyword(&[]);
}

fn verify_while(v: &mut VerifyContext<'_>, op: Op) {
    let ctx = v.ctx();
    if !v.expect_region_count(op, 2) {
        return;
    }
    let inits = types_of(ctx, ctx.operands(op));
    let results: Vec<Type> = ctx.results(op).map(|r| ctx.value_type(r)).collect();
    let [before, after] = [ctx.regions(op)[0], ctx.regions(op)[1]];
    if let Some(block) = single_block(v, op, before, "before") {
        if types_of(ctx, ctx.block_arguments(block)) != inits {
            v.error(op, "expects the 'before' region's arguments to match the operands");
        }
        if let Some(last) = ctx.last_op(block) {
            if ctx.name_str(last) != "scf.condition" {
                v.error(op, "expects the 'before' region to end with 'scf.condition'");
            } else if !ctx.operands(last).is_empty() {
                check_terminator(v, op, block, "scf.condition", 1, &results);
            }
        }
    }
    if let Some(block) = single_block(v, op, after, "after") {
        if types_of(ctx, ctx.block_arguments(block)) != results {
            v.error(op, "expects the 'after' region's arguments to match the results");
        }
        check_terminator(v, op, block, YIELD, 0, &inits);
    }
}

// ----- terminators --------------------------------------------------------------------------

fn verify_yield(v: &mut VerifyContext<'_>, op: Op) {
    has_parent(v, op, &["scf.for", "scf.if", "scf.while"]);
}

fn parse_condition(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    p.expect(TokenKind::LParen, "'(' before the condition")?;
    let condition = p.parse_operand()?;
    p.expect(TokenKind::RParen, "')' after the condition")?;
    parse_operands_colon_types(p, state)?;
    let i1 = p.ctx().integer_type(1);
    let value = p.resolve_operand(&condition, i1)?;
    state.operands.insert(0, value);
    Ok(())
}

fn print_condition(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let Some((&condition, forwarded)) = ctx.operands(op).split_first() else { return };
    p.write("(");
    p.value(condition);
    p.write(")");
    if !forwarded.is_empty() {
        p.write(" ");
        p.values(forwarded);
    }
    p.attr_dict(&[]);
    if !forwarded.is_empty() {
        p.write(" : ");
        p.types(&types_of(ctx, forwarded));
    }
}

fn verify_condition(v: &mut VerifyContext<'_>, op: Op) {
    if !has_parent(v, op, &["scf.while"]) {
        return;
    }
    if v.ctx().operands(op).is_empty() || !is_i1(v, operand_type(v, op, 0)) {
        v.error(op, "expects an i1 condition as its first operand");
    }
}

/// The ops of `scf`.
pub const OPS: &[OpSpec] = &[
    OpSpec {
        name: "scf.for",
        summary: "A counted loop with loop-carried values",
        traits: OpTraits::SINGLE_BLOCK.union(OpTraits::RECURSIVE_EFFECTS),
        regions: 1,
        syntax: Syntax::Custom { parse: parse_for, print: print_for },
        verify: verify_for,
        effects: None,
    },
    OpSpec {
        name: "scf.if",
        summary: "A conditional with an optional else region, yielding values",
        traits: OpTraits::SINGLE_BLOCK.union(OpTraits::RECURSIVE_EFFECTS),
        regions: 2,
        syntax: Syntax::Custom { parse: parse_if, print: print_if },
        verify: verify_if,
        effects: None,
    },
    OpSpec {
        name: "scf.while",
        summary: "A loop whose condition is computed in its 'before' region",
        traits: OpTraits::SINGLE_BLOCK,
        regions: 2,
        syntax: Syntax::Custom { parse: parse_while, print: print_while },
        verify: verify_while,
        effects: None,
    },
    OpSpec {
        name: "scf.yield",
        summary: "Ends a region of scf.for, scf.if or scf.while, yielding values",
        traits: OpTraits::TERMINATOR.union(OpTraits::RETURN_LIKE).union(OpTraits::PURE),
        regions: 0,
        syntax: Syntax::Custom { parse: parse_operands_colon_types, print: print_operands_colon_types },
        verify: verify_yield,
        effects: None,
    },
    OpSpec {
        name: "scf.condition",
        summary: "Ends the 'before' region of scf.while: continue if true, forwarding values",
        traits: OpTraits::TERMINATOR.union(OpTraits::PURE),
        regions: 0,
        syntax: Syntax::Custom { parse: parse_condition, print: print_condition },
        verify: verify_condition,
        effects: None,
    },
];

/// Registers `scf`.
pub fn register(ctx: &mut Context) {
    ctx.register_dialect("scf", "Structured control flow (MLIR's scf)");
    register_specs(ctx, OPS);
    interfaces::attach(ctx);
    canonicalize::attach(ctx);
}
