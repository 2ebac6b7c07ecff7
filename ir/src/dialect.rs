//! Open dialects: a dialect registers operation definitions with the context. An operation
//! definition says which traits the op has, how to verify it, what memory it touches, and
//! (optionally) its custom syntax. Nothing here is a closed list: a crate outside hat registers its
//! own dialect the same way the hat dialects do.

use crate::effects::MemoryEffects;
use crate::parser::{OpParser, ParseResult};
use crate::printer::OpPrinter;
use crate::verifier::VerifyContext;
use crate::{Context, Op, OperationState};

/// Structural properties of an operation that the core understands.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct OpTraits(u32);

impl OpTraits {
    /// No traits.
    pub const NONE: OpTraits = OpTraits(0);
    /// Ends a block; must be the block's last op.
    pub const TERMINATOR: OpTraits = OpTraits(1 << 0);
    /// Its regions do not see values defined outside it.
    pub const ISOLATED_FROM_ABOVE: OpTraits = OpTraits(1 << 1);
    /// Its single region holds symbols (ops with `sym_name`) with unique names.
    pub const SYMBOL_TABLE: OpTraits = OpTraits(1 << 2);
    /// Defines a symbol through its `sym_name` string attribute.
    pub const SYMBOL: OpTraits = OpTraits(1 << 3);
    /// Its blocks need no terminator.
    pub const NO_TERMINATOR: OpTraits = OpTraits(1 << 4);
    /// Each of its regions has at most one block.
    pub const SINGLE_BLOCK: OpTraits = OpTraits(1 << 5);
    /// No side effects: can be removed when unused, moved, and merged with equal ops.
    pub const PURE: OpTraits = OpTraits(1 << 6);
    /// The order of its two operands does not matter.
    pub const COMMUTATIVE: OpTraits = OpTraits(1 << 7);
    /// Produces a constant from its attributes alone.
    pub const CONSTANT_LIKE: OpTraits = OpTraits(1 << 8);
    /// Returns control (and values) to its parent op.
    pub const RETURN_LIKE: OpTraits = OpTraits(1 << 9);
    /// Its regions form a graph, not a CFG: no dominance required (like MLIR's graph regions).
    pub const GRAPH_REGION: OpTraits = OpTraits(1 << 10);
    /// Its memory effects are exactly those of the ops in its regions (MLIR's
    /// `RecursiveMemoryEffects`); it has none of its own.
    pub const RECURSIVE_EFFECTS: OpTraits = OpTraits(1 << 11);
    /// A function-like op whose body runs on the host (see [`crate::interfaces::ExecutionSpace`]).
    pub const HOST_CODE: OpTraits = OpTraits(1 << 12);
    /// A function-like op whose body runs on the device (see [`crate::interfaces::ExecutionSpace`]).
    pub const DEVICE_CODE: OpTraits = OpTraits(1 << 13);

    /// Whether every trait of `other` is in `self`.
    pub const fn contains(self, other: OpTraits) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of two sets.
    pub const fn union(self, other: OpTraits) -> OpTraits {
        OpTraits(self.0 | other.0)
    }
}

impl std::ops::BitOr for OpTraits {
    type Output = OpTraits;
    fn bitor(self, rhs: OpTraits) -> OpTraits {
        self.union(rhs)
    }
}

/// Everything the core knows about a registered operation. Implement it for a unit struct per op
/// (or one struct serving several ops) and pass it to [`Context::register_op`].
pub trait OpDefinition: Send + Sync + 'static {
    /// The full name, `dialect.op`.
    fn name(&self) -> &str;

    /// One line for `--help` and the docs.
    fn summary(&self) -> &str {
        ""
    }

    /// Structural traits.
    fn traits(&self) -> OpTraits {
        OpTraits::NONE
    }

    /// How many regions every instance has, if fixed; the core verifier checks it before
    /// [`verify`](Self::verify) runs, which may then rely on it.
    fn region_count(&self) -> Option<usize> {
        None
    }

    /// How many successor blocks every instance has, if fixed; checked like
    /// [`region_count`](Self::region_count).
    fn successor_count(&self) -> Option<usize> {
        None
    }

    /// Op-specific checks; report problems through `verifier`. Runs after the structural checks
    /// of the op itself passed (operand handles, terminators, dominance of its operands).
    fn verify(&self, verifier: &mut VerifyContext<'_>, op: Op) {
        let _ = (verifier, op);
    }

    /// The memory effects of an instance. By default: none for `PURE` ops, unknown otherwise.
    fn memory_effects(&self, ctx: &Context, op: Op) -> MemoryEffects {
        let _ = (ctx, op);
        if self.traits().contains(OpTraits::PURE) {
            MemoryEffects::none()
        } else {
            MemoryEffects::Unknown
        }
    }

    /// Whether the op has a custom form ([`parse`](Self::parse) and [`print`](Self::print)).
    fn has_custom_syntax(&self) -> bool {
        false
    }

    /// Parses the custom form after the op name, filling `state` (operands, result types,
    /// attributes, regions). Result names were parsed before the name.
    fn parse(&self, parser: &mut OpParser<'_, '_>, state: &mut OperationState) -> ParseResult<()> {
        let _ = state;
        Err(parser.error_here(format!("'{}' has no custom syntax", self.name())))
    }

    /// Prints the custom form after `name` (the printer has printed results and the name).
    fn print(&self, printer: &mut OpPrinter<'_, '_>, op: Op) {
        let _ = (printer, op);
    }
}

/// A dialect: a namespace of operations, listed by `hat-opt --show-dialects`.
#[derive(Clone, Debug)]
pub struct DialectInfo {
    /// The namespace, such as `arith`.
    pub name: String,
    /// One line about it.
    pub summary: String,
}
