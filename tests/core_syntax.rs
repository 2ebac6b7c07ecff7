//! The core's text and checks, independent of any dialect: every attribute and type form round
//! trips, multi-block regions are checked by dominance, the verifier reports every error, and
//! diagnostics render with `file:line:col`.

use hat_ir::diagnostics::{render, render_short};
use hat_ir::{parse_source, print_op, verify, Context, Diagnostic, Location, PrintOptions, Severity};

fn unregistered_context() -> Context {
    let mut ctx = hat_dialects::context();
    ctx.allow_unregistered = true;
    ctx
}

fn round_trip(text: &str) -> String {
    let mut ctx = unregistered_context();
    let module = parse_source(&mut ctx, "input.hat", text)
        .unwrap_or_else(|e| panic!("{e} at {}", ctx.sources.describe(e.location)));
    assert_eq!(verify(&ctx, module), vec![]);
    let printed = print_op(&ctx, module, PrintOptions::default());
    let mut again = unregistered_context();
    let reparsed = parse_source(&mut again, "printed.hat", &printed).expect("printed text parses");
    assert_eq!(print_op(&again, reparsed, PrintOptions::default()), printed, "print is not stable");
    printed
}

const ATTRIBUTES: &str = r#"module {
  "test.attributes"() {array = [1 : i32, "two", [], @three], bool_false = false, bool_true = true, dense = array<i64: 1, -2, 3>, dense_empty = array<i32>, dialect = #test.thing<1, [2]>, dictionary = {a = 1 : index, b, "quoted key"}, float = -2.5 : f64, float32 = 0.1 : f32, hex_nan = 0x7FC00000 : f32, huge = 1.0e300 : f64, integer = -42 : i16, nested = @outer::@inner, quoted_symbol = @"has space", string = "tab\tquote\"newline\n", type = memref<4x?x8xf32>, type_function = (i32, index) -> (f32, i1), unit_attr, unsigned = 4294967295 : ui32} : () -> ()
}
"#;

#[test]
fn every_attribute_form_round_trips() {
    assert_eq!(round_trip(ATTRIBUTES), ATTRIBUTES);
}

const TYPES: &str = r#"module {
  %0:8 = "test.types"() : () -> (i1, si8, ui64, bf16, f16, none, memref<0xf64>, !test.opaque<"x", 3>)
  "test.use"(%0#7) : (!test.opaque<"x", 3>) -> ()
  %1 = "test.function"() : () -> (() -> ())
  %2 = "test.function_nested"() : () -> ((i32) -> ((i32) -> i32))
}
"#;

#[test]
fn every_type_form_round_trips() {
    assert_eq!(round_trip(TYPES), TYPES);
}

const CFG: &str = r#"module {
  "test.func"() ({
  ^bb0(%arg0: i1):
    %0 = "test.def"() : () -> i32
    "test.cond_br"(%arg0)[^bb1, ^bb2] : (i1) -> ()
  ^bb1:
    %1 = "test.def"() : () -> i32
    "test.br"()[^bb3] : () -> ()
  ^bb2:
    "test.br"()[^bb3] : () -> ()
  ^bb3:
    "test.use"(%0) : (i32) -> ()
  }) : () -> ()
}
"#;

#[test]
fn multi_block_regions_round_trip_and_use_dominance() {
    assert_eq!(round_trip(CFG), CFG);
    // %1 is defined in ^bb1, which does not dominate ^bb3.
    let bad = CFG.replace(r#""test.use"(%0)"#, r#""test.use"(%1)"#);
    let mut ctx = unregistered_context();
    let module = parse_source(&mut ctx, "cfg.hat", &bad).unwrap();
    let errors = verify(&ctx, module);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].message, "'test.use' op operand #0 does not dominate this use");
    assert_eq!(ctx.sources.describe(errors[0].location), "cfg.hat:12:5");
    assert_eq!(ctx.sources.describe(errors[0].notes[0].0), "cfg.hat:7:5");
}

#[test]
fn a_later_block_may_be_referenced_before_it_is_defined() {
    // ^bb2 dominates ^bb1 although it is written after it; %x is a forward reference.
    let text = r#"module {
  "test.func"() ({
    "test.br"()[^bb2] : () -> ()
  ^bb1:
    "test.use"(%x) : (i32) -> ()
    "test.return"() : () -> ()
  ^bb2:
    %x = "test.def"() : () -> i32
    "test.br"()[^bb1] : () -> ()
  }) : () -> ()
}
"#;
    let printed = round_trip(text);
    assert!(printed.contains(r#""test.use"(%0) : (i32) -> ()"#), "{printed}");
}

#[test]
fn the_verifier_reports_every_error_not_just_the_first() {
    let text = r#"module {
  compute.func @f(%a: i32, %b: f32) -> i32 {
    %0 = "arith.addi"(%a, %b) : (i32, f32) -> i32
    %1 = "arith.cmpi"(%a, %a) {predicate = 42 : i64} : (i32, i32) -> i1
    %2 = "arith.select"(%a, %a, %a) : (i32, i32, i32) -> i32
    compute.return %b : f32
  }
}
"#;
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "many.hat", text).unwrap();
    let errors = verify(&ctx, module);
    let described: Vec<String> =
        errors.iter().map(|d| format!("{}: {}", ctx.sources.describe(d.location), d.message)).collect();
    assert_eq!(
        described,
        [
            "many.hat:3:5: 'arith.addi' op requires the same type for all operands and results, but operand #1 is 'f32' and the result 'i32'",
            "many.hat:4:5: 'arith.cmpi' op predicate 42 is out of range",
            "many.hat:5:5: 'arith.select' op condition must be i1",
            "many.hat:6:5: 'compute.return' op returns (f32) but the enclosing function returns (i32)",
        ]
    );
}

#[test]
fn diagnostics_render_with_the_source_line_and_location() {
    let mut ctx = Context::new();
    let source = ctx.sources.add("shown.hat", "module {\n  %0 = \"x.y\"() : () -> i32\n}\n");
    let at = |offset| Location::new(source, offset);
    let diagnostics = vec![
        Diagnostic::error(at(16), "an error").with_note(at(0), "a note elsewhere"),
        Diagnostic::warning(at(11), "a warning"),
        Diagnostic::new(Severity::Note, at(2), "a note"),
        Diagnostic::remark(Location::UNKNOWN, "a remark without a place"),
    ];
    let rich = render(&ctx.sources, &diagnostics);
    insta::assert_snapshot!(rich);
    assert_eq!(
        render_short(&ctx.sources, &diagnostics),
        "shown.hat:2:8: error: an error\nshown.hat:1:1: note: a note elsewhere\nshown.hat:2:3: warning: a warning\nshown.hat:1:3: note: a note\nunknown: remark: a remark without a place\n"
    );
}

#[test]
fn isolated_regions_do_not_see_outer_values() {
    let text = r#"module {
  %0 = "test.def"() : () -> i32
  compute.func @f() {
    "test.use"(%0) : (i32) -> ()
    compute.return
  }
}
"#;
    let mut ctx = unregistered_context();
    let error = parse_source(&mut ctx, "isolated.hat", text).unwrap_err();
    assert_eq!(error.to_string(), "use of undeclared SSA value name '%0'");
    assert_eq!(ctx.sources.describe(error.location), "isolated.hat:4:16");
}

#[test]
fn ops_that_fail_verification_print_in_the_generic_form() {
    // arith.addi without a result, arith.cmpi without operands: their custom forms cannot show
    // them, so the printer uses the generic form for exactly those ops.
    let text = r#"module {
  %0 = arith.constant 1 : i32
  "arith.addi"(%0, %0) : (i32, i32) -> ()
  %1 = "arith.cmpi"() {predicate = 0 : i64} : () -> i1
}
"#;
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "unverified.hat", text).unwrap();
    assert_eq!(verify(&ctx, module).len(), 2);
    assert_eq!(print_op(&ctx, module, PrintOptions::default()), text);
}

#[test]
fn deep_types_and_attributes_are_bounded_like_regions() {
    for (open, close) in [("[", "]"), ("{a = ", "}")] {
        let text = format!("\"test.op\"() {{x = {}1{}}} : () -> ()", open.repeat(100_000), close.repeat(100_000));
        let mut ctx = unregistered_context();
        let error = parse_source(&mut ctx, "deep.hat", &text).unwrap_err();
        assert_eq!(error.to_string(), "input is nested deeper than 2048 levels (regions, types and attributes)");
    }
    let text = format!("\"test.op\"() : () -> ({}i32{})", "(() -> (".repeat(50_000), "))".repeat(50_000));
    let mut ctx = unregistered_context();
    assert!(parse_source(&mut ctx, "deep.hat", &text).is_err());
}

#[test]
fn region_arguments_keep_their_source_names_for_tools() {
    let mut ctx = hat_dialects::context();
    let text = "compute.func @main(%grid: memref<4xi32>, %count: index) {\n  compute.return\n}\n";
    let module = parse_source(&mut ctx, "names.hat", text).unwrap();
    let function = ctx.body_ops(module)[0];
    let entry = ctx.region_blocks(ctx.regions(function)[0])[0];
    let names: Vec<_> = ctx.block_arguments(entry).iter().map(|&a| ctx.argument_name(a)).collect();
    assert_eq!(names, [Some("grid"), Some("count")]);
}
