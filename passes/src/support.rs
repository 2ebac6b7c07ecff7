//! What several passes share: which ops have the effects of their bodies, how a folded constant
//! becomes an op, and symbols (references, entry points).

use hat_ir::verifier::symbol_name;
use hat_ir::{Attribute, AttributeKind, Context, Ident, Location, Op, OpTraits, OperationState, Type, TypeKind};

/// Whether `op`'s effects are those of its body: the `RECURSIVE_EFFECTS` trait (`scf.for`,
/// `scf.if`). `scf.while` does not have it on purpose: a loop whose trip count is not known may not
/// terminate, and erasing it would change that.
pub fn recursive_effects(ctx: &Context, op: Op) -> bool {
    ctx.has_traits(op, OpTraits::RECURSIVE_EFFECTS)
}

/// Materializes a folded constant as an op.
pub fn materialize_constant(
    ctx: &mut Context,
    value: Attribute,
    ty: Type,
    location: Location,
) -> Option<OperationState> {
    let value = match (ctx.attribute_kind(value).clone(), ctx.type_kind(ty)) {
        (AttributeKind::Integer { ty: own, .. }, TypeKind::Integer { .. } | TypeKind::Index) if own == ty => value,
        (AttributeKind::Integer { value, .. }, TypeKind::Integer { .. } | TypeKind::Index) => {
            ctx.integer_attr(value, ty)
        }
        (AttributeKind::Float { ty: own, .. }, TypeKind::Float(_)) if own == ty => value,
        (AttributeKind::Float { bits, .. }, TypeKind::Float(_)) => ctx.float_attr(f64::from_bits(bits), ty),
        _ => return None,
    };
    let mut state = OperationState::new(ctx.op_name("arith.constant"), location);
    state.attributes.push((ctx.ident("value"), value));
    state.result_types.push(ty);
    Some(state)
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

/// Whether a function is a program entry, which nothing may erase: `@main`, or one marked with
/// the `entry` attribute.
pub fn is_entry(ctx: &Context, op: Op) -> bool {
    symbol_name(ctx, op) == Some("main") || ctx.attribute(op, "entry").is_some()
}

/// Whether the symbol table `table` holds an entry (see [`is_entry`]) among its functions.
pub fn has_entry(ctx: &Context, table: Op) -> bool {
    ctx.regions(table)
        .iter()
        .flat_map(|&r| ctx.region_blocks(r).iter())
        .flat_map(|&b| ctx.block_ops(b))
        .any(|op| ctx.name_str(op) == "compute.func" && is_entry(ctx, op))
}

/// The functions that [`crate::dce`] and [`crate::inline`] may erase once nothing refers to
/// them: `kernel.helper`s (only kernels call them), and `compute.func`s that are not entries when
/// the module's entries are known (`entries_known`: it has one; otherwise it may be a library
/// whose functions the host calls by name). Kernels (`kernel.func`), host-function declarations
/// and anything else are kept.
pub fn is_discardable_function(ctx: &Context, op: Op, entries_known: bool) -> bool {
    match ctx.name_str(op) {
        "kernel.helper" => true,
        "compute.func" => entries_known && !is_entry(ctx, op),
        _ => false,
    }
}

/// The symbol name of `op` as an interned identifier (references are identifiers).
pub fn symbol_ident(ctx: &Context, op: Op) -> Option<Ident> {
    ctx.find_ident(symbol_name(ctx, op)?)
}
