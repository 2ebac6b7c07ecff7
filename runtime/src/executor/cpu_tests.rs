//! The executor with the CPU reference backend, on the scenarios of `examples/` (real kernel IR).

use super::*;
use crate::cpu::CpuBackend;
use crate::report::TransferCount;
use std::cell::RefCell;
use std::rc::Rc;

const EXAMPLES: &[(&str, &str)] = &[
    ("01-squares", include_str!("../../../examples/01-squares.hat")),
    ("02-fill", include_str!("../../../examples/02-fill.hat")),
    ("02b-fill-masked", include_str!("../../../examples/02b-fill-masked.hat")),
    ("03-repeat", include_str!("../../../examples/03-repeat.hat")),
    ("04-peek", include_str!("../../../examples/04-peek.hat")),
    ("05-host-edit", include_str!("../../../examples/05-host-edit.hat")),
    ("06-life", include_str!("../../../examples/06-life.hat")),
    ("07-life-display", include_str!("../../../examples/07-life-display.hat")),
    ("08-mandelbrot", include_str!("../../../examples/08-mandelbrot.hat")),
    ("09-kernel-chain", include_str!("../../../examples/09-kernel-chain.hat")),
    ("10-sobel", include_str!("../../../examples/10-sobel.hat")),
    ("11-morphology", include_str!("../../../examples/11-morphology.hat")),
    ("12-pooling", include_str!("../../../examples/12-pooling.hat")),
    ("13-in-place", include_str!("../../../examples/13-in-place.hat")),
    ("14-helpers", include_str!("../../../examples/14-helpers.hat")),
    ("15-alias", include_str!("../../../examples/15-alias.hat")),
    ("16-races", include_str!("../../../examples/16-races.hat")),
    ("17-residency", include_str!("../../../examples/17-residency.hat")),
    ("18-conditional-escape", include_str!("../../../examples/18-conditional-escape.hat")),
    ("19-separable-blur", include_str!("../../../examples/19-separable-blur.hat")),
];

fn example(name: &str) -> (Context, Op) {
    let text = EXAMPLES.iter().find(|(n, _)| *n == name).unwrap().1;
    parse(name, text)
}

/// The token of a module that verifies (panics with the diagnostics if it does not).
fn verified(ctx: &Context, module: Op) -> hat_ir::Verified<'_> {
    hat_ir::verify_module(ctx, module).unwrap_or_else(|diagnostics| panic!("{diagnostics:?}"))
}

fn parse(name: &str, text: &str) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module =
        hat_ir::parse_source(&mut ctx, &format!("{name}.hat"), text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let diagnostics = hat_ir::verify(&ctx, module);
    assert!(diagnostics.is_empty(), "{name}: {diagnostics:?}");
    (ctx, module)
}

/// Arguments for every parameter: buffers of small varied values, scalars 3 (or 0.5).
fn arguments(parameters: &[Parameter]) -> Vec<ArgValue> {
    parameters
        .iter()
        .map(|p| match &p.kind {
            ParameterKind::Scalar(ty) if ty.is_float() => ArgValue::Scalar(Scalar::Float(0.5)),
            ParameterKind::Scalar(_) => ArgValue::Scalar(Scalar::Int(3)),
            ParameterKind::Buffer(layout) => {
                let values: Vec<Scalar> = (0..layout.len())
                    .map(|i| {
                        if layout.element.is_float() {
                            Scalar::Float((i % 9) as f64 * 0.25)
                        } else {
                            Scalar::Int((i % 7) as i64)
                        }
                    })
                    .collect();
                ArgValue::Buffer(HostBuffer::from_scalars(layout.clone(), &values).unwrap())
            }
            ParameterKind::DynamicBuffer { .. } => panic!("no dynamic parameters in the examples"),
        })
        .collect()
}

/// The host functions a module declares.
fn host_functions(ctx: &Context, module: Op) -> Vec<String> {
    ctx.body_ops(module)
        .into_iter()
        .filter(|&op| ctx.name_str(op) == "compute.host_func")
        .filter_map(|op| hat_ir::verifier::symbol_name(ctx, op).map(str::to_string))
        .collect()
}

#[test]
fn the_timeline_holds_every_command_of_the_report_and_changes_nothing() {
    use crate::timeline::CommandKind;
    for (name, text) in EXAMPLES {
        let (ctx, module) = parse(name, text);
        let parameters = entry_parameters(verified(&ctx, module), "main").unwrap();
        let run = |timeline: bool| {
            let mut backend = CpuBackend::new();
            let mut executor =
                Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode: TransferMode::Reference });
            for host in host_functions(&ctx, module) {
                executor.register_host_function(&host, Box::new(|_: &mut HostCall| Ok(vec![])));
            }
            executor.set_timeline(timeline);
            let output = executor.run("main", arguments(&parameters)).unwrap_or_else(|e| panic!("{name}: {e}"));
            (output, executor.take_timeline())
        };
        let (plain, none) = run(false);
        assert!(none.is_none(), "{name}: no timeline unless asked");
        let (output, timeline) = run(true);
        let timeline = timeline.unwrap_or_else(|| panic!("{name}: a timeline"));
        assert_eq!(output.buffers, plain.buffers, "{name}: recording changes no result");
        let report = &output.report;
        assert_eq!(timeline.dispatches() as u64, report.dispatches, "{name}");
        assert_eq!(timeline.transfers() as u64, report.total_transfers(), "{name}");
        let bytes: usize = timeline
            .commands
            .iter()
            .map(|c| match &c.kind {
                CommandKind::ToDevice { bytes, .. } | CommandKind::FromDevice { bytes, .. } => bytes.len(),
                CommandKind::Dispatch { .. } => 0,
            })
            .sum();
        assert_eq!(bytes as u64, report.total_bytes(), "{name}");
        assert_eq!(timeline.clock, "host wall clock", "{name}");
        assert!(timeline.barriers.is_empty(), "{name}: the CPU backend has no barriers");
        for (index, command) in timeline.commands.iter().enumerate() {
            let (start, end) = command.ran.unwrap_or_else(|| panic!("{name}: every command ran"));
            assert!(start <= end && end <= timeline.total, "{name}");
            if let Some(next) = timeline.commands.get(index + 1) {
                assert!(next.command > command.command, "{name}: in the order recorded");
                assert!(end <= next.ran.unwrap().0, "{name}: one after the other");
            }
            for dependency in &command.dependencies {
                assert!(dependency.on < command.command, "{name}");
                assert!(dependency.buffer < timeline.buffers.len(), "{name}");
            }
        }
        // Reference semantics: each dispatch's copies in are written after what came before,
        // and its copies back read what it wrote.
        for window in timeline.commands.windows(2) {
            if let (CommandKind::Dispatch { .. }, CommandKind::FromDevice { buffer, .. }) =
                (&window[0].kind, &window[1].kind)
            {
                let hazards: Vec<_> = window[1].dependencies.iter().map(|d| (d.on, d.buffer, d.hazard)).collect();
                assert_eq!(hazards, [(window[0].command, *buffer, crate::Hazard::ReadAfterWrite)], "{name}");
            }
        }
        let with_device = timeline.buffers.iter().filter(|b| b.device_allocated.is_some()).count();
        assert_eq!(with_device as u64, report.device_allocations, "{name}");
        assert!(timeline.buffers.iter().all(|b| b.arena_offset.is_none()));
        assert!(timeline
            .buffers
            .iter()
            .filter_map(|b| Some((b.device_allocated?, b.device_freed?)))
            .all(|(allocated, freed)| allocated <= freed));
    }
}

#[test]
fn every_example_runs_under_the_reference_semantics() {
    for (name, text) in EXAMPLES {
        let (ctx, module) = parse(name, text);
        let parameters = entry_parameters(verified(&ctx, module), "main").unwrap();
        let mut backend = CpuBackend::new();
        let calls = Rc::new(RefCell::new(0));
        let output = {
            let mut executor =
                Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode: TransferMode::Reference });
            for host in host_functions(&ctx, module) {
                let calls = calls.clone();
                executor.register_host_function(
                    &host,
                    Box::new(move |_: &mut HostCall| {
                        *calls.borrow_mut() += 1;
                        Ok(vec![])
                    }),
                );
            }
            executor.run("main", arguments(&parameters)).unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        assert_eq!(backend.bytes_in_use(), 0, "{name}: device memory is freed");
        let report = &output.report;
        assert!(report.dispatches > 0, "{name}");
        assert_eq!(report.host_calls, *calls.borrow(), "{name}");
        // Reference semantics: every dispatch copies each distinct buffer argument in and out.
        assert_eq!(report.to_device, report.from_device, "{name}");
        assert_eq!(
            output.buffers.len(),
            parameters.iter().filter(|p| !matches!(p.kind, ParameterKind::Scalar(_))).count()
        );
        let json = report.to_json();
        for key in ["to_device", "from_device"] {
            for field in ["count", "bytes"] {
                assert!(json["transfers"][key][field].is_u64(), "{name}: {json}");
            }
        }
        assert!(json["dispatches"].is_u64());
    }
}

#[test]
fn squares_on_the_cpu_backend() {
    let (ctx, module) = example("01-squares");
    let input: Vec<i32> = (0..64).collect();
    let squares: Vec<i32> = input.iter().map(|v| v * v).collect();
    let run = |mode| {
        let mut backend = CpuBackend::new();
        let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode });
        executor.run("main", vec![ArgValue::Buffer(HostBuffer::from_i32(&[64], &input).unwrap())]).unwrap()
    };
    let reference = run(TransferMode::Reference);
    assert_eq!(reference.buffers[0].to_i32().unwrap(), squares);
    assert_eq!(reference.report.to_device, TransferCount { count: 1, bytes: 256 });
    assert_eq!(reference.report.from_device, TransferCount { count: 1, bytes: 256 });
    assert_eq!(reference.report.backend, "cpu");
    // No transfers in the program: explicit mode leaves the caller's data as it was.
    let explicit = run(TransferMode::Explicit);
    assert_eq!(explicit.buffers[0].to_i32().unwrap(), input);
    assert_eq!(explicit.report.total_transfers(), 0);
}

#[test]
fn the_cpu_backend_s_poison_comes_back_without_the_copy_in() {
    let text = include_str!("../../../examples/01-squares.hat").replace(
        "  compute.dispatch @square[%c64](%data) : (memref<64xi32>)\n",
        "  compute.dispatch @square[%c64](%data) : (memref<64xi32>)\n  buffer.from_device %data : memref<64xi32>\n",
    );
    let (ctx, module) = parse("squares-no-copy-in", &text);
    let mut backend = CpuBackend::new();
    let mut executor = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default());
    let output = executor.run("main", vec![ArgValue::Buffer(HostBuffer::from_i32(&[64], &[2; 64]).unwrap())]).unwrap();
    let poison = 0xDEAD_BEEFu32 as i32;
    assert_eq!(output.buffers[0].to_i32().unwrap(), vec![poison.wrapping_mul(poison); 64]);
}

/// One generation of Life as the example's kernel computes it (dead border).
fn life_step(grid: &[i32], n: usize) -> Vec<i32> {
    let mut next = vec![0; n * n];
    for y in 1..n - 1 {
        for x in 1..n - 1 {
            let mut neighbours = 0;
            for dy in 0..3 {
                for dx in 0..3 {
                    if (dy, dx) != (1, 1) && grid[(y + dy - 1) * n + x + dx - 1] != 0 {
                        neighbours += 1;
                    }
                }
            }
            let alive = grid[y * n + x] != 0;
            next[y * n + x] = (neighbours == 3 || (alive && neighbours == 2)) as i32;
        }
    }
    next
}

fn glider() -> Vec<i32> {
    let mut grid = vec![0; 256];
    for (y, x) in [(1, 2), (2, 3), (3, 1), (3, 2), (3, 3)] {
        grid[y * 16 + x] = 1;
    }
    grid
}

#[test]
fn life_flips_generations_and_lands_in_the_caller_s_grid() {
    let (ctx, module) = example("06-life");
    for count in [0i64, 1, 4, 7] {
        let mut backend = CpuBackend::new();
        let mut executor =
            Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode: TransferMode::Reference });
        let grid = HostBuffer::from_i32(&[16, 16], &glider()).unwrap();
        let output = executor.run("main", vec![ArgValue::Buffer(grid), ArgValue::Scalar(Scalar::Int(count))]).unwrap();
        let mut expected = glider();
        for _ in 0..count {
            expected = life_step(&expected, 16);
        }
        assert_eq!(output.buffers[0].to_i32().unwrap(), expected, "count {count}");
        // Reference: 2 buffers in and out per generation, 1024 B each.
        let count = count as u64;
        assert_eq!(output.report.to_device, TransferCount { count: 2 * count, bytes: 2048 * count });
        assert_eq!(output.report.from_device, TransferCount { count: 2 * count, bytes: 2048 * count });
        assert_eq!(output.report.dispatches, count);
    }
}

#[test]
fn life_with_the_standard_display() {
    let (ctx, module) = example("07-life-display");
    let out = super::tests::Sink::default();
    let mut backend = CpuBackend::new();
    let mut executor =
        Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode: TransferMode::Reference });
    executor.register_host_function("display", host_functions::display(out.clone()));
    let grid = HostBuffer::from_i32(&[16, 16], &glider()).unwrap();
    let output = executor.run("main", vec![ArgValue::Buffer(grid), ArgValue::Scalar(Scalar::Int(2))]).unwrap();
    assert_eq!(output.report.host_calls, 2);
    let text = out.text();
    let frames: Vec<&str> = text.split("\n\n").filter(|f| !f.is_empty()).collect();
    assert_eq!(frames.len(), 2);
    let generation1 = life_step(&glider(), 16);
    let drawn: String = generation1
        .chunks(16)
        .map(|row| row.iter().map(|&c| if c != 0 { '#' } else { '.' }).collect::<String>() + "\n")
        .collect();
    assert_eq!(format!("{}\n", frames[0]), format!("-- 0 --\n{drawn}"));
    assert!(frames[1].starts_with("-- 1 --\n"));
}

#[test]
fn a_device_out_of_bounds_access_is_an_error() {
    let text = r#"
kernel.func @oob(%b: memref<8xi32>) workgroup(8) {
  %i = kernel.global_id x
  %c1 = arith.constant 1 : index
  %j = arith.addi %i, %c1 : index
  %v = arith.constant 1 : i32
  buffer.store %v, %b[%j] : memref<8xi32>
  kernel.return
}
compute.func @main(%b: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  compute.dispatch @oob[%c8](%b) : (memref<8xi32>)
  compute.return
}
"#;
    let (ctx, module) = parse("oob", text);
    let mut backend = CpuBackend::new();
    let error = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode: TransferMode::Reference })
        .run("main", vec![ArgValue::Buffer(HostBuffer::from_i32(&[8], &[0; 8]).unwrap())])
        .unwrap_err();
    assert!(matches!(&error, RuntimeError::DeviceOutOfBounds { kernel, .. } if kernel == "oob"), "{error}");
    assert_eq!(backend.bytes_in_use(), 0);
}

#[test]
fn residency_calls_a_dispatching_compute_helper() {
    let (ctx, module) = example("17-residency");
    let mut backend = CpuBackend::new();
    let mut executor =
        Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode: TransferMode::Reference });
    let ones = || ArgValue::Buffer(HostBuffer::from_f32(&[64], &[1.0; 64]).unwrap());
    let zeros = ArgValue::Buffer(HostBuffer::from_f32(&[64], &[0.0; 64]).unwrap());
    let output = executor.run("main", vec![ones(), ones(), zeros]).unwrap();
    assert_eq!(output.buffers[2].to_f32().unwrap(), vec![100.0; 64]);
    assert_eq!(output.report.dispatches, 100);
    assert_eq!(output.report.to_device, TransferCount { count: 300, bytes: 300 * 256 });
    assert_eq!(output.report.buffer("acc").unwrap().from_device.count, 100);
}

// ----- limits: the grid, device allocations ------------------------------------------------------

const GRID: &str = r#"
kernel.func @nothing() workgroup(1) {
  kernel.return
}
compute.func @main(%x: index, %y: index, %z: index) {
  compute.dispatch @nothing[%x, %y, %z]()
  compute.return
}
"#;

fn run_grid(backend: &mut CpuBackend, ctx: &Context, module: Op, grid: [i64; 3]) -> Result<RunOutput, RuntimeError> {
    let args = grid.iter().map(|&size| ArgValue::Scalar(Scalar::Int(size))).collect();
    Executor::new(verified(ctx, module), backend, ExecutorOptions::default()).run("main", args)
}

#[test]
fn a_grid_over_the_backends_limit_is_refused_before_it_runs() {
    let (ctx, module) = parse("grid", GRID);
    let dispatch_line = GRID.lines().position(|l| l.contains("compute.dispatch")).unwrap() + 1;
    let mut backend = CpuBackend::new();
    assert_eq!(backend.max_work_items(), crate::cpu::DEFAULT_MAX_WORK_ITEMS);
    // 2^40 work items in one dimension, 2^33 over three, and a product past 64 bits.
    let cases: [([i64; 3], Option<u64>); 3] =
        [([1 << 40, 1, 1], Some(1 << 40)), ([1 << 16, 1 << 16, 2], Some(1 << 33)), ([1 << 32, 1 << 32, 2], None)];
    for (grid, items) in cases {
        let error = run_grid(&mut backend, &ctx, module, grid).unwrap_err();
        let RuntimeError::GridTooLarge { kernel, work_items, limit, location, .. } = &error else { panic!("{error}") };
        assert_eq!((kernel.as_str(), *work_items, *limit), ("nothing", items, 1 << 32), "{error}");
        assert_eq!(ctx.sources.describe(*location), format!("grid.hat:{dispatch_line}:3"));
        let [x, y, z] = grid;
        assert!(error.to_string().contains(&format!("a grid of {x} x {y} x {z}")), "{error}");
        assert!(error.to_string().contains("limit"), "{error}");
    }
    let error = run_grid(&mut backend, &ctx, module, [1 << 40, 1, 1]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the dispatch of '@nothing' over a grid of 1099511627776 x 1 x 1 has 1099511627776 work items, \
         more than the backend's limit of 4294967296"
    );
    // The limit is the backend's, and configurable.
    backend.set_max_work_items(100);
    assert_eq!(run_grid(&mut backend, &ctx, module, [10, 5, 2]).unwrap().report.dispatches, 1);
    let error = run_grid(&mut backend, &ctx, module, [101, 1, 1]).unwrap_err();
    assert!(matches!(error, RuntimeError::GridTooLarge { work_items: Some(101), limit: 100, .. }), "{error}");
}

#[test]
fn a_device_allocation_that_fails_names_the_op_that_needed_it() {
    let text = r#"
kernel.func @touch(%b: memref<4611686018427387904xi8>) workgroup(1) {
  kernel.return
}
compute.func @main() {
  %c1 = arith.constant 1 : index
  %b = buffer.alloc() : memref<4611686018427387904xi8>
  compute.dispatch @touch[%c1](%b) : (memref<4611686018427387904xi8>)
  compute.return
}
"#;
    let (ctx, module) = parse("huge", text);
    let mut backend = CpuBackend::new();
    let error = Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions::default())
        .run("main", vec![])
        .unwrap_err();
    assert!(matches!(error.unlocated(), RuntimeError::Allocation { .. }), "{error}");
    assert!(error.to_string().contains("exceeds the CPU backend's limits"), "{error}");
    assert_eq!(ctx.sources.describe(error.location()), "huge.hat:8:3", "the dispatch that needed the device copy");
}

/// The traced reference run of an example (scalars 3), and its clairvoyant optimum.
fn traced(name: &str, record_accesses: bool) -> Result<(crate::oracle::Trace, crate::oracle::Optimum), RuntimeError> {
    let (ctx, module) = example(name);
    let parameters = entry_parameters(verified(&ctx, module), "main").unwrap();
    let mut backend = CpuBackend::new();
    backend.set_record_accesses(record_accesses);
    let mut executor =
        Executor::new(verified(&ctx, module), &mut backend, ExecutorOptions { mode: TransferMode::Reference });
    for host in host_functions(&ctx, module) {
        executor.register_host_function(&host, Box::new(|_: &mut HostCall| Ok(vec![])));
    }
    executor.set_trace(true);
    let run = executor.run("main", arguments(&parameters));
    let trace = executor.take_trace().expect("a traced run leaves its trace");
    run?;
    let optimum = crate::oracle::optimum(&trace);
    crate::oracle::check_plan(&trace, &optimum.plan).expect("the oracle's plan is right");
    Ok((trace, optimum))
}

#[test]
fn the_traced_run_of_squares_needs_the_buffer_in_and_out() {
    let (trace, optimum) = traced("01-squares", true).unwrap();
    assert_eq!(trace.buffers.len(), 1);
    assert_eq!(trace.buffers[0].origin, crate::oracle::Origin::Argument);
    assert_eq!(trace.steps, 2, "the dispatch and the return");
    use crate::oracle::Moved;
    assert_eq!(optimum.to_device, Moved { copies: 1, bytes: 256 });
    assert_eq!(optimum.from_device, Moved { copies: 1, bytes: 256 });
}

#[test]
fn the_traced_run_of_peek_finds_the_hand_written_optimum_in_fewer_copies() {
    // count = 3: 256 B in; 3 x 4 B back in the loop and 252 B after it (the header's optimum),
    // which the last iteration's peek can bring back at once: 3 copies back, not 4.
    let (_, optimum) = traced("04-peek", true).unwrap();
    use crate::oracle::Moved;
    assert_eq!(optimum.to_device, Moved { copies: 1, bytes: 256 });
    assert_eq!(optimum.from_device, Moved { copies: 3, bytes: 252 + 4 * 3 });
    assert!(optimum.copies_exact());
}

#[test]
fn a_trace_needs_a_backend_that_records_element_accesses() {
    let error = traced("01-squares", false).unwrap_err();
    assert!(error.to_string().contains("does not record the element accesses"), "{error}");
}
