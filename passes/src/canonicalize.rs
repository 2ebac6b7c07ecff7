//! `canonicalize`: folds, simplifies and removes dead code with the greedy driver, to a fixpoint.
//!
//! It runs the registered folders (for `arith`: constant folding and identities), removes dead
//! ops that have no effects, deduplicates constants and hoists them to the start of the entry
//! block of their isolated region (as MLIR does), and applies the patterns below. The rules are
//! written in `docs/rewrites.md`; the reference page is `docs/passes/canonicalize.md`.
//!
//! Patterns:
//! - `scf.if` on a constant condition becomes the branch taken (or nothing);
//! - `scf.for` with constant bounds that runs zero times becomes its initial values, one that runs
//!   once becomes its body;
//! - commutative ops take a constant operand on the right;
//! - `arith.xori(arith.cmpi p, a, b), true` becomes `arith.cmpi !p, a, b`;
//! - `arith.addi`/`arith.muli` of the same op with a constant, and a constant: the two constants
//!   are combined.

use crate::support::{materialize_constant, recursive_effects};
use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassOptions, PassState};
use hat_ir::rewrite::{apply_patterns_greedily, constant_value, GreedyConfig, PatternSet, RewritePattern, Rewriter};
use hat_ir::{Context, Op, OpTraits, OperationState, TypeKind, Value};

/// The options of `canonicalize`.
pub const OPTIONS: &[PassOptionInfo] = &[
    PassOptionInfo {
        name: "max-iterations",
        kind: OptionKind::Unsigned,
        default: "10",
        help: "At most this many sweeps over the IR (one more runs only when one changed something)",
    },
    PassOptionInfo {
        name: "max-num-rewrites",
        kind: OptionKind::Integer,
        default: "-1",
        help: "At most this many rewrites (folds, patterns, merged constants); -1: no bound",
    },
    PassOptionInfo {
        name: "fold",
        kind: OptionKind::Bool,
        default: "true",
        help: "Call the ops' folders (constant folding and identities)",
    },
    PassOptionInfo {
        name: "region-simplify",
        kind: OptionKind::Bool,
        default: "true",
        help: "Simplify control flow: scf.if on a constant, scf.for with a constant trip count of 0 or 1",
    },
];

/// The registration of `canonicalize`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "canonicalize",
        summary: "Fold constants and identities, simplify dead control flow, remove dead ops, to a fixpoint",
        anchor: None,
        options: OPTIONS,
        create: |options| Box::new(Canonicalize::new(options)),
    }
}

/// The `canonicalize` pass.
pub struct Canonicalize {
    config: GreedyConfig,
    region_simplify: bool,
}

impl Canonicalize {
    /// The pass with validated options.
    pub fn new(options: &PassOptions) -> Self {
        let config = GreedyConfig {
            max_iterations: options.get_unsigned("max-iterations").min(u32::MAX as u64) as u32,
            max_rewrites: u64::try_from(options.get_integer("max-num-rewrites")).ok(),
            fold: options.get_bool("fold"),
            materialize: Some(materialize_constant),
            recursive_effects,
            ..GreedyConfig::default()
        };
        Canonicalize { config, region_simplify: options.get_bool("region-simplify") }
    }
}

/// hat's canonicalization patterns; the control-flow ones only with `region_simplify`.
pub fn patterns(region_simplify: bool) -> PatternSet {
    let mut set = PatternSet::new();
    set.add(ConstantToRight);
    set.add(ComparisonConstantToRight);
    set.add(InvertComparison);
    set.add(Reassociate { name: "arith.addi" });
    set.add(Reassociate { name: "arith.subi" });
    set.add(CombineConstants { name: "arith.muli" });
    set.add(RedundantSelect);
    if region_simplify {
        set.add(IfWithConstantCondition);
        set.add(IfToSelect);
        set.add(CombineIfs);
        set.add(ForWithConstantTripCount);
        set.add(ForInvariantIterArgs);
    }
    set
}

impl Pass for Canonicalize {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let patterns = patterns(self.region_simplify);
        let stats = apply_patterns_greedily(ctx, op, &patterns, &self.config);
        state.add_statistic("num-folded", stats.folded);
        state.add_statistic("num-rewritten", stats.rewritten);
        state.add_statistic("num-erased", stats.erased);
        state.add_statistic("num-constants-deduplicated", stats.deduplicated);
        state.add_statistic("num-iterations", stats.iterations as u64);
        if !stats.changed {
            state.preserve_all();
        }
        Ok(())
    }
}

/// The integer value of a constant operand, sign-extended from its type's width (`i1` aside,
/// which stays 0 or 1).
fn int_constant(ctx: &Context, value: Value) -> Option<i64> {
    ctx.attribute_kind(constant_value(ctx, value)?).as_i64()
}

// ----- arith ----------------------------------------------------------------------------------

/// `op(c, x) → op(x, c)` for a commutative op with a constant `c` and a non-constant `x`, so that
/// the identities and combinations need only look on the right.
struct ConstantToRight;

impl RewritePattern for ConstantToRight {
    fn name(&self) -> &str {
        "constant-to-right"
    }

    fn root(&self) -> Option<&str> {
        None
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let &[lhs, rhs] = ctx.operands(op) else { return false };
        if !ctx.has_traits(op, OpTraits::COMMUTATIVE) {
            return false;
        }
        if constant_value(ctx, lhs).is_none() || constant_value(ctx, rhs).is_some() {
            return false;
        }
        rewriter.set_operands(op, &[rhs, lhs]);
        true
    }
}

/// `arith.cmpi p, c, x → arith.cmpi swapped(p), x, c` for a constant `c` and a non-constant `x`.
struct ComparisonConstantToRight;

/// The predicate of `cmpi` with its operands swapped.
fn swapped_cmpi_predicate(predicate: i64) -> Option<i64> {
    // eq ne slt sle sgt sge ult ule ugt uge
    Some(match predicate {
        0 | 1 => predicate,
        2 => 4,
        3 => 5,
        4 => 2,
        5 => 3,
        6 => 8,
        7 => 9,
        8 => 6,
        9 => 7,
        _ => return None,
    })
}

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
        let Some(predicate) = ctx.attribute(op, "predicate").and_then(|a| ctx.attribute_kind(a).as_i64()) else {
            return false;
        };
        let Some(swapped) = swapped_cmpi_predicate(predicate) else { return false };
        let ctx = rewriter.ctx_mut();
        let i64_type = ctx.integer_type(64);
        let swapped = ctx.integer_attr(swapped, i64_type);
        let key = ctx.ident("predicate");
        rewriter.set_attribute(op, key, swapped);
        rewriter.set_operands(op, &[rhs, lhs]);
        true
    }
}

/// `arith.xori(arith.cmpi p, a, b), true → arith.cmpi !p, a, b` (for `i1`).
struct InvertComparison;

/// The predicate of `cmpi` that is true exactly when `predicate` is false.
fn inverse_cmpi_predicate(predicate: i64) -> Option<i64> {
    // eq ne slt sle sgt sge ult ule ugt uge
    Some(match predicate {
        0 => 1,
        1 => 0,
        2 => 5,
        3 => 4,
        4 => 3,
        5 => 2,
        6 => 9,
        7 => 8,
        8 => 7,
        9 => 6,
        _ => return None,
    })
}

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
        let Some(predicate) = ctx.attribute(compare, "predicate").and_then(|a| ctx.attribute_kind(a).as_i64()) else {
            return false;
        };
        let Some(inverse) = inverse_cmpi_predicate(predicate) else { return false };
        let mut state = OperationState::new(ctx.name(compare), ctx.location(op));
        state.operands = ctx.operands(compare).to_vec();
        state.result_types = vec![ctx.value_type(lhs)];
        state.attributes = ctx.attributes(compare).to_vec();
        let ctx = rewriter.ctx_mut();
        let i64_type = ctx.integer_type(64);
        let inverse = ctx.integer_attr(inverse, i64_type);
        state.attributes.retain(|(n, _)| ctx.ident_str(*n) != "predicate");
        state.attributes.push((ctx.ident("predicate"), inverse));
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

// ----- scf ------------------------------------------------------------------------------------

/// Replaces `op` by the single block of `region`: the block's ops move before `op` (its arguments
/// replaced by `arguments`), the values its terminator yields replace `op`'s results, and the
/// terminator and `op` are erased. `false` (nothing done) if the region does not have one block
/// ending in a terminator that yields one value per result.
fn replace_with_region(rewriter: &mut Rewriter<'_>, op: Op, region_index: usize, arguments: &[Value]) -> bool {
    let ctx = rewriter.ctx();
    let region = ctx.regions(op)[region_index];
    let &[block] = ctx.region_blocks(region) else { return false };
    let Some(terminator) = ctx.last_op(block) else { return false };
    let yielded = ctx.operands(terminator).to_vec();
    if yielded.len() != ctx.result_count(op) || ctx.block_arguments(block).len() != arguments.len() {
        return false;
    }
    rewriter.inline_block_before(block, op, arguments);
    // Yielded values may be block arguments just replaced: read them again.
    let yielded = rewriter.ctx().operands(terminator).to_vec();
    rewriter.erase_op(terminator);
    rewriter.replace_op(op, &yielded);
    true
}

/// `scf.if %true` becomes its then-branch, `scf.if %false` its else-branch (nothing, when it has
/// no else-branch).
struct IfWithConstantCondition;

impl RewritePattern for IfWithConstantCondition {
    fn name(&self) -> &str {
        "if-with-constant-condition"
    }

    fn root(&self) -> Option<&str> {
        Some("scf.if")
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let (&[condition], [_, else_region]) = (ctx.operands(op), ctx.regions(op)) else { return false };
        let Some(condition) = int_constant(ctx, condition) else { return false };
        let taken = if condition != 0 { 0 } else { 1 };
        if taken == 1 && ctx.region_blocks(*else_region).is_empty() {
            if ctx.result_count(op) != 0 {
                return false;
            }
            rewriter.erase_op(op);
            return true;
        }
        replace_with_region(rewriter, op, taken, &[])
    }
}

/// The single block of region `index` of `op`, and the values its terminator yields.
fn branch(ctx: &Context, op: Op, index: usize) -> Option<(hat_ir::Block, Op, Vec<Value>)> {
    let region = *ctx.regions(op).get(index)?;
    let &[block] = ctx.region_blocks(region) else { return None };
    let terminator = ctx.last_op(block)?;
    Some((block, terminator, ctx.operands(terminator).to_vec()))
}

/// `scf.if` whose branches only yield (values defined before it) → `arith.select`s of the yielded
/// values (the value itself where both branches yield the same).
struct IfToSelect;

impl RewritePattern for IfToSelect {
    fn name(&self) -> &str {
        "if-to-select"
    }

    fn root(&self) -> Option<&str> {
        Some("scf.if")
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        if ctx.result_count(op) == 0 {
            return false;
        }
        let (Some((_, then_yield, then_values)), Some((_, else_yield, else_values))) =
            (branch(ctx, op, 0), branch(ctx, op, 1))
        else {
            return false;
        };
        let only_yields = ctx.prev_op(then_yield).is_none() && ctx.prev_op(else_yield).is_none();
        if !only_yields || then_values.len() != ctx.result_count(op) || else_values.len() != then_values.len() {
            return false;
        }
        let condition = ctx.operand(op, 0);
        let (location, select) = (ctx.location(op), rewriter.ctx_mut().op_name("arith.select"));
        let mut values = Vec::with_capacity(then_values.len());
        for (&on_true, &on_false) in then_values.iter().zip(&else_values) {
            if on_true == on_false {
                values.push(on_true);
                continue;
            }
            let mut state = OperationState::new(select, location);
            state.operands = vec![condition, on_true, on_false];
            state.result_types = vec![rewriter.ctx().value_type(on_true)];
            let new = rewriter.build_before(op, state);
            values.push(rewriter.ctx().result(new, 0));
        }
        rewriter.replace_op(op, &values);
        true
    }
}

/// Which region of `ancestor` holds `op` (at any depth), if one does.
fn region_index_of(ctx: &Context, ancestor: Op, op: Op) -> Option<usize> {
    let mut current = op;
    loop {
        let parent = ctx.parent_op(current)?;
        if parent == ancestor {
            let region = ctx.block_parent(ctx.parent_block(current)?)?;
            return ctx.regions(ancestor).iter().position(|&r| r == region);
        }
        current = parent;
    }
}

/// Two adjacent `scf.if`s on the same condition → one `scf.if` whose branches run the first's
/// branch, then the second's, and yield the results of both (the second's uses of the first's
/// results become the values the first's branch yields).
struct CombineIfs;

impl RewritePattern for CombineIfs {
    fn name(&self) -> &str {
        "combine-ifs"
    }

    fn root(&self) -> Option<&str> {
        Some("scf.if")
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, second: Op) -> bool {
        let ctx = rewriter.ctx();
        let Some(first) = ctx.prev_op(second).filter(|&p| ctx.name(p) == ctx.name(second)) else { return false };
        let condition = ctx.operand(second, 0);
        if ctx.operands(first) != [condition] || ctx.regions(first).len() != 2 || ctx.regions(second).len() != 2 {
            return false;
        }
        let then_branches = [branch(ctx, first, 0), branch(ctx, second, 0)];
        let has_else = |op: Op| !ctx.region_blocks(ctx.regions(op)[1]).is_empty();
        let else_branches = [
            if has_else(first) { branch(ctx, first, 1) } else { None },
            if has_else(second) { branch(ctx, second, 1) } else { None },
        ];
        let [Some(first_then), Some(_)] = &then_branches else { return false };
        let first_then_values = first_then.2.clone();
        for (op, else_branch) in [first, second].into_iter().zip(&else_branches) {
            if has_else(op) != else_branch.is_some() || (else_branch.is_none() && ctx.result_count(op) != 0) {
                return false;
            }
        }
        let first_results: Vec<Value> = ctx.results(first).collect();
        // The second's uses of the first's results, inside its branches: the yielded values.
        for (index, &result) in first_results.iter().enumerate() {
            let uses: Vec<_> = rewriter.uses().uses(result).collect();
            for u in uses {
                let value = match region_index_of(rewriter.ctx(), second, u.user) {
                    Some(0) => first_then_values[index],
                    Some(_) => match &else_branches[0] {
                        Some(first_else) => first_else.2[index],
                        None => return false,
                    },
                    None => continue,
                };
                rewriter.set_operand(u.user, u.index, value);
            }
        }
        let ctx = rewriter.ctx_mut();
        let location = ctx.location(first);
        let yield_name = ctx.name(first_then.1);
        let mut result_types: Vec<_> = ctx.results(first).map(|r| ctx.value_type(r)).collect();
        result_types.extend(ctx.results(second).map(|r| ctx.value_type(r)));
        let any_else = else_branches.iter().any(Option::is_some);
        let mut new_yields = Vec::new();
        let mut state = OperationState::new(ctx.name(first), location);
        state.operands = vec![condition];
        state.result_types = result_types;
        for make_block in [true, any_else] {
            let region = ctx.create_region();
            if make_block {
                let block = ctx.create_block(&[]);
                ctx.append_block(region, block);
                let terminator = ctx.create_op(OperationState::new(yield_name, location));
                ctx.append_op(block, terminator);
                new_yields.push(terminator);
            }
            state.regions.push(region);
        }
        let combined = rewriter.create_op(state);
        rewriter.insert_op_before(first, combined);
        for (branches, &new_yield) in [then_branches, else_branches].iter().zip(&new_yields) {
            let mut yielded = Vec::new();
            for (block, old_yield, _) in branches.iter().flatten() {
                rewriter.inline_block_before(*block, new_yield, &[]);
                // Read now: the second's uses of the first's results were just replaced.
                yielded.extend_from_slice(rewriter.ctx().operands(*old_yield));
                rewriter.erase_op(*old_yield);
            }
            rewriter.set_operands(new_yield, &yielded);
        }
        let results: Vec<Value> = rewriter.ctx().results(combined).collect();
        let (for_first, for_second) = results.split_at(first_results.len());
        rewriter.replace_op(first, for_first);
        rewriter.replace_op(second, for_second);
        true
    }
}

/// `scf.for` iter_args that never change (the body yields the argument itself, or the initial
/// value) are removed: their results and their uses in the body become the initial values.
struct ForInvariantIterArgs;

impl RewritePattern for ForInvariantIterArgs {
    fn name(&self) -> &str {
        "for-invariant-iter-args"
    }

    fn root(&self) -> Option<&str> {
        Some("scf.for")
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let operands = ctx.operands(op).to_vec();
        if operands.len() < 3 {
            return false;
        }
        let inits = &operands[3..];
        let Some((block, terminator, yielded)) = branch(ctx, op, 0) else { return false };
        let arguments = ctx.block_arguments(block).to_vec();
        if arguments.len() != inits.len() + 1 || yielded.len() != inits.len() || ctx.result_count(op) != inits.len() {
            return false;
        }
        let invariant: Vec<bool> =
            (0..inits.len()).map(|i| yielded[i] == arguments[i + 1] || yielded[i] == inits[i]).collect();
        if !invariant.contains(&true) {
            return false;
        }
        for (i, &init) in inits.iter().enumerate() {
            if invariant[i] {
                rewriter.replace_all_uses_with(arguments[i + 1], init);
            }
        }
        // The same loop without them.
        let kept = |values: &[Value]| -> Vec<Value> {
            values.iter().zip(&invariant).filter(|(_, &inv)| !inv).map(|(&v, _)| v).collect()
        };
        let ctx = rewriter.ctx_mut();
        let mut state = OperationState::new(ctx.name(op), ctx.location(op));
        state.operands = operands[..3].to_vec();
        state.operands.extend(kept(inits));
        state.attributes = ctx.attributes(op).to_vec();
        let mut argument_types = vec![ctx.value_type(arguments[0])];
        argument_types.extend(kept(&arguments[1..]).iter().map(|&a| ctx.value_type(a)));
        state.result_types = argument_types[1..].to_vec();
        let region = ctx.create_region();
        let new_block = ctx.create_block(&argument_types);
        ctx.append_block(region, new_block);
        state.regions.push(region);
        let new_arguments = ctx.block_arguments(new_block).to_vec();
        let new_for = rewriter.create_op(state);
        rewriter.insert_op_before(op, new_for);
        let old_kept = {
            let mut list = vec![arguments[0]];
            list.extend(kept(&arguments[1..]));
            list
        };
        for (&old, &new) in old_kept.iter().zip(&new_arguments) {
            rewriter.replace_all_uses_with(old, new);
        }
        while let Some(child) = rewriter.ctx().first_op(block) {
            rewriter.move_op_to_end(child, new_block);
        }
        let new_yielded = kept(rewriter.ctx().operands(terminator));
        rewriter.set_operands(terminator, &new_yielded);
        let mut new_results = rewriter.ctx().results(new_for);
        let replacements: Vec<Value> = inits
            .iter()
            .zip(&invariant)
            .map(|(&init, &inv)| if inv { init } else { new_results.next().expect("one result per kept argument") })
            .collect();
        rewriter.replace_op(op, &replacements);
        true
    }
}

/// `scf.for` with constant bounds: zero iterations → its initial values; one iteration (a
/// positive constant step at least the distance) → its body, with the lower bound for the
/// induction variable.
struct ForWithConstantTripCount;

impl RewritePattern for ForWithConstantTripCount {
    fn name(&self) -> &str {
        "for-with-constant-trip-count"
    }

    fn root(&self) -> Option<&str> {
        Some("scf.for")
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let operands = ctx.operands(op);
        if operands.len() < 3 || ctx.regions(op).len() != 1 {
            return false;
        }
        // Bounds compare as signed integers of their type (i1 aside, which is never folded here).
        if !matches!(
            ctx.type_kind(ctx.value_type(operands[0])),
            TypeKind::Integer { width: 2..=64, .. } | TypeKind::Index
        ) {
            return false;
        }
        let (Some(lower), Some(upper)) = (int_constant(ctx, operands[0]), int_constant(ctx, operands[1])) else {
            return false;
        };
        let inits = operands[3..].to_vec();
        if upper <= lower {
            if inits.len() != ctx.result_count(op) {
                return false;
            }
            rewriter.replace_op(op, &inits);
            return true;
        }
        let Some(step) = int_constant(ctx, operands[2]) else { return false };
        if step <= 0 || (upper as i128 - lower as i128) > step as i128 {
            return false;
        }
        let mut arguments = vec![operands[0]];
        arguments.extend(inits);
        replace_with_region(rewriter, op, 0, &arguments)
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{assert_pipeline, run_pipeline};

    fn function(signature: &str, body: &str) -> String {
        format!("compute.func @f({signature}) {{\n{body}\n}}")
    }

    #[test]
    fn folds_constants_and_identities_and_hoists_constants() {
        assert_pipeline(
            "canonicalize",
            &function(
                "%a: i32, %p: i1) -> (i32",
                "  %c0 = arith.constant 0 : i32\n  %c2 = arith.constant 2 : i32\n  %c3 = arith.constant 3 : i32\n  %0 = arith.addi %c2, %c3 : i32\n  %1 = arith.addi %a, %c0 : i32\n  %2 = arith.muli %1, %0 : i32\n  %t = arith.constant true\n  %3 = scf.if %t -> (i32) {\n    %c7 = arith.constant 7 : i32\n    %4 = arith.addi %2, %c7 : i32\n    scf.yield %4 : i32\n  } else {\n    scf.yield %a : i32\n  }\n  compute.return %3 : i32",
            ),
            "compute.func @f(%arg0: i32, %arg1: i1) -> i32 {\n    %0 = arith.constant 5 : i32\n    %1 = arith.constant 7 : i32\n    %2 = arith.muli %arg0, %0 : i32\n    %3 = arith.addi %2, %1 : i32\n    compute.return %3 : i32\n  }",
        );
    }

    #[test]
    fn division_by_zero_and_overflow_are_not_folded() {
        let out = run_pipeline(
            "canonicalize",
            &function(
                ") -> (i32, i32, i8",
                "  %c0 = arith.constant 0 : i32\n  %c7 = arith.constant 7 : i32\n  %min = arith.constant -128 : i8\n  %m1 = arith.constant -1 : i8\n  %0 = arith.divsi %c7, %c0 : i32\n  %1 = arith.remui %c7, %c0 : i32\n  %2 = arith.divsi %min, %m1 : i8\n  compute.return %0, %1, %2 : i32, i32, i8",
            ),
        );
        assert!(out.contains("arith.divsi %1, %0 : i32"), "{out}");
        assert!(out.contains("arith.remui"), "{out}");
        assert!(out.contains("arith.divsi %2, %3 : i8"), "{out}");
    }

    #[test]
    fn wraps_in_the_type_width() {
        let out = run_pipeline(
            "canonicalize",
            &function(
                ") -> (i8, i8",
                "  %a = arith.constant 100 : i8\n  %0 = arith.addi %a, %a : i8\n  %b = arith.constant -1 : i8\n  %1 = arith.shrui %b, %b : i8\n  compute.return %0, %1 : i8, i8",
            ),
        );
        assert!(out.contains("arith.constant -56 : i8"), "{out}");
        // A shift by 255 (>= the width) is not folded.
        assert!(out.contains("arith.shrui"), "{out}");
    }

    #[test]
    fn if_on_a_constant_condition() {
        assert_pipeline(
            "canonicalize",
            &function(
                "%a: i32, %m: memref<4xi32>, %i: index) -> (i32",
                "  %false = arith.constant false\n  scf.if %false {\n    buffer.store %a, %m[%i] : memref<4xi32>\n  }\n  %0 = scf.if %false -> (i32) {\n    scf.yield %a : i32\n  } else {\n    %1 = arith.muli %a, %a : i32\n    buffer.store %1, %m[%i] : memref<4xi32>\n    scf.yield %1 : i32\n  }\n  compute.return %0 : i32",
            ),
            "compute.func @f(%arg0: i32, %arg1: memref<4xi32>, %arg2: index) -> i32 {\n    %0 = arith.muli %arg0, %arg0 : i32\n    buffer.store %0, %arg1[%arg2] : memref<4xi32>\n    compute.return %0 : i32\n  }",
        );
    }

    #[test]
    fn for_with_zero_one_and_unknown_trip_counts() {
        let out = run_pipeline(
            "canonicalize",
            &function(
                "%n: index, %a: i32, %m: memref<4xi32>) -> (i32, i32, i32",
                "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c4 = arith.constant 4 : index\n  %0 = scf.for %i = %c4 to %c0 step %c1 iter_args(%x = %a) -> (i32) {\n    buffer.store %x, %m[%i] : memref<4xi32>\n    %y = arith.addi %x, %x : i32\n    scf.yield %y : i32\n  }\n  %1 = scf.for %i = %c0 to %c1 step %c4 iter_args(%x = %a) -> (i32) {\n    buffer.store %x, %m[%i] : memref<4xi32>\n    %y = arith.muli %x, %x : i32\n    scf.yield %y : i32\n  }\n  %2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a) -> (i32) {\n    buffer.store %x, %m[%i] : memref<4xi32>\n    %y = arith.subi %x, %a : i32\n    scf.yield %y : i32\n  }\n  compute.return %0, %1, %2 : i32, i32, i32",
            ),
        );
        assert!(!out.contains("arith.addi"), "zero trips: the body is gone\n{out}");
        assert!(out.contains("buffer.store %arg1, %arg2[%0]"), "one trip: the body with i = 0\n{out}");
        assert!(out.contains("%2 = arith.muli %arg1, %arg1"), "{out}");
        assert_eq!(out.matches("scf.for").count(), 1, "unknown trip count: kept\n{out}");
        assert!(out.contains("compute.return %arg1, %2, %3 : i32, i32, i32"), "{out}");
    }

    #[test]
    fn effects_keep_loops_and_pure_loops_go() {
        let out = run_pipeline(
            "canonicalize",
            &function(
                "%n: index, %a: i32, %m: memref<4xi32>",
                "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  scf.for %i = %c0 to %n step %c1 {\n    %x = arith.addi %a, %a : i32\n  }\n  scf.for %i = %c0 to %n step %c1 {\n  }\n  scf.for %i = %c0 to %n step %c1 {\n    buffer.store %a, %m[%i] : memref<4xi32>\n  }\n  %k = kernel.local_size x\n  compute.return",
            )
            .replace("%k = kernel.local_size x\n  ", ""),
        );
        assert_eq!(out.matches("scf.for").count(), 1, "{out}");
        assert!(out.contains("buffer.store"), "{out}");
    }

    #[test]
    fn constants_are_deduplicated_and_hoisted_out_of_loops() {
        let out = run_pipeline(
            "canonicalize",
            &function(
                "%n: index, %m: memref<4xi32>",
                "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  scf.for %i = %c0 to %n step %c1 {\n    %c5 = arith.constant 5 : i32\n    %c1b = arith.constant 1 : index\n    %j = arith.addi %i, %c1b : index\n    buffer.store %c5, %m[%j] : memref<4xi32>\n  }\n  compute.return",
            ),
        );
        assert_eq!(out.matches("arith.constant 1 : index").count(), 1, "{out}");
        let hoisted = out.find("arith.constant 5 : i32").unwrap();
        assert!(hoisted < out.find("scf.for").unwrap(), "{out}");
    }

    #[test]
    fn comparisons_are_inverted_and_constants_combined() {
        let out = run_pipeline(
            "canonicalize",
            &function(
                "%a: i32, %b: i32) -> (i1, i32",
                "  %true = arith.constant true\n  %0 = arith.cmpi slt, %a, %b : i32\n  %1 = arith.xori %0, %true : i1\n  %c2 = arith.constant 2 : i32\n  %c3 = arith.constant 3 : i32\n  %2 = arith.addi %c2, %a : i32\n  %3 = arith.addi %2, %c3 : i32\n  compute.return %1, %3 : i1, i32",
            ),
        );
        assert!(out.contains("arith.cmpi sge, %arg0, %arg1 : i32"), "{out}");
        assert!(out.contains("arith.constant 5 : i32"), "{out}");
        assert!(out.contains("arith.addi %arg0, %0 : i32"), "{out}");
        assert!(!out.contains("xori"), "{out}");
    }

    #[test]
    fn options_turn_parts_off() {
        let text = function(
            "%a: i32) -> (i32, i32",
            "  %c2 = arith.constant 2 : i32\n  %c3 = arith.constant 3 : i32\n  %0 = arith.addi %c2, %c3 : i32\n  %t = arith.constant true\n  %1 = scf.if %t -> (i32) {\n    scf.yield %a : i32\n  } else {\n    scf.yield %0 : i32\n  }\n  compute.return %1, %0 : i32, i32",
        );
        let out = run_pipeline("canonicalize{fold=false}", &text);
        assert!(out.contains("arith.addi") && !out.contains("scf.if"), "{out}");
        let out = run_pipeline("canonicalize{region-simplify=false}", &text);
        assert!(!out.contains("arith.addi") && out.contains("scf.if"), "{out}");
    }

    #[test]
    fn is_idempotent() {
        let text = function(
            "%a: i32, %n: index) -> (i32",
            "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c3 = arith.constant 3 : i32\n  %0 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a) -> (i32) {\n    %y = arith.muli %x, %c3 : i32\n    %z = arith.addi %y, %c3 : i32\n    scf.yield %z : i32\n  }\n  compute.return %0 : i32",
        );
        let once = run_pipeline("canonicalize", &text);
        assert_eq!(run_pipeline("canonicalize", &once), once);
    }
}
