//! Not a check: the survey of the generator's constructs, to decide which the differential test
//! turns on by default. For each set of constructs (`HAT_DIFF_SURVEY_SETS`: sets separated by
//! `;`, each as `Constructs::parse` reads it from `none`; by default each construct on its own),
//! runs the cases (`HAT_DIFF_CASES`, default 2,000) against every strategy, counts the failures
//! by strategy and kind (and how many of the failing programs contain the construct), and
//! shrinks the smallest failing program of each kind. With `HAT_DIFF_FINDINGS=dir`, writes each
//! shrunk program to `dir/<set>.<strategy>.<kind>.hat`, its arguments and what differs in a
//! comment at its top.

use super::*;
use program_gen::features::{construct_features, features};

/// One kind of failure of one set: the failing seeds, and which of them contain the constructs.
struct Class {
    strategy: String,
    kind: FailureKind,
    seeds: Vec<u64>,
    with_construct: usize,
    /// The smallest failing case (by its text's length) and its failure.
    smallest: (usize, u64, Failure),
}

#[test]
#[ignore]
fn survey_constructs() {
    let cases = env_number("HAT_DIFF_CASES").unwrap_or(2000);
    let sets: Vec<Constructs> = match std::env::var("HAT_DIFF_SURVEY_SETS") {
        Ok(text) => text
            .split(';')
            .map(|set| Constructs::parse(&set.replace('+', ","), Constructs::NONE).expect("a set of constructs"))
            .collect(),
        Err(_) => Construct::ALL.iter().map(|c| Constructs::of(&[*c])).collect(),
    };
    let findings = std::env::var("HAT_DIFF_FINDINGS").ok();
    for set in sets {
        survey_set(set, cases, findings.as_deref());
    }
}

/// Whether `case` has one of the features that only the constructs of `set` make.
fn has_construct(case: &Case, set: Constructs) -> bool {
    let found = features(case);
    set.list().into_iter().flat_map(|c| construct_features(c, set)).any(|f| found.contains(f))
}

fn survey_set(set: Constructs, cases: u64, findings: Option<&str>) {
    let start = Instant::now();
    let mut classes: Vec<Class> = Vec::new();
    let mut containing = 0;
    for seed in 0..cases {
        let case = differential_case(seed, set);
        let contains = has_construct(&case, set);
        containing += usize::from(contains);
        let size = render(&case.program).len();
        let mut note = |failure: Failure| {
            let class = match classes.iter_mut().position(|c| c.strategy == failure.strategy && c.kind == failure.kind)
            {
                Some(i) => &mut classes[i],
                None => {
                    classes.push(Class {
                        strategy: failure.strategy.clone(),
                        kind: failure.kind.clone(),
                        seeds: Vec::new(),
                        with_construct: 0,
                        smallest: (usize::MAX, seed, failure.clone()),
                    });
                    classes.last_mut().expect("just pushed")
                }
            };
            class.seeds.push(seed);
            class.with_construct += usize::from(contains);
            if size < class.smallest.0 {
                class.smallest = (size, seed, failure);
            }
        };
        let mut bytes: Bytes = Vec::new();
        for strategy in STRATEGIES {
            match check_case(&case, std::slice::from_ref(strategy), &[]) {
                Ok(moved) => bytes.extend(moved),
                Err(failure) => note(failure),
            }
        }
        let moved = |name: &str| bytes.iter().find(|(n, _)| *n == name).map(|(_, b)| *b);
        for (less, more) in BYTE_ORDER {
            if let (Some(a), Some(b)) = (moved(less), moved(more)) {
                if a > b {
                    let message = format!("{less} moved {a} bytes, {more} {b}");
                    note(Failure { strategy: format!("{less} <= {more}"), kind: FailureKind::Bytes, message });
                }
            }
        }
    }
    let name = set.names();
    println!(
        "=== {name}: {cases} cases, {containing} contain the construct, {} failure kind(s) ({:.0} s)",
        classes.len(),
        start.elapsed().as_secs_f64()
    );
    for class in &classes {
        let distinct: std::collections::BTreeSet<u64> = class.seeds.iter().copied().collect();
        let shown: Vec<String> = distinct.iter().take(40).map(u64::to_string).collect();
        println!(
            "== {name}: {} {:?}: {} of {cases} cases ({} containing the construct); seeds {}",
            class.strategy,
            class.kind,
            distinct.len(),
            class.with_construct,
            shown.join(" ")
        );
    }
    for class in classes {
        let (_, seed, failure) = class.smallest;
        let case = differential_case(seed, set);
        let (small, failure) = shrink_failure(case, &failure, STRATEGIES, BYTE_ORDER);
        let text = render(&small.program);
        let contains = has_construct(&small, set);
        let mut header = format!(
            "// constructs: {name}; seed {seed} (HAT_DIFF_CONSTRUCTS=none,{name} HAT_DIFF_SEED={seed}), shrunk\n\
             // strategy `{}` ({:?}): {}\n// the shrunk program {} the construct\n// arguments:\n",
            failure.strategy,
            failure.kind,
            failure.message.replace('\n', "\n// "),
            if contains { "still has" } else { "no longer has" }
        );
        header.push_str(&arguments_text(&small, "//   "));
        println!("--- {name}: {} {:?}, seed {seed}:\n{header}{}", failure.strategy, failure.kind, numbered(&text));
        if let Some(dir) = findings {
            let strategy = failure.strategy.replace(" <= ", "-le-").replace('+', "-");
            let path = format!("{dir}/{}.{strategy}.{:?}.hat", name.replace(',', "+"), failure.kind);
            std::fs::create_dir_all(dir).expect("the findings folder");
            std::fs::write(&path, format!("{header}{text}")).expect("a findings file");
        }
    }
}
