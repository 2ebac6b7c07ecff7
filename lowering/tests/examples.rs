//! Every kernel of every example program (examples/*.hat) lowers to a module that passes the
//! validator; the disassembly and the entry points' artifacts are snapshotted, one file per
//! example. When the `spirv-val` tool is installed, it checks every module too. The modules are
//! deterministic: lowering an example again, in a fresh context, gives the same words.

mod support;

use hat_lowering::{disassemble, lower_module, LoweringOptions};
use std::fmt::Write;
use std::path::Path;

fn examples() -> Vec<std::path::PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files: Vec<_> = std::fs::read_dir(&folder)
        .expect("examples/ exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|e| e == "hat"))
        .collect();
    files.sort();
    files
}

/// The artifact of each entry point, then the disassembly.
fn describe(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("readable example");
    let mut ctx = hat_dialects::context();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let module = hat_ir::parse_source(&mut ctx, &name, &text).expect("the example parses");
    let verified = hat_ir::verify_module(&ctx, module).expect("the example verifies");
    let spirv = match lower_module(&ctx, verified, &LoweringOptions::default()) {
        Ok(spirv) => spirv,
        Err(diagnostics) => {
            panic!("{name} does not lower:\n{}", hat_ir::diagnostics::render_short(&ctx.sources, &diagnostics))
        }
    };
    hat_lowering::validate(&spirv.words).expect("lower_module validates");
    support::spirv_val(&spirv.words);
    let mut out = String::new();
    for entry in &spirv.entry_points {
        writeln!(
            out,
            "; entry point {} workgroup {:?} barrier {} whole-grid constant {:?}",
            entry.name, entry.workgroup_size, entry.has_barrier, entry.whole_grid_constant
        )
        .unwrap();
        for binding in &entry.bindings {
            writeln!(
                out,
                ";   binding {} <- parameter #{}: {:?} {:?} read {} write {}",
                binding.binding,
                binding.parameter,
                binding.element,
                binding.shape,
                binding.access.read,
                binding.access.write
            )
            .unwrap();
        }
        let push = &entry.push_constants;
        writeln!(out, ";   push constants: {} bytes, grid at {}", push.size, push.grid_offset).unwrap();
        for slot in &push.scalars {
            writeln!(out, ";     parameter #{} at {}: {:?}", slot.parameter, slot.offset, slot.encoding).unwrap();
        }
        for slot in &push.dims {
            writeln!(
                out,
                ";     size {} of parameter #{} at {}: {:?}",
                slot.dimension, slot.parameter, slot.offset, slot.encoding
            )
            .unwrap();
        }
    }
    out.push_str(&disassemble(&spirv.words).expect("disassembles"));
    out
}

#[test]
fn every_example_kernel_lowers_and_validates() {
    if !support::spirv_tools_linked() {
        return;
    }
    let files = examples();
    assert_eq!(files.len(), 20, "the 18 scenarios (02 has two files) and the separable blur (19)");
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let described = describe(&path);
        insta::assert_snapshot!(name, described);
    }
}

/// The words of `path`'s module, lowered in a fresh context.
fn words(path: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(path).expect("readable example");
    let mut ctx = hat_dialects::context();
    let module = hat_ir::parse_source(&mut ctx, "example.hat", &text).expect("the example parses");
    let verified = hat_ir::verify_module(&ctx, module).expect("the example verifies");
    lower_module(&ctx, verified, &LoweringOptions::default()).expect("the example lowers").words
}

#[test]
fn lowering_is_deterministic() {
    for path in examples() {
        let first = words(&path);
        for _ in 0..3 {
            assert_eq!(words(&path), first, "{}", path.display());
        }
    }
}
