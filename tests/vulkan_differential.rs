//! The Vulkan backend against the CPU reference backend: every scenario of `examples/` and a
//! few hundred generated programs (`program_gen`, the transfer strategies' differential
//! generator) run on both, and must give the same observations — the entry's results, the final
//! host copy of every buffer argument, what every host function saw — and the same transfers,
//! buffer by buffer (count and bytes each way), since the executor decides them, not the
//! backend.
//!
//! - **Integers are compared bit for bit.** Floats within a relative 1e-5 (an absolute 1e-6 near
//!   zero; NaN equals NaN): the lowering marks `addf`/`subf`/`mulf`/`divf` `NoContraction`, so
//!   they round once as on the CPU, but Vulkan allows `OpFDiv` 2.5 ULP and the `GLSL.std.450`
//!   functions (`exp`, `sin`, ...) a few ULP more (docs/lowering.md), and a scenario chains a
//!   handful of them: 1e-5 is about 80 ULP of an `f32`, room for such a chain and far below any
//!   difference a wrong transfer or a wrong lowering makes (poison is NaN or 0xDEADBEEF). How
//!   many floats were not bit-exact is printed.
//! - **Scenario 16** (races) has kernels whose results depend on the schedule by design: its
//!   transfers are compared, its contents are not.
//! - Each program runs as the default pipeline plans it (explicit transfers) and, for the
//!   scenarios, under the reference semantics too.
//! - Everything runs on one Vulkan backend with the validation layer and synchronisation
//!   validation on; any validation message fails the test. Without a Vulkan device the tests
//!   print why and pass, unless `HAT_REQUIRE_VULKAN=1`, where they fail.
//!
//! - **Work items past the grid.** The lowering runs only the work items below the grid (the last,
//!   partial workgroup's others return at once: docs/lowering.md); the CPU backend used to run
//!   the whole last workgroup. While it does (a probe kernel tells), a generated program whose
//!   results differ and that dispatched a partial workgroup is counted and printed, not failed;
//!   once the CPU backend runs exactly the work items below the grid, every difference fails.
//!
//! `HAT_VULKAN_CASES=n` sets the number of generated programs (default 300; seeds 0..n).

mod case_arguments;
#[allow(dead_code, unused_imports)]
mod program_gen;
mod vulkan_support;

use hat_ir::pass::PassManager;
use hat_ir::{parse_source, verify_module, Context, Op};
use hat_runtime::{
    entry_parameters, ArgEffect, ArgValue, Backend, BufferLayout, Command, CpuBackend, DeviceBuffer, DispatchTime,
    ElementType, Executor, ExecutorOptions, Fence, HostArg, HostBuffer, HostCall, KernelArg, KernelArtifact,
    KernelHandle, LoweredModule, ParameterKind, RunOutput, RuntimeError, Scalar, TransferMode,
};
use hat_runtime_vulkan::VulkanBackend;
use program_gen::{differential_case, render, Constructs};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use vulkan_support::vulkan;

fn assert_valid(gpu: &VulkanBackend) {
    let messages = gpu.validation_messages();
    assert!(messages.is_empty(), "{} validation message(s):\n{}", messages.len(), messages.join("\n"));
}

/// Parses `text` and runs `pipeline` on it.
fn load(name: &str, text: &str, pipeline: Option<&str>) -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, name, text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    if let Some(pipeline) = pipeline {
        let mut manager = PassManager::new("builtin.module", Default::default());
        manager.add_pipeline(&hat_passes::registry(), pipeline).unwrap_or_else(|e| panic!("{e}"));
        manager.run(&mut ctx, module).unwrap_or_else(|e| panic!("{name}: {pipeline}: {e:?}"));
    }
    if let Err(errors) = verify_module(&ctx, module) {
        panic!("{name} does not verify after {pipeline:?}: {errors:?}");
    }
    (ctx, module)
}

/// What a host function saw at one call.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Scalar(Scalar),
    Buffer(HostBuffer),
    /// A `write` argument: not read.
    WriteOnly,
}

/// The host calls of a run: each function's name and what it saw.
type CallLog = Rc<RefCell<Vec<(String, Vec<Seen>)>>>;

/// Everything a run lets anyone observe, and its report.
struct Observed {
    results: Vec<ArgValue>,
    buffers: Vec<HostBuffer>,
    calls: Vec<(String, Vec<Seen>)>,
    output: RunOutput,
}

/// A host function that records what it may read, changes what it may write (the same way on
/// both backends), and returns the sum of what it read when it has a result.
fn recorder(log: CallLog) -> hat_runtime::HostFunction<'static> {
    Box::new(move |call: &mut HostCall| {
        let number = log.borrow().len() as i64;
        let mut seen = Vec::new();
        let mut sum = number;
        for (j, arg) in call.args().enumerate() {
            match arg {
                HostArg::Scalar(value, _) => {
                    sum = sum.wrapping_add(value.as_i64());
                    seen.push(Seen::Scalar(value));
                }
                HostArg::Buffer(buffer, _) if call.effect(j) == Some(ArgEffect::Write) => {
                    let _ = buffer;
                    seen.push(Seen::WriteOnly);
                }
                HostArg::Buffer(buffer, _) => {
                    if let Some(values) = buffer.to_i32() {
                        sum = values.iter().fold(sum, |s, &v| s.wrapping_add(v as i64));
                    }
                    seen.push(Seen::Buffer(buffer.clone()));
                }
            }
        }
        log.borrow_mut().push((call.name().to_string(), seen));
        for j in 0..call.len() {
            if !matches!(call.effect(j), Some(ArgEffect::Write | ArgEffect::ReadWrite)) {
                continue;
            }
            let Ok(buffer) = call.buffer_mut(j) else { continue };
            if let Some(mut values) = buffer.to_i32() {
                let n = values.len() as i64;
                for (e, v) in values.iter_mut().enumerate() {
                    if (e as i64 + number) % 3 == 0 {
                        *v = (number * 100 + e as i64 + n) as i32;
                    }
                }
                *buffer = HostBuffer::from_i32(&buffer.layout.shape.clone(), &values).ok_or("same layout")?;
            }
        }
        Ok(call.result_types().iter().map(|_| Scalar::Int(sum)).collect())
    })
}

fn run(
    ctx: &Context,
    module: Op,
    backend: &mut dyn Backend,
    mode: TransferMode,
    args: Vec<ArgValue>,
    host_functions: &[String],
) -> Result<Observed, String> {
    let module = verify_module(ctx, module).expect("verified");
    let log: CallLog = Rc::default();
    let output = {
        let mut executor = Executor::new(module, backend, ExecutorOptions { mode });
        for name in host_functions {
            executor.register_host_function(name, recorder(Rc::clone(&log)));
        }
        executor.run("main", args).map_err(|e| format!("{} ({})", e, ctx.sources.describe(e.location())))?
    };
    let calls = log.borrow().clone();
    Ok(Observed { results: output.results.clone(), buffers: output.buffers.clone(), calls, output })
}

/// Whether two floats are equal within the tolerance of the module documentation.
fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-6_f64.max(1e-5 * a.abs().max(b.abs()))
}

/// Compares two host buffers: `Err` with the first difference; `Ok` with how many floats were
/// not bit-exact.
fn compare_buffers(what: &str, cpu: &HostBuffer, gpu: &HostBuffer) -> Result<usize, String> {
    if cpu.layout != gpu.layout {
        return Err(format!("{what}: layouts {:?} and {:?}", cpu.layout, gpu.layout));
    }
    let (a, b) = (cpu.to_scalars(), gpu.to_scalars());
    if !cpu.layout.element.is_float() {
        return match (0..a.len()).find(|&e| a[e] != b[e]) {
            None => Ok(0),
            Some(e) => Err(format!("{what}: element {e} is {:?} on the cpu, {:?} on vulkan", a[e], b[e])),
        };
    }
    let mut inexact = 0;
    for e in 0..a.len() {
        let (a, b) = (a[e].as_f64(), b[e].as_f64());
        if !close(a, b) {
            return Err(format!("{what}: element {e} is {a} on the cpu, {b} on vulkan"));
        }
        inexact += usize::from(a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan()));
    }
    Ok(inexact)
}

/// Compares what the two runs observed and moved; `Ok` with the floats not bit-exact.
fn compare(cpu: &Observed, gpu: &Observed, contents: bool) -> Result<usize, String> {
    let mut inexact = 0;
    if contents {
        for (i, (a, b)) in cpu.results.iter().zip(&gpu.results).enumerate() {
            let equal = match (a, b) {
                (ArgValue::Scalar(Scalar::Float(x)), ArgValue::Scalar(Scalar::Float(y))) => close(*x, *y),
                (ArgValue::Buffer(x), ArgValue::Buffer(y)) => {
                    inexact += compare_buffers(&format!("result #{i}"), x, y)?;
                    true
                }
                _ => a == b,
            };
            if !equal {
                return Err(format!("result #{i}: cpu {a:?}, vulkan {b:?}"));
            }
        }
        for (i, (a, b)) in cpu.buffers.iter().zip(&gpu.buffers).enumerate() {
            inexact += compare_buffers(&format!("buffer argument #{i}"), a, b)?;
        }
        if cpu.calls.len() != gpu.calls.len() {
            return Err(format!("{} host calls on the cpu, {} on vulkan", cpu.calls.len(), gpu.calls.len()));
        }
        for (k, ((name, a), (_, b))) in cpu.calls.iter().zip(&gpu.calls).enumerate() {
            for (j, (x, y)) in a.iter().zip(b).enumerate() {
                match (x, y) {
                    (Seen::Buffer(x), Seen::Buffer(y)) => {
                        inexact += compare_buffers(&format!("call #{k} (@{name}) argument #{j}"), x, y)?
                    }
                    _ if x != y => return Err(format!("call #{k} (@{name}) argument #{j}: cpu {x:?}, vulkan {y:?}")),
                    _ => {}
                }
            }
        }
    }
    let (a, b) = (&cpu.output.report, &gpu.output.report);
    for (x, y) in a.per_buffer.iter().zip(&b.per_buffer) {
        if x != y {
            return Err(format!("transfers of '{}': cpu {x:?}, vulkan {y:?}", x.name));
        }
    }
    if (a.per_buffer.len(), a.dispatches, a.host_calls) != (b.per_buffer.len(), b.dispatches, b.host_calls) {
        return Err(format!(
            "buffers, dispatches, host calls: cpu {:?}, vulkan {:?}",
            (a.per_buffer.len(), a.dispatches, a.host_calls),
            (b.per_buffer.len(), b.dispatches, b.host_calls)
        ));
    }
    Ok(inexact)
}

// ----- work items past the grid ------------------------------------------------------------------

/// Whether the CPU backend runs the work items of a partial last workgroup past the grid.
fn cpu_runs_past_the_grid() -> bool {
    let text = "kernel.func @probe(%b: memref<2xi32>) workgroup(2) {
  %i = kernel.global_id x
  %one = arith.constant 1 : i32
  buffer.store %one, %b[%i] : memref<2xi32>
  kernel.return
}";
    let (ctx, module) = load("probe.hat", text, None);
    let verified = verify_module(&ctx, module).expect("verified");
    let mut cpu = CpuBackend::new();
    let probe = cpu.compile_kernel(verified.nested(ctx.body_ops(module)[0]).expect("nested")).expect("compiles");
    let buffer = cpu.allocate(&BufferLayout { element: ElementType::I32, shape: vec![2] }).expect("allocates");
    cpu.copy_to_device(buffer, 0, &[0; 8]).expect("copies");
    cpu.dispatch(probe, [1, 1, 1], &[KernelArg::Buffer(buffer)]).expect("runs");
    let mut bytes = [0u8; 8];
    cpu.copy_from_device(buffer, 0, &mut bytes).expect("copies back");
    bytes[4] == 1
}

/// The CPU backend, noting whether a dispatch had a partial last workgroup.
struct Watched {
    cpu: CpuBackend,
    partial: bool,
}

impl Backend for Watched {
    fn name(&self) -> &str {
        self.cpu.name()
    }
    fn lower(&mut self, module: hat_ir::Verified<'_>) -> Result<Option<Arc<dyn LoweredModule>>, RuntimeError> {
        self.cpu.lower(module)
    }
    fn max_work_items(&self) -> u64 {
        self.cpu.max_work_items()
    }
    fn allocate(&mut self, layout: &BufferLayout) -> Result<DeviceBuffer, RuntimeError> {
        self.cpu.allocate(layout)
    }
    fn free(&mut self, buffer: DeviceBuffer) -> Result<(), RuntimeError> {
        self.cpu.free(buffer)
    }
    fn allocate_arena(&mut self, bytes: usize) -> Result<Option<DeviceBuffer>, RuntimeError> {
        self.cpu.allocate_arena(bytes)
    }
    fn allocate_in(
        &mut self,
        arena: DeviceBuffer,
        offset: usize,
        layout: &BufferLayout,
    ) -> Result<DeviceBuffer, RuntimeError> {
        self.cpu.allocate_in(arena, offset, layout)
    }
    fn compile(&mut self, kernel: &KernelArtifact<'_>) -> Result<KernelHandle, RuntimeError> {
        self.cpu.compile(kernel)
    }
    fn record_write(&mut self, b: DeviceBuffer, o: usize, d: &[u8], a: &[Command]) -> Result<Command, RuntimeError> {
        self.cpu.record_write(b, o, d, a)
    }
    fn record_read(&mut self, b: DeviceBuffer, o: usize, n: usize, a: &[Command]) -> Result<Command, RuntimeError> {
        self.cpu.record_read(b, o, n, a)
    }
    fn record_dispatch(
        &mut self,
        kernel: KernelHandle,
        grid: [u64; 3],
        args: &[KernelArg],
        after: &[Command],
    ) -> Result<Command, RuntimeError> {
        let workgroup = self.cpu.workgroup_size(kernel).unwrap_or([1; 3]);
        self.partial |= (0..3).any(|d| !grid[d].is_multiple_of(workgroup[d].max(1)));
        self.cpu.record_dispatch(kernel, grid, args, after)
    }
    fn submit(&mut self) -> Result<Fence, RuntimeError> {
        self.cpu.submit()
    }
    fn wait(&mut self, fence: Fence) -> Result<Vec<DispatchTime>, RuntimeError> {
        self.cpu.wait(fence)
    }
    fn take_read(&mut self, read: Command, into: &mut [u8]) -> Result<(), RuntimeError> {
        self.cpu.take_read(read, into)
    }
}

// ----- the scenarios ---------------------------------------------------------------------------

/// Deterministic arguments: buffers of small integers (floats in [0, 1)), scalars 7 (0.5).
fn scenario_arguments(ctx: &Context, module: Op) -> Vec<ArgValue> {
    let module = verify_module(ctx, module).expect("verified");
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    entry_parameters(module, "main")
        .expect("an entry")
        .into_iter()
        .map(|p| match p.kind {
            ParameterKind::Buffer(layout) => {
                let values: Vec<Scalar> = (0..layout.len())
                    .map(|_| match layout.element {
                        e if e.is_float() => Scalar::Float((next() % 1000) as f64 / 1000.0),
                        ElementType::I1 => Scalar::Int((next() % 2) as i64),
                        _ => Scalar::Int((next() % 4) as i64),
                    })
                    .collect();
                ArgValue::Buffer(HostBuffer::from_scalars(layout, &values).expect("fits"))
            }
            ParameterKind::Scalar(ty) if ty.is_float() => ArgValue::Scalar(Scalar::Float(0.5)),
            ParameterKind::Scalar(_) => ArgValue::Scalar(Scalar::Int(7)),
            ParameterKind::DynamicBuffer { .. } => panic!("no example takes a dynamic buffer"),
        })
        .collect()
}

#[test]
fn every_scenario_runs_on_vulkan_as_on_the_cpu() {
    let Some(mut gpu) = vulkan() else { return };
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<_> = std::fs::read_dir(&examples)
        .expect("examples/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "hat"))
        .collect();
    files.sort();
    assert!(files.len() >= 18, "the scenarios are in examples/");
    let host_functions: Vec<String> = ["display", "checkpoint", "print"].map(String::from).to_vec();
    let (mut failures, mut inexact, mut runs) = (Vec::new(), 0, 0);
    for path in &files {
        let name = format!("examples/{}", path.file_name().expect("a file").to_string_lossy());
        let text = std::fs::read_to_string(path).expect("readable");
        let contents = !name.contains("16-races");
        for (pipeline, mode) in [(Some("default"), TransferMode::Explicit), (None, TransferMode::Reference)] {
            let (ctx, module) = load(&name, &text, pipeline);
            let args = scenario_arguments(&ctx, module);
            let mut cpu = CpuBackend::new();
            cpu.set_parallel(false);
            let at = format!("{name} ({})", mode.name());
            let outcome = run(&ctx, module, &mut cpu, mode, args.clone(), &host_functions)
                .and_then(|cpu| Ok((cpu, run(&ctx, module, &mut gpu, mode, args, &host_functions)?)))
                .and_then(|(cpu, vulkan)| compare(&cpu, &vulkan, contents));
            runs += 1;
            match outcome {
                Ok(n) => inexact += n,
                Err(message) => failures.push(format!("{at}: {message}")),
            }
            assert_valid(&gpu);
        }
    }
    eprintln!("{runs} runs of {} scenarios; {inexact} floats not bit-exact (within the tolerance)", files.len());
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

// ----- generated programs ----------------------------------------------------------------------

#[test]
fn generated_programs_run_on_vulkan_as_on_the_cpu() {
    let Some(mut gpu) = vulkan() else { return };
    let cases: u64 = std::env::var("HAT_VULKAN_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300);
    let lenient = cpu_runs_past_the_grid();
    let start = Instant::now();
    let (mut failures, mut past_the_grid) = (Vec::new(), Vec::new());
    for seed in 0..cases {
        let case = differential_case(seed, Constructs::NONE);
        let text = render(&case.program);
        let (ctx, module) = load("generated.hat", &text, Some("default"));
        let mut host_functions: Vec<String> = vec!["observe".to_string()];
        host_functions.extend((0..case.program.host_funcs.len()).map(|k| format!("h{k}")));
        let args = case_arguments::arguments(&case);
        let mut cpu = Watched { cpu: CpuBackend::new(), partial: false };
        cpu.cpu.set_parallel(false);
        let outcome = run(&ctx, module, &mut cpu, TransferMode::Explicit, args.clone(), &host_functions)
            .and_then(|cpu| Ok((cpu, run(&ctx, module, &mut gpu, TransferMode::Explicit, args, &host_functions)?)))
            .and_then(|(cpu, vulkan)| compare(&cpu, &vulkan, true));
        match outcome {
            Ok(_) => {}
            Err(_) if lenient && cpu.partial => past_the_grid.push(seed),
            Err(message) => failures.push(format!("seed {seed}: {message}\n{}", program_gen::numbered(&text))),
        }
        assert_valid(&gpu);
    }
    eprintln!("{cases} generated programs on the cpu and on vulkan in {:.1} s", start.elapsed().as_secs_f64());
    if !past_the_grid.is_empty() {
        eprintln!(
            "{} program(s) differ where the CPU backend ran work items past the grid, which the lowering does \
             not (not failed until the CPU backend runs exactly the grid): seeds {past_the_grid:?}",
            past_the_grid.len()
        );
    }
    let shown: Vec<&String> = failures.iter().take(3).collect();
    assert!(failures.is_empty(), "{} of {cases} programs differ; the first:\n{shown:#?}", failures.len());
}
