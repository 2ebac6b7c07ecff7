//! The race lint against the race check, on generated kernels (`tests/race_gen`): for each
//! kernel and its grid, the lint's verdict (`KernelEffects::races`, what `race-lint` reports)
//! and the CPU backend's race check on a run must agree:
//! - every race the run finds, the lint reports (as a race, or as a possible one);
//! - a race the lint calls certain (every index and guard folded to numbers) happens in the run,
//!   unless the run stopped first at an out-of-bounds access (the lint takes such an access to
//!   touch nothing and goes on);
//! - the lint may report more only where it says it cannot prove (an index or guard on loaded
//!   data, a loop whose bounds do not fold): those are counted and printed.

mod kernel_gen;
mod race_gen;

use hat_ir::{parse_source, verify_module, Op};
use hat_passes::transfers::kernel_effects::races::RaceKind;
use hat_passes::transfers::kernel_effects::{Dispatch, KernelEffects};
use hat_runtime::{Backend, BufferLayout, CpuBackend, ElementType, KernelArg, RuntimeError};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use race_gen::{race_case, race_text, RaceCase};

fn find_kernel(ctx: &hat_ir::Context, module: Op) -> Op {
    ctx.walk(module).into_iter().find(|&op| hat_ir::verifier::symbol_name(ctx, op) == Some("k")).expect("@k")
}

/// What the lint says of one case.
#[derive(Debug, PartialEq, Eq)]
enum Static {
    Clean,
    /// A race it can name (everything folded).
    Certain,
    /// Only races it cannot prove (unproven index, guard on data).
    Possible,
}

/// What the race check says of one run.
#[derive(Debug)]
enum Dynamic {
    Clean,
    Race(String),
    /// It stopped at an out-of-bounds access before any race.
    Stopped,
}

fn lint(race: &RaceCase, text: &str) -> Static {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "case.hat", text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let effects = KernelEffects::of(&ctx, find_kernel(&ctx, module));
    let case = &race.case;
    let shape = |s: &[usize]| -> Vec<Option<u64>> { s.iter().map(|&d| Some(d as u64)).collect() };
    let dispatch = Dispatch::new(&[Some(case.grid[0]), Some(case.grid[1])])
        .with_shape(0, &shape(&case.src_shape))
        .with_shape(1, &shape(&case.dst_shape));
    let races = effects.races(&dispatch);
    if races.iter().any(|r| r.kind != RaceKind::UnprovenIndex && !r.uncertain) {
        Static::Certain
    } else if races.is_empty() {
        Static::Clean
    } else {
        Static::Possible
    }
}

fn check(race: &RaceCase, text: &str) -> Dynamic {
    let case = &race.case;
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "case.hat", text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let verified = verify_module(&ctx, module).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let mut backend = CpuBackend::new();
    backend.set_check_races(true);
    let mut buffer = |shape: &[usize]| {
        let layout = BufferLayout { element: ElementType::I32, shape: shape.to_vec() };
        let buffer = backend.allocate(&layout).expect("allocates");
        let values: Vec<u8> = (0..layout.len() as i32).flat_map(|i| (i + 1).to_le_bytes()).collect();
        backend.copy_to_device(buffer, 0, &values).expect("copies");
        buffer
    };
    let (src, dst) = (buffer(&case.src_shape), buffer(&case.dst_shape));
    let kernel = verified.nested(find_kernel(&ctx, module)).expect("nested");
    let handle = backend.compile_kernel(kernel).expect("compiles");
    let grid = [case.grid[0], case.grid[1], 1];
    match backend.dispatch(handle, grid, &[KernelArg::Buffer(src), KernelArg::Buffer(dst)]) {
        Ok(()) => Dynamic::Clean,
        Err(error @ RuntimeError::DataRace(_)) => Dynamic::Race(error.to_string()),
        Err(RuntimeError::DeviceOutOfBounds { .. }) => Dynamic::Stopped,
        Err(error) => panic!("{error}\n{text}"),
    }
}

#[derive(Debug, Default)]
struct Tally {
    both_clean: usize,
    both_race: usize,
    possible_and_race: usize,
    /// The lint could not prove it race-free; the run found no race.
    possible_only: usize,
    /// The lint found a race the run did not reach (it stopped out of bounds first).
    certain_but_stopped: usize,
    stopped_clean: usize,
}

fn compare(race: &RaceCase, tally: &mut Tally) -> Result<(), String> {
    let text = race_text(race);
    let (verdict, run) = (lint(race, &text), check(race, &text));
    let context =
        || format!("variant {:?}, grid {:?}, lint {verdict:?}, run {run:?}\n{text}", race.variant, race.case.grid);
    match (&verdict, &run) {
        (Static::Clean, Dynamic::Race(message)) => {
            return Err(format!("the lint missed a race: {message}\n{}", context()))
        }
        (Static::Certain, Dynamic::Clean) => {
            return Err(format!("the lint reports a race the run does not have\n{}", context()))
        }
        (Static::Clean, Dynamic::Clean) => tally.both_clean += 1,
        (Static::Certain, Dynamic::Race(_)) => tally.both_race += 1,
        (Static::Possible, Dynamic::Race(_)) => tally.possible_and_race += 1,
        (Static::Possible, Dynamic::Clean) => tally.possible_only += 1,
        (Static::Certain, Dynamic::Stopped) => tally.certain_but_stopped += 1,
        (_, Dynamic::Stopped) => tally.stopped_clean += 1,
    }
    Ok(())
}

#[test]
fn the_lint_and_the_race_check_agree_on_generated_kernels() {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(512);
    let mut runner = TestRunner::new(Config { cases, ..Config::default() });
    let tally = std::cell::RefCell::new(Tally::default());
    let result = runner.run(&race_case(), |race| {
        compare(&race, &mut tally.borrow_mut()).map_err(TestCaseError::fail)?;
        Ok(())
    });
    let tally = tally.into_inner();
    println!("{cases} generated kernels: {tally:#?}");
    if let Err(error) = result {
        panic!("{error}");
    }
    // The generator must exercise both verdicts.
    assert!(tally.both_race > 0 && tally.both_clean > 0, "{tally:?}");
}
