//! Symbol lookup for the compilers: the op a call or a dispatch names, in the symbol tables that
//! enclose it, innermost first (MLIR's rule), each table indexed once for all the lookups of a
//! compilation.

use hat_ir::interfaces::{nearest_symbol_table, SymbolTable};
use hat_ir::{Context, Ident, Op};
use rustc_hash::FxHashMap;

/// The symbol tables read so far, by table op.
#[derive(Default)]
pub(crate) struct Symbols {
    tables: FxHashMap<Op, SymbolTable>,
}

impl Symbols {
    /// The op defining `name` in the symbol tables enclosing `from`, innermost first.
    pub fn lookup(&mut self, ctx: &Context, from: Op, name: Ident) -> Option<Op> {
        let mut table = nearest_symbol_table(ctx, from);
        while let Some(op) = table {
            let symbols = self.tables.entry(op).or_insert_with(|| SymbolTable::new(ctx, op));
            if let Some(found) = symbols.lookup(name) {
                return Some(found);
            }
            table = nearest_symbol_table(ctx, op);
        }
        None
    }
}
