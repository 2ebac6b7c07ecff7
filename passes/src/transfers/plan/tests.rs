//! The planner on small programs: the plan's shape (where each copy goes) on the constructs of
//! issue 22. The file tests (`tests/filetests/insert-transfers/lcm/`) run the same programs
//! against the reference semantics and show the bytes moved.

use crate::testing::run_pipeline;

const PIPELINE: &str = "builtin.module(insert-transfers{strategy=lcm})";

fn plan(text: &str) -> String {
    run_pipeline(PIPELINE, text)
}

fn file(name: &str) -> String {
    let path = format!("{}/../tests/filetests/insert-transfers/lcm/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn print_plans() {
    for name in [
        "ladder.hat",
        "fresh-carried.hat",
        "aliased-call.hat",
        "do-while.hat",
        "swap-branch.hat",
        "conditional-edit.hat",
    ] {
        println!("==== {name}\n{}", plan(&file(name)));
    }
}
