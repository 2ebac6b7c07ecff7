//! The one compiler from a function's regions to slot code, for both engines: the host
//! executor's (`executor/compile.rs`, host functions) and the CPU backend's (`cpu/compile.rs`,
//! kernels and their device functions). It walks the structure every engine shares, through op
//! interfaces, never op names:
//!
//! - **Blocks.** A region has one block ([`single_block`]); its terminator is its last op when
//!   that op has the `TERMINATOR` trait (a block without one ends as if by a terminator with no
//!   operands); a terminator that branches to another block is refused (the runtime runs
//!   structured control flow). How a block ends is an [`End`]: a function body returns its
//!   terminator's operands (it must be `RETURN_LIKE`), a loop body carries the ones
//!   [`CountedLoop::yielded`] names to the next iteration, and a region of a region-branch op
//!   leaves by a [`Hop`].
//! - **Scalars** ([`ScalarInst`]), **counted loops** ([`LoopLikeOpInterface`], read by
//!   [`CountedLoop::of`]) and **region-branch ops** ([`RegionBranchOpInterface`], each point's
//!   hop compiled by [`compile_hop`]) are compiled here for both.
//! - **Everything else is the engine's instruction set** ([`InstructionSet`]): the host's
//!   dispatches, allocations, transfers and host calls; the device's work-item ids, atomics,
//!   barriers and workgroup memory; each engine's memory ops and calls (a host function or a
//!   declaration on the host, a device function on the device). The engine also holds the slots
//!   ([`SlotMap`]) and the compiled blocks: the executor nests each block's code in the
//!   instruction that runs it (it runs them recursively), the CPU backend numbers them in one
//!   list (its work items stop at barriers and resume, so nothing lives on the Rust stack).
//!
//! The values' slots are defined in one order for both: a region-branch op's region arguments
//! and results before any of its hops (any hop may bind them), a loop's carried arguments and
//! results before its body.

use super::region_hop::{compile_hop, single_block, Hop};
use super::{ScalarInst, Slot, SlotMap, Symbols, ValueKind};
use crate::error::RuntimeError;
use crate::value::ElementType;
use hat_ir::interfaces::{
    CallOpInterface, CallableOpInterface, CountedLoop, LoopLikeOpInterface, RegionBranchOpInterface, RegionPoint,
};
use hat_ir::{Block, Context, Op, OpTraits, Region};

/// Stack kept free before a nested block is compiled, and the size of each new stack segment:
/// regions nest as deep as the parser allows, each level a few frames of this recursion.
const RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Where a hop goes: past the op, or into a region's code (`L`: the engine's label for it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target<L> {
    /// Past the op: it is done.
    Parent,
    /// Into a region's code.
    Region(L),
}

/// How a compiled function or loop body ends (a region of a region-branch op ends in a hop:
/// [`InstructionSet::finish_region`]).
#[derive(Debug)]
pub(crate) enum End {
    /// A function body: its results.
    Return(Box<[Slot]>),
    /// A counted loop's body: the values carried to the next iteration.
    Next(Box<[Slot]>),
}

/// The slots of a counted loop.
#[derive(Debug)]
pub(crate) struct LoopSlots {
    pub lower: Slot,
    pub upper: Slot,
    pub step: Slot,
    /// The induction variable's type: the loop stops rather than wraps around.
    pub ty: ElementType,
    /// The induction variable's slot (a slot of its own where the loop has none, to count in).
    pub induction: Slot,
    pub inits: Box<[Slot]>,
    /// The body's carried arguments.
    pub iter_args: Box<[Slot]>,
    pub results: Box<[Slot]>,
}

/// The op a call names, found in the symbol tables enclosing the call (innermost first).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Callee<'c> {
    /// The callable the call names.
    pub op: Op,
    /// Its symbol, as the call writes it.
    pub name: &'c str,
    /// Its body; `None` for a declaration.
    pub body: Option<Region>,
    /// The call's arguments (the operands its interface names, checked).
    pub arguments: &'c [hat_ir::Value],
}

/// What an engine adds to the shared compiler: its own instructions, and how it holds code.
pub(crate) trait InstructionSet {
    /// An instruction of the engine.
    type Inst;
    /// How the engine names a block before it is compiled (a hop may go into a region whose
    /// code comes later).
    type Label: Copy;
    /// A compiled function or loop body, as [`InstructionSet::finish_block`] gives it.
    type Block;
    /// A compiled region of a region-branch op, as [`InstructionSet::finish_region`] gives it.
    type Region;
    /// Why the engine cannot leave a hop to run time (`None`: it asks the interface then).
    const ASK_REFUSAL: Option<&'static str>;
    /// What a call names, for the error when no such symbol exists (`function`, `kernel helper`).
    const CALLEE: &'static str;

    /// The slots of the function being compiled.
    fn slots(&mut self) -> &mut SlotMap;
    /// The symbols calls name (each table read once, whatever the function compiled).
    fn symbols(&mut self) -> &mut Symbols;
    /// An error at `op`.
    fn error(&self, ctx: &Context, op: Op, message: String) -> RuntimeError;
    /// The error for an op neither the engine nor the shared compiler knows.
    fn unknown(&self, ctx: &Context, op: Op) -> RuntimeError;
    /// The engine's instruction for `op` when it is one of its own ops; tried first.
    fn own(&mut self, ctx: &Context, op: Op) -> Result<Option<Self::Inst>, RuntimeError>;
    /// A scalar instruction of `op`.
    fn scalar(&mut self, ctx: &Context, op: Op, inst: ScalarInst) -> Self::Inst;
    /// A call (through [`CallOpInterface`]) of `callee`: what the engine runs for it (a compiled
    /// function, a host function), or why it cannot.
    fn call(&mut self, ctx: &Context, op: Op, callee: Callee<'_>) -> Result<Self::Inst, RuntimeError>;
    /// The label of the next block to compile: a function's body or a loop's (`position` 0), or
    /// a region of a region-branch op (`position`: its place among the op's non-empty regions).
    fn label(&mut self, position: usize) -> Self::Label;
    /// The body `label`: its instructions, and how it ends.
    fn finish_block(&mut self, label: Self::Label, insts: Vec<Self::Inst>, end: End) -> Self::Block;
    /// The region `label` of a region-branch op: its instructions, and the hop that leaves it.
    fn finish_region(
        &mut self,
        label: Self::Label,
        insts: Vec<Self::Inst>,
        exit: Hop<Target<Self::Label>>,
    ) -> Self::Region;
    /// A counted loop `op`.
    fn counted_loop(&mut self, ctx: &Context, op: Op, slots: LoopSlots, body: Self::Block) -> Self::Inst;
    /// A region-branch op: the hop into it, and the code of its non-empty regions, each with
    /// its index among the op's regions, in the order of their labels' positions.
    fn branch(
        &mut self,
        ctx: &Context,
        op: Op,
        branches: &'static dyn RegionBranchOpInterface,
        entry: Hop<Target<Self::Label>>,
        regions: Vec<(usize, Self::Region)>,
    ) -> Self::Inst;
}

/// Compiles the body `block` of `function`: its parameters get the first slots. Returns the
/// number of parameters and the body.
pub(crate) fn function_body<S: InstructionSet>(
    set: &mut S,
    ctx: &Context,
    function: Op,
    block: Block,
) -> Result<(u32, S::Block), RuntimeError> {
    let params = set.slots().define_arguments(ctx, block).map_err(|message| set.error(ctx, function, message))?;
    let label = set.label(0);
    let (insts, terminator) = compile_ops(set, ctx, block)?;
    let values = match terminator {
        None => Box::new([]) as Box<[Slot]>,
        Some(op) if !ctx.has_traits(op, OpTraits::RETURN_LIKE) => {
            let message = format!("ends the body of '{}', but is not return-like", ctx.name_str(function));
            return Err(set.error(ctx, op, message));
        }
        Some(op) => set.slots().get_all(ctx.operands(op)).map_err(|message| set.error(ctx, op, message))?,
    };
    Ok((params.len() as u32, set.finish_block(label, insts, End::Return(values))))
}

/// The instructions of `block` up to its terminator (its last op when that op has the
/// `TERMINATOR` trait), and the terminator, which must not branch to another block. Regions nest
/// as deep as the parser allows, each level a few frames of this recursion: the stack grows as
/// needed.
fn compile_ops<S: InstructionSet>(
    set: &mut S,
    ctx: &Context,
    block: Block,
) -> Result<(Vec<S::Inst>, Option<Op>), RuntimeError> {
    stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
        let terminator = ctx.last_op(block).filter(|&op| ctx.has_traits(op, OpTraits::TERMINATOR));
        let mut insts = Vec::new();
        for op in ctx.block_ops(block) {
            if Some(op) == terminator {
                break;
            }
            insts.push(compile_op(set, ctx, op)?);
        }
        if let Some(op) = terminator.filter(|&op| !ctx.successors(op).is_empty()) {
            let message = "branches to another block: the runtime runs structured control flow only".to_string();
            return Err(set.error(ctx, op, message));
        }
        Ok((insts, terminator))
    })
}

fn compile_op<S: InstructionSet>(set: &mut S, ctx: &Context, op: Op) -> Result<S::Inst, RuntimeError> {
    if let Some(inst) = set.own(ctx, op)? {
        return Ok(inst);
    }
    if let Some(inst) = ScalarInst::compile(ctx, op, set.slots()).map_err(|message| set.error(ctx, op, message))? {
        return Ok(set.scalar(ctx, op, inst));
    }
    if let Some(calling) = ctx.interface::<dyn CallOpInterface>(op) {
        let callee = callee(set, ctx, op, calling)?;
        return set.call(ctx, op, callee);
    }
    if let Some(looping) = ctx.interface::<dyn LoopLikeOpInterface>(op) {
        return counted_loop(set, ctx, op, looping);
    }
    if let Some(branches) = ctx.interface::<dyn RegionBranchOpInterface>(op) {
        return branch(set, ctx, op, branches);
    }
    Err(set.unknown(ctx, op))
}

/// The callable `op` calls: a flat symbol reference, resolved in the enclosing symbol tables.
fn callee<'c, S: InstructionSet>(
    set: &mut S,
    ctx: &'c Context,
    op: Op,
    calling: &'static dyn CallOpInterface,
) -> Result<Callee<'c>, RuntimeError> {
    let Some(symbol) = calling.callee(ctx, op) else {
        return Err(set.error(ctx, op, "requires a flat symbol reference to its callee".to_string()));
    };
    let name = ctx.ident_str(symbol);
    let missing =
        || RuntimeError::MissingSymbol { what: S::CALLEE, name: name.to_string(), location: ctx.location(op) };
    let target = set.symbols().lookup(ctx, op, symbol).ok_or_else(missing)?;
    let Some(callable) = ctx.interface::<dyn CallableOpInterface>(target) else {
        let message = format!("calls '@{name}', a '{}', which is not callable", ctx.name_str(target));
        return Err(set.error(ctx, op, message));
    };
    let range = calling.arguments(ctx, op);
    let Some(arguments) = ctx.operands(op).get(range.clone()) else {
        let message = format!("names arguments {range:?}, but has {} operand(s)", ctx.operands(op).len());
        return Err(set.error(ctx, op, message));
    };
    // The verifier checks this for the calls it knows; another dialect's call may disagree with
    // its callee, and the callee's frame is filled from the arguments and read for the results.
    let body = callable.body(ctx, target);
    let parameters =
        body.and_then(|body| ctx.region_blocks(body).first()).map(|&entry| ctx.block_arguments(entry).len());
    let results = callable.signature(ctx, target).map(|(_, results)| results.len());
    if parameters.is_some_and(|p| p != arguments.len()) || results.is_some_and(|r| r != ctx.result_count(op)) {
        let message = format!(
            "passes {} arguments and takes {} results, but '@{name}' has {} parameters and returns {} values",
            arguments.len(),
            ctx.result_count(op),
            parameters.map_or("?".to_string(), |p| p.to_string()),
            results.map_or("?".to_string(), |r| r.to_string())
        );
        return Err(set.error(ctx, op, message));
    }
    Ok(Callee { op: target, name, body, arguments })
}

/// A counted loop through [`LoopLikeOpInterface`]: its parts from [`CountedLoop::of`].
fn counted_loop<S: InstructionSet>(
    set: &mut S,
    ctx: &Context,
    op: Op,
    looping: &'static dyn LoopLikeOpInterface,
) -> Result<S::Inst, RuntimeError> {
    let parts = CountedLoop::of(ctx, op, looping).map_err(|message| set.error(ctx, op, message))?;
    let slots = loop_slots(set.slots(), ctx, op, &parts);
    let slots = slots.map_err(|message| set.error(ctx, op, message))?;
    let label = set.label(0);
    let (insts, terminator) = compile_ops(set, ctx, parts.body)?;
    // The terminator's operands that go to the next iteration.
    let values = match terminator {
        Some(terminator) => set
            .slots()
            .operands(ctx, terminator, parts.yielded.clone())
            .map_err(|message| set.error(ctx, terminator, message))?,
        None => Box::new([]),
    };
    let body = set.finish_block(label, insts, End::Next(values));
    Ok(set.counted_loop(ctx, op, slots, body))
}

/// The slots of a counted loop with `parts`: its carried arguments and results defined.
fn loop_slots(map: &mut SlotMap, ctx: &Context, op: Op, parts: &CountedLoop) -> Result<LoopSlots, String> {
    let ty = ValueKind::scalar(ctx, ctx.value_type(parts.induction.unwrap_or(parts.lower)))?;
    let (lower, upper, step) = (map.get(parts.lower)?, map.get(parts.upper)?, map.get(parts.step)?);
    let inits = map.get_all(&parts.inits)?;
    map.define_arguments(ctx, parts.body)?;
    let iter_args = map.get_all(&parts.iter_args)?;
    let induction = match parts.induction {
        Some(value) => map.get(value)?,
        None => map.fresh(),
    };
    let results = map.define_results(ctx, op)?;
    Ok(LoopSlots { lower, upper, step, ty, induction, inits, iter_args, results })
}

/// A region-branch op through [`RegionBranchOpInterface`]: every region's arguments and the
/// results get their slots first, then the hop into the op, then each region's code.
fn branch<S: InstructionSet>(
    set: &mut S,
    ctx: &Context,
    op: Op,
    branches: &'static dyn RegionBranchOpInterface,
) -> Result<S::Inst, RuntimeError> {
    // The non-empty regions: their index among the op's regions, block and label.
    let mut blocks = Vec::with_capacity(ctx.regions(op).len());
    let mut labels = Vec::with_capacity(ctx.regions(op).len());
    for (index, &region) in ctx.regions(op).iter().enumerate() {
        let block = single_block(ctx, region).map_err(|message| set.error(ctx, op, message))?;
        let label = match block {
            Some(block) => {
                set.slots().define_arguments(ctx, block).map_err(|message| set.error(ctx, op, message))?;
                let label = set.label(blocks.len());
                blocks.push((index, block, label));
                Some(label)
            }
            None => None,
        };
        labels.push(label);
    }
    set.slots().define_results(ctx, op).map_err(|message| set.error(ctx, op, message))?;
    let entry = hop(set, ctx, op, branches, RegionPoint::Parent, None, &labels)?;
    let mut regions = Vec::with_capacity(blocks.len());
    for (index, block, label) in blocks {
        let (insts, terminator) = compile_ops(set, ctx, block)?;
        let exit = hop(set, ctx, op, branches, RegionPoint::Region(index), terminator, &labels)?;
        regions.push((index, set.finish_region(label, insts, exit)));
    }
    Ok(set.branch(ctx, op, branches, entry, regions))
}

/// The hop from `from` of a region-branch op (`terminator`: region `from`'s, if it has one).
fn hop<S: InstructionSet>(
    set: &mut S,
    ctx: &Context,
    op: Op,
    branches: &'static dyn RegionBranchOpInterface,
    from: RegionPoint,
    terminator: Option<Op>,
    labels: &[Option<S::Label>],
) -> Result<Hop<Target<S::Label>>, RuntimeError> {
    let target = |to| match to {
        RegionPoint::Parent => Ok(Target::Parent),
        RegionPoint::Region(index) => match labels.get(index) {
            Some(&Some(label)) => Ok(Target::Region(label)),
            _ => Err(format!("control goes into region #{index}, which has no code")),
        },
    };
    compile_hop(ctx, set.slots(), op, branches, from, terminator, S::ASK_REFUSAL, target)
        .map_err(|error| set.error(ctx, error.at, error.message))
}
