//! hat's passes on the vendor dialect of `hat_test_dialects::vendor` (test-dialects/src/vendor.rs), whose names no hat code knows:
//! `inline` inlines its `vendor.invoke` calls of `vendor.proc`s, `dce` erases its unused procs
//! (keeping `@main`) and its dead loops, and `canonicalize` removes its dead loops and folds its
//! loops of constant trip count — all through the op interfaces and traits (call, callable,
//! loop-like, `RECURSIVE_EFFECTS`, `HOST_CODE`), run by a pass manager from hat's registry.

use hat_test_dialects::vendor as vendor_dialect;

use hat_ir::pass::PassManager;
use hat_ir::{parse_source, print_op, Context, Op, PrintOptions};

/// `@main(%n)`: a loop whose sum is returned and a loop whose sum is unused (dead once its call
/// is inlined), both calling `@square`; `@unused` is called by nobody.
const PROGRAM: &str = r#"
"vendor.proc"() ({
^bb0(%x: i64):
  %y = arith.muli %x, %x : i64
  "vendor.ret"(%y) : (i64) -> ()
}) {sym_name = "square", function_type = (i64) -> i64} : () -> ()
"vendor.proc"() ({
^bb0(%x: i64):
  "vendor.ret"(%x) : (i64) -> ()
}) {sym_name = "unused", function_type = (i64) -> i64} : () -> ()
"vendor.proc"() ({
^bb0(%n: i64):
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %dead = "vendor.repeat"(%zero, %zero, %n, %one) ({
  ^bb0(%i: i64, %acc: i64):
    %s = "vendor.invoke"(%i) {target = @square} : (i64) -> i64
    %t = arith.addi %acc, %s : i64
    "vendor.next"(%t) : (i64) -> ()
  }) : (i64, i64, i64, i64) -> i64
  %sum = "vendor.repeat"(%zero, %zero, %n, %one) ({
  ^bb0(%i: i64, %acc: i64):
    %s = "vendor.invoke"(%i) {target = @square} : (i64) -> i64
    %t = arith.subi %acc, %s : i64
    "vendor.next"(%t) : (i64) -> ()
  }) : (i64, i64, i64, i64) -> i64
  "vendor.ret"(%sum) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;

/// Parses `text` in a context with the hat and vendor dialects, runs `pipeline` from hat's pass
/// registry, checks that the result verifies, and returns it printed with its statistics.
fn run(pipeline: &str, text: &str) -> (String, Vec<(String, u64)>) {
    let mut ctx: Context = vendor_dialect::context();
    let module: Op = parse_source(&mut ctx, "vendor.hat", text).unwrap_or_else(|e| panic!("{e:?}"));
    let mut manager = PassManager::new("builtin.module", Default::default());
    manager.add_pipeline(&hat_passes::registry(), pipeline).unwrap_or_else(|e| panic!("{e}"));
    manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{e:?}"));
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    let statistics = manager.statistics().iter().flat_map(|(_, s)| s.iter().cloned()).collect();
    (print_op(&ctx, module, PrintOptions::default()), statistics)
}

fn statistic(statistics: &[(String, u64)], name: &str) -> u64 {
    statistics.iter().filter(|(n, _)| n == name).map(|&(_, v)| v).sum()
}

#[test]
fn inline_inlines_vendor_calls_and_erases_the_callee() {
    let (out, statistics) = run("inline", PROGRAM);
    assert_eq!(statistic(&statistics, "num-inlined"), 2, "{out}");
    assert!(!out.contains("vendor.invoke"), "{out}");
    assert_eq!(out.matches("arith.muli").count(), 2, "the body of @square in each loop\n{out}");
    assert!(!out.contains("\"square\""), "@square is erased once no call is left\n{out}");
    assert!(out.contains("\"main\""), "{out}");
    // Never referred to, so not the inliner's to erase: dce's.
    assert!(out.contains("\"unused\""), "{out}");
}

#[test]
fn dce_erases_unused_vendor_procs_and_keeps_main() {
    let (out, statistics) = run("dce", PROGRAM);
    assert_eq!(statistic(&statistics, "num-erased-symbols"), 1, "{out}");
    assert!(!out.contains("\"unused\""), "{out}");
    assert!(out.contains("\"square\"") && out.contains("\"main\""), "{out}");
    // A call has unknown effects: the loop around it stays while the call does.
    assert_eq!(out.matches("vendor.repeat").count(), 2, "{out}");
}

#[test]
fn a_vendor_loop_with_an_unused_result_and_an_effect_free_body_is_dead() {
    // After inlining, the unused loop's body is arithmetic only: its RECURSIVE_EFFECTS make it
    // dead, for dce and for canonicalize alike. The loop whose result is returned stays.
    for cleanup in ["dce", "canonicalize"] {
        let (out, _) = run(&format!("inline,{cleanup}"), PROGRAM);
        assert_eq!(out.matches("vendor.repeat").count(), 1, "{cleanup}:\n{out}");
        assert!(out.contains("arith.subi") && !out.contains("arith.addi"), "{cleanup}:\n{out}");
        assert!(out.contains("\"main\"") && !out.contains("\"square\""), "{cleanup}:\n{out}");
    }
}

#[test]
fn canonicalize_folds_vendor_loops_of_constant_trip_count_through_the_loop_interface() {
    // Bounds last (not scf.for's layout): the loop-like interface says where they are.
    let text = r#"
"vendor.proc"() ({
^bb0(%a: i64):
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c5 = arith.constant 5 : i64
  %never = "vendor.repeat"(%a, %c5, %c2, %c1) ({
  ^bb0(%i: i64, %acc: i64):
    %t = arith.muli %acc, %i : i64
    "vendor.next"(%t) : (i64) -> ()
  }) : (i64, i64, i64, i64) -> i64
  %once = "vendor.repeat"(%never, %c2, %c5, %c5) ({
  ^bb0(%i: i64, %acc: i64):
    %t = arith.subi %acc, %i : i64
    "vendor.next"(%t) : (i64) -> ()
  }) : (i64, i64, i64, i64) -> i64
  "vendor.ret"(%once) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;
    let (out, _) = run("canonicalize", text);
    assert!(!out.contains("vendor.repeat") && !out.contains("arith.muli"), "{out}");
    // Zero trips: %never is %a; then one trip, from 2: %a - 2.
    assert!(out.contains("%0 = arith.constant 2 : i64\n    %1 = arith.subi %a, %0 : i64\n"), "{out}");
    assert!(out.contains("\"vendor.ret\"(%1)"), "{out}");
    let (out, _) = run("canonicalize{region-simplify=false}", text);
    assert_eq!(out.matches("vendor.repeat").count(), 2, "{out}");
}
