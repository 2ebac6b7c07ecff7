//! Coarsened kernels: a kernel that reads a buffer at several positions per work item (a
//! stencil) runs several consecutive rows of work items per invocation, and each element of a
//! buffer it never writes is loaded once per invocation however many of those work items read
//! it (`LoweringOptions::coarsen_rows`).
//!
//! **Which kernels** ([`plan`]): `index` of 32 bits; nothing that observes the workgroup
//! (`Reach::observes_workgroup`: no barrier, no workgroup memory, no local or group id), no
//! call, no atomic; the kernel asks for its global id in y; every `buffer.store` names a
//! buffer parameter directly. A load is *shared* when it names directly a buffer parameter that
//! no store names, of a static shape with no zero dimension, and no store comes before it in
//! the body's order nor in a loop around it. A kernel is coarsened when, counting each
//! iteration of the loops unrolled (below), it makes two shared loads or more of one buffer:
//! only then can its work items share loads. The factor is `coarsen_rows` (the runtime
//! dispatches `ceil(grid.y / rows)` invocations in y: [`crate::EntryPoint::rows_per_invocation`]).
//!
//! **The code** (`coarse_body`). Invocation `(x, g, z)` runs the work items `(x, rows·g + k,
//! z)` for `k = 0 .. rows`, one after another, each only when it is inside the grid (the
//! padding items of a partial grid do nothing, as docs/lowering.md says); a work item's global
//! id in y is its own. Loops with constant bounds of at most [`MAX_TRIPS`] iterations (and
//! [`MAX_UNROLLED`] in a nest) are unrolled, their induction variable a constant in each copy.
//! A shared load whose indices are affine in the global ids ([`Affine`]: constants, ids,
//! induction variables of unrolled loops, `addi`, `subi`, `muli` by a constant, of `index`) is
//! keyed by its buffer and the affine form of its indices, in the invocation's ids: the first
//! work item to need a key loads it in the entry block (the instructions move there), each at
//! its index clamped into the buffer (`min(i, size - 1)`, unsigned), and every later load with
//! that key takes that value. Other loads and all stores stay where they are.
//!
//! **Why each work item computes what it would alone.** A key's value is the element the load
//! would read: equal affine forms give equal indices (the device computes `index` modulo 2^32,
//! and so does the form), and where the work item loads at all the index is inside the buffer,
//! so clamping changes nothing; where it does not load (a guard, a padding item), the value is
//! unused and the clamped load stays inside the buffer. The value is read before any store of
//! the invocation. No store names the buffer, and a shared load comes before every store of its
//! work item, so the only stores it could miss are other work items' through another parameter
//! naming the same buffer: a race between work items, whose result no order defines (the GPU
//! runs work items in any order). Loads of buffers the kernel writes stay in place, in each
//! work item's order.

use crate::function::FunctionEmitter;
use crate::memory::parameter_leaf;
use crate::options::{IndexWidth, LoweringOptions};
use crate::reach::Reach;
use crate::Failed;
use hat_dialects::buffer::{LoadOp, StoreOp};
use hat_dialects::kernel::{AtomicRmwOp, WorkItemQuery};
use hat_dialects::semantics::ScalarOp;
use hat_ir::interfaces::{constant_integer, CallOpInterface, LoopLikeOpInterface};
use hat_ir::types::DYNAMIC;
use hat_ir::{Context, Op, TypeKind, Value};
use rspirv::spirv::{self, BuiltIn, Word};
use rustc_hash::{FxHashMap, FxHashSet};

/// The most iterations of a loop that is unrolled.
pub(crate) const MAX_TRIPS: i64 = 16;
/// The most copies of an innermost body that unrolling a nest of loops may make.
pub(crate) const MAX_UNROLLED: i64 = 64;
/// The most distinct shared loads of an invocation (registers are finite); past it, loads stay
/// in place.
const MAX_SLOTS: usize = 64;

/// An `index` affine in the invocation's global ids: `ids · (x, rows·g, z) + offset`, modulo
/// 2^32 (coefficients and offset are kept wrapped to 32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Affine {
    ids: [i32; 3],
    offset: i32,
}

impl Affine {
    fn constant(value: i64) -> Affine {
        Affine { ids: [0; 3], offset: value as i32 }
    }

    fn add(self, other: Affine, sign: i32) -> Affine {
        let mut ids = self.ids;
        for (id, o) in ids.iter_mut().zip(other.ids) {
            *id = id.wrapping_add(o.wrapping_mul(sign));
        }
        Affine { ids, offset: self.offset.wrapping_add(other.offset.wrapping_mul(sign)) }
    }

    fn scale(self, by: i32) -> Affine {
        Affine { ids: self.ids.map(|id| id.wrapping_mul(by)), offset: self.offset.wrapping_mul(by) }
    }

    fn as_constant(self) -> Option<i32> {
        (self.ids == [0; 3]).then_some(self.offset)
    }
}

/// What the planning found.
#[derive(Clone, Debug, Default)]
pub(crate) struct CoarsePlan {
    /// Work items (rows) per invocation.
    pub rows: u32,
    /// The shared loads.
    pub shared: FxHashSet<Op>,
    /// The loops to unroll: their iteration count, first value and step.
    pub unrolled: FxHashMap<Op, (i64, i64, i64)>,
}

/// The lowering state of a coarsened kernel.
#[derive(Debug, Default)]
pub(crate) struct CoarseState {
    pub plan: CoarsePlan,
    /// The invocation's ids: x, its first row, z (`u32`s of the entry block).
    base: [Word; 3],
    /// Where the entry block is, and so where shared loads go.
    entry: (usize, usize),
    /// The work item being lowered: its row in the invocation and its global id in y.
    pub copy: Option<(u32, Word)>,
    /// The value of each induction variable of an unrolled loop being lowered.
    ivs: FxHashMap<Value, i64>,
    /// The value of each shared load by (buffer leaf, affine indices).
    slots: FxHashMap<(u32, Vec<Affine>), Word>,
}

/// The iteration count, first value and step of `op` when it is a counted loop with constant
/// bounds and a positive step, of at most [`MAX_TRIPS`] iterations.
fn constant_trips(ctx: &Context, op: Op) -> Option<(i64, i64, i64)> {
    let looping = ctx.interface::<dyn LoopLikeOpInterface>(op)?;
    looping.induction_variable(ctx, op)?;
    let lower = constant_integer(ctx, looping.lower_bound(ctx, op)?)?;
    let upper = constant_integer(ctx, looping.upper_bound(ctx, op)?)?;
    let step = constant_integer(ctx, looping.step(ctx, op)?)?;
    if step <= 0 || i32::try_from(lower).is_err() || i32::try_from(upper).is_err() {
        return None;
    }
    let trips = if upper > lower { (upper - lower + step - 1) / step } else { 0 };
    (trips <= MAX_TRIPS).then_some((trips, lower, step))
}

/// The coarsening plan of `kernel` (entry block `block`), if it is one (see the module
/// documentation).
pub(crate) fn plan(
    ctx: &Context,
    kernel: Op,
    block: hat_ir::Block,
    reached: &Reach,
    options: &LoweringOptions,
) -> Option<CoarsePlan> {
    if options.coarsen_rows < 2
        || options.index_width != IndexWidth::Bits32
        || reached.observes_workgroup
        || reached.has_barrier
        || !reached.callees.is_empty()
    {
        return None;
    }
    let arguments = ctx.block_arguments(block);
    let leaf_of = |value: Value| parameter_leaf(ctx, arguments, value);
    let ops = ctx.walk(kernel);
    let mut stored = FxHashSet::default();
    let mut uses_row = false;
    for &op in &ops[1..] {
        if AtomicRmwOp::wrap(ctx, op).is_some() || ctx.interface::<dyn CallOpInterface>(op).is_some() {
            return None;
        }
        if let Some(store) = StoreOp::wrap(ctx, op) {
            stored.insert(leaf_of(store.buffer(ctx))?);
        }
        uses_row |= WorkItemQuery::decode(ctx, op) == Some((WorkItemQuery::GlobalId, 1));
    }
    if !uses_row {
        return None;
    }
    // The loops to unroll: constant bounds, and few copies in the whole nest.
    let mut unrolled = FxHashMap::default();
    let copies = |op: Op, unrolled: &FxHashMap<Op, (i64, i64, i64)>| -> i64 {
        let mut product = 1;
        let mut at = ctx.parent_op(op);
        while let Some(parent) = at.filter(|&p| p != kernel) {
            product *= unrolled.get(&parent).map_or(1, |&(trips, _, _)| trips.max(1));
            at = ctx.parent_op(parent);
        }
        product
    };
    for &op in &ops[1..] {
        if let Some(loop_plan) = constant_trips(ctx, op) {
            if copies(op, &unrolled) * loop_plan.0.max(1) <= MAX_UNROLLED {
                unrolled.insert(op, loop_plan);
            }
        }
    }
    let stores: Vec<Op> = ops.iter().copied().filter(|&op| StoreOp::wrap(ctx, op).is_some()).collect();
    let mut shared = FxHashSet::default();
    let mut sites: FxHashMap<u32, i64> = FxHashMap::default();
    let mut store_seen = false;
    for &op in &ops[1..] {
        store_seen |= StoreOp::wrap(ctx, op).is_some();
        let Some(load) = LoadOp::wrap(ctx, op) else { continue };
        let Some(leaf) = leaf_of(load.buffer(ctx)) else { continue };
        let TypeKind::MemRef { shape, .. } = ctx.type_kind(ctx.value_type(load.buffer(ctx))) else { continue };
        let static_shape = shape.iter().all(|&d| d != DYNAMIC && d > 0 && d <= i32::MAX as i64);
        let in_storing_loop = {
            let mut at = ctx.parent_op(op);
            let mut found = false;
            while let Some(parent) = at.filter(|&p| p != kernel) {
                found |= ctx.interface::<dyn LoopLikeOpInterface>(parent).is_some()
                    && stores.iter().any(|&s| ctx.is_ancestor(parent, s));
                at = ctx.parent_op(parent);
            }
            found
        };
        if stored.contains(&leaf) || !static_shape || store_seen || in_storing_loop {
            continue;
        }
        shared.insert(op);
        *sites.entry(leaf).or_default() += copies(op, &unrolled);
    }
    if !sites.values().any(|&n| n >= 2) {
        return None;
    }
    Some(CoarsePlan { rows: options.coarsen_rows, shared, unrolled })
}

impl CoarseState {
    /// The state of a kernel about to be lowered by `plan`.
    pub(crate) fn new(plan: CoarsePlan) -> CoarseState {
        CoarseState { plan, ..Default::default() }
    }
}

impl FunctionEmitter<'_> {
    /// Whether a coarsened kernel's work item is being lowered.
    fn coarse_copy(&self) -> Option<(u32, Word)> {
        self.k.coarse.as_ref().and_then(|c| c.copy)
    }

    /// The global id in y of the work item being lowered, in a coarsened kernel.
    pub(crate) fn coarse_row(&self) -> Option<Word> {
        self.coarse_copy().map(|(_, row)| row)
    }

    /// The affine form of `value` in the invocation's ids, for the work item being lowered.
    fn affine(&self, value: Value, depth: u32) -> Option<Affine> {
        let ctx = self.ctx;
        let coarse = self.k.coarse.as_ref()?;
        let (row, _) = coarse.copy?;
        if let Some(&iv) = coarse.ivs.get(&value) {
            return Some(Affine::constant(iv));
        }
        if depth > 32 || !matches!(ctx.type_kind(ctx.value_type(value)), TypeKind::Index) {
            return None;
        }
        if let Some(constant) = constant_integer(ctx, value) {
            return Some(Affine::constant(constant));
        }
        let op = ctx.defining_op(value)?;
        if let Some((WorkItemQuery::GlobalId, dimension)) = WorkItemQuery::decode(ctx, op) {
            let mut ids = [0; 3];
            ids[dimension as usize] = 1;
            return Some(Affine { ids, offset: if dimension == 1 { row as i32 } else { 0 } });
        }
        let scalar = ScalarOp::decode(ctx, op).ok()?;
        let operands = ctx.operands(op);
        let (a, b) = match operands {
            [a, b] => (self.affine(*a, depth + 1)?, self.affine(*b, depth + 1)?),
            _ => return None,
        };
        match scalar {
            ScalarOp::AddI => Some(a.add(b, 1)),
            ScalarOp::SubI => Some(a.add(b, -1)),
            ScalarOp::MulI => match (a.as_constant(), b.as_constant()) {
                (_, Some(by)) => Some(a.scale(by)),
                (Some(by), _) => Some(b.scale(by)),
                _ => None,
            },
            _ => None,
        }
    }

    /// In a coarsened kernel, the value of the shared load `op` of `leaf` at `indices` (of
    /// kind `kind`): loaded in the entry block by the first work item that needs it. `None`
    /// where the load is not shared or its indices are not affine.
    pub(crate) fn coarse_load(
        &mut self,
        op: Op,
        leaf: u32,
        indices: &[Value],
        kind: crate::function::Kind,
    ) -> Result<Option<Word>, Failed> {
        let Some(coarse) = self.k.coarse.as_ref() else { return Ok(None) };
        if coarse.copy.is_none() || !coarse.plan.shared.contains(&op) {
            return Ok(None);
        }
        let Some(forms) = indices.iter().map(|&i| self.affine(i, 0)).collect::<Option<Vec<_>>>() else {
            return Ok(None);
        };
        let coarse = self.k.coarse.as_ref().expect("a coarsened kernel");
        let key = (leaf, forms);
        if let Some(&value) = coarse.slots.get(&key) {
            return Ok(Some(value));
        }
        if coarse.slots.len() >= MAX_SLOTS {
            return Ok(None);
        }
        let (base, entry) = (coarse.base, coarse.entry);
        let (function, block) = self.block_position();
        let start = self.e.b.module_ref().functions[function].blocks[block].instructions.len();
        let bool = self.e.bool();
        let u32 = self.e.u32();
        let mut clamped = Vec::new();
        for (dimension, form) in key.1.iter().enumerate() {
            let mut index = self.e.u32_constant(form.offset as u32);
            for (&id, &coefficient) in base.iter().zip(&form.ids) {
                if coefficient != 0 {
                    let by = self.e.u32_constant(coefficient as u32);
                    let term = if coefficient == 1 { id } else { self.e.b.i_mul(u32, None, id, by)? };
                    index = self.e.b.i_add(u32, None, index, term)?;
                }
            }
            let size = self.k.leaves[leaf as usize].shape[dimension];
            let size = self.e.u32_constant(size as u32);
            let last = self.e.u32_constant(self.k.leaves[leaf as usize].shape[dimension] as u32 - 1);
            let inside = self.e.b.u_less_than(bool, None, index, size)?;
            clamped.push(self.e.b.select(u32, None, inside, index, last)?);
        }
        let value = self.load_leaf(leaf, &clamped, kind)?;
        // Move what was just emitted into the entry block, before its branch.
        let blocks = &mut self.e.b.module_mut().functions[function].blocks;
        let moved: Vec<_> = blocks[block].instructions.drain(start..).collect();
        let target = &mut blocks[entry.1].instructions;
        let at = target.len() - 1;
        target.splice(at..at, moved);
        self.k.coarse.as_mut().expect("a coarsened kernel").slots.insert(key, value);
        Ok(Some(value))
    }

    /// In a coarsened kernel, the iteration count of `op` when it is a loop to unroll.
    pub(crate) fn coarse_unrolled(&self, op: Op) -> Option<(i64, i64, i64)> {
        let coarse = self.k.coarse.as_ref()?;
        coarse.copy?;
        coarse.plan.unrolled.get(&op).copied()
    }

    /// Binds the induction variable `iv` of an unrolled loop to `value` (for affine forms).
    pub(crate) fn coarse_bind_iv(&mut self, iv: Value, value: i64) {
        if let Some(coarse) = self.k.coarse.as_mut() {
            coarse.ivs.insert(iv, value);
        }
    }

    /// The body of a coarsened kernel's entry point (see the module documentation); the block
    /// that follows is selected when it returns.
    pub(crate) fn coarse_body(&mut self, block: hat_ir::Block) -> Result<(), Failed> {
        let bool = self.e.bool();
        let u32 = self.e.u32();
        let rows = self.k.coarse.as_ref().expect("a coarsened kernel").plan.rows;
        let x = self.builtin_component(BuiltIn::GlobalInvocationId, 0)?;
        let group = self.builtin_component(BuiltIn::GlobalInvocationId, 1)?;
        let z = self.builtin_component(BuiltIn::GlobalInvocationId, 2)?;
        let factor = self.e.u32_constant(rows);
        let first = self.e.b.i_mul(u32, None, group, factor)?;
        let grid = [self.k.grid_size(self.e, 0)?, self.k.grid_size(self.e, 1)?, self.k.grid_size(self.e, 2)?];
        let x_in = self.e.b.u_less_than(bool, None, x, grid[0])?;
        let z_in = self.e.b.u_less_than(bool, None, z, grid[2])?;
        let xz_in = self.e.b.logical_and(bool, None, x_in, z_in)?;
        let entry = self.block_position();
        {
            let coarse = self.k.coarse.as_mut().expect("a coarsened kernel");
            coarse.base = [x, first, z];
            coarse.entry = entry;
        }
        let arguments = self.values.clone();
        let start = self.e.b.id();
        self.e.b.branch(start)?;
        self.start_block(start)?;
        for k in 0..rows {
            let offset = self.e.u32_constant(k);
            let row = if k == 0 { first } else { self.e.b.i_add(u32, None, first, offset)? };
            let below = self.e.b.u_less_than(bool, None, row, grid[1])?;
            let inside = self.e.b.logical_and(bool, None, xz_in, below)?;
            let inside = self.or_whole_grid(inside)?;
            let (body, next) = (self.e.b.id(), self.e.b.id());
            self.e.b.selection_merge(next, spirv::SelectionControl::NONE)?;
            self.e.b.branch_conditional(inside, body, next, [])?;
            self.start_block(body)?;
            self.values = arguments.clone();
            let coarse = self.k.coarse.as_mut().expect("a coarsened kernel");
            coarse.copy = Some((k, row));
            coarse.ivs.clear();
            let terminator = self.ops(block)?;
            self.check_return(terminator)?;
            self.e.b.branch(next)?;
            self.start_block(next)?;
        }
        self.k.coarse.as_mut().expect("a coarsened kernel").copy = None;
        Ok(())
    }
}
