//! One kernel: its interface (bindings, push constants, workgroup size), its entry point, and
//! the helper instances it calls.
//!
//! The entry point computes whether its work item is inside the grid (every global id below
//! the grid size in the push constants). A kernel without a barrier returns at once when it is
//! not; a kernel that reaches a barrier cannot (every work item of a workgroup must reach each
//! barrier), so its work items past the grid run the kernel with every load, store and atomic on
//! a storage buffer skipped (a skipped load or atomic gives zero). Either way, exactly the work items inside the grid have effects on
//! buffers, as the kernel analyses assume.

use crate::artifact::{BufferBinding, DimSlot, EntryPoint, PushConstantLayout, ScalarEncoding, ScalarSlot};
use crate::calls::{Instance, InstanceKey};
use crate::emitter::Emitter;
use crate::function::{FunctionEmitter, Kind, Lowered};
use crate::memory::Leaf;
use crate::options::LoweringOptions;
use crate::reach::{reach, symbol};
use crate::Failed;
use hat_ir::interfaces::CallableOpInterface;
use hat_ir::types::DYNAMIC;
use hat_ir::{Context, Diagnostic, Op, OpTraits, Type, TypeKind};
use rspirv::spirv::{self, Decoration, StorageClass, Word};
use rustc_hash::FxHashMap;

/// The workgroup size of a kernel without `workgroup_size`, as on the CPU backend.
pub const DEFAULT_WORKGROUP_SIZE: [u32; 3] = [64, 1, 1];

/// What the lowering of one kernel shares between its functions.
pub(crate) struct KernelState {
    /// The kernel's symbol.
    pub name: String,
    pub workgroup_size: [u32; 3],
    /// Buffer parameters first (leaf = position among them), then workgroup allocations.
    pub leaves: Vec<Leaf>,
    pub local_leaves: FxHashMap<Op, u32>,
    /// The push-constant variable and the type of each member (the grid is members 0 to 2).
    push_variable: Word,
    push_members: Vec<Word>,
    /// The push-constant member of each scalar parameter, and how it is encoded.
    scalar_members: FxHashMap<usize, (u32, ScalarEncoding)>,
    /// The push-constant member of each dynamic size (parameter, dimension).
    dim_members: FxHashMap<(usize, usize), u32>,
    pub has_barrier: bool,
    /// The helper each call reaches.
    pub callees: FxHashMap<Op, Op>,
    pub instances: FxHashMap<InstanceKey, Word>,
    pub queue: Vec<Instance>,
    /// The state of a wide kernel (`wide.rs`).
    pub wide: Option<crate::wide::WideState>,
    /// The state of a coarsened kernel (`coarsen.rs`).
    pub coarse: Option<crate::coarsen::CoarseState>,
    /// Whether a check against the grid uses the whole-grid specialisation constant.
    pub checks_grid: bool,
}

impl KernelState {
    fn push_member(&self, e: &mut Emitter, member: u32) -> Result<Word, Failed> {
        let ty = self.push_members[member as usize];
        let pointer = e.pointer(StorageClass::PushConstant, ty);
        let index = e.u32_constant(member);
        let address = e.b.access_chain(pointer, None, self.push_variable, [index])?;
        Ok(e.b.load(ty, None, address, None, [])?)
    }

    /// The grid's size in `dimension`, a `u32`.
    pub fn grid_size(&self, e: &mut Emitter, dimension: u8) -> Result<Word, Failed> {
        self.push_member(e, dimension as u32)
    }

    /// The dynamic size `dimension` of buffer parameter `parameter`, a device `index`.
    pub fn dim_size(&self, e: &mut Emitter, parameter: usize, dimension: usize) -> Result<Word, Failed> {
        let member = self.dim_members[&(parameter, dimension)];
        self.push_member(e, member)
    }
}

/// Lowers kernel `kernel` into `e`, returning its entry point's artifact.
/// The workgroup given to a multi-dimensional kernel that cannot observe its workgroup: 32
/// wide (NVIDIA's subgroup, half of AMD's), 8 rows, 256 work items. On the H100, Life at
/// 8192 x 8192 took 0.635 ms per generation with 8 x 8 workgroups and also with 32 x 2 (64
/// work items, each subgroup on one row), 0.309 with 16 x 16 and 0.299 with 32 x 8: the size
/// matters more than the rows (docs/lowering.md, "The workgroup's shape").
const RESHAPED: [u32; 3] = [32, 8, 1];

/// The shape given to a kernel that cannot observe its workgroup: [`RESHAPED`] for a
/// multi-dimensional one whose x is 4 to 31 wide (an x of 1 or 2 is a deliberate choice, a
/// column per subgroup; 32 or more already fills a subgroup's row), within the device's
/// limits; otherwise the declared shape. The grid, and so the set of work items and what each
/// computes, is the same: only which of them share a workgroup changes, and such a kernel
/// cannot tell.
fn reshaped(declared: [u32; 3], options: &LoweringOptions) -> [u32; 3] {
    let [x, y, z] = declared;
    let fits = (0..3).all(|d| RESHAPED[d] <= options.max_workgroup_size[d])
        && RESHAPED.iter().product::<u32>() <= options.max_workgroup_invocations;
    if (4..32).contains(&x) && y * z > 1 && fits {
        RESHAPED
    } else {
        declared
    }
}

pub(crate) fn lower_kernel(
    ctx: &Context,
    e: &mut Emitter,
    options: &LoweringOptions,
    kernel: Op,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<EntryPoint, Failed> {
    let name = symbol(ctx, kernel).to_string();
    let reached = reach(ctx, kernel, diagnostics)?;
    let error = |diagnostics: &mut Vec<Diagnostic>, message: String| {
        diagnostics.push(Diagnostic::error(ctx.location(kernel), message));
        Failed::Reported
    };
    let workgroup_size = match ctx.attribute(kernel, "workgroup_size") {
        None => DEFAULT_WORKGROUP_SIZE,
        Some(_) => match hat_dialects::kernel::workgroup_size(ctx, kernel) {
            Some(sizes) if sizes.iter().all(|&s| (1..=u32::MAX as i64).contains(&s)) => sizes.map(|s| s as u32),
            _ => return Err(error(diagnostics, "'workgroup_size' must hold three positive 32-bit sizes".to_string())),
        },
    };
    let invocations = workgroup_size.iter().map(|&s| s as u64).product::<u64>();
    let too_large = (0..3).any(|d| workgroup_size[d] > options.max_workgroup_size[d]);
    if too_large || invocations > options.max_workgroup_invocations as u64 {
        let [x, y, z] = workgroup_size;
        let [mx, my, mz] = options.max_workgroup_size;
        let message = format!(
            "the workgroup size ({x}, {y}, {z}) is over the device's limits: at most ({mx}, {my}, {mz}) and {} work items in all",
            options.max_workgroup_invocations
        );
        return Err(error(diagnostics, message));
    }
    let workgroup_size = if options.choose_workgroup_shape && !reached.observes_workgroup {
        reshaped(workgroup_size, options)
    } else {
        workgroup_size
    };
    let body = ctx.interface::<dyn CallableOpInterface>(kernel).and_then(|c| c.body(ctx, kernel));
    let Some(&block) = body.and_then(|body| ctx.region_blocks(body).first()) else {
        return Err(error(diagnostics, "a kernel needs a body".to_string()));
    };
    let parameters: Vec<Type> = ctx.block_arguments(block).iter().map(|&a| ctx.value_type(a)).collect();
    let wide = crate::wide::plan(ctx, kernel, block, &reached, options);
    let coarse = match wide {
        None => crate::coarsen::plan(ctx, kernel, block, &reached, options),
        Some(_) => None,
    };
    let rows_per_invocation = coarse.as_ref().map_or(1, |plan| plan.rows);

    let mut state = KernelState {
        name: name.clone(),
        workgroup_size,
        leaves: Vec::new(),
        local_leaves: FxHashMap::default(),
        push_variable: 0,
        push_members: Vec::new(),
        scalar_members: FxHashMap::default(),
        dim_members: FxHashMap::default(),
        has_barrier: reached.has_barrier,
        callees: reached.callees,
        instances: FxHashMap::default(),
        queue: Vec::new(),
        wide: None,
        coarse: coarse.map(crate::coarsen::CoarseState::new),
        checks_grid: false,
    };
    let mut fe = FunctionEmitter {
        ctx,
        e,
        k: &mut state,
        options,
        diagnostics,
        values: FxHashMap::default(),
        block: 0,
        in_grid: None,
        constant_operand: None,
    };

    // Storage buffers, in parameter order.
    let mut bindings = Vec::new();
    for (parameter, &ty) in parameters.iter().enumerate() {
        if !ctx.type_kind(ty).is_memref() {
            continue;
        }
        let binding = bindings.len() as u32;
        let element = fe.declare_parameter_leaf(kernel, parameter, binding, ty, &reached.float_atomic_bits)?;
        if let Some(name) = ctx.argument_name(ctx.block_arguments(block)[parameter]) {
            let variable = fe.k.leaves[binding as usize].variable;
            fe.e.b.name(variable, name);
        }
        let (shape, _) = fe.memref_parts(kernel, ty)?;
        let shape = shape.iter().map(|&d| (d != DYNAMIC).then_some(d as u64)).collect();
        bindings.push(BufferBinding { parameter, set: 0, binding, element, shape, access: Default::default() });
    }
    let push_constants = fe.declare_push_constants(kernel, &parameters)?;
    let items_per_invocation = if wide.is_some() { crate::wide::LANES } else { 1 };
    if let Some(plan) = wide {
        fe.declare_wide(plan);
    }
    let mut workgroup_memory_bytes = 0u64;
    for &op in &reached.local_allocs {
        workgroup_memory_bytes += fe.declare_local_leaf(op, &reached.float_atomic_bits)?;
    }
    if workgroup_memory_bytes > options.max_workgroup_memory_bytes as u64 {
        let message = format!(
            "the kernel allocates {workgroup_memory_bytes} bytes of workgroup memory, over the device's limit of {}",
            options.max_workgroup_memory_bytes
        );
        return Err(fe.error(kernel, message));
    }

    let function = fe.entry_function(kernel, block)?;
    while let Some(instance) = fe.k.queue.pop() {
        let mut helper = FunctionEmitter {
            ctx,
            e: &mut *fe.e,
            k: &mut *fe.k,
            options,
            diagnostics: &mut *fe.diagnostics,
            values: FxHashMap::default(),
            block: 0,
            in_grid: None,
            constant_operand: None,
        };
        helper.helper_function(&instance)?;
    }

    // What each buffer is used for, now that every function is lowered.
    for binding in &mut bindings {
        let leaf = &fe.k.leaves[binding.binding as usize];
        binding.access = leaf.access;
        if !leaf.access.write {
            fe.e.b.decorate(leaf.variable, Decoration::NonWritable, []);
        }
        if !leaf.access.read {
            fe.e.b.decorate(leaf.variable, Decoration::NonReadable, []);
        }
    }
    let interface = fe.e.builtin_variables();
    fe.e.b.entry_point(spirv::ExecutionModel::GLCompute, function, name.clone(), interface);
    fe.e.b.execution_mode(function, spirv::ExecutionMode::LocalSize, workgroup_size);
    Ok(EntryPoint {
        name,
        location: ctx.location(kernel),
        workgroup_size,
        bindings,
        push_constants,
        has_barrier: fe.k.has_barrier,
        workgroup_memory_bytes: workgroup_memory_bytes as u32,
        items_per_invocation,
        rows_per_invocation,
        whole_grid_constant: fe.k.checks_grid.then_some(crate::artifact::WHOLE_GRID_SPEC_ID),
    })
}

impl FunctionEmitter<'_> {
    /// Declares the push constants: the grid, the scalar parameters, the dynamic sizes.
    fn declare_push_constants(&mut self, kernel: Op, parameters: &[Type]) -> Result<PushConstantLayout, Failed> {
        let u32 = self.e.u32();
        let mut members = vec![u32, u32, u32];
        let mut offsets = vec![0, 4, 8];
        let mut layout = PushConstantLayout { grid_offset: 0, ..Default::default() };
        let mut end = 12u32;
        let mut place = |size: u32| {
            let offset = end.next_multiple_of(size);
            end = offset + size;
            offset
        };
        for (parameter, &ty) in parameters.iter().enumerate() {
            if self.ctx.type_kind(ty).is_memref() {
                continue;
            }
            let kind = self.kind(kernel, ty)?;
            let (encoding, member) = match kind {
                Kind::Bool => (ScalarEncoding::Bool32, u32),
                Kind::Int(64) => (ScalarEncoding::Int64, self.e.int(64)),
                Kind::Int(_) => (ScalarEncoding::Int32, u32),
                Kind::Float(64) => (ScalarEncoding::Float64, self.e.float(64)),
                Kind::Float(_) => (ScalarEncoding::Float32, self.e.float(32)),
            };
            let offset = place(encoding.bytes());
            self.k.scalar_members.insert(parameter, (members.len() as u32, encoding));
            members.push(member);
            offsets.push(offset);
            layout.scalars.push(ScalarSlot { parameter, offset, encoding });
        }
        let index = self.e.index();
        let encoding = if self.e.index_bits == 64 { ScalarEncoding::Int64 } else { ScalarEncoding::Int32 };
        for (parameter, &ty) in parameters.iter().enumerate() {
            let TypeKind::MemRef { shape, .. } = self.ctx.type_kind(ty) else { continue };
            for (dimension, _) in shape.iter().enumerate().filter(|(_, &d)| d == DYNAMIC) {
                let offset = place(encoding.bytes());
                self.k.dim_members.insert((parameter, dimension), members.len() as u32);
                members.push(index);
                offsets.push(offset);
                layout.dims.push(DimSlot { parameter, dimension, offset, encoding });
            }
        }
        layout.size = end.next_multiple_of(4);
        if layout.size > self.options.max_push_constant_bytes {
            let message = format!(
                "the kernel's scalars and buffer sizes need {} bytes of push constants, over the device's limit of {}",
                layout.size, self.options.max_push_constant_bytes
            );
            return Err(self.error(kernel, message));
        }
        let block = self.e.push_struct(&members, &offsets);
        let pointer = self.e.pointer(StorageClass::PushConstant, block);
        let variable = self.e.b.variable(pointer, None, StorageClass::PushConstant, None);
        self.e.b.name(variable, "push_constants");
        self.k.push_variable = variable;
        self.k.push_members = members;
        Ok(layout)
    }

    /// Scalar parameter `parameter` (of type `ty`), read from the push constants.
    fn scalar_parameter(&mut self, kernel: Op, parameter: usize, ty: Type) -> Result<Word, Failed> {
        let (member, encoding) = self.k.scalar_members[&parameter];
        let raw = self.k.push_member(self.e, member)?;
        let kind = self.kind(kernel, ty)?;
        let value_type = self.kind_type(kind);
        Ok(match (encoding, kind) {
            (ScalarEncoding::Bool32, _) => {
                let bool = self.e.bool();
                let zero = self.e.u32_constant(0);
                self.e.b.i_not_equal(bool, None, raw, zero)?
            }
            (ScalarEncoding::Int32, Kind::Int(bits)) if bits < 32 => self.e.b.s_convert(value_type, None, raw)?,
            (ScalarEncoding::Float32, Kind::Float(16)) => self.e.b.f_convert(value_type, None, raw)?,
            _ => raw,
        })
    }

    /// The entry point's function: binds the parameters, checks the grid, runs the body.
    fn entry_function(&mut self, kernel: Op, block: hat_ir::Block) -> Result<Word, Failed> {
        let ctx = self.ctx;
        let void = self.e.void();
        let function_type = self.e.b.type_function(void, []);
        let function = self.e.b.begin_function(void, None, spirv::FunctionControl::NONE, function_type)?;
        self.e.b.name(function, self.k.name.clone());
        let entry = self.e.b.id();
        self.start_block(entry)?;
        if self.k.wide.is_some() {
            self.declare_wide_slots();
        }
        let mut leaf = 0;
        for (parameter, &argument) in ctx.block_arguments(block).iter().enumerate() {
            let ty = ctx.value_type(argument);
            let lowered = if ctx.type_kind(ty).is_memref() {
                leaf += 1;
                Lowered::Buffer(self.leaf_value(leaf - 1))
            } else {
                Lowered::Scalar(self.scalar_parameter(kernel, parameter, ty)?)
            };
            self.define(argument, lowered);
        }
        if self.k.wide.is_some() || self.k.coarse.is_some() {
            if self.k.wide.is_some() {
                self.wide_body(block)?;
            } else {
                self.coarse_body(block)?;
            }
            self.e.b.ret()?;
            self.e.b.end_function()?;
            return Ok(function);
        }
        let in_grid = self.compute_in_grid()?;
        if self.k.has_barrier {
            // Every work item runs (a barrier waits for the whole workgroup); those past the
            // grid skip their loads, stores and atomics on buffers.
            self.in_grid = Some(in_grid);
            let terminator = self.ops(block)?;
            self.check_return(terminator)?;
        } else {
            let (body, exit) = (self.e.b.id(), self.e.b.id());
            self.e.b.selection_merge(exit, spirv::SelectionControl::NONE)?;
            self.e.b.branch_conditional(in_grid, body, exit, [])?;
            self.start_block(body)?;
            let terminator = self.ops(block)?;
            self.check_return(terminator)?;
            self.e.b.branch(exit)?;
            self.start_block(exit)?;
        }
        self.e.b.ret()?;
        self.e.b.end_function()?;
        Ok(function)
    }

    /// A kernel's body ends in a return-like terminator with no operands (or in none).
    pub(crate) fn check_return(&mut self, terminator: Option<Op>) -> Result<(), Failed> {
        match terminator {
            Some(op) if !self.ctx.has_traits(op, OpTraits::RETURN_LIKE) => {
                Err(self.error(op, "ends the kernel's body, but is not return-like"))
            }
            Some(op) if !self.ctx.operands(op).is_empty() => Err(self.error(op, "an entry kernel returns nothing")),
            _ => Ok(()),
        }
    }
}
