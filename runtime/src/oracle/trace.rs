//! The trace of one run: every buffer it used, and in order every element access that matters
//! to where data must be — reads and writes on the host and on the device — under the
//! reference semantics. The host executor records one when asked
//! ([`Executor::set_trace`](crate::Executor::set_trace)); tests write them by hand.
//!
//! Time is counted in *steps*: each recorded operation (a host load or store, a host-side copy,
//! a host-function call, a dispatch, the return) takes the next step, and all its events have
//! that step, its reads listed before its writes (a dispatch reads what was there before it
//! writes; a call reads its arguments before it writes them). A copy can be placed at a
//! *point*: point `p` is just before step `p` (after everything of step `p - 1`). Step 0 is
//! the state before the run: the arguments' contents, written on the host.

use std::ops::Range;

/// Where an access happens.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The host copy.
    Host,
    /// The device copy.
    Device,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Host => Side::Device,
            Side::Device => Side::Host,
        }
    }
}

/// A read or a write.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Sees the element's current value.
    Read,
    /// Gives the element a new value (a new *version*).
    Write,
}

/// Where a buffer's contents start.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// An argument of the entry: its contents are on the host only.
    Argument,
    /// Born in the run: its contents are undefined, which both copies hold alike.
    Fresh,
}

/// A buffer of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracedBuffer {
    /// Its name in the program (`%grid`), for reports.
    pub name: String,
    /// Its number of elements.
    pub len: u64,
    /// The size of one element in bytes.
    pub element_bytes: u64,
    /// Where its contents start.
    pub origin: Origin,
}

/// One access of some elements of one buffer, on one side, at one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The step (see the module documentation).
    pub step: u64,
    /// The buffer (an index into [`Trace::buffers`]).
    pub buffer: usize,
    /// Where.
    pub side: Side,
    /// Read or write.
    pub access: Access,
    /// The elements (flat indices), as sorted, disjoint ranges.
    pub elements: Vec<Range<u64>>,
}

/// The trace of one run. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Every buffer the run used.
    pub buffers: Vec<TracedBuffer>,
    /// The events, in order of their steps (reads before writes within a step).
    pub events: Vec<Event>,
    /// The last step taken.
    pub steps: u64,
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Trace {
        Trace::default()
    }

    /// Adds a buffer; its index.
    pub fn add_buffer(&mut self, name: &str, len: u64, element_bytes: u64, origin: Origin) -> usize {
        self.buffers.push(TracedBuffer { name: name.to_string(), len, element_bytes, origin });
        self.buffers.len() - 1
    }

    /// Takes the next step: the events recorded until the next call happen together.
    pub fn step(&mut self) -> u64 {
        self.steps += 1;
        self.steps
    }

    /// Records an access at the current step (nothing when `elements` is empty). Within a step,
    /// record reads before writes.
    pub fn record(
        &mut self,
        buffer: usize,
        side: Side,
        access: Access,
        elements: impl IntoIterator<Item = Range<u64>>,
    ) {
        let elements: Vec<Range<u64>> = elements.into_iter().filter(|r| !r.is_empty()).collect();
        if elements.is_empty() {
            return;
        }
        self.events.push(Event { step: self.steps, buffer, side, access, elements });
    }

    /// Records an access of every element of `buffer` at the current step.
    pub fn record_all(&mut self, buffer: usize, side: Side, access: Access) {
        let len = self.buffers[buffer].len;
        self.record(buffer, side, access, std::iter::once(0..len));
    }

    /// Takes the next step and records one access on it (a convenience for hand-written
    /// traces).
    pub fn at_next_step(
        &mut self,
        buffer: usize,
        side: Side,
        access: Access,
        elements: impl IntoIterator<Item = Range<u64>>,
    ) -> u64 {
        let step = self.step();
        self.record(buffer, side, access, elements);
        step
    }
}
