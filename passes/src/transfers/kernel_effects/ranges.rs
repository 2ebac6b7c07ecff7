//! The flat (row-major) elements an access may touch under a dispatch: a sound
//! over-approximation, one contiguous range.
//!
//! Each index is bounded over the work items that may run (narrowed by the access's guards and
//! loops), then clamped to its dimension: an index out of bounds stops the dispatch (a kernel
//! error), so it touches nothing. The flat range runs from the row-major offset of the lowest
//! indices to that of the highest ones. An access to a buffer the analysis cannot name, or with
//! indices it does not know, may touch the whole buffer.

use super::dispatch::Query;
use super::interval::{Interval, INFINITY};
use super::summary::{Access, Extent, Target};
use std::ops::Range;

/// The elements `access` may touch of a buffer of `shape`; `None` when unknown, an empty range
/// when none (the access never runs, or never in bounds).
pub(super) fn touched(query: &Query<'_>, access: &Access, shape: Option<&[Option<u64>]>) -> Option<Range<u64>> {
    let mut env = query.running();
    // Narrow index arithmetic that the grid keeps in range is linear again.
    let resolved = query.resolve(access).reduced(&env);
    if !resolved.narrow(&mut env) {
        return Some(0..0);
    }
    let whole = || shape.and_then(|s| s.iter().try_fold(1u64, |n, &d| n.checked_mul(d?))).map(|n| 0..n);
    if access.target == Target::Any {
        return whole();
    }
    match &resolved.extent {
        Extent::Whole | Extent::Unknown => whole(),
        Extent::Element(indices) => {
            let shape = shape?;
            if indices.len() != shape.len() {
                return whole();
            }
            let bounds: Vec<Interval> = indices.iter().map(|i| env.bound(i)).collect();
            element_range(&bounds, shape)
        }
        Extent::Span { offset, count } => span_range(env.bound(offset), env.bound(count), whole()),
    }
}

/// The flat range of the elements whose indices lie in `bounds` (one per dimension).
fn element_range(bounds: &[Interval], shape: &[Option<u64>]) -> Option<Range<u64>> {
    let mut low: i128 = 0;
    let mut high: i128 = 0;
    let mut stride: i128 = 1;
    for (k, (&bound, &size)) in bounds.iter().zip(shape).enumerate().rev() {
        let limit = size.map_or(INFINITY, |s| s as i128 - 1);
        let clamped = bound.meet(Interval::new(0, limit));
        if clamped.is_empty() {
            return Some(0..0); // never in bounds
        }
        if clamped.high >= INFINITY {
            return None;
        }
        low = low.checked_add(clamped.low.checked_mul(stride)?)?;
        high = high.checked_add(clamped.high.checked_mul(stride)?)?;
        if k > 0 {
            stride = stride.checked_mul(size? as i128)?;
        }
    }
    Some(u64::try_from(low).ok()?..u64::try_from(high + 1).ok()?)
}

fn span_range(offset: Interval, count: Interval, whole: Option<Range<u64>>) -> Option<Range<u64>> {
    let end = whole.as_ref().map_or(INFINITY, |w| w.end as i128);
    let first = offset.low.max(0);
    let last = offset.high.saturating_add(count.high).min(end);
    if first >= last {
        return Some(0..0);
    }
    if last >= INFINITY {
        return None;
    }
    Some(u64::try_from(first).ok()?..u64::try_from(last).ok()?)
}

/// The least range holding both (`None`, unknown, absorbs).
pub(super) fn hull(a: Option<Range<u64>>, b: Option<Range<u64>>) -> Option<Range<u64>> {
    let (a, b) = (a?, b?);
    if a.is_empty() {
        return Some(b);
    }
    if b.is_empty() {
        return Some(a);
    }
    Some(a.start.min(b.start)..a.end.max(b.end))
}
