//! The canonicalization patterns of `arith` (rules P1–P6 of `docs/rewrites.md`), attached to
//! their ops as [`CanonicalizationPatterns`] (MLIR's `getCanonicalizationPatterns`): constants to
//! the right of comparisons, inverted comparisons, combined constants, redundant selects. The
//! generic rule that puts constants to the right of any commutative op belongs to the
//! canonicalizer, which asks the `COMMUTATIVE` trait; so does the constant folding, which the
//! folders of `arith_fold` do.
//!
//! Also here: [`materialize_constant`], the op that holds a constant a folder computed (MLIR's
//! `materializeConstant` of the arith dialect).
//!
//! Every pattern is rooted at the op it is attached to, and only reads and rewrites through the
//! rewriter.

use crate::arith::{int_predicate, predicate_attribute};
use hat_ir::rewrite::{constant_value, CanonicalizationPatterns, PatternsFn, RewritePattern, Rewriter};
use hat_ir::{Attribute, AttributeKind, Context, Location, Op, OperationState, Type, TypeKind, Value};

/// Materializes a folded constant as an `arith.constant` of type `ty` (the attribute converted to
/// that type when it is an integer or float of another one); `None` for other attributes.
pub fn materialize_constant(
    ctx: &mut Context,
    value: Attribute,
    ty: Type,
    location: Location,
) -> Option<OperationState> {
    let value = match (ctx.attribute_kind(value).clone(), ctx.type_kind(ty)) {
        (AttributeKind::Integer { ty: own, .. }, TypeKind::Integer { .. } | TypeKind::Index) if own == ty => value,
        (AttributeKind::Integer { value, .. }, TypeKind::Integer { .. } | TypeKind::Index) => {
            ctx.integer_attr(value, ty)
        }
        (AttributeKind::Float { ty: own, .. }, TypeKind::Float(_)) if own == ty => value,
        (AttributeKind::Float { bits, .. }, TypeKind::Float(_)) => ctx.float_attr(f64::from_bits(bits), ty),
        _ => return None,
    };
    let mut state = OperationState::new(ctx.op_name(crate::arith_views::ConstantOp::NAME), location);
    state.attributes.push((ctx.ident("value"), value));
    state.result_types.push(ty);
    Some(state)
}

static CMPI: PatternsFn = PatternsFn(|_, set| set.add(ComparisonConstantToRight));
static XORI: PatternsFn = PatternsFn(|_, set| set.add(InvertComparison));
static ADDI: PatternsFn = PatternsFn(|_, set| set.add(Reassociate { name: "arith.addi" }));
static SUBI: PatternsFn = PatternsFn(|_, set| set.add(Reassociate { name: "arith.subi" }));
static MULI: PatternsFn = PatternsFn(|_, set| set.add(CombineConstants { name: "arith.muli" }));
static SELECT: PatternsFn = PatternsFn(|_, set| set.add(RedundantSelect));

/// Attaches the patterns to their ops.
pub(crate) fn attach(ctx: &mut Context) {
    for (name, patterns) in [
        ("arith.cmpi", &CMPI),
        ("arith.xori", &XORI),
        ("arith.addi", &ADDI),
        ("arith.subi", &SUBI),
        ("arith.muli", &MULI),
        (crate::arith_views::SelectOp::NAME, &SELECT),
    ] {
        ctx.attach_interface::<dyn CanonicalizationPatterns>(name, patterns);
    }
}

/// The integer value of a constant operand as its attribute stores it (sign-extended from the
/// type's width).
fn int_constant(ctx: &Context, value: Value) -> Option<i64> {
    ctx.attribute_kind(constant_value(ctx, value)?).as_i64()
}

/// `arith.cmpi p, c, x → arith.cmpi swapped(p), x, c` for a constant `c` and a non-constant `x`.
struct ComparisonConstantToRight;

impl RewritePattern for ComparisonConstantToRight {
    fn name(&self) -> &str {
        "comparison-constant-to-right"
    }

    fn root(&self) -> Option<&str> {
        Some("arith.cmpi")
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let &[lhs, rhs] = ctx.operands(op) else { return false };
        if constant_value(ctx, lhs).is_none() || constant_value(ctx, rhs).is_some() {
            return false;
        }
        let Some(swapped) = int_predicate(ctx, op).map(|p| p.swapped().to_i64()) else { return false };
        let (key, swapped) = predicate_attribute(rewriter.ctx_mut(), swapped);
        rewriter.set_attribute(op, key, swapped);
        rewriter.set_operands(op, &[rhs, lhs]);
        true
    }
}

/// `arith.xori(arith.cmpi p, a, b), true → arith.cmpi !p, a, b` (for `i1`).
struct InvertComparison;

impl RewritePattern for InvertComparison {
    fn name(&self) -> &str {
        "invert-comparison"
    }

    fn root(&self) -> Option<&str> {
        Some("arith.xori")
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let &[lhs, rhs] = ctx.operands(op) else { return false };
        if !matches!(ctx.type_kind(ctx.value_type(lhs)), TypeKind::Integer { width: 1, .. }) {
            return false;
        }
        if int_constant(ctx, rhs) != Some(1) {
            return false;
        }
        let Some(compare) = ctx.defining_op(lhs).filter(|&d| ctx.name_str(d) == "arith.cmpi") else { return false };
        let Some(inverse) = int_predicate(ctx, compare).map(|p| p.negated().to_i64()) else { return false };
        let mut state = OperationState::new(ctx.name(compare), ctx.location(op));
        state.operands = ctx.operands(compare).to_vec();
        state.result_types = vec![ctx.value_type(lhs)];
        state.attributes = ctx.attributes(compare).to_vec();
        let ctx = rewriter.ctx_mut();
        let inverse = predicate_attribute(ctx, inverse);
        state.attributes.retain(|(n, _)| *n != inverse.0);
        state.attributes.push(inverse);
        let new = rewriter.build_before(op, state);
        rewriter.replace_op_with_op(op, new);
        true
    }
}

/// `muli(muli(x, c1), c2) → muli(x, c1 * c2)` (wrapping, in the type's width).
struct CombineConstants {
    name: &'static str,
}

/// Whether `ty` is an integer type whose constants read as signed `i64`s (not `i1`).
fn is_wide_integer(ctx: &Context, ty: hat_ir::Type) -> bool {
    matches!(ctx.type_kind(ty), TypeKind::Integer { width: 2..=64, .. } | TypeKind::Index)
}

/// Builds `name(lhs, rhs)` of type `ty` before `op` and replaces `op` with it; `constant`, when
/// given, is materialized first and stands for the operand `None`.
fn replace_with_binary(
    rewriter: &mut Rewriter<'_>,
    op: Op,
    name: &str,
    operands: [Option<Value>; 2],
    constant: i64,
) -> bool {
    let (location, ty) = (rewriter.ctx().location(op), rewriter.ctx().value_type(rewriter.ctx().result(op, 0)));
    let ctx = rewriter.ctx_mut();
    let value = ctx.integer_attr(constant, ty);
    let name = ctx.op_name(name);
    let Some(state) = materialize_constant(ctx, value, ty, location) else { return false };
    let constant = rewriter.build_before(op, state);
    let constant = rewriter.ctx().result(constant, 0);
    let mut state = OperationState::new(name, location);
    state.operands = operands.iter().map(|v| v.unwrap_or(constant)).collect();
    state.result_types = vec![ty];
    let new = rewriter.build_before(op, state);
    rewriter.replace_op_with_op(op, new);
    true
}

impl RewritePattern for CombineConstants {
    fn name(&self) -> &str {
        "combine-constants"
    }

    fn root(&self) -> Option<&str> {
        Some(self.name)
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let &[lhs, rhs] = ctx.operands(op) else { return false };
        if !is_wide_integer(ctx, ctx.value_type(lhs)) {
            return false;
        }
        let Some(c2) = int_constant(ctx, rhs) else { return false };
        let Some(inner) = ctx.defining_op(lhs).filter(|&d| ctx.name(d) == ctx.name(op)) else { return false };
        let &[x, inner_rhs] = ctx.operands(inner) else { return false };
        let Some(c1) = int_constant(ctx, inner_rhs) else { return false };
        if constant_value(ctx, x).is_some() {
            // Both constant: the folder's job.
            return false;
        }
        replace_with_binary(rewriter, op, self.name, [Some(x), None], c1.wrapping_mul(c2))
    }
}

/// `select(c, select(c, a, b), d) → select(c, a, d)` and `select(c, a, select(c, b, d)) →
/// select(c, a, d)`, in place.
struct RedundantSelect;

impl RewritePattern for RedundantSelect {
    fn name(&self) -> &str {
        "redundant-select"
    }

    fn root(&self) -> Option<&str> {
        Some("arith.select")
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let &[condition, on_true, on_false] = ctx.operands(op) else { return false };
        let same_condition = |value: Value| {
            ctx.defining_op(value)
                .filter(|&d| {
                    ctx.name(d) == ctx.name(op) && ctx.operands(d).len() == 3 && ctx.operand(d, 0) == condition
                })
                .map(|d| ctx.operands(d).to_vec())
        };
        if let Some(inner) = same_condition(on_true) {
            rewriter.set_operand(op, 1, inner[1]);
            return true;
        }
        if let Some(inner) = same_condition(on_false) {
            rewriter.set_operand(op, 2, inner[2]);
            return true;
        }
        false
    }
}

/// `s·x + c` where `value` is an `arith.addi` or `arith.subi` of a non-constant `x` and a
/// constant: `(x, s, c)` with `s` = ±1.
fn linear(ctx: &Context, value: Value) -> Option<(Value, i64, i64)> {
    let def = ctx.defining_op(value)?;
    let &[a, b] = ctx.operands(def) else { return None };
    let (ca, cb) = (int_constant(ctx, a), int_constant(ctx, b));
    match (ctx.name_str(def), ca, cb) {
        ("arith.addi", None, Some(c)) => Some((a, 1, c)),
        ("arith.addi", Some(c), None) => Some((b, 1, c)),
        ("arith.subi", None, Some(c)) => Some((a, 1, c.wrapping_neg())),
        ("arith.subi", Some(c), None) => Some((b, -1, c)),
        _ => None,
    }
}

/// Additions and subtractions of constants to an addition or subtraction of a constant are
/// combined: with `v = s·x + c` ([`linear`]), `v + k`, `v - k` and `k - v` become `x + k'`
/// (`arith.addi`) or `k' - x` (`arith.subi`) — one op where there were two. And
/// `x + y * -1 → x - y`.
struct Reassociate {
    name: &'static str,
}

impl RewritePattern for Reassociate {
    fn name(&self) -> &str {
        "reassociate"
    }

    fn root(&self) -> Option<&str> {
        Some(self.name)
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let &[lhs, rhs] = ctx.operands(op) else { return false };
        if !is_wide_integer(ctx, ctx.value_type(lhs)) {
            return false;
        }
        let is_add = self.name == "arith.addi";
        if is_add {
            // x + y * -1 → x - y (either side).
            for (x, product) in [(lhs, rhs), (rhs, lhs)] {
                let Some(def) = ctx.defining_op(product).filter(|&d| ctx.name_str(d) == "arith.muli") else {
                    continue;
                };
                let &[y, minus_one] = ctx.operands(def) else { continue };
                if int_constant(ctx, minus_one) == Some(-1) {
                    let (location, ty) = (ctx.location(op), ctx.value_type(lhs));
                    let mut state = OperationState::new(rewriter.ctx_mut().op_name("arith.subi"), location);
                    state.operands = vec![x, y];
                    state.result_types = vec![ty];
                    let new = rewriter.build_before(op, state);
                    rewriter.replace_op_with_op(op, new);
                    return true;
                }
            }
        }
        let (sign, combined) = match (int_constant(ctx, lhs), int_constant(ctx, rhs)) {
            (None, Some(k)) => match linear(ctx, lhs) {
                Some((x, s, c)) => ((x, s), if is_add { c.wrapping_add(k) } else { c.wrapping_sub(k) }),
                None => return false,
            },
            (Some(k), None) if is_add => match linear(ctx, rhs) {
                Some((x, s, c)) => ((x, s), c.wrapping_add(k)),
                None => return false,
            },
            (Some(k), None) => match linear(ctx, rhs) {
                Some((x, s, c)) => ((x, -s), k.wrapping_sub(c)),
                None => return false,
            },
            _ => return false,
        };
        let (x, s) = sign;
        if s > 0 {
            replace_with_binary(rewriter, op, "arith.addi", [Some(x), None], combined)
        } else {
            replace_with_binary(rewriter, op, "arith.subi", [None, Some(x)], combined)
        }
    }
}
