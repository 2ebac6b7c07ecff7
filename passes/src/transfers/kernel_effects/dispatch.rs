//! What a dispatch tells the analysis: the grid, the shapes of the buffers, the scalar
//! arguments ([`Dispatch`]), and how an access's symbolic expressions become concrete under it
//! ([`Resolved`]).
//!
//! Which work items run: exactly the ids below the grid in each dimension (docs/lowering.md,
//! "Which work items exist"). The last workgroup of a dimension may reach past the grid, but its
//! work items there touch no buffer: they do not run, or (in a kernel with barriers) run with
//! every access to a buffer skipped. So accesses are bounded by the grid, whatever the workgroup
//! size; where a grid size is not known, the ids are bounded by nothing but 0.

use super::affine::{Affine, Atom};
use super::guard::Guard;
use super::interval::{Environment, Interval, INFINITY};
use super::reduce::reduce;
use super::summary::{Access, Extent, Loop};

/// What is known of one dispatch of a kernel: sizes are `None` where not constants.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dispatch {
    /// Work items per dimension, x first; a dimension not given has one work item.
    pub grid: Vec<Option<u64>>,
    /// Per kernel parameter: the shape of the buffer it is bound to (outermost dimension
    /// first), when known. A kernel parameter's static type fills in what is missing.
    pub shapes: Vec<Option<Vec<Option<u64>>>>,
    /// Per kernel parameter: the value of the scalar it is bound to, when a constant (integers
    /// sign-extended).
    pub scalars: Vec<Option<i64>>,
}

impl Dispatch {
    /// A dispatch over `grid`, nothing else known.
    pub fn new(grid: &[Option<u64>]) -> Dispatch {
        Dispatch { grid: grid.to_vec(), ..Dispatch::default() }
    }

    /// The same, with parameter `param` bound to a buffer of `shape`.
    pub fn with_shape(mut self, param: usize, shape: &[Option<u64>]) -> Dispatch {
        if self.shapes.len() <= param {
            self.shapes.resize(param + 1, None);
        }
        self.shapes[param] = Some(shape.to_vec());
        self
    }

    /// The same, with scalar parameter `param` bound to `value`.
    pub fn with_scalar(mut self, param: usize, value: i64) -> Dispatch {
        if self.scalars.len() <= param {
            self.scalars.resize(param + 1, None);
        }
        self.scalars[param] = Some(value);
        self
    }

    /// The grid's size in dimension `dimension`.
    pub(super) fn grid_size(&self, dimension: usize) -> Option<u64> {
        self.grid.get(dimension).copied().unwrap_or(Some(1))
    }

    /// The shape of parameter `param`'s buffer, with the static sizes of its type filling in.
    pub(super) fn shape(&self, param: usize, static_shape: Option<&[Option<u64>]>) -> Option<Vec<Option<u64>>> {
        let given = self.shapes.get(param).and_then(Option::as_ref);
        match (given, static_shape) {
            (Some(given), Some(fixed)) if given.len() == fixed.len() => {
                Some(given.iter().zip(fixed).map(|(g, f)| g.or(*f)).collect())
            }
            (Some(given), _) => Some(given.clone()),
            (None, fixed) => fixed.map(<[_]>::to_vec),
        }
    }
}

/// What is fixed for one query: the dispatch, the kernel's workgroup size and its parameters'
/// static shapes.
pub(super) struct Query<'a> {
    pub(super) dispatch: &'a Dispatch,
    pub(super) workgroup: Option<[u64; 3]>,
    pub(super) static_shapes: &'a [Option<Vec<Option<u64>>>],
}

impl Query<'_> {
    /// The shape of parameter `param`'s buffer.
    pub(super) fn shape(&self, param: usize) -> Option<Vec<Option<u64>>> {
        let fixed = self.static_shapes.get(param).and_then(Option::as_deref);
        self.dispatch.shape(param, fixed)
    }

    /// The constant an atom has in this dispatch, if any.
    fn constant(&self, atom: &Atom) -> Option<Affine> {
        let value = match *atom {
            Atom::GridSize(d) => self.dispatch.grid_size(d as usize)?,
            Atom::WorkgroupSize(d) => *self.workgroup?.get(d as usize)?,
            Atom::Dim { param, dimension } => self.shape(param)?.get(dimension as usize).copied()??,
            Atom::Param(p) => return self.dispatch.scalars.get(p).copied().flatten().map(Affine::constant),
            _ => return None,
        };
        i64::try_from(value).ok().map(Affine::constant)
    }

    /// `access` with what the dispatch fixes put in.
    pub(super) fn resolve(&self, access: &Access) -> Resolved {
        let replace = |atom: &Atom| self.constant(atom);
        let substitute = |form: &Affine| form.substitute(&replace);
        let extent = match &access.extent {
            Extent::Element(indices) => {
                indices.iter().map(substitute).collect::<Option<Vec<_>>>().map_or(Extent::Unknown, Extent::Element)
            }
            Extent::Span { offset, count } => match (substitute(offset), substitute(count)) {
                (Some(offset), Some(count)) => Extent::Span { offset, count },
                _ => Extent::Unknown,
            },
            other => other.clone(),
        };
        let mut exact = true;
        let mut loops = Vec::new();
        for l in &access.loops {
            match (substitute(&l.lower), substitute(&l.upper), substitute(&l.step)) {
                (Some(lower), Some(upper), Some(step)) => loops.push(Loop { variable: l.variable, lower, upper, step }),
                _ => exact = false,
            }
        }
        let guards = access.guards.iter().map(|g| g.substitute(&replace)).collect();
        Resolved { extent, guards, loops, exact }
    }

    /// The environment of the work items that may touch buffers: ids below the grid (unbounded
    /// above in a dimension whose size is not known).
    pub(super) fn running(&self) -> Environment {
        let mut env = Environment::default();
        for d in 0..3u8 {
            let high = match self.dispatch.grid_size(d as usize) {
                Some(n) => n as i128 - 1,
                None => INFINITY,
            };
            env.set(Atom::Id(d), Interval::new(0, high));
        }
        env
    }

    /// The environment of the work items that surely run: ids below the grid; `None` when a
    /// grid size is not known.
    pub(super) fn certain(&self) -> Option<Environment> {
        let mut env = Environment::default();
        for d in 0..3u8 {
            let size = self.dispatch.grid_size(d as usize)?;
            env.set(Atom::Id(d), Interval::new(0, size as i128 - 1));
        }
        Some(env)
    }
}

/// An access under one dispatch.
pub(super) struct Resolved {
    pub(super) extent: Extent,
    pub(super) guards: Vec<Guard>,
    /// Outermost first.
    pub(super) loops: Vec<Loop>,
    /// Whether every loop around the access is known (else some loop variables are unbounded).
    pub(super) exact: bool,
}

impl Resolved {
    /// The same, with what `env` makes linear rewritten (`reduce.rs`): exact for the work items
    /// and iterations within `env` only, so used only over them.
    pub(super) fn reduced(self, env: &Environment) -> Resolved {
        let linear = |form: &Affine| reduce(form, env);
        let extent = match self.extent {
            Extent::Element(indices) => {
                indices.iter().map(linear).collect::<Option<Vec<_>>>().map_or(Extent::Unknown, Extent::Element)
            }
            Extent::Span { offset, count } => match (linear(&offset), linear(&count)) {
                (Some(offset), Some(count)) => Extent::Span { offset, count },
                _ => Extent::Unknown,
            },
            other => other,
        };
        let guards = self.guards.iter().map(|g| g.map_forms(&linear)).collect();
        let mut exact = self.exact;
        let mut loops = Vec::new();
        for l in self.loops {
            match (linear(&l.lower), linear(&l.upper), linear(&l.step)) {
                (Some(lower), Some(upper), Some(step)) => loops.push(Loop { variable: l.variable, lower, upper, step }),
                _ => exact = false,
            }
        }
        Resolved { extent, guards, loops, exact }
    }

    /// Narrows `env` to where the access may run; `false` when it never runs.
    pub(super) fn narrow(&self, env: &mut Environment) -> bool {
        narrow(env, &self.loops, &self.guards)
    }
}

/// Narrows `env` to where an access inside `loops` and under `guards` may run: loop variables
/// within their bounds, guards holding. `false` when it never runs.
pub(super) fn narrow(env: &mut Environment, loops: &[Loop], guards: &[Guard]) -> bool {
    // A few rounds: a bound found by one guard may narrow what another implies.
    for _ in 0..3 {
        let before = env.clone();
        for l in loops {
            let (lower, upper) = (env.bound(&l.lower), env.bound(&l.upper));
            let high = if upper.high >= INFINITY { INFINITY } else { upper.high - 1 };
            env.restrict(&Atom::Loop(l.variable), Interval::new(lower.low, high));
        }
        for guard in guards {
            if !guard.narrow(env, true) {
                return false;
            }
        }
        if env.is_infeasible() {
            return false;
        }
        if *env == before {
            break;
        }
    }
    true
}
