//! `canonicalize`: folds, simplifies and removes dead code with the greedy driver, to a fixpoint.
//!
//! It runs the registered folders (for `arith`: constant folding and identities), removes dead
//! ops that have no effects, deduplicates constants and hoists them to the start of the entry
//! block of their isolated region (as MLIR does), and applies the canonicalization patterns. The rules are
//! written in `docs/rewrites.md`; the reference page is `docs/passes/canonicalize.md`.
//!
//! No dialect is named here. The patterns are, in the order they are tried on an op:
//! - the generic ones, which ask traits and interfaces: constants to the right of `COMMUTATIVE`
//!   ops (`canonicalize/commutative.rs`); with `region-simplify`, region-branch ops through which
//!   control takes one known path and loop-like ops that run zero times or once
//!   (`canonicalize/control_flow.rs`);
//! - the patterns every registered op contributes through its
//!   [`CanonicalizationPatterns`](hat_ir::rewrite::CanonicalizationPatterns) (MLIR's
//!   `getCanonicalizationPatterns`; hat's are in `hat_dialects::arith_canonicalize` and
//!   `hat_dialects::scf`), by op name. Without `region-simplify`, those of ops that implement
//!   the region-branch interface (control flow) are left out.
//!
//! Dead ops are those whose results are unused and whose memory effects may be dropped; an op
//! with the `RECURSIVE_EFFECTS` trait has the effects of its body. A read whose value is unused is
//! dropped even if it would have been out of bounds: as in MLIR, such an access is undefined
//! behaviour, and no pass keeps it for its error.

mod commutative;
mod control_flow;

use crate::support::{materialize_constant, recursive_effects};
use commutative::ConstantToRight;
use control_flow::{ConstantTripCount, SinglePath};
use hat_ir::interfaces::RegionBranchOpInterface;
use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassOptions, PassState};
use hat_ir::rewrite::{apply_patterns_greedily, collect_canonicalization_patterns, GreedyConfig, PatternSet};
use hat_ir::{Context, Op};

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
    /// Collected from the context on the first run, then reused: a pipeline nested on functions
    /// runs the pass once per function.
    patterns: Option<PatternSet>,
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
        Canonicalize { config, region_simplify: options.get_bool("region-simplify"), patterns: None }
    }
}

/// The canonicalization patterns of the ops registered in `ctx`, after the generic ones; the
/// control-flow ones only with `region_simplify`.
pub fn patterns(ctx: &Context, region_simplify: bool) -> PatternSet {
    let mut set = PatternSet::new();
    set.add(ConstantToRight);
    if region_simplify {
        set.add(SinglePath);
        set.add(ConstantTripCount);
    }
    collect_canonicalization_patterns(ctx, &mut set, |ctx, name| {
        region_simplify || ctx.name_interface::<dyn RegionBranchOpInterface>(name).is_none()
    });
    set
}

impl Pass for Canonicalize {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let region_simplify = self.region_simplify;
        let patterns = self.patterns.get_or_insert_with(|| patterns(ctx, region_simplify));
        let stats = apply_patterns_greedily(ctx, op, patterns, &self.config);
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
            "compute.func @f(%a: i32, %p: i1) -> i32 {\n    %0 = arith.constant 5 : i32\n    %1 = arith.constant 7 : i32\n    %2 = arith.muli %a, %0 : i32\n    %3 = arith.addi %2, %1 : i32\n    compute.return %3 : i32\n  }",
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
            "compute.func @f(%a: i32, %m: memref<4xi32>, %i: index) -> i32 {\n    %0 = arith.muli %a, %a : i32\n    buffer.store %0, %m[%i] : memref<4xi32>\n    compute.return %0 : i32\n  }",
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
        assert!(out.contains("buffer.store %a, %m[%0]"), "one trip: the body with i = 0\n{out}");
        assert!(out.contains("%2 = arith.muli %a, %a"), "{out}");
        assert_eq!(out.matches("scf.for").count(), 1, "unknown trip count: kept\n{out}");
        assert!(out.contains("compute.return %a, %2, %3 : i32, i32, i32"), "{out}");
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
        assert!(out.contains("arith.cmpi sge, %a, %b : i32"), "{out}");
        assert!(out.contains("arith.constant 5 : i32"), "{out}");
        assert!(out.contains("arith.addi %a, %0 : i32"), "{out}");
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
    fn a_pipeline_nested_on_functions_reuses_the_slots_it_erased() {
        // Each function folds 2 + 3 (a new constant) and erases three ops.
        let one = "compute.func @f(%a: i32) -> i32 {\n  %c2 = arith.constant 2 : i32\n  %c3 = arith.constant 3 : i32\n  %0 = arith.addi %c2, %c3 : i32\n  %1 = arith.muli %a, %0 : i32\n  compute.return %1 : i32\n}\n";
        let text: String = (0..50).map(|i| one.replace("@f", &format!("@f{i}"))).collect();
        let mut ctx = hat_dialects::context();
        let module = hat_ir::parse_source(&mut ctx, "test.hat", &text).expect("parses");
        let slots = ctx.op_count();
        let mut manager = hat_ir::pass::PassManager::new("builtin.module", Default::default());
        manager.add_pipeline(&crate::registry(), "builtin.module(compute.func(canonicalize))").expect("pipeline");
        manager.run(&mut ctx, module).expect("runs");
        let printed = hat_ir::print_op(&ctx, module, Default::default());
        assert_eq!(printed.matches("arith.constant 5 : i32").count(), 50, "{printed}");
        assert!(!printed.contains("arith.addi"), "{printed}");
        // Only the first function's constant needs a new slot: the later ones reuse the slots
        // erased in the functions before.
        assert_eq!(ctx.op_count(), slots + 1);
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
