//! `resolve-aliases` on the ping-pong and rotation programs of `tests/filetests/resolve-aliases/`
//! (every spelling) and on scenarios 6 and 7: after the pass no loop carries a buffer and every
//! buffer a dispatch or a host op names is a root (a parameter or an allocation), not a select
//! or a carried value; under the `default` pipeline the results equal the reference semantics
//! on the CPU backend (which poisons fresh device memory), for trip counts 0 to 13 (all passed
//! at run time), and the bytes moved are the optimum; the pass alone on the programs as written
//! (no canonicalize first) gives the reference results too; and with the count a constant in the
//! program, results and bytes are still the reference's and the optimum.

use hat_ir::interfaces::LoopLikeOpInterface;
use hat_ir::pass::PassManager;
use hat_ir::{parse_source, verify_module, Context, Op};
use hat_passes::transfers::aliases::{is_buffer, BufferRoots};
use hat_runtime::{
    entry_parameters, ArgValue, CpuBackend, Executor, ExecutorOptions, HostBuffer, ParameterKind, Scalar, TransferMode,
};
use std::path::Path;

fn load(path: &str, pipeline: Option<&str>) -> (Context, Op) {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
    load_text(path, &text, pipeline)
}

fn load_text(path: &str, text: &str, pipeline: Option<&str>) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, path, text).unwrap_or_else(|e| panic!("{path}: {e:?}"));
    if let Some(pipeline) = pipeline {
        let mut manager = PassManager::new("builtin.module", Default::default());
        manager.add_pipeline(&hat_passes::registry(), pipeline).unwrap_or_else(|e| panic!("{e}"));
        manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{path}: {pipeline}: {e:?}"));
    }
    verify_module(&ctx, module).unwrap_or_else(|e| panic!("{path} after {pipeline:?}: {e:?}"));
    (ctx, module)
}

fn arguments(ctx: &Context, module: Op, count: i64) -> Vec<ArgValue> {
    let module = verify_module(ctx, module).expect("verified");
    entry_parameters(module, "main")
        .expect("an entry")
        .into_iter()
        .map(|p| match p.kind {
            ParameterKind::Buffer(layout) => {
                let values: Vec<Scalar> = (0..layout.len()).map(|i| Scalar::Int((i * 7 % 5) as i64)).collect();
                ArgValue::Buffer(HostBuffer::from_scalars(layout, &values).expect("fits"))
            }
            ParameterKind::Scalar(_) if p.name == "count" => ArgValue::Scalar(Scalar::Int(count)),
            ParameterKind::Scalar(_) => ArgValue::Scalar(Scalar::Int(0)),
            ParameterKind::DynamicBuffer { .. } => panic!("no dynamic buffers here"),
        })
        .collect()
}

/// The entry's results and final buffer arguments, and the bytes moved (to, from the device).
fn run(ctx: &Context, module: Op, mode: TransferMode, count: i64) -> (Vec<ArgValue>, Vec<HostBuffer>, (u64, u64)) {
    let args = arguments(ctx, module, count);
    let module = verify_module(ctx, module).expect("verified");
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(module, &mut backend, ExecutorOptions { mode });
    executor.register_host_function("display", Box::new(|_| Ok(Vec::new())));
    let output = executor.run("main", args).unwrap_or_else(|e| panic!("run failed: {e}"));
    let moved = (output.report.to_device.bytes, output.report.from_device.bytes);
    (output.results.clone(), output.buffers.clone(), moved)
}

/// The optimum as a function of the trip count: bytes to the device, bytes from it.
type Optimum = fn(i64) -> (u64, u64);

/// The program files, and the optimum (bytes to, from the device) as a function of the count.
const PROGRAMS: &[(&str, Optimum)] = &[
    ("select-remsi-eq.hat", every_count),
    ("select-andi.hat", every_count),
    ("select-plus-one.hat", every_count),
    ("select-ne-swapped.hat", every_count),
    ("flag-xori.hat", every_count),
    ("flag-cmpi-eq-false.hat", every_count),
    ("swapped-iter-args.hat", every_count),
    ("rotation-3.hat", every_count),
    ("rotation-4.hat", every_count),
    ("unmodelled-op.hat", every_count),
    ("carried-counter.hat", every_count),
    // From 3 by 3: count - 3 over 3, rounded up, iterations; the newest buffer is copied into
    // the grid on the host.
    ("offset-step.hat", |c| if c > 3 { (64, 64) } else { (0, 0) }),
    // From 3 by 3, iteration i writes the scratch grid when i is even, the caller's when odd;
    // only the caller's grid is observed: one iteration moves it in and nothing out.
    ("select-offset-step.hat", |c| match (c - 3 + 2).max(0) / 3 {
        0 => (0, 0),
        1 => (64, 0),
        _ => (64, 64),
    }),
];

/// Any number of iterations moves the grid in once and the newest grid out once.
fn every_count(count: i64) -> (u64, u64) {
    if count > 0 {
        (64, 64)
    } else {
        (0, 0)
    }
}

/// Every buffer operand of every op in a loop under `@main` is a root, and no loop carries a
/// buffer. (After a loop, its results are chosen by the trip count's residue: selects outside
/// any loop, which `insert-transfers` unswitches.)
fn assert_concrete(ctx: &Context, module: Op, what: &str) {
    let main = ctx
        .body_ops(module)
        .into_iter()
        .find(|&op| hat_ir::interfaces::execution_space(ctx, op) == Some(hat_ir::interfaces::ExecutionSpace::Host))
        .expect("a host function");
    let roots = BufferRoots::of(ctx, main);
    let loops: Vec<Op> =
        ctx.walk(main).into_iter().filter(|&op| ctx.interface::<dyn LoopLikeOpInterface>(op).is_some()).collect();
    for op in ctx.walk(main) {
        if !loops.iter().any(|&l| l != op && ctx.is_ancestor(l, op)) && !loops.contains(&op) {
            continue;
        }
        if let Some(looping) = ctx.interface::<dyn LoopLikeOpInterface>(op) {
            let inits = &ctx.operands(op)[looping.init_operands(ctx, op)];
            assert!(!inits.iter().any(|&v| is_buffer(ctx, v)), "{what}: a loop still carries a buffer");
        }
        if hat_dialects::arith_views::SelectOp::wrap(ctx, op).is_some() {
            continue;
        }
        for &operand in ctx.operands(op) {
            if is_buffer(ctx, operand) {
                assert!(roots.is_root(operand), "{what}: '{}' names a buffer that is not a root", ctx.name_str(op));
            }
        }
    }
}

#[test]
fn after_the_pass_every_buffer_operand_is_concrete() {
    for (file, _) in PROGRAMS {
        let path = format!("tests/filetests/resolve-aliases/{file}");
        let (ctx, module) = load(&path, Some("builtin.module(canonicalize,resolve-aliases,canonicalize)"));
        assert_concrete(&ctx, module, file);
    }
    // The scenarios: the loop's buffer operands are concrete (the copy after the loop chooses
    // on the count's parity, outside any loop).
    for file in ["examples/06-life.hat", "examples/07-life-display.hat"] {
        let (ctx, module) = load(file, Some("builtin.module(canonicalize,resolve-aliases,canonicalize)"));
        assert_concrete(&ctx, module, file);
    }
}

#[test]
fn every_spelling_gives_the_reference_results_and_the_optimum_for_every_count() {
    let mut failures = Vec::new();
    for (file, optimum) in PROGRAMS {
        let path = format!("tests/filetests/resolve-aliases/{file}");
        let (reference_ctx, reference_module) = load(&path, None);
        let (ctx, module) = load(&path, Some("default"));
        // The pass on the program as written (no canonicalize first: selects of one value,
        // constants in the body), the results only.
        let (raw_ctx, raw_module) = load(&path, Some("builtin.module(resolve-aliases,insert-transfers)"));
        for count in 0..14 {
            let reference = run(&reference_ctx, reference_module, TransferMode::Reference, count);
            let got = run(&ctx, module, TransferMode::Explicit, count);
            if got.0 != reference.0 || got.1 != reference.1 {
                failures.push(format!("{file} count={count}: results differ from the reference"));
            }
            let raw = run(&raw_ctx, raw_module, TransferMode::Explicit, count);
            if raw.0 != reference.0 || raw.1 != reference.1 {
                failures.push(format!("{file} count={count}: without canonicalize, results differ from the reference"));
            }
            if got.2 != optimum(count) {
                failures.push(format!("{file} count={count}: moved {:?}, optimum {:?}", got.2, optimum(count)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Scenarios 6 and 7 under `default`: the optimum of their headers for even, odd and zero
/// counts (all known only at run time), and the reference results.
#[test]
fn scenarios_6_and_7_reach_the_optimum() {
    let scenarios: [(&str, Optimum); 2] = [
        ("examples/06-life.hat", |c| if c == 0 { (0, 0) } else { (1024, 1024) }),
        ("examples/07-life-display.hat", |c| if c == 0 { (0, 0) } else { (1024, 1024 * c as u64) }),
    ];
    for (file, optimum) in scenarios {
        let (reference_ctx, reference_module) = load(file, None);
        let (ctx, module) = load(file, Some("default"));
        for count in [0, 1, 2, 3, 4, 9, 10] {
            let reference = run(&reference_ctx, reference_module, TransferMode::Reference, count);
            let got = run(&ctx, module, TransferMode::Explicit, count);
            assert_eq!(got.1, reference.1, "{file} count={count}: results");
            assert_eq!(got.2, optimum(count), "{file} count={count}: bytes moved");
        }
    }
}

/// `text` with `@main`'s `%count` parameter replaced by the constant `count`.
fn with_constant_count(text: &str, count: i64) -> String {
    let head = text.find("compute.func @main(").expect("an entry");
    let open = head + text[head..].find('{').expect("a body") + 1;
    let signature = text[head..open].replace(", %count: index", "");
    format!("{}{signature}\n  %count = arith.constant {count} : index{}", &text[..head], &text[open..])
}

/// The same programs with the trip count a constant in the program: canonicalize and the
/// planner see it, and the results and the bytes are still the reference's and the optimum.
#[test]
fn every_spelling_with_a_constant_count() {
    let mut failures = Vec::new();
    for (file, optimum) in PROGRAMS {
        let path = format!("tests/filetests/resolve-aliases/{file}");
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(&path)).expect("readable");
        for count in [0, 1, 2, 3, 4, 5, 8] {
            let constant = with_constant_count(&text, count);
            assert!(!constant.contains("%count: index"), "{file}: the count is still a parameter");
            let (reference_ctx, reference_module) = load_text(&path, &constant, None);
            let (ctx, module) = load_text(&path, &constant, Some("default"));
            let reference = run(&reference_ctx, reference_module, TransferMode::Reference, count);
            let got = run(&ctx, module, TransferMode::Explicit, count);
            if got.0 != reference.0 || got.1 != reference.1 {
                failures.push(format!("{file} constant count={count}: results differ from the reference"));
            }
            if got.2 != optimum(count) {
                failures.push(format!(
                    "{file} constant count={count}: moved {:?}, optimum {:?}",
                    got.2,
                    optimum(count)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
