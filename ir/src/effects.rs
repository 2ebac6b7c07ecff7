//! The memory-effects interface: what an operation reads, writes, allocates and frees, and in which
//! copy of a buffer. Analyses ask this interface rather than matching op names.

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
}

/// Which value the effect is on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EffectTarget {
    /// The buffer passed as this operand.
    Operand(usize),
    /// The buffer produced as this result.
    Result(usize),
}

/// Which copy of a buffer the effect touches.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemorySpace {
    /// The copy of wherever the op runs: the host copy in compute code, the device copy in a kernel.
    Current,
    /// The host copy.
    Host,
    /// The device copy.
    Device,
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
}

impl MemoryEffect {
    /// An effect on an operand in the current memory space.
    pub fn on_operand(kind: EffectKind, operand: usize) -> Self {
        MemoryEffect { kind, target: EffectTarget::Operand(operand), space: MemorySpace::Current }
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
}
