//! The planner on the programs of issue 22 (`tests/filetests/insert-transfers/lcm/`): where each
//! copy goes. The file tests run the same programs against the reference semantics and show the
//! bytes moved.

use crate::testing::run_pipeline;

fn plan(name: &str) -> String {
    let path = format!("{}/../tests/filetests/insert-transfers/lcm/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    run_pipeline("builtin.module(insert-transfers{strategy=lcm})", &text)
}

/// The lines of `function` in `printed`, trimmed.
fn body<'a>(printed: &'a str, function: &str) -> Vec<&'a str> {
    let start = printed.find(&format!("compute.func @{function}(")).expect("the function");
    let lines: Vec<&str> = printed[start..].lines().map(str::trim).collect();
    let end = lines.iter().position(|l| l.starts_with("compute.return")).expect("a return");
    lines[..=end].to_vec()
}

fn count(lines: &[&str], prefix: &str) -> usize {
    lines.iter().filter(|l| l.starts_with(prefix)).count()
}

/// The position of the first line starting with `prefix` (after `from`).
fn find(lines: &[&str], prefix: &str, from: usize) -> usize {
    from + lines[from..].iter().position(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {lines:#?}"))
}

#[test]
fn a_loop_invariant_input_goes_in_once_on_the_guarded_entry_edge() {
    let printed = plan("ladder.hat");
    let lines = body(&printed, "main");
    assert_eq!(count(&lines, "buffer.to_device %in"), 1, "{printed}");
    let guard = find(&lines, "scf.if", 0);
    let copy = find(&lines, "buffer.to_device %in", 0);
    let looped = lines.iter().position(|l| l.contains("scf.for")).expect("the loop");
    assert!(guard < copy && copy < looped, "the copy is guarded, before the loop:\n{printed}");
    // %out[3] before each host read, the rest once after the loop (guarded: it ran).
    let read = find(&lines, "buffer.from_device %out[", looped);
    assert!(lines[read + 1].contains("= buffer.load %out"), "right before the host read:\n{printed}");
    assert_eq!(count(&lines, "buffer.from_device %out"), 3, "{printed}");
}

#[test]
fn a_conditional_edit_sends_the_edited_element_and_the_buffer_moves_once_each_way() {
    let printed = plan("conditional-edit.hat");
    let lines = body(&printed, "main");
    // The buffer less the edited element goes in once, before the loop (the element is not
    // needed on every path: an edit in the first iteration overwrites it first).
    let looped = lines.iter().position(|l| l.contains("scf.for")).expect("the loop");
    let entry: Vec<&&str> = lines[..looped].iter().filter(|l| l.starts_with("buffer.to_device %data")).collect();
    assert_eq!(entry.len(), 2, "[0, 5) and [6, 64) before the loop:\n{printed}");
    // In the loop, the element goes in before the dispatch when its device copy is stale (the
    // first iteration, or after an edit): one copy of one element.
    assert_eq!(count(&lines[looped..], "buffer.to_device %data["), 1, "{printed}");
    let element = find(&lines, "buffer.to_device %data[", looped);
    assert!(lines[element - 1].contains("arith.constant 1 : index"), "one element:\n{printed}");
    assert!(element < find(&lines, "compute.dispatch", looped), "before the dispatch:\n{printed}");
    assert!(lines[..element].iter().rev().take(4).any(|l| l.starts_with("scf.if")), "guarded:\n{printed}");
    // The element's bit is set after the edit and cleared by the guarded copy; the dispatch
    // makes the element current too, but the bit is clear on every path there: not stored again.
    let bit_stores = lines[looped..].iter().filter(|l| l.starts_with("buffer.store") && l.ends_with("memref<1xi1>"));
    assert_eq!(bit_stores.count(), 2, "{printed}");
    // It comes back once, after the loop.
    assert_eq!(count(&lines, "buffer.from_device %data :"), 1, "{printed}");
    assert!(find(&lines, "buffer.from_device %data :", looped) > find(&lines, "compute.dispatch", looped));
}

#[test]
fn a_do_while_loop_keeps_the_grid_on_the_device_and_moves_only_the_flag() {
    let printed = plan("do-while.hat");
    let lines = body(&printed, "main");
    let looped = lines.iter().position(|l| l.contains("scf.while")).expect("the loop");
    assert_eq!(find(&lines, "buffer.to_device %grid", 0), looped - 1, "{printed}");
    assert_eq!(count(&lines, "buffer.to_device %grid"), 1, "{printed}");
    assert_eq!(count(&lines, "buffer.from_device %grid"), 1, "{printed}");
    assert!(find(&lines, "buffer.from_device %grid", 0) > find(&lines, "scf.yield", looped), "after the loop");
    assert_eq!(count(&lines, "buffer.to_device %flag"), 1, "{printed}");
    assert_eq!(count(&lines, "buffer.from_device %flag"), 1, "{printed}");
}

#[test]
fn parameters_a_call_aliases_are_kept_current_on_the_host() {
    let printed = plan("aliased-call.hat");
    let lines = body(&printed, "step");
    let dispatch = find(&lines, "compute.dispatch", 0);
    assert_eq!(lines[dispatch - 1], "buffer.to_device %p : memref<4xi32>", "{printed}");
    assert_eq!(lines[dispatch + 1], "buffer.from_device %p : memref<4xi32>", "{printed}");
}

#[test]
fn buffers_allocated_in_a_loop_and_carried_are_kept_current_on_the_host() {
    let printed = plan("fresh-carried.hat");
    let lines = body(&printed, "main");
    let dispatch = find(&lines, "compute.dispatch", 0);
    assert!(lines[dispatch - 1].starts_with("buffer.to_device %cur"), "{printed}");
    assert!(lines[dispatch + 1].starts_with("buffer.from_device"), "{printed}");
    assert_eq!(count(&lines, "buffer.to_device") + count(&lines, "buffer.from_device"), 2, "{printed}");
}

/// A chain of `n` loops that may run no iteration, each writing the buffer on the device and
/// followed by a host read on some runs: every loop's exit and every branch is a join where the
/// plan depends on run-time history (the flag decides).
fn chain_of_loops(n: usize) -> String {
    let mut body = String::new();
    for i in 0..n {
        body.push_str(&format!(
            "  scf.for %i{i} = %c0 to %n step %c1 {{\n    compute.dispatch @inc[%c16](%data) : (memref<16xi32>)\n  }}\n  \
             %p{i} = arith.cmpi eq, %n, %c{m} : index\n  scf.if %p{i} {{\n    %v{i} = buffer.load %data[%c0] : memref<16xi32>\n    \
             buffer.store %v{i}, %out[%c0] : memref<4xi32>\n  }}\n",
            m = i % 2
        ));
    }
    format!(
        "kernel.func @inc(%x: memref<16xi32>) workgroup(16) {{\n  %i = kernel.global_id x\n  %v = buffer.load %x[%i] : memref<16xi32>\n  \
         %one = arith.constant 1 : i32\n  %w = arith.addi %v, %one : i32\n  buffer.store %w, %x[%i] : memref<16xi32>\n  kernel.return\n}}\n\n\
         compute.func @main(%data: memref<16xi32>, %out: memref<4xi32>, %n: index) {{\n  %c0 = arith.constant 0 : index\n  \
         %c1 = arith.constant 1 : index\n  %c16 = arith.constant 16 : index\n{body}  compute.return\n}}\n"
    )
}

#[test]
fn a_chain_of_forty_loops_that_may_not_run_keeps_the_buffer_on_the_device() {
    // The kernel strategy copies the buffer in right before each of the 40 dispatches (in the
    // loops); the plan copies it in before a loop, guarded (it ran, and the flag says the host
    // copy is the current one), never in a loop body.
    let printed = run_pipeline("builtin.module(insert-transfers{strategy=lcm})", &chain_of_loops(40));
    let lines = body(&printed, "main");
    let dispatches: Vec<usize> =
        lines.iter().enumerate().filter(|(_, l)| l.starts_with("compute.dispatch")).map(|(i, _)| i).collect();
    assert_eq!(dispatches.len(), 40, "{printed}");
    for &d in &dispatches {
        assert!(lines[d - 1].starts_with("scf.for"), "a copy in a loop body: the kernel strategy's plan\n{printed}");
    }
    assert!(count(&lines, "buffer.to_device %data") >= 1, "{printed}");
}
