//! Host effects: what host code does to the two copies of a buffer — asked of the memory-effects
//! interface for each op (the element or span an access names is the effect's extent), of the
//! kernel effects for a dispatch, of a callee's declared effects for a host function, and of a
//! *summary* for a call of a host function with a body.
//!
//! A summary says, per parameter of a host function with a body, whether a call may read or
//! write the host copy or the device copy of the buffer passed there, through everything the
//! function does, calls included (a fixpoint over the call graph, so recursion is fine). A
//! callee nothing resolves, or an op with unknown effects, touches everything.

use super::aliases::{is_buffer, parameter_aliasing, BufferRoots, Roots};
use super::dispatch::Kernels;
use super::insert::host_functions;
use hat_ir::interfaces::{CallOpInterface, CallableOpInterface, LaunchOpInterface};
use hat_ir::{Context, EffectKind, EffectTarget, Extent, MemoryEffects, MemorySpace, Op, OpTraits, Value};
use rustc_hash::FxHashMap;

/// What an op does to the two copies of one buffer.
#[derive(Copy, Clone, Default, Debug, PartialEq, Eq)]
pub struct Touch {
    /// Reads the host copy.
    pub host_read: bool,
    /// Writes the host copy.
    pub host_write: bool,
    /// Reads the device copy.
    pub device_read: bool,
    /// Writes the device copy.
    pub device_write: bool,
}

impl Touch {
    /// Everything.
    pub fn all() -> Touch {
        Touch { host_read: true, host_write: true, device_read: true, device_write: true }
    }

    /// Adds what `other` does.
    pub fn add(&mut self, other: Touch) {
        self.host_read |= other.host_read;
        self.host_write |= other.host_write;
        self.device_read |= other.device_read;
        self.device_write |= other.device_write;
    }

    /// Whether it touches anything.
    pub fn any(self) -> bool {
        self.host_read || self.host_write || self.device_read || self.device_write
    }
}

/// The summary of each host function with a body: one [`Touch`] per parameter.
pub type Summaries = FxHashMap<Op, Vec<Touch>>;

/// The summaries of every host function with a body under `module`.
///
/// A worklist over the call graph: each function is summarised from its ops (callees through
/// their current summaries), and when a summary grows its callers are summarised again.
/// Summaries only grow, so this ends; visiting callees first (a depth-first post-order of the
/// calls), most functions are summarised once.
///
/// It also gives the buffer roots of each function, computed on the way.
pub fn summarize_with_roots(ctx: &Context, module: Op, kernels: &Kernels) -> (Summaries, FxHashMap<Op, BufferRoots>) {
    let functions = host_functions(ctx, module);
    let number: FxHashMap<Op, usize> = functions.iter().enumerate().map(|(i, &f)| (f, i)).collect();
    let bodies: Vec<Vec<Op>> = functions.iter().map(|&f| ctx.walk(f)).collect();
    // Who calls whom, among these functions.
    let mut callees: Vec<Vec<usize>> = vec![Vec::new(); functions.len()];
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); functions.len()];
    // Parameters that some call passes one buffer to may alias: each function's roots say so,
    // found by a fixpoint (a caller's aliased parameters make its callee's alias in turn).
    let mut calls: Vec<(usize, usize, Vec<Value>)> = Vec::new();
    for (caller, body) in bodies.iter().enumerate() {
        for &op in &body[1..] {
            let Some(call) = ctx.interface::<dyn CallOpInterface>(op) else { continue };
            if let Some(&callee) = kernels.callee(ctx, op).and_then(|c| number.get(&c)) {
                callees[caller].push(callee);
                callers[callee].push(caller);
                calls.push((caller, callee, ctx.operands(op)[call.arguments(ctx, op)].to_vec()));
            }
        }
    }
    let counts: Vec<usize> = functions.iter().map(|&f| parameters(ctx, f).len()).collect();
    let mut aliased: Vec<Vec<Vec<usize>>> = vec![Vec::new(); functions.len()];
    let roots: Vec<BufferRoots> = loop {
        let roots: Vec<BufferRoots> = functions
            .iter()
            .zip(&aliased)
            .zip(&bodies)
            .map(|((&f, groups), body)| BufferRoots::with_aliased_parameters_in(ctx, f, groups, body))
            .collect();
        let found = parameter_aliasing(ctx, &counts, &calls, &roots);
        if found == aliased {
            break roots;
        }
        aliased = found;
    };
    let mut summaries: Summaries =
        functions.iter().map(|&f| (f, vec![Touch::default(); parameters(ctx, f).len()])).collect();
    let mut queued = vec![true; functions.len()];
    let mut worklist: std::collections::VecDeque<usize> = post_order(&callees).into();
    while let Some(index) = worklist.pop_front() {
        queued[index] = false;
        let function = functions[index];
        let summary = summarize_one(ctx, function, &bodies[index], &roots[index], kernels, &summaries);
        if summaries[&function] != summary {
            summaries.insert(function, summary);
            for &caller in &callers[index] {
                if !queued[caller] {
                    queued[caller] = true;
                    worklist.push_back(caller);
                }
            }
        }
    }
    (summaries, functions.into_iter().zip(roots).collect())
}

/// The functions in depth-first post-order of `callees` (callees before their callers, but in
/// cycles).
fn post_order(callees: &[Vec<usize>]) -> Vec<usize> {
    let mut seen = vec![false; callees.len()];
    let mut order = Vec::with_capacity(callees.len());
    for start in 0..callees.len() {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let mut stack = vec![(start, 0usize)];
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&callee) = callees[node].get(*next) {
                *next += 1;
                if !seen[callee] {
                    seen[callee] = true;
                    stack.push((callee, 0));
                }
            } else {
                order.push(node);
                stack.pop();
            }
        }
    }
    order
}

/// The summary of one function from its ops (`ops`, its walk) and the current summaries.
fn summarize_one(
    ctx: &Context,
    function: Op,
    ops: &[Op],
    roots: &BufferRoots,
    kernels: &Kernels,
    summaries: &Summaries,
) -> Vec<Touch> {
    let touches = Touches { ctx, roots, kernels, summaries };
    let params = parameters(ctx, function);
    // Each op adds to the parameters its buffer operands may be (all of them for an operand of
    // unknown roots): the cost is the operands', not ops times parameters.
    let index_of: FxHashMap<Value, usize> =
        params.iter().enumerate().filter(|(_, &p)| is_buffer(ctx, p)).map(|(i, &p)| (p, i)).collect();
    let mut summary = vec![Touch::default(); params.len()];
    let mut candidates: Vec<usize> = Vec::new();
    for &op in &ops[1..] {
        candidates.clear();
        for &value in ctx.operands(op) {
            if !is_buffer(ctx, value) {
                continue;
            }
            match roots.roots_ref(value) {
                Roots::Known(set) => candidates.extend(set.iter().filter_map(|r| index_of.get(r).copied())),
                Roots::Unknown => candidates.extend(index_of.values().copied()),
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        for &i in &candidates {
            summary[i].add(touches.own_touch(op, params[i]));
        }
    }
    summary
}

/// What a host function's declared effects say of its parameter `index`: (reads it, surely
/// writes every element, may write it). Unknown effects read and may write.
pub fn declared_parameter_access(declared: &MemoryEffects, index: usize) -> (bool, bool, bool) {
    let MemoryEffects::Known(effects) = declared else { return (true, false, true) };
    let (mut reads, mut must_write, mut writes) = (false, false, false);
    for e in effects.iter().filter(|e| e.target == EffectTarget::Parameter(index)) {
        match e.kind {
            EffectKind::Read => reads = true,
            EffectKind::Write => {
                writes = true;
                must_write |= e.must && e.extent == Extent::Whole;
            }
            _ => {}
        }
    }
    (reads, must_write, writes)
}

/// The parameters of a function with a body (its entry block's arguments).
pub fn parameters(ctx: &Context, function: Op) -> Vec<Value> {
    ctx.interface::<dyn CallableOpInterface>(function)
        .and_then(|c| c.body(ctx, function))
        .and_then(|r| ctx.region_blocks(r).first().copied())
        .map(|b| ctx.block_arguments(b).to_vec())
        .unwrap_or_default()
}

/// Asks what ops of one host function do to a buffer.
pub struct Touches<'a> {
    /// The context.
    pub ctx: &'a Context,
    /// The function's buffer roots.
    pub roots: &'a BufferRoots,
    /// The callees and the kernels' effects.
    pub kernels: &'a Kernels,
    /// The summaries of host functions with bodies.
    pub summaries: &'a Summaries,
}

impl Touches<'_> {
    /// Whether `a` and `b` may be the same buffer.
    pub fn may_alias(&self, a: Value, b: Value) -> bool {
        self.roots.may_alias(a, b)
    }

    /// What `op` and the ops nested in it do to `buffer`.
    pub fn touch(&self, op: Op, buffer: Value) -> Touch {
        let mut touch = Touch::default();
        self.ctx.walk_with(op, |nested| touch.add(self.own_touch(nested, buffer)));
        touch
    }

    /// What `op` itself (not the ops nested in it) does to `buffer`.
    pub fn own_touch(&self, op: Op, buffer: Value) -> Touch {
        let ctx = self.ctx;
        if ctx.interface::<dyn LaunchOpInterface>(op).is_some() {
            let mut touch = Touch::default();
            for arg in self.kernels.args(ctx, op).iter() {
                if self.may_alias(arg.value, buffer) {
                    touch.device_read |= arg.reads || (arg.writes && !arg.writes_all);
                    touch.device_write |= arg.writes;
                }
            }
            return touch;
        }
        let mentions = ctx.operands(op).iter().any(|&v| is_buffer(ctx, v) && self.may_alias(v, buffer));
        if !mentions {
            return Touch::default();
        }
        if let Some(call) = ctx.interface::<dyn CallOpInterface>(op) {
            return self.call_touch(op, call.arguments(ctx, op), buffer);
        }
        let Some(definition) = ctx.definition(ctx.name(op)) else { return Touch::all() };
        if definition.traits().contains(OpTraits::PURE) {
            return Touch::default();
        }
        match definition.memory_effects(ctx, op) {
            MemoryEffects::Unknown => Touch::all(),
            MemoryEffects::Known(effects) => {
                let mut touch = Touch::default();
                for effect in effects {
                    let EffectTarget::Operand(i) = effect.target else { continue };
                    let value = ctx.operand(op, i);
                    if !is_buffer(ctx, value) || !self.may_alias(value, buffer) {
                        continue;
                    }
                    let device = effect.space == MemorySpace::Device;
                    match effect.kind {
                        EffectKind::Read if device => touch.device_read = true,
                        EffectKind::Read => touch.host_read = true,
                        EffectKind::Write if device => touch.device_write = true,
                        EffectKind::Write | EffectKind::Free => touch.host_write = true,
                        _ => {}
                    }
                }
                touch
            }
        }
    }

    /// What a call does to `buffer`, through the arguments that may be it.
    fn call_touch(&self, op: Op, arguments: std::ops::Range<usize>, buffer: Value) -> Touch {
        let ctx = self.ctx;
        let Some(callee) = self.kernels.callee(ctx, op) else { return Touch::all() };
        let summary = self.summaries.get(&callee);
        let declared = if summary.is_none() {
            ctx.interface::<dyn CallableOpInterface>(callee).map(|c| c.parameter_effects(ctx, callee))
        } else {
            None
        };
        let mut touch = Touch::default();
        for (index, &value) in ctx.operands(op)[arguments].iter().enumerate() {
            if !is_buffer(ctx, value) || !self.may_alias(value, buffer) {
                continue;
            }
            match (summary, &declared) {
                (Some(summary), _) => touch.add(summary.get(index).copied().unwrap_or_else(Touch::all)),
                (None, Some(MemoryEffects::Known(effects))) => {
                    for e in effects.iter().filter(|e| e.target == EffectTarget::Parameter(index)) {
                        match e.kind {
                            EffectKind::Read => touch.host_read = true,
                            EffectKind::Write => touch.host_write = true,
                            _ => {}
                        }
                    }
                }
                _ => touch.add(Touch::all()),
            }
        }
        touch
    }
}
