//! Folders of `arith` (registered by [`crate::arith::register`]): constant folding of every op,
//! and the algebraic identities that need no new op. The rules, and what is deliberately not
//! folded, are written in `docs/rewrites.md`.
//!
//! Constant folding computes nothing itself: the constant operands become [`Scalar`]s of their
//! types, [`ScalarOp::evaluate`] computes (the one statement of what `arith` means, in
//! [`crate::semantics`]) and the result becomes an attribute of the result type. So the folder
//! agrees with the executor and the CPU backend by construction. It does not fold:
//!
//! - what `evaluate` refuses: division and remainder by zero, malformed ops;
//! - what MLIR leaves undefined ([`crate::semantics::Evaluation::undefined`]): `MIN / -1`, shifts
//!   by the width or more, `fptosi`/`fptoui` of NaN or out of range. hat's executor gives a
//!   value there, but a program may not rely on it, and folding would hide the difference;
//! - an inexact `truncf`: the rounding mode at run time is not known to be to-nearest;
//! - types without a [`ScalarType`]: integers over 64 bits, the 16-bit floats.
//!
//! Nothing here panics, on any op that verifies or not.

use crate::semantics::{to_bits, FloatPredicate, IntPredicate, Scalar, ScalarOp, ScalarType};
use hat_ir::rewrite::{FoldContext, FoldFn, FoldResult};
use hat_ir::{Context, Op, Type, Value};

/// Registers the folder of every `arith` op that has one.
pub fn register(ctx: &mut Context) {
    let folders: &[(&str, FoldFn)] = &[
        ("arith.addi", fold_addi),
        ("arith.subi", fold_subi),
        ("arith.muli", fold_muli),
        ("arith.divsi", fold_division),
        ("arith.divui", fold_division),
        ("arith.ceildivsi", fold_division),
        ("arith.floordivsi", fold_division),
        ("arith.remsi", fold_remainder),
        ("arith.remui", fold_remainder),
        ("arith.andi", fold_andi),
        ("arith.ori", fold_ori),
        ("arith.xori", fold_xori),
        ("arith.shli", fold_shift),
        ("arith.shrsi", fold_shift),
        ("arith.shrui", fold_shift),
        ("arith.maxsi", fold_maxsi),
        ("arith.minsi", fold_minsi),
        ("arith.maxui", fold_maxui),
        ("arith.minui", fold_minui),
        ("arith.addf", fold_addf),
        ("arith.subf", fold_subf),
        ("arith.mulf", fold_mulf),
        ("arith.divf", fold_divf),
        ("arith.remf", fold_constants),
        ("arith.maximumf", fold_float_min_max),
        ("arith.minimumf", fold_float_min_max),
        ("arith.negf", fold_constants),
        ("arith.cmpi", fold_cmpi),
        ("arith.cmpf", fold_cmpf),
        ("arith.select", fold_select),
        ("arith.index_cast", fold_index_cast),
        ("arith.index_castui", fold_index_castui),
        ("arith.extsi", fold_constants),
        ("arith.extui", fold_constants),
        ("arith.trunci", fold_trunci),
        ("arith.sitofp", fold_constants),
        ("arith.uitofp", fold_constants),
        ("arith.fptosi", fold_constants),
        ("arith.fptoui", fold_constants),
        ("arith.extf", fold_constants),
        ("arith.truncf", fold_truncf),
        ("arith.bitcast", fold_bitcast),
    ];
    for &(name, folder) in folders {
        ctx.register_folder(name, folder);
    }
}

// ----- constant folding ---------------------------------------------------------------------

fn result_type(f: &FoldContext<'_>, op: Op) -> Type {
    let ctx = f.ctx();
    ctx.value_type(ctx.result(op, 0))
}

fn operand(f: &FoldContext<'_>, op: Op, index: usize) -> Value {
    f.ctx().operand(op, index)
}

/// The scalar type of operand `index`.
fn operand_type(f: &FoldContext<'_>, op: Op, index: usize) -> Option<ScalarType> {
    let value = *f.ctx().operands(op).get(index)?;
    ScalarType::of(f.ctx(), f.ctx().value_type(value))
}

/// Operand `index` as a scalar of its type, when it is a constant.
fn constant(f: &FoldContext<'_>, op: Op, index: usize) -> Option<Scalar> {
    Scalar::from_attribute(f.constant_kind(index)?, operand_type(f, op, index)?)
}

/// Folds `op` when every operand is a constant: evaluates it with the shared semantics and
/// answers the result as an attribute; `None` where `evaluate` errs or the result is undefined.
fn fold_constants(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let scalar_op = ScalarOp::decode(f.ctx(), op).ok()?;
    let count = f.ctx().operands(op).len();
    let mut operands = [Scalar::Int(0); 3];
    if count > operands.len() {
        return None;
    }
    for (index, slot) in operands.iter_mut().enumerate().take(count) {
        *slot = constant(f, op, index)?;
    }
    // `select`'s operand type is that of the values it chooses between, not of its condition.
    let typed_operand = if scalar_op == ScalarOp::Select { 1 } else { 0 };
    let operand_type = operand_type(f, op, typed_operand)?;
    let ty = result_type(f, op);
    let result_type = ScalarType::of(f.ctx(), ty)?;
    let value = scalar_op.evaluate(&operands[..count], operand_type, result_type).ok()?.defined_value()?;
    Some(FoldResult::Attribute(match value {
        Scalar::Int(v) => f.integer_attr(v, ty),
        Scalar::Float(v) => f.float_attr(v, ty),
    }))
}

// ----- integer identities -------------------------------------------------------------------

/// An integer constant operand as its bits in its width (for the identities, which look at a
/// constant's bit pattern: zero, one, all ones, the extremes of an order).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Bits {
    bits: u64,
    width: u32,
}

impl Bits {
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

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Operand `index` as an integer constant.
fn int_operand(f: &FoldContext<'_>, op: Op, index: usize) -> Option<Bits> {
    let ty = operand_type(f, op, index).filter(|t| t.is_integer())?;
    Some(Bits { bits: to_bits(constant(f, op, index)?, ty), width: ty.bits() })
}

fn int_result(f: &mut FoldContext<'_>, op: Op, value: u64) -> Option<FoldResult> {
    let ty = result_type(f, op);
    Some(FoldResult::Attribute(f.integer_attr(value as i64, ty)))
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

/// For a commutative op: the constant operand and the other operand, when exactly one side (or
/// the right one, when both) is a constant.
fn constant_side(f: &FoldContext<'_>, op: Op) -> Option<(Bits, Value)> {
    if let Some(b) = int_operand(f, op, 1) {
        return Some((b, operand(f, op, 0)));
    }
    int_operand(f, op, 0).map(|a| (a, operand(f, op, 1)))
}

fn zero(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    int_result(f, op, 0)
}

fn fold_addi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
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
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    if same_value(f, op).is_some() {
        return zero(f, op);
    }
    if int_operand(f, op, 1).is_some_and(Bits::is_zero) {
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
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    match constant_side(f, op)? {
        (c, _) if c.is_zero() => zero(f, op),
        (c, x) if c.is_one() => Some(FoldResult::Value(x)),
        _ => None,
    }
}

/// The divisions: constants, and `x / 1 → x`.
fn fold_division(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    // A signed division reads `i1`'s `true` as -1, and `x / -1` is not `x` (it is undefined for
    // `x = true`).
    let signed = f.ctx().name_str(op) != "arith.divui";
    match int_operand(f, op, 1) {
        Some(b) if b.is_one() && !(signed && b.width == 1) => Some(FoldResult::Value(operand(f, op, 0))),
        _ => None,
    }
}

/// The remainders: constants, and `x % 1 → 0`.
fn fold_remainder(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    match int_operand(f, op, 1) {
        Some(b) if b.is_one() => zero(f, op),
        _ => None,
    }
}

fn fold_andi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
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
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    if let Some(x) = same_value(f, op) {
        return Some(FoldResult::Value(x));
    }
    match constant_side(f, op) {
        Some((c, x)) if c.is_zero() => return Some(FoldResult::Value(x)),
        Some((c, _)) if c.is_all_ones() => return int_result(f, op, c.bits),
        _ => {}
    }
    absorb(f, op, "arith.ori")
}

fn fold_xori(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
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

/// The shifts: constants, and `x shifted by 0 → x`.
fn fold_shift(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    match int_operand(f, op, 1) {
        Some(b) if b.is_zero() => Some(FoldResult::Value(operand(f, op, 0))),
        _ => None,
    }
}

/// Which constant a min/max absorbs into (`absorbing`: the result is that constant) and which it
/// ignores (`neutral`: the result is the other operand), as bit patterns of a width.
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

/// A min/max: constants, `op(x, x) → x`, and the extreme constants of its order.
fn fold_min_max(f: &mut FoldContext<'_>, op: Op, bounds: Bounds) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
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
    fold_min_max(f, op, Bounds { absorbing: signed_max, neutral: signed_min })
}

fn fold_minsi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_min_max(f, op, Bounds { absorbing: signed_min, neutral: signed_max })
}

fn fold_maxui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_min_max(f, op, Bounds { absorbing: unsigned_max, neutral: unsigned_min })
}

fn fold_minui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_min_max(f, op, Bounds { absorbing: unsigned_min, neutral: unsigned_max })
}

// ----- float identities ---------------------------------------------------------------------

/// Whether operand `index` is the float constant `expected`, sign of zero included.
fn is_float_constant(f: &FoldContext<'_>, op: Op, index: usize, expected: f64) -> bool {
    constant(f, op, index).is_some_and(|v| v.same_as(Scalar::Float(expected)))
}

fn fold_addf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    // x + -0.0 is x for every x (x + +0.0 is not, for x = -0.0).
    if is_float_constant(f, op, 1, -0.0) {
        return Some(FoldResult::Value(operand(f, op, 0)));
    }
    is_float_constant(f, op, 0, -0.0).then(|| FoldResult::Value(operand(f, op, 1)))
}

fn fold_subf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    is_float_constant(f, op, 1, 0.0).then(|| FoldResult::Value(operand(f, op, 0)))
}

fn fold_mulf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    if is_float_constant(f, op, 1, 1.0) {
        return Some(FoldResult::Value(operand(f, op, 0)));
    }
    is_float_constant(f, op, 0, 1.0).then(|| FoldResult::Value(operand(f, op, 1)))
}

fn fold_divf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    is_float_constant(f, op, 1, 1.0).then(|| FoldResult::Value(operand(f, op, 0)))
}

/// `maximumf`, `minimumf`: constants, and `op(x, x) → x`.
fn fold_float_min_max(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_constants(f, op).or_else(|| same_value(f, op).map(FoldResult::Value))
}

// ----- comparisons --------------------------------------------------------------------------

fn bool_result(f: &mut FoldContext<'_>, op: Op, value: bool) -> Option<FoldResult> {
    int_result(f, op, value as u64)
}

fn fold_cmpi(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    let predicate = crate::arith::int_predicate(f.ctx(), op)?;
    if same_value(f, op).is_some() {
        return bool_result(f, op, predicate.is_reflexive());
    }
    // On i1: x != false and x == true are x.
    let lhs = operand(f, op, 0);
    let is_i1 = operand_type(f, op, 0) == Some(ScalarType::I1);
    match (is_i1, predicate, int_operand(f, op, 1)) {
        (true, IntPredicate::Ne, Some(b)) if b.is_zero() => Some(FoldResult::Value(lhs)),
        (true, IntPredicate::Eq, Some(b)) if b.is_one() => Some(FoldResult::Value(lhs)),
        _ => None,
    }
}

fn fold_cmpf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    if let Some(folded) = fold_constants(f, op) {
        return Some(folded);
    }
    let predicate = crate::arith::float_predicate(f.ctx(), op)?;
    // `false` and `true` do not look at their operands; a NaN on either side decides every
    // predicate, whatever the other side is. No rule for x p x: x may be NaN.
    let nan_operand = (0..2).any(|i| constant(f, op, i).is_some_and(|v| v.as_f64().is_nan()));
    if nan_operand || matches!(predicate, FloatPredicate::False | FloatPredicate::True) {
        return bool_result(f, op, predicate.compare(f64::NAN, f64::NAN));
    }
    None
}

// ----- select -------------------------------------------------------------------------------

fn fold_select(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    // `select` returns the operand it chooses unchanged, so a constant condition folds to that
    // operand, constant or not (and whatever its type: buffers too).
    let (on_true, on_false) = (operand(f, op, 1), operand(f, op, 2));
    if let Some(condition) = int_operand(f, op, 0) {
        return Some(FoldResult::Value(if condition.is_zero() { on_false } else { on_true }));
    }
    if on_true == on_false {
        return Some(FoldResult::Value(on_true));
    }
    // select(c, true, false) : i1 is c.
    let is_i1 = operand_type(f, op, 1) == Some(ScalarType::I1);
    if is_i1 && int_operand(f, op, 1).is_some_and(Bits::is_one) && int_operand(f, op, 2).is_some_and(Bits::is_zero) {
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

fn fold_index_cast(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_constants(f, op).or_else(|| undo_cast(f, op, &["arith.index_cast"]))
}

fn fold_index_castui(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_constants(f, op).or_else(|| undo_cast(f, op, &["arith.index_castui"]))
}

fn fold_trunci(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    fold_constants(f, op).or_else(|| undo_cast(f, op, &["arith.extsi", "arith.extui"]))
}

fn fold_truncf(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    // Only exact conversions: the rounding mode at run time is not known to be to-nearest (MLIR
    // folds the same way).
    let a = constant(f, op, 0)?.as_f64();
    let exact = a.is_nan() || (a as f32) as f64 == a;
    exact.then(|| fold_constants(f, op)).flatten()
}

fn fold_bitcast(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    undo_cast(f, op, &["arith.bitcast"]).or_else(|| fold_constants(f, op))
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
        // `true` is -1 to a signed division.
        for op in ["divsi", "ceildivsi", "floordivsi"] {
            assert_eq!(fold(&format!("  %t = arith.constant true\n  %r = arith.{op} %p, %t : i1")), None, "{op}");
        }
        assert_eq!(fold("  %t = arith.constant true\n  %r = arith.divui %p, %t : i1"), some("%p"));
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
