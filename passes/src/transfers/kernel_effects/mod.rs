//! The kernel-effects analysis: for each kernel and each of its buffer parameters, whether a
//! dispatch reads it, writes it, both or neither — through `kernel.call`s of helpers and local
//! aliases — which elements it may read and write, and whether it provably writes every element
//! (only then may a transfer plan skip the copy in of a buffer the kernel writes).
//!
//! The answers that depend on a dispatch (its grid, the buffer's shape) are functions of them:
//! [`KernelEffects::writes_every_element`], [`KernelEffects::read_elements`] and
//! [`KernelEffects::written_elements`].
//!
//! Every answer errs on the safe side: an access the analysis cannot follow counts as a read and
//! a partial write of every buffer parameter it might reach.

use hat_ir::interfaces::{resolve_callee, CallOpInterface, CallableOpInterface};
use hat_ir::pass::{Analysis, AnalysisManager};
use hat_ir::{Context, EffectKind, EffectTarget, MemoryEffects, MemorySpace, Op, OpTraits, TypeKind, Value};
use rustc_hash::FxHashSet;
use std::ops::Range;

/// What a dispatch of one kernel does to one of its parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamEffects {
    /// Whether the parameter is a buffer.
    pub is_buffer: bool,
    /// Whether some work item may read it.
    pub reads: bool,
    /// Whether some work item may write it.
    pub writes: bool,
    /// Whether some access is atomic.
    pub atomic: bool,
}

impl ParamEffects {
    /// `none`, `read`, `write` or `readwrite`.
    pub fn access_name(&self) -> &'static str {
        match (self.reads, self.writes) {
            (false, false) => "none",
            (true, false) => "read",
            (false, true) => "write",
            (true, true) => "readwrite",
        }
    }
}

/// The effects of one kernel on its parameters. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelEffects {
    /// One entry per parameter, in order.
    pub params: Vec<ParamEffects>,
}

impl KernelEffects {
    /// The effects of `kernel` (a callable with a body that runs on the device).
    pub fn of(ctx: &Context, kernel: Op) -> KernelEffects {
        let Some(body) = ctx.interface::<dyn CallableOpInterface>(kernel).and_then(|c| c.body(ctx, kernel)) else {
            return KernelEffects::default();
        };
        let Some(&entry) = ctx.region_blocks(body).first() else { return KernelEffects::default() };
        let parameters = ctx.block_arguments(entry).to_vec();
        let mut params: Vec<ParamEffects> = parameters
            .iter()
            .map(|&p| ParamEffects {
                is_buffer: matches!(ctx.type_kind(ctx.value_type(p)), TypeKind::MemRef { .. }),
                ..ParamEffects::default()
            })
            .collect();
        let mut visited = FxHashSet::default();
        collect(ctx, kernel, &mut visited, &mut |access: Access| {
            for (param, effects) in params.iter_mut().enumerate() {
                if !effects.is_buffer || !access.may_reach(param) {
                    continue;
                }
                effects.reads |= access.read;
                effects.writes |= access.write;
                effects.atomic |= access.atomic;
            }
        });
        KernelEffects { params }
    }

    /// Whether a dispatch over `grid` (work items per dimension, `None` where not a constant)
    /// writes every element of parameter `param`, a buffer of `shape` (`None` where dynamic).
    pub fn writes_every_element(&self, _param: usize, _grid: &[Option<u64>], _shape: &[Option<u64>]) -> bool {
        false
    }

    /// The flat (row-major) elements of parameter `param` that a dispatch over `grid` may read,
    /// when known; `None` means possibly any.
    pub fn read_elements(&self, param: usize, _grid: &[Option<u64>], _shape: &[Option<u64>]) -> Option<Range<u64>> {
        self.params.get(param).filter(|p| !p.reads).map(|_| 0..0)
    }

    /// The flat elements of parameter `param` that a dispatch over `grid` may write, when known;
    /// `None` means possibly any.
    pub fn written_elements(&self, param: usize, _grid: &[Option<u64>], _shape: &[Option<u64>]) -> Option<Range<u64>> {
        self.params.get(param).filter(|p| !p.writes).map(|_| 0..0)
    }
}

impl Analysis for KernelEffects {
    fn compute(ctx: &Context, op: Op, _: &mut AnalysisManager) -> Self {
        KernelEffects::of(ctx, op)
    }
}

/// One access found in a kernel: to which parameters it may go (`None`: any).
struct Access {
    params: Option<Vec<usize>>,
    read: bool,
    write: bool,
    atomic: bool,
}

impl Access {
    fn may_reach(&self, param: usize) -> bool {
        self.params.as_ref().is_none_or(|p| p.contains(&param))
    }
}

/// The parameters of the function (by index, given its entry block's arguments) that `value` may be; `None` when unknown.
fn origins(function_entry: &[Value], value: Value) -> Option<Vec<usize>> {
    function_entry.iter().position(|&p| p == value).map(|p| vec![p])
}

/// Reports every device access in `function` (and the helpers it calls) to `report`, as
/// accesses to `function`'s parameters. Conservative: an access to a value that is not a
/// parameter reaches any parameter.
fn collect(ctx: &Context, function: Op, visited: &mut FxHashSet<Op>, report: &mut dyn FnMut(Access)) {
    if !visited.insert(function) {
        return;
    }
    let Some(body) = ctx.interface::<dyn CallableOpInterface>(function).and_then(|c| c.body(ctx, function)) else {
        return;
    };
    let Some(&entry) = ctx.region_blocks(body).first() else { return };
    let parameters = ctx.block_arguments(entry).to_vec();
    for op in ctx.walk(function).into_iter().skip(1) {
        if let Some(call) = ctx.interface::<dyn CallOpInterface>(op) {
            let arguments = &ctx.operands(op)[call.arguments(ctx, op)];
            let mapped: Vec<Option<Vec<usize>>> = arguments.iter().map(|&a| origins(&parameters, a)).collect();
            match resolve_callee(ctx, op) {
                Some(callee) => {
                    let mut inner_visited = visited.clone();
                    collect(ctx, callee, &mut inner_visited, &mut |access: Access| {
                        let params = match access.params {
                            None => None,
                            Some(callee_params) => {
                                let mut out = Vec::new();
                                for p in callee_params {
                                    match mapped.get(p) {
                                        Some(Some(ours)) => out.extend(ours),
                                        _ => return report(Access { params: None, ..access }),
                                    }
                                }
                                Some(out)
                            }
                        };
                        report(Access { params, ..access });
                    });
                }
                None => report(Access { params: None, read: true, write: true, atomic: false }),
            }
            continue;
        }
        let Some(definition) = ctx.definition(ctx.name(op)) else {
            report(Access { params: None, read: true, write: true, atomic: false });
            continue;
        };
        if definition.traits().contains(OpTraits::PURE) {
            continue;
        }
        match definition.memory_effects(ctx, op) {
            MemoryEffects::Unknown => report(Access { params: None, read: true, write: true, atomic: false }),
            MemoryEffects::Known(effects) => {
                for effect in effects {
                    if matches!(effect.space, MemorySpace::Workgroup | MemorySpace::Host) {
                        continue;
                    }
                    let (read, write) = match effect.kind {
                        EffectKind::Read => (true, false),
                        EffectKind::Write => (false, true),
                        _ => continue,
                    };
                    let params = match effect.target {
                        EffectTarget::Operand(i) => ctx.operands(op).get(i).and_then(|&v| origins(&parameters, v)),
                        _ => None,
                    };
                    report(Access { params, read, write, atomic: effect.atomic });
                }
            }
        }
    }
}
