//! `print-kernel-effects`: a remark per buffer parameter of every kernel, at the kernel, saying
//! what the kernel-effects analysis found, so that file tests can show it:
//!
//! ```text
//! @life_step %src: read (elements [0, 256) over a 16x16 grid)
//! @life_step %dst: write, every element when the grid covers 16x16 (elements [0, 256))
//! @fill_masked %data: write, not provably every element (elements [0, 64) over a 64 grid)
//! ```
//!
//! Element ranges depend on the dispatch, which a kernel alone does not have: the remark uses
//! one grid per kernel, with every buffer of its parameters' static shapes. That grid is the
//! first, over the kernel's written buffers (in parameter order) and a few grids shaped like
//! each (its dimensions innermost first as x, y, z; outermost first; flattened), under which
//! the kernel provably writes every element of the buffer; else the first of those shapes. "The
//! grid covers G" says every larger grid also writes every element (the accesses are guarded);
//! "the grid is G" that a larger one does not (an unguarded access would go out of bounds).
//!
//! With `dispatches=true`, each launch (an op with a `LaunchOpInterface`) whose grid is made of
//! constants also gets a remark per buffer argument, at the launch, with that grid, the static
//! shapes of its arguments and its constant scalar arguments:
//!
//! ```text
//! dispatch of @life_step over 8x8: %dst: write, not provably every element (elements [0, 120))
//! ```
//!
//! A kernel is a callable running on the device that is never discarded (`kernel.func`; a helper
//! is discardable): what its `CallableOpInterface` and `DEVICE_CODE` trait say.

use super::{Dispatch, KernelEffects, ParamEffects};
use hat_ir::interfaces::{
    constant_integer, execution_space, lookup_symbol, CallableOpInterface, ExecutionSpace, LaunchOpInterface,
};
use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassState};
use hat_ir::verifier::symbol_name;
use hat_ir::{Context, Diagnostic, Op, TypeKind, Value};
use std::ops::Range;

const OPTIONS: &[PassOptionInfo] = &[PassOptionInfo {
    name: "dispatches",
    kind: OptionKind::Bool,
    default: "false",
    help: "also describe every launch whose grid is constant, at the launch",
}];

/// The registration of `print-kernel-effects`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "print-kernel-effects",
        summary: "Print the kernel-effects analysis as a remark per kernel buffer parameter",
        anchor: None,
        options: OPTIONS,
        create: |options| Box::new(PrintKernelEffects { dispatches: options.get_bool("dispatches") }),
    }
}

/// The `print-kernel-effects` pass.
pub struct PrintKernelEffects {
    /// Whether launches get remarks too.
    pub dispatches: bool,
}

impl Pass for PrintKernelEffects {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        for nested in ctx.walk(op) {
            if is_kernel(ctx, nested) {
                let effects = state.analysis::<KernelEffects>(ctx, nested);
                for message in describe(ctx, nested, effects) {
                    state.emit(Diagnostic::remark(ctx.location(nested), message));
                }
            } else if self.dispatches {
                let Some((kernel, dispatch)) = launch(ctx, nested) else { continue };
                let effects = state.analysis::<KernelEffects>(ctx, kernel);
                for message in describe_launch(ctx, kernel, effects, &dispatch) {
                    state.emit(Diagnostic::remark(ctx.location(nested), message));
                }
            }
        }
        state.preserve_all();
        Ok(())
    }
}

/// The kernel `op` launches and what the launch fixes, when its grid is made of constants
/// (also what `race-lint` checks each launch over).
pub fn launch(ctx: &Context, op: Op) -> Option<(Op, Dispatch)> {
    launch_with_any_grid(ctx, op).filter(|(_, dispatch)| dispatch.grid.iter().all(Option::is_some))
}

/// The kernel `op` launches and what the launch fixes: the grid's constant sizes (`None` where
/// not a constant), static shapes and constant scalars.
pub fn launch_with_any_grid(ctx: &Context, op: Op) -> Option<(Op, Dispatch)> {
    let launching = ctx.interface::<dyn LaunchOpInterface>(op)?;
    let kernel = lookup_symbol(ctx, op, ctx.ident_str(launching.kernel(ctx, op)?))?;
    let operands = ctx.operands(op);
    let grid: Vec<Option<u64>> = operands[launching.grid(ctx, op)]
        .iter()
        .map(|&v| constant_integer(ctx, v).and_then(|c| u64::try_from(c).ok()))
        .collect();
    let mut dispatch = Dispatch::new(&grid);
    for (param, &argument) in operands[launching.arguments(ctx, op)].iter().enumerate() {
        if let Some(shape) = static_shape(ctx, argument) {
            dispatch = dispatch.with_shape(param, &shape);
        } else if let Some(value) = constant_integer(ctx, argument) {
            dispatch = dispatch.with_scalar(param, value);
        }
    }
    Some((kernel, dispatch))
}

fn static_shape(ctx: &Context, buffer: Value) -> Option<Vec<Option<u64>>> {
    match ctx.type_kind(ctx.value_type(buffer)) {
        TypeKind::MemRef { shape, .. } => Some(shape.iter().map(|&s| u64::try_from(s).ok()).collect()),
        _ => None,
    }
}

/// The remarks about one launch of `kernel`, one per buffer argument.
pub fn describe_launch(ctx: &Context, kernel: Op, effects: &KernelEffects, dispatch: &Dispatch) -> Vec<String> {
    let name = symbol_name(ctx, kernel).unwrap_or("?");
    let grid: Vec<u64> = dispatch.grid.iter().map(|g| g.unwrap_or(0)).collect();
    let mut messages = Vec::new();
    for (param, p) in effects.params.iter().enumerate().filter(|(_, p)| p.is_buffer) {
        let mut message = format!("dispatch of @{name} over {}: {}", grid_text(&grid), head(ctx, kernel, param, p));
        if p.reads || p.writes {
            let elements = elements_text(effects, param, p, dispatch);
            if p.writes && effects.writes_every_element_in(param, dispatch) {
                message.push_str(", every element");
            } else if p.writes {
                message.push_str(", not provably every element");
            }
            message.push_str(&format!(" ({elements})"));
        }
        messages.push(message);
    }
    messages
}

/// `%name: access[, atomic]`.
fn head(ctx: &Context, kernel: Op, param: usize, effects: &ParamEffects) -> String {
    let parameters = super::summary::parameters(ctx, kernel).unwrap_or_default();
    let argument = parameters
        .get(param)
        .and_then(|&v| ctx.argument_name(v))
        .map_or_else(|| format!("#{param}"), |n| format!("%{n}"));
    let atomic = if effects.atomic { ", atomic" } else { "" };
    format!("{argument}: {}{atomic}", effects.access_name())
}

/// `elements [a, b)`, or `reads [a, b), writes [c, d)`.
fn elements_text(effects: &KernelEffects, param: usize, p: &ParamEffects, dispatch: &Dispatch) -> String {
    let reads = p.reads.then(|| effects.read_elements_in(param, dispatch));
    let writes = p.writes.then(|| effects.written_elements_in(param, dispatch));
    match (reads, writes) {
        (Some(r), None) => format!("elements {}", range_text(&r)),
        (None, Some(w)) => format!("elements {}", range_text(&w)),
        (r, w) => format!("reads {}, writes {}", range_text(&r.flatten()), range_text(&w.flatten())),
    }
}

/// Whether `op` is a kernel (see the module documentation).
fn is_kernel(ctx: &Context, op: Op) -> bool {
    execution_space(ctx, op) == Some(ExecutionSpace::Device)
        && ctx
            .interface::<dyn CallableOpInterface>(op)
            .is_some_and(|c| c.body(ctx, op).is_some() && !c.is_discardable(ctx, op, true))
}

/// The remarks about `kernel`, one per buffer parameter.
pub fn describe(ctx: &Context, kernel: Op, effects: &KernelEffects) -> Vec<String> {
    let name = symbol_name(ctx, kernel).unwrap_or("?");
    let shapes: Vec<Option<Vec<u64>>> =
        effects.static_shapes.iter().map(|s| s.as_ref().and_then(|s| s.iter().copied().collect())).collect();
    let dispatch_over = |grid: &[u64]| {
        let grid: Vec<Option<u64>> = grid.iter().map(|&g| Some(g)).collect();
        let mut dispatch = Dispatch::new(&grid);
        for (param, shape) in shapes.iter().enumerate() {
            if let Some(shape) = shape {
                let shape: Vec<Option<u64>> = shape.iter().map(|&s| Some(s)).collect();
                dispatch = dispatch.with_shape(param, &shape);
            }
        }
        dispatch
    };
    let written: Vec<usize> = (0..effects.params.len()).filter(|&p| effects.params[p].writes).collect();
    let covering = written.iter().find_map(|&p| {
        let candidates = candidate_grids(shapes[p].as_deref()?, effects.workgroup);
        candidates.into_iter().find(|g| effects.writes_every_element_in(p, &dispatch_over(g)))
    });
    let grid = covering.clone().or_else(|| {
        let buffers = written.iter().copied().chain(0..effects.params.len());
        buffers.filter_map(|p| Some(candidate_grids(shapes.get(p)?.as_deref()?, None))).flatten().next()
    });
    let mut messages = Vec::new();
    for (param, p) in effects.params.iter().enumerate().filter(|(_, p)| p.is_buffer) {
        let mut message = format!("@{name} {}", head(ctx, kernel, param, p));
        if !p.reads && !p.writes {
            messages.push(message);
            continue;
        }
        let dispatch = match &grid {
            Some(g) => dispatch_over(g),
            None => Dispatch::new(&[None]),
        };
        let elements = elements_text(effects, param, p, &dispatch);
        let every = p.writes && grid.is_some() && effects.writes_every_element_in(param, &dispatch);
        match &grid {
            Some(g) if every => {
                let larger: Vec<u64> = g.iter().map(|&s| s + 1).collect();
                let verb =
                    if effects.writes_every_element_in(param, &dispatch_over(&larger)) { "covers" } else { "is" };
                message.push_str(&format!(", every element when the grid {verb} {} ({elements})", grid_text(g)));
            }
            _ => {
                if p.writes {
                    message.push_str(", not provably every element");
                }
                let over = grid
                    .as_deref()
                    .map_or_else(|| "an unknown grid".to_string(), |g| format!("a {} grid", grid_text(g)));
                message.push_str(&format!(" ({elements} over {over})"));
            }
        }
        messages.push(message);
    }
    messages
}

/// Grids shaped like a buffer of `shape`: its dimensions innermost first (x runs along a row),
/// outermost first, and flattened; then, given the `workgroup` size, the same with one
/// workgroup per element (a kernel where one work item of each workgroup stores).
fn candidate_grids(shape: &[u64], workgroup: Option<[u64; 3]>) -> Vec<Vec<u64>> {
    let mut grids = Vec::new();
    if (1..=3).contains(&shape.len()) {
        grids.push(shape.iter().rev().copied().collect());
        grids.push(shape.to_vec());
    }
    if let Some(flat) = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) {
        grids.push(vec![flat]);
    }
    if let Some(workgroup) = workgroup.filter(|w| w.iter().any(|&s| s > 1)) {
        let per_element: Vec<Vec<u64>> = grids
            .iter()
            .filter_map(|g| g.iter().zip(workgroup).map(|(&n, w)| n.checked_mul(w)).collect::<Option<Vec<u64>>>())
            .collect();
        grids.extend(per_element);
    }
    grids.dedup();
    grids
}

fn grid_text(grid: &[u64]) -> String {
    let mut sizes = grid.to_vec();
    while sizes.len() > 1 && sizes.last() == Some(&1) {
        sizes.pop();
    }
    sizes.iter().map(u64::to_string).collect::<Vec<_>>().join("x")
}

fn range_text(range: &Option<Range<u64>>) -> String {
    match range {
        Some(r) if r.is_empty() => "none".to_string(),
        Some(r) => format!("[{}, {})", r.start, r.end),
        None => "anywhere".to_string(),
    }
}
