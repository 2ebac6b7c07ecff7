//! Which buffers the planner follows element by element: its *tracked roots*.
//!
//! A root (see [`super::super::aliases`]) is a buffer parameter of the function or what an
//! allocating op makes. Every buffer value of host code may be one of a set of roots, followed
//! through selects, branch and loop results and carried values. The planner tracks a root `r`
//! unless:
//! - a value that something reads or writes through may be `r` *or* another root that is not
//!   tracked (a select, a branch result or a carried value that merges them). Where all the
//!   roots such a value may be are tracked, an access through it is a *may* access to each of
//!   them (it reads each; it may write each, so what it writes must be current beforehand and
//!   is made by none);
//! - `r` is allocated inside a loop (or branch) whose carried values or results may hold it
//!   where something accesses them: then several buffers made by the one op may be alive at
//!   once, and a fact about "`r`" would be a fact about all of them — unless only dispatches
//!   touch `r` (the intermediates of an image pipeline): then every one of them is current on
//!   the device at all times and none is ever copied, and `r` is tracked as *device-only*;
//! - `r` is a parameter and some call site of the function passes a buffer that it may also pass
//!   for another of its parameters (DESIGN.md's aliasing pitfall: the parameters of a function
//!   may alias unless every call proves otherwise).
//!
//! A root that is not tracked is kept current on the host at all times, the `kernel`
//! strategy's way: what a dispatch needs goes in before it, what it writes comes back after it.
//! A buffer of unknown origin (a call's result, an op nothing explains) may be any root, so the
//! planner does not plan such a function (the pass gives it the `kernel` strategy).

use super::super::aliases::{is_buffer, BufferRoots, Roots};
use super::super::host_effects::parameters;
use super::Unsupported;
use hat_dialects::arith_views::SelectOp;
use hat_ir::interfaces::{LaunchOpInterface, RegionBranchOpInterface};
use hat_ir::{Context, Op, Value};
use rustc_hash::{FxHashMap, FxHashSet};

/// The tracked roots of one function, numbered.
pub struct Tracked {
    /// Each tracked root, by number.
    pub roots: Vec<Value>,
    number: FxHashMap<Value, usize>,
    /// The device-only roots among them, by number.
    device_only: FxHashSet<usize>,
}

impl Tracked {
    /// The tracked roots of `function`; `aliased[i]`: whether some call site may pass its
    /// parameter `i` the buffer of another parameter.
    pub fn of(ctx: &Context, function: Op, roots: &BufferRoots, aliased: &[bool]) -> Result<Tracked, Unsupported> {
        let unsupported = |op: Op, what: &str| Unsupported { what: what.to_string(), location: ctx.location(op) };
        let params = parameters(ctx, function);
        let mut candidates: Vec<Value> = params
            .iter()
            .enumerate()
            .filter(|&(i, &p)| is_buffer(ctx, p) && !aliased.get(i).copied().unwrap_or(false))
            .map(|(_, &p)| p)
            .collect();
        let mut untracked: FxHashSet<Value> = FxHashSet::default();
        // The buffer values something reads or writes through (not a select or a terminator
        // that only forwards them: what they forward to is checked where it is used).
        let mut accessed: Vec<Value> = Vec::new();
        // Whether each accessed value is accessed by dispatches only.
        let mut by_dispatches_only: FxHashMap<Value, bool> = FxHashMap::default();
        let mut structured: Vec<Op> = Vec::new();
        for op in ctx.walk(function) {
            if op == function {
                continue;
            }
            if !ctx.successors(op).is_empty() {
                return Err(unsupported(op, "branches between blocks"));
            }
            let branches = ctx.interface::<dyn RegionBranchOpInterface>(op).is_some();
            if !ctx.regions(op).is_empty() && !branches {
                return Err(unsupported(op, &format!("the regions of '{}'", ctx.name_str(op))));
            }
            if ctx.regions(op).iter().any(|&r| ctx.region_blocks(r).len() > 1) {
                return Err(unsupported(op, "a region of several blocks"));
            }
            for result in ctx.results(op) {
                if roots.is_root(result) && !params.contains(&result) {
                    candidates.push(result);
                }
            }
            let forwards = branches
                || SelectOp::wrap(ctx, op).is_some()
                || (ctx.next_op(op).is_none()
                    && ctx.parent_op(op).is_some_and(|p| ctx.interface::<dyn RegionBranchOpInterface>(p).is_some()));
            if branches {
                structured.push(op);
            }
            if !forwards {
                let launch = ctx.interface::<dyn LaunchOpInterface>(op).is_some();
                for value in ctx.operands(op).iter().copied().filter(|&v| is_buffer(ctx, v)) {
                    accessed.push(value);
                    *by_dispatches_only.entry(value).or_insert(true) &= launch;
                }
            }
        }
        let accessed_set: FxHashSet<Value> = accessed.iter().copied().collect();
        // The roots that something other than a dispatch may access.
        let mut host_touched: FxHashSet<Value> = FxHashSet::default();
        for (&value, &only) in &by_dispatches_only {
            if let (false, Roots::Known(set)) = (only, roots.roots_ref(value)) {
                host_touched.extend(set.iter().copied());
            }
        }
        let mut device_only: FxHashSet<Value> = FxHashSet::default();
        // A root made inside a structured op that an accessed result or region argument of it
        // may hold: several buffers of that root may be alive at once.
        for &op in &structured {
            let carried = ctx.results(op).chain(
                ctx.regions(op)
                    .iter()
                    .flat_map(|&r| ctx.region_blocks(r).iter())
                    .flat_map(|&b| ctx.block_arguments(b).iter().copied()),
            );
            for value in carried.filter(|v| accessed_set.contains(v)).collect::<Vec<_>>() {
                if let Roots::Known(set) = roots.roots_ref(value) {
                    for &root in set {
                        if ctx.defining_op(root).is_some_and(|d| ctx.is_ancestor(op, d)) {
                            if host_touched.contains(&root) || params.contains(&root) {
                                untracked.insert(root);
                            } else {
                                device_only.insert(root);
                            }
                        }
                    }
                }
            }
        }
        // A value that may be one of several roots: an access through it is a *may* access to
        // each (see `access`), so they stay tracked — all of them, or none (a direct copy
        // through the value would act on whichever it is at run time).
        let mut merged: Vec<&std::collections::BTreeSet<Value>> = Vec::new();
        for &value in &accessed {
            match roots.roots_ref(value) {
                Roots::Unknown => {
                    let at = ctx.defining_op(value).unwrap_or(function);
                    return Err(unsupported(at, "a buffer of unknown origin"));
                }
                Roots::Known(set) if set.len() > 1 => merged.push(set),
                Roots::Known(_) => {}
            }
        }
        let candidate_set: FxHashSet<Value> = candidates.iter().copied().collect();
        loop {
            let before = untracked.len();
            for set in &merged {
                if set.iter().any(|r| untracked.contains(r) || !candidate_set.contains(r)) {
                    untracked.extend(set.iter().copied());
                }
            }
            if untracked.len() == before {
                break;
            }
        }
        candidates.retain(|r| !untracked.contains(r));
        let number: FxHashMap<Value, usize> = candidates.iter().enumerate().map(|(i, &r)| (r, i)).collect();
        let device_only = device_only.iter().filter_map(|r| number.get(r).copied()).collect();
        Ok(Tracked { roots: candidates, number, device_only })
    }

    /// The number of the tracked root `value` surely is (`None`: it may be another buffer, or
    /// an untracked one).
    pub fn root_of(&self, roots: &BufferRoots, value: Value) -> Option<usize> {
        match roots.roots_ref(value) {
            Roots::Known(set) if set.len() == 1 => set.iter().next().and_then(|r| self.number.get(r)).copied(),
            _ => None,
        }
    }

    /// The tracked roots `value` may be, when it may be several and all are tracked (an access
    /// through it is a may access to each); empty otherwise.
    pub fn candidates_of(&self, roots: &BufferRoots, value: Value) -> smallvec::SmallVec<[usize; 4]> {
        match roots.roots_ref(value) {
            Roots::Known(set) if set.len() > 1 => {
                let numbers: smallvec::SmallVec<[usize; 4]> =
                    set.iter().filter_map(|r| self.number.get(r).copied()).collect();
                if numbers.len() == set.len() {
                    let mut numbers = numbers;
                    numbers.sort_unstable();
                    numbers
                } else {
                    smallvec::SmallVec::new()
                }
            }
            _ => smallvec::SmallVec::new(),
        }
    }

    /// Whether tracked root `root` is device-only: made anew inside a loop or branch while an
    /// older one may be in use, and touched by dispatches only (current on the device always).
    pub fn is_device_only(&self, root: usize) -> bool {
        self.device_only.contains(&root)
    }

    /// The number of a tracked root.
    pub fn number(&self, root: Value) -> Option<usize> {
        self.number.get(&root).copied()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.roots.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }
}
