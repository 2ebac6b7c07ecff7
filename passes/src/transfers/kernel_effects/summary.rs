//! Function summaries: every access a device function (a kernel or a helper) makes to the
//! buffers bound to its parameters, with the index expressions, guards and loops around it, and
//! what it returns.
//!
//! A summary is built per function, callees first ([`Summarizer`]), and a call puts the
//! callee's accesses in the caller's terms ([`CallBinding`]): the callee's parameters become the
//! caller's arguments (buffers by their origins, scalars by their expressions), the call's own
//! guards and loops are added around them. A callee being summarised when it is called again
//! (recursion), a declaration and an unresolved call are not looked into: the call may read and
//! write every buffer it is passed, anywhere.
//!
//! An access is recorded as:
//! - its target: one parameter, or any (a buffer the analysis cannot name);
//! - what it does (read, write, atomic) and where ([`Extent`]);
//! - its placement: the guards that must hold for it to run, the counted loops around it, and
//!   whether it surely runs, once per iteration of those loops, for every work item where the
//!   guards hold (`must`). `must` holds only through structured control flow whose entry the
//!   analysis can decide: an `if`-like op that one `i1` operand steers (found by asking
//!   `RegionBranchOpInterface::successors` with that operand constant), a region always entered,
//!   the body of a `LoopLikeOpInterface` op (quantified by its induction variable). A region of
//!   several blocks, a region entered from another region (the body of a `while`), an op with
//!   regions and no interface: "may".
//!
//! Workgroup memory is never a parameter: accesses to it are kept apart ([`Summary::locals`], for
//! the race lint), each with its allocation and its barrier phase ([`Phase`]). A kernel names buffers only
//! through SSA values, so an op whose effects are unknown may read and write the buffers among
//! its operands (and nothing else); the ops nested in its regions are looked at one by one.

use super::affine::{Affine, Atom};
use super::barriers::{self, Phase};
use super::guard::Guard;
use super::values::{form_of, CallBinding, Origin, ValueAnalysis, ValueFacts};
use hat_dialects::semantics::{IntPredicate, ScalarOp};
use hat_ir::analysis::dataflow::{solve_sparse_forward, Flat, Lattice, SparseSolution};
use hat_ir::interfaces::{
    constant_integer, resolve_callee, CallOpInterface, CallableOpInterface, LoopLikeOpInterface,
    RegionBranchOpInterface, RegionPoint,
};
use hat_ir::{
    Context, EffectKind, EffectTarget, Extent as EffectExtent, MemoryEffects, MemorySpace, Op, OpTraits, Value,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::rc::Rc;

/// Which buffer an access goes to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Target {
    /// The buffer bound to this parameter.
    Param(usize),
    /// Possibly any buffer parameter.
    Any,
}

/// Which elements an access touches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Extent {
    /// Every element.
    Whole,
    /// One element, by one index per dimension.
    Element(Vec<Affine>),
    /// `count` elements from the flat (row-major) `offset`.
    Span {
        /// The first element.
        offset: Affine,
        /// How many.
        count: Affine,
    },
    /// Some elements, which the analysis does not know.
    Unknown,
}

/// A counted loop around an access: its variable runs from `lower` (included) to `upper`
/// (excluded) by `step`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Loop {
    /// The induction variable (its atom is `Atom::Loop(variable)`).
    pub(super) variable: Value,
    /// The first value.
    pub(super) lower: Affine,
    /// The bound.
    pub(super) upper: Affine,
    /// The increment.
    pub(super) step: Affine,
}

/// One access of a function to a buffer. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Access {
    /// The buffer.
    pub(super) target: Target,
    /// Whether it reads.
    pub(super) read: bool,
    /// Whether it writes.
    pub(super) write: bool,
    /// Whether it is atomic.
    pub(super) atomic: bool,
    /// The elements.
    pub(super) extent: Extent,
    /// Whether it surely runs (see the module documentation).
    pub(super) must: bool,
    /// What must hold for it to run (all of them).
    pub(super) guards: Vec<Guard>,
    /// The counted loops around it, outermost first.
    pub(super) loops: Vec<Loop>,
    /// The op that makes it (in a helper, for an access through a call): where a diagnostic
    /// about it points.
    pub(super) op: Op,
    /// The op of the summarised function that leads to it: `op` itself, or the call.
    pub(super) site: Op,
}

impl Access {
    /// The access with the callee's terms replaced by the caller's, at a call placed at
    /// `placement`, going to `target`; `sole` says whether the argument is surely that buffer.
    fn through_call(&self, binding: &CallBinding, placement: &Placement, target: Target, sole: bool) -> Access {
        let replace = |atom: &Atom| binding.replace(atom);
        let substitute = |form: &Affine| form.substitute(&replace);
        let extent = match &self.extent {
            Extent::Element(indices) => {
                indices.iter().map(substitute).collect::<Option<Vec<_>>>().map_or(Extent::Unknown, Extent::Element)
            }
            Extent::Span { offset, count } => match (substitute(offset), substitute(count)) {
                (Some(offset), Some(count)) => Extent::Span { offset, count },
                _ => Extent::Unknown,
            },
            other => other.clone(),
        };
        let mut loops = placement.loops.clone();
        let mut exact_loops = true;
        for inner in &self.loops {
            match (substitute(&inner.lower), substitute(&inner.upper), substitute(&inner.step)) {
                (Some(lower), Some(upper), Some(step)) => {
                    loops.push(Loop { variable: inner.variable, lower, upper, step })
                }
                _ => exact_loops = false,
            }
        }
        let mut guards = placement.guards.clone();
        guards.extend(self.guards.iter().map(|g| g.substitute(&replace)));
        Access {
            target,
            read: self.read,
            write: self.write,
            atomic: self.atomic,
            extent,
            must: self.must && placement.must && sole && exact_loops,
            guards,
            loops,
            op: self.op,
            site: binding.call(),
        }
    }
}

/// One access to workgroup-local memory (for the race lint).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LocalAccess {
    /// The `kernel.local_alloc` (an op allocating workgroup memory) it goes to.
    pub(super) alloc: Op,
    /// The access (its `target` is [`Target::Any`] and means nothing).
    pub(super) access: Access,
    /// Its barrier phase, when known.
    pub(super) phase: Option<Phase>,
}

/// What a function does to its parameters' buffers, and what it returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Summary {
    /// Its accesses, in terms of its parameters.
    pub(super) accesses: Vec<Access>,
    /// Its accesses to the workgroup memory it allocates (helpers' included, through calls).
    pub(super) locals: Vec<LocalAccess>,
    /// What each result is (joined over its returns), in terms of its parameters.
    pub(super) results: Vec<ValueFacts>,
}

/// The most accesses a summary keeps; past that, accesses merge into one "may, anywhere" access
/// per target (helpers calling helpers many times over cannot blow the analysis up).
const MAX_ACCESSES: usize = 4096;

/// Where an op is, in its function: what must hold for it to run. See the module documentation.
#[derive(Clone, Debug, Default)]
struct Placement {
    guards: Vec<Guard>,
    loops: Vec<Loop>,
    must: bool,
}

/// Builds summaries, callees first, each once.
#[derive(Default)]
pub(super) struct Summarizer {
    done: FxHashMap<Op, Rc<Summary>>,
    active: FxHashSet<Op>,
}

impl Summarizer {
    /// The summary of `function` (a callable with a body; an empty summary otherwise).
    pub(super) fn summary(&mut self, ctx: &Context, function: Op) -> Rc<Summary> {
        if let Some(summary) = self.done.get(&function) {
            return summary.clone();
        }
        self.active.insert(function);
        for op in ctx.walk(function) {
            let Some(callee) = ctx.interface::<dyn CallOpInterface>(op).and_then(|_| resolve_callee(ctx, op)) else {
                continue;
            };
            if has_body(ctx, callee) && !self.active.contains(&callee) && !self.done.contains_key(&callee) {
                self.summary(ctx, callee);
            }
        }
        let summary = Rc::new(self.build(ctx, function));
        self.active.remove(&function);
        self.done.insert(function, summary.clone());
        summary
    }

    fn build(&self, ctx: &Context, function: Op) -> Summary {
        let Some(params) = parameters(ctx, function) else { return Summary::default() };
        let analysis = ValueAnalysis { params: &params, callees: &self.done };
        let solution = solve_sparse_forward(ctx, function, &analysis);
        let barriers = barriers::has_barrier(ctx, function);
        let mut builder = Builder {
            ctx,
            function,
            solution: &solution,
            callees: &self.done,
            guards: FxHashMap::default(),
            barriers,
            locals: Vec::new(),
        };
        let mut accesses = Vec::new();
        let mut results: Vec<ValueFacts> = Vec::new();
        for op in ctx.walk(function).into_iter().skip(1) {
            if !solution.flow().is_op_live(ctx, op) {
                continue;
            }
            let Some(placement) = builder.placement(op) else { continue };
            if ctx.has_traits(op, OpTraits::RETURN_LIKE) && ctx.parent_op(op) == Some(function) {
                for (index, &value) in ctx.operands(op).iter().enumerate() {
                    if results.len() <= index {
                        results.resize(index + 1, ValueFacts::bottom());
                    }
                    results[index].join(solution.lattice(value));
                }
            }
            builder.accesses_of(op, &placement, &mut accesses);
        }
        if accesses.len() > MAX_ACCESSES {
            accesses = merge(accesses);
        }
        let mut locals = builder.locals;
        locals.truncate(MAX_ACCESSES);
        Summary { accesses, locals, results }
    }
}

fn has_body(ctx: &Context, function: Op) -> bool {
    ctx.interface::<dyn CallableOpInterface>(function).and_then(|c| c.body(ctx, function)).is_some()
}

/// The parameters of a callable with a body (its entry block's arguments).
pub(super) fn parameters(ctx: &Context, function: Op) -> Option<Vec<Value>> {
    let body = ctx.interface::<dyn CallableOpInterface>(function)?.body(ctx, function)?;
    let &entry = ctx.region_blocks(body).first()?;
    Some(ctx.block_arguments(entry).to_vec())
}

/// One "may, anywhere" access per target and atomicity, in place of many.
fn merge(accesses: Vec<Access>) -> Vec<Access> {
    let mut merged: Vec<Access> = Vec::new();
    for access in accesses {
        match merged.iter_mut().find(|m| m.target == access.target && m.atomic == access.atomic) {
            Some(m) => {
                m.read |= access.read;
                m.write |= access.write;
            }
            None => merged.push(Access {
                extent: Extent::Unknown,
                must: false,
                guards: Vec::new(),
                loops: Vec::new(),
                ..access
            }),
        }
    }
    merged
}

/// The state of one summary being built.
struct Builder<'a> {
    ctx: &'a Context,
    function: Op,
    solution: &'a SparseSolution<ValueFacts>,
    callees: &'a FxHashMap<Op, Rc<Summary>>,
    /// The guard of each condition value, once built.
    guards: FxHashMap<Value, Guard>,
    /// Whether the function (or what it calls) holds a workgroup barrier.
    barriers: bool,
    /// The accesses to workgroup memory found so far.
    locals: Vec<LocalAccess>,
}

/// How deep a condition is followed through `andi`/`ori`/...: past that, unknown.
const MAX_GUARD_DEPTH: usize = 16;

impl Builder<'_> {
    fn facts(&self, value: Value) -> &ValueFacts {
        self.solution.lattice(value)
    }

    fn form(&self, value: Value) -> Affine {
        form_of(self.facts(value), value)
    }

    /// The buffers `value` may be.
    fn origins(&self, value: Value) -> Vec<Origin> {
        let buffers = &self.facts(value).buffers.0;
        if buffers.is_empty() {
            vec![Origin::Unknown]
        } else {
            buffers.iter().copied().collect()
        }
    }

    /// Where `op` is in the function; `None` when it is inside another function nested in it.
    fn placement(&mut self, op: Op) -> Option<Placement> {
        let ctx = self.ctx;
        let mut placement = Placement { must: true, ..Placement::default() };
        let mut loops_inner_first = Vec::new();
        let mut current = op;
        loop {
            let block = ctx.parent_block(current)?;
            let region = ctx.block_parent(block)?;
            let parent = ctx.region_parent(region)?;
            if ctx.region_blocks(region).len() > 1 {
                placement.must = false;
            }
            if parent == self.function {
                break;
            }
            if ctx.interface::<dyn CallableOpInterface>(parent).is_some() {
                return None;
            }
            let index = ctx.regions(parent).iter().position(|&r| r == region)?;
            match ctx.interface::<dyn LoopLikeOpInterface>(parent) {
                Some(looping) if looping.body(ctx, parent) == region => {
                    let bounds = (
                        looping.induction_variable(ctx, parent),
                        looping.lower_bound(ctx, parent),
                        looping.upper_bound(ctx, parent),
                        looping.step(ctx, parent),
                    );
                    match bounds {
                        (Some(variable), Some(lower), Some(upper), Some(step)) => loops_inner_first.push(Loop {
                            variable,
                            lower: self.form(lower),
                            upper: self.form(upper),
                            step: self.form(step),
                        }),
                        _ => placement.must = false,
                    }
                }
                _ => match ctx.interface::<dyn RegionBranchOpInterface>(parent) {
                    Some(branches) => self.enter_region(branches, parent, index, &mut placement),
                    None => placement.must = false,
                },
            }
            current = parent;
        }
        loops_inner_first.reverse();
        placement.loops = loops_inner_first;
        Some(placement)
    }

    /// Adds what must hold for control to enter region `index` of `op` from its parent.
    fn enter_region(
        &mut self,
        branches: &dyn RegionBranchOpInterface,
        op: Op,
        index: usize,
        placement: &mut Placement,
    ) {
        let ctx = self.ctx;
        let region = RegionPoint::Region(index);
        let unknown = vec![None; ctx.operands(op).len()];
        let always = branches.successors(ctx, op, RegionPoint::Parent, &unknown);
        if !always.contains(&region) {
            placement.must = false; // entered from another region
            return;
        }
        if always.as_slice() == [region] {
            return;
        }
        let mut decided = Vec::new();
        for (k, &operand) in ctx.operands(op).iter().enumerate() {
            if ctx.type_kind(ctx.value_type(operand)).bit_width() != Some(1) {
                continue;
            }
            let with = |value: i64| {
                let mut constants = unknown.clone();
                constants[k] = Some(value);
                branches.successors(ctx, op, RegionPoint::Parent, &constants)
            };
            let (when_true, when_false) = (with(1), with(0));
            let guard = match (when_true.contains(&region), when_false.contains(&region)) {
                (true, true) => continue,
                (true, false) => {
                    decided.push(when_true.as_slice() == [region]);
                    self.guard(operand, 0)
                }
                (false, true) => {
                    decided.push(when_false.as_slice() == [region]);
                    Guard::Not(Box::new(self.guard(operand, 0)))
                }
                (false, false) => Guard::False,
            };
            placement.guards.push(guard);
        }
        if decided.as_slice() != [true] {
            placement.must = false;
        }
    }

    /// The guard an `i1` value stands for.
    fn guard(&mut self, value: Value, depth: usize) -> Guard {
        if let Some(guard) = self.guards.get(&value) {
            return guard.clone();
        }
        let guard = self.build_guard(value, depth);
        self.guards.insert(value, guard.clone());
        guard
    }

    fn build_guard(&mut self, value: Value, depth: usize) -> Guard {
        let ctx = self.ctx;
        if let Some(constant) = constant_integer(ctx, value) {
            return if constant != 0 { Guard::True } else { Guard::False };
        }
        if let Flat::Known(form) = &self.facts(value).form {
            if let Some(constant) = form.as_constant() {
                return if constant != 0 { Guard::True } else { Guard::False };
            }
        }
        let Some(op) = ctx.defining_op(value) else {
            // A condition passed in (a parameter): true when not zero, once the dispatch says.
            return match &self.facts(value).form {
                Flat::Known(form) => Guard::compare(form.clone(), Affine::constant(0), IntPredicate::Ne),
                _ => Guard::Unknown,
            };
        };
        if depth >= MAX_GUARD_DEPTH || ctx.type_kind(ctx.value_type(value)).bit_width() != Some(1) {
            return Guard::Unknown;
        }
        let operands = ctx.operands(op).to_vec();
        let sub = |this: &mut Self, i: usize| Box::new(this.guard(operands[i], depth + 1));
        match ScalarOp::decode(ctx, op) {
            Ok(ScalarOp::CmpI(predicate)) => {
                // An `i1` read as signed is 0 or -1, which the expressions (0 or 1) do not say.
                let width = ctx.type_kind(ctx.value_type(operands[0])).bit_width();
                if width.is_none_or(|w| w < 2) {
                    return Guard::Unknown;
                }
                Guard::compare(self.form(operands[0]), self.form(operands[1]), predicate)
            }
            Ok(ScalarOp::AndI) => Guard::And(sub(self, 0), sub(self, 1)),
            Ok(ScalarOp::OrI) => Guard::Or(sub(self, 0), sub(self, 1)),
            Ok(ScalarOp::XorI) => {
                let (a, b) = (sub(self, 0), sub(self, 1));
                match (*a, *b) {
                    (Guard::True, other) | (other, Guard::True) => Guard::Not(Box::new(other)),
                    (Guard::False, other) | (other, Guard::False) => other,
                    (a, b) => Guard::Or(
                        Box::new(Guard::And(Box::new(a.clone()), Box::new(Guard::Not(Box::new(b.clone()))))),
                        Box::new(Guard::And(Box::new(Guard::Not(Box::new(a))), Box::new(b))),
                    ),
                }
            }
            Ok(ScalarOp::Select) => {
                let (condition, a, b) = (sub(self, 0), sub(self, 1), sub(self, 2));
                Guard::Or(
                    Box::new(Guard::And(condition.clone(), a)),
                    Box::new(Guard::And(Box::new(Guard::Not(condition)), b)),
                )
            }
            _ => Guard::Unknown,
        }
    }

    /// The barrier phase of `op`, an op of this function, then of `inner` in `callee` (called
    /// by `op`).
    fn phase(&self, op: Op, inner: Option<(Op, Op)>) -> Option<Phase> {
        if !self.barriers {
            return Some(Phase::start());
        }
        let outer = barriers::phase(self.ctx, self.function, op)?;
        match inner {
            None => Some(outer),
            Some((callee, inner)) => Some(outer.then(&barriers::phase(self.ctx, callee, inner)?)),
        }
    }

    /// Appends the accesses `op` makes (itself, or through the function it calls).
    fn accesses_of(&mut self, op: Op, placement: &Placement, accesses: &mut Vec<Access>) {
        let ctx = self.ctx;
        if let Some(call) = ctx.interface::<dyn CallOpInterface>(op) {
            let arguments = ctx.operands(op)[call.arguments(ctx, op)].to_vec();
            let summary = resolve_callee(ctx, op).and_then(|callee| self.callees.get(&callee));
            let operand_facts: Vec<&ValueFacts> = ctx.operands(op).iter().map(|&v| self.facts(v)).collect();
            let binding = CallBinding::new(ctx, op, &operand_facts);
            let callee = resolve_callee(ctx, op);
            match (summary, binding) {
                (Some(summary), Some(binding)) => {
                    for local in &summary.locals {
                        let phase = match (&local.phase, self.phase(op, None)) {
                            (Some(inner), Some(outer)) => Some(outer.then(inner)),
                            _ => None,
                        };
                        let access = local.access.through_call(&binding, placement, Target::Any, false);
                        self.locals.push(LocalAccess { alloc: local.alloc, access, phase });
                    }
                    for access in &summary.accesses {
                        if let Target::Param(p) = access.target {
                            for origin in binding.map_origin(Origin::Param(p)) {
                                if let Origin::Local(alloc) = origin {
                                    let phase = callee.and_then(|callee| self.phase(op, Some((callee, access.op))));
                                    let access = access.through_call(&binding, placement, Target::Any, false);
                                    self.locals.push(LocalAccess { alloc, access, phase });
                                }
                            }
                        }
                        let targets: Vec<Target> = match access.target {
                            Target::Param(p) => {
                                binding.map_origin(Origin::Param(p)).into_iter().filter_map(target_of).collect()
                            }
                            Target::Any => vec![Target::Any],
                        };
                        let sole = targets.len() == 1
                            && match access.target {
                                Target::Param(p) => binding.map_origin(Origin::Param(p)).len() == 1,
                                Target::Any => true,
                            };
                        for target in targets {
                            accesses.push(access.through_call(&binding, placement, target, sole));
                        }
                    }
                }
                // Recursion, a declaration, an unresolved callee: anything on what it is passed.
                _ => {
                    for argument in arguments.into_iter().filter(|&a| ctx.type_kind(ctx.value_type(a)).is_memref()) {
                        self.push_unknown(op, argument, placement, accesses);
                    }
                }
            }
            return;
        }
        if ctx.interface::<dyn RegionBranchOpInterface>(op).is_some()
            || ctx.has_traits(op, OpTraits::RECURSIVE_EFFECTS)
            || ctx.has_traits(op, OpTraits::PURE)
        {
            return; // no effects of their own; their regions' ops are visited
        }
        let effects = ctx.definition(ctx.name(op)).map_or(MemoryEffects::Unknown, |d| d.memory_effects(ctx, op));
        let MemoryEffects::Known(effects) = effects else {
            for &operand in ctx.operands(op).iter().filter(|&&v| ctx.type_kind(ctx.value_type(v)).is_memref()) {
                self.push_unknown(op, operand, placement, accesses);
            }
            return;
        };
        let operands = ctx.operands(op);
        for effect in effects.iter() {
            let (read, write) = match effect.kind {
                EffectKind::Read => (true, false),
                EffectKind::Write => (false, true),
                _ => continue,
            };
            if matches!(effect.space, MemorySpace::Workgroup | MemorySpace::Host) {
                continue;
            }
            let origins = match effect.target {
                EffectTarget::Operand(i) => match operands.get(i) {
                    Some(&value) => self.origins(value),
                    None => vec![Origin::Unknown],
                },
                EffectTarget::Result(_) => continue, // a buffer the op creates
                EffectTarget::Parameter(_) | EffectTarget::All => vec![Origin::Unknown],
            };
            let forms = |range: std::ops::Range<usize>| -> Option<Vec<Affine>> {
                operands.get(range).map(|values| values.iter().map(|&v| self.form(v)).collect())
            };
            let extent = match effect.extent {
                EffectExtent::Whole => Extent::Whole,
                EffectExtent::Element { .. } => {
                    forms(effect.extent.operands()).map_or(Extent::Unknown, Extent::Element)
                }
                EffectExtent::Span { .. } => match forms(effect.extent.operands()).as_deref() {
                    Some([offset, count]) => Extent::Span { offset: offset.clone(), count: count.clone() },
                    _ => Extent::Unknown,
                },
            };
            let sole = origins.len() == 1;
            for &origin in &origins {
                if let Origin::Local(alloc) = origin {
                    let access = Access {
                        target: Target::Any,
                        read,
                        write,
                        atomic: effect.atomic,
                        extent: extent.clone(),
                        must: false,
                        guards: placement.guards.clone(),
                        loops: placement.loops.clone(),
                        op,
                        site: op,
                    };
                    let phase = self.phase(op, None);
                    self.locals.push(LocalAccess { alloc, access, phase });
                }
            }
            for target in origins.into_iter().filter_map(target_of) {
                accesses.push(Access {
                    target,
                    read,
                    write,
                    atomic: effect.atomic,
                    extent: extent.clone(),
                    must: effect.must && placement.must && sole,
                    guards: placement.guards.clone(),
                    loops: placement.loops.clone(),
                    op,
                    site: op,
                });
            }
        }
    }

    /// A read and write of anything of `buffer`, by `op`.
    fn push_unknown(&self, op: Op, buffer: Value, placement: &Placement, accesses: &mut Vec<Access>) {
        for target in self.origins(buffer).into_iter().filter_map(target_of) {
            accesses.push(Access {
                target,
                read: true,
                write: true,
                atomic: false,
                extent: Extent::Unknown,
                must: false,
                guards: placement.guards.clone(),
                loops: placement.loops.clone(),
                op,
                site: op,
            });
        }
    }
}

/// The target of an access to a buffer of this origin (`None`: not a parameter's).
fn target_of(origin: Origin) -> Option<Target> {
    match origin {
        Origin::Param(p) => Some(Target::Param(p)),
        Origin::Local(_) => None,
        Origin::Unknown => Some(Target::Any),
    }
}
