//! What each value of a device function is, as far as the kernel-effects analysis cares: for a
//! buffer, which buffers it may be ([`Origin`]s: a parameter, workgroup memory, or unknown); for
//! an integer, its index expression ([`Affine`]).
//!
//! Both are computed by one sparse forward dataflow analysis over the function
//! ([`ValueAnalysis`], solved by `hat_ir`'s framework), so that aliases through `arith.select`,
//! `scf.if` results and loop-carried values (any op with a `RegionBranchOpInterface`) are
//! followed without naming a control-flow op. The arithmetic is read through
//! [`ScalarOp`] (the one decoder of `arith`'s semantics), work-item queries through
//! [`WorkItemQuery`], allocations through the memory-effects interface. A call of a helper
//! whose summary is known gives its results through [`CallBinding`]; any other call gives
//! unknown results.
//!
//! Invariant: the expression of an integer value is its value read as signed: for 64-bit types
//! (`index`, `i64`) the analysis' integers are taken as exact; narrower types (2 to 62 bits) wrap,
//! and their expressions say where (`narrow.rs`: the wrap is a remainder that a dispatch's
//! bounds remove where the value stays in range). Scalar parameters and constants of any
//! integer type are read sign-extended. `i1` values have no expression (their `1` is `-1`
//! read signed); conditions are guards (`guard.rs`).

use super::affine::{Affine, Atom, Order, Rounding};
use super::narrow;
use super::summary::Summary;
use hat_dialects::buffer::DimOp;
use hat_dialects::kernel::WorkItemQuery;
use hat_dialects::semantics::ScalarOp;
use hat_ir::analysis::dataflow::{BranchValue, Flat, Lattice, LoopBounds, SparseForwardAnalysis, UnionSet};
use hat_ir::interfaces::{constant_integer, resolve_callee, CallOpInterface};
use hat_ir::types::DYNAMIC;
use hat_ir::{Context, EffectKind, EffectTarget, MemoryEffects, Op, TypeKind, Value};
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// Which buffer a buffer value may be.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Origin {
    /// The buffer bound to this parameter of the function.
    Param(usize),
    /// Memory allocated in the function by this op (workgroup memory): never a parameter.
    Local(Op),
    /// A buffer the analysis cannot name: it may be any parameter.
    Unknown,
}

/// What the analysis knows of one value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ValueFacts {
    /// For a buffer: the buffers it may be.
    pub(super) buffers: UnionSet<Origin>,
    /// For an integer: its index expression.
    pub(super) form: Flat<Affine>,
}

impl ValueFacts {
    fn unknown_buffer() -> ValueFacts {
        ValueFacts { buffers: UnionSet::single(Origin::Unknown), form: Flat::Bottom }
    }

    fn unknown_scalar() -> ValueFacts {
        ValueFacts { buffers: UnionSet::default(), form: Flat::Top }
    }

    fn scalar(form: Option<Affine>) -> ValueFacts {
        ValueFacts { buffers: UnionSet::default(), form: form.map_or(Flat::Top, Flat::Known) }
    }
}

impl Lattice for ValueFacts {
    fn bottom() -> Self {
        ValueFacts { buffers: UnionSet::default(), form: Flat::Bottom }
    }

    fn join(&mut self, other: &Self) -> bool {
        let buffers = self.buffers.join(&other.buffers);
        let form = self.form.join(&other.form);
        buffers || form
    }
}

fn is_buffer(ctx: &Context, value: Value) -> bool {
    ctx.type_kind(ctx.value_type(value)).is_memref()
}

/// The static size of dimension `dimension` of a buffer value's type, if any.
pub(super) fn static_dimension(ctx: &Context, buffer: Value, dimension: usize) -> Option<i64> {
    match ctx.type_kind(ctx.value_type(buffer)) {
        TypeKind::MemRef { shape, .. } => shape.get(dimension).copied().filter(|&s| s != DYNAMIC),
        _ => None,
    }
}

/// The expression of `value` given its facts: an unknown value is its own opaque atom.
pub(super) fn form_of(facts: &ValueFacts, value: Value) -> Affine {
    match &facts.form {
        Flat::Known(form) => form.clone(),
        _ => Affine::atom(Atom::Opaque(value)),
    }
}

/// The analysis of one function. See the module documentation.
pub(super) struct ValueAnalysis<'a> {
    /// The function's parameters (its body's entry block arguments).
    pub(super) params: &'a [Value],
    /// Summaries of the functions it calls, where known.
    pub(super) callees: &'a FxHashMap<Op, Rc<Summary>>,
}

impl SparseForwardAnalysis for ValueAnalysis<'_> {
    type Lattice = ValueFacts;

    fn visit_op(&self, ctx: &Context, op: Op, operands: &[&ValueFacts], results: &mut [ValueFacts]) {
        if operands.iter().any(|o| o.is_bottom()) {
            return; // not known yet, or never runs
        }
        let allocated = allocated_results(ctx, op);
        for (index, value) in ctx.results(op).enumerate() {
            results[index] = if is_buffer(ctx, value) {
                if allocated.contains(&index) {
                    ValueFacts { buffers: UnionSet::single(Origin::Local(op)), form: Flat::Bottom }
                } else if let (Ok(ScalarOp::Select), [_, a, b]) = (ScalarOp::decode(ctx, op), operands) {
                    let mut buffers = a.buffers.clone();
                    buffers.join(&b.buffers);
                    ValueFacts { buffers, form: Flat::Bottom }
                } else {
                    ValueFacts::unknown_buffer()
                }
            } else if let Some(constant) = constant_integer(ctx, value) {
                ValueFacts::scalar(Some(Affine::constant(constant)))
            } else if ctx.type_kind(ctx.value_type(value)).is_integer_like() && ctx.result_count(op) == 1 {
                let operand_forms: Vec<Affine> =
                    ctx.operands(op).iter().zip(operands).map(|(&v, facts)| form_of(facts, v)).collect();
                ValueFacts::scalar(integer_form(ctx, op, value, operands, &operand_forms))
            } else {
                ValueFacts::unknown_scalar()
            };
        }
    }

    fn entry_state(&self, ctx: &Context, value: Value) -> ValueFacts {
        let param = self.params.iter().position(|&p| p == value);
        match (param, is_buffer(ctx, value)) {
            (Some(p), true) => ValueFacts { buffers: UnionSet::single(Origin::Param(p)), form: Flat::Bottom },
            (None, true) => ValueFacts::unknown_buffer(),
            (Some(p), false) if ctx.type_kind(ctx.value_type(value)).is_integer_like() => {
                ValueFacts::scalar(Some(Affine::atom(Atom::Param(p))))
            }
            _ => ValueFacts::unknown_scalar(),
        }
    }

    fn visit_external_call(&self, ctx: &Context, call: Op, operands: &[&ValueFacts], results: &mut [ValueFacts]) {
        if operands.iter().any(|o| o.is_bottom()) {
            return;
        }
        let summary = resolve_callee(ctx, call).and_then(|callee| self.callees.get(&callee));
        let binding = summary.and_then(|_| CallBinding::new(ctx, call, operands));
        for (index, value) in ctx.results(call).enumerate() {
            let returned = summary.zip(binding.as_ref()).and_then(|(s, b)| Some((s.results.get(index)?, b)));
            results[index] = match returned {
                Some((facts, binding)) => binding.map_facts(facts),
                None if is_buffer(ctx, value) => ValueFacts::unknown_buffer(),
                None => ValueFacts::unknown_scalar(),
            };
        }
    }

    fn visit_induction_variable(
        &self,
        ctx: &Context,
        _: Op,
        variable: Value,
        _: LoopBounds<'_, ValueFacts>,
    ) -> ValueFacts {
        if ctx.type_kind(ctx.value_type(variable)).is_integer_like() {
            ValueFacts::scalar(Some(Affine::atom(Atom::Loop(variable))))
        } else {
            ValueFacts::unknown_scalar()
        }
    }

    fn branch_value(&self, lattice: &ValueFacts) -> BranchValue {
        match &lattice.form {
            Flat::Bottom if lattice.buffers.0.is_empty() => BranchValue::Pending,
            Flat::Known(form) => form.as_constant().map_or(BranchValue::Unknown, BranchValue::Constant),
            _ => BranchValue::Unknown,
        }
    }
}

/// The results an op allocates (an `Allocate` effect on them), by index.
fn allocated_results(ctx: &Context, op: Op) -> Vec<usize> {
    let Some(definition) = ctx.definition(ctx.name(op)) else { return Vec::new() };
    match definition.memory_effects(ctx, op) {
        MemoryEffects::Known(effects) => effects
            .iter()
            .filter(|e| e.kind == EffectKind::Allocate)
            .filter_map(|e| match e.target {
                EffectTarget::Result(index) => Some(index),
                _ => None,
            })
            .collect(),
        MemoryEffects::Unknown => Vec::new(),
    }
}

/// The expression of the integer result `value` of `op`, given its operands' facts and
/// expressions; `None` when unknown.
fn integer_form(ctx: &Context, op: Op, value: Value, facts: &[&ValueFacts], forms: &[Affine]) -> Option<Affine> {
    if let Some((query, dimension)) = WorkItemQuery::decode(ctx, op) {
        return Some(work_item_form(query, dimension));
    }
    if let Some(dim) = DimOp::wrap(ctx, op) {
        let dimension = usize::try_from(dim.dimension(ctx)?).ok()?;
        if let Some(size) = static_dimension(ctx, dim.buffer(ctx), dimension) {
            return Some(Affine::constant(size));
        }
        return match facts.first().map(|f| f.buffers.0.iter().collect::<Vec<_>>()).as_deref() {
            Some([Origin::Param(param)]) => {
                Some(Affine::atom(Atom::Dim { param: *param, dimension: u8::try_from(dimension).ok()? }))
            }
            _ => None,
        };
    }
    let scalar = ScalarOp::decode(ctx, op).ok()?;
    let bits = integer_width(ctx, value).filter(|&w| w > 1)?;
    let constant = |i: usize| forms.get(i).and_then(Affine::as_constant);
    use ScalarOp::*;
    if let (IndexCast | ExtSI | IndexCastUI | ExtUI | TruncI, [a]) = (scalar, forms) {
        // An `i1` constant is 1 to the expressions but -1 sign-extended: not followed.
        let from = integer_width(ctx, ctx.operand(op, 0)).filter(|&w| w > 1)?;
        if bits < from {
            return narrow::wrap(a, bits); // the low bits
        }
        return match scalar {
            IndexCast | ExtSI | TruncI => Some(a.clone()),
            // A 64-bit operand's expression is taken as exact (see the module documentation).
            _ if from == 64 => Some(a.clone()),
            _ => narrow::zero_extend(a, from),
        };
    }
    if bits == 64 {
        return wide_form(scalar, forms);
    }
    // Narrow arithmetic (see `narrow.rs`): what may leave the type's range is wrapped; unsigned
    // operations read their operands zero-extended.
    let plain = |i: usize| forms.get(i).map(|f| narrow::unwrapped(f, bits));
    let unsigned = |i: usize| forms.get(i).and_then(|f| narrow::zero_extend(f, bits));
    let shift = |i: usize| constant(i).filter(|k| (0..i64::from(bits)).contains(k)).map(|k| Affine::constant(1 << k));
    let wrap = |form: Option<Affine>| narrow::wrap(&form?, bits);
    match scalar {
        AddI => wrap(plain(0)?.add(&plain(1)?)),
        SubI => wrap(plain(0)?.sub(&plain(1)?)),
        MulI => wrap(plain(0)?.mul(&plain(1)?)),
        ShLI => wrap(plain(0)?.mul(&shift(1)?)),
        DivUI => wrap(unsigned(0)?.div(&unsigned(1)?, Rounding::Unsigned)),
        RemUI => wrap(unsigned(0)?.rem(&unsigned(1)?, Rounding::Unsigned)),
        ShRUI => wrap(unsigned(0)?.div(&shift(1)?, Rounding::Unsigned)),
        ShRSI => forms.first()?.div(&shift(1)?, Rounding::Floor),
        // Signed division by a positive divisor, remainders, shifts right, minima, maxima (of
        // either order) and choices stay within the range: the 64-bit rules apply.
        DivSI | FloorDivSI | CeilDivSI | RemSI | AndI | MinSI | MinUI | MaxSI | MaxUI | Select => {
            wide_form(scalar, forms)
        }
        _ => None,
    }
}

/// The width of an integer-like value's type, when the analysis follows its arithmetic: 64
/// (`index`, `i64`) or a width `narrow.rs` follows.
fn integer_width(ctx: &Context, value: Value) -> Option<u32> {
    let kind = ctx.type_kind(ctx.value_type(value));
    let bits = kind.bit_width().filter(|_| kind.is_integer_like())?;
    (bits == 64 || bits == 1 || narrow::is_followed(bits)).then_some(bits)
}

/// The expression of `scalar` of `forms` computed exactly (64 bits, or what cannot leave a
/// narrow type's range).
fn wide_form(scalar: ScalarOp, forms: &[Affine]) -> Option<Affine> {
    let constant = |i: usize| forms.get(i).and_then(Affine::as_constant);
    let power_of_two = |i: usize| constant(i).filter(|k| (0..63).contains(k)).map(|k| Affine::constant(1 << k));
    use ScalarOp::*;
    match (scalar, forms) {
        (AddI, [a, b]) => a.add(b),
        (SubI, [a, b]) => a.sub(b),
        (MulI, [a, b]) => a.mul(b),
        (DivUI, [a, b]) => a.div(b, Rounding::Unsigned),
        (DivSI, [a, b]) => a.div(b, Rounding::Truncate),
        (FloorDivSI, [a, b]) => a.div(b, Rounding::Floor),
        (CeilDivSI, [a, b]) => {
            let d = b.as_constant().filter(|&d| d > 0)?;
            a.add(&Affine::constant(d - 1))?.div(b, Rounding::Floor)
        }
        (RemUI, [a, b]) => a.rem(b, Rounding::Unsigned),
        (RemSI, [a, b]) => a.rem(b, Rounding::Truncate),
        (ShLI, [a, _]) => a.mul(&power_of_two(1)?),
        (ShRSI, [a, _]) => a.div(&power_of_two(1)?, Rounding::Floor),
        (ShRUI, [a, _]) => a.div(&power_of_two(1)?, Rounding::Unsigned),
        // `e & (2^k - 1)` is `e mod 2^k`, rounded down, in two's complement.
        (AndI, [a, b]) => {
            let (e, mask) = if b.as_constant().is_some() { (a, constant(1)?) } else { (b, constant(0)?) };
            ((0..i64::MAX).contains(&mask) && (mask + 1).count_ones() == 1)
                .then(|| e.rem(&Affine::constant(mask + 1), Rounding::Floor))?
        }
        (MinSI, [a, b]) => a.minimum(b, Order::Signed),
        (MinUI, [a, b]) => a.minimum(b, Order::Unsigned),
        (MaxSI, [a, b]) => a.maximum(b, Order::Signed),
        (MaxUI, [a, b]) => a.maximum(b, Order::Unsigned),
        (Select, [_, a, b]) => a.select(b),
        _ => None,
    }
}

/// The expression of a work-item query: everything in terms of the global id, the grid and the
/// workgroup size, so that `group_id * local_size + local_id` is the global id again.
fn work_item_form(query: WorkItemQuery, dimension: u8) -> Affine {
    let id = Affine::atom(Atom::Id(dimension));
    let size = Affine::atom(Atom::WorkgroupSize(dimension));
    let grid = Affine::atom(Atom::GridSize(dimension));
    let form = match query {
        WorkItemQuery::GlobalId => Some(id),
        WorkItemQuery::LocalId => id.rem(&size, Rounding::Unsigned),
        WorkItemQuery::GroupId => id.div(&size, Rounding::Unsigned),
        WorkItemQuery::GlobalSize => Some(grid),
        WorkItemQuery::LocalSize => Some(size),
        WorkItemQuery::NumGroups => {
            grid.add(&size).and_then(|g| g.sub(&Affine::constant(1))).and_then(|g| g.div(&size, Rounding::Unsigned))
        }
    };
    form.expect("small expressions of atoms never overflow")
}

/// A call site: how the callee's parameters map to the caller's values, for what the callee's
/// summary says in terms of its parameters.
pub(super) struct CallBinding {
    call: Op,
    /// Per callee parameter: the caller's argument and its facts.
    arguments: Vec<(Value, ValueFacts)>,
    /// Per callee parameter: the static sizes of the argument's type.
    static_shapes: Vec<Vec<Option<i64>>>,
}

impl CallBinding {
    /// The binding of `call` (with its operands' facts); `None` if it is not a call.
    pub(super) fn new(ctx: &Context, call: Op, operand_facts: &[&ValueFacts]) -> Option<CallBinding> {
        let range = ctx.interface::<dyn CallOpInterface>(call)?.arguments(ctx, call);
        let values = &ctx.operands(call)[range.clone()];
        let arguments = values.iter().zip(&operand_facts[range]).map(|(&v, f)| (v, (*f).clone())).collect();
        let static_shapes = values
            .iter()
            .map(|&v| match ctx.type_kind(ctx.value_type(v)) {
                TypeKind::MemRef { shape, .. } => shape.iter().map(|&s| (s != DYNAMIC).then_some(s)).collect(),
                _ => Vec::new(),
            })
            .collect();
        Some(CallBinding { call, arguments, static_shapes })
    }

    /// The call.
    pub(super) fn call(&self) -> Op {
        self.call
    }

    /// The caller's expression for a callee atom, when it differs (`None`: the atom stays):
    /// parameters become the arguments, the callee's unknowns this call's own.
    pub(super) fn replace(&self, atom: &Atom) -> Option<Affine> {
        match *atom {
            Atom::Param(p) => Some(match self.arguments.get(p) {
                Some((value, facts)) => form_of(facts, *value),
                None => Affine::atom(Atom::Via { call: self.call, atom: Box::new(atom.clone()) }),
            }),
            Atom::Dim { param, dimension } => {
                if let Some(Some(size)) = self.static_shapes.get(param).and_then(|s| s.get(dimension as usize)) {
                    return Some(Affine::constant(*size));
                }
                let buffers = self.arguments.get(param).map(|(_, f)| f.buffers.0.iter().collect::<Vec<_>>());
                Some(Affine::atom(match buffers.as_deref() {
                    Some([Origin::Param(p)]) => Atom::Dim { param: *p, dimension },
                    _ => Atom::CallDimension { call: self.call, param, dimension },
                }))
            }
            Atom::Opaque(_) | Atom::CallDimension { .. } | Atom::Via { .. } => {
                Some(Affine::atom(Atom::Via { call: self.call, atom: Box::new(atom.clone()) }))
            }
            _ => None,
        }
    }

    /// The caller's buffers for a callee's origin.
    pub(super) fn map_origin(&self, origin: Origin) -> Vec<Origin> {
        match origin {
            Origin::Param(p) => match self.arguments.get(p) {
                Some((_, facts)) if !facts.buffers.0.is_empty() => facts.buffers.0.iter().copied().collect(),
                _ => vec![Origin::Unknown],
            },
            other => vec![other],
        }
    }

    /// A callee's facts about a value it returns, in the caller's terms.
    fn map_facts(&self, facts: &ValueFacts) -> ValueFacts {
        let buffers = UnionSet(facts.buffers.0.iter().flat_map(|&o| self.map_origin(o)).collect());
        let form = match &facts.form {
            Flat::Known(form) => form.substitute(&|a| self.replace(a)).map_or(Flat::Top, Flat::Known),
            other => other.clone(),
        };
        ValueFacts { buffers, form }
    }
}
