//! Lowering one function body (a kernel's entry point or one instance of a helper) op by op.
//!
//! Each IR value becomes a [`Lowered`] value: a SPIR-V id for a scalar, or a [`BufferValue`]
//! for a memref. Ops are recognised through typed views, [`ScalarOp`] and [`WorkItemQuery`]
//! (which decode them once, in the dialect), and the call, loop and region-branch interfaces, so
//! a vendor's loop or conditional lowers like `scf`'s; an op none of these describe is a
//! diagnostic at the op, never a panic and never a guessed lowering.
//!
//! Invariant: `block` is the label of the SPIR-V block being filled; every emitting method
//! leaves it at the block where straight-line code continues.

use crate::emitter::Emitter;
use crate::kernel::KernelState;
use crate::memory::BufferValue;
use crate::options::{Feature, LoweringOptions};
use crate::Failed;
use hat_dialects::arith_views::{ConstantOp, SelectOp};
use hat_dialects::buffer::{DimOp, LoadOp, StoreOp};
use hat_dialects::kernel::{AtomicRmwOp, BarrierOp, LocalAllocOp, WorkItemQuery};
use hat_dialects::semantics::ScalarOp;
use hat_ir::interfaces::{CallOpInterface, LoopLikeOpInterface, RegionBranchOpInterface};
use hat_ir::types::FloatKind;
use hat_ir::{AttributeKind, Block, Context, Diagnostic, Op, OpTraits, Type, TypeKind, Value};
use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{self, BuiltIn, Word};
use rustc_hash::FxHashMap;

/// A lowered IR value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Lowered {
    /// A scalar: its id.
    Scalar(Word),
    /// A buffer.
    Buffer(BufferValue),
}

/// The shape of a scalar type on the device.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `i1`, lowered to SPIR-V's `bool`.
    Bool,
    /// An integer (or `index`) of this many bits.
    Int(u32),
    /// A float of this many bits.
    Float(u32),
}

/// The lowering of one function.
pub(crate) struct FunctionEmitter<'a> {
    pub ctx: &'a Context,
    pub e: &'a mut Emitter,
    pub k: &'a mut KernelState,
    pub options: &'a LoweringOptions,
    pub diagnostics: &'a mut Vec<Diagnostic>,
    pub values: FxHashMap<Value, Lowered>,
    /// The label of the block being filled.
    pub block: Word,
    /// Whether this work item is inside the grid, when the kernel has a barrier (its stores to
    /// buffers are then predicated on it).
    pub in_grid: Option<Word>,
    /// The constant value of the second operand of the scalar op being lowered, if known.
    pub constant_operand: Option<i64>,
}

impl<'a> FunctionEmitter<'a> {
    // ----- diagnostics ------------------------------------------------------------------------

    /// Reports an error at `op`.
    pub fn error(&mut self, op: Op, message: impl Into<String>) -> Failed {
        self.diagnostics.push(Diagnostic::error(self.ctx.location(op), message.into()));
        Failed::Reported
    }

    /// Checks that the device has `feature`, reporting at `op` what needs it otherwise.
    pub fn require(&mut self, op: Op, feature: Feature, what: &str) -> Result<(), Failed> {
        if self.options.features.has(feature) {
            return Ok(());
        }
        let message = format!("{what} needs {feature}, which the device does not have (kernel '@{}')", self.k.name);
        Err(self.error(op, message))
    }

    pub fn type_name(&self, ty: Type) -> String {
        hat_ir::printer::type_to_string(self.ctx, ty)
    }

    // ----- types ------------------------------------------------------------------------------

    /// The device shape of scalar type `ty`, checking the features it needs; `op` is where a
    /// missing feature or an unsupported type is reported.
    pub fn kind(&mut self, op: Op, ty: Type) -> Result<Kind, Failed> {
        let name = self.type_name(ty);
        let kind = match *self.ctx.type_kind(ty) {
            TypeKind::Integer { width: 1, .. } => Kind::Bool,
            TypeKind::Integer { width: width @ (8 | 16 | 32 | 64), .. } => Kind::Int(width),
            TypeKind::Index => Kind::Int(self.e.index_bits),
            TypeKind::Float(FloatKind::F16) => Kind::Float(16),
            TypeKind::Float(FloatKind::F32) => Kind::Float(32),
            TypeKind::Float(FloatKind::F64) => Kind::Float(64),
            _ => return Err(self.error(op, format!("values of type '{name}' have no SPIR-V lowering"))),
        };
        let what = format!("a value of type '{name}'");
        match kind {
            Kind::Int(8) => {
                self.require(op, Feature::Int8, &what)?;
                self.e.capability(spirv::Capability::Int8);
            }
            Kind::Int(16) => {
                self.require(op, Feature::Int16, &what)?;
                self.e.capability(spirv::Capability::Int16);
            }
            Kind::Int(64) => {
                self.require(op, Feature::Int64, &what)?;
                self.e.capability(spirv::Capability::Int64);
            }
            Kind::Float(16) => {
                self.require(op, Feature::Float16, &what)?;
                self.e.capability(spirv::Capability::Float16);
            }
            Kind::Float(64) => {
                self.require(op, Feature::Float64, &what)?;
                self.e.capability(spirv::Capability::Float64);
            }
            _ => {}
        }
        Ok(kind)
    }

    /// The SPIR-V type of a value of kind `kind`.
    pub fn kind_type(&mut self, kind: Kind) -> Word {
        match kind {
            Kind::Bool => self.e.bool(),
            Kind::Int(bits) => self.e.int(bits),
            Kind::Float(bits) => self.e.float(bits),
        }
    }

    /// The SPIR-V type of a value of IR type `ty`: a scalar's, or a buffer handle's (`u32`).
    pub fn value_type(&mut self, op: Op, ty: Type) -> Result<Word, Failed> {
        if self.ctx.type_kind(ty).is_memref() {
            return Ok(self.e.u32());
        }
        let kind = self.kind(op, ty)?;
        Ok(self.kind_type(kind))
    }

    /// The zero of a kind (`false` for `bool`).
    pub fn zero(&mut self, kind: Kind) -> Word {
        match kind {
            Kind::Bool => self.e.bool_constant(false),
            Kind::Int(bits) => self.e.int_constant(bits, 0),
            Kind::Float(bits) => self.e.float_constant(bits, 0.0),
        }
    }

    // ----- values -----------------------------------------------------------------------------

    pub fn lowered(&mut self, op: Op, value: Value) -> Result<Lowered, Failed> {
        match self.values.get(&value) {
            Some(lowered) => Ok(lowered.clone()),
            None => Err(self.error(op, "uses a value that the lowering has not seen defined")),
        }
    }

    pub fn scalar(&mut self, op: Op, value: Value) -> Result<Word, Failed> {
        match self.lowered(op, value)? {
            Lowered::Scalar(id) => Ok(id),
            Lowered::Buffer(_) => Err(self.error(op, "expected a scalar operand, got a buffer")),
        }
    }

    pub fn buffer(&mut self, op: Op, value: Value) -> Result<BufferValue, Failed> {
        match self.lowered(op, value)? {
            Lowered::Buffer(buffer) => Ok(buffer),
            Lowered::Scalar(_) => Err(self.error(op, "expected a buffer operand, got a scalar")),
        }
    }

    pub fn define(&mut self, value: Value, lowered: Lowered) {
        self.values.insert(value, lowered);
    }

    /// Defines `op`'s one result.
    pub fn define_result(&mut self, op: Op, lowered: Lowered) -> Result<(), Failed> {
        if self.ctx.result_count(op) != 1 {
            return Err(self.error(op, "expected one result"));
        }
        self.define(self.ctx.result(op, 0), lowered);
        Ok(())
    }

    // ----- blocks -----------------------------------------------------------------------------

    /// Starts filling the block `label`.
    pub fn start_block(&mut self, label: Word) -> Result<(), Failed> {
        self.e.b.begin_block(Some(label))?;
        self.block = label;
        Ok(())
    }

    /// Where the block being filled is, for inserting phis into it later.
    pub fn block_position(&self) -> (usize, usize) {
        (self.e.b.selected_function().unwrap_or(0), self.e.b.selected_block().unwrap_or(0))
    }

    /// Inserts a phi at the start of the block at `position` (filled earlier), after the phis
    /// already there.
    pub fn insert_phi(&mut self, position: (usize, usize), ty: Word, id: Word, incoming: &[(Word, Word)]) {
        let operands = incoming.iter().flat_map(|&(value, block)| [Operand::IdRef(value), Operand::IdRef(block)]);
        let phi = Instruction::new(spirv::Op::Phi, Some(ty), Some(id), operands.collect());
        let block = &mut self.e.b.module_mut().functions[position.0].blocks[position.1];
        let at = block.instructions.iter().take_while(|i| i.class.opcode == spirv::Op::Phi).count();
        block.instructions.insert(at, phi);
    }

    /// The terminator of `block`: its last op when that op is a terminator.
    pub fn terminator(&self, block: Block) -> Option<Op> {
        self.ctx.last_op(block).filter(|&op| self.ctx.has_traits(op, OpTraits::TERMINATOR))
    }

    /// Lowers every op of `block` but its terminator, which it returns.
    pub fn ops(&mut self, block: Block) -> Result<Option<Op>, Failed> {
        let terminator = self.terminator(block);
        for op in self.ctx.block_ops(block) {
            if Some(op) == terminator {
                break;
            }
            self.op(op)?;
        }
        if let Some(op) = terminator.filter(|&op| !self.ctx.successors(op).is_empty()) {
            return Err(self.error(op, "branches between blocks have no structured SPIR-V lowering"));
        }
        Ok(terminator)
    }

    /// The one block of a region.
    pub fn single_block(&mut self, op: Op, region: hat_ir::Region) -> Result<Block, Failed> {
        match *self.ctx.region_blocks(region) {
            [block] => Ok(block),
            [] => Err(self.error(op, "has an empty region")),
            _ => Err(self.error(op, "regions of more than one block have no structured SPIR-V lowering")),
        }
    }

    /// The operands of `op` (which may be a missing terminator: no operands) in `range`.
    pub fn operands_in(&mut self, op: Option<Op>, range: std::ops::Range<usize>) -> Result<Vec<Value>, Failed> {
        let Some(op) = op else {
            return Ok(Vec::new());
        };
        match self.ctx.operands(op).get(range) {
            Some(values) => Ok(values.to_vec()),
            None => Err(self.error(op, "an interface names operands that the op does not have")),
        }
    }

    // ----- ops --------------------------------------------------------------------------------

    /// Lowers one op that is not a block's terminator. Builder errors become a diagnostic at
    /// the op.
    pub fn op(&mut self, op: Op) -> Result<(), Failed> {
        // Regions nest as deep as the parser allows, each level a few frames of this
        // recursion: the stack grows as needed.
        match stacker::maybe_grow(128 * 1024, 4 * 1024 * 1024, || self.op_inner(op)) {
            Err(Failed::Builder(message)) => {
                Err(self.error(op, format!("internal error while building SPIR-V: {message}")))
            }
            other => other,
        }
    }

    fn op_inner(&mut self, op: Op) -> Result<(), Failed> {
        let ctx = self.ctx;
        if let Some(constant) = ConstantOp::wrap(ctx, op) {
            return self.constant(op, constant);
        }
        if let Some(select) = SelectOp::wrap(ctx, op) {
            return self.select(op, select);
        }
        if let Ok(scalar) = ScalarOp::decode(ctx, op) {
            return self.scalar_op(op, scalar);
        }
        if let Some((query, dimension)) = WorkItemQuery::decode(ctx, op) {
            let value = self.work_item(query, dimension)?;
            return self.define_result(op, Lowered::Scalar(value));
        }
        if let Some(load) = LoadOp::wrap(ctx, op) {
            return self.load(op, load);
        }
        if let Some(store) = StoreOp::wrap(ctx, op) {
            return self.store(op, store);
        }
        if let Some(dim) = DimOp::wrap(ctx, op) {
            return self.dim(op, dim);
        }
        if let Some(atomic) = AtomicRmwOp::wrap(ctx, op) {
            return self.atomic(op, atomic);
        }
        if LocalAllocOp::wrap(ctx, op).is_some() {
            return self.local_alloc(op);
        }
        if BarrierOp::wrap(ctx, op).is_some() {
            return self.barrier();
        }
        if let Some(call) = ctx.interface::<dyn CallOpInterface>(op) {
            return self.call(op, call);
        }
        if let Some(looping) = ctx.interface::<dyn LoopLikeOpInterface>(op) {
            return self.counted_loop(op, looping);
        }
        if let Some(branches) = ctx.interface::<dyn RegionBranchOpInterface>(op) {
            return self.region_branch(op, branches);
        }
        let name = ctx.name_str(op).to_string();
        Err(self.error(op, format!("'{name}' has no SPIR-V lowering")))
    }

    fn constant(&mut self, op: Op, constant: ConstantOp) -> Result<(), Failed> {
        let ctx = self.ctx;
        let ty = ctx.value_type(ctx.result(op, 0));
        let kind = self.kind(op, ty)?;
        let attribute = constant.value(ctx).map(|a| ctx.attribute_kind(a));
        let id = match (kind, attribute) {
            (Kind::Bool, Some(AttributeKind::Integer { value, .. })) => self.e.bool_constant(*value & 1 != 0),
            (Kind::Int(bits), Some(AttributeKind::Integer { value, .. })) => {
                let is_index = matches!(ctx.type_kind(ty), TypeKind::Index);
                if is_index && bits == 32 && i64::from(*value as i32) != *value {
                    let message = format!("the index constant {value} does not fit in the device's 32-bit 'index'");
                    return Err(self.error(op, message));
                }
                self.e.int_constant(bits, *value)
            }
            (Kind::Float(bits), Some(AttributeKind::Float { bits: pattern, .. })) => {
                self.e.float_constant(bits, f64::from_bits(*pattern))
            }
            _ => return Err(self.error(op, "the constant's value does not match its type")),
        };
        self.define_result(op, Lowered::Scalar(id))
    }

    fn select(&mut self, op: Op, select: SelectOp) -> Result<(), Failed> {
        let ctx = self.ctx;
        let condition = self.scalar(op, select.condition(ctx))?;
        let on_true = self.lowered(op, select.true_value(ctx))?;
        let on_false = self.lowered(op, select.false_value(ctx))?;
        let lowered = match (on_true, on_false) {
            (Lowered::Scalar(a), Lowered::Scalar(b)) => {
                let ty = self.value_type(op, ctx.value_type(ctx.result(op, 0)))?;
                Lowered::Scalar(self.e.b.select(ty, None, condition, a, b)?)
            }
            (Lowered::Buffer(a), Lowered::Buffer(b)) => Lowered::Buffer(self.select_buffers(condition, &a, &b)?),
            _ => return Err(self.error(op, "selects between a buffer and a scalar")),
        };
        self.define_result(op, lowered)
    }

    /// A work-item id or size, as a device `index`.
    fn work_item(&mut self, query: WorkItemQuery, dimension: u8) -> Result<Word, Failed> {
        if let (WorkItemQuery::GlobalId, 0, Some(id)) = (query, dimension, self.wide_global_id_x()) {
            return self.u32_to_index(id);
        }
        if let (WorkItemQuery::GlobalId, 1, Some(row)) = (query, dimension, self.coarse_row()) {
            return self.u32_to_index(row);
        }
        let builtin = match query {
            WorkItemQuery::GlobalId => BuiltIn::GlobalInvocationId,
            WorkItemQuery::LocalId => BuiltIn::LocalInvocationId,
            WorkItemQuery::GroupId => BuiltIn::WorkgroupId,
            WorkItemQuery::NumGroups => BuiltIn::NumWorkgroups,
            WorkItemQuery::LocalSize => {
                return Ok(self.e.index_constant(self.k.workgroup_size[dimension as usize] as i64))
            }
            WorkItemQuery::GlobalSize => {
                let size = self.k.grid_size(self.e, dimension)?;
                return self.u32_to_index(size);
            }
        };
        let value = self.builtin_component(builtin, dimension)?;
        self.u32_to_index(value)
    }

    /// Component `dimension` of a `uvec3` built-in.
    pub fn builtin_component(&mut self, builtin: BuiltIn, dimension: u8) -> Result<Word, Failed> {
        let variable = self.e.builtin(builtin);
        let uvec3 = self.e.uvec3();
        let u32 = self.e.u32();
        let vector = self.e.b.load(uvec3, None, variable, None, [])?;
        Ok(self.e.b.composite_extract(u32, None, vector, [dimension as u32])?)
    }

    /// A `u32` as a device `index` (zero-extended when `index` is 64 bits).
    pub fn u32_to_index(&mut self, value: Word) -> Result<Word, Failed> {
        if self.e.index_bits == 32 {
            return Ok(value);
        }
        let index = self.e.index();
        Ok(self.e.b.u_convert(index, None, value)?)
    }

    /// Whether this work item's global id is inside the grid in every dimension.
    pub fn compute_in_grid(&mut self) -> Result<Word, Failed> {
        let bool = self.e.bool();
        let mut inside = None;
        for dimension in 0..3 {
            let id = self.builtin_component(BuiltIn::GlobalInvocationId, dimension)?;
            let size = self.k.grid_size(self.e, dimension)?;
            let below = self.e.b.u_less_than(bool, None, id, size)?;
            inside = Some(match inside {
                None => below,
                Some(so_far) => self.e.b.logical_and(bool, None, so_far, below)?,
            });
        }
        let inside = inside.unwrap_or_else(|| self.e.bool_constant(true));
        self.or_whole_grid(inside)
    }

    /// `condition` or the grid is whole workgroups ([`crate::artifact::WHOLE_GRID_SPEC_ID`]):
    /// a check of the work item against the grid, which a pipeline specialised for a whole
    /// grid folds to `true`.
    pub fn or_whole_grid(&mut self, condition: Word) -> Result<Word, Failed> {
        let bool = self.e.bool();
        let whole = self.e.whole_grid_constant();
        self.k.checks_grid = true;
        Ok(self.e.b.logical_or(bool, None, whole, condition)?)
    }

    fn barrier(&mut self) -> Result<(), Failed> {
        // Workgroup execution and memory scope; acquire-release on workgroup memory and on
        // storage buffers ("uniform" memory), so that every write before the barrier is seen by
        // every work item of the workgroup after it.
        let workgroup = self.e.u32_constant(spirv::Scope::Workgroup as u32);
        let semantics = spirv::MemorySemantics::ACQUIRE_RELEASE
            | spirv::MemorySemantics::WORKGROUP_MEMORY
            | spirv::MemorySemantics::UNIFORM_MEMORY;
        let semantics = self.e.u32_constant(semantics.bits());
        self.e.b.control_barrier(workgroup, workgroup, semantics)?;
        Ok(())
    }
}
