//! Hat IR written as MLIR's generic form, with every location: the text that MLIR parses in
//! `--to-mlir` (see [`crate::export`]).
//!
//! Invariants:
//! - every op is written generically (`"dialect.op"(...) ... : (T) -> U`), so the text names each
//!   op exactly as hat does, whatever MLIR knows of it;
//! - values and blocks are numbered once over the whole module (`%v0`, `^b0`), so no name is
//!   reused in any scope MLIR may see;
//! - an op's location is its `.hat` file:line:col (`loc("f.hat":3:5)`), or `loc(unknown)`;
//! - a region argument with a source name gets a `NameLoc` (`loc("data")`): that is how the name
//!   reaches MLIR, and how [`crate::import`] brings it back.

use hat_ir::printer::{attribute_to_string, type_to_string};
use hat_ir::{Block, Context, Op, Region, Value};
use std::collections::HashMap;
use std::fmt::Write;

/// Writes `module` (and everything in it) in MLIR's generic form with locations.
pub fn write_module(ctx: &Context, module: Op) -> String {
    let mut writer = Writer { ctx, out: String::new(), values: HashMap::new(), blocks: HashMap::new() };
    writer.op(module, 0);
    writer.out
}

struct Writer<'c> {
    ctx: &'c Context,
    out: String,
    values: HashMap<Value, usize>,
    blocks: HashMap<Block, usize>,
}

impl Writer<'_> {
    fn value(&mut self, value: Value) -> String {
        let next = self.values.len();
        format!("%v{}", self.values.entry(value).or_insert(next))
    }

    fn block(&mut self, block: Block) -> String {
        let next = self.blocks.len();
        format!("^b{}", self.blocks.entry(block).or_insert(next))
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn op(&mut self, op: Op, depth: usize) {
        // As deep as hat's parser reads (hat_ir::parser::MAX_NESTING), on a stack that grows.
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.op_unguarded(op, depth))
    }

    fn op_unguarded(&mut self, op: Op, depth: usize) {
        let ctx = self.ctx;
        self.indent(depth);
        let results: Vec<Value> = ctx.results(op).collect();
        if !results.is_empty() {
            let names: Vec<String> = results.iter().map(|&r| self.value(r)).collect();
            self.out.push_str(&names.join(", "));
            self.out.push_str(" = ");
        }
        write_string(&mut self.out, ctx.name_str(op));
        let operands: Vec<String> = ctx.operands(op).iter().map(|&v| self.value(v)).collect();
        let _ = write!(self.out, "({})", operands.join(", "));
        if !ctx.successors(op).is_empty() {
            let successors: Vec<String> = ctx.successors(op).iter().map(|&b| self.block(b)).collect();
            let _ = write!(self.out, "[{}]", successors.join(", "));
        }
        if !ctx.regions(op).is_empty() {
            self.out.push_str(" (");
            for (i, &region) in ctx.regions(op).iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.region(region, depth);
            }
            self.out.push(')');
        }
        if !ctx.attributes(op).is_empty() {
            self.out.push_str(" {");
            for (i, &(name, value)) in ctx.attributes(op).iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                write_attribute_name(&mut self.out, ctx.ident_str(name));
                if !matches!(ctx.attribute_kind(value), hat_ir::AttributeKind::Unit) {
                    self.out.push_str(" = ");
                    self.out.push_str(&attribute_to_string(ctx, value));
                }
            }
            self.out.push('}');
        }
        let operand_types: Vec<String> =
            ctx.operands(op).iter().map(|&v| type_to_string(ctx, ctx.value_type(v))).collect();
        let result_types: Vec<String> = results.iter().map(|&v| type_to_string(ctx, ctx.value_type(v))).collect();
        let _ = write!(self.out, " : ({}) -> ({})", operand_types.join(", "), result_types.join(", "));
        self.out.push(' ');
        self.location(ctx.location(op));
        self.out.push('\n');
    }

    fn region(&mut self, region: Region, depth: usize) {
        let ctx = self.ctx;
        self.out.push_str("{\n");
        for &block in ctx.region_blocks(region) {
            self.indent(depth);
            let label = self.block(block);
            self.out.push_str(&label);
            let arguments = ctx.block_arguments(block);
            if !arguments.is_empty() {
                self.out.push('(');
                for (i, &argument) in arguments.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    let name = self.value(argument);
                    let _ = write!(self.out, "{name}: {}", type_to_string(ctx, ctx.value_type(argument)));
                    if let Some(source_name) = ctx.argument_name(argument).filter(|name| printed_name(name)) {
                        self.out.push_str(" loc(");
                        write_string(&mut self.out, source_name);
                        self.out.push(')');
                    }
                }
                self.out.push(')');
            }
            self.out.push_str(":\n");
            for op in ctx.block_ops(block) {
                self.op(op, depth + 1);
            }
        }
        self.indent(depth);
        self.out.push('}');
    }

    fn location(&mut self, location: hat_ir::Location) {
        match self.ctx.sources.file_line_col(location) {
            Some((file, line, column)) => {
                self.out.push_str("loc(");
                write_string(&mut self.out, file);
                let _ = write!(self.out, ":{line}:{column})");
            }
            None => self.out.push_str("loc(unknown)"),
        }
    }
}

/// Whether hat's printer prints an argument by its source name (`hat_ir::printer`'s rule): a
/// valid value name that is not one the printer makes (`N`, `argN`). Only those names are
/// visible, so only those go to MLIR.
fn printed_name(name: &str) -> bool {
    let all_digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    hat_ir::parser::is_value_name(name) && !all_digits(name) && !name.strip_prefix("arg").is_some_and(all_digits)
}

/// An attribute's name in a dictionary: bare when MLIR reads it bare, quoted otherwise.
fn write_attribute_name(out: &mut String, name: &str) {
    let mut bytes = name.bytes();
    let bare = bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'));
    if bare {
        out.push_str(name);
    } else {
        write_string(out, name);
    }
}

/// A string literal as MLIR writes one: `"`, `\` and non-printable bytes escaped as `\XX`.
pub fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for byte in text.bytes() {
        match byte {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(byte as char);
            }
            b' '..=b'~' => out.push(byte as char),
            _ => {
                let _ = write!(out, "\\{byte:02X}");
            }
        }
    }
    out.push('"');
}
