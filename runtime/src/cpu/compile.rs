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
//! - **Calls.** An op with [`CallOpInterface`](hat_ir::interfaces::CallOpInterface) calls the op
//!   its callee symbol names in the enclosing symbol tables (innermost first; each table is read
//!   once: `slot_code::Symbols`; found by the shared compiler, `slot_code::compiler::Callee`).
//!   The callee must be a callable with a body and the `DEVICE_CODE` trait (a `kernel.helper`,
//!   or a vendor's device function); the call's `arguments()` bind to the body's parameters.
//!   Every function is compiled once, so recursion compiles; the interpreter bounds the depth
//!   ([`MAX_CALL_DEPTH`]).
//! - **Counted loops, region-branch ops, terminators, scalars** are compiled by the runtime's one
//!   compiler ([`crate::slot_code::compiler`], shared with the host executor): a counted loop
//!   becomes a [`LoopInst`] whose body ends in [`Inst::Next`]; a region-branch op becomes an
//!   [`Inst::Branch`] (the hop into the op) and, ending each region, an [`Inst::Exit`] (the hop
//!   out of it), each hop decided when compiled ([`crate::slot_code::region_hop`]): the
//!   interpreter cannot ask the interface (a program outlives the context), so a hop that no
//!   single `i1` decides is a compile error naming the op. A function body ends in
//!   [`Inst::Return`].
//! - **The device's instruction set** (this file, [`InstructionSet`]): typed views — `buffer`'s
//!   `LoadOp`, `StoreOp` and `DimOp`; `kernel`'s `LocalAllocOp`, `AtomicRmwOp` and `BarrierOp`,
//!   and [`WorkItemQuery`] for the work-item ids and sizes.
//!
//! The program's form:
//!
//! - Every value of a function (block arguments and op results) gets a *slot*, numbered from 0
//!   in the function; the function's parameters are its first slots. A slot holds a
//!   [`Scalar`](crate::value::Scalar);
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
use crate::slot_code::compiler::{self, Callee, End, InstructionSet, LoopSlots};
use crate::slot_code::region_hop::{self, single_block};
use crate::slot_code::{ScalarInst, SlotMap, Symbols};
use crate::value::ElementType;
use hat_dialects::buffer::{DimOp, LoadOp, StoreOp};
use hat_dialects::kernel::{AtomicRmwOp, BarrierOp, LocalAllocOp, WorkItemQuery};
use hat_ir::interfaces::{execution_space, CallableOpInterface, ExecutionSpace, RegionBranchOpInterface};
use hat_ir::types::DYNAMIC;
use hat_ir::{Context, Location, Op, Region, Type, TypeKind, Value};
use rustc_hash::FxHashMap;

pub(crate) use crate::slot_code::Slot;

/// The default workgroup size, when a kernel has no `workgroup_size`.
pub const DEFAULT_WORKGROUP_SIZE: [u64; 3] = [64, 1, 1];

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

/// A counted loop (an op with
/// [`LoopLikeOpInterface`](hat_ir::interfaces::LoopLikeOpInterface)).
#[derive(Debug)]
pub(crate) struct LoopInst {
    pub slots: LoopSlots,
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

/// The target of an [`Edge`]: past the op, or into a region's instruction list.
pub(crate) type Target = compiler::Target<u32>;

struct Compiler<'c> {
    ctx: &'c Context,
    kernel_name: String,
    program: Program,
    /// Functions compiled or queued, by op.
    functions: FxHashMap<Op, u32>,
    queue: Vec<(Op, Region, u32)>,
    /// The symbols calls name.
    symbols: Symbols,
    /// The slots of the function being compiled.
    frame: SlotMap,
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
        frame: SlotMap::default(),
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
        self.frame = SlotMap::default();
        let block = single_block(self.ctx, region)
            .map_err(|message| self.error(op, message))?
            .ok_or_else(|| self.error(op, "the function has no body"))?;
        let (params, body) = compiler::function_body(self, self.ctx, op, block)?;
        Ok(Function { name, slots: self.frame.count(), params, body })
    }

    fn slot(&self, op: Op, value: Value) -> Result<Slot, RuntimeError> {
        self.frame.get(value).map_err(|message| self.error(op, message))
    }

    fn value_slots(&self, op: Op, values: &[Value]) -> Result<Box<[Slot]>, RuntimeError> {
        self.frame.get_all(values).map_err(|message| self.error(op, message))
    }

    /// Refuses an op with fewer than `count` operands (which a typed view would index past).
    fn expect_operands(&self, op: Op, count: usize, what: &str) -> Result<(), RuntimeError> {
        if self.ctx.operands(op).len() < count {
            return Err(self.error(op, format!("takes {what}")));
        }
        Ok(())
    }

    fn define_results(&mut self, op: Op) -> Result<Box<[Slot]>, RuntimeError> {
        self.frame.define_results(self.ctx, op).map_err(|message| self.error(op, message))
    }

    /// The slot of `op`'s one result.
    fn define_result(&mut self, op: Op) -> Result<Slot, RuntimeError> {
        self.frame.define_result(self.ctx, op).map_err(|message| self.error(op, message))
    }

    /// Fills the reserved instruction list `label` with `insts` and the instruction that ends it.
    fn fill(&mut self, label: u32, mut insts: Vec<Inst>, end: Inst) -> u32 {
        insts.push(end);
        self.program.blocks[label as usize] = insts.into();
        label
    }

    /// The device's own ops: work-item queries, memory, workgroup memory, atomics, barriers.
    fn own_op(&mut self, op: Op) -> Result<Option<Inst>, RuntimeError> {
        let ctx = self.ctx;
        let location = ctx.location(op);
        if let Some(query) = WorkItemQuery::of(ctx, op) {
            let dimension = WorkItemQuery::dimension(ctx, op)
                .ok_or_else(|| self.error(op, "requires an integer attribute 'dimension' of 0, 1 or 2"))?;
            let dst = self.define_result(op)?;
            return Ok(Some(Inst::Id { dst, query, dimension }));
        }
        if let Some(load) = LoadOp::wrap(ctx, op) {
            self.expect_operands(op, 1, "a buffer")?;
            let buffer = self.slot(op, load.buffer(ctx))?;
            let indices = self.value_slots(op, load.indices(ctx))?;
            let dst = self.define_result(op)?;
            return Ok(Some(Inst::Load { dst, buffer, indices, location }));
        }
        if let Some(store) = StoreOp::wrap(ctx, op) {
            self.expect_operands(op, 2, "a value and a buffer")?;
            let value = self.slot(op, store.value(ctx))?;
            let buffer = self.slot(op, store.buffer(ctx))?;
            let indices = self.value_slots(op, store.indices(ctx))?;
            return Ok(Some(Inst::Store { value, buffer, indices, location }));
        }
        if let Some(dim) = DimOp::wrap(ctx, op) {
            self.expect_operands(op, 1, "a buffer")?;
            let buffer = self.slot(op, dim.buffer(ctx))?;
            let dimension =
                dim.dimension(ctx).ok_or_else(|| self.error(op, "requires an integer attribute 'dimension'"))?;
            let dst = self.define_result(op)?;
            let dimension = dimension.clamp(0, u32::MAX as i64) as u32;
            return Ok(Some(Inst::Dim { dst, buffer, dimension, location }));
        }
        if LocalAllocOp::wrap(ctx, op).is_some() {
            let dst = self.define_result(op)?;
            let (element, shape) = self.memref(op, ctx.value_type(ctx.result(op, 0)))?;
            if shape.iter().any(|&d| d == DYNAMIC || d < 0) {
                return Err(self.error(op, "workgroup-local memory needs a static shape"));
            }
            let handle = self.program.signature.buffer_count() + self.program.locals.len() as u32;
            self.program.locals.push(LocalBuffer { element, shape: shape.iter().map(|&d| d as usize).collect() });
            return Ok(Some(Inst::LocalAlloc { dst, handle }));
        }
        if let Some(atomic) = AtomicRmwOp::wrap(ctx, op) {
            return self.atomic(atomic, location).map(Some);
        }
        if BarrierOp::wrap(ctx, op).is_some() {
            self.program.has_barrier = true;
            return Ok(Some(Inst::Barrier { location }));
        }
        Ok(None)
    }

    fn atomic(&mut self, atomic: AtomicRmwOp, location: Location) -> Result<Inst, RuntimeError> {
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
        let buffer = self.slot(op, atomic.buffer(ctx))?;
        let indices = self.value_slots(op, atomic.indices(ctx))?;
        let value = self.slot(op, atomic.value(ctx))?;
        let dst = self.define_result(op)?;
        Ok(Inst::Atomic { dst, op: scalar, buffer, indices, value, location })
    }

    /// A call through [`CallOpInterface`].
    fn call_op(&mut self, op: Op, callee: Callee<'_>) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        let body = match callee.body {
            Some(body) if execution_space(ctx, callee.op) == Some(ExecutionSpace::Device) => body,
            _ => {
                let message = format!(
                    "'@{}' is a '{}', not device code with a body (a callable with the DEVICE_CODE trait, such as a 'kernel.helper')",
                    callee.name,
                    ctx.name_str(callee.op)
                );
                return Err(self.error(op, message));
            }
        };
        let function = self.enqueue(callee.op, body);
        let arguments = self.value_slots(op, callee.arguments)?;
        let results = self.define_results(op)?;
        let (name, location) = (ctx.name_str(op).into(), ctx.location(op));
        Ok(Inst::Call(Box::new(CallInst { function, arguments, results, name, location })))
    }
}

impl InstructionSet for Compiler<'_> {
    type Inst = Inst;
    /// A block's index in [`Program::blocks`], reserved before it is compiled.
    type Label = u32;
    type Block = u32;
    type Region = u32;
    const ASK_REFUSAL: Option<&'static str> = Some("the CPU backend runs choices of two on an 'i1'");
    const CALLEE: &'static str = "kernel helper";

    fn slots(&mut self) -> &mut SlotMap {
        &mut self.frame
    }

    fn symbols(&mut self) -> &mut Symbols {
        &mut self.symbols
    }

    fn error(&self, _: &Context, op: Op, message: String) -> RuntimeError {
        Compiler::error(self, op, message)
    }

    fn unknown(&self, _: &Context, op: Op) -> RuntimeError {
        Compiler::error(self, op, "this op cannot run in a kernel on the CPU backend")
    }

    fn own(&mut self, _: &Context, op: Op) -> Result<Option<Inst>, RuntimeError> {
        self.own_op(op)
    }

    fn scalar(&mut self, ctx: &Context, op: Op, inst: ScalarInst) -> Inst {
        Inst::Scalar { inst, location: ctx.location(op) }
    }

    fn call(&mut self, _: &Context, op: Op, callee: Callee<'_>) -> Result<Inst, RuntimeError> {
        self.call_op(op, callee)
    }

    fn label(&mut self, _: usize) -> u32 {
        let index = self.program.blocks.len() as u32;
        self.program.blocks.push(Box::new([]));
        index
    }

    fn finish_block(&mut self, label: u32, insts: Vec<Inst>, end: End) -> u32 {
        let end = match end {
            End::Return(values) => Inst::Return { values },
            End::Next(values) => Inst::Next { values },
        };
        self.fill(label, insts, end)
    }

    fn finish_region(&mut self, label: u32, insts: Vec<Inst>, exit: Hop) -> u32 {
        self.fill(label, insts, Inst::Exit(Box::new(exit)))
    }

    fn counted_loop(&mut self, ctx: &Context, op: Op, slots: LoopSlots, body: u32) -> Inst {
        Inst::Loop(Box::new(LoopInst { slots, body, name: ctx.name_str(op).into(), location: ctx.location(op) }))
    }

    fn branch(
        &mut self,
        _: &Context,
        _: Op,
        _: &'static dyn RegionBranchOpInterface,
        entry: Hop,
        _: Vec<(usize, u32)>,
    ) -> Inst {
        // The regions' instruction lists are in the program, each ending in its exit hop.
        Inst::Branch(Box::new(entry))
    }
}
