//! Tests of `inline`: the rules, and its cost and nesting on generated chains of calls.

use crate::testing::{assert_pipeline, run_pipeline};

#[test]
fn inlines_a_helper_and_erases_it() {
    assert_pipeline(
            "inline",
            "kernel.helper @square(%x: i32) -> i32 {\n  %0 = arith.muli %x, %x : i32\n  kernel.return %0 : i32\n}\nkernel.func @k(%a: i32, %m: memref<4xi32>, %i: index) {\n  %0 = kernel.call @square(%a) : (i32) -> i32\n  buffer.store %0, %m[%i] : memref<4xi32>\n  kernel.return\n}",
            "kernel.func @k(%a: i32, %m: memref<4xi32>, %i: index) {\n    %0 = arith.muli %a, %a : i32\n    buffer.store %0, %m[%i] : memref<4xi32>\n    kernel.return\n  }",
        );
}

#[test]
fn chains_inline_in_one_run() {
    let text = "compute.func @a(%x: i32) -> i32 {\n  %0 = compute.call @b(%x) : (i32) -> i32\n  %1 = arith.addi %0, %x : i32\n  compute.return %1 : i32\n}\n\
                    compute.func @b(%x: i32) -> i32 {\n  %0 = arith.muli %x, %x : i32\n  compute.return %0 : i32\n}\n\
                    compute.func @main(%x: i32) -> i32 {\n  %0 = compute.call @a(%x) : (i32) -> i32\n  compute.return %0 : i32\n}";
    let out = run_pipeline("inline", text);
    assert!(!out.contains("compute.call"), "{out}");
    assert!(!out.contains("@a") && !out.contains("@b"), "{out}");
    assert!(out.contains("arith.muli") && out.contains("arith.addi"), "{out}");
}

#[test]
fn recursion_and_host_functions_are_not_inlined() {
    let text = "compute.host_func @show(read memref<4xi32>)\n\
                    compute.func @even(%x: i32) -> i32 {\n  %0 = compute.call @odd(%x) : (i32) -> i32\n  compute.return %0 : i32\n}\n\
                    compute.func @odd(%x: i32) -> i32 {\n  %0 = compute.call @even(%x) : (i32) -> i32\n  compute.return %0 : i32\n}\n\
                    compute.func @main(%x: i32, %m: memref<4xi32>) -> i32 {\n  compute.call @show(%m) : (memref<4xi32>) -> ()\n  %0 = compute.call @even(%x) : (i32) -> i32\n  compute.return %0 : i32\n}";
    let out = run_pipeline("inline", text);
    assert_eq!(out.matches("compute.call").count(), 4, "{out}");
    assert!(out.contains("compute.func @even") && out.contains("compute.func @odd"), "{out}");
}

#[test]
fn an_entry_is_inlined_but_kept() {
    let text = "compute.func @main(%x: i32) -> i32 {\n  compute.return %x : i32\n}\n\
                    compute.func @caller(%x: i32) -> i32 attributes {entry} {\n  %0 = compute.call @main(%x) : (i32) -> i32\n  compute.return %0 : i32\n}";
    let out = run_pipeline("inline", text);
    assert!(!out.contains("compute.call"), "{out}");
    assert!(out.contains("compute.func @main"), "{out}");
}

use super::nesting::NESTING_BOUND;
use hat_ir::pass::PassManager;
use hat_ir::{parse_source, print_op, Context, Diagnostic, Op, PrintOptions, Severity};

/// `n` functions, `@main` (when `entry`) then `@f1` ... `@f{n-1}`, each calling the next.
/// `nested`: each call sits in an `scf.if` (the inlined code nests one level deeper per call).
fn chain(n: usize, nested: bool, entry: bool) -> String {
    let mut text = String::new();
    for i in 0..n {
        let name = if i == 0 && entry { "main".to_string() } else { format!("f{i}") };
        let next = format!("f{}", i + 1);
        let last = i + 1 == n;
        if nested {
            text += &format!("compute.func @{name}(%p: i1, %m: memref<4xi32>, %v: i32) {{\n");
            if last {
                text += "  %c0 = arith.constant 0 : index\n  buffer.store %v, %m[%c0] : memref<4xi32>\n";
            } else {
                text += &format!(
                    "  scf.if %p {{\n    compute.call @{next}(%p, %m, %v) : (i1, memref<4xi32>, i32) -> ()\n  }}\n"
                );
            }
            text += "  compute.return\n}\n";
        } else {
            text += &format!("compute.func @{name}(%x: i32) -> i32 {{\n  %y = arith.addi %x, %x : i32\n");
            if last {
                text += "  compute.return %y : i32\n}\n";
            } else {
                text += &format!("  %r = compute.call @{next}(%y) : (i32) -> i32\n  compute.return %r : i32\n}}\n");
            }
        }
    }
    text
}

/// Parses `text`, runs `inline`; the context, the module, the diagnostics and the statistics.
fn inline(text: &str) -> (Context, Op, Vec<Diagnostic>, Vec<(String, u64)>) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "chain.hat", text).unwrap_or_else(|e| panic!("{e:?}"));
    let mut manager = PassManager::new("builtin.module", Default::default());
    manager.add_pipeline(&crate::registry(), "inline").expect("a valid pipeline");
    let diagnostics = manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{e:?}"));
    let statistics = manager.statistics().iter().flat_map(|(_, s)| s.iter().cloned()).collect();
    (ctx, module, diagnostics, statistics)
}

fn statistic(statistics: &[(String, u64)], name: &str) -> u64 {
    statistics.iter().find(|(n, _)| n == name).map_or(0, |&(_, v)| v)
}

/// The ops of `module` and everything nested, and the deepest nesting of regions.
fn size_and_depth(ctx: &Context, module: Op) -> (usize, usize) {
    let mut stack = vec![(module, 0)];
    let (mut size, mut deepest) = (0, 0);
    while let Some((op, depth)) = stack.pop() {
        size += 1;
        deepest = deepest.max(depth);
        for &region in ctx.regions(op) {
            for &block in ctx.region_blocks(region) {
                stack.extend(ctx.block_ops(block).map(|o| (o, depth + 1)));
            }
        }
    }
    (size, deepest)
}

#[test]
fn a_long_chain_inlines_at_a_cost_linear_in_its_length() {
    let n = 3000;
    let (ctx, module, diagnostics, statistics) = inline(&chain(n, false, true));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(statistic(&statistics, "num-inlined"), n as u64 - 1);
    assert_eq!(statistic(&statistics, "num-erased"), n as u64 - 1);
    let (size, _) = size_and_depth(&ctx, module);
    // @main: n additions and its return, in the module.
    assert_eq!(size, 1 + 1 + n + 1);
    // Every op the context ever made: the parsed ones and those created while inlining. Copying
    // each callee once it was inlined (callees first) makes n²/2; moving single-use bodies
    // makes none.
    assert!(ctx.op_count() <= 4 * n, "{} ops made for a chain of {n}", ctx.op_count());
    let printed = print_op(&ctx, module, PrintOptions::default());
    assert_eq!(printed.matches("arith.addi").count(), n);
    assert!(!printed.contains("compute.call"), "{printed}");
}

#[test]
fn a_chain_in_a_library_is_inlined_into_every_function_copying_final_bodies() {
    // Without an entry every function is kept, and each gets the whole rest of the chain: the
    // output holds n(n+1)/2 additions. Each callee is copied once its own calls are inlined, so
    // the ops made are those of the output (copying bodies that still hold calls would make
    // every call op again, and erase it).
    let n = 200;
    let (ctx, module, _, statistics) = inline(&chain(n, false, false));
    assert_eq!(statistic(&statistics, "num-erased"), 0);
    assert_eq!(statistic(&statistics, "num-inlined"), n as u64 - 1);
    let printed = print_op(&ctx, module, PrintOptions::default());
    assert_eq!(printed.matches("compute.func").count(), n);
    assert_eq!(printed.matches("arith.addi").count(), n * (n + 1) / 2);
    assert!(!printed.contains("compute.call"), "{printed}");
    let (size, _) = size_and_depth(&ctx, module);
    assert!(ctx.op_count() <= size + 2 * n, "{} ops made for an output of {size}", ctx.op_count());
}

#[test]
fn nesting_stops_below_the_parser_bound_and_the_output_parses_again() {
    let n = NESTING_BOUND + 200;
    let (ctx, module, diagnostics, statistics) = inline(&chain(n, true, true));
    let too_deep = statistic(&statistics, "num-too-deep");
    assert!(too_deep >= 1, "{statistics:?}");
    assert_eq!(statistic(&statistics, "num-inlined") + too_deep, n as u64 - 1);
    let remarks: Vec<_> = diagnostics.iter().filter(|d| d.severity == Severity::Remark).collect();
    assert_eq!(remarks.len(), 1, "{diagnostics:?}");
    assert!(remarks[0].message.contains("nest deeper than the 2048 levels"), "{}", remarks[0].message);
    let (_, depth) = size_and_depth(&ctx, module);
    assert!(depth <= NESTING_BOUND, "nested {depth} deep");
    assert!(depth + 16 >= NESTING_BOUND, "stopped early, at {depth}");
    // The calls left are those of the functions kept; each kept function is inlined in turn.
    let printed = print_op(&ctx, module, PrintOptions::default());
    assert_eq!(printed.matches("compute.call").count() as u64, too_deep);
    let mut again = hat_dialects::context();
    let reparsed = parse_source(&mut again, "again.hat", &printed).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(hat_ir::verify(&again, reparsed).is_empty());
    assert_eq!(print_op(&again, reparsed, PrintOptions::default()), printed);
}

#[test]
fn functions_in_the_generic_form_are_callers_too() {
    // No reference names @main: its name is not an interned identifier, and it must still be
    // visited as a caller.
    let text = r#"
"compute.func"() ({
^bb0(%x: i32):
  %y = arith.muli %x, %x : i32
  "compute.return"(%y) : (i32) -> ()
}) {sym_name = "square", function_type = (i32) -> i32} : () -> ()
"compute.func"() ({
^bb0(%x: i32):
  %y = "compute.call"(%x) {callee = @square} : (i32) -> i32
  "compute.return"(%y) : (i32) -> ()
}) {sym_name = "main", function_type = (i32) -> i32} : () -> ()
"#;
    let out = run_pipeline("inline", text);
    assert!(!out.contains("compute.call") && !out.contains("@square"), "{out}");
    assert!(out.contains("arith.muli"), "{out}");
}
