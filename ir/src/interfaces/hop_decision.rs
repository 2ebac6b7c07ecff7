//! How control leaves each point of a region-branch op, decided once from its
//! [`RegionBranchOpInterface`] when the op is compiled — by the host executor, the CPU backend and
//! the SPIR-V lowering alike:
//!
//! - one successor: always there ([`HopDecision::To`]);
//! - two, and one `i1` operand decides between them (the op's when entering, the region
//!   terminator's when leaving): the first `i1` operand for which the interface names exactly one
//!   successor when told it is 1, and the other when told it is 0. An `i1` has no other value, so
//!   these two answers are the whole behaviour of the hop ([`HopDecision::Choose`]). `scf.if` is a
//!   choice on its condition entering; `scf.while` on its `scf.condition`'s leaving `before`;
//! - anything else — a multi-way switch on an integer, two successors no single `i1` decides:
//!   [`HopDecision::Ask`]. The host executor asks the interface with the run-time integers when
//!   it gets there; the CPU backend (whose compiled kernels outlive the context) and the SPIR-V
//!   lowering refuse the op.

use super::{RegionBranchOpInterface, RegionPoint};
use crate::{Context, Op, TypeKind};

/// Where control goes from a point of a region-branch op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HopDecision {
    /// Always to this point.
    To(RegionPoint),
    /// To `if_true` when the `i1` operand at `operand` (of the op entering, of the region's
    /// terminator leaving) is 1, else to `if_false`.
    Choose {
        /// The deciding operand's position.
        operand: usize,
        /// Where control goes when it is 1.
        if_true: RegionPoint,
        /// Where control goes when it is 0.
        if_false: RegionPoint,
    },
    /// To one of `successors`, as the interface says given the run-time values.
    Ask {
        /// Every point the interface allows.
        successors: Vec<RegionPoint>,
    },
}

impl HopDecision {
    /// How control leaves `from` of `op`; `terminator` is region `from`'s terminator, if it has one.
    /// `Err` when control has nowhere to go.
    pub fn of(
        ctx: &Context,
        op: Op,
        branches: &dyn RegionBranchOpInterface,
        from: RegionPoint,
        terminator: Option<Op>,
    ) -> Result<HopDecision, String> {
        let successors = distinct_successors(ctx, op, branches, from, &[]);
        let (first, second) = match successors[..] {
            [to] => return Ok(HopDecision::To(to)),
            [first, second] => (first, second),
            [] => return Err(format!("control has nowhere to go {}", describe_source(from))),
            _ => return Ok(HopDecision::Ask { successors }),
        };
        let candidates = match (from, terminator) {
            (RegionPoint::Parent, _) => ctx.operands(op),
            (RegionPoint::Region(_), Some(terminator)) => ctx.operands(terminator),
            (RegionPoint::Region(_), None) => &[][..],
        };
        for (index, &value) in candidates.iter().enumerate() {
            if !matches!(ctx.type_kind(ctx.value_type(value)), TypeKind::Integer { width: 1, .. }) {
                continue;
            }
            let mut constants = vec![None; index + 1];
            constants[index] = Some(1);
            let when_true = distinct_successors(ctx, op, branches, from, &constants);
            constants[index] = Some(0);
            let when_false = distinct_successors(ctx, op, branches, from, &constants);
            if let ([if_true], [if_false]) = (&when_true[..], &when_false[..]) {
                let both = [*if_true, *if_false];
                if if_true != if_false && both.contains(&first) && both.contains(&second) {
                    return Ok(HopDecision::Choose { operand: index, if_true: *if_true, if_false: *if_false });
                }
            }
        }
        Ok(HopDecision::Ask { successors })
    }
}

/// Why a [`HopDecision::Ask`] from `from` cannot be tabulated (for a consumer that needs tables).
pub fn undecided_hop(from: RegionPoint, successors: &[RegionPoint]) -> String {
    match successors {
        [first, second] => format!(
            "control goes {} or {} {}, and no single 'i1' operand decides which",
            describe_target(*first),
            describe_target(*second),
            describe_source(from)
        ),
        _ => format!("control may go to {} places {}", successors.len(), describe_source(from)),
    }
}

/// The successors of `from` given `constants`, without repeats, in order.
pub fn distinct_successors(
    ctx: &Context,
    op: Op,
    branches: &dyn RegionBranchOpInterface,
    from: RegionPoint,
    constants: &[Option<i64>],
) -> Vec<RegionPoint> {
    let mut seen = Vec::new();
    for point in branches.successors(ctx, op, from, constants) {
        if !seen.contains(&point) {
            seen.push(point);
        }
    }
    seen
}

/// A point as a hop's source, for messages: `on entering the op`, `after region #1`.
pub fn describe_source(point: RegionPoint) -> String {
    match point {
        RegionPoint::Parent => "on entering the op".to_string(),
        RegionPoint::Region(index) => format!("after region #{index}"),
    }
}

/// A point as a hop's target, for messages.
fn describe_target(point: RegionPoint) -> String {
    match point {
        RegionPoint::Parent => "past the op".to_string(),
        RegionPoint::Region(index) => format!("into region #{index}"),
    }
}
