//! The walk over compute IR: one [`Interpreter`] per run, holding the run's buffers and report.
//! Values live in one frame per compute-function call (`scf` regions share their function's
//! frame); control flow is structured (`scf.for`, `scf.if`, `scf.while`), so a region is run by
//! running its one block up to its terminator, whose operands are the region's results.

use super::buffers::{At, BufferId, Buffers};
use super::host_functions::HostCall;
use super::{
    entry_parameters, integer_attribute, parameter_kind, symbol_name, ArgEffect, ArgValue, Executor, ParameterKind,
    RunOutput, TransferMode,
};
use crate::backend::{KernelArg, KernelHandle};
use crate::error::RuntimeError;
use crate::eval::{self, ScalarOp};
use crate::report::{Direction, Recorder};
use crate::value::{BufferLayout, ElementType, Scalar};
use hat_dialects::compute::{dispatch_segments, host_func_arg_effects};
use hat_dialects::syntax::flat_symbol_ref;
use hat_ir::{Block, Context, Location, Op, Value};
use rustc_hash::FxHashMap;
use std::time::Instant;

/// A value at run time: a scalar, or a buffer of the run.
#[derive(Copy, Clone, Debug, PartialEq)]
enum RtValue {
    Scalar(Scalar),
    Buffer(BufferId),
}

/// The values of one compute-function call.
type Frame = FxHashMap<Value, RtValue>;

/// The interpreter's results: errors are boxed, so that the frames of the (recursive) walk
/// stay small.
type Res<T> = Result<T, Box<RuntimeError>>;

fn fail<T>(error: RuntimeError) -> Res<T> {
    Err(Box::new(error))
}

/// How a block ended: its terminator (`None` when it has none) and the terminator's operands.
type BlockEnd = (Option<Op>, Vec<RtValue>);

/// Runs `entry` (see [`Executor::run`]).
pub(super) fn run(ex: &mut Executor<'_>, entry: &str, args: Vec<ArgValue>) -> Result<RunOutput, RuntimeError> {
    let start = Instant::now();
    let ctx = ex.ctx;
    let parameters = entry_parameters(ctx, ex.module, entry)?;
    let func = *ex.symbols.get(entry).filter(|&&op| ctx.name_str(op) == "compute.func").ok_or_else(|| {
        RuntimeError::MissingSymbol { what: "entry function", name: entry.to_string(), location: Location::UNKNOWN }
    })?;
    if args.len() != parameters.len() {
        let list: Vec<String> = parameters.iter().map(|p| format!("%{}: {}", p.name, p.type_text)).collect();
        let takes =
            format!("'@{entry}' takes {} arguments ({}), got {}", parameters.len(), list.join(", "), args.len());
        return Err(match parameters.get(args.len()) {
            Some(missing) => {
                RuntimeError::BadArgument { name: missing.name.clone(), message: format!("missing: {takes}") }
            }
            None => RuntimeError::BadArgument {
                name: format!("#{}", parameters.len()),
                message: format!("too many: {takes}"),
            },
        });
    }

    let recorder = Recorder::new(ex.options.mode.name(), ex.backend.name());
    let mut interpreter = Interpreter { ctx, ex, buffers: Buffers::default(), recorder, depth: 0 };
    let mut values = Vec::with_capacity(args.len());
    let mut caller_buffers = Vec::new();
    for (parameter, arg) in parameters.iter().zip(args) {
        match parameter.check(arg)? {
            ArgValue::Scalar(value) => values.push(RtValue::Scalar(value)),
            ArgValue::Buffer(buffer) => {
                let slot = interpreter.recorder.buffer_slot(&parameter.name);
                let id = interpreter.buffers.add_argument(buffer, slot, &mut interpreter.recorder);
                caller_buffers.push(id);
                values.push(RtValue::Buffer(id));
            }
        }
    }

    let outcome = interpreter.call_function(func, values, func).map_err(|e| *e).and_then(|results| {
        let at = At { op: "compute.return", location: ctx.location(func) };
        results
            .into_iter()
            .map(|value| match value {
                RtValue::Scalar(value) => Ok(ArgValue::Scalar(value)),
                RtValue::Buffer(id) => {
                    interpreter.buffers.host_snapshot(id, at, &mut interpreter.recorder).map(ArgValue::Buffer)
                }
            })
            .collect::<Result<Vec<_>, _>>()
    });
    let released = interpreter.buffers.release_all(interpreter.ex.backend, &mut interpreter.recorder);
    let results = outcome?;
    released?;
    let buffers = caller_buffers.into_iter().map(|id| interpreter.buffers.final_host(id)).collect();
    let mut report = interpreter.recorder.report;
    report.total_time = start.elapsed();
    Ok(RunOutput { results, buffers, report })
}

struct Interpreter<'e, 'a> {
    ctx: &'a Context,
    ex: &'e mut Executor<'a>,
    buffers: Buffers,
    recorder: Recorder,
    /// Nesting: the calls and `scf` regions being run (see [`Executor::set_recursion_limit`]).
    depth: usize,
}

impl<'a> Interpreter<'_, 'a> {
    // ----- helpers -------------------------------------------------------------------------

    fn at(&self, op: Op) -> At<'a> {
        At { op: self.ctx.name_str(op), location: self.ctx.location(op) }
    }

    fn unsupported(&self, op: Op, message: impl Into<String>) -> Box<RuntimeError> {
        Box::new(RuntimeError::Unsupported {
            op: self.ctx.name_str(op).to_string(),
            message: message.into(),
            location: self.ctx.location(op),
        })
    }

    fn operand(&self, op: Op, index: usize) -> Res<Value> {
        self.ctx
            .operands(op)
            .get(index)
            .copied()
            .ok_or_else(|| self.unsupported(op, format!("has no operand #{index}")))
    }

    fn get(&self, frame: &Frame, value: Value, op: Op) -> Res<RtValue> {
        frame.get(&value).copied().ok_or_else(|| self.unsupported(op, "uses a value that is not defined here"))
    }

    fn scalar(&self, frame: &Frame, value: Value, op: Op) -> Res<Scalar> {
        match self.get(frame, value, op)? {
            RtValue::Scalar(scalar) => Ok(scalar),
            RtValue::Buffer(_) => Err(self.unsupported(op, "expects a scalar operand, got a buffer")),
        }
    }

    fn buffer(&self, frame: &Frame, value: Value, op: Op) -> Res<BufferId> {
        match self.get(frame, value, op)? {
            RtValue::Buffer(id) => Ok(id),
            RtValue::Scalar(_) => Err(self.unsupported(op, "expects a buffer operand, got a scalar")),
        }
    }

    fn element_type(&self, value: Value, op: Op) -> Res<ElementType> {
        let ty = self.ctx.value_type(value);
        ElementType::of(self.ctx, ty).ok_or_else(|| {
            self.unsupported(
                op,
                format!("the type {} is not supported at run time", hat_ir::printer::type_to_string(self.ctx, ty)),
            )
        })
    }

    fn bind_results(&self, frame: &mut Frame, op: Op, values: Vec<RtValue>) -> Res<()> {
        if values.len() != self.ctx.result_count(op) {
            return Err(self.unsupported(
                op,
                format!("produces {} values for {} results", values.len(), self.ctx.result_count(op)),
            ));
        }
        frame.extend(self.ctx.results(op).zip(values));
        Ok(())
    }

    fn bind_arguments(&self, frame: &mut Frame, op: Op, block: Block, values: &[RtValue]) -> Res<()> {
        let arguments = self.ctx.block_arguments(block);
        if arguments.len() != values.len() {
            return Err(self.unsupported(
                op,
                format!("passes {} values to a block of {} arguments", values.len(), arguments.len()),
            ));
        }
        frame.extend(arguments.iter().copied().zip(values.iter().copied()));
        Ok(())
    }

    /// The first block of region `index` of `op`; `None` when the region is empty.
    fn region_block(&self, op: Op, index: usize) -> Res<Option<Block>> {
        let region =
            self.ctx.regions(op).get(index).ok_or_else(|| self.unsupported(op, format!("has no region #{index}")))?;
        Ok(self.ctx.region_blocks(*region).first().copied())
    }

    /// An optional element range `[offset, count]` from operands 1 and 2 of a transfer or hook.
    fn range(&self, frame: &Frame, op: Op) -> Res<Option<(i64, i64)>> {
        match self.ctx.operands(op).len() {
            1 => Ok(None),
            3 => {
                let offset = self.scalar(frame, self.operand(op, 1)?, op)?.as_i64();
                let count = self.scalar(frame, self.operand(op, 2)?, op)?.as_i64();
                Ok(Some((offset, count)))
            }
            n => Err(self.unsupported(op, format!("expects 1 or 3 operands, got {n}"))),
        }
    }

    // ----- blocks and functions ------------------------------------------------------------

    /// Runs the ops of `block` up to its terminator.
    fn exec_block(&mut self, frame: &mut Frame, block: Block) -> Res<BlockEnd> {
        let ctx = self.ctx;
        for op in ctx.block_ops(block) {
            match ctx.name_str(op) {
                "scf.yield" | "scf.condition" | "compute.return" => {
                    let values = ctx.operands(op).iter().map(|&v| self.get(frame, v, op)).collect::<Result<_, _>>()?;
                    return Ok((Some(op), values));
                }
                _ => self.exec_op(frame, op)?,
            }
        }
        Ok((None, Vec::new()))
    }

    /// Runs the region's block (if any) with `arguments` and returns what its terminator yields.
    fn exec_region(&mut self, frame: &mut Frame, op: Op, index: usize, arguments: &[RtValue]) -> Res<BlockEnd> {
        let Some(block) = self.region_block(op, index)? else {
            return Ok((None, Vec::new()));
        };
        self.bind_arguments(frame, op, block, arguments)?;
        self.enter(op, None)?;
        let end = self.exec_block(frame, block);
        self.depth -= 1;
        end
    }

    /// Counts one more level of nesting (a call of `callee`, or a region of `op`), or fails
    /// past the limit: the walk recurses on the host's stack.
    fn enter(&mut self, op: Op, callee: Option<&str>) -> Res<()> {
        if self.depth >= self.ex.recursion_limit {
            let ctx = self.ctx;
            let function = callee
                .or_else(|| {
                    hat_dialects::checks::enclosing_op(ctx, op, &["compute.func"]).and_then(|f| symbol_name(ctx, f))
                })
                .unwrap_or("?");
            return fail(RuntimeError::RecursionLimit {
                limit: self.ex.recursion_limit,
                function: function.to_string(),
                location: ctx.location(op),
            });
        }
        self.depth += 1;
        Ok(())
    }

    /// Calls the compute function `func` with `args` (`call` is the call, or `func` itself for
    /// the entry).
    fn call_function(&mut self, func: Op, args: Vec<RtValue>, call: Op) -> Res<Vec<RtValue>> {
        let ctx = self.ctx;
        let name = symbol_name(ctx, func).unwrap_or("?");
        let Some(block) = self.region_block(func, 0)? else {
            return Err(self.unsupported(func, format!("'@{name}' has no body")));
        };
        let mut frame = Frame::default();
        self.bind_arguments(&mut frame, func, block, &args)?;
        self.enter(call, Some(name))?;
        let end = self.exec_block(&mut frame, block);
        self.depth -= 1;
        match end? {
            (Some(terminator), values) if ctx.name_str(terminator) == "compute.return" => Ok(values),
            (None, _) => Ok(Vec::new()),
            (Some(terminator), _) => Err(self.unsupported(terminator, format!("ends the body of '@{name}'"))),
        }
    }

    // ----- ops -----------------------------------------------------------------------------

    /// Runs one op. Every arm is a call, so that this frame stays small: calls and regions nest
    /// through it.
    fn exec_op(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        type Handler<'e, 'a> = fn(&mut Interpreter<'e, 'a>, &mut Frame, Op) -> Res<()>;
        let name = self.ctx.name_str(op);
        let handler: Handler<'_, 'a> = match name {
            "arith.constant" => Self::exec_constant,
            "arith.select" => Self::exec_select,
            _ if name.starts_with("arith.") || name.starts_with("math.") => Self::exec_scalar_op,
            "scf.for" => Self::exec_for,
            "scf.if" => Self::exec_if,
            "scf.while" => Self::exec_while,
            "compute.call" => Self::exec_call,
            "compute.dispatch" => Self::exec_dispatch,
            "compute.sync" => Self::exec_sync,
            "buffer.alloc" => Self::exec_alloc,
            "buffer.dealloc" => Self::exec_dealloc,
            "buffer.load" => Self::exec_load,
            "buffer.store" => Self::exec_store,
            "buffer.dim" => Self::exec_dim,
            "buffer.copy" => Self::exec_copy,
            "buffer.to_device" | "buffer.from_device" => Self::exec_transfer,
            "buffer.before_host_read"
            | "buffer.after_host_read"
            | "buffer.before_host_write"
            | "buffer.after_host_write" => Self::exec_hook,
            _ => Self::exec_unknown,
        };
        handler(self, frame, op)
    }

    #[inline(never)]
    fn exec_unknown(&mut self, _: &mut Frame, op: Op) -> Res<()> {
        if self.ctx.name_str(op).starts_with("kernel.") {
            return Err(self.unsupported(op, "kernel ops run only in kernels, not in host code"));
        }
        Err(self.unsupported(op, "the host executor does not know this op"))
    }

    #[inline(never)]
    fn exec_constant(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let ctx = self.ctx;
        let value = ctx
            .attribute(op, "value")
            .and_then(|a| eval::constant_value(ctx.attribute_kind(a)))
            .ok_or_else(|| self.unsupported(op, "has no integer or float 'value'"))?;
        self.bind_results(frame, op, vec![RtValue::Scalar(value)])
    }

    /// `arith.select` of scalars or of buffers (ping-pong code selects buffers).
    #[inline(never)]
    fn exec_select(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let condition = self.scalar(frame, self.operand(op, 0)?, op)?;
        let chosen = self.operand(op, if condition.as_i64() & 1 != 0 { 1 } else { 2 })?;
        let value = self.get(frame, chosen, op)?;
        self.bind_results(frame, op, vec![value])
    }

    #[inline(never)]
    fn exec_if(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let condition = self.scalar(frame, self.operand(op, 0)?, op)?;
        let (_, values) = self.exec_region(frame, op, if condition.as_i64() & 1 != 0 { 0 } else { 1 }, &[])?;
        self.bind_results(frame, op, values)
    }

    #[inline(never)]
    fn exec_sync(&mut self, _: &mut Frame, _: Op) -> Res<()> {
        let start = Instant::now();
        self.ex.backend.synchronize()?;
        self.recorder.sync(start.elapsed());
        Ok(())
    }

    #[inline(never)]
    fn exec_dealloc(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let id = self.buffer(frame, self.operand(op, 0)?, op)?;
        Ok(self.buffers.deallocate(id, self.at(op), self.ex.backend, &mut self.recorder)?)
    }

    #[inline(never)]
    fn exec_load(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let id = self.buffer(frame, self.operand(op, 0)?, op)?;
        let (offset, element) = self.host_element(frame, op, id, 1)?;
        let host = self.buffers.host(id, self.at(op), &mut self.recorder)?;
        let value = element.read(&host[offset..offset + element.size()]);
        self.bind_results(frame, op, vec![RtValue::Scalar(value)])
    }

    #[inline(never)]
    fn exec_store(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let value = self.scalar(frame, self.operand(op, 0)?, op)?;
        let id = self.buffer(frame, self.operand(op, 1)?, op)?;
        let (offset, element) = self.host_element(frame, op, id, 2)?;
        let host = self.buffers.host(id, self.at(op), &mut self.recorder)?;
        element.write(value, &mut host[offset..offset + element.size()]);
        Ok(())
    }

    #[inline(never)]
    fn exec_dim(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let id = self.buffer(frame, self.operand(op, 0)?, op)?;
        let shape = &self.buffers.layout(id, self.at(op))?.shape;
        let extent = integer_attribute(self.ctx, op, "dimension")
            .and_then(|d| usize::try_from(d).ok())
            .and_then(|d| shape.get(d).copied())
            .ok_or_else(|| {
                self.unsupported(op, format!("has no valid 'dimension' for a buffer of rank {}", shape.len()))
            })?;
        self.bind_results(frame, op, vec![RtValue::Scalar(Scalar::Int(extent as i64))])
    }

    /// `buffer.copy`: host copy to host copy.
    #[inline(never)]
    fn exec_copy(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let source = self.buffer(frame, self.operand(op, 0)?, op)?;
        let destination = self.buffer(frame, self.operand(op, 1)?, op)?;
        let at = self.at(op);
        let (from, to) = (self.buffers.layout(source, at)?, self.buffers.layout(destination, at)?);
        if from != to {
            return Err(self.unsupported(
                op,
                format!("copies a buffer of shape {:?} into one of shape {:?}", from.shape, to.shape),
            ));
        }
        if source != destination {
            let data = self.buffers.host(source, at, &mut self.recorder)?.clone();
            self.buffers.host(destination, at, &mut self.recorder)?.copy_from_slice(&data);
        }
        Ok(())
    }

    /// `buffer.to_device`/`buffer.from_device`: a copy in explicit mode; in reference mode
    /// nothing but the check of the range.
    #[inline(never)]
    fn exec_transfer(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let id = self.buffer(frame, self.operand(op, 0)?, op)?;
        let range = self.range(frame, op)?;
        let at = self.at(op);
        match (self.ex.options.mode, at.op) {
            (TransferMode::Reference, _) => self.buffers.byte_range(id, range, at).map(drop)?,
            (TransferMode::Explicit, name) => {
                let direction = if name == "buffer.to_device" { Direction::ToDevice } else { Direction::FromDevice };
                self.buffers.transfer(direction, id, range, at, self.ex.backend, &mut self.recorder)?
            }
        }
        Ok(())
    }

    /// The runtime-tracking hooks: counted, and their range checked; they move nothing here.
    #[inline(never)]
    fn exec_hook(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let id = self.buffer(frame, self.operand(op, 0)?, op)?;
        let range = self.range(frame, op)?;
        self.buffers.byte_range(id, range, self.at(op))?;
        self.recorder.hook(self.ctx.name_str(op));
        Ok(())
    }

    /// The byte offset and the element type of the element of buffer `id` that the indices
    /// (operands `first..` of `op`) name, or [`RuntimeError::HostOutOfBounds`].
    fn host_element(&self, frame: &Frame, op: Op, id: BufferId, first: usize) -> Res<(usize, ElementType)> {
        let indices = self.ctx.operands(op)[first.min(self.ctx.operands(op).len())..]
            .iter()
            .map(|&v| self.scalar(frame, v, op).map(Scalar::as_i64))
            .collect::<Result<Vec<i64>, _>>()?;
        let layout = self.buffers.layout(id, self.at(op))?;
        match layout.flatten(&indices) {
            Some(flat) => Ok((flat * layout.element.size(), layout.element)),
            None if indices.len() != layout.shape.len() => Err(self.unsupported(
                op,
                format!("uses {} indices for a buffer of rank {}", indices.len(), layout.shape.len()),
            )),
            None => fail(RuntimeError::HostOutOfBounds {
                index: indices,
                shape: layout.shape.clone(),
                location: self.ctx.location(op),
            }),
        }
    }

    #[inline(never)]
    fn exec_scalar_op(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let ctx = self.ctx;
        let name = ctx.name_str(op);
        let scalar_op =
            ScalarOp::from_name(name, hat_dialects::arith::predicate(ctx, op)).map_err(|m| self.unsupported(op, m))?;
        let operands = ctx.operands(op).iter().map(|&v| self.scalar(frame, v, op)).collect::<Result<Vec<_>, _>>()?;
        let operand_type = self.element_type(self.operand(op, 0)?, op)?;
        let result = ctx.results(op).next().ok_or_else(|| self.unsupported(op, "has no result"))?;
        let result_type = self.element_type(result, op)?;
        let value = scalar_op.apply(&operands, operand_type, result_type).map_err(|message| {
            if scalar_op.can_fail() {
                Box::new(RuntimeError::Arithmetic {
                    message: format!("'{name}': {message}"),
                    location: ctx.location(op),
                })
            } else {
                self.unsupported(op, message)
            }
        })?;
        self.bind_results(frame, op, vec![RtValue::Scalar(value)])
    }

    #[inline(never)]
    fn exec_for(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let ctx = self.ctx;
        let operands = ctx.operands(op);
        if operands.len() < 3 {
            return Err(self.unsupported(op, "needs a lower bound, an upper bound and a step"));
        }
        let lower = self.scalar(frame, operands[0], op)?.as_i64();
        let upper = self.scalar(frame, operands[1], op)?.as_i64();
        let step = self.scalar(frame, operands[2], op)?.as_i64();
        let bits = self.element_type(operands[0], op)?.bits();
        let mut carried = operands[3..].iter().map(|&v| self.get(frame, v, op)).collect::<Result<Vec<_>, _>>()?;
        if lower < upper && step <= 0 {
            return fail(RuntimeError::Arithmetic {
                message: format!("'scf.for' step must be positive, got {step}"),
                location: ctx.location(op),
            });
        }
        let mut i = lower;
        let mut arguments = Vec::with_capacity(carried.len() + 1);
        while i < upper {
            arguments.clear();
            arguments.push(RtValue::Scalar(Scalar::Int(i)));
            arguments.extend_from_slice(&carried);
            let (_, yielded) = self.exec_region(frame, op, 0, &arguments)?;
            if yielded.len() != carried.len() {
                return Err(
                    self.unsupported(op, format!("yields {} values for {} carried", yielded.len(), carried.len()))
                );
            }
            carried = yielded;
            // The induction variable lives in its type: stop rather than wrap around.
            match i.checked_add(step).map(|next| (next, crate::value::sign_extend(next, bits))) {
                Some((next, wrapped)) if next == wrapped => i = next,
                _ => break,
            }
        }
        self.bind_results(frame, op, carried)
    }

    #[inline(never)]
    fn exec_while(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let ctx = self.ctx;
        let mut values = ctx.operands(op).iter().map(|&v| self.get(frame, v, op)).collect::<Result<Vec<_>, _>>()?;
        loop {
            let (terminator, mut forwarded) = self.exec_region(frame, op, 0, &values)?;
            if terminator.map(|t| ctx.name_str(t)) != Some("scf.condition") || forwarded.is_empty() {
                return Err(self.unsupported(op, "the 'before' region must end in 'scf.condition'"));
            }
            let condition = match forwarded.remove(0) {
                RtValue::Scalar(condition) => condition,
                RtValue::Buffer(_) => return Err(self.unsupported(op, "the condition is a buffer")),
            };
            if condition.as_i64() & 1 == 0 {
                return self.bind_results(frame, op, forwarded);
            }
            let (_, yielded) = self.exec_region(frame, op, 1, &forwarded)?;
            values = yielded;
        }
    }

    #[inline(never)]
    fn exec_alloc(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let ctx = self.ctx;
        let result = ctx.results(op).next().ok_or_else(|| self.unsupported(op, "has no result"))?;
        let layout = match parameter_kind(ctx, ctx.value_type(result)).map_err(|m| self.unsupported(op, m))? {
            ParameterKind::Buffer(layout) => layout,
            ParameterKind::DynamicBuffer { element, shape } => {
                let mut sizes = ctx.operands(op).iter();
                let mut dims = Vec::with_capacity(shape.len());
                for dim in shape {
                    let extent = match dim {
                        Some(extent) => extent,
                        None => {
                            let size = sizes
                                .next()
                                .ok_or_else(|| self.unsupported(op, "lacks a size for a dynamic dimension"))?;
                            let size = self.scalar(frame, *size, op)?.as_i64();
                            usize::try_from(size)
                                .map_err(|_| self.unsupported(op, format!("size {size} is negative")))?
                        }
                    };
                    dims.push(extent);
                }
                BufferLayout { element, shape: dims }
            }
            ParameterKind::Scalar(_) => return Err(self.unsupported(op, "allocates a scalar, not a memref")),
        };
        if layout.shape.iter().try_fold(layout.element.size(), |total, &d| total.checked_mul(d)).is_none() {
            return fail(RuntimeError::Allocation {
                bytes: usize::MAX,
                message: format!("shape {:?} is too large", layout.shape),
            });
        }
        let name = match ctx.sources.file_line_col(ctx.location(op)) {
            Some((_, line, column)) => format!("alloc@{line}:{column}"),
            None => format!("alloc@op{}", op.index()),
        };
        let slot = self.recorder.buffer_slot(&name);
        let id = self.buffers.allocate(layout, slot);
        self.bind_results(frame, op, vec![RtValue::Buffer(id)])
    }

    #[inline(never)]
    fn exec_call(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let ctx = self.ctx;
        let location = ctx.location(op);
        let callee = flat_symbol_ref(ctx, op, "callee")
            .map(|ident| ctx.ident_str(ident))
            .ok_or_else(|| self.unsupported(op, "has no 'callee'"))?;
        let args = ctx.operands(op).iter().map(|&v| self.get(frame, v, op)).collect::<Result<Vec<_>, _>>()?;
        let target = self.ex.symbols.get(callee).copied();
        let results = match target.map(|t| (t, ctx.name_str(t))) {
            Some((func, "compute.func")) => self.call_function(func, args, op)?,
            Some((decl, "compute.host_func")) => self.call_host(op, decl, callee, &args)?,
            _ => {
                return fail(RuntimeError::MissingSymbol {
                    what: "compute function",
                    name: callee.to_string(),
                    location,
                })
            }
        };
        self.bind_results(frame, op, results)
    }

    #[inline(never)]
    fn call_host(&mut self, op: Op, decl: Op, name: &str, args: &[RtValue]) -> Res<Vec<RtValue>> {
        let ctx = self.ctx;
        let location = ctx.location(op);
        let at = self.at(op);
        let failed = |message: String| RuntimeError::HostFunctionFailed { name: name.to_string(), message, location };
        let Some(registered) = self.ex.host_functions.get(name) else {
            return fail(RuntimeError::UnknownHostFunction { name: name.to_string(), location });
        };
        // The declared effects; an undeclared (or malformed) one counts as read and written.
        let declared = host_func_arg_effects(ctx, decl);
        let effects: Vec<ArgEffect> = args
            .iter()
            .enumerate()
            .map(|(i, arg)| match arg {
                RtValue::Scalar(_) => ArgEffect::None,
                RtValue::Buffer(_) => declared
                    .as_ref()
                    .and_then(|d| d.get(i).copied())
                    .filter(|&e| e != ArgEffect::None)
                    .unwrap_or(ArgEffect::ReadWrite),
            })
            .collect();
        if let Some(registered) = &registered.effects {
            if *registered != effects {
                let words = |e: &[ArgEffect]| e.iter().map(|e| e.keyword()).collect::<Vec<_>>().join(", ");
                return fail(failed(format!(
                    "the program declares its arguments ({}), but it was registered as ({})",
                    words(&effects),
                    words(registered)
                )));
            }
        }
        let result_types = ctx.results(op).map(|r| self.element_type(r, op)).collect::<Result<Vec<_>, _>>()?;

        // Check every buffer before taking any out, so that nothing is left taken on error.
        for arg in args {
            if let RtValue::Buffer(id) = arg {
                self.buffers.layout(*id, at)?;
            }
        }
        let mut call = HostCall::new(name, location, result_types.clone());
        let mut views: Vec<BufferId> = Vec::new();
        for ((arg, &effect), &value) in args.iter().zip(&effects).zip(ctx.operands(op)) {
            match *arg {
                RtValue::Scalar(scalar) => call.push_scalar(scalar, self.element_type(value, op)?),
                RtValue::Buffer(id) => match views.iter().position(|&v| v == id) {
                    Some(view) => call.push_same_buffer(view, effect),
                    None => {
                        let buffer = self.buffers.take_host(id, at, &mut self.recorder)?;
                        views.push(id);
                        call.push_new_buffer(buffer, effect);
                    }
                },
            }
        }

        self.recorder.host_call();
        let registered = self.ex.host_functions.get_mut(name).expect("looked up above");
        let outcome = (registered.function)(&mut call);

        // Put every view back, whatever happened; a view whose size changed is an error (its
        // host copy is then padded or cut back to size).
        let mut resized = None;
        for (id, view) in views.into_iter().zip(call.into_views()) {
            let layout = self.buffers.layout(id, at)?.clone();
            let mut bytes = view.bytes;
            if view.layout != layout || bytes.len() != layout.bytes() {
                resized.get_or_insert_with(|| {
                    format!("changed the layout or size of a buffer argument of shape {:?}", layout.shape)
                });
                bytes.resize(layout.bytes(), 0);
            }
            self.buffers.put_host(id, bytes);
        }
        let values = outcome.map_err(failed)?;
        if let Some(message) = resized {
            return fail(failed(message));
        }
        if values.len() != result_types.len() {
            return fail(failed(format!(
                "returned {} values, but the call expects {}",
                values.len(),
                result_types.len()
            )));
        }
        values
            .into_iter()
            .zip(result_types)
            .map(|(value, ty)| match (value, ty.is_float()) {
                (Scalar::Int(_), false) | (Scalar::Float(_), true) => Ok(RtValue::Scalar(eval::normalize(value, ty))),
                _ => fail(failed(format!("returned {value:?} for a result of type {}", eval::type_name(ty)))),
            })
            .collect()
    }

    fn kernel(&mut self, name: &str, location: Location) -> Res<KernelHandle> {
        if let Some(&handle) = self.ex.kernels.get(name) {
            return Ok(handle);
        }
        let kernel = self
            .ex
            .symbols
            .get(name)
            .copied()
            .filter(|&k| self.ctx.name_str(k) == "kernel.func")
            .ok_or_else(|| RuntimeError::MissingSymbol { what: "kernel", name: name.to_string(), location })?;
        let handle = self.ex.backend.compile_kernel(self.ctx, kernel)?;
        self.ex.kernels.insert(name.to_string(), handle);
        Ok(handle)
    }

    #[inline(never)]
    fn exec_dispatch(&mut self, frame: &mut Frame, op: Op) -> Res<()> {
        let ctx = self.ctx;
        let location = ctx.location(op);
        let at = self.at(op);
        let name = flat_symbol_ref(ctx, op, "kernel")
            .map(|ident| ctx.ident_str(ident))
            .ok_or_else(|| self.unsupported(op, "has no 'kernel'"))?;
        let (grid_count, _) =
            dispatch_segments(ctx, op).ok_or_else(|| self.unsupported(op, "has malformed 'operandSegmentSizes'"))?;
        if !(1..=3).contains(&grid_count) {
            return Err(self.unsupported(op, format!("has a grid of {grid_count} dimensions (1 to 3 allowed)")));
        }
        let operands = ctx.operands(op);
        let mut grid = [1u64; 3];
        for (dimension, &value) in operands[..grid_count].iter().enumerate() {
            let size = self.scalar(frame, value, op)?.as_i64();
            grid[dimension] = u64::try_from(size)
                .map_err(|_| self.unsupported(op, format!("grid size {size} (dimension {dimension}) is negative")))?;
        }
        let kernel = self.kernel(name, location)?;

        let mut args = Vec::with_capacity(operands.len() - grid_count);
        let mut buffers: Vec<BufferId> = Vec::new();
        for &value in &operands[grid_count..] {
            match self.get(frame, value, op)? {
                RtValue::Scalar(scalar) => args.push(Err((scalar, self.element_type(value, op)?))),
                RtValue::Buffer(id) => {
                    self.buffers.layout(id, at)?;
                    if !buffers.contains(&id) {
                        buffers.push(id);
                    }
                    args.push(Ok(id));
                }
            }
        }
        let reference = self.ex.options.mode == TransferMode::Reference;
        if reference {
            for &id in &buffers {
                self.buffers.transfer(Direction::ToDevice, id, None, at, self.ex.backend, &mut self.recorder)?;
            }
        }
        let mut kernel_args = Vec::with_capacity(args.len());
        for arg in args {
            kernel_args.push(match arg {
                Ok(id) => KernelArg::Buffer(self.buffers.device(id, at, self.ex.backend, &mut self.recorder)?),
                Err((scalar, ty)) => KernelArg::Scalar(scalar, ty),
            });
        }
        let start = Instant::now();
        self.ex.backend.dispatch(kernel, grid, &kernel_args)?;
        self.recorder.dispatch(name, start.elapsed());
        if reference {
            for &id in &buffers {
                self.buffers.transfer(Direction::FromDevice, id, None, at, self.ex.backend, &mut self.recorder)?;
            }
        }
        Ok(())
    }
}
