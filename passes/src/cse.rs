//! `cse`: common subexpression elimination. An op that computes what an op before it (one that
//! dominates it) already computed is replaced by that op's results and erased.
//!
//! Two ops are equal when they have the same name, operands (in either order for a commutative
//! op of two operands), attributes and result types. Only ops with no memory effects, no regions,
//! at least one result, and that are not terminators are merged: never loads, stores, calls,
//! dispatches or region ops.
//!
//! The walk goes in dominance order with a scoped hash table: the ops of a block see the ops
//! before them in the block and in the blocks of the enclosing regions (an op in an `scf.if`
//! reuses one computed before the `scf.if`), never the ops of a sibling region or of the code
//! after. Ops isolated from above (functions) start from an empty scope, and a region with several
//! blocks has a scope per block (blocks do not share; hat's structured regions have one block).
//! Graph regions (a module's body) are not deduplicated. Operands are rewritten as the walk meets
//! them, so the pass needs no use-lists and is linear in the ops.

use hat_ir::pass::{Pass, PassFailed, PassInfo, PassState};
use hat_ir::rewrite::has_no_own_effects;
use hat_ir::{Block, Context, Op, OpName, OpTraits, Region, Value};
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};

/// The registration of `cse`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "cse",
        summary: "Eliminate common subexpressions: merge equal ops without effects (dominance-scoped)",
        anchor: None,
        options: &[],
        create: |_| Box::new(Cse),
    }
}

/// The `cse` pass.
pub struct Cse;

impl Pass for Cse {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let merged = eliminate_common_subexpressions(ctx, op);
        state.add_statistic("num-cse'd", merged as u64);
        if merged == 0 {
            state.preserve_all();
        }
        Ok(())
    }
}

const NIL: u32 = u32::MAX;

struct Entry {
    op: Op,
    hash: u64,
    /// The entry that had this hash before (shadowed while this one is in scope).
    next: u32,
}

enum Task {
    /// Process this op, then the ones after it.
    Ops(Option<Op>),
    /// Enter a block: a new scope (cleared when `isolated`), `graph` when it is in a graph region.
    Block { block: Block, isolated: bool, graph: bool },
    /// Leave a scope: drop the entries after `mark`, restore the isolation and graph state.
    Leave { mark: usize, isolation: u32, graph: bool },
}

struct Scopes {
    heads: FxHashMap<u64, u32>,
    entries: Vec<Entry>,
    /// The value that replaces each result of a duplicate (a map: only duplicates have one, and
    /// a run on one function must not cost the whole context).
    replacement: FxHashMap<Value, Value>,
    /// Ops found equal to an earlier one, erased at the end.
    duplicates: Vec<Op>,
    /// Whether an op of each name may be merged (by op name index; `None`: not known yet).
    mergeable_name: Vec<Option<bool>>,
    isolation: u32,
    next_isolation: u32,
    graph: bool,
    multi_block: bool,
}

/// Runs CSE on the ops nested in `root`; returns how many ops were merged away.
pub fn eliminate_common_subexpressions(ctx: &mut Context, root: Op) -> usize {
    let mut cse = Scopes {
        heads: FxHashMap::default(),
        entries: Vec::new(),
        replacement: FxHashMap::default(),
        duplicates: Vec::new(),
        mergeable_name: Vec::new(),
        isolation: 0,
        next_isolation: 1,
        graph: false,
        multi_block: false,
    };
    let mut tasks = Vec::new();
    cse.push_regions(ctx, root, &mut tasks);
    while let Some(task) = tasks.pop() {
        match task {
            Task::Ops(None) => {}
            Task::Ops(Some(op)) => {
                tasks.push(Task::Ops(ctx.next_op(op)));
                cse.visit(ctx, op, &mut tasks);
            }
            Task::Block { block, isolated, graph } => {
                tasks.push(Task::Leave { mark: cse.entries.len(), isolation: cse.isolation, graph: cse.graph });
                if isolated {
                    cse.isolation = cse.next_isolation;
                    cse.next_isolation += 1;
                }
                cse.graph = graph;
                tasks.push(Task::Ops(ctx.first_op(block)));
            }
            Task::Leave { mark, isolation, graph } => {
                while cse.entries.len() > mark {
                    let entry = cse.entries.pop().expect("above the mark");
                    if entry.next == NIL {
                        cse.heads.remove(&entry.hash);
                    } else {
                        cse.heads.insert(entry.hash, entry.next);
                    }
                }
                cse.isolation = isolation;
                cse.graph = graph;
            }
        }
    }
    if cse.duplicates.is_empty() {
        return 0;
    }
    if cse.multi_block {
        // A use in a block laid out before the block of its (dominating) definition was met before
        // the replacement was known: one more pass catches those.
        for op in ctx.walk(root) {
            cse.remap_operands(ctx, op);
        }
    }
    for &op in &cse.duplicates {
        ctx.erase_op(op);
    }
    cse.duplicates.len()
}

impl Scopes {
    fn push_regions(&mut self, ctx: &Context, op: Op, tasks: &mut Vec<Task>) {
        let isolated = ctx.has_traits(op, OpTraits::ISOLATED_FROM_ABOVE) || !ctx.is_registered(op);
        let graph = ctx.has_traits(op, OpTraits::GRAPH_REGION);
        for &region in ctx.regions(op).iter().rev() {
            self.push_blocks(ctx, region, isolated, graph, tasks);
        }
    }

    fn push_blocks(&mut self, ctx: &Context, region: Region, isolated: bool, graph: bool, tasks: &mut Vec<Task>) {
        let blocks = ctx.region_blocks(region);
        if blocks.len() > 1 {
            self.multi_block = true;
        }
        for &block in blocks.iter().rev() {
            tasks.push(Task::Block { block, isolated, graph });
        }
    }

    fn remap_operands(&self, ctx: &mut Context, op: Op) {
        if self.replacement.is_empty() {
            return;
        }
        for index in 0..ctx.operands(op).len() {
            let operand = ctx.operand(op, index);
            if let Some(&replacement) = self.replacement.get(&operand) {
                ctx.set_operand(op, index, replacement);
            }
        }
    }

    fn visit(&mut self, ctx: &mut Context, op: Op, tasks: &mut Vec<Task>) {
        self.remap_operands(ctx, op);
        if !ctx.regions(op).is_empty() {
            self.push_regions(ctx, op, tasks);
            return;
        }
        if self.graph || !self.mergeable(ctx, op) {
            return;
        }
        let hash = self.hash(ctx, op);
        let mut cursor = self.heads.get(&hash).copied().unwrap_or(NIL);
        while cursor != NIL {
            let entry = &self.entries[cursor as usize];
            if entry.hash == hash && equal(ctx, entry.op, op) {
                let existing = entry.op;
                for (result, kept) in ctx.results(op).zip(ctx.results(existing)) {
                    self.replacement.insert(result, kept);
                }
                self.duplicates.push(op);
                return;
            }
            cursor = entry.next;
        }
        let next = self.heads.insert(hash, self.entries.len() as u32).unwrap_or(NIL);
        self.entries.push(Entry { op, hash, next });
    }

    fn mergeable(&mut self, ctx: &Context, op: Op) -> bool {
        if ctx.result_count(op) == 0 {
            return false;
        }
        let name = ctx.name(op);
        match self.name_mergeable(ctx, name) {
            Some(answer) => answer,
            None => has_no_own_effects(ctx, op),
        }
    }

    /// `Some` when the name alone decides: pure non-terminators yes, unregistered ops and
    /// terminators no; `None` when the op's own effects must be asked.
    fn name_mergeable(&mut self, ctx: &Context, name: OpName) -> Option<bool> {
        let index = name.index();
        if self.mergeable_name.len() <= index {
            self.mergeable_name.resize(index + 1, None);
        }
        if let Some(answer) = self.mergeable_name[index] {
            return Some(answer);
        }
        let answer = match ctx.definition(name) {
            None => Some(false),
            Some(definition) => {
                let traits = definition.traits();
                if traits.contains(OpTraits::TERMINATOR) {
                    Some(false)
                } else if traits.contains(OpTraits::PURE) {
                    Some(true)
                } else {
                    None
                }
            }
        };
        if answer.is_some() {
            self.mergeable_name[index] = answer;
        }
        answer
    }

    fn hash(&self, ctx: &Context, op: Op) -> u64 {
        let mut hasher = FxHasher::default();
        self.isolation.hash(&mut hasher);
        ctx.name(op).hash(&mut hasher);
        match commutative_pair(ctx, op) {
            Some((a, b)) => (a, b).hash(&mut hasher),
            None => ctx.operands(op).hash(&mut hasher),
        }
        ctx.attributes(op).hash(&mut hasher);
        for result in ctx.results(op) {
            ctx.value_type(result).hash(&mut hasher);
        }
        hasher.finish()
    }
}

/// The two operands of a commutative binary op, in a canonical order.
fn commutative_pair(ctx: &Context, op: Op) -> Option<(Value, Value)> {
    let &[a, b] = ctx.operands(op) else { return None };
    if !ctx.has_traits(op, OpTraits::COMMUTATIVE) {
        return None;
    }
    Some(if a <= b { (a, b) } else { (b, a) })
}

fn equal(ctx: &Context, a: Op, b: Op) -> bool {
    if ctx.name(a) != ctx.name(b) || ctx.attributes(a) != ctx.attributes(b) {
        return false;
    }
    let same_operands = match (commutative_pair(ctx, a), commutative_pair(ctx, b)) {
        (Some(x), Some(y)) => x == y,
        _ => ctx.operands(a) == ctx.operands(b),
    };
    same_operands
        && ctx.result_count(a) == ctx.result_count(b)
        && ctx.results(a).zip(ctx.results(b)).all(|(x, y)| ctx.value_type(x) == ctx.value_type(y))
}

#[cfg(test)]
mod tests {
    use crate::testing::{assert_pipeline, run_pipeline};

    #[test]
    fn merges_equal_pure_ops() {
        assert_pipeline(
            "cse",
            "compute.func @f(%a: i32, %b: i32) -> i32 {\n  %0 = arith.addi %a, %b : i32\n  %1 = arith.addi %a, %b : i32\n  %2 = arith.muli %0, %1 : i32\n  compute.return %2 : i32\n}",
            "compute.func @f(%a: i32, %b: i32) -> i32 {\n    %0 = arith.addi %a, %b : i32\n    %1 = arith.muli %0, %0 : i32\n    compute.return %1 : i32\n  }",
        );
    }

    #[test]
    fn commutative_operands_in_either_order() {
        let out = run_pipeline(
            "cse",
            "compute.func @f(%a: i32, %b: i32) -> i32 {\n  %0 = arith.addi %a, %b : i32\n  %1 = arith.addi %b, %a : i32\n  %2 = arith.subi %0, %1 : i32\n  %3 = arith.subi %1, %0 : i32\n  %4 = arith.addi %2, %3 : i32\n  compute.return %4 : i32\n}",
        );
        assert_eq!(out.matches("arith.addi").count(), 2, "{out}");
        // %0 - %1 and %1 - %0 are both %0 - %0 once %1 is %0.
        assert_eq!(out.matches("arith.subi").count(), 1, "{out}");
    }

    #[test]
    fn different_attributes_or_types_are_not_merged() {
        let out = run_pipeline(
            "cse",
            "compute.func @f(%a: i32, %b: i32) -> (i1, i1, i32, index) {\n  %0 = arith.cmpi slt, %a, %b : i32\n  %1 = arith.cmpi sgt, %a, %b : i32\n  %2 = arith.constant 1 : i32\n  %3 = arith.constant 1 : index\n  compute.return %0, %1, %2, %3 : i1, i1, i32, index\n}",
        );
        assert_eq!(out.matches("arith.cmpi").count(), 2, "{out}");
        assert_eq!(out.matches("arith.constant").count(), 2, "{out}");
    }

    #[test]
    fn nested_regions_reuse_dominating_ops_but_not_siblings() {
        let out = run_pipeline(
            "cse",
            "compute.func @f(%a: i32, %p: i1) -> i32 {\n  %0 = arith.muli %a, %a : i32\n  %1 = scf.if %p -> (i32) {\n    %2 = arith.muli %a, %a : i32\n    %3 = arith.addi %2, %a : i32\n    scf.yield %3 : i32\n  } else {\n    %4 = arith.addi %0, %a : i32\n    scf.yield %4 : i32\n  }\n  %5 = arith.addi %0, %a : i32\n  %6 = arith.addi %1, %5 : i32\n  compute.return %6 : i32\n}",
        );
        // The muli in the then-branch is the one before the if; the addi in the then-branch
        // (now of %0) and the one in the else-branch are siblings: both stay, and the one after
        // the if sees neither.
        assert_eq!(out.matches("arith.muli").count(), 1, "{out}");
        assert_eq!(out.matches("arith.addi").count(), 4, "{out}");
    }

    #[test]
    fn effects_and_regions_are_never_merged() {
        let text = "compute.func @f(%m: memref<4xi32>, %i: index, %p: i1) -> (i32, i32) {\n  %0 = buffer.load %m[%i] : memref<4xi32>\n  %1 = buffer.load %m[%i] : memref<4xi32>\n  scf.if %p {\n    scf.yield\n  }\n  scf.if %p {\n    scf.yield\n  }\n  compute.return %0, %1 : i32, i32\n}";
        let out = run_pipeline("cse", text);
        assert_eq!(out.matches("buffer.load").count(), 2, "{out}");
        assert_eq!(out.matches("scf.if").count(), 2, "{out}");
    }

    #[test]
    fn functions_do_not_share_a_scope() {
        let out = run_pipeline(
            "cse",
            "compute.func @f() -> i32 {\n  %0 = arith.constant 7 : i32\n  compute.return %0 : i32\n}\ncompute.func @g() -> i32 {\n  %0 = arith.constant 7 : i32\n  compute.return %0 : i32\n}",
        );
        assert_eq!(out.matches("arith.constant 7").count(), 2, "{out}");
    }
}
