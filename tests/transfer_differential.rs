//! The differential property test of the transfer strategies: random compute programs
//! (`program_gen`) run under the reference semantics ("copy everything, every time", on the CPU
//! backend, whose fresh device memory is poison) and, after each strategy's pipeline, in
//! explicit mode. Every observation must be equal: the entry's results, the final host copy of
//! every buffer argument, and what every host-function call saw (its scalar arguments and the
//! contents of each buffer it may read). And bytes moved must satisfy
//! `static <= kernel <= jic` and `tracking <= kernel`.
//!
//! The 2,000 cases (seeds 0..2000) run in four shards, which the test harness runs in
//! parallel: `strategies_give_the_reference_results_*` check every observation and the whole
//! byte order. A failure is shrunk (`program_gen::shrink`, for at most a minute) and reported with
//! the hat text of the smallest program that still fails, its arguments, the strategy, the
//! first observation that differs, and the IR after the strategy's pipeline. Each shard also
//! prints how often the tracking strategy moved fewer bytes than the static one, with the
//! smallest such program (`--nocapture`; shrunk first with `HAT_DIFF_SHRINK_EXAMPLES=1`).
//!
//! `HAT_DIFF_SEED=n` reruns one case; `HAT_DIFF_CASES=n` sets the number of cases of each
//! shard. The generator's optional constructs (`program_gen::constructs`: fresh buffers carried
//! through loops, branches that yield buffers, do-while loops, ...) are those of
//! [`DEFAULT_CONSTRUCTS`] (every one the strategies pass on all 2,000 cases) unless
//! `HAT_DIFF_CONSTRUCTS` says otherwise: `all`, `none`, or edits of the default such as
//! `fresh-for,-do-while` (see `Constructs::parse`). The ignored tests are tools: `survey` counts
//! every failure by strategy and kind and shrinks one of each; `survey_constructs` does so for
//! each construct on its own (writing the smallest failing programs to `HAT_DIFF_FINDINGS`);
//! `survey_needed_transfers` deletes each transfer of the static plans in turn to see which the
//! observations notice; `print_case` prints one case.
//!
//! Cost: most of it is the pipelines (each runs the kernel-effects analysis on every dispatch)
//! and the CPU backend's interpretation, so the hat crates' opt-level decides it: the
//! workspace builds them at `opt-level = 2` in test builds, and the 2,000 cases take about
//! 25 s of CPU, about ten times less than at opt-level 0.
//!
//! The host functions the programs declare are bound to recording functions that do what
//! their declarations allow: read arguments are recorded; `write` arguments are not read and
//! get some elements overwritten (not all: a `write` declaration does not promise every
//! element); `readwrite` and undeclared arguments are recorded and one element is changed.

mod case_arguments;
mod program_gen;

use hat_ir::pass::{Pass, PassFailed, PassInfo, PassManager, PassManagerOptions, PassOptions, PassRegistry, PassState};
use hat_ir::{parse_source, print_op, verify_module, Context, Op, OperationState, PrintOptions};
use hat_runtime::{
    ArgEffect, ArgValue, CpuBackend, Executor, ExecutorOptions, HostBuffer, HostCall, Scalar, TransferMode,
};
use program_gen::ast::Case;
use program_gen::{differential_case, numbered, render, shrink, Construct, Constructs, Effect};
use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;
use std::time::{Duration, Instant};

// ----- strategies ------------------------------------------------------------------------------

/// A way of placing transfers: a pipeline, then a run in a transfer mode.
#[derive(Clone, Copy, Debug)]
struct Strategy {
    /// How failures and byte counts name it.
    name: &'static str,
    /// The pass pipeline (MLIR syntax, or a named pipeline).
    pipeline: &'static str,
    /// How the executor runs the result.
    mode: TransferMode,
}

const JIC: Strategy =
    Strategy { name: "jic", pipeline: "insert-transfers{strategy=jic}", mode: TransferMode::Explicit };
const KERNEL: Strategy =
    Strategy { name: "kernel", pipeline: "insert-transfers{strategy=kernel}", mode: TransferMode::Explicit };
const STATIC: Strategy =
    Strategy { name: "static", pipeline: "insert-transfers{strategy=static}", mode: TransferMode::Explicit };
const HOISTED: Strategy = Strategy {
    name: "static+hoist",
    pipeline: "builtin.module(insert-transfers{strategy=static},hoist-transfers)",
    mode: TransferMode::Explicit,
};
const DEFAULT: Strategy = Strategy { name: "default", pipeline: "default", mode: TransferMode::Explicit };
const TRACKING: Strategy = Strategy { name: "tracking", pipeline: "track-accesses", mode: TransferMode::Tracking };

/// Every strategy the test checks.
const STRATEGIES: &[Strategy] = &[JIC, KERNEL, STATIC, HOISTED, DEFAULT, TRACKING];

/// `a <= b` in bytes moved, for each `(a, b)`: the ladder, for every static plan.
const BYTE_ORDER: &[(&str, &str)] = &[
    ("kernel", "jic"),
    ("static", "kernel"),
    ("static+hoist", "kernel"),
    ("default", "kernel"),
    ("tracking", "kernel"),
];

// ----- private passes (to test the harness itself) --------------------------------------------

/// `test-jic`: copies every buffer argument of every launch to the device before it and back
/// after it, as `insert-transfers{strategy=jic}` does; with `skip-copy-in`, skips the copy in
/// of a launch's last buffer argument (a wrong plan the harness must catch).
struct PrivateJic {
    skip_copy_in: bool,
}

impl Pass for PrivateJic {
    fn run(&mut self, ctx: &mut Context, op: Op, _: &mut PassState<'_>) -> Result<(), PassFailed> {
        let to_device = ctx.op_name("buffer.to_device");
        let from_device = ctx.op_name("buffer.from_device");
        for launch in ctx.walk(op) {
            let Some(interface) = ctx.interface::<dyn hat_ir::interfaces::LaunchOpInterface>(launch) else {
                continue;
            };
            let buffers: Vec<_> = ctx.operands(launch)[interface.arguments(ctx, launch)]
                .iter()
                .copied()
                .filter(|&v| ctx.type_kind(ctx.value_type(v)).is_memref())
                .collect();
            let location = ctx.location(launch);
            for (i, &buffer) in buffers.iter().enumerate() {
                if !(self.skip_copy_in && i + 1 == buffers.len()) {
                    let mut state = OperationState::new(to_device, location);
                    state.operands.push(buffer);
                    let copy_in = ctx.create_op(state);
                    ctx.insert_op_before(launch, copy_in);
                }
                let mut state = OperationState::new(from_device, location);
                state.operands.push(buffer);
                let copy_out = ctx.create_op(state);
                ctx.insert_op_after(launch, copy_out);
            }
        }
        Ok(())
    }
}

const TEST_JIC_OPTIONS: &[hat_ir::pass::PassOptionInfo] = &[hat_ir::pass::PassOptionInfo {
    name: "skip-copy-in",
    kind: hat_ir::pass::OptionKind::Bool,
    default: "false",
    help: "leave out the copy in of each launch's last buffer argument",
}];

/// hat's passes and this file's private ones.
fn registry() -> PassRegistry {
    let mut registry = hat_passes::registry();
    registry.register(PassInfo {
        name: "test-jic",
        summary: "jic, written here to test the harness",
        anchor: Some("builtin.module"),
        options: TEST_JIC_OPTIONS,
        create: |options: &PassOptions| Box::new(PrivateJic { skip_copy_in: options.get_bool("skip-copy-in") }),
    });
    registry
}

// ----- running and observing --------------------------------------------------------------------

/// What one host-function call saw, argument by argument.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    /// A scalar.
    Scalar(i64),
    /// A buffer it may read: its contents.
    Buffer(Vec<i32>),
    /// A `write` buffer, which it does not read.
    WriteOnly,
}

/// One host-function call.
#[derive(Clone, Debug, PartialEq)]
struct Call {
    name: String,
    args: Vec<Seen>,
}

/// Everything a run lets anyone observe, and what it moved.
#[derive(Clone, Debug)]
struct Observed {
    results: Vec<ArgValue>,
    buffers: Vec<HostBuffer>,
    calls: Vec<Call>,
    bytes: u64,
    /// Bytes moved per buffer, by the report's name (a parameter's, or `alloc@line:col` for the
    /// buffers one allocation made, summed).
    per_buffer: std::collections::BTreeMap<String, u64>,
}

/// The bytes each strategy moved, by name.
type Bytes = Vec<(&'static str, u64)>;

/// How a strategy went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
enum FailureKind {
    /// The pipeline failed or left invalid IR.
    Pipeline,
    /// The run failed.
    Run,
    /// An observation differs from the reference semantics'.
    Mismatch,
    /// Bytes moved break the order between strategies.
    Bytes,
}

#[derive(Clone, Debug)]
struct Failure {
    strategy: String,
    kind: FailureKind,
    message: String,
}

/// Binds `@observe` and every `@h{k}` of the program to recording functions.
fn register_recorders<'a>(executor: &mut Executor<'a>, case: &Case, log: &Rc<RefCell<Vec<Call>>>) {
    let sink = Rc::clone(log);
    executor.register_host_function_with_effects(
        "observe",
        &[ArgEffect::None],
        Box::new(move |call: &mut HostCall| {
            let value = call.scalar(0)?.as_i64();
            sink.borrow_mut().push(Call { name: "observe".into(), args: vec![Seen::Scalar(value)] });
            Ok(vec![])
        }),
    );
    for (index, func) in case.program.host_funcs.iter().enumerate() {
        let name = format!("h{index}");
        let mut effects: Vec<ArgEffect> = func
            .params
            .iter()
            .map(|(_, effect)| match effect {
                Effect::Read => ArgEffect::Read,
                Effect::Write => ArgEffect::Write,
                Effect::ReadWrite | Effect::Undeclared => ArgEffect::ReadWrite,
            })
            .collect();
        effects.push(ArgEffect::None);
        let func = func.clone();
        let sink = Rc::clone(log);
        let recorded_name = name.clone();
        executor.register_host_function_with_effects(
            &name,
            &effects,
            Box::new(move |call: &mut HostCall| {
                let number = sink.borrow().len() as i64;
                let scalar = call.scalar(func.params.len())?.as_i64();
                let mut args = Vec::new();
                let mut sum = scalar.wrapping_add(number) as i32;
                for (j, (_, effect)) in func.params.iter().enumerate() {
                    if *effect == Effect::Write {
                        args.push(Seen::WriteOnly);
                    } else {
                        let values = call.buffer(j)?.to_i32().ok_or("not an i32 buffer")?;
                        sum = values.iter().fold(sum, |s, v| s.wrapping_add(*v));
                        args.push(Seen::Buffer(values));
                    }
                }
                args.push(Seen::Scalar(scalar));
                sink.borrow_mut().push(Call { name: recorded_name.clone(), args });
                for (j, (shape, effect)) in func.params.iter().enumerate() {
                    let dims: Vec<usize> = shape.0.iter().map(|&d| d as usize).collect();
                    let buffer = match effect {
                        Effect::Read => continue,
                        _ => call.buffer_mut(j)?,
                    };
                    let mut values = buffer.to_i32().ok_or("not an i32 buffer")?;
                    let n = values.len() as i64;
                    if *effect == Effect::Write {
                        // Some elements, never read.
                        for (e, v) in values.iter_mut().enumerate() {
                            if (e as i64 + number) % 3 == 0 {
                                *v = (number * 100 + e as i64 + scalar) as i32;
                            }
                        }
                    } else {
                        let e = (scalar + number).rem_euclid(n) as usize;
                        values[e] = values[e].wrapping_mul(2).wrapping_add(1);
                    }
                    *buffer = HostBuffer::from_i32(&dims, &values).ok_or("same layout")?;
                }
                Ok(if func.returns { vec![Scalar::Int(sum as i64)] } else { vec![] })
            }),
        );
    }
}

/// Parses `text`, runs `pipeline` on it (if any), and runs `@main` in `mode`. Returns the IR
/// that ran, too.
fn run(case: &Case, text: &str, pipeline: Option<&str>, mode: TransferMode) -> Result<(Observed, String), Failure> {
    let fail = |kind: FailureKind, message: String| Failure { strategy: String::new(), kind, message };
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "generated.hat", text)
        .unwrap_or_else(|e| panic!("the generator made text that does not parse: {e:?}\n{}", numbered(text)));
    if let Err(errors) = verify_module(&ctx, module) {
        panic!(
            "the generator made a program that does not verify:\n{}\n{}",
            hat_ir::diagnostics::render_short(&ctx.sources, &errors),
            numbered(text)
        );
    }
    if let Some(pipeline) = pipeline {
        let registry = registry();
        let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
        manager.add_pipeline(&registry, pipeline).map_err(|e| fail(FailureKind::Pipeline, format!("{e:?}")))?;
        manager
            .run(&mut ctx, module)
            .map_err(|errors| fail(FailureKind::Pipeline, hat_ir::diagnostics::render_short(&ctx.sources, &errors)))?;
    }
    let ir = print_op(&ctx, module, PrintOptions::default());
    let verified = verify_module(&ctx, module)
        .map_err(|errors| fail(FailureKind::Pipeline, hat_ir::diagnostics::render_short(&ctx.sources, &errors)))?;
    let mut backend = CpuBackend::new();
    backend.set_parallel(false);
    let log = Rc::new(RefCell::new(Vec::new()));
    let output = {
        let mut executor = Executor::new(verified, &mut backend, ExecutorOptions { mode });
        register_recorders(&mut executor, case, &log);
        executor.run("main", case_arguments::arguments(case)).map_err(|e| fail(FailureKind::Run, e.to_string()))?
    };
    let calls = log.borrow().clone();
    let mut per_buffer = std::collections::BTreeMap::new();
    for buffer in &output.report.per_buffer {
        *per_buffer.entry(buffer.name.clone()).or_default() += buffer.to_device.bytes + buffer.from_device.bytes;
    }
    let observed = Observed {
        results: output.results,
        buffers: output.buffers,
        calls,
        bytes: output.report.total_bytes(),
        per_buffer,
    };
    Ok((observed, ir))
}

/// The first observation that differs, in words.
fn difference(reference: &Observed, got: &Observed) -> Option<String> {
    for (i, (r, g)) in reference.results.iter().zip(&got.results).enumerate() {
        if r != g {
            return Some(format!("result #{i} of @main: {r:?} under the reference semantics, {g:?} here"));
        }
    }
    for (k, (r, g)) in reference.buffers.iter().zip(&got.buffers).enumerate() {
        let (r, g) = (r.to_i32().expect("i32"), g.to_i32().expect("i32"));
        if let Some(e) = (0..r.len()).find(|&e| r[e] != g[e]) {
            let count = (0..r.len()).filter(|&e| r[e] != g[e]).count();
            return Some(format!(
                "final host copy of %b{k}: element {e} (flat) is {} under the reference semantics, {} here \
                 ({count} of {} elements differ)",
                r[e],
                g[e],
                r.len()
            ));
        }
    }
    for (n, (r, g)) in reference.calls.iter().zip(&got.calls).enumerate() {
        if r != g {
            return Some(format!(
                "host call #{n}: @{} saw {:?} under the reference semantics, @{} saw {:?} here",
                r.name, r.args, g.name, g.args
            ));
        }
    }
    if reference.calls.len() != got.calls.len() {
        return Some(format!(
            "{} host calls under the reference semantics, {} here",
            reference.calls.len(),
            got.calls.len()
        ));
    }
    None
}

/// Checks one case against `strategies`: each gives the reference observations, and bytes
/// moved keep `order` among those present. Returns the bytes each moved.
fn check_case(case: &Case, strategies: &[Strategy], order: &[(&str, &str)]) -> Result<Bytes, Failure> {
    let text = render(&case.program);
    let (reference, _) = match run(case, &text, None, TransferMode::Reference) {
        Ok(observed) => observed,
        Err(failure) => {
            panic!("the reference semantics fail on a generated program ({}):\n{}", failure.message, numbered(&text))
        }
    };
    let mut bytes = Vec::new();
    for strategy in strategies {
        let named = |mut failure: Failure| {
            failure.strategy = strategy.name.to_string();
            failure
        };
        let (observed, _) = run(case, &text, Some(strategy.pipeline), strategy.mode).map_err(named)?;
        if let Some(message) = difference(&reference, &observed) {
            return Err(named(Failure { strategy: String::new(), kind: FailureKind::Mismatch, message }));
        }
        bytes.push((strategy.name, observed.bytes));
    }
    let moved = |name: &str| bytes.iter().find(|(n, _)| *n == name).map(|(_, b)| *b);
    for (less, more) in order {
        if let (Some(a), Some(b)) = (moved(less), moved(more)) {
            if a > b {
                return Err(Failure {
                    strategy: format!("{less} <= {more}"),
                    kind: FailureKind::Bytes,
                    message: format!("{less} moved {a} bytes, {more} {b}"),
                });
            }
        }
    }
    Ok(bytes)
}

/// The constructs the differential test makes by default: none, so that these shards keep the
/// programs of before. Every construct is on in shards of their own ([`constructs_shard`]), with
/// the same checks: the reference results for every strategy and the whole byte ladder.
/// `HAT_DIFF_CONSTRUCTS` turns constructs on here too.
const DEFAULT_CONSTRUCTS: &[Construct] = &[];

/// The constructs of this run: `HAT_DIFF_CONSTRUCTS` applied to [`DEFAULT_CONSTRUCTS`].
fn constructs() -> Constructs {
    let default = Constructs::of(DEFAULT_CONSTRUCTS);
    match std::env::var("HAT_DIFF_CONSTRUCTS") {
        Ok(text) => Constructs::parse(&text, default).unwrap_or_else(|e| panic!("HAT_DIFF_CONSTRUCTS={text}: {e}")),
        Err(_) => default,
    }
}

/// The case for `seed` with this run's constructs.
fn case_for(seed: u64) -> Case {
    differential_case(seed, constructs())
}

/// Shrinks a failing case (for at most a minute) to the smallest that still fails the same way;
/// returns it and how it fails.
fn shrink_failure(case: Case, failure: &Failure, strategies: &[Strategy], order: &[(&str, &str)]) -> (Case, Failure) {
    let involved = involved(failure, strategies);
    // Shrinking runs the program a few hundred times; a minute is enough to get most of it
    // (`HAT_DIFF_SHRINK_SECS` sets another limit).
    let deadline = Instant::now() + Duration::from_secs(env_number("HAT_DIFF_SHRINK_SECS").unwrap_or(60));
    let same = |candidate: &Case| {
        Instant::now() < deadline
            && match check_case(candidate, &involved, order) {
                Err(f) => f.strategy == failure.strategy && f.kind == failure.kind,
                Ok(_) => false,
            }
    };
    let small = shrink(case, same, 3000);
    let failure = check_case(&small, &involved, order).expect_err("the shrunk case still fails");
    (small, failure)
}

/// The strategies a failure names.
fn involved(failure: &Failure, strategies: &[Strategy]) -> Vec<Strategy> {
    strategies
        .iter()
        .copied()
        .filter(|s| failure.strategy == s.name || failure.strategy.split(" <= ").any(|n| n == s.name))
        .collect()
}

/// Shrinks a failing case, and describes the smallest.
fn report_failure(seed: u64, case: Case, failure: Failure, strategies: &[Strategy], order: &[(&str, &str)]) -> String {
    let involved = involved(&failure, strategies);
    let original_lines = render(&case.program).lines().count();
    let (small, failure) = shrink_failure(case, &failure, strategies, order);
    let text = render(&small.program);
    let mut message = format!(
        "strategy `{}` is wrong ({:?}): {}\nseed {seed} (HAT_DIFF_SEED={seed} reruns it); shrunk from {original_lines} to {} lines\n",
        failure.strategy,
        failure.kind,
        failure.message,
        text.lines().count()
    );
    let _ = writeln!(message, "arguments:\n{}program:\n{}", arguments_text(&small, "  "), numbered(&text));
    for strategy in involved {
        if let Ok((_, ir)) = run(&small, &text, Some(strategy.pipeline), strategy.mode) {
            let _ = writeln!(message, "after `{}`:\n{}", strategy.pipeline, numbered(&ir));
        }
    }
    message
}

/// The arguments of `case`, one a line, each line after `prefix`.
fn arguments_text(case: &Case, prefix: &str) -> String {
    let args = &case.args;
    let mut text = String::new();
    for (k, values) in args.buffers.iter().enumerate() {
        let _ = writeln!(text, "{prefix}%b{k} = {values:?}");
    }
    for (k, t) in args.trips.iter().enumerate() {
        let _ = writeln!(text, "{prefix}%t{k} = {t}");
    }
    for (k, f) in args.flags.iter().enumerate() {
        let _ = writeln!(text, "{prefix}%f{k} = {f}");
    }
    let _ = writeln!(text, "{prefix}%seed = {}", args.seed);
    text
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

/// Runs the cases of one shard (`shard` of `shards`); the report of the first failure. Prints
/// how many cases the tracking strategy moved fewer bytes in than the static one (run-time
/// knowledge a static plan cannot have), with the smallest few.
fn run_shard(
    shard: u64,
    shards: u64,
    default_cases: u64,
    strategies: &[Strategy],
    order: &[(&str, &str)],
    on: Constructs,
) -> Result<(), String> {
    let seeds: Vec<u64> = match env_number("HAT_DIFF_SEED") {
        Some(seed) if shard == 0 => vec![seed],
        Some(_) => vec![],
        None => {
            let cases = env_number("HAT_DIFF_CASES").unwrap_or(default_cases);
            (0..cases).map(|i| i * shards + shard).collect()
        }
    };
    let mut tracking_wins: Vec<(usize, u64, Bytes)> = Vec::new();
    for &seed in &seeds {
        let case = differential_case(seed, on);
        let bytes = match check_case(&case, strategies, order) {
            Ok(bytes) => bytes,
            Err(failure) => return Err(report_failure(seed, case, failure, strategies, order)),
        };
        let moved = |name: &str| bytes.iter().find(|(n, _)| *n == name).map(|(_, b)| *b);
        if let (Some(tracking), Some(planned)) = (moved(TRACKING.name), moved(STATIC.name)) {
            if tracking < planned {
                tracking_wins.push((render(&case.program).len(), seed, bytes));
            }
        }
    }
    println!(
        "shard {shard}: {} cases (constructs: {}), every strategy gave the reference results",
        seeds.len(),
        on.names()
    );
    if strategies.iter().any(|s| s.name == TRACKING.name) && strategies.iter().any(|s| s.name == STATIC.name) {
        println!(
            "shard {shard}: tracking moved fewer bytes than static in {} of {} cases",
            tracking_wins.len(),
            seeds.len()
        );
        tracking_wins.sort();
        for (_, seed, bytes) in tracking_wins.iter().take(3) {
            println!("  seed {seed}: bytes moved {bytes:?}");
        }
        if let Some((_, seed, _)) = tracking_wins.first() {
            let case = differential_case(*seed, on);
            let shown = if env_number("HAT_DIFF_SHRINK_EXAMPLES").is_some() {
                let pair = [STATIC, TRACKING];
                let still_wins = |c: &Case| match check_case(c, &pair, BYTE_ORDER) {
                    Ok(bytes) => bytes[1].1 < bytes[0].1,
                    Err(_) => false,
                };
                shrink(case, still_wins, 2000)
            } else {
                case
            };
            println!("  the program of seed {seed}:\n{}", numbered(&render(&shown.program)));
            if let Ok(bytes) = check_case(&shown, &[STATIC, TRACKING], BYTE_ORDER) {
                println!("  bytes moved: {bytes:?}; arguments: {:?}", shown.args);
            }
        }
    }
    Ok(())
}

// ----- tests -------------------------------------------------------------------------------------

const TEST_JIC: Strategy = Strategy { name: "test-jic", pipeline: "test-jic", mode: TransferMode::Explicit };

/// The harness accepts a correct plan: the private jic pass on many cases.
#[test]
fn a_correct_plan_gives_the_reference_results() {
    if let Err(report) = run_shard(0, 1, 300, &[TEST_JIC], BYTE_ORDER, constructs()) {
        panic!("{report}");
    }
}

/// The harness catches a wrong plan and shrinks the program it fails on to a few lines.
#[test]
fn a_missing_copy_in_is_caught_and_shrunk() {
    let wrong =
        Strategy { name: "test-jic-broken", pipeline: "test-jic{skip-copy-in=true}", mode: TransferMode::Explicit };
    let report = run_shard(0, 1, 300, &[wrong], BYTE_ORDER, constructs()).expect_err("the wrong plan is caught");
    assert!(report.contains("strategy `test-jic-broken` is wrong (Mismatch)"), "{report}");
    let program = &report[report.find("program:").expect("the program")..report.find("after `").expect("the IR")];
    let dispatches = program.matches("compute.dispatch").count();
    assert_eq!(dispatches, 1, "shrunk to one dispatch:\n{report}");
    assert!(program.lines().count() < 40, "shrunk to a few lines:\n{report}");
}

/// Every feature the differential test must cover is in at least 2% of the cases (most are
/// in far more), with this run's constructs and with all of them; prints how often each is.
#[test]
fn generated_programs_cover_the_features() {
    for on in [constructs(), Constructs::all()] {
        println!("constructs: {}", on.names());
        coverage(on);
    }
}

/// Checks that every feature of the generator and of the constructs `on` is in at least 2% of
/// the cases, and that the cases have no feature nobody listed.
fn coverage(on: Constructs) {
    const EXPECTED: &[&str] = &[
        "2-D dispatch",
        "born buffer filled by a host copy",
        "born buffer filled by a kernel",
        "branch on a runtime flag",
        "branch on a value the host reads",
        "branch on an index's parity",
        "buffers of different sizes",
        "entry results",
        "for loop",
        "generation flip",
        "grid known only at run time",
        "grid smaller than a buffer",
        "helper called from several places",
        "host copy between buffers",
        "host function reads",
        "host function reads and writes",
        "host function with an undeclared effect",
        "host function writes",
        "host load of a constant element",
        "host load of a variable element",
        "host store to a constant element",
        "host store to a variable element",
        "kernel calls a helper",
        "kernel ignores a buffer",
        "kernel reads",
        "kernel reads and writes",
        "kernel reads other work items' elements",
        "kernel updates atomically",
        "kernel with a stride",
        "kernel writes",
        "kernel writes one of two buffers",
        "kernel writes through a local alias",
        "kernel writes under a data-dependent guard",
        "kernel writes under a guard on its id",
        "loop on a nonzero trip-count argument",
        "loop on a trip-count argument of 0",
        "loop-carried buffers rotate",
        "nested loop",
        "same buffer passed twice",
        "select between buffers",
        "while loop on a value a kernel writes",
    ];
    use program_gen::features::{construct_features, features};
    let cases = SHARDS * CASES_PER_SHARD;
    let mut expected: Vec<&str> = EXPECTED.to_vec();
    expected.extend(on.list().into_iter().flat_map(|c| construct_features(c, on)));
    let mut known = expected.clone();
    known.extend(Construct::ALL.into_iter().flat_map(|c| construct_features(c, Constructs::all())));
    let mut counts: std::collections::BTreeMap<&str, u64> = expected.iter().map(|f| (*f, 0)).collect();
    for seed in 0..cases {
        for feature in features(&differential_case(seed, on)) {
            *counts.entry(feature).or_default() += 1;
        }
    }
    for (feature, count) in &counts {
        println!("{:5.1}%  {feature}", *count as f64 * 100.0 / cases as f64);
    }
    let rare: Vec<_> = counts.iter().filter(|(f, &n)| expected.contains(f) && n * 50 < cases).collect();
    assert!(rare.is_empty(), "features in fewer than 2% of {cases} cases: {rare:?}");
    let unknown: Vec<_> = counts.keys().filter(|f| !known.contains(f)).collect();
    assert!(unknown.is_empty(), "features nobody listed here: {unknown:?}");
}

/// The generator's text parses and verifies at the sizes the benchmark uses, and a seed names
/// one program.
#[test]
fn generated_programs_parse_and_verify_and_seeds_repeat() {
    for (seed, size) in [(1, 1), (2, 10), (3, 1000)] {
        let text = program_gen::generate(seed, size);
        assert_eq!(text, program_gen::generate(seed, size));
        assert!(text.matches("compute.dispatch").count() >= size, "at least {size} dispatches");
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, "generated.hat", &text).expect("parses");
        assert!(verify_module(&ctx, module).is_ok(), "verifies");
    }
}

/// The cases, in four shards that the test harness runs in parallel.
const SHARDS: u64 = 4;
const CASES_PER_SHARD: u64 = 500;

fn shard(index: u64, order: &[(&str, &str)]) {
    if let Err(report) = run_shard(index, SHARDS, CASES_PER_SHARD, STRATEGIES, order, constructs()) {
        panic!("{report}");
    }
}

/// The cases with every construct on, in shards of their own (a failure reruns with
/// `HAT_DIFF_CONSTRUCTS=all HAT_DIFF_SEED=n`).
fn constructs_shard(index: u64) {
    if let Err(report) = run_shard(index, SHARDS, CASES_PER_SHARD, STRATEGIES, BYTE_ORDER, Constructs::all()) {
        panic!("with every construct on (HAT_DIFF_CONSTRUCTS=all): {report}");
    }
}

#[test]
fn strategies_give_the_reference_results_with_every_construct_0() {
    constructs_shard(0);
}

#[test]
fn strategies_give_the_reference_results_with_every_construct_1() {
    constructs_shard(1);
}

#[test]
fn strategies_give_the_reference_results_with_every_construct_2() {
    constructs_shard(2);
}

#[test]
fn strategies_give_the_reference_results_with_every_construct_3() {
    constructs_shard(3);
}

#[test]
fn strategies_give_the_reference_results_0() {
    shard(0, BYTE_ORDER);
}

#[test]
fn strategies_give_the_reference_results_1() {
    shard(1, BYTE_ORDER);
}

#[test]
fn strategies_give_the_reference_results_2() {
    shard(2, BYTE_ORDER);
}

#[test]
fn strategies_give_the_reference_results_3() {
    shard(3, BYTE_ORDER);
}

/// Not a check: runs every case (HAT_DIFF_CASES, default 2,000) against every strategy,
/// counts the failures by strategy and kind, and prints one shrunk example of each.
#[test]
#[ignore]
fn survey() {
    let cases = env_number("HAT_DIFF_CASES").unwrap_or(2000);
    // (strategy, kind) -> (seeds, first failure)
    let mut classes: Vec<(String, FailureKind, Vec<u64>, Failure)> = Vec::new();
    let mut note =
        |seed: u64, failure: Failure| match classes.iter_mut().find(|c| c.0 == failure.strategy && c.1 == failure.kind)
        {
            Some(class) => class.2.push(seed),
            None => classes.push((failure.strategy.clone(), failure.kind.clone(), vec![seed], failure)),
        };
    for seed in 0..cases {
        let case = case_for(seed);
        let mut bytes: Bytes = Vec::new();
        for strategy in STRATEGIES {
            match check_case(&case, std::slice::from_ref(strategy), &[]) {
                Ok(moved) => bytes.extend(moved),
                Err(failure) => note(seed, failure),
            }
        }
        let moved = |name: &str| bytes.iter().find(|(n, _)| *n == name).map(|(_, b)| *b);
        for (less, more) in BYTE_ORDER {
            if let (Some(a), Some(b)) = (moved(less), moved(more)) {
                if a > b {
                    let message = format!("{less} moved {a} bytes, {more} {b}");
                    note(seed, Failure { strategy: format!("{less} <= {more}"), kind: FailureKind::Bytes, message });
                }
            }
        }
    }
    for (strategy, kind, seeds, _) in &classes {
        let shown: Vec<String> = seeds.iter().take(400).map(u64::to_string).collect();
        println!("== {strategy} {kind:?}: {} of {cases} cases; seeds {}", seeds.len(), shown.join(" "));
    }
    let order: Vec<(&str, &str)> = BYTE_ORDER.to_vec();
    for (_, _, seeds, failure) in classes {
        println!("{}", report_failure(seeds[0], case_for(seeds[0]), failure, STRATEGIES, &order));
    }
}

#[path = "transfer_differential/survey_constructs.rs"]
mod survey_constructs;

/// Not a check (yet): the byte ladder per buffer. The argument that `static` moves no more than
/// `kernel` charges each of its copies to `kernel`'s copies of the same buffer, so it should
/// hold buffer by buffer, where the whole-program ladder lets savings on one buffer hide an
/// excess on another. Prints the cases where it does not hold (HAT_DIFF_CASES, default 2,000).
#[test]
#[ignore]
fn survey_per_buffer() {
    let cases = env_number("HAT_DIFF_CASES").unwrap_or(2000);
    let mut broken: Vec<String> = Vec::new();
    for seed in 0..cases {
        let case = case_for(seed);
        let text = render(&case.program);
        let per_buffer = |strategy: &Strategy| {
            run(&case, &text, Some(strategy.pipeline), strategy.mode).ok().map(|(observed, _)| observed.per_buffer)
        };
        let Some(kernel) = per_buffer(&KERNEL) else { continue };
        for strategy in [&STATIC, &DEFAULT] {
            let Some(planned) = per_buffer(strategy) else { continue };
            for (name, &bytes) in &planned {
                let limit = kernel.get(name).copied().unwrap_or(0);
                if bytes > limit {
                    broken.push(format!("seed {seed}: {} moved {bytes} B of {name}, kernel {limit} B", strategy.name));
                }
            }
        }
    }
    println!("per-buffer ladder broken in {} places over {cases} cases", broken.len());
    for line in broken.iter().take(60) {
        println!("  {line}");
    }
}

#[test]
#[ignore]
fn print_case() {
    let seed = env_number("HAT_DIFF_SEED").unwrap_or(0);
    let case = case_for(seed);
    println!("{}", render(&case.program));
    println!("{:?}", case.args);
}

/// Not a check: how many of the `static` plan's transfers the generated programs need. Each
/// transfer is deleted in turn; a deletion the observations do not notice is a transfer the
/// plan did not need on that run (or one the observations are blind to).
#[test]
#[ignore]
fn survey_needed_transfers() {
    let cases = env_number("HAT_DIFF_CASES").unwrap_or(200);
    let (mut needed, mut total, mut unneeded_shown) = (0, 0, 0);
    for seed in 0..cases {
        let case = case_for(seed);
        let text = render(&case.program);
        let (reference, _) = run(&case, &text, None, TransferMode::Reference).expect("reference");
        let (full, planned) = run(&case, &text, Some(STATIC.pipeline), TransferMode::Explicit).expect("static");
        let lines: Vec<&str> = planned.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains("buffer.to_device") && !line.contains("buffer.from_device") {
                continue;
            }
            let mut without = lines.clone();
            without.remove(i);
            let variant = without.join("\n");
            match run(&case, &variant, None, TransferMode::Explicit) {
                // Nothing moved less: the transfer did not run.
                Ok((observed, _)) if observed.bytes == full.bytes => {}
                Ok((observed, _)) if difference(&reference, &observed).is_none() => {
                    total += 1;
                    if unneeded_shown < 3 {
                        unneeded_shown += 1;
                        println!("not needed: line {}\n{}", i + 1, numbered(&planned));
                    }
                }
                _ => {
                    total += 1;
                    needed += 1;
                }
            }
        }
    }
    println!("{needed} of {total} transfers that ran in the static plans are needed ({cases} cases)");
}

/// Not a check (the shards check it): the first seed on which a plan moves more bytes than
/// `kernel`, shrunk (`HAT_DIFF_SEED=n` for one seed; `HAT_DIFF_CONSTRUCTS=all` for every
/// construct). `HAT_DIFF_DEFAULT=1`: the `default` pipeline instead of `static`.
#[test]
#[ignore]
fn plan_bytes() {
    let planned = if std::env::var("HAT_DIFF_DEFAULT").is_ok() { DEFAULT } else { STATIC };
    let order: &[(&str, &str)] = &[(planned.name, KERNEL.name)];
    if let Err(report) = run_shard(0, 1, 2000, &[KERNEL, planned], order, constructs()) {
        panic!("{report}");
    }
}
