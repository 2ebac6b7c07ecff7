//! What the lowering hands the runtime: a [`SpirvModule`] (the words, validated) and, for each
//! entry point, an [`EntryPoint`] saying how to bind it: which descriptor binding each buffer
//! parameter takes, where each scalar parameter and each dynamic size goes in the push
//! constants, and the workgroup size.
//!
//! Invariants (the runtime may rely on them):
//! - Buffer parameters take bindings 0, 1, 2, ... of descriptor set 0 in parameter order
//!   (`binding` is the parameter's position among the buffer parameters); each binding is a
//!   storage buffer whose bytes are the host layout of the buffer ([`StoredElement::bytes`] per
//!   element, row-major, no padding).
//! - The push constants start with the grid: three 32-bit unsigned sizes (x, y, z) at
//!   [`PushConstantLayout::grid_offset`]. Scalars and dynamic sizes follow, each aligned to its
//!   own size (std430), in parameter order; [`PushConstantLayout::size`] is a multiple of 4.
//! - The runtime dispatches `ceil(grid / workgroup_size)` workgroups per dimension.
//! - An entry point whose [`EntryPoint::whole_grid_constant`] is `Some(id)` checks its work
//!   items against the grid with the boolean specialisation constant `id` (default `false`)
//!   or'ed in: a pipeline specialised with it `true` runs no such check, and is correct only
//!   for a dispatch whose grid is, in every dimension, a multiple of the workgroup size times
//!   the work items per invocation in that dimension (then every work item dispatched is in
//!   the grid). Specialised `false` (or not at all), the entry point is correct for any grid.

use hat_ir::Location;

/// The `SpecId` of the boolean specialisation constant "the grid is a whole number of
/// workgroups" ([`EntryPoint::whole_grid_constant`]). On a dependent chain of one-workgroup
/// dispatches, the kernel's own latency is on the critical path: on the H100 the check
/// against the grid (three push constants, three comparisons) cost about 0.3 us of the 2.4 us
/// per dispatch (docs/benchmarks.md, "The chain: host or device?").
pub const WHOLE_GRID_SPEC_ID: u32 = 0;

/// A validated SPIR-V module: one entry point per kernel of the input module.
#[derive(Clone, Debug, PartialEq)]
pub struct SpirvModule {
    /// The module's words (SPIR-V binary, host endianness).
    pub words: Vec<u32>,
    /// The entry points, in the order of the kernels in the input.
    pub entry_points: Vec<EntryPoint>,
}

impl SpirvModule {
    /// The module as bytes (little-endian words), as a `.spv` file holds it.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|word| word.to_le_bytes()).collect()
    }

    /// The entry point of kernel `name` (its symbol, without `@`).
    pub fn entry_point(&self, name: &str) -> Option<&EntryPoint> {
        self.entry_points.iter().find(|entry| entry.name == name)
    }
}

/// One kernel's entry point and how to call it.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryPoint {
    /// The entry point's name in the module: the kernel's symbol.
    pub name: String,
    /// Where the kernel is defined.
    pub location: Location,
    /// Work items per workgroup (the `LocalSize` execution mode).
    pub workgroup_size: [u32; 3],
    /// One binding per buffer parameter, in parameter order.
    pub bindings: Vec<BufferBinding>,
    /// Where scalars and sizes go in the push constants.
    pub push_constants: PushConstantLayout,
    /// Whether the kernel reaches a workgroup barrier (then work items past the grid run
    /// too, without accesses to buffers: see the crate docs).
    pub has_barrier: bool,
    /// Bytes of workgroup memory the kernel allocates.
    pub workgroup_memory_bytes: u32,
    /// Work items each invocation runs in x: 1, or 4 for a wide kernel (`wide.rs`): the
    /// runtime dispatches `ceil(ceil(grid.x / items_per_invocation) / workgroup_size.x)`
    /// workgroups in x (the grid in the push constants stays the program's).
    pub items_per_invocation: u32,
    /// Work items each invocation runs in y: 1, or `LoweringOptions::coarsen_rows` for a
    /// coarsened kernel (`coarsen.rs`): the runtime dispatches
    /// `ceil(ceil(grid.y / rows_per_invocation) / workgroup_size.y)` workgroups in y (the grid
    /// in the push constants stays the program's).
    pub rows_per_invocation: u32,
    /// The `SpecId` ([`WHOLE_GRID_SPEC_ID`]) of the constant that turns the entry point's
    /// check against the grid off, where it has one (see the module documentation); `None`
    /// for a kernel that checks nothing against the grid this way (a wide kernel: its fast
    /// path also checks the buffers' sizes).
    pub whole_grid_constant: Option<u32>,
}

/// The binding of one buffer parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferBinding {
    /// The parameter's position among all the kernel's parameters.
    pub parameter: usize,
    /// The descriptor set (always 0).
    pub set: u32,
    /// The binding in the set: the parameter's position among the buffer parameters.
    pub binding: u32,
    /// How an element is stored.
    pub element: StoredElement,
    /// The shape, outermost first; `None` for a dynamic size (which comes in the push
    /// constants, [`PushConstantLayout::dims`]).
    pub shape: Vec<Option<u64>>,
    /// What the kernel may do to the buffer.
    pub access: Access,
}

/// What a kernel may do to a buffer: a conservative answer (`read` is false only when no path
/// of the kernel reads the buffer, and likewise for `write`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// The kernel may read the buffer (loads, atomics).
    pub read: bool,
    /// The kernel may write the buffer (stores, atomics).
    pub write: bool,
}

/// How a buffer element is stored on the device: exactly as on the host.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum StoredElement {
    /// `i1`: one byte, 0 or 1.
    I1,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `index`: 8 bytes, a signed 64-bit integer (with a 32-bit device `index`, kernels read
    /// the low word and write both words, sign-extended).
    Index,
    /// `f16`.
    F16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl StoredElement {
    /// Bytes per element.
    pub fn bytes(self) -> u32 {
        match self {
            StoredElement::I1 | StoredElement::I8 => 1,
            StoredElement::I16 | StoredElement::F16 => 2,
            StoredElement::I32 | StoredElement::F32 => 4,
            StoredElement::I64 | StoredElement::Index | StoredElement::F64 => 8,
        }
    }
}

/// Where each value goes in a kernel's push constants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushConstantLayout {
    /// Total bytes (a multiple of 4).
    pub size: u32,
    /// The offset of the grid: three `u32`, x, y, z.
    pub grid_offset: u32,
    /// The scalar parameters, in parameter order.
    pub scalars: Vec<ScalarSlot>,
    /// The dynamic sizes of buffer parameters, in parameter then dimension order.
    pub dims: Vec<DimSlot>,
}

/// Where a scalar parameter goes in the push constants.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ScalarSlot {
    /// The parameter's position among all the kernel's parameters.
    pub parameter: usize,
    /// Its byte offset.
    pub offset: u32,
    /// How the value is written there.
    pub encoding: ScalarEncoding,
}

/// How a scalar is written into the push constants.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ScalarEncoding {
    /// 4 bytes: an `i1` as 0 or 1.
    Bool32,
    /// 4 bytes: an `i8`, `i16` or `i32` sign-extended to 32 bits, or an `index` of a 32-bit
    /// device `index`, which must fit in a signed 32-bit integer.
    Int32,
    /// 8 bytes: an `i64`, or an `index` of a 64-bit device `index`.
    Int64,
    /// 4 bytes: an `f32`, or an `f16` widened to `f32`.
    Float32,
    /// 8 bytes: an `f64`.
    Float64,
}

impl ScalarEncoding {
    /// Bytes written.
    pub fn bytes(self) -> u32 {
        match self {
            ScalarEncoding::Int64 | ScalarEncoding::Float64 => 8,
            _ => 4,
        }
    }
}

/// Where a dynamic size of a buffer parameter goes in the push constants.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DimSlot {
    /// The buffer parameter's position among all the kernel's parameters.
    pub parameter: usize,
    /// The dimension (0 is the outermost).
    pub dimension: usize,
    /// Its byte offset.
    pub offset: u32,
    /// [`ScalarEncoding::Int32`] or [`ScalarEncoding::Int64`], as the device `index`.
    pub encoding: ScalarEncoding,
}
