//! Helper calls: one SPIR-V function per *instance* of a helper, `OpFunctionCall` at each call.
//!
//! An instance is a helper with, for each of its buffer parameters, the set of the kernel's
//! buffers the argument may be (see `memory.rs`): a helper called with different buffers gets
//! one function per distinct set, each accessing its buffers directly, and a buffer parameter
//! travels as its 32-bit handle. Instances belong to one kernel (each kernel has its own
//! buffer variables and push constants). Multiple results return as a struct.
//!
//! Recursion was refused before lowering (`reach.rs`), so instances are finitely many.

use crate::function::{FunctionEmitter, Lowered};
use crate::memory::BufferValue;
use crate::reach::symbol;
use crate::Failed;
use hat_ir::interfaces::{CallOpInterface, CallableOpInterface};
use hat_ir::{Op, OpTraits, Type};
use rspirv::spirv::{self, Word};

/// What identifies an instance: the helper, and per parameter the buffers a buffer parameter
/// may be (`None` for a scalar).
pub(crate) type InstanceKey = (Op, Vec<Option<Vec<u32>>>);

/// A helper instance to emit.
#[derive(Clone, Debug)]
pub(crate) struct Instance {
    pub function: Word,
    pub helper: Op,
    /// Per parameter: the buffers a buffer parameter may be; `None` for a scalar.
    pub buffers: Vec<Option<Vec<u32>>>,
}

impl FunctionEmitter<'_> {
    /// The SPIR-V return type of a function with these results.
    fn return_type(&mut self, op: Op, results: &[Type]) -> Result<Word, Failed> {
        let types = results.iter().map(|&ty| self.value_type(op, ty)).collect::<Result<Vec<_>, _>>()?;
        Ok(match *types {
            [] => self.e.void(),
            [single] => single,
            _ => self.e.b.type_struct(types),
        })
    }

    /// The function type of `helper` for these parameter and result types.
    fn function_type(&mut self, op: Op, parameters: &[Type], results: &[Type]) -> Result<(Word, Word), Failed> {
        let ret = self.return_type(op, results)?;
        let parameters = parameters.iter().map(|&ty| self.value_type(op, ty)).collect::<Result<Vec<_>, _>>()?;
        Ok((ret, self.e.b.type_function(ret, parameters)))
    }

    pub fn call(&mut self, op: Op, call: &dyn CallOpInterface) -> Result<(), Failed> {
        let ctx = self.ctx;
        let Some(&helper) = self.k.callees.get(&op) else {
            return Err(self.error(op, "calls a function that the kernel's walk did not resolve"));
        };
        let range = call.arguments(ctx, op);
        let arguments = self.operands_in(Some(op), range)?;
        let mut ids = Vec::with_capacity(arguments.len());
        let mut buffers = Vec::with_capacity(arguments.len());
        for &argument in &arguments {
            match self.lowered(op, argument)? {
                Lowered::Scalar(id) => {
                    ids.push(id);
                    buffers.push(None);
                }
                Lowered::Buffer(buffer) => {
                    ids.push(buffer.handle);
                    buffers.push(Some(buffer.candidates));
                }
            }
        }
        let key = (helper, buffers);
        let function = match self.k.instances.get(&key) {
            Some(&function) => function,
            None => {
                let function = self.e.b.id();
                self.k.instances.insert(key.clone(), function);
                self.k.queue.push(Instance { function, helper, buffers: key.1 });
                function
            }
        };
        let results: Vec<Type> = ctx.results(op).map(|r| ctx.value_type(r)).collect();
        let ret = self.return_type(op, &results)?;
        let value = self.e.b.function_call(ret, None, function, ids)?;
        let values: Vec<Word> = match results.len() {
            0 => Vec::new(),
            1 => vec![value],
            _ => {
                let mut values = Vec::new();
                for (index, &ty) in results.iter().enumerate() {
                    let ty = self.value_type(op, ty)?;
                    values.push(self.e.b.composite_extract(ty, None, value, [index as u32])?);
                }
                values
            }
        };
        for (result, id) in ctx.results(op).zip(values) {
            let ty = ctx.value_type(result);
            let lowered = if ctx.type_kind(ty).is_memref() {
                Lowered::Buffer(self.dynamic_buffer(id, ty))
            } else {
                Lowered::Scalar(id)
            };
            self.define(result, lowered);
        }
        Ok(())
    }

    /// Emits a helper instance.
    pub fn helper_function(&mut self, instance: &Instance) -> Result<(), Failed> {
        let ctx = self.ctx;
        let helper = instance.helper;
        let callable = ctx.interface::<dyn CallableOpInterface>(helper);
        let body = callable.and_then(|c| c.body(ctx, helper));
        let Some(body) = body else {
            return Err(self.error(helper, "a helper needs a body"));
        };
        let block = self.single_block(helper, body)?;
        let parameters: Vec<Type> = ctx.block_arguments(block).iter().map(|&a| ctx.value_type(a)).collect();
        let results = callable.and_then(|c| c.signature(ctx, helper)).map(|(_, results)| results).unwrap_or_default();
        let (ret, function_type) = self.function_type(helper, &parameters, &results)?;
        self.e.b.begin_function(ret, Some(instance.function), spirv::FunctionControl::NONE, function_type)?;
        // Instances of one helper share its name: the disassembly says which helper each is.
        let name = format!("{}.{}", self.k.name, symbol(ctx, helper));
        self.e.b.name(instance.function, name);
        for (index, &argument) in ctx.block_arguments(block).iter().enumerate() {
            let ty = self.value_type(helper, parameters[index])?;
            let id = self.e.b.function_parameter(ty)?;
            let lowered = match instance.buffers.get(index) {
                Some(Some(candidates)) => match **candidates {
                    [leaf] => Lowered::Buffer(self.leaf_value(leaf)),
                    _ => Lowered::Buffer(BufferValue { handle: id, candidates: candidates.clone() }),
                },
                _ => Lowered::Scalar(id),
            };
            self.define(argument, lowered);
        }
        let entry = self.e.b.id();
        self.start_block(entry)?;
        if self.k.has_barrier {
            self.in_grid = Some(self.compute_in_grid()?);
        }
        let terminator = self.ops(block)?;
        let Some(terminator) = terminator.filter(|&op| ctx.has_traits(op, OpTraits::RETURN_LIKE)) else {
            if results.is_empty() && terminator.is_none() {
                self.e.b.ret()?;
                self.e.b.end_function()?;
                return Ok(());
            }
            return Err(self.error(helper, "a helper's body must end in a return-like op"));
        };
        let values = ctx.operands(terminator).to_vec();
        let mut ids = Vec::with_capacity(values.len());
        for value in values {
            ids.push(match self.lowered(terminator, value)? {
                Lowered::Scalar(id) => id,
                Lowered::Buffer(buffer) => buffer.handle,
            });
        }
        match *ids {
            [] => self.e.b.ret()?,
            [single] => self.e.b.ret_value(single)?,
            _ => {
                let composite = self.e.b.composite_construct(ret, None, ids)?;
                self.e.b.ret_value(composite)?
            }
        }
        self.e.b.end_function()?;
        Ok(())
    }
}
