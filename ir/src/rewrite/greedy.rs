//! The greedy driver: applies folding, patterns and the removal of dead ops to the ops under a
//! root until nothing changes (a fixpoint) or an iteration bound is reached.
//!
//! One iteration seeds a worklist with every op under the root in pre-order (parents before the
//! ops nested in them, as MLIR's default top-down order), then takes ops off it until it is empty.
//! For each op, in order:
//!
//! 1. if its results are unused and it [is removable](super::is_removable), erase it;
//! 2. if it is constant-like, deduplicate it (an equal constant already in the insertion block
//!    replaces it) or move it into the block's run of constants (see below);
//! 3. if it has a [folder](super::fold), fold it: a value replaces the result, a constant is
//!    materialized (by [`GreedyConfig::materialize`]) once per insertion block and replaces it;
//! 4. try the patterns for its name, best benefit first, until one applies.
//!
//! Every change goes through a [`Rewriter`] whose listener puts back on the worklist what the
//! change may have made simplifiable: inserted and modified ops (users of a replaced value are
//! reported as modified), the parent of a modified or erased op (a region pattern may apply now),
//! the op after an erased or moved one (it has a new neighbour), the definition of a value that
//! lost a use (it may be dead), and the op a pattern changed in place. So one iteration reaches
//! the fixpoint in the common case; another iteration runs only if the first changed something,
//! and confirms it. Each iteration is linear in the ops plus the changes.
//! Rewrites that undo each other would never reach a fixpoint: [`GreedyConfig::max_rewrites`]
//! bounds the work in that case (and `max_iterations` the sweeps).
//!
//! Constants: the *insertion block* of an op is the entry block of its nearest enclosing region
//! whose op is isolated from above (or unregistered, or the root), as in MLIR. Constants that the
//! driver owns form a run at the start of that block, in the order the driver met them; a constant
//! that is met elsewhere moves to the end of that run (hoisting it out of loops and branches).

use super::dead::{is_removable, no_recursive_effects, RecursiveEffectsFn};
use super::fold::{FoldContext, FoldResult};
use super::listener::Listener;
use super::pattern::{PatternIndex, PatternSet};
use super::Rewriter;
use crate::dialect::OpTraits;
use crate::side_table::SideTable;
use crate::{Attribute, Block, Context, Ident, Location, Op, OpName, OperationState, Type, Value};
use rustc_hash::FxHashMap;

/// Creates the state of a constant op holding `value` of type `ty` (the dialect's constant op);
/// `None` when it cannot.
pub type MaterializeFn = fn(&mut Context, Attribute, Type, Location) -> Option<OperationState>;

/// How the greedy driver runs.
#[derive(Copy, Clone, Debug)]
pub struct GreedyConfig {
    /// At most this many iterations (sweeps over every op); at least one runs.
    pub max_iterations: u32,
    /// At most this many rewrites (folds, patterns applied, constants deduplicated) in all; `None`:
    /// no bound. Patterns that undo each other never converge: this stops them.
    pub max_rewrites: Option<u64>,
    /// Call the registered folders.
    pub fold: bool,
    /// Erase ops whose results are unused and that have no effects.
    pub remove_dead: bool,
    /// Deduplicate constant-like ops and hoist them to the start of their insertion block.
    pub hoist_constants: bool,
    /// Materializes the constants that folders compute; without it, folds to a constant are
    /// skipped.
    pub materialize: Option<MaterializeFn>,
    /// Which region ops have exactly the effects of their nested ops (for dead-op removal).
    pub recursive_effects: RecursiveEffectsFn,
}

impl Default for GreedyConfig {
    fn default() -> Self {
        GreedyConfig {
            max_iterations: 10,
            max_rewrites: None,
            fold: true,
            remove_dead: true,
            hoist_constants: true,
            materialize: None,
            recursive_effects: no_recursive_effects,
        }
    }
}

/// What a greedy run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GreedyStats {
    /// Whether the IR changed.
    pub changed: bool,
    /// Whether the last iteration changed nothing (a fixpoint was reached).
    pub converged: bool,
    /// Iterations run.
    pub iterations: u32,
    /// Ops replaced by folding.
    pub folded: u64,
    /// Dead ops erased (not counting those nested in them).
    pub erased: u64,
    /// Patterns applied.
    pub rewritten: u64,
    /// Constants replaced by an equal one.
    pub deduplicated: u64,
}

type ConstantKey = (Block, OpName, Attribute, Type);

/// The driver's listener: the worklist, and the constants the driver owns.
struct DriverState {
    worklist: Vec<Op>,
    queued: SideTable<Op, bool>,
    /// Constants owned by the driver.
    owned: SideTable<Op, bool>,
    constants: FxHashMap<ConstantKey, Op>,
    /// The last owned constant at the start of each insertion block.
    run_end: FxHashMap<Block, Op>,
    value_ident: Option<Ident>,
}

impl DriverState {
    fn push(&mut self, op: Op) {
        let queued = self.queued.get_mut(op);
        if !*queued {
            *queued = true;
            self.worklist.push(op);
        }
    }

    fn pop(&mut self) -> Option<Op> {
        let op = self.worklist.pop()?;
        self.queued.set(op, false);
        Some(op)
    }

    fn is_owned(&self, op: Op) -> bool {
        *self.owned.get(op)
    }

    fn set_owned(&mut self, op: Op, owned: bool) {
        self.owned.set(op, owned);
    }

    fn constant_key(&self, ctx: &Context, op: Op, block: Block) -> Option<ConstantKey> {
        let ident = self.value_ident?;
        let value = ctx.attributes(op).iter().find(|(n, _)| *n == ident).map(|&(_, a)| a)?;
        if ctx.result_count(op) != 1 {
            return None;
        }
        Some((block, ctx.name(op), value, ctx.value_type(ctx.result(op, 0))))
    }
}

impl Listener for DriverState {
    fn op_inserted(&mut self, _: &Context, op: Op) {
        self.push(op);
    }

    fn op_modified(&mut self, ctx: &Context, op: Op) {
        self.push(op);
        // Region patterns look at their bodies: a changed terminator may enable one.
        if let Some(parent) = ctx.parent_op(op) {
            self.push(parent);
        }
    }

    fn op_moved(&mut self, _: &Context, _: Op, former_next: Option<Op>) {
        // Patterns that look at the op before theirs (combining neighbours) may apply now.
        if let Some(next) = former_next {
            self.push(next);
        }
    }

    fn operand_dropped(&mut self, ctx: &Context, value: Value) {
        if let Some(def) = ctx.defining_op(value) {
            self.push(def);
        }
    }

    fn op_erased(&mut self, ctx: &Context, op: Op) {
        if self.is_owned(op) {
            self.set_owned(op, false);
            if let Some(block) = ctx.parent_block(op) {
                if let Some(key) = self.constant_key(ctx, op, block) {
                    if self.constants.get(&key) == Some(&op) {
                        self.constants.remove(&key);
                    }
                }
                if self.run_end.get(&block) == Some(&op) {
                    match ctx.prev_op(op).filter(|&p| self.is_owned(p)) {
                        Some(prev) => self.run_end.insert(block, prev),
                        None => self.run_end.remove(&block),
                    };
                }
            }
        }
        for &operand in ctx.operands(op) {
            if let Some(def) = ctx.defining_op(operand) {
                self.push(def);
            }
        }
        // Its parent may have become simpler (an empty body, a branch that only yields), and
        // the op after it has a new neighbour.
        if let Some(parent) = ctx.parent_op(op) {
            self.push(parent);
        }
        if let Some(next) = ctx.next_op(op) {
            self.push(next);
        }
    }
}

/// Applies folding, `patterns` and dead-op removal to the ops nested in `root` (not `root`
/// itself) until a fixpoint or `config.max_iterations`. See the module documentation.
pub fn apply_patterns_greedily(
    ctx: &mut Context,
    root: Op,
    patterns: &PatternSet,
    config: &GreedyConfig,
) -> GreedyStats {
    let mut index = PatternIndex::new(ctx, patterns);
    let state = DriverState {
        worklist: Vec::new(),
        queued: SideTable::new(false),
        owned: SideTable::new(false),
        constants: FxHashMap::default(),
        run_end: FxHashMap::default(),
        value_ident: ctx.find_ident("value"),
    };
    let mut rewriter = Rewriter::with_listener(ctx, root, state);
    // The driver's tables cover the ops under the root, as the use map does.
    let window = rewriter.uses().op_window();
    rewriter.listener.queued = SideTable::with_window(window.clone(), false);
    rewriter.listener.owned = SideTable::with_window(window, false);
    let mut driver = Driver {
        rewriter,
        root,
        config,
        stats: GreedyStats::default(),
        traits: Vec::new(),
        constants: Vec::new(),
        order: Vec::new(),
    };
    for _ in 0..config.max_iterations.max(1) {
        driver.stats.iterations += 1;
        driver.seed();
        let mut changed = false;
        while let Some(op) = driver.rewriter.listener.pop() {
            if driver.rewriter.is_erased(op) || driver.rewriter.ctx().parent_block(op).is_none() {
                continue;
            }
            changed |= driver.process(op, &mut index);
            if driver.out_of_rewrites() {
                driver.stats.changed = true;
                return driver.stats;
            }
        }
        if !changed {
            driver.stats.converged = true;
            break;
        }
        driver.stats.changed = true;
    }
    driver.stats
}

struct Driver<'c, 'g> {
    rewriter: Rewriter<'c, DriverState>,
    root: Op,
    config: &'g GreedyConfig,
    stats: GreedyStats,
    /// Traits by op name index (`None`: not looked up yet).
    traits: Vec<Option<OpTraits>>,
    /// Scratch: the constant operands of the op being folded.
    constants: Vec<Option<Attribute>>,
    /// Scratch: the ops under the root in pre-order, for [`Driver::seed`].
    order: Vec<Op>,
}

impl Driver<'_, '_> {
    fn out_of_rewrites(&self) -> bool {
        let done = self.stats.folded + self.stats.rewritten + self.stats.deduplicated;
        self.config.max_rewrites.is_some_and(|bound| done >= bound)
    }

    /// Puts every op under the root on the worklist so that they come off it in pre-order: the
    /// worklist is a stack, so they go on in reverse pre-order (children in reverse, each after
    /// its own children).
    fn seed(&mut self) {
        let ctx: &Context = self.rewriter.ctx;
        let state = &mut self.rewriter.listener;
        // The pre-order, with a cursor per block being walked (not every op of a block at once).
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        let mut cursors: Vec<Op> = Vec::new();
        // The first op of each block of `op`, the first block's on top.
        let push_first_ops = |cursors: &mut Vec<Op>, op: Op| {
            for &region in ctx.regions(op).iter().rev() {
                for &block in ctx.region_blocks(region).iter().rev() {
                    cursors.extend(ctx.first_op(block));
                }
            }
        };
        push_first_ops(&mut cursors, self.root);
        while let Some(op) = cursors.pop() {
            order.push(op);
            if let Some(next) = ctx.next_op(op) {
                cursors.push(next);
            }
            push_first_ops(&mut cursors, op);
        }
        state.worklist.reserve(order.len());
        for &op in order.iter().rev() {
            state.push(op);
        }
        self.order = order;
    }

    fn traits_of(&mut self, name: OpName) -> OpTraits {
        let index = name.index();
        if self.traits.len() <= index {
            self.traits.resize(index + 1, None);
        }
        *self.traits[index]
            .get_or_insert_with(|| self.rewriter.ctx().definition(name).map_or(OpTraits::NONE, |d| d.traits()))
    }

    /// Processes one op; whether it changed the IR.
    fn process(&mut self, op: Op, index: &mut PatternIndex<'_>) -> bool {
        let name = self.rewriter.ctx().name(op);
        let traits = self.traits_of(name);
        if self.config.remove_dead
            && !traits.contains(OpTraits::TERMINATOR)
            && self.rewriter.results_unused(op)
            && is_removable(self.rewriter.ctx(), op, self.config.recursive_effects)
        {
            self.rewriter.erase_op(op);
            self.stats.erased += 1;
            return true;
        }
        if traits.contains(OpTraits::CONSTANT_LIKE) {
            return self.config.hoist_constants && self.place_constant(op);
        }
        if self.config.fold && self.try_fold(op, name) {
            self.stats.folded += 1;
            return true;
        }
        let set = index.set();
        for &which in index.for_name(name) {
            let pattern = set.pattern(which);
            let rewriter: &mut Rewriter<'_> = &mut self.rewriter;
            if pattern.match_and_rewrite(rewriter, op) {
                // Changed in place, or its results lost their uses: look at it again.
                if !self.rewriter.is_erased(op) {
                    self.rewriter.listener.push(op);
                }
                self.stats.rewritten += 1;
                return true;
            }
        }
        false
    }

    /// The block where a constant `op` is placed: the entry block of the nearest enclosing region
    /// that is isolated (or the root's), or, when that region has several blocks, `op`'s own
    /// block at that level.
    fn insertion_block(&self, op: Op) -> Option<Block> {
        let ctx = self.rewriter.ctx();
        let mut block = ctx.parent_block(op)?;
        loop {
            let region = ctx.block_parent(block)?;
            let parent = ctx.region_parent(region)?;
            let boundary = parent == self.root
                || !ctx.is_registered(parent)
                || ctx.has_traits(parent, OpTraits::ISOLATED_FROM_ABOVE);
            match ctx.parent_block(parent) {
                Some(outer) if !boundary => block = outer,
                // In a region of several blocks (a CFG), a constant moves to the start of its own
                // block: the entry block dominates only the blocks reachable from it, and the
                // verifier rejects a use in an unreachable block of a value defined elsewhere.
                _ if ctx.region_blocks(region).len() > 1 => return Some(block),
                _ => return ctx.region_blocks(region).first().copied(),
            }
        }
    }

    /// Puts an owned constant at the end of the run of constants at the start of `block`.
    fn append_to_run(&mut self, op: Op, block: Block) {
        match self.rewriter.listener.run_end.get(&block).copied() {
            Some(end) if end != op => self.rewriter.move_op_after(op, end),
            Some(_) => {}
            None => self.rewriter.move_op_to_start(op, block),
        }
        self.rewriter.listener.run_end.insert(block, op);
    }

    /// Deduplicates or hoists a constant-like op; whether it was replaced.
    fn place_constant(&mut self, op: Op) -> bool {
        if self.rewriter.listener.is_owned(op) {
            return false;
        }
        let Some(block) = self.insertion_block(op) else { return false };
        let Some(key) = self.rewriter.listener.constant_key(self.rewriter.ctx(), op, block) else { return false };
        if let Some(&existing) = self.rewriter.listener.constants.get(&key) {
            let replacement = self.rewriter.ctx().result(existing, 0);
            self.rewriter.replace_op(op, &[replacement]);
            self.stats.deduplicated += 1;
            return true;
        }
        self.rewriter.listener.constants.insert(key, op);
        self.rewriter.listener.set_owned(op, true);
        self.append_to_run(op, block);
        false
    }

    /// Folds `op` with its registered folder; whether it was replaced.
    fn try_fold(&mut self, op: Op, name: OpName) -> bool {
        let ctx = self.rewriter.ctx();
        let Some(folder) = ctx.folder(name) else { return false };
        if ctx.result_count(op) != 1 {
            return false;
        }
        let mut constants = std::mem::take(&mut self.constants);
        constants.clear();
        let value_ident = self.rewriter.listener.value_ident;
        for index in 0..self.rewriter.ctx().operands(op).len() {
            let operand = self.rewriter.ctx().operand(op, index);
            let constant = match self.rewriter.ctx().defining_op(operand) {
                Some(def) if self.traits_of(self.rewriter.ctx().name(def)).contains(OpTraits::CONSTANT_LIKE) => {
                    let ctx = self.rewriter.ctx();
                    value_ident.and_then(|i| ctx.attributes(def).iter().find(|(n, _)| *n == i).map(|&(_, a)| a))
                }
                _ => None,
            };
            constants.push(constant);
        }
        let result = folder(&mut FoldContext::new(self.rewriter.ctx_mut(), &constants), op);
        self.constants = constants;
        let own = self.rewriter.ctx().result(op, 0);
        match result {
            None => false,
            Some(FoldResult::Value(value)) if value == own => false,
            Some(FoldResult::Value(value)) => {
                self.rewriter.replace_op(op, &[value]);
                true
            }
            Some(FoldResult::Attribute(value)) => {
                let ty = self.rewriter.ctx().value_type(own);
                match self.materialize(op, value, ty) {
                    Some(constant) => {
                        self.rewriter.replace_op(op, &[constant]);
                        true
                    }
                    None => false,
                }
            }
        }
    }

    /// The result of an owned constant `value : ty` in the insertion block of `op`, created if
    /// needed.
    fn materialize(&mut self, op: Op, value: Attribute, ty: Type) -> Option<crate::Value> {
        let materialize = self.config.materialize?;
        let block = self.insertion_block(op)?;
        let location = self.rewriter.ctx().location(op);
        let state = materialize(self.rewriter.ctx_mut(), value, ty, location)?;
        if self.rewriter.listener.value_ident.is_none() {
            self.rewriter.listener.value_ident = self.rewriter.ctx().find_ident("value");
        }
        let key = (block, state.name, value, ty);
        if let Some(&existing) = self.rewriter.listener.constants.get(&key) {
            return Some(self.rewriter.ctx().result(existing, 0));
        }
        let constant = self.rewriter.create_op(state);
        if self.rewriter.ctx().result_count(constant) != 1 {
            self.rewriter.erase_op(constant);
            return None;
        }
        match self.rewriter.listener.run_end.get(&block).copied() {
            Some(end) => self.rewriter.insert_op_after(end, constant),
            None => self.rewriter.prepend_op(block, constant),
        }
        self.rewriter.listener.run_end.insert(block, constant);
        self.rewriter.listener.set_owned(constant, true);
        self.rewriter.listener.constants.insert(key, constant);
        Some(self.rewriter.ctx().result(constant, 0))
    }
}
