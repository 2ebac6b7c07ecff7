//! Resolving many symbol references at once: the symbol tables met on the way are built once and
//! kept, so resolving `n` references in a module of `m` symbols costs about `n + m`, not `n * m`
//! (`lookup_symbol` scans a table on every call).

use crate::dialect::OpTraits;
use crate::interfaces::SymbolTable;
use crate::{AttributeKind, Context, Ident, Op};
use rustc_hash::FxHashMap;

/// A cache of symbol tables for resolving references from ops.
#[derive(Debug, Default)]
pub struct SymbolResolver {
    tables: FxHashMap<Op, SymbolTable>,
    /// The nearest symbol table strictly enclosing each block's parent op chain, by op (memoised
    /// per op that encloses references).
    nearest: FxHashMap<Op, Option<Op>>,
}

impl SymbolResolver {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The op that `path` (`@a` or `@a::@b::...`) names, seen from `from`: the first name in the
    /// symbol tables enclosing `from` (nearest first), each next name in the symbol table the
    /// previous one is.
    pub fn resolve(&mut self, ctx: &Context, from: Op, path: &[Ident]) -> Option<Op> {
        let (&first, rest) = path.split_first()?;
        let mut table = self.nearest_table(ctx, from);
        let mut found = None;
        while let Some(t) = table {
            if let Some(op) = self.table(ctx, t).lookup(first) {
                found = Some(op);
                break;
            }
            table = self.nearest_table(ctx, t);
        }
        let mut current = found?;
        for &name in rest {
            if !ctx.has_traits(current, OpTraits::SYMBOL_TABLE) {
                return None;
            }
            current = self.table(ctx, current).lookup(name)?;
        }
        Some(current)
    }

    /// Calls `visit` with every symbol reference (at any depth of arrays and dictionaries) held
    /// by an attribute of `op`, and the attribute's name.
    pub fn for_each_reference(ctx: &Context, op: Op, mut visit: impl FnMut(Ident, &[Ident])) {
        fn walk(ctx: &Context, name: Ident, attribute: crate::Attribute, visit: &mut dyn FnMut(Ident, &[Ident])) {
            match ctx.attribute_kind(attribute) {
                AttributeKind::SymbolRef(path) => visit(name, path),
                AttributeKind::Array(elements) => {
                    for &element in elements.iter() {
                        walk(ctx, name, element, visit);
                    }
                }
                AttributeKind::Dictionary(entries) => {
                    for &(_, element) in entries.iter() {
                        walk(ctx, name, element, visit);
                    }
                }
                _ => {}
            }
        }
        for &(name, attribute) in ctx.attributes(op) {
            walk(ctx, name, attribute, &mut visit);
        }
    }

    fn table(&mut self, ctx: &Context, table: Op) -> &SymbolTable {
        self.tables.entry(table).or_insert_with(|| SymbolTable::new(ctx, table))
    }

    /// The nearest op strictly enclosing `op` that is a symbol table; memoised along the way, so
    /// that the ops of one function share one climb.
    fn nearest_table(&mut self, ctx: &Context, op: Op) -> Option<Op> {
        let mut climbed = Vec::new();
        let mut current = ctx.parent_op(op);
        let found = loop {
            let Some(candidate) = current else { break None };
            if ctx.has_traits(candidate, OpTraits::SYMBOL_TABLE) {
                break Some(candidate);
            }
            if let Some(&known) = self.nearest.get(&candidate) {
                break known;
            }
            climbed.push(candidate);
            current = ctx.parent_op(candidate);
        };
        // Every op climbed through has the same nearest table as `op`.
        for op in climbed {
            self.nearest.insert(op, found);
        }
        found
    }
}
