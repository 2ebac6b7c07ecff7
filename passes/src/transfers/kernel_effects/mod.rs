//! The kernel-effects analysis: for each kernel and each of its buffer parameters, whether a
//! dispatch reads it, writes it, both or neither — through `kernel.call`s of helpers and local
//! aliases — which elements it may read and write, and whether it provably writes every element
//! (only then may a transfer plan skip the copy in of a buffer the kernel writes).
//!
//! How it works, file by file:
//! - `values`: a sparse dataflow analysis (`hat_ir`'s framework) gives each buffer value the
//!   parameters it may be (aliases through `arith.select`, region results, loop-carried values,
//!   calls) and each integer an index expression (`affine`) in the work-item ids, the grid, the
//!   buffers' dimensions, scalar parameters and loop variables;
//! - `summary`: each device function's accesses (from the memory-effects interface), with the
//!   guards and counted loops around them, helpers first and mapped through each call;
//! - `dispatch`: a dispatch's grid, shapes and scalars turn the expressions into numbers;
//!   `interval` bounds them and `guard` narrows the bounds by the conditions; `narrow` writes
//!   the wraps of integers narrower than 64 bits into the expressions, and `reduce` makes the
//!   divisions and remainders that bounds keep in one period linear (those wraps where values
//!   stay in range, `local_id` and `group_id` of an id split by workgroup);
//! - `ranges` and `coverage`: the answers, [`print`]: the `print-kernel-effects` pass;
//! - [`races`]: pairs of work items of one dispatch that touch one element, one of them writing
//!   (the `race-lint` pass reports them).
//!
//! Every answer errs on the safe side: an access the analysis cannot follow reads and writes
//! anything of every buffer it may reach; element ranges over-approximate ([`None`] when
//! unknown); a full write is claimed only when proved. Workgroup memory is never a parameter.
//! The work items of a dispatch that touch buffers are exactly those whose ids are below the
//! grid (docs/lowering.md, "Which work items exist": those of the last, partial workgroup past
//! the grid do nothing observable), so an unguarded access is bounded by the grid, and a full
//! write must be made by the work items below it.

mod affine;
mod barriers;
mod coverage;
mod dispatch;
mod guard;
mod in_place;
mod interval;
mod narrow;
pub mod print;
pub mod races;
mod ranges;
mod reduce;
mod summary;
#[cfg(test)]
mod tests;
mod values;

pub use dispatch::Dispatch;

use dispatch::Query;
use hat_ir::pass::{Analysis, AnalysisManager};
use hat_ir::types::DYNAMIC;
use hat_ir::{Context, Op, TypeKind};
use rustc_hash::FxHashMap;
use std::ops::Range;
use std::sync::Mutex;
use summary::{Access, LocalAccess, Summarizer, Target};

/// What a dispatch of one kernel does to one of its parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamEffects {
    /// Whether the parameter is a buffer.
    pub is_buffer: bool,
    /// Whether some work item may read it.
    pub reads: bool,
    /// Whether some work item may write it.
    pub writes: bool,
    /// Whether some access is atomic.
    pub atomic: bool,
}

impl ParamEffects {
    /// `none`, `read`, `write` or `readwrite`.
    pub fn access_name(&self) -> &'static str {
        match (self.reads, self.writes) {
            (false, false) => "none",
            (true, false) => "read",
            (false, true) => "write",
            (true, true) => "readwrite",
        }
    }
}

/// The effects of one kernel on its parameters. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelEffects {
    /// One entry per parameter, in order.
    pub params: Vec<ParamEffects>,
    /// Every access to a parameter's buffer, helpers' included.
    accesses: Vec<Access>,
    /// Every access to workgroup memory the kernel allocates (for the race lint).
    locals: Vec<LocalAccess>,
    /// Whether the kernel (or what it calls) holds a workgroup barrier.
    barrier: bool,
    /// The kernel's workgroup size, when known.
    workgroup: Option<[u64; 3]>,
    /// Per parameter: the static shape of its type (buffers only; dynamic sizes `None`).
    static_shapes: Vec<Option<Vec<Option<u64>>>>,
    /// Answers already given.
    answers: Answers,
}

/// A question about one parameter under one dispatch.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Question {
    WritesEveryElement,
    ReadElements,
    WrittenElements,
}

#[derive(Clone, Debug)]
enum Answer {
    Every(bool),
    Elements(Option<Range<u64>>),
}

/// Answers by question: a transfer plan asks about the same kernel, grid and shapes again and
/// again (a dispatch in a loop, one grid for many dispatches). A cache, not a fact: it takes no
/// part in comparisons. Behind a lock: the analysis is shared by the threads that plan a
/// function's buffers.
#[derive(Debug, Default)]
struct Answers(Mutex<FxHashMap<(usize, Question, Dispatch), Answer>>);

impl Clone for Answers {
    fn clone(&self) -> Self {
        Answers(Mutex::new(self.lock().clone()))
    }
}

impl PartialEq for Answers {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Answers {}

/// The most answers kept; past that the cache starts over.
const MAX_ANSWERS: usize = 4096;

impl Answers {
    /// The map (a panic on another thread while it held the lock leaves a cache that is still
    /// right: each entry is inserted whole).
    fn lock(&self) -> std::sync::MutexGuard<'_, FxHashMap<(usize, Question, Dispatch), Answer>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get_or(&self, key: (usize, Question, &Dispatch), compute: impl FnOnce() -> Answer) -> Answer {
        let (param, question, dispatch) = key;
        let key = (param, question, dispatch.clone());
        if let Some(answer) = self.lock().get(&key) {
            return answer.clone();
        }
        let answer = compute();
        let mut answers = self.lock();
        if answers.len() >= MAX_ANSWERS {
            answers.clear();
        }
        answers.insert(key, answer.clone());
        answer
    }
}

impl KernelEffects {
    /// The effects of `kernel` (a callable with a body that runs on the device).
    pub fn of(ctx: &Context, kernel: Op) -> KernelEffects {
        let Some(parameters) = summary::parameters(ctx, kernel) else { return KernelEffects::default() };
        let static_shapes: Vec<Option<Vec<Option<u64>>>> = parameters
            .iter()
            .map(|&p| match ctx.type_kind(ctx.value_type(p)) {
                TypeKind::MemRef { shape, .. } => {
                    Some(shape.iter().map(|&s| (s != DYNAMIC).then(|| u64::try_from(s).ok()).flatten()).collect())
                }
                _ => None,
            })
            .collect();
        let mut params: Vec<ParamEffects> =
            static_shapes.iter().map(|s| ParamEffects { is_buffer: s.is_some(), ..ParamEffects::default() }).collect();
        let summary = Summarizer::default().summary(ctx, kernel);
        for access in &summary.accesses {
            for (index, effects) in params.iter_mut().enumerate() {
                let reaches = match access.target {
                    Target::Param(p) => p == index,
                    Target::Any => true,
                };
                if effects.is_buffer && reaches {
                    effects.reads |= access.read;
                    effects.writes |= access.write;
                    effects.atomic |= access.atomic;
                }
            }
        }
        // The attribute is read wherever a kernel op has it; without it the size is unknown (the
        // runtime's default is the runtime's business), which only makes ranges wider.
        let workgroup = hat_dialects::kernel::workgroup_size(ctx, kernel)
            .and_then(|sizes| {
                sizes.map(|s| u64::try_from(s).ok().filter(|&s| s > 0)).into_iter().collect::<Option<Vec<_>>>()
            })
            .and_then(|sizes| <[u64; 3]>::try_from(sizes).ok());
        KernelEffects {
            params,
            accesses: summary.accesses.clone(),
            locals: summary.locals.clone(),
            barrier: barriers::has_barrier(ctx, kernel),
            workgroup,
            static_shapes,
            answers: Answers::default(),
        }
    }

    /// Whether a dispatch over `grid` (work items per dimension, `None` where not a constant)
    /// writes every element of parameter `param`, a buffer of `shape` (`None` where dynamic).
    pub fn writes_every_element(&self, param: usize, grid: &[Option<u64>], shape: &[Option<u64>]) -> bool {
        self.writes_every_element_in(param, &Dispatch::new(grid).with_shape(param, shape))
    }

    /// The flat (row-major) elements of parameter `param` that a dispatch over `grid` may read,
    /// when known; `None` means possibly any.
    pub fn read_elements(&self, param: usize, grid: &[Option<u64>], shape: &[Option<u64>]) -> Option<Range<u64>> {
        self.read_elements_in(param, &Dispatch::new(grid).with_shape(param, shape))
    }

    /// The flat elements of parameter `param` that a dispatch over `grid` may write, when known;
    /// `None` means possibly any.
    pub fn written_elements(&self, param: usize, grid: &[Option<u64>], shape: &[Option<u64>]) -> Option<Range<u64>> {
        self.written_elements_in(param, &Dispatch::new(grid).with_shape(param, shape))
    }

    /// The flat elements of parameter `param` (a buffer of `shape`) that a dispatch over `grid`
    /// surely writes, as ranges: those of each must-write proven to write a range without gaps
    /// (under a guard `id < n / 2`, the first half). Empty where nothing is proven.
    pub fn surely_written_elements(
        &self,
        param: usize,
        grid: &[Option<u64>],
        shape: &[Option<u64>],
    ) -> Vec<Range<u64>> {
        let dispatch = Dispatch::new(grid).with_shape(param, shape);
        self.surely_written_in(param, &dispatch).map_or_else(Vec::new, |(_, ranges)| ranges)
    }

    /// [`writes_every_element`](Self::writes_every_element), knowing more of the dispatch (every
    /// buffer's shape, constant scalar arguments: guards often compare with them).
    pub fn writes_every_element_in(&self, param: usize, dispatch: &Dispatch) -> bool {
        let answer = self.answers.get_or((param, Question::WritesEveryElement, dispatch), || {
            Answer::Every(self.compute_writes_every_element(param, dispatch))
        });
        matches!(answer, Answer::Every(true))
    }

    /// [`read_elements`](Self::read_elements), knowing more of the dispatch.
    pub fn read_elements_in(&self, param: usize, dispatch: &Dispatch) -> Option<Range<u64>> {
        let answer = self.answers.get_or((param, Question::ReadElements, dispatch), || {
            Answer::Elements(self.elements(param, dispatch, |a| a.read))
        });
        match answer {
            Answer::Elements(range) => range,
            Answer::Every(_) => None,
        }
    }

    /// [`written_elements`](Self::written_elements), knowing more of the dispatch.
    pub fn written_elements_in(&self, param: usize, dispatch: &Dispatch) -> Option<Range<u64>> {
        let answer = self.answers.get_or((param, Question::WrittenElements, dispatch), || {
            Answer::Elements(self.elements(param, dispatch, |a| a.write))
        });
        match answer {
            Answer::Elements(range) => range,
            Answer::Every(_) => None,
        }
    }

    fn compute_writes_every_element(&self, param: usize, dispatch: &Dispatch) -> bool {
        match self.surely_written_in(param, dispatch) {
            None => false,
            Some((0, _)) => true, // nothing to write
            Some((elements, ranges)) => ranges.iter().any(|r| r.start == 0 && r.end >= elements),
        }
    }

    /// The number of elements of parameter `param` (every size known) and the ranges its
    /// must-writes each surely write ([`coverage::surely_written`]); `None` where a size is not
    /// known.
    fn surely_written_in(&self, param: usize, dispatch: &Dispatch) -> Option<(u64, Vec<Range<u64>>)> {
        let query = self.query(dispatch);
        let shape = query.shape(param).and_then(|s| s.into_iter().collect::<Option<Vec<u64>>>())?;
        let elements = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))?;
        let ranges = self
            .accesses
            .iter()
            .filter(|a| a.write && a.must && a.target == Target::Param(param))
            .filter_map(|a| coverage::surely_written(&query, a, &shape, elements))
            .collect();
        Some((elements, ranges))
    }

    fn query<'a>(&'a self, dispatch: &'a Dispatch) -> Query<'a> {
        Query { dispatch, workgroup: self.workgroup, static_shapes: &self.static_shapes }
    }

    /// The hull of what the accesses `selected` touch of parameter `param`.
    fn elements(&self, param: usize, dispatch: &Dispatch, selected: impl Fn(&Access) -> bool) -> Option<Range<u64>> {
        if !self.params.get(param).is_some_and(|p| p.is_buffer) {
            return Some(0..0);
        }
        let query = self.query(dispatch);
        let shape = query.shape(param);
        let mut range = Some(0..0);
        for access in self.accesses.iter().filter(|a| selected(a)) {
            if matches!(access.target, Target::Param(p) if p != param) {
                continue;
            }
            range = ranges::hull(range, ranges::touched(&query, access, shape.as_deref()));
            range.as_ref()?;
        }
        range
    }
}

impl Analysis for KernelEffects {
    fn compute(ctx: &Context, op: Op, _: &mut AnalysisManager) -> Self {
        KernelEffects::of(ctx, op)
    }
}
