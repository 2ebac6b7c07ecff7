//! `hat-bench aliases`: what `resolve-aliases` costs, in process: for k-way rotations of
//! carried buffers (k = 2 to 8), for the same rotations written as chains of selects on
//! `g % k` and `(g + 1) % k` (no carried values: the e-graph does the work), and for a ping-pong loop whose body has 1,000 dispatches (each
//! with its own parity test, [`programs`]), the time to resolve the loop on every residue and
//! specialise it (best of `--repeat` runs, each on a freshly parsed module), the period found,
//! and the largest e-graph (e-nodes, e-classes). Target: under 50 ms each for k <= 8.
//!
//! Output: the JSON report on stdout and a table on stderr (`--format=table`: the table on
//! stdout, no JSON).

pub mod programs;

use hat_ir::interfaces::{execution_space, ExecutionSpace, LoopLikeOpInterface};
use hat_ir::parse_source;
use hat_passes::resolve_aliases::pass::{resolve_loop, Outcome};
use hat_passes::resolve_aliases::residues::Bounds;
use serde_json::{json, Value};
use std::time::Instant;

/// The target, in milliseconds, for each measurement.
pub const TARGET_MS: f64 = 50.0;

/// Where the output goes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The JSON report on stdout, the table on stderr.
    Json,
    /// The table on stdout, no JSON.
    Table,
}

/// Options of `hat-bench aliases`.
#[derive(clap::Args, Debug)]
pub struct AliasesArgs {
    /// The largest rotation (rotations of 2 to this many buffers are measured).
    #[arg(long, default_value_t = 8)]
    pub max_k: usize,
    /// Dispatches in the ping-pong loop's body.
    #[arg(long, default_value_t = 1000)]
    pub dispatches: usize,
    /// Runs of each measurement (the best time is reported).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Where the output goes.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
}

/// One measurement.
struct Row {
    name: String,
    dispatches: usize,
    ms: f64,
    period: usize,
    nodes: usize,
    classes: usize,
}

/// Resolves and specialises the one loop of `text`, `repeat` times; the best time.
fn measure(name: String, text: &str, dispatches: usize, repeat: usize) -> Result<Row, String> {
    let bounds = Bounds::default();
    let mut best = f64::INFINITY;
    let mut found = None;
    for _ in 0..repeat.max(1) {
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, &name, text).map_err(|e| format!("{name}: {e:?}"))?;
        let function = ctx
            .walk(module)
            .into_iter()
            .find(|&op| execution_space(&ctx, op) == Some(ExecutionSpace::Host) && !ctx.regions(op).is_empty())
            .ok_or("no host function")?;
        let looped = ctx
            .walk(function)
            .into_iter()
            .find(|&op| ctx.interface::<dyn LoopLikeOpInterface>(op).is_some())
            .ok_or("no loop")?;
        let start = Instant::now();
        let outcome = resolve_loop(&mut ctx, function, looped, &bounds);
        let ms = start.elapsed().as_secs_f64() * 1e3;
        best = best.min(ms);
        match outcome {
            Outcome::Specialised { period, nodes, classes } => found = Some((period, nodes, classes)),
            other => return Err(format!("{name}: not specialised: {other:?}")),
        }
    }
    let (period, nodes, classes) = found.expect("at least one run");
    Ok(Row { name, dispatches, ms: best, period, nodes, classes })
}

/// Runs the benchmark: the JSON report, the table, and whether every measurement met the target.
pub fn run(args: &AliasesArgs) -> Result<(Value, String, bool), String> {
    let mut rows = Vec::new();
    for k in 2..=args.max_k.max(2) {
        rows.push(measure(format!("rotation k={k}"), &programs::rotation(k), 1, args.repeat)?);
    }
    for k in 2..=args.max_k.max(2) {
        rows.push(measure(format!("rotation by selects k={k}"), &programs::rotation_by_selects(k), 1, args.repeat)?);
    }
    rows.push(measure(
        format!("ping-pong, {} dispatches", args.dispatches),
        &programs::ping_pong_body(args.dispatches),
        args.dispatches,
        args.repeat,
    )?);
    let met = rows.iter().all(|r| r.ms < TARGET_MS);
    let mut table = format!(
        "{:<32} {:>10} {:>7} {:>8} {:>8} {:>10}\n",
        "loop", "dispatches", "period", "e-nodes", "classes", "time (ms)"
    );
    for r in &rows {
        table.push_str(&format!(
            "{:<32} {:>10} {:>7} {:>8} {:>8} {:>10.3}\n",
            r.name, r.dispatches, r.period, r.nodes, r.classes, r.ms
        ));
    }
    table.push_str(&format!("target: under {TARGET_MS} ms each: {}\n", if met { "met" } else { "NOT met" }));
    let report = json!({
        "benchmark": "aliases",
        "what": "resolve-aliases on one loop: resolution on every residue (e-graphs) and the specialisation, best of the runs",
        "repeat": args.repeat,
        "target_ms": TARGET_MS,
        "target_met": met,
        "loops": rows.iter().map(|r| json!({
            "loop": r.name,
            "dispatches": r.dispatches,
            "period": r.period,
            "egraph_nodes": r.nodes,
            "egraph_classes": r.classes,
            "ms": r.ms,
        })).collect::<Vec<_>>(),
    });
    Ok((report, table, met))
}
