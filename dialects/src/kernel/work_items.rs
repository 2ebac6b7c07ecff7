//! The work-item queries of `kernel` (`kernel.global_id x` ...): which id or size an op asks for,
//! and in which dimension, decoded once here so that executors and backends never match these
//! op names themselves.
//!
//! Every query op has no operands, one `index` result and an `i64` attribute `dimension` of 0, 1
//! or 2 (x, y, z); the verifier guarantees both. [`WorkItemQuery::decode`] answers only for those
//! ops, and only when the dimension is in range.

use hat_ir::{Context, Op};

/// What a work-item query op returns.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkItemQuery {
    /// `kernel.global_id`: the work item's id in the whole grid.
    GlobalId,
    /// `kernel.local_id`: the work item's id in its workgroup.
    LocalId,
    /// `kernel.group_id`: the workgroup's id in the grid.
    GroupId,
    /// `kernel.global_size`: the number of work items in the grid.
    GlobalSize,
    /// `kernel.local_size`: the number of work items in a workgroup.
    LocalSize,
    /// `kernel.num_groups`: the number of workgroups in the grid.
    NumGroups,
}

impl WorkItemQuery {
    /// Every query, in the order of the dialect's ops.
    pub const ALL: [WorkItemQuery; 6] = [
        WorkItemQuery::GlobalId,
        WorkItemQuery::LocalId,
        WorkItemQuery::GroupId,
        WorkItemQuery::GlobalSize,
        WorkItemQuery::LocalSize,
        WorkItemQuery::NumGroups,
    ];

    /// The name of the op that asks this query.
    pub fn op_name(self) -> &'static str {
        match self {
            WorkItemQuery::GlobalId => "kernel.global_id",
            WorkItemQuery::LocalId => "kernel.local_id",
            WorkItemQuery::GroupId => "kernel.group_id",
            WorkItemQuery::GlobalSize => "kernel.global_size",
            WorkItemQuery::LocalSize => "kernel.local_size",
            WorkItemQuery::NumGroups => "kernel.num_groups",
        }
    }

    /// The query `op` asks, if it is a work-item query op (whatever its `dimension`).
    pub fn of(ctx: &Context, op: Op) -> Option<WorkItemQuery> {
        let name = ctx.name_str(op);
        Self::ALL.into_iter().find(|query| query.op_name() == name)
    }

    /// The dimension a work-item query op asks about (0, 1 or 2), when its `dimension`
    /// attribute is an integer in that range.
    pub fn dimension(ctx: &Context, op: Op) -> Option<u8> {
        let dimension = ctx.attribute_kind(ctx.attribute(op, "dimension")?).as_i64()?;
        u8::try_from(dimension).ok().filter(|&d| d < 3)
    }

    /// The query `op` asks and its dimension; `None` when `op` is not a work-item query op or
    /// its dimension is missing or out of range.
    pub fn decode(ctx: &Context, op: Op) -> Option<(WorkItemQuery, u8)> {
        Some((Self::of(ctx, op)?, Self::dimension(ctx, op)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_names_a_registered_op_and_decodes() {
        let mut ctx = crate::context();
        for query in WorkItemQuery::ALL {
            assert!(ctx.find_op_name(query.op_name()).is_some(), "{} is not registered", query.op_name());
        }
        let text = "kernel.func @k() {\n  %a = kernel.global_id y\n  %b = kernel.num_groups z\n  kernel.return\n}\n";
        let module = hat_ir::parse_source(&mut ctx, "ids.hat", text).expect("parses");
        let ops = ctx.walk(module);
        let decoded: Vec<_> = ops.iter().filter_map(|&op| WorkItemQuery::decode(&ctx, op)).collect();
        assert_eq!(decoded, vec![(WorkItemQuery::GlobalId, 1), (WorkItemQuery::NumGroups, 2)]);
        let ret = *ops.iter().find(|&&op| ctx.name_str(op) == "kernel.return").unwrap();
        assert_eq!(WorkItemQuery::of(&ctx, ret), None);
    }
}
