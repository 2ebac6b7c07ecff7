//! Constants to the right of commutative ops (rule P1 of `docs/rewrites.md`), for any op with
//! the `COMMUTATIVE` trait: folders and patterns then look for a constant on the right only.

use hat_ir::rewrite::{constant_value, RewritePattern, Rewriter};
use hat_ir::{Op, OpTraits};

/// `op(c, x) → op(x, c)` for a commutative op of two operands with a constant `c` and a
/// non-constant `x`.
pub(super) struct ConstantToRight;

impl RewritePattern for ConstantToRight {
    fn name(&self) -> &str {
        "constant-to-right"
    }

    fn root(&self) -> Option<&str> {
        None
    }

    fn match_and_rewrite(&self, rewriter: &mut Rewriter<'_>, op: Op) -> bool {
        let ctx = rewriter.ctx();
        let &[lhs, rhs] = ctx.operands(op) else { return false };
        if !ctx.has_traits(op, OpTraits::COMMUTATIVE) {
            return false;
        }
        if constant_value(ctx, lhs).is_none() || constant_value(ctx, rhs).is_some() {
            return false;
        }
        rewriter.set_operands(op, &[rhs, lhs]);
        true
    }
}
