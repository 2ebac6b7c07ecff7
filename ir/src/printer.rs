//! The printer: every op in MLIR's generic form, or in its custom form where it has one.
//!
//! Values are numbered per op that is isolated from above, in textual order: entry-block
//! arguments of regions `%argN`, other values `%N`, a multi-result op's results `%N:k` at the
//! definition and `%N#i` at uses. Blocks are `^bbN`, numbered by position in their region. Printing
//! the output again after parsing it gives the same text.
//!
//! A region (block) argument with a source name ([`Context::argument_name`], kept by the parser)
//! prints by that name, as MLIR's asm name hints (`OpAsmOpInterface::getAsmBlockArgumentNames`)
//! do, so that names a user gave survive a trip through the printer. The name is left out, and
//! the argument numbered, when it is no valid value name, when it looks like a name the printer
//! makes (`N`, `argN`), or when it clashes: when an argument of the same region or of an
//! enclosing one (up to the isolated op) already has it, where the parser would see both. An
//! entry-block argument uses up its `argN` number whether or not it prints by name (so `%argN` is
//! the same argument in every print); an argument of another block takes a `%N` only when it
//! prints as one. Either way a second print of the parsed output gives the same text.

use crate::attributes::AttributeKind;
use crate::dialect::OpTraits;
use crate::parser::escape_into;
use crate::types::{FloatKind, Signedness, TypeKind, DYNAMIC};
use crate::{Attribute, Block, Context, Ident, Op, Region, Type, Value, ValueDef};
use rustc_hash::FxHashSet;
use std::fmt::Write;

/// How to print.
#[derive(Copy, Clone, Debug, Default)]
pub struct PrintOptions {
    /// Print every op in the generic form (`--mlir-print-op-generic`).
    pub generic: bool,
    /// Print `loc(...)` after every op (`--mlir-print-debuginfo`).
    pub debug_info: bool,
    /// Skip the verification that otherwise runs first: ops that fail it are printed in the
    /// generic form, which shows any shape, while a custom form may rely on a verified op.
    pub assume_verified: bool,
}

/// Prints `op` (normally a module) with a trailing newline.
pub fn print_op(ctx: &Context, op: Op, options: PrintOptions) -> String {
    let mut printer = Printer::new(ctx, op, options, None);
    printer.number_isolated_scope(op, true);
    printer.print_operation(op);
    printer.out
}

/// Prints `op` into `sink` as it goes, so the whole text is never held in memory.
pub fn print_op_to(ctx: &Context, op: Op, options: PrintOptions, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut printer = Printer::new(ctx, op, options, Some(sink));
    printer.number_isolated_scope(op, true);
    printer.print_operation(op);
    printer.flush();
    match printer.sink_error.take() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// How much text the printer buffers before handing it to its sink.
const FLUSH_THRESHOLD: usize = 1 << 20;

/// A type as text.
pub fn type_to_string(ctx: &Context, ty: Type) -> String {
    let mut out = String::new();
    write_type(ctx, ty, &mut out);
    out
}

/// An attribute as text.
pub fn attribute_to_string(ctx: &Context, attribute: Attribute) -> String {
    let mut out = String::new();
    write_attribute(ctx, attribute, &mut out);
    out
}

const UNNAMED: u32 = u32::MAX;
const ARGUMENT_FLAG: u32 = 1 << 31;
/// Marks the results of a multi-result op: they print as `%N#i`.
const GROUP_FLAG: u32 = 1 << 30;
/// Marks a region argument printed by its source name: the other bits index [`Printer::hints`].
const HINT_FLAG: u32 = 1 << 29;

/// Whether a source name can be printed as itself: a valid value name, unlike every name the
/// printer makes (`N` and `argN`), so that it cannot clash with one.
fn usable_hint(name: &str) -> bool {
    let all_digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    crate::parser::is_value_name(name) && !all_digits(name) && !name.strip_prefix("arg").is_some_and(all_digits)
}

/// The argument names printed in one region, and the region's enclosing one within the same
/// isolated op: a name may not be given again where the parser would see both.
struct HintScope<'a> {
    parent: Option<usize>,
    names: FxHashSet<&'a str>,
}

/// Printer state; custom forms see it through [`OpPrinter`].
pub struct Printer<'a> {
    ctx: &'a Context,
    out: String,
    sink: Option<&'a mut dyn std::io::Write>,
    sink_error: Option<std::io::Error>,
    options: PrintOptions,
    /// Ops printed in the generic form because they failed verification.
    unverified: FxHashSet<Op>,
    value_names: Vec<u32>,
    /// The source names of arguments that print by them (see the module documentation).
    hints: Vec<&'a str>,
    indent: usize,
}

impl<'a> Printer<'a> {
    fn new(ctx: &'a Context, root: Op, options: PrintOptions, sink: Option<&'a mut dyn std::io::Write>) -> Self {
        let unverified = if options.assume_verified || options.generic {
            FxHashSet::default()
        } else {
            crate::verifier::verify_detailed(ctx, root).failed_ops
        };
        Printer {
            ctx,
            out: String::new(),
            sink,
            sink_error: None,
            options,
            unverified,
            value_names: vec![UNNAMED; ctx.value_count()],
            hints: Vec::new(),
            indent: 0,
        }
    }

    /// Hands the buffered text to the sink (if any); the first write error is kept.
    fn flush(&mut self) {
        if let Some(sink) = self.sink.as_mut() {
            if self.sink_error.is_none() {
                if let Err(error) = sink.write_all(self.out.as_bytes()) {
                    self.sink_error = Some(error);
                }
            }
            self.out.clear();
        }
    }

    /// Numbers the values of `root`'s regions (not inside nested isolated ops, which are numbered
    /// when printed), giving arguments their source names where they can have them. With
    /// `include_root`, the root's own results are numbered first.
    fn number_isolated_scope(&mut self, root: Op, include_root: bool) {
        /// Each with the index of the [`HintScope`] of the region holding it.
        enum Work {
            Op(Op, usize),
            Block(Block, bool, usize),
        }
        let ctx = self.ctx;
        let (mut next_value, mut next_argument) = (0u32, 0u32);
        let mut stack = Vec::new();
        let mut scopes: Vec<HintScope<'a>> = Vec::new();
        let push_regions = |stack: &mut Vec<Work>, scopes: &mut Vec<HintScope<'a>>, op: Op, parent: Option<usize>| {
            for &region in ctx.regions(op).iter().rev() {
                let scope = scopes.len();
                scopes.push(HintScope { parent, names: FxHashSet::default() });
                for (position, &block) in ctx.region_blocks(region).iter().enumerate().rev() {
                    stack.push(Work::Block(block, position == 0, scope));
                }
            }
        };
        let name_results = |names: &mut Vec<u32>, op: Op, next_value: &mut u32| {
            let count = ctx.result_count(op);
            if count == 0 {
                return;
            }
            let name = if count > 1 { *next_value | GROUP_FLAG } else { *next_value };
            for result in ctx.results(op) {
                names[result.index()] = name;
            }
            *next_value += 1;
        };
        // Whether `name` is given to an argument of the region of `scope` or an enclosing one.
        let taken = |scopes: &[HintScope<'a>], mut scope: usize, name: &str| loop {
            if scopes[scope].names.contains(name) {
                return true;
            }
            match scopes[scope].parent {
                Some(parent) => scope = parent,
                None => return false,
            }
        };
        if include_root {
            name_results(&mut self.value_names, root, &mut next_value);
        }
        push_regions(&mut stack, &mut scopes, root, None);
        while let Some(work) = stack.pop() {
            match work {
                Work::Op(op, scope) => {
                    name_results(&mut self.value_names, op, &mut next_value);
                    if !ctx.has_traits(op, OpTraits::ISOLATED_FROM_ABOVE) {
                        push_regions(&mut stack, &mut scopes, op, Some(scope));
                    }
                }
                Work::Block(block, is_entry, scope) => {
                    for &argument in ctx.block_arguments(block) {
                        let hint = ctx
                            .argument_name(argument)
                            .filter(|name| usable_hint(name) && !taken(&scopes, scope, name));
                        self.value_names[argument.index()] = match hint {
                            Some(name) => {
                                scopes[scope].names.insert(name);
                                self.hints.push(name);
                                if is_entry {
                                    next_argument += 1;
                                }
                                (self.hints.len() as u32 - 1) | HINT_FLAG
                            }
                            None if is_entry => {
                                next_argument += 1;
                                (next_argument - 1) | ARGUMENT_FLAG
                            }
                            None => {
                                next_value += 1;
                                next_value - 1
                            }
                        };
                    }
                    let mut cursor = ctx.last_op(block);
                    while let Some(op) = cursor {
                        stack.push(Work::Op(op, scope));
                        cursor = ctx.prev_op(op);
                    }
                }
            }
        }
    }

    fn write_indent(&mut self) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    fn print_operation(&mut self, op: Op) {
        stacker::maybe_grow(128 * 1024, 4 * 1024 * 1024, || self.print_operation_unguarded(op));
    }

    fn print_operation_unguarded(&mut self, op: Op) {
        self.write_indent();
        let result_count = self.ctx.result_count(op);
        if result_count > 0 {
            self.write_value_group(self.ctx.result(op, 0));
            if result_count > 1 {
                let _ = write!(self.out, ":{result_count}");
            }
            self.out.push_str(" = ");
        }
        if self.ctx.has_traits(op, OpTraits::ISOLATED_FROM_ABOVE) {
            self.number_isolated_scope(op, false);
        }
        let custom = !self.options.generic && !self.unverified.contains(&op);
        let definition = self.ctx.definition(self.ctx.name(op)).filter(|d| custom && d.has_custom_syntax()).cloned();
        match definition {
            Some(definition) => {
                let name = self.ctx.name_str(op);
                self.out.push_str(name.strip_prefix("builtin.").unwrap_or(name));
                definition.print(&mut OpPrinter { printer: self, op }, op);
            }
            None => self.print_generic(op),
        }
        if self.options.debug_info {
            if let Some((file, line, col)) = self.ctx.sources.file_line_col(self.ctx.location(op)) {
                self.out.push_str(" loc(");
                escape_into(&mut self.out, file);
                let _ = write!(self.out, ":{line}:{col})");
            } else {
                self.out.push_str(" loc(unknown)");
            }
        }
        self.out.push('\n');
        if self.out.len() >= FLUSH_THRESHOLD {
            self.flush();
        }
    }

    fn print_generic(&mut self, op: Op) {
        let ctx = self.ctx;
        escape_into(&mut self.out, ctx.name_str(op));
        self.out.push('(');
        self.write_value_list(ctx.operands(op));
        self.out.push(')');
        if !ctx.successors(op).is_empty() {
            self.out.push('[');
            for (i, &block) in ctx.successors(op).iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.write_block_label(block);
            }
            self.out.push(']');
        }
        if !ctx.regions(op).is_empty() {
            self.out.push_str(" (");
            for (i, &region) in ctx.regions(op).iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.print_region(region, true, None);
            }
            self.out.push(')');
        }
        self.write_attr_dict(ctx.attributes(op), &[]);
        self.out.push_str(" : (");
        for (i, &value) in ctx.operands(op).iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            write_type(ctx, ctx.value_type(value), &mut self.out);
        }
        self.out.push_str(") -> ");
        let results: Vec<Type> = ctx.results(op).map(|v| ctx.value_type(v)).collect();
        write_result_types(ctx, &results, &mut self.out);
    }

    /// `{ ... }`: blocks of a region. The entry block's label and arguments are printed only with
    /// `print_entry_arguments` (custom forms print them in the op's own syntax). A trailing op named
    /// `elided_terminator` with no operands and no attributes is left out.
    fn print_region(&mut self, region: Region, print_entry_arguments: bool, elided_terminator: Option<&str>) {
        let ctx = self.ctx;
        self.out.push_str("{\n");
        self.indent += 1;
        for (position, &block) in ctx.region_blocks(region).iter().enumerate() {
            let arguments = ctx.block_arguments(block);
            // An empty entry block needs its label too, or it would read back as no block; so
            // does an entry block that is branched to (which the verifier rejects, but which
            // must still read back as it is), or the branch would name an undefined block.
            let labelled = position > 0
                || (print_entry_arguments
                    && (!arguments.is_empty() || ctx.first_op(block).is_none() || is_successor(ctx, region, block)));
            if labelled {
                self.indent -= 1;
                self.write_indent();
                self.indent += 1;
                self.write_block_label(block);
                if !arguments.is_empty() {
                    self.out.push('(');
                    self.write_typed_arguments(arguments);
                    self.out.push(')');
                }
                self.out.push_str(":\n");
            }
            let mut cursor = ctx.first_op(block);
            while let Some(op) = cursor {
                cursor = ctx.next_op(op);
                let elide = cursor.is_none()
                    && elided_terminator.is_some_and(|name| {
                        ctx.name_str(op) == name && ctx.operands(op).is_empty() && ctx.attributes(op).is_empty()
                    });
                if !elide {
                    self.print_operation(op);
                }
            }
        }
        self.indent -= 1;
        self.write_indent();
        self.out.push('}');
    }

    fn write_typed_arguments(&mut self, arguments: &[Value]) {
        for (i, &argument) in arguments.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.write_value(argument);
            self.out.push_str(": ");
            write_type(self.ctx, self.ctx.value_type(argument), &mut self.out);
        }
    }

    fn write_block_label(&mut self, block: Block) {
        let position = self
            .ctx
            .block_parent(block)
            .and_then(|region| self.ctx.region_blocks(region).iter().position(|&b| b == block))
            .unwrap_or(usize::MAX);
        let _ = write!(self.out, "^bb{position}");
    }

    /// The name of a value without a `#N` result number (where a result group is defined).
    fn write_value_group(&mut self, value: Value) {
        let name = self.value_names.get(value.index()).copied().unwrap_or(UNNAMED);
        let _ = write!(self.out, "%{}", name & !GROUP_FLAG);
    }

    fn write_value(&mut self, value: Value) {
        let name = self.value_names.get(value.index()).copied().unwrap_or(UNNAMED);
        if name == UNNAMED {
            let _ = write!(self.out, "%<<UNKNOWN SSA VALUE {}>>", value.index());
        } else if name & ARGUMENT_FLAG != 0 {
            let _ = write!(self.out, "%arg{}", name & !ARGUMENT_FLAG);
        } else if name & HINT_FLAG != 0 {
            self.out.push('%');
            self.out.push_str(self.hints[(name & !HINT_FLAG) as usize]);
        } else if name & GROUP_FLAG != 0 {
            let index = match self.ctx.value_def(value) {
                ValueDef::Result { index, .. } => index,
                ValueDef::BlockArgument { .. } => 0,
            };
            let _ = write!(self.out, "%{}#{index}", name & !GROUP_FLAG);
        } else {
            let _ = write!(self.out, "%{name}");
        }
    }

    fn write_value_list(&mut self, values: &[Value]) {
        for (i, &value) in values.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.write_value(value);
        }
    }

    fn write_attr_dict(&mut self, attributes: &[(Ident, Attribute)], elided: &[&str]) {
        let shown: Vec<&(Ident, Attribute)> =
            attributes.iter().filter(|(name, _)| !elided.contains(&self.ctx.ident_str(*name))).collect();
        if shown.is_empty() {
            return;
        }
        self.out.push_str(" {");
        write_dict_entries(self.ctx, shown.into_iter().copied(), &mut self.out);
        self.out.push('}');
    }
}

/// Whether an op of `region` branches to `block`.
fn is_successor(ctx: &Context, region: Region, block: Block) -> bool {
    ctx.region_blocks(region).iter().any(|&b| ctx.block_ops(b).any(|op| ctx.successors(op).contains(&block)))
}

/// What a custom form's printer sees.
pub struct OpPrinter<'p, 'a> {
    printer: &'p mut Printer<'a>,
    op: Op,
}

impl<'a> OpPrinter<'_, 'a> {
    /// The context.
    pub fn ctx(&self) -> &'a Context {
        self.printer.ctx
    }

    /// The op being printed.
    pub fn op(&self) -> Op {
        self.op
    }

    /// Raw text.
    pub fn write(&mut self, text: &str) {
        self.printer.out.push_str(text);
    }

    /// A value's name.
    pub fn value(&mut self, value: Value) {
        self.printer.write_value(value);
    }

    /// Comma-separated value names.
    pub fn values(&mut self, values: &[Value]) {
        self.printer.write_value_list(values);
    }

    /// A type.
    pub fn ty(&mut self, ty: Type) {
        write_type(self.printer.ctx, ty, &mut self.printer.out);
    }

    /// Comma-separated types.
    pub fn types(&mut self, types: &[Type]) {
        for (i, &ty) in types.iter().enumerate() {
            if i > 0 {
                self.write(", ");
            }
            self.ty(ty);
        }
    }

    /// ` -> T` or ` -> (T, U)`; nothing for no types.
    pub fn arrow_types(&mut self, types: &[Type]) {
        if types.is_empty() {
            return;
        }
        self.write(" -> ");
        if types.len() == 1 && !matches!(self.ctx().type_kind(types[0]), TypeKind::Function { .. }) {
            self.ty(types[0]);
        } else {
            self.write("(");
            self.types(types);
            self.write(")");
        }
    }

    /// An attribute.
    pub fn attribute(&mut self, attribute: Attribute) {
        write_attribute(self.printer.ctx, attribute, &mut self.printer.out);
    }

    /// `@name`.
    pub fn symbol(&mut self, name: Ident) {
        write_symbol(self.printer.ctx.ident_str(name), &mut self.printer.out);
    }

    /// `@name` for a name given as text (quoted when it is not a plain identifier).
    pub fn symbol_str(&mut self, name: &str) {
        write_symbol(name, &mut self.printer.out);
    }

    /// ` {attrs}` without the `elided` ones; nothing if none remain.
    pub fn attr_dict(&mut self, elided: &[&str]) {
        let attributes = self.printer.ctx.attributes(self.op);
        self.printer.write_attr_dict(attributes, elided);
    }

    /// ` attributes {attrs}` without the `elided` ones; nothing if none remain.
    pub fn attr_dict_with_keyword(&mut self, elided: &[&str]) {
        let ctx = self.printer.ctx;
        let any = ctx.attributes(self.op).iter().any(|(name, _)| !elided.contains(&ctx.ident_str(*name)));
        if any {
            self.write(" attributes");
            self.printer.write_attr_dict(ctx.attributes(self.op), elided);
        }
    }

    /// `%a: T, %b: U` for the given block arguments.
    pub fn typed_arguments(&mut self, arguments: &[Value]) {
        self.printer.write_typed_arguments(arguments);
    }

    /// A region; see the module docs for `print_entry_arguments` and `elided_terminator`.
    pub fn region(&mut self, region: Region, print_entry_arguments: bool, elided_terminator: Option<&str>) {
        self.printer.print_region(region, print_entry_arguments, elided_terminator);
    }
}

/// Writes a type.
pub fn write_type(ctx: &Context, ty: Type, out: &mut String) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || write_type_unguarded(ctx, ty, out))
}

fn write_type_unguarded(ctx: &Context, ty: Type, out: &mut String) {
    match ctx.type_kind(ty) {
        TypeKind::Integer { width, signedness } => {
            let prefix = match signedness {
                Signedness::Signless => "i",
                Signedness::Signed => "si",
                Signedness::Unsigned => "ui",
            };
            let _ = write!(out, "{prefix}{width}");
        }
        TypeKind::Float(kind) => out.push_str(kind.keyword()),
        TypeKind::Index => out.push_str("index"),
        TypeKind::None => out.push_str("none"),
        TypeKind::MemRef { shape, element } => {
            out.push_str("memref<");
            for &dimension in shape.iter() {
                if dimension == DYNAMIC {
                    out.push('?');
                } else {
                    let _ = write!(out, "{dimension}");
                }
                out.push('x');
            }
            write_type(ctx, *element, out);
            out.push('>');
        }
        TypeKind::Function { inputs, results } => {
            out.push('(');
            for (i, &input) in inputs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_type(ctx, input, out);
            }
            out.push_str(") -> ");
            write_result_types(ctx, results, out);
        }
        TypeKind::Opaque(text) => {
            out.push('!');
            out.push_str(text);
        }
    }
}

fn write_result_types(ctx: &Context, results: &[Type], out: &mut String) {
    if results.len() == 1 && !matches!(ctx.type_kind(results[0]), TypeKind::Function { .. }) {
        write_type(ctx, results[0], out);
        return;
    }
    out.push('(');
    for (i, &result) in results.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_type(ctx, result, out);
    }
    out.push(')');
}

fn is_bare_identifier(text: &str) -> bool {
    let mut bytes = text.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'))
}

fn write_symbol(name: &str, out: &mut String) {
    out.push('@');
    let plain =
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-'));
    if plain {
        out.push_str(name);
    } else {
        escape_into(out, name);
    }
}

fn write_dict_entries(ctx: &Context, entries: impl Iterator<Item = (Ident, Attribute)>, out: &mut String) {
    for (i, (name, value)) in entries.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let name = ctx.ident_str(name);
        if is_bare_identifier(name) {
            out.push_str(name);
        } else {
            escape_into(out, name);
        }
        if *ctx.attribute_kind(value) != AttributeKind::Unit {
            out.push_str(" = ");
            write_attribute(ctx, value, out);
        }
    }
}

/// Writes a float so that it reads back to the same value (NaN and infinities as hex bits).
pub fn write_float(value: f64, kind: FloatKind, out: &mut String) {
    if !value.is_finite() {
        match kind {
            FloatKind::F32 => {
                let _ = write!(out, "0x{:08X}", (value as f32).to_bits());
            }
            _ => {
                let _ = write!(out, "0x{:016X}", value.to_bits());
            }
        }
        return;
    }
    let text = match kind {
        FloatKind::F32 => format!("{:?}", value as f32),
        _ => format!("{value:?}"),
    };
    match text.find('e') {
        Some(e) if !text[..e].contains('.') => {
            out.push_str(&text[..e]);
            out.push_str(".0");
            out.push_str(&text[e..]);
        }
        _ => out.push_str(&text),
    }
}

/// Writes an attribute.
pub fn write_attribute(ctx: &Context, attribute: Attribute, out: &mut String) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || write_attribute_unguarded(ctx, attribute, out))
}

fn write_attribute_unguarded(ctx: &Context, attribute: Attribute, out: &mut String) {
    match ctx.attribute_kind(attribute) {
        AttributeKind::Unit => out.push_str("unit"),
        AttributeKind::Integer { value, ty } => {
            if matches!(ctx.type_kind(*ty), TypeKind::Integer { width: 1, signedness: Signedness::Signless }) {
                out.push_str(if *value != 0 { "true" } else { "false" });
                return;
            }
            let unsigned = matches!(ctx.type_kind(*ty), TypeKind::Integer { signedness: Signedness::Unsigned, .. });
            if unsigned {
                let width = ctx.type_kind(*ty).bit_width().unwrap_or(64);
                let mask = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
                let _ = write!(out, "{}", (*value as u64) & mask);
            } else {
                let _ = write!(out, "{value}");
            }
            out.push_str(" : ");
            write_type(ctx, *ty, out);
        }
        AttributeKind::Float { bits, ty } => {
            let kind = match ctx.type_kind(*ty) {
                TypeKind::Float(kind) => *kind,
                _ => FloatKind::F64,
            };
            write_float(f64::from_bits(*bits), kind, out);
            out.push_str(" : ");
            write_type(ctx, *ty, out);
        }
        AttributeKind::String(text) => escape_into(out, text),
        AttributeKind::Array(elements) => {
            out.push('[');
            for (i, &element) in elements.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_attribute(ctx, element, out);
            }
            out.push(']');
        }
        AttributeKind::Dictionary(entries) => {
            out.push('{');
            write_dict_entries(ctx, entries.iter().copied(), out);
            out.push('}');
        }
        AttributeKind::SymbolRef(path) => {
            for (i, &part) in path.iter().enumerate() {
                if i > 0 {
                    out.push_str("::");
                }
                write_symbol(ctx.ident_str(part), out);
            }
        }
        AttributeKind::Type(ty) => write_type(ctx, *ty, out),
        AttributeKind::DenseArray { element, values } => {
            out.push_str("array<");
            write_type(ctx, *element, out);
            for (i, value) in values.iter().enumerate() {
                out.push_str(if i == 0 { ": " } else { ", " });
                let _ = write!(out, "{value}");
            }
            out.push('>');
        }
        AttributeKind::Opaque(text) => {
            out.push('#');
            out.push_str(text);
        }
    }
}
