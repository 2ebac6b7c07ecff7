//! The kernel-effects analysis through a vendor's ops (`hat_test_dialects::vendor` (test-dialects/src/vendor.rs)), which no hat
//! code knows by name: a `vendor.repeat` counted loop and a `vendor.invoke` call of a
//! `kernel.helper` inside a kernel. The loop's variable is bounded through its
//! `LoopLikeOpInterface`, the call followed through its `CallOpInterface`, so the analysis proves
//! the same full write as with `scf.for` and `kernel.call`.

use hat_test_dialects::vendor as vendor_dialect;

use hat_passes::transfers::kernel_effects::KernelEffects;

/// Each work item writes `trips` consecutive elements of `%b` from `4 × id`, through a helper.
fn program(trips: u32) -> String {
    format!(
        r#"
kernel.helper @put(%b: memref<64xi32>, %at: index, %v: i32) {{
  buffer.store %v, %b[%at] : memref<64xi32>
  kernel.return
}}
kernel.func @k(%b: memref<64xi32>, %unused: memref<64xi32>, %v: i32) workgroup(16) {{
  %i = kernel.global_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %trips = arith.constant {trips} : index
  %base = arith.muli %i, %c4 : index
  "vendor.repeat"(%c0, %trips, %c1) ({{
  ^bb0(%k: index):
    %at = arith.addi %base, %k : index
    "vendor.invoke"(%b, %at, %v) {{target = @put}} : (memref<64xi32>, index, i32) -> ()
    "vendor.next"() : () -> ()
  }}) : (index, index, index) -> ()
  kernel.return
}}
"#
    )
}

fn effects(trips: u32) -> KernelEffects {
    let mut ctx = vendor_dialect::context();
    let module = hat_ir::parse_source(&mut ctx, "vendor.hat", &program(trips)).expect("parses");
    let errors = hat_ir::verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    let kernel =
        ctx.walk(module).into_iter().find(|&op| hat_ir::verifier::symbol_name(&ctx, op) == Some("k")).expect("@k");
    KernelEffects::of(&ctx, kernel)
}

#[test]
fn a_vendor_loop_and_call_in_a_kernel() {
    let grid = [Some(16)];
    let shape = [Some(64)];
    let four = effects(4);
    assert_eq!(four.params[0].access_name(), "write");
    assert_eq!(four.params[1].access_name(), "none");
    assert!(four.writes_every_element(0, &grid, &shape));
    assert_eq!(four.written_elements(0, &grid, &shape), Some(0..64));
    let two = effects(2);
    assert!(!two.writes_every_element(0, &grid, &shape), "two of every four elements");
    assert_eq!(two.written_elements(0, &grid, &shape), Some(0..62));
}
