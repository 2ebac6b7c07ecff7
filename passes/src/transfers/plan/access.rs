//! The access classifier: what one op does to each buffer, in one shape for every kind of op
//! (IREE's `AsyncAccessOpInterface` is the model): per tracked root and side, the elements that
//! must be current before it (`need`), the elements it surely leaves current because it writes
//! them all (`made`), and the elements whose copy it may leave stale because it writes the
//! other copy (`stale`).
//!
//! - a dispatch, by its kernel's effects ([`super::super::dispatch`]): it needs on the device
//!   what it may read and what it may write but does not provably write (a *merge*: the rest
//!   must be current, where anything looks at it later); it makes what it provably writes (a
//!   range under a guard `id < n / 2` too), and stales what it may write on the host;
//! - a call of a host function with a body (planned on its own, expecting its buffers on the
//!   host and leaving them there): it needs on the host every buffer its summary touches, and
//!   stales on the device those it may write;
//! - a call of a declared host function: by its declared parameter effects;
//! - any other op: by the memory-effects interface, an element at constant indices or a span
//!   of constant bounds where the effect names one, the whole buffer otherwise; a write that
//!   reads the other copy of the same buffer (a transfer) stales nothing;
//! - the function's return: every buffer parameter and every returned buffer, on the host.
//!
//! A root that is not tracked gets *direct* copies instead: before a dispatch what it needs,
//! after it what it may write (its host copy stays current).

use super::super::aliases::is_buffer;
use super::super::aliases::{BufferRoots, Roots};
use super::super::dispatch::{element_count, shape, Kernels};
use super::super::emit::Direction;
use super::super::host_effects::{declared_parameter_access, parameters, Summaries, Touch};
use super::super::ranges::RangeSet;
use super::facts::{Pair, DEVICE, HOST};
use super::roots::Tracked;
use hat_ir::interfaces::{
    constant_integer, CallOpInterface, CallableOpInterface, LaunchOpInterface, RegionBranchOpInterface,
};
use hat_ir::{Context, EffectKind, EffectTarget, Extent, MemoryEffects, MemorySpace, Op, OpTraits, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// What one op does to one tracked root.
#[derive(Debug, Default, PartialEq)]
pub struct Access {
    /// The root's number.
    pub root: usize,
    /// Elements that must be current before the op, per side.
    pub need: Pair,
    /// The part of `need` there only because the op may write some of those elements and not
    /// others (the rest must be current to merge with): needed only where something may look at
    /// them afterwards ([`RootAccesses::drop_dead_merges`]).
    pub merge: Pair,
    /// Elements the op surely leaves current (it writes them all), per side.
    pub made: Pair,
    /// Elements whose copy on that side the op may leave stale.
    pub stale: Pair,
}

impl Clone for Access {
    fn clone(&self) -> Self {
        use super::facts::copy;
        Access {
            root: self.root,
            need: copy(&self.need),
            merge: copy(&self.merge),
            made: copy(&self.made),
            stale: copy(&self.stale),
        }
    }
}

impl Access {
    /// The elements after which an earlier copy to `side` is of no use: stale, or made anew.
    pub fn kill(&self, side: usize) -> RangeSet {
        self.stale[side].union(&self.made[side])
    }
}

/// A copy of an untracked buffer around one op (the `kernel` strategy's way).
#[derive(Clone, Debug)]
pub struct Direct {
    /// Before the op (else after it).
    pub before: bool,
    /// Which way.
    pub direction: Direction,
    /// The buffer value the op names.
    pub value: Value,
    /// The elements.
    pub ranges: RangeSet,
    /// Whether the kernel reads it (for the reason), when a dispatch.
    pub reads: bool,
}

/// A read or a write of one element of a one-dimensional tracked root at an index known only at
/// run time: not a need of the whole buffer when the other side is current everywhere (one
/// element is copied, by that index: before a read, from the other side; after a write, to it).
#[derive(Clone, Debug)]
pub struct DynamicAccess {
    /// The root's number.
    pub root: usize,
    /// The side read or written.
    pub side: usize,
    /// A write (the element goes to the other side after it), not a read.
    pub writes: bool,
    /// The buffer value the op names.
    pub buffer: Value,
    /// The index.
    pub index: Value,
}

/// What one op does to buffers.
#[derive(Clone, Debug, Default)]
pub struct OpAccess {
    /// To tracked roots, one entry per root (on the heap, as long as it needs to be: a table
    /// of every op of a function holds one per op that touches a buffer).
    pub tracked: Vec<Access>,
    /// Copies of untracked buffers around it.
    pub direct: Vec<Direct>,
    /// An access to one element at a run-time index, when not one of the whole buffer.
    pub dynamic: Option<DynamicAccess>,
}

/// The accesses of every op of one function that touches a buffer.
pub struct Accesses {
    /// Where each op that touches a buffer is in `table`.
    ops: FxHashMap<Op, u32>,
    /// What those ops do.
    table: Vec<OpAccess>,
    /// The ops that touch each tracked root (a tracked access or an access at a run-time index),
    /// in no particular order, with where they are in `table`.
    by_root: Vec<Vec<(Op, u32)>>,
    none: OpAccess,
}

impl Accesses {
    /// What `op` does (nothing for an op absent from the table).
    pub fn of(&self, op: Op) -> &OpAccess {
        self.ops.get(&op).map_or(&self.none, |&e| &self.table[e as usize])
    }

    /// The ops with an access at a run-time index.
    pub fn dynamic(&self) -> impl Iterator<Item = (Op, &DynamicAccess)> + '_ {
        self.ops.iter().filter_map(|(&op, &e)| self.table[e as usize].dynamic.as_ref().map(|d| (op, d)))
    }

    /// The ops with direct copies.
    pub fn direct(&self) -> impl Iterator<Item = (Op, &[Direct])> + '_ {
        self.ops
            .iter()
            .map(|(&op, &e)| (op, &self.table[e as usize]))
            .filter(|(_, a)| !a.direct.is_empty())
            .map(|(op, a)| (op, a.direct.as_slice()))
    }

    /// What the ops that touch `root` do to it.
    pub fn of_root(&self, root: usize) -> RootAccesses {
        let mut ops = FxHashMap::default();
        let mut dynamic = Vec::new();
        for &(op, e) in self.by_root.get(root).into_iter().flatten() {
            let access = &self.table[e as usize];
            if let Some(a) = access.tracked.iter().find(|a| a.root == root) {
                ops.insert(op, a.clone());
            }
            if let Some(d) = access.dynamic.as_ref().filter(|d| d.root == root) {
                dynamic.push((op, d.clone()));
            }
        }
        RootAccesses { ops, dynamic }
    }

    /// Classifies `op` again (an access at a run-time index became one of the whole buffer);
    /// the roots it touched before or touches now.
    pub fn reclassify(&mut self, classifier: &Classifier<'_>, op: Op) -> Vec<usize> {
        let access = classifier.classify(op);
        let e = match self.ops.get(&op) {
            Some(&e) => e,
            None => {
                self.table.push(OpAccess::default());
                self.ops.insert(op, self.table.len() as u32 - 1);
                self.table.len() as u32 - 1
            }
        };
        let touched =
            |a: &OpAccess| a.tracked.iter().map(|a| a.root).chain(a.dynamic.as_ref().map(|d| d.root)).collect();
        let mut roots: Vec<usize> = touched(&access);
        for &root in &roots {
            if !self.by_root[root].iter().any(|&(o, _)| o == op) {
                self.by_root[root].push((op, e));
            }
        }
        roots.extend(touched(&self.table[e as usize]));
        self.table[e as usize] = access;
        roots
    }
}

/// What the ops that touch one root do to it: the planner's input for that root.
#[derive(Clone)]
pub struct RootAccesses {
    ops: FxHashMap<Op, Access>,
    dynamic: Vec<(Op, DynamicAccess)>,
}

impl RootAccesses {
    /// What `op` does to the root, if anything.
    pub fn of(&self, op: Op) -> Option<&Access> {
        self.ops.get(&op)
    }

    /// The ops with an access to the root.
    pub fn ops(&self) -> impl Iterator<Item = (Op, &Access)> + '_ {
        self.ops.iter().map(|(&op, a)| (op, a))
    }

    /// The accesses to the root at run-time indices.
    pub fn dynamic(&self) -> &[(Op, DynamicAccess)] {
        &self.dynamic
    }

    /// Every op that touches the root.
    pub fn touching(&self) -> impl Iterator<Item = Op> + '_ {
        self.ops.keys().copied().chain(self.dynamic.iter().map(|(op, _)| *op))
    }

    /// Drops from each op's needs the merges that nothing looks at afterwards: elements an op
    /// may write partly, on no path observed again before a complete write (`live`, what may be
    /// anticipated right after it on either side, says what is looked at). Whether anything
    /// changed (the anticipation before those ops then changes too).
    pub fn drop_dead_merges(&mut self, live: impl Fn(Op) -> Option<RangeSet>) -> bool {
        let mut changed = false;
        for (&op, a) in self.ops.iter_mut() {
            if a.merge[HOST].is_empty() && a.merge[DEVICE].is_empty() {
                continue;
            }
            let Some(live) = live(op) else { continue };
            let dead = [a.merge[HOST].minus(&live), a.merge[DEVICE].minus(&live)];
            if dead.iter().all(RangeSet::is_empty) {
                continue;
            }
            for side in [HOST, DEVICE] {
                a.need[side] = a.need[side].minus(&dead[side]);
                a.merge[side] = a.merge[side].minus(&dead[side]);
            }
            changed = true;
        }
        changed
    }
}

/// Classifies every op of a function.
pub struct Classifier<'a> {
    /// The context.
    pub ctx: &'a Context,
    /// The function planned.
    pub function: Op,
    /// Its buffer roots.
    pub roots: &'a BufferRoots,
    /// Those it tracks.
    pub tracked: &'a Tracked,
    /// Callees and kernel effects.
    pub kernels: &'a Kernels,
    /// Summaries of host functions with bodies.
    pub summaries: &'a Summaries,
    /// The ops whose access at a run-time index counts as one of the whole buffer.
    pub whole_accesses: &'a rustc_hash::FxHashSet<Op>,
}

/// A root's every element, clamped to its size.
pub fn whole(ctx: &Context, buffer: Value) -> RangeSet {
    RangeSet::whole().clamp(element_count(ctx, buffer))
}

impl Classifier<'_> {
    /// The table of every op under the function.
    pub fn classify_all(&self) -> Accesses {
        let mut ops = FxHashMap::default();
        let mut table = Vec::new();
        let mut by_root = vec![Vec::new(); self.tracked.len()];
        for op in self.ctx.walk(self.function) {
            if op == self.function {
                continue;
            }
            let access = self.classify(op);
            if access.tracked.is_empty() && access.direct.is_empty() && access.dynamic.is_none() {
                continue;
            }
            let e = table.len() as u32;
            let mut roots: SmallVec<[usize; 4]> =
                access.tracked.iter().map(|a| a.root).chain(access.dynamic.as_ref().map(|d| d.root)).collect();
            roots.sort_unstable();
            roots.dedup();
            for root in roots {
                by_root[root].push((op, e));
            }
            ops.insert(op, e);
            table.push(access);
        }
        Accesses { ops, table, by_root, none: OpAccess::default() }
    }

    /// What `op` does.
    pub fn classify(&self, op: Op) -> OpAccess {
        let ctx = self.ctx;
        let mut out = Builder {
            ctx,
            tracked: self.tracked,
            roots: self.roots,
            access: OpAccess::default(),
            tracked_accesses: SmallVec::new(),
            reads: SmallVec::new(),
        };
        if ctx.interface::<dyn LaunchOpInterface>(op).is_some() {
            for arg in self.kernels.args(ctx, op).iter() {
                // The value copied the `kernel` strategy's way: what the dispatch needs in
                // before it, what it may write back after it.
                let kernel_way = |out: &mut Builder<'_>| {
                    let direct = |before, direction, ranges: &RangeSet| Direct {
                        before,
                        direction,
                        value: arg.value,
                        ranges: ranges.clone(),
                        reads: arg.reads,
                    };
                    if !arg.needs.is_empty() {
                        out.access.direct.push(direct(true, Direction::ToDevice, &arg.needs));
                    }
                    if !arg.written.is_empty() {
                        out.access.direct.push(direct(false, Direction::FromDevice, &arg.written));
                    }
                };
                let either = self.tracked.candidates_of(self.roots, arg.value);
                let copied = either.iter().filter(|&&r| !self.tracked.is_device_only(r)).count();
                if !either.is_empty() && copied <= 1 {
                    // Which of them it is is known at run time only, but all of them but one at
                    // most are current on the device at all times (device-only): each is read
                    // there, and may be written (what it writes must be current before), and
                    // only that one may need a copy, as the `kernel` strategy's would.
                    for &root in &either {
                        out.read(root, DEVICE, &arg.read);
                        out.may_write(root, DEVICE, &arg.written);
                    }
                    continue;
                }
                if !either.is_empty() {
                    // Which of them it is is known at run time only: the value itself is copied
                    // the `kernel` strategy's way, so each may-be root must be current on the
                    // host where the copy in reads it, and is left as it was or current on both
                    // sides.
                    for &root in &either {
                        out.read(root, HOST, &arg.needs);
                    }
                    kernel_way(&mut out);
                    continue;
                }
                match self.tracked.root_of(self.roots, arg.value) {
                    Some(root) => {
                        // What it may write and does not surely write merges with the rest.
                        out.read(root, DEVICE, &arg.read);
                        let merge = arg.written.minus(&arg.surely_written);
                        let access = out.entry(root);
                        access.need[DEVICE] = access.need[DEVICE].union(&merge);
                        access.merge[DEVICE] = access.merge[DEVICE].union(&merge);
                        access.made[DEVICE] = access.made[DEVICE].union(&arg.surely_written);
                        access.stale[HOST] = access.stale[HOST].union(&arg.written);
                    }
                    None => kernel_way(&mut out),
                }
            }
            return out.finish();
        }
        if ctx.parent_op(op) == Some(self.function) && ctx.next_op(op).is_none() {
            // The function's return: the caller sees every buffer parameter and what it returns.
            let mut values = parameters(ctx, self.function);
            values.extend(ctx.operands(op).iter().copied());
            for value in values {
                out.host_needs(value, None, false);
            }
            return out.finish();
        }
        // A loop or a branch does what its regions do (the solvers follow them): the buffers it
        // carries or yields are not accessed by the op itself.
        if ctx.interface::<dyn RegionBranchOpInterface>(op).is_some() {
            return out.finish();
        }
        let buffers: SmallVec<[Value; 4]> = ctx.operands(op).iter().copied().filter(|&v| is_buffer(ctx, v)).collect();
        let allocates = ctx.results(op).any(|r| is_buffer(ctx, r));
        if buffers.is_empty() && !allocates {
            return out.finish();
        }
        if let Some(call) = ctx.interface::<dyn CallOpInterface>(op) {
            let arguments: SmallVec<[Value; 4]> = ctx.operands(op)[call.arguments(ctx, op)].iter().copied().collect();
            self.call(&mut out, op, &arguments);
            return out.finish();
        }
        let Some(definition) = ctx.definition(ctx.name(op)) else {
            for &value in &buffers {
                out.host_needs(value, None, true);
            }
            return out.finish();
        };
        if definition.traits().contains(OpTraits::PURE) {
            return out.finish();
        }
        let effects = match definition.memory_effects(ctx, op) {
            MemoryEffects::Unknown => {
                for &value in &buffers {
                    out.host_needs(value, None, true);
                }
                return out.finish();
            }
            MemoryEffects::Known(effects) => effects,
        };
        for effect in &effects {
            let side = match effect.space {
                MemorySpace::Current | MemorySpace::Host => HOST,
                MemorySpace::Device => DEVICE,
                MemorySpace::Workgroup => continue,
            };
            match (effect.kind, effect.target) {
                (EffectKind::Allocate, EffectTarget::Result(i)) | (EffectKind::Free, EffectTarget::Operand(i)) => {
                    let value =
                        if effect.kind == EffectKind::Allocate { ctx.result(op, i) } else { ctx.operand(op, i) };
                    if let Some(root) = self.tracked.root_of(self.roots, value) {
                        let all = whole(ctx, value);
                        out.entry(root).made = [all.clone(), all];
                    }
                }
                (EffectKind::Read, EffectTarget::Operand(i)) => {
                    let value = ctx.operand(op, i);
                    for root in self.tracked.candidates_of(self.roots, value) {
                        let ranges = extent(ctx, op, value, effect.extent).unwrap_or_else(|| whole(ctx, value));
                        out.read(root, side, &ranges);
                    }
                    if let Some(root) = self.tracked.root_of(self.roots, value) {
                        let known = extent(ctx, op, value, effect.extent);
                        if let Some(index) = self.dynamic_index(op, value, &known, effect.extent, effects.len()) {
                            out.access.dynamic =
                                Some(DynamicAccess { root, side, writes: false, buffer: value, index });
                            continue;
                        }
                        let ranges = known.unwrap_or_else(|| whole(ctx, value));
                        out.read(root, side, &ranges);
                    }
                }
                (EffectKind::Write, EffectTarget::Operand(i)) => {
                    let value = ctx.operand(op, i);
                    let known = extent(ctx, op, value, effect.extent);
                    let ranges = known.clone().unwrap_or_else(|| whole(ctx, value));
                    // A transfer-like op writes one copy from the other: the other stays current.
                    let copies_other = effects
                        .iter()
                        .any(|e| e.kind == EffectKind::Read && e.target == effect.target && e.space != effect.space);
                    let either = self.tracked.candidates_of(self.roots, value);
                    if !either.is_empty() && !copies_other {
                        for root in either {
                            out.may_write(root, side, &ranges);
                        }
                        continue;
                    }
                    let Some(root) = self.tracked.root_of(self.roots, value) else { continue };
                    if let Some(index) = self.dynamic_index(op, value, &known, effect.extent, effects.len()) {
                        out.access.dynamic = Some(DynamicAccess { root, side, writes: true, buffer: value, index });
                        continue;
                    }
                    let access = out.entry(root);
                    if effect.must && known.is_some() {
                        access.made[side] = access.made[side].union(&ranges);
                    } else {
                        access.need[side] = access.need[side].union(&ranges);
                        access.merge[side] = access.merge[side].union(&ranges);
                    }
                    if !copies_other {
                        let other = 1 - side;
                        access.stale[other] = access.stale[other].union(&ranges);
                    }
                }
                _ => {}
            }
        }
        out.finish()
    }

    /// The index of `op`'s access to one element of `value` (a one-dimensional tracked root)
    /// at an index known only at run time (`known`: the elements the extent names, `None` here),
    /// when that access is all `op` does (`effects`: how many it has) and the plan has not made
    /// it one of the whole buffer.
    fn dynamic_index(
        &self,
        op: Op,
        value: Value,
        known: &Option<RangeSet>,
        extent: Extent,
        effects: usize,
    ) -> Option<Value> {
        let (None, Extent::Element { first, count: 1 }) = (known, extent) else { return None };
        let single = shape(self.ctx, value).len() == 1 && effects == 1 && !self.whole_accesses.contains(&op);
        single.then(|| self.ctx.operand(op, first as usize))
    }

    /// A call: of a function planned on its own (by its summary), of a declared host function
    /// (by its declared effects), or of something unknown (reads and writes everything).
    fn call(&self, out: &mut Builder<'_>, op: Op, arguments: &[Value]) {
        let ctx = self.ctx;
        let Some(callee) = self.kernels.callee(ctx, op) else {
            for &value in arguments {
                out.host_needs(value, None, true);
            }
            return;
        };
        if let Some(summary) = self.summaries.get(&callee) {
            for (index, &value) in arguments.iter().enumerate() {
                let touch = summary.get(index).copied().unwrap_or_else(Touch::all);
                if touch.any() {
                    out.host_needs(value, None, touch.host_write || touch.device_write);
                }
            }
            return;
        }
        let callable = ctx.interface::<dyn CallableOpInterface>(callee);
        let declared = match callable {
            Some(c) if c.body(ctx, callee).is_none() => c.parameter_effects(ctx, callee),
            _ => MemoryEffects::Unknown,
        };
        for (index, &value) in arguments.iter().enumerate() {
            if !is_buffer(ctx, value) {
                continue;
            }
            let (reads, must_write, writes) = declared_parameter_access(&declared, index);
            if !self.tracked.candidates_of(self.roots, value).is_empty() {
                if reads || writes {
                    out.host_needs(value, None, writes);
                }
                continue;
            }
            let Some(root) = self.tracked.root_of(self.roots, value) else { continue };
            let all = whole(ctx, value);
            let access = out.entry(root);
            if reads || (writes && !must_write) {
                access.need[HOST] = access.need[HOST].union(&all);
            }
            if writes {
                access.stale[DEVICE] = all.clone();
                if must_write {
                    access.made[HOST] = all;
                }
            }
        }
    }
}

/// Builds one op's accesses.
struct Builder<'a> {
    ctx: &'a Context,
    tracked: &'a Tracked,
    roots: &'a BufferRoots,
    access: OpAccess,
    /// The accesses to tracked roots (`access.tracked` once finished, as many as there are).
    tracked_accesses: SmallVec<[Access; 2]>,
    /// What the op reads of each root, per side (a merge is what it needs beyond that).
    reads: SmallVec<[(usize, Pair); 2]>,
}

impl Builder<'_> {
    fn entry(&mut self, root: usize) -> &mut Access {
        match self.tracked_accesses.iter().position(|a| a.root == root) {
            Some(i) => &mut self.tracked_accesses[i],
            None => {
                self.tracked_accesses.push(Access { root, ..Access::default() });
                self.tracked_accesses.last_mut().expect("just pushed")
            }
        }
    }

    /// The op reads `ranges` of `root` on `side`: a need.
    fn read(&mut self, root: usize, side: usize, ranges: &RangeSet) {
        let access = self.entry(root);
        access.need[side] = access.need[side].union(ranges);
        match self.reads.iter_mut().find(|(r, _)| *r == root) {
            Some((_, pair)) => pair[side] = pair[side].union(ranges),
            None => {
                let mut pair = Pair::default();
                pair[side] = ranges.clone();
                self.reads.push((root, pair));
            }
        }
    }

    /// `value` (every root it may be) is needed on the host (`ranges`, or whole); `writes`: the
    /// op may write it there (its device copy may be stale afterwards).
    fn host_needs(&mut self, value: Value, ranges: Option<RangeSet>, writes: bool) {
        if !is_buffer(self.ctx, value) {
            return;
        }
        let either = self.tracked.candidates_of(self.roots, value);
        let roots: SmallVec<[usize; 4]> = match self.tracked.root_of(self.roots, value) {
            Some(root) => SmallVec::from_slice(&[root]),
            None if !either.is_empty() => either,
            None => {
                // Untracked roots are current on the host at all times; a merged value's roots
                // are all tracked or all untracked (see `roots`).
                debug_assert!(match self.roots.roots_ref(value) {
                    Roots::Known(set) => set.iter().all(|r| self.tracked.number(*r).is_none()),
                    Roots::Unknown => true,
                });
                return;
            }
        };
        let ranges = ranges.unwrap_or_else(|| whole(self.ctx, value));
        for root in roots {
            let access = self.entry(root);
            access.need[HOST] = access.need[HOST].union(&ranges);
            if writes {
                access.stale[DEVICE] = access.stale[DEVICE].union(&ranges);
            }
        }
    }

    /// The op may write `ranges` of `root` on `side` (through a value that may be it or another
    /// root): what it writes must be current there before (a merge: whichever it writes, that
    /// side is current afterwards), it makes nothing, and the other side may be stale.
    fn may_write(&mut self, root: usize, side: usize, ranges: &RangeSet) {
        if ranges.is_empty() {
            return;
        }
        let access = self.entry(root);
        access.need[side] = access.need[side].union(ranges);
        access.merge[side] = access.merge[side].union(ranges);
        access.stale[1 - side] = access.stale[1 - side].union(ranges);
    }

    fn finish(mut self) -> OpAccess {
        // A merge is only what no read of the same op needs too.
        for access in &mut self.tracked_accesses {
            if access.merge[HOST].is_empty() && access.merge[DEVICE].is_empty() {
                continue;
            }
            for side in [HOST, DEVICE] {
                if let Some((_, read)) = self.reads.iter().find(|(root, _)| *root == access.root) {
                    access.merge[side] = access.merge[side].minus(&read[side]);
                }
            }
        }
        self.access.tracked = Vec::with_capacity(self.tracked_accesses.len());
        self.access.tracked.extend(self.tracked_accesses);
        self.access
    }
}

/// The flat elements an effect's extent names, when its indices or bounds are constants.
pub fn extent(ctx: &Context, op: Op, buffer: Value, extent: Extent) -> Option<RangeSet> {
    let operands = ctx.operands(op);
    let len = element_count(ctx, buffer);
    let set = match extent {
        Extent::Whole => return Some(whole(ctx, buffer)),
        Extent::Element { first, count } => {
            let dims = shape(ctx, buffer);
            let indices = operands.get(first as usize..(first + count) as usize)?;
            let mut flat = 0u64;
            for (&index, dim) in indices.iter().zip(&dims) {
                let i = u64::try_from(constant_integer(ctx, index)?).ok()?;
                flat = flat.checked_mul((*dim)?)?.checked_add(i)?;
            }
            RangeSet::of(flat..flat + 1)
        }
        Extent::Span { offset, count } => {
            let start = u64::try_from(constant_integer(ctx, *operands.get(offset as usize)?)?).ok()?;
            let n = u64::try_from(constant_integer(ctx, *operands.get(count as usize)?)?).ok()?;
            RangeSet::of(start..start + n)
        }
    };
    Some(set.clamp(len))
}
