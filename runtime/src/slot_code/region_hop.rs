//! Region-branch ops (`scf.if`, `scf.while`, a vendor's) as both engines compile and run them:
//! the one block of each region ([`single_block`]), and how control leaves each point of the op
//! ([`Hop`], compiled by [`compile_hop`]): decided at compile time where
//! [`HopDecision`] can (always one successor, or a choice of two on one `i1`), else asked of the
//! interface at run time with the deciding integers (the host executor only: a kernel's program
//! outlives the context). Each [`Edge`] carries the values the hop moves: from
//! the op's `entry_operands` (entering) or the region terminator's `terminator_operands`
//! (leaving a region) into the successor's `successor_inputs` (a region's block arguments, or the
//! op's results). What the interface answers is checked here once, so that running never indexes
//! out of range; a vendor's interface may disagree with its op's shape.

use super::{Slot, SlotMap, ValueKind};
use crate::value::Scalar;
use hat_ir::interfaces::{describe_source, undecided_hop, HopDecision, RegionBranchOpInterface, RegionPoint};
use hat_ir::{Block, Context, Op, Region};

/// Why a hop cannot be compiled, at the op it is about (the region-branch op, or the region's
/// terminator whose operands are wrong).
#[derive(Debug)]
pub(crate) struct HopError {
    pub at: Op,
    pub message: String,
}

impl HopError {
    fn at(at: Op) -> impl FnOnce(String) -> HopError {
        move |message| HopError { at, message }
    }
}

/// One hop, compiled: where control goes (`T`: how the engine names a region's code, or the op's
/// end) and the values that go along, `sources[i]` into `targets[i]`.
#[derive(Debug)]
pub(crate) struct Edge<T> {
    pub to: T,
    pub sources: Box<[Slot]>,
    pub targets: Box<[Slot]>,
}

/// How control leaves one point of a region-branch op.
#[derive(Debug)]
pub(crate) enum Hop<T> {
    /// Always along this edge.
    To(Edge<T>),
    /// Along `if_true` when the `i1` in `condition` is set (its low bit, as `arith.select`
    /// reads it), else along `if_false`.
    Choose { condition: Slot, if_true: Edge<T>, if_false: Edge<T> },
    /// Asked of the interface when it runs (a multi-way hop): each successor the interface
    /// lists with its edge, and the deciding op's operands (the op's entering, the terminator's
    /// leaving a region) as slots where they are integers.
    Ask { edges: Box<[(RegionPoint, Edge<T>)]>, deciders: Box<[Option<Slot>]> },
}

/// What a [`Hop::Ask`] leaves to the interface: the edges to choose from, and the deciding
/// integers' slots.
pub(crate) type Undecided<'h, T> = (&'h [(RegionPoint, Edge<T>)], &'h [Option<Slot>]);

impl<T> Hop<T> {
    /// The edge taken, reading the frame `frame`; for [`Hop::Ask`], what the interface must
    /// decide.
    #[inline]
    pub fn edge(&self, frame: &[Scalar]) -> Result<&Edge<T>, Undecided<'_, T>> {
        match self {
            Hop::To(edge) => Ok(edge),
            Hop::Choose { condition, if_true, if_false } => {
                Ok(if frame[*condition as usize].as_i64() & 1 != 0 { if_true } else { if_false })
            }
            Hop::Ask { edges, deciders } => Err((edges, deciders)),
        }
    }
}

/// Compiles the hop from `from` of `op` (`terminator`: region `from`'s, if it has one): its
/// decision ([`HopDecision::of`]) and the edges it may take, each successor named by `target`.
/// A hop [`HopDecision`] leaves undecided becomes [`Hop::Ask`] over every successor the
/// interface lists with nothing known, unless the engine cannot ask (`ask_refusal` says why).
#[allow(clippy::too_many_arguments)]
pub(crate) fn compile_hop<T>(
    ctx: &Context,
    slots: &SlotMap,
    op: Op,
    branches: &dyn RegionBranchOpInterface,
    from: RegionPoint,
    terminator: Option<Op>,
    ask_refusal: Option<&str>,
    target: impl Fn(RegionPoint) -> Result<T, String>,
) -> Result<Hop<T>, HopError> {
    let edge = |to: RegionPoint| compile_edge(ctx, slots, op, branches, from, to, terminator, &target);
    // The deciding op: the op on entry, the terminator on leaving a region.
    let decider = match from {
        RegionPoint::Parent => Some(op),
        RegionPoint::Region(_) => terminator,
    };
    match HopDecision::of(ctx, op, branches, from, terminator).map_err(HopError::at(op))? {
        HopDecision::To(to) => Ok(Hop::To(edge(to)?)),
        HopDecision::Choose { operand, if_true, if_false } => {
            let decider = decider.ok_or_else(|| HopError::at(op)("a choice without a deciding op".to_string()))?;
            let condition = slots.get(ctx.operands(decider)[operand]).map_err(HopError::at(decider))?;
            Ok(Hop::Choose { condition, if_true: edge(if_true)?, if_false: edge(if_false)? })
        }
        HopDecision::Ask { successors } => {
            if let Some(refusal) = ask_refusal {
                return Err(HopError::at(op)(format!("{}; {refusal}", undecided_hop(from, &successors))));
            }
            let edges = successors.into_iter().map(|to| Ok((to, edge(to)?))).collect::<Result<_, HopError>>()?;
            let operands = decider.map_or(&[][..], |decider| ctx.operands(decider));
            let deciders = operands
                .iter()
                .map(|&value| match ValueKind::of(ctx, ctx.value_type(value)) {
                    Ok(ValueKind::Scalar(element)) if !element.is_float() => slots.get(value).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<_, String>>()
                .map_err(HopError::at(decider.unwrap_or(op)))?;
            Ok(Hop::Ask { edges, deciders })
        }
    }
}

/// The one block of `region` (`None` when it is empty); a region of several blocks (unstructured
/// control flow) is refused.
pub(crate) fn single_block(ctx: &Context, region: Region) -> Result<Option<Block>, String> {
    match ctx.region_blocks(region) {
        [] => Ok(None),
        [block] => Ok(Some(*block)),
        blocks => Err(format!(
            "has a region of {} blocks: the runtime runs structured control flow only (one block a region)",
            blocks.len()
        )),
    }
}

/// The edge from `from` to `to` of `op` (`target` names `to` as the engine does): the values it
/// moves. `terminator` is the terminator of region `from` (`None` when it has none: it forwards
/// nothing). The slots of every region's block arguments and of the op's results must be
/// defined before.
#[allow(clippy::too_many_arguments)]
fn compile_edge<T>(
    ctx: &Context,
    slots: &SlotMap,
    op: Op,
    branches: &dyn RegionBranchOpInterface,
    from: RegionPoint,
    to: RegionPoint,
    terminator: Option<Op>,
    target: &impl Fn(RegionPoint) -> Result<T, String>,
) -> Result<Edge<T>, HopError> {
    let sources = match (from, terminator) {
        (RegionPoint::Parent, _) => {
            slots.operands(ctx, op, branches.entry_operands(ctx, op, to)).map_err(HopError::at(op))?
        }
        (RegionPoint::Region(index), Some(terminator)) => slots
            .operands(ctx, terminator, branches.terminator_operands(ctx, op, terminator, index, to))
            .map_err(HopError::at(terminator))?,
        (RegionPoint::Region(_), None) => Box::new([]),
    };
    let fail = |message: String| Err(HopError { at: op, message });
    let range = branches.successor_inputs(ctx, op, to);
    let targets = match to {
        RegionPoint::Parent => {
            if range.end > ctx.result_count(op) {
                return fail(format!("has no results {range:?}"));
            }
            slots
                .get_all(&ctx.results(op).skip(range.start).take(range.len()).collect::<Vec<_>>())
                .map_err(HopError::at(op))?
        }
        RegionPoint::Region(index) => {
            let block = ctx.regions(op).get(index).and_then(|&region| ctx.region_blocks(region).first().copied());
            let Some(block) = block else {
                return fail(format!(
                    "{}, control goes into region #{index}, which is empty or missing",
                    describe_source(from)
                ));
            };
            let Some(arguments) = ctx.block_arguments(block).get(range.clone()) else {
                return fail(format!("region #{index} has no block arguments {range:?}"));
            };
            slots.get_all(arguments).map_err(HopError::at(op))?
        }
    };
    if sources.len() != targets.len() {
        let inputs_of = match to {
            RegionPoint::Parent => "the op's results".to_string(),
            RegionPoint::Region(index) => format!("the arguments of region #{index}"),
        };
        return fail(format!(
            "{}, {} value(s) are forwarded to {inputs_of}, which take {}",
            describe_source(from),
            sources.len(),
            targets.len()
        ));
    }
    Ok(Edge { to: target(to).map_err(HopError::at(op))?, sources, targets })
}
