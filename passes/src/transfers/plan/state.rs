//! Run-time state where paths disagree. Where the paths that reach a copy disagree on whether its
//! side is current (current on some, stale on others: [`Available`]'s `may` without `current`),
//! no plan fixed at compile time is right on all of them without moving bytes some run does not
//! need. The copy is then made only when a run-time bit says its side is stale: the plan keeps,
//! for each such *atom* of the root and side, a bit "this side is stale", set where the other
//! side is written, cleared where this side is written or copied to.
//!
//! Atoms are the finest partition of the root's elements by the bounds of every set that sets or
//! clears a bit (what each op makes and stales, each copy, the entry): each covers an atom whole
//! or not at all, so one bit describes all of its elements.
//!
//! Each guarded copy then moves only elements whose side is stale on that run: an element copied
//! to the host since the device last wrote it, or to the device since the host last wrote it (or
//! since the entry). That is what the `kernel` strategy copies too (it copies back what each
//! dispatch may write, and in what each dispatch needs), and at most once per such write or
//! need: so a plan never moves more than `kernel` on any run for the elements it guards.

use super::super::ranges::{RangeSet, END};
use super::access::RootAccesses;
use super::analyses::{key, with_copies, EdgeCopies, EdgeKey, OpCopies};
use super::facts::{is_nothing, minus, nothing, Available, Pair, DEVICE, HOST};
use hat_ir::analysis::dataflow::{
    solve_dense_backward_on, DenseBackwardAnalysis, DenseSolution, Edge, FlowGraph, FlowSlice, Lattice, Role, UnionSet,
};
use hat_ir::{Block, Context, Op};
use rustc_hash::FxHashMap;
use std::ops::Range;
use std::rc::Rc;

/// The atoms of one root.
pub struct Atoms {
    /// Sorted distinct bounds; atom `i` is `bounds[i]..bounds[i + 1]`.
    bounds: Vec<u64>,
}

impl Atoms {
    /// The partition of `[0, END)` by the bounds of `sets`.
    pub fn new<'a>(sets: impl IntoIterator<Item = &'a RangeSet>) -> Atoms {
        let mut bounds = vec![0, END];
        for set in sets {
            for range in set.ranges() {
                bounds.push(range.start);
                bounds.push(range.end);
            }
        }
        bounds.sort_unstable();
        bounds.dedup();
        Atoms { bounds }
    }

    /// The atoms of a root: by what its ops make and stale, its copies and its entry (what sets
    /// or clears a bit; what an op needs is copied before it, and the copies are among these).
    pub fn of_root(accesses: &RootAccesses, edges: &EdgeCopies, ops: &OpCopies, entry: &Pair) -> Atoms {
        let mut sets: Vec<&RangeSet> = entry.iter().collect();
        for (_, access) in accesses.ops() {
            for side in [HOST, DEVICE] {
                sets.extend([&access.made[side], &access.stale[side]]);
            }
        }
        sets.extend(edges.values().flatten());
        sets.extend(ops.values().flatten());
        Atoms::new(sets)
    }

    /// The elements of atom `i`.
    pub fn range(&self, i: usize) -> Range<u64> {
        self.bounds[i]..self.bounds[i + 1]
    }

    /// The atoms `set` covers (each whole, `set` being a union of atoms), by number.
    pub fn covering(&self, set: &RangeSet) -> Vec<(usize, Range<u64>)> {
        let mut out = Vec::new();
        for range in set.ranges() {
            let first = self.bounds.partition_point(|&b| b < range.start);
            let mut i = first;
            while i + 1 < self.bounds.len() && self.bounds[i] < range.end {
                out.push((i, self.bounds[i]..self.bounds[i + 1]));
                i += 1;
            }
        }
        out
    }
}

/// A bit of run-time state: "atom `atom`'s copy on `side` is stale".
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bit {
    /// The atom.
    pub atom: usize,
    /// The side.
    pub side: usize,
}

/// The part of `copies` (to each side, made where availability is `state`) whose side is
/// current on some path there and not on all: those copies are made when the bit says stale.
pub fn uncertain(copies: &Pair, state: &Available) -> Pair {
    match state.may() {
        Some(may) => [copies[HOST].intersect(&may[HOST]), copies[DEVICE].intersect(&may[DEVICE])],
        None => super::facts::nothing(),
    }
}

/// The bits of root's atoms `set` covers on `side`.
pub fn bits(atoms: &Atoms, set: &RangeSet, side: usize) -> impl Iterator<Item = (Bit, Range<u64>)> {
    atoms.covering(set).into_iter().map(move |(atom, range)| (Bit { atom, side }, range))
}

/// What an access does to a bit: `Some(true)` where it leaves the side stale, `Some(false)`
/// where it makes it current, `None` where it leaves it as it was.
pub fn after_access(access: &super::access::Access, bit: Bit, range: &Range<u64>) -> Option<bool> {
    let atom = RangeSet::of(range.clone());
    if access.stale[bit.side].contains(&atom) {
        Some(true)
    } else if access.made[bit.side].contains(&atom) {
        Some(false)
    } else {
        None
    }
}

/// One part of a copy placed at `at` (an edge or an op): made always, or only when `guard`'s bit
/// says its side is stale; then the bits it clears (made current) that are read later.
pub struct Part<K> {
    /// Where.
    pub at: K,
    /// The elements to each side.
    pub pair: Pair,
    /// The bit that guards it.
    pub guard: Option<Bit>,
    /// The bits cleared after it, in atom order.
    pub clears: Vec<Bit>,
}

/// The copies of one root with their run-time state.
pub struct Guarded {
    /// Copies on edges.
    pub on_edges: Vec<Part<EdgeKey>>,
    /// Copies just before ops.
    pub at_ops: Vec<Part<Op>>,
    /// The bits the guarded copies read, with their values at the entry.
    pub bits: Vec<(Bit, bool)>,
    /// Bits set (stale) or cleared after ops.
    pub events: Vec<(Op, Bit, bool)>,
}

/// The root's copies (`on_edges`, `at_ops`, placed over `available`, the availability with all
/// of them) split where the paths that reach them disagree, and the bits that guard those
/// parts: set and cleared where they change and are read later.
#[allow(clippy::too_many_arguments)]
pub fn guard(
    ctx: &Context,
    flow: &FlowGraph,
    slice: &Rc<FlowSlice>,
    accesses: &RootAccesses,
    entry: &Pair,
    on_edges: &EdgeCopies,
    at_ops: &OpCopies,
    available: &DenseSolution<Available>,
    work: &super::Work,
) -> Guarded {
    let atoms = Atoms::of_root(accesses, on_edges, at_ops, entry);
    let mut read: Vec<Bit> = Vec::new();
    let mut split = |pair: &Pair, state: &Available| -> Vec<(Pair, Option<Bit>)> {
        let uncertain = uncertain(pair, state);
        let mut out = Vec::new();
        let certain = minus(pair, &uncertain);
        if !is_nothing(&certain) {
            out.push((certain, None));
        }
        for side in [HOST, DEVICE] {
            for (bit, range) in bits(&atoms, &uncertain[side], side) {
                let mut part = nothing();
                part[side] = RangeSet::of(range);
                read.push(bit);
                out.push((part, Some(bit)));
            }
        }
        out
    };
    let mut edge_parts: Vec<Part<EdgeKey>> = Vec::new();
    for (edge_key, pair) in on_edges {
        let Some(edge) = super::placement::edge_of(flow, edge_key) else { continue };
        edge_parts.extend(split(pair, available.at_source(ctx, edge)).into_iter().map(|p| part(*edge_key, p)));
    }
    let mut op_parts: Vec<Part<Op>> = Vec::new();
    for (&op, pair) in at_ops {
        op_parts.extend(split(pair, available.before(ctx, op)).into_iter().map(|p| part(op, p)));
    }
    read.sort_unstable();
    read.dedup();
    let ranges: Vec<(Bit, Range<u64>)> = read.iter().map(|bit| (*bit, atoms.range(bit.atom))).collect();
    let mut events = Vec::new();
    // Ops the solvers step over (availability after a loop or a branch is what its regions
    // leave) change no bit themselves.
    let stepped = |op: Op| !matches!(flow.role(ctx, op), Role::Definition | Role::RegionBranch(_) | Role::Call { .. });
    for (op, access) in accesses.ops().filter(|(op, _)| stepped(*op)) {
        // What holds just before the op, with the copies made right before it.
        let before = available.before(ctx, op).map(|p| with_copies(p, at_ops.get(&op)));
        for (bit, range) in &ranges {
            let Some(stale) = after_access(access, *bit, range) else { continue };
            // A bit that already says so on every path is not set again.
            let atom = RangeSet::of(range.clone());
            let already = match (&before, stale) {
                (Available::At { may, .. }, true) => may[bit.side].intersect(&atom).is_empty(),
                (Available::At { current, .. }, false) => current[bit.side].contains(&atom),
                (Available::Unreached, _) => true,
            };
            if !already {
                events.push((op, *bit, stale));
            }
        }
    }
    // A set no guarded copy reads before the next set of the same bit is dead: of the sets
    // after ops and of the clears after plain copies.
    if !ranges.is_empty() {
        let mut at: FxHashMap<Op, (Vec<Bit>, Vec<Bit>)> = FxHashMap::default();
        for (op, bit, _) in &events {
            at.entry(*op).or_default().0.push(*bit);
        }
        for part in &op_parts {
            if let Some(bit) = part.guard {
                at.entry(part.at).or_default().1.push(bit);
            }
        }
        let mut on: FxHashMap<EdgeKey, Vec<Bit>> = FxHashMap::default();
        for part in &edge_parts {
            if let Some(bit) = part.guard {
                on.entry(part.at).or_default().push(bit);
            }
        }
        let live = solve_dense_backward_on(ctx, flow, slice, &Liveness { at_ops: &at, on_edges: &on });
        work.solves.add(1);
        events.retain(|(op, bit, _)| live.after(ctx, *op).0.contains(bit));
        // A plain copy before an op clears what is read after the op and the op does not set.
        let sets_at = |op: Op| at.get(&op).map_or(&[][..], |(sets, _)| sets.as_slice());
        for part in op_parts.iter_mut().filter(|p| p.guard.is_none()) {
            let live_there = &live.after(ctx, part.at).0;
            part.clears =
                live_clears(&atoms, &part.pair, |bit| live_there.contains(bit) && !sets_at(part.at).contains(bit));
        }
        for part in edge_parts.iter_mut().filter(|p| p.guard.is_none()) {
            let live_there = &live.at_target(ctx, part.at.1).0;
            part.clears = live_clears(&atoms, &part.pair, |bit| live_there.contains(bit));
        }
    }
    let bits =
        ranges.iter().map(|(bit, range)| (*bit, !entry[bit.side].contains(&RangeSet::of(range.clone())))).collect();
    Guarded { on_edges: edge_parts, at_ops: op_parts, bits, events }
}

/// A part at `at`; a guarded one clears its own bit.
fn part<K>(at: K, (pair, guard): (Pair, Option<Bit>)) -> Part<K> {
    Part { at, pair, guard, clears: guard.into_iter().collect() }
}

/// The bits of the atoms `pair` covers, side by side in atom order, that `live` keeps.
fn live_clears(atoms: &Atoms, pair: &Pair, live: impl Fn(&Bit) -> bool) -> Vec<Bit> {
    [HOST, DEVICE]
        .into_iter()
        .flat_map(|side| bits(atoms, &pair[side], side).map(|(bit, _)| bit))
        .filter(|b| live(b))
        .collect()
}

/// Backward, may: the bits a guarded copy may read before anything sets them again ("live").
/// A bit set after an op where it is not live is a dead store, and not made.
pub struct Liveness<'a> {
    /// Per op: the bits its own sets overwrite (after it), and the bits the guarded copies just
    /// before it read.
    pub at_ops: &'a FxHashMap<Op, (Vec<Bit>, Vec<Bit>)>,
    /// Per edge: the bits the guarded copies on it read.
    pub on_edges: &'a FxHashMap<EdgeKey, Vec<Bit>>,
}

impl DenseBackwardAnalysis for Liveness<'_> {
    type Lattice = UnionSet<Bit>;

    fn visit_op(&self, _: &Context, op: Op, after: &UnionSet<Bit>) -> UnionSet<Bit> {
        let Some((sets, reads)) = self.at_ops.get(&op) else { return after.clone() };
        let mut live = after.clone();
        for bit in sets {
            live.0.remove(bit);
        }
        live.0.extend(reads.iter().copied());
        live
    }

    fn exit_state(&self, _: &Context, _: Block) -> UnionSet<Bit> {
        UnionSet::bottom()
    }

    fn visit_edge(&self, _: &Context, edge: &Edge, state: &UnionSet<Bit>) -> UnionSet<Bit> {
        match self.on_edges.get(&key(edge)) {
            None => state.clone(),
            Some(reads) => {
                let mut live = state.clone();
                live.0.extend(reads.iter().copied());
                live
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoms_split_at_every_bound_and_cover_a_union_of_them() {
        let atoms = Atoms::new([&RangeSet::of(0..16), &RangeSet::of(4..8), &RangeSet::of(12..20)]);
        let covered: Vec<Range<u64>> = atoms.covering(&RangeSet::of(4..16)).into_iter().map(|(_, r)| r).collect();
        assert_eq!(covered, vec![4..8, 8..12, 12..16]);
        let whole: Vec<Range<u64>> = atoms.covering(&RangeSet::of(0..4)).into_iter().map(|(_, r)| r).collect();
        assert_eq!(whole, vec![0..4]);
        assert_eq!(atoms.covering(&RangeSet::of(20..END)).len(), 1, "the rest of the buffer is one atom");
    }

    #[test]
    fn a_copy_is_uncertain_where_its_side_is_current_on_some_path_only() {
        // Host: 0..8 current on every path; 8..16 on some. Device: 0..4 on some.
        let state = Available::At {
            current: [RangeSet::of(0..8), RangeSet::empty()],
            may: [RangeSet::of(0..16), RangeSet::of(0..4)],
        };
        let copies = [RangeSet::of(8..32), RangeSet::of(0..8)];
        let part = uncertain(&copies, &state);
        assert_eq!(part[HOST], RangeSet::of(8..16));
        assert_eq!(part[DEVICE], RangeSet::of(0..4));
    }
}
