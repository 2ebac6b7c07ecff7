//! The `math` dialect: MLIR's float and integer math functions, as far as hat programs need them.
//! Custom form `%r = math.sqrt %x : f32`; `%r = math.powf %x, %y : f32`.

use crate::checks::{is_float, is_signless_integer_like, uniform_operands_and_result};
use crate::op_spec::{register_specs, OpSpec, Syntax};
use crate::syntax::{parse_binary, parse_unary, print_binary, print_unary};
use hat_ir::{Context, Op, OpTraits, VerifyContext};

fn verify_float_unary(v: &mut VerifyContext<'_>, op: Op) {
    uniform_operands_and_result(v, op, 1, is_float, "a float");
}

fn verify_float_binary(v: &mut VerifyContext<'_>, op: Op) {
    uniform_operands_and_result(v, op, 2, is_float, "a float");
}

fn verify_integer_unary(v: &mut VerifyContext<'_>, op: Op) {
    uniform_operands_and_result(v, op, 1, is_signless_integer_like, "a signless integer");
}

const fn float_unary(name: &'static str, summary: &'static str) -> OpSpec {
    OpSpec {
        name,
        summary,
        traits: OpTraits::PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_unary, print: print_unary },
        verify: verify_float_unary,
        effects: None,
    }
}

/// The ops of `math`.
pub const OPS: &[OpSpec] = &[
    float_unary("math.sqrt", "Square root"),
    float_unary("math.absf", "Float absolute value"),
    float_unary("math.exp", "e to the power of x"),
    float_unary("math.log", "Natural logarithm"),
    float_unary("math.sin", "Sine"),
    float_unary("math.cos", "Cosine"),
    float_unary("math.tanh", "Hyperbolic tangent"),
    float_unary("math.floor", "Rounds down"),
    float_unary("math.ceil", "Rounds up"),
    OpSpec {
        name: "math.absi",
        summary: "Integer absolute value",
        traits: OpTraits::PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_unary, print: print_unary },
        verify: verify_integer_unary,
        effects: None,
    },
    OpSpec {
        name: "math.powf",
        summary: "x to the power of y",
        traits: OpTraits::PURE,
        regions: 0,
        syntax: Syntax::Custom { parse: parse_binary, print: print_binary },
        verify: verify_float_binary,
        effects: None,
    },
];

/// Registers `math`.
pub fn register(ctx: &mut Context) {
    ctx.register_dialect("math", "Math functions on scalars (MLIR's math)");
    register_specs(ctx, OPS);
}
