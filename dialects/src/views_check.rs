//! Every typed view of the hat dialects, checked against the registered definition of its op
//! (see [`hat_ir::view::check_view`]).

#[cfg(test)]
mod tests {
    use crate::{arith_views, buffer, compute, kernel, scf};
    use hat_ir::view::check_view;

    #[test]
    fn every_view_matches_its_definition() {
        let ctx = crate::context();
        let results = [
            check_view::<arith_views::ConstantOp>(&ctx),
            check_view::<arith_views::SelectOp>(&ctx),
            check_view::<scf::ForOp>(&ctx),
            check_view::<scf::IfOp>(&ctx),
            check_view::<scf::WhileOp>(&ctx),
            check_view::<scf::YieldOp>(&ctx),
            check_view::<scf::ConditionOp>(&ctx),
            check_view::<buffer::AllocOp>(&ctx),
            check_view::<buffer::DeallocOp>(&ctx),
            check_view::<buffer::LoadOp>(&ctx),
            check_view::<buffer::StoreOp>(&ctx),
            check_view::<buffer::DimOp>(&ctx),
            check_view::<buffer::CopyOp>(&ctx),
            check_view::<buffer::ToDeviceOp>(&ctx),
            check_view::<buffer::FromDeviceOp>(&ctx),
            check_view::<buffer::BeforeHostReadOp>(&ctx),
            check_view::<buffer::AfterHostReadOp>(&ctx),
            check_view::<buffer::BeforeHostWriteOp>(&ctx),
            check_view::<buffer::AfterHostWriteOp>(&ctx),
            check_view::<compute::FuncOp>(&ctx),
            check_view::<compute::ReturnOp>(&ctx),
            check_view::<compute::CallOp>(&ctx),
            check_view::<compute::HostFuncOp>(&ctx),
            check_view::<compute::SyncOp>(&ctx),
            check_view::<compute::DispatchOp>(&ctx),
            check_view::<kernel::FuncOp>(&ctx),
            check_view::<kernel::HelperOp>(&ctx),
            check_view::<kernel::ReturnOp>(&ctx),
            check_view::<kernel::CallOp>(&ctx),
            check_view::<kernel::BarrierOp>(&ctx),
            check_view::<kernel::LocalAllocOp>(&ctx),
            check_view::<kernel::AtomicRmwOp>(&ctx),
        ];
        let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn a_view_with_the_wrong_region_count_is_reported() {
        hat_ir::op_view! {
            struct WrongFor = "scf.for" { operands: [], regions: [] }
        }
        hat_ir::op_view! {
            struct Unknown = "nope.op" { operands: [], regions: [] }
        }
        let ctx = crate::context();
        assert!(check_view::<WrongFor>(&ctx).unwrap_err().contains("0 region(s), the definition 1"));
        assert!(check_view::<Unknown>(&ctx).unwrap_err().contains("not registered"));
    }
}
