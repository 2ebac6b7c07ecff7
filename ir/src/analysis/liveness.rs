//! Liveness of values over structured and unstructured control flow (as MLIR's `Liveness`, with
//! loops made explicit through the region-branch interface).
//!
//! A value is live at a point when some path from that point reaches a use of it. Paths follow:
//! - successor blocks (ops with successors, in a region of several blocks);
//! - for a block that ends its region (its last op has no successors) inside an op implementing
//!   [`RegionBranchOpInterface`]: the successors of that region, constants unknown: a region it
//!   may run next (a loop body runs again: what the body uses from outside stays live all through
//!   it) and the code after the op;
//! - inside an op with regions and no such interface: conservatively, every region of the op and
//!   the code after it;
//! - nothing past the end of the root's regions, or of a callable's body.
//!
//! A use inside a nested region counts, in each enclosing block, as a use by the op of that block
//! that encloses it: a value used in a loop body is live until the loop op. Block arguments are
//! defined at their block's entry; an op's results right after it.

use crate::interfaces::{CallableOpInterface, RegionBranchOpInterface, RegionPoint};
use crate::{Block, Context, Op, Value};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeSet, VecDeque};

/// The live-in and live-out values of each block nested in an op.
#[derive(Clone, Debug, Default)]
pub struct Liveness {
    blocks: FxHashMap<Block, BlockLiveness>,
    /// For each op with regions: the values it uses from outside itself.
    captured: FxHashMap<Op, BTreeSet<Value>>,
}

#[derive(Clone, Debug, Default)]
struct BlockLiveness {
    live_in: BTreeSet<Value>,
    live_out: BTreeSet<Value>,
}

impl Liveness {
    /// The liveness of every block nested in `root`.
    pub fn new(ctx: &Context, root: Op) -> Self {
        Liveness::of_values(ctx, root, &|_| true)
    }

    /// The liveness of the values `tracked` keeps, in every block nested in `root`: the others
    /// are never live (an analysis that asks about a few values pays for those, not for every
    /// value live through every block).
    pub fn of_values(ctx: &Context, root: Op, tracked: &dyn Fn(Value) -> bool) -> Self {
        let ops = ctx.walk(root);
        let mut captured: FxHashMap<Op, BTreeSet<Value>> = FxHashMap::default();
        for &user in &ops {
            for &value in ctx.operands(user).iter().filter(|&&v| tracked(v)) {
                // Climb from the user to the op in the defining region: each op passed on the way
                // uses the value from outside itself.
                let defining_region = ctx.value_block(value).and_then(|b| ctx.block_parent(b));
                let mut current = user;
                while current != root {
                    let Some(block) = ctx.parent_block(current) else { break };
                    if ctx.block_parent(block) == defining_region {
                        break;
                    }
                    let Some(parent) = ctx.parent_op(current) else { break };
                    // Already captured by `parent`: an earlier climb went on from there to the
                    // defining region, so every op above is done too (keeps deep nests linear).
                    if !captured.entry(parent).or_default().insert(value) {
                        break;
                    }
                    current = parent;
                }
            }
        }
        let mut solver = Solver { ctx, root, captured, blocks: Vec::new(), index: FxHashMap::default(), tracked };
        for &op in &ops {
            for &region in ctx.regions(op) {
                for &block in ctx.region_blocks(region) {
                    solver.index.insert(block, solver.blocks.len());
                    solver.blocks.push(block);
                }
            }
        }
        solver.run()
    }

    /// The values live when `block` starts (not its own arguments).
    pub fn live_in(&self, block: Block) -> impl Iterator<Item = Value> + '_ {
        self.blocks.get(&block).into_iter().flat_map(|b| b.live_in.iter().copied())
    }

    /// The values live when `block` ends.
    pub fn live_out(&self, block: Block) -> impl Iterator<Item = Value> + '_ {
        self.blocks.get(&block).into_iter().flat_map(|b| b.live_out.iter().copied())
    }

    /// Whether `value` is live when `block` starts.
    pub fn is_live_in(&self, value: Value, block: Block) -> bool {
        self.blocks.get(&block).is_some_and(|b| b.live_in.contains(&value))
    }

    /// Whether `value` is live when `block` ends.
    pub fn is_live_out(&self, value: Value, block: Block) -> bool {
        self.blocks.get(&block).is_some_and(|b| b.live_out.contains(&value))
    }

    /// Whether `value` may still be used after `op` has run: an op after `op` in its block uses
    /// it (directly or inside its regions), or it is live at the end of the block. A value that
    /// is defined after `op` is not live after it.
    pub fn is_live_after(&self, ctx: &Context, value: Value, op: Op) -> bool {
        let mut next = ctx.next_op(op);
        while let Some(later) = next {
            if self.uses(ctx, later, value) {
                return true;
            }
            if ctx.defining_op(value) == Some(later) {
                return false;
            }
            next = ctx.next_op(later);
        }
        ctx.parent_block(op).is_some_and(|block| self.is_live_out(value, block))
    }

    /// Whether `value` is dead after `op`: not [`is_live_after`](Self::is_live_after).
    pub fn is_dead_after(&self, ctx: &Context, value: Value, op: Op) -> bool {
        !self.is_live_after(ctx, value, op)
    }

    /// The values live right after `op` has run, in value order.
    pub fn live_after(&self, ctx: &Context, op: Op) -> Vec<Value> {
        let Some(block) = ctx.parent_block(op) else { return Vec::new() };
        let mut live: BTreeSet<Value> = self.live_out(block).collect();
        let mut cursor = ctx.last_op(block);
        while let Some(later) = cursor.filter(|&o| o != op) {
            for result in ctx.results(later) {
                live.remove(&result);
            }
            live.extend(ctx.operands(later).iter().copied());
            live.extend(self.captured.get(&later).into_iter().flatten().copied());
            cursor = ctx.prev_op(later);
        }
        live.into_iter().collect()
    }

    /// The values `op` uses from outside itself inside its regions.
    pub fn captured(&self, op: Op) -> impl Iterator<Item = Value> + '_ {
        self.captured.get(&op).into_iter().flatten().copied()
    }

    fn uses(&self, ctx: &Context, op: Op, value: Value) -> bool {
        ctx.operands(op).contains(&value) || self.captured.get(&op).is_some_and(|c| c.contains(&value))
    }
}

struct Solver<'a> {
    ctx: &'a Context,
    root: Op,
    /// The values tracked.
    tracked: &'a dyn Fn(Value) -> bool,
    captured: FxHashMap<Op, BTreeSet<Value>>,
    /// Every block nested in the root, and the position of each.
    blocks: Vec<Block>,
    index: FxHashMap<Block, usize>,
}

impl Solver<'_> {
    fn run(self) -> Liveness {
        let ctx = self.ctx;
        let count = self.blocks.len();
        let mut live_in: Vec<BTreeSet<Value>> = vec![BTreeSet::new(); count];
        let mut live_out: Vec<BTreeSet<Value>> = vec![BTreeSet::new(); count];
        // What is live right after each op with regions (where its regions' exits lead).
        let mut live_after: FxHashMap<Op, BTreeSet<Value>> = FxHashMap::default();
        let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (position, &block) in self.blocks.iter().enumerate() {
            if let Some(last) = ctx.last_op(block) {
                for successor in ctx.successors(last) {
                    if let Some(&s) = self.index.get(successor) {
                        predecessors[s].push(position);
                    }
                }
            }
        }
        let mut queue: VecDeque<usize> = (0..count).rev().collect();
        let mut queued = vec![true; count];
        while let Some(position) = queue.pop_front() {
            queued[position] = false;
            let block = self.blocks[position];
            let out = self.successor_live(block, &live_in, &live_after);
            let mut live = out.clone();
            live_out[position] = out;
            let mut enqueue: FxHashSet<usize> = FxHashSet::default();
            let mut cursor = ctx.last_op(block);
            while let Some(op) = cursor {
                if !ctx.regions(op).is_empty() && live_after.get(&op) != Some(&live) {
                    live_after.insert(op, live.clone());
                    // The exits of its regions lead here.
                    for &region in ctx.regions(op) {
                        enqueue.extend(ctx.region_blocks(region).iter().filter_map(|b| self.index.get(b)));
                    }
                }
                for result in ctx.results(op) {
                    live.remove(&result);
                }
                live.extend(ctx.operands(op).iter().copied().filter(|&v| (self.tracked)(v)));
                live.extend(self.captured.get(&op).into_iter().flatten().copied());
                cursor = ctx.prev_op(op);
            }
            for argument in ctx.block_arguments(block) {
                live.remove(argument);
            }
            if live != live_in[position] {
                live_in[position] = live;
                enqueue.extend(predecessors[position].iter().copied());
                // An entry block is where its region's siblings (or itself, a loop) lead.
                if let Some(owner) = self.entry_owner(block) {
                    for &region in ctx.regions(owner) {
                        enqueue.extend(ctx.region_blocks(region).iter().filter_map(|b| self.index.get(b)));
                    }
                }
            }
            let mut enqueue: Vec<usize> = enqueue.into_iter().collect();
            enqueue.sort_unstable();
            for next in enqueue {
                if !std::mem::replace(&mut queued[next], true) {
                    queue.push_back(next);
                }
            }
        }
        let blocks = self
            .blocks
            .iter()
            .zip(live_in.into_iter().zip(live_out))
            .map(|(&block, (live_in, live_out))| (block, BlockLiveness { live_in, live_out }))
            .collect();
        Liveness { blocks, captured: self.captured }
    }

    /// The op whose region `block` is the entry block of.
    fn entry_owner(&self, block: Block) -> Option<Op> {
        let region = self.ctx.block_parent(block)?;
        (self.ctx.region_blocks(region).first() == Some(&block)).then(|| self.ctx.region_parent(region)).flatten()
    }

    /// What is live where control goes when `block` ends.
    fn successor_live(
        &self,
        block: Block,
        live_in: &[BTreeSet<Value>],
        live_after: &FxHashMap<Op, BTreeSet<Value>>,
    ) -> BTreeSet<Value> {
        let ctx = self.ctx;
        let mut out = BTreeSet::new();
        let last = ctx.last_op(block);
        if let Some(last) = last.filter(|&l| !ctx.successors(l).is_empty()) {
            for successor in ctx.successors(last) {
                if let Some(&s) = self.index.get(successor) {
                    out.extend(live_in[s].iter().copied());
                }
            }
            return out;
        }
        let Some(region) = ctx.block_parent(block) else { return out };
        let Some(owner) = ctx.region_parent(region) else { return out };
        if owner == self.root || ctx.interface::<dyn CallableOpInterface>(owner).is_some() {
            return out;
        }
        let regions = ctx.regions(owner);
        let entry_live = |index: usize, out: &mut BTreeSet<Value>| {
            if let Some(entry) = ctx.region_blocks(regions[index]).first() {
                out.extend(live_in[self.index[entry]].iter().copied());
            }
        };
        let after_live = |out: &mut BTreeSet<Value>| {
            if let Some(after) = live_after.get(&owner) {
                let results: Vec<Value> = ctx.results(owner).collect();
                out.extend(after.iter().copied().filter(|v| !results.contains(v)));
            }
        };
        match ctx.interface::<dyn RegionBranchOpInterface>(owner) {
            Some(branches) => {
                let from = regions.iter().position(|&r| r == region).expect("a region of its parent");
                for to in branches.successors(ctx, owner, RegionPoint::Region(from), &[]) {
                    match to {
                        RegionPoint::Region(index) => entry_live(index, &mut out),
                        RegionPoint::Parent => after_live(&mut out),
                    }
                }
            }
            None => {
                for index in 0..regions.len() {
                    entry_live(index, &mut out);
                }
                after_live(&mut out);
            }
        }
        out
    }
}

impl crate::pass::Analysis for Liveness {
    fn compute(ctx: &Context, op: Op, _: &mut crate::pass::AnalysisManager) -> Self {
        Liveness::new(ctx, op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{parse, tagged};

    const PROGRAM: &str = r#"
"t.func"() ({
^bb0(%c: i1):
  %x = "t.def"() {tag = "x"} : () -> i32
  %y = "t.def"() {tag = "y"} : () -> i32
  %z = "t.def"() {tag = "z"} : () -> i32
  "t.loop"() ({
    "t.use"(%x) {tag = "use-x-in-loop"} : (i32) -> ()
    %t = "t.def"() {tag = "t"} : () -> i32
    "t.use"(%t) {tag = "use-t"} : (i32) -> ()
    "t.yield"() {tag = "loop-yield"} : () -> ()
  }) {tag = "loop"} : () -> ()
  "t.if"(%c) ({
    "t.use"(%y) {tag = "use-y-in-then"} : (i32) -> ()
    "t.yield"() {tag = "then-yield"} : () -> ()
  }, {
    "t.yield"() : () -> ()
  }) {tag = "if"} : (i1) -> ()
  "t.cond_br"(%c)[^bb1, ^bb2] {tag = "branch"} : (i1) -> ()
^bb1:
  "t.br"()[^bb3] : () -> ()
^bb2:
  "t.br"()[^bb3] : () -> ()
^bb3:
  "t.use"(%z) {tag = "use-z"} : (i32) -> ()
  "t.return"() : () -> ()
}) {sym_name = "main"} : () -> ()
"#;

    #[test]
    fn a_value_used_in_a_loop_body_stays_live_through_every_iteration() {
        let (ctx, module) = parse(PROGRAM);
        let liveness = Liveness::new(&ctx, module);
        let [x, use_x, t, use_t, looping] =
            ["x", "use-x-in-loop", "t", "use-t", "loop"].map(|tag| tagged(&ctx, module, tag));
        let x = ctx.result(x, 0);
        let body = ctx.parent_block(use_x).unwrap();
        assert!(liveness.is_live_in(x, body) && liveness.is_live_out(x, body), "the next iteration uses it");
        assert!(liveness.is_live_after(&ctx, x, use_x), "live after its last use in the body");
        assert!(liveness.is_live_after(&ctx, x, use_t));
        assert!(!liveness.is_live_after(&ctx, x, looping), "dead once the loop is done");
        let t = ctx.result(t, 0);
        assert!(liveness.is_dead_after(&ctx, t, use_t), "defined in the body: dead after its use");
        assert!(!liveness.is_live_in(t, body));
        assert_eq!(liveness.captured(looping).collect::<Vec<_>>(), [x]);
    }

    #[test]
    fn a_value_used_in_one_branch_of_an_if_dies_there() {
        let (ctx, module) = parse(PROGRAM);
        let liveness = Liveness::new(&ctx, module);
        let [y, use_y, x, looping, branching] =
            ["y", "use-y-in-then", "x", "loop", "if"].map(|tag| tagged(&ctx, module, tag));
        let y = ctx.result(y, 0);
        assert!(liveness.is_dead_after(&ctx, y, use_y), "the then-region runs once");
        assert!(liveness.is_live_after(&ctx, y, looping), "used by the if, after the loop");
        assert!(liveness.is_dead_after(&ctx, y, branching));
        assert!(liveness.is_dead_after(&ctx, ctx.result(x, 0), use_y));
    }

    #[test]
    fn values_flow_through_the_blocks_of_a_region() {
        let (ctx, module) = parse(PROGRAM);
        let liveness = Liveness::new(&ctx, module);
        let [z, branch, use_z] = ["z", "branch", "use-z"].map(|tag| tagged(&ctx, module, tag));
        let z = ctx.result(z, 0);
        let region = ctx.block_parent(ctx.parent_block(branch).unwrap()).unwrap();
        let blocks = ctx.region_blocks(region);
        assert!(liveness.is_live_out(z, blocks[0]));
        assert!(liveness.is_live_in(z, blocks[1]) && liveness.is_live_out(z, blocks[1]));
        assert!(liveness.is_live_in(z, blocks[2]) && liveness.is_live_in(z, blocks[3]));
        assert!(!liveness.is_live_out(z, blocks[3]));
        assert!(liveness.is_dead_after(&ctx, z, use_z));
        let condition = ctx.block_arguments(blocks[0])[0];
        assert!(!liveness.is_live_in(condition, blocks[0]), "a block's own argument is defined there");
        assert_eq!(liveness.live_after(&ctx, branch), [z], "after the terminator: what leaves the block");
        let x = ctx.result(tagged(&ctx, module, "x"), 0);
        let looping = tagged(&ctx, module, "loop");
        assert_eq!(liveness.live_after(&ctx, looping), [condition, ctx.result(tagged(&ctx, module, "y"), 0), z]);
        assert!(!liveness.live_after(&ctx, looping).contains(&x));
    }
}
