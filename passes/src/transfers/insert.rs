//! `insert-transfers{strategy=jic|kernel|static}`: places `buffer.to_device` and
//! `buffer.from_device` in host code so that every observer sees the value the reference
//! semantics ("copy everything, every time") gives it.
//!
//! - `jic` ("just in case") is the reference semantics written out: before each dispatch every
//!   buffer argument goes to the device, after it every one comes back.
//! - `kernel` asks the kernel: in only what it may read (and, when it does not provably write
//!   every element, what it may write, since the rest of a partially written device copy must be
//!   current); out only what it may write.
//! - `static` places copies by lazy code motion over availability and anticipation, on hat-ir's
//!   dataflow framework ([`super::plan`]); `lcm` is another name for it (the name it had while
//!   it was built beside the planner it replaced).
//!
//! The pass runs on a module and plans every host function with a body. Option `reasons` keeps a
//! `reason` attribute on every transfer it inserts, naming the observer that needs it.

use super::dispatch::{dispatch_args, DispatchArg, Kernels};
use super::emit::{transfer, Anchor, Direction};
use super::host_effects::summarize_with_roots;
use super::kernel_effects::KernelEffects;
use super::ranges::RangeSet;
use crate::resolve_aliases::pass::{resolve_loop, Outcome};
use hat_ir::interfaces::{
    execution_space, loops_innermost_first, CallableOpInterface, ExecutionSpace, LaunchOpInterface,
};
use hat_ir::pass::{OptionKind, Pass, PassFailed, PassInfo, PassOptionInfo, PassOptions, PassState};
use hat_ir::{Context, Diagnostic, Op};

/// The options of `insert-transfers`.
pub const OPTIONS: &[PassOptionInfo] = &[
    PassOptionInfo {
        name: "strategy",
        kind: OptionKind::Enum(&["jic", "kernel", "static", "lcm"]),
        default: "static",
        help: "jic: everything around every dispatch; kernel: by the kernel's effects; static: by lazy code motion over availability and anticipation in the host program; lcm: the same as static",
    },
    PassOptionInfo {
        name: "reasons",
        kind: OptionKind::Bool,
        default: "false",
        help: "Keep a `reason` attribute on each inserted transfer, naming the observer that needs it",
    },
    PassOptionInfo {
        name: "remarks",
        kind: OptionKind::Bool,
        default: "false",
        help: "Emit a remark at each inserted transfer saying why it is there (MLIR's -Rpass style)",
    },
];

/// The registration of `insert-transfers`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "insert-transfers",
        summary: "Insert the host<->device transfers the program needs (strategy jic, kernel or static)",
        anchor: None,
        options: OPTIONS,
        create: |options| Box::new(InsertTransfers::new(options)),
    }
}

/// Which plan.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Everything, around every dispatch.
    Jic,
    /// By the kernel's effects, around every dispatch.
    Kernel,
    /// By lazy code motion over availability and anticipation in the host program
    /// ([`super::plan`]).
    Static,
}

/// The `insert-transfers` pass.
pub struct InsertTransfers {
    strategy: Strategy,
    /// Whether transfers get a `reason` (kept when asked for, or made for the remarks).
    reasons: bool,
    keep_reasons: bool,
    remarks: bool,
}

impl InsertTransfers {
    /// The pass with validated options.
    pub fn new(options: &PassOptions) -> Self {
        let strategy = match options.get("strategy") {
            "jic" => Strategy::Jic,
            "kernel" => Strategy::Kernel,
            _ => Strategy::Static,
        };
        let remarks = options.get_bool("remarks");
        let keep_reasons = options.get_bool("reasons");
        InsertTransfers { strategy, reasons: keep_reasons || remarks, keep_reasons, remarks }
    }
}

/// The host functions with a body under `module`, in pre-order. The bodies of functions (and of
/// other callables, such as kernels) are not searched: a function is found where symbols are,
/// so this costs the module's top levels, not its size.
pub fn host_functions(ctx: &Context, module: Op) -> Vec<Op> {
    let mut found = Vec::new();
    let mut stack = vec![module];
    while let Some(op) = stack.pop() {
        if let Some(callable) = ctx.interface::<dyn CallableOpInterface>(op) {
            if execution_space(ctx, op) == Some(ExecutionSpace::Host) && callable.body(ctx, op).is_some() {
                found.push(op);
            }
            continue;
        }
        for &region in ctx.regions(op).iter().rev() {
            for &block in ctx.region_blocks(region).iter().rev() {
                let mut cursor = ctx.last_op(block);
                while let Some(child) = cursor {
                    stack.push(child);
                    cursor = ctx.prev_op(child);
                }
            }
        }
    }
    found
}

/// The callees under `module`, resolved once, and the effects of every kernel launched (cached
/// by the pass manager).
pub fn kernel_effects(ctx: &Context, module: Op, state: &mut PassState<'_>) -> Kernels {
    Kernels::new(ctx, module, |kernel| state.analysis::<KernelEffects>(ctx, kernel).clone())
}

impl Pass for InsertTransfers {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        if self.strategy == Strategy::Static {
            // The plan follows buffers, so it first makes the buffer each dispatch names
            // concrete where it can: loops whose iterations rotate buffers are specialised by
            // residue (the `resolve-aliases` rewrite, with its default bounds; nothing to do
            // after that pass), then dispatches on a selected buffer are unswitched.
            let bounds = crate::resolve_aliases::residues::Bounds::default();
            let (mut resolved, mut unswitched) = (0, 0);
            for function in host_functions(ctx, op) {
                let loops = loops_innermost_first(ctx, function);
                for looped in loops {
                    if !ctx.is_erased(looped)
                        && matches!(resolve_loop(ctx, function, looped, &bounds), Outcome::Specialised { .. })
                    {
                        resolved += 1;
                    }
                }
                unswitched += super::unswitch::unswitch_selected_buffers(ctx, function);
            }
            state.add_statistic("num-specialised", resolved);
            state.add_statistic("num-unswitched", unswitched as u64);
        }
        let effects = kernel_effects(ctx, op, state);
        let (summaries, mut roots) = summarize_with_roots(ctx, op, &effects);
        let mut counts = [0u64; 2];
        for function in host_functions(ctx, op) {
            match self.strategy {
                Strategy::Jic | Strategy::Kernel => {
                    around_dispatches(ctx, function, &effects, self.strategy, self.reasons, &mut counts)
                }
                Strategy::Static => {
                    let function_roots = roots.remove(&function).unwrap_or_default();
                    let flags = function_roots.aliased_parameters(ctx, function);
                    match super::plan::plan(ctx, function, &function_roots, &effects, &summaries, &flags, self.reasons)
                    {
                        Ok(plan) => {
                            for (name, cell) in [
                                ("num-planned-roots", &plan.work.roots),
                                ("num-slice-ops", &plan.work.slice_ops),
                                ("num-state-bits", &plan.work.state_bits),
                                ("num-solves", &plan.work.solves),
                            ] {
                                state.add_statistic(name, cell.get());
                            }
                            let emitted = super::plan::emit_plan(ctx, &plan);
                            counts[0] += emitted[0];
                            counts[1] += emitted[1];
                        }
                        Err(unsupported) => {
                            let fallback = KernelFallback {
                                plan: "static",
                                location: unsupported.location,
                                what: &unsupported.what,
                            };
                            fallback.apply(ctx, state, function, &effects, self.reasons, &mut counts);
                        }
                    }
                }
            }
        }
        annotate_entries(ctx, op, &summaries);
        if self.remarks {
            for diagnostic in transfer_remarks(ctx, op) {
                state.emit(diagnostic);
            }
            if !self.keep_reasons {
                let key = ctx.ident(super::emit::REASON_ATTRIBUTE);
                for transfer in ctx.walk(op) {
                    if ctx.attribute(transfer, super::emit::REASON_ATTRIBUTE).is_some() {
                        ctx.remove_attribute(transfer, key);
                    }
                }
            }
        }
        state.add_statistic("num-to-device", counts[0]);
        state.add_statistic("num-from-device", counts[1]);
        Ok(())
    }
}

/// A function a plan does not follow: a remark saying what, and the `kernel` strategy for it.
struct KernelFallback<'a> {
    /// Which plan (`static`).
    plan: &'static str,
    location: hat_ir::Location,
    what: &'a str,
}

impl KernelFallback<'_> {
    fn apply(
        &self,
        ctx: &mut Context,
        state: &mut PassState<'_>,
        function: Op,
        kernels: &Kernels,
        reasons: bool,
        counts: &mut [u64; 2],
    ) {
        state.emit(Diagnostic::remark(
            self.location,
            format!(
                "insert-transfers: the {} plan does not follow {}; this function gets the kernel strategy",
                self.plan, self.what
            ),
        ));
        around_dispatches(ctx, function, kernels, Strategy::Kernel, reasons, counts);
    }
}

/// The `jic` and `kernel` strategies: transfers around each dispatch in `function`.
fn around_dispatches(
    ctx: &mut Context,
    function: Op,
    kernels: &Kernels,
    strategy: Strategy,
    reasons: bool,
    counts: &mut [u64; 2],
) {
    let dispatches: Vec<Op> =
        ctx.walk(function).into_iter().filter(|&op| ctx.interface::<dyn LaunchOpInterface>(op).is_some()).collect();
    let unknown = KernelEffects::default();
    for dispatch in dispatches {
        let kernel = kernels.callee(ctx, dispatch);
        let kernel_effects = kernels.effects_of(ctx, dispatch).unwrap_or(&unknown);
        let Some(args) = dispatch_args(ctx, dispatch, kernel_effects) else { continue };
        let kernel_name = kernel.and_then(|k| hat_ir::verifier::symbol_name(ctx, k)).unwrap_or("?").to_string();
        let location = ctx.location(dispatch);
        let Some(after) = ctx.next_op(dispatch) else { continue };
        for arg in &args {
            let (inbound, outbound) = match strategy {
                Strategy::Jic => (RangeSet::whole(), RangeSet::whole()),
                _ => (arg.needs.clone(), arg.written.clone()),
            };
            let reason_in = format!("read by @{kernel_name} (jic: every argument)");
            let reason_in = reasons.then(|| match strategy {
                Strategy::Jic => reason_in.clone(),
                _ => describe_need(arg, &kernel_name),
            });
            for range in inbound.ranges() {
                transfer(
                    ctx,
                    Anchor::Before(dispatch),
                    Direction::ToDevice,
                    arg.value,
                    Some(range),
                    location,
                    reason_in.as_deref(),
                );
                counts[0] += 1;
            }
            let reason_out = reasons.then(|| format!("written by @{kernel_name}; the host copy is kept current"));
            for range in outbound.ranges() {
                transfer(
                    ctx,
                    Anchor::Before(after),
                    Direction::FromDevice,
                    arg.value,
                    Some(range),
                    location,
                    reason_out.as_deref(),
                );
                counts[1] += 1;
            }
        }
    }
}

/// Why a dispatch needs an argument on the device.
pub fn describe_need(arg: &DispatchArg, kernel: &str) -> String {
    if arg.reads {
        format!("read by @{kernel}")
    } else {
        format!("partly written by @{kernel}: the rest must be current")
    }
}

/// The attribute on an entry function saying what a call does to each parameter (`none`,
/// `read`, `write`, `readwrite`), from its summary: the runtime's residency session reads it to
/// decide whether the caller may pass one buffer as two arguments.
pub const ARG_EFFECTS_ATTRIBUTE: &str = "hat.arg_effects";

fn annotate_entries(ctx: &mut Context, module: Op, summaries: &super::host_effects::Summaries) {
    for function in host_functions(ctx, module) {
        let entry = ctx.interface::<dyn CallableOpInterface>(function).is_some_and(|c| c.is_entry(ctx, function));
        let Some(summary) = summaries.get(&function).filter(|_| entry) else { continue };
        let names: Vec<&str> = summary
            .iter()
            .map(|t| {
                let reads = t.host_read || t.device_read;
                let writes = t.host_write || t.device_write;
                match (reads, writes) {
                    (false, false) => "none",
                    (true, false) => "read",
                    (false, true) => "write",
                    (true, true) => "readwrite",
                }
            })
            .collect();
        let elements: Vec<hat_ir::Attribute> = names.iter().map(|n| ctx.string_attr(n)).collect();
        let array = ctx.array_attr(&elements);
        let key = ctx.ident(ARG_EFFECTS_ATTRIBUTE);
        ctx.set_attribute(function, key, array);
    }
}

/// A remark for each transfer under `module` that says why it is there (its `reason`
/// attribute), at the transfer: `to_device %data[1, 63]: read by @k at file:line:col`.
fn transfer_remarks(ctx: &Context, module: Op) -> Vec<Diagnostic> {
    use hat_dialects::buffer::{FromDeviceOp, ToDeviceOp};
    let mut out = Vec::new();
    for op in ctx.walk(module) {
        let direction = if ToDeviceOp::wrap(ctx, op).is_some() {
            "to_device"
        } else if FromDeviceOp::wrap(ctx, op).is_some() {
            "from_device"
        } else {
            continue;
        };
        let Some(reason) =
            ctx.attribute(op, super::emit::REASON_ATTRIBUTE).and_then(|a| ctx.attribute_kind(a).as_str())
        else {
            continue;
        };
        let operands = ctx.operands(op);
        let buffer = operands[0];
        let name = ctx.argument_name(buffer).map_or_else(|| "a buffer".to_string(), |n| format!("%{n}"));
        let range = match operands
            .get(1..3)
            .map(|r| (hat_ir::interfaces::constant_integer(ctx, r[0]), hat_ir::interfaces::constant_integer(ctx, r[1])))
        {
            Some((Some(offset), Some(count))) => format!("[{offset}, +{count}]"),
            Some(_) => "[one element]".to_string(),
            None => String::new(),
        };
        out.push(Diagnostic::remark(ctx.location(op), format!("{direction} {name}{range}: {reason}")));
    }
    out
}
