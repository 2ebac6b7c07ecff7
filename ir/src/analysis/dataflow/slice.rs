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

use super::flow::{FlowGraph, Role, Target};
use super::worklist::OpOrder;
use crate::{Block, Context, Op};
use rustc_hash::{FxHashMap, FxHashSet};

/// The pre-order position of every op under a root: computed once, shared by the slices of
/// that root.
#[derive(Debug)]
pub struct ProgramOrder {
    /// By op index from `base` (`u32::MAX`: not under the root), when the ops under the root
    /// have indices close together (they do, as parsed); else `keyed`.
    dense: Vec<u32>,
    base: usize,
    keyed: FxHashMap<Op, u32>,
}

impl ProgramOrder {
    /// The positions of the ops under `root` (the root itself first).
    pub fn new(ctx: &Context, root: Op) -> Self {
        let ops = ctx.walk(root);
        let low = ops.iter().map(|op| op.index()).min().unwrap_or(0);
        let high = ops.iter().map(|op| op.index()).max().unwrap_or(0);
        if high - low < 4 * ops.len() + 1024 {
            let mut dense = vec![u32::MAX; high - low + 1];
            for (i, op) in ops.iter().enumerate() {
                dense[op.index() - low] = i as u32;
            }
            return ProgramOrder { dense, base: low, keyed: FxHashMap::default() };
        }
        let keyed = ops.into_iter().enumerate().map(|(i, op)| (op, i as u32)).collect();
        ProgramOrder { dense: Vec::new(), base: 0, keyed }
    }

    /// Where `op` is in the walk (`u32::MAX` for an op not under the root).
    pub fn position(&self, op: Op) -> u32 {
        if self.dense.is_empty() {
            return self.keyed.get(&op).copied().unwrap_or(u32::MAX);
        }
        op.index().checked_sub(self.base).and_then(|i| self.dense.get(i)).copied().unwrap_or(u32::MAX)
    }
}

/// No op or block (in a slice's numbering).
pub(crate) const NONE: u32 = u32::MAX;

/// An edge out of a kept op, and where it goes in the slice's numbering.
#[derive(Copy, Clone, Debug)]
pub(crate) struct OutEdge {
    /// The edge's index in the flow graph.
    pub(crate) edge: u32,
    /// Where it goes.
    pub(crate) to: SliceTarget,
}

/// Where an edge goes, in a slice's numbering.
#[derive(Copy, Clone, Debug)]
pub(crate) enum SliceTarget {
    /// The start of the slice's block of this number.
    Block(u32),
    /// Right after the kept op of this number.
    After(u32),
}

/// An edge into a target of the slice, and the number of its source (a kept op).
#[derive(Copy, Clone, Debug)]
pub(crate) struct InEdge {
    /// The edge's index in the flow graph.
    pub(crate) edge: u32,
    /// Its source.
    pub(crate) from: u32,
}

/// The ops of a flow graph a sparse solve visits (see the module documentation).
///
/// The kept ops are numbered in program order and the slice's blocks in its own order, so
/// that a solve keeps its states in vectors and finds neighbours, roles and edges without
/// hashing (the edges of the flow graph between them are listed once, here).
#[derive(Debug)]
pub struct FlowSlice {
    /// The number of each kept op.
    number: FxHashMap<Op, u32>,
    /// The kept ops in program order.
    ops: Vec<Op>,
    /// Per kept op: the previous and the next kept op of its block (or [`NONE`]).
    previous: Vec<u32>,
    next: Vec<u32>,
    /// Per kept op: its role (the flow graph's answer, asked once per slice rather than per visit).
    roles: Vec<Role>,
    /// Per kept op: its block's number.
    block_of: Vec<u32>,
    /// The number of each block of the slice (the live blocks of the root's and the kept ops'
    /// regions first, then the other blocks of kept ops).
    block_number: FxHashMap<Block, u32>,
    /// Per block: its first and last kept op (or [`NONE`]).
    first: Vec<u32>,
    last: Vec<u32>,
    /// The live blocks of the slice, in the flow graph's order (numbered `0..live.len()`).
    live: Vec<Block>,
    /// Per live block: whether control may leave it to code the solver does not see (an open
    /// exit, or running off the end of a block without terminator).
    open_end: Vec<bool>,
    /// Per kept op, `out[i]..out[i + 1]` in `out_edges`: the edges out of it.
    out: Vec<u32>,
    out_edges: Vec<OutEdge>,
    /// Per block, `into_block[b]..into_block[b + 1]` in `in_edges`: the edges into its start.
    into_block: Vec<u32>,
    /// Per kept op, `into_after[i]..into_after[i + 1]` in `in_edges`: the edges to right
    /// after it.
    into_after: Vec<u32>,
    in_edges: Vec<InEdge>,
    /// Whether every edge out of a kept op leads into the slice and every edge into it comes
    /// from a kept op (always, in the flow graph of one function): the solves then run on the
    /// numbering; otherwise on the ops themselves.
    closed: bool,
    /// How many edges the flow graph had (a graph that grew since is solved on the ops).
    edge_count: usize,
    /// The kept ops' order for a solve on the ops themselves (made when one is needed).
    order: std::cell::OnceCell<std::rc::Rc<OpOrder>>,
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
        let mut live: Vec<Block> = Vec::new();
        for owner in owners {
            for &region in ctx.regions(owner) {
                for &block in ctx.region_blocks(region) {
                    if !flow.is_live(block) {
                        continue;
                    }
                    live.push(block);
                    if let Some(last) = ctx.last_op(block) {
                        if matches!(flow.role(ctx, last), Role::Exit { .. } | Role::Branch) {
                            kept.insert(last);
                        }
                    }
                }
            }
        }
        // Every block here is live, and here once (the owners are distinct); the slice keeps
        // the flow graph's order.
        live.sort_unstable_by_key(|&b| flow.live_position(b));
        let mut block_number: FxHashMap<Block, u32> = live.iter().enumerate().map(|(i, &b)| (b, i as u32)).collect();
        let mut blocks: Vec<Block> = live.clone();
        let mut first = vec![NONE; live.len()];
        let mut last = vec![NONE; live.len()];
        // An op in no block (none under the root) is not kept.
        let mut positioned: Vec<(u32, Op)> =
            kept.into_iter().filter(|&op| ctx.parent_block(op).is_some()).map(|op| (order.position(op), op)).collect();
        positioned.sort_unstable();
        let ops: Vec<Op> = positioned.into_iter().map(|(_, op)| op).collect();
        let number: FxHashMap<Op, u32> = ops.iter().enumerate().map(|(i, &op)| (op, i as u32)).collect();
        let mut previous = Vec::with_capacity(ops.len());
        let mut next = vec![NONE; ops.len()];
        let mut block_of = Vec::with_capacity(ops.len());
        let mut roles = Vec::with_capacity(ops.len());
        for (i, &op) in ops.iter().enumerate() {
            let block = ctx.parent_block(op).expect("a kept op in a block");
            let b = match block_number.get(&block) {
                Some(&b) => b as usize,
                None => {
                    block_number.insert(block, blocks.len() as u32);
                    blocks.push(block);
                    first.push(NONE);
                    last.push(NONE);
                    blocks.len() - 1
                }
            };
            let before = last[b];
            if before == NONE {
                first[b] = i as u32;
            } else {
                next[before as usize] = i as u32;
            }
            last[b] = i as u32;
            previous.push(before);
            block_of.push(b as u32);
            roles.push(flow.role(ctx, op));
        }
        let open_end = live
            .iter()
            .map(|&block| {
                let terminator =
                    ctx.last_op(block).filter(|&l| matches!(flow.role(ctx, l), Role::Exit { .. } | Role::Branch));
                terminator.is_none_or(|t| flow.is_open_exit(t))
            })
            .collect();
        let mut closed = true;
        let mut out = Vec::with_capacity(ops.len() + 1);
        let mut out_edges = Vec::new();
        let target_of = |target: Target| match target {
            Target::Block(block) => block_number.get(&block).map(|&b| SliceTarget::Block(b)),
            Target::After(op) => number.get(&op).map(|&i| SliceTarget::After(i)),
        };
        // A plain op (no regions, successors, interface or call) sends control nowhere and no
        // edge arrives right after it, nor after a terminator (no regions): their edges are not
        // looked up.
        let plain = |role: Role| matches!(role, Role::Plain);
        let no_regions = |role: Role| matches!(role, Role::Plain | Role::Exit { .. });
        for (&op, &role) in ops.iter().zip(&roles) {
            out.push(out_edges.len() as u32);
            if plain(role) {
                continue;
            }
            for &edge in flow.edge_indices_from(op) {
                match target_of(flow.edges()[edge as usize].to) {
                    Some(to) => out_edges.push(OutEdge { edge, to }),
                    None => closed = false,
                }
            }
        }
        out.push(out_edges.len() as u32);
        let mut in_edges = Vec::new();
        let mut incoming = |target: Option<Target>, starts: &mut Vec<u32>, closed: &mut bool| {
            starts.push(in_edges.len() as u32);
            for &edge in target.map_or(&[][..], |target| flow.edge_indices_into(target)) {
                match number.get(&flow.edges()[edge as usize].from) {
                    Some(&from) => in_edges.push(InEdge { edge, from }),
                    None => *closed = false,
                }
            }
        };
        let mut into_block = Vec::with_capacity(blocks.len() + 1);
        for &block in &blocks {
            incoming(Some(Target::Block(block)), &mut into_block, &mut closed);
        }
        let mut into_after = Vec::with_capacity(ops.len() + 1);
        for (&op, &role) in ops.iter().zip(&roles) {
            let target = (!no_regions(role)).then_some(Target::After(op));
            incoming(target, &mut into_after, &mut closed);
        }
        into_block.push(in_edges.len() as u32);
        into_after.push(in_edges.len() as u32);
        // `into_block`'s end is `into_after`'s start.
        into_block[blocks.len()] = into_after[0];
        block_number.shrink_to_fit();
        FlowSlice {
            number,
            ops,
            previous,
            next,
            roles,
            block_of,
            block_number,
            first,
            last,
            live,
            open_end,
            out,
            out_edges,
            into_block,
            into_after,
            in_edges,
            closed,
            edge_count: flow.edges().len(),
            order: std::cell::OnceCell::new(),
        }
    }

    /// Whether `op` is kept.
    pub fn contains(&self, op: Op) -> bool {
        self.number.contains_key(&op)
    }

    /// Whether `block` is in the slice.
    pub fn has_block(&self, block: Block) -> bool {
        self.block_number.contains_key(&block)
    }

    /// The kept ops, in program order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    pub(crate) fn order(&self) -> std::rc::Rc<OpOrder> {
        self.order.get_or_init(|| std::rc::Rc::new(OpOrder::new(self.ops.clone()))).clone()
    }

    /// The blocks of the slice (the live blocks of the root's and the kept ops' regions).
    pub fn live_blocks(&self) -> &[Block] {
        &self.live
    }

    /// Whether a solve over `flow` can run on the numbering: the slice is closed, and the
    /// graph has not grown since the slice was made.
    pub(crate) fn numbered_for(&self, flow: &FlowGraph) -> bool {
        self.closed && flow.edges().len() == self.edge_count
    }

    /// The number of a kept op.
    pub(crate) fn number(&self, op: Op) -> Option<u32> {
        self.number.get(&op).copied()
    }

    /// The number of a block of the slice.
    pub(crate) fn block_number(&self, block: Block) -> Option<u32> {
        self.block_number.get(&block).copied()
    }

    /// How many blocks the slice numbers.
    pub(crate) fn block_count(&self) -> usize {
        self.first.len()
    }

    /// The kept op before kept op `i` in its block ([`NONE`]: none).
    pub(crate) fn previous_of(&self, i: u32) -> u32 {
        self.previous[i as usize]
    }

    /// The kept op after kept op `i` in its block ([`NONE`]: none).
    pub(crate) fn next_of(&self, i: u32) -> u32 {
        self.next[i as usize]
    }

    /// The role of kept op `i`.
    pub(crate) fn role_of(&self, i: u32) -> Role {
        self.roles[i as usize]
    }

    /// The block of kept op `i`.
    pub(crate) fn block_of(&self, i: u32) -> u32 {
        self.block_of[i as usize]
    }

    /// The first kept op of block `b` ([`NONE`]: none).
    pub(crate) fn first_of(&self, b: u32) -> u32 {
        self.first[b as usize]
    }

    /// The last kept op of block `b` ([`NONE`]: none).
    pub(crate) fn last_of(&self, b: u32) -> u32 {
        self.last[b as usize]
    }

    /// Whether control may leave live block `b` to code the solver does not see.
    pub(crate) fn open_end(&self, b: u32) -> bool {
        self.open_end[b as usize]
    }

    /// The edges out of kept op `i`.
    pub(crate) fn out_edges(&self, i: u32) -> &[OutEdge] {
        &self.out_edges[self.out[i as usize] as usize..self.out[i as usize + 1] as usize]
    }

    /// The edges into the start of block `b`.
    pub(crate) fn edges_into_block(&self, b: u32) -> &[InEdge] {
        &self.in_edges[self.into_block[b as usize] as usize..self.into_block[b as usize + 1] as usize]
    }

    /// The edges to right after kept op `i`.
    pub(crate) fn edges_into_after(&self, i: u32) -> &[InEdge] {
        &self.in_edges[self.into_after[i as usize] as usize..self.into_after[i as usize + 1] as usize]
    }

    pub(crate) fn first_op(&self, block: Block) -> Option<Op> {
        self.block_number(block).map(|b| self.first_of(b)).filter(|&i| i != NONE).map(|i| self.ops[i as usize])
    }

    pub(crate) fn last_op(&self, block: Block) -> Option<Op> {
        self.block_number(block).map(|b| self.last_of(b)).filter(|&i| i != NONE).map(|i| self.ops[i as usize])
    }

    pub(crate) fn next_op(&self, op: Op) -> Option<Op> {
        self.number(op).map(|i| self.next_of(i)).filter(|&i| i != NONE).map(|i| self.ops[i as usize])
    }

    pub(crate) fn prev_op(&self, op: Op) -> Option<Op> {
        self.number(op).map(|i| self.previous_of(i)).filter(|&i| i != NONE).map(|i| self.ops[i as usize])
    }

    /// The role of a kept op (`None`: not kept).
    pub(crate) fn role(&self, op: Op) -> Option<Role> {
        self.number(op).map(|i| self.role_of(i))
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
