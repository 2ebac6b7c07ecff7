//! Blocks that are branched to, with unregistered branch ops (`"test.br"()[^bb1]`): every block
//! that is a successor prints its label, the entry block included, so that the text reads back
//! as the same IR; and the verifier rejects an entry block with predecessors, as MLIR does
//! ("entry block of region may not have predecessors"). Print → parse → print is the identity in
//! the custom and the generic form, for valid IR and for IR that fails only that check.

use hat_ir::{parse_source, print_op, verify, Context, Diagnostic, Op, PrintOptions};

fn context() -> Context {
    let mut ctx = hat_dialects::context();
    ctx.allow_unregistered = true;
    ctx
}

fn parse(ctx: &mut Context, text: &str) -> Op {
    parse_source(ctx, "input.hat", text)
        .unwrap_or_else(|e| panic!("{e} at {}\n{text}", ctx.sources.describe(e.location)))
}

fn messages(diagnostics: &[Diagnostic]) -> Vec<String> {
    diagnostics.iter().map(|d| d.message.clone()).collect()
}

/// Parses `text`, checks the verifier's messages, and checks that printing is stable in both
/// forms and keeps the verifier's messages; gives the custom form.
fn round_trip(text: &str, errors: &[&str]) -> String {
    let mut ctx = context();
    let module = parse(&mut ctx, text);
    assert_eq!(messages(&verify(&ctx, module)), errors, "{text}");
    for generic in [false, true] {
        let options = PrintOptions { generic, ..PrintOptions::default() };
        let printed = print_op(&ctx, module, options);
        let mut again = context();
        let reparsed = parse(&mut again, &printed);
        assert_eq!(print_op(&again, reparsed, options), printed, "print is not stable (generic: {generic})");
        assert_eq!(messages(&verify(&again, reparsed)), errors, "{printed}");
    }
    print_op(&ctx, module, PrintOptions::default())
}

/// Text printed as given: valid IR in the printer's own form.
fn assert_round_trips(text: &str) {
    assert_eq!(round_trip(text, &[]), text);
}

#[test]
fn a_branch_to_the_next_block() {
    assert_round_trips(
        r#"module {
  "test.func"() ({
    "test.br"()[^bb1] : () -> ()
  ^bb1:
    "test.return"() : () -> ()
  }) : () -> ()
}
"#,
    );
}

#[test]
fn a_loop_back_to_a_later_block_and_an_unreachable_block() {
    assert_round_trips(
        r#"module {
  "test.func"() ({
  ^bb0(%arg0: i32):
    "test.br"(%arg0)[^bb2] : (i32) -> ()
  ^bb1:
    "test.return"() : () -> ()
  ^bb2(%0: i32):
    %1 = "test.step"(%0) : (i32) -> i32
    "test.cond_br"(%1, %1)[^bb2, ^bb1] : (i32, i32) -> ()
  }) : () -> ()
}
"#,
    );
}

#[test]
fn both_successors_the_same_block() {
    assert_round_trips(
        r#"module {
  compute.func @f(%flag: i1) {
    "test.cond_br"(%flag)[^bb1, ^bb1] : (i1) -> ()
  ^bb1:
    compute.return
  }
}
"#,
    );
}

#[test]
fn a_branch_in_a_nested_region() {
    assert_round_trips(
        r#"module {
  compute.func @f(%flag: i1) {
    "test.region"() ({
      "test.br"()[^bb1] : () -> ()
    ^bb1:
      "test.yield"() : () -> ()
    }, {
      "test.yield"() : () -> ()
    }) : () -> ()
    compute.return
  }
}
"#,
    );
}

const ENTRY_ERROR: &str = "'test.func' op entry block of region may not have predecessors";

#[test]
fn the_only_block_branching_to_itself() {
    let printed = round_trip(
        r#""test.func"() ({
^bb0:
  "test.br"()[^bb0] : () -> ()
}) : () -> ()
"#,
        &[ENTRY_ERROR],
    );
    assert!(printed.contains("  ^bb0:\n    \"test.br\"()[^bb0] : () -> ()\n"), "{printed}");
}

#[test]
fn a_later_block_branching_to_the_entry_block() {
    let printed = round_trip(
        r#""test.func"() ({
^bb0:
  "test.br"()[^bb1] : () -> ()
^bb1:
  "test.br"()[^bb0] : () -> ()
}) : () -> ()
"#,
        &[ENTRY_ERROR],
    );
    assert!(printed.contains("  ^bb0:\n    \"test.br\"()[^bb1] : () -> ()\n  ^bb1:\n"), "{printed}");
}

#[test]
fn the_entry_block_with_arguments_and_predecessors() {
    // Several branches to the entry: one error for the region.
    let printed = round_trip(
        r#""test.func"() ({
^bb0(%x: i32):
  "test.cond_br"(%x, %x)[^bb0, ^bb0] : (i32, i32) -> ()
}) : () -> ()
"#,
        &[ENTRY_ERROR],
    );
    assert!(printed.contains("  ^bb0(%x: i32):\n"), "{printed}");
}

#[test]
fn a_custom_form_region_whose_entry_has_predecessors() {
    // The function prints in the generic form (it fails verification), which shows the label.
    let printed = round_trip(
        r#""compute.func"() ({
^bb0:
  "test.br"()[^bb0] : () -> ()
}) {function_type = () -> (), sym_name = "f"} : () -> ()
"#,
        &["'compute.func' op entry block of region may not have predecessors"],
    );
    assert!(printed.contains("\"compute.func\"() ({\n  ^bb0:\n"), "{printed}");
}
