//! The scenarios (`examples/*.hat`) under every transfer strategy on the CPU backend: what each
//! strategy moves (count and bytes, each way), whether its run observes what the reference
//! semantics' run observes, and the optimum beside it.
//!
//! A strategy is a pass pipeline run on the parsed file and the executor's transfer mode for the
//! run after it: the reference row runs the file unchanged in `TransferMode::Reference` ("copy
//! everything, every time"); the others run the planned program in `TransferMode::Explicit`,
//! where only the program's own transfers move data (and fresh device memory is poisoned, so a
//! missing transfer shows in the results).
//!
//! What is observed (and compared with the reference run): the entry's results, the final host
//! copy of every buffer argument, and the arguments of every host-function call (each declared
//! `compute.host_func` is bound to a function that records them).

use super::optimum::{header_optimal, optimum_of, Bytes};
use hat_ir::pass::{PassManager, PassManagerOptions};
use hat_ir::{parse_source, verify_module, Context, Op};
use hat_runtime::oracle::Trace;
use hat_runtime::{
    entry_parameters, ArgValue, CpuBackend, ElementType, Executor, ExecutorOptions, HostArg, HostBuffer, HostCall,
    ParameterKind, RunReport, Scalar, TransferMode,
};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

/// The default pipeline where the registry has no pipeline named `default` (what `hat-opt --run`
/// does with no pass given), in order of preference: the first whose passes are all registered.
pub const DEFAULT_FALLBACKS: &[&str] = &[
    "inline,insert-transfers{strategy=static},hoist-transfers,canonicalize",
    "inline,insert-transfers{strategy=static},canonicalize",
];

/// One strategy: a pipeline (none for the reference) and the transfer mode of the run after it.
#[derive(Clone, Debug)]
pub struct Strategy {
    /// Its name in the reports.
    pub name: &'static str,
    /// The pass pipeline, if any.
    pub pipeline: Option<String>,
    /// How the executor moves data.
    pub mode: TransferMode,
}

/// The pipeline of the tracking strategy (as `hat-opt --strategy=tracking` runs it).
pub const TRACKING: &str = "inline,canonicalize,track-accesses";

/// The strategies of this build: the reference, jic, kernel, static, default and tracking; and
/// those skipped, with why (a pipeline whose passes are not registered).
pub fn strategies() -> (Vec<Strategy>, Vec<(&'static str, String)>) {
    let registry = hat_passes::registry();
    let builds = |text: &str| {
        PassManager::new("builtin.module", PassManagerOptions::default()).add_pipeline(&registry, text).is_ok()
    };
    let default = std::iter::once("default")
        .chain(DEFAULT_FALLBACKS.iter().copied())
        .find(|text| builds(text))
        .expect("the last fallback's passes are registered")
        .to_string();
    let planned = |name, pipeline: &str, mode| Strategy { name, pipeline: Some(pipeline.to_string()), mode };
    let mut list = vec![
        Strategy { name: "reference", pipeline: None, mode: TransferMode::Reference },
        planned("jic", "insert-transfers{strategy=jic}", TransferMode::Explicit),
        planned("kernel", "insert-transfers{strategy=kernel}", TransferMode::Explicit),
        planned("static", "insert-transfers{strategy=static}", TransferMode::Explicit),
        planned("default", &default, TransferMode::Explicit),
    ];
    let mut skipped = Vec::new();
    if builds(TRACKING) {
        list.push(planned("tracking", TRACKING, TransferMode::Tracking));
    } else {
        skipped
            .push(("tracking", format!("the pipeline '{TRACKING}' does not build: track-accesses is not registered")));
    }
    (list, skipped)
}

/// What one strategy moved on one run, and whether the run observed what the reference did.
#[derive(Clone, Debug, Default)]
pub struct Moved {
    /// Copies to the device: (count, bytes).
    pub to_device: (u64, u64),
    /// Copies from the device: (count, bytes).
    pub from_device: (u64, u64),
    /// Whether every observation equals the reference run's (`None` for the reference itself).
    pub correct: Option<bool>,
    /// The first observation that differs, if any.
    pub difference: Option<String>,
    /// Why there is no run (the pipeline or the run failed).
    pub error: Option<String>,
}

impl Moved {
    /// (bytes to the device, bytes from the device), if it ran.
    pub fn bytes(&self) -> Option<Bytes> {
        self.error.is_none().then_some((self.to_device.1, self.from_device.1))
    }

    fn failed(error: String) -> Moved {
        Moved { error: Some(error), ..Moved::default() }
    }
}

/// One scenario at one trip count.
#[derive(Clone, Debug)]
pub struct Row {
    /// The trip count given, if the scenario has one.
    pub count: Option<i64>,
    /// The optimum (bytes each way), if the table has the scenario.
    pub optimum: Option<Bytes>,
    /// Per strategy, in the order of [`strategies`].
    pub moved: Vec<Moved>,
}

/// One scenario at every trip count.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The file name.
    pub file: String,
    /// The trip-count parameter, if any.
    pub count_parameter: Option<&'static str>,
    /// The header's `optimal:` statement.
    pub header_optimal: Option<String>,
    /// One row per trip count.
    pub rows: Vec<Row>,
}

/// Parses `text` and runs `pipeline` on it.
pub(super) fn load(name: &str, text: &str, pipeline: Option<&str>) -> Result<(Context, Op), String> {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, name, text).map_err(|e| format!("{name} does not parse: {e:?}"))?;
    if let Err(errors) = verify_module(&ctx, module) {
        return Err(hat_ir::diagnostics::render(&ctx.sources, &errors));
    }
    if let Some(pipeline) = pipeline {
        let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
        manager.add_pipeline(&hat_passes::registry(), pipeline).map_err(|e| e.to_string())?;
        if let Err(errors) = manager.run(&mut ctx, module) {
            return Err(format!("{pipeline}: {}", hat_ir::diagnostics::render(&ctx.sources, &errors)));
        }
    }
    Ok((ctx, module))
}

/// Deterministic arguments for `@main`: buffers of small integers (0..4) or floats in [0, 1)
/// from a fixed xorshift sequence, `i1` buffers of 0 and 1; scalars from `scalars` by name, else
/// 7 (integers) or 0.5 (floats). The same as the scenario test's.
pub fn arguments(ctx: &Context, module: Op, scalars: &[(&str, i64)]) -> Result<Vec<ArgValue>, String> {
    let module = verify_module(ctx, module).map_err(|_| "the module does not verify".to_string())?;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let parameters = entry_parameters(module, "main").map_err(|e| e.to_string())?;
    parameters
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
                HostBuffer::from_scalars(layout, &values)
                    .map(ArgValue::Buffer)
                    .ok_or_else(|| format!("%{}: values do not fit", p.name))
            }
            ParameterKind::Scalar(ty) => {
                let given = scalars.iter().find(|(n, _)| *n == p.name).map(|&(_, v)| v);
                Ok(ArgValue::Scalar(match (ty.is_float(), given) {
                    (true, _) => Scalar::Float(0.5),
                    (false, Some(v)) => Scalar::Int(v),
                    (false, None) => Scalar::Int(7),
                }))
            }
            ParameterKind::DynamicBuffer { .. } => {
                Err(format!("%{}: a dynamic buffer takes no generated value", p.name))
            }
        })
        .collect()
}

/// Everything a run lets anyone observe, and its report.
pub(super) struct Observed {
    pub(super) results: Vec<ArgValue>,
    pub(super) buffers: Vec<HostBuffer>,
    pub(super) calls: Vec<String>,
    pub(super) report: RunReport,
    /// The names of the entry's buffer parameters, in order (those of `buffers`).
    pub(super) buffer_names: Vec<String>,
}

/// The names of the module's declared host functions.
fn host_functions(ctx: &Context, module: Op) -> Vec<String> {
    ctx.walk(module)
        .into_iter()
        .filter(|&op| hat_dialects::compute::HostFuncOp::wrap(ctx, op).is_some())
        .filter_map(|op| hat_ir::verifier::symbol_name(ctx, op).map(str::to_string))
        .collect()
}

pub(super) fn run(ctx: &Context, module: Op, mode: TransferMode, args: Vec<ArgValue>) -> Result<Observed, String> {
    run_traced(ctx, module, mode, args, false).map(|(observed, _)| observed)
}

/// [`run`], and with `trace` the run's trace for the clairvoyant optimum (the CPU backend then
/// records every dispatch's element accesses; see `hat_runtime::oracle`).
pub(super) fn run_traced(
    ctx: &Context,
    module: Op,
    mode: TransferMode,
    args: Vec<ArgValue>,
    trace: bool,
) -> Result<(Observed, Option<Trace>), String> {
    let verified = verify_module(ctx, module).map_err(|_| "the module does not verify".to_string())?;
    let buffer_names: Vec<String> = entry_parameters(verified, "main")
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|p| !matches!(p.kind, ParameterKind::Scalar(_)))
        .map(|p| p.name)
        .collect();
    let calls: Rc<RefCell<Vec<String>>> = Rc::default();
    let mut backend = CpuBackend::new();
    backend.set_record_accesses(trace);
    let mut executor = Executor::new(verified, &mut backend, ExecutorOptions { mode });
    executor.set_trace(trace);
    for name in host_functions(ctx, module) {
        let log = calls.clone();
        executor.register_host_function(
            &name,
            Box::new(move |call: &mut HostCall| {
                let args: Vec<String> = call
                    .args()
                    .map(|a| match a {
                        HostArg::Scalar(v, _) => format!("{v:?}"),
                        HostArg::Buffer(b, _) => format!("{:?}", b.bytes),
                    })
                    .collect();
                log.borrow_mut().push(format!("@{}({})", call.name(), args.join(", ")));
                Ok(Vec::new())
            }),
        );
    }
    let output = executor.run("main", args).map_err(|e| format!("the run failed: {e}"))?;
    let traced = executor.take_trace();
    let calls = calls.borrow().clone();
    let observed =
        Observed { results: output.results, buffers: output.buffers, calls, report: output.report, buffer_names };
    Ok((observed, traced))
}

/// The first observation of `observed` that differs from `reference`'s, if any.
pub(super) fn difference(observed: &Observed, reference: &Observed) -> Option<String> {
    if observed.results != reference.results {
        return Some("the entry's results".to_string());
    }
    if let Some(i) = observed.buffers.iter().zip(&reference.buffers).position(|(a, b)| a != b) {
        let name = reference.buffer_names.get(i).map_or(format!("#{i}"), |n| format!("%{n}"));
        return Some(format!("the final host copy of {name}"));
    }
    if observed.calls.len() != reference.calls.len() {
        return Some(format!("{} host calls, not {}", observed.calls.len(), reference.calls.len()));
    }
    let i = observed.calls.iter().zip(&reference.calls).position(|(a, b)| a != b)?;
    Some(format!("host call #{i}'s arguments ({})", reference.calls[i].split('(').next().unwrap_or("?")))
}

/// Runs the scenario in `path` under every strategy at every trip count of `counts` (once if it
/// has no trip count).
pub fn run_scenario(path: &Path, strategies: &[Strategy], counts: &[i64]) -> Result<Scenario, String> {
    let file = path.file_name().and_then(|n| n.to_str()).ok_or("a file name that is not UTF-8")?.to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = format!("examples/{file}");
    let optimum = optimum_of(&file);
    let count_parameter = optimum.and_then(|o| o.count);
    let programs: Vec<Result<(Context, Op), String>> =
        strategies.iter().map(|s| load(&name, &text, s.pipeline.as_deref())).collect();
    let reference_index = strategies.iter().position(|s| s.mode == TransferMode::Reference && s.pipeline.is_none());
    let trip_counts: Vec<Option<i64>> = match count_parameter {
        Some(_) => counts.iter().map(|&c| Some(c)).collect(),
        None => vec![None],
    };
    let mut rows = Vec::new();
    for count in trip_counts {
        let scalars: Vec<(&str, i64)> = count_parameter.zip(count).into_iter().collect();
        let (ctx, module) = load(&name, &text, None)?;
        let args = arguments(&ctx, module, &scalars)?;
        let runs: Vec<Result<Observed, String>> = strategies
            .iter()
            .zip(&programs)
            .map(|(strategy, program)| match program {
                Ok((ctx, module)) => run(ctx, *module, strategy.mode, args.clone()),
                Err(e) => Err(e.clone()),
            })
            .collect();
        let reference = reference_index.and_then(|i| runs[i].as_ref().ok());
        let moved = runs
            .iter()
            .enumerate()
            .map(|(i, observed)| match observed {
                Ok(observed) => {
                    let report = &observed.report;
                    let diff = match reference {
                        Some(reference) if Some(i) != reference_index => difference(observed, reference),
                        _ => None,
                    };
                    Moved {
                        to_device: (report.to_device.count, report.to_device.bytes),
                        from_device: (report.from_device.count, report.from_device.bytes),
                        correct: (Some(i) != reference_index && reference.is_some()).then_some(diff.is_none()),
                        difference: diff,
                        error: None,
                    }
                }
                Err(e) => Moved::failed(e.clone()),
            })
            .collect();
        rows.push(Row { count, optimum: optimum.map(|o| (o.bytes)(count.unwrap_or(0))), moved });
    }
    Ok(Scenario { file, count_parameter, header_optimal: header_optimal(&text), rows })
}

/// The `.hat` files of `dir`, sorted by name.
pub fn scenario_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "hat"))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squares_under_every_strategy() {
        let (strategies, _) = strategies();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/01-squares.hat");
        let scenario = run_scenario(&path, &strategies, &[0, 1]).expect("runs");
        assert_eq!(scenario.count_parameter, None);
        assert_eq!(scenario.rows.len(), 1, "no trip count: one row");
        let row = &scenario.rows[0];
        assert_eq!(row.optimum, Some((256, 256)));
        let by_name = |name: &str| &row.moved[strategies.iter().position(|s| s.name == name).expect("a strategy")];
        // The reference semantics: the one buffer in and out around the one dispatch.
        assert_eq!(by_name("reference").to_device, (1, 256));
        assert_eq!(by_name("reference").from_device, (1, 256));
        assert_eq!(by_name("reference").correct, None);
        for moved in &row.moved[1..] {
            assert_eq!(moved.error, None);
            assert_eq!(moved.correct, Some(true), "{moved:?}");
        }
    }

    #[test]
    fn a_plan_that_moves_nothing_is_caught() {
        // Without any transfer, the explicit run reads poisoned device memory back... nowhere:
        // the host copy stays the input, which differs from the reference's squares.
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/01-squares.hat"))
            .expect("readable");
        let (ctx, module) = load("01-squares.hat", &text, None).expect("loads");
        let args = arguments(&ctx, module, &[]).expect("arguments");
        let reference = run(&ctx, module, TransferMode::Reference, args.clone()).expect("runs");
        let unplanned = run(&ctx, module, TransferMode::Explicit, args).expect("runs");
        assert_eq!(unplanned.report.total_bytes(), 0);
        assert_eq!(difference(&unplanned, &reference).as_deref(), Some("the final host copy of %data"));
        assert_eq!(difference(&reference, &reference), None);
    }

    #[test]
    fn arguments_are_deterministic_and_take_the_trip_count() {
        let text = "compute.func @main(%data: memref<4xi32>, %count: index, %x: f32) {\n  compute.return\n}\n";
        let (ctx, module) = load("t.hat", text, None).expect("loads");
        let a = arguments(&ctx, module, &[("count", 10)]).expect("arguments");
        assert_eq!(a, arguments(&ctx, module, &[("count", 10)]).expect("arguments"));
        assert_eq!(a[1], ArgValue::Scalar(Scalar::Int(10)));
        assert_eq!(a[2], ArgValue::Scalar(Scalar::Float(0.5)));
        assert_eq!(arguments(&ctx, module, &[]).expect("arguments")[1], ArgValue::Scalar(Scalar::Int(7)));
    }
}
