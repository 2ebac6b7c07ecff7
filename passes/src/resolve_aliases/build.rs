//! Making the arithmetic and `scf` ops a rewrite of a loop needs, at a chosen place, with the
//! constants gathered above everything it makes.

use super::residues::Resolved;
use hat_dialects::semantics::IntPredicate;
use hat_ir::rewrite::{Mapping, Rewriter};
use hat_ir::{Block, Location, Op, OperationState, Type, Value};
use rustc_hash::FxHashMap;

/// Where new ops go: before an op, or at the end of a block.
#[derive(Copy, Clone)]
pub(super) enum At {
    Before(Op),
    End(Block),
}

pub(super) struct Builder<'r, 'c> {
    pub(super) rw: &'r mut Rewriter<'c>,
    pub(super) location: Location,
    /// Constants made before the loop, by value and type.
    pub(super) constants: FxHashMap<(i64, Type), Value>,
    /// Where constants go: above everything the specialisation makes.
    pub(super) anchor: Op,
}

impl Builder<'_, '_> {
    pub(super) fn place(&mut self, at: At, state: OperationState) -> Op {
        let op = self.rw.create_op(state);
        match at {
            At::Before(anchor) => self.rw.insert_op_before(anchor, op),
            At::End(block) => self.rw.append_op(block, op),
        }
        op
    }

    pub(super) fn constant(&mut self, value: i64, ty: Type) -> Value {
        if let Some(&v) = self.constants.get(&(value, ty)) {
            return v;
        }
        let ctx = self.rw.ctx_mut();
        let attribute = ctx.integer_attr(value, ty);
        let mut state = OperationState::new(ctx.op_name("arith.constant"), self.location);
        let key = ctx.ident("value");
        state.attributes.push((key, attribute));
        state.result_types.push(ty);
        let op = self.place(At::Before(self.anchor), state);
        let v = self.rw.ctx().result(op, 0);
        self.constants.insert((value, ty), v);
        v
    }

    pub(super) fn binary(&mut self, at: At, name: &str, lhs: Value, rhs: Value) -> Value {
        let ty = self.rw.ctx().value_type(lhs);
        let mut state = OperationState::new(self.rw.ctx_mut().op_name(name), self.location);
        state.operands.extend([lhs, rhs]);
        state.result_types.push(ty);
        let op = self.place(at, state);
        self.rw.ctx().result(op, 0)
    }

    pub(super) fn compare(&mut self, at: At, predicate: IntPredicate, lhs: Value, rhs: Value) -> Value {
        let ctx = self.rw.ctx_mut();
        let i1 = ctx.integer_type(1);
        let i64_type = ctx.integer_type(64);
        let attribute = ctx.integer_attr(predicate.to_i64(), i64_type);
        let mut state = OperationState::new(ctx.op_name("arith.cmpi"), self.location);
        let key = ctx.ident("predicate");
        state.attributes.push((key, attribute));
        state.operands.extend([lhs, rhs]);
        state.result_types.push(i1);
        let op = self.place(at, state);
        self.rw.ctx().result(op, 0)
    }

    pub(super) fn select(&mut self, at: At, condition: Value, a: Value, b: Value) -> Value {
        let ty = self.rw.ctx().value_type(a);
        let mut state = OperationState::new(self.rw.ctx_mut().op_name("arith.select"), self.location);
        state.operands.extend([condition, a, b]);
        state.result_types.push(ty);
        let op = self.place(at, state);
        self.rw.ctx().result(op, 0)
    }

    /// `scf.yield values` at the end of `block`.
    pub(super) fn end(&mut self, block: Block, values: &[Value]) {
        let mut state = OperationState::new(self.rw.ctx_mut().op_name("scf.yield"), self.location);
        state.operands.extend_from_slice(values);
        self.place(At::End(block), state);
    }

    /// A value for `resolved`, of type `ty` (constants are made before the loop).
    pub(super) fn materialize(&mut self, resolved: Resolved, ty: Type, mapping: &Mapping) -> Value {
        match resolved {
            Resolved::Outer(v) => v,
            Resolved::Local(v) => mapping.lookup(v),
            Resolved::Constant(n) => self.constant(n, ty),
            Resolved::Carried(j) => unreachable!("a free carried value ({j}) is never materialized"),
        }
    }
}
