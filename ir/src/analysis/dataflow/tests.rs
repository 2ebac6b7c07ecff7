//! The flow graph on the analyses' test dialect, and the solvers on a long chain of calls.

use super::*;
use crate::analysis::testing::{chain, fan_in, ops_named, parse, tagged};
use crate::{Block, Context, Op, Value};

const PROGRAM: &str = r#"
"t.func"() ({
^bb0(%c: i1):
  %x = "t.call"() {callee = @helper, tag = "call"} : () -> i32
  "t.cond_br"(%c)[^bb1, ^bb2] {tag = "branch"} : (i1) -> ()
^bb1:
  "t.loop"() ({
    "t.yield"() {tag = "yield"} : () -> ()
  }) {tag = "loop"} : () -> ()
  "x.opaque"() ({
  ^bb0(%a: i32):
    "x.end"() {tag = "opaque-end"} : () -> ()
  }) {tag = "opaque"} : () -> ()
  "t.return"() {tag = "main-return"} : () -> ()
^bb2:
  "t.return"() : () -> ()
^bb3:
  "t.return"() {tag = "unreachable"} : () -> ()
}) {sym_name = "main"} : () -> ()
"t.func"() ({
  %y = "t.def"() : () -> i32
  "t.return"(%y) {tag = "helper-return"} : (i32) -> ()
}) {sym_name = "helper"} : () -> ()
"t.func"() ({
  "t.return"() {tag = "never-called"} : () -> ()
}) {sym_name = "unused"} : () -> ()
"#;

fn entry(ctx: &Context, op: Op, region: usize) -> Block {
    ctx.region_blocks(ctx.regions(op)[region])[0]
}

#[test]
fn the_flow_graph_follows_the_interfaces() {
    let (ctx, module) = parse(PROGRAM);
    let flow = FlowGraph::new(&ctx, module);
    let [call, branch, looping, yielding, opaque, opaque_end, main_return, helper_return, unreachable, never] = [
        "call",
        "branch",
        "loop",
        "yield",
        "opaque",
        "opaque-end",
        "main-return",
        "helper-return",
        "unreachable",
        "never-called",
    ]
    .map(|tag| tagged(&ctx, module, tag));
    let functions = ops_named(&ctx, module, "t.func");
    let (main_entry, helper_entry) = (entry(&ctx, functions[0], 0), entry(&ctx, functions[1], 0));
    assert!(flow.is_open_entry(main_entry), "an entry function is called from outside");
    assert!(flow.is_live(helper_entry) && !flow.is_open_entry(helper_entry), "called by @main only");
    assert!(!flow.is_op_live(&ctx, never), "nothing calls @unused");
    assert!(!flow.is_op_live(&ctx, unreachable));
    let kinds = |op: Op| flow.edges_from(op).map(|e| (e.kind, e.to)).collect::<Vec<_>>();
    assert_eq!(kinds(call), [(EdgeKind::Call, Target::Block(helper_entry))]);
    assert_eq!(kinds(helper_return), [(EdgeKind::Return, Target::After(call))]);
    assert_eq!(flow.callers(functions[1]), [call]);
    assert_eq!(kinds(branch).len(), 2, "no constants: both successors");
    let body = entry(&ctx, looping, 0);
    assert_eq!(kinds(looping), [(EdgeKind::Enter, Target::Block(body)), (EdgeKind::Enter, Target::After(looping))]);
    assert_eq!(kinds(yielding), [(EdgeKind::Exit, Target::Block(body)), (EdgeKind::Exit, Target::After(looping))]);
    assert!(flow.is_open_entry(entry(&ctx, opaque, 0)), "an op without interface: its regions are entered blindly");
    assert!(flow.is_open_exit(opaque_end) && flow.is_open_exit(main_return));
    assert!(!flow.is_open_exit(helper_return));
    assert!(matches!(flow.role(&ctx, functions[1]), Role::Definition));
    assert!(matches!(flow.role(&ctx, opaque), Role::Opaque));
}

#[test]
fn an_intraprocedural_flow_graph_follows_no_call() {
    let (ctx, module) = parse(PROGRAM);
    let main = ops_named(&ctx, module, "t.func")[0];
    let call = tagged(&ctx, module, "call");
    let flow = FlowGraph::intraprocedural(&ctx, main);
    assert!(matches!(flow.role(&ctx, call), Role::ExternalCall), "a call is an op like any other");
    assert_eq!(flow.edges_from(call).count(), 0, "no edge into the callee");
    let helper_return = tagged(&ctx, module, "helper-return");
    assert!(!flow.is_op_live(&ctx, helper_return), "the callee's body is not part of the graph");
    // The solver visits the call as an op: the state after it is `visit_op`'s (here false),
    // where the whole module's graph gives what the callee returns (true).
    let after_call = |flow: &FlowGraph| *solve_dense_forward(&ctx, flow, &ClearedBy(call)).after(&ctx, call);
    assert!(!after_call(&flow), "the state after the call comes from visit_op");
    let whole = FlowGraph::new(&ctx, module);
    assert!(matches!(whole.role(&ctx, call), Role::Call { .. }));
    assert!(after_call(&whole), "the whole module's graph returns the callee's exit state");
}

/// Reached, except right after one op (whose `visit_op` gives false).
struct ClearedBy(Op);

impl DenseForwardAnalysis for ClearedBy {
    type Lattice = bool;
    fn visit_op(&self, _: &Context, op: Op, before: &bool) -> bool {
        *before && op != self.0
    }
    fn entry_state(&self, _: &Context, _: Block) -> bool {
        true
    }
}

/// Whether a point is reached.
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

/// Every value is "one step" from an entry; only shows the sparse solver visits everything.
struct Seen;

impl SparseBackwardAnalysis for Seen {
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

impl SparseForwardAnalysis for Seen {
    type Lattice = bool;
    fn visit_op(&self, _: &Context, _: Op, _: &[&bool], results: &mut [bool]) {
        results.fill(true);
    }
    fn entry_state(&self, _: &Context, _: Value) -> bool {
        true
    }
}

#[test]
fn the_solvers_are_linear_on_a_chain_of_ten_thousand_calls() {
    let (ctx, module) = chain(10_000);
    let start = std::time::Instant::now();
    let solution = solve_sparse_forward(&ctx, module, &Seen);
    let forward = solve_dense_forward(&ctx, solution.flow(), &Reached);
    let backward = solve_dense_backward(&ctx, solution.flow(), &Reached);
    let elapsed = start.elapsed();
    let functions = ops_named(&ctx, module, "t.func");
    let last_return = ctx.last_op(entry(&ctx, functions[9_999], 0)).unwrap();
    assert!(*forward.after(&ctx, last_return), "the end of the chain is reached from @main");
    let first_call = ctx.first_op(entry(&ctx, functions[0], 0)).unwrap();
    assert!(*backward.before(&ctx, first_call));
    assert_eq!(solution.flow().live_blocks().len(), 10_001);
    // About 1.5 s in a debug build (hash lookups dominate); a quadratic solver would take hours.
    assert!(elapsed.as_secs_f64() < 10.0, "three solvers over 10,000 functions took {elapsed:?}");
}

#[test]
fn the_flow_graph_is_an_analysis_built_on_the_cached_call_graph() {
    let (ctx, module) = parse(PROGRAM);
    let mut analyses = crate::pass::AnalysisManager::new();
    let calls = analyses.get::<crate::analysis::CallGraph>(&ctx, module);
    let flow = analyses.get::<FlowGraph>(&ctx, module);
    assert_eq!(analyses.computed_count(), 2);
    assert!(std::ptr::eq(flow.call_graph(), &*calls), "the flow graph shares the cached call graph");
}

#[test]
fn a_function_called_from_ten_thousand_sites_costs_each_site_once() {
    let (ctx, module) = fan_in(10_000);
    let start = std::time::Instant::now();
    let solution = solve_sparse_forward(&ctx, module, &Seen);
    let used = solve_sparse_backward(&ctx, solution.flow(), &Seen);
    let forward = solve_dense_forward(&ctx, solution.flow(), &Reached);
    let backward = solve_dense_backward(&ctx, solution.flow(), &Reached);
    let elapsed = start.elapsed();
    let functions = ops_named(&ctx, module, "t.func");
    let helper_return = ctx.last_op(entry(&ctx, functions[0], 0)).unwrap();
    assert_eq!(solution.flow().edges_from(helper_return).count(), 10_000, "a return edge to every call");
    let calls = ops_named(&ctx, module, "t.call");
    assert!(*solution.lattice(ctx.result(calls[9_999], 0)));
    let defined = ctx.operand(calls[0], 0);
    assert!(!*used.lattice(defined), "only flows into the results, which nothing uses");
    assert!(*forward.after(&ctx, helper_return) && *backward.before(&ctx, calls[0]));
    // About 1 s in a debug build; re-joining every call site on every change would take minutes.
    assert!(elapsed.as_secs_f64() < 10.0, "four solvers over 10,000 call sites took {elapsed:?}");
}

/// The `x.touch` ops seen on some path (forward) or ahead on some path (backward): every other
/// op leaves the state as it is, so a slice around the touches solves it.
struct Touches;

fn touched(ctx: &Context, op: Op, state: &UnionSet<Op>) -> UnionSet<Op> {
    let mut state = state.clone();
    if ctx.name_str(op) == "x.touch" {
        state.0.insert(op);
    }
    state
}

impl DenseForwardAnalysis for Touches {
    type Lattice = UnionSet<Op>;
    fn visit_op(&self, ctx: &Context, op: Op, before: &UnionSet<Op>) -> UnionSet<Op> {
        touched(ctx, op, before)
    }
    fn entry_state(&self, _: &Context, _: Block) -> UnionSet<Op> {
        UnionSet::default()
    }
}

impl DenseBackwardAnalysis for Touches {
    type Lattice = UnionSet<Op>;
    fn visit_op(&self, ctx: &Context, op: Op, after: &UnionSet<Op>) -> UnionSet<Op> {
        touched(ctx, op, after)
    }
    fn exit_state(&self, _: &Context, _: Block) -> UnionSet<Op> {
        UnionSet::default()
    }
}

#[test]
fn a_slice_solves_what_the_whole_graph_solves_at_every_point() {
    let (ctx, module) = parse(
        r#"
"t.func"() ({
^bb0(%c: i1):
  "x.other"() : () -> ()
  "t.loop"() ({
    "x.other"() : () -> ()
    "t.loop"() ({
      "x.other"() : () -> ()
      "t.yield"() : () -> ()
    }) : () -> ()
    "t.if"(%c) ({
      "x.other"() : () -> ()
      "x.touch"() {tag = "first"} : () -> ()
      "x.other"() : () -> ()
      "t.yield"() : () -> ()
    }, {
      "t.yield"() : () -> ()
    }) : (i1) -> ()
    "x.other"() : () -> ()
    "t.yield"() : () -> ()
  }) : () -> ()
  "x.other"() : () -> ()
  "t.if"(%c) ({
    "t.loop"() ({
      "x.touch"() {tag = "second"} : () -> ()
      "t.yield"() : () -> ()
    }) : () -> ()
    "t.yield"() : () -> ()
  }, {
    "x.other"() : () -> ()
    "t.yield"() : () -> ()
  }) : (i1) -> ()
  "x.other"() : () -> ()
  "t.return"() : () -> ()
}) {sym_name = "main"} : () -> ()
"#,
    );
    let main = ops_named(&ctx, module, "t.func")[0];
    let flow = FlowGraph::intraprocedural(&ctx, main);
    let order = ProgramOrder::new(&ctx, main);
    let touches = ops_named(&ctx, main, "x.touch");
    let slice = std::rc::Rc::new(FlowSlice::new(&ctx, &flow, &order, touches.iter().copied()));
    let others = ops_named(&ctx, main, "x.other");
    assert!(others.iter().all(|&o| !slice.contains(o)), "an op that changes nothing is not visited");
    assert!(slice.ops().len() < ctx.walk(main).len() - others.len(), "a loop without touches is left out");
    let whole_forward = solve_dense_forward(&ctx, &flow, &Touches);
    let sliced_forward = solve_dense_forward_on(&ctx, &flow, &slice, &Touches);
    let whole_backward = solve_dense_backward(&ctx, &flow, &Touches);
    let sliced_backward = solve_dense_backward_on(&ctx, &flow, &slice, &Touches);
    let mut compared = 0;
    for op in ctx.walk(main).into_iter().skip(1) {
        let in_slice_block = ctx.parent_block(op).is_some_and(|b| slice.has_block(b));
        if !in_slice_block {
            continue;
        }
        assert_eq!(whole_forward.before(&ctx, op), sliced_forward.before(&ctx, op), "forward, before {op:?}");
        assert_eq!(whole_forward.after(&ctx, op), sliced_forward.after(&ctx, op), "forward, after {op:?}");
        assert_eq!(whole_backward.before(&ctx, op), sliced_backward.before(&ctx, op), "backward, before {op:?}");
        assert_eq!(whole_backward.after(&ctx, op), sliced_backward.after(&ctx, op), "backward, after {op:?}");
        compared += 1;
    }
    assert!(compared > 10, "compared {compared} ops");
    let [first, second] = ["first", "second"].map(|t| tagged(&ctx, main, t));
    let end = ctx.last_op(entry(&ctx, main, 0)).unwrap();
    assert_eq!(sliced_forward.before(&ctx, end).0.iter().copied().collect::<Vec<_>>(), [first, second]);
    let start = ctx.first_op(entry(&ctx, main, 0)).unwrap();
    assert_eq!(sliced_backward.before(&ctx, start).0.len(), 2, "both touches ahead: {second:?}");
}

const DIAMOND: &str = r#"
"t.func"() ({
^bb0(%c: i1):
  "t.cond_br"(%c)[^bb1, ^bb2] : (i1) -> ()
^bb1:
  %x = "t.def"() {tag = "clear"} : () -> i32
  "t.br"()[^bb3] : () -> ()
^bb2:
  "t.br"()[^bb3] : () -> ()
^bb3:
  "t.return"() {tag = "after-join"} : () -> ()
}) {sym_name = "main"} : () -> ()
"#;

/// [`ClearedBy`] whose joins hold only where every arriving edge holds (a merge that is not the
/// lattice's join), and that counts the arrivals it merged.
struct MustClearedBy {
    cleared: Op,
    merged: std::cell::RefCell<Vec<usize>>,
}

impl DenseForwardAnalysis for MustClearedBy {
    type Lattice = bool;
    fn visit_op(&self, _: &Context, op: Op, before: &bool) -> bool {
        *before && op != self.cleared
    }
    fn entry_state(&self, _: &Context, _: Block) -> bool {
        true
    }
    fn merges_at(&self, target: Target) -> bool {
        matches!(target, Target::Block(_))
    }
    fn merge(&self, _: &Context, _: Target, arriving: &[(&Edge, bool)]) -> bool {
        self.merged.borrow_mut().push(arriving.len());
        arriving.iter().all(|(_, reached)| *reached)
    }
}

#[test]
fn a_merge_sees_every_edge_that_arrived_and_gives_the_state_where_they_join() {
    let (ctx, module) = parse(DIAMOND);
    let main = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "t.func").expect("main");
    let flow = FlowGraph::intraprocedural(&ctx, main);
    let (clear, after_join) = (tagged(&ctx, module, "clear"), tagged(&ctx, module, "after-join"));
    // The lattice's join: reached along one edge at least.
    let joined = solve_dense_forward(&ctx, &flow, &ClearedBy(clear));
    assert!(*joined.before(&ctx, after_join));
    // The merge: reached along every edge; the edge through `clear` is not.
    let analysis = MustClearedBy { cleared: clear, merged: Default::default() };
    let merged = solve_dense_forward(&ctx, &flow, &analysis);
    assert!(!*merged.before(&ctx, after_join), "the merge's state, not the join of the arrivals");
    assert!(*merged.before(&ctx, clear), "a block with one edge is merged from it");
    assert!(analysis.merged.borrow().contains(&2), "the join block is merged from both edges: {:?}", analysis.merged);
}
