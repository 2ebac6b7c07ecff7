//! The differential test's random programs (`tests/program_gen`, the cases of
//! `tests/transfer_differential.rs`, whose `default` strategy runs `resolve-aliases`) exercise
//! the pass: enough of them have ping-pong loops in each spelling, 3- and 4-way rotations of
//! carried buffers and parities carried as flags, and the pass specialises loops in enough of
//! them. (Whether the results are right is the differential test's job.)

#[allow(dead_code, unused_imports)]
mod program_gen;

use hat_ir::parse_source;
use hat_ir::pass::PassManager;
use program_gen::{differential_case, render, Constructs};

#[test]
fn generated_programs_exercise_resolve_aliases() {
    const CASES: u64 = 2000;
    let mut specialised_cases = 0;
    let mut specialised_loops = 0;
    let (mut three, mut four, mut flags, mut andi, mut plus_one, mut swapped_ne) = (0, 0, 0, 0, 0, 0);
    for seed in 0..CASES {
        let text = render(&differential_case(seed, Constructs::NONE).program);
        three += u64::from(text.contains(":3 = scf.for"));
        four += u64::from(text.contains(":4 = scf.for"));
        flags += u64::from(text.contains("iter_args(%q"));
        andi += u64::from(text.contains("arith.andi"));
        plus_one += u64::from(text.contains("arith.addi %i"));
        swapped_ne += u64::from(text.contains("arith.cmpi ne, %v"));
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, "generated.hat", &text).expect("parses");
        let mut manager = PassManager::new("builtin.module", Default::default());
        manager.add_pipeline(&hat_passes::registry(), "builtin.module(inline,canonicalize,resolve-aliases)").unwrap();
        manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("seed {seed}: {e:?}"));
        let loops: u64 = manager
            .statistics()
            .iter()
            .filter(|(pass, _)| pass == "resolve-aliases")
            .flat_map(|(_, stats)| stats.iter())
            .filter(|(name, _)| name == "num-specialised")
            .map(|(_, n)| *n)
            .sum();
        specialised_loops += loops;
        specialised_cases += u64::from(loops > 0);
    }
    println!(
        "of {CASES} cases: {specialised_cases} with a specialised loop ({specialised_loops} loops); 3-way rotations in {three}, 4-way in {four}; carried parity flags in {flags}; andi in {andi}; (v + 1) in {plus_one}; swapped ne in {swapped_ne}"
    );
    for (what, count, least) in [
        ("a loop specialised", specialised_cases, CASES / 10),
        ("a 3-way rotation", three, CASES / 50),
        ("a 4-way rotation", four, CASES / 100),
        ("a carried parity flag", flags, CASES / 100),
        ("a parity by andi", andi, CASES / 100),
    ] {
        assert!(count >= least, "{what} in only {count} of {CASES} cases (want {least})");
    }
}
