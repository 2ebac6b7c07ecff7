//! The element accesses of one dispatch ([`super::CpuBackend::set_record_accesses`]): which
//! elements of each buffer argument the dispatch read before writing them, and which it wrote.
//! The host executor turns them into the device events of a run's trace, from which the
//! clairvoyant optimum is computed (`crate::oracle`).
//!
//! Two arguments that are the same device buffer are one buffer here (their handles share the
//! record of the first), so that a load through one after a store through the other is not a
//! read of what was there before. A load or an atomic of an element that the dispatch has not
//! stored yet (in the order the interpreter runs work items: workgroups in linear order, work
//! items in order, round by round) reads the element's incoming value; a store or an atomic
//! writes it. For a race-free kernel the order does not matter. Workgroup-local buffers and the
//! accesses that padding work items skip are not recorded.

use super::memory::Memory;
use crate::backend::{BufferAccesses, DeviceBuffer};
use std::ops::Range;

/// The record of one dispatch.
#[derive(Debug)]
pub(crate) struct AccessLog {
    /// Per buffer handle of the kernel's arguments, the handle whose record it shares.
    canonical: Vec<usize>,
    /// Per handle (only canonical ones are used): elements read before the dispatch wrote them.
    read: Vec<Vec<bool>>,
    /// Per handle: elements written.
    written: Vec<Vec<bool>>,
}

impl AccessLog {
    /// A record for a dispatch whose buffer arguments are `args`, in handle order.
    pub(crate) fn new(args: &[&Memory]) -> AccessLog {
        let canonical: Vec<usize> =
            (0..args.len()).map(|h| (0..h).find(|&g| std::ptr::eq(args[g], args[h])).unwrap_or(h)).collect();
        let sets = |h: usize| if canonical[h] == h { vec![false; args[h].len()] } else { Vec::new() };
        AccessLog { read: (0..args.len()).map(sets).collect(), written: (0..args.len()).map(sets).collect(), canonical }
    }

    /// A load of element `index` through handle `handle` (a local buffer's handle is ignored).
    pub(crate) fn load(&mut self, handle: usize, index: usize) {
        let Some(&h) = self.canonical.get(handle) else { return };
        if !self.written[h][index] {
            self.read[h][index] = true;
        }
    }

    /// A store of element `index` through handle `handle`.
    pub(crate) fn store(&mut self, handle: usize, index: usize) {
        let Some(&h) = self.canonical.get(handle) else { return };
        self.written[h][index] = true;
    }

    /// The record per distinct device buffer, `devices` being the buffer arguments' buffers in
    /// handle order.
    pub(crate) fn finish(self, devices: &[DeviceBuffer]) -> Vec<BufferAccesses> {
        (0..self.canonical.len())
            .filter(|&h| self.canonical[h] == h)
            .map(|h| BufferAccesses {
                buffer: devices[h],
                read: ranges(&self.read[h]),
                written: ranges(&self.written[h]),
            })
            .collect()
    }
}

/// The maximal runs of `true` in `set`, as ranges of indices.
fn ranges(set: &[bool]) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for (i, _) in set.iter().enumerate().filter(|(_, &b)| b) {
        let i = i as u64;
        match out.last_mut() {
            Some(last) if last.end == i => last.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::ElementType;

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // one range of elements is the common case
    fn a_load_after_a_store_through_an_alias_reads_nothing_from_before() {
        let a = Memory::try_poisoned(ElementType::I32, &[8]).expect("memory");
        let b = Memory::try_poisoned(ElementType::I32, &[4]).expect("memory");
        let mut log = AccessLog::new(&[&a, &b, &a]);
        log.store(0, 2);
        log.load(2, 2); // the same buffer through the other handle: reads what the store wrote
        log.load(2, 3);
        log.load(1, 0);
        log.store(1, 0); // read, then written
        log.load(3, 0); // a workgroup-local buffer: not recorded
        let devices = [DeviceBuffer::new(0, 0), DeviceBuffer::new(1, 0), DeviceBuffer::new(0, 0)];
        let found = log.finish(&devices);
        assert_eq!(found.len(), 2, "the aliased argument is one buffer: {found:?}");
        assert_eq!(
            (found[0].buffer, found[0].read.clone(), found[0].written.clone()),
            (devices[0], vec![3..4], vec![2..3])
        );
        assert_eq!((found[1].read.clone(), found[1].written.clone()), (vec![0..1], vec![0..1]));
        assert_eq!(ranges(&[true, true, false, true]), vec![0..2, 3..4]);
    }
}
