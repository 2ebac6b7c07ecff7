//! The generated input of `hat-bench parse`: a module in MLIR's generic form that both hat and
//! `mlir-opt --allow-unregistered-dialect` accept.
//!
//! The module holds `blocks` functions (`compute.func`, unregistered in MLIR, which is fine), each
//! with a single block of exactly `ops_per_block` ops: a mix of `arith` ops and a final
//! `compute.return`. Operands are mostly recent values, with some taken from far back in the block,
//! so that dominance is checked across the whole block. The output is deterministic.

use std::fmt::Write as _;

/// A module shape: `blocks` functions of `ops_per_block` ops each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Number of functions (each one block).
    pub blocks: usize,
    /// Ops in each function's block, the terminator included.
    pub ops_per_block: usize,
}

impl Shape {
    /// The ops inside functions: `blocks * ops_per_block`.
    pub fn ops(self) -> usize {
        self.blocks * self.ops_per_block
    }

    /// Parses `BxK`, or `B` alone (then `K = total_ops / B`).
    pub fn parse(text: &str, total_ops: usize) -> Result<Shape, String> {
        let number = |s: &str| -> Result<usize, String> {
            let s = s.trim().replace('_', "");
            match s.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("bad number '{s}' in shape '{text}' (expected BLOCKSxOPS or BLOCKS)")),
            }
        };
        match text.split_once(['x', 'X']) {
            Some((b, k)) => Ok(Shape { blocks: number(b)?, ops_per_block: number(k)? }),
            None => {
                let blocks = number(text)?;
                if total_ops < blocks {
                    return Err(format!("shape '{text}': {blocks} blocks is more than --ops {total_ops}"));
                }
                Ok(Shape { blocks, ops_per_block: total_ops / blocks })
            }
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.blocks, self.ops_per_block)
    }
}

/// A small deterministic PRNG (xorshift64*), so that runs are reproducible without a dependency.
/// The generators of both benchmarks use it.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0), near enough.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }

    /// An operand from `values` (non-empty): three times in four one of the last eight, else any
    /// earlier one (uniformly, so on average half a block back).
    pub(crate) fn pick<'a, T>(&mut self, values: &'a [T]) -> &'a T {
        let n = values.len();
        if self.below(4) != 0 {
            &values[n - 1 - self.below(n.min(8))]
        } else {
            &values[self.below(n)]
        }
    }
}

/// An SSA value of the block being generated: a block argument or a numbered result.
#[derive(Clone, Copy)]
enum Val {
    Arg(u8),
    Num(u32),
}

impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::Arg(n) => write!(f, "%arg{n}"),
            Val::Num(n) => write!(f, "%{n}"),
        }
    }
}

/// The module text for `shape`.
pub fn generate(shape: Shape) -> String {
    // About 50 bytes an op.
    let mut out = String::with_capacity(shape.ops() * 56 + shape.blocks * 160 + 64);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut ints: Vec<Val> = Vec::with_capacity(shape.ops_per_block + 2);
    let mut bools: Vec<Val> = Vec::new();
    out.push_str("\"builtin.module\"() ({\n");
    for f in 0..shape.blocks {
        ints.clear();
        bools.clear();
        ints.push(Val::Arg(0));
        ints.push(Val::Arg(1));
        out.push_str("  \"compute.func\"() ({\n  ^bb0(%arg0: i32, %arg1: i32):\n");
        let body = shape.ops_per_block.saturating_sub(1);
        for i in 0..body {
            let result = Val::Num(i as u32);
            let roll = rng.below(100);
            // Results (and arith.select's condition) are only ever of earlier ops.
            let line = match roll {
                0..=19 => {
                    let value = rng.below(1000) as i64 - 500;
                    ints.push(result);
                    writeln!(out, "    {result} = \"arith.constant\"() {{value = {value} : i32}} : () -> i32")
                }
                20..=79 => {
                    let op = match roll {
                        20..=39 => "addi",
                        40..=54 => "muli",
                        55..=69 => "subi",
                        _ => "xori",
                    };
                    let (a, b) = (*rng.pick(&ints), *rng.pick(&ints));
                    ints.push(result);
                    writeln!(out, "    {result} = \"arith.{op}\"({a}, {b}) : (i32, i32) -> i32")
                }
                80..=89 => {
                    let (a, b) = (*rng.pick(&ints), *rng.pick(&ints));
                    let predicate = rng.below(10);
                    bools.push(result);
                    writeln!(
                        out,
                        "    {result} = \"arith.cmpi\"({a}, {b}) {{predicate = {predicate} : i64}} : (i32, i32) -> i1"
                    )
                }
                _ if bools.is_empty() => {
                    let (a, b) = (*rng.pick(&ints), *rng.pick(&ints));
                    bools.push(result);
                    writeln!(out, "    {result} = \"arith.cmpi\"({a}, {b}) {{predicate = 2 : i64}} : (i32, i32) -> i1")
                }
                _ => {
                    let c = *rng.pick(&bools);
                    let (a, b) = (*rng.pick(&ints), *rng.pick(&ints));
                    ints.push(result);
                    writeln!(out, "    {result} = \"arith.select\"({c}, {a}, {b}) : (i1, i32, i32) -> i32")
                }
            };
            line.expect("writing to a String");
        }
        if shape.ops_per_block > 0 {
            out.push_str("    \"compute.return\"() : () -> ()\n");
        }
        writeln!(out, "  }}) {{function_type = (i32, i32) -> (), sym_name = \"f{f}\"}} : () -> ()")
            .expect("writing to a String");
    }
    out.push_str("}) : () -> ()\n");
    out
}

/// Parses a generated module, for the tests: panics with the diagnostic if it does not parse.
#[cfg(test)]
pub(crate) fn parse_generated(ctx: &mut hat_ir::Context, text: &str) -> hat_ir::Op {
    match hat_ir::parse_source(ctx, "generated.mlir", text) {
        Ok(module) => module,
        Err(error) => {
            let diagnostic = hat_ir::Diagnostic::from(error);
            panic!("{}", hat_ir::diagnostics::render(&ctx.sources, &[diagnostic]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse() {
        assert_eq!(Shape::parse("1000x1000", 0), Ok(Shape { blocks: 1000, ops_per_block: 1000 }));
        assert_eq!(Shape::parse("10", 1_000_000), Ok(Shape { blocks: 10, ops_per_block: 100_000 }));
        assert!(Shape::parse("0x5", 0).is_err());
        assert!(Shape::parse("ax5", 0).is_err());
    }

    #[test]
    fn generated_module_parses_and_verifies() {
        let shape = Shape { blocks: 3, ops_per_block: 200 };
        let text = generate(shape);
        let mut ctx = hat_dialects::context();
        ctx.allow_unregistered = true;
        let module = parse_generated(&mut ctx, &text);
        let diagnostics = hat_ir::verify(&ctx, module);
        assert!(
            !hat_ir::diagnostics::has_errors(&diagnostics),
            "{}",
            hat_ir::diagnostics::render(&ctx.sources, &diagnostics)
        );
        // Every function holds exactly `ops_per_block` ops.
        assert_eq!(text.matches("\"compute.func\"").count(), shape.blocks);
        assert_eq!(text.matches(" = \"arith.").count(), shape.blocks * (shape.ops_per_block - 1));
        // And the printer gives it back in generic form.
        let printed = hat_ir::print_op(
            &ctx,
            module,
            hat_ir::PrintOptions { generic: true, debug_info: false, assume_verified: false },
        );
        assert!(printed.contains("\"arith.select\""));
    }
}
