//! Custom-form building blocks shared by the dialects: the common shapes of op syntax, and
//! function-like ops (`@name(%a: T) -> R attributes {...} { body }`).

use hat_ir::parser::{ParseResult, TokenKind};
use hat_ir::{AttributeKind, Op, OpParser, OpPrinter, OperationState, Type, TypeKind};

/// `%a, %b attr-dict : T` — two operands and one result, all of type `T`.
pub fn parse_binary(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let lhs = p.parse_operand()?;
    p.expect(TokenKind::Comma, "','")?;
    let rhs = p.parse_operand()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    p.expect(TokenKind::Colon, "':'")?;
    let ty = p.parse_type()?;
    state.operands = vec![p.resolve_operand(&lhs, ty)?, p.resolve_operand(&rhs, ty)?];
    state.result_types = vec![ty];
    Ok(())
}

/// Prints [`parse_binary`]'s form.
pub fn print_binary(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    p.write(" ");
    p.values(ctx.operands(op));
    p.attr_dict(&[]);
    p.write(" : ");
    p.ty(ctx.value_type(ctx.result(op, 0)));
}

/// `%a attr-dict : T` — one operand and one result of type `T`.
pub fn parse_unary(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let operand = p.parse_operand()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    p.expect(TokenKind::Colon, "':'")?;
    let ty = p.parse_type()?;
    state.operands = vec![p.resolve_operand(&operand, ty)?];
    state.result_types = vec![ty];
    Ok(())
}

/// Prints [`parse_unary`]'s form.
pub fn print_unary(p: &mut OpPrinter<'_, '_>, op: Op) {
    print_binary(p, op)
}

/// `%a attr-dict : T to U` — a conversion.
pub fn parse_cast(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let operand = p.parse_operand()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    p.expect(TokenKind::Colon, "':'")?;
    let from = p.parse_type()?;
    p.expect_keyword("to")?;
    let to = p.parse_type()?;
    state.operands = vec![p.resolve_operand(&operand, from)?];
    state.result_types = vec![to];
    Ok(())
}

/// Prints [`parse_cast`]'s form.
pub fn print_cast(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    p.write(" ");
    p.value(ctx.operand(op, 0));
    p.attr_dict(&[]);
    p.write(" : ");
    p.ty(ctx.value_type(ctx.operand(op, 0)));
    p.write(" to ");
    p.ty(ctx.value_type(ctx.result(op, 0)));
}

/// `attr-dict` alone: no operands, no results (barriers, syncs, bare terminators).
pub fn parse_bare(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    p.parse_optional_attr_dict(&mut state.attributes)
}

/// Prints [`parse_bare`]'s form.
pub fn print_bare(p: &mut OpPrinter<'_, '_>, _op: Op) {
    p.attr_dict(&[]);
}

/// `%a, %b attr-dict : T, U` or nothing — operands of a terminator such as `scf.yield`.
pub fn parse_operands_colon_types(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let operands = p.parse_operand_list()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    if operands.is_empty() {
        return Ok(());
    }
    let location = p.location();
    p.expect(TokenKind::Colon, "':' before the operand types")?;
    let types = p.parse_type_list()?;
    state.operands = p.resolve_operands(&operands, &types, location)?;
    Ok(())
}

/// Prints [`parse_operands_colon_types`]'s form.
pub fn print_operands_colon_types(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let operands = ctx.operands(op);
    if !operands.is_empty() {
        p.write(" ");
        p.values(operands);
    }
    p.attr_dict(&[]);
    if !operands.is_empty() {
        p.write(" : ");
        let types: Vec<Type> = operands.iter().map(|&v| ctx.value_type(v)).collect();
        p.types(&types);
    }
}

/// `%buffer[%i, %j]` — a buffer operand with index operands; returns (buffer, indices) unresolved.
pub fn parse_indexed<'a>(
    p: &mut OpParser<'_, 'a>,
) -> ParseResult<(hat_ir::parser::OperandRef<'a>, Vec<hat_ir::parser::OperandRef<'a>>)> {
    let buffer = p.parse_operand()?;
    p.expect(TokenKind::LSquare, "'[' before the indices")?;
    let indices = p.parse_operand_list()?;
    p.expect(TokenKind::RSquare, "']' after the indices")?;
    Ok((buffer, indices))
}

/// Resolves index operands as `index` values.
pub fn resolve_indices<'a>(
    p: &mut OpParser<'_, 'a>,
    indices: &[hat_ir::parser::OperandRef<'a>],
) -> ParseResult<Vec<hat_ir::Value>> {
    let index = p.ctx().index_type();
    indices.iter().map(|i| p.resolve_operand(i, index)).collect()
}

/// Prints `%buffer[%i, %j]` for the operands `first..` of `op` (buffer first).
pub fn print_indexed(p: &mut OpPrinter<'_, '_>, op: Op, first: usize) {
    let ctx = p.ctx();
    let operands = &ctx.operands(op)[first..];
    p.value(operands[0]);
    p.write("[");
    p.values(&operands[1..]);
    p.write("]");
}

/// The function-like ops' syntax: `@name(%a: T, %b: U) -> (R) attributes {...} { body }`.
///
/// Stores `sym_name` and `function_type`; `extra` parses what comes between the signature and the
/// attributes (such as a kernel's `workgroup(64, 1, 1)`). The body is isolated from above; a
/// missing body is allowed only when `body_required` is false.
pub fn parse_function_like(
    p: &mut OpParser<'_, '_>,
    state: &mut OperationState,
    extra: impl FnOnce(&mut OpParser<'_, '_>, &mut OperationState) -> ParseResult<()>,
) -> ParseResult<()> {
    let name = p.parse_symbol_name()?;
    let arguments = p.parse_argument_list()?;
    let results = p.parse_optional_arrow_types()?;
    extra(p, state)?;
    p.parse_optional_attr_dict_with_keyword(&mut state.attributes)?;
    let inputs: Vec<Type> = arguments.iter().map(|a| a.ty).collect();
    let ctx = p.ctx();
    let sym_name = ctx.ident("sym_name");
    let name_text = ctx.ident_str(name).to_string();
    let name_attr = ctx.string_attr(&name_text);
    let function_type = ctx.function_type(&inputs, &results);
    let type_attr = ctx.type_attr(function_type);
    let function_type_name = ctx.ident("function_type");
    state.attributes.push((sym_name, name_attr));
    state.attributes.push((function_type_name, type_attr));
    let body = p.parse_region(&arguments, true)?;
    state.regions.push(body);
    Ok(())
}

/// [`parse_function_like`] with nothing between the signature and the attributes.
pub fn parse_plain_function(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    parse_function_like(p, state, |_, _| Ok(()))
}

/// Prints [`parse_plain_function`]'s form.
pub fn print_plain_function(p: &mut OpPrinter<'_, '_>, op: Op) {
    print_function_like(p, op, &[], |_| {})
}

/// Prints [`parse_function_like`]'s form; `extra` prints between the signature and the attributes.
pub fn print_function_like(
    p: &mut OpPrinter<'_, '_>,
    op: Op,
    elided: &[&str],
    extra: impl FnOnce(&mut OpPrinter<'_, '_>),
) {
    let ctx = p.ctx();
    p.write(" ");
    if let Some(name) = hat_ir::verifier::symbol_name(ctx, op) {
        // Not `p.symbol(ident)`: a `sym_name` read from the generic form is a string attribute,
        // whose text need not be an interned identifier.
        p.symbol_str(name);
    } else {
        p.write("@<<missing sym_name>>");
    }
    let (inputs, results) = function_signature(ctx, op).unwrap_or_default();
    let region = ctx.regions(op).first().copied();
    let entry = region.and_then(|r| ctx.region_blocks(r).first().copied());
    p.write("(");
    match entry {
        Some(block) if ctx.block_arguments(block).len() == inputs.len() => {
            p.typed_arguments(ctx.block_arguments(block))
        }
        _ => p.types(&inputs),
    }
    p.write(")");
    p.arrow_types(&results);
    extra(p);
    let mut all_elided = vec!["sym_name", "function_type"];
    all_elided.extend_from_slice(elided);
    p.attr_dict_with_keyword(&all_elided);
    if let Some(region) = region {
        p.write(" ");
        p.region(region, false, None);
    }
}

/// The `(inputs, results)` of a function-like op's `function_type` attribute.
pub fn function_signature(ctx: &hat_ir::Context, op: Op) -> Option<(Vec<Type>, Vec<Type>)> {
    hat_ir::interfaces::function_type_signature(ctx, op)
}

/// What a custom printer writes for an op that lacks a part its custom form needs (an operand, a
/// result, an attribute): such an op fails verification, and printing must not panic on it. Its
/// generic form (`--mlir-print-op-generic`) shows it as it is.
pub fn print_malformed(p: &mut OpPrinter<'_, '_>) {
    p.write(" <<malformed: print it in the generic form>>");
}

/// The flat symbol reference `@name` held by attribute `attribute` of `op`, if it is one.
pub fn flat_symbol_ref(ctx: &hat_ir::Context, op: Op, attribute: &str) -> Option<hat_ir::Ident> {
    match ctx.attribute_kind(ctx.attribute(op, attribute)?) {
        AttributeKind::SymbolRef(path) if path.len() == 1 => Some(path[0]),
        _ => None,
    }
}

/// The attribute `@name` for a symbol name read by [`OpParser::parse_symbol_name`].
pub fn flat_symbol_ref_attr(ctx: &mut hat_ir::Context, name: hat_ir::Ident) -> hat_ir::Attribute {
    ctx.intern_attribute(AttributeKind::SymbolRef(Box::new([name])))
}

/// Prints a function type, `(T, U) -> R`, `(T) -> ()` or `() -> (R, S)`, as MLIR does.
pub fn print_function_type(p: &mut OpPrinter<'_, '_>, inputs: &[Type], results: &[Type]) {
    p.write("(");
    p.types(inputs);
    p.write(") -> ");
    if results.len() == 1 && !matches!(p.ctx().type_kind(results[0]), TypeKind::Function { .. }) {
        p.ty(results[0]);
    } else {
        p.write("(");
        p.types(results);
        p.write(")");
    }
}

/// A call: `@callee(%a, %b) attr-dict : (T, U) -> R`, stored as a `callee` attribute, the arguments
/// as operands, and the function type's results as result types (MLIR's `func.call` form).
pub fn parse_call(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let callee = p.parse_symbol_name()?;
    p.expect(TokenKind::LParen, "'(' before the call's arguments")?;
    let arguments = p.parse_operand_list()?;
    p.expect(TokenKind::RParen, "')' after the call's arguments")?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    p.expect(TokenKind::Colon, "':' before the call's function type")?;
    let location = p.location();
    let ty = p.parse_type()?;
    let TypeKind::Function { inputs, results } = p.ctx().type_kind(ty).clone() else {
        return Err(p.error_at(location, "expected a function type"));
    };
    state.operands = p.resolve_operands(&arguments, &inputs, location)?;
    state.result_types = results.to_vec();
    let ctx = p.ctx();
    let key = ctx.ident("callee");
    let value = flat_symbol_ref_attr(ctx, callee);
    state.attributes.push((key, value));
    Ok(())
}

/// Prints [`parse_call`]'s form.
pub fn print_call(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let Some(callee) = flat_symbol_ref(ctx, op, "callee") else {
        return print_malformed(p);
    };
    p.write(" ");
    p.symbol(callee);
    p.write("(");
    p.values(ctx.operands(op));
    p.write(")");
    p.attr_dict(&["callee"]);
    p.write(" : ");
    let inputs: Vec<Type> = ctx.operands(op).iter().map(|&v| ctx.value_type(v)).collect();
    let results: Vec<Type> = ctx.results(op).map(|v| ctx.value_type(v)).collect();
    print_function_type(p, &inputs, &results);
}

/// `: memref<...>` — returns the memref type and its element type (an error for any other type).
pub fn parse_colon_memref(p: &mut OpParser<'_, '_>) -> ParseResult<(Type, Type)> {
    p.expect(TokenKind::Colon, "':' before the buffer type")?;
    let location = p.location();
    let ty = p.parse_type()?;
    match p.ctx().type_kind(ty) {
        TypeKind::MemRef { element, .. } => Ok((ty, *element)),
        _ => Err(p.error_at(location, "expected a memref type")),
    }
}
