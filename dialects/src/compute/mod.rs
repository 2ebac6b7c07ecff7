//! The `compute` dialect: host code. Compute functions (the entry point and what it calls), the
//! dispatch of a kernel over a 1-, 2- or 3-D grid, calls, declarations of opaque host functions
//! with the effect of each argument, and explicit device synchronisation. The reference page is
//! `docs/dialects/compute.md`.

mod interfaces;

pub use interfaces::{CallOp, DispatchOp, FuncOp, HostFuncOp, ReturnOp, SyncOp};

use crate::checks;
use crate::op_spec::{OpSpec, Syntax};
use crate::syntax::{
    flat_symbol_ref, flat_symbol_ref_attr, function_signature, parse_bare, parse_call, parse_operands_colon_types,
    parse_plain_function, print_bare, print_call, print_malformed, print_operands_colon_types, print_plain_function,
};
use hat_ir::interfaces::ExecutionSpace;
use hat_ir::parser::{ParseResult, TokenKind};
use hat_ir::{
    AttributeKind, Context, EffectKind, EffectTarget, MemoryEffect, MemoryEffects, MemorySpace, Op, OpParser,
    OpPrinter, OpTraits, OperationState, Type, VerifyContext,
};

// ----- func, return ----------------------------------------------------------------------------

fn verify_func(v: &mut VerifyContext<'_>, op: Op) {
    checks::function_definition(v, op, "compute.return");
}

fn verify_return(v: &mut VerifyContext<'_>, op: Op) {
    // The operand types are checked against the function's results by the function's verifier.
    checks::has_parent(v, op, &["compute.func"]);
    v.expect_result_count(op, 0);
}

/// Returning moves no memory; the op is not `PURE` only because a terminator must not be removed.
fn no_effects(_: &Context, _: Op) -> MemoryEffects {
    MemoryEffects::none()
}

// ----- dispatch --------------------------------------------------------------------------------

/// The grid and argument operand counts of a dispatch, from `operandSegmentSizes`, when they are
/// well formed (two non-negative counts adding up to the operand count).
pub fn dispatch_segments(ctx: &Context, op: Op) -> Option<(usize, usize)> {
    let AttributeKind::DenseArray { values, .. } = ctx.attribute_kind(ctx.attribute(op, "operandSegmentSizes")?) else {
        return None;
    };
    let [grid, arguments] = **values else {
        return None;
    };
    let (grid, arguments) = (usize::try_from(grid).ok()?, usize::try_from(arguments).ok()?);
    (grid + arguments == ctx.operands(op).len()).then_some((grid, arguments))
}

/// `@kernel[%g0, %g1](%a, %n) attr-dict : (T, U)`; with no arguments `@kernel[%g0]()`.
fn parse_dispatch(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let kernel = p.parse_symbol_name()?;
    p.expect(TokenKind::LSquare, "'[' before the grid")?;
    let grid = p.parse_operand_list()?;
    p.expect(TokenKind::RSquare, "']' after the grid")?;
    p.expect(TokenKind::LParen, "'(' before the kernel's arguments")?;
    let arguments = p.parse_operand_list()?;
    p.expect(TokenKind::RParen, "')' after the kernel's arguments")?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let location = p.location();
    let types = if arguments.is_empty() {
        Vec::new()
    } else {
        p.expect(TokenKind::Colon, "':' before the argument types")?;
        p.parse_parenthesized_type_list()?
    };
    state.operands = crate::syntax::resolve_indices(p, &grid)?;
    state.operands.extend(p.resolve_operands(&arguments, &types, location)?);
    let ctx = p.ctx();
    let key = ctx.ident("kernel");
    let value = flat_symbol_ref_attr(ctx, kernel);
    state.attributes.push((key, value));
    let i32_type = ctx.integer_type(32);
    let sizes = ctx.intern_attribute(AttributeKind::DenseArray {
        element: i32_type,
        values: Box::new([grid.len() as i64, arguments.len() as i64]),
    });
    let key = ctx.ident("operandSegmentSizes");
    state.attributes.push((key, sizes));
    Ok(())
}

fn print_dispatch(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let (Some(kernel), Some((grid, _))) = (flat_symbol_ref(ctx, op, "kernel"), dispatch_segments(ctx, op)) else {
        return print_malformed(p);
    };
    let (grid, arguments) = ctx.operands(op).split_at(grid);
    p.write(" ");
    p.symbol(kernel);
    p.write("[");
    p.values(grid);
    p.write("](");
    p.values(arguments);
    p.write(")");
    p.attr_dict(&["kernel", "operandSegmentSizes"]);
    if !arguments.is_empty() {
        p.write(" : (");
        let types: Vec<Type> = arguments.iter().map(|&a| ctx.value_type(a)).collect();
        p.types(&types);
        p.write(")");
    }
}

fn verify_dispatch(v: &mut VerifyContext<'_>, op: Op) {
    checks::outside_execution_space(v, op, ExecutionSpace::Device);
    if !v.expect_result_count(op, 0) {
        return;
    }
    let Some(sizes) = checks::dense_array_attribute(v, op, "operandSegmentSizes", 32) else {
        return;
    };
    let Some((grid, _)) = dispatch_segments(v.ctx(), op) else {
        let count = v.ctx().operands(op).len();
        return v.error(
            op,
            format!("attribute 'operandSegmentSizes' must hold 2 non-negative sizes adding up to the operand count ({count}), but is {sizes:?}"),
        );
    };
    if !(1..=3).contains(&grid) {
        v.error(op, format!("expects a grid of 1 to 3 dimensions, but has {grid}"));
    }
    for index in 0..grid {
        let ty = checks::operand_type(v, op, index);
        if !checks::is_index(v, ty) {
            let name = v.type_name(ty);
            v.error(op, format!("grid operand #{index} must be 'index', but got '{name}'"));
        }
    }
    let Some((kernel, name)) = checks::symbol_target(v, op, "kernel", &["kernel.func"]) else {
        return;
    };
    // A kernel without a well-formed signature is reported by its own verifier.
    if let Some((inputs, _)) = function_signature(v.ctx(), kernel) {
        checks::matches_signature(v, op, grid, &inputs, &[], name);
    }
}

// ----- call ------------------------------------------------------------------------------------

fn verify_call(v: &mut VerifyContext<'_>, op: Op) {
    checks::outside_execution_space(v, op, ExecutionSpace::Device);
    let Some((callee, name)) = checks::symbol_target(v, op, "callee", &["compute.func", "compute.host_func"]) else {
        return;
    };
    if let Some((inputs, results)) = function_signature(v.ctx(), callee) {
        checks::matches_signature(v, op, 0, &inputs, &results, name);
    }
}

// ----- host_func -------------------------------------------------------------------------------

/// What an opaque host function does to one of its arguments (`arg_effects`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgEffect {
    /// A scalar argument: no memory effect.
    None,
    /// Reads the buffer's host copy.
    Read,
    /// Writes the buffer's host copy (every element it observes afterwards comes from the call).
    Write,
    /// Reads and writes the buffer's host copy; the default of an undeclared buffer argument.
    ReadWrite,
}

impl ArgEffect {
    /// The keyword of the custom form and the string of `arg_effects`.
    pub fn keyword(self) -> &'static str {
        match self {
            ArgEffect::None => "none",
            ArgEffect::Read => "read",
            ArgEffect::Write => "write",
            ArgEffect::ReadWrite => "readwrite",
        }
    }

    /// The effect a keyword names.
    pub fn from_keyword(keyword: &str) -> Option<ArgEffect> {
        [ArgEffect::None, ArgEffect::Read, ArgEffect::Write, ArgEffect::ReadWrite]
            .into_iter()
            .find(|e| e.keyword() == keyword)
    }

    /// Whether this effect may be declared on an input of type `ty`: `none` on scalars, the others
    /// on memrefs.
    pub fn fits(self, ctx: &Context, ty: Type) -> bool {
        ctx.type_kind(ty).is_memref() != (self == ArgEffect::None)
    }
}

/// The effect a `compute.host_func` declares on each of its inputs, when `arg_effects` is well
/// formed (one valid effect per input, fitting its type).
pub fn host_func_arg_effects(ctx: &Context, op: Op) -> Option<Vec<ArgEffect>> {
    let (inputs, _) = function_signature(ctx, op)?;
    let AttributeKind::Array(entries) = ctx.attribute_kind(ctx.attribute(op, "arg_effects")?) else {
        return None;
    };
    if entries.len() != inputs.len() {
        return None;
    }
    entries
        .iter()
        .zip(&inputs)
        .map(|(&entry, &ty)| {
            ctx.attribute_kind(entry).as_str().and_then(ArgEffect::from_keyword).filter(|e| e.fits(ctx, ty))
        })
        .collect()
}

/// `@name(read memref<...>, index) -> T attributes {...}`: a declaration (no body); a memref input
/// may be preceded by `read`, `write` or `readwrite`, and is `readwrite` without one.
fn parse_host_func(p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
    let name = p.parse_symbol_name()?;
    p.expect(TokenKind::LParen, "'(' before the argument types")?;
    let (mut inputs, mut effects) = (Vec::new(), Vec::new());
    if !p.consume_if(TokenKind::RParen) {
        loop {
            let location = p.location();
            let keyword = ArgEffect::from_keyword(p.peek_text())
                .filter(|&e| p.peek(TokenKind::BareIdent) && e != ArgEffect::None);
            if keyword.is_some() {
                p.parse_keyword("an effect")?;
            }
            let (found, is_word) = (p.peek_text(), p.peek(TokenKind::BareIdent));
            let ty = p.parse_type().map_err(|error| match keyword {
                // `reed memref<4xi32>`: say what may come here rather than only "a type" (an
                // error further in, such as a bad memref shape, is kept as it is).
                None if is_word && error.location == location => p.error_at(
                    location,
                    format!("expected an effect (read, write, readwrite) or a type, found '{found}'"),
                ),
                _ => error,
            })?;
            let is_memref = p.ctx().type_kind(ty).is_memref();
            let effect = match keyword {
                Some(effect) if !is_memref => {
                    return Err(p.error_at(
                        location,
                        format!("effect '{}' is only allowed on a memref input", effect.keyword()),
                    ))
                }
                Some(effect) => effect,
                None if is_memref => ArgEffect::ReadWrite,
                None => ArgEffect::None,
            };
            inputs.push(ty);
            effects.push(effect);
            if !p.consume_if(TokenKind::Comma) {
                break;
            }
        }
        p.expect(TokenKind::RParen, "',' or ')' in the argument types")?;
    }
    let results = p.parse_optional_arrow_types()?;
    p.parse_optional_attr_dict_with_keyword(&mut state.attributes)?;
    let ctx = p.ctx();
    let name_text = ctx.ident_str(name).to_string();
    let entries = [
        ("sym_name", ctx.string_attr(&name_text)),
        ("function_type", {
            let ty = ctx.function_type(&inputs, &results);
            ctx.type_attr(ty)
        }),
        ("arg_effects", {
            let strings: Vec<_> = effects.iter().map(|e| ctx.string_attr(e.keyword())).collect();
            ctx.array_attr(&strings)
        }),
    ];
    for (key, value) in entries {
        let key = ctx.ident(key);
        state.attributes.push((key, value));
    }
    Ok(())
}

fn print_host_func(p: &mut OpPrinter<'_, '_>, op: Op) {
    let ctx = p.ctx();
    let name = hat_ir::verifier::symbol_name(ctx, op);
    let (Some(name), Some((inputs, results)), Some(effects)) =
        (name, function_signature(ctx, op), host_func_arg_effects(ctx, op))
    else {
        return print_malformed(p);
    };
    p.write(" ");
    p.symbol_str(name);
    p.write("(");
    for (index, (&ty, effect)) in inputs.iter().zip(effects).enumerate() {
        if index > 0 {
            p.write(", ");
        }
        // Always spelled out, the default `readwrite` too: the declaration is the contract.
        if effect != ArgEffect::None {
            p.write(effect.keyword());
            p.write(" ");
        }
        p.ty(ty);
    }
    p.write(")");
    p.arrow_types(&results);
    p.attr_dict_with_keyword(&["sym_name", "function_type", "arg_effects"]);
}

fn verify_host_func(v: &mut VerifyContext<'_>, op: Op) {
    // `sym_name` is checked by the core for every `SYMBOL` op.
    if !checks::plain_op(v, op, 0, 0) {
        return;
    }
    let ctx = v.ctx();
    let Some((inputs, _)) = function_signature(ctx, op) else {
        return v.error(op, "requires a function type attribute 'function_type'");
    };
    let entries = match ctx.attribute(op, "arg_effects").map(|a| ctx.attribute_kind(a)) {
        Some(AttributeKind::Array(entries)) => entries,
        Some(_) => return v.error(op, "attribute 'arg_effects' must be an array of strings"),
        None => return v.error(op, "requires attribute 'arg_effects'"),
    };
    if entries.len() != inputs.len() {
        return v.error(
            op,
            format!(
                "attribute 'arg_effects' has {} entries, but the function has {} inputs",
                entries.len(),
                inputs.len()
            ),
        );
    }
    for (index, (&entry, &ty)) in entries.iter().zip(&inputs).enumerate() {
        let Some(text) = ctx.attribute_kind(entry).as_str() else {
            v.error(op, "attribute 'arg_effects' must be an array of strings");
            continue;
        };
        let effect = ArgEffect::from_keyword(text);
        if !effect.is_some_and(|e| e.fits(ctx, ty)) {
            let name = v.type_name(ty);
            let allowed = if ctx.type_kind(ty).is_memref() { "read, write or readwrite" } else { "none" };
            v.error(op, format!("effect #{index} is '{text}', but an input of type '{name}' takes {allowed}"));
        }
    }
}

// ----- sync ------------------------------------------------------------------------------------

/// `compute.sync` waits until every command submitted to the device has completed.
fn sync_effects(_: &Context, _: Op) -> MemoryEffects {
    MemoryEffects::of([MemoryEffect::synchronize(MemorySpace::Device)])
}

/// A host function touches exactly what it declares, on the host copies of its arguments: `read`
/// is a read, `write` a may-write (the declaration does not promise that every element is
/// written), `readwrite` both. These are effects on its parameters, which a call maps to its
/// arguments; the declaration itself does nothing when it is not called.
pub fn host_func_parameter_effects(ctx: &Context, op: Op) -> MemoryEffects {
    let Some(effects) = host_func_arg_effects(ctx, op) else { return MemoryEffects::Unknown };
    let mut list = Vec::new();
    for (index, effect) in effects.into_iter().enumerate() {
        let on = |kind| MemoryEffect::new(kind, EffectTarget::Parameter(index)).in_space(MemorySpace::Host);
        match effect {
            ArgEffect::None => {}
            ArgEffect::Read => list.push(on(EffectKind::Read)),
            ArgEffect::Write => list.push(on(EffectKind::Write).may()),
            ArgEffect::ReadWrite => list.extend([on(EffectKind::Read), on(EffectKind::Write).may()]),
        }
    }
    MemoryEffects::of(list)
}

fn verify_sync(v: &mut VerifyContext<'_>, op: Op) {
    checks::outside_execution_space(v, op, ExecutionSpace::Device);
    checks::plain_op(v, op, 0, 0);
}

/// The ops of `compute`.
pub const OPS: &[OpSpec] = &[
    OpSpec {
        name: "compute.func",
        summary: "A host function: the entry point of a program, or one it calls",
        traits: OpTraits::ISOLATED_FROM_ABOVE.union(OpTraits::SYMBOL).union(OpTraits::HOST_CODE),
        regions: 1,
        syntax: Syntax::Custom { parse: parse_plain_function, print: print_plain_function },
        verify: verify_func,
        effects: None,
    },
    OpSpec {
        name: "compute.return",
        summary: "Returns from a compute.func",
        traits: OpTraits::TERMINATOR.union(OpTraits::RETURN_LIKE),
        regions: 0,
        syntax: Syntax::Custom { parse: parse_operands_colon_types, print: print_operands_colon_types },
        verify: verify_return,
        effects: Some(no_effects),
    },
    OpSpec {
        name: "compute.dispatch",
        summary: "Runs a kernel.func over a 1-, 2- or 3-D grid of work items",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_dispatch, print: print_dispatch },
        verify: verify_dispatch,
        effects: None,
    },
    OpSpec {
        name: "compute.call",
        summary: "Calls a compute.func or a compute.host_func",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_call, print: print_call },
        verify: verify_call,
        effects: None,
    },
    OpSpec {
        name: "compute.host_func",
        summary: "Declares an opaque host function and its effect on each argument",
        traits: OpTraits::SYMBOL.union(OpTraits::HOST_CODE),
        regions: 0,
        syntax: Syntax::Custom { parse: parse_host_func, print: print_host_func },
        verify: verify_host_func,
        effects: None,
    },
    OpSpec {
        name: "compute.sync",
        summary: "Waits until the device has finished all the work submitted to it",
        traits: OpTraits::NONE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_bare, print: print_bare },
        verify: verify_sync,
        effects: Some(sync_effects),
    },
];

/// Registers `compute`.
pub fn register(ctx: &mut Context) {
    ctx.register_dialect("compute", "Host code: functions, kernel dispatches, calls, host functions, sync");
    crate::op_spec::register_specs(ctx, OPS);
    interfaces::attach(ctx);
}

#[cfg(test)]
mod tests {
    use super::{host_func_arg_effects, ArgEffect};
    use crate::checks::testing::{assert_verify_error, parse_error, round_trip, verify_errors};

    const KERNEL: &str = "kernel.func @k(%a: memref<64xi32>, %n: index) {\n  kernel.return\n}\n";

    /// A module with `@k` and a compute function around `body`, with `%a: memref<64xi32>`,
    /// `%b: memref<32xi32>`, `%n: index` and `%x: i32` in scope.
    fn program(body: &str) -> String {
        format!(
            "{KERNEL}compute.func @main(%a: memref<64xi32>, %b: memref<32xi32>, %n: index, %x: i32) {{\n{body}\n  compute.return\n}}"
        )
    }

    #[test]
    fn dispatch_forms_round_trip() {
        let text = format!(
            "{KERNEL}kernel.func @none() {{\n  kernel.return\n}}\n\
             compute.func @main(%a: memref<64xi32>, %n: index) {{\n  compute.dispatch @k[%n](%a, %n) : (memref<64xi32>, index)\n  \
             compute.dispatch @k[%n, %n, %n](%a, %n) {{tag}} : (memref<64xi32>, index)\n  compute.dispatch @none[%n, %n]()\n  compute.return\n}}"
        );
        let printed = round_trip(&text);
        assert!(printed.contains("compute.dispatch @none[%n, %n]()\n"), "{printed}");
    }

    #[test]
    fn dispatch_generic_form_has_segment_sizes() {
        let mut ctx = crate::context();
        let module = hat_ir::parse_source(
            &mut ctx,
            "t.hat",
            &program("  compute.dispatch @k[%n, %n](%a, %n) : (memref<64xi32>, index)"),
        )
        .unwrap();
        let generic = hat_ir::print_op(
            &ctx,
            module,
            hat_ir::PrintOptions { generic: true, debug_info: false, assume_verified: false },
        );
        assert!(generic.contains("{kernel = @k, operandSegmentSizes = array<i32: 2, 2>}"), "{generic}");
    }

    #[test]
    fn dispatch_to_a_missing_kernel() {
        assert_verify_error(
            &program("  compute.dispatch @nope[%n]()"),
            "'kernel' refers to '@nope', which is not defined",
        );
    }

    #[test]
    fn dispatch_to_something_else_than_a_kernel() {
        let text = format!("kernel.helper @h() {{\n  kernel.return\n}}\n{}", program("  compute.dispatch @h[%n]()"));
        assert_verify_error(&text, "'kernel' refers to '@h', which is a 'kernel.helper', not a 'kernel.func'");
    }

    #[test]
    fn dispatch_argument_type_mismatch() {
        assert_verify_error(
            &program("  compute.dispatch @k[%n](%b, %n) : (memref<32xi32>, index)"),
            "argument #0 has type 'memref<32xi32>', but '@k' expects 'memref<64xi32>'",
        );
        assert_verify_error(
            &program("  compute.dispatch @k[%n](%a) : (memref<64xi32>)"),
            "has 1 argument(s), but '@k' takes 2",
        );
    }

    #[test]
    fn dispatch_grid_of_four_dimensions() {
        assert_verify_error(
            &program("  compute.dispatch @k[%n, %n, %n, %n](%a, %n) : (memref<64xi32>, index)"),
            "expects a grid of 1 to 3 dimensions, but has 4",
        );
        assert_verify_error(&program("  compute.dispatch @k[](%a, %n) : (memref<64xi32>, index)"), "but has 0");
    }

    #[test]
    fn dispatch_grid_must_be_index() {
        assert_verify_error(
            &program(
                r#"  "compute.dispatch"(%x, %a, %n) {kernel = @k, operandSegmentSizes = array<i32: 1, 2>} : (i32, memref<64xi32>, index) -> ()"#,
            ),
            "grid operand #0 must be 'index', but got 'i32'",
        );
    }

    #[test]
    fn dispatch_with_bad_segment_sizes() {
        assert_verify_error(
            &program(r#"  "compute.dispatch"(%n, %a, %n) {kernel = @k, operandSegmentSizes = array<i32: 1, 1>} : (index, memref<64xi32>, index) -> ()"#),
            "attribute 'operandSegmentSizes' must hold 2 non-negative sizes adding up to the operand count (3), but is [1, 1]",
        );
        assert_verify_error(
            &program(r#"  "compute.dispatch"(%n) {kernel = @k} : (index) -> ()"#),
            "requires attribute 'operandSegmentSizes'",
        );
    }

    #[test]
    fn dispatch_inside_a_kernel() {
        let text =
            format!("{KERNEL}kernel.func @outer(%n: index) {{\n  compute.dispatch @k[%n]()\n  kernel.return\n}}");
        assert_verify_error(&text, "'compute.dispatch' op is not allowed inside 'kernel.func'");
    }

    #[test]
    fn call_checks_the_callee() {
        let callee = "compute.func @f(%x: i32) -> i32 {\n  compute.return %x : i32\n}\n";
        let ok = format!("{callee}{}", program("  %0 = compute.call @f(%x) : (i32) -> i32"));
        assert!(verify_errors(&ok).is_empty(), "{:?}", verify_errors(&ok));
        assert_verify_error(
            &format!("{callee}{}", program("  %0 = compute.call @f(%n) : (index) -> i32")),
            "argument #0 has type 'index', but '@f' expects 'i32'",
        );
        assert_verify_error(
            &format!("{callee}{}", program("  compute.call @f(%x) : (i32) -> ()")),
            "has 0 result(s), but '@f' returns 1",
        );
        assert_verify_error(
            &program("  compute.call @k(%a, %n) : (memref<64xi32>, index) -> ()"),
            "which is a 'kernel.func', not a 'compute.func' or 'compute.host_func'",
        );
        assert_verify_error(
            &program("  compute.call @g() : () -> ()"),
            "'callee' refers to '@g', which is not defined",
        );
    }

    #[test]
    fn host_func_effects() {
        let text = "compute.host_func @d(read memref<4xi32>, write memref<4xi32>, readwrite memref<4xi32>, memref<4xi32>, index) -> i32";
        let printed = round_trip(text);
        assert!(
            printed.contains("compute.host_func @d(read memref<4xi32>, write memref<4xi32>, readwrite memref<4xi32>, readwrite memref<4xi32>, index) -> i32\n"),
            "{printed}"
        );
        let mut ctx = crate::context();
        let module = hat_ir::parse_source(&mut ctx, "t.hat", text).unwrap();
        let op = ctx.body_ops(module)[0];
        let expected = [ArgEffect::Read, ArgEffect::Write, ArgEffect::ReadWrite, ArgEffect::ReadWrite, ArgEffect::None];
        assert_eq!(host_func_arg_effects(&ctx, op).unwrap(), expected);
    }

    #[test]
    fn host_func_with_a_bad_effect_keyword() {
        let error = parse_error("compute.host_func @d(reed memref<4xi32>)");
        assert!(error.contains("expected an effect (read, write, readwrite) or a type, found 'reed'"), "{error}");
        let error = parse_error("compute.host_func @d(memref<4xbad>)");
        assert!(!error.contains("expected an effect"), "{error}");
        let error = parse_error("compute.host_func @d(read index)");
        assert!(error.contains("effect 'read' is only allowed on a memref input"), "{error}");
        assert_verify_error(
            r#""compute.host_func"() {arg_effects = ["reed"], function_type = (memref<4xi32>) -> (), sym_name = "d"} : () -> ()"#,
            "effect #0 is 'reed', but an input of type 'memref<4xi32>' takes read, write or readwrite",
        );
        assert_verify_error(
            r#""compute.host_func"() {arg_effects = ["read"], function_type = (index) -> (), sym_name = "d"} : () -> ()"#,
            "effect #0 is 'read', but an input of type 'index' takes none",
        );
        assert_verify_error(
            r#""compute.host_func"() {arg_effects = [], function_type = (index) -> (), sym_name = "d"} : () -> ()"#,
            "attribute 'arg_effects' has 0 entries, but the function has 1 inputs",
        );
        assert_verify_error(
            r#""compute.host_func"() {function_type = (index) -> (), sym_name = "d"} : () -> ()"#,
            "requires attribute 'arg_effects'",
        );
    }

    #[test]
    fn return_types_must_match() {
        assert_verify_error(
            "compute.func @f(%x: i32) -> index {\n  compute.return %x : i32\n}",
            "'compute.return' op returns (i32) but the enclosing function returns (index)",
        );
    }

    #[test]
    fn return_outside_a_compute_func() {
        assert_verify_error(
            "kernel.func @k() {\n  compute.return\n}",
            "expects its parent op to be one of: compute.func",
        );
    }

    #[test]
    fn func_without_a_body() {
        assert_verify_error(
            r#""compute.func"() ({}) {function_type = () -> (), sym_name = "f"} : () -> ()"#,
            "requires a body",
        );
        assert_verify_error(
            r#""compute.func"() {function_type = () -> (), sym_name = "f"} : () -> ()"#,
            "expects 1 region(s), but has 0",
        );
    }

    #[test]
    fn sync_round_trips() {
        let printed = round_trip(&program("  compute.sync\n  compute.sync {tag}"));
        assert!(printed.contains("  compute.sync\n    compute.sync {tag}\n"), "{printed}");
    }
}
