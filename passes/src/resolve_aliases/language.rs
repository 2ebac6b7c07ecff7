//! The e-graph's language: the index- and `i1`-valued arithmetic of a loop body and the
//! `arith.select`s that choose buffers, with leaves for what the body does not compute (its
//! boundary: values from outside the loop, the induction variable, what an unmodelled op
//! produces). [`Facts`] is the e-class analysis: the constant a class provably equals, whether
//! it is known non-negative, whether it is a boolean (0 or 1). Constants fold through
//! [`ScalarOp::evaluate`], the one definition of what `arith` computes, in 64 bits (`index`);
//! only ops whose operands are `index`, `i64` or `i1` are modelled, and on `i1` only the ops
//! whose 64-bit result equals the 1-bit one on 0 and 1 (`andi`, `ori`, `xori`, `cmpi eq/ne`,
//! `select`), so folding in 64 bits is exact.
//!
//! The rewrite rules are in [`super::rules`]; `docs/passes/resolve-aliases.md` states each with
//! why it is sound.

use egg::{Analysis, DidMerge, EGraph, Id, Language, Symbol};
use hat_dialects::semantics::{IntPredicate, Scalar, ScalarOp, ScalarType};
use rustc_hash::FxHashMap;

pub use expression::AliasExpr;

/// The language, in its own module: `define_language!` writes no docs on the variants (each is
/// the `arith` op of its name, `Num` a constant, `Leaf` a boundary value).
mod expression {
    #![allow(missing_docs)]
    use egg::{define_language, Id, Symbol};

    define_language! {
        /// An expression of a loop body.
        pub enum AliasExpr {
            "add" = Add([Id; 2]),
            "sub" = Sub([Id; 2]),
            "mul" = Mul([Id; 2]),
            "rems" = RemS([Id; 2]),
            "remu" = RemU([Id; 2]),
            "and" = And([Id; 2]),
            "or" = Or([Id; 2]),
            "xor" = Xor([Id; 2]),
            "eq" = Eq([Id; 2]),
            "ne" = Ne([Id; 2]),
            "slt" = Slt([Id; 2]),
            "sle" = Sle([Id; 2]),
            "sgt" = Sgt([Id; 2]),
            "sge" = Sge([Id; 2]),
            "ult" = Ult([Id; 2]),
            "ule" = Ule([Id; 2]),
            "ugt" = Ugt([Id; 2]),
            "uge" = Uge([Id; 2]),
            "select" = Select([Id; 3]),
            Num(i64),
            Leaf(Symbol),
        }
    }
}

impl AliasExpr {
    /// The node of a scalar op with these children, when the language models it.
    pub fn from_scalar_op(op: ScalarOp, children: &[Id]) -> Option<AliasExpr> {
        use AliasExpr as E;
        let two = |f: fn([Id; 2]) -> AliasExpr| (children.len() == 2).then(|| f([children[0], children[1]]));
        match op {
            ScalarOp::AddI => two(E::Add),
            ScalarOp::SubI => two(E::Sub),
            ScalarOp::MulI => two(E::Mul),
            ScalarOp::RemSI => two(E::RemS),
            ScalarOp::RemUI => two(E::RemU),
            ScalarOp::AndI => two(E::And),
            ScalarOp::OrI => two(E::Or),
            ScalarOp::XorI => two(E::Xor),
            ScalarOp::CmpI(predicate) => two(match predicate {
                IntPredicate::Eq => E::Eq,
                IntPredicate::Ne => E::Ne,
                IntPredicate::Slt => E::Slt,
                IntPredicate::Sle => E::Sle,
                IntPredicate::Sgt => E::Sgt,
                IntPredicate::Sge => E::Sge,
                IntPredicate::Ult => E::Ult,
                IntPredicate::Ule => E::Ule,
                IntPredicate::Ugt => E::Ugt,
                IntPredicate::Uge => E::Uge,
            }),
            ScalarOp::Select => (children.len() == 3).then(|| E::Select([children[0], children[1], children[2]])),
            _ => None,
        }
    }

    /// The scalar op a non-leaf node computes (`None` for leaves, constants and `select`).
    fn scalar_op(&self) -> Option<ScalarOp> {
        use AliasExpr as E;
        Some(match self {
            E::Add(_) => ScalarOp::AddI,
            E::Sub(_) => ScalarOp::SubI,
            E::Mul(_) => ScalarOp::MulI,
            E::RemS(_) => ScalarOp::RemSI,
            E::RemU(_) => ScalarOp::RemUI,
            E::And(_) => ScalarOp::AndI,
            E::Or(_) => ScalarOp::OrI,
            E::Xor(_) => ScalarOp::XorI,
            E::Eq(_) => ScalarOp::CmpI(IntPredicate::Eq),
            E::Ne(_) => ScalarOp::CmpI(IntPredicate::Ne),
            E::Slt(_) => ScalarOp::CmpI(IntPredicate::Slt),
            E::Sle(_) => ScalarOp::CmpI(IntPredicate::Sle),
            E::Sgt(_) => ScalarOp::CmpI(IntPredicate::Sgt),
            E::Sge(_) => ScalarOp::CmpI(IntPredicate::Sge),
            E::Ult(_) => ScalarOp::CmpI(IntPredicate::Ult),
            E::Ule(_) => ScalarOp::CmpI(IntPredicate::Ule),
            E::Ugt(_) => ScalarOp::CmpI(IntPredicate::Ugt),
            E::Uge(_) => ScalarOp::CmpI(IntPredicate::Uge),
            E::Select(_) | E::Num(_) | E::Leaf(_) => return None,
        })
    }

    /// Whether the node's value is 0 or 1 whatever its operands (a comparison).
    fn is_comparison(&self) -> bool {
        matches!(self.scalar_op(), Some(ScalarOp::CmpI(_)))
    }
}

/// What is known of one leaf when it enters the e-graph.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LeafFacts {
    /// The leaf is never negative (read as a signed 64-bit integer).
    pub nonneg: bool,
    /// The leaf is 0 or 1 (an `i1`).
    pub boolean: bool,
}

/// The e-class analysis (see the module documentation).
#[derive(Debug, Default)]
pub struct Facts {
    /// What each leaf is known to be.
    pub leaves: FxHashMap<Symbol, LeafFacts>,
    /// The modulus of the asserted residue fact (`remu(iv, modulus) = r`), when there is one:
    /// the rule `remu-refine` rewrites `remu(x, m)` through it.
    pub modulus: Option<i64>,
    /// Two classes with different constants were merged: the facts contradict each other (the
    /// asserted residue cannot happen), and nothing extracted may be trusted.
    pub contradiction: bool,
}

/// What the analysis knows of one e-class.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassFacts {
    /// The constant the class equals.
    pub constant: Option<i64>,
    /// The class is never negative.
    pub nonneg: bool,
    /// The class is 0 or 1.
    pub boolean: bool,
}

/// The e-graph of the resolution.
pub type AliasGraph = EGraph<AliasExpr, Facts>;

/// The constant of class `id`, if known.
pub fn constant_of(egraph: &AliasGraph, id: Id) -> Option<i64> {
    egraph[id].data.constant
}

impl Analysis<AliasExpr> for Facts {
    type Data = ClassFacts;

    fn make(egraph: &mut AliasGraph, enode: &AliasExpr, _id: Id) -> ClassFacts {
        let data = |id: &Id| egraph[*id].data;
        let constant = match enode {
            AliasExpr::Num(n) => Some(*n),
            AliasExpr::Leaf(_) => None,
            AliasExpr::Select([c, a, b]) => match data(c).constant {
                Some(0) => data(b).constant,
                Some(_) => data(a).constant,
                None => None,
            },
            other => {
                let values: Option<Vec<Scalar>> =
                    other.children().iter().map(|c| data(c).constant.map(Scalar::Int)).collect();
                let op = other.scalar_op().expect("only leaves, constants and select have no scalar op");
                values.and_then(|values| fold(op, &values))
            }
        };
        let (nonneg, boolean) = match enode {
            AliasExpr::Num(n) => (*n >= 0, *n == 0 || *n == 1),
            AliasExpr::Leaf(symbol) => {
                let facts = egraph.analysis.leaves.get(symbol).copied().unwrap_or_default();
                (facts.nonneg || facts.boolean, facts.boolean)
            }
            AliasExpr::Select([_, a, b]) => (data(a).nonneg && data(b).nonneg, data(a).boolean && data(b).boolean),
            // Assumption (documented): index arithmetic does not wrap past 2^63 in the loops
            // resolved (an iteration number plus a small constant).
            AliasExpr::Add([a, b]) | AliasExpr::Mul([a, b]) => (data(a).nonneg && data(b).nonneg, false),
            AliasExpr::RemS([a, _]) => (data(a).nonneg, data(a).boolean),
            AliasExpr::RemU([_, m]) => (matches!(data(m).constant, Some(m) if m > 0), data(m).constant == Some(2)),
            AliasExpr::And([a, b]) => (data(a).nonneg || data(b).nonneg, data(a).boolean || data(b).boolean),
            AliasExpr::Or([a, b]) | AliasExpr::Xor([a, b]) => {
                (data(a).nonneg && data(b).nonneg, data(a).boolean && data(b).boolean)
            }
            node if node.is_comparison() => (true, true),
            _ => (false, false),
        };
        let constant_facts = constant.map(|n| (n >= 0, n == 0 || n == 1)).unwrap_or((false, false));
        ClassFacts { constant, nonneg: nonneg || constant_facts.0, boolean: boolean || constant_facts.1 }
    }

    fn merge(&mut self, a: &mut ClassFacts, b: ClassFacts) -> DidMerge {
        let before = *a;
        match (a.constant, b.constant) {
            (Some(x), Some(y)) if x != y => self.contradiction = true,
            (None, Some(y)) => a.constant = Some(y),
            _ => {}
        }
        a.nonneg |= b.nonneg;
        a.boolean |= b.boolean;
        DidMerge(*a != before, *a != b)
    }

    fn modify(egraph: &mut AliasGraph, id: Id) {
        if let Some(n) = egraph[id].data.constant {
            let constant = egraph.add(AliasExpr::Num(n));
            egraph.union(id, constant);
        }
    }
}

/// `op` on constant operands, in `index`'s 64 bits; `None` where it fails (division by zero) or
/// MLIR leaves it undefined.
fn fold(op: ScalarOp, operands: &[Scalar]) -> Option<i64> {
    let index = ScalarType::INDEX;
    let evaluation = op.evaluate(operands, index, index).ok()?;
    Some(evaluation.defined_value()?.as_i64())
}

/// The value of `expr` (an s-expression of [`AliasExpr`]) with each leaf's value from
/// `leaves`, by `arith`'s rules in 64 bits; `None` when a leaf is missing or an op fails. For
/// testing that each rule's two sides agree.
pub fn evaluate(expr: &str, leaves: &[(&str, i64)]) -> Option<i64> {
    let expr: egg::RecExpr<AliasExpr> = expr.parse().ok()?;
    let mut values: Vec<i64> = Vec::with_capacity(expr.as_ref().len());
    for node in expr.as_ref() {
        let value = match node {
            AliasExpr::Num(n) => *n,
            AliasExpr::Leaf(symbol) => leaves.iter().find(|(n, _)| *n == symbol.as_str())?.1,
            AliasExpr::Select([c, a, b]) => {
                if values[usize::from(*c)] != 0 {
                    values[usize::from(*a)]
                } else {
                    values[usize::from(*b)]
                }
            }
            other => {
                let operands: Vec<Scalar> =
                    other.children().iter().map(|&c| Scalar::Int(values[usize::from(c)])).collect();
                fold(other.scalar_op()?, &operands)?
            }
        };
        values.push(value);
    }
    values.last().copied()
}
