//! The clairvoyant optimum of one trace: the element copies any correct plan must make (and
//! so the fewest bytes), and a plan of the fewest copies among those (see `copies.rs`).

use super::copies::{self, Window};
use super::trace::{Access, Origin, Side, Trace};
use rustc_hash::FxHashMap;
use std::ops::Range;

/// Copies and bytes in one direction.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    /// Copy ops.
    pub copies: u64,
    /// Bytes.
    pub bytes: u64,
}

/// One copy op of the optimal plan: `elements` of `buffer` to side `to`, at point `point`
/// (just before step `point`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedCopy {
    /// The point.
    pub point: u64,
    /// The buffer (an index into [`Trace::buffers`]).
    pub buffer: usize,
    /// Where the elements go.
    pub to: Side,
    /// The elements.
    pub elements: Range<u64>,
}

/// The clairvoyant optimum of a trace. See the module documentation of [`crate::oracle`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Optimum {
    /// To the device: the fewest bytes, and the copies of [`plan`](Self::plan).
    pub to_device: Moved,
    /// From the device: likewise.
    pub from_device: Moved,
    /// A lower bound on the copies of every plan of the fewest bytes (both directions).
    pub copies_lower_bound: u64,
    /// A plan that moves the fewest bytes, in as few copies as the sweeps of `copies.rs` find.
    pub plan: Vec<PlannedCopy>,
}

impl Optimum {
    /// The fewest bytes, both directions.
    pub fn bytes(&self) -> u64 {
        self.to_device.bytes + self.from_device.bytes
    }

    /// The copies of the plan, both directions: the fewest, or an upper bound on it where
    /// [`copies_exact`](Self::copies_exact) is false.
    pub fn copies(&self) -> u64 {
        self.to_device.copies + self.from_device.copies
    }

    /// Whether [`copies`](Self::copies) is proven the fewest (it meets the lower bound).
    pub fn copies_exact(&self) -> bool {
        self.copies() == self.copies_lower_bound
    }
}

/// Per buffer and destination side, per element, the windows of the copies it needs.
type Needed = FxHashMap<(usize, Side), Vec<Vec<Window>>>;

/// The element copies `trace` needs: a copy of a version to side `S` is needed when a read on
/// `S` sees a version that `S` does not hold (written on the other side, or an argument's
/// initial contents read on the device); its window runs from the point after the write to
/// the point before that first read.
fn needed(trace: &Trace) -> Needed {
    // Per buffer: whether each side holds the current version of each element, and the step
    // of the write that made it.
    struct State {
        holds: [Vec<bool>; 2],
        written: Vec<u64>,
    }
    let side_index = |side: Side| usize::from(side == Side::Device);
    let mut states: Vec<State> = trace
        .buffers
        .iter()
        .map(|b| {
            let len = b.len as usize;
            let on_device = b.origin == Origin::Fresh;
            State { holds: [vec![true; len], vec![on_device; len]], written: vec![0; len] }
        })
        .collect();
    let mut needed: Needed = FxHashMap::default();
    for event in &trace.events {
        let state = &mut states[event.buffer];
        let here = side_index(event.side);
        for range in &event.elements {
            for e in range.clone() {
                let e = e as usize;
                match event.access {
                    Access::Read if !state.holds[here][e] => {
                        let columns = needed
                            .entry((event.buffer, event.side))
                            .or_insert_with(|| vec![Vec::new(); state.written.len()]);
                        columns[e].push((state.written[e] + 1, event.step));
                        state.holds[here][e] = true;
                    }
                    Access::Read => {}
                    Access::Write => {
                        state.holds[here][e] = true;
                        state.holds[1 - here][e] = false;
                        state.written[e] = event.step;
                    }
                }
            }
        }
    }
    needed
}

/// The clairvoyant optimum of `trace`.
pub fn optimum(trace: &Trace) -> Optimum {
    let needed = needed(trace);
    let mut keys: Vec<&(usize, Side)> = needed.keys().collect();
    keys.sort();
    let mut result = Optimum::default();
    for &(buffer, to) in keys {
        let columns = &needed[&(buffer, to)];
        let items: u64 = columns.iter().map(|c| c.len() as u64).sum();
        let ops = copies::plan(columns);
        let moved = match to {
            Side::Device => &mut result.to_device,
            Side::Host => &mut result.from_device,
        };
        moved.bytes += items * trace.buffers[buffer].element_bytes;
        moved.copies += ops.len() as u64;
        result.copies_lower_bound += copies::lower_bound(columns);
        result.plan.extend(ops.into_iter().map(|(point, elements)| PlannedCopy { point, buffer, to, elements }));
    }
    result.plan.sort_by_key(|c| (c.point, c.buffer, c.to, c.elements.start));
    result
}

/// Replays `trace` with the copies of `plan` and checks that every read sees the current
/// version of its element on its side (a fresh buffer's undefined contents are on both sides).
/// The first read that does not, in words.
pub fn check_plan(trace: &Trace, plan: &[PlannedCopy]) -> Result<(), String> {
    // Versions: 0 is "undefined" (a fresh buffer's), u64::MAX "nothing yet" (the device copy of
    // an argument), others numbered by writes; an argument's initial contents are version 1.
    const NOTHING: u64 = u64::MAX;
    let mut held: Vec<[Vec<u64>; 2]> = Vec::new();
    let mut current: Vec<Vec<u64>> = Vec::new();
    for b in &trace.buffers {
        let len = b.len as usize;
        let (host, device) = match b.origin {
            Origin::Argument => (1, NOTHING),
            Origin::Fresh => (0, 0),
        };
        held.push([vec![host; len], vec![device; len]]);
        current.push(vec![host; len]);
    }
    let side_index = |side: Side| usize::from(side == Side::Device);
    let mut version = 1u64;
    let mut copies = plan.iter().peekable();
    for event in &trace.events {
        while let Some(copy) = copies.next_if(|c| c.point <= event.step) {
            let to = side_index(copy.to);
            for e in copy.elements.clone() {
                let e = e as usize;
                held[copy.buffer][to][e] = held[copy.buffer][1 - to][e];
            }
        }
        let here = side_index(event.side);
        for e in event.elements.iter().flat_map(Clone::clone) {
            let e = e as usize;
            match event.access {
                Access::Read => {
                    if held[event.buffer][here][e] != current[event.buffer][e] {
                        return Err(format!(
                            "step {}: a read of element {e} of {} on the {:?} sees a stale copy",
                            event.step, trace.buffers[event.buffer].name, event.side
                        ));
                    }
                }
                Access::Write => {
                    version += 1;
                    current[event.buffer][e] = version;
                    held[event.buffer][here][e] = version;
                }
            }
        }
    }
    Ok(())
}
