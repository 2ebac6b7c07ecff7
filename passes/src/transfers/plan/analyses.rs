//! The three dataflow analyses of the planner, each a transfer function for hat-ir's dense
//! solvers (the solvers follow `scf.if`, `scf.for` and `scf.while` through the region-branch
//! interface, so nothing here knows a loop from a branch):
//!
//! - [`Availability`] (forward, must): which elements of each root are current on each side.
//!   `out = ((in ∪ need) − stale) ∪ made`: a need is met before the op (by a copy placed
//!   somewhere before it), a write leaves the other side stale and, when it covers its
//!   elements, its own side current. Copies already decided on edges (the repairs of
//!   [`super::placement`]) count on their edge.
//! - [`Anticipation`] (backward): `must` — the elements every path from here needs on that side
//!   before anything kills them (`in = need ∪ (out − stale − made)`); `may` — the elements whose
//!   next observer, on some path, wants them on that side (with kills: an element written in
//!   full before anyone looks at it is dead).
//! - [`Later`] (forward, must): lazy code motion's "delayable" (Knoop, Rüthing and Steffen;
//!   edge form of Drechsler and Stadel): a copy may still wait at a point when every path to it
//!   passed its earliest point and no need of it yet. `earliest(e)` on an edge is what is
//!   anticipated at its target and neither available at its source nor anticipated (and
//!   transparent) there.

use super::super::ranges::RangeSet;
use super::access::{Access, Accesses};
use super::facts::{Facts, May, Must, Pair, DEVICE, HOST};
use hat_ir::analysis::dataflow::{
    DenseBackwardAnalysis, DenseForwardAnalysis, DenseSolution, Edge, FlowGraph, Lattice, Target,
};
use hat_ir::{Block, Context, Op};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::cell::RefCell;

/// An edge, by its source op and its target.
pub type EdgeKey = (Op, Target);

/// The key of `edge`.
pub fn key(edge: &Edge) -> EdgeKey {
    (edge.from, edge.to)
}

/// Copies at one place: (root, side, elements).
pub type Copies = Vec<(usize, usize, RangeSet)>;

/// Copies decided on edges.
pub type EdgeCopies = FxHashMap<EdgeKey, Copies>;

/// Copies just before ops.
pub type OpCopies = FxHashMap<Op, Copies>;

/// What `earliest` gives on one edge: (root, elements per side).
type Earliest = SmallVec<[(usize, Pair); 2]>;

/// What an access leaves current.
pub fn available_after(pair: &Pair, access: &Access) -> Pair {
    let side = |s: usize| pair[s].union(&access.need[s]).minus(&access.stale[s]).union(&access.made[s]);
    [side(HOST), side(DEVICE)]
}

/// Adds the copies on `edge` to `facts`.
pub fn with_edge_copies(facts: &Facts, copies: Option<&Copies>) -> Facts {
    let mut facts = facts.clone();
    for (root, side, ranges) in copies.into_iter().flatten() {
        facts.update(*root, |p| {
            let mut p = p.clone();
            p[*side] = p[*side].union(ranges);
            p
        });
    }
    facts
}

/// Forward, must: the current elements.
pub struct Availability<'a> {
    /// The classified ops.
    pub accesses: &'a Accesses,
    /// The function's entry block and what is current there.
    pub entry: (Block, Facts),
    /// Copies on edges.
    pub copies: &'a EdgeCopies,
    /// Copies just before ops (the final check's: they meet the op's needs).
    pub before: Option<&'a OpCopies>,
}

impl DenseForwardAnalysis for Availability<'_> {
    type Lattice = Must;

    fn visit_op(&self, _: &Context, op: Op, before: &Must) -> Must {
        let Must::At(facts) = before else { return Must::Unreached };
        let access = self.accesses.of(op);
        let copies = self.before.and_then(|b| b.get(&op));
        if access.tracked.is_empty() && copies.is_none() {
            return before.clone();
        }
        let mut facts = with_edge_copies(facts, copies);
        for a in &access.tracked {
            facts.update(a.root, |p| available_after(p, a));
        }
        Must::At(facts)
    }

    fn entry_state(&self, _: &Context, block: Block) -> Must {
        if block == self.entry.0 {
            Must::At(self.entry.1.clone())
        } else {
            Must::At(Facts::empty(self.entry.1.len()))
        }
    }

    fn visit_edge(&self, _: &Context, edge: &Edge, state: &Must) -> Must {
        match (state, self.copies.get(&key(edge))) {
            (Must::At(facts), Some(copies)) => Must::At(with_edge_copies(facts, Some(copies))),
            _ => state.clone(),
        }
    }
}

/// Both anticipations at a point.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Anticipated {
    /// Needed on every path.
    pub must: Must,
    /// Observed next on that side on some path.
    pub may: May,
}

impl Lattice for Anticipated {
    fn bottom() -> Self {
        Anticipated::default()
    }

    fn join(&mut self, other: &Self) -> bool {
        let a = self.must.join(&other.must);
        let b = self.may.join(&other.may);
        a || b
    }
}

/// What an access leaves anticipated before it, from what is anticipated after it.
fn anticipated_before(must: &Pair, may: &Pair, access: &Access) -> (Pair, Pair) {
    let must_side = |s: usize| access.need[s].union(&must[s].minus(&access.kill(s)));
    let dead = access.made[HOST].union(&access.made[DEVICE]);
    let may_side = |s: usize| {
        let killed = dead.union(&access.stale[s]).union(&access.need[1 - s]);
        access.need[s].union(&may[s].minus(&killed))
    };
    ([must_side(HOST), must_side(DEVICE)], [may_side(HOST), may_side(DEVICE)])
}

/// Backward: the needs ahead.
pub struct Anticipation<'a> {
    /// The classified ops.
    pub accesses: &'a Accesses,
    /// How many tracked roots.
    pub roots: usize,
}

impl DenseBackwardAnalysis for Anticipation<'_> {
    type Lattice = Anticipated;

    fn visit_op(&self, _: &Context, op: Op, after: &Anticipated) -> Anticipated {
        let access = self.accesses.of(op);
        if access.tracked.is_empty() {
            return after.clone();
        }
        let (Must::At(must), May::At(may)) = (&after.must, &after.may) else { return after.clone() };
        let (mut must, mut may) = (must.clone(), may.clone());
        for a in &access.tracked {
            let (m, y) = anticipated_before(must.get(a.root), may.get(a.root), a);
            must.set(a.root, m);
            may.set(a.root, y);
        }
        Anticipated { must: Must::At(must), may: May::At(may) }
    }

    fn exit_state(&self, _: &Context, _: Block) -> Anticipated {
        Anticipated { must: Must::At(Facts::empty(self.roots)), may: May::At(Facts::empty(self.roots)) }
    }
}

/// The must-anticipation at a target (nothing where no path reaches an exit).
pub fn anticipated_at(ctx: &Context, ant: &DenseSolution<Anticipated>, target: Target, roots: usize) -> Facts {
    let state = match target {
        Target::Block(block) => ant.block_start(ctx, block),
        Target::After(op) => ant.after(ctx, op),
    };
    state.must.facts().cloned().unwrap_or_else(|| Facts::empty(roots))
}

/// Forward, must: the copies that may still wait (lazy code motion's `later`).
pub struct Later<'a> {
    /// The classified ops.
    pub accesses: &'a Accesses,
    /// The flow graph solved over.
    pub flow: &'a FlowGraph,
    /// Availability, with the repairs.
    pub available: &'a DenseSolution<Must>,
    /// Anticipation.
    pub anticipated: &'a DenseSolution<Anticipated>,
    /// The repairs on edges.
    pub copies: &'a EdgeCopies,
    /// The entry block and what is current there.
    pub entry: (Block, Facts),
    /// `earliest` of each edge, once computed.
    earliest: RefCell<FxHashMap<EdgeKey, Earliest>>,
}

impl<'a> Later<'a> {
    /// The analysis over solved availability and anticipation.
    pub fn new(
        accesses: &'a Accesses,
        flow: &'a FlowGraph,
        available: &'a DenseSolution<Must>,
        anticipated: &'a DenseSolution<Anticipated>,
        copies: &'a EdgeCopies,
        entry: (Block, Facts),
    ) -> Self {
        Later { accesses, flow, available, anticipated, copies, entry, earliest: RefCell::default() }
    }

    fn roots(&self) -> usize {
        self.entry.1.len()
    }

    /// Availability where `edge` arrives (its source's, with the edge's repairs).
    pub fn available_on(&self, ctx: &Context, edge: &Edge) -> Option<Facts> {
        let at_source = if edge.leaves_before() {
            self.available.before(ctx, edge.from)
        } else {
            self.available.after(ctx, edge.from)
        };
        at_source.facts().map(|f| with_edge_copies(f, self.copies.get(&key(edge))))
    }

    /// `earliest` of a control-flow edge: anticipated at the target, not anticipated at the
    /// source (the edges out of it do not all need it), not available on the edge.
    fn earliest(&self, ctx: &Context, edge: &Edge) -> Earliest {
        if let Some(known) = self.earliest.borrow().get(&key(edge)) {
            return known.clone();
        }
        let roots = self.roots();
        let target = anticipated_at(ctx, self.anticipated, edge.to, roots);
        let mut wanted: FxHashMap<usize, Pair> = FxHashMap::default();
        for sibling in self.flow.edges_from(edge.from) {
            if sibling.leaves_before() != edge.leaves_before() || sibling.to == edge.to {
                continue;
            }
            let there = anticipated_at(ctx, self.anticipated, sibling.to, roots);
            target.diff(&there, &mut |root, here, there| {
                let extra = [here[HOST].minus(&there[HOST]), here[DEVICE].minus(&there[DEVICE])];
                let slot = wanted.entry(root).or_default();
                *slot = [slot[HOST].union(&extra[HOST]), slot[DEVICE].union(&extra[DEVICE])];
            });
        }
        let available = self.available_on(ctx, edge);
        let mut out: Earliest = SmallVec::new();
        let mut wanted: Vec<(usize, Pair)> = wanted.into_iter().collect();
        wanted.sort_by_key(|(root, _)| *root);
        for (root, pair) in wanted {
            let pair = match &available {
                Some(av) => {
                    let have = av.get(root);
                    [pair[HOST].minus(&have[HOST]), pair[DEVICE].minus(&have[DEVICE])]
                }
                None => continue,
            };
            if !pair[HOST].is_empty() || !pair[DEVICE].is_empty() {
                out.push((root, pair));
            }
        }
        self.earliest.borrow_mut().insert(key(edge), out.clone());
        out
    }

    /// `later` along `edge` from the state at its source.
    pub fn along(&self, ctx: &Context, edge: &Edge, state: &Must) -> Must {
        let Must::At(facts) = state else { return Must::Unreached };
        let earliest = self.earliest(ctx, edge);
        if earliest.is_empty() {
            return state.clone();
        }
        let mut facts = facts.clone();
        for (root, pair) in earliest {
            facts.update(root, |p| [p[HOST].union(&pair[HOST]), p[DEVICE].union(&pair[DEVICE])]);
        }
        Must::At(facts)
    }
}

impl DenseForwardAnalysis for Later<'_> {
    type Lattice = Must;

    fn visit_op(&self, ctx: &Context, op: Op, before: &Must) -> Must {
        let Must::At(facts) = before else { return Must::Unreached };
        let access = self.accesses.of(op);
        if access.tracked.is_empty() {
            return before.clone();
        }
        let mut facts = facts.clone();
        // What the op needs is placed at it or before it: it waits no further.
        for a in &access.tracked {
            facts.update(a.root, |p| [p[HOST].minus(&a.need[HOST]), p[DEVICE].minus(&a.need[DEVICE])]);
        }
        // The edge to the next op: what the op kills and the next op anticipates starts here.
        if let Some(next) = ctx.next_op(op) {
            let anticipated = self.anticipated.before(ctx, next);
            let available = self.available.after(ctx, op);
            if let (Some(ant), Some(av)) = (anticipated.must.facts(), available.facts()) {
                for a in &access.tracked {
                    let (want, have) = (ant.get(a.root), av.get(a.root));
                    let start = |s: usize| want[s].intersect(&a.kill(s)).minus(&have[s]);
                    let (h, d) = (start(HOST), start(DEVICE));
                    if !h.is_empty() || !d.is_empty() {
                        facts.update(a.root, |p| [p[HOST].union(&h), p[DEVICE].union(&d)]);
                    }
                }
            }
        }
        Must::At(facts)
    }

    fn entry_state(&self, ctx: &Context, block: Block) -> Must {
        if block != self.entry.0 {
            return Must::At(Facts::empty(self.roots()));
        }
        // The function's entry edge: what is anticipated and not current.
        let anticipated = anticipated_at(ctx, self.anticipated, Target::Block(block), self.roots());
        let mut out = Facts::empty(self.roots());
        anticipated.diff(&out.clone(), &mut |root, want, _| {
            let have = self.entry.1.get(root);
            out.set(root, [want[HOST].minus(&have[HOST]), want[DEVICE].minus(&have[DEVICE])]);
        });
        Must::At(out)
    }

    fn visit_edge(&self, ctx: &Context, edge: &Edge, state: &Must) -> Must {
        self.along(ctx, edge, state)
    }
}
