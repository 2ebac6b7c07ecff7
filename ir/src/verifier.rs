//! The verifier: separate from building, it checks a whole op tree and reports every problem it
//! finds, not only the first.
//!
//! Order of checks for each op: its operands are valid handles that dominate the use (values
//! become visible in textual order within a block, in dominator order across the blocks of a
//! region, and never across an isolated-from-above op); then its structure (registered, region
//! and block counts, terminators, successors, symbol tables); then its own verifier. Nested ops
//! are checked before the op's own verifier runs, so a verifier may read its regions but must not
//! assume they are well formed.

use crate::analysis::DominatorTree;
use crate::diagnostics::Diagnostic;
use crate::dialect::OpTraits;
use crate::location::Location;
use crate::printer::type_to_string;
use crate::side_table::SideTable;
use crate::types::TypeKind;
use crate::{Block, Context, Op, Region, Type, Value, ValueDef};
use rustc_hash::{FxHashMap, FxHashSet};

/// Verifies `root` and everything nested in it; returns the errors (empty when valid).
pub fn verify(ctx: &Context, root: Op) -> Vec<Diagnostic> {
    verify_detailed(ctx, root).diagnostics
}

/// Verifies `root` like [`verify`] and, when it reported no error, returns the proof: a
/// [`Verified`] token that the executor, the backends and lowering require. Tools that want the
/// diagnostics whatever happens keep using [`verify`].
///
/// When `root` is nested in another op (a kernel in its module, say), the whole outermost op
/// around it is verified: the code `root` runs may be elsewhere in it (a kernel's helpers, a
/// function's callees, found through the enclosing symbol tables), and a token vouches for
/// everything its holder may reach.
pub fn verify_module(ctx: &Context, root: Op) -> Result<Verified<'_>, Vec<Diagnostic>> {
    let mut outermost = root;
    while let Some(parent) = ctx.parent_op(outermost) {
        outermost = parent;
    }
    let diagnostics = verify(ctx, outermost);
    if diagnostics.is_empty() {
        Ok(Verified { ctx, op: root })
    } else {
        Err(diagnostics)
    }
}

/// Proof that an op tree passed the verifier (as naga's `ModuleInfo` is proof for its writers).
///
/// Only [`verify_module`] makes one, and only when it reported no error on the outermost op
/// around the token's op (so whatever the op refers to was checked too). The token borrows the
/// [`Context`] immutably for its whole life, so the tree cannot change after the check: whoever
/// holds a token may rely on everything the verifier and the ops' own verifiers check (operand
/// and result counts and types, region shapes, terminators, symbol references and the kinds of
/// ops they name) without checking again. [`nested`](Self::nested) hands out the token of an
/// op inside the tree (a kernel for a backend, say): it was verified as part of this tree, so
/// its references into the enclosing symbol tables were checked too.
#[derive(Copy, Clone)]
pub struct Verified<'c> {
    ctx: &'c Context,
    op: Op,
}

impl<'c> Verified<'c> {
    /// The context the tree lives in.
    pub fn ctx(self) -> &'c Context {
        self.ctx
    }

    /// The op this token vouches for (the root of the verified tree, or an op nested in it).
    pub fn op(self) -> Op {
        self.op
    }

    /// The token of `op` when it is this op or nested in it; `None` otherwise.
    pub fn nested(self, op: Op) -> Option<Verified<'c>> {
        let mut current = Some(op);
        while let Some(candidate) = current {
            if candidate == self.op {
                return Some(Verified { ctx: self.ctx, op });
            }
            current = self.ctx.parent_op(candidate);
        }
        None
    }
}

impl std::fmt::Debug for Verified<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verified").field("op", &self.op).finish()
    }
}

/// What [`verify_detailed`] found.
#[derive(Debug, Default)]
pub struct Verification {
    /// Every error, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// The ops that have an error of their own (not counting errors nested inside them).
    pub failed_ops: FxHashSet<Op>,
}

/// Verifies like [`verify`], also telling which ops failed (the printer prints those in the
/// generic form, whose shape needs no checking).
pub fn verify_detailed(ctx: &Context, root: Op) -> Verification {
    let mut verifier = VerifyContext {
        ctx,
        diagnostics: Vec::new(),
        failed_ops: FxHashSet::default(),
        current: None,
        symbol_tables: FxHashMap::default(),
        visible_in: SideTable::new(NOT_VISIBLE),
        barrier: 0,
        next_scope: 1,
        entries_with_predecessors: FxHashSet::default(),
    };
    verifier.verify_op(root);
    Verification { diagnostics: verifier.diagnostics, failed_ops: verifier.failed_ops }
}

const NOT_VISIBLE: u32 = u32::MAX;

/// What an op verifier sees: the context, a symbol lookup, and a sink for diagnostics.
pub struct VerifyContext<'a> {
    ctx: &'a Context,
    diagnostics: Vec<Diagnostic>,
    failed_ops: FxHashSet<Op>,
    /// The op whose checks are running: a reported diagnostic marks it failed.
    current: Option<Op>,
    symbol_tables: FxHashMap<Op, FxHashMap<&'a str, Op>>,
    /// For each value: the isolation scope it was defined in while it is visible, else NOT_VISIBLE.
    /// A side table, so that verifying one function costs that function (the pass manager
    /// verifies after every pass on every function).
    visible_in: SideTable<Value, u32>,
    /// The innermost isolation scope: values from scopes numbered below it are hidden.
    barrier: u32,
    next_scope: u32,
    /// Regions whose entry block was found branched to (reported once each).
    entries_with_predecessors: FxHashSet<Region>,
}

impl<'a> VerifyContext<'a> {
    /// The context.
    pub fn ctx(&self) -> &'a Context {
        self.ctx
    }

    /// Reports an error on `op`.
    pub fn error(&mut self, op: Op, message: impl Into<String>) {
        let message = format!("'{}' op {}", self.ctx.name_str(op), message.into());
        self.failed_ops.insert(op);
        self.diagnostics.push(Diagnostic::error(self.ctx.location(op), message));
    }

    /// Reports a diagnostic as it is (it counts against the op being checked).
    pub fn report(&mut self, diagnostic: Diagnostic) {
        if let Some(op) = self.current {
            self.failed_ops.insert(op);
        }
        self.diagnostics.push(diagnostic);
    }

    /// How many errors have been reported so far.
    pub fn error_count(&self) -> usize {
        self.diagnostics.len()
    }

    /// A type as text, for messages.
    pub fn type_name(&self, ty: Type) -> String {
        type_to_string(self.ctx, ty)
    }

    /// Checks the operand count; reports and returns false if it differs.
    pub fn expect_operand_count(&mut self, op: Op, count: usize) -> bool {
        let actual = self.ctx.operands(op).len();
        if actual != count {
            self.error(op, format!("expects {count} operand(s), but has {actual}"));
        }
        actual == count
    }

    /// Checks the result count; reports and returns false if it differs.
    pub fn expect_result_count(&mut self, op: Op, count: usize) -> bool {
        let actual = self.ctx.result_count(op);
        if actual != count {
            self.error(op, format!("expects {count} result(s), but has {actual}"));
        }
        actual == count
    }

    /// Checks the region count; reports and returns false if it differs.
    pub fn expect_region_count(&mut self, op: Op, count: usize) -> bool {
        let actual = self.ctx.regions(op).len();
        if actual != count {
            self.error(op, format!("expects {count} region(s), but has {actual}"));
        }
        actual == count
    }

    /// The op defining symbol `name` in the nearest symbol table enclosing `from`.
    pub fn lookup_symbol(&mut self, from: Op, name: &str) -> Option<Op> {
        let mut table = self.ctx.parent_op(from);
        while let Some(candidate) = table {
            if self.ctx.has_traits(candidate, OpTraits::SYMBOL_TABLE) {
                break;
            }
            table = self.ctx.parent_op(candidate);
        }
        let table = table?;
        let ctx = self.ctx;
        let symbols = self.symbol_tables.entry(table).or_insert_with(|| {
            let mut symbols = FxHashMap::default();
            for op in ctx.body_ops(table) {
                if let Some(name) = symbol_name(ctx, op) {
                    symbols.entry(name).or_insert(op);
                }
            }
            symbols
        });
        symbols.get(name).copied()
    }

    fn is_visible(&self, value: Value) -> bool {
        let scope = *self.visible_in.get(value);
        scope != NOT_VISIBLE && scope >= self.barrier
    }

    fn make_visible(&mut self, values: impl Iterator<Item = Value>, scope: u32, undo: &mut Vec<Value>) {
        for value in values {
            self.visible_in.set(value, scope);
            undo.push(value);
        }
    }

    fn verify_op(&mut self, op: Op) {
        stacker::maybe_grow(128 * 1024, 4 * 1024 * 1024, || self.verify_op_unguarded(op));
    }

    fn verify_op_unguarded(&mut self, op: Op) {
        let ctx = self.ctx;
        self.current = Some(op);
        for (index, &operand) in ctx.operands(op).iter().enumerate() {
            if operand.index() >= ctx.value_count() {
                self.error(op, format!("operand #{index} is not a value of this context"));
            } else if !self.is_visible(operand) {
                self.report_undominated(op, index, operand);
            }
        }
        let traits = ctx.traits(op);
        let registered = ctx.is_registered(op);
        if !registered && !ctx.allow_unregistered {
            self.error(op, "is not registered (use --allow-unregistered-dialect to accept unknown ops)");
        }
        if traits.contains(OpTraits::TERMINATOR) && ctx.next_op(op).is_some() {
            self.error(op, "must be the last operation in the parent block");
        }
        if traits.contains(OpTraits::SYMBOL) && symbol_name(ctx, op).is_none() {
            self.error(op, "requires a string attribute 'sym_name'");
        }
        let definition = ctx.definition(ctx.name(op));
        let mut shape_ok = true;
        if let Some(expected) = definition.and_then(|d| d.region_count()) {
            if ctx.regions(op).len() != expected {
                self.error(op, format!("expects {expected} region(s), but has {}", ctx.regions(op).len()));
                shape_ok = false;
            }
        }
        if let Some(expected) = definition.and_then(|d| d.successor_count()) {
            if ctx.successors(op).len() != expected {
                self.error(op, format!("expects {expected} successor(s), but has {}", ctx.successors(op).len()));
                shape_ok = false;
            }
        }
        for &successor in ctx.successors(op) {
            let region = ctx.parent_block(op).and_then(|b| ctx.block_parent(b));
            if region != ctx.block_parent(successor) {
                self.error(op, "has a successor that is not a block of the same region");
            } else if let Some(region) = region.filter(|&r| ctx.region_blocks(r).first() == Some(&successor)) {
                self.entry_has_predecessors(region);
            }
        }
        if !ctx.regions(op).is_empty() {
            let isolated = traits.contains(OpTraits::ISOLATED_FROM_ABOVE);
            let saved_barrier = self.barrier;
            let scope = if isolated {
                self.next_scope += 1;
                self.barrier = self.next_scope - 1;
                self.barrier
            } else {
                self.barrier
            };
            for &region in ctx.regions(op) {
                self.verify_region(op, region, traits, registered, scope);
            }
            self.barrier = saved_barrier;
        }
        self.current = Some(op);
        if traits.contains(OpTraits::SYMBOL_TABLE) {
            self.verify_symbol_table(op);
        }
        if let Some(definition) = definition.filter(|_| shape_ok) {
            definition.verify(self, op);
        }
    }

    /// Reports, once per region, that its entry block is branched to: as in MLIR, an error on
    /// the region's op (the entry block is where the region starts; it has no predecessors).
    fn entry_has_predecessors(&mut self, region: Region) {
        let Some(owner) = self.ctx.region_parent(region) else { return };
        if self.entries_with_predecessors.insert(region) {
            self.error(owner, "entry block of region may not have predecessors");
        }
    }

    fn report_undominated(&mut self, op: Op, index: usize, operand: Value) {
        let ctx = self.ctx;
        let definition = match ctx.value_def(operand) {
            ValueDef::Result { op: def, .. } => ctx.parent_block(def).map(|_| ctx.location(def)),
            ValueDef::BlockArgument { block, .. } => ctx.block_parent(block).and(ctx.block_location(block)),
        };
        let message = format!("'{}' op operand #{index} does not dominate this use", ctx.name_str(op));
        let mut diagnostic = Diagnostic::error(ctx.location(op), message);
        match definition {
            Some(location) if location != Location::UNKNOWN => {
                diagnostic = diagnostic.with_note(location, "operand defined here");
            }
            _ => diagnostic = diagnostic.with_note(Location::UNKNOWN, "the operand is not defined in this module"),
        }
        self.report(diagnostic);
    }

    fn verify_region(&mut self, op: Op, region: Region, traits: OpTraits, registered: bool, scope: u32) {
        let ctx = self.ctx;
        let blocks = ctx.region_blocks(region);
        if traits.contains(OpTraits::SINGLE_BLOCK) && blocks.len() > 1 {
            self.error(op, format!("expects its regions to have at most one block, but one has {}", blocks.len()));
        }
        let needs_terminator = registered && !traits.contains(OpTraits::NO_TERMINATOR);
        for &block in blocks {
            if needs_terminator {
                self.verify_terminator(op, block);
            }
        }
        let mut undo = Vec::new();
        if traits.contains(OpTraits::GRAPH_REGION) {
            for &block in blocks {
                self.make_visible(ctx.block_arguments(block).iter().copied(), scope, &mut undo);
                for child in ctx.block_ops(block) {
                    self.make_visible(ctx.results(child), scope, &mut undo);
                }
            }
            for &block in blocks {
                for child in ctx.block_ops(block) {
                    self.verify_op(child);
                }
            }
        } else if blocks.len() <= 1 {
            for &block in blocks {
                self.verify_block(block, scope, &mut undo);
            }
        } else {
            self.verify_cfg_region(region, scope);
        }
        for value in undo {
            self.visible_in.set(value, NOT_VISIBLE);
        }
    }

    /// Walks the blocks of a multi-block region in dominator-tree order, so each block sees the
    /// values of the blocks that dominate it.
    fn verify_cfg_region(&mut self, region: Region, scope: u32) {
        let tree = DominatorTree::new(self.ctx, region);
        let blocks = tree.blocks();
        // Depth-first over the dominator tree; each frame undoes its block's values on exit.
        for root in tree.roots() {
            let mut stack: Vec<(usize, bool, Vec<Value>)> = vec![(root, false, Vec::new())];
            while let Some((index, visited, mut undo)) = stack.pop() {
                if visited {
                    for value in undo {
                        self.visible_in.set(value, NOT_VISIBLE);
                    }
                    continue;
                }
                self.verify_block(blocks[index], scope, &mut undo);
                stack.push((index, true, undo));
                for &child in tree.children(index).iter().rev() {
                    stack.push((child, false, Vec::new()));
                }
            }
        }
    }

    fn verify_block(&mut self, block: Block, scope: u32, undo: &mut Vec<Value>) {
        let ctx = self.ctx;
        self.make_visible(ctx.block_arguments(block).iter().copied(), scope, undo);
        for child in ctx.block_ops(block) {
            self.verify_op(child);
            self.make_visible(ctx.results(child), scope, undo);
        }
    }

    fn verify_terminator(&mut self, op: Op, block: Block) {
        let ctx = self.ctx;
        match ctx.last_op(block) {
            None => self.error(op, "has an empty block: expected at least a terminator"),
            Some(last) if !ctx.has_traits(last, OpTraits::TERMINATOR) => {
                if ctx.is_registered(last) || !ctx.allow_unregistered {
                    let message = format!(
                        "'{}' op block must end with a terminator, but ends with '{}'",
                        ctx.name_str(op),
                        ctx.name_str(last)
                    );
                    self.report(Diagnostic::error(ctx.location(last), message));
                }
            }
            Some(_) => {}
        }
    }

    fn verify_symbol_table(&mut self, op: Op) {
        let ctx = self.ctx;
        let mut seen: FxHashMap<&str, Op> = FxHashMap::default();
        for &region in ctx.regions(op) {
            for &block in ctx.region_blocks(region) {
                for child in ctx.block_ops(block) {
                    let Some(name) = symbol_name(ctx, child) else { continue };
                    if let Some(&previous) = seen.get(name) {
                        let diagnostic =
                            Diagnostic::error(ctx.location(child), format!("redefinition of symbol named '{name}'"))
                                .with_note(ctx.location(previous), "see existing symbol definition here");
                        self.report(diagnostic);
                    } else {
                        seen.insert(name, child);
                    }
                }
            }
        }
    }
}

/// The `sym_name` of an op, if it has a string one.
pub fn symbol_name(ctx: &Context, op: Op) -> Option<&str> {
    let attribute = ctx.attribute(op, "sym_name")?;
    ctx.attribute_kind(attribute).as_str()
}

/// Whether a type is a memref.
pub fn is_memref(ctx: &Context, ty: Type) -> bool {
    matches!(ctx.type_kind(ty), TypeKind::MemRef { .. })
}
