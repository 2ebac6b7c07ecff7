//! Tests of the rewriter, the use map, the listeners and the greedy driver, on a small dialect
//! defined here (the core knows no real dialect).

use super::*;
use crate::attributes::AttributeKind;
use crate::dialect::{OpDefinition, OpTraits};
use crate::effects::MemoryEffects;
use crate::{parse_source, print_op, verify, Attribute, Context, Location, Op, OperationState, PrintOptions, Type};

struct TestOp {
    name: &'static str,
    traits: OpTraits,
}

impl OpDefinition for TestOp {
    fn name(&self) -> &str {
        self.name
    }

    fn traits(&self) -> OpTraits {
        self.traits
    }

    fn memory_effects(&self, _: &Context, _: Op) -> MemoryEffects {
        if self.traits.contains(OpTraits::PURE) || self.traits.contains(OpTraits::TERMINATOR) {
            MemoryEffects::none()
        } else {
            MemoryEffects::Unknown
        }
    }
}

/// `t.const {value}`, `t.add` (commutative, folds), `t.neg`, `t.sink` (effects), `t.region`
/// (a region op with the effects of its body), `t.yield`, `t.func` (isolated).
fn context() -> Context {
    let mut ctx = Context::new();
    ctx.register_dialect("builtin", "");
    ctx.register_dialect("t", "test");
    let pure = OpTraits::PURE;
    for (name, traits) in [
        ("builtin.module", OpTraits::ISOLATED_FROM_ABOVE | OpTraits::NO_TERMINATOR | OpTraits::SYMBOL_TABLE),
        ("t.const", pure | OpTraits::CONSTANT_LIKE),
        ("t.add", pure | OpTraits::COMMUTATIVE),
        ("t.neg", pure),
        ("t.sink", OpTraits::NONE),
        ("t.region", OpTraits::SINGLE_BLOCK),
        ("t.yield", OpTraits::TERMINATOR | OpTraits::RETURN_LIKE),
        ("t.func", OpTraits::ISOLATED_FROM_ABOVE | OpTraits::NO_TERMINATOR),
    ] {
        ctx.register_op(TestOp { name, traits });
    }
    ctx.register_folder("t.add", fold_add);
    ctx.register_folder("t.neg", fold_neg);
    ctx
}

fn int(f: &FoldContext<'_>, index: usize) -> Option<i64> {
    f.constant_kind(index)?.as_i64()
}

/// Constants add; `x + 0 → x`.
fn fold_add(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let ty = f.ctx().value_type(f.ctx().result(op, 0));
    match (int(f, 0), int(f, 1)) {
        (Some(a), Some(b)) => Some(FoldResult::Attribute(f.integer_attr(a.wrapping_add(b), ty))),
        (_, Some(0)) => Some(FoldResult::Value(f.ctx().operand(op, 0))),
        (Some(0), _) => Some(FoldResult::Value(f.ctx().operand(op, 1))),
        _ => None,
    }
}

/// `neg(neg(x)) → x`; `neg(c) → -c`.
fn fold_neg(f: &mut FoldContext<'_>, op: Op) -> Option<FoldResult> {
    let ctx = f.ctx();
    let operand = ctx.operand(op, 0);
    if let Some(inner) = ctx.defining_op(operand).filter(|&d| ctx.name_str(d) == "t.neg") {
        return Some(FoldResult::Value(ctx.operand(inner, 0)));
    }
    let ty = ctx.value_type(ctx.result(op, 0));
    let value = int(f, 0)?;
    Some(FoldResult::Attribute(f.integer_attr(value.wrapping_neg(), ty)))
}

fn materialize(ctx: &mut Context, value: Attribute, ty: Type, location: Location) -> Option<OperationState> {
    if !matches!(ctx.attribute_kind(value), AttributeKind::Integer { .. }) {
        return None;
    }
    let mut state = OperationState::new(ctx.op_name("t.const"), location);
    state.attributes.push((ctx.ident("value"), value));
    state.result_types.push(ty);
    Some(state)
}

fn recursive(ctx: &Context, op: Op) -> bool {
    ctx.name_str(op) == "t.region"
}

fn parse(ctx: &mut Context, text: &str) -> Op {
    let module = parse_source(ctx, "test.mlir", text).unwrap_or_else(|e| panic!("{e:?}"));
    let errors = verify(ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    module
}

fn print(ctx: &Context, module: Op) -> String {
    let errors = verify(ctx, module);
    assert!(
        errors.is_empty(),
        "{errors:?}\n{}",
        print_op(ctx, module, PrintOptions { generic: true, ..Default::default() })
    );
    print_op(ctx, module, PrintOptions { generic: true, ..Default::default() })
}

/// A function `@f(%arg0: i32)` around `body` (generic form).
fn function(body: &str) -> String {
    format!("\"t.func\"() ({{\n^bb0(%arg0: i32):\n{body}\n}}) : () -> ()")
}

fn config() -> GreedyConfig {
    GreedyConfig { materialize: Some(materialize), recursive_effects: recursive, ..GreedyConfig::default() }
}

fn canonicalize(text: &str, patterns: &PatternSet) -> (String, GreedyStats) {
    let mut ctx = context();
    let module = parse(&mut ctx, text);
    let stats = apply_patterns_greedily(&mut ctx, module, patterns, &config());
    (print(&ctx, module), stats)
}

fn body_of(printed: &str) -> Vec<String> {
    printed
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('%') || l.starts_with("\"t."))
        .filter(|l| !l.starts_with("\"t.func\""))
        .map(str::to_string)
        .collect()
}

#[test]
fn use_map_tracks_uses_through_changes() {
    let mut ctx = context();
    let module = parse(
        &mut ctx,
        &function(
            "  %0 = \"t.const\"() {value = 1 : i32} : () -> i32\n  %1 = \"t.add\"(%arg0, %0) : (i32, i32) -> i32\n  %2 = \"t.add\"(%1, %1) : (i32, i32) -> i32\n  \"t.sink\"(%2, %0) : (i32, i32) -> ()",
        ),
    );
    let function = ctx.body_ops(module)[0];
    let ops = ctx.body_ops(function);
    let (constant, add1, add2, sink) = (ops[0], ops[1], ops[2], ops[3]);
    let (c, a1, a2) = (ctx.result(constant, 0), ctx.result(add1, 0), ctx.result(add2, 0));
    let mut rewriter = Rewriter::new(&mut ctx, module);
    let uses = |r: &Rewriter<'_, NoListener>, v| {
        let mut list: Vec<(Op, usize)> = r.uses().uses(v).map(|u| (u.user, u.index)).collect();
        list.sort();
        list
    };
    assert_eq!(uses(&rewriter, c), vec![(add1, 1), (sink, 1)]);
    assert_eq!(uses(&rewriter, a1), vec![(add2, 0), (add2, 1)]);
    assert!(rewriter.uses().has_one_use(a2));
    rewriter.replace_all_uses_with(a1, c);
    assert!(!rewriter.uses().has_uses(a1));
    assert_eq!(rewriter.uses().use_count(c), 4);
    assert_eq!(rewriter.ctx().operands(add2), &[c, c]);
    rewriter.erase_op(add1);
    assert!(rewriter.is_erased(add1));
    assert_eq!(rewriter.ctx().parent_block(add1), None);
    rewriter.set_operands(add2, &[c]);
    assert_eq!(uses(&rewriter, c), vec![(add2, 0), (sink, 1)]);
    rewriter.set_operand(sink, 1, a2);
    assert_eq!(uses(&rewriter, a2), vec![(sink, 0), (sink, 1)]);
}

#[test]
#[should_panic(expected = "whose results are still used")]
fn erasing_a_used_op_panics() {
    let mut ctx = context();
    let module = parse(
        &mut ctx,
        &function("  %0 = \"t.const\"() {value = 1 : i32} : () -> i32\n  \"t.sink\"(%0) : (i32) -> ()"),
    );
    let constant = ctx.body_ops(ctx.body_ops(module)[0])[0];
    Rewriter::new(&mut ctx, module).erase_op(constant);
}

#[test]
fn forced_erase_and_recursive_erase() {
    let mut ctx = context();
    let module = parse(
        &mut ctx,
        &function(
            "  %0 = \"t.const\"() {value = 1 : i32} : () -> i32\n  \"t.region\"() ({\n    \"t.sink\"(%0) : (i32) -> ()\n    \"t.yield\"() : () -> ()\n  }) : () -> ()\n  \"t.sink\"(%0) : (i32) -> ()",
        ),
    );
    let ops = ctx.body_ops(ctx.body_ops(module)[0]);
    let (constant, region) = (ops[0], ops[1]);
    let nested = ctx.walk(region);
    let mut rewriter = Rewriter::with_listener(&mut ctx, module, RecordingListener::default());
    rewriter.erase_op(region);
    assert!(nested.iter().all(|&op| rewriter.is_erased(op)));
    assert_eq!(rewriter.uses().use_count(rewriter.ctx().result(constant, 0)), 1);
    // Nested ops first, each block from its end (users before definitions).
    assert_eq!(rewriter.listener.events, ["erased t.yield", "erased t.sink", "erased t.region"]);
    rewriter.erase_op_forced(constant);
    assert!(rewriter.is_erased(constant));
}

#[test]
fn clone_and_inline_keep_uses_and_notify() {
    let mut ctx = context();
    let module = parse(
        &mut ctx,
        &function(
            "  %0 = \"t.region\"() ({\n  ^bb0(%a: i32):\n    %1 = \"t.neg\"(%a) : (i32) -> i32\n    \"t.yield\"(%1) : (i32) -> ()\n  }) : () -> i32\n  \"t.sink\"(%0) : (i32) -> ()",
        ),
    );
    let function = ctx.body_ops(module)[0];
    let argument = ctx.block_arguments(ctx.region_blocks(ctx.regions(function)[0])[0])[0];
    let region_op = ctx.body_ops(function)[0];
    let mut rewriter = Rewriter::with_listener(&mut ctx, module, RecordingListener::default());
    let mut mapping = Mapping::new();
    let copy = rewriter.clone_op(region_op, &mut mapping);
    rewriter.insert_op_before(region_op, copy);
    assert_eq!(rewriter.listener.events, ["inserted t.region", "inserted t.neg", "inserted t.yield"]);
    // Inline the copy's block before the original, with the argument for %a.
    let block = rewriter.ctx().region_blocks(rewriter.ctx().regions(copy)[0])[0];
    rewriter.inline_block_before(block, region_op, &[argument]);
    let moved: Vec<Op> = rewriter.ctx().block_ops(rewriter.ctx().parent_block(region_op).unwrap()).collect();
    let names: Vec<&str> = moved.iter().map(|&o| rewriter.ctx().name_str(o)).collect();
    assert_eq!(names, ["t.region", "t.neg", "t.yield", "t.region", "t.sink"]);
    assert!(rewriter.uses().uses(argument).any(|u| u.user == moved[1]));
    let terminator = moved[2];
    rewriter.erase_op(terminator);
    rewriter.erase_op(copy);
    let printed = print(rewriter.ctx(), module);
    assert!(printed.contains("\"t.neg\"(%arg0)"), "{printed}");
}

#[test]
fn driver_folds_removes_dead_ops_and_hoists_constants() {
    let text = function(
        "  %0 = \"t.const\"() {value = 2 : i32} : () -> i32\n  %1 = \"t.const\"() {value = 3 : i32} : () -> i32\n  %2 = \"t.add\"(%0, %1) : (i32, i32) -> i32\n  %3 = \"t.neg\"(%arg0) : (i32) -> i32\n  %4 = \"t.neg\"(%3) : (i32) -> i32\n  %z = \"t.const\"() {value = 0 : i32} : () -> i32\n  %5 = \"t.add\"(%4, %z) : (i32, i32) -> i32\n  \"t.region\"() ({\n    %6 = \"t.const\"() {value = 5 : i32} : () -> i32\n    %dead = \"t.neg\"(%6) : (i32) -> i32\n    \"t.sink\"(%6, %5) : (i32, i32) -> ()\n    \"t.yield\"() : () -> ()\n  }) : () -> ()\n  \"t.sink\"(%2) : (i32) -> ()",
    );
    let (printed, stats) = canonicalize(&text, &PatternSet::new());
    assert_eq!(
        body_of(&printed),
        [
            "%0 = \"t.const\"() {value = 5 : i32} : () -> i32",
            "\"t.region\"() ({",
            "\"t.sink\"(%0, %arg0) : (i32, i32) -> ()",
            "\"t.yield\"() : () -> ()",
            "\"t.sink\"(%0) : (i32) -> ()",
        ],
        "{printed}"
    );
    assert!(stats.changed && stats.converged);
    assert_eq!(stats.iterations, 2);
    assert_eq!(stats.folded, 3, "2 + 3, neg(neg(x)), x + 0: {stats:?}");
    assert_eq!(stats.deduplicated, 1, "the 5 in the region is the folded 2 + 3: {stats:?}");
}

#[test]
fn driver_keeps_effects_and_region_ops_with_effects() {
    let text = function(
        "  %0 = \"t.neg\"(%arg0) : (i32) -> i32\n  \"t.sink\"(%0) : (i32) -> ()\n  \"t.region\"() ({\n    \"t.sink\"(%arg0) : (i32) -> ()\n    \"t.yield\"() : () -> ()\n  }) : () -> ()\n  \"t.region\"() ({\n    %1 = \"t.neg\"(%arg0) : (i32) -> i32\n    \"t.yield\"() : () -> ()\n  }) : () -> ()",
    );
    let (printed, stats) = canonicalize(&text, &PatternSet::new());
    assert_eq!(printed.matches("t.sink").count(), 2, "{printed}");
    assert_eq!(printed.matches("t.region").count(), 1, "the pure region goes: {printed}");
    assert_eq!(stats.erased, 1);
}

/// `t.sink(x) → t.sink(t.neg(t.neg(x)))`, which the folder of `t.neg` undoes: a pattern and a
/// folder that never converge.
struct DoubleNegate;

impl RewritePattern for DoubleNegate {
    fn name(&self) -> &str {
        "double-negate"
    }

    fn root(&self) -> Option<&str> {
        Some("t.sink")
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let &[value] = ctx.operands(op) else { return false };
        if ctx.defining_op(value).is_some_and(|d| ctx.name_str(d) == "t.neg") {
            return false;
        }
        let ty = ctx.value_type(value);
        let mut state = OperationState::new(rewriter.ctx_mut().op_name("t.neg"), Location::UNKNOWN);
        state.operands = vec![value];
        state.result_types = vec![ty];
        let first = rewriter.build_before(op, state.clone());
        state.operands = vec![rewriter.ctx().result(first, 0)];
        let second = rewriter.build_before(op, state);
        let negated = rewriter.ctx().result(second, 0);
        rewriter.set_operand(op, 0, negated);
        true
    }
}

#[test]
fn patterns_and_folders_reach_a_fixpoint_and_respect_the_bound() {
    let text = function("  \"t.sink\"(%arg0) : (i32) -> ()");
    let mut patterns = PatternSet::new();
    patterns.add(DoubleNegate);
    // The pattern wraps the operand in neg(neg(.)), which folds back to %arg0: without a bound this
    // would never end; the driver stops after max_rewrites and says it did not converge.
    let mut ctx = context();
    let module = parse(&mut ctx, &text);
    let config = GreedyConfig { max_rewrites: Some(100), ..config() };
    let stats = apply_patterns_greedily(&mut ctx, module, &patterns, &config);
    assert!(!stats.converged);
    assert_eq!(stats.iterations, 1);
    assert_eq!(stats.rewritten + stats.folded, 100, "{stats:?}");
    let printed = print(&ctx, module);
    assert!(printed.contains("\"t.sink\""), "{printed}");
}

#[test]
fn pattern_benefit_orders_the_patterns() {
    struct Mark(&'static str, u16);
    impl RewritePattern for Mark {
        fn name(&self) -> &str {
            self.0
        }
        fn root(&self) -> Option<&str> {
            None
        }
        fn benefit(&self) -> u16 {
            self.1
        }
        fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
            let ctx = rewriter.ctx();
            if ctx.name_str(op) != "t.sink" || ctx.attribute(op, "mark").is_some() {
                return false;
            }
            let ctx = rewriter.ctx_mut();
            let (key, value) = (ctx.ident("mark"), ctx.string_attr(self.0));
            rewriter.set_attribute(op, key, value);
            true
        }
    }
    let mut patterns = PatternSet::new();
    patterns.add(Mark("low", 1));
    patterns.add(Mark("high", 5));
    let (printed, stats) = canonicalize(&function("  \"t.sink\"(%arg0) : (i32) -> ()"), &patterns);
    assert!(printed.contains("mark = \"high\""), "{printed}");
    assert_eq!(stats.rewritten, 1);
}

#[test]
fn fold_op_folds_without_a_driver() {
    let mut ctx = context();
    let module = parse(
        &mut ctx,
        &function(
            "  %0 = \"t.const\"() {value = 40 : i32} : () -> i32\n  %1 = \"t.const\"() {value = 2 : i32} : () -> i32\n  %2 = \"t.add\"(%0, %1) : (i32, i32) -> i32\n  \"t.sink\"(%2) : (i32) -> ()",
        ),
    );
    let add = ctx.body_ops(ctx.body_ops(module)[0])[2];
    let Some(FoldResult::Attribute(value)) = fold_op(&mut ctx, add) else { panic!("no fold") };
    assert_eq!(ctx.attribute_kind(value).as_i64(), Some(42));
    // Folding changed nothing.
    assert_eq!(ctx.body_ops(ctx.body_ops(module)[0]).len(), 4);
}

#[test]
fn use_map_and_driver_of_one_function_cost_that_function() {
    let mut ctx = context();
    let functions: String = (0..500)
        .map(|_| {
            function("  %0 = \"t.const\"() {value = 2 : i32} : () -> i32\n  %1 = \"t.add\"(%arg0, %0) : (i32, i32) -> i32\n  \"t.sink\"(%1) : (i32) -> ()")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let module = parse(&mut ctx, &functions);
    let last = *ctx.body_ops(module).last().unwrap();
    let uses = UseMap::build(&ctx, last);
    // Four ops and four values under the function (with its argument); the context has 500 times
    // as many.
    assert!(uses.table_capacity() <= 8, "{} entries", uses.table_capacity());
    assert!(ctx.value_count() > 1000 && ctx.op_count() > 1000);
    let stats = apply_patterns_greedily(&mut ctx, last, &PatternSet::new(), &config());
    assert!(stats.converged);
}

#[test]
fn erased_slots_are_reused_only_after_a_reclaim() {
    let mut ctx = context();
    let module = parse(
        &mut ctx,
        &function(
            "  %0 = \"t.const\"() {value = 1 : i32} : () -> i32\n  %1 = \"t.neg\"(%0) : (i32) -> i32\n  \"t.region\"() ({\n    %2 = \"t.neg\"(%arg0) : (i32) -> i32\n    \"t.yield\"() : () -> ()\n  }) : () -> ()\n  \"t.sink\"(%0) : (i32) -> ()",
        ),
    );
    let ops = ctx.body_ops(ctx.body_ops(module)[0]);
    let (negation, region) = (ops[1], ops[2]);
    let nested = ctx.walk(region);
    let neg_result = ctx.result(negation, 0);
    ctx.erase_op(negation);
    ctx.erase_op(region);
    ctx.erase_op(region); // erasing twice does nothing
    assert!(ctx.is_erased(negation) && ctx.is_erased(region));
    // Before the reclaim the erased handles still name the erased ops.
    let name = ctx.op_name("t.neg");
    let ty = ctx.value_type(neg_result);
    let state = |results: usize| {
        let mut state = OperationState::new(name, Location::UNKNOWN);
        state.result_types = vec![ty; results];
        state
    };
    let slots = ctx.op_count();
    let fresh = ctx.create_op(state(1));
    assert_eq!((fresh.index(), ctx.op_count()), (slots, slots + 1));
    assert_eq!(ctx.name_str(negation), "t.neg");
    assert_eq!(ctx.walk(region), nested);

    let reclaimed = ctx.reclaim_erased_ops();
    // The region op and the two ops nested in it, and the negation.
    assert_eq!(reclaimed.len(), 4);
    assert!(nested.iter().all(|&op| ctx.is_erased(op) && reclaimed.contains(&op)));
    assert!(ctx.regions(region).is_empty());
    // An op with one result takes the slot of the negation (the only free one with one result),
    // with its result value; one with two results gets a new slot.
    let values = ctx.value_count();
    let reused = ctx.create_op(state(1));
    assert_eq!(reused, negation);
    assert!(!ctx.is_erased(reused));
    assert_eq!(ctx.result(reused, 0), neg_result);
    assert_eq!(ctx.value_def(neg_result), crate::ValueDef::Result { op: reused, index: 0 });
    let two = ctx.create_op(state(2));
    assert_eq!((two.index(), ctx.value_count()), (slots + 1, values + 2));
    // Zero results: the region op's slot or its terminator's.
    let none = ctx.create_op(state(0));
    assert!(none == region || none == nested[2], "{none:?}");
    assert_eq!(ctx.op_count(), slots + 2);
    assert!(ctx.reclaim_erased_ops().is_empty());
}
