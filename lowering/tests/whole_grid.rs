//! The whole-grid specialisation constant (`EntryPoint::whole_grid_constant`): plain kernels,
//! kernels with a barrier and coarsened kernels check their work items against the grid with
//! the constant or'ed in, declared once per module as `OpSpecConstantFalse` with `SpecId 0`;
//! wide kernels do not use it. Specialised `true` by the Khronos optimiser (as a driver does),
//! each module still validates and no longer reads the grid's sizes; left `false`, it
//! still does (the check). Results on a device, with grids that are and are not whole: the Vulkan
//! backend's `tests/whole_grid.rs`.

mod support;

use hat_lowering::{disassemble, DeviceFeatures, LoweringOptions, SpirvModule, WHOLE_GRID_SPEC_ID};
use std::process::Command;
use support::{lower_with, spirv_val};

/// No comparison but the grid check: a load, an add of the local id, a store.
const PLAIN: &str = r#"
kernel.func @k(%data: memref<?xi32>) workgroup(64) {
  %i = kernel.global_id x
  %l = kernel.local_id x
  %li = arith.index_cast %l : index to i32
  %v = buffer.load %data[%i] : memref<?xi32>
  %w = arith.addi %v, %li : i32
  buffer.store %w, %data[%i] : memref<?xi32>
  kernel.return
}
"#;

/// A barrier: every access to a storage buffer is guarded by the grid check.
const BARRIER: &str = r#"
kernel.func @k(%data: memref<?xi32>) workgroup(4) {
  %tile = kernel.local_alloc : memref<4xi32>
  %i = kernel.global_id x
  %l = kernel.local_id x
  %v = buffer.load %data[%i] : memref<?xi32>
  buffer.store %v, %tile[%l] : memref<4xi32>
  kernel.barrier
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %l1 = arith.addi %l, %c1 : index
  %n = arith.remui %l1, %c4 : index
  %t = buffer.load %tile[%n] : memref<4xi32>
  buffer.store %t, %data[%i] : memref<?xi32>
  kernel.return
}
"#;

/// A stencil (two loads of `%src` per work item), coarsened with `coarsen_rows`.
const STENCIL: &str = r#"
kernel.func @k(%src: memref<64x64xi32>, %dst: memref<64x64xi32>) workgroup(16, 8) {
  %x = kernel.global_id x
  %y = kernel.global_id y
  %c1 = arith.constant 1 : index
  %c63 = arith.constant 63 : index
  %x1 = arith.addi %x, %c1 : index
  %xr = arith.minui %x1, %c63 : index
  %a = buffer.load %src[%y, %x] : memref<64x64xi32>
  %b = buffer.load %src[%y, %xr] : memref<64x64xi32>
  %ab = arith.addi %a, %b : i32
  buffer.store %ab, %dst[%y, %x] : memref<64x64xi32>
  kernel.return
}
"#;

/// Every access at the global id in x: wide with `vectorize_accesses`.
const WIDE: &str = r#"
kernel.func @k(%data: memref<?xi32>) workgroup(64) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<?xi32>
  %w = arith.addi %v, %v : i32
  buffer.store %w, %data[%i] : memref<?xi32>
  kernel.return
}
"#;

fn options() -> LoweringOptions {
    LoweringOptions { features: DeviceFeatures::all(), ..LoweringOptions::default() }
}

fn lower(text: &str, options: &LoweringOptions) -> SpirvModule {
    let module = lower_with(text, options).unwrap_or_else(|e| panic!("{e}\n{text}"));
    spirv_val(&module.words);
    module
}

/// `spirv-opt` with the constant frozen at `whole` and the usual optimisations, then
/// `spirv-val`; the optimised disassembly. `None` (printed) without the tools, a panic under
/// `HAT_REQUIRE_VULKAN=1`.
fn specialised(module: &SpirvModule, whole: bool) -> Option<String> {
    let found = Command::new("spirv-opt").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        if std::env::var("HAT_REQUIRE_VULKAN").as_deref() == Ok("1") {
            panic!("HAT_REQUIRE_VULKAN=1, but the spirv-opt tool is not installed (Debian package spirv-tools)");
        }
        eprintln!("skipped: spirv-opt is not installed (Debian package spirv-tools)");
        return None;
    }
    let stem = std::env::temp_dir().join(format!(
        "hat-whole-grid-{}-{}-{whole}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
    ));
    let (input, output) = (stem.with_extension("spv"), stem.with_extension("opt.spv"));
    std::fs::write(&input, module.to_bytes()).unwrap();
    let run = Command::new("spirv-opt")
        .arg(format!("--target-env={}", hat_lowering::TARGET_ENV))
        .arg(format!("--set-spec-const-default-value={WHOLE_GRID_SPEC_ID}:{whole}"))
        .args(["--freeze-spec-const", "-O"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output()
        .expect("spirv-opt runs");
    assert!(run.status.success(), "spirv-opt fails: {}", String::from_utf8_lossy(&run.stderr));
    let bytes = std::fs::read(&output).unwrap();
    let _ = (std::fs::remove_file(&input), std::fs::remove_file(&output));
    let words: Vec<u32> = bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    spirv_val(&words);
    Some(disassemble(&words).unwrap())
}

/// Reads of the push constants: the grid's sizes are the only ones these kernels read, and
/// only to check their work items against the grid.
fn grid_reads(asm: &str) -> usize {
    asm.lines().filter(|l| l.contains("OpAccessChain %_ptr_PushConstant")).count()
}

#[test]
fn plain_barrier_and_coarsened_kernels_check_the_grid_unless_specialised_whole() {
    if !support::spirv_tools_linked() {
        return;
    }
    let coarse = LoweringOptions { coarsen_rows: 4, ..options() };
    for (name, text, options) in
        [("plain", PLAIN, options()), ("barrier", BARRIER, options()), ("stencil", STENCIL, coarse)]
    {
        let module = lower(text, &options);
        let entry = module.entry_point("k").unwrap();
        assert_eq!(entry.whole_grid_constant, Some(WHOLE_GRID_SPEC_ID), "{name}");
        if name == "stencil" {
            assert_eq!(entry.rows_per_invocation, 4, "the stencil is coarsened");
        }
        let asm = disassemble(&module.words).unwrap();
        assert_eq!(asm.matches("OpSpecConstantFalse").count(), 1, "{name}:\n{asm}");
        assert!(asm.contains(&format!("SpecId {WHOLE_GRID_SPEC_ID}")), "{name}:\n{asm}");
        let (Some(whole), Some(any)) = (specialised(&module, true), specialised(&module, false)) else { return };
        assert_eq!(grid_reads(&whole), 0, "{name}, specialised whole:\n{whole}");
        assert!(grid_reads(&any) > 0, "{name}, not specialised:\n{any}");
    }
}

#[test]
fn wide_kernels_do_not_use_the_constant() {
    if !support::spirv_tools_linked() {
        return;
    }
    let module = lower(WIDE, &LoweringOptions { vectorize_accesses: true, ..options() });
    let entry = module.entry_point("k").unwrap();
    assert_eq!(entry.items_per_invocation, 4, "the kernel is wide");
    assert_eq!(entry.whole_grid_constant, None);
    assert!(!disassemble(&module.words).unwrap().contains("OpSpecConstant"));
}

#[test]
fn one_constant_serves_every_entry_point_of_a_module() {
    if !support::spirv_tools_linked() {
        return;
    }
    let two = format!("{PLAIN}{}", BARRIER.replace("@k", "@j"));
    let module = lower(&two, &options());
    for name in ["k", "j"] {
        assert_eq!(module.entry_point(name).unwrap().whole_grid_constant, Some(WHOLE_GRID_SPEC_ID));
    }
    assert_eq!(disassemble(&module.words).unwrap().matches("OpSpecConstantFalse").count(), 1);
}
