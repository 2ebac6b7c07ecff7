//! Compiles a host function — any callable whose body runs on the host (`compute.func`, a
//! vendor's function op) — once, on its first call, into a [`Function`] (see `program.rs`): an
//! owned program that the interpreter runs without looking up a name, an attribute or a hash map.
//!
//! - **Slots.** Every value of the function (block arguments and op results) gets a slot,
//!   numbered from 0; the parameters are the first ones. A slot holds a `Scalar`; a value of
//!   memref type holds a buffer of the run as `Scalar::Int(id)` (see `buffers.rs`), so values
//!   carried by loops, selected, passed or returned need no case of their own. Whether a slot is
//!   a buffer is known from its type, here.
//! - **What an op is** is asked of its interfaces and typed views, never of its name. Counted
//!   loops ([`LoopLikeOpInterface`](hat_ir::interfaces::LoopLikeOpInterface)), region-branch
//!   ops (`scf.if`, `scf.while`, a vendor's), terminators and scalars are compiled by the
//!   runtime's one compiler ([`crate::slot_code::compiler`], shared with the CPU backend); this
//!   file is the host's instruction set ([`InstructionSet`]): calls (the shared compiler finds
//!   the callee through the symbol tables; a callee with a body is compiled and run, a
//!   declaration is a registered host function), dispatches ([`LaunchOpInterface`]), and the
//!   `buffer` and `compute` views (memory and synchronisation). Anything else is an error at the
//!   op's location.
//! - **What the verifier guarantees is not checked again** (the function comes from a
//!   [`Verified`](hat_ir::Verified) module): operand counts and types, terminators, the kinds of
//!   the symbols that calls and dispatches name. What an interface answers is checked once
//!   (a vendor's interface may disagree with its op's shape), so that running never indexes out
//!   of range.
//! - **Region code.** Each region's single block becomes a [`Code`]: its instructions, and the
//!   slots of its terminator's operands (a function's results, a loop's carried values); a
//!   region of a region-branch op ends in a hop instead ([`BranchInst::hops`]). The interpreter
//!   runs nested code recursively. Regions of several blocks (unstructured control flow) are
//!   refused.

use super::program::{
    AllocInst, ArenaInst, ArgSlot, BranchInst, CallInst, Code, DispatchInst, Function, Hop, HostCallInst, Inst,
    LoopInst, RegionCode,
};
use super::{parameter_kind, ParameterKind};
use crate::dispatch_arguments::{ArgumentType, ExtentCheck, KernelSignature};
use crate::error::RuntimeError;
use crate::report::{Direction, HostHook};
use crate::slot_code::compiler::{self, Callee, End, InstructionSet, LoopSlots};
use crate::slot_code::region_hop::single_block;
use crate::slot_code::{ScalarInst, Slot, SlotMap, Symbols, ValueKind};
use hat_dialects::buffer::{AllocOp, CopyOp, DeallocOp, DimOp, FromDeviceOp, LoadOp, ReleaseOp, StoreOp, ToDeviceOp};
use hat_dialects::compute::{host_func_arg_effects, ArgEffect, SyncOp};
use hat_ir::interfaces::{
    execution_space, CallableOpInterface, ExecutionSpace, LaunchOpInterface, RegionBranchOpInterface,
};
use hat_ir::{Block, Context, Ident, Op, OpTraits, Region, Type, Value};
use rustc_hash::FxHashMap;

/// What an executor has compiled, kept across its runs: host functions (compiled on their first
/// call) and kernels (compiled by the backend on their first dispatch), each numbered on first
/// reference.
#[derive(Default)]
pub(crate) struct Functions {
    /// The symbols calls and dispatches name.
    symbols: Symbols,
    pub ops: Vec<Op>,
    pub compiled: Vec<Option<std::rc::Rc<Function>>>,
    index: FxHashMap<Op, u32>,
    pub kernels: Vec<(Op, Option<std::rc::Rc<CompiledKernel>>)>,
    kernel_index: FxHashMap<Op, u32>,
    /// What the backend's [`lower`](crate::Backend::lower) gave for the module, once asked
    /// (on the first dispatch).
    pub lowered: Option<Option<std::sync::Arc<dyn crate::artifact::LoweredModule>>>,
}

/// A kernel the backend compiled, and how it uses each of its parameters.
#[derive(Debug)]
pub(crate) struct CompiledKernel {
    pub handle: crate::backend::KernelHandle,
    /// By parameter: whether the kernel may read it, and may write it (both, unless the lowering
    /// knows better).
    pub access: Vec<(bool, bool)>,
}

impl Functions {
    /// The index of the function `op`, numbered on first reference.
    pub fn function(&mut self, op: Op) -> u32 {
        *self.index.entry(op).or_insert_with(|| {
            self.ops.push(op);
            self.compiled.push(None);
            (self.ops.len() - 1) as u32
        })
    }

    fn kernel(&mut self, op: Op) -> u32 {
        *self.kernel_index.entry(op).or_insert_with(|| {
            self.kernels.push((op, None));
            (self.kernels.len() - 1) as u32
        })
    }

    /// The op defining `name` in the symbol tables enclosing `from`.
    fn lookup(&mut self, ctx: &Context, from: Op, name: Ident) -> Option<Op> {
        self.symbols.lookup(ctx, from, name)
    }
}

/// The symbol name of an op, or `?`.
pub(crate) fn symbol_name(ctx: &Context, op: Op) -> &str {
    hat_ir::verifier::symbol_name(ctx, op).unwrap_or("?")
}

fn unsupported(ctx: &Context, op: Op, message: impl Into<String>) -> RuntimeError {
    RuntimeError::Unsupported { op: ctx.name_str(op).to_string(), message: message.into(), location: ctx.location(op) }
}

/// Compiles the host function `op` (a callable with a body on the host).
pub(crate) fn compile(ctx: &Context, functions: &mut Functions, op: Op) -> Result<Function, RuntimeError> {
    let mut compiler = Compiler { ctx, functions, slots: SlotMap::default() };
    compiler.function(op)
}

struct Compiler<'c, 'f> {
    ctx: &'c Context,
    functions: &'f mut Functions,
    slots: SlotMap,
}

impl Compiler<'_, '_> {
    fn error(&self, op: Op, message: impl Into<String>) -> RuntimeError {
        unsupported(self.ctx, op, message)
    }

    fn kind(&self, op: Op, ty: Type) -> Result<ValueKind, RuntimeError> {
        ValueKind::of(self.ctx, ty).map_err(|message| self.error(op, message))
    }

    fn define(&mut self, op: Op, value: Value) -> Result<Slot, RuntimeError> {
        self.slots.define(self.ctx, value).map_err(|message| self.error(op, message))
    }

    fn define_results(&mut self, op: Op) -> Result<Box<[Slot]>, RuntimeError> {
        self.slots.define_results(self.ctx, op).map_err(|message| self.error(op, message))
    }

    fn slot(&self, op: Op, value: Value) -> Result<Slot, RuntimeError> {
        self.slots.get(value).map_err(|message| self.error(op, message))
    }

    fn value_slots(&self, op: Op, values: &[Value]) -> Result<Box<[Slot]>, RuntimeError> {
        self.slots.get_all(values).map_err(|message| self.error(op, message))
    }

    fn arguments(&self, op: Op, values: &[Value]) -> Result<Box<[ArgSlot]>, RuntimeError> {
        values
            .iter()
            .map(|&value| {
                let slot = self.slot(op, value)?;
                Ok(match self.kind(op, self.ctx.value_type(value))? {
                    ValueKind::Scalar(ty) => ArgSlot::Scalar(slot, ty),
                    ValueKind::Buffer => ArgSlot::Buffer(slot),
                })
            })
            .collect()
    }

    /// The one block of a region (`None` when empty); regions of several blocks are refused.
    fn single_block(&self, op: Op, region: Region) -> Result<Option<Block>, RuntimeError> {
        single_block(self.ctx, region).map_err(|message| self.error(op, message))
    }

    fn function(&mut self, op: Op) -> Result<Function, RuntimeError> {
        let ctx = self.ctx;
        let name = symbol_name(ctx, op).to_string();
        let body = ctx
            .interface::<dyn CallableOpInterface>(op)
            .and_then(|callable| callable.body(ctx, op))
            .ok_or_else(|| self.error(op, format!("'@{name}' has no body")))?;
        let block = self.single_block(op, body)?.ok_or_else(|| self.error(op, format!("'@{name}' has no body")))?;
        let (params, body) = compiler::function_body(self, ctx, op, block)?;
        let buffer_results: Box<[bool]> =
            match ctx.block_ops(block).last().filter(|&t| ctx.has_traits(t, OpTraits::TERMINATOR)) {
                Some(terminator) => ctx
                    .operands(terminator)
                    .iter()
                    .map(|&value| Ok(self.kind(terminator, ctx.value_type(value))? == ValueKind::Buffer))
                    .collect::<Result<_, RuntimeError>>()?,
                None => Box::new([]),
            };
        let arena_bytes = arena_attribute(ctx, op, hat_dialects::buffer::ARENA_BYTES_ATTRIBUTE);
        Ok(Function { name, slots: self.slots.count(), params, body, buffer_results, arena_bytes })
    }

    /// The host's own ops: dispatches, synchronisation and the `buffer` ops.
    fn own_op(&mut self, op: Op) -> Result<Option<Inst>, RuntimeError> {
        let ctx = self.ctx;
        if let Some(launch) = ctx.interface::<dyn LaunchOpInterface>(op) {
            return self.dispatch_op(op, launch).map(Some);
        }
        if let Some(inst) = self.memory_op(op)? {
            return Ok(Some(inst));
        }
        if SyncOp::wrap(ctx, op).is_some() {
            return Ok(Some(Inst::Sync));
        }
        Ok(None)
    }

    /// A call: of a function with a body (compiled on its first call), or of a declaration (a
    /// host function).
    fn call_op(&mut self, op: Op, callee: Callee<'_>) -> Result<Inst, RuntimeError> {
        let Callee { op: target, name, body, arguments } = callee;
        if body.is_none() {
            return self.host_call(op, target, name, arguments);
        }
        if execution_space(self.ctx, target) == Some(ExecutionSpace::Device) {
            return Err(self.error(op, format!("calls '@{name}', which runs on the device: launch it instead")));
        }
        let arguments = self.value_slots(op, arguments)?;
        let results = self.define_results(op)?;
        let callee = self.functions.function(target);
        Ok(Inst::Call(Box::new(CallInst { op, callee, arguments, results })))
    }

    fn host_call(&mut self, op: Op, declaration: Op, name: &str, arguments: &[Value]) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        let arguments = self.arguments(op, arguments)?;
        // The declared effects; an undeclared (or malformed) one counts as read and written.
        let declared = host_func_arg_effects(ctx, declaration);
        let effects = arguments
            .iter()
            .enumerate()
            .map(|(index, argument)| match argument {
                ArgSlot::Scalar(..) => ArgEffect::None,
                ArgSlot::Buffer(_) => declared
                    .as_ref()
                    .and_then(|d| d.get(index).copied())
                    .filter(|&e| e != ArgEffect::None)
                    .unwrap_or(ArgEffect::ReadWrite),
            })
            .collect();
        let result_types = ctx
            .results(op)
            .map(|value| match self.kind(op, ctx.value_type(value))? {
                ValueKind::Scalar(ty) => Ok(ty),
                ValueKind::Buffer => Err(self.error(op, "a host function returns scalars only")),
            })
            .collect::<Result<_, _>>()?;
        let results = self.define_results(op)?;
        Ok(Inst::HostCall(Box::new(HostCallInst {
            op,
            name: name.to_string(),
            arguments,
            effects,
            result_types,
            results,
        })))
    }

    fn dispatch_op(&mut self, op: Op, launch: &'static dyn LaunchOpInterface) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        let location = ctx.location(op);
        let symbol = launch.kernel(ctx, op).ok_or_else(|| self.error(op, "names no kernel"))?;
        let name = ctx.ident_str(symbol).to_string();
        let kernel = self
            .functions
            .lookup(ctx, op, symbol)
            .filter(|&k| {
                ctx.interface::<dyn CallableOpInterface>(k).is_some()
                    && execution_space(ctx, k) == Some(ExecutionSpace::Device)
            })
            .ok_or_else(|| RuntimeError::MissingSymbol { what: "kernel", name: name.clone(), location })?;
        let operands = ctx.operands(op);
        let grid = operands.get(launch.grid(ctx, op)).unwrap_or(&[]);
        if !(1..=3).contains(&grid.len()) {
            return Err(self.error(op, format!("has a grid of {} dimensions (1 to 3 allowed)", grid.len())));
        }
        let grid = self.value_slots(op, grid)?;
        let values = operands.get(launch.arguments(ctx, op)).unwrap_or(&[]);
        let arguments = self.arguments(op, values)?;
        let extent_checks = self.check_arguments(op, kernel, values)?;
        let kernel = self.functions.kernel(kernel);
        Ok(Inst::Dispatch(Box::new(DispatchInst { op, kernel, name, grid, arguments, extent_checks })))
    }

    /// Checks a dispatch's arguments `values` against the kernel's parameters once, by their
    /// types (`dispatch_arguments.rs`): the extents left to check when it runs. A kernel whose
    /// parameters the runtime cannot hold cannot be dispatched.
    fn check_arguments(&self, op: Op, kernel: Op, values: &[Value]) -> Result<Box<[ExtentCheck]>, RuntimeError> {
        let ctx = self.ctx;
        let signature = KernelSignature::of(ctx, kernel).map_err(|message| self.error(op, message))?;
        let types = values
            .iter()
            .map(|&value| ArgumentType::of(ctx, ctx.value_type(value)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.error(op, "passes a value of a type the runtime does not hold"))?;
        let left = signature.check_types(&types).map_err(|error| error.at(ctx.location(op)))?;
        Ok(left.into())
    }

    /// The `buffer` ops, through their views; `None` for any other op.
    fn memory_op(&mut self, op: Op) -> Result<Option<Inst>, RuntimeError> {
        let ctx = self.ctx;
        let range = |this: &Self, range: Option<(Value, Value)>| -> Result<Option<(Slot, Slot)>, RuntimeError> {
            range.map(|(offset, count)| Ok((this.slot(op, offset)?, this.slot(op, count)?))).transpose()
        };
        let inst = if let Some(load) = LoadOp::wrap(ctx, op) {
            let buffer = self.slot(op, load.buffer(ctx))?;
            let indices = self.value_slots(op, load.indices(ctx))?;
            Inst::Load { dst: self.define_results(op)?[0], buffer, indices, op }
        } else if let Some(store) = StoreOp::wrap(ctx, op) {
            Inst::Store {
                value: self.slot(op, store.value(ctx))?,
                buffer: self.slot(op, store.buffer(ctx))?,
                indices: self.value_slots(op, store.indices(ctx))?,
                op,
            }
        } else if let Some(alloc) = AllocOp::wrap(ctx, op) {
            self.alloc(op, alloc)?
        } else if let Some(dealloc) = DeallocOp::wrap(ctx, op) {
            Inst::Dealloc { buffer: self.slot(op, dealloc.buffer(ctx))?, op }
        } else if ctx.name_str(op) == "buffer.arena" {
            self.arena(op)?
        } else if let Some(release) = ReleaseOp::wrap(ctx, op) {
            Inst::Release { buffer: self.slot(op, release.buffer(ctx))?, op }
        } else if let Some(dim) = DimOp::wrap(ctx, op) {
            let buffer = self.slot(op, dim.buffer(ctx))?;
            let dimension = dim
                .dimension(ctx)
                .and_then(|d| usize::try_from(d).ok())
                .ok_or_else(|| self.error(op, "has no valid 'dimension'"))?;
            Inst::Dim { dst: self.define_results(op)?[0], buffer, dimension, op }
        } else if let Some(copy) = CopyOp::wrap(ctx, op) {
            Inst::Copy {
                source: self.slot(op, copy.source(ctx))?,
                destination: self.slot(op, copy.destination(ctx))?,
                op,
            }
        } else if let Some(transfer) = ToDeviceOp::wrap(ctx, op) {
            let buffer = self.slot(op, transfer.buffer(ctx))?;
            Inst::Transfer {
                direction: Direction::ToDevice,
                buffer,
                range: range(self, transfer.element_range(ctx))?,
                op,
            }
        } else if let Some(transfer) = FromDeviceOp::wrap(ctx, op) {
            let buffer = self.slot(op, transfer.buffer(ctx))?;
            Inst::Transfer {
                direction: Direction::FromDevice,
                buffer,
                range: range(self, transfer.element_range(ctx))?,
                op,
            }
        } else if let Some(hook) = HostHook::of(ctx, op) {
            // Every hook has the operands of a ranged transfer: the buffer, then (offset, count).
            let operands = ctx.operands(op);
            let buffer = self.slot(op, operands[0])?;
            let range = range(self, (operands.len() == 3).then(|| (operands[1], operands[2])))?;
            Inst::Hook { hook, buffer, range, op }
        } else {
            return Ok(None);
        };
        Ok(Some(inst))
    }

    fn alloc(&mut self, op: Op, alloc: AllocOp) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        let result = ctx.result(op, 0);
        let (element, shape) = match parameter_kind(ctx, ctx.value_type(result)).map_err(|m| self.error(op, m))? {
            ParameterKind::Buffer(layout) => (layout.element, layout.shape.into_iter().map(Some).collect()),
            ParameterKind::DynamicBuffer { element, shape } => (element, shape.into_boxed_slice()),
            ParameterKind::Scalar(_) => return Err(self.error(op, "allocates a scalar, not a memref")),
        };
        let sizes = self.value_slots(op, alloc.dynamic_sizes(ctx))?;
        let name = match ctx.sources.file_line_col(ctx.location(op)) {
            Some((_, line, column)) => format!("alloc@{line}:{column}"),
            None => format!("alloc@op{}", op.index()),
        };
        let dst = self.define(op, result)?;
        let arena_offset = arena_attribute(ctx, op, hat_dialects::buffer::ARENA_OFFSET_ATTRIBUTE);
        let arena_slot = arena_attribute(ctx, op, hat_dialects::buffer::ARENA_SLOT_ATTRIBUTE);
        Ok(Inst::Alloc(Box::new(AllocInst { op, dst, element, shape, sizes, name, arena_offset, arena_slot })))
    }

    fn arena(&mut self, op: Op) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        let live_sets = hat_dialects::buffer::arena_live_sets(ctx, op)
            .ok_or_else(|| self.error(op, "has no valid 'live_sets' (an array of arrays of slot numbers)"))?;
        let sizes = self.value_slots(op, ctx.operands(op))?;
        Ok(Inst::Arena(Box::new(ArenaInst { op, sizes, live_sets })))
    }
}

/// The non-negative integer attribute `name` of `op` (`plan-memory`'s arena plan), if any.
fn arena_attribute(ctx: &Context, op: Op, name: &str) -> Option<usize> {
    ctx.attribute(op, name).and_then(|a| ctx.attribute_kind(a).as_i64()).and_then(|v| usize::try_from(v).ok())
}

impl InstructionSet for Compiler<'_, '_> {
    type Inst = Inst;
    /// A region's position among its op's non-empty regions (0 for a function's or a loop's
    /// body).
    type Label = usize;
    type Block = Code;
    /// A region's code, and the hop that leaves it.
    type Region = (Code, Hop);
    const ASK_REFUSAL: Option<&'static str> = None;
    const CALLEE: &'static str = "function";

    fn slots(&mut self) -> &mut SlotMap {
        &mut self.slots
    }

    fn symbols(&mut self) -> &mut Symbols {
        &mut self.functions.symbols
    }

    fn error(&self, _: &Context, op: Op, message: String) -> RuntimeError {
        Compiler::error(self, op, message)
    }

    fn unknown(&self, _: &Context, op: Op) -> RuntimeError {
        Compiler::error(
            self,
            op,
            "the host executor does not know this op (it is not a scalar or buffer op, and has no loop, \
             region-branch, call or launch interface)",
        )
    }

    fn own(&mut self, _: &Context, op: Op) -> Result<Option<Inst>, RuntimeError> {
        self.own_op(op)
    }

    fn scalar(&mut self, _: &Context, op: Op, inst: ScalarInst) -> Inst {
        Inst::Scalar { inst, op }
    }

    fn call(&mut self, _: &Context, op: Op, callee: Callee<'_>) -> Result<Inst, RuntimeError> {
        self.call_op(op, callee)
    }

    fn label(&mut self, position: usize) -> usize {
        position
    }

    fn finish_block(&mut self, _: usize, insts: Vec<Inst>, end: End) -> Code {
        let (End::Return(exits) | End::Next(exits)) = end;
        Code { insts: insts.into(), exits }
    }

    fn finish_region(&mut self, _: usize, insts: Vec<Inst>, exit: Hop) -> (Code, Hop) {
        (Code { insts: insts.into(), exits: Box::new([]) }, exit)
    }

    fn counted_loop(&mut self, _: &Context, op: Op, slots: LoopSlots, body: Code) -> Inst {
        Inst::Loop(Box::new(LoopInst { op, slots, body }))
    }

    fn branch(
        &mut self,
        _: &Context,
        op: Op,
        branches: &'static dyn RegionBranchOpInterface,
        entry: Hop,
        regions: Vec<(usize, (Code, Hop))>,
    ) -> Inst {
        let regions = regions.into_iter().map(|(index, (code, exit))| RegionCode { index, code, exit }).collect();
        Inst::Branch(Box::new(BranchInst { op, branches, entry, regions }))
    }
}
