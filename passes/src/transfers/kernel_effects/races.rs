//! Data races of one dispatch: two work items touching one element of a buffer parameter, at
//! least one of them writing, neither atomically.
//!
//! The accesses of the kernel's summary (helpers' included, mapped through each call) are
//! evaluated work item by work item over the dispatch's grid: each work-item id becomes a
//! number, then each iteration of a counted loop whose bounds are then numbers, so an index
//! becomes an element (or an expression in what the whole dispatch shares: scalar arguments,
//! dynamic sizes) and a guard is decided. Two work items whose accesses land on one element race
//! when their guards can hold together. This is exact where everything folds to numbers, which
//! needs no solver; where it does not:
//! - an index that still depends on something each work item computes for itself (a loaded
//!   value, narrow arithmetic, a loop with unknown bounds) cannot be proved one-to-one: a store
//!   through it is reported as [`RaceKind::UnprovenIndex`];
//! - a guard that depends on such a value makes a race uncertain ([`Race::uncertain`]);
//! - two elements given by different dispatch-wide expressions are taken to be distinct;
//! - a read whose index chooses (`select`) between elements may read either of them.
//!
//! Only the work items below the grid touch buffers (docs/lowering.md, "Which work items
//! exist"); an index out of the buffer's bounds stops the dispatch, so touches nothing. A grid
//! larger than [`MAX_ITEMS`] work items is looked at in its first items only (per dimension, a
//! prefix), which finds races among those and proves nothing of the rest. Two parameters are
//! taken to be bound to distinct buffers.
//!
//! Workgroup memory (each `kernel.local_alloc`, reached directly or through helpers) is looked
//! at among the work items of the first workgroup (below the grid): two accesses race when they
//! are by different work items, in the same barrier phase (`barriers.rs`: the number of
//! barriers passed before them, from the structure and the loop iterations), on one element,
//! at least one storing. An access whose phase is unknown is taken to be in every phase. A
//! barrier also orders the global memory of one workgroup; that is not looked at (only
//! workgroup memory is ordered here), so a kernel relying on it is reported.

use super::affine::{Affine, Atom};
use super::barriers::Phase;
use super::dispatch::{narrow, Dispatch, Query, Resolved};
use super::guard::Guard;
use super::interval::Environment;
use super::summary::{Access, Extent, Loop, Target};
use super::KernelEffects;
use hat_ir::Op;
use std::collections::BTreeMap;
use std::rc::Rc;

/// An element of one workgroup's memory: its rank, then the workgroup's coordinates and the
/// element's indices.
type GroupElement = (usize, Vec<Affine>);

/// Numbers given to atoms (work-item ids, loop variables) for one evaluation.
type Bindings = [(Atom, i64)];

/// The most work items evaluated per dispatch.
pub const MAX_ITEMS: u64 = 4096;

/// The most access evaluations (work items × loop iterations × accesses) per dispatch.
const MAX_EVALUATIONS: usize = 1 << 18;

/// What kind of race.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RaceKind {
    /// Two work items store to one element.
    Store,
    /// One work item reads an element another stores to.
    Read,
    /// A store whose index depends on values the analysis does not follow: not provably
    /// one-to-one in the work items.
    UnprovenIndex,
}

/// One work item, by its id in each dimension.
pub type Item = [i64; 3];

/// A race found in one dispatch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    /// What kind.
    pub kind: RaceKind,
    /// The kernel parameter whose buffer it is on (`usize::MAX` for workgroup memory).
    pub param: usize,
    /// The op allocating the workgroup memory it is on, if that is what it is on.
    pub local: Option<Op>,
    /// The racing access: the store, or for [`RaceKind::Read`] the read.
    pub op: Op,
    /// The op of the kernel that leads to `op` (a call of the helper holding it, or `op`).
    pub site: Op,
    /// The access it races with (the same op for a store that races with itself).
    pub other: Op,
    /// The op of the kernel that leads to `other`.
    pub other_site: Op,
    /// The work item making `op`'s access and the one making `other`'s, when named.
    pub items: Option<(Item, Item)>,
    /// The element (one index per dimension), as text: numbers, or an expression in the
    /// dispatch's unknowns.
    pub element: Option<String>,
    /// Whether a guard on data the analysis does not follow may keep it from happening.
    pub uncertain: bool,
}

/// One evaluation of an access by one work item (in one loop iteration).
#[derive(Default)]
struct Touch {
    access: usize,
    item: Item,
    guards: Rc<Vec<Guard>>,
    /// Whether the guards are decided by what the dispatch shares (no per-item unknown).
    uniform_guards: bool,
    /// The barrier phase (workgroup memory only), when known.
    phase: Option<i64>,
    /// The numbers of the ids and loop variables it was evaluated with.
    bindings: Vec<(Atom, i64)>,
}

impl KernelEffects {
    /// The races of a dispatch: at most one per pair of accesses (and kind), in the order of
    /// the elements, then those on workgroup memory. See the module documentation.
    pub fn races(&self, dispatch: &Dispatch) -> Vec<Race> {
        let query = self.query(dispatch);
        let rank = dispatch.grid.len().clamp(1, 3);
        let mut limits = [1i64; 3];
        for (d, limit) in limits.iter_mut().enumerate().take(rank) {
            let Some(size) = dispatch.grid_size(d) else { return Vec::new() };
            let cap = match rank {
                1 => MAX_ITEMS,
                2 => 64,
                _ => 16,
            };
            *limit = i64::try_from(size.min(cap)).unwrap_or(0);
        }
        let mut touches: BTreeMap<(usize, Vec<Affine>), Vec<Touch>> = BTreeMap::new();
        let mut unproven = vec![false; self.accesses.len()];
        let mut budget = MAX_EVALUATIONS;
        // A read races only with a store: reads of a buffer nothing stores to are not looked at.
        let stored = |param: usize| {
            self.accesses
                .iter()
                .any(|a| a.write && !a.atomic && (a.target == Target::Param(param) || a.target == Target::Any))
        };
        for (index, access) in self.accesses.iter().enumerate() {
            if access.atomic || !(access.read || access.write) {
                continue;
            }
            if !access.write && matches!(access.target, Target::Param(p) if !stored(p)) {
                continue;
            }
            let param = match access.target {
                Target::Param(p) => p,
                Target::Any => {
                    unproven[index] |= access.write;
                    continue;
                }
            };
            let shape = query.shape(param);
            let resolved = query.resolve(access);
            let complete = evaluate(
                access,
                &resolved,
                shape.as_deref(),
                limits,
                &mut budget,
                false,
                &mut |touch, key| match key {
                    Some(key) => touches.entry((param, key)).or_default().push(Touch { access: index, ..touch }),
                    None => unproven[index] = true,
                },
            );
            if !complete {
                break;
            }
        }
        let mut races = races_so_far(self, &touches, &unproven);
        races.extend(self.local_races(&query, dispatch, &mut budget));
        races
    }

    /// The races on workgroup memory: between the work items of one workgroup, between the
    /// same two barriers. The work items are those of the grid, and in a kernel with a barrier
    /// also those past it in the last workgroups (which run to take part in barriers and
    /// workgroup memory).
    fn local_races(&self, query: &Query<'_>, dispatch: &Dispatch, budget: &mut usize) -> Vec<Race> {
        if self.locals.is_empty() {
            return Vec::new();
        }
        let workgroup = self.workgroup.unwrap_or([64, 1, 1]);
        let mut limits = [1i64; 3];
        let mut items = 1u64;
        for (d, limit) in limits.iter_mut().enumerate() {
            let Some(mut size) = dispatch.grid_size(d).or((d >= dispatch.grid.len()).then_some(1)) else {
                return Vec::new();
            };
            if size == 0 {
                return Vec::new(); // no work item runs
            }
            if self.barrier {
                size = size.next_multiple_of(workgroup[d].max(1));
            }
            let size = size.min(MAX_ITEMS / items.max(1)).max(1);
            items = items.saturating_mul(size);
            *limit = i64::try_from(size).unwrap_or(1);
        }
        // By allocation, then the workgroup's coordinates and the element (with its rank).
        let mut touches: BTreeMap<(usize, GroupElement), Vec<Touch>> = BTreeMap::new();
        let mut unproven = vec![false; self.locals.len()];
        let mut allocs: Vec<Op> = Vec::new();
        for (index, local) in self.locals.iter().enumerate() {
            let access = &local.access;
            if access.atomic || !(access.read || access.write) {
                continue;
            }
            let stored = self.locals.iter().any(|l| l.alloc == local.alloc && l.access.write && !l.access.atomic);
            if !access.write && !stored {
                continue; // a read races only with a store
            }
            let slot = allocs.iter().position(|&a| a == local.alloc).unwrap_or_else(|| {
                allocs.push(local.alloc);
                allocs.len() - 1
            });
            let resolved = query.resolve(access);
            let complete = evaluate(access, &resolved, None, limits, budget, true, &mut |touch, key| match key {
                Some(key) => {
                    let phase = local.phase.as_ref().and_then(|p| phase_number(p, &touch.bindings));
                    // Each workgroup has its own workgroup memory.
                    let group = (0..3).map(|d| touch.item[d] / workgroup[d].max(1) as i64);
                    let element = (key.len(), group.map(Affine::constant).chain(key).collect());
                    touches.entry((slot, element)).or_default().push(Touch { access: index, phase, ..touch })
                }
                None => unproven[index] = true,
            });
            if !complete {
                break;
            }
        }
        let mut races = Vec::new();
        let mut reported: Vec<(usize, usize)> = Vec::new();
        for ((slot, (rank, grouped)), list) in &touches {
            let key = &grouped[grouped.len() - rank..];
            for write in list.iter().filter(|t| self.locals[t.access].access.write) {
                for other in list {
                    if other.item == write.item || reported.contains(&(write.access, other.access)) {
                        continue;
                    }
                    // A barrier between them orders them.
                    if let (Some(a), Some(b)) = (write.phase, other.phase) {
                        if a != b {
                            continue;
                        }
                    }
                    let Some(uncertain) = together(write, other) else { continue };
                    reported.push((write.access, other.access));
                    reported.push((other.access, write.access));
                    let (w, o) = (&self.locals[write.access].access, &self.locals[other.access].access);
                    let element = Some(key.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", "));
                    let (kind, first, second, items) = if o.write {
                        (RaceKind::Store, w, o, (write.item, other.item))
                    } else {
                        (RaceKind::Read, o, w, (other.item, write.item))
                    };
                    races.push(Race {
                        kind,
                        param: usize::MAX,
                        local: Some(allocs[*slot]),
                        op: first.op,
                        site: first.site,
                        other: second.op,
                        other_site: second.site,
                        items: Some(items),
                        element,
                        uncertain,
                    });
                }
            }
        }
        for (index, _) in unproven.iter().enumerate().filter(|(_, &u)| u) {
            let local = &self.locals[index];
            if races.iter().any(|r| r.op == local.access.op && r.kind == RaceKind::Store) {
                continue;
            }
            races.push(Race {
                kind: RaceKind::UnprovenIndex,
                param: usize::MAX,
                local: Some(local.alloc),
                op: local.access.op,
                site: local.access.site,
                other: local.access.op,
                other_site: local.access.site,
                items: None,
                element: None,
                uncertain: !local.access.guards.iter().all(guard_is_uniform),
            });
        }
        races
    }
}

/// The barrier phase `phase` stands for where the loop variables have the numbers of
/// `bindings`; `None` when one of its loops is not bound.
fn phase_number(phase: &Phase, bindings: &[(Atom, i64)]) -> Option<i64> {
    let mut number = phase.base;
    for l in &phase.loops {
        let value = bindings.iter().find(|(a, _)| *a == Atom::Loop(l.variable)).map(|&(_, v)| v)?;
        let (lower, step) = (l.lower.as_constant()?, l.step.as_constant()?);
        if step <= 0 {
            return None;
        }
        number = number.checked_add(((value - lower) / step).checked_mul(l.barriers)?)?;
    }
    Some(number)
}

/// Evaluates `access` (resolved as `resolved`, on a buffer of `shape`) for every work item
/// below `limits` and every iteration of its loops that folds, calling `visit` with each touch
/// (its `access` field to be set by the caller; its bindings kept only with `keep_bindings`) and the element, or `None` for a store whose
/// element the analysis cannot name. `false` when the budget ran out.
fn evaluate(
    access: &Access,
    resolved: &Resolved,
    shape: Option<&[Option<u64>]>,
    limits: [i64; 3],
    budget: &mut usize,
    keep_bindings: bool,
    visit: &mut dyn FnMut(Touch, Option<Vec<Affine>>),
) -> bool {
    let Extent::Element(indices) = &resolved.extent else {
        if access.write && !matches!(resolved.extent, Extent::Whole) {
            visit(Touch::default(), None);
        }
        return true;
    };
    // Guards that no id or loop variable enters (on loaded data, say) are the same for every
    // work item: looked at once, and shared by the touches.
    let (fixed, varying): (Vec<&Guard>, Vec<&Guard>) = resolved.guards.iter().partition(|g| !guard_varies(g));
    let mut shared: Vec<Guard> = Vec::new();
    for guard in fixed {
        match guard.decide(&|_| None) {
            Some(true) => {}
            Some(false) => return true, // no work item runs it
            None => shared.push(guard.clone()),
        }
    }
    if !shared.is_empty() && !narrow(&mut Environment::default(), &[], &shared) {
        return true;
    }
    let shared = Rc::new(shared);
    for z in 0..limits[2] {
        for y in 0..limits[1] {
            for x in 0..limits[0] {
                let item = [x, y, z];
                let mut bindings: Vec<(Atom, i64)> = (0..3u8).map(|d| (Atom::Id(d), item[d as usize])).collect();
                let mut each = |bindings: &Bindings| {
                    // Numbers first (most indices and guards are numbers once ids and loop
                    // variables are); forms where that does not decide.
                    let number = |atom: &Atom| bindings.iter().find(|(a, _)| a == atom).map(|&(_, v)| v);
                    let replace = |atom: &Atom| number(atom).map(Affine::constant);
                    let mut undecided: Vec<Guard> = Vec::new();
                    for guard in &varying {
                        match guard.decide(&number) {
                            Some(true) => {}
                            Some(false) => return, // this work item does not run it
                            None => undecided.push(guard.substitute(&replace)),
                        }
                    }
                    let guards = if undecided.is_empty() {
                        shared.clone()
                    } else {
                        undecided.extend(shared.iter().cloned());
                        if !narrow(&mut Environment::default(), &[], &undecided) {
                            return; // this work item does not run it
                        }
                        Rc::new(undecided)
                    };
                    let numbers = indices.iter().map(|i| i.value(&number).map(Affine::constant));
                    let key = match numbers.collect::<Option<Vec<_>>>() {
                        Some(key) => Some(key),
                        None => indices.iter().map(|i| i.substitute(&replace)).collect::<Option<Vec<_>>>(),
                    };
                    let Some(key) = key else {
                        if access.write {
                            visit(Touch::default(), None);
                        }
                        return;
                    };
                    // A read through a choice (`select`) may read either element.
                    let keys = if key.iter().all(is_uniform) {
                        vec![key]
                    } else if access.write {
                        visit(Touch::default(), None);
                        return;
                    } else {
                        match choices(&key) {
                            Some(keys) => keys,
                            None => return,
                        }
                    };
                    let uniform_guards = guards.iter().all(guard_is_uniform);
                    for key in keys.into_iter().filter(|k| !out_of_bounds(k, shape)) {
                        let touch = Touch {
                            access: 0,
                            item,
                            guards: guards.clone(),
                            uniform_guards,
                            phase: None,
                            // Only workgroup memory needs them (for the barrier phase).
                            bindings: if keep_bindings { bindings.to_vec() } else { Vec::new() },
                        };
                        visit(touch, Some(key));
                    }
                };
                if !iterate(&resolved.loops, &mut bindings, budget, &mut each) {
                    return false;
                }
            }
        }
    }
    true
}

/// The races among `touches`, then the unproven stores.
fn races_so_far(
    effects: &KernelEffects,
    touches: &BTreeMap<(usize, Vec<Affine>), Vec<Touch>>,
    unproven: &[bool],
) -> Vec<Race> {
    let mut races = Vec::new();
    let mut reported: Vec<(usize, usize)> = Vec::new();
    for ((param, key), list) in touches {
        for write in list.iter().filter(|t| effects.accesses[t.access].write) {
            for other in list {
                if other.item == write.item || reported.contains(&(write.access, other.access)) {
                    continue;
                }
                let (w, o) = (&effects.accesses[write.access], &effects.accesses[other.access]);
                let Some(uncertain) = together(write, other) else { continue };
                reported.push((write.access, other.access));
                reported.push((other.access, write.access));
                let element = Some(key.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", "));
                let race = if o.write {
                    Race {
                        kind: RaceKind::Store,
                        param: *param,
                        local: None,
                        op: w.op,
                        site: w.site,
                        other: o.op,
                        other_site: o.site,
                        items: Some((write.item, other.item)),
                        element,
                        uncertain,
                    }
                } else {
                    Race {
                        kind: RaceKind::Read,
                        param: *param,
                        local: None,
                        op: o.op,
                        site: o.site,
                        other: w.op,
                        other_site: w.site,
                        items: Some((other.item, write.item)),
                        element,
                        uncertain,
                    }
                };
                races.push(race);
            }
        }
    }
    for (index, _) in unproven.iter().enumerate().filter(|(_, &u)| u) {
        let access = &effects.accesses[index];
        if races.iter().any(|r| r.op == access.op && r.kind == RaceKind::Store) {
            continue;
        }
        races.push(Race {
            kind: RaceKind::UnprovenIndex,
            param: match access.target {
                Target::Param(p) => p,
                Target::Any => usize::MAX,
            },
            local: None,
            op: access.op,
            site: access.site,
            other: access.op,
            other_site: access.site,
            items: None,
            element: None,
            uncertain: !access.guards.iter().all(guard_is_uniform),
        });
    }
    races
}

/// Whether two touches may happen in one dispatch: `None` when their guards cannot both hold,
/// else whether that is uncertain (a guard on per-item unknowns).
fn together(a: &Touch, b: &Touch) -> Option<bool> {
    if a.uniform_guards && b.uniform_guards {
        let mut env = Environment::default();
        if a.guards.is_empty() && b.guards.is_empty() {
            return Some(false);
        }
        let guards: Vec<Guard> = a.guards.iter().chain(b.guards.iter()).cloned().collect();
        return narrow(&mut env, &[], &guards).then_some(false);
    }
    // A per-item unknown is a different value in each work item: the guards are not joined.
    let decided = |t: &Touch| t.guards.iter().all(|g| g.holds_everywhere(&Environment::default(), true));
    Some(!(decided(a) && decided(b)))
}

/// Calls `visit` with `bindings` extended by every iteration of `loops` (outermost first) whose
/// bounds fold to numbers; a loop that does not fold leaves its variable unbound. `false` when
/// the budget ran out.
fn iterate(
    loops: &[Loop],
    bindings: &mut Vec<(Atom, i64)>,
    budget: &mut usize,
    visit: &mut dyn FnMut(&Bindings),
) -> bool {
    let Some((first, rest)) = loops.split_first() else {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        visit(bindings);
        return true;
    };
    let numbers = {
        let replace = |atom: &Atom| bindings.iter().find(|(a, _)| a == atom).map(|&(_, v)| Affine::constant(v));
        let number = |form: &Affine| form.substitute(&replace).and_then(|f| f.as_constant());
        (number(&first.lower), number(&first.upper), number(&first.step))
    };
    let (Some(lower), Some(upper), Some(step)) = numbers else { return iterate(rest, bindings, budget, visit) };
    if step <= 0 {
        return iterate(rest, bindings, budget, visit);
    }
    let mut value = lower;
    while value < upper {
        bindings.push((Atom::Loop(first.variable), value));
        let more = iterate(rest, bindings, budget, visit);
        bindings.pop();
        if !more {
            return false;
        }
        value = match value.checked_add(step) {
            Some(next) => next,
            None => break,
        };
    }
    true
}

/// The most elements a read through choices is taken to read.
const MAX_CHOICES: usize = 8;

/// The elements an index through choices (`select`s of dispatch-wide expressions, at the top of
/// each index) may be; `None` when it is something else or too many.
fn choices(key: &[Affine]) -> Option<Vec<Vec<Affine>>> {
    let mut keys: Vec<Vec<Affine>> = vec![Vec::new()];
    for index in key {
        let mut forms = vec![Affine::constant(index.constant_part())];
        for (atom, coefficient) in index.terms() {
            let options: Vec<Affine> = match atom {
                Atom::Select(a, b) if is_uniform(a) && is_uniform(b) => vec![(**a).clone(), (**b).clone()],
                other if atom_is_uniform(other) => vec![Affine::atom(other.clone())],
                _ => return None,
            };
            let mut next = Vec::new();
            for form in &forms {
                for option in &options {
                    next.push(form.add(&option.scale(coefficient)?)?);
                }
            }
            forms = next;
        }
        keys = keys.iter().flat_map(|k| forms.iter().map(move |f| [k.clone(), vec![f.clone()]].concat())).collect();
        if keys.len() > MAX_CHOICES {
            return None;
        }
    }
    Some(keys)
}

/// Whether `key` (numbers) is outside a buffer of `shape`.
fn out_of_bounds(key: &[Affine], shape: Option<&[Option<u64>]>) -> bool {
    let Some(shape) = shape.filter(|s| s.len() == key.len()) else { return false };
    key.iter().zip(shape).any(|(k, &size)| match (k.as_constant(), size) {
        (Some(i), Some(n)) => i < 0 || u64::try_from(i).is_ok_and(|i| i >= n),
        (Some(i), None) => i < 0,
        _ => false,
    })
}

/// Whether `form` is the same in every work item (made of what the whole dispatch shares).
fn is_uniform(form: &Affine) -> bool {
    form.terms().all(|(atom, _)| atom_is_uniform(atom))
}

fn atom_is_uniform(atom: &Atom) -> bool {
    match atom {
        Atom::GridSize(_) | Atom::WorkgroupSize(_) | Atom::Dim { .. } | Atom::Param(_) => true,
        Atom::Div(a, b, _) | Atom::Rem(a, b, _) | Atom::Min(a, b, _) | Atom::Max(a, b, _) | Atom::Mul(a, b) => {
            is_uniform(a) && is_uniform(b)
        }
        _ => false,
    }
}

/// Whether a work-item id or a loop variable enters `guard` (so that it may differ between
/// evaluations).
fn guard_varies(guard: &Guard) -> bool {
    match guard {
        Guard::True | Guard::False | Guard::Unknown => false,
        Guard::Compare { lhs, rhs, .. } => varies(lhs) || varies(rhs),
        Guard::And(a, b) | Guard::Or(a, b) => guard_varies(a) || guard_varies(b),
        Guard::Not(a) => guard_varies(a),
    }
}

fn varies(form: &Affine) -> bool {
    form.terms().any(|(atom, _)| match atom {
        Atom::Id(_) | Atom::Loop(_) => true,
        Atom::Div(a, b, _)
        | Atom::Rem(a, b, _)
        | Atom::Min(a, b, _)
        | Atom::Max(a, b, _)
        | Atom::Mul(a, b)
        | Atom::Select(a, b) => varies(a) || varies(b),
        Atom::Via { atom, .. } => matches!(**atom, Atom::Id(_) | Atom::Loop(_)),
        _ => false,
    })
}

fn guard_is_uniform(guard: &Guard) -> bool {
    match guard {
        Guard::True | Guard::False => true,
        Guard::Unknown => false,
        Guard::Compare { lhs, rhs, .. } => is_uniform(lhs) && is_uniform(rhs),
        Guard::And(a, b) | Guard::Or(a, b) => guard_is_uniform(a) && guard_is_uniform(b),
        Guard::Not(a) => guard_is_uniform(a),
    }
}

impl KernelEffects {
    /// How many dimensions of work-item ids the accesses use (1 to 3): the highest one used,
    /// in an index or a guard, plus one.
    pub fn id_dimensions(&self) -> usize {
        let mut highest = 0;
        for access in &self.accesses {
            if let Extent::Element(indices) = &access.extent {
                indices.iter().for_each(|i| highest_id(i, &mut highest));
            }
            access.guards.iter().for_each(|g| guard_highest_id(g, &mut highest));
        }
        highest + 1
    }
}

fn highest_id(form: &Affine, highest: &mut usize) {
    for (atom, _) in form.terms() {
        match atom {
            Atom::Id(d) => *highest = (*highest).max(*d as usize),
            Atom::Div(a, b, _)
            | Atom::Rem(a, b, _)
            | Atom::Min(a, b, _)
            | Atom::Max(a, b, _)
            | Atom::Mul(a, b)
            | Atom::Select(a, b) => {
                highest_id(a, highest);
                highest_id(b, highest);
            }
            _ => {}
        }
    }
}

fn guard_highest_id(guard: &Guard, highest: &mut usize) {
    match guard {
        Guard::Compare { lhs, rhs, .. } => {
            highest_id(lhs, highest);
            highest_id(rhs, highest);
        }
        Guard::And(a, b) | Guard::Or(a, b) => {
            guard_highest_id(a, highest);
            guard_highest_id(b, highest);
        }
        Guard::Not(a) => guard_highest_id(a, highest),
        _ => {}
    }
}
