//! Dominance: which ops and blocks run before which, on every path.
//!
//! In a region of several blocks, block `a` dominates block `b` when every path from the region's
//! entry block to `b` goes through `a`. [`DominatorTree`] holds the immediate dominators of one
//! region's blocks (Cooper, Harvey and Kennedy's iterative algorithm) and answers in constant time.
//! [`DominanceInfo`] extends the relation to ops and blocks across nested regions, as MLIR's
//! `DominanceInfo` does: an op in a nested region is placed at the op that encloses it in the
//! outer region.
//!
//! Rules kept here, and relied on by the verifier:
//! - an unreachable block (no path from its region's entry) is dominated by itself only, and
//!   dominates nothing else: its values are visible nowhere else (stricter than LLVM, where an
//!   unreachable block is dominated by everything);
//! - in a graph region (an op with the `GRAPH_REGION` trait) every op dominates every other op and
//!   every block every other block of the region: values are visible throughout it;
//! - dominance is about order only: whether a value may be used across an op that is isolated from
//!   above is the verifier's separate concern.

use crate::dialect::OpTraits;
use crate::{Block, Context, Op, Region, Value, ValueDef};
use rustc_hash::FxHashMap;

/// The dominator tree of the blocks of one region (entry first).
#[derive(Clone, Debug)]
pub struct DominatorTree {
    blocks: Vec<Block>,
    position: FxHashMap<Block, usize>,
    /// Immediate dominator by block position: the entry maps to itself, unreachable blocks to `None`.
    immediate: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
    /// Pre- and post-order numbers of each block in the tree, for constant-time queries.
    enter: Vec<u32>,
    leave: Vec<u32>,
}

impl DominatorTree {
    /// The dominator tree of `region`'s blocks; control goes from a block to the successors of its
    /// last op.
    pub fn new(ctx: &Context, region: Region) -> Self {
        let blocks = ctx.region_blocks(region).to_vec();
        let position: FxHashMap<Block, usize> = blocks.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let immediate = immediate_dominators(ctx, &blocks, &position);
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); blocks.len()];
        for (i, dominator) in immediate.iter().enumerate() {
            if let Some(d) = *dominator {
                if d != i {
                    children[d].push(i);
                }
            }
        }
        let (mut enter, mut leave) = (vec![0; blocks.len()], vec![0; blocks.len()]);
        let mut counter = 0u32;
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for root in (0..blocks.len()).filter(|&i| immediate[i].is_none_or(|d| d == i)) {
            enter[root] = counter;
            counter += 1;
            stack.push((root, 0));
            while let Some((block, next)) = stack.pop() {
                if let Some(&child) = children[block].get(next) {
                    stack.push((block, next + 1));
                    enter[child] = counter;
                    counter += 1;
                    stack.push((child, 0));
                } else {
                    leave[block] = counter;
                    counter += 1;
                }
            }
        }
        DominatorTree { blocks, position, immediate, children, enter, leave }
    }

    /// The region's blocks, in order; positions index them.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The position of `block` in the region, if it is one of its blocks.
    pub fn position(&self, block: Block) -> Option<usize> {
        self.position.get(&block).copied()
    }

    /// The immediate dominator of the block at `position`: itself for the entry, `None` when
    /// unreachable.
    pub fn immediate_dominator(&self, position: usize) -> Option<usize> {
        self.immediate[position]
    }

    /// Whether the block at `position` can be reached from the entry.
    pub fn is_reachable(&self, position: usize) -> bool {
        self.immediate[position].is_some()
    }

    /// The blocks the block at `position` immediately dominates, in region order.
    pub fn children(&self, position: usize) -> &[usize] {
        &self.children[position]
    }

    /// The roots of the tree, in region order: the entry, then every unreachable block (each is
    /// a tree of its own).
    pub fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.blocks.len()).filter(|&i| self.immediate[i].is_none_or(|d| d == i))
    }

    /// Whether the block at position `a` dominates the block at position `b` (a block dominates
    /// itself).
    pub fn dominates(&self, a: usize, b: usize) -> bool {
        a == b || (self.enter[a] < self.enter[b] && self.leave[b] < self.leave[a])
    }
}

/// Immediate dominators of `blocks` (entry first): `None` for unreachable blocks, the entry maps
/// to itself.
fn immediate_dominators(ctx: &Context, blocks: &[Block], position: &FxHashMap<Block, usize>) -> Vec<Option<usize>> {
    if blocks.is_empty() {
        return Vec::new();
    }
    let successors: Vec<Vec<usize>> = blocks
        .iter()
        .map(|&b| {
            ctx.last_op(b)
                .map(|t| ctx.successors(t).iter().filter_map(|s| position.get(s).copied()).collect())
                .unwrap_or_default()
        })
        .collect();
    // Reverse post-order from the entry.
    let mut order = Vec::new();
    let mut visited = vec![false; blocks.len()];
    let mut stack = vec![(0usize, 0usize)];
    visited[0] = true;
    while let Some((block, next)) = stack.pop() {
        if next < successors[block].len() {
            stack.push((block, next + 1));
            let successor = successors[block][next];
            if !visited[successor] {
                visited[successor] = true;
                stack.push((successor, 0));
            }
        } else {
            order.push(block);
        }
    }
    order.reverse();
    let mut rank = vec![usize::MAX; blocks.len()];
    for (i, &b) in order.iter().enumerate() {
        rank[b] = i;
    }
    let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); blocks.len()];
    for (b, list) in successors.iter().enumerate() {
        for &s in list {
            predecessors[s].push(b);
        }
    }
    let mut dominator: Vec<Option<usize>> = vec![None; blocks.len()];
    dominator[0] = Some(0);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new = None;
            for &p in &predecessors[b] {
                if dominator[p].is_none() {
                    continue;
                }
                new = Some(match new as Option<usize> {
                    None => p,
                    Some(current) => {
                        let (mut x, mut y) = (current, p);
                        while x != y {
                            while rank[x] > rank[y] {
                                x = dominator[x].expect("processed");
                            }
                            while rank[y] > rank[x] {
                                y = dominator[y].expect("processed");
                            }
                        }
                        x
                    }
                });
            }
            if new.is_some() && dominator[b] != new {
                dominator[b] = new;
                changed = true;
            }
        }
    }
    dominator
}

/// Dominance between the ops and blocks nested in one op (see the module documentation).
///
/// Computed once from the IR (the dominator trees of the regions with several blocks, and the
/// position of every op in its block); queries take the context and do not change. It goes stale
/// when the IR under the op changes: the pass manager drops it (see `docs/analysis.md`).
#[derive(Clone, Debug, Default)]
pub struct DominanceInfo {
    trees: FxHashMap<Region, DominatorTree>,
    /// The position of each op in its block.
    order: FxHashMap<Op, u32>,
}

impl DominanceInfo {
    /// The dominance of everything nested in `root` (`root` included).
    pub fn new(ctx: &Context, root: Op) -> Self {
        let mut info = DominanceInfo::default();
        for op in ctx.walk(root) {
            for &region in ctx.regions(op) {
                let blocks = ctx.region_blocks(region);
                if blocks.len() > 1 {
                    info.trees.insert(region, DominatorTree::new(ctx, region));
                }
                for &block in blocks {
                    for (index, child) in ctx.block_ops(block).enumerate() {
                        info.order.insert(child, index as u32);
                    }
                }
            }
        }
        info
    }

    /// The dominator tree of `region`, when it has several blocks.
    pub fn tree(&self, region: Region) -> Option<&DominatorTree> {
        self.trees.get(&region)
    }

    /// Whether `a` dominates `b`: `a` is `b`, or [`properly_dominates`](Self::properly_dominates).
    pub fn dominates(&self, ctx: &Context, a: Op, b: Op) -> bool {
        a == b || self.properly_dominates(ctx, a, b)
    }

    /// Whether `a` runs before `b` on every path that reaches `b`, `a != b`: `a` encloses `b`, or
    /// precedes (the op enclosing) `b` in the same block, or is in a block that properly
    /// dominates the block of (the op enclosing) `b` in `a`'s region.
    pub fn properly_dominates(&self, ctx: &Context, a: Op, b: Op) -> bool {
        self.properly_dominates_op(ctx, a, b, true)
    }

    fn properly_dominates_op(&self, ctx: &Context, a: Op, b: Op, enclosing_ok: bool) -> bool {
        if a == b {
            return false;
        }
        let Some(block_a) = ctx.parent_block(a) else { return false };
        let Some(ancestor) = ancestor_in_region(ctx, ctx.block_parent(block_a), b) else { return false };
        if ancestor == a {
            return enclosing_ok;
        }
        let block_b = ctx.parent_block(ancestor).expect("an op found in a region is in a block");
        if block_a == block_b {
            return !has_ssa_dominance(ctx, block_a) || self.position(a) < self.position(ancestor);
        }
        self.properly_dominates_block(ctx, block_a, block_b)
    }

    /// Whether block `a` dominates block `b` (a block dominates itself and the blocks nested in
    /// its ops' regions).
    pub fn dominates_block(&self, ctx: &Context, a: Block, b: Block) -> bool {
        a == b || self.properly_dominates_block(ctx, a, b)
    }

    /// Whether block `a` dominates block `b`, `a != b` (in a graph region a block also properly
    /// dominates itself, as in MLIR).
    pub fn properly_dominates_block(&self, ctx: &Context, a: Block, b: Block) -> bool {
        if a == b {
            return !has_ssa_dominance(ctx, a);
        }
        let region = ctx.block_parent(a);
        let mut b = b;
        if region != ctx.block_parent(b) {
            let mut current = ctx.block_parent(b).and_then(|r| ctx.region_parent(r));
            let found = loop {
                let Some(op) = current else { break None };
                let block = ctx.parent_block(op);
                if block.is_some() && block.and_then(|x| ctx.block_parent(x)) == region {
                    break block;
                }
                current = ctx.parent_op(op);
            };
            let Some(found) = found else { return false };
            if found == a {
                return true;
            }
            b = found;
        }
        if !has_ssa_dominance(ctx, a) {
            return true;
        }
        let Some(tree) = region.and_then(|r| self.trees.get(&r)) else {
            // A region of one block: two different blocks cannot both be in it.
            return false;
        };
        match (tree.position(a), tree.position(b)) {
            (Some(a), Some(b)) => tree.is_reachable(a) && tree.is_reachable(b) && tree.dominates(a, b),
            _ => false,
        }
    }

    /// Whether `value` is available when `op` runs: a result of an op that properly dominates
    /// `op` without enclosing it, or an argument of a block that dominates `op`'s block.
    pub fn value_dominates(&self, ctx: &Context, value: Value, op: Op) -> bool {
        match ctx.value_def(value) {
            ValueDef::Result { op: definition, .. } => self.properly_dominates_op(ctx, definition, op, false),
            ValueDef::BlockArgument { block, .. } => {
                ctx.parent_block(op).is_some_and(|user| self.dominates_block(ctx, block, user))
            }
        }
    }

    fn position(&self, op: Op) -> u32 {
        self.order.get(&op).copied().unwrap_or(u32::MAX)
    }
}

/// `op`, or the op enclosing it, whose block is in `region`.
fn ancestor_in_region(ctx: &Context, region: Option<Region>, op: Op) -> Option<Op> {
    let mut current = Some(op);
    while let Some(candidate) = current {
        let block = ctx.parent_block(candidate)?;
        if ctx.block_parent(block) == region {
            return Some(candidate);
        }
        current = ctx.parent_op(candidate);
    }
    None
}

/// Whether values in `block` follow SSA dominance (false in a graph region).
fn has_ssa_dominance(ctx: &Context, block: Block) -> bool {
    let owner = ctx.block_parent(block).and_then(|r| ctx.region_parent(r));
    !owner.is_some_and(|op| ctx.has_traits(op, OpTraits::GRAPH_REGION))
}

impl crate::pass::Analysis for DominanceInfo {
    fn compute(ctx: &Context, op: Op, _: &mut crate::pass::AnalysisManager) -> Self {
        DominanceInfo::new(ctx, op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{ops_named, parse, tagged};

    const DIAMOND: &str = r#"
"t.func"() ({
^bb0(%c: i1):
  %a = "t.def"() {tag = "a"} : () -> i32
  "t.cond_br"(%c)[^bb1, ^bb2] : (i1) -> ()
^bb1:
  %b = "t.def"() {tag = "b"} : () -> i32
  "t.br"()[^bb3] : () -> ()
^bb2:
  "t.br"()[^bb3] : () -> ()
^bb3:
  "t.loop"() ({
    "t.use"(%a) {tag = "inner"} : (i32) -> ()
    "t.yield"() : () -> ()
  }) {tag = "loop"} : () -> ()
  "t.return"() {tag = "ret"} : () -> ()
^bb4:
  "t.return"() {tag = "dead"} : () -> ()
}) {sym_name = "main"} : () -> ()
"t.func"() ({
  "t.return"() : () -> ()
}) {sym_name = "other"} : () -> ()
"#;

    #[test]
    fn the_tree_of_a_diamond_with_an_unreachable_block() {
        let (ctx, module) = parse(DIAMOND);
        let function = ops_named(&ctx, module, "t.func")[0];
        let tree = DominatorTree::new(&ctx, ctx.regions(function)[0]);
        let idoms: Vec<Option<usize>> = (0..5).map(|i| tree.immediate_dominator(i)).collect();
        assert_eq!(idoms, [Some(0), Some(0), Some(0), Some(0), None]);
        assert_eq!(tree.roots().collect::<Vec<_>>(), [0, 4]);
        assert_eq!(tree.children(0), [1, 2, 3]);
        assert!(tree.dominates(0, 3) && tree.dominates(3, 3));
        assert!(!tree.dominates(1, 3) && !tree.dominates(3, 0));
        assert!(!tree.dominates(0, 4), "an unreachable block is dominated by itself only");
        assert!(tree.dominates(4, 4));
    }

    #[test]
    fn ops_dominate_across_nested_regions() {
        let (ctx, module) = parse(DIAMOND);
        let info = DominanceInfo::new(&ctx, module);
        let [a, b, inner, looping, ret, dead] =
            ["a", "b", "inner", "loop", "ret", "dead"].map(|t| tagged(&ctx, module, t));
        assert!(info.properly_dominates(&ctx, a, inner), "an op dominates what its block's successors nest");
        assert!(!info.properly_dominates(&ctx, b, inner), "^bb1 does not dominate ^bb3");
        assert!(info.properly_dominates(&ctx, looping, inner), "an op encloses what it nests");
        assert!(!info.properly_dominates(&ctx, inner, ret), "a nested op dominates nothing after its parent");
        assert!(info.dominates(&ctx, ret, ret) && !info.properly_dominates(&ctx, ret, ret));
        assert!(!info.properly_dominates(&ctx, a, dead) && !info.properly_dominates(&ctx, dead, ret));
        let value_a = ctx.result(a, 0);
        let value_b = ctx.result(b, 0);
        let condition = ctx.block_arguments(ctx.parent_block(a).unwrap())[0];
        assert!(info.value_dominates(&ctx, value_a, inner));
        assert!(!info.value_dominates(&ctx, value_b, ret));
        assert!(!info.value_dominates(&ctx, value_a, a), "a result is not available to its own op");
        assert!(info.value_dominates(&ctx, condition, inner));
        let inner_block = ctx.parent_block(inner).unwrap();
        let entry = ctx.parent_block(a).unwrap();
        assert!(info.dominates_block(&ctx, entry, inner_block));
        assert!(info.properly_dominates_block(&ctx, ctx.parent_block(looping).unwrap(), inner_block));
        assert!(!info.dominates_block(&ctx, inner_block, entry));
    }

    #[test]
    fn a_graph_region_has_no_order() {
        let (ctx, module) = parse(DIAMOND);
        let info = DominanceInfo::new(&ctx, module);
        let functions = ops_named(&ctx, module, "t.func");
        assert!(info.properly_dominates(&ctx, functions[1], functions[0]));
        assert!(info.properly_dominates(&ctx, functions[0], functions[1]));
    }
}
