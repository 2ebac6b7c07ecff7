//! Which buffers a buffer-typed value of host code may be: its *roots*, the values that make a
//! buffer — a function's parameters and the results of ops that allocate (by the effects
//! interface) — followed through `arith.select` and through the values that structured control
//! flow carries (the region-branch interface: loop-carried buffers, `scf.if` results).
//!
//! A value that comes from anything else (an unknown op; a call's result, unless asked for
//! [`BufferRoots::with_calls`]) has unknown roots, and an analysis must assume it may be any
//! buffer.

use hat_dialects::arith_views::SelectOp;
use hat_ir::interfaces::{CallOpInterface, RegionBranchOpInterface, RegionPoint};
use hat_ir::{Context, EffectKind, EffectTarget, MemoryEffects, Op, TypeKind, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::collections::BTreeSet;

/// The roots of the buffer values of one function.
#[derive(Default, Debug)]
pub struct BufferRoots {
    roots: FxHashMap<Value, Roots>,
}

/// What a value may be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roots {
    /// One of these buffers.
    Known(BTreeSet<Value>),
    /// Any buffer.
    Unknown,
}

impl Roots {
    fn merge(&mut self, other: &Roots) -> bool {
        match (&mut *self, other) {
            (Roots::Unknown, _) => false,
            (_, Roots::Unknown) => {
                *self = Roots::Unknown;
                true
            }
            (Roots::Known(a), Roots::Known(b)) => {
                let before = a.len();
                a.extend(b.iter().copied());
                a.len() != before
            }
        }
    }
}

/// Whether `value` is a buffer.
pub fn is_buffer(ctx: &Context, value: Value) -> bool {
    matches!(ctx.type_kind(ctx.value_type(value)), TypeKind::MemRef { .. })
}

impl BufferRoots {
    /// The roots of every buffer value under `function` (whose entry block's arguments are
    /// roots), its parameters assumed distinct buffers.
    pub fn of(ctx: &Context, function: Op) -> BufferRoots {
        BufferRoots::with_aliased_parameters(ctx, function, &[])
    }

    /// The roots of every buffer value under `function`, where each group of `aliased` (indices
    /// of the entry block's arguments) may be one buffer: a value of a parameter in a group may be
    /// any parameter of the group, so that an access through one counts for all of them and a
    /// write through one is partial ([`parameter_aliasing`] finds the groups from the calls).
    pub fn with_aliased_parameters(ctx: &Context, function: Op, aliased: &[Vec<usize>]) -> BufferRoots {
        BufferRoots::with_aliased_parameters_in(ctx, function, aliased, &ctx.walk(function))
    }

    /// [`BufferRoots::with_aliased_parameters`], given `ops`, the walk of `function`.
    pub fn with_aliased_parameters_in(ctx: &Context, function: Op, aliased: &[Vec<usize>], ops: &[Op]) -> BufferRoots {
        BufferRoots::build(ctx, function, aliased, ops, false)
    }

    /// The roots of every buffer value under `function`, a call's buffer result counted as a
    /// root of its own that may also be any buffer the call passes (a function cannot make a
    /// buffer out of anything but its parameters and its own allocations). Parameters are
    /// assumed distinct, as in [`BufferRoots::of`].
    pub fn with_calls(ctx: &Context, function: Op) -> BufferRoots {
        BufferRoots::build(ctx, function, &[], &ctx.walk(function), true)
    }

    fn build(ctx: &Context, function: Op, aliased: &[Vec<usize>], ops: &[Op], calls: bool) -> BufferRoots {
        let mut this = BufferRoots::default();
        if let Some(&entry) = ctx.regions(function).first().and_then(|&r| ctx.region_blocks(r).first()) {
            let arguments = ctx.block_arguments(entry);
            for &argument in arguments {
                this.root(ctx, argument);
            }
            for group in aliased {
                let members: BTreeSet<Value> =
                    group.iter().filter_map(|&i| arguments.get(i).copied()).filter(|&v| is_buffer(ctx, v)).collect();
                for &member in &members {
                    this.roots.insert(member, Roots::Known(members.clone()));
                }
            }
        }
        for &op in ops {
            for result in ctx.results(op) {
                if is_buffer(ctx, result) && allocates(ctx, op, result) {
                    this.root(ctx, result);
                }
            }
        }
        // Buffers made by ops nothing here explains may be any buffer. Only selects and control
        // flow carry buffers (they explain their results): the propagation below visits them.
        let mut carriers: Vec<Op> = Vec::new();
        for &op in ops {
            let call = calls && ctx.interface::<dyn CallOpInterface>(op).is_some();
            if call {
                for result in ctx.results(op) {
                    if is_buffer(ctx, result) {
                        this.root(ctx, result);
                    }
                }
            }
            let explained =
                call || SelectOp::wrap(ctx, op).is_some() || ctx.interface::<dyn RegionBranchOpInterface>(op).is_some();
            if explained {
                carriers.push(op);
            }
            for result in ctx.results(op) {
                if is_buffer(ctx, result) && !this.roots.contains_key(&result) && !explained {
                    this.roots.insert(result, Roots::Unknown);
                }
            }
            if op != function && !explained {
                for &region in ctx.regions(op) {
                    for &block in ctx.region_blocks(region) {
                        for &argument in ctx.block_arguments(block) {
                            if is_buffer(ctx, argument) {
                                this.roots.insert(argument, Roots::Unknown);
                            }
                        }
                    }
                }
            }
        }
        // Propagate to a fixpoint: each round only grows the sets. Only selects and control
        // flow carry buffers, so only they are visited again.
        loop {
            let mut changed = false;
            for &op in &carriers {
                changed |= this.propagate(ctx, op);
            }
            if !changed {
                break;
            }
        }
        this
    }

    fn root(&mut self, ctx: &Context, value: Value) {
        if is_buffer(ctx, value) {
            self.roots.insert(value, Roots::Known([value].into_iter().collect()));
        }
    }

    /// The roots of `value`: unknown for a buffer nothing here explains.
    pub fn roots(&self, value: Value) -> Roots {
        self.roots_ref(value).clone()
    }

    /// [`BufferRoots::roots`], borrowed.
    pub fn roots_ref(&self, value: Value) -> &Roots {
        static UNKNOWN: Roots = Roots::Unknown;
        self.roots.get(&value).unwrap_or(&UNKNOWN)
    }

    /// Whether `a` and `b` may be the same buffer (an unknown value may be any).
    pub fn may_alias(&self, a: Value, b: Value) -> bool {
        match (self.roots_ref(a), self.roots_ref(b)) {
            // Most buffers have one root: compare them without setting up an intersection.
            (Roots::Known(x), Roots::Known(y)) if x.len() == 1 && y.len() == 1 => x.first() == y.first(),
            (Roots::Known(x), Roots::Known(y)) => x.intersection(y).next().is_some(),
            _ => true,
        }
    }

    /// Per parameter of `function` (its entry block's arguments): whether it is a buffer that
    /// may be another parameter (one of the groups [`BufferRoots::with_aliased_parameters`] was
    /// given).
    pub fn aliased_parameters(&self, ctx: &Context, function: Op) -> Vec<bool> {
        let Some(&entry) = ctx.regions(function).first().and_then(|&r| ctx.region_blocks(r).first()) else {
            return Vec::new();
        };
        ctx.block_arguments(entry).iter().map(|&p| is_buffer(ctx, p) && !self.is_root(p)).collect()
    }

    /// Whether `value` is a root itself.
    pub fn is_root(&self, value: Value) -> bool {
        matches!(self.roots.get(&value), Some(Roots::Known(set)) if set.len() == 1 && set.contains(&value))
    }

    fn bind(&mut self, ctx: &Context, from: &[Value], to: &[Value]) -> bool {
        let mut changed = false;
        for (&source, &target) in from.iter().zip(to) {
            if !is_buffer(ctx, target) || self.is_root(target) {
                continue;
            }
            // A source not seen yet (a value yielded later in a loop) adds nothing this round;
            // the fixpoint comes back to it.
            let incoming = self.roots.get(&source).cloned().unwrap_or(Roots::Known(BTreeSet::new()));
            match self.roots.get_mut(&target) {
                Some(existing) => changed |= existing.merge(&incoming),
                None => {
                    self.roots.insert(target, incoming);
                    changed = true;
                }
            }
        }
        changed
    }

    fn propagate(&mut self, ctx: &Context, op: Op) -> bool {
        if let Some(call) = ctx.interface::<dyn CallOpInterface>(op) {
            // Each buffer result: itself (fresh), or any buffer argument.
            let arguments: SmallVec<[Value; 4]> =
                ctx.operands(op)[call.arguments(ctx, op)].iter().copied().filter(|&a| is_buffer(ctx, a)).collect();
            let mut changed = false;
            for result in ctx.results(op).filter(|&r| is_buffer(ctx, r)) {
                for &argument in &arguments {
                    let incoming = self.roots.get(&argument).cloned().unwrap_or(Roots::Known(BTreeSet::new()));
                    changed |=
                        self.roots.entry(result).or_insert_with(|| Roots::Known(BTreeSet::new())).merge(&incoming);
                }
            }
            return changed;
        }
        if let Some(select) = SelectOp::wrap(ctx, op) {
            let result = ctx.result(op, 0);
            if !is_buffer(ctx, result) {
                return false;
            }
            let operands = [select.true_value(ctx), select.false_value(ctx)];
            let mut changed = self.bind(ctx, &operands[..1], &[result]);
            changed |= self.bind(ctx, &operands[1..], &[result]);
            return changed;
        }
        let Some(branch) = ctx.interface::<dyn RegionBranchOpInterface>(op) else { return false };
        let mut changed = false;
        let inputs = |to: RegionPoint| -> SmallVec<[Value; 4]> {
            let range = branch.successor_inputs(ctx, op, to);
            match to {
                RegionPoint::Parent => ctx.results(op).collect::<SmallVec<[Value; 4]>>()[range].into(),
                RegionPoint::Region(i) => ctx
                    .region_blocks(ctx.regions(op)[i])
                    .first()
                    .map(|&b| ctx.block_arguments(b)[range].iter().copied().collect())
                    .unwrap_or_default(),
            }
        };
        for to in branch.successors(ctx, op, RegionPoint::Parent, &[]) {
            let operands = &ctx.operands(op)[branch.entry_operands(ctx, op, to)];
            changed |= self.bind(ctx, operands, &inputs(to));
        }
        for (index, &region) in ctx.regions(op).iter().enumerate() {
            for &block in ctx.region_blocks(region) {
                let Some(terminator) = ctx.last_op(block) else { continue };
                for to in branch.successors(ctx, op, RegionPoint::Region(index), &[]) {
                    let range = branch.terminator_operands(ctx, op, terminator, index, to);
                    let operands: SmallVec<[Value; 4]> = ctx.operands(terminator)[range].iter().copied().collect();
                    changed |= self.bind(ctx, &operands, &inputs(to));
                }
            }
        }
        changed
    }
}

/// Whether `op` allocates `result` (an `Allocate` effect on it).
pub fn allocates(ctx: &Context, op: Op, result: Value) -> bool {
    let Some(index) = ctx.results(op).position(|r| r == result) else { return false };
    let Some(definition) = ctx.definition(ctx.name(op)) else { return false };
    match definition.memory_effects(ctx, op) {
        MemoryEffects::Known(effects) => {
            effects.iter().any(|e| e.kind == EffectKind::Allocate && e.target == EffectTarget::Result(index))
        }
        MemoryEffects::Unknown => false,
    }
}

/// Which buffer parameters of each function may be one buffer: the groups (indices of
/// parameters, each group of two or more) that some call passes one buffer to, directly or
/// through the caller's own aliased parameters. `calls` gives, for each call of a function of
/// `functions` (by index), the caller's index, the callee's index and the call's argument values;
/// `roots` gives each function's roots under the groups found so far. A fixpoint: the caller of
/// the driver recomputes the roots and calls this again until the groups stop growing.
pub fn parameter_aliasing(
    ctx: &Context,
    parameter_counts: &[usize],
    calls: &[(usize, usize, Vec<Value>)],
    roots: &[BufferRoots],
) -> Vec<Vec<Vec<usize>>> {
    // A union-find over each function's parameters.
    let mut parent: Vec<Vec<usize>> = parameter_counts.iter().map(|&n| (0..n).collect()).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for (caller, callee, arguments) in calls {
        let caller_roots = &roots[*caller];
        let count = arguments.len().min(parameter_counts[*callee]);
        for i in 0..count {
            if !is_buffer(ctx, arguments[i]) {
                continue;
            }
            for j in i + 1..count {
                if is_buffer(ctx, arguments[j]) && caller_roots.may_alias(arguments[i], arguments[j]) {
                    let set = &mut parent[*callee];
                    let (a, b) = (find(set, i), find(set, j));
                    if a != b {
                        set[a.max(b)] = a.min(b);
                    }
                }
            }
        }
    }
    parent
        .iter_mut()
        .map(|set| {
            let mut groups: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
            for i in 0..set.len() {
                let leader = find(set, i);
                groups.entry(leader).or_default().push(i);
            }
            let mut groups: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
            groups.sort();
            groups
        })
        .collect()
}
