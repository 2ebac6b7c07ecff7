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
//! A kernel is a callable running on the device that is never discarded (`kernel.func`; a helper
//! is discardable): what its `CallableOpInterface` and `DEVICE_CODE` trait say.

use super::{Dispatch, KernelEffects};
use hat_ir::interfaces::{execution_space, CallableOpInterface, ExecutionSpace};
use hat_ir::pass::{Pass, PassFailed, PassInfo, PassState};
use hat_ir::verifier::symbol_name;
use hat_ir::{Context, Diagnostic, Op};
use std::ops::Range;

/// The registration of `print-kernel-effects`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "print-kernel-effects",
        summary: "Print the kernel-effects analysis as a remark per kernel buffer parameter",
        anchor: None,
        options: &[],
        create: |_| Box::new(PrintKernelEffects),
    }
}

/// The `print-kernel-effects` pass.
pub struct PrintKernelEffects;

impl Pass for PrintKernelEffects {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        for kernel in ctx.walk(op).into_iter().filter(|&k| is_kernel(ctx, k)) {
            let effects = state.analysis::<KernelEffects>(ctx, kernel);
            for message in describe(ctx, kernel, effects) {
                state.emit(Diagnostic::remark(ctx.location(kernel), message));
            }
        }
        state.preserve_all();
        Ok(())
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
    let parameters = super::summary::parameters(ctx, kernel).unwrap_or_default();
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
        let candidates = candidate_grids(shapes[p].as_deref()?);
        candidates.into_iter().find(|g| effects.writes_every_element_in(p, &dispatch_over(g)))
    });
    let grid = covering.clone().or_else(|| {
        let buffers = written.iter().copied().chain(0..effects.params.len());
        buffers.filter_map(|p| shapes.get(p)?.as_deref().map(candidate_grids)).flatten().next()
    });
    let mut messages = Vec::new();
    for (param, p) in effects.params.iter().enumerate().filter(|(_, p)| p.is_buffer) {
        let argument = parameters
            .get(param)
            .and_then(|&v| ctx.argument_name(v))
            .map_or_else(|| format!("#{param}"), |n| format!("%{n}"));
        let mut message = format!("@{name} {argument}: {}", p.access_name());
        if p.atomic {
            message.push_str(", atomic");
        }
        if !p.reads && !p.writes {
            messages.push(message);
            continue;
        }
        let dispatch = match &grid {
            Some(g) => dispatch_over(g),
            None => Dispatch::new(&[None]),
        };
        let reads = p.reads.then(|| effects.read_elements_in(param, &dispatch));
        let writes = p.writes.then(|| effects.written_elements_in(param, &dispatch));
        let elements = match (reads, writes) {
            (Some(r), None) => format!("elements {}", range_text(&r)),
            (None, Some(w)) => format!("elements {}", range_text(&w)),
            (r, w) => format!("reads {}, writes {}", range_text(&r.flatten()), range_text(&w.flatten())),
        };
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
/// outermost first, and flattened.
fn candidate_grids(shape: &[u64]) -> Vec<Vec<u64>> {
    let mut grids = Vec::new();
    if (1..=3).contains(&shape.len()) {
        grids.push(shape.iter().rev().copied().collect());
        grids.push(shape.to_vec());
    }
    if let Some(flat) = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) {
        grids.push(vec![flat]);
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
