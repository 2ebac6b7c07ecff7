//! Compiles a `kernel.func` and the `kernel.helper`s it calls (transitively) into a [`Program`]:
//! an owned, interpreter-friendly form that does not borrow the [`Context`].
//!
//! - Every value of a function (block arguments and op results) gets a *slot*, numbered from 0
//!   in the function; the function's parameters are its first slots. A slot holds a [`Scalar`];
//!   a buffer (memref) value holds a *buffer handle* as `Scalar::Int`: the position of the
//!   buffer among the kernel's buffer parameters, or, for `kernel.local_alloc`, the number of
//!   buffer parameters plus the position of the allocation among the program's local allocations.
//!   So `arith.select` of buffers, buffers carried by loops and buffers passed to helpers need no
//!   special case.
//! - Ops become [`Inst`]s with slot operands; each nested region's block becomes an instruction
//!   list of its own ([`Program::blocks`]), named by its position.
//! - Op names, attributes and symbols are all resolved here: the interpreter never looks up a
//!   name.

use crate::error::RuntimeError;
use crate::eval::{self, ScalarOp};
use crate::value::{ElementType, Scalar};
use hat_ir::types::DYNAMIC;
use hat_ir::{AttributeKind, Block, Context, Location, Op, OpTraits, Region, Type, TypeKind, Value};
use rustc_hash::FxHashMap;

/// A slot of the current function's frame.
pub(crate) type Slot = u32;

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
    /// The kernel's parameters, in order.
    pub params: Vec<Param>,
    /// Number of buffer parameters (the first local buffer's handle).
    pub buffer_params: u32,
    /// Functions: 0 is the kernel, the others the helpers it calls.
    pub functions: Vec<Function>,
    /// Instruction lists, named by position.
    pub blocks: Vec<Box<[Inst]>>,
    /// The workgroup-local allocations (`kernel.local_alloc`), one per op.
    pub locals: Vec<LocalBuffer>,
    /// Whether any function reaches a `kernel.barrier`.
    pub has_barrier: bool,
}

/// A kernel parameter.
#[derive(Debug, Clone)]
pub(crate) enum Param {
    /// A memref: its element type and its shape ([`DYNAMIC`] for `?`).
    Buffer { name: String, element: ElementType, shape: Vec<i64> },
    /// A scalar of the type.
    Scalar { name: String, ty: ElementType },
}

/// A workgroup-local buffer.
#[derive(Debug, Clone)]
pub(crate) struct LocalBuffer {
    pub element: ElementType,
    pub shape: Vec<usize>,
}

/// A compiled kernel or helper.
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

/// Which work-item id or size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum IdKind {
    GlobalId,
    LocalId,
    GroupId,
    GlobalSize,
    LocalSize,
    NumGroups,
}

/// An instruction of the interpreter.
#[derive(Debug)]
pub(crate) enum Inst {
    /// `dst = value`.
    Const { dst: Slot, value: Scalar },
    /// A one-operand scalar op.
    Unary { op: ScalarOp, dst: Slot, a: Slot, ty: ElementType, result: ElementType, location: Location },
    /// A two-operand scalar op.
    Binary { op: ScalarOp, dst: Slot, a: Slot, b: Slot, ty: ElementType, result: ElementType, location: Location },
    /// `dst = condition ? a : b` (scalars and buffer handles alike).
    Select { dst: Slot, condition: Slot, a: Slot, b: Slot },
    /// A work-item id or size.
    Id { dst: Slot, kind: IdKind, dimension: u8 },
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
    /// `kernel.call`.
    Call(Box<CallInst>),
    /// `kernel.return`.
    Return { values: Box<[Slot]> },
    /// `scf.for`.
    For(Box<ForInst>),
    /// `scf.if`.
    If { condition: Slot, then_block: u32, else_block: Option<u32>, results: Box<[Slot]> },
    /// `scf.while`.
    While(Box<WhileInst>),
    /// `scf.yield`.
    Yield { values: Box<[Slot]> },
    /// `scf.condition`.
    Condition { condition: Slot, values: Box<[Slot]> },
}

/// `kernel.call`.
#[derive(Debug)]
pub(crate) struct CallInst {
    pub function: u32,
    pub arguments: Box<[Slot]>,
    pub results: Box<[Slot]>,
    pub location: Location,
}

/// `scf.for`.
#[derive(Debug)]
pub(crate) struct ForInst {
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
    pub location: Location,
}

/// `scf.while`.
#[derive(Debug)]
pub(crate) struct WhileInst {
    pub inits: Box<[Slot]>,
    pub before_args: Box<[Slot]>,
    pub before: u32,
    pub after_args: Box<[Slot]>,
    pub after: u32,
    pub results: Box<[Slot]>,
}

/// What a value's type is to the interpreter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ValueKind {
    Scalar(ElementType),
    Buffer,
}

struct Compiler<'c> {
    ctx: &'c Context,
    kernel_name: String,
    program: Program,
    /// Functions compiled or queued, by op.
    functions: FxHashMap<Op, u32>,
    queue: Vec<(Op, u32)>,
}

/// The slots of one function being compiled.
#[derive(Default)]
struct Frame {
    slots: FxHashMap<Value, Slot>,
    next: Slot,
}

impl Frame {
    fn define(&mut self, value: Value) -> Slot {
        let slot = self.next;
        self.next += 1;
        self.slots.insert(value, slot);
        slot
    }
}

/// Compiles `kernel` (a `kernel.func`) with the helpers it calls.
pub(crate) fn compile(ctx: &Context, kernel: Op) -> Result<Program, RuntimeError> {
    let location = ctx.location(kernel);
    let op_name = ctx.name_str(kernel);
    if op_name != "kernel.func" {
        return Err(unsupported(op_name, "only a 'kernel.func' can be compiled as a kernel", location));
    }
    let name = symbol_name(ctx, kernel).unwrap_or("<unnamed>").to_string();
    let workgroup = match ctx.attribute(kernel, "workgroup_size") {
        None => DEFAULT_WORKGROUP_SIZE,
        Some(_) => match hat_dialects::kernel::workgroup_size(ctx, kernel) {
            Some(sizes) if sizes.iter().all(|&s| s > 0) => sizes.map(|s| s as u64),
            _ => {
                return Err(unsupported(
                    "kernel.func",
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
            params: Vec::new(),
            buffer_params: 0,
            functions: Vec::new(),
            blocks: Vec::new(),
            locals: Vec::new(),
            has_barrier: false,
        },
        functions: FxHashMap::default(),
        queue: Vec::new(),
    };
    compiler.kernel_params(kernel)?;
    compiler.enqueue(kernel);
    while let Some((op, index)) = compiler.queue.pop() {
        let function = compiler.function(op)?;
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

    fn value_kind(&self, op: Op, ty: Type) -> Result<ValueKind, RuntimeError> {
        if self.ctx.type_kind(ty).is_memref() {
            return Ok(ValueKind::Buffer);
        }
        ElementType::of(self.ctx, ty).map(ValueKind::Scalar).ok_or_else(|| {
            self.error(
                op,
                format!("values of type '{}' are not supported", hat_ir::printer::type_to_string(self.ctx, ty)),
            )
        })
    }

    fn element(&self, op: Op, ty: Type) -> Result<ElementType, RuntimeError> {
        match self.value_kind(op, ty)? {
            ValueKind::Scalar(element) => Ok(element),
            ValueKind::Buffer => Err(self.error(op, "expected a scalar, got a buffer")),
        }
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

    fn kernel_params(&mut self, kernel: Op) -> Result<(), RuntimeError> {
        let Some(block) = self.entry_block(kernel) else {
            return Err(self.error(kernel, "the kernel has no body"));
        };
        for (position, &argument) in self.ctx.block_arguments(block).iter().enumerate() {
            let name = match self.ctx.argument_name(argument) {
                Some(name) => format!("#{position} (%{name})"),
                None => format!("#{position}"),
            };
            let ty = self.ctx.value_type(argument);
            let param = if self.ctx.type_kind(ty).is_memref() {
                let (element, shape) = self.memref(kernel, ty)?;
                self.program.buffer_params += 1;
                Param::Buffer { name, element, shape }
            } else {
                Param::Scalar { name, ty: self.element(kernel, ty)? }
            };
            self.program.params.push(param);
        }
        Ok(())
    }

    fn entry_block(&self, function: Op) -> Option<Block> {
        let region = *self.ctx.regions(function).first()?;
        self.ctx.region_blocks(region).first().copied()
    }

    /// The function index of `op`, queuing it for compilation the first time.
    fn enqueue(&mut self, op: Op) -> u32 {
        if let Some(&index) = self.functions.get(&op) {
            return index;
        }
        let index = self.program.functions.len() as u32;
        self.program.functions.push(Function { name: String::new(), slots: 0, params: 0, body: 0 });
        self.functions.insert(op, index);
        self.queue.push((op, index));
        index
    }

    fn function(&mut self, op: Op) -> Result<Function, RuntimeError> {
        let name = symbol_name(self.ctx, op).unwrap_or("<unnamed>").to_string();
        let region = *self.ctx.regions(op).first().ok_or_else(|| self.error(op, "the function has no body"))?;
        let mut frame = Frame::default();
        let block = self.single_block(op, region)?.ok_or_else(|| self.error(op, "the function has no body"))?;
        let mut params = 0;
        for &argument in self.ctx.block_arguments(block) {
            self.value_kind(op, self.ctx.value_type(argument))?;
            frame.define(argument);
            params += 1;
        }
        let body = self.block(&mut frame, block, Terminator::Return)?;
        Ok(Function { name, slots: frame.next, params, body })
    }

    /// The one block of a region (`None` when empty); regions of several blocks are refused.
    fn single_block(&self, op: Op, region: Region) -> Result<Option<Block>, RuntimeError> {
        match self.ctx.region_blocks(region) {
            [] => Ok(None),
            [block] => Ok(Some(*block)),
            _ => Err(self.error(op, "regions of more than one block are not supported")),
        }
    }

    fn slot(&self, frame: &Frame, op: Op, value: Value) -> Result<Slot, RuntimeError> {
        frame.slots.get(&value).copied().ok_or_else(|| self.error(op, "uses a value that is not defined before it"))
    }

    fn slots(&self, frame: &Frame, op: Op, values: &[Value]) -> Result<Box<[Slot]>, RuntimeError> {
        values.iter().map(|&v| self.slot(frame, op, v)).collect()
    }

    fn define_results(&self, frame: &mut Frame, op: Op) -> Result<Box<[Slot]>, RuntimeError> {
        let mut slots = Vec::with_capacity(self.ctx.result_count(op));
        for value in self.ctx.results(op) {
            self.value_kind(op, self.ctx.value_type(value))?;
            slots.push(frame.define(value));
        }
        Ok(slots.into())
    }

    fn define_arguments(&self, frame: &mut Frame, op: Op, block: Block) -> Result<Box<[Slot]>, RuntimeError> {
        let mut slots = Vec::new();
        for &value in self.ctx.block_arguments(block) {
            self.value_kind(op, self.ctx.value_type(value))?;
            slots.push(frame.define(value));
        }
        Ok(slots.into())
    }

    /// Compiles a block into a new instruction list; a block that does not end in a terminator
    /// gets `terminator` (an implicit `scf.yield` or `kernel.return` of nothing).
    fn block(&mut self, frame: &mut Frame, block: Block, terminator: Terminator) -> Result<u32, RuntimeError> {
        let mut insts = Vec::new();
        let mut terminated = false;
        for op in self.ctx.block_ops(block) {
            let inst = self.op(frame, op)?;
            terminated = matches!(inst, Inst::Return { .. } | Inst::Yield { .. } | Inst::Condition { .. });
            insts.push(inst);
        }
        if !terminated {
            insts.push(match terminator {
                Terminator::Return => Inst::Return { values: Box::new([]) },
                Terminator::Yield => Inst::Yield { values: Box::new([]) },
            });
        }
        let index = self.program.blocks.len() as u32;
        self.program.blocks.push(insts.into());
        Ok(index)
    }

    fn region_block(&self, op: Op, region: Region) -> Result<Block, RuntimeError> {
        self.single_block(op, region)?.ok_or_else(|| self.error(op, "a region is empty"))
    }

    fn i64_attribute(&self, op: Op, name: &str) -> Result<i64, RuntimeError> {
        self.ctx
            .attribute(op, name)
            .and_then(|a| self.ctx.attribute_kind(a).as_i64())
            .ok_or_else(|| self.error(op, format!("requires an integer attribute '{name}'")))
    }

    fn op(&mut self, frame: &mut Frame, op: Op) -> Result<Inst, RuntimeError> {
        let ctx = self.ctx;
        let name = ctx.name_str(op);
        let location = ctx.location(op);
        let operands = ctx.operands(op);
        if name != "arith.select" && ScalarOp::is_scalar_op(name) {
            let scalar = ScalarOp::from_name(name, hat_dialects::arith::predicate(ctx, op))
                .map_err(|message| self.error(op, message))?;
            if operands.len() != scalar.arity() || ctx.result_count(op) != 1 {
                return Err(self.error(op, "has the wrong number of operands or results"));
            }
            let ty = self.element(op, ctx.value_type(operands[0]))?;
            let result = self.element(op, ctx.value_type(ctx.result(op, 0)))?;
            let args = self.slots(frame, op, operands)?;
            let dst = self.define_results(frame, op)?[0];
            return Ok(match *args {
                [a] => Inst::Unary { op: scalar, dst, a, ty, result, location },
                [a, b] => Inst::Binary { op: scalar, dst, a, b, ty, result, location },
                _ => unreachable!("scalar ops other than select take one or two operands"),
            });
        }
        Ok(match name {
            "arith.constant" => {
                let ty = ctx.value_type(ctx.result(op, 0));
                let element = self.element(op, ty)?;
                let value = ctx
                    .attribute(op, "value")
                    .and_then(|a| eval::constant_value(ctx.attribute_kind(a)))
                    .ok_or_else(|| self.error(op, "requires a scalar 'value' attribute"))?;
                let dst = self.define_results(frame, op)?[0];
                Inst::Const { dst, value: eval::normalize(value, element) }
            }
            "arith.select" => {
                let args = self.slots(frame, op, operands)?;
                let [condition, a, b] = *args else { return Err(self.error(op, "takes three operands")) };
                let dst = self.define_results(frame, op)?[0];
                Inst::Select { dst, condition, a, b }
            }
            "kernel.global_id" | "kernel.local_id" | "kernel.group_id" | "kernel.global_size" | "kernel.local_size"
            | "kernel.num_groups" => {
                let kind = match name {
                    "kernel.global_id" => IdKind::GlobalId,
                    "kernel.local_id" => IdKind::LocalId,
                    "kernel.group_id" => IdKind::GroupId,
                    "kernel.global_size" => IdKind::GlobalSize,
                    "kernel.local_size" => IdKind::LocalSize,
                    _ => IdKind::NumGroups,
                };
                let dimension = self.i64_attribute(op, "dimension")?;
                if !(0..3).contains(&dimension) {
                    return Err(self.error(op, format!("dimension {dimension} is not 0, 1 or 2")));
                }
                let dst = self.define_results(frame, op)?[0];
                Inst::Id { dst, kind, dimension: dimension as u8 }
            }
            "buffer.load" => {
                let args = self.slots(frame, op, operands)?;
                let dst = self.define_results(frame, op)?[0];
                Inst::Load { dst, buffer: args[0], indices: args[1..].into(), location }
            }
            "buffer.store" => {
                let args = self.slots(frame, op, operands)?;
                if args.len() < 2 {
                    return Err(self.error(op, "takes a value and a buffer"));
                }
                Inst::Store { value: args[0], buffer: args[1], indices: args[2..].into(), location }
            }
            "buffer.dim" => {
                let args = self.slots(frame, op, operands)?;
                let dimension = self.i64_attribute(op, "dimension")?;
                let dst = self.define_results(frame, op)?[0];
                Inst::Dim { dst, buffer: args[0], dimension: dimension.clamp(0, u32::MAX as i64) as u32, location }
            }
            "kernel.local_alloc" => {
                let (element, shape) = self.memref(op, ctx.value_type(ctx.result(op, 0)))?;
                if shape.iter().any(|&d| d == DYNAMIC || d < 0) {
                    return Err(self.error(op, "workgroup-local memory needs a static shape"));
                }
                let handle = self.program.buffer_params + self.program.locals.len() as u32;
                self.program.locals.push(LocalBuffer { element, shape: shape.iter().map(|&d| d as usize).collect() });
                let dst = self.define_results(frame, op)?[0];
                Inst::LocalAlloc { dst, handle }
            }
            "kernel.atomic_rmw" => {
                let args = self.slots(frame, op, operands)?;
                if args.len() < 2 {
                    return Err(self.error(op, "takes a buffer and a value"));
                }
                let (element, _) = self.memref(op, ctx.value_type(operands[0]))?;
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
                    _ => {
                        return Err(
                            self.error(op, format!("atomic kind '{kind}' is not supported on this element type"))
                        )
                    }
                };
                let dst = self.define_results(frame, op)?[0];
                let last = args.len() - 1;
                Inst::Atomic {
                    dst,
                    op: scalar,
                    buffer: args[0],
                    indices: args[1..last].into(),
                    value: args[last],
                    location,
                }
            }
            "kernel.barrier" => {
                self.program.has_barrier = true;
                Inst::Barrier { location }
            }
            "kernel.call" => {
                let callee = self.callee(op)?;
                let function = self.enqueue(callee);
                let arguments = self.slots(frame, op, operands)?;
                let results = self.define_results(frame, op)?;
                Inst::Call(Box::new(CallInst { function, arguments, results, location }))
            }
            "kernel.return" => Inst::Return { values: self.slots(frame, op, operands)? },
            "scf.yield" => Inst::Yield { values: self.slots(frame, op, operands)? },
            "scf.condition" => {
                let args = self.slots(frame, op, operands)?;
                let Some((&condition, values)) = args.split_first() else {
                    return Err(self.error(op, "takes a condition"));
                };
                Inst::Condition { condition, values: values.into() }
            }
            "scf.for" => {
                if operands.len() < 3 {
                    return Err(self.error(op, "takes a lower bound, an upper bound and a step"));
                }
                let ty = self.element(op, ctx.value_type(operands[0]))?;
                let args = self.slots(frame, op, operands)?;
                let region = *ctx.regions(op).first().ok_or_else(|| self.error(op, "has no body"))?;
                let block = self.region_block(op, region)?;
                let arguments = self.define_arguments(frame, op, block)?;
                if arguments.len() != operands.len() - 2 {
                    return Err(self.error(op, "the body's arguments do not match the loop-carried values"));
                }
                let body = self.block(frame, block, Terminator::Yield)?;
                let results = self.define_results(frame, op)?;
                Inst::For(Box::new(ForInst {
                    lower: args[0],
                    upper: args[1],
                    step: args[2],
                    ty,
                    inits: args[3..].into(),
                    induction: arguments[0],
                    iter_args: arguments[1..].into(),
                    results,
                    body,
                    location,
                }))
            }
            "scf.if" => {
                let args = self.slots(frame, op, operands)?;
                let regions = ctx.regions(op).to_vec();
                let Some(&then_region) = regions.first() else { return Err(self.error(op, "has no regions")) };
                let then_block = self.region_block(op, then_region)?;
                let then_block = self.block(frame, then_block, Terminator::Yield)?;
                let else_block = match regions.get(1) {
                    Some(&region) => match self.single_block(op, region)? {
                        Some(block) => Some(self.block(frame, block, Terminator::Yield)?),
                        None => None,
                    },
                    None => None,
                };
                let results = self.define_results(frame, op)?;
                if else_block.is_none() && !results.is_empty() {
                    return Err(self.error(op, "has results but no else region"));
                }
                Inst::If { condition: args[0], then_block, else_block, results }
            }
            "scf.while" => {
                let inits = self.slots(frame, op, operands)?;
                let regions = ctx.regions(op).to_vec();
                let [before_region, after_region] = regions[..] else {
                    return Err(self.error(op, "needs two regions"));
                };
                let before_block = self.region_block(op, before_region)?;
                let before_args = self.define_arguments(frame, op, before_block)?;
                let before = self.block(frame, before_block, Terminator::Yield)?;
                let after_block = self.region_block(op, after_region)?;
                let after_args = self.define_arguments(frame, op, after_block)?;
                let after = self.block(frame, after_block, Terminator::Yield)?;
                let results = self.define_results(frame, op)?;
                if inits.len() != before_args.len() {
                    return Err(self.error(op, "the 'before' region's arguments do not match the operands"));
                }
                Inst::While(Box::new(WhileInst { inits, before_args, before, after_args, after, results }))
            }
            _ => return Err(self.error(op, "this op cannot run in a kernel on the CPU backend")),
        })
    }

    /// The `kernel.helper` a `kernel.call` names, looked up in the nearest enclosing symbol
    /// tables, innermost first.
    fn callee(&self, op: Op) -> Result<Op, RuntimeError> {
        let ctx = self.ctx;
        let name = match ctx.attribute(op, "callee").map(|a| ctx.attribute_kind(a)) {
            Some(AttributeKind::SymbolRef(path)) if path.len() == 1 => ctx.ident_str(path[0]),
            _ => return Err(self.error(op, "requires a flat symbol reference 'callee'")),
        };
        let mut scope = ctx.parent_op(op);
        while let Some(table) = scope {
            if ctx.has_traits(table, OpTraits::SYMBOL_TABLE) {
                if let Some(found) = ctx.body_ops(table).into_iter().find(|&o| symbol_name(ctx, o) == Some(name)) {
                    if ctx.name_str(found) != "kernel.helper" {
                        return Err(
                            self.error(op, format!("'@{name}' is a '{}', not a 'kernel.helper'", ctx.name_str(found)))
                        );
                    }
                    return Ok(found);
                }
            }
            scope = ctx.parent_op(table);
        }
        Err(RuntimeError::MissingSymbol { what: "kernel helper", name: name.to_string(), location: ctx.location(op) })
    }
}

/// The terminator a block gets when it has none.
#[derive(Copy, Clone)]
enum Terminator {
    Return,
    Yield,
}
