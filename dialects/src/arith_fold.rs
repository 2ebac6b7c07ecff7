//! Folders of `arith` (registered by [`crate::arith::register`]): constant folding of every
//! binary op, comparison, `select` and cast, and the algebraic identities that need no new op.
//! The rules, and what is deliberately not folded, are written in `docs/rewrites.md`.
//!
//! Integers are folded in the width of their type (`index` is 64 bits): results wrap as the ops
//! do, and a signed op reads its operands sign-extended from that width (`i1`'s `1` is `-1`).
//! Nothing here panics: division by zero, signed division overflow, shifts by the width or more,
//! float-to-integer conversions out of range, widths over 64 bits and the 16-bit float formats
//! are left unfolded.

use hat_ir::rewrite::{FoldContext, FoldFn, FoldResult};
use hat_ir::types::FloatKind;
use hat_ir::{AttributeKind, Context, Op, Type, TypeKind, Value};

/// Registers the folder of every `arith` op that has one.
pub fn register(ctx: &mut Context) {
    let folders: &[(&str, FoldFn)] = &[
        ("arith.addi", fold_addi),
        ("arith.subi", fold_subi),
        ("arith.muli", fold_muli),
        ("arith.divsi", fold_divsi),
        ("arith.divui", fold_divui),
        ("arith.ceildivsi", fold_ceildivsi),
        ("arith.floordivsi", fold_floordivsi),
        ("arith.remsi", fold_remsi),
        ("arith.remui", fold_remui),
        ("arith.andi", fold_andi),
        ("arith.ori", fold_ori),
        ("arith.xori", fold_xori),
        ("arith.shli", fold_shli),
        ("arith.shrsi", fold_shrsi),
        ("arith.shrui", fold_shrui),
        ("arith.maxsi", fold_maxsi),
        ("arith.minsi", fold_minsi),
        ("arith.maxui", fold_maxui),
        ("arith.minui", fold_minui),
        ("arith.addf", fold_addf),
        ("arith.subf", fold_subf),
        ("arith.mulf", fold_mulf),
        ("arith.divf", fold_divf),
        ("arith.remf", fold_remf),
        ("arith.maximumf", fold_maximumf),
        ("arith.minimumf", fold_minimumf),
        ("arith.negf", fold_negf),
        ("arith.cmpi", fold_cmpi),
        ("arith.cmpf", fold_cmpf),
        ("arith.select", fold_select),
        ("arith.index_cast", fold_index_cast),
        ("arith.index_castui", fold_index_castui),
        ("arith.extsi", fold_extsi),
        ("arith.extui", fold_extui),
        ("arith.trunci", fold_trunci),
        ("arith.sitofp", fold_sitofp),
        ("arith.uitofp", fold_uitofp),
        ("arith.fptosi", fold_fptosi),
        ("arith.fptoui", fold_fptoui),
        ("arith.extf", fold_extf),
        ("arith.truncf", fold_truncf),
        ("arith.bitcast", fold_bitcast),
    ];
    for &(name, folder) in folders {
        ctx.register_folder(name, folder);
    }
}

// ----- reading operands ---------------------------------------------------------------------

/// The width of a signless integer or `index` type that folding handles (1 to 64 bits).
fn int_width(ctx: &Context, ty: Type) -> Option<u32> {
    match ctx.type_kind(ty) {
        TypeKind::Integer { width, .. } if (1..=64).contains(width) => Some(*width),
        TypeKind::Index => Some(64),
        _ => None,
    }
}

/// A float format that folding handles exactly (`f32`, `f64`).
fn float_kind(ctx: &Context, ty: Type) -> Option<FloatKind> {
    match ctx.type_kind(ty) {
        TypeKind::Float(kind @ (FloatKind::F32 | FloatKind::F64)) => Some(*kind),
        _ => None,
    }
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// An integer of a given width, as its bits; read signed or unsigned.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Int {
    bits: u64,
    width: u32,
}

impl Int {
    fn new(value: i64, width: u32) -> Int {
        Int { bits: value as u64 & mask(width), width }
    }

    fn unsigned(self) -> u64 {
        self.bits
    }

    fn signed(self) -> i64 {
        let shift = 64 - self.width;
        ((self.bits << shift) as i64) >> shift
    }

    fn is_zero(self) -> bool {
        self.bits == 0
    }

    fn is_one(self) -> bool {
        self.bits == 1
    }

    fn is_all_ones(self) -> bool {
        self.bits == mask(self.width)
    }
}

fn result_type(f: &FoldContext<'_>, op: Op) -> Type {
    let ctx = f.ctx();
    ctx.value_type(ctx.result(op, 0))
}

fn operand(f: &FoldContext<'_>, op: Op, index: usize) -> Value {
    f.ctx().operand(op, index)
}

/// Operand `index` as an integer constant of the width of its type.
fn int_operand(f: &FoldContext<'_>, op: Op, index: usize) -> Option<Int> {
    let width = int_width(f.ctx(), f.ctx().value_type(operand(f, op, index)))?;
    match f.constant_kind(index)? {
        AttributeKind::Integer { value, .. } => Some(Int::new(*value, width)),
        _ => None,
    }
}

/// Operand `index` as a float constant.
fn float_operand(f: &FoldContext<'_>, op: Op, index: usize) -> Option<f64> {
    float_kind(f.ctx(), f.ctx().value_type(operand(f, op, index)))?;
    f.constant_kind(index)?.as_f64()
}

fn int_result(f: &mut FoldContext<'_>, op: Op, value: u64) -> Option<FoldResult> {
    let ty = result_type(f, op);
    Some(FoldResult::Attribute(f.integer_attr(value as i64, ty)))
}

/// A comparison's `i1` result.
fn bool_result(f: &mut FoldContext<'_>, op: Op, value: bool) -> Option<FoldResult> {
    int_result(f, op, value as u64)
}

/// Rounds `value` to the format of `ty` and makes the attribute.
fn float_result(f: &mut FoldContext<'_>, op: Op, value: f64) -> Option<FoldResult> {
    let ty = result_type(f, op);
    float_kind(f.ctx(), ty)?;
    Some(FoldResult::Attribute(f.float_attr(value, ty)))
}

/// A NaN made quiet (its payload and sign kept). The quiet bit of an `f32` NaN widened to `f64`
/// is the `f64` quiet bit.
fn quiet(nan: f64) -> f64 {
    f64::from_bits(nan.to_bits() | 0x0008_0000_0000_0000)
}

/// NaNs as IEEE 754 and LLVM's APFloat make them, so that folding does not depend on the host: a
/// NaN operand propagates (the first one, quieted); an invalid operation on numbers (`inf - inf`,
/// `0 / 0`) gives the canonical quiet NaN (positive, no payload).
fn ieee_nan(a: f64, b: f64, result: f64) -> f64 {
    if a.is_nan() {
        quiet(a)
    } else if b.is_nan() {
        quiet(b)
    } else if result.is_nan() {
        f64::NAN
    } else {
        result
    }
}

/// The operands of the op named `name` that defines `value`, if one does.
fn defined_by<'c>(ctx: &'c Context, value: Value, name: &str) -> Option<&'c [Value]> {
    let def = ctx.defining_op(value)?;
    (ctx.name_str(def) == name).then(|| ctx.operands(def))
}

fn same_value(f: &FoldContext<'_>, op: Op) -> Option<Value> {
    let (a, b) = (operand(f, op, 0), operand(f, op, 1));
    (a == b).then_some(a)
}

// ----- integer binary ops -------------------------------------------------------------------

/// Folds a binary integer op whose operands are both constant, with `compute` (which may refuse).
fn fold_int_constants(f: &mut FoldContext<'_>, op: Op, compute: fn(Int, Int) -> Option<u64>) -> Option<FoldResult> {
    let (a, b) = (int_operand(f, op, 0)?, int_operand(f, op, 1)?);
    let value = compute(a, b)?;
    int_result(f, op, value)
}

/// For a commutative op: the constant operand and the other operand, when exactly one side (or
/// the right one, when both) is a constant.
fn constant_side(f: &FoldContext<'_>, op: Op) -> Option<(Int, Value)> {
    if let Some(b) = int_operand(f, op, 1) {
        return Some((b, operand(f, op, 0)));
    }
    int_operand(f, op, 0).map(|a| (a, operand(f, op, 1)))
}

fn zero(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    int_result(f, op, 0)
}

fn fold_addi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_int_constants(f, op, |a, b| Some(a.unsigned().wrapping_add(b.unsigned()))) {
        return Some(folded);
    }
    if let Some(folded) = match constant_side(f, op) {
        Some((c, x)) if c.is_zero() => Some(FoldResult::Value(x)),
        _ => None,
    } {
        return Some(folded);
    }
    // (a - b) + b → a, b + (a - b) → a.
    let ctx = f.ctx();
    let (lhs, rhs) = (operand(f, op, 0), operand(f, op, 1));
    for (difference, b) in [(lhs, rhs), (rhs, lhs)] {
        if let Some(&[a, subtrahend]) = defined_by(ctx, difference, "arith.subi") {
            if subtrahend == b {
                return Some(FoldResult::Value(a));
            }
        }
    }
    None
}

fn fold_subi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_int_constants(f, op, |a, b| Some(a.unsigned().wrapping_sub(b.unsigned()))) {
        return Some(folded);
    }
    if same_value(f, op).is_some() {
        return zero(f, op);
    }
    if int_operand(f, op, 1).is_some_and(Int::is_zero) {
        return Some(FoldResult::Value(operand(f, op, 0)));
    }
    // (a + b) - b → a, (a + b) - a → b.
    let ctx = f.ctx();
    let (lhs, rhs) = (operand(f, op, 0), operand(f, op, 1));
    match defined_by(ctx, lhs, "arith.addi") {
        Some(&[a, b]) if b == rhs => Some(FoldResult::Value(a)),
        Some(&[a, b]) if a == rhs => Some(FoldResult::Value(b)),
        _ => None,
    }
}

fn fold_muli(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_int_constants(f, op, |a, b| Some(a.unsigned().wrapping_mul(b.unsigned()))) {
        return Some(folded);
    }
    match constant_side(f, op)? {
        (c, _) if c.is_zero() => zero(f, op),
        (c, x) if c.is_one() => Some(FoldResult::Value(x)),
        _ => None,
    }
}

/// The signed range of a width.
fn fits_signed(value: i128, width: u32) -> bool {
    let half = 1i128 << (width - 1);
    (-half..half).contains(&value)
}

/// A signed division with `round` applied to the exact quotient's direction; refuses a zero
/// divisor and a quotient that overflows the width.
fn signed_division(a: Int, b: Int, round: fn(i128, i128) -> i128) -> Option<u64> {
    if b.is_zero() {
        return None;
    }
    let quotient = round(a.signed() as i128, b.signed() as i128);
    fits_signed(quotient, a.width).then_some(quotient as u64)
}

/// `x / 1 → x` for the divisions.
fn divide_by_one(f: &FoldContext<'_>, op: Op) -> Option<FoldResult> {
    match int_operand(f, op, 1) {
        Some(b) if b.is_one() => Some(FoldResult::Value(operand(f, op, 0))),
        _ => None,
    }
}

fn fold_divsi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_constants(f, op, |a, b| signed_division(a, b, |x, y| x / y)).or_else(|| divide_by_one(f, op))
}

fn ceil_division(x: i128, y: i128) -> i128 {
    let q = x / y;
    if x % y != 0 && ((x < 0) == (y < 0)) {
        q + 1
    } else {
        q
    }
}

fn floor_division(x: i128, y: i128) -> i128 {
    let q = x / y;
    if x % y != 0 && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

fn fold_ceildivsi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_constants(f, op, |a, b| signed_division(a, b, ceil_division)).or_else(|| divide_by_one(f, op))
}

fn fold_floordivsi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_constants(f, op, |a, b| signed_division(a, b, floor_division)).or_else(|| divide_by_one(f, op))
}

fn fold_divui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_constants(f, op, |a, b| a.unsigned().checked_div(b.unsigned())).or_else(|| divide_by_one(f, op))
}

/// `x % 1 → 0` for the remainders.
fn remainder_by_one(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    match int_operand(f, op, 1) {
        Some(b) if b.is_one() => zero(f, op),
        _ => None,
    }
}

fn fold_remsi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let remainder = |a: Int, b: Int| {
        // i128 keeps `MIN % -1` (0) from overflowing.
        (!b.is_zero()).then(|| ((a.signed() as i128) % (b.signed() as i128)) as u64)
    };
    if let Some(folded) = fold_int_constants(f, op, remainder) {
        return Some(folded);
    }
    remainder_by_one(f, op)
}

fn fold_remui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_int_constants(f, op, |a, b| a.unsigned().checked_rem(b.unsigned())) {
        return Some(folded);
    }
    remainder_by_one(f, op)
}

fn fold_andi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_int_constants(f, op, |a, b| Some(a.unsigned() & b.unsigned())) {
        return Some(folded);
    }
    if let Some(x) = same_value(f, op) {
        return Some(FoldResult::Value(x));
    }
    match constant_side(f, op) {
        Some((c, _)) if c.is_zero() => return zero(f, op),
        Some((c, x)) if c.is_all_ones() => return Some(FoldResult::Value(x)),
        _ => {}
    }
    absorb(f, op, "arith.andi")
}

/// `x op (x op y) → x op y` (either side, either order) for an idempotent, commutative `op`.
fn absorb(f: &FoldContext<'_>, op: Op, name: &str) -> Option<FoldResult> {
    let ctx = f.ctx();
    let (lhs, rhs) = (operand(f, op, 0), operand(f, op, 1));
    for (x, inner) in [(lhs, rhs), (rhs, lhs)] {
        if defined_by(ctx, inner, name).is_some_and(|operands| operands.contains(&x)) {
            return Some(FoldResult::Value(inner));
        }
    }
    None
}

fn fold_ori(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_int_constants(f, op, |a, b| Some(a.unsigned() | b.unsigned())) {
        return Some(folded);
    }
    if let Some(x) = same_value(f, op) {
        return Some(FoldResult::Value(x));
    }
    match constant_side(f, op) {
        Some((c, x)) if c.is_zero() => return Some(FoldResult::Value(x)),
        Some((c, _)) if c.is_all_ones() => return int_result(f, op, c.unsigned()),
        _ => {}
    }
    absorb(f, op, "arith.ori")
}

fn fold_xori(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_int_constants(f, op, |a, b| Some(a.unsigned() ^ b.unsigned())) {
        return Some(folded);
    }
    if same_value(f, op).is_some() {
        return zero(f, op);
    }
    if let Some((c, x)) = constant_side(f, op) {
        if c.is_zero() {
            return Some(FoldResult::Value(x));
        }
    }
    // (x ^ a) ^ a → x, in any order.
    let ctx = f.ctx();
    let (lhs, rhs) = (operand(f, op, 0), operand(f, op, 1));
    for (inner, a) in [(lhs, rhs), (rhs, lhs)] {
        match defined_by(ctx, inner, "arith.xori") {
            Some(&[x, y]) if y == a => return Some(FoldResult::Value(x)),
            Some(&[x, y]) if x == a => return Some(FoldResult::Value(y)),
            _ => {}
        }
    }
    None
}

/// A shift amount below the width, or `None` (a shift by the width or more is poison).
fn shift_amount(a: Int, b: Int) -> Option<u32> {
    (b.unsigned() < a.width as u64).then_some(b.unsigned() as u32)
}

/// `x shifted by 0 → x`.
fn shift_by_zero(f: &FoldContext<'_>, op: Op) -> Option<FoldResult> {
    match int_operand(f, op, 1) {
        Some(b) if b.is_zero() => Some(FoldResult::Value(operand(f, op, 0))),
        _ => None,
    }
}

fn fold_shli(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_constants(f, op, |a, b| shift_amount(a, b).map(|s| a.unsigned() << s)).or_else(|| shift_by_zero(f, op))
}

fn fold_shrsi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_constants(f, op, |a, b| shift_amount(a, b).map(|s| (a.signed() >> s) as u64))
        .or_else(|| shift_by_zero(f, op))
}

fn fold_shrui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_constants(f, op, |a, b| shift_amount(a, b).map(|s| a.unsigned() >> s)).or_else(|| shift_by_zero(f, op))
}

/// Which constant a min/max absorbs into (`absorbing`: the result is that constant) and which it
/// ignores (`neutral`: the result is the other operand).
#[derive(Copy, Clone)]
struct Bounds {
    absorbing: fn(u32) -> u64,
    neutral: fn(u32) -> u64,
}

fn signed_min(width: u32) -> u64 {
    (1u64 << (width - 1)) & mask(width)
}

fn signed_max(width: u32) -> u64 {
    mask(width) >> 1
}

fn unsigned_max(width: u32) -> u64 {
    mask(width)
}

fn unsigned_min(_: u32) -> u64 {
    0
}

/// A min/max: both constant, `op(x, x) → x`, and the extreme constants of its order.
fn fold_min_max(
    f: &mut FoldContext<'_>,
    op: Op,
    compute: fn(Int, Int) -> Option<u64>,
    bounds: Bounds,
) -> Option<FoldResult> {
    if let Some(folded) = fold_int_constants(f, op, compute) {
        return Some(folded);
    }
    if let Some(x) = same_value(f, op) {
        return Some(FoldResult::Value(x));
    }
    let (c, x) = constant_side(f, op)?;
    if c.bits == (bounds.absorbing)(c.width) {
        return int_result(f, op, c.bits);
    }
    (c.bits == (bounds.neutral)(c.width)).then_some(FoldResult::Value(x))
}

fn fold_maxsi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let bounds = Bounds { absorbing: signed_max, neutral: signed_min };
    fold_min_max(f, op, |a, b| Some(if a.signed() >= b.signed() { a.bits } else { b.bits }), bounds)
}

fn fold_minsi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let bounds = Bounds { absorbing: signed_min, neutral: signed_max };
    fold_min_max(f, op, |a, b| Some(if a.signed() <= b.signed() { a.bits } else { b.bits }), bounds)
}

fn fold_maxui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let bounds = Bounds { absorbing: unsigned_max, neutral: unsigned_min };
    fold_min_max(f, op, |a, b| Some(a.bits.max(b.bits)), bounds)
}

fn fold_minui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let bounds = Bounds { absorbing: unsigned_min, neutral: unsigned_max };
    fold_min_max(f, op, |a, b| Some(a.bits.min(b.bits)), bounds)
}

// ----- float ops ----------------------------------------------------------------------------

/// Computes a binary float op in the result's format: `f32` operations for `f32` (no double
/// rounding), `f64` for `f64`.
fn fold_float_constants(
    f: &mut FoldContext<'_>,
    op: Op,
    compute32: fn(f32, f32) -> f32,
    compute64: fn(f64, f64) -> f64,
) -> Option<FoldResult> {
    let (a, b) = (float_operand(f, op, 0)?, float_operand(f, op, 1)?);
    let value = match float_kind(f.ctx(), result_type(f, op))? {
        FloatKind::F32 => compute32(a as f32, b as f32) as f64,
        _ => compute64(a, b),
    };
    float_result(f, op, ieee_nan(a, b, value))
}

/// Whether operand `index` is the float constant `expected`, sign of zero included.
fn is_float_constant(f: &FoldContext<'_>, op: Op, index: usize, expected: f64) -> bool {
    float_operand(f, op, index).is_some_and(|v| v.to_bits() == expected.to_bits())
}

fn fold_addf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_float_constants(f, op, |a, b| a + b, |a, b| a + b) {
        return Some(folded);
    }
    // x + -0.0 is x for every x (x + +0.0 is not, for x = -0.0).
    if is_float_constant(f, op, 1, -0.0) {
        return Some(FoldResult::Value(operand(f, op, 0)));
    }
    is_float_constant(f, op, 0, -0.0).then(|| FoldResult::Value(operand(f, op, 1)))
}

fn fold_subf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_float_constants(f, op, |a, b| a - b, |a, b| a - b) {
        return Some(folded);
    }
    is_float_constant(f, op, 1, 0.0).then(|| FoldResult::Value(operand(f, op, 0)))
}

fn fold_mulf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_float_constants(f, op, |a, b| a * b, |a, b| a * b) {
        return Some(folded);
    }
    if is_float_constant(f, op, 1, 1.0) {
        return Some(FoldResult::Value(operand(f, op, 0)));
    }
    is_float_constant(f, op, 0, 1.0).then(|| FoldResult::Value(operand(f, op, 1)))
}

fn fold_divf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_float_constants(f, op, |a, b| a / b, |a, b| a / b) {
        return Some(folded);
    }
    is_float_constant(f, op, 1, 1.0).then(|| FoldResult::Value(operand(f, op, 0)))
}

fn fold_remf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_float_constants(f, op, |a, b| a % b, |a, b| a % b)
}

/// IEEE 754-2019 maximum: NaN if either is NaN, and `+0 > -0`.
fn maximum<T: num_like::Float>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        return T::nan();
    }
    if a == b {
        return if a.is_sign_negative() { b } else { a };
    }
    if a > b {
        a
    } else {
        b
    }
}

/// IEEE 754-2019 minimum: NaN if either is NaN, and `-0 < +0`.
fn minimum<T: num_like::Float>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        return T::nan();
    }
    if a == b {
        return if a.is_sign_negative() { a } else { b };
    }
    if a < b {
        a
    } else {
        b
    }
}

mod num_like {
    /// The little of a float type that `maximum` and `minimum` need.
    pub trait Float: Copy + PartialOrd {
        fn is_nan(self) -> bool;
        fn is_sign_negative(self) -> bool;
        fn nan() -> Self;
    }

    impl Float for f32 {
        fn is_nan(self) -> bool {
            f32::is_nan(self)
        }
        fn is_sign_negative(self) -> bool {
            f32::is_sign_negative(self)
        }
        fn nan() -> Self {
            f32::NAN
        }
    }

    impl Float for f64 {
        fn is_nan(self) -> bool {
            f64::is_nan(self)
        }
        fn is_sign_negative(self) -> bool {
            f64::is_sign_negative(self)
        }
        fn nan() -> Self {
            f64::NAN
        }
    }
}

fn fold_maximumf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_float_constants(f, op, maximum, maximum).or_else(|| same_value(f, op).map(FoldResult::Value))
}

fn fold_minimumf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_float_constants(f, op, minimum, minimum).or_else(|| same_value(f, op).map(FoldResult::Value))
}

fn fold_negf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let a = float_operand(f, op, 0)?;
    // Negation flips the sign bit, of a NaN too.
    float_result(f, op, -a)
}

// ----- comparisons --------------------------------------------------------------------------

fn predicate(f: &FoldContext<'_>, op: Op) -> Option<i64> {
    crate::arith::predicate(f.ctx(), op)
}

/// `cmpi` predicates, in MLIR's numbering: eq ne slt sle sgt sge ult ule ugt uge.
fn compare_ints(predicate: i64, a: Int, b: Int) -> Option<bool> {
    let (sa, sb, ua, ub) = (a.signed(), b.signed(), a.unsigned(), b.unsigned());
    Some(match predicate {
        0 => ua == ub,
        1 => ua != ub,
        2 => sa < sb,
        3 => sa <= sb,
        4 => sa > sb,
        5 => sa >= sb,
        6 => ua < ub,
        7 => ua <= ub,
        8 => ua > ub,
        9 => ua >= ub,
        _ => return None,
    })
}

fn fold_cmpi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let predicate = predicate(f, op)?;
    if let (Some(a), Some(b)) = (int_operand(f, op, 0), int_operand(f, op, 1)) {
        let value = compare_ints(predicate, a, b)?;
        return bool_result(f, op, value);
    }
    if same_value(f, op).is_some() {
        // x == x, x <= x, x >= x hold; x != x, x < x, x > x do not.
        let value = match predicate {
            0 | 3 | 5 | 7 | 9 => true,
            1 | 2 | 4 | 6 | 8 => false,
            _ => return None,
        };
        return bool_result(f, op, value);
    }
    // On i1: x != false and x == true are x.
    let lhs = operand(f, op, 0);
    let is_i1 = matches!(f.ctx().type_kind(f.ctx().value_type(lhs)), TypeKind::Integer { width: 1, .. });
    match (is_i1, predicate, int_operand(f, op, 1)) {
        (true, 1, Some(b)) if b.is_zero() => Some(FoldResult::Value(lhs)),
        (true, 0, Some(b)) if b.is_one() => Some(FoldResult::Value(lhs)),
        _ => None,
    }
}

/// `cmpf` predicates, in MLIR's numbering: false oeq ogt oge olt ole one ord ueq ugt uge ult ule
/// une uno true. Ordered predicates are false when either side is NaN, unordered ones true.
fn compare_floats(predicate: i64, a: f64, b: f64) -> Option<bool> {
    let ordered = !a.is_nan() && !b.is_nan();
    Some(match predicate {
        0 => false,
        1 => ordered && a == b,
        2 => ordered && a > b,
        3 => ordered && a >= b,
        4 => ordered && a < b,
        5 => ordered && a <= b,
        6 => ordered && a != b,
        7 => ordered,
        8 => !ordered || a == b,
        9 => !ordered || a > b,
        10 => !ordered || a >= b,
        11 => !ordered || a < b,
        12 => !ordered || a <= b,
        13 => !ordered || a != b,
        14 => !ordered,
        15 => true,
        _ => return None,
    })
}

fn fold_cmpf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let predicate = predicate(f, op)?;
    match predicate {
        0 => return bool_result(f, op, false),
        15 => return bool_result(f, op, true),
        _ => {}
    }
    let (a, b) = (f.constant_kind(0).and_then(|k| k.as_f64()), f.constant_kind(1).and_then(|k| k.as_f64()));
    // A NaN on either side decides every predicate, whatever the other side is.
    let (a, b) = match (a, b) {
        (Some(x), _) | (_, Some(x)) if x.is_nan() => (x, x),
        (Some(a), Some(b)) => (a, b),
        _ => return None,
    };
    let value = compare_floats(predicate, a, b)?;
    bool_result(f, op, value)
}

// ----- select -------------------------------------------------------------------------------

fn fold_select(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let (on_true, on_false) = (operand(f, op, 1), operand(f, op, 2));
    if let Some(condition) = int_operand(f, op, 0) {
        return Some(FoldResult::Value(if condition.is_zero() { on_false } else { on_true }));
    }
    if on_true == on_false {
        return Some(FoldResult::Value(on_true));
    }
    // select(c, true, false) : i1 is c.
    let is_i1 = int_width(f.ctx(), result_type(f, op)) == Some(1)
        && matches!(f.ctx().type_kind(result_type(f, op)), TypeKind::Integer { .. });
    if is_i1 && int_operand(f, op, 1).is_some_and(Int::is_one) && int_operand(f, op, 2).is_some_and(Int::is_zero) {
        return Some(FoldResult::Value(operand(f, op, 0)));
    }
    None
}

// ----- casts --------------------------------------------------------------------------------

/// `cast(cast(x)) → x` when the outer cast undoes the inner one: the inner op is named `inner`
/// and `x` has the outer result's type.
fn undo_cast(f: &FoldContext<'_>, op: Op, inner: &[&str]) -> Option<FoldResult> {
    let ctx = f.ctx();
    let def = ctx.defining_op(operand(f, op, 0))?;
    if !inner.contains(&ctx.name_str(def)) || ctx.operands(def).len() != 1 {
        return None;
    }
    let source = ctx.operand(def, 0);
    (ctx.value_type(source) == result_type(f, op)).then_some(FoldResult::Value(source))
}

/// An integer cast of a constant: `signed` reads the operand sign-extended, else zero-extended;
/// the result is truncated to its width.
fn fold_int_cast(f: &mut FoldContext<'_>, op: Op, signed: bool) -> Option<FoldResult> {
    int_width(f.ctx(), result_type(f, op))?;
    let a = int_operand(f, op, 0)?;
    let value = if signed { a.signed() as u64 } else { a.unsigned() };
    int_result(f, op, value)
}

fn fold_index_cast(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_cast(f, op, true).or_else(|| undo_cast(f, op, &["arith.index_cast"]))
}

fn fold_index_castui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_cast(f, op, false).or_else(|| undo_cast(f, op, &["arith.index_castui"]))
}

fn fold_extsi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_cast(f, op, true)
}

fn fold_extui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_cast(f, op, false)
}

fn fold_trunci(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_int_cast(f, op, false).or_else(|| undo_cast(f, op, &["arith.extsi", "arith.extui"]))
}

/// An integer converted to the result's float format (one rounding, from the integer itself).
fn int_to_float(f: &mut FoldContext<'_>, op: Op, signed: bool) -> Option<FoldResult> {
    let a = int_operand(f, op, 0)?;
    let value = match (float_kind(f.ctx(), result_type(f, op))?, signed) {
        (FloatKind::F32, true) => a.signed() as f32 as f64,
        (FloatKind::F32, false) => a.unsigned() as f32 as f64,
        (_, true) => a.signed() as f64,
        (_, false) => a.unsigned() as f64,
    };
    float_result(f, op, value)
}

fn fold_sitofp(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    int_to_float(f, op, true)
}

fn fold_uitofp(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    int_to_float(f, op, false)
}

/// A float truncated toward zero to the result's integer type; `None` for NaN, infinities and
/// values out of range (poison).
fn float_to_int(f: &mut FoldContext<'_>, op: Op, signed: bool) -> Option<FoldResult> {
    let a = float_operand(f, op, 0)?;
    let width = int_width(f.ctx(), result_type(f, op))?;
    if !a.is_finite() {
        return None;
    }
    let truncated = a.trunc();
    let bits = if signed {
        let half = 2f64.powi(width as i32 - 1);
        if truncated < -half || truncated >= half {
            return None;
        }
        truncated as i64 as u64
    } else {
        if truncated < 0.0 || truncated >= 2f64.powi(width as i32) {
            return None;
        }
        truncated as u64
    };
    int_result(f, op, bits)
}

fn fold_fptosi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    float_to_int(f, op, true)
}

fn fold_fptoui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    float_to_int(f, op, false)
}

fn fold_extf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let a = float_operand(f, op, 0)?;
    float_result(f, op, a)
}

fn fold_truncf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let a = float_operand(f, op, 0)?;
    // Only exact conversions: the rounding mode at run time is not known to be to-nearest (MLIR
    // folds the same way).
    let exact = a.is_nan() || (a as f32) as f64 == a;
    exact.then(|| float_result(f, op, a)).flatten()
}

fn fold_bitcast(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let to = result_type(f, op);
    if let Some(folded) = undo_cast(f, op, &["arith.bitcast"]) {
        return Some(folded);
    }
    let from = f.ctx().value_type(operand(f, op, 0));
    if let Some(a) = int_operand(f, op, 0) {
        return match (float_kind(f.ctx(), to), a.width) {
            (Some(FloatKind::F32), 32) => float_result(f, op, f32::from_bits(a.unsigned() as u32) as f64),
            (Some(FloatKind::F64), 64) => float_result(f, op, f64::from_bits(a.unsigned())),
            (None, _) if int_width(f.ctx(), to) == Some(a.width) => int_result(f, op, a.unsigned()),
            _ => None,
        };
    }
    let a = float_operand(f, op, 0)?;
    match (float_kind(f.ctx(), from)?, int_width(f.ctx(), to)) {
        (FloatKind::F32, Some(32)) => int_result(f, op, (a as f32).to_bits() as u64),
        (FloatKind::F64, Some(64)) => int_result(f, op, a.to_bits()),
        (kind, None) if float_kind(f.ctx(), to) == Some(kind) => float_result(f, op, a),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use hat_ir::printer::attribute_to_string;
    use hat_ir::rewrite::{fold_op, FoldResult};
    use hat_ir::ValueDef;

    const ARGUMENTS: [&str; 6] = ["%x", "%y", "%p", "%f", "%i", "%b"];

    /// Folds the last op of `body` (in a function with `%x, %y: i32`, `%p: i1`, `%f: f32`,
    /// `%i: index`, `%b: i8`): the constant it folds to, or the argument (`%x`) or op (`#k`, the
    /// k-th op of the body) whose value it is; `None` when it does not fold.
    fn fold(body: &str) -> Option<String> {
        let text = format!(
            "compute.func @f(%x: i32, %y: i32, %p: i1, %f: f32, %i: index, %b: i8) {{\n{body}\n  compute.return\n}}"
        );
        let mut ctx = crate::context();
        let module = hat_ir::parse_source(&mut ctx, "fold.hat", &text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        assert!(hat_ir::verify(&ctx, module).is_empty(), "{text}");
        let function = ctx.body_ops(module)[0];
        let ops = ctx.body_ops(function);
        let op = ops[ops.len() - 2];
        Some(match fold_op(&mut ctx, op)? {
            FoldResult::Attribute(value) => attribute_to_string(&ctx, value),
            FoldResult::Value(value) => match ctx.value_def(value) {
                ValueDef::BlockArgument { index, .. } => ARGUMENTS[index as usize].to_string(),
                ValueDef::Result { op, .. } => format!("#{}", ops.iter().position(|&o| o == op).unwrap()),
            },
        })
    }

    fn constants(list: &[(&str, &str)]) -> String {
        list.iter().map(|(name, value)| format!("  {name} = arith.constant {value}\n")).collect()
    }

    fn binary(op: &str, a: &str, b: &str, ty: &str) -> Option<String> {
        let body = format!("{}  %r = arith.{op} %a, %c : {ty}", constants(&[("%a", a), ("%c", b)]));
        fold(&body)
    }

    fn with_x(op: &str, constant: &str, x_first: bool) -> Option<String> {
        let (a, b) = if x_first { ("%x", "%c") } else { ("%c", "%x") };
        fold(&format!("{}  %r = arith.{op} {a}, {b} : i32", constants(&[("%c", constant)])))
    }

    fn some(text: &str) -> Option<String> {
        Some(text.to_string())
    }

    #[test]
    fn integer_arithmetic_wraps_in_the_width() {
        assert_eq!(binary("addi", "7 : i32", "8 : i32", "i32"), some("15 : i32"));
        assert_eq!(binary("addi", "100 : i8", "100 : i8", "i8"), some("-56 : i8"));
        assert_eq!(binary("subi", "-128 : i8", "1 : i8", "i8"), some("127 : i8"));
        assert_eq!(binary("muli", "65536 : i32", "65536 : i32", "i32"), some("0 : i32"));
        assert_eq!(binary("addi", "true", "true", "i1"), some("false"));
        assert_eq!(binary("muli", "-1 : index", "-1 : index", "index"), some("1 : index"));
    }

    #[test]
    fn divisions_refuse_zero_and_overflow() {
        assert_eq!(binary("divsi", "7 : i32", "0 : i32", "i32"), None);
        assert_eq!(binary("divui", "7 : i32", "0 : i32", "i32"), None);
        assert_eq!(binary("remsi", "7 : i32", "0 : i32", "i32"), None);
        assert_eq!(binary("remui", "7 : i32", "0 : i32", "i32"), None);
        assert_eq!(binary("ceildivsi", "7 : i32", "0 : i32", "i32"), None);
        assert_eq!(binary("floordivsi", "7 : i32", "0 : i32", "i32"), None);
        assert_eq!(binary("divsi", "-128 : i8", "-1 : i8", "i8"), None);
        assert_eq!(binary("divsi", "-9223372036854775808 : i64", "-1 : i64", "i64"), None);
        assert_eq!(binary("remsi", "-128 : i8", "-1 : i8", "i8"), some("0 : i8"));
        assert_eq!(binary("divsi", "-7 : i32", "2 : i32", "i32"), some("-3 : i32"));
        assert_eq!(binary("ceildivsi", "-7 : i32", "2 : i32", "i32"), some("-3 : i32"));
        assert_eq!(binary("ceildivsi", "7 : i32", "2 : i32", "i32"), some("4 : i32"));
        assert_eq!(binary("floordivsi", "-7 : i32", "2 : i32", "i32"), some("-4 : i32"));
        assert_eq!(binary("floordivsi", "7 : i32", "-2 : i32", "i32"), some("-4 : i32"));
        assert_eq!(binary("remsi", "-7 : i32", "2 : i32", "i32"), some("-1 : i32"));
        assert_eq!(binary("divui", "-1 : i8", "2 : i8", "i8"), some("127 : i8"));
        assert_eq!(binary("remui", "-1 : i8", "10 : i8", "i8"), some("5 : i8"));
    }

    #[test]
    fn shifts_bitwise_and_min_max() {
        assert_eq!(binary("shli", "1 : i32", "31 : i32", "i32"), some("-2147483648 : i32"));
        assert_eq!(binary("shli", "1 : i32", "32 : i32", "i32"), None);
        assert_eq!(binary("shrsi", "-8 : i8", "1 : i8", "i8"), some("-4 : i8"));
        assert_eq!(binary("shrui", "-8 : i8", "1 : i8", "i8"), some("124 : i8"));
        assert_eq!(binary("shrui", "-8 : i8", "-1 : i8", "i8"), None);
        assert_eq!(binary("andi", "12 : i32", "10 : i32", "i32"), some("8 : i32"));
        assert_eq!(binary("ori", "12 : i32", "10 : i32", "i32"), some("14 : i32"));
        assert_eq!(binary("xori", "12 : i32", "10 : i32", "i32"), some("6 : i32"));
        assert_eq!(binary("maxsi", "3 : i32", "-5 : i32", "i32"), some("3 : i32"));
        assert_eq!(binary("maxui", "3 : i32", "-5 : i32", "i32"), some("-5 : i32"));
        assert_eq!(binary("minsi", "3 : i32", "-5 : i32", "i32"), some("-5 : i32"));
        assert_eq!(binary("minui", "3 : i32", "-5 : i32", "i32"), some("3 : i32"));
    }

    #[test]
    fn integer_identities() {
        assert_eq!(with_x("addi", "0 : i32", true), some("%x"));
        assert_eq!(with_x("addi", "0 : i32", false), some("%x"));
        assert_eq!(with_x("subi", "0 : i32", true), some("%x"));
        assert_eq!(with_x("subi", "0 : i32", false), None);
        assert_eq!(with_x("muli", "1 : i32", false), some("%x"));
        assert_eq!(with_x("muli", "0 : i32", true), some("0 : i32"));
        assert_eq!(with_x("divsi", "1 : i32", true), some("%x"));
        assert_eq!(with_x("divui", "1 : i32", true), some("%x"));
        assert_eq!(with_x("remsi", "1 : i32", true), some("0 : i32"));
        assert_eq!(with_x("andi", "0 : i32", true), some("0 : i32"));
        assert_eq!(with_x("andi", "-1 : i32", true), some("%x"));
        assert_eq!(with_x("ori", "0 : i32", false), some("%x"));
        assert_eq!(with_x("ori", "-1 : i32", true), some("-1 : i32"));
        assert_eq!(with_x("xori", "0 : i32", true), some("%x"));
        assert_eq!(with_x("shli", "0 : i32", true), some("%x"));
        assert_eq!(with_x("minui", "0 : i32", true), some("0 : i32"));
        assert_eq!(with_x("maxui", "0 : i32", true), some("%x"));
        assert_eq!(with_x("maxsi", "-2147483648 : i32", true), some("%x"));
        assert_eq!(with_x("maxsi", "2147483647 : i32", true), some("2147483647 : i32"));
        assert_eq!(with_x("minsi", "2147483647 : i32", false), some("%x"));
        for op in ["subi", "xori"] {
            assert_eq!(fold(&format!("  %r = arith.{op} %x, %x : i32")), some("0 : i32"), "{op}");
        }
        for op in ["andi", "ori", "maxsi", "minsi", "maxui", "minui"] {
            assert_eq!(fold(&format!("  %r = arith.{op} %x, %x : i32")), some("%x"), "{op}");
        }
        assert_eq!(fold("  %r = arith.addi %x, %y : i32"), None);
    }

    #[test]
    fn inverse_operations() {
        assert_eq!(fold("  %s = arith.subi %x, %y : i32\n  %r = arith.addi %s, %y : i32"), some("%x"));
        assert_eq!(fold("  %s = arith.subi %x, %y : i32\n  %r = arith.addi %y, %s : i32"), some("%x"));
        assert_eq!(fold("  %s = arith.addi %x, %y : i32\n  %r = arith.subi %s, %y : i32"), some("%x"));
        assert_eq!(fold("  %s = arith.addi %x, %y : i32\n  %r = arith.subi %s, %x : i32"), some("%y"));
        assert_eq!(fold("  %s = arith.xori %x, %y : i32\n  %r = arith.xori %s, %y : i32"), some("%x"));
        assert_eq!(fold("  %s = arith.xori %x, %y : i32\n  %r = arith.xori %x, %s : i32"), some("%y"));
        assert_eq!(fold("  %s = arith.andi %x, %y : i32\n  %r = arith.andi %x, %s : i32"), some("#0"));
        assert_eq!(fold("  %s = arith.ori %x, %y : i32\n  %r = arith.ori %s, %y : i32"), some("#0"));
        assert_eq!(fold("  %s = arith.addi %x, %y : i32\n  %r = arith.subi %s, %s : i32"), some("0 : i32"));
    }

    #[test]
    fn comparisons() {
        let cmpi = |predicate: &str, a: &str, b: &str| {
            fold(&format!("{}  %r = arith.cmpi {predicate}, %a, %c : i32", constants(&[("%a", a), ("%c", b)])))
        };
        assert_eq!(cmpi("slt", "-1 : i32", "0 : i32"), some("true"));
        assert_eq!(cmpi("ult", "-1 : i32", "0 : i32"), some("false"));
        assert_eq!(cmpi("uge", "-1 : i32", "0 : i32"), some("true"));
        assert_eq!(cmpi("eq", "5 : i32", "5 : i32"), some("true"));
        assert_eq!(cmpi("ne", "5 : i32", "5 : i32"), some("false"));
        for (predicate, expected) in
            [("eq", "true"), ("sle", "true"), ("uge", "true"), ("ne", "false"), ("sgt", "false")]
        {
            assert_eq!(fold(&format!("  %r = arith.cmpi {predicate}, %x, %x : i32")), some(expected), "{predicate}");
        }
        assert_eq!(fold("  %r = arith.cmpi slt, %x, %y : i32"), None);
        assert_eq!(fold("  %false = arith.constant false\n  %r = arith.cmpi ne, %p, %false : i1"), some("%p"));
        assert_eq!(fold("  %true = arith.constant true\n  %r = arith.cmpi eq, %p, %true : i1"), some("%p"));
        let cmpf = |predicate: &str, a: &str, b: &str| {
            fold(&format!("{}  %r = arith.cmpf {predicate}, %a, %c : f32", constants(&[("%a", a), ("%c", b)])))
        };
        assert_eq!(cmpf("olt", "1.0 : f32", "2.0 : f32"), some("true"));
        assert_eq!(cmpf("ogt", "1.0 : f32", "2.0 : f32"), some("false"));
        assert_eq!(cmpf("uno", "0x7FC00000 : f32", "2.0 : f32"), some("true"));
        assert_eq!(cmpf("oeq", "0x7FC00000 : f32", "0x7FC00000 : f32"), some("false"));
        assert_eq!(cmpf("une", "0x7FC00000 : f32", "0x7FC00000 : f32"), some("true"));
        assert_eq!(fold("  %r = arith.cmpf true, %f, %f : f32"), some("true"));
        assert_eq!(fold("  %n = arith.constant 0x7FC00000 : f32\n  %r = arith.cmpf olt, %f, %n : f32"), some("false"));
        assert_eq!(fold("  %n = arith.constant 0x7FC00000 : f32\n  %r = arith.cmpf ult, %n, %f : f32"), some("true"));
        assert_eq!(fold("  %r = arith.cmpf oeq, %f, %f : f32"), None, "NaN is not equal to itself");
    }

    #[test]
    fn floats() {
        let float = |op: &str, a: &str, b: &str| {
            fold(&format!("{}  %r = arith.{op} %a, %c : f32", constants(&[("%a", a), ("%c", b)])))
        };
        assert_eq!(float("addf", "1.5 : f32", "2.25 : f32"), some("3.75 : f32"));
        // Rounded once, in f32: 0.1 + 0.2 in f32 arithmetic.
        assert_eq!(float("addf", "0.1 : f32", "0.2 : f32"), Some(format!("{:?} : f32", 0.1f32 + 0.2f32)));
        assert_eq!(float("divf", "1.0 : f32", "0.0 : f32"), some("0x7F800000 : f32"));
        assert_eq!(float("remf", "7.5 : f32", "2.0 : f32"), some("1.5 : f32"));
        assert_eq!(float("maximumf", "-0.0 : f32", "0.0 : f32"), some("0.0 : f32"));
        assert_eq!(float("minimumf", "-0.0 : f32", "0.0 : f32"), some("-0.0 : f32"));
        assert_eq!(float("maximumf", "0x7FC00000 : f32", "1.0 : f32"), some("0x7FC00000 : f32"));
        // Invalid operations give the canonical NaN, whatever the host gives; NaN operands
        // propagate, quieted, sign and payload kept.
        assert_eq!(float("subf", "0x7F800000 : f32", "0x7F800000 : f32"), some("0x7FC00000 : f32"));
        assert_eq!(float("divf", "0.0 : f32", "0.0 : f32"), some("0x7FC00000 : f32"));
        assert_eq!(float("addf", "1.0 : f32", "0xFFC00001 : f32"), some("0xFFC00001 : f32"));
        assert_eq!(float("mulf", "0x7F800001 : f32", "1.0 : f32"), some("0x7FC00001 : f32"));
        assert_eq!(
            fold("  %c = arith.constant 0x7FC00000 : f32\n  %r = arith.negf %c : f32"),
            some("0xFFC00000 : f32")
        );
        let with_f = |op: &str, constant: &str| {
            fold(&format!("{}  %r = arith.{op} %f, %c : f32", constants(&[("%c", constant)])))
        };
        assert_eq!(with_f("addf", "-0.0 : f32"), some("%f"));
        assert_eq!(with_f("addf", "0.0 : f32"), None, "-0.0 + 0.0 is 0.0, not -0.0");
        assert_eq!(with_f("subf", "0.0 : f32"), some("%f"));
        assert_eq!(with_f("mulf", "1.0 : f32"), some("%f"));
        assert_eq!(with_f("mulf", "0.0 : f32"), None, "x * 0 is NaN for infinities");
        assert_eq!(with_f("divf", "1.0 : f32"), some("%f"));
        assert_eq!(fold("  %r = arith.subf %f, %f : f32"), None);
        assert_eq!(fold("  %c = arith.constant 2.5 : f32\n  %r = arith.negf %c : f32"), some("-2.5 : f32"));
        assert_eq!(fold("  %a = arith.constant 1.0 : f16\n  %r = arith.addf %a, %a : f16"), None, "f16 is not folded");
    }

    #[test]
    fn select() {
        let select =
            |condition: &str| fold(&format!("{}  %r = arith.select %c, %x, %y : i32", constants(&[("%c", condition)])));
        assert_eq!(select("true"), some("%x"));
        assert_eq!(select("false"), some("%y"));
        assert_eq!(fold("  %r = arith.select %p, %x, %x : i32"), some("%x"));
        assert_eq!(
            fold("  %t = arith.constant true\n  %no = arith.constant false\n  %r = arith.select %p, %t, %no : i1"),
            some("%p")
        );
        assert_eq!(fold("  %r = arith.select %p, %x, %y : i32"), None);
    }

    #[test]
    fn casts() {
        let cast = |op: &str, value: &str, from: &str, to: &str| {
            fold(&format!("  %c = arith.constant {value} : {from}\n  %r = arith.{op} %c : {from} to {to}"))
        };
        assert_eq!(cast("index_cast", "-1", "i32", "index"), some("-1 : index"));
        assert_eq!(cast("index_castui", "-1", "i32", "index"), some("4294967295 : index"));
        assert_eq!(cast("index_cast", "4294967297", "index", "i32"), some("1 : i32"));
        assert_eq!(cast("extsi", "-3", "i8", "i32"), some("-3 : i32"));
        assert_eq!(cast("extui", "-3", "i8", "i32"), some("253 : i32"));
        assert_eq!(fold("  %t = arith.constant true\n  %r = arith.extsi %t : i1 to i32"), some("-1 : i32"));
        assert_eq!(fold("  %t = arith.constant true\n  %r = arith.extui %t : i1 to i32"), some("1 : i32"));
        assert_eq!(cast("trunci", "257", "i32", "i8"), some("1 : i8"));
        assert_eq!(cast("trunci", "255", "i32", "i8"), some("-1 : i8"));
        assert_eq!(cast("sitofp", "-3", "i32", "f32"), some("-3.0 : f32"));
        assert_eq!(cast("uitofp", "-1", "i8", "f64"), some("255.0 : f64"));
        assert_eq!(cast("fptosi", "-3.9", "f32", "i32"), some("-3 : i32"));
        assert_eq!(cast("fptosi", "1.0e10", "f32", "i32"), None);
        assert_eq!(cast("fptosi", "0x7FC00000", "f32", "i32"), None);
        assert_eq!(cast("fptoui", "-1.0", "f32", "i32"), None);
        assert_eq!(cast("fptoui", "255.5", "f64", "i8"), some("-1 : i8"));
        assert_eq!(cast("fptoui", "256.0", "f64", "i8"), None);
        assert_eq!(cast("extf", "0.1", "f32", "f64"), Some(format!("{:?} : f64", 0.1f32 as f64)));
        assert_eq!(cast("truncf", "0.5", "f64", "f32"), some("0.5 : f32"));
        assert_eq!(cast("truncf", "0.1", "f64", "f32"), None, "inexact");
        assert_eq!(cast("bitcast", "1.0", "f32", "i32"), some("1065353216 : i32"));
        assert_eq!(cast("bitcast", "1065353216", "i32", "f32"), some("1.0 : f32"));
        assert_eq!(fold("  %e = arith.extsi %b : i8 to i32\n  %r = arith.trunci %e : i32 to i8"), some("%b"));
        assert_eq!(
            fold("  %e = arith.index_cast %x : i32 to index\n  %r = arith.index_cast %e : index to i32"),
            some("%x")
        );
        assert_eq!(fold("  %e = arith.bitcast %x : i32 to f32\n  %r = arith.bitcast %e : f32 to i32"), some("%x"));
        assert_eq!(fold("  %e = arith.trunci %x : i32 to i8\n  %r = arith.extsi %e : i8 to i32"), None);
    }
}
