//! The constructs the generator makes only when asked ([`Config::constructs`](super::Config)):
//! shapes that programs written by others showed the transfer strategies (issue 22), each of
//! which can be switched on or off by name, so that the differential test can run with every
//! construct whose plans are right and take in the others as their fixes land.
//!
//! With none of them on, the generator draws exactly the random numbers it drew before they
//! existed, so every seed names the program it named then.

/// One construct the generator may add.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Construct {
    /// `scf.for` carrying a buffer: each iteration allocates one, a kernel fills it from the
    /// carried one, the loop yields it; after the loop the host reads the result.
    FreshFor,
    /// The same, carried by `scf.while`.
    FreshWhile,
    /// `scf.if` yielding buffers: on each branch a fresh one or one in scope.
    IfResults,
    /// `scf.if` yielding two buffers, swapped on one path.
    IfSwap,
    /// Ping-pong (a rotation of two to four buffers) carried by `scf.while`.
    WhilePingPong,
    /// `scf.while` whose "before" region does the work: the host clears a flag element, a
    /// kernel updates a grid and may set the flag, the host reads the flag as the condition.
    DoWhile,
    /// Compute helpers whose callers pass one buffer for several parameters (inlined).
    SharedHelperArgs,
    /// Compute helpers that call themselves under a depth counter (so `inline` keeps them),
    /// some of them called with one buffer for several parameters.
    RecursiveHelpers,
    /// `scf.for` with an `i32` induction variable (bounds and step `i32`).
    I32Loops,
    /// `scf.for` with a negative lower bound.
    NegativeBounds,
    /// Host loads and stores at indices computed at run time (from a loaded value or a loop
    /// variable), followed by reads at constant indices.
    RuntimeIndex,
    /// Host `scf.for` loops reading or writing a fixed range of a buffer a kernel wrote.
    HostRange,
    /// A kernel guarded by `id < dim / 2` that writes the first half, which the host reads.
    HalfWrite,
    /// A host `scf.for` loop storing at indices known only at run time (the loop variable
    /// times a stride, modulo the length), perhaps more times than the buffer has elements,
    /// after a kernel wrote the buffer.
    HostScatter,
    /// Temporaries only the device sees, born in a loop body or a branch (issue 23): a kernel
    /// derives one from a buffer in scope (perhaps a second from the first), another writes a
    /// buffer in scope from it; `plan-memory` releases them in their block and places them in
    /// its function's arena.
    DeviceTemporaries,
}

impl Construct {
    /// Every construct.
    pub const ALL: [Construct; 15] = [
        Construct::FreshFor,
        Construct::FreshWhile,
        Construct::IfResults,
        Construct::IfSwap,
        Construct::WhilePingPong,
        Construct::DoWhile,
        Construct::SharedHelperArgs,
        Construct::RecursiveHelpers,
        Construct::I32Loops,
        Construct::NegativeBounds,
        Construct::RuntimeIndex,
        Construct::HostRange,
        Construct::HalfWrite,
        Construct::HostScatter,
        Construct::DeviceTemporaries,
    ];

    /// Its name, as [`Constructs::parse`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Construct::FreshFor => "fresh-for",
            Construct::FreshWhile => "fresh-while",
            Construct::IfResults => "if-results",
            Construct::IfSwap => "if-swap",
            Construct::WhilePingPong => "while-ping-pong",
            Construct::DoWhile => "do-while",
            Construct::SharedHelperArgs => "shared-helper-args",
            Construct::RecursiveHelpers => "recursive-helpers",
            Construct::I32Loops => "i32-loops",
            Construct::NegativeBounds => "negative-bounds",
            Construct::RuntimeIndex => "runtime-index",
            Construct::HostRange => "host-range",
            Construct::HalfWrite => "half-write",
            Construct::HostScatter => "host-scatter",
            Construct::DeviceTemporaries => "device-temporaries",
        }
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// A set of constructs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Constructs(u32);

impl Constructs {
    /// None: the generator as it was before the constructs.
    pub const NONE: Constructs = Constructs(0);

    /// Every construct.
    pub fn all() -> Constructs {
        Constructs::of(&Construct::ALL)
    }

    /// The constructs listed.
    pub fn of(list: &[Construct]) -> Constructs {
        Constructs(list.iter().fold(0, |bits, c| bits | c.bit()))
    }

    /// Whether `construct` is in the set.
    pub fn has(self, construct: Construct) -> bool {
        self.0 & construct.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set with `construct` added or removed.
    pub fn with(self, construct: Construct, on: bool) -> Constructs {
        if on {
            Constructs(self.0 | construct.bit())
        } else {
            Constructs(self.0 & !construct.bit())
        }
    }

    /// The constructs in the set.
    pub fn list(self) -> Vec<Construct> {
        Construct::ALL.into_iter().filter(|&c| self.has(c)).collect()
    }

    /// The names, comma separated (`none` for the empty set).
    pub fn names(self) -> String {
        if self.is_empty() {
            return "none".to_string();
        }
        self.list().iter().map(|c| c.name()).collect::<Vec<_>>().join(",")
    }

    /// Reads a set from `base` and comma-separated edits: `all`, `none`, `default` (the set
    /// `default` given), a construct's name (added) or `-name` (removed), applied in order:
    /// `default,fresh-for`, `all,-do-while`, `none,i32-loops`. An empty text is `default`.
    pub fn parse(text: &str, default: Constructs) -> Result<Constructs, String> {
        let mut set = default;
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            set = match word {
                "all" => Constructs::all(),
                "none" => Constructs::NONE,
                "default" => default,
                _ => {
                    let (name, on) = match word.strip_prefix('-') {
                        Some(name) => (name, false),
                        None => (word.strip_prefix('+').unwrap_or(word), true),
                    };
                    let construct = Construct::ALL.into_iter().find(|c| c.name() == name).ok_or_else(|| {
                        let names: Vec<&str> = Construct::ALL.iter().map(|c| c.name()).collect();
                        format!("no construct `{name}` (the constructs: all, none, default, {})", names.join(", "))
                    })?;
                    set.with(construct, on)
                }
            };
        }
        Ok(set)
    }
}
