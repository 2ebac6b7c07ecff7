//! The `resolve-aliases` pass: in every host function, each counted loop whose body names
//! buffers through expressions of the iteration (an `arith.select` on the induction variable's
//! parity, a carried flag, carried buffers yielded in a rotated order) is resolved per residue
//! ([`super::residues`]) and, where every buffer operand of the body becomes a concrete buffer
//! on every residue, specialised by residue ([`super::specialise`]). Innermost loops first.
//!
//! A loop left as it was: nothing iteration-dependent names a buffer (nothing to gain); a
//! buffer operand stays unknown on some residue; the carried values are not periodic within
//! `max-period`; an e-graph passed a bound. The last three count a statistic
//! (`num-unresolved`, `num-bound-exceeded`); a bound passed also emits a remark at the loop (the
//! others only with `remarks=true`: a select on a loop-invariant condition is common, and
//! `insert-transfers` unswitches it). The transfer planner then treats the loop conservatively,
//! as before.

use super::residues::{defined_at_top, is_buffer, resolve, Bounds, LoopShape, Resolution, Resolved, Unresolved};
use super::specialise::{dropped, specialise};
use super::while_rotation::resolve_while;
use crate::transfers::insert::host_functions;
use hat_dialects::arith_views::SelectOp;
use hat_dialects::scf::WhileOp;
use hat_ir::interfaces::loops_innermost_first;
use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassOptions, PassState};
use hat_ir::rewrite::Rewriter;
use hat_ir::{Context, Diagnostic, Op, Value};
use std::time::Duration;

/// The options of `resolve-aliases`.
pub const OPTIONS: &[PassOptionInfo] = &[
    PassOptionInfo {
        name: "max-nodes",
        kind: OptionKind::Unsigned,
        default: "20000",
        help: "The most e-nodes one residue's e-graph may hold",
    },
    PassOptionInfo {
        name: "max-iterations",
        kind: OptionKind::Unsigned,
        default: "32",
        help: "The most saturation iterations per residue",
    },
    PassOptionInfo {
        name: "time-limit-ms",
        kind: OptionKind::Unsigned,
        default: "200",
        help: "The longest one residue's saturation may take, in milliseconds",
    },
    PassOptionInfo {
        name: "max-period",
        kind: OptionKind::Unsigned,
        default: "8",
        help: "The longest period (unroll factor) considered",
    },
    PassOptionInfo {
        name: "remarks",
        kind: OptionKind::Bool,
        default: "false",
        help: "Also remark on loops left for other reasons than a bound (an operand not concrete, carried values not periodic)",
    },
];

/// The registration of `resolve-aliases`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "resolve-aliases",
        summary: "Resolve buffers that change roles between iterations (e-graphs) and specialise loops by residue",
        anchor: None,
        options: OPTIONS,
        create: |options| Box::new(ResolveAliases::new(options)),
    }
}

/// The `resolve-aliases` pass.
pub struct ResolveAliases {
    bounds: Bounds,
    /// Whether loops left for other reasons than a bound get a remark too.
    remarks: bool,
}

impl ResolveAliases {
    /// The pass with its options.
    pub fn new(options: &PassOptions) -> Self {
        ResolveAliases {
            bounds: Bounds {
                max_nodes: options.get_unsigned("max-nodes") as usize,
                max_iterations: options.get_unsigned("max-iterations") as usize,
                time_limit: Duration::from_millis(options.get_unsigned("time-limit-ms")),
                max_period: options.get_unsigned("max-period").max(1) as usize,
            },
            remarks: options.get_bool("remarks"),
        }
    }
}

/// What happened to one loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing iteration-dependent names a buffer in it.
    NothingToGain,
    /// Specialised by residue, with this period.
    Specialised {
        /// The period (unroll factor).
        period: usize,
        /// The largest e-graph's e-nodes.
        nodes: usize,
        /// The largest e-graph's e-classes.
        classes: usize,
    },
    /// Left as it was.
    Left(Unresolved),
    /// Left as it was: this buffer operand is not concrete on some residue.
    Unknown(Value),
    /// Left as it was: the body chooses buffers only on conditions that no residue decides
    /// (a select on an argument): specialising would name nothing more, and `insert-transfers`
    /// unswitches the choices.
    OnlyUndecidedChoices,
}

impl Pass for ResolveAliases {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let mut changed = false;
        for function in host_functions(ctx, op) {
            for looped in loops_innermost_first(ctx, function) {
                if ctx.is_erased(looped) {
                    continue;
                }
                let location = ctx.location(looped);
                let outcome = resolve_loop(ctx, function, looped, &self.bounds);
                changed |= self.record(outcome, location, state);
            }
            // `scf.while` carries its residue instead (no induction variable to unroll by);
            // periods up to what `insert-transfers` unswitches.
            let longest = self.bounds.max_period.min(crate::transfers::unswitch::MAX_DEPTH + 1);
            for looped in whiles_innermost_first(ctx, function) {
                let location = ctx.location(looped);
                let outcome = resolve_while(ctx, function, looped, longest);
                changed |= self.record(outcome, location, state);
            }
        }
        if !changed {
            state.preserve_all();
        }
        Ok(())
    }
}

impl ResolveAliases {
    /// Counts and remarks on what happened to one loop; whether it changed.
    fn record(&self, outcome: Outcome, location: hat_ir::Location, state: &mut PassState<'_>) -> bool {
        let why = match outcome {
            Outcome::NothingToGain => return false,
            Outcome::Specialised { .. } => {
                state.add_statistic("num-specialised", 1);
                return true;
            }
            Outcome::Left(why @ Unresolved::Bound(_)) => {
                state.add_statistic("num-bound-exceeded", 1);
                state.emit(Diagnostic::remark(location, format!("resolve-aliases: loop left as it was: {why}")));
                return false;
            }
            Outcome::Left(why) => why.to_string(),
            Outcome::Unknown(_) => "a buffer operand is not known on every residue".to_string(),
            Outcome::OnlyUndecidedChoices => {
                "it chooses buffers only on conditions no iteration decides (insert-transfers unswitches them)"
                    .to_string()
            }
        };
        state.add_statistic("num-unresolved", 1);
        if self.remarks {
            state.emit(Diagnostic::remark(location, format!("resolve-aliases: loop left as it was: {why}")));
        }
        false
    }
}

/// The `scf.while` ops under `function`, innermost first.
fn whiles_innermost_first(ctx: &Context, function: Op) -> Vec<Op> {
    let mut whiles: Vec<Op> = ctx.walk(function).into_iter().filter(|&op| WhileOp::wrap(ctx, op).is_some()).collect();
    whiles.reverse();
    whiles
}

/// Resolves and, where that makes every buffer operand concrete, specialises `looped` (under
/// `function`).
pub fn resolve_loop(ctx: &mut Context, function: Op, looped: Op, bounds: &Bounds) -> Outcome {
    let Some(shape) = LoopShape::of(ctx, looped) else { return Outcome::NothingToGain };
    if !names_buffers_by_iteration(ctx, &shape) {
        return Outcome::NothingToGain;
    }
    let resolution = match resolve(ctx, &shape, bounds) {
        Ok(resolution) => resolution,
        Err(why) => return Outcome::Left(why),
    };
    if let Some(unknown) = first_unknown_operand(ctx, &shape, &resolution) {
        return Outcome::Unknown(unknown);
    }
    if !makes_a_buffer_known(ctx, &shape, &resolution) {
        return Outcome::OnlyUndecidedChoices;
    }
    let (period, nodes, classes) = (resolution.period, resolution.nodes, resolution.classes);
    let mut rewriter = Rewriter::new(ctx, function);
    specialise(&mut rewriter, &shape, &resolution);
    Outcome::Specialised { period, nodes, classes }
}

/// Whether the body names a buffer through a carried value or an `arith.select` made in it.
fn names_buffers_by_iteration(ctx: &Context, shape: &LoopShape) -> bool {
    shape.iter_args.iter().any(|&a| is_buffer(ctx, a))
        || ctx
            .block_ops(shape.body)
            .any(|op| SelectOp::wrap(ctx, op).is_some() && ctx.results(op).any(|r| is_buffer(ctx, r)))
}

/// The first buffer operand of an op kept in some residue's copy that is not concrete there.
fn first_unknown_operand(ctx: &Context, shape: &LoopShape, resolution: &Resolution) -> Option<Value> {
    let ops: Vec<Op> = ctx.block_ops(shape.body).collect();
    let body_ops = &ops[..ops.len().saturating_sub(1)];
    for r in 0..resolution.period {
        for &op in body_ops {
            if dropped(ctx, resolution, r, op) {
                continue;
            }
            for nested in ctx.walk(op) {
                for &operand in ctx.operands(nested) {
                    if is_buffer(ctx, operand) && !known_or_chosen(ctx, shape, resolution, r, operand, 0) {
                        return Some(operand);
                    }
                }
            }
        }
    }
    None
}

/// Whether buffer `value` is known on residue `r` once the loop is specialised: concrete there
/// (defined outside the body, made by the body's copy, or a carried value that is not free), or
/// chosen by an `arith.select` kept in the copy among such buffers — on a condition the
/// residue does not decide, such as data the body loads. `insert-transfers` unswitches a
/// select of known buffers (up to [`crate::transfers::unswitch::MAX_DEPTH`] conditions deep,
/// the bound here too), so each path names one buffer; specialising makes the carried operands
/// of the select known, which is what the planner could not see before.
fn known_or_chosen(
    ctx: &Context,
    shape: &LoopShape,
    resolution: &Resolution,
    r: usize,
    value: Value,
    depth: usize,
) -> bool {
    if !defined_at_top(ctx, shape, value) {
        return true;
    }
    let carried = shape.iter_args.iter().position(|&a| a == value);
    match (resolution.values[r].get(&value), carried) {
        (Some(Resolved::Outer(_) | Resolved::Local(_)), _) => return true,
        (_, Some(j)) if !matches!(resolution.states[r][j], Resolved::Carried(_)) => return true,
        _ => {}
    }
    if depth >= crate::transfers::unswitch::MAX_DEPTH {
        return false;
    }
    let Some(select) = ctx.defining_op(value).and_then(|op| SelectOp::wrap(ctx, op)) else { return false };
    [select.true_value(ctx), select.false_value(ctx)]
        .into_iter()
        .all(|chosen| known_or_chosen(ctx, shape, resolution, r, chosen, depth + 1))
}

/// Whether specialising names a buffer that the loop names through the iteration: a carried
/// buffer that is known on every residue, or a select of buffers that some residue decides.
fn makes_a_buffer_known(ctx: &Context, shape: &LoopShape, resolution: &Resolution) -> bool {
    let carried = shape.iter_args.iter().enumerate().any(|(j, &a)| {
        is_buffer(ctx, a) && (0..resolution.period).all(|r| !matches!(resolution.states[r][j], Resolved::Carried(_)))
    });
    carried
        || ctx.block_ops(shape.body).any(|op| {
            SelectOp::wrap(ctx, op).is_some()
                && ctx.results(op).any(|v| is_buffer(ctx, v))
                && (0..resolution.period).any(|r| dropped(ctx, resolution, r, op))
        })
}
