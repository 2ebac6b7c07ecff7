//! Unit tests of the rules in the module docs: one test per rule, at the edges of each width.

use super::*;

const I1: ScalarType = ScalarType::I1;
const I8: ScalarType = ScalarType::I8;
const I16: ScalarType = ScalarType::I16;
const I32: ScalarType = ScalarType::I32;
const I64: ScalarType = ScalarType::I64;
const INDEX: ScalarType = ScalarType::INDEX;
const F32: ScalarType = ScalarType::F32;
const F64: ScalarType = ScalarType::F64;

fn i(v: i64) -> Scalar {
    Scalar::Int(v)
}

fn f(v: f64) -> Scalar {
    Scalar::Float(v)
}

/// Decodes `name` (with `predicate`) and evaluates it.
fn evaluate(
    name: &str,
    predicate: Option<i64>,
    operands: &[Scalar],
    t: ScalarType,
    r: ScalarType,
) -> Result<Scalar, String> {
    Ok(ScalarOp::from_name(name, predicate)?.evaluate(operands, t, r)?.value)
}

/// The full evaluation of an op without predicate.
fn evaluation(name: &str, operands: &[Scalar], t: ScalarType, r: ScalarType) -> Evaluation {
    ScalarOp::from_name(name, None).unwrap().evaluate(operands, t, r).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn ev(name: &str, operands: &[Scalar], t: ScalarType, r: ScalarType) -> Scalar {
    evaluation(name, operands, t, r).value
}

fn bin(name: &str, a: i64, b: i64, t: ScalarType) -> i64 {
    ev(name, &[i(a), i(b)], t, t).as_i64()
}

/// Whether MLIR leaves the result undefined.
fn undefined(name: &str, operands: &[Scalar], t: ScalarType, r: ScalarType) -> bool {
    evaluation(name, operands, t, r).undefined
}

fn cmpi(p: i64, a: i64, b: i64, t: ScalarType) -> bool {
    evaluate("arith.cmpi", Some(p), &[i(a), i(b)], t, I1).unwrap().as_i64() == 1
}

fn cmpf(p: i64, a: f64, b: f64) -> bool {
    evaluate("arith.cmpf", Some(p), &[f(a), f(b)], F32, I1).unwrap().as_i64() == 1
}

fn bits32(v: Scalar) -> u32 {
    super::narrow(v.as_f64()).to_bits()
}

#[test]
fn integer_arithmetic_wraps_in_the_width() {
    assert_eq!(bin("arith.addi", 7, 8, I32), 15);
    assert_eq!(bin("arith.addi", 100, 100, I8), -56);
    assert_eq!(bin("arith.addi", i32::MAX as i64, 1, I32), i32::MIN as i64);
    assert_eq!(bin("arith.subi", -128, 1, I8), 127);
    assert_eq!(bin("arith.subi", 0, 1, I16), -1);
    assert_eq!(bin("arith.muli", 65536, 65536, I32), 0);
    assert_eq!(bin("arith.muli", i64::MAX, 2, I64), -2);
    assert_eq!(bin("arith.muli", -1, -1, INDEX), 1);
    assert_eq!(bin("arith.addi", 1, 1, I1), 0);
    assert_eq!(bin("arith.addi", 1, 0, I1), 1);
    assert_eq!(bin("arith.muli", 1, 1, I1), 1);
}

#[test]
fn divisions_and_remainders() {
    assert_eq!(bin("arith.divsi", -7, 2, I32), -3);
    assert_eq!(bin("arith.divsi", i32::MIN as i64, -1, I32), i32::MIN as i64);
    assert_eq!(bin("arith.divsi", i64::MIN, -1, I64), i64::MIN);
    assert_eq!(bin("arith.divui", -1, 2, I8), 127);
    assert_eq!(bin("arith.divui", -2, 2, I64), i64::MAX);
    assert_eq!(bin("arith.ceildivsi", -7, 2, I32), -3);
    assert_eq!(bin("arith.ceildivsi", 7, 2, I32), 4);
    assert_eq!(bin("arith.ceildivsi", -7, -2, I32), 4);
    assert_eq!(bin("arith.ceildivsi", 6, 2, I32), 3);
    assert_eq!(bin("arith.floordivsi", -7, 2, I32), -4);
    assert_eq!(bin("arith.floordivsi", 7, -2, I32), -4);
    assert_eq!(bin("arith.floordivsi", 7, 2, I32), 3);
    assert_eq!(bin("arith.remsi", -7, 2, I32), -1);
    assert_eq!(bin("arith.remsi", 7, -2, I32), 1);
    assert_eq!(bin("arith.remsi", -128, -1, I8), 0);
    assert_eq!(bin("arith.remui", -1, 10, I8), 5);
    assert_eq!(bin("arith.remui", 17, 5, INDEX), 2);
    for name in ["arith.divsi", "arith.divui", "arith.ceildivsi", "arith.floordivsi", "arith.remsi", "arith.remui"] {
        let error = evaluate(name, None, &[i(7), i(0)], I32, I32).unwrap_err();
        assert!(error.contains("by zero") && error.contains(name), "{error}");
    }
    // Zero in the width: 256 is 0 as an i8.
    assert!(evaluate("arith.divui", None, &[i(7), i(256)], I8, I8).is_err());
}

#[test]
fn bitwise_and_shifts() {
    assert_eq!(bin("arith.andi", 12, 10, I32), 8);
    assert_eq!(bin("arith.ori", 12, 10, I32), 14);
    assert_eq!(bin("arith.xori", 12, 10, I32), 6);
    assert_eq!(bin("arith.xori", 1, 1, I1), 0);
    assert_eq!(bin("arith.xori", -1, 0, I64), -1);
    assert_eq!(bin("arith.shli", 1, 31, I32), i32::MIN as i64);
    assert_eq!(bin("arith.shli", 1, 63, INDEX), i64::MIN);
    assert_eq!(bin("arith.shli", 3, 7, I8), -128);
    assert_eq!(bin("arith.shrsi", -8, 1, I8), -4);
    assert_eq!(bin("arith.shrui", -8, 1, I8), 124);
    assert_eq!(bin("arith.shrui", -1, 60, I64), 15);
    // Amounts of the width or more (read unsigned) give 0.
    assert_eq!(bin("arith.shli", 1, 32, I32), 0);
    assert_eq!(bin("arith.shrsi", -8, 8, I8), 0);
    assert_eq!(bin("arith.shrui", -8, -1, I8), 0);
    assert_eq!(bin("arith.shli", 1, 64, I64), 0);
    assert_eq!(bin("arith.shli", 1, -1, INDEX), 0);
}

#[test]
fn integer_min_max_and_abs() {
    assert_eq!(bin("arith.maxsi", 3, -5, I32), 3);
    assert_eq!(bin("arith.minsi", 3, -5, I32), -5);
    assert_eq!(bin("arith.maxui", 3, -5, I32), -5);
    assert_eq!(bin("arith.minui", 3, -5, I32), 3);
    assert_eq!(bin("arith.maxsi", 1, 0, I1), 0);
    assert_eq!(bin("arith.maxui", 1, 0, I1), 1);
    assert_eq!(ev("math.absi", &[i(-5)], I32, I32), i(5));
    assert_eq!(ev("math.absi", &[i(i32::MIN as i64)], I32, I32), i(i32::MIN as i64));
    assert_eq!(ev("math.absi", &[i(i64::MIN)], I64, I64), i(i64::MIN));
}

#[test]
fn integer_comparisons() {
    // eq ne slt sle sgt sge ult ule ugt uge
    assert!(cmpi(0, 5, 5, I32));
    assert!(!cmpi(0, 5, 6, I32));
    assert!(cmpi(1, 5, 6, I32));
    assert!(cmpi(2, -1, 0, I32));
    assert!(cmpi(3, 0, 0, I32));
    assert!(cmpi(4, 0, -1, I32));
    assert!(cmpi(5, -1, -1, I32));
    assert!(!cmpi(6, -1, 0, I32));
    assert!(cmpi(7, 0, -1, I32));
    assert!(cmpi(8, -1, 0, I32));
    assert!(cmpi(9, -1, -1, I32));
    // i1's 1 is -1 when signed.
    assert!(cmpi(2, 1, 0, I1));
    assert!(cmpi(8, 1, 0, I1));
    // Comparisons read operands in the width.
    assert!(cmpi(0, 256, 0, I8));
    assert!(evaluate("arith.cmpi", None, &[i(0), i(0)], I32, I1).is_err());
    assert!(evaluate("arith.cmpi", Some(10), &[i(0), i(0)], I32, I1).is_err());
}

#[test]
fn float_arithmetic_rounds_to_f32() {
    let third = ev("arith.divf", &[f(1.0), f(3.0)], F32, F32).as_f64();
    assert_eq!(third, (1.0f32 / 3.0f32) as f64);
    assert_ne!(third, 1.0 / 3.0);
    assert_eq!(ev("arith.divf", &[f(1.0), f(3.0)], F64, F64), f(1.0 / 3.0));
    assert_eq!(ev("arith.addf", &[f(16777216.0), f(1.0)], F32, F32), f(16777216.0));
    assert_eq!(ev("arith.addf", &[f(16777216.0), f(1.0)], F64, F64), f(16777217.0));
    assert_eq!(ev("arith.subf", &[f(1.5), f(0.25)], F32, F32), f(1.25));
    assert_eq!(ev("arith.mulf", &[f(1.5), f(4.0)], F32, F32), f(6.0));
    assert_eq!(ev("arith.remf", &[f(7.5), f(2.0)], F32, F32), f(1.5));
    assert_eq!(ev("arith.remf", &[f(-7.5), f(2.0)], F64, F64), f(-1.5));
    assert_eq!(ev("arith.negf", &[f(2.0)], F32, F32), f(-2.0));
    assert!(ev("arith.divf", &[f(0.0), f(0.0)], F32, F32).as_f64().is_nan());
    assert_eq!(ev("arith.divf", &[f(1.0), f(0.0)], F32, F32), f(f64::INFINITY));
    assert!(evaluate("arith.addf", None, &[i(1), i(2)], I32, I32).is_err());
    assert!(evaluate("arith.addi", None, &[f(1.0), f(2.0)], F32, F32).is_err());
}

#[test]
fn float_min_max() {
    assert_eq!(ev("arith.maximumf", &[f(1.0), f(2.0)], F32, F32), f(2.0));
    assert_eq!(ev("arith.minimumf", &[f(1.0), f(2.0)], F32, F32), f(1.0));
    assert!(ev("arith.maximumf", &[f(f64::NAN), f(2.0)], F32, F32).as_f64().is_nan());
    assert!(ev("arith.minimumf", &[f(1.0), f(f64::NAN)], F32, F32).as_f64().is_nan());
    assert!(ev("arith.maximumf", &[f(-0.0), f(0.0)], F32, F32).as_f64().is_sign_positive());
    assert!(ev("arith.minimumf", &[f(0.0), f(-0.0)], F32, F32).as_f64().is_sign_negative());
    assert_eq!(ev("arith.maxnumf", &[f(f64::NAN), f(2.0)], F32, F32), f(2.0));
    assert_eq!(ev("arith.minnumf", &[f(1.0), f(f64::NAN)], F32, F32), f(1.0));
}

#[test]
fn float_comparisons() {
    let nan = f64::NAN;
    assert!(!cmpf(0, 1.0, 1.0));
    assert!(cmpf(1, 1.0, 1.0));
    assert!(cmpf(2, 2.0, 1.0));
    assert!(cmpf(3, 1.0, 1.0));
    assert!(cmpf(4, 1.0, 2.0));
    assert!(cmpf(5, 2.0, 2.0));
    assert!(cmpf(6, 1.0, 2.0));
    assert!(!cmpf(6, nan, 2.0));
    assert!(cmpf(7, 1.0, 2.0));
    assert!(!cmpf(7, nan, 2.0));
    assert!(cmpf(8, nan, 2.0));
    assert!(cmpf(9, nan, 2.0));
    assert!(cmpf(10, 2.0, 2.0));
    assert!(cmpf(11, 1.0, 2.0));
    assert!(cmpf(12, nan, nan));
    assert!(cmpf(13, 1.0, 2.0));
    assert!(!cmpf(13, 2.0, 2.0));
    assert!(cmpf(14, nan, 1.0));
    assert!(!cmpf(14, 1.0, 1.0));
    assert!(cmpf(15, nan, nan));
    for p in 1..=6 {
        assert!(!cmpf(p, nan, 1.0), "ordered predicate {p} on NaN");
    }
}

#[test]
fn math_functions() {
    assert_eq!(ev("math.sqrt", &[f(2.0)], F32, F32), f(2.0f32.sqrt() as f64));
    assert_eq!(ev("math.sqrt", &[f(2.0)], F64, F64), f(2.0f64.sqrt()));
    assert!(ev("math.sqrt", &[f(-1.0)], F32, F32).as_f64().is_nan());
    assert_eq!(ev("math.absf", &[f(-2.5)], F32, F32), f(2.5));
    assert_eq!(ev("math.exp", &[f(1.0)], F32, F32), f(1.0f32.exp() as f64));
    assert_eq!(ev("math.log", &[f(1.0)], F32, F32), f(0.0));
    assert_eq!(ev("math.sin", &[f(0.5)], F64, F64), f(0.5f64.sin()));
    assert_eq!(ev("math.cos", &[f(0.5)], F32, F32), f(0.5f32.cos() as f64));
    assert_eq!(ev("math.tanh", &[f(0.5)], F32, F32), f(0.5f32.tanh() as f64));
    assert_eq!(ev("math.floor", &[f(-1.5)], F32, F32), f(-2.0));
    assert_eq!(ev("math.ceil", &[f(-1.5)], F32, F32), f(-1.0));
    assert_eq!(ev("math.powf", &[f(2.0), f(10.0)], F32, F32), f(1024.0));
    assert!(evaluate("math.sqrt", None, &[f(1.0), f(2.0)], F32, F32).is_err());
    assert!(evaluate("math.bogus", None, &[f(1.0)], F32, F32).is_err());
}

#[test]
fn select_returns_an_operand_unchanged() {
    assert_eq!(ev("arith.select", &[i(1), i(10), i(20)], I32, I32), i(10));
    assert_eq!(ev("arith.select", &[i(0), i(10), i(20)], I32, I32), i(20));
    assert_eq!(ev("arith.select", &[i(1), f(1.5), f(2.5)], F32, F32), f(1.5));
    assert!(evaluate("arith.select", None, &[i(1), i(2)], I32, I32).is_err());
}

#[test]
fn integer_casts() {
    assert_eq!(ev("arith.index_cast", &[i(-1)], I32, INDEX), i(-1));
    assert_eq!(ev("arith.index_cast", &[i(0x1_0000_0005)], INDEX, I32), i(5));
    assert_eq!(ev("arith.index_cast", &[i(0xFFFF_FFFF)], INDEX, I32), i(-1));
    assert_eq!(ev("arith.index_castui", &[i(-1)], I32, INDEX), i(0xFFFF_FFFF));
    assert_eq!(ev("arith.index_cast", &[i(1)], I1, INDEX), i(-1));
    assert_eq!(ev("arith.index_castui", &[i(1)], I1, INDEX), i(1));
    assert_eq!(ev("arith.extsi", &[i(-3)], I8, I32), i(-3));
    assert_eq!(ev("arith.extsi", &[i(1)], I1, I32), i(-1));
    assert_eq!(ev("arith.extui", &[i(-3)], I8, I32), i(253));
    assert_eq!(ev("arith.extui", &[i(1)], I1, I64), i(1));
    assert_eq!(ev("arith.trunci", &[i(0x1234_5678)], I32, I16), i(0x5678));
    assert_eq!(ev("arith.trunci", &[i(0xFF)], I32, I8), i(-1));
    assert_eq!(ev("arith.trunci", &[i(3)], I32, I1), i(1));
    assert_eq!(ev("arith.trunci", &[i(2)], I32, I1), i(0));
    assert!(evaluate("arith.extsi", None, &[i(1)], I8, F32).is_err());
}

#[test]
fn float_int_conversions() {
    assert_eq!(ev("arith.sitofp", &[i(-3)], I32, F32), f(-3.0));
    assert_eq!(ev("arith.sitofp", &[i(1)], I1, F32), f(-1.0));
    assert_eq!(ev("arith.uitofp", &[i(-1)], I8, F32), f(255.0));
    assert_eq!(ev("arith.uitofp", &[i(-1)], I64, F64), f(18446744073709551615.0));
    // One rounding, to f32: 2^24 + 1 is not an f32.
    assert_eq!(ev("arith.sitofp", &[i(16777217)], I32, F32), f(16777216.0));
    assert_eq!(ev("arith.sitofp", &[i(16777217)], I32, F64), f(16777217.0));
    assert_eq!(ev("arith.fptosi", &[f(-3.7)], F32, I32), i(-3));
    assert_eq!(ev("arith.fptosi", &[f(3.7)], F32, I32), i(3));
    // Saturation, NaN to 0.
    assert_eq!(ev("arith.fptosi", &[f(1e10)], F32, I32), i(i32::MAX as i64));
    assert_eq!(ev("arith.fptosi", &[f(-1e10)], F32, I32), i(i32::MIN as i64));
    assert_eq!(ev("arith.fptosi", &[f(300.0)], F32, I8), i(127));
    assert_eq!(ev("arith.fptosi", &[f(f64::NAN)], F32, I32), i(0));
    assert_eq!(ev("arith.fptosi", &[f(1e300)], F64, I64), i(i64::MAX));
    assert_eq!(ev("arith.fptosi", &[f(-1.0)], F32, I1), i(1));
    assert_eq!(ev("arith.fptoui", &[f(300.0)], F32, I8), i(-1));
    assert_eq!(ev("arith.fptoui", &[f(200.0)], F32, I8), i(-56));
    assert_eq!(ev("arith.fptoui", &[f(-5.0)], F32, I32), i(0));
    assert_eq!(ev("arith.fptoui", &[f(4e9)], F64, I32), i(4_000_000_000u32 as i32 as i64));
    assert_eq!(ev("arith.fptoui", &[f(f64::NAN)], F64, I64), i(0));
    assert_eq!(ev("arith.extf", &[f(1.5)], F32, F64), f(1.5));
    assert_eq!(ev("arith.truncf", &[f(0.1)], F64, F32), f(0.1f32 as f64));
    assert_eq!(ev("arith.truncf", &[f(1e300)], F64, F32), f(f64::INFINITY));
    assert!(evaluate("arith.sitofp", None, &[i(1)], I32, I32).is_err());
}

#[test]
fn bitcasts() {
    assert_eq!(ev("arith.bitcast", &[f(1.0)], F32, I32), i(0x3F80_0000));
    assert_eq!(ev("arith.bitcast", &[f(-0.0)], F32, I32), i(i32::MIN as i64));
    assert_eq!(ev("arith.bitcast", &[i(0x3F80_0000)], I32, F32), f(1.0));
    assert_eq!(ev("arith.bitcast", &[i(0xDEAD_BEEFu32 as i32 as i64)], I32, F32).as_f64().to_bits(), {
        (f32::from_bits(0xDEAD_BEEF) as f64).to_bits()
    });
    assert_eq!(ev("arith.bitcast", &[f(1.0)], F64, I64), i(0x3FF0_0000_0000_0000));
    assert_eq!(ev("arith.bitcast", &[i(0x3FF0_0000_0000_0000)], I64, F64), f(1.0));
    assert_eq!(ev("arith.bitcast", &[i(-1)], I64, INDEX), i(-1));
    let error = evaluate("arith.bitcast", None, &[f(1.0)], F32, I64).unwrap_err();
    assert!(error.contains("width"), "{error}");
}

#[test]
fn undefined_results_are_flagged_with_hats_value() {
    // MIN / -1: wraps to MIN, undefined; every other quotient is defined.
    for name in ["arith.divsi", "arith.ceildivsi", "arith.floordivsi"] {
        assert!(undefined(name, &[i(-128), i(-1)], I8, I8), "{name}");
        assert_eq!(bin(name, -128, -1, I8), -128, "{name}");
        assert!(undefined(name, &[i(i64::MIN), i(-1)], I64, I64), "{name}");
        assert!(!undefined(name, &[i(-127), i(-1)], I8, I8), "{name}");
        assert!(!undefined(name, &[i(-128), i(-128)], I8, I8), "{name}");
        // i1: -1 / -1 is 1, which i1 cannot hold.
        assert!(undefined(name, &[i(1), i(1)], I1, I1), "{name}");
    }
    assert!(!undefined("arith.remsi", &[i(-128), i(-1)], I8, I8));
    assert_eq!(bin("arith.ceildivsi", -128, -128, I8), 1);
    // Shifts by the width or more: 0, undefined; one less is defined.
    for name in ["arith.shli", "arith.shrsi", "arith.shrui"] {
        assert!(undefined(name, &[i(-8), i(8)], I8, I8), "{name}");
        assert!(undefined(name, &[i(-8), i(-1)], I8, I8), "{name}");
        assert!(!undefined(name, &[i(-8), i(7)], I8, I8), "{name}");
        assert!(undefined(name, &[i(1), i(1)], I1, I1), "{name}");
        assert!(!undefined(name, &[i(1), i(0)], I1, I1), "{name}");
        assert!(undefined(name, &[i(1), i(64)], INDEX, INDEX), "{name}");
    }
    // fptosi/fptoui: NaN, infinities and values out of range (after rounding toward zero).
    assert!(undefined("arith.fptosi", &[f(f64::NAN)], F32, I32));
    assert!(undefined("arith.fptosi", &[f(f64::INFINITY)], F64, I64));
    assert!(undefined("arith.fptosi", &[f(128.0)], F32, I8));
    assert!(!undefined("arith.fptosi", &[f(127.9)], F32, I8));
    assert!(!undefined("arith.fptosi", &[f(-128.9)], F32, I8));
    assert!(undefined("arith.fptosi", &[f(-129.0)], F32, I8));
    assert!(undefined("arith.fptosi", &[f(9223372036854775808.0)], F64, I64));
    assert_eq!(ev("arith.fptosi", &[f(9223372036854775808.0)], F64, I64), i(i64::MAX));
    assert!(!undefined("arith.fptosi", &[f(-9223372036854775808.0)], F64, I64));
    assert!(!undefined("arith.fptosi", &[f(-1.5)], F32, I1));
    assert!(undefined("arith.fptosi", &[f(1.0)], F32, I1));
    assert_eq!(ev("arith.fptosi", &[f(1.0)], F32, I1), i(0));
    assert!(!undefined("arith.fptoui", &[f(-0.5)], F32, I8));
    assert_eq!(ev("arith.fptoui", &[f(-0.5)], F32, I8), i(0));
    assert!(undefined("arith.fptoui", &[f(-1.0)], F32, I8));
    assert!(!undefined("arith.fptoui", &[f(255.9)], F64, I8));
    assert!(undefined("arith.fptoui", &[f(256.0)], F64, I8));
    assert!(undefined("arith.fptoui", &[f(18446744073709551616.0)], F64, I64));
    assert_eq!(ev("arith.fptoui", &[f(18446744073709551616.0)], F64, I64), i(-1));
    assert!(undefined("arith.fptoui", &[f(f64::NAN)], F64, I64));
    // Wrapping arithmetic is defined.
    assert!(!undefined("arith.addi", &[i(i64::MAX), i(1)], I64, I64));
    assert!(!undefined("math.absi", &[i(i64::MIN)], I64, I64));
    assert_eq!(evaluation("arith.addi", &[i(1), i(2)], I32, I32).defined_value(), Some(i(3)));
    assert_eq!(evaluation("arith.shli", &[i(1), i(32)], I32, I32).defined_value(), None);
}

#[test]
fn division_by_zero_is_an_error() {
    for name in ["arith.divsi", "arith.divui", "arith.ceildivsi", "arith.floordivsi", "arith.remsi", "arith.remui"] {
        let op = ScalarOp::from_name(name, None).unwrap();
        assert!(op.can_fail());
        assert_eq!(op.evaluate(&[i(1), i(0)], I1, I1), Err(ScalarError::DivisionByZero { op: op.name() }));
        assert_eq!(op.evaluate(&[i(i64::MIN), i(0)], INDEX, INDEX), Err(ScalarError::DivisionByZero { op: op.name() }));
    }
    assert_eq!(
        evaluate("arith.remui", None, &[i(1), i(0)], I8, I8).unwrap_err(),
        "integer remainder by zero ('arith.remui')"
    );
    assert_eq!(
        evaluate("arith.floordivsi", None, &[i(1), i(0)], I8, I8).unwrap_err(),
        "integer division by zero ('arith.floordivsi')"
    );
    assert!(!ScalarOp::AddI.can_fail() && !ScalarOp::DivF.can_fail());
}

#[test]
fn i1_reads_signed_as_minus_one() {
    assert_eq!(bin("arith.divsi", 1, 1, I1), 1, "-1 / -1 wraps to -1");
    assert_eq!(bin("arith.remsi", 1, 1, I1), 0);
    assert_eq!(bin("arith.divui", 1, 1, I1), 1);
    assert_eq!(bin("arith.minsi", 1, 0, I1), 1);
    assert_eq!(bin("arith.minui", 1, 0, I1), 0);
    assert_eq!(bin("arith.shrsi", 1, 0, I1), 1);
    assert_eq!(bin("arith.subi", 0, 1, I1), 1);
    assert_eq!(ev("math.absi", &[i(1)], I1, I1), i(1));
    assert_eq!(ev("arith.sitofp", &[i(1)], I1, F64), f(-1.0));
    assert_eq!(ev("arith.uitofp", &[i(1)], I1, F64), f(1.0));
    assert!(cmpi(2, 1, 0, I1), "slt: -1 < 0");
    assert!(cmpi(4, 0, 1, I1), "sgt: 0 > -1");
    assert!(cmpi(6, 0, 1, I1), "ult: 0 < 1");
    // Results are 0 or 1, whatever the input's high bits.
    assert_eq!(bin("arith.andi", -1, -1, I1), 1);
    assert_eq!(bin("arith.ori", 2, 0, I1), 0);
}

#[test]
fn integers_of_any_width_up_to_64() {
    let i3 = ScalarType::integer(3).unwrap();
    let i24 = ScalarType::integer(24).unwrap();
    assert_eq!(bin("arith.addi", 3, 1, i3), -4);
    assert_eq!(bin("arith.muli", 3, 3, i3), 1);
    assert_eq!(bin("arith.divui", -1, 2, i3), 3);
    assert_eq!(bin("arith.shrui", -1, 1, i3), 3);
    assert_eq!(bin("arith.shrsi", -4, 2, i3), -1);
    assert!(undefined("arith.shli", &[i(1), i(3)], i3, i3));
    assert!(undefined("arith.divsi", &[i(-4), i(-1)], i3, i3));
    assert_eq!(bin("arith.addi", 0x7F_FFFF, 1, i24), -0x80_0000);
    assert_eq!(ev("arith.extui", &[i(-1)], i3, I8), i(7));
    assert_eq!(ev("arith.trunci", &[i(13)], I8, i3), i(-3));
    assert_eq!(ev("arith.fptosi", &[f(3.5)], F32, i3), i(3));
    assert!(undefined("arith.fptosi", &[f(4.0)], F32, i3));
    assert!(cmpi(2, 4, 3, i3), "4 is -4 in i3");
    assert_eq!(ScalarType::integer(0), None);
    assert_eq!(ScalarType::integer(65), None);
    assert_eq!(i24.to_string(), "i24");
    assert_eq!(ScalarType::INDEX.to_string(), "index");
}

#[test]
fn nan_results_do_not_depend_on_the_host() {
    let canonical = 0x7FC0_0000;
    let negative_payload = f(super::widen(f32::from_bits(0xFFC0_0001)));
    // Invalid operations on numbers give the canonical quiet NaN.
    assert_eq!(bits32(ev("arith.subf", &[f(f64::INFINITY), f(f64::INFINITY)], F32, F32)), canonical);
    assert_eq!(bits32(ev("arith.divf", &[f(0.0), f(0.0)], F32, F32)), canonical);
    assert_eq!(bits32(ev("arith.mulf", &[f(0.0), f(f64::INFINITY)], F32, F32)), canonical);
    assert_eq!(bits32(ev("arith.remf", &[f(1.0), f(0.0)], F32, F32)), canonical);
    assert_eq!(bits32(ev("math.sqrt", &[f(-1.0)], F32, F32)), canonical);
    assert_eq!(bits32(ev("math.log", &[f(-1.0)], F32, F32)), canonical);
    assert_eq!(ev("arith.divf", &[f(0.0), f(0.0)], F64, F64).as_f64().to_bits(), 0x7FF8_0000_0000_0000);
    // A NaN operand propagates: the first one, sign and payload kept.
    assert_eq!(bits32(ev("arith.addf", &[f(1.0), negative_payload], F32, F32)), 0xFFC0_0001);
    assert_eq!(bits32(ev("arith.addf", &[negative_payload, f(f64::NAN)], F32, F32)), 0xFFC0_0001);
    assert_eq!(bits32(ev("arith.maximumf", &[f(1.0), negative_payload], F32, F32)), 0xFFC0_0001);
    assert_eq!(bits32(ev("arith.minimumf", &[negative_payload, f(1.0)], F32, F32)), 0xFFC0_0001);
    assert_eq!(bits32(ev("math.floor", &[negative_payload], F32, F32)), 0xFFC0_0001);
    assert_eq!(bits32(ev("arith.truncf", &[negative_payload], F64, F32)), 0xFFC0_0001);
    // A result that is not NaN stays, NaN operand or not.
    assert_eq!(ev("math.powf", &[f(1.0), f(f64::NAN)], F32, F32), f(1.0));
    assert_eq!(ev("math.powf", &[f(f64::NAN), f(0.0)], F64, F64), f(1.0));
    assert_eq!(ev("arith.maxnumf", &[f(f64::NAN), f(2.0)], F32, F32), f(2.0));
    // negf and absf change the sign bit only.
    assert_eq!(bits32(ev("arith.negf", &[f(f64::NAN)], F32, F32)), 0xFFC0_0000);
    assert_eq!(bits32(ev("math.absf", &[negative_payload], F32, F32)), 0x7FC0_0001);
}

#[test]
fn signed_zeros() {
    let negative = |v: Scalar| v.as_f64() == 0.0 && v.as_f64().is_sign_negative();
    assert!(negative(ev("arith.minimumf", &[f(0.0), f(-0.0)], F32, F32)));
    assert!(!negative(ev("arith.maximumf", &[f(-0.0), f(0.0)], F64, F64)));
    assert!(negative(ev("arith.minnumf", &[f(0.0), f(-0.0)], F32, F32)));
    assert!(!negative(ev("arith.maxnumf", &[f(-0.0), f(0.0)], F32, F32)));
    assert!(!negative(ev("arith.addf", &[f(-0.0), f(0.0)], F32, F32)));
    assert!(negative(ev("arith.addf", &[f(-0.0), f(-0.0)], F32, F32)));
    assert!(cmpf(1, -0.0, 0.0), "-0 == +0");
}

#[test]
fn predicates_number_name_swap_and_negate() {
    for (n, p) in IntPredicate::ALL.into_iter().enumerate() {
        assert_eq!(p.to_i64(), n as i64);
        assert_eq!(IntPredicate::from_i64(n as i64), Some(p));
        assert_eq!(IntPredicate::from_name(p.name()), Some(p));
        assert_eq!(p.swapped().swapped(), p);
        assert_eq!(p.negated().negated(), p);
        assert!(!(p.is_signed() && p.is_unsigned()));
    }
    for (n, p) in FloatPredicate::ALL.into_iter().enumerate() {
        assert_eq!(p.to_i64(), n as i64);
        assert_eq!(FloatPredicate::from_i64(n as i64), Some(p));
        assert_eq!(FloatPredicate::from_name(p.name()), Some(p));
        assert_eq!(p.swapped().swapped(), p);
        assert_eq!(p.negated().negated(), p);
    }
    assert_eq!(IntPredicate::from_i64(10), None);
    assert_eq!(IntPredicate::from_i64(-1), None);
    assert_eq!(FloatPredicate::from_i64(16), None);
    assert_eq!(IntPredicate::from_name("lt"), None);
    assert_eq!(IntPredicate::Slt.name(), "slt");
    assert_eq!(FloatPredicate::Uno.name(), "uno");
    assert_eq!(IntPredicate::Slt.swapped(), IntPredicate::Sgt);
    assert_eq!(IntPredicate::Ule.negated(), IntPredicate::Ugt);
    assert_eq!(FloatPredicate::Olt.swapped(), FloatPredicate::Ogt);
    assert_eq!(FloatPredicate::Oeq.negated(), FloatPredicate::Une);
    assert_eq!(FloatPredicate::Ord.negated(), FloatPredicate::Uno);
    let reflexive: Vec<_> = IntPredicate::ALL.into_iter().filter(|p| p.is_reflexive()).map(|p| p.name()).collect();
    assert_eq!(reflexive, ["eq", "sle", "sge", "ule", "uge"]);
    let unordered: Vec<_> = FloatPredicate::ALL.into_iter().filter(|p| p.is_unordered()).map(|p| p.name()).collect();
    assert_eq!(unordered, ["ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]);
}

#[test]
fn swap_and_negate_hold_on_every_operand_pair() {
    let ints = [0u64, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFF_FFFF, 0x8000_0000, u64::MAX, 1 << 63];
    for width in [1, 8, 32, 64] {
        for p in IntPredicate::ALL {
            for a in ints {
                for b in ints {
                    assert_eq!(p.swapped().compare(b, a, width), p.compare(a, b, width), "{p:?} {a} {b} i{width}");
                    assert_eq!(p.negated().compare(a, b, width), !p.compare(a, b, width), "{p:?} {a} {b} i{width}");
                }
            }
        }
    }
    let floats = [0.0, -0.0, 1.0, -1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
    for p in FloatPredicate::ALL {
        for a in floats {
            for b in floats {
                assert_eq!(p.swapped().compare(b, a), p.compare(a, b), "{p:?} {a} {b}");
                assert_eq!(p.negated().compare(a, b), !p.compare(a, b), "{p:?} {a} {b}");
            }
        }
    }
}

#[test]
fn decoding() {
    assert_eq!(ScalarOp::from_name("arith.cmpi", Some(2)), Ok(ScalarOp::CmpI(IntPredicate::Slt)));
    assert_eq!(ScalarOp::from_name("arith.cmpf", Some(4)), Ok(ScalarOp::CmpF(FloatPredicate::Olt)));
    assert_eq!(
        ScalarOp::from_name("arith.cmpf", Some(16)),
        Err(ScalarError::PredicateOutOfRange { op: "arith.cmpf", predicate: 16 })
    );
    assert_eq!(ScalarOp::from_name("arith.cmpi", None), Err(ScalarError::MissingPredicate { op: "arith.cmpi" }));
    assert_eq!(
        ScalarOp::from_name("arith.constant", None).unwrap_err().to_string(),
        "'arith.constant' is not a scalar arith or math op"
    );
    assert!(ScalarOp::is_scalar_op("arith.cmpi"));
    assert!(ScalarOp::is_scalar_op("math.powf"));
    assert!(!ScalarOp::is_scalar_op("buffer.load"));
    assert!(!ScalarOp::is_scalar_op("arith.constant"));
    for op in ScalarOp::WITHOUT_PREDICATE {
        assert_eq!(ScalarOp::from_name(op.name(), None), Ok(op));
        assert!(ScalarOp::is_scalar_op(op.name()));
    }
    for p in IntPredicate::ALL {
        assert_eq!(ScalarOp::from_name("arith.cmpi", Some(p.to_i64())), Ok(ScalarOp::CmpI(p)));
    }
    // Decoding from the IR reads the predicate attribute.
    let mut ctx = crate::context();
    let text = "compute.func @f(%a: f32, %b: f32) {\n  %p = arith.cmpf uge, %a, %b : f32\n  compute.return\n}";
    let module = hat_ir::parse_source(&mut ctx, "decode.hat", text).unwrap();
    let function = ctx.body_ops(module)[0];
    let compare = ctx.body_ops(function)[0];
    assert_eq!(ScalarOp::decode(&ctx, compare), Ok(ScalarOp::CmpF(FloatPredicate::Uge)));
    let ret = ctx.body_ops(function)[1];
    assert!(ScalarOp::decode(&ctx, ret).is_err());
}

#[test]
fn malformed_evaluations_are_errors() {
    assert_eq!(evaluate("arith.addi", None, &[i(1)], I32, I32).unwrap_err(), "'arith.addi' takes 2 operands, got 1");
    assert_eq!(
        evaluate("arith.addi", None, &[f(1.0), f(2.0)], F32, F32).unwrap_err(),
        "'arith.addi' does not take operands of type f32"
    );
    assert_eq!(evaluate("arith.extsi", None, &[i(1)], I8, F32).unwrap_err(), "'arith.extsi' cannot produce f32");
    assert_eq!(evaluate("arith.fptosi", None, &[f(1.0)], F32, F64).unwrap_err(), "'arith.fptosi' cannot produce f64");
    assert_eq!(evaluate("arith.sitofp", None, &[i(1)], I32, I32).unwrap_err(), "'arith.sitofp' cannot produce i32");
    // `apply`, the executor's entry, gives the same messages.
    assert_eq!(ScalarOp::AddI.apply(&[i(1)], I32, I32).unwrap_err(), "'arith.addi' takes 2 operands, got 1");
    assert_eq!(ScalarOp::AddI.apply(&[i(1), i(2)], I32, I32), Ok(i(3)));
    assert_eq!(ScalarOp::ShLI.apply(&[i(1), i(40)], I32, I32), Ok(i(0)), "hat's value of an undefined result");
}

#[test]
fn scalars_and_their_normal_form() {
    assert_eq!(normalize(i(0x1FF), I8), i(-1));
    assert_eq!(normalize(i(3), I1), i(1));
    assert_eq!(normalize(i(-1), I1), i(1));
    assert_eq!(normalize(f(0.1), F32), f(0.1f32 as f64));
    assert_eq!(normalize(i(2), F64), f(2.0));
    assert_eq!(to_bits(i(-1), I16), 0xFFFF);
    assert_eq!(from_bits(0xFFFF, I16), i(-1));
    assert_eq!(from_bits(0xDEAD_BEEF, I32), i(0xDEAD_BEEFu32 as i32 as i64));
    assert_eq!(to_bits(f(1.0), F32), 0x3F80_0000);
    assert_eq!(sign_extend(0x80, 8), -128);
    assert_eq!(sign_extend(3, 1), 1);
    assert!(f(f64::NAN).same_as(f(f64::NAN)));
    assert!(!f(0.0).same_as(f(-0.0)));
    assert!(!i(0).same_as(f(0.0)));
    let mut ctx = hat_ir::Context::new();
    let (f32_type, i1_type) = (ctx.float_type(hat_ir::types::FloatKind::F32), ctx.integer_type(1));
    assert_eq!(ScalarType::of(&ctx, f32_type), Some(F32));
    assert_eq!(ScalarType::of(&ctx, i1_type), Some(I1));
    let two = ctx.float_attr(2.0, f32_type);
    assert_eq!(Scalar::from_attribute(ctx.attribute_kind(two), F32), Some(f(2.0)));
    assert_eq!(Scalar::from_attribute(ctx.attribute_kind(two), I32), None, "a float attribute is no integer");
    let truth = ctx.integer_attr(1, i1_type);
    assert_eq!(Scalar::from_attribute(ctx.attribute_kind(truth), I1), Some(i(1)));
    assert_eq!(Scalar::from_attribute(&hat_ir::AttributeKind::Unit, I32), None);
}
