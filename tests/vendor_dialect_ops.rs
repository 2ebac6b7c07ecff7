//! The vendor dialect of `hat_test_dialects::vendor` (test-dialects/src/vendor.rs) on its own: it parses, verifies and round-trips,
//! including an op with a successor, and its interfaces are found through the context.

use hat_test_dialects::vendor as vendor_dialect;

use hat_ir::interfaces::{resolve_callee, trip_count, LoopLikeOpInterface};
use hat_ir::{print_op, Context, Op, PrintOptions};

fn round_trip(text: &str) -> (Context, Op) {
    let mut ctx = vendor_dialect::context();
    let module = hat_ir::parse_source(&mut ctx, "vendor.hat", text).expect("parses");
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    let printed = print_op(&ctx, module, PrintOptions::default());
    let mut again = vendor_dialect::context();
    let reparsed = hat_ir::parse_source(&mut again, "again.hat", &printed).expect("reparses");
    assert_eq!(printed, print_op(&again, reparsed, PrintOptions::default()));
    (ctx, module)
}

#[test]
fn the_vendor_program_round_trips_and_answers_through_interfaces() {
    let (ctx, module) = round_trip(vendor_dialect::SUM_OF_TWICE);
    let find = |name: &str| ctx.walk(module).into_iter().find(|&o| ctx.name_str(o) == name).unwrap();
    let repeat = find("vendor.repeat");
    let looping = ctx.interface::<dyn LoopLikeOpInterface>(repeat).unwrap();
    assert_eq!(looping.init_operands(&ctx, repeat), 0..1);
    assert_eq!(trip_count(&ctx, repeat), None, "the upper bound is a parameter");
    let callee = resolve_callee(&ctx, find("vendor.invoke")).expect("the target resolves");
    assert_eq!(hat_ir::verifier::symbol_name(&ctx, callee), Some("twice"));
}

#[test]
fn an_op_with_a_successor_verifies_and_round_trips() {
    let text = r#"
"vendor.proc"() ({
^bb0(%x: i64):
  "vendor.jump"()[^bb1] : () -> ()
^bb1:
  "vendor.ret"(%x) : (i64) -> ()
}) {sym_name = "f", function_type = (i64) -> i64} : () -> ()
"#;
    let (ctx, module) = round_trip(text);
    let jump = ctx.walk(module).into_iter().find(|&o| ctx.name_str(o) == "vendor.jump").unwrap();
    assert_eq!(ctx.successors(jump).len(), 1);
    // A jump without its successor is rejected by the core verifier (the definition declares one).
    let mut bad = vendor_dialect::context();
    let broken = text.replace("\"vendor.jump\"()[^bb1]", "\"vendor.jump\"()");
    let module = hat_ir::parse_source(&mut bad, "bad.hat", &broken).expect("parses");
    let errors = hat_ir::verify(&bad, module);
    assert!(errors.iter().any(|e| e.message.contains("successor")), "{errors:?}");
}
