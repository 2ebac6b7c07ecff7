//! Runtime errors: each says what went wrong in terms of the program (kernel, work item, index,
//! argument), and where in the source when known.

use hat_ir::Location;
use thiserror::Error;

/// What went wrong while running a program.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RuntimeError {
    /// A device access outside its buffer.
    #[error("out-of-bounds access in kernel '{kernel}' by work item ({}, {}, {}): index [{}] of a buffer of shape [{}]", work_item[0], work_item[1], work_item[2], join(index), join_usize(shape))]
    DeviceOutOfBounds {
        /// The kernel.
        kernel: String,
        /// The global id of the work item.
        work_item: [u64; 3],
        /// The indices used.
        index: Vec<i64>,
        /// The buffer's shape.
        shape: Vec<usize>,
        /// Where the access is.
        location: Location,
    },
    /// A host access outside its buffer.
    #[error("out-of-bounds access on the host: index [{}] of a buffer of shape [{}]", join(index), join_usize(shape))]
    HostOutOfBounds {
        /// The indices used.
        index: Vec<i64>,
        /// The buffer's shape.
        shape: Vec<usize>,
        /// Where the access is.
        location: Location,
    },
    /// An element range of a transfer outside its buffer.
    #[error("transfer range [{offset}, {offset}+{count}) is outside a buffer of {len} elements")]
    RangeOutOfBounds {
        /// First element.
        offset: i64,
        /// Number of elements.
        count: i64,
        /// Elements in the buffer.
        len: usize,
        /// Where the transfer is.
        location: Location,
    },
    /// The entry function, a callee or a kernel does not exist.
    #[error("no {what} named '@{name}'")]
    MissingSymbol {
        /// What was looked for (`entry function`, `kernel`, ...).
        what: &'static str,
        /// Its name.
        name: String,
        /// Where it was named.
        location: Location,
    },
    /// A program argument that is missing or does not fit its parameter.
    #[error("argument '{name}': {message}")]
    BadArgument {
        /// The parameter's name or position.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A host function that the embedding program did not register.
    #[error("host function '@{name}' is not registered with the executor")]
    UnknownHostFunction {
        /// Its name.
        name: String,
        /// Where it is called.
        location: Location,
    },
    /// An error reported by a host function.
    #[error("host function '@{name}' failed: {message}")]
    HostFunctionFailed {
        /// Its name.
        name: String,
        /// Its message.
        message: String,
        /// Where it is called.
        location: Location,
    },
    /// Integer division by zero and similar undefined arithmetic.
    #[error("{message}")]
    Arithmetic {
        /// What happened.
        message: String,
        /// Where.
        location: Location,
    },
    /// An op the executor or backend cannot run.
    #[error("cannot run '{op}': {message}")]
    Unsupported {
        /// The op's name.
        op: String,
        /// Why.
        message: String,
        /// Where.
        location: Location,
    },
    /// The device ran out of memory, or the buffer exceeds the device's limits.
    #[error("device allocation of {bytes} bytes failed: {message}")]
    Allocation {
        /// The size asked for.
        bytes: usize,
        /// Why.
        message: String,
    },
    /// Host memory could not hold a buffer's host copy (or a buffer the caller builds).
    #[error("host allocation of {bytes} bytes failed: {message}")]
    HostAllocation {
        /// The size asked for.
        bytes: usize,
        /// Why.
        message: String,
        /// The op that needed the host copy; unknown for a buffer made outside a program.
        location: Location,
    },
    /// A host buffer larger than the memory the process can still have (see
    /// [`crate::host_memory`]), refused before anything is allocated.
    #[error("{}", crate::host_memory::message(what, *bytes, *available))]
    HostMemory {
        /// What needs it: an argument's name, a buffer's host copy.
        what: String,
        /// The size asked for.
        bytes: u64,
        /// The bytes available.
        available: u64,
        /// The op that needed it; unknown for a buffer made outside a program.
        location: Location,
    },
    /// A buffer used after `buffer.dealloc` freed it (a second `buffer.dealloc` included).
    #[error("'{op}' uses a buffer after 'buffer.dealloc' freed it")]
    UseAfterFree {
        /// The op that used it.
        op: String,
        /// Where.
        location: Location,
    },
    /// Calls nested deeper than the executor allows, as unbounded recursion does.
    #[error("calls nested more than {limit} deep, in '@{function}'")]
    RecursionLimit {
        /// The executor's limit.
        limit: usize,
        /// The function called past the limit.
        function: String,
        /// The call.
        location: Location,
    },
    /// A dispatch whose grid has more work items than the backend allows (or than 64 bits
    /// count): refused before it runs.
    #[error("{}", grid_message(kernel, grid, *work_items, *limit))]
    GridTooLarge {
        /// The kernel.
        kernel: String,
        /// The grid (x, y, z).
        grid: [u64; 3],
        /// The product of the grid, `None` when it overflows 64 bits.
        work_items: Option<u64>,
        /// The backend's limit ([`crate::Backend::max_work_items`]).
        limit: u64,
        /// The dispatch.
        location: Location,
    },
    /// An error without a location of its own (from the backend, or an allocation), with the
    /// location of the op that caused it. See [`RuntimeError::at`].
    #[error("{error}")]
    Located {
        /// The error.
        error: Box<RuntimeError>,
        /// The op that caused it.
        location: Location,
    },
    /// A handle of a freed object, or of another backend: refused, never taken for another.
    #[error("{what} handle #{index} (generation {generation}) is stale: it was freed, or belongs to another backend")]
    StaleHandle {
        /// What the handle names (`device buffer`, `kernel`, `read`, ...).
        what: &'static str,
        /// Its slot.
        index: u64,
        /// Its generation.
        generation: u32,
    },
    /// A kernel that the lowering to the device's code rejects: an op with no lowering, a
    /// feature the device lacks (the message names it), a limit of the device exceeded.
    #[error("cannot lower the kernels to SPIR-V for this device: {message}")]
    KernelLowering {
        /// The lowering's diagnostic.
        message: String,
        /// Where it points.
        location: Location,
    },
    /// A buffer larger than the device allows.
    #[error("a device buffer of {bytes} bytes is larger than the device allows: {limit_name} is {limit} bytes")]
    BufferTooLarge {
        /// The size asked for.
        bytes: u64,
        /// The limit.
        limit: u64,
        /// The limit's name (`maxStorageBufferRange`, `maxMemoryAllocationSize`, ...).
        limit_name: &'static str,
    },
    /// The device was lost (a driver reset, a hung kernel): nothing on it can be trusted.
    #[error("the device was lost: {message}")]
    DeviceLost {
        /// What the driver said.
        message: String,
    },
    /// Two work items of one dispatch touching one element, at least one storing, with nothing
    /// ordering them (found by the CPU backend's race check,
    /// [`crate::CpuBackend::set_check_races`]).
    #[error("{}", race_message(.0))]
    DataRace(Box<DataRace>),
    /// Anything else a backend reports.
    #[error("{0}")]
    Backend(String),
}

fn grid_message(kernel: &str, grid: &[u64; 3], work_items: Option<u64>, limit: u64) -> String {
    let [x, y, z] = grid;
    match work_items {
        Some(items) => format!(
            "the dispatch of '@{kernel}' over a grid of {x} x {y} x {z} has {items} work items, more than the backend's limit of {limit}"
        ),
        None => format!(
            "the dispatch of '@{kernel}' over a grid of {x} x {y} x {z} has more work items than 64 bits count (the backend's limit is {limit})"
        ),
    }
}

/// What [`RuntimeError::DataRace`] reports.
#[derive(Clone, Debug, PartialEq)]
pub struct DataRace {
    /// The kernel.
    pub kernel: String,
    /// The buffer: `%name` of a kernel argument, or a workgroup-local buffer.
    pub buffer: String,
    /// The element's indices.
    pub element: Vec<u64>,
    /// The global id of the work item that touched it first.
    pub first: [u64; 3],
    /// Whether that access is a store (else a load).
    pub first_stores: bool,
    /// Where that access is.
    pub first_location: Location,
    /// The global id of the work item whose access conflicts with it.
    pub second: [u64; 3],
    /// Whether that access is a store.
    pub second_stores: bool,
    /// Where that access is.
    pub location: Location,
}

fn race_message(race: &DataRace) -> String {
    let DataRace { kernel, buffer, element, .. } = race;
    let first = (&race.first, race.first_stores);
    let second = (&race.second, race.second_stores);
    let item = |id: &[u64; 3]| format!("({}, {}, {})", id[0], id[1], id[2]);
    let element = format!("{buffer}[{}]", element.iter().map(u64::to_string).collect::<Vec<_>>().join(", "));
    let what = match (first.1, second.1) {
        (true, true) => format!("work items {} and {} both store to {element}", item(first.0), item(second.0)),
        (true, false) => {
            format!("work item {} loads {element}, which work item {} stores to", item(second.0), item(first.0))
        }
        _ => format!("work item {} stores to {element}, which work item {} loads", item(second.0), item(first.0)),
    };
    format!("data race in kernel '@{kernel}': {what}, with nothing ordering them")
}

fn join(values: &[i64]) -> String {
    values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

fn join_usize(values: &[usize]) -> String {
    values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

impl RuntimeError {
    /// Where in the program the error happened, when known.
    pub fn location(&self) -> Location {
        match self {
            RuntimeError::DeviceOutOfBounds { location, .. }
            | RuntimeError::HostOutOfBounds { location, .. }
            | RuntimeError::RangeOutOfBounds { location, .. }
            | RuntimeError::MissingSymbol { location, .. }
            | RuntimeError::UnknownHostFunction { location, .. }
            | RuntimeError::HostFunctionFailed { location, .. }
            | RuntimeError::Arithmetic { location, .. }
            | RuntimeError::Unsupported { location, .. }
            | RuntimeError::UseAfterFree { location, .. }
            | RuntimeError::HostAllocation { location, .. }
            | RuntimeError::HostMemory { location, .. }
            | RuntimeError::RecursionLimit { location, .. }
            | RuntimeError::GridTooLarge { location, .. }
            | RuntimeError::KernelLowering { location, .. }
            | RuntimeError::Located { location, .. } => *location,
            RuntimeError::DataRace(race) => race.location,
            _ => Location::UNKNOWN,
        }
    }

    /// The error with `location` attached when it has none of its own (a backend's error, an
    /// allocation that failed): the op that caused it.
    pub fn at(self, location: Location) -> RuntimeError {
        if self.location() != Location::UNKNOWN || location == Location::UNKNOWN {
            return self;
        }
        RuntimeError::Located { error: Box::new(self), location }
    }

    /// The error itself, without the location [`RuntimeError::at`] attached.
    pub fn unlocated(&self) -> &RuntimeError {
        match self {
            RuntimeError::Located { error, .. } => error,
            other => other,
        }
    }

    /// As a diagnostic (with `file:line:col` when the location is known).
    pub fn to_diagnostic(&self) -> hat_ir::Diagnostic {
        let diagnostic = hat_ir::Diagnostic::error(self.location(), self.to_string());
        match self.unlocated() {
            RuntimeError::DataRace(race) => {
                let what = if race.first_stores { "stores" } else { "loads" };
                let [x, y, z] = race.first;
                diagnostic.with_note(race.first_location, format!("work item ({x}, {y}, {z}) {what} here"))
            }
            _ => diagnostic,
        }
    }
}
