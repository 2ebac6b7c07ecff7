//! [`Residence`]: where the current value of each element of one buffer is — its host copy, its
//! device copy, both or neither — and what must be copied before an access. Pure bookkeeping: the
//! methods say which element ranges to copy and update the state as if the copies were made; the
//! caller (`tracker.rs`, `session.rs`) makes them.
//!
//! Two policies read the same two sets differently:
//!
//! - [`Policy::Tracking`] (the runtime-tracking strategy): every element has one current value,
//!   the reference semantics' ("copy everything, every time"); `host` / `device` hold the elements
//!   whose host / device copy equals it. Elements in neither set are undefined (a fresh buffer:
//!   its contents are undefined on both sides, so nothing is ever copied for them). Dispatches
//!   copy in what the kernel reads or may leave unwritten, and make what it writes device-only;
//!   host reads copy back what only the device has; host writes make the host copy the only
//!   current one.
//! - [`Policy::Explicit`] (a program whose own transfers move data, run in a residency
//!   `Session`): host and device copies may legitimately differ, as the program's transfers say.
//!   `host` holds the elements whose host copy the executor actually has; an element outside it
//!   is "pending": its host copy is, by definition, what the device copy holds, fetched when the
//!   host looks (so a copy back is lazy). `device` holds the elements whose device copy is known
//!   to equal the host copy, so that a copy to the device of them is skipped. Invariant:
//!   `host ∪ device` is every element (a pending element's device copy is its host copy).
//!   A dispatch that may write an element the executor holds on the host makes its device copy
//!   different; one that writes a pending element changes that element's host copy with it — what
//!   the reference semantics give, and what every correct plan observes, because a correct plan
//!   copies the element back before the host looks at it (where a plan does not, the host sees
//!   the kernel's value rather than a stale one).

use super::element_set::{ElementSet, Ranges};
use std::ops::Range;

/// How a [`Residence`] reads its two sets. See the module documentation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// The runtime-tracking strategy: one current value per element.
    Tracking,
    /// The program's own transfers move data; copies are skipped or deferred when their effect
    /// is already there.
    Explicit,
}

/// The residency of one buffer. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Residence {
    /// Elements in the buffer.
    len: u64,
    /// See the module documentation.
    host: ElementSet,
    device: ElementSet,
}

impl Residence {
    /// A buffer whose host copy is the caller's (an entry argument): current on the host only.
    pub(crate) fn on_host(len: u64) -> Self {
        Residence { len, host: ElementSet::full(len), device: ElementSet::empty() }
    }

    /// A buffer the program allocates. Under [`Policy::Tracking`] its contents are undefined on
    /// both sides; under [`Policy::Explicit`] its host copy is what the executor will make (the
    /// poison pattern), which no device copy equals yet.
    pub(crate) fn fresh(policy: Policy, len: u64) -> Self {
        match policy {
            Policy::Tracking => Residence { len, host: ElementSet::empty(), device: ElementSet::empty() },
            Policy::Explicit => Residence::on_host(len),
        }
    }

    /// Elements in the buffer.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Every element.
    pub(crate) fn whole(&self) -> Range<u64> {
        0..self.len
    }

    /// Whether the host copy of every element is current (nothing would be copied back).
    #[cfg(test)]
    pub(crate) fn host_is_current(&self) -> bool {
        self.host.contains(self.whole())
    }

    // ----- the host ----------------------------------------------------------------------------

    /// Before the host reads `range`: the ranges to copy from the device, after which the host
    /// copy of `range` is current.
    pub(crate) fn read_on_host(&mut self, range: Range<u64>) -> Ranges {
        let copies = self.host.gaps_of(&self.device.intersection(range));
        for r in &copies {
            self.host.insert(r.clone());
        }
        copies
    }

    /// Before the host writes `range`: with `every_element` (a must-write) nothing is needed;
    /// otherwise the elements it may leave untouched must be current on the host first (the
    /// ranges to copy from the device).
    pub(crate) fn before_host_write(&mut self, range: Range<u64>, every_element: bool) -> Ranges {
        if every_element {
            Ranges::new()
        } else {
            self.read_on_host(range)
        }
    }

    /// After the host wrote `range`: its host copy is the only current one.
    pub(crate) fn after_host_write(&mut self, range: Range<u64>) {
        self.host.insert(range.clone());
        self.device.remove(range);
    }

    // ----- dispatches --------------------------------------------------------------------------

    /// Before a dispatch that reads `reads` and may leave elements of `partial_writes` unwritten:
    /// the ranges to copy to the device. Under [`Policy::Explicit`] the program's transfers did
    /// that already: nothing.
    pub(crate) fn before_dispatch(&mut self, policy: Policy, needed: &[Range<u64>]) -> Ranges {
        if policy == Policy::Explicit {
            return Ranges::new();
        }
        let mut copies = Ranges::new();
        for range in needed {
            for r in self.device.gaps_of(&self.host.intersection(range.clone())) {
                self.device.insert(r.clone());
                copies.push(r);
            }
        }
        copies
    }

    /// After a dispatch that may have written `written`.
    pub(crate) fn after_dispatch(&mut self, policy: Policy, written: &[Range<u64>]) {
        for range in written {
            match policy {
                Policy::Tracking => {
                    self.host.remove(range.clone());
                    self.device.insert(range.clone());
                }
                Policy::Explicit => {
                    // Held host elements now differ from the device; pending ones follow it.
                    for r in self.host.intersection(range.clone()) {
                        self.device.remove(r);
                    }
                }
            }
        }
    }

    // ----- the program's transfers (Policy::Explicit) ------------------------------------------

    /// A `buffer.to_device` of `range`: the ranges to copy (those whose device copy differs).
    pub(crate) fn copy_to_device(&mut self, range: Range<u64>) -> Ranges {
        let copies = self.device.gaps_of(&self.host.intersection(range.clone()));
        self.device.insert(range);
        copies
    }

    /// A `buffer.from_device` of `range`: nothing moves now; elements whose copies differ become
    /// pending (their host copy is now the device's, fetched when the host looks).
    pub(crate) fn copy_from_device(&mut self, range: Range<u64>) {
        for r in self.device.gaps(range) {
            self.host.remove(r.clone());
            self.device.insert(r);
        }
    }
}

#[cfg(test)]
// Ranges of elements are what these tests are about.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    fn ranges(list: &[Range<u64>]) -> Ranges {
        list.iter().cloned().collect()
    }

    #[test]
    fn tracking_copies_in_once_and_back_once() {
        let mut data = Residence::on_host(64);
        assert_eq!(data.before_dispatch(Policy::Tracking, &[0..64]), ranges(&[0..64]));
        data.after_dispatch(Policy::Tracking, &[0..64]);
        // Nothing new on the host: a second dispatch copies nothing in.
        assert_eq!(data.before_dispatch(Policy::Tracking, &[0..64]), ranges(&[]));
        data.after_dispatch(Policy::Tracking, &[0..64]);
        // The host peeks at element 0, then at everything: each element comes back once.
        assert_eq!(data.read_on_host(0..1), ranges(&[0..1]));
        assert_eq!(data.read_on_host(0..64), ranges(&[1..64]));
        assert!(data.host_is_current());
        assert_eq!(data.read_on_host(0..64), ranges(&[]));
    }

    #[test]
    fn tracking_sends_only_what_the_host_changed() {
        let mut data = Residence::on_host(64);
        data.before_dispatch(Policy::Tracking, &[0..64]);
        data.after_dispatch(Policy::Tracking, &[0..64]);
        // A must-write of element 5 needs nothing first, and makes it host-only.
        assert_eq!(data.before_host_write(5..6, true), ranges(&[]));
        data.after_host_write(5..6);
        assert_eq!(data.before_dispatch(Policy::Tracking, &[0..64]), ranges(&[5..6]));
        // A may-write of the whole buffer brings it home first.
        data.after_dispatch(Policy::Tracking, &[0..64]);
        assert_eq!(data.before_host_write(0..64, false), ranges(&[0..64]));
        data.after_host_write(0..64);
        assert_eq!(data.before_dispatch(Policy::Tracking, &[0..64]), ranges(&[0..64]));
    }

    #[test]
    fn tracking_never_copies_undefined_elements() {
        let mut scratch = Residence::fresh(Policy::Tracking, 16);
        assert_eq!(scratch.before_dispatch(Policy::Tracking, &[0..16]), ranges(&[]));
        assert_eq!(scratch.read_on_host(0..16), ranges(&[]));
        // A kernel writes half of it: only that half can come back.
        scratch.after_dispatch(Policy::Tracking, &[0..8]);
        assert_eq!(scratch.read_on_host(0..16), ranges(&[0..8]));
    }

    #[test]
    fn explicit_skips_copies_whose_effect_is_there_and_defers_copies_back() {
        let mut w = Residence::on_host(64);
        let mut acc = Residence::on_host(64);
        for call in 0..3 {
            let expected = if call == 0 { ranges(&[0..64]) } else { ranges(&[]) };
            assert_eq!(w.copy_to_device(0..64), expected, "w, call {call}");
            assert_eq!(acc.copy_to_device(0..64), expected, "acc, call {call}");
            w.after_dispatch(Policy::Explicit, &[]);
            acc.after_dispatch(Policy::Explicit, &[0..64]);
            acc.copy_from_device(0..64);
        }
        assert!(w.host_is_current());
        assert!(!acc.host_is_current());
        assert_eq!(acc.read_on_host(0..64), ranges(&[0..64]));
        assert!(acc.host_is_current());
    }

    #[test]
    fn explicit_sends_again_what_the_host_changed() {
        let mut data = Residence::on_host(8);
        assert_eq!(data.copy_to_device(0..8), ranges(&[0..8]));
        data.after_dispatch(Policy::Explicit, &[0..8]);
        // The device changed what the host holds: a copy in now would overwrite it (as the
        // program says), so it is made.
        assert_eq!(data.copy_to_device(0..8), ranges(&[0..8]));
        // Both copies agree now: a copy back has nothing to do.
        data.copy_from_device(0..8);
        assert!(data.host_is_current());
        data.after_dispatch(Policy::Explicit, &[0..8]);
        data.copy_from_device(0..8);
        assert_eq!(data.read_on_host(2..3), ranges(&[2..3]));
        data.after_host_write(2..3);
        assert_eq!(data.copy_to_device(0..8), ranges(&[2..3]));
    }
}
