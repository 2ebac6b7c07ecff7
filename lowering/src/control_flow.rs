//! Structured control flow: counted loops, conditionals and while loops, each as a SPIR-V
//! construct with its merge block (`OpLoopMerge`, `OpSelectionMerge`), values meeting in phis.
//!
//! What an op does is read from its interfaces, so a vendor's op lowers on the same terms as
//! `scf`'s:
//!
//! - An op with [`LoopLikeOpInterface`] is a counted loop (`scf.for`): the induction variable
//!   runs from the lower bound while it is below the upper bound (signed), by the step; a step
//!   that is not positive runs no iteration (the CPU backend reports it as an error).
//! - An op with [`RegionBranchOpInterface`] is a *conditional* when entering it picks one of
//!   two points (regions, or past the op) by one `i1` operand and every region it enters leaves
//!   the op (`scf.if`); it is a *while loop* when entering it runs one region whose terminator
//!   picks, by one of its `i1` operands, between leaving and either a second region that goes
//!   back to the first (`scf.while`) or the first region again (a do-while). Which operand
//!   decides is found by asking the interface with that operand known to be 1 and 0, as the CPU
//!   backend does. Any other shape is a diagnostic at the op.
//!
//! Buffers carried around a loop are handles in phis; inside the loop they may be any buffer of
//! their type (see `memory.rs`).

use crate::function::{FunctionEmitter, Lowered};
use crate::memory::{union, BufferValue};
use crate::Failed;
use hat_ir::interfaces::{
    distinct_successors, CountedLoop, HopDecision, LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint,
};
use hat_ir::{Op, Type, TypeKind, Value};
use rspirv::spirv::{self, Word};
use std::ops::Range;

impl FunctionEmitter<'_> {
    /// Binds `targets` to `sources`, one to one.
    fn bind(&mut self, op: Op, targets: &[Value], sources: Vec<Lowered>) -> Result<(), Failed> {
        if targets.len() != sources.len() {
            let message = format!("forwards {} value(s) into {} input(s)", sources.len(), targets.len());
            return Err(self.error(op, message));
        }
        for (&target, source) in targets.iter().zip(sources) {
            self.define(target, source);
        }
        Ok(())
    }

    fn lower_all(&mut self, op: Op, values: &[Value]) -> Result<Vec<Lowered>, Failed> {
        values.iter().map(|&v| self.lowered(op, v)).collect()
    }

    /// The id a lowered value travels as in a phi.
    fn phi_id(value: &Lowered) -> Word {
        match value {
            Lowered::Scalar(id) => *id,
            Lowered::Buffer(buffer) => buffer.handle,
        }
    }

    /// A value of IR type `ty` that is the phi `id`, to be inserted into a loop header once the
    /// back edge is lowered.
    fn header_value(&mut self, op: Op, ty: Type) -> Result<(Lowered, Word, Word), Failed> {
        let id = self.e.b.id();
        let spirv_type = self.value_type(op, ty)?;
        let lowered = if self.ctx.type_kind(ty).is_memref() {
            Lowered::Buffer(self.dynamic_buffer(id, ty))
        } else {
            Lowered::Scalar(id)
        };
        Ok((lowered, id, spirv_type))
    }

    /// The value of type `ty` meeting from `incoming` (value, predecessor block) at the block
    /// being started.
    fn merge_value(&mut self, op: Op, ty: Type, incoming: &[(Lowered, Word)]) -> Result<Lowered, Failed> {
        let spirv_type = self.value_type(op, ty)?;
        let pairs: Vec<(Word, Word)> = incoming.iter().map(|(value, block)| (Self::phi_id(value), *block)).collect();
        if !matches!(self.ctx.type_kind(ty), TypeKind::MemRef { .. }) {
            return Ok(Lowered::Scalar(self.e.b.phi(spirv_type, None, pairs)?));
        }
        let mut candidates = Vec::new();
        for (value, _) in incoming {
            if let Lowered::Buffer(buffer) = value {
                candidates = union(&candidates, &buffer.candidates);
            }
        }
        if let [leaf] = *candidates {
            return Ok(Lowered::Buffer(self.leaf_value(leaf)));
        }
        let handle = self.e.b.phi(spirv_type, None, pairs)?;
        Ok(Lowered::Buffer(BufferValue { handle, candidates }))
    }

    // ----- counted loops ------------------------------------------------------------------------

    pub fn counted_loop(&mut self, op: Op, looping: &dyn LoopLikeOpInterface) -> Result<(), Failed> {
        let ctx = self.ctx;
        let parts = CountedLoop::of(ctx, op, looping).map_err(|message| self.error(op, message))?;
        let Some(induction) = parts.induction else {
            return Err(self.error(op, "a counted loop needs an induction variable"));
        };
        let counter_type = ctx.value_type(induction);
        let bits = match self.kind(op, counter_type)? {
            crate::function::Kind::Int(bits) => bits,
            _ => return Err(self.error(op, "a counted loop's induction variable must be an integer")),
        };
        let counter = self.e.int(bits);
        let (lower, upper, step) =
            (self.scalar(op, parts.lower)?, self.scalar(op, parts.upper)?, self.scalar(op, parts.step)?);
        let inits = self.lower_all(op, &parts.inits)?;
        let (block, carried, results) = (parts.body, &parts.iter_args, &parts.results);
        let yielded_range = parts.yielded.clone();
        if let Some((trips, first, step)) = self.coarse_unrolled(op) {
            return self.unrolled_loop(
                op,
                block,
                induction,
                bits,
                (trips, first, step),
                carried,
                inits,
                results,
                &yielded_range,
            );
        }
        let bool = self.e.bool();
        let zero = self.e.int_constant(bits, 0);
        let step_positive = self.e.b.s_greater_than(bool, None, step, zero)?;
        let before = self.block;
        let (header, body, continuing, merge) = (self.e.b.id(), self.e.b.id(), self.e.b.id(), self.e.b.id());
        self.e.b.branch(header)?;
        self.start_block(header)?;
        let header_position = self.block_position();
        let counter_phi = self.e.b.id();
        self.define(induction, Lowered::Scalar(counter_phi));
        let mut phis = Vec::with_capacity(carried.len());
        for &argument in carried {
            let (lowered, id, ty) = self.header_value(op, ctx.value_type(argument))?;
            self.define(argument, lowered.clone());
            phis.push((lowered, id, ty));
        }
        let below = self.e.b.s_less_than(bool, None, counter_phi, upper)?;
        let going = self.e.b.logical_and(bool, None, below, step_positive)?;
        self.e.b.loop_merge(merge, continuing, spirv::LoopControl::NONE, [])?;
        self.e.b.branch_conditional(going, body, merge, [])?;
        self.start_block(body)?;
        let yielded = self.loop_body(op, block, &yielded_range)?;
        self.e.b.branch(continuing)?;
        self.start_block(continuing)?;
        let next = self.e.b.i_add(counter, None, counter_phi, step)?;
        self.e.b.branch(header)?;
        self.insert_phi(header_position, counter, counter_phi, &[(lower, before), (next, continuing)]);
        for ((_, id, ty), (init, back)) in phis.iter().zip(inits.iter().zip(&yielded)) {
            self.insert_phi(
                header_position,
                *ty,
                *id,
                &[(Self::phi_id(init), before), (Self::phi_id(back), continuing)],
            );
        }
        self.start_block(merge)?;
        for (&result, (lowered, _, _)) in results.iter().zip(phis) {
            self.define(result, lowered);
        }
        Ok(())
    }

    /// Lowers a loop's body; the values it hands to the next iteration are its terminator's
    /// operands at `yielded` ([`CountedLoop::yielded`], checked).
    fn loop_body(&mut self, op: Op, block: hat_ir::Block, yielded: &Range<usize>) -> Result<Vec<Lowered>, Failed> {
        let terminator = self.ops(block)?;
        let values = self.operands_in(terminator, yielded.clone())?;
        self.lower_all(terminator.unwrap_or(op), &values)
    }

    /// A counted loop of `trips` iterations from `first` by `step` (constants), unrolled in a
    /// coarsened kernel (`coarsen.rs`): the body once per iteration, its induction variable a
    /// constant, the carried values passed from one copy to the next.
    #[allow(clippy::too_many_arguments)]
    fn unrolled_loop(
        &mut self,
        op: Op,
        block: hat_ir::Block,
        induction: Value,
        bits: u32,
        (trips, first, step): (i64, i64, i64),
        carried: &[Value],
        inits: Vec<Lowered>,
        results: &[Value],
        yielded: &Range<usize>,
    ) -> Result<(), Failed> {
        let mut current = inits;
        for iteration in 0..trips {
            let value = first + iteration * step;
            let constant = self.e.int_constant(bits, value);
            self.define(induction, Lowered::Scalar(constant));
            self.coarse_bind_iv(induction, value);
            self.bind(op, carried, current)?;
            current = self.loop_body(op, block, yielded)?;
        }
        for (&result, value) in results.iter().zip(current) {
            self.define(result, value);
        }
        Ok(())
    }

    // ----- region branches ----------------------------------------------------------------------

    /// The one `i1` operand (of `op` when `from` is `Parent`, else of `terminator`) that picks
    /// between two successors of `from`: its index and the successors when it is 1 and 0
    /// ([`HopDecision`], as the runtime decides it).
    fn deciding_operand(
        &self,
        op: Op,
        branches: &dyn RegionBranchOpInterface,
        from: RegionPoint,
        terminator: Option<Op>,
    ) -> Option<(usize, RegionPoint, RegionPoint)> {
        match HopDecision::of(self.ctx, op, branches, from, terminator) {
            Ok(HopDecision::Choose { operand, if_true, if_false }) => Some((operand, if_true, if_false)),
            _ => None,
        }
    }

    fn distinct_successors(
        &self,
        op: Op,
        branches: &dyn RegionBranchOpInterface,
        from: RegionPoint,
    ) -> Vec<RegionPoint> {
        distinct_successors(self.ctx, op, branches, from, &[])
    }

    pub fn region_branch(&mut self, op: Op, branches: &dyn RegionBranchOpInterface) -> Result<(), Failed> {
        let entry = self.distinct_successors(op, branches, RegionPoint::Parent);
        let leaves_only = |this: &Self, point: &RegionPoint| match point {
            RegionPoint::Parent => true,
            RegionPoint::Region(r) => {
                this.distinct_successors(op, branches, RegionPoint::Region(*r)) == [RegionPoint::Parent]
            }
        };
        if !entry.is_empty() && entry.len() <= 2 && entry.iter().all(|p| leaves_only(self, p)) {
            return self.conditional(op, branches, &entry);
        }
        if let [RegionPoint::Region(first)] = *entry {
            return self.while_loop(op, branches, first);
        }
        let name = self.ctx.name_str(op).to_string();
        Err(self
            .error(op, format!("the control flow of '{name}' has no structured SPIR-V form (a conditional or a loop)")))
    }

    /// The one block of region `index` of `op` (an index an interface gave, checked).
    fn region_block(&mut self, op: Op, index: usize) -> Result<hat_ir::Block, Failed> {
        match self.ctx.regions(op).get(index) {
            Some(&region) => self.single_block(op, region),
            None => Err(self
                .error(op, format!("the region-branch interface names region #{index}, which the op does not have"))),
        }
    }

    /// Enters region `region` (from `sources`), lowers it, and returns its terminator.
    fn enter_region(
        &mut self,
        op: Op,
        region: usize,
        sources: Vec<Lowered>,
        branches: &dyn RegionBranchOpInterface,
    ) -> Result<Option<Op>, Failed> {
        let ctx = self.ctx;
        let block = self.region_block(op, region)?;
        let inputs = branches.successor_inputs(ctx, op, RegionPoint::Region(region));
        let Some(targets) = ctx.block_arguments(block).get(inputs).map(<[Value]>::to_vec) else {
            return Err(self.error(op, "the region-branch interface names region inputs that do not exist"));
        };
        self.bind(op, &targets, sources)?;
        self.ops(block)
    }

    /// The values region `from`'s terminator forwards to `to`.
    fn forwarded(
        &mut self,
        op: Op,
        branches: &dyn RegionBranchOpInterface,
        terminator: Option<Op>,
        from: usize,
        to: RegionPoint,
    ) -> Result<Vec<Lowered>, Failed> {
        let range = match terminator {
            Some(terminator) => branches.terminator_operands(self.ctx, op, terminator, from, to),
            None => 0..0,
        };
        let values = self.operands_in(terminator, range)?;
        self.lower_all(terminator.unwrap_or(op), &values)
    }

    /// The values entering `to` from the parent.
    fn entering(
        &mut self,
        op: Op,
        branches: &dyn RegionBranchOpInterface,
        to: RegionPoint,
    ) -> Result<Vec<Lowered>, Failed> {
        let values = self.operands_in(Some(op), branches.entry_operands(self.ctx, op, to))?;
        self.lower_all(op, &values)
    }

    /// The op's results that `Parent`'s inputs name.
    fn parent_inputs(&mut self, op: Op, branches: &dyn RegionBranchOpInterface) -> Result<Vec<Value>, Failed> {
        let results: Vec<Value> = self.ctx.results(op).collect();
        match results.get(branches.successor_inputs(self.ctx, op, RegionPoint::Parent)) {
            Some(values) => Ok(values.to_vec()),
            None => Err(self.error(op, "the region-branch interface names results that do not exist")),
        }
    }

    fn conditional(
        &mut self,
        op: Op,
        branches: &dyn RegionBranchOpInterface,
        entry: &[RegionPoint],
    ) -> Result<(), Failed> {
        let ctx = self.ctx;
        let results = self.parent_inputs(op, branches)?;
        // One way in: no choice to make.
        if let [target] = *entry {
            let values = match target {
                RegionPoint::Parent => self.entering(op, branches, RegionPoint::Parent)?,
                RegionPoint::Region(region) => {
                    let sources = self.entering(op, branches, target)?;
                    let terminator = self.enter_region(op, region, sources, branches)?;
                    self.forwarded(op, branches, terminator, region, RegionPoint::Parent)?
                }
            };
            return self.bind(op, &results, values);
        }
        let Some((index, on_true, on_false)) = self.deciding_operand(op, branches, RegionPoint::Parent, None) else {
            let name = ctx.name_str(op).to_string();
            return Err(self.error(op, format!("no single 'i1' operand of '{name}' decides which region runs")));
        };
        let condition = self.scalar(op, ctx.operand(op, index))?;
        let header = self.block;
        let merge = self.e.b.id();
        let label = |this: &mut Self, point: RegionPoint| match point {
            RegionPoint::Parent => merge,
            RegionPoint::Region(_) => this.e.b.id(),
        };
        let (true_label, false_label) = (label(self, on_true), label(self, on_false));
        self.e.b.selection_merge(merge, spirv::SelectionControl::NONE)?;
        self.e.b.branch_conditional(condition, true_label, false_label, [])?;
        let mut incoming: Vec<Vec<(Lowered, Word)>> = vec![Vec::new(); results.len()];
        for (point, label) in [(on_true, true_label), (on_false, false_label)] {
            let (values, end) = match point {
                RegionPoint::Parent => (self.entering(op, branches, RegionPoint::Parent)?, header),
                RegionPoint::Region(region) => {
                    self.start_block(label)?;
                    let sources = self.entering(op, branches, point)?;
                    let terminator = self.enter_region(op, region, sources, branches)?;
                    let values = self.forwarded(op, branches, terminator, region, RegionPoint::Parent)?;
                    let end = self.block;
                    self.e.b.branch(merge)?;
                    (values, end)
                }
            };
            if values.len() != results.len() {
                return Err(self.error(op, "a branch forwards a different number of values than the op has results"));
            }
            for (slot, value) in incoming.iter_mut().zip(values) {
                slot.push((value, end));
            }
        }
        self.start_block(merge)?;
        for (&result, incoming) in results.iter().zip(&incoming) {
            let value = self.merge_value(op, ctx.value_type(result), incoming)?;
            self.define(result, value);
        }
        Ok(())
    }

    fn while_loop(&mut self, op: Op, branches: &dyn RegionBranchOpInterface, first: usize) -> Result<(), Failed> {
        let ctx = self.ctx;
        let name = ctx.name_str(op).to_string();
        let results = self.parent_inputs(op, branches)?;
        let inits = self.entering(op, branches, RegionPoint::Region(first))?;
        let block = self.region_block(op, first)?;
        let inputs = branches.successor_inputs(ctx, op, RegionPoint::Region(first));
        let Some(arguments) = ctx.block_arguments(block).get(inputs).map(<[Value]>::to_vec) else {
            return Err(self.error(op, "the region-branch interface names region inputs that do not exist"));
        };
        if inits.len() != arguments.len() {
            return Err(self.error(op, "enters its first region with a different number of values than it takes"));
        }
        let before = self.block;
        let (header, start, continuing, merge) = (self.e.b.id(), self.e.b.id(), self.e.b.id(), self.e.b.id());
        self.e.b.branch(header)?;
        self.start_block(header)?;
        let header_position = self.block_position();
        let mut phis = Vec::with_capacity(arguments.len());
        for &argument in &arguments {
            let (lowered, id, ty) = self.header_value(op, ctx.value_type(argument))?;
            self.define(argument, lowered);
            phis.push((id, ty));
        }
        self.e.b.loop_merge(merge, continuing, spirv::LoopControl::NONE, [])?;
        self.e.b.branch(start)?;
        self.start_block(start)?;
        let terminator = self.ops(block)?;
        let decided = self.deciding_operand(op, branches, RegionPoint::Region(first), terminator);
        let Some((index, on_true, on_false)) = decided else {
            return Err(self.error(op, format!("no single 'i1' operand of the terminator of '{name}''s first region decides whether the loop goes on")));
        };
        let (again, out_on_true) = match (on_true, on_false) {
            (RegionPoint::Parent, again @ RegionPoint::Region(_)) => (again, true),
            (again @ RegionPoint::Region(_), RegionPoint::Parent) => (again, false),
            _ => {
                return Err(self.error(
                    op,
                    format!("the control flow of '{name}' has no structured SPIR-V form (a loop must leave or go on)"),
                ))
            }
        };
        let condition = self.scalar(op, ctx.operand(terminator.unwrap_or(op), index))?;
        let leaving = self.forwarded(op, branches, terminator, first, RegionPoint::Parent)?;
        let back = match again {
            RegionPoint::Region(second) if second != first => {
                if self.distinct_successors(op, branches, RegionPoint::Region(second)) != [RegionPoint::Region(first)] {
                    return Err(self.error(op, format!("the second region of '{name}' must go back to the first")));
                }
                let body = self.e.b.id();
                let (on_1, on_0) = if out_on_true { (merge, body) } else { (body, merge) };
                self.e.b.branch_conditional(condition, on_1, on_0, [])?;
                self.start_block(body)?;
                let sources = self.forwarded(op, branches, terminator, first, again)?;
                let second_terminator = self.enter_region(op, second, sources, branches)?;
                let back = self.forwarded(op, branches, second_terminator, second, RegionPoint::Region(first))?;
                self.e.b.branch(continuing)?;
                back
            }
            _ => {
                let back = self.forwarded(op, branches, terminator, first, again)?;
                let (on_1, on_0) = if out_on_true { (merge, continuing) } else { (continuing, merge) };
                self.e.b.branch_conditional(condition, on_1, on_0, [])?;
                back
            }
        };
        if back.len() != phis.len() {
            return Err(self.error(op, "goes back to its first region with a different number of values than it takes"));
        }
        self.start_block(continuing)?;
        self.e.b.branch(header)?;
        for ((id, ty), (init, back)) in phis.iter().zip(inits.iter().zip(&back)) {
            self.insert_phi(
                header_position,
                *ty,
                *id,
                &[(Self::phi_id(init), before), (Self::phi_id(back), continuing)],
            );
        }
        self.start_block(merge)?;
        self.bind(op, &results, leaving)
    }
}
