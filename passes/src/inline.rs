//! `inline`: replaces calls by the bodies of their callees.
//!
//! Everything is asked of the interfaces; no op is known by name. A call (an op with a
//! [`CallOpInterface`]) is inlined when the symbol it names, looked up in the [`SymbolTable`] of
//! the table it is in, is a callable ([`CallableOpInterface`]) with a body, and:
//! - the body is a single block ending in a `RETURN_LIKE` terminator, whose operands replace the
//!   call's results; the arguments the call passes match the block's arguments, the returned
//!   values the call's results (in number and type);
//! - the call runs in the callee's execution space (the `HOST_CODE` / `DEVICE_CODE` of the
//!   function around the call against the callee's own): host code never inlines a device
//!   function, nor the reverse;
//! - the callee cannot reach itself through calls (recursion, direct or not);
//! - the result nests no deeper than the parser accepts (`nesting.rs`): otherwise the call is
//!   kept, counted in `num-too-deep`, and a remark says so, so that the output always parses.
//!
//! A declaration (a callable without a body, `compute.host_func`) is never inlined.
//!
//! Order and cost. Functions are visited callees first (the call graph's strongly connected
//! components in reverse topological order), so a callee's body is final — its own calls inlined
//! — when it is copied into a caller, and a chain `main → a → b` is inlined in one run. Inlining a
//! call costs the size of the body it puts in place of the call, never a walk of the caller: the
//! ops placed are the only ones visited (for the calls they hold and the symbols they name). One
//! exception to the order avoids copying the same ops again and again: a function called once,
//! that will be erased once that call is inlined, is *deferred*: it is not visited in its turn;
//! its single caller moves its body (as it is) in place of the call, erases it, and takes its
//! calls into its own worklist. A chain of `n` single-use functions then costs `O(n)`, where
//! moving each fully inlined body into the next would cost `O(n²)`. A deferred function whose
//! call was not inlined is visited at the end.
//!
//! Erasure. A callee that was inlined and that nothing refers to any more is erased when its
//! [`CallableOpInterface::is_discardable`] says so (for hat: a `kernel.helper`, or a
//! `compute.func` that is not an entry in a module that has one; see
//! [`crate::support::is_discardable_function`]). References are counted per function, from
//! every attribute of every op in the table (a function's references to itself do not count), and
//! kept exact as calls go and bodies are copied or moved.

mod components;
mod nesting;

use crate::support::{collect_symbol_refs, has_entry, is_discardable_function, symbol_ident};
use components::components;
use hat_ir::interfaces::{
    enclosing_execution_space, execution_space, CallOpInterface, CallableOpInterface, ExecutionSpace, SymbolTable,
};
use hat_ir::pass::{Pass, PassFailed, PassInfo, PassState};
use hat_ir::rewrite::{Mapping, NoListener, Rewriter};
use hat_ir::{Block, Context, Diagnostic, Ident, Location, Op, OpTraits, Value};
use nesting::{body_nesting, NESTING_BOUND};
use rustc_hash::FxHashMap;

/// The registration of `inline`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "inline",
        summary:
            "Inline calls of compute functions and kernel helpers (not recursive ones), erasing callees left unused",
        anchor: None,
        options: &[],
        create: |_| Box::new(Inline),
    }
}

/// The `inline` pass.
pub struct Inline;

impl Pass for Inline {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let tables: Vec<Op> = ctx.walk(op).into_iter().filter(|&o| ctx.has_traits(o, OpTraits::SYMBOL_TABLE)).collect();
        let mut total = InlineOutcome::default();
        for table in tables {
            if table != op && ctx.parent_block(table).is_none() {
                continue; // inside a function erased just before
            }
            let outcome = inline_calls(ctx, table);
            if let Some(location) = outcome.first_too_deep {
                let message = format!(
                    "{} call(s) not inlined: the result would nest deeper than the {NESTING_BOUND} levels the parser accepts",
                    outcome.too_deep
                );
                state.emit(Diagnostic::remark(location, message));
            }
            total.inlined += outcome.inlined;
            total.erased += outcome.erased;
            total.too_deep += outcome.too_deep;
        }
        state.add_statistic("num-inlined", total.inlined as u64);
        state.add_statistic("num-erased", total.erased as u64);
        state.add_statistic("num-too-deep", total.too_deep as u64);
        if total.inlined == 0 {
            state.preserve_all();
        }
        Ok(())
    }
}

/// What inlining the calls of one symbol table did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InlineOutcome {
    /// Calls inlined.
    pub inlined: usize,
    /// Callees erased.
    pub erased: usize,
    /// Calls kept because inlining them would nest too deeply.
    pub too_deep: usize,
    /// Where the first of those is.
    pub first_too_deep: Option<Location>,
}

/// A call of a function of the table, where it is.
#[derive(Copy, Clone, Debug)]
struct CallSite {
    call: Op,
    /// The callee's index among the table's functions.
    callee: usize,
    /// How many regions enclose the call.
    depth: usize,
    /// The execution space the call runs in.
    space: Option<ExecutionSpace>,
}

/// A callable with a body, directly in the table.
struct Function {
    op: Op,
    /// The single block of its body when it ends in a return-like terminator (else it is never
    /// inlined).
    block: Option<Block>,
    space: Option<ExecutionSpace>,
    discardable: bool,
    /// References to it from outside its own body.
    references: usize,
    /// Whether its body refers to itself (then it is copied, never moved, into a caller).
    self_referenced: bool,
    /// How deeply its body's text nests ([`body_nesting`]), once asked.
    nesting: Option<usize>,
    /// Whether one of its calls was inlined.
    inlined: bool,
    /// How many calls of functions here call it.
    call_sites: usize,
    /// Whether it waits for its only call to be inlined (see [`inline_calls`]).
    deferred: bool,
    erased: bool,
    /// The calls in its body, until its turn comes.
    calls: Vec<CallSite>,
}

/// The functions of a table, and how to find them.
struct Functions {
    symbols: SymbolTable,
    position: FxHashMap<Op, usize>,
    list: Vec<Function>,
}

impl Functions {
    /// The function `op` calls, if it is a call of one of them.
    fn callee(&self, ctx: &Context, op: Op) -> Option<usize> {
        let call = ctx.interface::<dyn CallOpInterface>(op)?;
        let target = self.symbols.lookup(call.callee(ctx, op)?)?;
        self.position.get(&target).copied()
    }

    /// Counts the references held by the attributes of `op`, placed in function `owner`, with
    /// `sign` 1 (the op was added) or -1 (it is going).
    fn count_references(&mut self, ctx: &Context, op: Op, owner: Option<usize>, sign: isize, scratch: &mut Vec<Ident>) {
        if ctx.attributes(op).is_empty() {
            return;
        }
        scratch.clear();
        for &(_, attribute) in ctx.attributes(op) {
            collect_symbol_refs(ctx, attribute, scratch);
        }
        for &name in scratch.iter() {
            let Some(index) = self.symbols.lookup(name).and_then(|target| self.position.get(&target).copied()) else {
                continue;
            };
            if Some(index) == owner {
                self.list[index].self_referenced |= sign > 0;
            } else {
                let references = &mut self.list[index].references;
                *references = references.checked_add_signed(sign).expect("references are counted before they go");
            }
        }
    }
}

/// Visits `roots` and the ops nested in them (not inside nested symbol tables), with the number
/// of regions enclosing each (`depth` for the roots) and the execution space it runs in (`space`
/// for the roots, unless an op on the way declares its own).
fn scan(
    ctx: &Context,
    roots: &[Op],
    depth: usize,
    space: Option<ExecutionSpace>,
    mut visit: impl FnMut(Op, usize, Option<ExecutionSpace>),
) {
    let mut stack: Vec<(Op, usize, Option<ExecutionSpace>)> = roots.iter().rev().map(|&o| (o, depth, space)).collect();
    while let Some((op, depth, space)) = stack.pop() {
        visit(op, depth, space);
        if ctx.regions(op).is_empty() || ctx.has_traits(op, OpTraits::SYMBOL_TABLE) {
            continue;
        }
        let inner = execution_space(ctx, op).or(space);
        for &region in ctx.regions(op).iter().rev() {
            for &block in ctx.region_blocks(region).iter().rev() {
                let mut cursor = ctx.last_op(block);
                while let Some(child) = cursor {
                    stack.push((child, depth + 1, inner));
                    cursor = ctx.prev_op(child);
                }
            }
        }
    }
}

/// The ops of `block` but its last (the terminator).
fn body_ops(ctx: &Context, block: Block) -> Vec<Op> {
    let terminator = ctx.last_op(block);
    ctx.block_ops(block).filter(|&o| Some(o) != terminator).collect()
}

/// Inlines the calls between the functions directly in `table` and erases the callees left
/// unused (see the module documentation).
pub fn inline_calls(ctx: &mut Context, table: Op) -> InlineOutcome {
    let mut outcome = InlineOutcome::default();
    let children: Vec<Op> =
        ctx.regions(table).iter().flat_map(|&r| ctx.region_blocks(r).iter()).flat_map(|&b| ctx.block_ops(b)).collect();
    let entries_known = has_entry(ctx, table);
    let mut functions =
        Functions { symbols: SymbolTable::new(ctx, table), position: FxHashMap::default(), list: Vec::new() };
    for &child in &children {
        let Some(callable) = ctx.interface::<dyn CallableOpInterface>(child) else { continue };
        let Some(body) = callable.body(ctx, child) else { continue };
        // A name that no reference uses is not interned: such a function is only a caller.
        if symbol_ident(ctx, child).is_some_and(|name| functions.symbols.lookup(name) != Some(child)) {
            continue; // a second definition of a name: the verifier reports it
        }
        let block = match ctx.region_blocks(body) {
            &[block] => ctx.last_op(block).filter(|&t| ctx.has_traits(t, OpTraits::RETURN_LIKE)).map(|_| block),
            _ => None,
        };
        functions.position.insert(child, functions.list.len());
        functions.list.push(Function {
            op: child,
            block,
            space: execution_space(ctx, child),
            discardable: is_discardable_function(ctx, child, entries_known),
            references: 0,
            self_referenced: false,
            nesting: None,
            inlined: false,
            call_sites: 0,
            deferred: false,
            erased: false,
            calls: Vec::new(),
        });
    }
    // References, the calls of each function, and the call graph.
    let table_depth = std::iter::successors(ctx.parent_op(table), |&o| ctx.parent_op(o)).count();
    let outer_space = enclosing_execution_space(ctx, table).map(|(_, space)| space);
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); functions.list.len()];
    let mut scratch = Vec::new();
    let mut any_call = false;
    for &child in &children {
        let owner = functions.position.get(&child).copied();
        let space = execution_space(ctx, child).or(outer_space);
        scan(ctx, &[child], table_depth + 1, space, |op, depth, space| {
            functions.count_references(ctx, op, owner, 1, &mut scratch);
            let (Some(caller), Some(callee)) = (owner, functions.callee(ctx, op)) else { return };
            edges[caller].push(callee);
            functions.list[caller].calls.push(CallSite { call: op, callee, depth, space });
            functions.list[callee].call_sites += 1;
            any_call = true;
        });
    }
    if !any_call {
        return outcome;
    }
    let (order, recursive) = components(&edges);
    drop(edges);
    // A function called once, by a call of a function here, and erased once that call is inlined,
    // waits for it: its body moves into the caller as it is, and its calls join the caller's. Done
    // in its own turn, it would be moved again with every function of a chain it absorbed.
    for (index, function) in functions.list.iter_mut().enumerate() {
        function.deferred = function.discardable
            && !function.self_referenced
            && !recursive[index]
            && function.references == 1
            && function.call_sites == 1;
    }
    let mut rewriter = Rewriter::new(ctx, table);
    let mut process = |functions: &mut Functions, current: usize| {
        let mut worklist = std::mem::take(&mut functions.list[current].calls);
        while let Some(site) = worklist.pop() {
            if recursive[site.callee] {
                continue;
            }
            match inline_site(&mut rewriter, functions, current, site, &mut worklist, &mut scratch) {
                Inlined::No => {}
                Inlined::TooDeep => {
                    outcome.too_deep += 1;
                    outcome.first_too_deep.get_or_insert(rewriter.ctx().location(site.call));
                }
                Inlined::Copied => outcome.inlined += 1,
                Inlined::Moved => {
                    outcome.inlined += 1;
                    outcome.erased += 1;
                }
            }
        }
        // Its body grew: measure it again when it is inlined.
        functions.list[current].nesting = None;
    };
    // Callees first: a callee's body is final (its own calls inlined) when it is copied.
    for &current in &order {
        let function = &functions.list[current];
        if !function.erased && !function.deferred {
            process(&mut functions, current);
        }
    }
    // Deferred functions whose call was not inlined (too deep, or not matching) are kept: their
    // own calls are inlined now, callers first, so that each moves the deferred functions it
    // calls before they are visited themselves.
    for &current in order.iter().rev() {
        let function = &functions.list[current];
        if !function.erased && function.deferred {
            process(&mut functions, current);
        }
    }
    // Inlined callees that nothing refers to any more (counting the references of each other's
    // bodies: those are calls that were not inlined).
    for index in 0..functions.list.len() {
        let function = &functions.list[index];
        if !function.erased && function.inlined && function.discardable && function.references == 0 {
            rewriter.erase_op(function.op);
            functions.list[index].erased = true;
            outcome.erased += 1;
        }
    }
    outcome
}

/// Erases function `index` and forgets the references its body held.
fn erase_function(
    rewriter: &mut Rewriter<'_, NoListener>,
    functions: &mut Functions,
    index: usize,
    scratch: &mut Vec<Ident>,
) {
    let op = functions.list[index].op;
    for nested in rewriter.ctx().walk(op) {
        functions.count_references(rewriter.ctx(), nested, Some(index), -1, scratch);
    }
    rewriter.erase_op(op);
    functions.list[index].erased = true;
}

/// What [`inline_site`] did.
enum Inlined {
    /// Nothing: the call does not match its callee.
    No,
    /// Nothing: the result would nest too deeply.
    TooDeep,
    /// The callee's body was copied in place of the call.
    Copied,
    /// The callee's body was moved in place of the call, and the callee erased.
    Moved,
}

/// Inlines the call `site` in function `caller` if it may be; the calls in the inlined ops go to
/// `worklist`.
fn inline_site(
    rewriter: &mut Rewriter<'_, NoListener>,
    functions: &mut Functions,
    caller: usize,
    site: CallSite,
    worklist: &mut Vec<CallSite>,
    scratch: &mut Vec<Ident>,
) -> Inlined {
    let ctx = rewriter.ctx();
    let (call, callee) = (site.call, &functions.list[site.callee]);
    let Some(block) = callee.block.filter(|_| !callee.erased && callee.space == site.space) else { return Inlined::No };
    let Some(interface) = ctx.interface::<dyn CallOpInterface>(call) else { return Inlined::No };
    let arguments = ctx.operands(call)[interface.arguments(ctx, call)].to_vec();
    let terminator = ctx.last_op(block).expect("a function's block ends in its return");
    let types = |values: &[Value]| values.iter().map(|&v| ctx.value_type(v)).collect::<Vec<_>>();
    let results: Vec<_> = ctx.results(call).map(|r| ctx.value_type(r)).collect();
    if types(ctx.block_arguments(block)) != types(&arguments) || types(ctx.operands(terminator)) != results {
        return Inlined::No;
    }
    let nesting = *functions.list[site.callee].nesting.get_or_insert_with(|| body_nesting(ctx, block));
    if site.depth + nesting > NESTING_BOUND {
        return Inlined::TooDeep;
    }
    functions.count_references(ctx, call, Some(caller), -1, scratch);
    let callee = &mut functions.list[site.callee];
    callee.inlined = true;
    let moved = callee.discardable && callee.references == 0 && !callee.self_referenced;
    let body = body_ops(rewriter.ctx(), block);
    let (placed, returned) = if moved {
        // The last reference to a callee about to be erased: its ops move, whose references stay
        // counted as they were.
        rewriter.inline_block_before(block, call, &arguments);
        let returned = rewriter.ctx().operands(terminator).to_vec();
        functions.count_references(rewriter.ctx(), terminator, Some(site.callee), -1, scratch);
        rewriter.erase_op(terminator);
        (body, returned)
    } else {
        let mut mapping = Mapping::new();
        for (&parameter, &argument) in rewriter.ctx().block_arguments(block).iter().zip(&arguments) {
            mapping.map_value(parameter, argument);
        }
        let mut copies = Vec::with_capacity(body.len());
        for op in body {
            let copy = rewriter.clone_op(op, &mut mapping);
            rewriter.insert_op_before(call, copy);
            copies.push(copy);
        }
        let returned = rewriter.ctx().operands(terminator).iter().map(|&v| mapping.lookup(v)).collect::<Vec<_>>();
        (copies, returned)
    };
    rewriter.replace_op(call, &returned);
    scan(rewriter.ctx(), &placed, site.depth, site.space, |op, depth, space| {
        if !moved {
            functions.count_references(rewriter.ctx(), op, Some(caller), 1, scratch);
        }
        if let Some(callee) = functions.callee(rewriter.ctx(), op) {
            worklist.push(CallSite { call: op, callee, depth, space });
        }
    });
    if moved {
        erase_function(rewriter, functions, site.callee, scratch);
        Inlined::Moved
    } else {
        Inlined::Copied
    }
}

#[cfg(test)]
mod tests;
