//! The proof that a dispatch writes every element of a buffer (or a range of it without gaps):
//! only then may a transfer plan skip the copy in of those elements.
//!
//! One must-write access has to do it alone (unions of partial writes are not attempted). Under
//! the dispatch, with the work items that surely run (ids below the grid) and the iterations of
//! the counted loops around it (their trip counts must be constants, so that the loop variable is
//! `lower + step × trip` with `trip` running over `0..count`):
//!
//! 1. narrow the box of ids and trips to where the access's guards may hold (and forget what
//!    the guards say of anything else: a guarded value is not known to pass the guard until
//!    the guard is checked), then pin each variable the flat index does not use to one value;
//! 2. check that the guards hold on the *whole* box (so every work item in it runs the access)
//!    and that every index stays in bounds there (else the dispatch fails);
//! 3. the flat index is affine in the variables: `Σ c_v × v`. Sorted by coefficient, each
//!    variable must not leave a gap: with `[0, reach)` covered so far, a variable of coefficient
//!    `c <= reach` over `n` values covers `[0, reach + c × (n - 1))`. The least value must be 0
//!    and the reach must cover the buffer.
//!
//! Before step 1, divisions and remainders that the variables' bounds make linear are rewritten
//! (`reduce.rs`: the wraps of narrow arithmetic within the type's range). Where that proof
//! fails and an index or guard divides an id of a dimension whose workgroup size is known, it is
//! tried again with that id split as `size × group + local` ([`split_by_workgroup`]), so that
//! `local_id` and `group_id` are variables: a store by one work item per workgroup at the group
//! id covers the buffer. The split box holds work items past the grid (in a partial last
//! workgroup), which do not exist: the guard `size × group + local < grid` goes with it, and
//! step 2 checks that it holds wherever the proof counts on a work item.
//!
//! A stride (`2 × id`) leaves gaps; an offset (`id + 1`) misses element 0; a data-dependent or
//! unknown guard never holds everywhere; a partial grid does not reach; a loop over a subset
//! leaves gaps: each answers no.

use super::affine::{Affine, Atom};
use super::dispatch::{narrow, Query};
use super::guard::Guard;
use super::interval::Environment;
use super::interval::Interval;
use super::reduce::reduce;
use super::summary::{Access, Extent};

/// The flat elements `access` (a must-write of the parameter) surely writes, one range without
/// gaps, of a buffer of `shape` (every size known, `elements` of them in all): under guards such
/// as `id < n / 2`, a part of the buffer. `None` where no such range is proven.
pub(super) fn surely_written(
    query: &Query<'_>,
    access: &Access,
    shape: &[u64],
    elements: u64,
) -> Option<std::ops::Range<u64>> {
    let range = surely_written_unclamped(query, access, shape, elements)?;
    let start = u64::try_from(range.start.max(0)).ok()?;
    let end = u64::try_from(range.end.min(elements as i128)).ok()?;
    (start < end).then_some(start..end)
}

fn surely_written_unclamped(
    query: &Query<'_>,
    access: &Access,
    shape: &[u64],
    elements: u64,
) -> Option<std::ops::Range<i128>> {
    let mut env = query.certain()?;
    let resolved = query.resolve(access);
    if !resolved.exact {
        return None;
    }
    // Each loop variable becomes `lower + step × trip`, outermost first (an inner loop's bounds
    // may use an outer variable).
    let mut replaced: Vec<(Atom, Affine)> = Vec::new();
    for l in &resolved.loops {
        let replace = |a: &Atom| replaced.iter().find(|(x, _)| x == a).map(|(_, f)| f.clone());
        let (Some(lower), Some(upper), Some(step)) =
            (l.lower.substitute(&replace), l.upper.substitute(&replace), l.step.substitute(&replace))
        else {
            return None;
        };
        let (Some(span), Some(step)) = (upper.sub(&lower).and_then(|s| s.as_constant()), step.as_constant()) else {
            return None;
        };
        if step <= 0 || span <= 0 {
            return None; // a loop that runs no iteration writes nothing
        }
        let trips = (span as i128 + step as i128 - 1) / step as i128;
        env.set(Atom::Trip(l.variable), Interval::new(0, trips - 1));
        let variable = Affine::atom(Atom::Trip(l.variable)).scale(step).and_then(|t| t.add(&lower))?;
        replaced.push((Atom::Loop(l.variable), variable));
    }
    let replace = |a: &Atom| replaced.iter().find(|(x, _)| x == a).map(|(_, f)| f.clone());
    let substitute = |form: &Affine| form.substitute(&replace);
    let guards: Vec<_> = resolved.guards.iter().map(|g| g.substitute(&replace)).collect();
    let extent = match &resolved.extent {
        Extent::Element(indices) if indices.len() == shape.len() => {
            let indices = indices.iter().map(substitute).collect::<Option<Vec<_>>>()?;
            Extent::Element(indices)
        }
        Extent::Whole => Extent::Whole,
        Extent::Span { offset, count } => {
            let (Some(offset), Some(count)) = (substitute(offset), substitute(count)) else { return None };
            Extent::Span { offset, count }
        }
        _ => return None,
    };
    let whole = |r: &std::ops::Range<i128>| r.start <= 0 && r.end >= elements as i128;
    let first = covered_under(env.clone(), &extent, guards.clone(), shape, elements);
    if first.as_ref().is_some_and(whole) {
        return first;
    }
    // Again with the ids split by workgroup, where a division or remainder asks for it.
    let second = split_by_workgroup(query, &env, &extent, &guards)
        .and_then(|(env, extent, guards)| covered_under(env, &extent, guards, shape, elements));
    match (first, second) {
        (Some(a), Some(b)) => Some(if b.end - b.start > a.end - a.start { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// Steps 1 to 3 of the module documentation, for `extent` under `guards`, with the variables
/// bounded by `env`: the flat elements written without a gap.
fn covered_under(
    env: Environment,
    extent: &Extent,
    guards: Vec<Guard>,
    shape: &[u64],
    elements: u64,
) -> Option<std::ops::Range<i128>> {
    // Narrow arithmetic wraps, and a split id divides: what the variables' bounds make linear is
    // rewritten first (exact within `env`, and everything below stays within it).
    let linear = |form: &Affine| reduce(form, &env);
    let guards: Vec<Guard> = guards.iter().map(|g| g.map_forms(&linear)).collect();
    let extent = match extent {
        Extent::Element(indices) => match indices.iter().map(linear).collect::<Option<Vec<_>>>() {
            Some(indices) => Extent::Element(indices),
            None => return None,
        },
        Extent::Span { offset, count } => match (linear(offset), linear(count)) {
            (Some(offset), Some(count)) => Extent::Span { offset, count },
            _ => return None,
        },
        other => other.clone(),
    };
    let mut env = env;
    if !narrow(&mut env, &[], &guards) {
        return None;
    }
    // The box of work items and iterations where the guards may hold; whether they hold on all
    // of it is checked below, with nothing else assumed.
    let mut env = env.variables_only();
    let indices = match &extent {
        Extent::Element(indices) => indices.clone(),
        Extent::Whole => Vec::new(),
        Extent::Span { offset, count } => {
            pin_all(&mut env, &[]);
            let offset = env.bound(offset);
            let count = env.bound(count);
            let holds = guards.iter().all(|g| g.holds_everywhere(&env, true));
            return (holds && offset.low == offset.high && !offset.is_empty() && count.low > 0)
                .then(|| offset.low..offset.low.saturating_add(count.low));
        }
        Extent::Unknown => return None,
    };
    // The flat index: Σ stride_k × index_k.
    let mut flat = Affine::constant(0);
    let mut stride: i64 = 1;
    for (index, &size) in indices.iter().zip(shape).rev() {
        let next = index.scale(stride).and_then(|term| flat.add(&term))?;
        flat = next;
        let next = i64::try_from(size).ok().and_then(|s| stride.checked_mul(s))?;
        stride = next;
    }
    let variables: Vec<Atom> = flat.terms().map(|(a, _)| a.clone()).collect();
    if variables.iter().any(|a| !a.is_variable()) {
        return None;
    }
    pin_all(&mut env, &variables);
    if !guards.iter().all(|g| g.holds_everywhere(&env, true)) {
        return None;
    }
    let in_bounds = indices
        .iter()
        .zip(shape)
        .all(|(index, &size)| env.bound(index).meet(Interval::new(0, size as i128 - 1)) == env.bound(index));
    if !in_bounds {
        return None;
    }
    if matches!(extent, Extent::Whole) {
        return Some(0..elements as i128);
    }
    covered(&env, &flat)
}

/// The access with the global id of each dimension that a division or remainder takes apart
/// (`local_id`, `group_id`, `id / size`) written `size × group + local`: `group` over the
/// workgroups the grid starts, `local` over the workgroup, and — since only the work items below
/// the grid exist — the guard `size × group + local < grid`, which every work item the proof
/// counts on must pass (in a partial last workgroup, a `local` the grid cuts off does not
/// exist). `None` where no dimension is split (the workgroup size unknown, or no division of
/// an id by anything).
fn split_by_workgroup(
    query: &Query<'_>,
    env: &Environment,
    extent: &Extent,
    guards: &[Guard],
) -> Option<(Environment, Extent, Vec<Guard>)> {
    let workgroup = query.workgroup?;
    let forms: Vec<&Affine> = match extent {
        Extent::Element(indices) => indices.iter().collect(),
        Extent::Span { offset, count } => vec![offset, count],
        _ => Vec::new(),
    };
    let mut split: Vec<(u8, i64)> = Vec::new();
    for d in 0..3u8 {
        let size = i64::try_from(workgroup[d as usize]).ok()?;
        let divided = forms.iter().any(|f| divides_id(f, d)) || guards.iter().any(|g| guard_divides_id(g, d));
        if size > 1 && divided {
            split.push((d, size));
        }
    }
    if split.is_empty() {
        return None;
    }
    let mut env = env.clone();
    let mut guards = guards.to_vec();
    for &(d, size) in &split {
        let grid = env.bound_atom(&Atom::Id(d));
        if grid.is_empty() || !grid.is_bounded() {
            return None;
        }
        let groups = (grid.high + size as i128) / size as i128; // ceil(grid / size)
        env.set(Atom::Group(d), Interval::new(0, groups - 1));
        env.set(Atom::Local(d), Interval::new(0, size as i128 - 1));
        let id = Affine::atom(Atom::Group(d)).scale(size)?.add(&Affine::atom(Atom::Local(d)))?;
        let last = Affine::constant(i64::try_from(grid.high).ok()?);
        guards.push(Guard::compare(id, last, hat_dialects::semantics::IntPredicate::Sle));
    }
    let replace = |atom: &Atom| match atom {
        Atom::Id(d) => {
            let &(_, size) = split.iter().find(|(s, _)| s == d)?;
            Affine::atom(Atom::Group(*d)).scale(size)?.add(&Affine::atom(Atom::Local(*d)))
        }
        _ => None,
    };
    let guards = guards.iter().map(|g| g.substitute(&replace)).collect();
    let extent = match extent {
        Extent::Element(indices) => {
            Extent::Element(indices.iter().map(|i| i.substitute(&replace)).collect::<Option<_>>()?)
        }
        Extent::Span { offset, count } => {
            Extent::Span { offset: offset.substitute(&replace)?, count: count.substitute(&replace)? }
        }
        other => other.clone(),
    };
    Some((env, extent, guards))
}

/// Whether `form` holds a division or remainder whose dividend uses id `d`.
fn divides_id(form: &Affine, d: u8) -> bool {
    form.terms().any(|(atom, _)| match atom {
        Atom::Div(e, _, _) | Atom::Rem(e, _, _) if uses_id(e, d) => true,
        Atom::Div(a, b, _)
        | Atom::Rem(a, b, _)
        | Atom::Min(a, b, _)
        | Atom::Max(a, b, _)
        | Atom::Mul(a, b)
        | Atom::Select(a, b) => divides_id(a, d) || divides_id(b, d),
        _ => false,
    })
}

fn uses_id(form: &Affine, d: u8) -> bool {
    form.terms().any(|(atom, _)| match atom {
        Atom::Id(x) => *x == d,
        Atom::Div(a, b, _)
        | Atom::Rem(a, b, _)
        | Atom::Min(a, b, _)
        | Atom::Max(a, b, _)
        | Atom::Mul(a, b)
        | Atom::Select(a, b) => uses_id(a, d) || uses_id(b, d),
        _ => false,
    })
}

fn guard_divides_id(guard: &Guard, d: u8) -> bool {
    match guard {
        Guard::Compare { lhs, rhs, .. } => divides_id(lhs, d) || divides_id(rhs, d),
        Guard::And(a, b) | Guard::Or(a, b) => guard_divides_id(a, d) || guard_divides_id(b, d),
        Guard::Not(a) => guard_divides_id(a, d),
        _ => false,
    }
}

/// Pins every variable of `env` not in `keep` to its least value.
fn pin_all(env: &mut Environment, keep: &[Atom]) {
    let mut variables: Vec<Atom> = (0..3).map(Atom::Id).collect();
    variables.extend(env.variable_atoms().into_iter().filter(|a| !matches!(a, Atom::Id(_))));
    for atom in variables {
        if keep.contains(&atom) {
            continue;
        }
        let bound = env.bound_atom(&atom);
        if !bound.is_empty() {
            env.set(atom, Interval::new(bound.low, bound.low));
        }
    }
}

/// The values of `flat` over `env`, when they hold every integer between their least and
/// greatest (step 3 of the module documentation, from any least value).
fn covered(env: &Environment, flat: &Affine) -> Option<std::ops::Range<i128>> {
    let mut least = flat.constant_part() as i128;
    let mut ranges: Vec<(i128, i128)> = Vec::new();
    for (atom, coefficient) in flat.terms() {
        let bound = env.bound_atom(atom);
        if bound.is_empty() || !bound.is_bounded() {
            return None;
        }
        let c = coefficient as i128;
        let term = c.checked_mul(if c > 0 { bound.low } else { bound.high })?;
        least = least.checked_add(term)?;
        ranges.push((c.abs(), bound.high - bound.low + 1));
    }
    ranges.sort();
    let mut reach: i128 = 1;
    for (coefficient, count) in ranges {
        if coefficient > reach {
            return None;
        }
        let Some(span) = coefficient.checked_mul(count - 1) else { return Some(least..i128::MAX) }; // beyond any buffer
        reach = reach.saturating_add(span);
    }
    Some(least..least.saturating_add(reach))
}
