//! The programs `hat-bench gpu` runs, and how each is compiled before it runs.
//!
//! - The square is `tools/hat-bench/programs/square-f32.hat` (one program for every length:
//!   its buffers have a dynamic size).
//! - Life is `examples/06-life.hat` itself, rescaled: every `memref<16x16xi32>` becomes
//!   `memref<NxNxi32>` and the grid constant 16 becomes N. Nothing else changes (kernel,
//!   workgroup size, loop, the copy after an odd count), so the benchmark measures the example.
//! - The dispatch chains are the three entries of `tools/hat-bench/programs/chain.hat`.
//!
//! A program is parsed, verified, its entry marked as one (so that `inline` keeps it, as
//! `hat-opt --run` does), and then the pipeline of a [`Plan`] runs on it: `default` (what
//! `hat-opt --run` runs) or `insert-transfers{strategy=jic}` (`hat-opt --run --strategy=jic`).

use hat_ir::pass::{PassManager, PassManagerOptions};
use hat_ir::{parse_source, verify_module, Context, Op};

/// The square's source.
pub const SQUARE: &str = include_str!("../../programs/square-f32.hat");
/// The dispatch chains' source.
pub const CHAIN: &str = include_str!("../../programs/chain.hat");
/// The Life example, at 16 x 16.
pub const LIFE_EXAMPLE: &str = include_str!("../../../../examples/06-life.hat");

/// How a program is compiled: the pipeline `hat-opt --run` adds for a strategy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// `default`: inline, canonicalize, the static transfer plan, hoisting, canonicalize.
    Default,
    /// `insert-transfers{strategy=jic}`: every buffer argument in before and out after every
    /// dispatch.
    Jic,
}

impl Plan {
    /// The pass pipeline.
    pub fn pipeline(self) -> &'static str {
        match self {
            Plan::Default => "default",
            Plan::Jic => "insert-transfers{strategy=jic}",
        }
    }
}

/// `examples/06-life.hat` on an `n` x `n` grid; an error if the example no longer has the
/// shapes this rewrites (so a changed example fails loudly instead of running at 16 x 16).
pub fn life(n: usize) -> Result<String, String> {
    let small_type = "memref<16x16xi32>";
    let small_size = "arith.constant 16 : index";
    let types = LIFE_EXAMPLE.matches(small_type).count();
    let sizes = LIFE_EXAMPLE.matches(small_size).count();
    if types == 0 || sizes != 1 {
        return Err(format!(
            "examples/06-life.hat has {types} '{small_type}' and {sizes} '{small_size}': the benchmark rescales \
             exactly one grid constant and the grid's type"
        ));
    }
    Ok(LIFE_EXAMPLE
        .replace(small_type, &format!("memref<{n}x{n}xi32>"))
        .replace(small_size, &format!("arith.constant {n} : index")))
}

/// [`life`] with workgroups of `x` by `y` work items instead of the example's 8 by 8 (to see
/// what the workgroup's shape costs; the benchmark's figures are the example's own).
pub fn life_with_workgroup(n: usize, (x, y): (u32, u32)) -> Result<String, String> {
    let text = life(n)?;
    let example = "workgroup(8, 8)";
    if text.matches(example).count() != 1 {
        return Err(format!("examples/06-life.hat has no single '{example}' to replace"));
    }
    Ok(text.replace(example, &format!("workgroup({x}, {y})")))
}

/// Parses and verifies `text`, marks `entry` as an entry, and runs the plan's pipeline.
pub fn compile(name: &str, text: &str, entry: &str, plan: Plan) -> Result<(Context, Op), String> {
    compile_with_statistics(name, text, entry, plan).map(|(ctx, module, _)| (ctx, module))
}

/// The statistics of a pipeline's passes: per pass, its (name, value) pairs.
pub type Statistics = Vec<(String, Vec<(String, u64)>)>;

/// [`compile`], and the passes' statistics.
pub fn compile_with_statistics(
    name: &str,
    text: &str,
    entry: &str,
    plan: Plan,
) -> Result<(Context, Op, Statistics), String> {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, name, text).map_err(|e| format!("{name} does not parse: {e:?}"))?;
    if let Err(errors) = verify_module(&ctx, module) {
        return Err(hat_ir::diagnostics::render(&ctx.sources, &errors));
    }
    mark_entry(&mut ctx, module, entry)?;
    let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
    manager.add_pipeline(&hat_passes::registry(), plan.pipeline()).map_err(|e| e.to_string())?;
    if let Err(errors) = manager.run(&mut ctx, module) {
        return Err(format!("{name}, {}: {}", plan.pipeline(), hat_ir::diagnostics::render(&ctx.sources, &errors)));
    }
    Ok((ctx, module, manager.statistics().to_vec()))
}

/// Gives the compute function `entry` the unit `entry` attribute, as `hat-opt --run` does, so
/// that the pipeline keeps it.
fn mark_entry(ctx: &mut Context, module: Op, entry: &str) -> Result<(), String> {
    let function = ctx
        .body_ops(module)
        .into_iter()
        .find(|&op| hat_ir::verifier::symbol_name(ctx, op) == Some(entry))
        .ok_or_else(|| format!("the program has no '@{entry}'"))?;
    let callable = ctx.interface::<dyn hat_ir::interfaces::CallableOpInterface>(function);
    if callable.is_some_and(|c| !c.is_entry(ctx, function)) {
        let key = ctx.ident("entry");
        let unit = ctx.unit_attr();
        ctx.set_attribute(function, key, unit);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn life_is_the_example_at_another_size() {
        let text = life(64).unwrap();
        assert!(!text.contains("16x16xi32"));
        assert!(text.contains("memref<64x64xi32>"));
        assert!(text.contains("arith.constant 64 : index"));
        assert_eq!(text.lines().count(), LIFE_EXAMPLE.lines().count());
        let wide = life_with_workgroup(64, (16, 16)).unwrap();
        assert_eq!(wide.replace("workgroup(16, 16)", "workgroup(8, 8)"), text);
    }

    #[test]
    fn every_program_compiles_under_both_plans() {
        for plan in [Plan::Default, Plan::Jic] {
            compile("square-f32.hat", SQUARE, "main", plan).unwrap();
            compile("life.hat", &life(8192).unwrap(), "main", plan).unwrap();
            for entry in ["chain", "independent", "synced"] {
                compile("chain.hat", CHAIN, entry, plan).unwrap();
            }
        }
    }
}
