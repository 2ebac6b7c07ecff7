//! Each rewrite rule of `resolve-aliases` on its own (`hat_passes::resolve_aliases::rules`):
//! it proves its own equality with no other rule, the equality is not proven without it (so the
//! rule is what does it), its side condition stops it where the equality would be false, and
//! its two sides evaluate equal (by `arith`'s rules, 64 bits) for every value tried that meets
//! the condition. Then a few spellings of a parity, proven with every rule from the residue
//! fact.

use hat_passes::resolve_aliases::language::{evaluate, LeafFacts};
use hat_passes::resolve_aliases::rules::{proves, RULE_NAMES};

/// What a leaf of a rule's instance may be.
#[derive(Copy, Clone)]
enum Kind {
    Boolean,
    NonNegative,
    Any,
}

impl Kind {
    fn facts(self) -> LeafFacts {
        match self {
            Kind::Boolean => LeafFacts { nonneg: true, boolean: true },
            Kind::NonNegative => LeafFacts { nonneg: true, boolean: false },
            Kind::Any => LeafFacts::default(),
        }
    }

    fn samples(self) -> Vec<i64> {
        match self {
            Kind::Boolean => vec![0, 1],
            Kind::NonNegative => (0..40).chain([1 << 40, (1 << 62) + 3, i64::MAX - 2]).collect(),
            Kind::Any => (-40..40).chain([i64::MIN, i64::MIN + 1, i64::MAX]).collect(),
        }
    }
}

/// Leaves and what each may be.
type Leaves = &'static [(&'static str, Kind)];

/// A spelling and when it is true, as a function of the induction variable.
type Spelling = (&'static str, fn(i64) -> bool);

struct Case {
    rule: &'static str,
    leaves: Leaves,
    modulus: Option<i64>,
    lhs: &'static str,
    rhs: &'static str,
    /// An equality of the same shape that the rule must not prove (its side condition fails,
    /// and it would be false), with its leaves.
    refused: Option<(Leaves, &'static str, &'static str)>,
}

const CASES: &[Case] = &[
    Case {
        rule: "select-true",
        leaves: &[("a", Kind::Any), ("b", Kind::Any)],
        modulus: None,
        lhs: "(select 1 a b)",
        rhs: "a",
        refused: None,
    },
    Case {
        rule: "select-false",
        leaves: &[("a", Kind::Any), ("b", Kind::Any)],
        modulus: None,
        lhs: "(select 0 a b)",
        rhs: "b",
        refused: None,
    },
    Case {
        rule: "select-same",
        leaves: &[("c", Kind::Boolean), ("a", Kind::Any)],
        modulus: None,
        lhs: "(select c a a)",
        rhs: "a",
        refused: None,
    },
    Case {
        rule: "select-not",
        leaves: &[("c", Kind::Boolean), ("a", Kind::Any), ("b", Kind::Any)],
        modulus: None,
        lhs: "(select (xor c 1) a b)",
        rhs: "(select c b a)",
        refused: Some((
            &[("c", Kind::Any), ("a", Kind::Any), ("b", Kind::Any)],
            "(select (xor c 1) a b)",
            "(select c b a)",
        )),
    },
    Case {
        rule: "xor-involution",
        leaves: &[("c", Kind::Any), ("k", Kind::Any)],
        modulus: None,
        lhs: "(xor (xor c k) k)",
        rhs: "c",
        refused: None,
    },
    Case {
        rule: "xor-commute",
        leaves: &[("a", Kind::Any), ("b", Kind::Any)],
        modulus: None,
        lhs: "(xor a b)",
        rhs: "(xor b a)",
        refused: None,
    },
    Case {
        rule: "and-commute",
        leaves: &[("a", Kind::Any), ("b", Kind::Any)],
        modulus: None,
        lhs: "(and a b)",
        rhs: "(and b a)",
        refused: None,
    },
    Case {
        rule: "add-commute",
        leaves: &[("a", Kind::Any), ("b", Kind::Any)],
        modulus: None,
        lhs: "(add a b)",
        rhs: "(add b a)",
        refused: None,
    },
    Case {
        rule: "eq-commute",
        leaves: &[("a", Kind::Any), ("b", Kind::Any)],
        modulus: None,
        lhs: "(eq a b)",
        rhs: "(eq b a)",
        refused: None,
    },
    Case {
        rule: "ne-commute",
        leaves: &[("a", Kind::Any), ("b", Kind::Any)],
        modulus: None,
        lhs: "(ne a b)",
        rhs: "(ne b a)",
        refused: None,
    },
    Case {
        rule: "ne-is-not-eq",
        leaves: &[("a", Kind::Any), ("b", Kind::Any)],
        modulus: None,
        lhs: "(ne a b)",
        rhs: "(xor (eq a b) 1)",
        refused: None,
    },
    Case {
        rule: "eq-true",
        leaves: &[("p", Kind::Boolean)],
        modulus: None,
        lhs: "(eq p 1)",
        rhs: "p",
        refused: Some((&[("p", Kind::Any)], "(eq p 1)", "p")),
    },
    Case {
        rule: "eq-false",
        leaves: &[("p", Kind::Boolean)],
        modulus: None,
        lhs: "(eq p 0)",
        rhs: "(xor p 1)",
        refused: Some((&[("p", Kind::Any)], "(eq p 0)", "(xor p 1)")),
    },
    Case {
        rule: "mask-is-remu",
        leaves: &[("x", Kind::Any)],
        modulus: None,
        lhs: "(and x 3)",
        rhs: "(remu x 4)",
        refused: Some((&[("x", Kind::Any)], "(and x 5)", "(remu x 6)")),
    },
    Case {
        rule: "rems-nonneg-is-remu",
        leaves: &[("x", Kind::NonNegative)],
        modulus: None,
        lhs: "(rems x 3)",
        rhs: "(remu x 3)",
        refused: Some((&[("x", Kind::Any)], "(rems x 3)", "(remu x 3)")),
    },
    Case {
        rule: "remu-of-add",
        leaves: &[("x", Kind::NonNegative)],
        modulus: None,
        lhs: "(remu (add x 1) 3)",
        rhs: "(remu (add (remu x 3) 1) 3)",
        refused: Some((&[("x", Kind::Any)], "(remu (add x 1) 3)", "(remu (add (remu x 3) 1) 3)")),
    },
    Case {
        rule: "remu-idempotent",
        leaves: &[("x", Kind::Any)],
        modulus: None,
        lhs: "(remu (remu x 6) 6)",
        rhs: "(remu x 6)",
        refused: Some((&[("x", Kind::Any)], "(remu (remu x 6) 4)", "(remu x 4)")),
    },
    Case {
        rule: "remu-refine",
        leaves: &[("x", Kind::Any)],
        modulus: Some(6),
        lhs: "(remu x 3)",
        rhs: "(remu (remu x 6) 3)",
        refused: Some((&[("x", Kind::Any)], "(remu x 4)", "(remu (remu x 6) 4)")),
    },
];

fn facts(leaves: &[(&'static str, Kind)]) -> Vec<(&'static str, LeafFacts)> {
    leaves.iter().map(|&(n, k)| (n, k.facts())).collect()
}

/// Every assignment of the leaves' samples.
fn assignments(leaves: &[(&'static str, Kind)]) -> Vec<Vec<(&'static str, i64)>> {
    leaves.iter().fold(vec![Vec::new()], |partial, &(name, kind)| {
        partial
            .iter()
            .flat_map(|p| {
                kind.samples().into_iter().map(move |v| {
                    let mut p = p.clone();
                    p.push((name, v));
                    p
                })
            })
            .collect()
    })
}

#[test]
fn every_rule_has_a_case() {
    for name in RULE_NAMES {
        assert!(CASES.iter().any(|c| c.rule == *name), "no case for rule {name}");
    }
}

#[test]
fn each_rule_proves_its_equality_alone_and_nothing_else_does() {
    for case in CASES {
        let leaves = facts(case.leaves);
        let with = proves(&[case.rule], &leaves, case.modulus, &[], case.lhs, case.rhs).unwrap();
        assert!(with, "{}: does not prove {} = {}", case.rule, case.lhs, case.rhs);
        let others: Vec<&str> = RULE_NAMES.iter().copied().filter(|n| *n != case.rule).collect();
        // Commutativity is shared by several rules' instances; the rest must need their rule.
        if !case.rule.ends_with("-commute") {
            let without = proves(&others, &leaves, case.modulus, &[], case.lhs, case.rhs).unwrap();
            assert!(!without, "{}: {} = {} is proven without it", case.rule, case.lhs, case.rhs);
        }
    }
}

#[test]
fn each_side_condition_stops_its_rule_where_the_equality_is_false() {
    for case in CASES {
        let Some((leaves, lhs, rhs)) = case.refused else { continue };
        let proven = proves(&[case.rule], &facts(leaves), case.modulus, &[], lhs, rhs).unwrap();
        assert!(!proven, "{}: proves {lhs} = {rhs} with leaves {:?}", case.rule, leaves.len());
        let false_somewhere = assignments(leaves).iter().any(|a| evaluate(lhs, a) != evaluate(rhs, a));
        assert!(
            false_somewhere,
            "{}: the refused {lhs} = {rhs} is never false: not a test of the condition",
            case.rule
        );
    }
}

#[test]
fn each_rules_two_sides_agree_on_every_value_tried() {
    for case in CASES {
        for assignment in assignments(case.leaves) {
            let (l, r) = (evaluate(case.lhs, &assignment), evaluate(case.rhs, &assignment));
            assert!(l.is_some(), "{}: {} does not evaluate", case.rule, case.lhs);
            assert_eq!(l, r, "{}: {} != {} at {assignment:?}", case.rule, case.lhs, case.rhs);
        }
    }
}

/// The spellings of "g is even" with the fact `remu(g, 6) = r`, each proven the constant it is
/// on every residue by the whole rule set.
#[test]
fn spellings_of_a_parity_become_constants_on_each_residue() {
    let spellings: &[Spelling] = &[
        ("(eq (rems g 2) 0)", |g| g % 2 == 0),
        ("(eq (and g 1) 1)", |g| g % 2 == 1),
        ("(eq (rems (add g 1) 2) 0)", |g| g % 2 == 1),
        ("(ne 0 (remu g 2))", |g| g % 2 == 1),
        ("(eq (remu (add g 2) 3) 0)", |g| g % 3 == 1),
        ("(select (eq (rems g 2) 0) a b)", |g| g % 2 == 0),
    ];
    let leaves = [("g", Kind::NonNegative.facts()), ("a", LeafFacts::default()), ("b", LeafFacts::default())];
    for &(spelling, truth) in spellings {
        for r in 0..6 {
            let residue = r.to_string();
            let fact = [("(remu g 6)", residue.as_str())];
            let expected = if spelling.starts_with("(select") {
                if truth(r) {
                    "a"
                } else {
                    "b"
                }
            } else if truth(r) {
                "1"
            } else {
                "0"
            };
            let proven = proves(RULE_NAMES, &leaves, Some(6), &fact, spelling, expected).unwrap();
            assert!(proven, "{spelling} is not {expected} when g mod 6 = {r}");
        }
    }
}
