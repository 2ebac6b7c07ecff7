//! The folders of `arith` agree with `ScalarOp::evaluate`, the semantics the executor and the CPU
//! backend run: for random ops on random constants (edge values of each width, NaNs with
//! payloads, signed zeros, values at the limits of the integer ranges), folding the op through
//! its registered folder gives `evaluate`'s value, bit for bit; and it does not fold exactly
//! where `evaluate` errs (division by zero) or MLIR leaves the result undefined — or where the
//! folder's one written policy refuses (an inexact `truncf`).

use hat_dialects::semantics::{FloatPredicate, IntPredicate, Scalar, ScalarOp, ScalarType};
use hat_ir::rewrite::{constant_value, fold_op, FoldResult};
use hat_ir::{Context, Op, Value};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::Config;

const INT_BINARY: &[&str] = &[
    "addi",
    "subi",
    "muli",
    "divsi",
    "divui",
    "ceildivsi",
    "floordivsi",
    "remsi",
    "remui",
    "andi",
    "ori",
    "xori",
    "shli",
    "shrsi",
    "shrui",
    "maxsi",
    "minsi",
    "maxui",
    "minui",
];
const FLOAT_BINARY: &[&str] = &["addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf"];
/// Integer types: odd widths too, which the folders handle as the executor would.
const INT_TYPES: &[&str] = &["i1", "i3", "i8", "i16", "i24", "i32", "i64", "index"];
const FLOAT_TYPES: &[&str] = &["f32", "f64"];
const CASTS: &[&str] = &[
    "extsi",
    "extui",
    "trunci",
    "index_cast",
    "index_castui",
    "sitofp",
    "uitofp",
    "fptosi",
    "fptoui",
    "extf",
    "truncf",
    "bitcast",
];

/// A random constant: an edge value of its type (`edge` picks one) or random bits.
#[derive(Copy, Clone, Debug)]
struct Seed {
    edge: Option<u8>,
    bits: u64,
}

fn seed() -> impl Strategy<Value = Seed> {
    (any::<Option<u8>>(), any::<u64>()).prop_map(|(edge, bits)| Seed { edge, bits })
}

fn width(ty: &str) -> u32 {
    match ty {
        "index" => 64,
        "f32" => 32,
        "f64" => 64,
        _ => ty[1..].parse().unwrap(),
    }
}

/// The literal of `seed` as a constant of type `ty`, in the custom form.
fn literal(ty: &str, seed: Seed) -> String {
    if ty.starts_with('f') {
        let edges: &[f64] = &[
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            0.1,
            255.5,
            256.0,
            -129.0,
            2147483648.0,
            -2147483648.0,
            4294967296.0,
            9223372036854775808.0,
            -9223372036854775808.0,
            18446744073709551616.0,
            1e10,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ];
        let f32_nans = [0x7FC0_0000u64, 0x7FC0_0001, 0xFFC0_0000, 0x7F80_0001, 0xFFFF_FFFF];
        let f64_nans = [0x7FF8_0000_0000_0000u64, 0x7FF8_0000_2000_0001, 0xFFF8_0000_0000_0000, 0x7FF0_0000_0000_0001];
        let bits = match (seed.edge, ty) {
            // A quarter of the edges are NaNs.
            (Some(e), "f32") if e < 64 => f32_nans[e as usize % f32_nans.len()],
            (Some(e), "f64") if e < 64 => f64_nans[e as usize % f64_nans.len()],
            (Some(e), "f32") => (edges[e as usize % edges.len()] as f32).to_bits() as u64,
            (Some(e), _) => edges[e as usize % edges.len()].to_bits(),
            (None, "f32") => seed.bits & 0xFFFF_FFFF,
            (None, _) => seed.bits,
        };
        let digits = if ty == "f32" { 8 } else { 16 };
        return format!("0x{bits:0digits$X} : {ty}");
    }
    let w = width(ty);
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let bits = match seed.edge {
        Some(e) => {
            let min = 1u64 << (w - 1);
            let edges = [0, 1, 2, mask, min, min - 1, w as u64, w as u64 - 1, min + 1, 3];
            edges[e as usize % edges.len()]
        }
        None => seed.bits,
    } & mask;
    if w == 1 {
        return if bits == 1 { "true".into() } else { "false".into() };
    }
    let value = ((bits << (64 - w)) as i64) >> (64 - w);
    format!("{value} : {ty}")
}

/// One op to fold: its text, and the constants it uses (`%a`, `%b`, `%c`).
#[derive(Clone, Debug)]
struct Case {
    constants: Vec<String>,
    op: String,
}

fn binary(op: &str, ty: &str, a: Seed, b: Seed) -> Case {
    Case { constants: vec![literal(ty, a), literal(ty, b)], op: format!("arith.{op} %a, %b : {ty}") }
}

fn compare(op: &str, predicate: &str, ty: &str, a: Seed, b: Seed) -> Case {
    Case { constants: vec![literal(ty, a), literal(ty, b)], op: format!("arith.{op} {predicate}, %a, %b : {ty}") }
}

/// A cast between types that the verifier accepts, picked by `from` and `to`.
fn cast(op: &str, from: usize, to: usize, a: Seed) -> Case {
    let ints = ["i1", "i3", "i8", "i16", "i24", "i32", "i64"];
    let (x, y) = (ints[from % ints.len()], ints[to % ints.len()]);
    let (narrow, wide) = if width(x) < width(y) { (x, y) } else { (y, x) };
    let (narrow, wide) = if narrow == wide { ("i8", "i32") } else { (narrow, wide) };
    let float = FLOAT_TYPES[from % 2];
    let (source, result) = match op {
        "extsi" | "extui" => (narrow, wide),
        "trunci" => (wide, narrow),
        "index_cast" | "index_castui" if from < to => ("index", x),
        "index_cast" | "index_castui" => (x, "index"),
        "sitofp" | "uitofp" => (x, float),
        "fptosi" | "fptoui" => (float, x),
        "extf" => ("f32", "f64"),
        "truncf" => ("f64", "f32"),
        _ => [("i32", "f32"), ("f32", "i32"), ("i64", "f64"), ("f64", "i64"), ("i16", "i16"), ("f64", "f64")][to % 6],
    };
    Case { constants: vec![literal(source, a)], op: format!("arith.{op} %a : {source} to {result}") }
}

fn case() -> impl Strategy<Value = Case> {
    let all_types: Vec<&str> = INT_TYPES.iter().chain(FLOAT_TYPES).copied().collect();
    prop_oneof![
        (select(INT_BINARY), select(INT_TYPES), seed(), seed()).prop_map(|(op, ty, a, b)| binary(op, ty, a, b)),
        (select(FLOAT_BINARY), select(FLOAT_TYPES), seed(), seed()).prop_map(|(op, ty, a, b)| binary(op, ty, a, b)),
        (select(FLOAT_TYPES), seed())
            .prop_map(|(ty, a)| Case { constants: vec![literal(ty, a)], op: format!("arith.negf %a : {ty}") }),
        (select(&IntPredicate::NAMES[..]), select(INT_TYPES), seed(), seed())
            .prop_map(|(p, ty, a, b)| compare("cmpi", p, ty, a, b)),
        (select(&FloatPredicate::NAMES[..]), select(FLOAT_TYPES), seed(), seed())
            .prop_map(|(p, ty, a, b)| compare("cmpf", p, ty, a, b)),
        (any::<bool>(), select(all_types), seed(), seed()).prop_map(|(condition, ty, a, b)| Case {
            constants: vec![condition.to_string(), literal(ty, a), literal(ty, b)],
            op: format!("arith.select %a, %b, %c : {ty}"),
        }),
        (select(CASTS), any::<usize>(), any::<usize>(), seed()).prop_map(|(op, from, to, a)| cast(op, from, to, a)),
    ]
}

/// The scalar a constant value holds.
fn scalar_of(ctx: &Context, value: Value) -> Scalar {
    let attribute = constant_value(ctx, value).expect("a constant");
    let ty = ScalarType::of(ctx, ctx.value_type(value)).expect("a scalar type");
    Scalar::from_attribute(ctx.attribute_kind(attribute), ty).expect("a scalar constant")
}

/// What the folder should answer for `op`, according to the semantics: `None` where `evaluate`
/// errs or the result is undefined, and for an inexact `truncf`.
fn expected(ctx: &Context, op: Op) -> Option<Scalar> {
    let scalar_op = ScalarOp::decode(ctx, op).expect("an arith op");
    let operands: Vec<Scalar> = ctx.operands(op).iter().map(|&v| scalar_of(ctx, v)).collect();
    let typed = ctx.operands(op)[if scalar_op == ScalarOp::Select { 1 } else { 0 }];
    let operand_type = ScalarType::of(ctx, ctx.value_type(typed)).unwrap();
    let result_type = ScalarType::of(ctx, ctx.value_type(ctx.result(op, 0))).unwrap();
    if scalar_op == ScalarOp::TruncF {
        let a = operands[0].as_f64();
        if !a.is_nan() && a as f32 as f64 != a {
            return None;
        }
    }
    scalar_op.evaluate(&operands, operand_type, result_type).ok()?.defined_value()
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let names = ["%a", "%b", "%c"];
    let mut text = String::from("compute.func @f() {\n");
    for (name, literal) in names.iter().zip(&case.constants) {
        text += &format!("  {name} = arith.constant {literal}\n");
    }
    text += &format!("  %r = {}\n  compute.return\n}}\n", case.op);
    let mut ctx = hat_dialects::context();
    let module =
        hat_ir::parse_source(&mut ctx, "case.hat", &text).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
    let errors = hat_ir::verify(&ctx, module);
    prop_assert!(errors.is_empty(), "{text}\n{errors:?}");
    let function = ctx.body_ops(module)[0];
    let op = ctx.body_ops(function)[case.constants.len()];
    let want = expected(&ctx, op);
    let got = match fold_op(&mut ctx, op) {
        None => None,
        Some(FoldResult::Value(value)) => Some(scalar_of(&ctx, value)),
        Some(FoldResult::Attribute(attribute)) => {
            let ty = ScalarType::of(&ctx, ctx.value_type(ctx.result(op, 0))).unwrap();
            Some(Scalar::from_attribute(ctx.attribute_kind(attribute), ty).expect("a scalar attribute"))
        }
    };
    let agree = match (want, got) {
        (Some(w), Some(g)) => w.same_as(g),
        (None, None) => true,
        _ => false,
    };
    prop_assert!(agree, "{text}semantics: {want:?}\nfolder:    {got:?}");
    Ok(())
}

proptest! {
    #![proptest_config(Config::with_cases(4096))]

    #[test]
    fn folding_a_constant_op_gives_what_evaluate_gives(case in case()) {
        check(&case)?;
    }
}

/// The edges that matter most, once each, whatever proptest draws.
#[test]
fn the_edges_agree() {
    let edge = |e: u8| Seed { edge: Some(e), bits: 0 };
    let mut cases = Vec::new();
    for e in 0..10 {
        for f in 0..10 {
            for ty in INT_TYPES {
                for op in INT_BINARY {
                    cases.push(binary(op, ty, edge(e), edge(f)));
                }
            }
        }
    }
    // Float edges: NaNs below 64, numbers from 64 on.
    let float_edges: Vec<u8> = (0..5).chain(64..85).collect();
    for &e in &float_edges {
        for op in CASTS {
            for from in 0..7 {
                cases.push(cast(op, from, e as usize, edge(e)));
            }
        }
        for &f in &float_edges {
            for ty in FLOAT_TYPES {
                for op in FLOAT_BINARY {
                    cases.push(binary(op, ty, edge(e), edge(f)));
                }
            }
        }
    }
    for case in &cases {
        check(case).unwrap_or_else(|e| panic!("{e}"));
    }
}
