//! Per-residue resolution of one counted loop: for each residue r of the iteration number
//! modulo the period k, an e-graph of the body's index-, `i1`- and buffer-valued expressions
//! (the *slice*: what the body's buffer operands and its yielded values are computed from),
//! with the carried values bound to what they are on iteration r and the fact
//! `remu(iv, K) = (lb + r * step) mod K` asserted by a union; saturated with [`super::rules`];
//! each value extracted in its cheapest form, which is concrete when it is a single leaf (a
//! value from outside the loop, a value an unmodelled op of the body makes, or a constant).
//!
//! The period k is the least multiple of the induction variable's period (the lcm, over the
//! moduli m the slice takes — `remsi`/`remui` by m, `andi` with `m - 1` — of
//! `m / gcd(m, step)`) after which the carried values are again the initial ones: the state of
//! iteration r + 1 is what iteration r yields, extracted. So the loop-carried permutation is
//! applied r times by construction, and a carried flag flipped with `xori` or `cmpi eq, false`
//! is a constant on each residue.
//!
//! A carried value whose yield is not concrete on some residue (a counter, an accumulator) is
//! *free*: it is simulated as itself (a leaf `c<j>` on every residue) and the specialised loop
//! keeps carrying it; anything computed from it is not concrete.
//!
//! Invariants: every union comes from a sound rule or from the asserted fact, so every
//! extracted form equals the value on every iteration with that residue; a loop whose e-graph
//! passes a [`Bounds`] limit, or whose state is not periodic within `max_period`, is not
//! resolved ([`Unresolved`]).

use super::language::{AliasExpr, AliasGraph, Facts, LeafFacts};
use super::rules::{rules, Rule};
use egg::{CostFunction, Extractor, Id, Language, Runner, StopReason, Symbol};
use hat_dialects::semantics::{ScalarOp, ScalarType};
use hat_ir::interfaces::{constant_integer, LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint};
use hat_ir::{Block, Context, Op, TypeKind, Value, ValueDef};
use rustc_hash::FxHashMap;
use std::fmt;
use std::time::Duration;

/// The limits of one loop's resolution.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The most e-nodes one residue's e-graph may hold.
    pub max_nodes: usize,
    /// The most saturation iterations per residue.
    pub max_iterations: usize,
    /// The longest one residue's saturation may take.
    pub time_limit: Duration,
    /// The longest period (the unroll factor) considered.
    pub max_period: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds { max_nodes: 20_000, max_iterations: 32, time_limit: Duration::from_millis(200), max_period: 8 }
    }
}

/// What a value of the body is on one residue.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Resolved {
    /// A value defined outside the loop.
    Outer(Value),
    /// A value an op at the top level of the body makes (its copy in each unrolled body).
    Local(Value),
    /// An integer constant (`i1`: 0 or 1).
    Constant(i64),
    /// Whatever carried value `j` is at the start of the iteration: a *free* carried value,
    /// one that is not concrete and periodic (a counter, an accumulator). The specialised loop
    /// keeps carrying it.
    Carried(usize),
}

/// A counted loop, as the interfaces describe it.
#[derive(Clone, Debug)]
pub struct LoopShape {
    /// The loop op.
    pub op: Op,
    /// The body's only block.
    pub body: Block,
    /// The induction variable.
    pub iv: Value,
    /// The lower bound and the step, when constants.
    pub lower: Option<i64>,
    /// See `lower`.
    pub step: Option<i64>,
    /// The carried values: the body's arguments.
    pub iter_args: Vec<Value>,
    /// Their initial values (operands of the loop).
    pub inits: Vec<Value>,
    /// What the body yields for each, on the back edge.
    pub yields: Vec<Value>,
}

impl LoopShape {
    /// The shape of `op`, when it is a loop-like op with an induction variable, a one-block
    /// body whose terminator hands one value to each carried argument.
    pub fn of(ctx: &Context, op: Op) -> Option<LoopShape> {
        let looping = ctx.interface::<dyn LoopLikeOpInterface>(op)?;
        let branch = ctx.interface::<dyn RegionBranchOpInterface>(op)?;
        let region = looping.body(ctx, op);
        let &[body] = ctx.region_blocks(region) else { return None };
        let iv = looping.induction_variable(ctx, op)?;
        let arguments = ctx.block_arguments(body);
        let iter_args: Vec<Value> = arguments.get(looping.region_iter_args(ctx, op))?.to_vec();
        let inits: Vec<Value> = ctx.operands(op).get(looping.init_operands(ctx, op))?.to_vec();
        let terminator = ctx.last_op(body)?;
        let index = ctx.regions(op).iter().position(|&r| r == region)?;
        let range = branch.terminator_operands(ctx, op, terminator, index, RegionPoint::Region(index));
        let yields: Vec<Value> = ctx.operands(terminator).get(range)?.to_vec();
        if inits.len() != iter_args.len() || yields.len() != iter_args.len() {
            return None;
        }
        let constant = |v: Option<Value>| v.and_then(|v| constant_integer(ctx, v));
        Some(LoopShape {
            op,
            body,
            iv,
            lower: constant(looping.lower_bound(ctx, op)),
            step: constant(looping.step(ctx, op)).filter(|&s| s > 0),
            iter_args,
            inits,
            yields,
        })
    }
}

/// Why a loop was not resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unresolved {
    /// An e-graph passed a bound (nodes, iterations or time).
    Bound(String),
    /// The carried values do not come back to the initial ones within the longest period, or
    /// one is not a concrete value on some residue.
    NotPeriodic,
    /// The induction variable's period is longer than the longest period.
    PeriodTooLong(usize),
    /// The buffers an `scf.while` carries rotate with a period longer than the longest one its
    /// residue resolves (the unswitching's depth, or `max-period`).
    RotationTooLong(usize),
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unresolved::Bound(what) => write!(f, "the e-graph passed a bound ({what})"),
            Unresolved::NotPeriodic => {
                write!(f, "the carried values are not concrete and periodic within the longest period")
            }
            Unresolved::PeriodTooLong(k) => write!(f, "the induction variable's period ({k}) is too long"),
            Unresolved::RotationTooLong(k) => {
                write!(f, "the carried buffers rotate with period {k}, longer than the longest resolved")
            }
        }
    }
}

/// A resolved loop.
#[derive(Clone, Debug)]
pub struct Resolution {
    /// The period k: the unroll factor.
    pub period: usize,
    /// For each residue, what each value of the slice is on it (absent: not concrete).
    pub values: Vec<FxHashMap<Value, Resolved>>,
    /// For each residue r, the carried values at the start of iteration r (index r = k: the
    /// state after a whole period, equal to index 0).
    pub states: Vec<Vec<Resolved>>,
    /// The largest e-graph, in e-nodes and e-classes.
    pub nodes: usize,
    /// See `nodes`.
    pub classes: usize,
}

/// Resolves the slice of `shape` on every residue (see the module documentation).
pub fn resolve(ctx: &Context, shape: &LoopShape, bounds: &Bounds) -> Result<Resolution, Unresolved> {
    let slice = Slice::of(ctx, shape);
    let period_of_iv = match (shape.lower, shape.step) {
        (Some(lower), Some(step)) if lower >= 0 => {
            slice.moduli.iter().fold(1usize, |k, &m| lcm(k, (m / gcd(m, step)) as usize))
        }
        _ => 1,
    };
    if period_of_iv > bounds.max_period {
        return Err(Unresolved::PeriodTooLong(period_of_iv));
    }
    let rules = rules();
    // Carried values found free (their yield not concrete on some residue) are simulated as
    // themselves; each one found restarts the simulation, so at most one restart per value.
    let mut free = vec![false; shape.iter_args.len()];
    loop {
        match simulate(ctx, shape, bounds, &slice, &rules, period_of_iv, &free)? {
            Ok(resolution) => return Ok(resolution),
            Err(found) => {
                for j in found {
                    free[j] = true;
                }
            }
        }
    }
}

/// One simulation of the residues with the carried values `free` kept symbolic: the
/// resolution, or the carried values to make free: the first whose yield is not concrete, or
/// (when no period is found) those that never come back to their initial value (a counter
/// from a constant).
fn simulate(
    ctx: &Context,
    shape: &LoopShape,
    bounds: &Bounds,
    slice: &Slice,
    rules: &[Rule],
    period_of_iv: usize,
    free: &[bool],
) -> Result<Result<Resolution, Vec<usize>>, Unresolved> {
    let initial: Vec<Resolved> = shape
        .inits
        .iter()
        .enumerate()
        .map(|(j, &v)| if free[j] { Resolved::Carried(j) } else { outer(ctx, v) })
        .collect();
    let mut states = vec![initial.clone()];
    let mut values = Vec::new();
    let (mut nodes, mut classes) = (0, 0);
    for iteration in 0..bounds.max_period {
        let fact = match (shape.lower, shape.step) {
            (Some(lower), Some(step)) if lower >= 0 && !slice.moduli.is_empty() => {
                let modulus = period_of_iv as i64 * step;
                let residue = (iteration % period_of_iv) as i64;
                Some((modulus, (lower + residue * step).rem_euclid(modulus)))
            }
            _ => None,
        };
        let graph = slice.saturate(&states[iteration], fact, rules, bounds)?;
        nodes = nodes.max(graph.egraph.total_size());
        classes = classes.max(graph.egraph.number_of_classes());
        let resolved = graph.extract(slice);
        let mut next = Vec::with_capacity(free.len());
        for (j, v) in shape.yields.iter().enumerate() {
            if free[j] {
                next.push(Resolved::Carried(j));
                continue;
            }
            match resolved.get(v) {
                Some(&r @ (Resolved::Outer(_) | Resolved::Constant(_))) => next.push(r),
                _ => return Ok(Err(vec![j])),
            }
        }
        values.push(resolved);
        states.push(next);
        let period = iteration + 1;
        if period % period_of_iv == 0 && states[period] == initial {
            return Ok(Ok(Resolution { period, values, states, nodes, classes }));
        }
    }
    let never_back: Vec<usize> = (0..free.len())
        .filter(|&j| !free[j] && !(1..states.len()).any(|p| p % period_of_iv == 0 && states[p][j] == initial[j]))
        .collect();
    if never_back.is_empty() {
        Err(Unresolved::NotPeriodic)
    } else {
        Ok(Err(never_back))
    }
}

/// `value`, defined outside the loop, as a leaf.
fn outer(ctx: &Context, value: Value) -> Resolved {
    match constant_integer(ctx, value) {
        Some(n) if is_modelled_scalar(ctx, value) => Resolved::Constant(n),
        _ => Resolved::Outer(value),
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// The least common multiple (of periods).
pub(super) fn lcm(a: usize, b: usize) -> usize {
    a / gcd(a as i64, b as i64) as usize * b
}

/// Whether `value` is an `index`, `i64` or `i1`.
fn is_modelled_scalar(ctx: &Context, value: Value) -> bool {
    matches!(ScalarType::of(ctx, ctx.value_type(value)), Some(t) if t.is_index() || t.bits() == 64 || t.bits() == 1)
}

fn is_i1(ctx: &Context, value: Value) -> bool {
    matches!(ctx.type_kind(ctx.value_type(value)), TypeKind::Integer { width: 1, .. })
}

/// Whether `value` is a buffer.
pub fn is_buffer(ctx: &Context, value: Value) -> bool {
    matches!(ctx.type_kind(ctx.value_type(value)), TypeKind::MemRef { .. })
}

/// How a value of the slice enters the e-graph.
#[derive(Clone, Debug)]
enum Definition {
    /// The induction variable.
    Iv,
    /// Carried value number `i`.
    IterArg(usize),
    /// A value from outside the loop (or a constant).
    Outer(Resolved),
    /// A value an unmodelled op of the body makes.
    Local,
    /// A modelled op: the node's kind and its operands.
    Node(ScalarOp, Vec<Value>),
}

/// The slice of a loop body: its values in an order where operands come first.
struct Slice {
    order: Vec<Value>,
    definitions: FxHashMap<Value, Definition>,
    /// The moduli the slice takes of anything (`remsi`, `remui` by a constant; `andi` with a
    /// low-bits mask, as its modulus).
    moduli: Vec<i64>,
    /// Leaf names: `o<n>` / `x<n>` name `leaf_values[n]`.
    leaf_values: Vec<Value>,
    leaf_names: FxHashMap<Value, Symbol>,
    leaf_facts: FxHashMap<Symbol, LeafFacts>,
    /// The leaf `c<j>` of each carried value, for when it is free.
    carried_names: Vec<Symbol>,
}

/// The leaf of the induction variable.
const IV: &str = "iv";

impl Slice {
    fn of(ctx: &Context, shape: &LoopShape) -> Slice {
        let mut slice = Slice {
            order: Vec::new(),
            definitions: FxHashMap::default(),
            moduli: Vec::new(),
            leaf_values: Vec::new(),
            leaf_names: FxHashMap::default(),
            leaf_facts: FxHashMap::default(),
            carried_names: Vec::new(),
        };
        for (j, &argument) in shape.iter_args.iter().enumerate() {
            let symbol = Symbol::from(format!("c{j}"));
            slice.carried_names.push(symbol);
            slice.leaf_facts.insert(symbol, LeafFacts { nonneg: false, boolean: is_i1(ctx, argument) });
        }
        let nonneg_iv = matches!(shape.lower, Some(l) if l >= 0) && shape.step.is_some();
        slice.leaf_facts.insert(Symbol::from(IV), LeafFacts { nonneg: nonneg_iv, boolean: false });
        // The roots: the yielded values, and every buffer operand of an op in the body that the
        // body's top level defines (or that is carried).
        let mut roots: Vec<Value> = shape.yields.clone();
        for op in ctx.walk(shape.op) {
            if op == shape.op {
                continue;
            }
            for &operand in ctx.operands(op) {
                if is_buffer(ctx, operand) && defined_at_top(ctx, shape, operand) {
                    roots.push(operand);
                }
            }
        }
        for root in roots {
            slice.visit(ctx, shape, root);
        }
        for &inits in &shape.inits {
            if let Resolved::Outer(v) = outer(ctx, inits) {
                slice.leaf(ctx, v, 'o');
            }
        }
        slice
    }

    fn leaf(&mut self, ctx: &Context, value: Value, kind: char) -> Symbol {
        if let Some(&symbol) = self.leaf_names.get(&value) {
            return symbol;
        }
        let symbol = Symbol::from(format!("{kind}{}", self.leaf_values.len()));
        self.leaf_values.push(value);
        self.leaf_names.insert(value, symbol);
        self.leaf_facts.insert(symbol, LeafFacts { nonneg: false, boolean: is_i1(ctx, value) });
        symbol
    }

    /// Adds `root` and what it is computed from (depth first, operands before users).
    fn visit(&mut self, ctx: &Context, shape: &LoopShape, root: Value) {
        let mut stack = vec![(root, false)];
        while let Some((value, expanded)) = stack.pop() {
            if self.definitions.contains_key(&value) {
                continue;
            }
            let definition = self.definition(ctx, shape, value);
            if let Definition::Node(_, operands) = &definition {
                if !expanded {
                    stack.push((value, true));
                    for &operand in operands.iter().rev() {
                        if !self.definitions.contains_key(&operand) {
                            stack.push((operand, false));
                        }
                    }
                    continue;
                }
            }
            match definition {
                Definition::Outer(Resolved::Outer(v)) => {
                    self.leaf(ctx, v, 'o');
                }
                Definition::Local => {
                    self.leaf(ctx, value, 'x');
                }
                Definition::Node(op, ref operands) => {
                    let divisor = |i: usize| operands.get(i).and_then(|&v| constant_integer(ctx, v));
                    match op {
                        ScalarOp::RemSI | ScalarOp::RemUI => self.moduli.extend(divisor(1).filter(|&m| m > 0)),
                        ScalarOp::AndI => {
                            for i in 0..2 {
                                if let Some(mask) = divisor(i) {
                                    if mask > 0 && mask < (1 << 62) && (mask + 1) & mask == 0 {
                                        self.moduli.push(mask + 1);
                                    }
                                }
                            }
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
            self.definitions.insert(value, definition);
            self.order.push(value);
        }
    }

    fn definition(&self, ctx: &Context, shape: &LoopShape, value: Value) -> Definition {
        if value == shape.iv {
            return Definition::Iv;
        }
        if let Some(i) = shape.iter_args.iter().position(|&a| a == value) {
            return Definition::IterArg(i);
        }
        if !defined_inside(ctx, shape, value) {
            return Definition::Outer(outer(ctx, value));
        }
        if !defined_at_top(ctx, shape, value) {
            return Definition::Local;
        }
        let ValueDef::Result { op, .. } = ctx.value_def(value) else { return Definition::Local };
        if let Some(n) = constant_integer(ctx, value).filter(|_| is_modelled_scalar(ctx, value)) {
            return Definition::Outer(Resolved::Constant(n));
        }
        match ScalarOp::decode(ctx, op) {
            Ok(scalar) if is_modelled(ctx, op, scalar) => Definition::Node(scalar, ctx.operands(op).to_vec()),
            _ => Definition::Local,
        }
    }

    /// An e-graph of the slice for one residue, saturated.
    fn saturate(
        &self,
        state: &[Resolved],
        fact: Option<(i64, i64)>,
        rules: &[Rule],
        bounds: &Bounds,
    ) -> Result<Graph, Unresolved> {
        let facts = Facts { leaves: self.leaf_facts.clone(), modulus: fact.map(|(m, _)| m), contradiction: false };
        let mut egraph = AliasGraph::new(facts);
        let mut ids: FxHashMap<Value, Id> = FxHashMap::default();
        let leaf_of = |egraph: &mut AliasGraph, resolved: Resolved| match resolved {
            Resolved::Constant(n) => egraph.add(AliasExpr::Num(n)),
            Resolved::Outer(v) | Resolved::Local(v) => egraph.add(AliasExpr::Leaf(self.leaf_names[&v])),
            Resolved::Carried(j) => egraph.add(AliasExpr::Leaf(self.carried_names[j])),
        };
        for &value in &self.order {
            let id = match &self.definitions[&value] {
                Definition::Iv => egraph.add(AliasExpr::Leaf(Symbol::from(IV))),
                Definition::IterArg(i) => leaf_of(&mut egraph, state[*i]),
                Definition::Outer(resolved) => leaf_of(&mut egraph, *resolved),
                Definition::Local => egraph.add(AliasExpr::Leaf(self.leaf_names[&value])),
                Definition::Node(op, operands) => {
                    let children: Vec<Id> = operands.iter().map(|v| ids[v]).collect();
                    let node = AliasExpr::from_scalar_op(*op, &children).expect("only modelled ops are nodes");
                    egraph.add(node)
                }
            };
            ids.insert(value, id);
        }
        if let Some((modulus, residue)) = fact {
            let iv = egraph.add(AliasExpr::Leaf(Symbol::from(IV)));
            let m = egraph.add(AliasExpr::Num(modulus));
            let remainder = egraph.add(AliasExpr::RemU([iv, m]));
            let r = egraph.add(AliasExpr::Num(residue));
            egraph.union(remainder, r);
        }
        egraph.rebuild();
        let runner = Runner::default()
            .with_egraph(egraph)
            .with_node_limit(bounds.max_nodes)
            .with_iter_limit(bounds.max_iterations)
            .with_time_limit(bounds.time_limit)
            .run(rules);
        match runner.stop_reason {
            Some(StopReason::Saturated) => {}
            Some(StopReason::NodeLimit(_)) => {
                return Err(Unresolved::Bound(format!("more than {} e-nodes", bounds.max_nodes)));
            }
            Some(StopReason::IterationLimit(_)) => {
                return Err(Unresolved::Bound(format!("more than {} iterations", bounds.max_iterations)));
            }
            Some(StopReason::TimeLimit(_)) => {
                return Err(Unresolved::Bound(format!("more than {} ms", bounds.time_limit.as_millis())));
            }
            Some(StopReason::Other(why)) => return Err(Unresolved::Bound(why)),
            None => return Err(Unresolved::Bound("no stop reason".into())),
        }
        if runner.egraph.analysis.contradiction {
            return Err(Unresolved::NotPeriodic);
        }
        Ok(Graph { egraph: runner.egraph, ids })
    }
}

/// A saturated e-graph and the class of each value of the slice.
struct Graph {
    egraph: AliasGraph,
    ids: FxHashMap<Value, Id>,
}

impl Graph {
    /// Each value of the slice whose cheapest form is a single concrete leaf.
    fn extract(&self, slice: &Slice) -> FxHashMap<Value, Resolved> {
        let extractor = Extractor::new(&self.egraph, LeafFirst);
        let mut resolved = FxHashMap::default();
        for (&value, &id) in &self.ids {
            let (_, best) = extractor.find_best(self.egraph.find(id));
            let nodes = best.as_ref();
            if nodes.len() != 1 {
                continue;
            }
            let concrete = match &nodes[0] {
                AliasExpr::Num(n) => Some(Resolved::Constant(*n)),
                AliasExpr::Leaf(symbol) => {
                    let name = symbol.as_str();
                    let index = name.get(1..).and_then(|n| n.parse::<usize>().ok());
                    match (name.as_bytes().first(), index) {
                        (Some(b'o'), Some(i)) => Some(Resolved::Outer(slice.leaf_values[i])),
                        (Some(b'x'), Some(i)) => Some(Resolved::Local(slice.leaf_values[i])),
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some(concrete) = concrete {
                resolved.insert(value, concrete);
            }
        }
        resolved
    }
}

/// The cost of a form: constants, then values from outside, then other leaves, then ops.
struct LeafFirst;

impl CostFunction<AliasExpr> for LeafFirst {
    type Cost = u64;

    fn cost<C>(&mut self, enode: &AliasExpr, mut costs: C) -> u64
    where
        C: FnMut(Id) -> u64,
    {
        let own = match enode {
            AliasExpr::Num(_) => 1,
            AliasExpr::Leaf(symbol) if symbol.as_str().starts_with('o') => 2,
            AliasExpr::Leaf(_) => 3,
            _ => 4,
        };
        enode.fold(own, |sum, id| sum.saturating_add(costs(id)))
    }
}

/// Whether the e-graph models `op` (a decoded scalar op): `select` on any type; integer ops on
/// `index`/`i64`; on `i1`, only those whose 64-bit result on 0 and 1 equals the 1-bit one.
fn is_modelled(ctx: &Context, op: Op, scalar: ScalarOp) -> bool {
    let operands = ctx.operands(op);
    if scalar == ScalarOp::Select {
        return operands.len() == 3;
    }
    let Some(&first) = operands.first() else { return false };
    if AliasExpr::from_scalar_op(scalar, &[Id::from(0usize); 2]).is_none() {
        return false;
    }
    if is_i1(ctx, first) {
        use hat_dialects::semantics::IntPredicate;
        return matches!(
            scalar,
            ScalarOp::AndI
                | ScalarOp::OrI
                | ScalarOp::XorI
                | ScalarOp::CmpI(IntPredicate::Eq)
                | ScalarOp::CmpI(IntPredicate::Ne)
        );
    }
    is_modelled_scalar(ctx, first)
}

/// Whether `value` is defined inside the loop (its body or deeper), not counting the loop's
/// own results.
fn defined_inside(ctx: &Context, shape: &LoopShape, value: Value) -> bool {
    let owner = match ctx.value_def(value) {
        ValueDef::Result { op, .. } => Some(op),
        _ => ctx.value_block(value).and_then(|b| ctx.block_parent(b)).and_then(|r| ctx.region_parent(r)),
    };
    match owner {
        Some(op) => {
            op != shape.op && ctx.is_ancestor(shape.op, op) || {
                // A block argument of the loop's own body.
                ctx.value_block(value) == Some(shape.body)
            }
        }
        None => false,
    }
}

/// Whether `value` is defined at the top level of the body (a result of an op of the body's
/// block, or one of its arguments).
pub fn defined_at_top(ctx: &Context, shape: &LoopShape, value: Value) -> bool {
    match ctx.value_def(value) {
        ValueDef::Result { op, .. } => ctx.parent_block(op) == Some(shape.body),
        _ => ctx.value_block(value) == Some(shape.body),
    }
}
