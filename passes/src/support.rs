//! What several passes share: which ops have the effects of their bodies, how a folded constant
//! becomes an op, and symbols (references, entry points, which functions may be erased).
//!
//! Entries and erasable functions are what the functions say through their
//! [`CallableOpInterface`]: no op name is matched here.

use hat_ir::interfaces::{execution_space, CallableOpInterface, ExecutionSpace};
use hat_ir::verifier::symbol_name;
use hat_ir::{Attribute, AttributeKind, Context, Ident, Op, OpTraits};

pub use hat_dialects::arith_canonicalize::materialize_constant;

/// Whether `op`'s effects are those of its body: the `RECURSIVE_EFFECTS` trait (`scf.for`,
/// `scf.if`). `scf.while` does not have it on purpose: a loop whose trip count is not known may not
/// terminate, and erasing it would change that.
pub fn recursive_effects(ctx: &Context, op: Op) -> bool {
    ctx.has_traits(op, OpTraits::RECURSIVE_EFFECTS)
}

/// Appends the first name of every symbol reference held (at any depth) by `attribute`.
pub fn collect_symbol_refs(ctx: &Context, attribute: Attribute, out: &mut Vec<Ident>) {
    match ctx.attribute_kind(attribute) {
        AttributeKind::SymbolRef(path) => out.extend(path.first().copied()),
        AttributeKind::Array(elements) => {
            for &element in elements.iter() {
                collect_symbol_refs(ctx, element, out);
            }
        }
        AttributeKind::Dictionary(entries) => {
            for &(_, element) in entries.iter() {
                collect_symbol_refs(ctx, element, out);
            }
        }
        _ => {}
    }
}

/// Appends the symbols that `op` and every op nested in it refer to.
pub fn collect_nested_symbol_refs(ctx: &Context, op: Op, out: &mut Vec<Ident>) {
    for nested in ctx.walk(op) {
        for &(_, attribute) in ctx.attributes(nested) {
            collect_symbol_refs(ctx, attribute, out);
        }
    }
}

/// Whether `op` is a program entry, which nothing may erase: what its
/// [`CallableOpInterface::is_entry`] says (`false` for an op that is not callable).
pub fn is_entry(ctx: &Context, op: Op) -> bool {
    ctx.interface::<dyn CallableOpInterface>(op).is_some_and(|callable| callable.is_entry(ctx, op))
}

/// Whether the symbol table `table` names the entries of a program: it holds a callable that runs
/// on the host and is an entry (see [`is_entry`]). Device entries (kernels) do not count: the host
/// program launches them, and a module of kernels and host functions without a host entry may be
/// a library whose functions the host calls by name.
pub fn has_entry(ctx: &Context, table: Op) -> bool {
    ctx.regions(table)
        .iter()
        .flat_map(|&r| ctx.region_blocks(r).iter())
        .flat_map(|&b| ctx.block_ops(b))
        .any(|op| execution_space(ctx, op) == Some(ExecutionSpace::Host) && is_entry(ctx, op))
}

/// Whether [`crate::dce`] and [`crate::inline`] may erase the function `op` once nothing refers
/// to it: what its [`CallableOpInterface::is_discardable`] says, given whether its table's
/// entries are known (`entries_known`, see [`has_entry`]). Ops that are not callable are kept.
/// (For hat: `kernel.helper`s always, `compute.func`s that are not entries when the entries are
/// known; kernels and host-function declarations never.)
pub fn is_discardable_function(ctx: &Context, op: Op, entries_known: bool) -> bool {
    ctx.interface::<dyn CallableOpInterface>(op).is_some_and(|callable| callable.is_discardable(ctx, op, entries_known))
}

/// The symbol name of `op` as an interned identifier (references are identifiers).
pub fn symbol_ident(ctx: &Context, op: Op) -> Option<Ident> {
    ctx.find_ident(symbol_name(ctx, op)?)
}
