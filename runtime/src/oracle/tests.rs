//! The oracle on small hand-made traces whose optimum is known.
#![allow(clippy::single_range_in_vec_init)] // one range of elements is the common case

use super::*;

const I32: u64 = 4;

/// A trace with one argument buffer of `len` i32 elements.
fn one_argument(len: u64) -> (Trace, usize) {
    let mut trace = Trace::new();
    let buffer = trace.add_buffer("%data", len, I32, Origin::Argument);
    (trace, buffer)
}

/// A dispatch at the next step that reads `read` and writes `written` of `buffer`.
fn dispatch(trace: &mut Trace, buffer: usize, read: Vec<std::ops::Range<u64>>, written: Vec<std::ops::Range<u64>>) {
    trace.step();
    trace.record(buffer, Side::Device, Access::Read, read);
    trace.record(buffer, Side::Device, Access::Write, written);
}

/// The return: every argument read whole on the host.
fn finish(trace: &mut Trace) {
    trace.step();
    for b in 0..trace.buffers.len() {
        if trace.buffers[b].origin == Origin::Argument {
            trace.record_all(b, Side::Host, Access::Read);
        }
    }
}

/// The optimum, after checking that its plan is right on the trace.
fn solved(trace: &Trace) -> Optimum {
    let optimum = optimum(trace);
    check_plan(trace, &optimum.plan).expect("the oracle's plan is right");
    let bytes: u64 =
        optimum.plan.iter().map(|c| (c.elements.end - c.elements.start) * trace.buffers[c.buffer].element_bytes).sum();
    assert_eq!(bytes, optimum.bytes(), "the plan moves the fewest bytes");
    optimum
}

fn moved(copies: u64, bytes: u64) -> Moved {
    Moved { copies, bytes }
}

#[test]
fn a_kernel_that_reads_and_writes_everything_once_needs_the_buffer_in_and_out() {
    let (mut trace, data) = one_argument(64);
    dispatch(&mut trace, data, vec![0..64], vec![0..64]);
    finish(&mut trace);
    let o = solved(&trace);
    assert_eq!((o.to_device, o.from_device), (moved(1, 256), moved(1, 256)));
    assert!(o.copies_exact());
    // Without the copy in, the kernel reads what the device never got.
    let without: Vec<PlannedCopy> = o.plan.iter().filter(|c| c.to == Side::Host).cloned().collect();
    assert!(check_plan(&trace, &without).is_err());
}

#[test]
fn a_kernel_that_writes_everything_without_reading_needs_nothing_in() {
    let (mut trace, data) = one_argument(64);
    dispatch(&mut trace, data, vec![], vec![0..64]);
    finish(&mut trace);
    let o = solved(&trace);
    assert_eq!((o.to_device, o.from_device), (moved(0, 0), moved(1, 256)));
}

#[test]
fn a_partial_write_brings_back_only_what_it_wrote() {
    // Every even element: 32 one-element copies of 4 bytes (fewest bytes first).
    let (mut trace, data) = one_argument(64);
    let even: Vec<std::ops::Range<u64>> = (0..32).map(|k| 2 * k..2 * k + 1).collect();
    dispatch(&mut trace, data, vec![], even);
    finish(&mut trace);
    let o = solved(&trace);
    assert_eq!((o.to_device, o.from_device), (moved(0, 0), moved(32, 128)));
    assert!(o.copies_exact());
}

#[test]
fn peeking_in_a_loop_brings_one_element_back_each_time_and_the_rest_with_the_last() {
    // 04-peek: `count` times a kernel updates the buffer and the host reads element 0; the
    // hand-written optimum is 256 bytes in and 252 + 4 * count back. The oracle finds it, and
    // that the last peek can bring everything back at once: `count` copies back, not count + 1.
    for count in [1u64, 3, 10] {
        let (mut trace, data) = one_argument(64);
        for _ in 0..count {
            dispatch(&mut trace, data, vec![0..64], vec![0..64]);
            trace.at_next_step(data, Side::Host, Access::Read, vec![0..1]);
        }
        finish(&mut trace);
        let o = solved(&trace);
        assert_eq!((o.to_device, o.from_device), (moved(1, 256), moved(count, 252 + 4 * count)), "count {count}");
        assert!(o.copies_exact(), "count {count}: {} vs bound {}", o.copies(), o.copies_lower_bound);
    }
}

#[test]
fn a_host_edit_between_kernels_sends_only_the_edited_element() {
    // 05-host-edit: a kernel, a host store of one element, a kernel that reads it all.
    let (mut trace, data) = one_argument(64);
    dispatch(&mut trace, data, vec![0..64], vec![0..64]);
    trace.at_next_step(data, Side::Host, Access::Write, vec![5..6]);
    dispatch(&mut trace, data, vec![0..64], vec![0..64]);
    finish(&mut trace);
    let o = solved(&trace);
    assert_eq!((o.to_device, o.from_device), (moved(2, 260), moved(1, 256)));
}

#[test]
fn a_buffer_born_in_the_run_needs_nothing_unless_the_other_side_reads_what_one_wrote() {
    let mut trace = Trace::new();
    let scratch = trace.add_buffer("%t", 16, I32, Origin::Fresh);
    let out = trace.add_buffer("%out", 16, I32, Origin::Argument);
    // The host reads undefined contents: nothing to copy; a kernel fills it, another reads it.
    trace.at_next_step(scratch, Side::Host, Access::Read, vec![0..16]);
    dispatch(&mut trace, scratch, vec![0..16], vec![0..16]);
    trace.step();
    trace.record(scratch, Side::Device, Access::Read, vec![0..16]);
    trace.record(out, Side::Device, Access::Write, vec![0..16]);
    finish(&mut trace);
    let o = solved(&trace);
    assert_eq!((o.to_device, o.from_device), (moved(0, 0), moved(1, 64)));
    // Then the host reads the scratch buffer: the kernel's version comes back.
    trace.at_next_step(scratch, Side::Host, Access::Read, vec![3..4]);
    let o = solved(&trace);
    assert_eq!(o.from_device, moved(2, 68));
}

#[test]
fn a_version_read_twice_on_the_other_side_crosses_once() {
    let (mut trace, data) = one_argument(8);
    dispatch(&mut trace, data, vec![], vec![0..8]);
    trace.at_next_step(data, Side::Host, Access::Read, vec![2..3]);
    trace.at_next_step(data, Side::Host, Access::Read, vec![2..3]);
    let o = solved(&trace);
    assert_eq!(o.from_device, moved(1, 4));
}

#[test]
fn copies_of_neighbouring_elements_merge_only_where_their_windows_meet() {
    // A kernel writes elements 0 and 1; the host reads element 0, a kernel rewrites it, the host
    // reads both. Element 1's copy may happen as early as element 0's first: one copy of both,
    // then one of element 0 again.
    let (mut trace, data) = one_argument(2);
    dispatch(&mut trace, data, vec![], vec![0..2]); // step 1
    trace.at_next_step(data, Side::Host, Access::Read, vec![0..1]); // step 2
    dispatch(&mut trace, data, vec![], vec![0..1]); // step 3
    trace.at_next_step(data, Side::Host, Access::Read, vec![0..2]); // step 4
    let o = solved(&trace);
    assert_eq!(o.from_device, moved(2, 12));
    assert_eq!(o.plan[0], PlannedCopy { point: 2, buffer: data, to: Side::Host, elements: 0..2 });
    assert!(o.copies_exact());
}

#[test]
fn nothing_observed_nothing_moved() {
    let mut trace = Trace::new();
    let t = trace.add_buffer("%t", 4, I32, Origin::Fresh);
    dispatch(&mut trace, t, vec![], vec![0..4]);
    let o = solved(&trace);
    assert_eq!(o, Optimum::default());
}
