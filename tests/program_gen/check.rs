//! Whether a [`Case`] is well formed: every name is in scope where it is used, shapes agree,
//! constant indices are in bounds, and every run of the program is deterministic and defined:
//!
//! - kernels are race free: a buffer that a dispatch reads at another work item's element
//!   (`ReadShifted`) or updates atomically is not (or may not be, through selects and
//!   helper parameters) any other argument the dispatch writes or accesses;
//! - a compute helper's buffer arguments are pairwise distinct buffers (so inside a helper its
//!   parameters never alias), unless the helper is [`Helper::aliasing`] (then inside it the
//!   parameters of one shape may all be one buffer);
//! - a born buffer is written whole (by a dispatch of the fill or derive form, or a host copy)
//!   before anything reads it, and a buffer a block frees is not yielded out of it;
//! - every loop ends and every grid is small: grids and helpers' index arguments come only from
//!   [counts](Scope::counts), never from a loaded value or a loop variable that may be negative;
//! - helpers do not recurse (helper `h` calls only helpers below `h`), except through
//!   [`Stmt::CallSelf`], one level down a counter that stops at zero.
//!
//! The generator makes only well-formed cases; the shrinker's edits are kept only when the
//! result is still well formed.

use super::ast::*;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The concrete buffers a buffer name may denote at run time.
pub type MaySet = BTreeSet<Atom>;

/// A concrete buffer, statically: an entry argument, a `buffer.alloc`, or a helper parameter
/// (distinct from the helper's other parameters).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Atom {
    /// Entry argument `k`.
    Entry(u32),
    /// The buffers of one `buffer.alloc`.
    Born(u32),
    /// A helper's parameter.
    Param(u32),
}

/// The names in scope at a point of compute code, indexed by name and by shape (programs
/// for benchmarks have a thousand buffers in scope).
#[derive(Clone, Debug, Default)]
pub struct Scope {
    buffers: Vec<(BufVar, Shape, MaySet)>,
    position: HashMap<BufVar, usize>,
    by_shape: BTreeMap<Shape, Vec<usize>>,
    /// Index names.
    pub indices: Vec<IndexVar>,
    /// `None` in `@main` (which has `%seed`), else the helper's index.
    pub helper: Option<usize>,
    /// The induction variables of loops whose lower bound is negative (ids are unique, so this
    /// is never restored).
    pub signed: BTreeSet<IndexVar>,
}

impl Scope {
    /// The scope at the start of `@main`.
    pub fn main(program: &Program) -> Scope {
        let mut scope = Scope::default();
        for (k, shape) in program.buffers.iter().enumerate() {
            let k = k as u32;
            scope.push(BufVar::Entry(k), shape.clone(), [Atom::Entry(k)].into());
        }
        scope.indices.extend((0..program.trips).map(IndexVar::Trip));
        scope.indices.extend((0..program.flags).map(IndexVar::Flag));
        scope
    }

    /// The scope at the start of helper `h`.
    pub fn helper(program: &Program, h: usize) -> Scope {
        let mut scope = Scope { helper: Some(h), ..Scope::default() };
        let helper = &program.helpers[h];
        for (id, shape) in &helper.params {
            let may = match helper.aliasing {
                // Any parameter of this shape may be this one.
                true => helper.params.iter().filter(|(_, s)| s == shape).map(|(q, _)| Atom::Param(*q)).collect(),
                false => [Atom::Param(*id)].into(),
            };
            scope.push(BufVar::Param(*id), shape.clone(), may);
        }
        scope.indices.push(IndexVar::Scalar(h as u32));
        scope
    }

    /// Brings a buffer name into scope.
    pub fn push(&mut self, var: BufVar, shape: Shape, may: MaySet) {
        self.position.insert(var, self.buffers.len());
        self.by_shape.entry(shape.clone()).or_default().push(self.buffers.len());
        self.buffers.push((var, shape, may));
    }

    /// Every buffer in scope: name, shape, what it may denote.
    pub fn buffers(&self) -> &[(BufVar, Shape, MaySet)] {
        &self.buffers
    }

    /// The entry for a buffer name in scope.
    pub fn buffer(&self, var: BufVar) -> Option<&(BufVar, Shape, MaySet)> {
        self.position.get(&var).map(|&i| &self.buffers[i])
    }

    /// The buffers of one shape in scope.
    pub fn of_shape(&self, shape: &Shape) -> Vec<BufVar> {
        self.by_shape.get(shape).map_or_else(Vec::new, |all| all.iter().map(|&i| self.buffers[i].0).collect())
    }

    /// Whether a buffer of this shape is in scope.
    pub fn has_shape(&self, shape: &Shape) -> bool {
        self.by_shape.contains_key(shape)
    }

    /// The index names that are counts: never negative and small (every one but loaded values
    /// and the variables of loops with a negative lower bound): what grids and helpers' depth
    /// counters may use.
    pub fn counts(&self) -> Vec<IndexVar> {
        self.indices.iter().copied().filter(|v| !matches!(v, IndexVar::Loaded(_)) && !self.signed.contains(v)).collect()
    }

    /// What `value` may denote, as a value an op yields: a name in scope, or a buffer born in
    /// the block that yields it.
    pub fn yielded_may(&self, value: BufVar) -> MaySet {
        match (self.buffer(value), value) {
            (Some((_, _, may)), _) => may.clone(),
            (None, BufVar::Born(v)) => [Atom::Born(v)].into(),
            _ => MaySet::new(),
        }
    }

    /// What the carried names of `carried` may denote: any initial value, any yielded one.
    pub fn carried_may(&self, carried: &Carried) -> MaySet {
        let mut may = MaySet::new();
        for &init in &carried.init {
            may.extend(self.yielded_may(init));
        }
        for &next in &carried.next {
            if !matches!(next, BufVar::Carried(_)) {
                may.extend(self.yielded_may(next));
            }
        }
        may
    }

    /// The shapes that at least two buffers in scope have.
    pub fn shared_shapes(&self) -> Vec<&Shape> {
        self.by_shape.iter().filter(|(_, all)| all.len() >= 2).map(|(shape, _)| shape).collect()
    }

    /// How much is in scope now, to [`restore`](Self::restore) at the end of a nested block.
    pub fn mark(&self) -> (usize, usize) {
        (self.buffers.len(), self.indices.len())
    }

    /// Forgets what was defined since `mark`.
    pub fn restore(&mut self, mark: (usize, usize)) {
        while self.buffers.len() > mark.0 {
            let (var, shape, _) = self.buffers.pop().expect("longer than the mark");
            self.position.remove(&var);
            if let Some(all) = self.by_shape.get_mut(&shape) {
                all.pop();
                if all.is_empty() {
                    self.by_shape.remove(&shape);
                }
            }
        }
        self.indices.truncate(mark.1);
    }

    /// Adds what `stmt` defines for the statements after it: a born buffer, a select, the
    /// results of a loop or branch, a loaded index.
    pub fn extend(&mut self, stmt: &Stmt) {
        let carried = match stmt {
            Stmt::For(For { carried: Some(c), .. }) | Stmt::While(While { carried: Some(c), .. }) => Some(c),
            _ => None,
        };
        if let Some(c) = carried {
            if let Some((_, shape, _)) = self.buffer(c.init[0]) {
                let (shape, may) = (shape.clone(), self.carried_may(c));
                for &id in &c.results {
                    self.push(BufVar::Result(id), shape.clone(), may.clone());
                }
            }
            return;
        }
        match stmt {
            Stmt::If { yields, then_body, .. } => {
                for y in yields {
                    let Some(shape) = self.yielded_shape(y.then_value, then_body) else { continue };
                    let may = self.yielded_may(y.then_value).union(&self.yielded_may(y.else_value)).copied().collect();
                    self.push(BufVar::Result(y.result), shape, may);
                }
            }
            Stmt::LoadIndex { var, .. } => self.indices.push(IndexVar::Loaded(*var)),
            Stmt::Alloc { var, shape, .. } => {
                self.push(BufVar::Born(*var), shape.clone(), MaySet::from([Atom::Born(*var)]))
            }
            Stmt::Select { var, if_true, if_false, .. } => {
                let (Some((_, shape, a)), Some((_, _, b))) = (self.buffer(*if_true), self.buffer(*if_false)) else {
                    return;
                };
                let (shape, may) = (shape.clone(), a.union(b).copied().collect());
                self.push(BufVar::Select(*var), shape, may);
            }
            _ => {}
        }
    }
}

impl Scope {
    /// The shape of `value`, yielded at the end of `block`: a name in scope or a buffer born
    /// at the block's top level.
    pub fn yielded_shape(&self, value: BufVar, block: &[Stmt]) -> Option<Shape> {
        if let Some((_, shape, _)) = self.buffer(value) {
            return Some(shape.clone());
        }
        born_at_top(block, value).map(|(shape, _)| shape.clone())
    }
}

/// The shape of `value` and whether the block frees it, if it is a buffer born at the top level
/// of `block`.
pub fn born_at_top(block: &[Stmt], value: BufVar) -> Option<(&Shape, bool)> {
    let BufVar::Born(v) = value else { return None };
    block.iter().find_map(|s| match s {
        Stmt::Alloc { var, shape, dealloc, .. } if *var == v => Some((shape, *dealloc)),
        _ => None,
    })
}

/// The first parameter of `kernel` whose accesses may race when its arguments may denote
/// `sets`: one read at other work items' elements (`ReadShifted`) that may be a buffer the
/// dispatch writes, or one updated atomically that may be any other argument.
pub fn racy_param(kernel: &Kernel, sets: &[&MaySet]) -> Option<usize> {
    // A parameter another one's `WriteEither` may store to is written, whatever its own role.
    let selected =
        |j: usize| kernel.params.iter().any(|q| matches!(q.role, Role::WriteEither { other, .. } if other == j));
    let written: Vec<bool> = kernel
        .params
        .iter()
        .enumerate()
        .map(|(j, p)| !matches!(p.role, Role::Unused | Role::Read | Role::ReadShifted(_)) || selected(j))
        .collect();
    (0..kernel.params.len()).find(|&j| {
        let conflicts = |k: usize| k != j && !sets[j].is_disjoint(sets[k]);
        match kernel.params[j].role {
            Role::ReadShifted(_) => selected(j) || (0..sets.len()).any(|k| written[k] && conflicts(k)),
            Role::Atomic { .. } => selected(j) || (0..sets.len()).any(conflicts),
            _ => false,
        }
    })
}

/// Why a case is not well formed (for the generator's own assertions).
pub fn check(case: &Case) -> Result<(), String> {
    let program = &case.program;
    let args = &case.args;
    if args.buffers.len() != program.buffers.len()
        || args.trips.len() != program.trips as usize
        || args.flags.len() != program.flags as usize
    {
        return Err("the arguments do not fit the parameters".into());
    }
    for (values, shape) in args.buffers.iter().zip(&program.buffers) {
        if values.len() as u64 != shape.elements() {
            return Err("a buffer argument has the wrong length".into());
        }
    }
    for (k, kernel) in program.kernels.iter().enumerate() {
        check_kernel(kernel).map_err(|e| format!("@k{k}: {e}"))?;
    }
    let mut checker = Checker { program, seen: HashSet::new() };
    for h in 0..program.helpers.len() {
        checker.block(&program.helpers[h].body, &mut Scope::helper(program, h)).map_err(|e| format!("@f{h}: {e}"))?;
    }
    let mut scope = Scope::main(program);
    checker.block(&program.body, &mut scope).map_err(|e| format!("@main: {e}"))?;
    for access in &program.results {
        checker.access(access, &scope)?;
    }
    Ok(())
}

fn check_kernel(kernel: &Kernel) -> Result<(), String> {
    if kernel.params.is_empty() || !(1..=2).contains(&kernel.dims) || kernel.stride == 0 {
        return Err("malformed".into());
    }
    if kernel.dims == 2 && (kernel.stride != 1 || kernel.offset != 0) {
        return Err("a 2-D kernel with a stride".into());
    }
    let param = |j: usize| kernel.params.get(j).ok_or_else(|| format!("no parameter {j}"));
    match kernel.guard {
        Guard::HalfOf(j) => {
            param(j)?;
        }
        Guard::Positive(j) if !matches!(param(j)?.role, Role::Read | Role::ReadWrite(_)) => {
            return Err("a data guard on a parameter it does not read".into())
        }
        _ => {}
    }
    for p in &kernel.params {
        match p.role {
            Role::WriteEither { other, .. } if param(other)?.shape != p.shape => {
                return Err("a select between parameters of different shapes".into())
            }
            Role::Atomic { element, .. } if element >= p.shape.elements() => {
                return Err("an atomic out of bounds".into())
            }
            _ => {}
        }
    }
    Ok(())
}

struct Checker<'p> {
    program: &'p Program,
    /// Every name defined so far (each only once in the program).
    seen: HashSet<String>,
}

impl Checker<'_> {
    fn define(&mut self, name: String) -> Result<(), String> {
        if self.seen.insert(name.clone()) {
            Ok(())
        } else {
            Err(format!("{name} is defined twice"))
        }
    }

    fn buffer<'s>(&self, var: BufVar, scope: &'s Scope) -> Result<&'s (BufVar, Shape, MaySet), String> {
        scope.buffer(var).ok_or_else(|| format!("{var:?} is not in scope"))
    }

    fn index(&self, value: IndexValue, scope: &Scope) -> Result<(), String> {
        match value {
            IndexValue::Const(_) => Ok(()),
            IndexValue::Var(var) if scope.indices.contains(&var) => Ok(()),
            IndexValue::Var(var) => Err(format!("{var:?} is not in scope")),
        }
    }

    fn access(&self, access: &Access, scope: &Scope) -> Result<(), String> {
        let (_, shape, _) = self.buffer(access.buffer, scope)?;
        if access.index.len() != shape.rank() {
            return Err("an access of the wrong rank".into());
        }
        for (d, index) in access.index.iter().enumerate() {
            self.index(*index, scope)?;
            if let IndexValue::Const(k) = index {
                if *k >= shape.0[d] {
                    return Err("a constant index out of bounds".into());
                }
            }
        }
        Ok(())
    }

    fn cond(&self, cond: &Cond, scope: &Scope) -> Result<(), String> {
        match cond {
            Cond::NonZero(var) | Cond::Odd(var) | Cond::Even(var) => self.index(IndexValue::Var(*var), scope),
            Cond::Probe(access, _) => self.access(access, scope),
        }
    }

    fn dispatch(&self, dispatch: &Dispatch, scope: &Scope) -> Result<(), String> {
        let kernel = self.program.kernels.get(dispatch.kernel).ok_or("no such kernel")?;
        if dispatch.grid.len() != kernel.dims || dispatch.buffers.len() != kernel.params.len() {
            return Err("a dispatch that does not fit its kernel".into());
        }
        for size in &dispatch.grid {
            if let GridSize::VarPlus(var, _) = size {
                if !scope.counts().contains(var) {
                    return Err(format!("a grid from {var:?}, which is not a count in scope"));
                }
            }
        }
        match &dispatch.scalar {
            ScalarArg::Const(_) => {}
            ScalarArg::Seed if scope.helper.is_none() => {}
            ScalarArg::Seed => return Err("%seed in a helper".into()),
            ScalarArg::Var(var) => self.index(IndexValue::Var(*var), scope)?,
            ScalarArg::Load(access) => self.access(access, scope)?,
        }
        let mut sets = Vec::new();
        for (buffer, param) in dispatch.buffers.iter().zip(&kernel.params) {
            let (_, shape, may) = self.buffer(*buffer, scope)?;
            if *shape != param.shape {
                return Err("a dispatch argument of the wrong shape".into());
            }
            sets.push(may);
        }
        match racy_param(kernel, &sets) {
            Some(j) => Err(format!("a race: argument {j} of a dispatch of @k{} may alias another", dispatch.kernel)),
            None => Ok(()),
        }
    }

    /// The carried names of a loop (checking its initial and yielded values): name, shape, may.
    fn carried(&mut self, c: &Carried, body: &[Stmt], scope: &Scope) -> Result<Vec<(BufVar, Shape, MaySet)>, String> {
        if c.init.is_empty() || c.init.len() != c.vars.len() || (c.next.is_empty() && c.init.len() < 2) {
            return Err("a rotation of fewer than two buffers, or not one name each".into());
        }
        if !c.next.is_empty() && c.next.len() != c.vars.len() {
            return Err("not one yielded value per carried name".into());
        }
        if !c.results.is_empty() && c.results.len() != c.vars.len() {
            return Err("not one result per carried name".into());
        }
        let (_, shape0, _) = self.buffer(c.init[0], scope)?.clone();
        for &init in &c.init {
            if self.buffer(init, scope)?.1 != shape0 {
                return Err("carried buffers of different shapes".into());
            }
        }
        for &next in &c.next {
            let shape = match next {
                BufVar::Carried(v) if c.vars.contains(&v) => shape0.clone(),
                _ => Self::yielded(next, body, scope)?,
            };
            if shape != shape0 {
                return Err("a loop yields a buffer of another shape".into());
            }
        }
        let may = scope.carried_may(c);
        let mut out = Vec::new();
        for &id in &c.vars {
            self.define(format!("%x{id}"))?;
            out.push((BufVar::Carried(id), shape0.clone(), may.clone()));
        }
        for &id in &c.results {
            self.define(format!("%r{id}"))?;
        }
        Ok(out)
    }

    /// The shape of `value` yielded at the end of `block`: a name of `outer` (in scope before
    /// the op) or a buffer born at the block's top level and not freed by it.
    fn yielded(value: BufVar, block: &[Stmt], outer: &Scope) -> Result<Shape, String> {
        if let Some((_, shape, _)) = outer.buffer(value) {
            return Ok(shape.clone());
        }
        match born_at_top(block, value) {
            Some((_, true)) => Err(format!("{value:?} is yielded but freed")),
            Some((shape, false)) => Ok(shape.clone()),
            None => Err(format!("{value:?} is yielded but is neither in scope before nor born in the block")),
        }
    }

    /// Checks the buffer arguments of a call of helper `h`.
    fn call_args(&self, h: usize, buffers: &[BufVar], scope: &Scope) -> Result<(), String> {
        let callee = self.program.helpers.get(h).ok_or("no such helper")?;
        if buffers.len() != callee.params.len() {
            return Err("a helper call with the wrong arguments".into());
        }
        let mut sets: Vec<&MaySet> = Vec::new();
        for (buffer, (_, shape)) in buffers.iter().zip(&callee.params) {
            let (_, s, may) = self.buffer(*buffer, scope)?;
            if s != shape {
                return Err("a helper argument of the wrong shape".into());
            }
            if !callee.aliasing && sets.iter().any(|other| !other.is_disjoint(may)) {
                return Err("a helper's arguments may alias".into());
            }
            sets.push(may);
        }
        Ok(())
    }

    fn block(&mut self, block: &[Stmt], scope: &mut Scope) -> Result<(), String> {
        for stmt in block {
            self.stmt(stmt, scope)?;
        }
        Ok(())
    }

    fn nested(&mut self, block: &[Stmt], scope: &mut Scope, extend: impl FnOnce(&mut Scope)) -> Result<(), String> {
        let mark = scope.mark();
        extend(scope);
        let result = self.block(block, scope);
        scope.restore(mark);
        result
    }

    fn stmt(&mut self, stmt: &Stmt, scope: &mut Scope) -> Result<(), String> {
        match stmt {
            Stmt::Dispatch(dispatch) => self.dispatch(dispatch, scope),
            Stmt::For(f) => {
                self.index(f.upper, scope)?;
                if matches!(f.upper, IndexValue::Var(IndexVar::Loaded(_))) {
                    return Err("a loop bound from a loaded value".into());
                }
                if f.step == 0 {
                    return Err("a zero step".into());
                }
                self.define(format!("%i{}", f.iv))?;
                let carried = match &f.carried {
                    Some(c) => self.carried(c, &f.body, scope)?,
                    None => Vec::new(),
                };
                let (iv, signed) = (IndexVar::Loop(f.iv), f.lower < 0);
                self.nested(&f.body, scope, |inner| {
                    inner.indices.push(iv);
                    if signed {
                        inner.signed.insert(iv);
                    }
                    for (var, shape, may) in carried {
                        inner.push(var, shape, may);
                    }
                })?;
                scope.extend(stmt);
                Ok(())
            }
            Stmt::While(w) => {
                self.define(format!("%w{}", w.counter))?;
                let carried = match &w.carried {
                    Some(c) => self.carried(c, &w.body, scope)?,
                    None => Vec::new(),
                };
                let mark = scope.mark();
                for (var, shape, may) in carried {
                    scope.push(var, shape, may);
                }
                // The probe sees what the before region sees, less what it defines (freed
                // before the probe).
                let result = self.access(&w.probe, scope).and_then(|()| {
                    self.nested(&w.before, scope, |_| {})?;
                    self.nested(&w.body, scope, |inner| inner.indices.push(IndexVar::While(w.counter)))
                });
                scope.restore(mark);
                result?;
                scope.extend(stmt);
                Ok(())
            }
            Stmt::If { cond, yields, then_body, else_body } => {
                self.cond(cond, scope)?;
                let then_values: Vec<BufVar> = yields.iter().map(|y| y.then_value).collect();
                let else_values: Vec<BufVar> = yields.iter().map(|y| y.else_value).collect();
                let mut shapes = Vec::new();
                for (block, values) in [(then_body, &then_values), (else_body, &else_values)] {
                    self.nested(block, scope, |_| {})?;
                    let yielded: Result<Vec<Shape>, String> =
                        values.iter().map(|&v| Self::yielded(v, block, scope)).collect();
                    shapes.push(yielded?);
                }
                if shapes[0] != shapes[1] {
                    return Err("an scf.if whose branches yield different shapes".into());
                }
                for y in yields {
                    self.define(format!("%r{}", y.result))?;
                }
                scope.extend(stmt);
                Ok(())
            }
            Stmt::LoadIndex { var, from } => {
                self.access(from, scope)?;
                self.define(format!("%l{var}"))?;
                scope.extend(stmt);
                Ok(())
            }
            Stmt::HostRange(range) => {
                self.define(format!("%h{}", range.iv))?;
                let (_, shape, _) = self.buffer(range.buffer, scope)?;
                let rank = shape.rank();
                if range.fixed.len() + 1 != rank || range.fixed.iter().zip(&shape.0).any(|(i, d)| i >= d) {
                    return Err("a host range with the wrong fixed indices".into());
                }
                // With a stride the index wraps (modulo the length): the loop may run longer.
                if range.lower >= range.upper || (range.stride.is_none() && range.upper > shape.0[rank - 1]) {
                    return Err("a host range out of bounds".into());
                }
                Ok(())
            }
            Stmt::CallSelf { buffers } => {
                let Some(h) = scope.helper else { return Err("a recursive call outside a helper".into()) };
                self.call_args(h, buffers, scope)
            }
            Stmt::Load { from, to } => {
                self.access(from, scope)?;
                match to {
                    Sink::Observe => Ok(()),
                    Sink::Store(access) => self.access(access, scope),
                }
            }
            Stmt::Store { value, to } => {
                match value {
                    Value::Const(_) => {}
                    Value::Var(var) => self.index(IndexValue::Var(*var), scope)?,
                    Value::Seed if scope.helper.is_none() => {}
                    Value::Seed => return Err("%seed in a helper".into()),
                }
                self.access(to, scope)
            }
            Stmt::Copy { from, to } => {
                let (_, a, _) = self.buffer(*from, scope)?;
                let (_, b, _) = self.buffer(*to, scope)?;
                if a != b {
                    return Err("a copy between shapes".into());
                }
                Ok(())
            }
            Stmt::CallHost { func, buffers, scalar } => {
                let func = self.program.host_funcs.get(*func).ok_or("no such host function")?;
                self.index(*scalar, scope)?;
                if buffers.len() != func.params.len() {
                    return Err("a host call with the wrong arguments".into());
                }
                for (buffer, (shape, _)) in buffers.iter().zip(&func.params) {
                    if self.buffer(*buffer, scope)?.1 != *shape {
                        return Err("a host call argument of the wrong shape".into());
                    }
                }
                Ok(())
            }
            Stmt::CallHelper { helper, buffers, scalar } => {
                if let Some(current) = scope.helper {
                    if *helper >= current {
                        return Err("a helper calls itself or a later one".into());
                    }
                }
                self.index(*scalar, scope)?;
                if matches!(scalar, IndexValue::Var(var) if !scope.counts().contains(var)) {
                    return Err("a helper's index argument that is not a count".into());
                }
                self.call_args(*helper, buffers, scope)
            }
            Stmt::Alloc { var, shape, init, .. } => {
                self.define(format!("%n{var}"))?;
                match init {
                    Init::Dispatch(dispatch) => {
                        let kernel = self.program.kernels.get(dispatch.kernel).ok_or("no such kernel")?;
                        if dispatch.buffers != [BufVar::Born(*var)] || !kernel.writes_everything(&dispatch.grid) {
                            return Err("a born buffer is not written whole first".into());
                        }
                        let mark = scope.mark();
                        scope.push(BufVar::Born(*var), shape.clone(), MaySet::from([Atom::Born(*var)]));
                        let result = self.dispatch(dispatch, scope);
                        scope.restore(mark);
                        result?;
                    }
                    Init::CopyFrom(from) => {
                        if self.buffer(*from, scope)?.1 != *shape {
                            return Err("a born buffer copied from another shape".into());
                        }
                    }
                    Init::Derive(dispatch) => {
                        let kernel = self.program.kernels.get(dispatch.kernel).ok_or("no such kernel")?;
                        let [_, to] = dispatch.buffers[..] else { return Err("a derive of two buffers".into()) };
                        if to != BufVar::Born(*var) || !kernel.derives_everything(&dispatch.grid) {
                            return Err("a born buffer is not derived whole first".into());
                        }
                        let mark = scope.mark();
                        scope.push(BufVar::Born(*var), shape.clone(), MaySet::from([Atom::Born(*var)]));
                        let result = self.dispatch(dispatch, scope);
                        scope.restore(mark);
                        result?;
                    }
                }
                scope.extend(stmt);
                Ok(())
            }
            Stmt::Select { var, cond, if_true, if_false } => {
                self.cond(cond, scope)?;
                if self.buffer(*if_true, scope)?.1 != self.buffer(*if_false, scope)?.1 {
                    return Err("a select between shapes".into());
                }
                self.define(format!("%s{var}"))?;
                scope.extend(stmt);
                Ok(())
            }
        }
    }
}
