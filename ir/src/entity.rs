//! Typed handles into the arenas of a [`Context`](crate::Context).
//!
//! Every entity of the IR (operation, block, region, value, type, attribute, identifier) is a `u32`
//! index behind a newtype. Handles are `NonZeroU32` inside, so `Option<Handle>` costs no more than the
//! handle itself. A handle is only meaningful for the context that created it. A stale handle to
//! an erased operation still names that (detached) operation until the context reclaims erased
//! slots for reuse, which the pass manager does between passes (see the context's documentation);
//! no other handle is ever reused.

use std::num::NonZeroU32;

macro_rules! entity {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(NonZeroU32);

        impl $name {
            /// The handle of the `index`-th entity of its arena.
            #[inline]
            pub fn from_index(index: usize) -> Self {
                let raw = u32::try_from(index + 1).expect("arena index overflows u32");
                Self(NonZeroU32::new(raw).expect("index + 1 is never zero"))
            }

            /// The position of this entity in its arena.
            #[inline]
            pub fn index(self) -> usize {
                (self.0.get() - 1) as usize
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}{}", stringify!($name), self.index())
            }
        }
    };
}

entity!(
    /// An operation.
    Op
);
entity!(
    /// A basic block: a list of operations with block arguments.
    Block
);
entity!(
    /// A region: a list of blocks owned by an operation.
    Region
);
entity!(
    /// An SSA value: an operation result or a block argument.
    Value
);
entity!(
    /// A uniqued type.
    Type
);
entity!(
    /// A uniqued attribute.
    Attribute
);
entity!(
    /// An interned string (attribute names, symbol names).
    Ident
);
entity!(
    /// A registered or unregistered operation name.
    OpName
);
