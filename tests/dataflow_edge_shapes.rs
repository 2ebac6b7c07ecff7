//! The dataflow framework on unusual shapes: while loops that never run, `scf.if` without
//! `else`, empty regions of ops with and without interfaces, loops nested 100 deep, 10,000 ops
//! in one block, and a callee that never returns.

use hat_ir::analysis::dataflow::{
    solve_dense_backward, solve_dense_forward, solve_sparse_backward, solve_sparse_forward, BranchValue,
    DenseBackwardAnalysis, DenseForwardAnalysis, Flat, FlowGraph, Lattice, SparseBackwardAnalysis,
    SparseForwardAnalysis, SparseSolution,
};
use hat_ir::interfaces::constant_integer;
use hat_ir::{parse_source, verify, Block, Context, Op, OpTraits, Value};
use std::time::Instant;

/// Integer constants through `arith.constant`, `addi` and `cmpi slt`; branches narrow on them.
struct Constants;

impl SparseForwardAnalysis for Constants {
    type Lattice = Flat<i64>;

    fn visit_op(&self, ctx: &Context, op: Op, operands: &[&Flat<i64>], results: &mut [Flat<i64>]) {
        if ctx.has_traits(op, OpTraits::CONSTANT_LIKE) {
            for (result, value) in results.iter_mut().zip(ctx.results(op)) {
                *result = constant_integer(ctx, value).map_or(Flat::Top, Flat::Known);
            }
            return;
        }
        if operands.iter().any(|o| o.is_bottom()) {
            return;
        }
        let known: Option<Vec<i64>> = operands.iter().map(|o| o.known().copied()).collect();
        let value = match (ctx.name_str(op), known.as_deref()) {
            ("arith.addi", Some(&[a, b])) => Some(a.wrapping_add(b)),
            ("arith.cmpi", Some(&[a, b])) => Some(i64::from(a < b)), // only `slt` is used below
            _ => None,
        };
        results.fill(value.map_or(Flat::Top, Flat::Known));
    }

    fn entry_state(&self, _: &Context, _: Value) -> Flat<i64> {
        Flat::Top
    }

    fn branch_value(&self, lattice: &Flat<i64>) -> BranchValue {
        match lattice {
            Flat::Bottom => BranchValue::Pending,
            Flat::Known(value) => BranchValue::Constant(*value),
            Flat::Top => BranchValue::Unknown,
        }
    }
}

/// Whether a program point is reached (dense, both ways).
struct Reached;

impl DenseForwardAnalysis for Reached {
    type Lattice = bool;
    fn visit_op(&self, _: &Context, _: Op, before: &bool) -> bool {
        *before
    }
    fn entry_state(&self, _: &Context, _: Block) -> bool {
        true
    }
}

impl DenseBackwardAnalysis for Reached {
    type Lattice = bool;
    fn visit_op(&self, _: &Context, _: Op, after: &bool) -> bool {
        *after
    }
    fn exit_state(&self, _: &Context, _: Block) -> bool {
        true
    }
}

/// Whether a value is used by something that is used (returned values are).
struct Used;

impl SparseBackwardAnalysis for Used {
    type Lattice = bool;
    fn visit_op(&self, _: &Context, _: Op, operands: &mut [bool], results: &[&bool]) {
        operands.fill(results.iter().any(|&&r| r));
    }
    fn visit_branch_operand(&self, _: &Context, _: Op, _: usize) -> bool {
        true
    }
    fn exit_state(&self, _: &Context, _: Value) -> bool {
        true
    }
}

fn parse(text: &str, allow_unregistered: bool) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    ctx.allow_unregistered = allow_unregistered;
    let module = parse_source(&mut ctx, "review.hat", text).unwrap_or_else(|e| panic!("{e:?}"));
    let errors = verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    (ctx, module)
}

/// Every op named `name`, in walk order.
fn ops_named(ctx: &Context, root: Op, name: &str) -> Vec<Op> {
    ctx.walk(root).into_iter().filter(|&op| ctx.name_str(op) == name).collect()
}

fn known(solution: &SparseSolution<Flat<i64>>, value: Value) -> Option<i64> {
    solution.lattice(value).known().copied()
}

#[test]
fn a_while_that_never_runs_and_an_if_without_else() {
    let (ctx, module) = parse(
        r#"
compute.func @main(%n: index) -> (index, index) {
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %r = scf.while (%x = %c5) : (index) -> index {
    %go = arith.cmpi slt, %c7, %c5 : index
    scf.condition(%go) %x : index
  } do {
  ^bb0(%y: index):
    %z = arith.addi %y, %c7 : index
    scf.yield %z : index
  }
  %never = arith.cmpi slt, %c7, %c5 : index
  scf.if %never {
    %dead = arith.addi %n, %n : index
  }
  %s = arith.addi %r, %c7 : index
  compute.return %r, %s : index, index
}
"#,
        false,
    );
    let solution = solve_sparse_forward(&ctx, module, &Constants);
    let while_op = ops_named(&ctx, module, "scf.while")[0];
    assert_eq!(known(&solution, ctx.result(while_op, 0)), Some(5));
    let add = ops_named(&ctx, module, "arith.addi");
    assert_eq!(known(&solution, ctx.result(*add.last().unwrap(), 0)), Some(12));
    // The while's `do` region and the if's `then` never run.
    assert!(solution.lattice(ctx.result(add[0], 0)).is_bottom());
    assert!(solution.lattice(ctx.result(add[1], 0)).is_bottom());
    let flow = solution.flow();
    for op in [add[0], add[1]] {
        assert!(!flow.is_op_live(&ctx, op));
    }
    let forward = solve_dense_forward(&ctx, flow, &Reached);
    assert!(!*forward.after(&ctx, add[0]) && !*forward.after(&ctx, add[1]) && *forward.after(&ctx, add[2]));
    let backward = solve_dense_backward(&ctx, flow, &Reached);
    assert!(*backward.before(&ctx, add[2]));
}

#[test]
fn empty_regions_with_and_without_interfaces() {
    // An op of an unknown dialect with an empty region, and one with an empty block; an
    // `scf.if` whose `else` is empty.
    let (ctx, module) = parse(
        r#"
compute.func @main(%p: i1) -> index {
  %c1 = arith.constant 1 : index
  "x.wrap"() ({
  }) : () -> ()
  "x.wrap"() ({
  ^bb0:
  }) : () -> ()
  scf.if %p {
    %a = arith.addi %c1, %c1 : index
  } else {
  }
  %b = arith.addi %c1, %c1 : index
  compute.return %b : index
}
"#,
        true,
    );
    let solution = solve_sparse_forward(&ctx, module, &Constants);
    let add = ops_named(&ctx, module, "arith.addi");
    assert_eq!(known(&solution, ctx.result(add[0], 0)), Some(2));
    assert_eq!(known(&solution, ctx.result(add[1], 0)), Some(2));
    let flow = FlowGraph::new(&ctx, module);
    let forward = solve_dense_forward(&ctx, &flow, &Reached);
    assert!(*forward.after(&ctx, add[1]));
    let backward = solve_dense_backward(&ctx, &flow, &Reached);
    assert!(*backward.before(&ctx, add[0]));
}

/// Loops nested `depth` deep, each from `lower` to `upper`, carrying a value that each adds 1
/// to; the innermost adds the constant 1000 too.
fn nested_loops(depth: usize, lower: i64, upper: i64) -> String {
    let mut text = String::from(
        "compute.func @main() -> index {\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n",
    );
    text += &format!("  %lo = arith.constant {lower} : index\n  %hi = arith.constant {upper} : index\n");
    text += "  %k = arith.constant 1000 : index\n";
    for d in 0..depth {
        let init = if d == 0 { "%c0".to_string() } else { format!("%a{}", d - 1) };
        text += &format!("  %r{d} = scf.for %i{d} = %lo to %hi step %c1 iter_args(%a{d} = {init}) -> (index) {{\n");
    }
    text += &format!("  %in = arith.addi %a{}, %k : index\n", depth - 1);
    for d in (0..depth).rev() {
        let value = if d == depth - 1 { "%in".to_string() } else { format!("%r{}", d + 1) };
        text += &format!("  %n{d} = arith.addi {value}, %c1 : index\n  scf.yield %n{d} : index\n  }}\n");
    }
    text += "  compute.return %r0 : index\n}\n";
    text
}

#[test]
fn loops_nested_a_hundred_deep() {
    // Zero trips at every level: the result is the init, and no body runs.
    let (ctx, module) = parse(&nested_loops(100, 5, 0), false);
    let solution = solve_sparse_forward(&ctx, module, &Constants);
    let outer = ops_named(&ctx, module, "scf.for")[0];
    assert_eq!(known(&solution, ctx.result(outer, 0)), Some(0));
    let inner = ops_named(&ctx, module, "arith.addi")[0];
    assert!(!solution.flow().is_op_live(&ctx, inner));

    // Trips unknown to this analysis (it keeps loops open): every level is live, the values
    // carried are not constants, and the solver ends.
    let (ctx, module) = parse(&nested_loops(100, 0, 3), false);
    let start = Instant::now();
    let solution = solve_sparse_forward(&ctx, module, &Constants);
    let inner = ops_named(&ctx, module, "arith.addi")[0];
    assert!(solution.flow().is_op_live(&ctx, inner));
    assert_eq!(*solution.lattice(ctx.result(inner, 0)), Flat::Top);
    let forward = solve_dense_forward(&ctx, solution.flow(), &Reached);
    assert!(*forward.after(&ctx, inner));
    let backward = solve_dense_backward(&ctx, solution.flow(), &Reached);
    assert!(*backward.before(&ctx, inner));
    let used = solve_sparse_backward(&ctx, solution.flow(), &Used);
    let thousand = ops_named(&ctx, module, "arith.constant")[4];
    assert!(*used.lattice(ctx.result(thousand, 0)), "the innermost constant reaches the return");
    eprintln!("100 nested loops: sparse + dense forward + dense backward in {:?}", start.elapsed());
}

#[test]
fn ten_thousand_ops_in_one_block() {
    let mut text = String::from("compute.func @main() -> index {\n  %v0 = arith.constant 0 : index\n");
    text += "  %c1 = arith.constant 1 : index\n";
    for i in 1..=10_000 {
        text += &format!("  %v{i} = arith.addi %v{}, %c1 : index\n", i - 1);
    }
    text += "  compute.return %v10000 : index\n}\n";
    let (ctx, module) = parse(&text, false);
    let start = Instant::now();
    let solution = solve_sparse_forward(&ctx, module, &Constants);
    let ret = ops_named(&ctx, module, "compute.return")[0];
    assert_eq!(known(&solution, ctx.operand(ret, 0)), Some(10_000));
    let forward = solve_dense_forward(&ctx, solution.flow(), &Reached);
    let backward = solve_dense_backward(&ctx, solution.flow(), &Reached);
    assert!(*forward.before(&ctx, ret) && *backward.before(&ctx, ret));
    let used = solve_sparse_backward(&ctx, solution.flow(), &Used);
    let first = ops_named(&ctx, module, "arith.constant")[0];
    assert!(*used.lattice(ctx.result(first, 0)), "the first value reaches the return through 10,000 ops");
    eprintln!("10,000 ops: sparse + dense forward + dense backward in {:?}", start.elapsed());
}

#[test]
fn a_callee_that_never_returns_leaves_its_call_results_unreached() {
    let (ctx, module) = parse(
        r#"
compute.func @spin(%x: index) -> index {
  %c1 = arith.constant 1 : index
  %r = scf.while (%y = %x) : (index) -> index {
    %t = arith.constant true
    scf.condition(%t) %y : index
  } do {
  ^bb0(%z: index):
    scf.yield %z : index
  }
  compute.return %r : index
}
compute.func @main(%x: index) -> index {
  %s = compute.call @spin(%x) : (index) -> index
  %c1 = arith.constant 1 : index
  %t = arith.addi %s, %c1 : index
  compute.return %t : index
}
"#,
        false,
    );
    let solution = solve_sparse_forward(&ctx, module, &Constants);
    let while_op = ops_named(&ctx, module, "scf.while")[0];
    assert!(solution.lattice(ctx.result(while_op, 0)).is_bottom(), "the while never ends");
    let call = ops_named(&ctx, module, "compute.call")[0];
    assert!(solution.lattice(ctx.result(call, 0)).is_bottom(), "the call never returns");
}

#[test]
fn loops_nested_as_deep_as_the_parser_allows() {
    let (ctx, module) = parse(&nested_loops(hat_ir::parser::MAX_NESTING - 8, 0, 3), false);
    let mut clock = Instant::now();
    let mut lap = |what: &str| {
        eprintln!("2040 nested loops: {what} in {:?}", clock.elapsed());
        clock = Instant::now();
    };
    let solution = solve_sparse_forward(&ctx, module, &Constants);
    lap("sparse forward");
    let inner = ops_named(&ctx, module, "arith.addi")[0];
    assert!(solution.flow().is_op_live(&ctx, inner));
    let forward = solve_dense_forward(&ctx, solution.flow(), &Reached);
    lap("dense forward");
    let backward = solve_dense_backward(&ctx, solution.flow(), &Reached);
    lap("dense backward");
    let used = solve_sparse_backward(&ctx, solution.flow(), &Used);
    lap("sparse backward");
    assert!(*forward.after(&ctx, inner) && *backward.before(&ctx, inner) && *used.lattice(ctx.result(inner, 0)));
    let liveness = hat_ir::analysis::Liveness::new(&ctx, module);
    lap("liveness");
    drop(liveness);
}
