//! Settling the merges of one root: where paths that disagree on what is current join, the
//! edges into the join are completed (repairs) or set the root's flag ([`placement::repairs`]
//! decides which, per join, from what reaches it along each edge).
//!
//! The decisions are made within one availability solve, at each join as the solve reaches it
//! ([`Settling`], through the solver's `merge`): a join downstream decides after the joins
//! upstream of it did, so it sees what they flagged. A join decides again when what reaches it
//! changes (a loop's header, when its back edge arrives), adding to what it decided; but while
//! a loop around it settles, what reaches it shrinks (its first iteration saw what the loop's
//! entry brought), and then it drops what it decided and decides afresh. It decides sixteen
//! times at most (flags in the first eight), so the solve ends. What is left — a join that waits
//! for one downstream of it, repairs a later decision made needless — is finished in rounds of
//! repairs over whole solves, then the repairs are narrowed to what their edges still lack.

use super::access::RootAccesses;
use super::analyses::{along_edge, key, Availability, EdgeCopies, FlagSets};
use super::facts::{self, Available, Pair};
use super::merges::Merges;
use super::placement::{self, Decisions};
use super::Work;
use hat_ir::analysis::dataflow::{
    solve_dense_forward_on, DenseForwardAnalysis, DenseSolution, Edge, FlowGraph, FlowSlice, Lattice, Target,
};
use hat_ir::{Block, Context, Op};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;

/// How many rounds of repairs, and of pruning, before giving up (programs settle in two or three).
const ROUNDS: usize = 12;

/// The rounds in which a join may wait for the one upstream of it to flag what it loses.
const WAITING_ROUNDS: usize = 4;

/// The rounds in which joins may set flags.
const FLAGGING_ROUNDS: usize = 8;

/// Availability with copies on the edges into joins where paths disagree: repairs are added until
/// no merge loses an element still observed, then narrowed to what is still missing (a repair
/// made for an early state of a loop may be made needless by a later one). `None` where they do
/// not settle.
pub fn settle_merges(
    ctx: &Context,
    flow: &FlowGraph,
    slice: &Rc<FlowSlice>,
    accesses: &RootAccesses,
    entry: &(hat_ir::Block, Pair),
    merges: &Merges,
    work: &Work,
) -> Option<(DenseSolution<facts::Available>, EdgeCopies, FlagSets)> {
    let solve = |copies: &EdgeCopies, flags: &FlagSets| {
        work.solves.update(|n| n + 1);
        solve_dense_forward_on(
            ctx,
            flow,
            slice,
            &Availability { accesses, entry: entry.clone(), copies, flags, before: None },
        )
    };
    // Most joins are decided within one solve, as it reaches them; the rounds below finish what
    // waits on a join downstream of it (a loop's header, on its back edge).
    let (mut solved, mut repairs, mut flags) = {
        let none = Default::default();
        let settling = Settling::new(merges, accesses, entry, &none);
        work.solves.update(|n| n + 1);
        let solved = solve_dense_forward_on(ctx, flow, slice, &settling);
        let decided = settling.decided.into_inner();
        (solved, decided.copies, decided.flags)
    };
    let mut settled = false;
    for round in 0..ROUNDS {
        work.settle_rounds.update(|n| n + 1);
        // Flags are decided in the first rounds only: each decision can open another round
        // downstream, and a chain of thousands of loops would not settle; after them, what a
        // join loses is repaired.
        let decided = placement::repairs(ctx, merges, &solved, &repairs, &flags, round < FLAGGING_ROUNDS);
        let new_sets = decided.sets.iter().any(|(edge, side)| flags.get(edge) != Some(side));
        // A join that waits for the one upstream of it settles a round after it; a chain of
        // them waits a few rounds at most, then is repaired at once.
        let wait = round < WAITING_ROUNDS;
        if decided.copies.is_empty() && !new_sets && decided.deferred.is_empty() {
            settled = true;
            break;
        }
        if decided.copies.is_empty() && !new_sets || !wait {
            placement::merge_copies(&mut repairs, decided.deferred);
        }
        placement::merge_copies(&mut repairs, decided.copies);
        flags.extend(decided.sets);
        solved = solve(&repairs, &flags);
    }
    if !settled {
        return None;
    }
    for _ in 0..ROUNDS {
        let pruned = placement::prune(ctx, flow, &solved, &repairs);
        if pruned == repairs {
            // Pruning must not open a merge again.
            let decided = placement::repairs(ctx, merges, &solved, &repairs, &flags, false);
            let new_sets = decided.sets.iter().any(|(edge, side)| flags.get(edge) != Some(side));
            if !decided.copies.is_empty() || !decided.deferred.is_empty() || new_sets {
                return None;
            }
            return Some((solved, repairs, flags));
        }
        repairs = pruned;
        solved = solve(&repairs, &flags);
    }
    None
}

/// How many times a join may set flags within the settling solve.
const FLAGGING_EVALUATIONS: u32 = 8;

/// How many times a join decides within the settling solve (then its decisions stand, and the
/// solve ends).
const DECIDING_EVALUATIONS: u32 = 16;

/// What the joins decided within the settling solve.
#[derive(Default)]
struct Decided {
    copies: EdgeCopies,
    flags: FlagSets,
    /// Per join, how many times it decided.
    evaluations: Vec<u32>,
    /// Per join, what arrived along each edge when it last decided.
    inputs: Vec<Vec<(usize, Pair)>>,
}

/// Availability, with each join's repairs and flag sets decided where the solve reaches it.
/// Every point where control joins is merged from the latest state along each edge (not
/// joined into what arrived before): a decision upstream may make more current than the
/// solve saw there before.
struct Settling<'a> {
    availability: Availability<'a>,
    merges: &'a Merges,
    joins: FxHashMap<Target, usize>,
    decided: RefCell<Decided>,
}

impl<'a> Settling<'a> {
    /// `none`: no copies and no flag sets, for the availability its ops go through (the edges
    /// are the settling solve's).
    fn new(
        merges: &'a Merges,
        accesses: &'a RootAccesses,
        entry: &(Block, Pair),
        none: &'a (EdgeCopies, FlagSets),
    ) -> Self {
        let joins = merges.joins.iter().enumerate().map(|(j, join)| (join.target, j)).collect();
        let decided = Decided {
            evaluations: vec![0; merges.joins.len()],
            inputs: vec![Vec::new(); merges.joins.len()],
            ..Decided::default()
        };
        Settling {
            availability: Availability {
                accesses,
                entry: entry.clone(),
                copies: &none.0,
                flags: &none.1,
                before: None,
            },
            merges,
            joins,
            decided: RefCell::new(decided),
        }
    }
}

impl DenseForwardAnalysis for Settling<'_> {
    type Lattice = Available;

    fn visit_op(&self, ctx: &Context, op: Op, before: &Available) -> Available {
        self.availability.visit_op(ctx, op, before)
    }

    fn entry_state(&self, ctx: &Context, block: Block) -> Available {
        self.availability.entry_state(ctx, block)
    }

    /// The state at the source: the join's copies and flag sets are made in `merge`.
    fn visit_edge(&self, _: &Context, _: &Edge, state: &Available) -> Available {
        state.clone()
    }

    fn visit_edge_cow<'s>(&self, _: &Context, _: &Edge, state: &'s Available) -> std::borrow::Cow<'s, Available> {
        std::borrow::Cow::Borrowed(state)
    }

    fn merges_at(&self, _: Target) -> bool {
        true
    }

    fn merge(&self, ctx: &Context, target: Target, arriving: &[(&Edge, Available)]) -> Available {
        let mut decided = self.decided.borrow_mut();
        if let Some(&j) = self.joins.get(&target) {
            decided.evaluations[j] += 1;
            let evaluation = decided.evaluations[j];
            if evaluation <= DECIDING_EVALUATIONS {
                let join = &self.merges.joins[j];
                let index = |edge: &Edge| join.edges.iter().position(|e| key(e) == key(edge));
                // What arrives along each edge (the join's own copies are made here, not on it).
                let arrived: Vec<(usize, Pair)> =
                    arriving.iter().filter_map(|(edge, state)| Some((index(edge)?, state.pair()?.clone()))).collect();
                // While a loop around the join settles, what arrives shrinks (its first
                // iteration saw what the loop's entry brought): what it decided then may not
                // hold, and it decides afresh.
                let shrank = decided.inputs[j].iter().any(|(i, before)| {
                    arrived
                        .iter()
                        .any(|(k, now)| k == i && !(now[0].contains(&before[0]) && now[1].contains(&before[1])))
                });
                if shrank {
                    for edge in &join.edges {
                        decided.copies.remove(&key(edge));
                        decided.flags.remove(&key(edge));
                    }
                }
                decided.inputs[j] = arrived;
                let reached: Vec<placement::Reached> = arriving
                    .iter()
                    .filter_map(|(edge, state)| placement::reached(index(edge)?, state, decided.copies.get(&key(edge))))
                    .collect();
                let mut decisions = Decisions::default();
                let flagging = evaluation <= FLAGGING_EVALUATIONS;
                placement::decide_join(ctx, self.merges, j, &reached, &decided.flags, flagging, &mut decisions);
                placement::merge_copies(&mut decided.copies, decisions.copies);
                for (edge, side) in decisions.sets {
                    decided.flags.entry(edge).or_insert(side);
                }
            }
        }
        let mut merged = Available::bottom();
        for (edge, state) in arriving {
            let edge_key = key(edge);
            merged.join(&along_edge(state, decided.copies.get(&edge_key), decided.flags.get(&edge_key).copied()));
        }
        merged
    }
}
