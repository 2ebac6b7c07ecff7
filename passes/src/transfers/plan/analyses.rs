//! The three dataflow analyses of the planner, each a transfer function for hat-ir's dense
//! solvers (the solvers follow `scf.if`, `scf.for` and `scf.while` through the region-branch
//! interface, so nothing here knows a loop from a branch). Each is of one root, solved over the
//! slice of the function that touches it (`solve_dense_*_on`: every other op leaves its state
//! as it is):
//!
//! - [`Availability`] (forward, must and may): which elements of the root are current on each side.
//!   `out = ((in ∪ need) − stale) ∪ made`: a need is met before the op (by a copy placed
//!   somewhere before it), a write leaves the other side stale and, when it covers its
//!   elements, its own side current; on every path (`current`, must) and on some path
//!   (`may`). Copies placed on edges and before ops count where they are made.
//! - [`Anticipation`] (backward): `must` — the elements every path from here needs on that side
//!   before anything kills them (`in = need ∪ (out − stale − made)`); `may` — the elements whose
//!   next observer, on some path, wants them on that side (with kills: an element written in
//!   full before anyone looks at it is dead).
//! - [`FirstSays`] (backward, may): whether, on some path, the first op with a word on a question
//!   answers yes. Two questions about a write at a run-time index: [`written_again`], whether
//!   such a write to a side may come again before anything touches the root on the other side;
//!   [`not_read_there_next`], whether something other than a read of the root on a side comes
//!   first (another access of the root, or the end): an element written through to that side
//!   is then not paid for by a copy the `kernel` strategy makes to that read.
//! - [`Later`] (forward, must): lazy code motion's "delayable" (Knoop, Rüthing and Steffen;
//!   edge form of Drechsler and Stadel): a copy may still wait at a point when every path to it
//!   passed its earliest point and no need of it yet. `earliest(e)` on an edge is what is
//!   anticipated at its target and neither available at its source nor anticipated (and
//!   transparent) there.

use super::access::{Access, RootAccesses};
use super::facts::{is_nothing, minus, nothing, unite, Available, May, Must, Pair, DEVICE, HOST};
use hat_ir::analysis::dataflow::{
    DenseBackwardAnalysis, DenseForwardAnalysis, DenseSolution, Edge, FlowGraph, Lattice, Target,
};
use hat_ir::{Block, Context, Op};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::cell::RefCell;

/// An edge, by its source op and its target.
pub type EdgeKey = (Op, Target);

/// The key of `edge`.
pub fn key(edge: &Edge) -> EdgeKey {
    (edge.from, edge.to)
}

/// Copies of one root decided on edges: the elements to each side.
pub type EdgeCopies = FxHashMap<EdgeKey, Pair>;

/// Copies of one root just before ops.
pub type OpCopies = FxHashMap<Op, Pair>;

/// What an access leaves current.
pub fn available_after(pair: &Pair, access: &Access) -> Pair {
    let side = |s: usize| {
        let mut out = pair[s].union(&access.need[s]);
        if !access.stale[s].is_empty() {
            out = out.minus(&access.stale[s]);
        }
        if access.made[s].is_empty() {
            out
        } else {
            out.union(&access.made[s])
        }
    };
    [side(HOST), side(DEVICE)]
}

/// `pair` with the copies `copies` made.
pub fn with_copies(pair: &Pair, copies: Option<&Pair>) -> Pair {
    match copies {
        Some(copies) => unite(pair, copies),
        None => super::facts::copy(pair),
    }
}

/// Forward: the elements of one root current on each side, on every path and on some path.
pub struct Availability<'a> {
    /// What the ops do to the root.
    pub accesses: &'a RootAccesses,
    /// The function's entry block and what is current there.
    pub entry: (Block, Pair),
    /// Copies on edges.
    pub copies: &'a EdgeCopies,
    /// Copies just before ops (the final check's: they meet the op's needs).
    pub before: Option<&'a OpCopies>,
}

impl DenseForwardAnalysis for Availability<'_> {
    type Lattice = Available;

    fn visit_op(&self, _: &Context, op: Op, before: &Available) -> Available {
        let access = self.accesses.of(op);
        let copies = self.before.and_then(|b| b.get(&op));
        if access.is_none() && copies.is_none() {
            return before.clone();
        }
        before.map(|pair| {
            let pair = with_copies(pair, copies);
            match access {
                Some(a) => available_after(&pair, a),
                None => pair,
            }
        })
    }

    fn entry_state(&self, _: &Context, block: Block) -> Available {
        if block == self.entry.0 {
            Available::of(self.entry.1.clone())
        } else {
            Available::of(nothing())
        }
    }

    fn visit_edge(&self, ctx: &Context, edge: &Edge, state: &Available) -> Available {
        self.visit_edge_cow(ctx, edge, state).into_owned()
    }

    fn visit_edge_cow<'s>(&self, _: &Context, edge: &Edge, state: &'s Available) -> Cow<'s, Available> {
        if self.copies.is_empty() {
            return Cow::Borrowed(state);
        }
        along_edge(state, self.copies.get(&key(edge)))
    }
}

/// What arrives along an edge from a source in `state`, with `copies` made on it (`state`
/// itself, borrowed, where the edge changes nothing).
pub fn along_edge<'s>(state: &'s Available, copies: Option<&Pair>) -> Cow<'s, Available> {
    match copies {
        None => Cow::Borrowed(state),
        Some(copies) => Cow::Owned(state.map(|pair| unite(pair, copies))),
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

/// Backward: the needs of one root ahead.
pub struct Anticipation<'a> {
    /// What the ops do to the root.
    pub accesses: &'a RootAccesses,
}

impl DenseBackwardAnalysis for Anticipation<'_> {
    type Lattice = Anticipated;

    fn visit_op(&self, _: &Context, op: Op, after: &Anticipated) -> Anticipated {
        let Some(access) = self.accesses.of(op) else { return after.clone() };
        let (Must::At(must), May::At(may)) = (&after.must, &after.may) else { return after.clone() };
        let (must, may) = anticipated_before(must, may, access);
        Anticipated { must: Must::At(must), may: May::At(may) }
    }

    fn exit_state(&self, _: &Context, _: Block) -> Anticipated {
        Anticipated { must: Must::At(nothing()), may: May::At(nothing()) }
    }

    fn visit_edge_cow<'s>(&self, _: &Context, _: &Edge, state: &'s Anticipated) -> Cow<'s, Anticipated> {
        Cow::Borrowed(state)
    }
}

/// The must-anticipation at a target (nothing where no path reaches an exit).
pub fn anticipated_at(ctx: &Context, ant: &DenseSolution<Anticipated>, target: Target) -> Pair {
    ant.at_target(ctx, target).must.pair().cloned().unwrap_or_else(nothing)
}

/// Forward, must: the copies of one root that may still wait (lazy code motion's `later`).
pub struct Later<'a> {
    /// What the ops do to the root.
    pub accesses: &'a RootAccesses,
    /// The flow graph solved over.
    pub flow: &'a FlowGraph,
    /// Availability.
    pub available: &'a DenseSolution<Available>,
    /// Anticipation.
    pub anticipated: &'a DenseSolution<Anticipated>,
    /// The entry block and what is current there.
    pub entry: (Block, Pair),
    /// `earliest` of each edge, once computed.
    earliest: RefCell<FxHashMap<EdgeKey, Pair>>,
}

impl<'a> Later<'a> {
    /// The analysis over solved availability and anticipation.
    pub fn new(
        accesses: &'a RootAccesses,
        flow: &'a FlowGraph,
        available: &'a DenseSolution<Available>,
        anticipated: &'a DenseSolution<Anticipated>,
        entry: (Block, Pair),
    ) -> Self {
        Later { accesses, flow, available, anticipated, entry, earliest: RefCell::default() }
    }

    /// Availability where `edge` arrives (its source's).
    pub fn available_on(&self, ctx: &Context, edge: &Edge) -> Option<Pair> {
        self.available.at_source(ctx, edge).pair().cloned()
    }

    /// `earliest` of a control-flow edge: anticipated at the target, not anticipated at the
    /// source (the edges out of it do not all need it), not available on the edge.
    fn earliest(&self, ctx: &Context, edge: &Edge) -> Pair {
        if let Some(known) = self.earliest.borrow().get(&key(edge)) {
            return known.clone();
        }
        let target = anticipated_at(ctx, self.anticipated, edge.to);
        let mut wanted = nothing();
        for sibling in self.flow.edges_from(edge.from) {
            if sibling.leaves_before() != edge.leaves_before() || sibling.to == edge.to {
                continue;
            }
            let there = anticipated_at(ctx, self.anticipated, sibling.to);
            wanted = unite(&wanted, &minus(&target, &there));
        }
        let out = match self.available_on(ctx, edge) {
            Some(have) => minus(&wanted, &have),
            None => nothing(),
        };
        self.earliest.borrow_mut().insert(key(edge), out.clone());
        out
    }

    /// `later` along `edge` from the state at its source.
    pub fn along(&self, ctx: &Context, edge: &Edge, state: &Must) -> Must {
        self.along_cow(ctx, edge, state).into_owned()
    }

    /// [`along`](Self::along), borrowing `state` where the edge adds nothing.
    fn along_cow<'s>(&self, ctx: &Context, edge: &Edge, state: &'s Must) -> Cow<'s, Must> {
        let Must::At(pair) = state else { return Cow::Owned(Must::Unreached) };
        let earliest = self.earliest(ctx, edge);
        if is_nothing(&earliest) {
            return Cow::Borrowed(state);
        }
        Cow::Owned(Must::At(unite(pair, &earliest)))
    }
}

impl DenseForwardAnalysis for Later<'_> {
    type Lattice = Must;

    fn visit_op(&self, ctx: &Context, op: Op, before: &Must) -> Must {
        let Must::At(pair) = before else { return Must::Unreached };
        let Some(a) = self.accesses.of(op) else { return before.clone() };
        // What the op needs is placed at it or before it: it waits no further.
        let mut pair = minus(pair, &a.need);
        // The edge to the next op: what the op kills and the next op anticipates starts here.
        if ctx.next_op(op).is_some() {
            let anticipated = self.anticipated.after(ctx, op);
            let available = self.available.after(ctx, op);
            if let (Some(want), Some(have)) = (anticipated.must.pair(), available.pair()) {
                let start = |s: usize| want[s].intersect(&a.kill(s)).minus(&have[s]);
                pair = unite(&pair, &[start(HOST), start(DEVICE)]);
            }
        }
        Must::At(pair)
    }

    fn entry_state(&self, ctx: &Context, block: Block) -> Must {
        if block != self.entry.0 {
            return Must::At(nothing());
        }
        // The function's entry edge: what is anticipated and not current.
        let anticipated = anticipated_at(ctx, self.anticipated, Target::Block(block));
        Must::At(minus(&anticipated, &self.entry.1))
    }

    fn visit_edge(&self, ctx: &Context, edge: &Edge, state: &Must) -> Must {
        self.along(ctx, edge, state)
    }

    fn visit_edge_cow<'s>(&self, ctx: &Context, edge: &Edge, state: &'s Must) -> Cow<'s, Must> {
        self.along_cow(ctx, edge, state)
    }
}

/// Backward, may: on some path from here, the first op `says` has a word on says `true` (or,
/// with none on the path, `at_end` does). Both questions the planner asks of a write at a run-time
/// index have this shape: [`not_read_there_next`] and [`written_again`].
pub struct FirstSays<F> {
    /// What an op says (`None`: nothing; the op is passed over).
    pub says: F,
    /// What the end of the function says.
    pub at_end: bool,
}

impl<F: Fn(Op) -> Option<bool>> DenseBackwardAnalysis for FirstSays<F> {
    type Lattice = bool;

    fn visit_op(&self, _: &Context, op: Op, after: &bool) -> bool {
        (self.says)(op).unwrap_or(*after)
    }

    fn exit_state(&self, _: &Context, _: Block) -> bool {
        self.at_end
    }

    fn visit_edge_cow<'s>(&self, _: &Context, _: &Edge, state: &'s bool) -> Cow<'s, bool> {
        Cow::Borrowed(state)
    }
}

/// On some path from here, the next thing to touch the root is not a read of it on `side`
/// (another access, on either side, or the end of the function comes first).
pub fn not_read_there_next(accesses: &RootAccesses, side: usize) -> FirstSays<impl Fn(Op) -> Option<bool> + '_> {
    let says = move |op: Op| {
        if accesses.dynamic().iter().any(|(o, _)| *o == op) {
            return Some(true);
        }
        accesses.of(op).map(|a| a.need[side].is_empty())
    };
    FirstSays { says, at_end: true }
}

/// On some path from here, a write to `side` at a run-time index comes before any access to the
/// root on the other side.
pub fn written_again(accesses: &RootAccesses, side: usize) -> FirstSays<impl Fn(Op) -> Option<bool> + '_> {
    let other = 1 - side;
    let says = move |op: Op| {
        if accesses.dynamic().iter().any(|(o, d)| *o == op && d.writes && d.side == side) {
            return Some(true);
        }
        let a = accesses.of(op)?;
        let touches_other = !(a.need[other].is_empty() && a.made[other].is_empty() && a.stale[other].is_empty());
        touches_other.then_some(false)
    };
    FirstSays { says, at_end: false }
}
