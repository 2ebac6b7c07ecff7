//! `choose_workgroup_shape`: a multi-dimensional kernel that cannot observe its workgroup gets
//! a 32 x 8 one; one that can (a barrier, workgroup memory, a
//! local or group id, the workgroup size, the group count, in it or in a helper it calls) keeps
//! the declared shape, as does every kernel with the option off.

mod support;

use hat_lowering::LoweringOptions;
use support::{lower_with, spirv_val};

fn shape(body: &str, workgroup: &str, choose: bool) -> [u32; 3] {
    let text = format!(
        "kernel.func @k(%a: memref<?x?xi32>) workgroup({workgroup}) {{
  %x = kernel.global_id x
  %y = kernel.global_id y
{body}
  %v = arith.index_cast %x : index to i32
  buffer.store %v, %a[%y, %x] : memref<?x?xi32>
  kernel.return
}}"
    );
    let options = LoweringOptions {
        choose_workgroup_shape: choose,
        max_workgroup_invocations: 1024,
        max_workgroup_size: [1024, 1024, 64],
        ..LoweringOptions::default()
    };
    let module = lower_with(&text, &options).unwrap_or_else(|e| panic!("{e}\n{text}"));
    spirv_val(&module.words);
    module.entry_point("k").expect("the kernel").workgroup_size
}

#[test]
fn kernels_that_cannot_tell_get_a_32_wide_workgroup() {
    assert_eq!(shape("", "8, 8", true), [32, 8, 1]);
    assert_eq!(shape("", "16, 16", true), [32, 8, 1]);
    assert_eq!(shape("", "4, 4, 4", true), [32, 8, 1]);
    assert_eq!(shape("", "8, 3", true), [32, 8, 1]);
    let size = "  %s = kernel.global_size x";
    assert_eq!(shape(size, "8, 8", true), [32, 8, 1], "the grid's size does not depend on the workgroup");
}

#[test]
fn declared_shapes_are_kept_where_the_kernel_can_tell_or_chose_so() {
    assert_eq!(shape("", "8, 8", false), [8, 8, 1], "the option is off");
    assert_eq!(shape("", "64", true), [64, 1, 1], "one dimension");
    assert_eq!(shape("", "32, 4", true), [32, 4, 1], "already 32 wide");
    assert_eq!(shape("", "1, 64", true), [1, 64, 1], "a column per subgroup: deliberate");
    assert_eq!(shape("", "2, 32", true), [2, 32, 1], "two columns per subgroup: deliberate");
    assert_eq!(shape("", "3, 8", true), [3, 8, 1], "under 4 wide: kept");
    for query in ["local_id x", "group_id y", "local_size x", "num_groups x"] {
        let body = format!("  %q = kernel.{query}");
        assert_eq!(shape(&body, "8, 8", true), [8, 8, 1], "{query}");
    }
    assert_eq!(shape("  kernel.barrier", "8, 8", true), [8, 8, 1], "a barrier");
    let local = "  %t = kernel.local_alloc : memref<64xi32>";
    assert_eq!(shape(local, "8, 8", true), [8, 8, 1], "workgroup memory");
}
