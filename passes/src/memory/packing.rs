//! Offsets for buffers in one arena: the algorithm lives with `buffer.arena`, which runs it when
//! a call's sizes are known; `plan-memory` runs the same when they are known before.

pub use hat_dialects::buffer::packing::{pack, Order, Packing};
