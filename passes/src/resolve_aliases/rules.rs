//! The equational rules the e-graph saturates with. Each rule is an equality that holds for
//! every value of its variables (under the side condition it checks), so a union it makes never
//! equates two expressions that could differ at run time; constant folding is the analysis's
//! ([`super::language::Facts`]). `docs/passes/resolve-aliases.md` states each rule with why it
//! is sound; `tests/resolve_aliases_rules.rs` tests each on its own.
//!
//! The one assumption beyond the rules of `arith`: index arithmetic in a resolved loop does not
//! wrap past 2^63 (an induction variable plus a constant stays below `i64::MAX`).

use super::language::{constant_of, AliasExpr, AliasGraph, Facts};
use egg::{rewrite, Applier, Id, PatternAst, Rewrite, Subst, Symbol, Var};

/// A rule of the e-graph.
pub type Rule = Rewrite<AliasExpr, Facts>;

/// The names of every rule, in the order of [`rules`].
pub const RULE_NAMES: &[&str] = &[
    "select-true",
    "select-false",
    "select-same",
    "select-not",
    "xor-involution",
    "xor-commute",
    "and-commute",
    "add-commute",
    "eq-commute",
    "ne-commute",
    "ne-is-not-eq",
    "eq-true",
    "eq-false",
    "mask-is-remu",
    "rems-nonneg-is-remu",
    "remu-of-add",
    "remu-idempotent",
    "remu-refine",
];

/// Every rule.
pub fn rules() -> Vec<Rule> {
    RULE_NAMES.iter().map(|name| rule(name).expect("every listed rule exists")).collect()
}

/// The rule named `name`.
pub fn rule(name: &str) -> Option<Rule> {
    Some(match name {
        "select-true" => rewrite!("select-true"; "(select 1 ?a ?b)" => "?a"),
        "select-false" => rewrite!("select-false"; "(select 0 ?a ?b)" => "?b"),
        "select-same" => rewrite!("select-same"; "(select ?c ?a ?a)" => "?a"),
        "select-not" => rewrite!("select-not"; "(select (xor ?c 1) ?a ?b)" => "(select ?c ?b ?a)" if is_boolean("?c")),
        "xor-involution" => rewrite!("xor-involution"; "(xor (xor ?c ?k) ?k)" => "?c"),
        "xor-commute" => rewrite!("xor-commute"; "(xor ?a ?b)" => "(xor ?b ?a)"),
        "and-commute" => rewrite!("and-commute"; "(and ?a ?b)" => "(and ?b ?a)"),
        "add-commute" => rewrite!("add-commute"; "(add ?a ?b)" => "(add ?b ?a)"),
        "eq-commute" => rewrite!("eq-commute"; "(eq ?a ?b)" => "(eq ?b ?a)"),
        "ne-commute" => rewrite!("ne-commute"; "(ne ?a ?b)" => "(ne ?b ?a)"),
        "ne-is-not-eq" => rewrite!("ne-is-not-eq"; "(ne ?a ?b)" => "(xor (eq ?a ?b) 1)"),
        "eq-true" => rewrite!("eq-true"; "(eq ?p 1)" => "?p" if is_boolean("?p")),
        "eq-false" => rewrite!("eq-false"; "(eq ?p 0)" => "(xor ?p 1)" if is_boolean("?p")),
        "mask-is-remu" => rewrite!("mask-is-remu"; "(and ?x ?m)" => { MaskIsRemu { x: var("?x"), m: var("?m") } }),
        "rems-nonneg-is-remu" => rewrite!("rems-nonneg-is-remu"; "(rems ?x ?m)" => "(remu ?x ?m)"
            if is_nonneg("?x") if is_positive_constant("?m")),
        "remu-of-add" => rewrite!("remu-of-add"; "(remu (add ?x ?c) ?m)" => "(remu (add (remu ?x ?m) ?c) ?m)"
            if is_nonneg("?x") if is_nonneg_constant("?c") if is_positive_constant("?m")),
        "remu-idempotent" => rewrite!("remu-idempotent"; "(remu (remu ?x ?m) ?m)" => "(remu ?x ?m)"
            if is_positive_constant("?m")),
        "remu-refine" => rewrite!("remu-refine"; "(remu ?x ?m)" => { RemuRefine { x: var("?x"), m: var("?m") } }),
        _ => return None,
    })
}

fn var(name: &str) -> Var {
    name.parse().expect("a pattern variable")
}

fn is_boolean(name: &str) -> impl Fn(&mut AliasGraph, Id, &Subst) -> bool {
    let v = var(name);
    move |egraph, _, subst| egraph[subst[v]].data.boolean
}

fn is_nonneg(name: &str) -> impl Fn(&mut AliasGraph, Id, &Subst) -> bool {
    let v = var(name);
    move |egraph, _, subst| egraph[subst[v]].data.nonneg
}

fn is_positive_constant(name: &str) -> impl Fn(&mut AliasGraph, Id, &Subst) -> bool {
    let v = var(name);
    move |egraph, _, subst| matches!(constant_of(egraph, subst[v]), Some(m) if m > 0)
}

fn is_nonneg_constant(name: &str) -> impl Fn(&mut AliasGraph, Id, &Subst) -> bool {
    let v = var(name);
    move |egraph, _, subst| matches!(constant_of(egraph, subst[v]), Some(c) if c >= 0)
}

/// `and(x, 2^j - 1) = remu(x, 2^j)`: the low j bits, for any x (two's complement).
struct MaskIsRemu {
    x: Var,
    m: Var,
}

impl Applier<AliasExpr, Facts> for MaskIsRemu {
    fn apply_one(
        &self,
        egraph: &mut AliasGraph,
        eclass: Id,
        subst: &Subst,
        _ast: Option<&PatternAst<AliasExpr>>,
        _rule: Symbol,
    ) -> Vec<Id> {
        let Some(mask) = constant_of(egraph, subst[self.m]) else { return Vec::new() };
        // A mask of j low bits, j from 1 to 62 (so 2^j is a positive index).
        if mask <= 0 || mask >= (1 << 62) || (mask + 1) & mask != 0 {
            return Vec::new();
        }
        let modulus = egraph.add(AliasExpr::Num(mask + 1));
        let remainder = egraph.add(AliasExpr::RemU([subst[self.x], modulus]));
        if egraph.union(eclass, remainder) {
            vec![remainder]
        } else {
            Vec::new()
        }
    }
}

/// `remu(x, m) = remu(remu(x, K), m)` when m divides K, K the modulus of the asserted residue
/// fact: x mod m is determined by x mod K.
struct RemuRefine {
    x: Var,
    m: Var,
}

impl Applier<AliasExpr, Facts> for RemuRefine {
    fn apply_one(
        &self,
        egraph: &mut AliasGraph,
        eclass: Id,
        subst: &Subst,
        _ast: Option<&PatternAst<AliasExpr>>,
        _rule: Symbol,
    ) -> Vec<Id> {
        let (Some(big), Some(m)) = (egraph.analysis.modulus, constant_of(egraph, subst[self.m])) else {
            return Vec::new();
        };
        if m <= 0 || big <= 0 || big == m || big % m != 0 {
            return Vec::new();
        }
        let big_id = egraph.add(AliasExpr::Num(big));
        let inner = egraph.add(AliasExpr::RemU([subst[self.x], big_id]));
        let refined = egraph.add(AliasExpr::RemU([inner, subst[self.m]]));
        if egraph.union(eclass, refined) {
            vec![refined]
        } else {
            Vec::new()
        }
    }
}

/// Whether `lhs` and `rhs` (s-expressions of [`AliasExpr`]: `(remu iv 2)`, leaves by name)
/// end in one e-class after saturating with only the rules named, given what each leaf is
/// (`leaves`), the residue fact's modulus, and extra equalities asserted first (`facts`, pairs
/// of expressions). For testing each rule on its own.
pub fn proves(
    names: &[&str],
    leaves: &[(&str, super::language::LeafFacts)],
    modulus: Option<i64>,
    facts: &[(&str, &str)],
    lhs: &str,
    rhs: &str,
) -> Result<bool, String> {
    let rules: Vec<Rule> =
        names.iter().map(|n| rule(n).ok_or_else(|| format!("no rule {n}"))).collect::<Result<_, _>>()?;
    let mut analysis = Facts { modulus, ..Facts::default() };
    for &(name, facts) in leaves {
        analysis.leaves.insert(Symbol::from(name), facts);
    }
    let mut egraph = AliasGraph::new(analysis);
    let add = |egraph: &mut AliasGraph, text: &str| -> Result<Id, String> {
        let expr: egg::RecExpr<AliasExpr> = text.parse().map_err(|e| format!("{text}: {e}"))?;
        Ok(egraph.add_expr(&expr))
    };
    for (a, b) in facts {
        let (a, b) = (add(&mut egraph, a)?, add(&mut egraph, b)?);
        egraph.union(a, b);
    }
    let (l, r) = (add(&mut egraph, lhs)?, add(&mut egraph, rhs)?);
    egraph.rebuild();
    let runner = egg::Runner::default().with_egraph(egraph).with_iter_limit(16).with_node_limit(10_000).run(&rules);
    Ok(runner.egraph.find(l) == runner.egraph.find(r))
}
