//! Typed views of the `arith` ops that analyses and executors treat specially: constants (whose
//! value is an attribute) and `select` (which also selects buffers).

use hat_ir::{op_view, Attribute, Context};

op_view! {
    /// `arith.constant VALUE : T`.
    pub struct ConstantOp = "arith.constant" {
        operands: [],
        regions: [],
    }
}

impl ConstantOp {
    /// The constant (the `value` attribute).
    pub fn value(self, ctx: &Context) -> Option<Attribute> {
        ctx.attribute(self.0, "value")
    }
}

op_view! {
    /// `arith.select %condition, %true_value, %false_value : T`.
    pub struct SelectOp = "arith.select" {
        operands: [condition, true_value, false_value],
        regions: [],
    }
}
