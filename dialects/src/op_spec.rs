//! [`OpSpec`]: an operation definition written as data — name, traits, syntax, verifier, memory
//! effects — so that a dialect is mostly a table. Any crate can use it to define its own ops.

use hat_ir::parser::ParseResult;
use hat_ir::{Context, MemoryEffects, Op, OpDefinition, OpParser, OpPrinter, OpTraits, OperationState, VerifyContext};

/// Parses a custom form (after the op name).
pub type ParseFn = fn(&mut OpParser<'_, '_>, &mut OperationState) -> ParseResult<()>;
/// Prints a custom form (after the op name).
pub type PrintFn = fn(&mut OpPrinter<'_, '_>, Op);
/// Op-specific verification.
pub type VerifyFn = fn(&mut VerifyContext<'_>, Op);
/// Memory effects of an instance.
pub type EffectsFn = fn(&Context, Op) -> MemoryEffects;

/// The textual forms of an op.
#[derive(Copy, Clone)]
pub enum Syntax {
    /// Only MLIR's generic form.
    Generic,
    /// A custom form (the generic form is always accepted too).
    Custom {
        /// Reads it.
        parse: ParseFn,
        /// Writes it.
        print: PrintFn,
    },
}

/// An operation definition as data.
#[derive(Copy, Clone)]
pub struct OpSpec {
    /// `dialect.op`.
    pub name: &'static str,
    /// One line for the docs.
    pub summary: &'static str,
    /// Structural traits.
    pub traits: OpTraits,
    /// How many regions every instance has (checked by the core verifier). No hat op has
    /// successors: they are checked to be absent.
    pub regions: usize,
    /// Textual forms.
    pub syntax: Syntax,
    /// Op-specific checks.
    pub verify: VerifyFn,
    /// Memory effects; `None` means: none if `PURE`, else unknown.
    pub effects: Option<EffectsFn>,
}

impl OpDefinition for OpSpec {
    fn name(&self) -> &str {
        self.name
    }

    fn summary(&self) -> &str {
        self.summary
    }

    fn traits(&self) -> OpTraits {
        self.traits
    }

    fn region_count(&self) -> Option<usize> {
        Some(self.regions)
    }

    fn successor_count(&self) -> Option<usize> {
        Some(0)
    }

    fn verify(&self, verifier: &mut VerifyContext<'_>, op: Op) {
        if self.traits.contains(OpTraits::TERMINATOR) && !verifier.expect_result_count(op, 0) {
            return;
        }
        (self.verify)(verifier, op)
    }

    fn memory_effects(&self, ctx: &Context, op: Op) -> MemoryEffects {
        match self.effects {
            Some(effects) => effects(ctx, op),
            None if self.traits.contains(OpTraits::PURE) => MemoryEffects::none(),
            None => MemoryEffects::Unknown,
        }
    }

    fn has_custom_syntax(&self) -> bool {
        matches!(self.syntax, Syntax::Custom { .. })
    }

    fn parse(&self, parser: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
        match self.syntax {
            Syntax::Custom { parse, .. } => parse(parser, state),
            Syntax::Generic => Err(parser.error_here(format!("'{}' has no custom syntax", self.name))),
        }
    }

    fn print(&self, printer: &mut OpPrinter<'_, '_>, op: Op) {
        if let Syntax::Custom { print, .. } = self.syntax {
            print(printer, op)
        }
    }
}

/// Registers every spec of a table.
pub fn register_specs(ctx: &mut Context, specs: &[OpSpec]) {
    for spec in specs {
        ctx.register_op(*spec);
    }
}

/// A verifier that checks nothing beyond the structure the core already checks.
pub fn no_extra_checks(_: &mut VerifyContext<'_>, _: Op) {}
