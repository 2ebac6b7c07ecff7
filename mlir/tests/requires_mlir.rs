//! With `HAT_REQUIRE_MLIR=1` (CI), a build of this crate without its `mlir` feature — whose tests
//! would all be compiled out for want of LLVM — fails instead of passing silently.

#[test]
fn the_bridge_is_compiled_in_when_it_is_required() {
    let required = std::env::var("HAT_REQUIRE_MLIR").as_deref() == Ok("1");
    assert!(
        !required || cfg!(feature = "mlir"),
        "HAT_REQUIRE_MLIR=1, but hat-mlir is built without its `mlir` feature: cargo test -p hat-mlir --features mlir"
    );
}
