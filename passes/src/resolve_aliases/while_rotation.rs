//! Rotations of buffers carried by `scf.while`: the loop that passes its carried buffers on in
//! a permuted order (`scf.yield %q, %p` — ping-pong, or a rotation of three) names, at each
//! iteration, the buffer its iteration count picks. An `scf.while` has no induction variable
//! and its trip count is known only when it ends, so it is not unrolled by residue as `scf.for`
//! is ([`super::specialise`]); the loop carries the residue instead:
//!
//! ```mlir
//! %r:2 = scf.while (%x = %a, %y = %b) { ... scf.condition(%c) %x, %y }
//!        do { ^bb0(%p, %q): compute.dispatch @step(%p, %q)  scf.yield %q, %p }
//! ```
//!
//! becomes
//!
//! ```mlir
//! %r = scf.while (%k = %c0) { %x = select(%k == 1, %b, %a) ... scf.condition(%c) %k }
//!      do { ^bb0(%k1): %p = select(%k1 == 1, %b, %a)  %q = select(%k1 == 1, %a, %b)
//!           compute.dispatch @step(%p, %q)  scf.yield (%k1 + 1) mod 2 }
//! ```
//!
//! and what used the loop's results uses the same choice on the residue it ends on. Every
//! buffer the loop names is then one of its initial buffers, chosen on a condition, which
//! `insert-transfers` unswitches (an `scf.if` per residue, each naming its buffers), so the plan
//! knows which buffer each dispatch touches on every path.
//!
//! The rule: carried position j of the `before` region is *rotated* when the value the `after`
//! region yields for it is the `after` argument forwarded from `before` position m(j) — so its
//! value at iteration k + 1 is position m(j)'s at iteration k — and j lies on a cycle of m
//! among such positions (each position of a cycle of length l has the initial value l steps
//! along it at every iteration k ≡ that number of steps mod l). The residue is taken mod the
//! least common multiple of the cycles' lengths. A fixed point (a buffer passed on unchanged)
//! is a cycle of length 1: its uses become the initial buffer. Positions off a cycle (a fresh
//! buffer yielded, a chain into a cycle) stay carried as they were.

use super::build::{At, Builder};
use super::pass::Outcome;
use super::residues::{is_buffer, lcm, Unresolved};
use hat_dialects::scf::{ConditionOp, WhileOp};
use hat_dialects::semantics::IntPredicate;
use hat_ir::rewrite::Rewriter;
use hat_ir::{Block, Context, Op, OperationState, Type, Value};
use rustc_hash::FxHashMap;

/// An `scf.while` as its two blocks and their terminators show it.
struct WhileShape {
    op: Op,
    before: Block,
    after: Block,
    condition: Op,
    yield_op: Op,
    inits: Vec<Value>,
    /// The `before` block's arguments (one per init).
    carried: Vec<Value>,
    /// What `scf.condition` forwards (one per `after` argument and per result).
    forwarded: Vec<Value>,
    /// The `after` block's arguments.
    received: Vec<Value>,
    /// What the `after` region yields back to the `before` one.
    yielded: Vec<Value>,
}

impl WhileShape {
    fn of(ctx: &Context, op: Op) -> Option<WhileShape> {
        let view = WhileOp::wrap(ctx, op)?;
        let &[before] = ctx.region_blocks(view.before(ctx)) else { return None };
        let &[after] = ctx.region_blocks(view.after(ctx)) else { return None };
        let condition = ctx.last_op(before)?;
        let yield_op = ctx.last_op(after)?;
        let forwarded = ConditionOp::wrap(ctx, condition)?.forwarded(ctx).to_vec();
        let shape = WhileShape {
            op,
            before,
            after,
            condition,
            yield_op,
            inits: view.inits(ctx).to_vec(),
            carried: ctx.block_arguments(before).to_vec(),
            forwarded,
            received: ctx.block_arguments(after).to_vec(),
            yielded: ctx.operands(yield_op).to_vec(),
        };
        let consistent = shape.carried.len() == shape.inits.len()
            && shape.yielded.len() == shape.inits.len()
            && shape.received.len() == shape.forwarded.len()
            && ctx.result_count(op) == shape.forwarded.len();
        consistent.then_some(shape)
    }

    /// The `before` position whose argument `value` is, if it is one.
    fn carried_position(&self, value: Value) -> Option<usize> {
        self.carried.iter().position(|&c| c == value)
    }
}

/// The rotated positions of a loop and the residue period.
struct Rotation {
    /// For each rotated `before` position j, the position whose value it takes next (m(j)).
    next: FxHashMap<usize, usize>,
    period: usize,
}

impl Rotation {
    /// The initial value position `j` holds at iterations ≡ `residue` mod the period.
    fn source(&self, j: usize, residue: usize) -> usize {
        (0..residue).fold(j, |at, _| self.next[&at])
    }
}

/// The rotated buffer positions of `shape` (see the module documentation), with the residue
/// period; `None` when there is none.
fn rotation(ctx: &Context, shape: &WhileShape) -> Option<Rotation> {
    let step: FxHashMap<usize, usize> = (0..shape.carried.len())
        .filter(|&j| is_buffer(ctx, shape.carried[j]))
        .filter_map(|j| {
            let i = shape.received.iter().position(|&r| r == shape.yielded[j])?;
            let m = shape.carried_position(shape.forwarded[i])?;
            (is_buffer(ctx, shape.carried[m]) && ctx.value_type(shape.carried[m]) == ctx.value_type(shape.carried[j]))
                .then_some((j, m))
        })
        .collect();
    // The positions on a cycle of `step`, and each cycle's length.
    let mut next = FxHashMap::default();
    let mut period = 1;
    for &j in step.keys() {
        let mut at = j;
        let mut length = 0;
        while let Some(&m) = step.get(&at) {
            length += 1;
            at = m;
            if at == j || length > step.len() {
                break;
            }
        }
        if at == j {
            next.insert(j, step[&j]);
            period = lcm(period, length);
        }
    }
    (!next.is_empty()).then_some(Rotation { next, period })
}

/// Resolves the rotated buffers of the `scf.while` `op` (under `function`) by a carried residue
/// (see the module documentation). `max_period`: the longest period resolved.
pub fn resolve_while(ctx: &mut Context, function: Op, op: Op, max_period: usize) -> Outcome {
    let Some(shape) = WhileShape::of(ctx, op) else { return Outcome::NothingToGain };
    let Some(rotation) = rotation(ctx, &shape) else { return Outcome::NothingToGain };
    if rotation.period > max_period {
        return Outcome::Left(Unresolved::RotationTooLong(rotation.period));
    }
    let mut rewriter = Rewriter::new(ctx, function);
    rewrite(&mut rewriter, &shape, &rotation);
    Outcome::Specialised { period: rotation.period, nodes: 0, classes: 0 }
}

/// The buffer `position` holds at the residue `residue` (an index value): its initial value,
/// or a chain of selects on the residue among the initial values it takes, at `at`.
/// `tests` keeps the comparisons of a residue made so far, by residue and value.
fn chosen(
    b: &mut Builder<'_, '_>,
    at: At,
    shape: &WhileShape,
    rotation: &Rotation,
    position: usize,
    residue: Option<Value>,
    tests: &mut FxHashMap<(Value, usize), Value>,
) -> Value {
    let sources: Vec<Value> = (0..rotation.period).map(|r| shape.inits[rotation.source(position, r)]).collect();
    let Some(residue) = residue.filter(|_| sources.iter().any(|&s| s != sources[0])) else { return sources[0] };
    let index = b.rw.ctx().value_type(residue);
    let mut value = sources[rotation.period - 1];
    for r in (0..rotation.period - 1).rev() {
        let here = match tests.get(&(residue, r)) {
            Some(&test) => test,
            None => {
                let r_value = b.constant(r as i64, index);
                let test = b.compare(at, IntPredicate::Eq, residue, r_value);
                tests.insert((residue, r), test);
                test
            }
        };
        value = b.select(at, here, sources[r], value);
    }
    value
}

fn rewrite(rw: &mut Rewriter<'_>, shape: &WhileShape, rotation: &Rotation) {
    let old = shape.op;
    let location = rw.ctx().location(old);
    let index = rw.ctx_mut().index_type();
    let mut b = Builder { rw, location, constants: FxHashMap::default(), anchor: old };
    let with_residue = rotation.period > 1;
    let zero = b.constant(0, index);
    b.anchor = b.rw.ctx().defining_op(zero).expect("a constant op");
    let rotated = |j: usize| rotation.next.contains_key(&j);
    let mut tests = FxHashMap::default();
    let kept_carried: Vec<usize> = (0..shape.carried.len()).filter(|&j| !rotated(j)).collect();
    // A forwarded position goes when what it forwards is a rotated argument: the `after`
    // region and the results get the choice on the residue instead.
    let dropped_forward: Vec<Option<usize>> =
        shape.forwarded.iter().map(|&v| shape.carried_position(v).filter(|&m| rotated(m))).collect();
    let kept_forwarded: Vec<usize> = (0..shape.forwarded.len()).filter(|&i| dropped_forward[i].is_none()).collect();

    // The new loop, its blocks with the kept arguments and the residue last.
    let ctx = b.rw.ctx_mut();
    let types = |ctx: &Context, values: &[Value], positions: &[usize]| -> Vec<Type> {
        let mut types: Vec<Type> = positions.iter().map(|&p| ctx.value_type(values[p])).collect();
        if with_residue {
            types.push(index);
        }
        types
    };
    let before_types = types(ctx, &shape.carried, &kept_carried);
    let after_types = types(ctx, &shape.received, &kept_forwarded);
    let mut state = OperationState::new(ctx.name(old), location);
    state.operands = kept_carried.iter().map(|&j| shape.inits[j]).collect();
    if with_residue {
        state.operands.push(zero);
    }
    state.attributes = ctx.attributes(old).to_vec();
    state.result_types = after_types.clone();
    let mut blocks = Vec::new();
    for block_types in [&before_types, &after_types] {
        let region = ctx.create_region();
        let block = ctx.create_block(block_types);
        ctx.append_block(region, block);
        state.regions.push(region);
        blocks.push(block);
    }
    let (before, after) = (blocks[0], blocks[1]);
    let new = b.rw.create_op(state);
    b.rw.insert_op_before(old, new);
    for (from, to) in [(shape.before, before), (shape.after, after)] {
        while let Some(child) = b.rw.ctx().first_op(from) {
            b.rw.move_op_to_end(child, to);
        }
    }
    let before_arguments = b.rw.ctx().block_arguments(before).to_vec();
    let after_arguments = b.rw.ctx().block_arguments(after).to_vec();
    let residue_before = with_residue.then(|| *before_arguments.last().expect("the residue"));
    let residue_after = with_residue.then(|| *after_arguments.last().expect("the residue"));
    let residue_result = with_residue.then(|| b.rw.ctx().results(new).last().expect("the residue"));

    // The `before` region: kept arguments map over, rotated ones become their choice.
    let start = At::Before(b.rw.ctx().first_op(before).expect("scf.condition"));
    for j in 0..shape.carried.len() {
        let replacement = match kept_carried.iter().position(|&k| k == j) {
            Some(new_position) => before_arguments[new_position],
            None => chosen(&mut b, start, shape, rotation, j, residue_before, &mut tests),
        };
        b.rw.replace_all_uses_with(shape.carried[j], replacement);
    }
    // The `after` region the same way, from the residue forwarded to it.
    let start = At::Before(b.rw.ctx().first_op(after).expect("scf.yield"));
    for (i, &received) in shape.received.iter().enumerate() {
        let replacement = match dropped_forward[i] {
            Some(m) => chosen(&mut b, start, shape, rotation, m, residue_after, &mut tests),
            None => after_arguments[kept_forwarded.iter().position(|&k| k == i).expect("kept")],
        };
        b.rw.replace_all_uses_with(received, replacement);
    }
    // The terminators: the kept positions, and the residue passed on and one step further.
    let condition_operands = b.rw.ctx().operands(shape.condition).to_vec();
    let mut forwarded: Vec<Value> = vec![condition_operands[0]];
    forwarded.extend(kept_forwarded.iter().map(|&i| condition_operands[1 + i]));
    forwarded.extend(residue_before);
    b.rw.set_operands(shape.condition, &forwarded);
    let yielded_now = b.rw.ctx().operands(shape.yield_op).to_vec();
    let mut yielded: Vec<Value> = kept_carried.iter().map(|&j| yielded_now[j]).collect();
    if let Some(residue) = residue_after {
        let at = At::Before(shape.yield_op);
        let one = b.constant(1, index);
        let period = b.constant(rotation.period as i64, index);
        let stepped = b.binary(at, "arith.addi", residue, one);
        yielded.push(b.binary(at, "arith.remui", stepped, period));
    }
    b.rw.set_operands(shape.yield_op, &yielded);
    // The results: kept ones from the new loop, rotated ones the choice on the final residue.
    let after_loop = At::Before(b.rw.ctx().next_op(old).expect("a terminator after the loop"));
    let mut new_results = b.rw.ctx().results(new).collect::<Vec<_>>().into_iter();
    let replacements: Vec<Value> = dropped_forward
        .iter()
        .map(|dropped| match *dropped {
            Some(m) => chosen(&mut b, after_loop, shape, rotation, m, residue_result, &mut tests),
            None => new_results.next().expect("one result per kept position"),
        })
        .collect();
    b.rw.replace_op(old, &replacements);
}
