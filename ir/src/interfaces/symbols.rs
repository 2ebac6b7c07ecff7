//! Symbol lookup: the op that defines `@name` in the nearest enclosing symbol table. Tables are
//! the ops with the `SYMBOL_TABLE` trait; their symbols are the ops of their body with a string
//! `sym_name`. [`lookup_symbol`] scans a table (linear in its size); analyses that resolve many
//! references build a [`SymbolTable`] once.

use crate::dialect::OpTraits;
use crate::verifier::symbol_name;
use crate::{Context, Ident, Op};
use rustc_hash::FxHashMap;

/// The nearest op strictly enclosing `op` that is a symbol table.
pub fn nearest_symbol_table(ctx: &Context, op: Op) -> Option<Op> {
    let mut current = ctx.parent_op(op);
    while let Some(candidate) = current {
        if ctx.has_traits(candidate, OpTraits::SYMBOL_TABLE) {
            return Some(candidate);
        }
        current = ctx.parent_op(candidate);
    }
    None
}

/// The op defining `name` in the symbol tables enclosing `from` (nearest first).
pub fn lookup_symbol(ctx: &Context, from: Op, name: &str) -> Option<Op> {
    let mut table = nearest_symbol_table(ctx, from);
    while let Some(t) = table {
        if let Some(found) = ctx.body_ops(t).into_iter().find(|&o| symbol_name(ctx, o) == Some(name)) {
            return Some(found);
        }
        table = nearest_symbol_table(ctx, t);
    }
    None
}

/// The symbols of one table, by name: built once, looked up in constant time.
#[derive(Clone, Debug, Default)]
pub struct SymbolTable {
    symbols: FxHashMap<Ident, Op>,
}

impl SymbolTable {
    /// The symbols directly in `table` (the first definition of a name wins, as the verifier
    /// rejects duplicates).
    pub fn new(ctx: &Context, table: Op) -> Self {
        let mut symbols = FxHashMap::default();
        for op in ctx.body_ops(table) {
            if let Some(name) = symbol_name(ctx, op).and_then(|n| ctx.find_ident(n)) {
                symbols.entry(name).or_insert(op);
            }
        }
        SymbolTable { symbols }
    }

    /// The op defining `name`.
    pub fn lookup(&self, name: Ident) -> Option<Op> {
        self.symbols.get(&name).copied()
    }

    /// Every symbol and its op, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (Ident, Op)> + '_ {
        self.symbols.iter().map(|(&n, &o)| (n, o))
    }
}
