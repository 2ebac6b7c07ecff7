//! Typed views of `buffer`'s ops.

use hat_ir::{op_view, Context, Value};

op_view! {
    /// `buffer.alloc(sizes) : memref<...>`: one size per dynamic dimension.
    pub struct AllocOp = "buffer.alloc" {
        operands: [; ..dynamic_sizes],
        regions: [],
    }
}

op_view! {
    /// `buffer.dealloc %buffer`.
    pub struct DeallocOp = "buffer.dealloc" {
        operands: [buffer],
        regions: [],
    }
}

op_view! {
    /// `buffer.release %buffer`.
    pub struct ReleaseOp = "buffer.release" {
        operands: [buffer],
        regions: [],
    }
}

op_view! {
    /// `buffer.load %buffer[indices]`.
    pub struct LoadOp = "buffer.load" {
        operands: [buffer; ..indices],
        regions: [],
    }
}

op_view! {
    /// `buffer.store %value, %buffer[indices]`.
    pub struct StoreOp = "buffer.store" {
        operands: [value, buffer; ..indices],
        regions: [],
    }
}

op_view! {
    /// `buffer.dim %buffer, N`.
    pub struct DimOp = "buffer.dim" {
        operands: [buffer],
        regions: [],
    }
}

impl DimOp {
    /// The dimension asked for (the `dimension` attribute).
    pub fn dimension(self, ctx: &Context) -> Option<i64> {
        match ctx.attribute_kind(ctx.attribute(self.0, "dimension")?) {
            hat_ir::AttributeKind::Integer { value, .. } => Some(*value),
            _ => None,
        }
    }
}

op_view! {
    /// `buffer.copy %source, %destination`: host copy to host copy.
    pub struct CopyOp = "buffer.copy" {
        operands: [source, destination],
        regions: [],
    }
}

/// The element range a transfer or hook names: `[offset, count]`, or the whole buffer.
fn element_range(ctx: &Context, op: hat_ir::Op) -> Option<(Value, Value)> {
    match ctx.operands(op) {
        [_, offset, count] => Some((*offset, *count)),
        _ => None,
    }
}

macro_rules! ranged_view {
    ($(#[$meta:meta])* $view:ident = $name:literal) => {
        op_view! {
            $(#[$meta])*
            pub struct $view = $name {
                operands: [buffer; ..range],
                regions: [],
            }
        }

        impl $view {
            /// The element range (`offset`, `count`), or `None` for the whole buffer.
            pub fn element_range(self, ctx: &Context) -> Option<(Value, Value)> {
                element_range(ctx, self.0)
            }
        }
    };
}

ranged_view!(
    /// `buffer.to_device %buffer` or `buffer.to_device %buffer[%offset, %count]`.
    ToDeviceOp = "buffer.to_device"
);
ranged_view!(
    /// `buffer.from_device %buffer` or `buffer.from_device %buffer[%offset, %count]`.
    FromDeviceOp = "buffer.from_device"
);
ranged_view!(
    /// `buffer.before_host_read %buffer(range)`: a runtime-tracking hook.
    BeforeHostReadOp = "buffer.before_host_read"
);
ranged_view!(
    /// `buffer.after_host_read %buffer(range)`: a runtime-tracking hook.
    AfterHostReadOp = "buffer.after_host_read"
);
ranged_view!(
    /// `buffer.before_host_write %buffer(range)`: a runtime-tracking hook.
    BeforeHostWriteOp = "buffer.before_host_write"
);
ranged_view!(
    /// `buffer.after_host_write %buffer(range)`: a runtime-tracking hook.
    AfterHostWriteOp = "buffer.after_host_write"
);
