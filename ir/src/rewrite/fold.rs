//! Folding: computing an op's result without changing the IR.
//!
//! A dialect registers a [`FoldFn`] per op name with [`Context::register_folder`]. The driver
//! (or any pass) calls it with the constant values of the op's operands; the folder answers
//! with the value that can replace the op's single result:
//!
//! - [`FoldResult::Attribute`]: a constant, which the driver materializes as a constant op
//!   (deduplicated and hoisted, see [`super::greedy`]);
//! - [`FoldResult::Value`]: a value that already exists (an operand, say: `x + 0 → x`).
//!
//! A folder never changes the IR: it only reads it and interns attributes through the
//! [`FoldContext`]. It must not panic on any input that verifies (division by zero, overflow,
//! widths it does not handle: it answers `None`, "no fold").

use crate::attributes::AttributeKind;
use crate::dialect::OpTraits;
use crate::{Attribute, Context, Op, Type, Value};

/// What a folder computed for an op's result.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FoldResult {
    /// The result is this constant (typed like the result).
    Attribute(Attribute),
    /// The result equals this existing value.
    Value(Value),
}

/// Folds a single-result op, given the constant values of its operands (in the [`FoldContext`]);
/// `None` when it does not fold.
pub type FoldFn = fn(&mut FoldContext<'_>, Op) -> Option<FoldResult>;

/// What a folder sees: the context (read only), the constant operands of the op being folded,
/// and the attribute interner.
pub struct FoldContext<'a> {
    ctx: &'a mut Context,
    constants: &'a [Option<Attribute>],
}

impl<'a> FoldContext<'a> {
    /// A fold context for an op whose operands have the constant values `constants` (one entry
    /// per operand: `Some` when the operand is defined by a constant-like op).
    pub fn new(ctx: &'a mut Context, constants: &'a [Option<Attribute>]) -> Self {
        FoldContext { ctx, constants }
    }

    /// The context, to read the IR.
    pub fn ctx(&self) -> &Context {
        self.ctx
    }

    /// The constant value of operand `index`, if it is a constant.
    pub fn constant(&self, index: usize) -> Option<Attribute> {
        self.constants.get(index).copied().flatten()
    }

    /// The structure of the constant value of operand `index`, if it is a constant.
    pub fn constant_kind(&self, index: usize) -> Option<&AttributeKind> {
        self.constant(index).map(|a| self.ctx.attribute_kind(a))
    }

    /// Interns an attribute.
    pub fn intern_attribute(&mut self, kind: AttributeKind) -> Attribute {
        self.ctx.intern_attribute(kind)
    }

    /// An integer attribute of type `ty`, sign-extended (wrapped) from the type's width.
    pub fn integer_attr(&mut self, value: i64, ty: Type) -> Attribute {
        self.ctx.integer_attr(value, ty)
    }

    /// A float attribute of type `ty`, rounded to its precision.
    pub fn float_attr(&mut self, value: f64, ty: Type) -> Attribute {
        self.ctx.float_attr(value, ty)
    }
}

/// The constant that `value` holds, when it is the result of a constant-like op: by convention
/// (MLIR's) such an op keeps its value in its `value` attribute.
pub fn constant_value(ctx: &Context, value: Value) -> Option<Attribute> {
    let op = ctx.defining_op(value)?;
    constant_op_value(ctx, op)
}

/// The `value` attribute of a constant-like op.
pub fn constant_op_value(ctx: &Context, op: Op) -> Option<Attribute> {
    if !ctx.has_traits(op, OpTraits::CONSTANT_LIKE) {
        return None;
    }
    ctx.attribute(op, "value")
}

/// Folds `op` with its registered folder: collects its constant operands and calls the folder.
/// `None` when it has no folder, more or fewer than one result, or does not fold.
pub fn fold_op(ctx: &mut Context, op: Op) -> Option<FoldResult> {
    let folder = ctx.folder(ctx.name(op))?;
    if ctx.result_count(op) != 1 {
        return None;
    }
    let constants: Vec<Option<Attribute>> = ctx.operands(op).iter().map(|&v| constant_value(ctx, v)).collect();
    folder(&mut FoldContext::new(ctx, &constants), op)
}
