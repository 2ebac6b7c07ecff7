//! The `builtin` dialect: `builtin.module`, the top-level container of symbols.
//!
//! Custom form: `module @name? attributes {...}? { ops }` (the `builtin.` prefix may be left out).

use crate::op_spec::{OpSpec, Syntax};
use hat_ir::parser::{ParseResult, TokenKind};
use hat_ir::{Context, Op, OpParser, OpPrinter, OpTraits, OperationState, VerifyContext};

fn parse_module(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    if p.peek(TokenKind::AtIdent) {
        let name = p.parse_symbol_name()?;
        let ctx = p.ctx();
        let text = ctx.ident_str(name).to_string();
        let attribute = ctx.string_attr(&text);
        let key = ctx.ident("sym_name");
        state.attributes.push((key, attribute));
    }
    p.parse_optional_attr_dict_with_keyword(&mut state.attributes)?;
    let body = p.parse_region(&[], true)?;
    let ctx = p.ctx();
    if ctx.region_blocks(body).is_empty() {
        let block = ctx.create_block(&[]);
        ctx.append_block(body, block);
    }
    state.regions.push(body);
    Ok(())
}

fn print_module(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    if let Some(name) = hat_ir::verifier::symbol_name(ctx, op) {
        p.write(" ");
        p.symbol_str(name);
    }
    p.attr_dict_with_keyword(&["sym_name"]);
    p.write(" ");
    p.region(ctx.regions(op)[0], false, None);
}

fn verify_module(v: &mut VerifyContext<'_>, op: Op) {
    let ctx = v.ctx();
    if !v.expect_region_count(op, 1) || !v.expect_operand_count(op, 0) || !v.expect_result_count(op, 0) {
        return;
    }
    match ctx.region_blocks(ctx.regions(op)[0]) {
        [body] if !ctx.block_arguments(*body).is_empty() => v.error(op, "expects its body block to have no arguments"),
        [_] => {}
        _ => v.error(op, "expects a body region with exactly one block"),
    }
    if let Some(attribute) = ctx.attribute(op, "sym_name") {
        if ctx.attribute_kind(attribute).as_str().is_none() {
            v.error(op, "attribute 'sym_name' must be a string");
        }
    }
}

/// The ops of `builtin`.
pub const OPS: &[OpSpec] = &[OpSpec {
    name: "builtin.module",
    summary: "A top-level container of symbols (functions, kernels, host function declarations)",
    traits: OpTraits::ISOLATED_FROM_ABOVE
        .union(OpTraits::SYMBOL_TABLE)
        .union(OpTraits::NO_TERMINATOR)
        .union(OpTraits::SINGLE_BLOCK)
        .union(OpTraits::GRAPH_REGION),
    regions: 1,
    syntax: Syntax::Custom { parse: parse_module, print: print_module },
    verify: verify_module,
    effects: None,
}];

/// Registers `builtin`.
pub fn register(ctx: &mut Context) {
    ctx.register_dialect("builtin", "The module: the top-level container");
    crate::op_spec::register_specs(ctx, OPS);
}
