//! `dce`: dead code elimination. No op is known by name: effects, traits and the callable
//! interface decide.
//!
//! 1. Ops: an op is erased when none of its results is used and erasing it changes nothing
//!    observable — its memory effects (asked of the interface) are none, reads, or the allocation
//!    of its own results (as MLIR: an unused read is dead even if it would be out of bounds, which
//!    is undefined behaviour); for an op with the `RECURSIVE_EFFECTS` trait (`scf.for`, `scf.if`,
//!    a vendor's loop), whose effects are those of its body, when nothing left in the body has
//!    another effect. Terminators and symbols are never erased. One backward sweep with use
//!    counts finds every dead op, chains included: the users of a value are always visited
//!    before its definition.
//! 2. Symbols (option `symbols`, on by default): a function that nothing refers to — directly,
//!    or through functions that are themselves referred to — is erased when its
//!    `CallableOpInterface::is_discardable` says so, given whether the module has an entry (see
//!    [`crate::support::has_entry`]). For hat: a `kernel.helper` always; a `compute.func` when the
//!    module has an entry (`@main`, or a function marked `entry`) and it is not one (without an
//!    entry the module may be a library whose functions the host calls by name); kernels
//!    (`kernel.func`) and host-function declarations never, as the runtime uses them by name.

use crate::support::{collect_nested_symbol_refs, has_entry, is_discardable_function, recursive_effects, symbol_ident};
use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassOptions, PassState};
use hat_ir::rewrite::has_droppable_effects;
use hat_ir::verifier::symbol_name;
use hat_ir::{Context, Ident, IndexWindow, Op, OpTraits, SideTable, Value};
use rustc_hash::{FxHashMap, FxHashSet};

/// The options of `dce`.
pub const OPTIONS: &[PassOptionInfo] = &[PassOptionInfo {
    name: "symbols",
    kind: OptionKind::Bool,
    default: "true",
    help: "Also erase kernel helpers and non-entry compute functions that nothing refers to",
}];

/// The registration of `dce`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "dce",
        summary: "Erase unused ops without effects, and unreferenced helper functions",
        anchor: None,
        options: OPTIONS,
        create: |options| Box::new(Dce::new(options)),
    }
}

/// The `dce` pass.
pub struct Dce {
    symbols: bool,
}

impl Dce {
    /// The pass with validated options.
    pub fn new(options: &PassOptions) -> Self {
        Dce { symbols: options.get_bool("symbols") }
    }
}

impl Pass for Dce {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let erased = erase_dead_ops(ctx, op);
        let symbols = if self.symbols { erase_dead_symbols(ctx, op) } else { 0 };
        state.add_statistic("num-erased", erased as u64);
        state.add_statistic("num-erased-symbols", symbols as u64);
        if erased == 0 && symbols == 0 {
            state.preserve_all();
        }
        Ok(())
    }
}

enum Task {
    /// Visit this op, then the ones before it.
    Visit(Option<Op>),
    /// Decide whether this op (whose regions were swept) is dead.
    Decide(Op),
}

/// Erases the dead ops nested in `root` (see the module documentation); returns how many (not
/// counting the ops nested in them).
pub fn erase_dead_ops(ctx: &mut Context, root: Op) -> usize {
    // Side tables over the ops and values under the root: a run on one function costs that
    // function, however large the context.
    let ops = ctx.walk(root);
    let mut uses: SideTable<Value, u32> =
        SideTable::with_window(IndexWindow::of_values_defined_by(ctx, &ops).dense_range(), 0);
    for &op in &ops {
        for &operand in ctx.operands(op) {
            *uses.get_mut(operand) += 1;
        }
    }
    // Whether something kept inside an op has an effect.
    let mut tainted: SideTable<Op, bool> = SideTable::with_window(IndexWindow::of_ops(&ops).dense_range(), false);
    drop(ops);
    let mut tasks = Vec::new();
    push_blocks(ctx, root, &mut tasks);
    let mut erased = 0;
    while let Some(task) = tasks.pop() {
        match task {
            Task::Visit(None) => {}
            Task::Visit(Some(op)) => {
                tasks.push(Task::Visit(ctx.prev_op(op)));
                tasks.push(Task::Decide(op));
                push_blocks(ctx, op, &mut tasks);
            }
            Task::Decide(op) => {
                let recursive = !ctx.regions(op).is_empty() && recursive_effects(ctx, op);
                let effect_free =
                    ctx.is_registered(op) && if recursive { !*tainted.get(op) } else { has_droppable_effects(ctx, op) };
                let traits = ctx.traits(op);
                let removable = effect_free
                    && !traits.contains(OpTraits::TERMINATOR)
                    && !traits.contains(OpTraits::SYMBOL)
                    && ctx.results(op).all(|r| *uses.get(r) == 0);
                if removable {
                    if ctx.regions(op).is_empty() {
                        for &operand in ctx.operands(op) {
                            *uses.get_mut(operand) -= 1;
                        }
                    } else {
                        for nested in ctx.walk(op) {
                            for &operand in ctx.operands(nested) {
                                *uses.get_mut(operand) -= 1;
                            }
                        }
                    }
                    ctx.erase_op(op);
                    erased += 1;
                } else if !effect_free {
                    if let Some(parent) = ctx.parent_op(op) {
                        tainted.set(parent, true);
                    }
                }
            }
        }
    }
    erased
}

fn push_blocks(ctx: &Context, op: Op, tasks: &mut Vec<Task>) {
    for &region in ctx.regions(op) {
        for &block in ctx.region_blocks(region) {
            tasks.push(Task::Visit(ctx.last_op(block)));
        }
    }
}

/// Erases the discardable functions (see [`is_discardable_function`]) that nothing live refers
/// to, in every symbol table under `root` (`root` included); returns how many.
pub fn erase_dead_symbols(ctx: &mut Context, root: Op) -> usize {
    let tables: Vec<Op> = ctx.walk(root).into_iter().filter(|&o| ctx.has_traits(o, OpTraits::SYMBOL_TABLE)).collect();
    let mut erased = 0;
    for table in tables {
        if ctx.parent_block(table).is_none() && table != root {
            continue; // inside a function erased just before
        }
        let children: Vec<Op> = ctx
            .regions(table)
            .iter()
            .flat_map(|&r| ctx.region_blocks(r).to_vec())
            .flat_map(|b| ctx.block_ops(b).collect::<Vec<_>>())
            .collect();
        let mut candidates: FxHashMap<Ident, Op> = FxHashMap::default();
        let mut roots = Vec::new();
        let entries_known = has_entry(ctx, table);
        for &child in &children {
            if !is_discardable_function(ctx, child, entries_known) || symbol_name(ctx, child).is_none() {
                collect_nested_symbol_refs(ctx, child, &mut roots);
                continue;
            }
            match symbol_ident(ctx, child) {
                Some(ident) => {
                    candidates.insert(ident, child);
                }
                None => {
                    // Its name was never used as a reference: nothing can refer to it.
                    ctx.erase_op(child);
                    erased += 1;
                }
            }
        }
        if candidates.is_empty() {
            continue;
        }
        let mut live: FxHashSet<Ident> = FxHashSet::default();
        let mut pending = roots;
        while let Some(ident) = pending.pop() {
            if !live.insert(ident) {
                continue;
            }
            if let Some(&function) = candidates.get(&ident) {
                collect_nested_symbol_refs(ctx, function, &mut pending);
            }
        }
        for &child in &children {
            if let Some(ident) = symbol_ident(ctx, child) {
                if candidates.get(&ident) == Some(&child) && !live.contains(&ident) {
                    ctx.erase_op(child);
                    erased += 1;
                }
            }
        }
    }
    erased
}

#[cfg(test)]
mod tests {
    use crate::testing::{assert_pipeline, run_pipeline};

    #[test]
    fn erases_chains_of_dead_pure_ops() {
        assert_pipeline(
            "dce",
            "compute.func @main(%a: i32) -> i32 {\n  %0 = arith.addi %a, %a : i32\n  %1 = arith.muli %0, %0 : i32\n  %2 = arith.subi %1, %a : i32\n  compute.return %a : i32\n}",
            "compute.func @main(%a: i32) -> i32 {\n    compute.return %a : i32\n  }",
        );
    }

    #[test]
    fn keeps_writes_and_terminators_but_not_unused_reads() {
        let text = "compute.func @main(%m: memref<4xi32>, %i: index, %v: i32) -> i32 {\n  %0 = buffer.load %m[%i] : memref<4xi32>\n  %1 = buffer.load %m[%i] : memref<4xi32>\n  buffer.store %v, %m[%i] : memref<4xi32>\n  compute.return %1 : i32\n}";
        let out = run_pipeline("dce", text);
        assert_eq!(out.matches("buffer.load").count(), 1, "{out}");
        assert!(out.contains("buffer.store"), "{out}");
    }

    #[test]
    fn without_an_entry_compute_functions_are_kept() {
        let text = "kernel.helper @h() {\n  kernel.return\n}\ncompute.func @library() {\n  compute.return\n}";
        let out = run_pipeline("dce", text);
        assert!(out.contains("@library") && !out.contains("@h"), "{out}");
    }

    #[test]
    fn erases_dead_loops_and_branches_without_effects() {
        let text = "compute.func @main(%n: index, %p: i1, %m: memref<4xi32>, %v: i32) {\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  scf.for %i = %c0 to %n step %c1 {\n    %x = arith.addi %i, %i : index\n  }\n  %r = scf.if %p -> (i32) {\n    scf.yield %v : i32\n  } else {\n    scf.yield %v : i32\n  }\n  scf.for %j = %c0 to %n step %c1 {\n    buffer.store %v, %m[%j] : memref<4xi32>\n  }\n  compute.return\n}";
        let out = run_pipeline("dce", text);
        assert_eq!(out.matches("scf.for").count(), 1, "{out}");
        assert!(out.contains("buffer.store"), "{out}");
        assert!(!out.contains("scf.if"), "{out}");
        assert!(!out.contains("arith.addi"), "{out}");
    }

    #[test]
    fn erases_unreferenced_helpers_but_keeps_entries_and_kernels() {
        let text = "kernel.helper @unused(%x: i32) -> i32 {\n  kernel.return %x : i32\n}\n\
                    kernel.helper @used(%x: i32) -> i32 {\n  kernel.return %x : i32\n}\n\
                    kernel.helper @only_from_dead(%x: i32) -> i32 {\n  kernel.return %x : i32\n}\n\
                    kernel.helper @dead_caller(%x: i32) -> i32 {\n  %0 = kernel.call @only_from_dead(%x) : (i32) -> i32\n  kernel.return %0 : i32\n}\n\
                    kernel.func @k(%x: i32) {\n  %0 = kernel.call @used(%x) : (i32) -> i32\n  kernel.return\n}\n\
                    compute.func @helper() {\n  compute.return\n}\n\
                    compute.func @main() {\n  compute.return\n}\n\
                    compute.func @other() attributes {entry} {\n  compute.return\n}";
        let out = run_pipeline("dce", text);
        for kept in ["@used", "@k", "@main", "@other"] {
            assert!(out.contains(kept), "{kept} missing:\n{out}");
        }
        for gone in ["@unused", "@only_from_dead", "@dead_caller", "@helper"] {
            assert!(!out.contains(gone), "{gone} kept:\n{out}");
        }
        let out = run_pipeline("dce{symbols=false}", text);
        assert!(out.contains("@unused") && out.contains("@helper"), "{out}");
    }
}
