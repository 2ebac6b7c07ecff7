//! The compiled form of a host function, as `compile.rs` makes it and `interpret.rs` runs it:
//! owned data (no borrow of the [`Context`](hat_ir::Context)), values numbered into slots, ops
//! as [`Inst`]s with slot operands, each region's block as a [`Code`] of its own.
//!
//! Invariants the compiler establishes and the interpreter relies on: every slot an instruction
//! names is below its function's `slots`; a slot that holds a buffer holds `Scalar::Int(id)` of a
//! buffer of the run (the compiler reads buffers only from memref-typed values); the sources and
//! targets of every move ([`Edge`], loop yields, call arguments) have the same length.

use crate::report::Direction;
use crate::report::HostHook;
use crate::value::ElementType;
use hat_dialects::compute::ArgEffect;
use hat_ir::interfaces::RegionBranchOpInterface;
use hat_ir::Op;

use crate::slot_code::compiler::LoopSlots;
use crate::slot_code::ScalarInst;
pub(crate) use crate::slot_code::Slot;

/// A compiled host function.
#[derive(Debug)]
pub(crate) struct Function {
    /// Its symbol name.
    pub name: String,
    /// Slots of a frame.
    pub slots: u32,
    /// Its parameters: slots `0..params`.
    pub params: u32,
    /// Its body; the terminator's operands are the results.
    pub body: Code,
    /// Which results are buffers (the others are scalars).
    pub buffer_results: Box<[bool]>,
    /// The size of its arena in bytes, when `plan-memory` planned one.
    pub arena_bytes: Option<usize>,
}

/// A block: its instructions and the slots of its terminator's operands (none when it has no
/// terminator).
#[derive(Debug)]
pub(crate) struct Code {
    pub insts: Box<[Inst]>,
    pub exits: Box<[Slot]>,
}

/// An instruction. `op` is the op it came from, for errors and the report.
#[derive(Debug)]
pub(crate) enum Inst {
    /// A constant, `arith.select` or another scalar op (shared with the CPU backend's kernels).
    Scalar { inst: ScalarInst, op: Op },
    /// A counted loop.
    Loop(Box<LoopInst>),
    /// Another op with regions.
    Branch(Box<BranchInst>),
    /// A call of a function with a body.
    Call(Box<CallInst>),
    /// A call of a host function.
    HostCall(Box<HostCallInst>),
    /// A dispatch.
    Dispatch(Box<DispatchInst>),
    /// Waits for the device.
    Sync,
    /// Allocates a buffer.
    Alloc(Box<AllocInst>),
    /// Plans the call's arena (`buffer.arena`).
    Arena(Box<ArenaInst>),
    /// Frees a buffer.
    Dealloc { buffer: Slot, op: Op },
    /// Frees a buffer when the running call of its function owns it (`buffer.release`).
    Release { buffer: Slot, op: Op },
    /// Reads an element of a host copy.
    Load { dst: Slot, buffer: Slot, indices: Box<[Slot]>, op: Op },
    /// Writes an element of a host copy.
    Store { value: Slot, buffer: Slot, indices: Box<[Slot]>, op: Op },
    /// An extent of a buffer.
    Dim { dst: Slot, buffer: Slot, dimension: usize, op: Op },
    /// Host copy to host copy.
    Copy { source: Slot, destination: Slot, op: Op },
    /// A transfer (or, in reference mode, only the check of its range).
    Transfer { direction: Direction, buffer: Slot, range: Option<(Slot, Slot)>, op: Op },
    /// A runtime-tracking hook: its range checked, counted under `name`.
    Hook { hook: HostHook, buffer: Slot, range: Option<(Slot, Slot)>, op: Op },
}

/// A counted loop ([`LoopLikeOpInterface`](hat_ir::interfaces::LoopLikeOpInterface)).
#[derive(Debug)]
pub(crate) struct LoopInst {
    pub op: Op,
    pub slots: LoopSlots,
    /// The body; its exits become the next iteration's `iter_args`.
    pub body: Code,
}

/// An op with regions run through its [`RegionBranchOpInterface`].
pub(crate) struct BranchInst {
    pub op: Op,
    pub branches: &'static dyn RegionBranchOpInterface,
    /// How control enters the op, decided when compiled where it can be
    /// (`slot_code::region_hop`, shared with the CPU backend), else asked of the interface when
    /// it runs.
    pub entry: Hop,
    /// The op's non-empty regions, in order: [`Target::Region`] names one by its position here.
    pub regions: Box<[RegionCode]>,
}

impl std::fmt::Debug for BranchInst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BranchInst").field("op", &self.op).field("regions", &self.regions).finish_non_exhaustive()
    }
}

/// A non-empty region of a region-branch op.
#[derive(Debug)]
pub(crate) struct RegionCode {
    /// Its index among the op's regions (for the interface).
    pub index: usize,
    pub code: Code,
    /// How control leaves it.
    pub exit: Hop,
}

/// A hop of a region-branch op, to a region (its code in [`BranchInst::regions`], by position)
/// or past the op.
pub(crate) type Hop = crate::slot_code::region_hop::Hop<Target>;

/// One edge of a [`Hop`]: where to, and the values that go along.
pub(crate) type Edge = crate::slot_code::region_hop::Edge<Target>;

/// The target of an [`Edge`]: past the op, or into the region at a position of
/// [`BranchInst::regions`].
pub(crate) type Target = crate::slot_code::compiler::Target<usize>;

/// A call of a function with a body.
#[derive(Debug)]
pub(crate) struct CallInst {
    pub op: Op,
    /// The callee's index in the `Functions` (compile.rs).
    pub callee: u32,
    pub arguments: Box<[Slot]>,
    pub results: Box<[Slot]>,
}

/// An argument of a host function or a kernel.
#[derive(Copy, Clone, Debug)]
pub(crate) enum ArgSlot {
    Scalar(Slot, ElementType),
    Buffer(Slot),
}

/// A call of a declaration: a host function the embedding program registers.
#[derive(Debug)]
pub(crate) struct HostCallInst {
    pub op: Op,
    pub name: String,
    pub arguments: Box<[ArgSlot]>,
    /// The effect of each argument: the declared one for a buffer (`readwrite` when undeclared),
    /// `none` for a scalar.
    pub effects: Box<[ArgEffect]>,
    pub result_types: Vec<ElementType>,
    pub results: Box<[Slot]>,
}

/// A dispatch ([`LaunchOpInterface`](hat_ir::interfaces::LaunchOpInterface)).
#[derive(Debug)]
pub(crate) struct DispatchInst {
    pub op: Op,
    /// The kernel's index in the `Functions` (compile.rs)' kernels.
    pub kernel: u32,
    pub name: String,
    pub grid: Box<[Slot]>,
    pub arguments: Box<[ArgSlot]>,
    /// The extents of buffer arguments that the types checked at compile time leave open
    /// (`dispatch_arguments.rs`; usually none).
    pub extent_checks: Box<[crate::dispatch_arguments::ExtentCheck]>,
}

/// An allocation.
#[derive(Debug)]
pub(crate) struct AllocInst {
    pub op: Op,
    pub dst: Slot,
    pub element: ElementType,
    /// The extents, `None` where dynamic.
    pub shape: Box<[Option<usize>]>,
    /// One size per dynamic extent, in order.
    pub sizes: Box<[Slot]>,
    /// The report's name of its buffers (`alloc@line:col`).
    pub name: String,
    /// Its buffers' offset in the function's arena, when `plan-memory` placed them there.
    pub arena_offset: Option<usize>,
    /// Its buffers' slot in the arena a `buffer.arena` of the call planned, when placed there.
    pub arena_slot: Option<usize>,
}

/// `buffer.arena`: plans the call's arena once the slots' sizes are known.
#[derive(Debug)]
pub(crate) struct ArenaInst {
    pub op: Op,
    /// Each slot's size in bytes.
    pub sizes: Box<[Slot]>,
    /// The groups of slots live together.
    pub live_sets: Vec<Vec<usize>>,
}
