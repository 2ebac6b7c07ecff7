//! Sparse evaluation of a dense analysis: a [`FlowSlice`] keeps, of a [`FlowGraph`], only the
//! ops an analysis can change its state at — the *relevant* ops, the region ops around them
//! (their edges carry the state into and out of their regions), and the terminators of the
//! blocks of those regions — so that a solver run over the slice visits a handful of ops where
//! the whole graph has thousands (Choi, Cytron and Ferrante's sparse evaluation graphs, in
//! structured form).
//!
//! The analysis promises that every other op leaves its state as it is (the state "before" such
//! an op is the state "after" it): an analysis whose state is *per variable* (per buffer, say),
//! solved once per variable over the ops that touch it, costs the sum of the variables' slices
//! instead of the variables times the program. [`solve_dense_forward_on`] and
//! [`solve_dense_backward_on`] run the dense solvers over a slice; the solution answers for any op,
//! kept or not.
//!
//! [`solve_dense_forward_on`]: super::solve_dense_forward_on
//! [`solve_dense_backward_on`]: super::solve_dense_backward_on

use super::flow::{FlowGraph, Role};
use super::worklist::OpOrder;
use crate::{Block, Context, Op};
use rustc_hash::{FxHashMap, FxHashSet};

/// The pre-order position of every op under a root: computed once, shared by the slices of
/// that root.
#[derive(Debug)]
pub struct ProgramOrder {
    position: FxHashMap<Op, u32>,
}

impl ProgramOrder {
    /// The positions of the ops under `root` (the root itself first).
    pub fn new(ctx: &Context, root: Op) -> Self {
        ProgramOrder { position: ctx.walk(root).into_iter().enumerate().map(|(i, op)| (op, i as u32)).collect() }
    }

    /// Where `op` is in the walk (`u32::MAX` for an op not under the root).
    pub fn position(&self, op: Op) -> u32 {
        self.position.get(&op).copied().unwrap_or(u32::MAX)
    }
}

/// The neighbours of a kept op in its block, among kept ops, and its role (the flow graph's
/// answer, asked once per slice rather than per visit).
#[derive(Copy, Clone, Debug)]
struct Links {
    previous: Option<Op>,
    next: Option<Op>,
    role: Role,
}

/// The ops of a flow graph a sparse solve visits (see the module documentation).
#[derive(Debug)]
pub struct FlowSlice {
    links: FxHashMap<Op, Links>,
    /// First and last kept op of each block of the slice.
    blocks: FxHashMap<Block, (Option<Op>, Option<Op>)>,
    /// The blocks of the slice, in the flow graph's order.
    live: Vec<Block>,
    /// The kept ops in program order.
    order: std::rc::Rc<OpOrder>,
}

impl FlowSlice {
    /// The slice of `flow` around `relevant` (ops under the flow graph's root; others are
    /// ignored): those ops, the ops enclosing them, and the terminators of the live blocks of
    /// every kept op's regions and of the root's.
    pub fn new(ctx: &Context, flow: &FlowGraph, order: &ProgramOrder, relevant: impl IntoIterator<Item = Op>) -> Self {
        let root = flow.root();
        let mut kept: FxHashSet<Op> = FxHashSet::default();
        // The ops whose regions' blocks belong to the slice.
        let mut owners: Vec<Op> = vec![root];
        for op in relevant {
            if order.position(op) == u32::MAX || op == root {
                continue;
            }
            let mut at = Some(op);
            while let Some(o) = at.filter(|&o| o != root) {
                if !kept.insert(o) {
                    break;
                }
                if !ctx.regions(o).is_empty() {
                    owners.push(o);
                }
                at = ctx.parent_op(o);
            }
        }
        let mut blocks: Vec<Block> = Vec::new();
        for owner in owners {
            for &region in ctx.regions(owner) {
                for &block in ctx.region_blocks(region) {
                    if !flow.is_live(block) {
                        continue;
                    }
                    blocks.push(block);
                    if let Some(last) = ctx.last_op(block) {
                        if matches!(flow.role(ctx, last), Role::Exit { .. } | Role::Branch) {
                            kept.insert(last);
                        }
                    }
                }
            }
        }
        let mut ops: Vec<Op> = kept.into_iter().collect();
        ops.sort_unstable_by_key(|&op| order.position(op));
        let mut links: FxHashMap<Op, Links> = FxHashMap::default();
        let mut ends: FxHashMap<Block, (Option<Op>, Option<Op>)> = FxHashMap::default();
        for &op in &ops {
            let Some(block) = ctx.parent_block(op) else { continue };
            let end = ends.entry(block).or_default();
            let previous = end.1;
            if let Some(p) = previous {
                if let Some(l) = links.get_mut(&p) {
                    l.next = Some(op);
                }
            } else {
                end.0 = Some(op);
            }
            end.1 = Some(op);
            links.insert(op, Links { previous, next: None, role: flow.role(ctx, op) });
        }
        // Every block here is live, and here once (the owners are distinct); the slice keeps
        // the flow graph's order.
        blocks.sort_unstable_by_key(|&b| flow.live_position(b));
        let live = blocks;
        for &block in &live {
            ends.entry(block).or_default();
        }
        ops.retain(|op| ctx.parent_block(*op).is_some_and(|b| ends.contains_key(&b)));
        FlowSlice { links, blocks: ends, live, order: std::rc::Rc::new(OpOrder::new(ops)) }
    }

    /// Whether `op` is kept.
    pub fn contains(&self, op: Op) -> bool {
        self.links.contains_key(&op)
    }

    /// Whether `block` is in the slice.
    pub fn has_block(&self, block: Block) -> bool {
        self.blocks.contains_key(&block)
    }

    /// The kept ops, in program order.
    pub fn ops(&self) -> &[Op] {
        self.order.ops()
    }

    pub(crate) fn order(&self) -> std::rc::Rc<OpOrder> {
        self.order.clone()
    }

    /// The blocks of the slice (the live blocks of the root's and the kept ops' regions).
    pub fn live_blocks(&self) -> &[Block] {
        &self.live
    }

    pub(crate) fn first_op(&self, block: Block) -> Option<Op> {
        self.blocks.get(&block).and_then(|b| b.0)
    }

    pub(crate) fn last_op(&self, block: Block) -> Option<Op> {
        self.blocks.get(&block).and_then(|b| b.1)
    }

    pub(crate) fn next_op(&self, op: Op) -> Option<Op> {
        self.links.get(&op).and_then(|l| l.next)
    }

    pub(crate) fn prev_op(&self, op: Op) -> Option<Op> {
        self.links.get(&op).and_then(|l| l.previous)
    }

    /// The role of a kept op (`None`: not kept).
    pub(crate) fn role(&self, op: Op) -> Option<Role> {
        self.links.get(&op).map(|l| l.role)
    }

    /// The kept op at or before `op` in its block (`None`: the block's start), for an op of a
    /// block of the slice; `Err` for an op elsewhere.
    pub(crate) fn at_or_before(&self, ctx: &Context, op: Op) -> Result<Option<Op>, ()> {
        self.nearest_kept(ctx, op, Context::prev_op)
    }

    /// The kept op at or after `op` in its block (`None`: the block's end), for an op of a
    /// block of the slice; `Err` for an op elsewhere.
    pub(crate) fn at_or_after(&self, ctx: &Context, op: Op) -> Result<Option<Op>, ()> {
        self.nearest_kept(ctx, op, Context::next_op)
    }

    /// The first kept op from `op` on, stepping by `step` within its block.
    fn nearest_kept(&self, ctx: &Context, op: Op, step: fn(&Context, Op) -> Option<Op>) -> Result<Option<Op>, ()> {
        let block = ctx.parent_block(op).ok_or(())?;
        if !self.has_block(block) {
            return Err(());
        }
        let mut at = Some(op);
        while let Some(o) = at {
            if self.contains(o) {
                return Ok(Some(o));
            }
            at = step(ctx, o);
        }
        Ok(None)
    }
}

/// How a solver walks the ops of blocks: all of them, or a slice's.
#[derive(Copy, Clone)]
pub(crate) enum Walk<'a> {
    /// Every op.
    Whole,
    /// The kept ops of a slice.
    Slice(&'a FlowSlice),
}

impl Walk<'_> {
    pub(crate) fn first_op(self, ctx: &Context, block: Block) -> Option<Op> {
        match self {
            Walk::Whole => ctx.first_op(block),
            Walk::Slice(s) => s.first_op(block),
        }
    }

    pub(crate) fn last_op(self, ctx: &Context, block: Block) -> Option<Op> {
        match self {
            Walk::Whole => ctx.last_op(block),
            Walk::Slice(s) => s.last_op(block),
        }
    }

    pub(crate) fn next_op(self, ctx: &Context, op: Op) -> Option<Op> {
        match self {
            Walk::Whole => ctx.next_op(op),
            Walk::Slice(s) => s.next_op(op),
        }
    }

    pub(crate) fn prev_op(self, ctx: &Context, op: Op) -> Option<Op> {
        match self {
            Walk::Whole => ctx.prev_op(op),
            Walk::Slice(s) => s.prev_op(op),
        }
    }

    /// What `op` does to control flow.
    pub(crate) fn role(self, ctx: &Context, flow: &FlowGraph, op: Op) -> Role {
        match self {
            Walk::Slice(s) => s.role(op).unwrap_or_else(|| flow.role(ctx, op)),
            Walk::Whole => flow.role(ctx, op),
        }
    }
}
