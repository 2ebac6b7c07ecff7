//! What one dispatch (an op with the launch interface) needs of and does to each buffer it
//! passes, from its kernel's [`KernelEffects`], its grid and the buffers' shapes.

use super::aliases::is_buffer;
use super::kernel_effects::KernelEffects;
use super::ranges::RangeSet;
use hat_ir::interfaces::{
    constant_integer, lookup_symbol, resolve_callee, CallOpInterface, LaunchOpInterface, SymbolTable,
};
use hat_ir::types::DYNAMIC;
use hat_ir::{Context, Op, Type, TypeKind, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::rc::Rc;

/// One buffer argument of a dispatch.
#[derive(Clone, Debug)]
pub struct DispatchArg {
    /// The value passed.
    pub value: Value,
    /// The kernel's parameter it binds to.
    pub param: usize,
    /// Whether the kernel may read it.
    pub reads: bool,
    /// Whether the kernel may write it.
    pub writes: bool,
    /// The elements whose device copy must be current before the dispatch: those it may read,
    /// and those it may write unless it provably writes every element (a partial write leaves
    /// the rest of the device copy as it was, so that must be the current value).
    pub needs: RangeSet,
    /// The elements it may read.
    pub read: RangeSet,
    /// The elements it may write.
    pub written: RangeSet,
    /// The elements it surely writes (every one when `writes_all`).
    pub surely_written: RangeSet,
    /// Whether it provably writes every element.
    pub writes_all: bool,
}

/// What the transfer passes know of a module's callees, resolved once through its symbol
/// table (a lookup per op would cost the module's size each): the kernel of every launch and the
/// callee of every call, and the effects of every kernel launched.
#[derive(Default)]
pub struct Kernels {
    /// The effects of each kernel.
    pub effects: FxHashMap<Op, KernelEffects>,
    callees: FxHashMap<Op, Op>,
    /// [`Kernels::args`], per dispatch: asked again and again by the fixpoints.
    args: RefCell<FxHashMap<Op, Rc<[DispatchArg]>>>,
    /// [`Kernels::args`] per launch shape: a dispatch of the same kernel with the same grid
    /// constants and operand types gets the same answers (only the values passed differ), so
    /// the kernel effects are asked once per shape, not once per dispatch.
    by_shape: RefCell<FxHashMap<LaunchShape, Rc<[DispatchArg]>>>,
}

/// What [`dispatch_args`] depends on besides the values passed: the kernel, the grid's
/// constants and the operands' types (which are buffers, and their shapes).
#[derive(Clone, PartialEq, Eq, Hash)]
struct LaunchShape {
    kernel: Option<Op>,
    // Inline: a key is made for every dispatch asked about.
    grid: SmallVec<[Option<i64>; 3]>,
    types: SmallVec<[Type; 6]>,
}

impl Kernels {
    /// Resolves every launch and call under `module`; `effects_of` gives a kernel's effects.
    pub fn new(ctx: &Context, module: Op, mut effects_of: impl FnMut(Op) -> KernelEffects) -> Kernels {
        let table = SymbolTable::new(ctx, module);
        let mut kernels = Kernels::default();
        ctx.walk_with(module, |op| {
            let name = if let Some(launch) = ctx.interface::<dyn LaunchOpInterface>(op) {
                launch.kernel(ctx, op)
            } else if let Some(call) = ctx.interface::<dyn CallOpInterface>(op) {
                call.callee(ctx, op)
            } else {
                return;
            };
            // A name the module's own table lacks may be in a nested table: the general lookup.
            let Some(target) = name.and_then(|n| table.lookup(n)).or_else(|| resolve(ctx, op)) else { return };
            kernels.callees.insert(op, target);
            if ctx.interface::<dyn LaunchOpInterface>(op).is_some() && !kernels.effects.contains_key(&target) {
                let effects = effects_of(target);
                kernels.effects.insert(target, effects);
            }
        });
        kernels
    }

    /// The kernel `dispatch` launches, or the function a call calls.
    pub fn callee(&self, ctx: &Context, op: Op) -> Option<Op> {
        self.callees.get(&op).copied().or_else(|| resolve(ctx, op))
    }

    /// The buffer arguments of `dispatch` and what its kernel does to each (see
    /// [`dispatch_args`]; an unknown kernel reads and writes them all), computed once.
    pub fn args(&self, ctx: &Context, dispatch: Op) -> Rc<[DispatchArg]> {
        if let Some(args) = self.args.borrow().get(&dispatch) {
            return args.clone();
        }
        let args = self.args_by_shape(ctx, dispatch);
        self.args.borrow_mut().insert(dispatch, args.clone());
        args
    }

    /// [`Kernels::args`] through the per-shape cache.
    fn args_by_shape(&self, ctx: &Context, dispatch: Op) -> Rc<[DispatchArg]> {
        let compute = || {
            let unknown = KernelEffects::default();
            let effects = self.effects_of(ctx, dispatch).unwrap_or(&unknown);
            dispatch_args(ctx, dispatch, effects).unwrap_or_default()
        };
        let Some(launch) = ctx.interface::<dyn LaunchOpInterface>(dispatch) else { return compute().into() };
        let operands = ctx.operands(dispatch);
        let key = LaunchShape {
            kernel: self.callee(ctx, dispatch),
            grid: operands[launch.grid(ctx, dispatch)].iter().map(|&v| constant_integer(ctx, v)).collect(),
            types: operands[launch.arguments(ctx, dispatch)].iter().map(|&v| ctx.value_type(v)).collect(),
        };
        if let Some(known) = self.by_shape.borrow().get(&key) {
            // The same answers for this dispatch's own values (`param` indexes its arguments).
            let arguments = &operands[launch.arguments(ctx, dispatch)];
            return known.iter().map(|a| DispatchArg { value: arguments[a.param], ..a.clone() }).collect();
        }
        let args: Rc<[DispatchArg]> = compute().into();
        self.by_shape.borrow_mut().insert(key, args.clone());
        args
    }

    /// The effects of the kernel `dispatch` launches (`None` when unknown).
    pub fn effects_of(&self, ctx: &Context, dispatch: Op) -> Option<&KernelEffects> {
        self.callee(ctx, dispatch).and_then(|k| self.effects.get(&k))
    }
}

/// The callee of a launch or a call, looked up from where it is.
fn resolve(ctx: &Context, op: Op) -> Option<Op> {
    if ctx.interface::<dyn LaunchOpInterface>(op).is_some() {
        kernel_of(ctx, op)
    } else {
        resolve_callee(ctx, op)
    }
}

/// The kernel a dispatch launches.
pub fn kernel_of(ctx: &Context, dispatch: Op) -> Option<Op> {
    let launch = ctx.interface::<dyn LaunchOpInterface>(dispatch)?;
    let name = launch.kernel(ctx, dispatch)?;
    lookup_symbol(ctx, dispatch, ctx.ident_str(name))
}

/// The static dimensions of a buffer value (`None` where dynamic).
pub fn shape(ctx: &Context, buffer: Value) -> Vec<Option<u64>> {
    match ctx.type_kind(ctx.value_type(buffer)) {
        TypeKind::MemRef { shape, .. } => {
            shape.iter().map(|&d| if d == DYNAMIC { None } else { u64::try_from(d).ok() }).collect()
        }
        _ => Vec::new(),
    }
}

/// The number of elements of a buffer value, when static.
pub fn element_count(ctx: &Context, buffer: Value) -> Option<u64> {
    match ctx.type_kind(ctx.value_type(buffer)) {
        TypeKind::MemRef { shape, .. } => shape.iter().try_fold(1u64, |n, &d| {
            if d == DYNAMIC {
                return None;
            }
            n.checked_mul(u64::try_from(d).ok()?)
        }),
        _ => Some(1),
    }
}

/// The size in bytes of one element of a buffer value, when known.
pub fn element_bytes(ctx: &Context, buffer: Value) -> Option<u64> {
    match ctx.type_kind(ctx.value_type(buffer)) {
        TypeKind::MemRef { element, .. } => ctx.type_kind(*element).bit_width().map(|bits| u64::from(bits).div_ceil(8)),
        _ => None,
    }
}

fn range_set(range: Option<std::ops::Range<u64>>) -> RangeSet {
    range.map_or_else(RangeSet::whole, RangeSet::of)
}

/// The buffer arguments of `dispatch` and what the kernel does to each (`None` when the op is
/// not a launch).
pub fn dispatch_args(ctx: &Context, dispatch: Op, effects: &KernelEffects) -> Option<Vec<DispatchArg>> {
    let launch = ctx.interface::<dyn LaunchOpInterface>(dispatch)?;
    let operands = ctx.operands(dispatch);
    let grid: Vec<Option<u64>> = operands[launch.grid(ctx, dispatch)]
        .iter()
        .map(|&v| constant_integer(ctx, v).and_then(|c| u64::try_from(c).ok()))
        .collect();
    let mut out = Vec::new();
    for (param, &value) in operands[launch.arguments(ctx, dispatch)].iter().enumerate() {
        if !is_buffer(ctx, value) {
            continue;
        }
        let Some(access) = effects.params.get(param) else {
            // A kernel the analysis knows nothing of: it may read and write anything.
            out.push(DispatchArg {
                value,
                param,
                reads: true,
                writes: true,
                needs: RangeSet::whole(),
                read: RangeSet::whole(),
                written: RangeSet::whole(),
                surely_written: RangeSet::empty(),
                writes_all: false,
            });
            continue;
        };
        let shape = shape(ctx, value);
        let len = element_count(ctx, value);
        let read =
            if access.reads { range_set(effects.read_elements(param, &grid, &shape)) } else { RangeSet::empty() };
        let written =
            if access.writes { range_set(effects.written_elements(param, &grid, &shape)) } else { RangeSet::empty() };
        let writes_all = access.writes && effects.writes_every_element(param, &grid, &shape);
        let surely_written = if writes_all {
            RangeSet::whole().clamp(len)
        } else if access.writes {
            effects
                .surely_written_elements(param, &grid, &shape)
                .into_iter()
                .fold(RangeSet::empty(), |set, r| set.union(&RangeSet::of(r)))
        } else {
            RangeSet::empty()
        };
        let needs = if writes_all { read.clone() } else { read.union(&written) };
        out.push(DispatchArg {
            value,
            param,
            reads: access.reads,
            writes: access.writes,
            needs: needs.clamp(len),
            read: read.clamp(len),
            surely_written,
            written: if writes_all { RangeSet::whole() } else { written.clamp(len) },
            writes_all,
        });
    }
    Some(out)
}
