//! The memory-effects interface: what an operation reads, writes, allocates, frees and
//! synchronises, on which value, in which copy of a buffer, and on which elements. Analyses ask
//! this interface rather than matching op names.
//!
//! An effect says:
//! - its [`EffectKind`];
//! - its [`EffectTarget`]: an operand, a result, a parameter of a callable (the effects a
//!   function declaration or a function summary has on its arguments: block argument `i` of its
//!   body, operand `i` of a call's arguments), or every buffer of a memory space (a barrier);
//! - its [`MemorySpace`]: the copy it touches (host, device, workgroup-local memory, or the
//!   copy of wherever the op runs);
//! - its [`Extent`]: the whole buffer, one element named by index operands, or a span named by
//!   offset and count operands (element offsets in row-major order);
//! - whether it is certain ([`MemoryEffect::must`]): a must-write writes every element of its
//!   extent whenever the op runs, so the previous contents of that extent are dead; a may-write
//!   might write some of them (a host function declared `readwrite`), so they are not;
//! - whether it is atomic ([`MemoryEffect::atomic`]): concurrent atomic accesses do not race.

use smallvec::SmallVec;

/// What an effect does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EffectKind {
    /// Reads memory.
    Read,
    /// Writes memory.
    Write,
    /// Creates a buffer.
    Allocate,
    /// Destroys a buffer.
    Free,
    /// Orders memory accesses: every access of the target's space before the op is complete and
    /// visible to every access after it (a workgroup barrier; waiting for the device).
    Synchronize,
}

/// Which value the effect is on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EffectTarget {
    /// The buffer passed as this operand.
    Operand(usize),
    /// The buffer produced as this result.
    Result(usize),
    /// The buffer bound to this parameter of a callable: the effect of a call on its argument at
    /// this position (declarations and function summaries).
    Parameter(usize),
    /// Every buffer of the effect's memory space (synchronisation).
    All,
}

/// Which copy of a buffer the effect touches.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemorySpace {
    /// The copy of wherever the op runs: the host copy in compute code, the device copy in a
    /// kernel (or workgroup-local memory, when the buffer is a `kernel.local_alloc`).
    Current,
    /// The host copy.
    Host,
    /// The device copy.
    Device,
    /// Workgroup-local memory: shared by the work items of one workgroup, gone after the dispatch.
    Workgroup,
}

/// Which elements of the target an effect touches. Positions are operand indices of the op.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Extent {
    /// Every element (or no element in particular: allocation, synchronisation).
    Whole,
    /// One element, indexed by the `count` operands starting at `first` (one per dimension,
    /// outermost first).
    Element {
        /// The first index operand.
        first: u32,
        /// How many index operands (the buffer's rank).
        count: u32,
    },
    /// `count` consecutive elements from `offset`, in row-major order, each given by an operand.
    Span {
        /// The operand holding the first element's offset.
        offset: u32,
        /// The operand holding the number of elements.
        count: u32,
    },
}

impl Extent {
    /// The operand indices that name the extent (indices, or offset and count).
    pub fn operands(self) -> std::ops::Range<usize> {
        match self {
            Extent::Whole => 0..0,
            Extent::Element { first, count } => first as usize..(first + count) as usize,
            Extent::Span { offset, count } => {
                debug_assert_eq!(count, offset + 1, "a span's count operand follows its offset");
                offset as usize..count as usize + 1
            }
        }
    }
}

/// One effect of an operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryEffect {
    /// What it does.
    pub kind: EffectKind,
    /// On which value.
    pub target: EffectTarget,
    /// On which copy.
    pub space: MemorySpace,
    /// On which elements.
    pub extent: Extent,
    /// Whether it happens for certain, on every element of the extent, whenever the op runs (a
    /// must-write kills what was there); `false` for "may".
    pub must: bool,
    /// Whether the access is atomic.
    pub atomic: bool,
}

impl MemoryEffect {
    /// A certain effect on the whole of `target`, in the current memory space.
    pub fn new(kind: EffectKind, target: EffectTarget) -> Self {
        MemoryEffect { kind, target, space: MemorySpace::Current, extent: Extent::Whole, must: true, atomic: false }
    }

    /// A certain effect on the whole of an operand, in the current memory space.
    pub fn on_operand(kind: EffectKind, operand: usize) -> Self {
        Self::new(kind, EffectTarget::Operand(operand))
    }

    /// A read of the whole of `target`.
    pub fn read(target: EffectTarget) -> Self {
        Self::new(EffectKind::Read, target)
    }

    /// A write of the whole of `target`.
    pub fn write(target: EffectTarget) -> Self {
        Self::new(EffectKind::Write, target)
    }

    /// The same effect in `space`.
    pub fn in_space(self, space: MemorySpace) -> Self {
        MemoryEffect { space, ..self }
    }

    /// The same effect on one element indexed by the `count` operands from `first`.
    pub fn on_element(self, first: usize, count: usize) -> Self {
        MemoryEffect { extent: Extent::Element { first: first as u32, count: count as u32 }, ..self }
    }

    /// The same effect on the span given by the operands `offset` and `offset + 1` (the count).
    pub fn on_span(self, offset: usize) -> Self {
        MemoryEffect { extent: Extent::Span { offset: offset as u32, count: offset as u32 + 1 }, ..self }
    }

    /// The same effect, uncertain ("may").
    pub fn may(self) -> Self {
        MemoryEffect { must: false, ..self }
    }

    /// The same effect, atomic.
    pub fn atomically(self) -> Self {
        MemoryEffect { atomic: true, ..self }
    }

    /// A synchronisation of every access to `space`.
    pub fn synchronize(space: MemorySpace) -> Self {
        Self::new(EffectKind::Synchronize, EffectTarget::All).in_space(space)
    }
}

/// The effects of an operation instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryEffects {
    /// Exactly these effects (empty: no effects).
    Known(SmallVec<[MemoryEffect; 2]>),
    /// Anything may be read or written (calls, dispatches: their analyses refine this).
    Unknown,
}

impl MemoryEffects {
    /// No effects at all.
    pub fn none() -> Self {
        MemoryEffects::Known(SmallVec::new())
    }

    /// Exactly the given effects.
    pub fn of(effects: impl IntoIterator<Item = MemoryEffect>) -> Self {
        MemoryEffects::Known(effects.into_iter().collect())
    }

    /// Whether the op is known to have no effects.
    pub fn is_none(&self) -> bool {
        matches!(self, MemoryEffects::Known(e) if e.is_empty())
    }

    /// The known effects (`None` when unknown).
    pub fn known(&self) -> Option<&[MemoryEffect]> {
        match self {
            MemoryEffects::Known(effects) => Some(effects),
            MemoryEffects::Unknown => None,
        }
    }

    /// Whether some effect is a synchronisation.
    pub fn synchronizes(&self) -> bool {
        self.known().is_some_and(|effects| effects.iter().any(|e| e.kind == EffectKind::Synchronize))
    }
}
