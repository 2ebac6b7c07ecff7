//! In-place dispatches: a dispatch that reads a buffer whose data dies with it and writes a
//! fresh buffer of the same type, each work item its own element, writes into the buffer it
//! reads instead. The written buffer's allocation goes, its uses take the read buffer (ownership
//! passes on), and the dispatch launches a copy of its kernel whose written parameter is the
//! read one, so that the kernel's code reads and writes one buffer and no driver may assume two
//! descriptors do not alias.
//!
//! A dispatch of kernel `@k` whose parameter `i` is bound to `%src` and parameter `j` to `%dst`
//! is rewritten when:
//! - `%dst` is made by a `buffer.alloc` in the dispatch's block, and this dispatch is its first
//!   use (so it holds no data before);
//! - `%src` is surely one buffer (its roots), made by a `buffer.alloc` of the function (the
//!   caller's buffers are the caller's), of the type of `%dst` (the same size operands where a
//!   size is dynamic), and no buffer value that may be it is live after the dispatch;
//! - no other argument of the dispatch may be `%src` or `%dst`;
//! - the kernel's effects prove the dispatch writes in place
//!   ([`KernelEffects::writes_in_place`](crate::transfers::kernel_effects::KernelEffects::writes_in_place): every element of `%dst`, each work item only its own
//!   element, reading `%src`'s before writing `%dst`'s).
//!
//! Each buffer hands on and takes over at most once per dispatch. The copy of `@k` is
//! `@k_in_place_i_j` (made once per kernel and pair), whose uses of parameter `j` are
//! parameter `i`; the dispatch passes `%src` to both.

use super::intervals::BlockIntervals;
use super::lifetimes::{blocks_under, holders, parameters_of};
use super::sparse_liveness::SparseLiveness;
use crate::transfers::aliases::{is_buffer, BufferRoots, Roots};
use crate::transfers::kernel_effects::print::launch_with_any_grid;
use crate::transfers::kernel_effects::Dispatch;
use hat_dialects::buffer::AllocOp;
use hat_ir::interfaces::LaunchOpInterface;
use hat_ir::rewrite::{Mapping, Rewriter, UseMap};
use hat_ir::verifier::symbol_name;
use hat_ir::{Block, Context, Op, Value};
use rustc_hash::{FxHashMap, FxHashSet};

/// One dispatch that writes in place.
#[derive(Clone, Debug)]
pub struct Handover {
    /// The dispatch.
    pub dispatch: Op,
    /// The kernel it launched.
    pub kernel: Op,
    /// The parameter read, and the value bound to it.
    pub read: (usize, Value),
    /// The parameter written, and the `buffer.alloc` of the buffer bound to it.
    pub write: (usize, Op),
}

/// The dispatches of `function` that may write in place (see the module documentation);
/// `roots`: [`BufferRoots::with_calls`] of `function`; `proves(kernel, read, write, dispatch)`:
/// [`KernelEffects::writes_in_place`](crate::transfers::kernel_effects::KernelEffects::writes_in_place) of the kernel's effects (the pass asks its analysis
/// manager, so a kernel's effects are computed once for every function that launches it).
pub fn find(
    ctx: &Context,
    function: Op,
    roots: &BufferRoots,
    proves: &mut dyn FnMut(Op, usize, usize, &Dispatch) -> bool,
) -> Vec<Handover> {
    let parameters = parameters_of(ctx, function);
    let blocks = blocks_under(ctx, function);
    let (holders, unknown) = holders(ctx, &blocks, roots, &parameters);
    let liveness = SparseLiveness::new(ctx, function, &|v| super::lifetimes::may_be_owned(ctx, roots, &parameters, v));
    let ops = ctx.walk(function);
    let uses = UseMap::build(ctx, function);
    let mut intervals: FxHashMap<Block, BlockIntervals<'_>> = FxHashMap::default();
    let (mut handed_on, mut taken_over): (FxHashSet<Value>, FxHashSet<Op>) = Default::default();
    let mut found = Vec::new();
    for &op in &ops {
        let Some(launching) = ctx.interface::<dyn LaunchOpInterface>(op) else { continue };
        let Some(block) = ctx.parent_block(op) else { continue };
        let arguments = &ctx.operands(op)[launching.arguments(ctx, op)];
        if arguments.iter().filter(|&&a| is_buffer(ctx, a)).count() < 2 {
            continue;
        }
        let Some((kernel, dispatch)) = launch_with_any_grid(ctx, op) else { continue };
        let position = |o: Op| liveness.position(o);
        let Some(here) = position(op) else { continue };
        for (j, &dst) in arguments.iter().enumerate() {
            let Some(alloc) = fresh_allocation(ctx, roots, dst, block) else { continue };
            if taken_over.contains(&alloc) || arguments.iter().filter(|&&a| a == dst).count() != 1 {
                continue;
            }
            // This dispatch is the first use of `%dst`.
            let later = |user: Op| {
                user == op || ctx.ancestor_in_block(block, user).and_then(position).is_some_and(|p| p > here)
            };
            if !uses.uses(dst).all(|u| later(u.user)) {
                continue;
            }
            for (i, &src) in arguments.iter().enumerate() {
                if i == j || !is_buffer(ctx, src) || arguments.iter().filter(|&&a| a == src).count() != 1 {
                    continue;
                }
                let Some(root) = sole_root(roots, src).filter(|r| !parameters.contains(r) && !handed_on.contains(r))
                else {
                    continue;
                };
                if !same_storage_shape(ctx, root, dst) {
                    continue;
                }
                // No other argument may be either buffer.
                let others_distinct = arguments.iter().enumerate().filter(|&(k, _)| k != i && k != j).all(|(_, &a)| {
                    !is_buffer(ctx, a)
                        || matches!(roots.roots_ref(a), Roots::Known(set) if !set.contains(&root) && !set.contains(&dst))
                });
                if !others_distinct {
                    continue;
                }
                // No value that may be `%src` is live after the dispatch.
                let block_intervals =
                    intervals.entry(block).or_insert_with(|| BlockIntervals::new(ctx, &liveness, block));
                let maybe_src = holders.get(&root).into_iter().flatten().chain(&unknown);
                if maybe_src.into_iter().any(|&v| block_intervals.interval(ctx, v).is_some_and(|(_, end)| end > here)) {
                    continue;
                }
                if !proves(kernel, i, j, &dispatch) {
                    continue;
                }
                handed_on.insert(root);
                taken_over.insert(alloc);
                found.push(Handover { dispatch: op, kernel, read: (i, src), write: (j, alloc) });
                break;
            }
        }
    }
    found
}

/// Rewrites the handovers (see the module documentation); the kernel copies made, by kernel and
/// pair of parameters.
pub fn apply(ctx: &mut Context, module: Op, handovers: &[Handover], copies: &mut FxHashMap<(Op, usize, usize), Op>) {
    for handover in handovers {
        let (i, _) = handover.read;
        let (j, alloc) = handover.write;
        let copy = match copies.get(&(handover.kernel, i, j)) {
            Some(&copy) => copy,
            None => {
                let copy = copy_kernel(ctx, module, handover.kernel, i, j);
                copies.insert((handover.kernel, i, j), copy);
                copy
            }
        };
        let name = symbol_name(ctx, copy).unwrap_or_default().to_string();
        let reference = ctx.symbol_ref_attr(&name);
        let key = ctx.ident("kernel");
        ctx.set_attribute(handover.dispatch, key, reference);
        let launching = ctx.interface::<dyn LaunchOpInterface>(handover.dispatch).expect("a launch");
        let first = launching.arguments(ctx, handover.dispatch).start;
        // The buffer read now: an earlier handover may have replaced the one found.
        let src = ctx.operands(handover.dispatch)[first + i];
        let dst = ctx.result(alloc, 0);
        let mut rw = Rewriter::new(ctx, module);
        rw.replace_all_uses_with(dst, src);
        rw.erase_op(alloc);
        rw.ctx_mut().set_operand(handover.dispatch, first + j, src);
    }
}

/// A copy of `kernel`, next to it, whose uses of parameter `write` are parameter `read`.
fn copy_kernel(ctx: &mut Context, module: Op, kernel: Op, read: usize, write: usize) -> Op {
    let base = symbol_name(ctx, kernel).unwrap_or("kernel").to_string();
    let taken: FxHashSet<String> =
        ctx.walk(module).into_iter().filter_map(|op| symbol_name(ctx, op).map(str::to_string)).collect();
    let mut name = format!("{base}_in_place_{read}_{write}");
    let mut suffix = 1;
    while taken.contains(&name) {
        name = format!("{base}_in_place_{read}_{write}_{suffix}");
        suffix += 1;
    }
    let mut rw = Rewriter::new(ctx, module);
    let copy = rw.clone_op(kernel, &mut Mapping::new());
    rw.insert_op_after(kernel, copy);
    let entry = rw.ctx().regions(copy).first().and_then(|&r| rw.ctx().region_blocks(r).first().copied());
    if let Some(entry) = entry {
        let parameters = rw.ctx().block_arguments(entry).to_vec();
        if let (Some(&from), Some(&to)) = (parameters.get(write), parameters.get(read)) {
            rw.replace_all_uses_with(from, to);
        }
    }
    let value = ctx.string_attr(&name);
    let key = ctx.ident("sym_name");
    ctx.set_attribute(copy, key, value);
    copy
}

/// The `buffer.alloc` in `block` whose result `value` is.
fn fresh_allocation(ctx: &Context, roots: &BufferRoots, value: Value, block: Block) -> Option<Op> {
    let op = ctx.defining_op(value)?;
    let only_itself = matches!(roots.roots_ref(value), Roots::Known(set) if set.len() == 1 && set.contains(&value));
    (AllocOp::wrap(ctx, op).is_some() && ctx.parent_block(op) == Some(block) && only_itself).then_some(op)
}

/// The one root of `value`, when it has exactly one.
fn sole_root(roots: &BufferRoots, value: Value) -> Option<Value> {
    match roots.roots_ref(value) {
        Roots::Known(set) if set.len() == 1 => set.iter().next().copied(),
        _ => None,
    }
}

/// Whether the buffer `root` (made by a `buffer.alloc`) surely has the type and sizes of `dst`
/// (another's result): one type, and where a size is dynamic, the same size operands.
fn same_storage_shape(ctx: &Context, root: Value, dst: Value) -> bool {
    let Some(made) = ctx.defining_op(root).filter(|&op| AllocOp::wrap(ctx, op).is_some()) else { return false };
    let Some(other) = ctx.defining_op(dst) else { return false };
    ctx.value_type(root) == ctx.value_type(dst) && ctx.operands(made) == ctx.operands(other)
}
