//! Wide kernels: a kernel whose every buffer access is at its own global id in x runs four
//! work items per invocation, with one 16-byte access per buffer where a work item would make
//! a 4-byte one (`LoweringOptions::vectorize_accesses`).
//!
//! **Which kernels** ([`plan`]): no loop, no call, no atomic, nothing that observes the
//! workgroup (`Reach::observes_workgroup`), `index` of 32 bits; every `buffer.load` and
//! `buffer.store` names a buffer parameter directly (not a buffer chosen at run time), of one
//! dimension and 4-byte elements (`i32`, `f32`), at the index `kernel.global_id x` gives; no
//! other op takes a buffer but `buffer.dim`; and every load comes before every store in the
//! body's order. Then work item `i` touches element `i` of each buffer and nothing else, and its
//! loads see no store of its own: loading the four elements of four work items before any of
//! them stores gives each the value it would have loaded alone, whichever parameters alias.
//!
//! **The code.** Invocation `g` runs the work items `4g` to `4g + 3` (the runtime dispatches
//! `ceil(grid.x / 4)` in x: [`crate::EntryPoint::items_per_invocation`]). When all four are inside
//! the grid (and its y and z) and inside every buffer the kernel accesses, it loads one `vec4`
//! per buffer it reads (through a second variable of the buffer's binding, an array of `vec4`),
//! runs the body four times with the global id in x of each work item, a load giving its
//! component, a store kept in a function variable with a flag; then stores one `vec4` per buffer
//! it writes when the four work items stored, else each stored element alone. Otherwise (the
//! last invocation of a grid that is not a multiple of 4, or one past a buffer's end) it runs
//! the body as usual for each of the four work items inside the grid, one after another.
//! Each work item computes what it would alone: the same ops on the same values.

use crate::function::FunctionEmitter;
use crate::memory::parameter_leaf;
use crate::options::{IndexWidth, LoweringOptions};
use crate::reach::Reach;
use crate::Failed;
use hat_dialects::buffer::{DimOp, LoadOp, StoreOp};
use hat_dialects::kernel::{AtomicRmwOp, WorkItemQuery};
use hat_ir::interfaces::{CallOpInterface, LoopLikeOpInterface};
use hat_ir::{Context, Op, TypeKind, Value};
use rspirv::spirv::{self, BuiltIn, StorageClass, Word};

/// Work items per invocation of a wide kernel.
pub(crate) const LANES: u32 = 4;

/// The buffer parameters (leaves) a wide kernel loads and stores.
#[derive(Clone, Debug, Default)]
pub(crate) struct WidePlan {
    pub loaded: Vec<u32>,
    pub stored: Vec<u32>,
}

/// The lowering state of a wide kernel.
#[derive(Debug, Default)]
pub(crate) struct WideState {
    pub plan: WidePlan,
    /// Per leaf of the plan: its `vec4` variable.
    pub vectors: Vec<(u32, Word)>,
    /// Per stored leaf: per lane, its value variable and its flag variable.
    pub slots: Vec<(u32, [(Word, Word); LANES as usize])>,
    /// Per loaded leaf: the `vec4` loaded in the fast path.
    pub loaded: Vec<(u32, Word)>,
    /// The work item being lowered: its lane and its global id in x (a `u32`), and whether
    /// the fast path (vector accesses) is being lowered.
    pub lane: Option<(u32, Word, bool)>,
}

/// Whether `value` is the global id in x.
fn is_global_id_x(ctx: &Context, value: Value) -> bool {
    ctx.defining_op(value).and_then(|op| WorkItemQuery::decode(ctx, op)) == Some((WorkItemQuery::GlobalId, 0))
}

/// The wide plan of `kernel` (entry block `block`), if it is one (see the module documentation).
pub(crate) fn plan(
    ctx: &Context,
    kernel: Op,
    block: hat_ir::Block,
    reached: &Reach,
    options: &LoweringOptions,
) -> Option<WidePlan> {
    if !options.vectorize_accesses
        || options.index_width != IndexWidth::Bits32
        || reached.observes_workgroup
        || !reached.callees.is_empty()
    {
        return None;
    }
    let arguments = ctx.block_arguments(block);
    let leaf_of = |value: Value| parameter_leaf(ctx, arguments, value);
    let accessible = |buffer: Value, indices: &[Value]| -> Option<u32> {
        let TypeKind::MemRef { shape, element } = ctx.type_kind(ctx.value_type(buffer)) else { return None };
        let four_bytes = match ctx.type_kind(*element) {
            TypeKind::Integer { width, .. } => *width == 32,
            TypeKind::Float(kind) => kind.width() == 32,
            _ => false,
        };
        let at_id = matches!(indices, [index] if is_global_id_x(ctx, *index));
        (shape.len() == 1 && four_bytes && at_id).then_some(())?;
        leaf_of(buffer)
    };
    let mut plan = WidePlan::default();
    for op in ctx.walk(kernel).into_iter().skip(1) {
        if ctx.interface::<dyn LoopLikeOpInterface>(op).is_some()
            || ctx.interface::<dyn CallOpInterface>(op).is_some()
            || AtomicRmwOp::wrap(ctx, op).is_some()
        {
            return None;
        }
        if let Some(load) = LoadOp::wrap(ctx, op) {
            let leaf = accessible(load.buffer(ctx), load.indices(ctx))?;
            if !plan.stored.is_empty() {
                return None;
            }
            if !plan.loaded.contains(&leaf) {
                plan.loaded.push(leaf);
            }
        } else if let Some(store) = StoreOp::wrap(ctx, op) {
            let leaf = accessible(store.buffer(ctx), store.indices(ctx))?;
            if !plan.stored.contains(&leaf) {
                plan.stored.push(leaf);
            }
        } else if DimOp::wrap(ctx, op).is_none() {
            let memref = |v: Value| ctx.type_kind(ctx.value_type(v)).is_memref();
            if ctx.operands(op).iter().copied().any(memref) || ctx.results(op).any(memref) {
                return None;
            }
        }
    }
    (!plan.loaded.is_empty() || !plan.stored.is_empty()).then_some(plan)
}

impl FunctionEmitter<'_> {
    /// Declares the `vec4` variables of the plan's buffers (before the entry function).
    pub(crate) fn declare_wide(&mut self, plan: WidePlan) {
        let mut leaves = plan.loaded.clone();
        leaves.extend(plan.stored.iter().filter(|l| !plan.loaded.contains(l)));
        let mut vectors = Vec::new();
        for &leaf in &leaves {
            let stored = self.k.leaves[leaf as usize].stored;
            let vec4 = self.e.b.type_vector(stored, LANES);
            let array = self.e.runtime_array(vec4, 16);
            let block = self.e.block_struct(array);
            let pointer = self.e.pointer(StorageClass::StorageBuffer, block);
            // No function is being built yet: a module-level variable.
            let variable = self.e.b.variable(pointer, None, StorageClass::StorageBuffer, None);
            let binding = leaf;
            self.e.b.decorate(variable, spirv::Decoration::DescriptorSet, [rspirv::dr::Operand::LiteralBit32(0)]);
            self.e.b.decorate(variable, spirv::Decoration::Binding, [rspirv::dr::Operand::LiteralBit32(binding)]);
            vectors.push((leaf, variable));
        }
        self.k.wide = Some(WideState { plan, vectors, slots: Vec::new(), loaded: Vec::new(), lane: None });
    }

    /// Declares the function variables of the stores: first in the entry block.
    pub(crate) fn declare_wide_slots(&mut self) {
        let plan = self.k.wide.as_ref().expect("a wide kernel").plan.clone();
        let mut slots = Vec::new();
        let bool = self.e.bool();
        let no = self.e.bool_constant(false);
        for &leaf in &plan.stored {
            let stored = self.k.leaves[leaf as usize].stored;
            let value_pointer = self.e.pointer(StorageClass::Function, stored);
            let flag_pointer = self.e.pointer(StorageClass::Function, bool);
            let lanes = [0; LANES as usize].map(|_| {
                let value = self.e.b.variable(value_pointer, None, StorageClass::Function, None);
                let flag = self.e.b.variable(flag_pointer, None, StorageClass::Function, Some(no));
                (value, flag)
            });
            slots.push((leaf, lanes));
        }
        self.k.wide.as_mut().expect("a wide kernel").slots = slots;
    }

    /// The `vec4` variable of `leaf`.
    fn vector_variable(&self, leaf: u32) -> Word {
        let wide = self.k.wide.as_ref().expect("a wide kernel");
        wide.vectors.iter().find(|&&(l, _)| l == leaf).expect("a leaf of the plan").1
    }

    /// A pointer to `vec4` number `at` of `leaf`.
    fn vector_pointer(&mut self, leaf: u32, at: Word) -> Result<Word, Failed> {
        let variable = self.vector_variable(leaf);
        let stored = self.k.leaves[leaf as usize].stored;
        let vec4 = self.e.b.type_vector(stored, LANES);
        let pointer = self.e.pointer(StorageClass::StorageBuffer, vec4);
        let member = self.e.u32_constant(0);
        Ok(self.e.b.access_chain(pointer, None, variable, [member, at])?)
    }

    /// In the fast path of a wide kernel, the value a load of `leaf` gives the work item being
    /// lowered: its component of the `vec4`. `None` elsewhere.
    pub(crate) fn wide_load(&mut self, leaf: u32) -> Result<Option<Word>, Failed> {
        let Some(wide) = &self.k.wide else { return Ok(None) };
        let Some((lane, _, true)) = wide.lane else { return Ok(None) };
        let Some(&(_, vector)) = wide.loaded.iter().find(|&&(l, _)| l == leaf) else { return Ok(None) };
        let stored = self.k.leaves[leaf as usize].stored;
        Ok(Some(self.e.b.composite_extract(stored, None, vector, [lane])?))
    }

    /// In the fast path of a wide kernel, keeps a store of `value` to `leaf` by the work item
    /// being lowered (stored after the four work items); `false` elsewhere.
    pub(crate) fn wide_store(&mut self, leaf: u32, value: Word) -> Result<bool, Failed> {
        let Some(wide) = &self.k.wide else { return Ok(false) };
        let Some((lane, _, true)) = wide.lane else { return Ok(false) };
        let Some(&(_, slots)) = wide.slots.iter().find(|&&(l, _)| l == leaf) else { return Ok(false) };
        let (value_variable, flag) = slots[lane as usize];
        let yes = self.e.bool_constant(true);
        self.e.b.store(value_variable, value, None, [])?;
        self.e.b.store(flag, yes, None, [])?;
        Ok(true)
    }

    /// The global id in x of the work item being lowered, in a wide kernel.
    pub(crate) fn wide_global_id_x(&self) -> Option<Word> {
        self.k.wide.as_ref().and_then(|w| w.lane).map(|(_, id, _)| id)
    }

    /// The body of a wide kernel's entry point (see the module documentation); the block that
    /// follows is selected when it returns.
    pub(crate) fn wide_body(&mut self, block: hat_ir::Block) -> Result<(), Failed> {
        let bool = self.e.bool();
        let u32 = self.e.u32();
        let arguments = self.values.clone();
        let invocation = self.builtin_component(BuiltIn::GlobalInvocationId, 0)?;
        let lanes = self.e.u32_constant(LANES);
        let first = self.e.b.i_mul(u32, None, invocation, lanes)?;
        let mut ids = vec![first];
        for lane in 1..LANES {
            let offset = self.e.u32_constant(lane);
            ids.push(self.e.b.i_add(u32, None, first, offset)?);
        }
        let last = ids[LANES as usize - 1];
        let mut in_yz = self.e.bool_constant(true);
        for dimension in 1..3 {
            let id = self.builtin_component(BuiltIn::GlobalInvocationId, dimension)?;
            let size = self.k.grid_size(self.e, dimension)?;
            let below = self.e.b.u_less_than(bool, None, id, size)?;
            in_yz = self.e.b.logical_and(bool, None, in_yz, below)?;
        }
        let grid_x = self.k.grid_size(self.e, 0)?;
        let below = self.e.b.u_less_than(bool, None, last, grid_x)?;
        let mut fast = self.e.b.logical_and(bool, None, in_yz, below)?;
        let plan = self.k.wide.as_ref().expect("a wide kernel").plan.clone();
        let mut leaves = plan.loaded.clone();
        leaves.extend(plan.stored.iter().filter(|l| !plan.loaded.contains(l)));
        for &leaf in &leaves {
            let size = self.leaf_size(leaf, 0)?;
            let inside = self.e.b.u_less_than(bool, None, last, size)?;
            fast = self.e.b.logical_and(bool, None, fast, inside)?;
        }
        let (fast_label, slow_label, exit) = (self.e.b.id(), self.e.b.id(), self.e.b.id());
        self.e.b.selection_merge(exit, spirv::SelectionControl::NONE)?;
        self.e.b.branch_conditional(fast, fast_label, slow_label, [])?;

        // The fast path: a vec4 per buffer.
        self.start_block(fast_label)?;
        let mut loaded = Vec::new();
        for &leaf in &plan.loaded {
            self.k.leaves[leaf as usize].access.read = true;
            let stored = self.k.leaves[leaf as usize].stored;
            let vec4 = self.e.b.type_vector(stored, LANES);
            let pointer = self.vector_pointer(leaf, invocation)?;
            loaded.push((leaf, self.e.b.load(vec4, None, pointer, None, [])?));
        }
        self.k.wide.as_mut().expect("a wide kernel").loaded = loaded;
        for (lane, &id) in ids.iter().enumerate() {
            self.values = arguments.clone();
            self.k.wide.as_mut().expect("a wide kernel").lane = Some((lane as u32, id, true));
            let terminator = self.ops(block)?;
            self.check_return(terminator)?;
        }
        self.k.wide.as_mut().expect("a wide kernel").lane = None;
        let slots = self.k.wide.as_ref().expect("a wide kernel").slots.clone();
        for (leaf, lanes) in slots {
            self.k.leaves[leaf as usize].access.write = true;
            let stored = self.k.leaves[leaf as usize].stored;
            let mut all = self.e.bool_constant(true);
            let (mut values, mut flags) = (Vec::new(), Vec::new());
            for &(value, flag) in &lanes {
                values.push(self.e.b.load(stored, None, value, None, [])?);
                let flag = self.e.b.load(bool, None, flag, None, [])?;
                all = self.e.b.logical_and(bool, None, all, flag)?;
                flags.push(flag);
            }
            let (whole, parts, merge) = (self.e.b.id(), self.e.b.id(), self.e.b.id());
            self.e.b.selection_merge(merge, spirv::SelectionControl::NONE)?;
            self.e.b.branch_conditional(all, whole, parts, [])?;
            self.start_block(whole)?;
            let vec4 = self.e.b.type_vector(stored, LANES);
            let vector = self.e.b.composite_construct(vec4, None, values.iter().copied())?;
            let pointer = self.vector_pointer(leaf, invocation)?;
            self.e.b.store(pointer, vector, None, [])?;
            self.e.b.branch(merge)?;
            self.start_block(parts)?;
            for ((&value, &flag), &id) in values.iter().zip(&flags).zip(&ids) {
                let (store, next) = (self.e.b.id(), self.e.b.id());
                self.e.b.selection_merge(next, spirv::SelectionControl::NONE)?;
                self.e.b.branch_conditional(flag, store, next, [])?;
                self.start_block(store)?;
                let index = self.u32_to_index(id)?;
                self.store_leaf(leaf, &[index], value)?;
                self.e.b.branch(next)?;
                self.start_block(next)?;
            }
            self.e.b.branch(merge)?;
            self.start_block(merge)?;
        }
        self.e.b.branch(exit)?;

        // The slow path: each work item inside the grid alone.
        self.start_block(slow_label)?;
        for (lane, &id) in ids.iter().enumerate() {
            let below = self.e.b.u_less_than(bool, None, id, grid_x)?;
            let inside = self.e.b.logical_and(bool, None, in_yz, below)?;
            let (body, next) = (self.e.b.id(), self.e.b.id());
            self.e.b.selection_merge(next, spirv::SelectionControl::NONE)?;
            self.e.b.branch_conditional(inside, body, next, [])?;
            self.start_block(body)?;
            self.values = arguments.clone();
            self.k.wide.as_mut().expect("a wide kernel").lane = Some((lane as u32, id, false));
            let terminator = self.ops(block)?;
            self.check_return(terminator)?;
            self.e.b.branch(next)?;
            self.start_block(next)?;
        }
        self.k.wide.as_mut().expect("a wide kernel").lane = None;
        self.e.b.branch(exit)?;
        self.start_block(exit)?;
        Ok(())
    }
}
