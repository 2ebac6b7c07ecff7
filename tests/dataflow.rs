//! The dataflow framework of `hat_ir::analysis::dataflow` on real programs: a constant
//! propagation (sparse forward), a "last writers of each buffer" analysis (dense forward), a
//! "used values" analysis (sparse backward) and a "buffers read later" analysis (dense backward),
//! over nested loops, branches, while loops, calls, block branches and a vendor's dialect. Each
//! analysis is a page; the framework follows control flow through the op interfaces only.
//!
//! The snapshots print each program's source with the analysis' results next to each op.

use hat_test_dialects::vendor as vendor_dialect;

use hat_ir::analysis::dataflow::{
    solve_dense_backward, solve_dense_forward, solve_sparse_backward, solve_sparse_forward, BranchValue,
    DenseBackwardAnalysis, DenseForwardAnalysis, DenseSolution, Edge, EdgeKind, Flat, FlowGraph, Lattice, LatticeMap,
    LoopBounds, SparseBackwardAnalysis, SparseForwardAnalysis, SparseSolution, Target, UnionSet,
};
use hat_ir::analysis::Liveness;
use hat_ir::interfaces::{BranchOpInterface, CallOpInterface};
use hat_ir::{
    Block, Context, EffectKind, EffectTarget, Extent, MemoryEffects, Op, OpDefinition, OpTraits, TypeKind, Value,
    ValueDef,
};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::ops::Range;

// ----- constant propagation (sparse forward) ---------------------------------------------------

/// Integer constants: what `arith.constant` defines and what integer arithmetic on constants
/// gives. Branches on a proven constant open one way only.
struct ConstantPropagation;

impl SparseForwardAnalysis for ConstantPropagation {
    type Lattice = Flat<i64>;

    fn visit_op(&self, ctx: &Context, op: Op, operands: &[&Flat<i64>], results: &mut [Flat<i64>]) {
        for (result, value) in results.iter_mut().zip(ctx.results(op)) {
            *result = match hat_ir::interfaces::constant_integer(ctx, value) {
                Some(constant) => Flat::Known(constant),
                None => Flat::Top,
            };
        }
        if results.len() != 1 || ctx.has_traits(op, OpTraits::CONSTANT_LIKE) {
            return;
        }
        if operands.iter().any(|o| o.is_bottom()) {
            results[0] = Flat::Bottom;
            return;
        }
        let known: Option<Vec<i64>> = operands.iter().map(|o| o.known().copied()).collect();
        if let Some(value) = known.and_then(|k| evaluate(ctx, op, &k)) {
            let width = ctx.type_kind(ctx.value_type(ctx.result(op, 0))).bit_width().unwrap_or(64);
            results[0] = Flat::Known(wrap(value, width));
        }
    }

    fn entry_state(&self, _: &Context, _: Value) -> Flat<i64> {
        Flat::Top
    }

    fn visit_induction_variable(&self, _: &Context, _: Op, _: Value, bounds: LoopBounds<'_, Flat<i64>>) -> Flat<i64> {
        // A loop that runs exactly once has a constant induction variable.
        match (
            bounds.lower.and_then(Flat::known),
            bounds.upper.and_then(Flat::known),
            bounds.step.and_then(Flat::known),
        ) {
            (Some(&lower), Some(&upper), Some(&step)) if step > 0 && lower < upper && upper - lower <= step => {
                Flat::Known(lower)
            }
            _ => Flat::Top,
        }
    }

    fn branch_value(&self, lattice: &Flat<i64>) -> BranchValue {
        match lattice {
            Flat::Bottom => BranchValue::Pending,
            Flat::Known(value) => BranchValue::Constant(*value),
            Flat::Top => BranchValue::Unknown,
        }
    }
}

/// Integer arithmetic of a few `arith` ops, for this test (the dialect's own semantics are the
/// folders'; this analysis only needs enough to show constants flowing).
fn evaluate(ctx: &Context, op: Op, operands: &[i64]) -> Option<i64> {
    match (ctx.name_str(op), operands) {
        ("arith.addi", &[a, b]) => Some(a.wrapping_add(b)),
        ("arith.subi", &[a, b]) => Some(a.wrapping_sub(b)),
        ("arith.muli", &[a, b]) => Some(a.wrapping_mul(b)),
        ("arith.select", &[c, a, b]) => Some(if c != 0 { a } else { b }),
        ("arith.cmpi", &[a, b]) => {
            let predicate = ctx.attribute_kind(ctx.attribute(op, "predicate")?).as_i64()?;
            // MLIR's numbering: eq, ne, slt, sle, sgt, sge (unsigned ones are not needed here).
            let holds = match predicate {
                0 => a == b,
                1 => a != b,
                2 => a < b,
                3 => a <= b,
                4 => a > b,
                5 => a >= b,
                _ => return None,
            };
            Some(i64::from(holds))
        }
        _ => None,
    }
}

fn wrap(value: i64, width: u32) -> i64 {
    match width {
        1 => value & 1,
        64.. => value,
        _ => (value << (64 - width)) >> (64 - width),
    }
}

// ----- last writers of each buffer (dense forward) ---------------------------------------------

/// Who may have written a buffer last.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Writer {
    /// Whoever wrote it before the code the solver sees (the caller of an entry function).
    Entry,
    /// This op.
    Op(Op),
}

type Writers = LatticeMap<Value, UnionSet<Writer>>;

/// For each buffer (an SSA value of memref type), the ops that may have written it last: a
/// write effect replaces the set, an op with unknown effects may write every buffer it is given.
/// Values bound along edges are renamed (loop-carried buffers, a callee's parameters).
struct LastWriters;

fn is_buffer(ctx: &Context, value: Value) -> bool {
    matches!(ctx.type_kind(ctx.value_type(value)), TypeKind::MemRef { .. })
}

/// Whether `value` is defined in a region of `op`.
fn defined_inside(ctx: &Context, value: Value, op: Op) -> bool {
    let owner = match ctx.value_def(value) {
        ValueDef::Result { op: definition, .. } => ctx.parent_op(definition),
        ValueDef::BlockArgument { block, .. } => ctx.block_parent(block).and_then(|r| ctx.region_parent(r)),
    };
    owner.is_some_and(|owner| ctx.is_ancestor(op, owner))
}

/// The buffer arguments of a call and the callee parameters they bind to.
fn call_bindings(ctx: &Context, call: Op, callee_entry: Block) -> Vec<(Value, Value)> {
    let arguments = ctx.interface::<dyn CallOpInterface>(call).unwrap().arguments(ctx, call);
    arguments
        .map(|index| ctx.operand(call, index))
        .zip(ctx.block_arguments(callee_entry).iter().copied())
        .filter(|&(_, parameter)| is_buffer(ctx, parameter))
        .collect()
}

fn effects(ctx: &Context, op: Op) -> MemoryEffects {
    ctx.definition(ctx.name(op)).map_or(MemoryEffects::Unknown, |d| d.memory_effects(ctx, op))
}

impl DenseForwardAnalysis for LastWriters {
    type Lattice = Writers;

    fn visit_op(&self, ctx: &Context, op: Op, before: &Writers) -> Writers {
        let mut after = before.clone();
        // A buffer an op returns without creating it is one of its operands (`arith.select`).
        let mut aliased = UnionSet::default();
        for &operand in ctx.operands(op).iter().filter(|&&v| is_buffer(ctx, v)) {
            aliased.join(&before.get(&operand));
        }
        for result in ctx.results(op).filter(|&v| is_buffer(ctx, v)) {
            after.set(result, aliased.clone());
        }
        match effects(ctx, op) {
            MemoryEffects::Known(effects) => {
                for effect in effects.iter().filter(|e| matches!(e.kind, EffectKind::Write | EffectKind::Allocate)) {
                    let buffer = match effect.target {
                        EffectTarget::Operand(index) => ctx.operand(op, index),
                        EffectTarget::Result(index) => ctx.result(op, index),
                        // Declarations' parameters and synchronisation name no value here.
                        EffectTarget::Parameter(_) | EffectTarget::All => continue,
                    };
                    let writer = UnionSet::single(Writer::Op(op));
                    if effect.must && effect.extent == Extent::Whole {
                        // Every element is overwritten: earlier writers are dead.
                        after.set(buffer, writer);
                    } else {
                        // One element, a span, or a may-write: earlier writers of the rest survive.
                        after.join_at(buffer, &writer);
                    }
                }
            }
            MemoryEffects::Unknown => {
                for &buffer in ctx.operands(op).iter().filter(|&&v| is_buffer(ctx, v)) {
                    after.join_at(buffer, &UnionSet::single(Writer::Op(op)));
                }
            }
        }
        after
    }

    fn entry_state(&self, ctx: &Context, block: Block) -> Writers {
        let mut state = Writers::default();
        for &argument in ctx.block_arguments(block).iter().filter(|&&v| is_buffer(ctx, v)) {
            state.set(argument, UnionSet::single(Writer::Entry));
        }
        state
    }

    fn visit_edge(&self, ctx: &Context, edge: &Edge, state: &Writers) -> Writers {
        match edge.kind {
            // The callee sees its parameters only.
            EdgeKind::Call => {
                let mut entry = Writers::default();
                for (argument, parameter) in edge.bindings(ctx).filter(|&(_, p)| is_buffer(ctx, p)) {
                    entry.set(parameter, state.get(&argument));
                }
                entry
            }
            // The caller gets back what happened to its arguments.
            EdgeKind::Return => {
                let Target::After(call) = edge.to else { unreachable!("a return goes after a call") };
                let body = ctx.parent_op(edge.from).and_then(|f| ctx.regions(f).first().copied());
                let parameters = body.map_or(&[][..], |b| ctx.block_arguments(ctx.region_blocks(b)[0]));
                let arguments = ctx.interface::<dyn CallOpInterface>(call).unwrap().arguments(ctx, call);
                let mut returned = Writers::default();
                for (&parameter, index) in parameters.iter().zip(arguments) {
                    if is_buffer(ctx, parameter) {
                        returned.set(ctx.operand(call, index), state.get(&parameter));
                    }
                }
                returned
            }
            _ => {
                let mut renamed = state.clone();
                // Leaving a region: what it defined is out of scope (after the op, and on the
                // next iteration, which defines it again).
                if let (EdgeKind::Exit, Some(owner)) = (edge.kind, ctx.parent_op(edge.from)) {
                    renamed.0.retain(|&buffer, _| !defined_inside(ctx, buffer, owner));
                }
                for (operand, input) in edge.bindings(ctx).filter(|&(_, i)| is_buffer(ctx, i)) {
                    renamed.set(input, state.get(&operand));
                }
                renamed
            }
        }
    }

    fn visit_call_exit(&self, _: &Context, _: Op, before: &Writers, returned: &Writers) -> Writers {
        let mut after = before.clone();
        for (buffer, writers) in &returned.0 {
            after.set(*buffer, writers.clone());
        }
        after
    }
}

// ----- used values (sparse backward) -----------------------------------------------------------

/// Whether a value is used by something that matters: an op with effects, a branch, or code
/// outside (MLIR's `LivenessAnalysis`). Pure ops use their operands only if their results are used.
struct UsedValues;

impl SparseBackwardAnalysis for UsedValues {
    type Lattice = bool;

    fn visit_op(&self, ctx: &Context, op: Op, operands: &mut [bool], results: &[&bool]) {
        let used = !effects(ctx, op).is_none() || results.iter().any(|&&r| r);
        operands.fill(used);
    }

    fn visit_branch_operand(&self, _: &Context, _: Op, _: usize) -> bool {
        true
    }

    fn exit_state(&self, _: &Context, _: Value) -> bool {
        true
    }
}

// ----- buffers read later (dense backward) -----------------------------------------------------

/// The buffers that may be read from a point on: by an op with a read effect or unknown effects,
/// or by the caller once an entry function returns (it sees its arguments).
struct ReadLater;

impl DenseBackwardAnalysis for ReadLater {
    type Lattice = UnionSet<Value>;

    fn visit_op(&self, ctx: &Context, op: Op, after: &UnionSet<Value>) -> UnionSet<Value> {
        let mut before = after.clone();
        // Before its definition a buffer does not exist.
        for result in ctx.results(op) {
            before.0.remove(&result);
        }
        match effects(ctx, op) {
            MemoryEffects::Known(effects) => {
                for effect in effects.iter().filter(|e| e.kind == EffectKind::Read) {
                    if let EffectTarget::Operand(index) = effect.target {
                        before.0.insert(ctx.operand(op, index));
                    }
                }
            }
            MemoryEffects::Unknown => before.0.extend(ctx.operands(op).iter().filter(|&&v| is_buffer(ctx, v))),
        }
        before
    }

    fn exit_state(&self, ctx: &Context, block: Block) -> UnionSet<Value> {
        let function = ctx.block_parent(block).and_then(|r| ctx.region_parent(r));
        let entry = function.and_then(|f| ctx.regions(f).first()).and_then(|&r| ctx.region_blocks(r).first().copied());
        UnionSet(
            entry
                .map(|e| ctx.block_arguments(e).iter().copied().filter(|&v| is_buffer(ctx, v)).collect())
                .unwrap_or_default(),
        )
    }

    fn visit_edge(&self, ctx: &Context, edge: &Edge, state: &UnionSet<Value>) -> UnionSet<Value> {
        match (edge.kind, edge.to) {
            // From the callee's entry back to the call: parameters become arguments.
            (EdgeKind::Call, Target::Block(entry)) => UnionSet(
                call_bindings(ctx, edge.from, entry)
                    .into_iter()
                    .filter(|(_, p)| state.0.contains(p))
                    .map(|(a, _)| a)
                    .collect(),
            ),
            // From after the call back into the callee's exit: arguments become parameters.
            (EdgeKind::Return, Target::After(call)) => {
                let callee = ctx.parent_op(edge.from).unwrap();
                let entry = ctx.region_blocks(ctx.regions(callee)[0])[0];
                UnionSet(
                    call_bindings(ctx, call, entry)
                        .into_iter()
                        .filter(|(a, _)| state.0.contains(a))
                        .map(|(_, p)| p)
                        .collect(),
                )
            }
            _ => {
                let mut before = state.clone();
                for (operand, input) in edge.bindings(ctx) {
                    if before.0.remove(&input) {
                        before.0.insert(operand);
                    }
                }
                before
            }
        }
    }

    fn visit_call_entry(
        &self,
        _: &Context,
        _: Op,
        after: &UnionSet<Value>,
        entry: &UnionSet<Value>,
    ) -> UnionSet<Value> {
        // What the caller reads after the call is still read later, whatever the callee does.
        let mut before = after.clone();
        before.join(entry);
        before
    }
}

// ----- a tiny dialect of block branches, for unstructured control flow ---------------------------

/// `"cfg.br"(args)[^dest]`: passes all its operands; `"cfg.cond_br"(%c, args)[^then, ^else]`:
/// passes `args` to `^then`, nothing to `^else`, and picks one when `%c` is a constant.
struct Branch(&'static str);

impl OpDefinition for Branch {
    fn name(&self) -> &str {
        self.0
    }
    fn traits(&self) -> OpTraits {
        OpTraits::TERMINATOR
    }
}

impl BranchOpInterface for Branch {
    fn successor_operands(&self, ctx: &Context, op: Op, index: usize) -> Range<usize> {
        match (self.0, index) {
            ("cfg.br", _) => 0..ctx.operands(op).len(),
            (_, 0) => 1..ctx.operands(op).len(),
            _ => 1..1,
        }
    }

    fn successor_for_constants(&self, _: &Context, _: Op, constants: &[Option<i64>]) -> Option<usize> {
        match (self.0, constants.first().copied().flatten()) {
            ("cfg.cond_br", Some(0)) => Some(1),
            ("cfg.cond_br", Some(_)) => Some(0),
            _ => None,
        }
    }
}

static BR: Branch = Branch("cfg.br");
static COND_BR: Branch = Branch("cfg.cond_br");

/// The hat dialects, the vendor dialect, the branch ops above, and unregistered ops.
fn context() -> Context {
    let mut ctx = vendor_dialect::context();
    ctx.register_dialect("cfg", "Block branches (a test dialect)");
    ctx.register_op(Branch("cfg.br"));
    ctx.register_op(Branch("cfg.cond_br"));
    ctx.attach_interface::<dyn BranchOpInterface>("cfg.br", &BR);
    ctx.attach_interface::<dyn BranchOpInterface>("cfg.cond_br", &COND_BR);
    ctx.allow_unregistered = true;
    ctx
}

fn parse(name: &str, text: &str) -> (Context, Op) {
    let mut ctx = context();
    let module = hat_ir::parse_source(&mut ctx, name, text).unwrap_or_else(|e| panic!("{e:?}"));
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    (ctx, module)
}

// ----- the annotator: each source line with what the analysis says about its ops ----------------

/// The 1-based line of a known location.
fn line(ctx: &Context, location: hat_ir::Location) -> Option<usize> {
    ctx.sources.file_line_col(location).map(|(_, line, _)| line)
}

/// A value's name in the source: an argument's, or the result names written before ` = `.
fn value_name(ctx: &Context, value: Value) -> String {
    match ctx.value_def(value) {
        ValueDef::BlockArgument { block, index } => match ctx.argument_name(value) {
            Some(name) => format!("%{name}"),
            None => format!(
                "^{}#{index}",
                line(ctx, ctx.block_location(block).unwrap_or(hat_ir::Location::UNKNOWN)).unwrap_or(0)
            ),
        },
        ValueDef::Result { op, index } => {
            let location = ctx.location(op);
            let text = ctx.sources.file(location.source().unwrap()).text().clone();
            let rest = &text[location.offset() as usize..];
            let names: Vec<&str> = rest.split(" = ").next().unwrap_or("").split(", ").collect();
            match names.get(index as usize) {
                Some(name) if names.len() > 1 || !name.contains(':') => name.to_string(),
                _ => format!("{}#{index}", names[0].split(':').next().unwrap()),
            }
        }
    }
}

/// The source of `root`'s file with `annotate(op)` after the line where each op starts and
/// `annotate_block(block)` after the line where each block with arguments starts.
fn annotated(
    ctx: &Context,
    root: Op,
    annotate: impl Fn(Op) -> Option<String>,
    annotate_block: impl Fn(Block) -> Option<String>,
) -> String {
    let mut notes: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut source = None;
    for op in ctx.walk(root) {
        // A terminator the parser added (an implicit `scf.yield`) shares its parent's location.
        let implicit = ctx.parent_op(op).is_some_and(|p| ctx.location(p) == ctx.location(op));
        if implicit {
            continue;
        }
        if let (Some(line), Some(note)) = (line(ctx, ctx.location(op)), annotate(op)) {
            notes.entry(line).or_default().push(note);
        }
        source = source.or(ctx.location(op).source());
        for &region in ctx.regions(op) {
            for &block in ctx.region_blocks(region) {
                if ctx.block_arguments(block).is_empty() {
                    continue;
                }
                let at = ctx.block_location(block).and_then(|l| line(ctx, l)).or_else(|| line(ctx, ctx.location(op)));
                if let (Some(line), Some(note)) = (at, annotate_block(block)) {
                    notes.entry(line).or_default().insert(0, note);
                }
            }
        }
    }
    let text = ctx.sources.file(source.expect("parsed from text")).text().clone();
    let mut out = String::new();
    for (index, text) in text.lines().enumerate() {
        out.push_str(text.trim_end());
        if let Some(notes) = notes.get(&(index + 1)) {
            let _ = write!(out, "  // {}", notes.join("; "));
        }
        out.push('\n');
    }
    out.trim_start_matches('\n').to_string()
}

fn show_constant(lattice: &Flat<i64>) -> String {
    match lattice {
        Flat::Bottom => "⊥".to_string(),
        Flat::Known(value) => value.to_string(),
        Flat::Top => "⊤".to_string(),
    }
}

/// Constant propagation's results: each result and block argument, and ops that never run.
fn show_constants(ctx: &Context, root: Op, solution: &SparseSolution<Flat<i64>>) -> String {
    let values = |values: Vec<Value>| -> Option<String> {
        let shown: Vec<String> = values
            .iter()
            .map(|&v| format!("{} = {}", value_name(ctx, v), show_constant(solution.lattice(v))))
            .collect();
        (!shown.is_empty()).then(|| shown.join(", "))
    };
    annotated(
        ctx,
        root,
        |op| {
            if ctx.parent_block(op).is_some_and(|b| !solution.flow().is_live(b)) {
                return Some("never runs".to_string());
            }
            values(ctx.results(op).collect())
        },
        |block| {
            if !solution.flow().is_live(block) {
                return None;
            }
            values(ctx.block_arguments(block).to_vec())
        },
    )
}

fn show_writers(ctx: &Context, state: &Writers) -> String {
    let buffers: Vec<String> = state
        .0
        .iter()
        .map(|(buffer, writers)| {
            let writers: Vec<String> = writers
                .0
                .iter()
                .map(|w| match w {
                    Writer::Entry => "entry".to_string(),
                    Writer::Op(op) => format!("L{}", line(ctx, ctx.location(*op)).unwrap_or(0)),
                })
                .collect();
            format!("{}: {}", value_name(ctx, *buffer), writers.join("|"))
        })
        .collect();
    format!("{{{}}}", buffers.join(", "))
}

/// The last writers after every op that changes them, and at every return.
fn show_last_writers(ctx: &Context, root: Op, solution: &DenseSolution<Writers>) -> String {
    annotated(
        ctx,
        root,
        |op| {
            let (before, after) = (solution.before(ctx, op), solution.after(ctx, op));
            let is_return = ctx.has_traits(op, OpTraits::RETURN_LIKE) && ctx.next_op(op).is_none();
            let changes = before != after && !ctx.has_traits(op, OpTraits::ISOLATED_FROM_ABOVE);
            (changes || is_return).then(|| format!("after: {}", show_writers(ctx, after)))
        },
        |_| None,
    )
}

// ----- the programs ----------------------------------------------------------------------------

const CONSTANTS: &str = r#"
compute.func @double(%x: index) -> index {
  %y = arith.addi %x, %x : index
  compute.return %y : index
}
compute.func @increment(%x: index) -> index {
  %c1 = arith.constant 1 : index
  %y = arith.addi %x, %c1 : index
  compute.return %y : index
}
compute.host_func @opaque(index) -> index
compute.func @main(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %six = compute.call @double(%c3) : (index) -> index
  %six_again = compute.call @double(%c3) : (index) -> index
  %two = compute.call @increment(%c1) : (index) -> index
  %unknown = compute.call @increment(%n) : (index) -> index
  %hidden = compute.call @opaque(%c1) : (index) -> index
  %big = arith.cmpi sgt, %six, %c5 : index
  %picked = scf.if %big -> (index) {
    scf.yield %c1 : index
  } else {
    %never = arith.addi %c1, %c1 : index
    scf.yield %never : index
  }
  %kept, %summed = scf.for %i = %c0 to %n step %c1 iter_args(%k = %c5, %s = %c0) -> (index, index) {
    %inner = scf.for %j = %c0 to %c1 step %c1 iter_args(%t = %k) -> (index) {
      %t2 = arith.addi %t, %j : index
      scf.yield %t2 : index
    }
    %s2 = arith.addi %s, %i : index
    scf.yield %inner, %s2 : index, index
  }
  %stopped = scf.while (%x = %c0) : (index) -> index {
    %go = arith.cmpi slt, %x, %c0 : index
    scf.condition(%go) %x : index
  } do {
  ^bb0(%y: index):
    %z = arith.addi %y, %c1 : index
    scf.yield %z : index
  }
  %counted = scf.while (%x = %c0) : (index) -> index {
    %go = arith.cmpi slt, %x, %n : index
    scf.condition(%go) %x : index
  } do {
  ^bb0(%y: index):
    %z = arith.addi %y, %c1 : index
    scf.yield %z : index
  }
  %r = arith.addi %picked, %kept : index
  compute.return %r : index
}
"#;

#[test]
fn constants_flow_through_loops_branches_while_loops_and_calls() {
    let (ctx, module) = parse("constants.hat", CONSTANTS);
    let solution = solve_sparse_forward(&ctx, module, &ConstantPropagation);
    insta::assert_snapshot!("constants", show_constants(&ctx, module, &solution));
}

const VENDOR_ONE_TRIP: &str = r#"
"vendor.proc"() ({
^bb0(%x: i64):
  %y = arith.addi %x, %x : i64
  "vendor.ret"(%y) : (i64) -> ()
}) {sym_name = "twice", function_type = (i64) -> i64} : () -> ()
"vendor.proc"() ({
^bb0(%n: i64):
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %sum = "vendor.repeat"(%one, %zero, %one, %one) ({
  ^bb0(%i: i64, %acc: i64):
    %t = "vendor.invoke"(%i) {target = @twice} : (i64) -> i64
    %next = arith.addi %acc, %t : i64
    "vendor.next"(%next) : (i64) -> ()
  }) : (i64, i64, i64, i64) -> i64
  %lost = "vendor.invoke"(%one) {target = @nowhere} : (i64) -> i64
  "vendor.ret"(%sum) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;

#[test]
fn the_vendor_loop_and_call_are_followed_through_their_interfaces() {
    // The program of test-dialects/src/vendor.rs: the loop's bound is a parameter, so nothing is constant.
    let (ctx, module) = parse("vendor.hat", vendor_dialect::SUM_OF_TWICE);
    let solution = solve_sparse_forward(&ctx, module, &ConstantPropagation);
    insta::assert_snapshot!("vendor_sum_of_twice", show_constants(&ctx, module, &solution));
    let invoke = ctx.walk(module).into_iter().find(|&o| ctx.name_str(o) == "vendor.invoke").unwrap();
    let edges: Vec<&Edge> = solution.flow().edges_from(invoke).collect();
    assert_eq!(edges.len(), 1);
    assert_eq!(edges[0].kind, EdgeKind::Call, "vendor.invoke enters @twice through CallOpInterface");
    // One trip: the induction variable is 0 (LoopLikeOpInterface), so @twice returns 0 and the
    // loop carries 1 + 0. A call to an undefined symbol is external: unknown.
    let (ctx, module) = parse("vendor-one-trip.hat", VENDOR_ONE_TRIP);
    let solution = solve_sparse_forward(&ctx, module, &ConstantPropagation);
    insta::assert_snapshot!("vendor_one_trip", show_constants(&ctx, module, &solution));
}

const BRANCHES: &str = r#"
"vendor.proc"() ({
^bb0(%n: i64):
  %true = arith.constant true
  %c7 = arith.constant 7 : i64
  "cfg.cond_br"(%true, %c7)[^taken, ^skipped] : (i1, i64) -> ()
^taken(%v: i64):
  %w = arith.addi %v, %v : i64
  "vendor.jump"()[^joined] : () -> ()
^skipped:
  %u = arith.addi %n, %n : i64
  "vendor.jump"()[^joined] : () -> ()
^joined:
  %lt = arith.cmpi slt, %n, %c7 : i64
  "cfg.cond_br"(%lt, %n)[^loop, ^exit] : (i1, i64) -> ()
^loop(%m: i64):
  %m1 = arith.addi %m, %c7 : i64
  "cfg.br"(%m1)[^loop] : (i64) -> ()
^exit:
  "x.region"() ({
  ^bb0(%a: i64):
    %b = arith.addi %a, %c7 : i64
    "x.end"(%b) : (i64) -> ()
  }) : () -> ()
  "vendor.ret"(%c7) : (i64) -> ()
}) {sym_name = "main", function_type = (i64) -> i64} : () -> ()
"#;

#[test]
fn block_branches_follow_the_branch_interface_and_unknown_ops_are_conservative() {
    let (ctx, module) = parse("branches.hat", BRANCHES);
    let solution = solve_sparse_forward(&ctx, module, &ConstantPropagation);
    insta::assert_snapshot!("branches", show_constants(&ctx, module, &solution));
}

const BUFFERS: &str = r#"
kernel.func @fill(%out: memref<8xi32>) workgroup(8) {
  %i = kernel.global_id x
  %c1 = arith.constant 1 : i32
  buffer.store %c1, %out[%i] : memref<8xi32>
  kernel.return
}
compute.host_func @show(read memref<8xi32>)
compute.func @reset(%b: memref<8xi32>, %v: i32) {
  %c0 = arith.constant 0 : index
  buffer.store %v, %b[%c0] : memref<8xi32>
  compute.return
}
compute.func @main(%a: memref<8xi32>, %b: memref<8xi32>, %n: index, %p: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %v = arith.constant 5 : i32
  buffer.store %v, %a[%c0] : memref<8xi32>
  scf.for %i = %c0 to %n step %c1 {
    scf.if %p {
      buffer.store %v, %a[%i] : memref<8xi32>
    }
    compute.dispatch @fill[%c8](%b) : (memref<8xi32>)
  }
  %t = buffer.alloc() : memref<8xi32>
  %s = buffer.alloc() : memref<8xi32>
  buffer.store %v, %s[%c0] : memref<8xi32>
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%cur = %t) -> (memref<8xi32>) {
    buffer.store %v, %cur[%c0] : memref<8xi32>
    %other = arith.select %p, %a, %cur : memref<8xi32>
    scf.yield %other : memref<8xi32>
  }
  compute.call @reset(%a, %v) : (memref<8xi32>, i32) -> ()
  %x = buffer.load %a[%c0] : memref<8xi32>
  %done = scf.while (%k = %c0) : (index) -> index {
    %go = arith.cmpi slt, %k, %n : index
    scf.condition(%go) %k : index
  } do {
  ^bb0(%k2: index):
    buffer.copy %a, %b : memref<8xi32>
    %w = buffer.load %s[%c0] : memref<8xi32>
    %k3 = arith.addi %k2, %c1 : index
    scf.yield %k3 : index
  }
  compute.call @show(%b) : (memref<8xi32>) -> ()
  compute.return
}
"#;

#[test]
fn last_writers_flow_through_loops_branches_and_calls() {
    let (ctx, module) = parse("buffers.hat", BUFFERS);
    let flow = FlowGraph::new(&ctx, module);
    let solution = solve_dense_forward(&ctx, &flow, &LastWriters);
    insta::assert_snapshot!("last_writers", show_last_writers(&ctx, module, &solution));
}

#[test]
fn unused_values_and_buffers_read_later() {
    let (ctx, module) = parse("buffers.hat", BUFFERS);
    let flow = FlowGraph::new(&ctx, module);
    let used = solve_sparse_backward(&ctx, &flow, &UsedValues);
    let read_later = solve_dense_backward(&ctx, &flow, &ReadLater);
    let text = annotated(
        &ctx,
        module,
        |op| {
            let mut notes = Vec::new();
            let unused: Vec<String> =
                ctx.results(op).filter(|&v| !*used.lattice(v)).map(|v| value_name(&ctx, v)).collect();
            if !unused.is_empty() {
                notes.push(format!("unused: {}", unused.join(", ")));
            }
            if op != module && ctx.parent_op(op) != Some(module) {
                let later: Vec<String> = read_later.before(&ctx, op).0.iter().map(|&v| value_name(&ctx, v)).collect();
                notes.push(format!("read later: {{{}}}", later.join(", ")));
            }
            (!notes.is_empty()).then(|| notes.join("; "))
        },
        |block| {
            let unused: Vec<String> = ctx
                .block_arguments(block)
                .iter()
                .filter(|&&v| !*used.lattice(v))
                .map(|&v| value_name(&ctx, v))
                .collect();
            (!unused.is_empty()).then(|| format!("unused: {}", unused.join(", ")))
        },
    );
    insta::assert_snapshot!("used_and_read_later", text);
}

#[test]
fn a_dense_analysis_skips_what_constant_propagation_proved_dead() {
    let (ctx, module) = parse("constants.hat", CONSTANTS);
    let constants = solve_sparse_forward(&ctx, module, &ConstantPropagation);
    let narrowed = solve_dense_forward(&ctx, constants.flow(), &CountOps);
    let plain = solve_dense_forward(&ctx, &FlowGraph::new(&ctx, module), &CountOps);
    let never = ctx.walk(module).into_iter().find(|&o| value_name_is(&ctx, o, "%never")).unwrap();
    assert!(narrowed.after(&ctx, never).is_bottom(), "the else branch never runs");
    assert!(!plain.after(&ctx, never).is_bottom(), "without constant propagation it may run");
}

/// Whether `op`'s first result is named `name` in the source.
fn value_name_is(ctx: &Context, op: Op, name: &str) -> bool {
    ctx.result_count(op) > 0 && value_name(ctx, ctx.result(op, 0)) == name
}

/// Whether a point is reached at all (a minimal dense analysis: a flag).
struct CountOps;

impl DenseForwardAnalysis for CountOps {
    type Lattice = bool;
    fn visit_op(&self, _: &Context, _: Op, before: &bool) -> bool {
        *before
    }
    fn entry_state(&self, _: &Context, _: Block) -> bool {
        true
    }
}

#[test]
fn liveness_keeps_a_buffer_alive_across_the_loop_that_reads_it() {
    let (ctx, module) = parse("buffers.hat", BUFFERS);
    let liveness = Liveness::new(&ctx, module);
    let named = |name: &str| ctx.walk(module).into_iter().find(|&o| value_name_is(&ctx, o, name)).unwrap();
    let (second_loop, select, alloc) = (named("%last"), named("%other"), named("%t"));
    let store = ctx.prev_op(select).unwrap();
    let (a, carried, t) = (ctx.operand(select, 1), ctx.operand(store, 1), ctx.result(alloc, 0));
    assert!(liveness.is_live_after(&ctx, carried, store), "the select uses it");
    assert!(liveness.is_dead_after(&ctx, carried, select), "the next iteration gets the yielded buffer");
    assert!(liveness.is_live_after(&ctx, a, select), "used after the loop, so live all through it");
    assert!(liveness.is_dead_after(&ctx, t, second_loop));
    let s = ctx.result(named("%s"), 0);
    let load = named("%w");
    assert!(liveness.is_live_after(&ctx, s, load), "read again on the next iteration of the while loop");
    assert!(liveness.is_dead_after(&ctx, s, ctx.parent_op(load).unwrap()));
}
