//! What one dispatch (an op with the launch interface) needs of and does to each buffer it
//! passes, from its kernel's [`KernelEffects`], its grid and the buffers' shapes.

use super::aliases::is_buffer;
use super::kernel_effects::KernelEffects;
use super::ranges::RangeSet;
use hat_ir::interfaces::{constant_integer, lookup_symbol, LaunchOpInterface};
use hat_ir::types::DYNAMIC;
use hat_ir::{Context, Op, TypeKind, Value};

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
    /// The elements it may write.
    pub written: RangeSet,
    /// Whether it provably writes every element.
    pub writes_all: bool,
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
    shape(ctx, buffer).into_iter().try_fold(1u64, |n, d| n.checked_mul(d?))
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
                written: RangeSet::whole(),
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
        let needs = if writes_all { read } else { read.union(&written) };
        out.push(DispatchArg {
            value,
            param,
            reads: access.reads,
            writes: access.writes,
            needs: needs.clamp(len),
            written: if writes_all { RangeSet::whole() } else { written.clamp(len) },
            writes_all,
        });
    }
    Some(out)
}
