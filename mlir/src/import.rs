//! `--from-mlir`: MLIR text as a hat module.
//!
//! MLIR parses and verifies the text (its errors keep their file:line:col). A module in hat's
//! subset — upstream `arith`, `math`, `scf`, and hat's own dialects, as `--to-mlir` writes them —
//! is then read op for op ([`read_ops`]); one with upstream host or GPU code (`func`, `memref`,
//! `gpu`) is translated to hat's dialects instead ([`crate::upstream_import`]).
//!
//! Invariants:
//! - every imported op is located in the `.mlir` file (its MLIR location, where that is a
//!   position in it), so hat's verifier and passes report there;
//! - a region argument with a `NameLoc` gets that name back, so hat's own export reads back to
//!   exactly the program it came from;
//! - anything outside the subset is a diagnostic at its op naming it; nothing panics.

use crate::session::{MlirError, Session};
use hat_ir::location::SourceId;
use hat_ir::{Context, Diagnostic, Location, Op};
use melior::ir::block::BlockLike;
use melior::ir::operation::OperationLike;
use melior::ir::RegionLike;
use melior::ir::ValueLike;
use melior::ir::{BlockRef, OperationRef, RegionRef};
use std::collections::HashMap;
use std::fmt::Write;

/// How deep ops may nest in an imported module: within what hat's parser reads
/// ([`hat_ir::parser::MAX_NESTING`] counts regions and blocks as well as ops).
pub const MAX_DEPTH: usize = hat_ir::parser::MAX_NESTING / 4;

/// The MLIR text `bytes` (named `name`) as a hat module in `ctx`.
pub fn import(ctx: &mut Context, name: &str, bytes: &[u8]) -> Result<Op, Vec<Diagnostic>> {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let source = ctx.sources.add(name, text.as_str());
    let start = Location::new(source, 0);
    // MLIR's parser recurses per region: text nested deeper than hat reads is refused before it
    // reaches MLIR, whose stack it could overflow.
    if let Some(offset) = too_deep(&text) {
        let message = format!("regions nested more than {MAX_DEPTH} deep, deeper than hat reads");
        return Err(vec![Diagnostic::error(Location::new(source, offset as u32), message)]);
    }
    let session = Session::new(true);
    let mut module = session.parse(name, &text).map_err(|errors| located(ctx, source, start, errors))?;
    session.verify(&module).map_err(|errors| located(ctx, source, start, errors))?;
    if crate::upstream_import::is_upstream(&module) {
        crate::upstream_import::outline(&session, &mut module).map_err(|errors| located(ctx, source, start, errors))?;
        return crate::upstream_import::read(ctx, source, &module);
    }
    read_ops(ctx, source, module.as_operation())
}

/// The offset of the first `{` that opens a region nested deeper than [`MAX_DEPTH`], outside
/// string literals and comments, if one does.
fn too_deep(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i);
                }
            }
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// MLIR's errors as hat diagnostics in the `.mlir` source.
pub(crate) fn located(ctx: &Context, source: SourceId, fallback: Location, errors: Vec<MlirError>) -> Vec<Diagnostic> {
    let file = ctx.sources.file(source).name().to_string();
    errors
        .into_iter()
        .map(|error| match &error.position {
            Some((f, line, column)) if *f == file => {
                let location = crate::locations::location_in(ctx, source, *line, *column).unwrap_or(fallback);
                Diagnostic::error(location, error.message)
            }
            _ => Diagnostic::error(fallback, error.to_string()),
        })
        .collect()
}

/// Reads the MLIR module `top` (in hat's subset) into `ctx`, locating ops in `source`.
pub fn read_ops(ctx: &mut Context, source: SourceId, top: OperationRef<'_, '_>) -> Result<Op, Vec<Diagnostic>> {
    let mut reader = Reader {
        ctx,
        source,
        out: String::new(),
        values: HashMap::new(),
        blocks: HashMap::new(),
        positions: Vec::new(),
        names: Vec::new(),
        errors: Vec::new(),
    };
    reader.op(top, 0);
    let Reader { out, positions, names, errors, .. } = reader;
    if !errors.is_empty() {
        return Err(errors);
    }
    let module = parse_translation(ctx, source, &out)?;
    // Same order as `Reader::op`: the op, then its regions' blocks' ops, depth first.
    let mut ops = Vec::new();
    collect(ctx, module, &mut ops);
    for (op, location) in ops.into_iter().zip(positions) {
        ctx.set_location(op, location);
    }
    let mut arguments = Vec::new();
    collect_arguments(ctx, module, &mut arguments);
    for (argument, name) in arguments.into_iter().zip(names) {
        if let Some(name) = name {
            ctx.set_argument_name(argument, &name);
        }
    }
    Ok(module)
}

/// Parses the hat text a reader wrote. It is the bridge's own output, so a failure is an
/// internal error of the bridge (at the start of the MLIR file), never the user's.
pub(crate) fn parse_translation(ctx: &mut Context, source: SourceId, text: &str) -> Result<Op, Vec<Diagnostic>> {
    hat_ir::parse_source(ctx, "<from-mlir>", text).map_err(|error| {
        vec![Diagnostic::error(
            Location::new(source, 0),
            format!(
                "internal error of the MLIR bridge: hat could not read its translation: {}",
                Diagnostic::from(error).message
            ),
        )]
    })
}

fn collect(ctx: &Context, op: Op, out: &mut Vec<Op>) {
    out.push(op);
    for &region in ctx.regions(op) {
        for &block in ctx.region_blocks(region) {
            for inner in ctx.block_ops(block) {
                collect(ctx, inner, out);
            }
        }
    }
}

pub(crate) fn collect_arguments(ctx: &Context, op: Op, out: &mut Vec<hat_ir::Value>) {
    for &region in ctx.regions(op) {
        for &block in ctx.region_blocks(region) {
            out.extend_from_slice(ctx.block_arguments(block));
            for inner in ctx.block_ops(block) {
                collect_arguments(ctx, inner, out);
            }
        }
    }
}

/// Writes an MLIR module as hat's generic text, remembering what the text cannot carry.
struct Reader<'x> {
    ctx: &'x Context,
    source: SourceId,
    out: String,
    values: HashMap<usize, usize>,
    blocks: HashMap<usize, usize>,
    /// Each op's location, in visiting order.
    positions: Vec<Location>,
    /// Each region argument's `NameLoc` name, in visiting order (ops' regions first, nested after).
    names: Vec<Option<String>>,
    errors: Vec<Diagnostic>,
}

/// Attributes MLIR gives ops that hat's ops do not have, with the value that means "nothing":
/// dropped when they have it, refused otherwise.
const DEFAULTED: &[(&str, &str)] = &[("overflowFlags", "#arith.overflow<none>"), ("fastmath", "#arith.fastmath<none>")];

impl Reader<'_> {
    fn location(&self, location: melior::ir::Location<'_>) -> Location {
        let file = self.ctx.sources.file(self.source).name();
        match crate::session::position(location) {
            Some((f, line, column)) if f == file => crate::locations::location_in(self.ctx, self.source, line, column)
                .unwrap_or(Location::new(self.source, 0)),
            _ => Location::new(self.source, 0),
        }
    }

    fn value(&mut self, raw: usize) -> String {
        let next = self.values.len();
        format!("%{}", self.values.entry(raw).or_insert(next))
    }

    fn block(&mut self, raw: usize) -> String {
        let next = self.blocks.len();
        format!("^b{}", self.blocks.entry(raw).or_insert(next))
    }

    fn op(&mut self, op: OperationRef<'_, '_>, depth: usize) {
        if depth > MAX_DEPTH {
            let location = self.location(op.location());
            let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
            self.errors.push(Diagnostic::error(
                location,
                format!("'{name}' is nested more than {MAX_DEPTH} ops deep, deeper than hat reads"),
            ));
            return;
        }
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.op_unguarded(op, depth))
    }

    fn op_unguarded(&mut self, op: OperationRef<'_, '_>, depth: usize) {
        let location = self.location(op.location());
        self.positions.push(location);
        let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        if self.ctx.find_op_name(&name).and_then(|n| self.ctx.definition(n)).is_none() {
            self.errors.push(Diagnostic::error(
                location,
                format!("'{name}' is outside the subset of MLIR that hat reads (see docs/mlir.md)"),
            ));
        }
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        let results: Vec<String> = op.results().map(|r| self.value(r.to_raw().ptr as usize)).collect();
        if !results.is_empty() {
            let _ = write!(self.out, "{} = ", results.join(", "));
        }
        crate::generic_text::write_string(&mut self.out, &name);
        let operands: Vec<String> = op.operands().map(|v| self.value(v.to_raw().ptr as usize)).collect();
        let _ = write!(self.out, "({})", operands.join(", "));
        if op.successor_count() > 0 {
            let successors: Vec<String> = op.successors().map(|b| self.block(b.to_raw().ptr as usize)).collect();
            let _ = write!(self.out, "[{}]", successors.join(", "));
        }
        if op.region_count() > 0 {
            self.out.push_str(" (");
            for (i, region) in op.regions().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.region(region, depth);
            }
            self.out.push(')');
        }
        let mut attributes = Vec::new();
        for (key, value) in op.attributes() {
            let key = key.as_string_ref().as_str().unwrap_or("").to_string();
            let value = value.to_string();
            if let Some((_, nothing)) = DEFAULTED.iter().find(|(k, _)| *k == key) {
                if value == *nothing {
                    continue;
                }
                self.errors.push(Diagnostic::error(
                    location,
                    format!("'{name}' has {key} = {value}, which hat's '{name}' cannot express"),
                ));
                continue;
            }
            attributes.push((key, value));
        }
        if !attributes.is_empty() {
            self.out.push_str(" {");
            for (i, (key, value)) in attributes.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                crate::generic_text::write_string(&mut self.out, key);
                if value != "unit" {
                    let _ = write!(self.out, " = {value}");
                }
            }
            self.out.push('}');
        }
        let operand_types: Vec<String> = op.operands().map(|v| v.r#type().to_string()).collect();
        let result_types: Vec<String> = op.results().map(|v| v.r#type().to_string()).collect();
        let _ = writeln!(self.out, " : ({}) -> ({})", operand_types.join(", "), result_types.join(", "));
    }

    fn region(&mut self, region: RegionRef<'_, '_>, depth: usize) {
        self.out.push_str("{\n");
        let mut block = region.first_block();
        while let Some(current) = block {
            self.block_body(current, depth);
            block = current.next_in_region();
        }
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push('}');
    }

    fn block_body(&mut self, block: BlockRef<'_, '_>, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        let label = self.block(block.to_raw().ptr as usize);
        self.out.push_str(&label);
        if block.argument_count() > 0 {
            self.out.push('(');
            for i in 0..block.argument_count() {
                let Ok(argument) = block.argument(i) else { continue };
                if i > 0 {
                    self.out.push_str(", ");
                }
                let name = self.value(argument.to_raw().ptr as usize);
                let _ = write!(self.out, "{name}: {}", argument.r#type());
                let location = argument.location();
                self.names.push(
                    location
                        .is_name()
                        .then(|| location.name_value().as_string_ref().as_str().unwrap_or("").to_string()),
                );
            }
            self.out.push(')');
        }
        self.out.push_str(":\n");
        let mut op = block.first_operation();
        while let Some(current) = op {
            self.op(current, depth + 1);
            op = current.next_in_block();
        }
    }
}
