//! `race-lint`: data races inside one kernel dispatch, found before the program runs.
//!
//! For every kernel (a callable running on the device that is never discarded), the pass asks
//! the kernel-effects analysis ([`KernelEffects::races`]) about each launch of it whose grid is
//! made of constants, with the static shapes and constant scalars of the launch's arguments. A
//! kernel no such launch names, or one launched somewhere with a grid that is not made of
//! constants, is (also) looked at over a sample grid ([`sample_grid`]) in as many dimensions as
//! its accesses use work-item ids or its workgroup size spans; the diagnostic says so.
//!
//! Workgroup memory (`kernel.local_alloc`) is checked among the work items of one workgroup
//! between the same two barriers (see `kernel_effects/barriers.rs`).
//!
//! Each race is one diagnostic at the racing access (the store; the read for a read of what
//! another work item stores), with a note at the access it conflicts with naming two work items
//! and the element, and a note at the call where the access is in a helper. Severity: `warning`
//! (`error` with `severity=error`, which also fails the pass), `remark` where a guard on data the
//! analysis does not follow may keep the race from happening. The pass changes nothing.

use crate::transfers::kernel_effects::print::launch;
use crate::transfers::kernel_effects::races::{Item, Race, RaceKind};
use crate::transfers::kernel_effects::{Dispatch, KernelEffects};
use hat_ir::interfaces::{execution_space, CallableOpInterface, ExecutionSpace};
use hat_ir::interfaces::{lookup_symbol, LaunchOpInterface};
use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassState};
use hat_ir::verifier::symbol_name;
use hat_ir::{Context, Diagnostic, Op, Severity};
use rustc_hash::{FxHashMap, FxHashSet};

const OPTIONS: &[PassOptionInfo] = &[PassOptionInfo {
    name: "severity",
    kind: OptionKind::Enum(&["warning", "error"]),
    default: "warning",
    help: "how races are reported: `error` also makes the pass fail",
}];

/// The registration of `race-lint`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "race-lint",
        summary: "Report data races between the work items of a kernel dispatch",
        anchor: None,
        options: OPTIONS,
        create: |options| Box::new(RaceLint { errors: options.get("severity") == "error" }),
    }
}

/// The `race-lint` pass.
pub struct RaceLint {
    /// Whether races are errors rather than warnings.
    pub errors: bool,
}

impl Pass for RaceLint {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        // Per kernel, the first launch of each distinct dispatch: a later launch with an equal
        // dispatch finds the same races, all reported by then.
        let mut launches: FxHashMap<Op, Vec<(Op, Dispatch)>> = FxHashMap::default();
        let mut distinct: FxHashMap<Op, FxHashSet<Dispatch>> = FxHashMap::default();
        // Kernels some launch of which has a grid that is not made of constants.
        let mut unknown_grids: FxHashSet<Op> = FxHashSet::default();
        let mut kernels = Vec::new();
        ctx.walk_with(op, |nested| {
            if is_kernel(ctx, nested) {
                kernels.push(nested);
            } else if let Some((kernel, dispatch)) = launch(ctx, nested) {
                let seen = distinct.entry(kernel).or_default();
                if !seen.contains(&dispatch) {
                    seen.insert(dispatch.clone());
                    launches.entry(kernel).or_default().push((nested, dispatch));
                }
            } else if let Some(kernel) = launched_kernel(ctx, nested) {
                unknown_grids.insert(kernel);
            }
        });
        let mut failed = false;
        for kernel in kernels {
            let effects = state.analysis::<KernelEffects>(ctx, kernel).clone();
            // The grids of the launches where they are all constants; the sample grid besides
            // where some launch's grid is not known (or no launch names the kernel).
            let mut dispatches: Vec<(Option<Op>, Dispatch)> =
                launches.remove(&kernel).unwrap_or_default().into_iter().map(|(at, d)| (Some(at), d)).collect();
            if dispatches.is_empty() || unknown_grids.contains(&kernel) {
                dispatches.push((None, Dispatch::new(&sample_grid(dimensions(ctx, kernel, &effects)))));
            }
            let mut seen: Vec<(Op, Op, RaceKind)> = Vec::new();
            // A dispatch equal to one already looked at finds the same races, all seen: skip it.
            let mut evaluated: FxHashSet<Dispatch> = FxHashSet::default();
            for (at, dispatch) in dispatches {
                if evaluated.contains(&dispatch) {
                    continue;
                }
                for race in effects.races(&dispatch) {
                    if seen.contains(&(race.op, race.other, race.kind)) {
                        continue;
                    }
                    seen.push((race.op, race.other, race.kind));
                    let sampled = unknown_grids.contains(&kernel);
                    let diagnostic = self.diagnostic(ctx, kernel, at, sampled, &dispatch, &race);
                    failed |= diagnostic.severity == Severity::Error;
                    state.emit(diagnostic);
                }
                evaluated.insert(dispatch);
            }
        }
        state.preserve_all();
        if failed {
            Err(PassFailed)
        } else {
            Ok(())
        }
    }
}

/// The kernel a launch names, whatever its grid.
pub fn launched_kernel(ctx: &Context, op: Op) -> Option<Op> {
    let launching = ctx.interface::<dyn LaunchOpInterface>(op)?;
    lookup_symbol(ctx, op, ctx.ident_str(launching.kernel(ctx, op)?))
}

/// How many dimensions a kernel's dispatches have, as far as the kernel says: those its accesses
/// use ids of, and those its workgroup size spans (a store may ignore one dimension).
pub fn dimensions(ctx: &Context, kernel: Op, effects: &KernelEffects) -> usize {
    let spanned = hat_dialects::kernel::workgroup_size(ctx, kernel)
        .and_then(|sizes| sizes.iter().rposition(|&s| s > 1))
        .map_or(1, |last| last + 1);
    effects.id_dimensions().max(spanned)
}

/// The grid a kernel no constant launch names is looked at over, in `dimensions` dimensions:
/// wide enough that an index repeating every 16 or fewer work items (or every 64 in 1-D)
/// repeats within it.
pub fn sample_grid(dimensions: usize) -> Vec<Option<u64>> {
    match dimensions {
        0 | 1 => vec![Some(256)],
        2 => vec![Some(32); 2],
        _ => vec![Some(16); 3],
    }
}

impl RaceLint {
    /// The diagnostic of `race` in a dispatch of `kernel` at launch `at` (none: over the sample
    /// grid, because some launch's grid is not known when `unknown_grid`, else because none
    /// names the kernel).
    fn diagnostic(
        &self,
        ctx: &Context,
        kernel: Op,
        at: Option<Op>,
        unknown_grid: bool,
        dispatch: &Dispatch,
        race: &Race,
    ) -> Diagnostic {
        let buffer = match race.local {
            Some(_) => "workgroup memory".to_string(),
            None => parameter_name(ctx, kernel, race.param),
        };
        // Workgroup memory is ordered by barriers: say so where that is the missing piece.
        let between = if race.local.is_some() { " with no barrier between" } else { "" };
        let grid = dispatch.grid.iter().map(|g| g.map_or("?".to_string(), |g| g.to_string())).collect::<Vec<_>>();
        let kernel_name = symbol_name(ctx, kernel).unwrap_or("?");
        let over = match at {
            Some(_) => format!("in a dispatch of @{kernel_name} over {}", grid.join("x")),
            None => {
                let why = if unknown_grid { "a launch's grid is not a constant" } else { "no launch gives its grid" };
                format!("if @{kernel_name} is dispatched over {} ({why})", grid.join("x"))
            }
        };
        let rank = dispatch.grid.len().clamp(1, 3);
        let element = match (race.element.as_deref(), race.local) {
            (None, _) => buffer.clone(),
            (Some(e), None) => format!("{buffer}[{e}]"),
            (Some(e), Some(_)) => format!("element [{e}] of the workgroup memory"),
        };
        let (message, note) = match race.kind {
            RaceKind::Store => (
                format!("data race on {buffer}: several work items store to one element{between}, {over}"),
                race.items.map(|(a, b)| {
                    format!("work items {} and {} both store to {element}", item_text(a, rank), item_text(b, rank))
                }),
            ),
            RaceKind::Read => (
                format!(
                    "data race on {buffer}: a work item reads an element another work item stores to{between}, {over}"
                ),
                race.items.map(|(reader, writer)| {
                    format!(
                        "work item {} reads {element}, which work item {} stores to here",
                        item_text(reader, rank),
                        item_text(writer, rank)
                    )
                }),
            ),
            RaceKind::UnprovenIndex => (
                format!(
                    "possible data race on {buffer}: the store's index depends on values the analysis does not \
                     follow, so it is not provably one element per work item, {over}"
                ),
                None,
            ),
        };
        let severity = if race.uncertain {
            Severity::Remark
        } else if self.errors {
            Severity::Error
        } else {
            Severity::Warning
        };
        let mut diagnostic = Diagnostic::new(severity, ctx.location(race.op), message);
        if race.site != race.op {
            diagnostic = diagnostic.with_note(ctx.location(race.site), "in the helper called here");
        }
        if let Some(note) = note {
            diagnostic = diagnostic.with_note(ctx.location(race.other), note);
        }
        if race.other_site != race.other && race.other_site != race.site {
            diagnostic = diagnostic.with_note(ctx.location(race.other_site), "in the helper called here");
        }
        if let Some(alloc) = race.local {
            diagnostic = diagnostic.with_note(ctx.location(alloc), "the workgroup memory is allocated here");
        }
        if let Some(at) = at {
            diagnostic = diagnostic.with_note(ctx.location(at), "dispatched here");
        }
        diagnostic
    }
}

/// `3` in 1-D, `(3, 0)` in 2-D, `(3, 0, 1)` in 3-D.
fn item_text(item: Item, rank: usize) -> String {
    match rank {
        1 => item[0].to_string(),
        _ => format!("({})", item[..rank].iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// `%name` of a kernel parameter, or `#index`.
fn parameter_name(ctx: &Context, kernel: Op, param: usize) -> String {
    let parameters = ctx
        .interface::<dyn CallableOpInterface>(kernel)
        .and_then(|c| c.body(ctx, kernel))
        .and_then(|body| ctx.region_blocks(body).first().copied())
        .map(|entry| ctx.block_arguments(entry).to_vec())
        .unwrap_or_default();
    match parameters.get(param) {
        Some(&value) => ctx.argument_name(value).map_or_else(|| format!("#{param}"), |n| format!("%{n}")),
        None => "a buffer".to_string(),
    }
}

/// A callable running on the device that is never discarded (`kernel.func`; a helper is
/// discardable).
fn is_kernel(ctx: &Context, op: Op) -> bool {
    execution_space(ctx, op) == Some(ExecutionSpace::Device)
        && ctx
            .interface::<dyn CallableOpInterface>(op)
            .is_some_and(|c| c.body(ctx, op).is_some() && !c.is_discardable(ctx, op, true))
}
