//! A dialect defined outside hat's crates, through the public API only: registration, custom
//! syntax, a verifier and memory effects, used beside the hat dialects.

use hat_ir::parser::{ParseResult, TokenKind};
use hat_ir::{
    parse_source, print_op, verify, Context, EffectKind, MemoryEffect, MemoryEffects, Op, OpDefinition, OpParser,
    OpPrinter, OpTraits, OperationState, PrintOptions, VerifyContext,
};

/// `%r = toy.scale %x by 3 : f32` — multiplies by a constant factor kept in the `factor` attribute.
struct Scale;

impl OpDefinition for Scale {
    fn name(&self) -> &str {
        "toy.scale"
    }

    fn traits(&self) -> OpTraits {
        OpTraits::PURE
    }

    fn verify(&self, v: &mut VerifyContext<'_>, op: Op) {
        let ctx = v.ctx();
        match ctx.attribute(op, "factor").and_then(|a| ctx.attribute_kind(a).as_i64()) {
            Some(factor) if factor > 0 => {}
            Some(factor) => v.error(op, format!("factor must be positive, got {factor}")),
            None => v.error(op, "requires an integer attribute 'factor'"),
        }
    }

    fn has_custom_syntax(&self) -> bool {
        true
    }

    fn parse(&self, p: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
        let operand = p.parse_operand()?;
        p.expect_keyword("by")?;
        let factor = p.parse_integer()?;
        p.expect(TokenKind::Colon, "':'")?;
        let ty = p.parse_type()?;
        state.operands.push(p.resolve_operand(&operand, ty)?);
        state.result_types.push(ty);
        let ctx = p.ctx();
        let i64_type = ctx.integer_type(64);
        let value = ctx.integer_attr(factor, i64_type);
        let key = ctx.ident("factor");
        state.attributes.push((key, value));
        Ok(())
    }

    fn print(&self, p: &mut OpPrinter<'_, '_>, op: Op) {
        let ctx = p.ctx();
        let factor = ctx.attribute(op, "factor").and_then(|a| ctx.attribute_kind(a).as_i64()).unwrap_or(0);
        p.write(" ");
        p.value(ctx.operand(op, 0));
        p.write(&format!(" by {factor} : "));
        p.ty(ctx.value_type(ctx.result(op, 0)));
    }
}

/// `toy.touch %buffer : memref<4xf32>` — a generic-only op that writes a buffer.
struct Touch;

impl OpDefinition for Touch {
    fn name(&self) -> &str {
        "toy.touch"
    }

    fn memory_effects(&self, _: &Context, _: Op) -> MemoryEffects {
        MemoryEffects::of([MemoryEffect::on_operand(EffectKind::Write, 0)])
    }
}

fn toy_context() -> Context {
    let mut ctx = hat_dialects::context();
    ctx.register_dialect("toy", "A dialect from outside hat");
    ctx.register_op(Scale);
    ctx.register_op(Touch);
    ctx
}

const PROGRAM: &str = r#"module {
  compute.func @main(%x: f32, %b: memref<4xf32>) -> f32 {
    %0 = toy.scale %x by 3 : f32
    "toy.touch"(%b) : (memref<4xf32>) -> ()
    compute.return %0 : f32
  }
}
"#;

#[test]
fn an_outside_dialect_parses_verifies_and_round_trips() {
    let mut ctx = toy_context();
    let module = parse_source(&mut ctx, "toy.hat", PROGRAM).expect("parses");
    assert!(verify(&ctx, module).is_empty());
    let printed = print_op(&ctx, module, PrintOptions::default());
    // The parameters keep their source names.
    assert_eq!(printed, PROGRAM);
    let generic = print_op(&ctx, module, PrintOptions { generic: true, debug_info: false, assume_verified: false });
    assert!(generic.contains(r#""toy.scale"(%x) {factor = 3 : i64} : (f32) -> f32"#), "{generic}");
}

#[test]
fn an_outside_dialect_verifier_and_effects_are_used() {
    let mut ctx = toy_context();
    let module = parse_source(&mut ctx, "toy.hat", &PROGRAM.replace("by 3", "by -2")).expect("parses");
    let errors = verify(&ctx, module);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].message, "'toy.scale' op factor must be positive, got -2");
    assert_eq!(ctx.sources.describe(errors[0].location), "toy.hat:3:5");

    let touch = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "toy.touch").unwrap();
    let definition = ctx.definition(ctx.name(touch)).unwrap().clone();
    assert_eq!(
        definition.memory_effects(&ctx, touch),
        MemoryEffects::of([MemoryEffect::on_operand(EffectKind::Write, 0)])
    );
    let scale = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "toy.scale").unwrap();
    assert!(ctx.definition(ctx.name(scale)).unwrap().memory_effects(&ctx, scale).is_none());
}

#[test]
fn without_registration_the_outside_dialect_is_rejected() {
    let mut ctx = hat_dialects::context();
    let error = parse_source(&mut ctx, "toy.hat", PROGRAM).unwrap_err();
    assert_eq!(error.to_string(), "custom op 'toy.scale' is unknown");
    assert_eq!(ctx.sources.describe(error.location), "toy.hat:3:10");
}
