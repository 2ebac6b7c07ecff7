//! The control-flow skeleton the solvers walk: which blocks run, and every edge along which
//! control (and values) may go, found through the op interfaces only.
//!
//! An op plays one [`Role`]:
//! - a **branch** (it has successor blocks): to each successor, or to the one
//!   [`BranchOpInterface::successor_for_constants`] picks; its successor operands (the interface's,
//!   else none) bind to the successor's arguments;
//! - an **exit** (a terminator, the last op of its block, without successors): it leaves its
//!   region, to where the region's owner says: the region's successors when the owner implements
//!   [`RegionBranchOpInterface`] (narrowed by the terminator's constant operands), right after
//!   every call of the owner when it is a callable, and to code the solver does not see (an
//!   *open exit*) when the owner is the root, a callable whose callers are not all known, or an op
//!   without an interface;
//! - a **region branch** (implements [`RegionBranchOpInterface`]): into its regions, or straight
//!   past itself, narrowed by its constant operands;
//! - a **call** of a callable with a body nested in the root: into the callee's entry block (the
//!   callee's exits then return right after every call found so far: context-insensitive);
//! - an **external call**: a call of a declaration, of an unresolved symbol, or of a callable
//!   outside the root: the analysis' transfer function decides;
//! - a **definition** (a callable other than the root): its body runs when it is called, not
//!   where the op stands;
//! - an **opaque** op (regions, and no interface): its regions' entry blocks run, entered from
//!   code the solver does not see (*open entries*, where analyses start from their pessimistic
//!   state), and nothing is assumed about where they exit;
//! - a **plain** op: no control flow of its own.
//!
//! The root's regions and the bodies of callables whose callers are not all known (see
//! [`CallGraph::callers_known`]) are open entries too. A block runs (is *live*) when it is an open
//! entry or some edge leads to it; edges are only taken from ops in live blocks. A
//! [`FlowGraph`] only grows: edges and live blocks are added as constants become known or calls
//! are found, never removed.

use crate::analysis::call_graph::CallGraph;
use crate::dialect::OpTraits;
use crate::interfaces::{
    BranchOpInterface, CallOpInterface, CallableOpInterface, RegionBranchOpInterface, RegionPoint,
};
use crate::{Block, Context, Op, Region, Value};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

/// Where an edge of control goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The start of a block; the edge's inputs are block arguments.
    Block(Block),
    /// Right after an op: a region-branch op whose regions are done, or a call whose callee
    /// returned; the edge's inputs are the op's results.
    After(Op),
}

/// Why control goes along an edge.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// From a region-branch op into one of its regions, or straight past itself.
    Enter,
    /// From the terminator of a region of a region-branch op to a region, or past the op.
    Exit,
    /// From an op with successors to a successor block.
    Branch,
    /// From a call into the callee's entry block.
    Call,
    /// From an exit of a callee's body to right after a call of it.
    Return,
}

/// One way control may go, and the values that go with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The op that sends control.
    pub from: Op,
    /// Where control goes.
    pub to: Target,
    /// Why.
    pub kind: EdgeKind,
    /// The operands of `from` that go along, bound one to one to `inputs`.
    pub operands: Range<usize>,
    /// The inputs of `to` (block arguments, or results) they bind to.
    pub inputs: Range<usize>,
}

impl Edge {
    /// Whether what goes along the edge is the state before `from` runs (entering a region-branch
    /// op's regions, or a call's callee), rather than after it (a terminator has run).
    pub fn leaves_before(&self) -> bool {
        matches!(self.kind, EdgeKind::Enter | EdgeKind::Call)
    }

    /// The pairs (operand of `from`, input of `to`) the edge binds.
    pub fn bindings<'a>(&self, ctx: &'a Context) -> impl Iterator<Item = (Value, Value)> + 'a {
        let from = self.from;
        self.binding_indices(ctx).map(move |(index, input)| (ctx.operand(from, index), input))
    }

    /// The pairs (operand index in `from`, input of `to`) the edge binds.
    pub fn binding_indices(&self, ctx: &Context) -> impl Iterator<Item = (usize, Value)> + 'static {
        let operands = clamp(self.operands.clone(), ctx.operands(self.from).len());
        let inputs = target_inputs(ctx, self.to);
        let inputs = clamp(self.inputs.clone(), inputs.len()).map(move |i| inputs[i]);
        operands.zip(inputs)
    }

    /// The inputs of `to` the edge does not bind (an induction variable, say).
    pub fn unbound_inputs(&self, ctx: &Context) -> Vec<Value> {
        let inputs = target_inputs(ctx, self.to);
        let bound = clamp(self.inputs.clone(), inputs.len());
        let bound_count = bound.len().min(clamp(self.operands.clone(), ctx.operands(self.from).len()).len());
        inputs
            .iter()
            .enumerate()
            .filter(|&(i, _)| !(bound.start <= i && i < bound.start + bound_count))
            .map(|(_, &v)| v)
            .collect()
    }
}

fn clamp(range: Range<usize>, length: usize) -> Range<usize> {
    range.start.min(length)..range.end.min(length)
}

/// The inputs of a target: a block's arguments, or an op's results.
pub fn target_inputs(ctx: &Context, target: Target) -> SmallVec<[Value; 4]> {
    match target {
        Target::Block(block) => ctx.block_arguments(block).iter().copied().collect(),
        Target::After(op) => ctx.results(op).collect(),
    }
}

/// What an op does to control flow (see the module documentation).
#[derive(Copy, Clone)]
pub enum Role {
    /// No control flow of its own.
    Plain,
    /// A callable's definition.
    Definition,
    /// An op implementing the region-branch interface.
    RegionBranch(&'static dyn RegionBranchOpInterface),
    /// A call of a callable with a body in the root.
    Call {
        /// The callee.
        callee: Op,
        /// The callee's entry block.
        entry: Block,
    },
    /// A call whose callee's body the solver cannot see.
    ExternalCall,
    /// An op with regions and no interface.
    Opaque,
    /// An op with successor blocks.
    Branch,
    /// A terminator leaving the region of `owner`.
    Exit {
        /// The op whose region the terminator ends.
        owner: Op,
    },
}

impl Role {
    /// Whether the role sends control somewhere the solver follows (edges or regions).
    pub fn is_control(&self) -> bool {
        !matches!(self, Role::Plain | Role::Definition | Role::ExternalCall)
    }
}

impl std::fmt::Debug for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::Plain => write!(f, "Plain"),
            Role::Definition => write!(f, "Definition"),
            Role::RegionBranch(_) => write!(f, "RegionBranch"),
            Role::Call { callee, .. } => write!(f, "Call({callee:?})"),
            Role::ExternalCall => write!(f, "ExternalCall"),
            Role::Opaque => write!(f, "Opaque"),
            Role::Branch => write!(f, "Branch"),
            Role::Exit { owner } => write!(f, "Exit({owner:?})"),
        }
    }
}

/// What [`FlowGraph::explore`] found that the solvers must react to.
#[derive(Debug, Default)]
pub struct Discoveries {
    /// Blocks that became live.
    pub blocks: Vec<Block>,
    /// Live blocks that became open entries.
    pub opened: Vec<Block>,
    /// New edges (indices into [`FlowGraph::edges`]), including those from ops other than the
    /// one explored: a new call site gets the callee's exits' return edges at once.
    pub edges: Vec<u32>,
}

impl Discoveries {
    fn clear(&mut self) {
        self.blocks.clear();
        self.opened.clear();
        self.edges.clear();
    }
}

/// The blocks that run and the edges between them, under one root op (see the module
/// documentation).
#[derive(Clone, Debug)]
pub struct FlowGraph {
    root: Op,
    calls: Arc<CallGraph>,
    /// Whether calls of callables with bodies are followed into them (see
    /// [`FlowGraph::intraprocedural`]).
    follow_calls: bool,
    /// Each live block's position in `live_order`.
    live: FxHashMap<Block, u32>,
    /// The live blocks in the order they became live.
    live_order: Vec<Block>,
    open_entries: FxHashSet<Block>,
    open_exits: FxHashSet<Op>,
    edges: Vec<Edge>,
    edge_keys: FxHashSet<(Op, Target, usize, usize)>,
    out: FxHashMap<Op, SmallVec<[u32; 2]>>,
    into: FxHashMap<Target, SmallVec<[u32; 2]>>,
    callers: FxHashMap<Op, SmallVec<[Op; 2]>>,
    /// The exits of callables explored so far.
    returning_exits: FxHashSet<Op>,
}

impl FlowGraph {
    /// The skeleton under `root` with branches narrowed by the integer constants that
    /// constant-like ops define (the interfaces' `constant_integers`).
    pub fn new(ctx: &Context, root: Op) -> Self {
        Self::with_constants(ctx, root, |value| crate::interfaces::constant_integer(ctx, value))
    }

    /// The skeleton under `root` with branches narrowed by `constant`: the integer a value is
    /// known to hold (from a constant propagation, say).
    pub fn with_constants(ctx: &Context, root: Op, constant: impl Fn(Value) -> Option<i64>) -> Self {
        Self::with_call_graph(ctx, root, Arc::new(CallGraph::new(ctx, root)), constant)
    }

    /// The skeleton of one callable on its own: every call is an op like any other
    /// ([`Role::ExternalCall`], visited by the analysis's `visit_op`), even a call of `root`
    /// itself. For an analysis that summarises its callees (a planner that plans each function
    /// on its own, say); branches are narrowed by the integer constants, as by [`new`](Self::new).
    pub fn intraprocedural(ctx: &Context, root: Op) -> Self {
        Self::with_call_graph_following(
            ctx,
            root,
            Arc::new(CallGraph::new(ctx, root)),
            |value| crate::interfaces::constant_integer(ctx, value),
            false,
        )
    }

    /// Like [`with_constants`](Self::with_constants), with the call graph of `root` computed
    /// already (cached by the pass manager, say).
    pub fn with_call_graph(
        ctx: &Context,
        root: Op,
        calls: Arc<CallGraph>,
        constant: impl Fn(Value) -> Option<i64>,
    ) -> Self {
        Self::with_call_graph_following(ctx, root, calls, constant, true)
    }

    fn with_call_graph_following(
        ctx: &Context,
        root: Op,
        calls: Arc<CallGraph>,
        constant: impl Fn(Value) -> Option<i64>,
        follow_calls: bool,
    ) -> Self {
        let mut graph = Self::start(ctx, root, calls);
        graph.follow_calls = follow_calls;
        let mut queue: VecDeque<Op> = VecDeque::new();
        for &block in &graph.live_order {
            queue.extend(ctx.block_ops(block));
        }
        let mut found = Discoveries::default();
        while let Some(op) = queue.pop_front() {
            let role = graph.role(ctx, op);
            if !role.is_control() {
                continue;
            }
            let constants: SmallVec<[Option<i64>; 4]> = ctx.operands(op).iter().map(|&v| constant(v)).collect();
            found.clear();
            graph.explore(ctx, op, role, &constants, &mut found);
            for &block in &found.blocks {
                queue.extend(ctx.block_ops(block));
            }
        }
        graph
    }

    /// The skeleton before any op is explored: the root's regions and the bodies of callables
    /// with unknown callers are live, open entries.
    pub(crate) fn start(ctx: &Context, root: Op, calls: Arc<CallGraph>) -> Self {
        let mut graph = FlowGraph {
            root,
            calls,
            follow_calls: true,
            live: FxHashMap::default(),
            live_order: Vec::new(),
            open_entries: FxHashSet::default(),
            open_exits: FxHashSet::default(),
            edges: Vec::new(),
            edge_keys: FxHashSet::default(),
            out: FxHashMap::default(),
            into: FxHashMap::default(),
            callers: FxHashMap::default(),
            returning_exits: FxHashSet::default(),
        };
        let mut found = Discoveries::default();
        for &region in ctx.regions(root) {
            if let Some(&entry) = ctx.region_blocks(region).first() {
                graph.mark_live(entry, true, &mut found);
            }
        }
        for node in graph.calls.nodes().collect::<Vec<_>>() {
            let Some(callable) = graph.calls.callable(node) else { continue };
            if callable == root || graph.calls.callers_known(node) {
                continue;
            }
            if let Some(&entry) = graph.calls.body(node).and_then(|body| ctx.region_blocks(body).first()) {
                graph.mark_live(entry, true, &mut found);
            }
        }
        graph
    }

    /// The root op.
    pub fn root(&self) -> Op {
        self.root
    }

    /// The call graph of the root.
    pub fn call_graph(&self) -> &CallGraph {
        &self.calls
    }

    /// Whether `block` may run.
    pub fn is_live(&self, block: Block) -> bool {
        self.live.contains_key(&block)
    }

    /// Where a live block is in [`live_blocks`](Self::live_blocks) (`None`: not live).
    pub fn live_position(&self, block: Block) -> Option<u32> {
        self.live.get(&block).copied()
    }

    /// Whether `op` may run (its block is live).
    pub fn is_op_live(&self, ctx: &Context, op: Op) -> bool {
        ctx.parent_block(op).is_some_and(|b| self.is_live(b))
    }

    /// The live blocks, in the order they were found live.
    pub fn live_blocks(&self) -> &[Block] {
        &self.live_order
    }

    /// Whether control may enter `block` from code the solver does not see.
    pub fn is_open_entry(&self, block: Block) -> bool {
        self.open_entries.contains(&block)
    }

    /// Whether control may leave through `op` to code the solver does not see.
    pub fn is_open_exit(&self, op: Op) -> bool {
        self.open_exits.contains(&op)
    }

    /// Every edge found.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// The edges out of `op`.
    pub fn edges_from(&self, op: Op) -> impl Iterator<Item = &Edge> + '_ {
        self.out.get(&op).into_iter().flatten().map(|&i| &self.edges[i as usize])
    }

    /// The edges into `target`.
    pub fn edges_into(&self, target: Target) -> impl Iterator<Item = &Edge> + '_ {
        self.into.get(&target).into_iter().flatten().map(|&i| &self.edges[i as usize])
    }

    /// The indices (into [`edges`](Self::edges)) of the edges out of `op`, in the order of
    /// [`edges_from`](Self::edges_from).
    pub(crate) fn edge_indices_from(&self, op: Op) -> &[u32] {
        self.out.get(&op).map_or(&[], |e| e.as_slice())
    }

    /// The indices of the edges into `target`, in the order of [`edges_into`](Self::edges_into).
    pub(crate) fn edge_indices_into(&self, target: Target) -> &[u32] {
        self.into.get(&target).map_or(&[], |e| e.as_slice())
    }

    /// The live call sites of a callable found so far.
    pub fn callers(&self, callable: Op) -> &[Op] {
        self.callers.get(&callable).map_or(&[], |c| c)
    }

    /// What `op` does to control flow.
    pub fn role(&self, ctx: &Context, op: Op) -> Role {
        if !ctx.successors(op).is_empty() {
            return Role::Branch;
        }
        if is_exit(ctx, op) {
            if let Some(owner) = ctx.parent_op(op) {
                return Role::Exit { owner };
            }
        }
        if op != self.root && ctx.interface::<dyn CallableOpInterface>(op).is_some() {
            return Role::Definition;
        }
        if let Some(branches) = ctx.interface::<dyn RegionBranchOpInterface>(op) {
            return Role::RegionBranch(branches);
        }
        if let Some(site) = self.calls.call_site(op) {
            if !self.follow_calls {
                return Role::ExternalCall;
            }
            let entry = self.calls.body(site.callee).and_then(|body| ctx.region_blocks(body).first().copied());
            return match (self.calls.callable(site.callee), entry) {
                (Some(callee), Some(entry)) => Role::Call { callee, entry },
                _ => Role::ExternalCall,
            };
        }
        if !ctx.regions(op).is_empty() {
            return Role::Opaque;
        }
        Role::Plain
    }

    /// The exits of a callable's body in live blocks.
    pub fn exits(&self, ctx: &Context, callable: Op) -> Vec<Op> {
        let body = self.calls.node(callable).and_then(|node| self.calls.body(node));
        body.map(|body| ctx.region_blocks(body))
            .unwrap_or_default()
            .iter()
            .filter(|&&block| self.is_live(block))
            .filter_map(|&block| ctx.last_op(block))
            .filter(|&last| is_exit(ctx, last))
            .collect()
    }

    /// Adds the control flow out of `op` (in a live block, playing `role`), given the integer
    /// constants of its operands (`None` where unknown).
    pub fn explore(&mut self, ctx: &Context, op: Op, role: Role, constants: &[Option<i64>], found: &mut Discoveries) {
        match role {
            Role::Plain | Role::Definition | Role::ExternalCall => {}
            Role::RegionBranch(branches) => {
                for to in branches.successors(ctx, op, RegionPoint::Parent, constants) {
                    let operands = branches.entry_operands(ctx, op, to);
                    let inputs = branches.successor_inputs(ctx, op, to);
                    self.add_region_edge(ctx, op, op, to, EdgeKind::Enter, operands, inputs, found);
                }
            }
            Role::Call { callee, entry } => {
                let arguments = ctx.interface::<dyn CallOpInterface>(op).map_or(0..0, |call| call.arguments(ctx, op));
                let inputs = 0..ctx.block_arguments(entry).len();
                let edge =
                    Edge { from: op, to: Target::Block(entry), kind: EdgeKind::Call, operands: arguments, inputs };
                if self.add_edge(edge, found) {
                    // A new call site: the callee's exits found so far return here too.
                    self.callers.entry(callee).or_default().push(op);
                    for exit in self.exits(ctx, callee) {
                        self.add_return_edge(ctx, exit, op, found);
                    }
                }
            }
            Role::Branch => {
                let branch = ctx.interface::<dyn BranchOpInterface>(op);
                let successors = ctx.successors(op);
                let only = branch.and_then(|b| b.successor_for_constants(ctx, op, constants));
                for (index, &successor) in successors.iter().enumerate() {
                    if only.is_some_and(|o| o != index) {
                        continue;
                    }
                    let operands = branch.map_or(0..0, |b| b.successor_operands(ctx, op, index));
                    let inputs = 0..operands.len();
                    self.add_edge(
                        Edge { from: op, to: Target::Block(successor), kind: EdgeKind::Branch, operands, inputs },
                        found,
                    );
                }
            }
            Role::Exit { owner } => self.explore_exit(ctx, op, owner, constants, found),
            Role::Opaque => {
                for &region in ctx.regions(op) {
                    if let Some(&entry) = ctx.region_blocks(region).first() {
                        self.mark_live(entry, true, found);
                    }
                }
            }
        }
    }

    fn explore_exit(&mut self, ctx: &Context, exit: Op, owner: Op, constants: &[Option<i64>], found: &mut Discoveries) {
        if owner == self.root {
            self.open_exits.insert(exit);
            return;
        }
        if let Some(node) = self.calls.node(owner) {
            if !self.calls.callers_known(node) {
                self.open_exits.insert(exit);
            }
            // Once per exit: later call sites add their return edges themselves.
            if self.returning_exits.insert(exit) {
                for call in self.callers(owner).to_vec() {
                    self.add_return_edge(ctx, exit, call, found);
                }
            }
            return;
        }
        let Some(branches) = ctx.interface::<dyn RegionBranchOpInterface>(owner) else {
            self.open_exits.insert(exit);
            return;
        };
        let region = ctx.parent_block(exit).and_then(|b| ctx.block_parent(b));
        let Some(from) = ctx.regions(owner).iter().position(|&r| Some(r) == region) else { return };
        for to in branches.successors(ctx, owner, RegionPoint::Region(from), constants) {
            let operands = branches.terminator_operands(ctx, owner, exit, from, to);
            let inputs = branches.successor_inputs(ctx, owner, to);
            self.add_region_edge(ctx, owner, exit, to, EdgeKind::Exit, operands, inputs, found);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn add_region_edge(
        &mut self,
        ctx: &Context,
        owner: Op,
        from: Op,
        to: RegionPoint,
        kind: EdgeKind,
        operands: Range<usize>,
        inputs: Range<usize>,
        found: &mut Discoveries,
    ) {
        let target = match to {
            RegionPoint::Parent => Target::After(owner),
            RegionPoint::Region(index) => {
                let Some(&region) = ctx.regions(owner).get(index) else { return };
                match entry_block(ctx, region) {
                    Some(entry) => Target::Block(entry),
                    // An empty region runs nothing: control goes on past the op.
                    None => Target::After(owner),
                }
            }
        };
        self.add_edge(Edge { from, to: target, kind, operands, inputs }, found);
    }

    fn add_return_edge(&mut self, ctx: &Context, exit: Op, call: Op, found: &mut Discoveries) {
        let operands = 0..ctx.operands(exit).len();
        let inputs = 0..ctx.result_count(call);
        self.add_edge(Edge { from: exit, to: Target::After(call), kind: EdgeKind::Return, operands, inputs }, found);
    }

    /// Adds an edge unless it is there; returns whether it is new.
    fn add_edge(&mut self, edge: Edge, found: &mut Discoveries) -> bool {
        let key = (edge.from, edge.to, edge.operands.start, edge.operands.end);
        if !self.edge_keys.insert(key) {
            return false;
        }
        if let Target::Block(block) = edge.to {
            self.mark_live(block, false, found);
        }
        let index = self.edges.len() as u32;
        self.out.entry(edge.from).or_default().push(index);
        self.into.entry(edge.to).or_default().push(index);
        self.edges.push(edge);
        found.edges.push(index);
        true
    }

    fn mark_live(&mut self, block: Block, open: bool, found: &mut Discoveries) {
        let newly_open = open && self.open_entries.insert(block);
        if let std::collections::hash_map::Entry::Vacant(slot) = self.live.entry(block) {
            slot.insert(self.live_order.len() as u32);
            self.live_order.push(block);
            found.blocks.push(block);
        } else if newly_open {
            found.opened.push(block);
        }
    }
}

fn entry_block(ctx: &Context, region: Region) -> Option<Block> {
    ctx.region_blocks(region).first().copied()
}

/// Whether `op` ends its block and leaves its region: the last op of its block, without
/// successors or regions, and a terminator (or unregistered, with no results: an unknown op in
/// terminator position is taken as one).
pub fn is_exit(ctx: &Context, op: Op) -> bool {
    ctx.next_op(op).is_none()
        && ctx.parent_block(op).is_some()
        && ctx.successors(op).is_empty()
        && ctx.regions(op).is_empty()
        && (ctx.has_traits(op, OpTraits::TERMINATOR) || (!ctx.is_registered(op) && ctx.result_count(op) == 0))
}

/// The flow graph narrowed by constant-like ops, built on the cached call graph.
impl crate::pass::Analysis for FlowGraph {
    fn compute(ctx: &Context, op: Op, analyses: &mut crate::pass::AnalysisManager) -> Self {
        let calls = analyses.get::<CallGraph>(ctx, op);
        FlowGraph::with_call_graph(ctx, op, calls, |value| crate::interfaces::constant_integer(ctx, value))
    }
}
