//! The printer writes region (block) arguments by the names the parser kept
//! ([`Context::argument_name`]), as MLIR's asm name hints do, so that the names a user gave (and
//! that `hat-opt --run --arg NAME=...` refers to) survive a trip through hat-opt. A name that is
//! not a valid identifier, that looks like a name the printer makes (`argN`, `N`), or that clashes
//! with another argument's name where the parser would see both (the same region or an enclosing
//! one, up to an isolated op) is left out: the argument prints as `%argN` (entry blocks) or `%N`.
//! Print → parse → print is the identity either way.

use hat_ir::{parse_source, print_op, verify, Context, Op, PrintOptions, Value};

fn context() -> Context {
    let mut ctx = hat_dialects::context();
    ctx.allow_unregistered = true;
    ctx
}

fn parse(ctx: &mut Context, text: &str) -> Op {
    let module =
        parse_source(ctx, "input.hat", text).unwrap_or_else(|e| panic!("{e} at {}", ctx.sources.describe(e.location)));
    assert_eq!(verify(ctx, module), vec![]);
    module
}

/// Prints `module` in both forms and checks that each reads back to the same text; gives the
/// custom form.
fn print_stably(ctx: &Context, module: Op) -> String {
    for generic in [false, true] {
        let options = PrintOptions { generic, ..PrintOptions::default() };
        let printed = print_op(ctx, module, options);
        let mut again = context();
        let reparsed = parse(&mut again, &printed);
        assert_eq!(print_op(&again, reparsed, options), printed, "print is not stable (generic: {generic})");
    }
    print_op(ctx, module, PrintOptions::default())
}

/// Every block argument of the module, in textual order.
fn block_arguments(ctx: &Context, op: Op, out: &mut Vec<Value>) {
    for &region in ctx.regions(op) {
        for &block in ctx.region_blocks(region) {
            out.extend_from_slice(ctx.block_arguments(block));
            for nested in ctx.block_ops(block).collect::<Vec<_>>() {
                block_arguments(ctx, nested, out);
            }
        }
    }
}

const NAMED: &str = r#"module {
  compute.func @main(%data: memref<64xi32>, %count: index) {
    %0 = arith.constant 0 : index
    %1 = arith.constant 1 : index
    scf.for %i = %0 to %count step %1 {
      %2 = buffer.load %data[%i] : memref<64xi32>
      buffer.store %2, %data[%i] : memref<64xi32>
    }
    scf.for %i = %0 to %count step %1 {
      %3 = buffer.load %data[%i] : memref<64xi32>
    }
    compute.return
  }
}
"#;

#[test]
fn source_names_are_printed() {
    let mut ctx = context();
    let module = parse(&mut ctx, NAMED);
    // Sibling loops may both name their induction variable %i: the parser sees one at a time.
    assert_eq!(print_stably(&ctx, module), NAMED);
}

#[test]
fn labelled_blocks_keep_their_argument_names() {
    let text = r#"module {
  "test.func"() ({
  ^bb0(%flag: i1):
    %0 = "test.def"() : () -> i32
    "test.cond_br"(%flag, %0)[^bb1, ^bb2] : (i1, i32) -> ()
  ^bb1(%total: i32):
    "test.use"(%total) : (i32) -> ()
    "test.br"()[^bb2] : () -> ()
  ^bb2:
    "test.return"() : () -> ()
  }) : () -> ()
}
"#;
    let mut ctx = context();
    let module = parse(&mut ctx, text);
    assert_eq!(print_stably(&ctx, module), text);
}

#[test]
fn a_name_that_clashes_falls_back_to_a_number() {
    let mut ctx = context();
    let module = parse(&mut ctx, NAMED);
    let mut arguments = Vec::new();
    block_arguments(&ctx, module, &mut arguments);
    let [_, _, first_loop, second_loop] = arguments[..] else { panic!("{arguments:?}") };
    // The first loop's %i renamed %count: it would hide the function's %count.
    ctx.set_argument_name(first_loop, "count");
    // The second loop's %i renamed %data, likewise.
    ctx.set_argument_name(second_loop, "data");
    let printed = print_stably(&ctx, module);
    assert!(printed.contains("compute.func @main(%data: memref<64xi32>, %count: index)"), "{printed}");
    assert!(printed.contains("scf.for %arg2 = %0 to %count step %1 {"), "{printed}");
    assert!(printed.contains("scf.for %arg3 = %0 to %count step %1 {"), "{printed}");
}

#[test]
fn two_arguments_of_one_block_with_one_name() {
    let mut ctx = context();
    let module = parse(&mut ctx, "compute.func @f(%a: i32, %b: i32) {\n  compute.return\n}\n");
    let mut arguments = Vec::new();
    block_arguments(&ctx, module, &mut arguments);
    ctx.set_argument_name(arguments[1], "a");
    let printed = print_stably(&ctx, module);
    assert!(printed.contains("compute.func @f(%a: i32, %arg1: i32)"), "{printed}");
}

#[test]
fn names_the_printer_makes_and_invalid_names_are_not_used() {
    let mut ctx = context();
    let module =
        parse(&mut ctx, "compute.func @f(%a: i32, %b: i32, %c: i32, %d: i32, %e: i32) {\n  compute.return\n}\n");
    let mut arguments = Vec::new();
    block_arguments(&ctx, module, &mut arguments);
    // `arg0` would clash with the printer's own name of the first argument; `7` with a result's.
    for (&argument, name) in arguments.iter().zip(["arg4", "7", "has space", "", "x#1"]) {
        ctx.set_argument_name(argument, name);
    }
    let printed = print_stably(&ctx, module);
    assert!(
        printed.contains("compute.func @f(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: i32, %arg4: i32)"),
        "{printed}"
    );
}

#[test]
fn names_in_isolated_regions_are_independent() {
    let text = r#"module {
  compute.func @f(%x: i32) {
    compute.return
  }
  compute.func @g(%x: i32) {
    compute.return
  }
}
"#;
    let mut ctx = context();
    let module = parse(&mut ctx, text);
    assert_eq!(print_stably(&ctx, module), text);
}
