//! Compiles a kernel and the device functions it calls (transitively) into a [`Program`]: an
//! owned, interpreter-friendly form that does not borrow the [`Context`].
//!
//! What an op does is decided here through op interfaces, traits and typed views, never by
//! matching an op name, so a vendor's dialect takes part on the same terms as hat's own:
//!
//! - **Entry.** The kernel is a callable ([`CallableOpInterface`]) with a body and the
//!   `DEVICE_CODE` trait (`kernel.func`, or a vendor's equivalent), returning nothing. Its
//!   workgroup size is its `workgroup_size` attribute ([`hat_dialects::kernel::workgroup_size`];
//!   [`DEFAULT_WORKGROUP_SIZE`] when absent).
//! - **Calls.** An op with [`CallOpInterface`] calls the op its callee symbol names in the
//!   enclosing symbol tables (innermost first; each table is read once: `slot_code::Symbols`).
//!   The callee must be a callable with a body and the `DEVICE_CODE` trait (a `kernel.helper`,
//!   or a vendor's device function); the call's `arguments()` bind to the body's parameters.
//!   Every function is compiled once, so recursion compiles; the interpreter bounds the depth
//!   ([`MAX_CALL_DEPTH`]).
//! - **Counted loops.** An op with [`LoopLikeOpInterface`] becomes a [`LoopInst`]: bounds, step,
//!   induction variable, inits and carried block arguments come from the interface, whatever the
//!   op's operand layout (`scf.for`'s bounds first, a vendor's last). The values carried to the
//!   next iteration (and, at the end, the results) are the body terminator's operands at
//!   `terminator_operands` when the op also has [`RegionBranchOpInterface`], else all of them.
//! - **Other region ops.** An op with [`RegionBranchOpInterface`] becomes a general
//!   region-branch machine: an [`Inst::Branch`] (the hop into the op) and, ending each region, an
//!   [`Inst::Exit`] (the hop out of it). The interpreter cannot ask the interface (a program
//!   outlives the context), so each hop is tabulated here, as
//!   [`hat_ir::interfaces::HopDecision`] decides it (shared with the host executor and the SPIR-V
//!   lowering): unconditional, or a choice on one `i1` operand (the op's entering, the region
//!   terminator's leaving). A hop with more than two successors, or with two
//!   that no single `i1` operand decides, is a compile error naming the op. Along each hop, values
//!   move from `entry_operands` (entering) or `terminator_operands` (leaving a region) into the
//!   successor's `successor_inputs` (a region's block arguments, or the op's results).
//! - **Terminators.** A block's terminator is its last op when that op has the `TERMINATOR`
//!   trait; a block without one ends as if by a terminator with no operands. A function body's
//!   terminator must be `RETURN_LIKE` (its operands are the function's results). In a loop or
//!   region-branch region, any terminator without successor blocks forwards its operands as
//!   above (`scf.condition` is a terminator but not return-like).
//! - **Memory, work items, scalars.** Typed views: `buffer`'s `LoadOp`, `StoreOp` and `DimOp`;
//!   `kernel`'s `LocalAllocOp`, `AtomicRmwOp` and `BarrierOp`, and [`WorkItemQuery`] for the
//!   work-item ids and sizes; `arith`'s `ConstantOp` and `SelectOp`. Every other scalar op is a
//!   [`ScalarOp`] of [`crate::eval`].
//!
//! The program's form:
//!
//! - Every value of a function (block arguments and op results) gets a *slot*, numbered from 0
//!   in the function; the function's parameters are its first slots. A slot holds a [`Scalar`];
//!   a buffer (memref) value holds a *buffer handle* as `Scalar::Int`: the position of the
//!   buffer among the kernel's buffer parameters, or, for `kernel.local_alloc`, the number of
//!   buffer parameters plus the position of the allocation among the program's local allocations.
//!   So `arith.select` of buffers, buffers carried by loops and buffers passed to helpers need no
//!   special case. A loop without an induction variable gets a slot of its own to count in.
//! - Ops become [`Inst`]s with slot operands; each nested region's block becomes an instruction
//!   list of its own ([`Program::blocks`]), named by its position.
//! - Op names, attributes and symbols are all resolved here: the interpreter never looks up a
//!   name.

use crate::dispatch_arguments::KernelSignature;
use crate::error::RuntimeError;
use crate::eval::ScalarOp;
use crate::slot_code::region_hop::{self, compile_hop, single_block};
use crate::slot_code::{ScalarInst, SlotMap, Symbols, ValueKind};
use crate::value::ElementType;
use hat_dialects::buffer::{DimOp, LoadOp, StoreOp};
use hat_dialects::kernel::{AtomicRmwOp, BarrierOp, LocalAllocOp, WorkItemQuery};
use hat_ir::interfaces::{
    execution_space, undecided_hop, CallOpInterface, CallableOpInterface, CountedLoop, ExecutionSpace,
    LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint,
};
use hat_ir::types::DYNAMIC;
use hat_ir::{Block, Context, Ident, Location, Op, OpTraits, Region, Type, TypeKind, Value};
use rustc_hash::FxHashMap;
use std::ops::Range;

pub(crate) use crate::slot_code::Slot;

/// The default workgroup size, when a kernel has no `workgroup_size`.
pub const DEFAULT_WORKGROUP_SIZE: [u64; 3] = [64, 1, 1];

/// Stack kept free before a nested block is compiled, and the size of each new stack segment
/// (see [`Compiler::fill`]).
const RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// The deepest nesting of helper calls a work item may reach (helpers may recurse; this keeps a
/// runaway recursion from exhausting memory).
pub(crate) const MAX_CALL_DEPTH: usize = 1024;

/// A compiled kernel.
#[derive(Debug)]
pub(crate) struct Program {
    /// The kernel's symbol name.
    pub name: String,
    /// Work items per workgroup (x, y, z).
    pub workgroup: [u64; 3],
    /// The kernel's parameters, in order (the executor checks dispatches against them).
    pub signature: KernelSignature,
    /// Functions: 0 is the kernel, the others the device functions it calls.
    pub functions: Vec<Function>,
    /// Instruction lists, named by position.
    pub blocks: Vec<Box<[Inst]>>,
    /// The workgroup-local allocations (`kernel.local_alloc`), one per op.
    pub locals: Vec<LocalBuffer>,
    /// Whether any function reaches a `kernel.barrier`.
    pub has_barrier: bool,
}

/// A workgroup-local buffer.
#[derive(Debug, Clone)]
pub(crate) struct LocalBuffer {
    pub element: ElementType,
    pub shape: Vec<usize>,
}

/// A compiled kernel or device function.
#[derive(Debug)]
pub(crate) struct Function {
    /// Its symbol name.
    #[allow(dead_code)]
    pub name: String,
    /// Slots of a frame.
    pub slots: u32,
    /// Number of parameters (slots `0..params`).
    pub params: u32,
    /// Its body.
    pub body: u32,
}

/// An instruction of the interpreter.
#[derive(Debug)]
pub(crate) enum Inst {
    /// A constant, `arith.select` or another scalar op (shared with the host executor).
    Scalar { inst: ScalarInst, location: Location },
    /// A work-item id or size.
    Id { dst: Slot, query: WorkItemQuery, dimension: u8 },
    /// `buffer.load`.
    Load { dst: Slot, buffer: Slot, indices: Box<[Slot]>, location: Location },
    /// `buffer.store`.
    Store { value: Slot, buffer: Slot, indices: Box<[Slot]>, location: Location },
    /// `buffer.dim`.
    Dim { dst: Slot, buffer: Slot, dimension: u32, location: Location },
    /// `kernel.atomic_rmw`; `op` is `None` for `exchange`.
    Atomic { dst: Slot, op: Option<ScalarOp>, buffer: Slot, indices: Box<[Slot]>, value: Slot, location: Location },
    /// `kernel.local_alloc`: `dst` = the handle.
    LocalAlloc { dst: Slot, handle: u32 },
    /// `kernel.barrier`.
    Barrier { location: Location },
    /// A call of a device function.
    Call(Box<CallInst>),
    /// The end of a function body: its results.
    Return { values: Box<[Slot]> },
    /// A counted loop.
    Loop(Box<LoopInst>),
    /// The end of a counted loop's body: the values carried to the next iteration.
    Next { values: Box<[Slot]> },
    /// A region-branch op: the hop into it.
    Branch(Box<Hop>),
    /// The end of a region of a region-branch op: the hop out of the region.
    Exit(Box<Hop>),
}

/// A call of a device function.
#[derive(Debug)]
pub(crate) struct CallInst {
    pub function: u32,
    pub arguments: Box<[Slot]>,
    pub results: Box<[Slot]>,
    /// The call op's name, for errors.
    pub name: Box<str>,
    pub location: Location,
}

/// A counted loop (an op with [`LoopLikeOpInterface`]).
#[derive(Debug)]
pub(crate) struct LoopInst {
    pub lower: Slot,
    pub upper: Slot,
    pub step: Slot,
    /// The induction variable's type.
    pub ty: ElementType,
    pub inits: Box<[Slot]>,
    pub induction: Slot,
    pub iter_args: Box<[Slot]>,
    pub results: Box<[Slot]>,
    pub body: u32,
    /// The op's name, for errors.
    pub name: Box<str>,
    pub location: Location,
}

/// How control leaves a point of a region-branch op (never [`Hop::Ask`]: the CPU backend's
/// programs outlive the context, so every hop is decided when compiled).
pub(crate) type Hop = region_hop::Hop<Target>;

/// One hop of a region-branch op: where to, and the values that go along.
pub(crate) type Edge = region_hop::Edge<Target>;

/// The target of an [`Edge`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Past the op: it is done.
    Parent,
    /// Into a region: its instruction list.
    Region(u32),
}

/// The slots of one function being compiled.
type Frame = SlotMap;

struct Compiler<'c> {
    ctx: &'c Context,
    kernel_name: String,
    program: Program,
    /// Functions compiled or queued, by op.
    functions: FxHashMap<Op, u32>,
    queue: Vec<(Op, Region, u32)>,
    /// The symbols calls name.
    symbols: Symbols,
}

/// How a block being compiled ends: what its terminator becomes.
#[derive(Copy, Clone)]
enum End<'a> {
    /// A function body: a return of the terminator's operands.
    Return { function: Op },
    /// A counted loop's body: the next iteration, carrying the terminator's operands
    /// `yielded.0..yielded.1` ([`CountedLoop::yielded`], checked).
    Loop { yielded: (usize, usize) },
    /// Region `region` of a region-branch op whose regions compile to `targets`.
    Branch { op: Op, region: usize, branches: &'static dyn RegionBranchOpInterface, targets: &'a [Option<u32>] },
}

/// Compiles `kernel` (a callable with a body and the `DEVICE_CODE` trait) with the device
/// functions it calls.
pub(crate) fn compile(ctx: &Context, kernel: Op) -> Result<Program, RuntimeError> {
    let location = ctx.location(kernel);
    let op_name = ctx.name_str(kernel);
    let callable = ctx.interface::<dyn CallableOpInterface>(kernel);
    let body = callable.and_then(|c| c.body(ctx, kernel));
    let (Some(callable), Some(body), Some(ExecutionSpace::Device)) = (callable, body, execution_space(ctx, kernel))
    else {
        let message =
            "only a 'kernel.func' (or another callable with a body and the DEVICE_CODE trait) can be compiled as a kernel";
        return Err(unsupported(op_name, message, location));
    };
    let name = symbol_name(ctx, kernel).unwrap_or("<unnamed>").to_string();
    if let Some((_, results)) = callable.signature(ctx, kernel).filter(|(_, results)| !results.is_empty()) {
        let message =
            format!("kernel '{name}': an entry kernel returns nothing, but it has {} result(s)", results.len());
        return Err(unsupported(op_name, &message, location));
    }
    let workgroup = match ctx.attribute(kernel, "workgroup_size") {
        None => DEFAULT_WORKGROUP_SIZE,
        Some(_) => match hat_dialects::kernel::workgroup_size(ctx, kernel) {
            Some(sizes) if sizes.iter().all(|&s| s > 0) => sizes.map(|s| s as u64),
            _ => {
                return Err(unsupported(
                    op_name,
                    &format!("kernel '{name}': 'workgroup_size' must hold three positive sizes"),
                    location,
                ))
            }
        },
    };
    let mut compiler = Compiler {
        ctx,
        kernel_name: name.clone(),
        program: Program {
            name,
            workgroup,
            signature: KernelSignature::of(ctx, kernel).map_err(|message| unsupported(op_name, &message, location))?,
            functions: Vec::new(),
            blocks: Vec::new(),
            locals: Vec::new(),
            has_barrier: false,
        },
        functions: FxHashMap::default(),
        queue: Vec::new(),
        symbols: Symbols::default(),
    };
    compiler.enqueue(kernel, body);
    while let Some((op, body, index)) = compiler.queue.pop() {
        let function = compiler.function(op, body)?;
        compiler.program.functions[index as usize] = function;
    }
    Ok(compiler.program)
}

fn symbol_name(ctx: &Context, op: Op) -> Option<&str> {
    ctx.attribute_kind(ctx.attribute(op, "sym_name")?).as_str()
}

fn unsupported(op: &str, message: &str, location: Location) -> RuntimeError {
    RuntimeError::Unsupported { op: op.to_string(), message: message.to_string(), location }
}

impl<'c> Compiler<'c> {
    fn error(&self, op: Op, message: impl std::fmt::Display) -> RuntimeError {
        let name = self.ctx.name_str(op);
        unsupported(name, &format!("{message} (in kernel '{}')", self.kernel_name), self.ctx.location(op))
    }

    fn element(&self, op: Op, ty: Type) -> Result<ElementType, RuntimeError> {
        ValueKind::scalar(self.ctx, ty).map_err(|message| self.error(op, message))
    }

    /// The element type and shape of a memref type.
    fn memref(&self, op: Op, ty: Type) -> Result<(ElementType, Vec<i64>), RuntimeError> {
        match self.ctx.type_kind(ty) {
            TypeKind::MemRef { shape, element } => {
                let element = ElementType::of(self.ctx, *element).ok_or_else(|| {
                    let name = hat_ir::printer::type_to_string(self.ctx, ty);
                    self.error(op, format!("buffers of type '{name}' are not supported"))
                })?;
                Ok((element, shape.to_vec()))
            }
            _ => Err(self.error(op, "expected a memref")),
        }
    }

    /// The function index of `op` (whose body is `body`), queuing it for compilation the first
    /// time.
    fn enqueue(&mut self, op: Op, body: Region) -> u32 {
        if let Some(&index) = self.functions.get(&op) {
            return index;
        }
        let index = self.program.functions.len() as u32;
        self.program.functions.push(Function { name: String::new(), slots: 0, params: 0, body: 0 });
        self.functions.insert(op, index);
        self.queue.push((op, body, index));
        index
    }

    fn function(&mut self, op: Op, region: Region) -> Result<Function, RuntimeError> {
        let name = symbol_name(self.ctx, op).unwrap_or("<unnamed>").to_string();
        let mut frame = Frame::default();
        let block = self.single_block(op, region)?.ok_or_else(|| self.error(op, "the function has no body"))?;
        let mut params = 0;
        for &argument in self.ctx.block_arguments(block) {
            frame.define(self.ctx, argument).map_err(|message| self.error(op, message))?;
            params += 1;
        }
        let body = self.block(&mut frame, block, End::Return { function: op })?;
        Ok(Function { name, slots: frame.count(), params, body })
    }

    /// The one block of a region (`None` when empty); regions of several blocks are refused.
    fn single_block(&self, op: Op, region: Region) -> Result<Option<Block>, RuntimeError> {
        single_block(self.ctx, region).map_err(|message| self.error(op, message))
    }

    fn slot(&self, frame: &Frame, op: Op, value: Value) -> Result<Slot, RuntimeError> {
        frame.get(value).map_err(|message| self.error(op, message))
    }

    fn slots(&self, frame: &Frame, op: Op, values: &[Value]) -> Result<Box<[Slot]>, RuntimeError> {
        frame.get_all(values).map_err(|message| self.error(op, message))
    }

    /// The slots of `op`'s operands at `range` (an interface's answer, checked).
    fn operand_slots(&self, frame: &Frame, op: Op, range: Range<usize>) -> Result<Box<[Slot]>, RuntimeError> {
        frame.operands(self.ctx, op, range).map_err(|message| self.error(op, message))
    }

    /// Refuses an op with fewer than `count` operands (which a typed view would index past).
    fn expect_operands(&self, op: Op, count: usize, what: &str) -> Result<(), RuntimeError> {
        if self.ctx.operands(op).len() < count {
            return Err(self.error(op, format!("takes {what}")));
        }
        Ok(())
    }

    fn define_results(&self, frame: &mut Frame, op: Op) -> Result<Box<[Slot]>, RuntimeError> {
        frame.define_results(self.ctx, op).map_err(|message| self.error(op, message))
    }

    /// The slot of `op`'s one result.
    fn define_result(&self, frame: &mut Frame, op: Op) -> Result<Slot, RuntimeError> {
        frame.define_result(self.ctx, op).map_err(|message| self.error(op, message))
    }

    fn define_arguments(&self, frame: &mut Frame, op: Op, block: Block) -> Result<Box<[Slot]>, RuntimeError> {
        frame.define_arguments(self.ctx, block).map_err(|message| self.error(op, message))
    }

    /// A new, empty instruction list, to be filled by [`Self::fill`].
    fn reserve(&mut self) -> u32 {
        let index = self.program.blocks.len() as u32;
        self.program.blocks.push(Box::new([]));
        index
    }

    /// Compiles a block into a new instruction list.
    fn block(&mut self, frame: &mut Frame, block: Block, end: End<'_>) -> Result<u32, RuntimeError> {
        let index = self.reserve();
        self.fill(frame, index, block, end)?;
        Ok(index)
    }

    /// Compiles a block into the reserved instruction list `index`; its terminator (see the
    /// module docs) becomes what `end` says. Regions nest as deep as the parser allows, each
    /// level a few frames of this recursion: the stack grows as needed.
    fn fill(&mut self, frame: &mut Frame, index: u32, block: Block, end: End<'_>) -> Result<(), RuntimeError> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.fill_ops(frame, index, block, end))
    }

    fn fill_ops(&mut self, frame: &mut Frame, index: u32, block: Block, end: End<'_>) -> Result<(), RuntimeError> {
        let ctx = self.ctx;
        let terminator = ctx.last_op(block).filter(|&op| ctx.has_traits(op, OpTraits::TERMINATOR));
        let mut insts = Vec::new();
        for op in ctx.block_ops(block) {
            if Some(op) == terminator {
                break;
            }
            insts.push(self.op(frame, op)?);
        }
        insts.push(self.terminator(frame, terminator, end)?);
        self.program.blocks[index as usize] = insts.into();
        Ok(())
    }

    /// What a block's terminator (`None`: the block has none) becomes.
    fn terminator(&mut self, frame: &Frame, terminator: Option<Op>, end: End<'_>) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        if let Some(op) = terminator.filter(|&op| !ctx.successors(op).is_empty()) {
            return Err(self.error(op, "branches between blocks are not supported"));
        }
        match end {
            End::Return { function } => {
                let Some(op) = terminator else { return Ok(Inst::Return { values: Box::new([]) }) };
                if !ctx.has_traits(op, OpTraits::RETURN_LIKE) {
                    let message = format!("ends the body of '{}', but is not return-like", ctx.name_str(function));
                    return Err(self.error(op, message));
                }
                Ok(Inst::Return { values: self.slots(frame, op, ctx.operands(op))? })
            }
            End::Loop { yielded: (start, end) } => {
                let values = match terminator {
                    Some(op) => self.operand_slots(frame, op, start..end)?,
                    None => Box::new([]),
                };
                Ok(Inst::Next { values })
            }
            End::Branch { op, region, branches, targets } => {
                let hop = self.hop(frame, op, branches, RegionPoint::Region(region), terminator, targets)?;
                Ok(Inst::Exit(Box::new(hop)))
            }
        }
    }

    fn op(&mut self, frame: &mut Frame, op: Op) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        let location = ctx.location(op);
        if let Some(inst) = ScalarInst::compile(ctx, op, frame).map_err(|message| self.error(op, message))? {
            return Ok(Inst::Scalar { inst, location });
        }
        if let Some(query) = WorkItemQuery::of(ctx, op) {
            let dimension = WorkItemQuery::dimension(ctx, op)
                .ok_or_else(|| self.error(op, "requires an integer attribute 'dimension' of 0, 1 or 2"))?;
            let dst = self.define_result(frame, op)?;
            return Ok(Inst::Id { dst, query, dimension });
        }
        if let Some(load) = LoadOp::wrap(ctx, op) {
            self.expect_operands(op, 1, "a buffer")?;
            let buffer = self.slot(frame, op, load.buffer(ctx))?;
            let indices = self.slots(frame, op, load.indices(ctx))?;
            let dst = self.define_result(frame, op)?;
            return Ok(Inst::Load { dst, buffer, indices, location });
        }
        if let Some(store) = StoreOp::wrap(ctx, op) {
            self.expect_operands(op, 2, "a value and a buffer")?;
            let value = self.slot(frame, op, store.value(ctx))?;
            let buffer = self.slot(frame, op, store.buffer(ctx))?;
            let indices = self.slots(frame, op, store.indices(ctx))?;
            return Ok(Inst::Store { value, buffer, indices, location });
        }
        if let Some(dim) = DimOp::wrap(ctx, op) {
            self.expect_operands(op, 1, "a buffer")?;
            let buffer = self.slot(frame, op, dim.buffer(ctx))?;
            let dimension =
                dim.dimension(ctx).ok_or_else(|| self.error(op, "requires an integer attribute 'dimension'"))?;
            let dst = self.define_result(frame, op)?;
            let dimension = dimension.clamp(0, u32::MAX as i64) as u32;
            return Ok(Inst::Dim { dst, buffer, dimension, location });
        }
        if LocalAllocOp::wrap(ctx, op).is_some() {
            let dst = self.define_result(frame, op)?;
            let (element, shape) = self.memref(op, ctx.value_type(ctx.result(op, 0)))?;
            if shape.iter().any(|&d| d == DYNAMIC || d < 0) {
                return Err(self.error(op, "workgroup-local memory needs a static shape"));
            }
            let handle = self.program.signature.buffer_count() + self.program.locals.len() as u32;
            self.program.locals.push(LocalBuffer { element, shape: shape.iter().map(|&d| d as usize).collect() });
            return Ok(Inst::LocalAlloc { dst, handle });
        }
        if let Some(atomic) = AtomicRmwOp::wrap(ctx, op) {
            return self.atomic(frame, atomic, location);
        }
        if BarrierOp::wrap(ctx, op).is_some() {
            self.program.has_barrier = true;
            return Ok(Inst::Barrier { location });
        }
        if let Some(calling) = ctx.interface::<dyn CallOpInterface>(op) {
            return self.call(frame, op, calling, location);
        }
        if let Some(looping) = ctx.interface::<dyn LoopLikeOpInterface>(op) {
            return self.counted_loop(frame, op, looping, location);
        }
        if let Some(branches) = ctx.interface::<dyn RegionBranchOpInterface>(op) {
            return self.branch(frame, op, branches);
        }
        Err(self.error(op, "this op cannot run in a kernel on the CPU backend"))
    }

    fn atomic(&mut self, frame: &mut Frame, atomic: AtomicRmwOp, location: Location) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        let op = atomic.op();
        self.expect_operands(op, 2, "a buffer and a value")?;
        let (element, _) = self.memref(op, ctx.value_type(atomic.buffer(ctx)))?;
        let kind = ctx.attribute(op, "kind").and_then(|a| ctx.attribute_kind(a).as_str()).unwrap_or("");
        let float = element.is_float();
        let scalar = match (kind, float) {
            ("add", false) => Some(ScalarOp::AddI),
            ("add", true) => Some(ScalarOp::AddF),
            ("min", false) => Some(ScalarOp::MinSI),
            ("min", true) => Some(ScalarOp::MinimumF),
            ("max", false) => Some(ScalarOp::MaxSI),
            ("max", true) => Some(ScalarOp::MaximumF),
            ("and", false) => Some(ScalarOp::AndI),
            ("or", false) => Some(ScalarOp::OrI),
            ("xor", false) => Some(ScalarOp::XorI),
            ("exchange", _) => None,
            _ => return Err(self.error(op, format!("atomic kind '{kind}' is not supported on this element type"))),
        };
        let buffer = self.slot(frame, op, atomic.buffer(ctx))?;
        let indices = self.slots(frame, op, atomic.indices(ctx))?;
        let value = self.slot(frame, op, atomic.value(ctx))?;
        let dst = self.define_result(frame, op)?;
        Ok(Inst::Atomic { dst, op: scalar, buffer, indices, value, location })
    }

    /// A call through [`CallOpInterface`].
    fn call(
        &mut self,
        frame: &mut Frame,
        op: Op,
        calling: &'static dyn CallOpInterface,
        location: Location,
    ) -> Result<Inst, RuntimeError> {
        let (callee, body) = self.callee(op, calling)?;
        let function = self.enqueue(callee, body);
        let arguments = self.operand_slots(frame, op, calling.arguments(self.ctx, op))?;
        let results = self.define_results(frame, op)?;
        let name = self.ctx.name_str(op).into();
        Ok(Inst::Call(Box::new(CallInst { function, arguments, results, name, location })))
    }

    /// The device function a call names, and its body.
    fn callee(&mut self, op: Op, calling: &'static dyn CallOpInterface) -> Result<(Op, Region), RuntimeError> {
        let ctx = self.ctx;
        let Some(name) = calling.callee(ctx, op) else {
            return Err(self.error(op, "requires a flat symbol reference to its callee"));
        };
        let Some(target) = self.lookup(op, name) else {
            let name = ctx.ident_str(name).to_string();
            return Err(RuntimeError::MissingSymbol { what: "kernel helper", name, location: ctx.location(op) });
        };
        let body = ctx.interface::<dyn CallableOpInterface>(target).and_then(|c| c.body(ctx, target));
        match body {
            Some(body) if execution_space(ctx, target) == Some(ExecutionSpace::Device) => Ok((target, body)),
            _ => {
                let message = format!(
                    "'@{}' is a '{}', not device code with a body (a callable with the DEVICE_CODE trait, such as a 'kernel.helper')",
                    ctx.ident_str(name),
                    ctx.name_str(target)
                );
                Err(self.error(op, message))
            }
        }
    }

    /// The op defining `name` in the symbol tables enclosing `from`, innermost first.
    fn lookup(&mut self, from: Op, name: Ident) -> Option<Op> {
        self.symbols.lookup(self.ctx, from, name)
    }

    /// A counted loop through [`LoopLikeOpInterface`].
    fn counted_loop(
        &mut self,
        frame: &mut Frame,
        op: Op,
        looping: &'static dyn LoopLikeOpInterface,
        location: Location,
    ) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        let parts = CountedLoop::of(ctx, op, looping).map_err(|message| self.error(op, message))?;
        let ty = self.element(op, ctx.value_type(parts.induction.unwrap_or(parts.lower)))?;
        let (lower, upper, step) =
            (self.slot(frame, op, parts.lower)?, self.slot(frame, op, parts.upper)?, self.slot(frame, op, parts.step)?);
        let inits = self.slots(frame, op, &parts.inits)?;
        self.define_arguments(frame, op, parts.body)?;
        let iter_args = self.slots(frame, op, &parts.iter_args)?;
        let induction = match parts.induction {
            Some(value) => self.slot(frame, op, value)?,
            None => frame.fresh(),
        };
        let results = self.define_results(frame, op)?;
        let yielded = (parts.yielded.start, parts.yielded.end);
        let body = self.block(frame, parts.body, End::Loop { yielded })?;
        let name = ctx.name_str(op).into();
        Ok(Inst::Loop(Box::new(LoopInst {
            lower,
            upper,
            step,
            ty,
            inits,
            induction,
            iter_args,
            results,
            body,
            name,
            location,
        })))
    }

    /// A region-branch op through [`RegionBranchOpInterface`] (see the module docs).
    fn branch(
        &mut self,
        frame: &mut Frame,
        op: Op,
        branches: &'static dyn RegionBranchOpInterface,
    ) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        // Every region's arguments and the results get their slots first: any hop may bind them.
        let mut blocks = Vec::with_capacity(ctx.regions(op).len());
        let mut targets = Vec::with_capacity(ctx.regions(op).len());
        for &region in ctx.regions(op) {
            let block = self.single_block(op, region)?;
            if let Some(block) = block {
                self.define_arguments(frame, op, block)?;
            }
            blocks.push(block);
            targets.push(block.map(|_| self.reserve()));
        }
        self.define_results(frame, op)?;
        let entry = self.hop(frame, op, branches, RegionPoint::Parent, None, &targets)?;
        for (region, (block, target)) in blocks.into_iter().zip(&targets).enumerate() {
            if let (Some(block), Some(index)) = (block, *target) {
                self.fill(frame, index, block, End::Branch { op, region, branches, targets: &targets })?;
            }
        }
        Ok(Inst::Branch(Box::new(entry)))
    }

    /// The hop from `from` of a region-branch op (see the module docs). `terminator` is the
    /// terminator of region `from`, if it has one.
    fn hop(
        &self,
        frame: &Frame,
        op: Op,
        branches: &'static dyn RegionBranchOpInterface,
        from: RegionPoint,
        terminator: Option<Op>,
        targets: &[Option<u32>],
    ) -> Result<Hop, RuntimeError> {
        let target = |to| match to {
            RegionPoint::Parent => Ok(Target::Parent),
            // `hop_values` found the region's block, which has an instruction list.
            RegionPoint::Region(index) => match targets.get(index) {
                Some(&Some(target)) => Ok(Target::Region(target)),
                _ => Err(format!("control goes into region #{index}, which has no code")),
            },
        };
        let hop = compile_hop(self.ctx, frame, op, branches, from, terminator, target)
            .map_err(|message| self.error(op, message))?;
        if let Hop::Ask { edges, .. } = &hop {
            let successors: Vec<RegionPoint> = edges.iter().map(|(to, _)| *to).collect();
            let message = undecided_hop(from, &successors);
            return Err(self.error(op, format!("{message}; the CPU backend runs choices of two on an 'i1'")));
        }
        Ok(hop)
    }
}
