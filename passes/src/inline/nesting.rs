//! How deeply the text of inlined ops nests, so that `inline` never produces IR that the parser
//! rejects ([`MAX_NESTING`] levels of regions, types and attributes together).
//!
//! The parser goes one level deeper for each region it enters and for each type or attribute it
//! reads inside another (a `memref`'s element type, a function type's inputs, an array's
//! elements). An op whose parent ops hold it `R` regions deep is read at depth `R`; its own text
//! goes [`own_nesting`] levels further at most (measured on its generic form, which nests at least
//! as deeply as a custom form: the signature is one function type). The inliner keeps
//! `R + own_nesting(op) <= MAX_NESTING` for every op it creates.

use hat_ir::parser::MAX_NESTING;
use hat_ir::{Attribute, AttributeKind, Context, Op, Type, TypeKind};

/// The bound on the nesting of the printed IR: the parser's.
pub(super) const NESTING_BOUND: usize = MAX_NESTING;

/// The levels a type takes when read: 1, plus those of the types inside it.
fn type_nesting(ctx: &Context, ty: Type) -> usize {
    1 + match ctx.type_kind(ty) {
        TypeKind::MemRef { element, .. } => type_nesting(ctx, *element),
        TypeKind::Function { inputs, results } => {
            inputs.iter().chain(results.iter()).map(|&t| type_nesting(ctx, t)).max().unwrap_or(0)
        }
        TypeKind::Integer { .. } | TypeKind::Float(_) | TypeKind::Index | TypeKind::None | TypeKind::Opaque(_) => 0,
    }
}

/// The levels an attribute takes when read: 1, plus those of what it holds (the type of a number
/// included).
fn attribute_nesting(ctx: &Context, attribute: Attribute) -> usize {
    1 + match ctx.attribute_kind(attribute) {
        AttributeKind::Integer { ty, .. } | AttributeKind::Float { ty, .. } => type_nesting(ctx, *ty),
        AttributeKind::DenseArray { element, .. } => type_nesting(ctx, *element),
        AttributeKind::Type(ty) => type_nesting(ctx, *ty),
        AttributeKind::Array(elements) => elements.iter().map(|&a| attribute_nesting(ctx, a)).max().unwrap_or(0),
        AttributeKind::Dictionary(entries) => {
            entries.iter().map(|&(_, a)| attribute_nesting(ctx, a)).max().unwrap_or(0)
        }
        AttributeKind::Unit | AttributeKind::String(_) | AttributeKind::SymbolRef(_) | AttributeKind::Opaque(_) => 0,
    }
}

/// How many levels below its own depth the text of `op` reaches, not counting the ops nested in
/// it: its attribute dictionary, its signature (a function type), and, per region, the region
/// itself and the types of its blocks' arguments.
pub(super) fn own_nesting(ctx: &Context, op: Op) -> usize {
    let attributes = ctx.attributes(op).iter().map(|&(_, a)| 1 + attribute_nesting(ctx, a)).max().unwrap_or(0);
    let types = ctx
        .operands(op)
        .iter()
        .map(|&v| ctx.value_type(v))
        .chain(ctx.results(op).map(|r| ctx.value_type(r)))
        .map(|t| type_nesting(ctx, t))
        .max()
        .unwrap_or(0);
    let mut nesting = attributes.max(1 + types);
    for &region in ctx.regions(op) {
        nesting = nesting.max(1);
        for &block in ctx.region_blocks(region) {
            for &argument in ctx.block_arguments(block) {
                nesting = nesting.max(1 + type_nesting(ctx, ctx.value_type(argument)));
            }
        }
    }
    nesting
}

/// How many levels the ops of `block` (but its terminator) reach below the depth they are placed
/// at: the most, over those ops and the ops nested in them, of their depth below the block plus
/// their [`own_nesting`].
pub(super) fn body_nesting(ctx: &Context, block: hat_ir::Block) -> usize {
    let terminator = ctx.last_op(block);
    let mut deepest = 0;
    let mut stack: Vec<(Op, usize)> = ctx.block_ops(block).filter(|&o| Some(o) != terminator).map(|o| (o, 0)).collect();
    while let Some((op, depth)) = stack.pop() {
        deepest = deepest.max(depth + own_nesting(ctx, op));
        for &region in ctx.regions(op) {
            for &nested_block in ctx.region_blocks(region) {
                stack.extend(ctx.block_ops(nested_block).map(|o| (o, depth + 1)));
            }
        }
    }
    deepest
}
