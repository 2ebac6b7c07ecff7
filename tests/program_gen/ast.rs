//! The programs the generator makes, as data: a compute program over `i32` buffers, with its
//! kernels, host functions and compute helpers. [`render`](super::render) writes one as hat text;
//! [`check`](super::check) says whether one is well formed (the shrinker's edits may not be).
//!
//! Names are numbers, unique in the whole program: buffer `Born(3)` is `%n3` wherever it is in
//! scope, so an edit that deletes a statement never renames anything.

/// The shape of a buffer of `i32`: `[n]` or `[rows, cols]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape(pub Vec<u64>);

impl Shape {
    /// How many elements.
    pub fn elements(&self) -> u64 {
        self.0.iter().product()
    }

    /// `memref<16xi32>`, `memref<4x8xi32>`.
    pub fn memref(&self) -> String {
        let dims: Vec<String> = self.0.iter().map(u64::to_string).collect();
        format!("memref<{}xi32>", dims.join("x"))
    }

    /// `16`, `4x8`: a name fragment.
    pub fn tag(&self) -> String {
        let dims: Vec<String> = self.0.iter().map(u64::to_string).collect();
        dims.join("x")
    }

    /// 1 or 2.
    pub fn rank(&self) -> usize {
        self.0.len()
    }
}

/// A buffer-valued SSA name of compute code.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufVar {
    /// `%b{k}`: the entry's buffer argument `k`.
    Entry(u32),
    /// `%n{id}`: a buffer born in the program (`buffer.alloc`).
    Born(u32),
    /// `%s{id}`: an `arith.select` between two buffers.
    Select(u32),
    /// `%p{id}`: a buffer parameter of a compute helper.
    Param(u32),
    /// `%x{id}`: a loop-carried buffer (`scf.for ... iter_args`, or a value `scf.while`
    /// carries: `%xb{id}` in its "before" region, `%x{id}` in its body).
    Carried(u32),
    /// `%r{id}`: a buffer result of `scf.for`, `scf.while` or `scf.if` (written `%r{first}#j`
    /// when the op has several).
    Result(u32),
}

/// An `index`-valued SSA name of compute code.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexVar {
    /// `%t{k}`: the entry's trip-count argument `k`.
    Trip(u32),
    /// `%f{k}`: the entry's flag argument `k` (0 or 1).
    Flag(u32),
    /// `%i{id}`: a `scf.for` induction variable.
    Loop(u32),
    /// `%w{id}`: the iteration counter of a `scf.while`.
    While(u32),
    /// `%z{h}`: the index parameter of compute helper `h`.
    Scalar(u32),
    /// `%l{id}`: an `i32` the host loaded, cast to `index` (any value, negative included: only
    /// for element indices, taken modulo the dimension, and values).
    Loaded(u32),
}

/// An `index` value: a constant or a name.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IndexValue {
    /// A constant.
    Const(u64),
    /// A name in scope.
    Var(IndexVar),
}

/// An element of a buffer, as host code names it. A `Var` index is taken modulo the dimension,
/// so it is always in bounds; a `Const` index must be below it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The buffer.
    pub buffer: BufVar,
    /// One index per dimension.
    pub index: Vec<IndexValue>,
}

/// A host-side condition (`i1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cond {
    /// `v != 0`.
    NonZero(IndexVar),
    /// `v % 2 == 1`.
    Odd(IndexVar),
    /// `v % 2 == 0`.
    Even(IndexVar),
    /// The host reads an element: `b[i] > threshold`.
    Probe(Access, i32),
}

/// An `i32` the host stores.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A constant.
    Const(i32),
    /// An index name, cast to `i32`.
    Var(IndexVar),
    /// The entry's `%seed` (only in `@main`).
    Seed,
}

/// Where a value the host loaded goes (so that it is observed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sink {
    /// To the recording host function `@observe`.
    Observe,
    /// Into an element (perhaps of another buffer).
    Store(Access),
}

/// The `i32` scalar argument of a dispatch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScalarArg {
    /// A constant.
    Const(i32),
    /// The entry's `%seed` (only in `@main`).
    Seed,
    /// An index name, cast.
    Var(IndexVar),
    /// A value the host loads just before the dispatch.
    Load(Access),
}

/// One grid dimension of a dispatch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GridSize {
    /// A constant.
    Const(u64),
    /// `v + c`: known only at run time.
    VarPlus(IndexVar, u64),
}

/// `compute.dispatch @k{kernel}[grid](buffers, scalar)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// Index into [`Program::kernels`].
    pub kernel: usize,
    /// One size per kernel dimension.
    pub grid: Vec<GridSize>,
    /// One buffer per kernel parameter.
    pub buffers: Vec<BufVar>,
    /// The kernel's `i32` parameter.
    pub scalar: ScalarArg,
}

/// How a born buffer gets its first contents, before anything reads it (so that every run
/// observes defined values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Init {
    /// A dispatch of a kernel that writes every element (see [`Kernel::writes_everything`]).
    Dispatch(Dispatch),
    /// A host-side `buffer.copy` from a buffer of the same shape.
    CopyFrom(BufVar),
    /// A dispatch of a kernel that reads its first argument (any buffer of that shape) and
    /// writes every element of the second, the born buffer (see [`Kernel::derives_everything`]).
    Derive(Dispatch),
}

/// `scf.for`, perhaps carrying buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct For {
    /// The induction variable, `%i{iv}` (an `index`; with `i32`, the cast of `%j{iv}: i32`).
    pub iv: u32,
    /// Whether the bounds, the step and the induction variable are `i32`.
    pub i32: bool,
    /// The lower bound (perhaps negative: then the variable is not a count, see
    /// [`Scope::counts`](super::check::Scope::counts)).
    pub lower: i64,
    /// The upper bound.
    pub upper: IndexValue,
    /// The step (positive).
    pub step: u64,
    /// Loop-carried buffers: `iter_args(%x{a} = first, %x{b} = second, ...)`, yielded rotated.
    pub carried: Option<Carried>,
    /// The body.
    pub body: Vec<Stmt>,
}

/// Buffers carried through a loop, of one shape: the body names `%x{vars[j]}`. Without `next`,
/// two to four distinct buffers rotated by one each iteration: the body yields `vars[1],
/// vars[2], ..., vars[0]` (two: swapped). With `next`, the body yields those names: a carried
/// name, a name in scope outside the loop, or a buffer born at the top level of the body (a
/// fresh buffer each iteration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carried {
    /// The initial values.
    pub init: Vec<BufVar>,
    /// The ids of the carried names `%x{id}`, one per initial value.
    pub vars: Vec<u32>,
    /// What the body yields, one per carried name; empty: the rotation.
    pub next: Vec<BufVar>,
    /// The ids of the loop's results `%r{id}`, in scope after it; empty: unused.
    pub results: Vec<u32>,
}

impl Carried {
    /// What the body yields for carried name `j`.
    pub fn yielded(&self, j: usize) -> BufVar {
        match self.next.get(j) {
            Some(&next) => next,
            None => BufVar::Carried(self.vars[(j + 1) % self.vars.len()]),
        }
    }
}

/// One buffer result of `scf.if`: `%r{result}`, the value each branch yields (a name in scope
/// before the `scf.if`, or a buffer born at the top level of the branch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Yield {
    /// The id of `%r{result}`.
    pub result: u32,
    /// What the then branch yields.
    pub then_value: BufVar,
    /// What the else branch yields.
    pub else_value: BufVar,
}

/// A host loop over a fixed range of a buffer: `scf.for %h{iv} = lower to upper` over the last
/// index (the others fixed), summing the elements (to `@observe`) or storing to them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRange {
    /// The id of `%h{iv}`.
    pub iv: u32,
    /// The buffer.
    pub buffer: BufVar,
    /// The indices before the last (a 2-D buffer's row).
    pub fixed: Vec<u64>,
    /// The first element of the range.
    pub lower: u64,
    /// Past its last.
    pub upper: u64,
    /// `None`: reads; `Some(c)`: stores `c + h` to each.
    pub store: Option<i32>,
    /// `None`: the last index is `%h{iv}`; `Some(s)`: it is `(h * s) mod the last dimension`, an
    /// index no analysis bounds to fewer than the whole row (so a store there is one at a
    /// run-time index).
    pub stride: Option<u64>,
}

/// `scf.while` whose condition the host reads from a buffer (a value a kernel in the body
/// writes), bounded so that it ends: `while counter < bound && probe { body }`; perhaps with
/// work before the probe (a do-while) and buffers carried from one iteration to the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct While {
    /// The counter, `%w{counter}` in the body.
    pub counter: u32,
    /// The most iterations.
    pub bound: u64,
    /// The element read before each iteration, and the threshold it must exceed.
    pub probe: Access,
    /// The threshold.
    pub threshold: i32,
    /// The statements of the "before" region ahead of the probe (a do-while's work); they do
    /// not see the counter.
    pub before: Vec<Stmt>,
    /// Buffers carried: the probe, `before` and `body` see `%x{id}` (`%xb{id}` before).
    pub carried: Option<Carried>,
    /// The body.
    pub body: Vec<Stmt>,
}

/// A statement of compute code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stmt {
    /// A kernel dispatch.
    Dispatch(Dispatch),
    /// A counted loop.
    For(For),
    /// A data-dependent loop.
    While(While),
    /// `scf.if`, perhaps yielding buffers.
    If {
        /// The condition.
        cond: Cond,
        /// The buffer results (perhaps none).
        yields: Vec<Yield>,
        /// The then branch.
        then_body: Vec<Stmt>,
        /// The else branch (perhaps empty).
        else_body: Vec<Stmt>,
    },
    /// A host read of an element.
    Load {
        /// What is read.
        from: Access,
        /// Where the value goes.
        to: Sink,
    },
    /// A host write of an element.
    Store {
        /// The value.
        value: Value,
        /// The element.
        to: Access,
    },
    /// `buffer.copy from, to`.
    Copy {
        /// The source.
        from: BufVar,
        /// The destination (same shape).
        to: BufVar,
    },
    /// A call of host function `@h{func}`, whose `i32` result (if any) goes to `@observe`.
    CallHost {
        /// Index into [`Program::host_funcs`].
        func: usize,
        /// One buffer per buffer parameter.
        buffers: Vec<BufVar>,
        /// The index argument.
        scalar: IndexValue,
    },
    /// A call of compute helper `@f{helper}`.
    CallHelper {
        /// Index into [`Program::helpers`].
        helper: usize,
        /// One buffer per buffer parameter (pairwise distinct buffers, unless the helper is
        /// [`Helper::aliasing`]).
        buffers: Vec<BufVar>,
        /// The index argument.
        scalar: IndexValue,
    },
    /// In helper `h`, a call of `@f{h}` itself one level down: `if %z{h} > 0 { @f{h}(buffers,
    /// %z{h} - 1) }` (so the helper is recursive and `inline` keeps it).
    CallSelf {
        /// One buffer per buffer parameter (as for [`Stmt::CallHelper`]).
        buffers: Vec<BufVar>,
    },
    /// `%l{var}`: the host loads an element and casts it to `index`.
    LoadIndex {
        /// The id of `%l{var}`.
        var: u32,
        /// The element.
        from: Access,
    },
    /// A host loop over a range of a buffer.
    HostRange(HostRange),
    /// `%n{var} = buffer.alloc()`, then its initialisation; `buffer.dealloc` at the end of
    /// the enclosing block when `dealloc`.
    Alloc {
        /// The id of `%n{var}`.
        var: u32,
        /// Its shape.
        shape: Shape,
        /// Its first contents.
        init: Init,
        /// Whether the block frees it at its end.
        dealloc: bool,
    },
    /// `%s{var} = arith.select cond, if_true, if_false`.
    Select {
        /// The id of `%s{var}`.
        var: u32,
        /// The condition.
        cond: Cond,
        /// Chosen when true.
        if_true: BufVar,
        /// Chosen when false.
        if_false: BufVar,
    },
}

/// What a kernel does with one buffer parameter. Every access of a work item goes to the same
/// element `e` (a one-to-one function of its id), except `ReadShifted` (which the generator
/// uses only on a buffer that nothing in the dispatch writes) and `Atomic`: so kernels are
/// race free even when arguments alias.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Not accessed.
    Unused,
    /// Reads `e`.
    Read,
    /// Reads `(e + k) % n`: another work item's element.
    ReadShifted(u64),
    /// Writes `acc + c` to `e`.
    Write(i32),
    /// Writes `acc + c` to `e` through a local alias `arith.select %in, %q, %q`.
    WriteAliased(i32),
    /// Writes `acc + c` to `e` of `select(L even, this, other)` (same shape).
    WriteEither {
        /// The other parameter.
        other: usize,
        /// The constant.
        add: i32,
    },
    /// Reads `e`, writes `acc + c` to it.
    ReadWrite(i32),
    /// `kernel.atomic_rmw kind q[element], acc` (element in flat row-major order).
    Atomic {
        /// `add`, `max` or `min`.
        kind: &'static str,
        /// The flat element.
        element: u64,
    },
}

/// The condition a work item must meet to do anything (besides its bounds checks).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Guard {
    /// None.
    None,
    /// `L < k`.
    Below(u64),
    /// `L < dim(param, 0) / 2`.
    HalfOf(usize),
    /// `L % 2 == 0`.
    Even,
    /// The value the work item reads from a `Read` parameter is positive (data dependent).
    Positive(usize),
}

/// A parameter of a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelParam {
    /// Its shape.
    pub shape: Shape,
    /// What the kernel does with it.
    pub role: Role,
}

/// A kernel `@k{index}(buffers..., %sc: i32)`.
///
/// One-dimensional kernels give work item `id` the element `e = id * stride + offset` of every
/// parameter (flat, row-major, for a 2-D one); two-dimensional kernels give `(x, y)` the
/// element `[y, x]` of a 2-D parameter and `y * global_size_x + x` of a 1-D one. `L`, the
/// position the guards test, is `e` in 1-D and `x` in 2-D.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The buffer parameters.
    pub params: Vec<KernelParam>,
    /// 1 or 2.
    pub dims: usize,
    /// The workgroup size (x, y).
    pub workgroup: [u64; 2],
    /// 1-D: `e = id * stride + offset`.
    pub stride: u64,
    /// 1-D: see `stride`.
    pub offset: u64,
    /// Whether work items past the grid (in the last, partial workgroup) stop: `id < global_size`.
    pub grid_guard: bool,
    /// The work item's condition.
    pub guard: Guard,
    /// Whether the result is combined through `kernel.helper @mix`.
    pub mix_helper: bool,
    /// Whether stores go through `kernel.helper @put_<shape>`.
    pub store_helper: bool,
    /// Whether `buffer.dim` gives the bounds (otherwise constants).
    pub dims_from_buffer: bool,
}

impl Kernel {
    /// Whether a 1-D dispatch of this kernel over `grid` work items writes every element of
    /// its only parameter: the form born buffers are initialised with.
    pub fn writes_everything(&self, grid: &[GridSize]) -> bool {
        let [param] = &self.params[..] else { return false };
        matches!(param.role, Role::Write(_))
            && self.dims == 1
            && self.stride == 1
            && self.offset == 0
            && self.guard == Guard::None
            && matches!(grid, [GridSize::Const(g)] if *g >= param.shape.elements())
    }
}

impl Kernel {
    /// Whether a 1-D dispatch of this kernel over `grid` work items reads its first parameter
    /// and writes every element of its second: the form a born buffer is derived with.
    pub fn derives_everything(&self, grid: &[GridSize]) -> bool {
        let [from, to] = &self.params[..] else { return false };
        matches!(from.role, Role::Read)
            && matches!(to.role, Role::Write(_))
            && self.dims == 1
            && self.stride == 1
            && self.offset == 0
            && self.guard == Guard::None
            && matches!(grid, [GridSize::Const(g)] if *g >= to.shape.elements() && *g >= from.shape.elements())
    }
}

/// The effect a host function declares on a buffer parameter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// `read`.
    Read,
    /// `write`: does not read, may overwrite some elements.
    Write,
    /// `readwrite`.
    ReadWrite,
    /// No keyword: counts as read and written.
    Undeclared,
}

/// A host function `@h{index}(buffers..., index) (-> i32)?`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostFunc {
    /// The buffer parameters.
    pub params: Vec<(Shape, Effect)>,
    /// Whether it returns an `i32`.
    pub returns: bool,
}

/// A compute helper `@f{index}(%p..., %z{index}: index)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Helper {
    /// The buffer parameters: `%p{id}` and shape.
    pub params: Vec<(u32, Shape)>,
    /// Whether callers may pass one buffer for several parameters (so inside, parameters of
    /// one shape may alias).
    pub aliasing: bool,
    /// The body.
    pub body: Vec<Stmt>,
}

/// A whole program: `@main(%b..., %t..., %f..., %seed: i32) -> (i32...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// The entry's buffer arguments.
    pub buffers: Vec<Shape>,
    /// How many trip-count arguments.
    pub trips: u32,
    /// How many flag arguments.
    pub flags: u32,
    /// The kernels (some perhaps unused: only used ones are printed).
    pub kernels: Vec<Kernel>,
    /// The host functions.
    pub host_funcs: Vec<HostFunc>,
    /// The compute helpers; helper `h` calls only helpers below `h`.
    pub helpers: Vec<Helper>,
    /// `@main`'s body.
    pub body: Vec<Stmt>,
    /// Elements `@main` reads at its end and returns.
    pub results: Vec<Access>,
}

/// The arguments of one run of `@main`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// The contents of each buffer argument.
    pub buffers: Vec<Vec<i32>>,
    /// Each trip count.
    pub trips: Vec<u64>,
    /// Each flag (0 or 1).
    pub flags: Vec<u64>,
    /// `%seed`.
    pub seed: i32,
}

/// A program and the arguments to run it with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The program.
    pub program: Program,
    /// Its arguments.
    pub args: Args,
}
