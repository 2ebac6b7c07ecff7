//! The statements of the [`Construct`](crate::program_gen::constructs::Construct)s: each makes
//! the shape a user writes (a fresh buffer carried through a loop and read after it, branches
//! that yield buffers, ping-pong carried by `scf.while`, do-while loops, host accesses at run-time
//! indices, host loops over a range, a kernel that writes the first half), and falls back to a
//! plain dispatch where the scope has nothing to make it with.

use super::super::ast::*;
use super::super::check::Scope;
use super::Gen;

impl Gen<'_> {
    /// An element of `buffer` (of `shape`) at constant indices.
    fn const_access(&mut self, buffer: BufVar, shape: &Shape) -> Access {
        let index = shape.0.iter().map(|&d| IndexValue::Const(self.rng.below(d as usize) as u64)).collect();
        Access { buffer, index }
    }

    /// A kernel that reads a buffer of `shape` and writes every element of another one.
    fn derive_kernel(&mut self, shape: &Shape) -> usize {
        if let Some(&k) = self.derive_kernels.get(shape) {
            return k;
        }
        let c = self.rng.between(-9, 9) as i32;
        let params = vec![
            KernelParam { shape: shape.clone(), role: Role::Read },
            KernelParam { shape: shape.clone(), role: Role::Write(c) },
        ];
        let kernel = Kernel {
            params,
            workgroup: [*self.rng.pick(super::WORKGROUPS_1D), 1],
            grid_guard: self.rng.chance(50),
            mix_helper: self.rng.chance(30),
            store_helper: self.rng.chance(30),
            dims_from_buffer: self.rng.chance(50),
            ..self.plain_kernel()
        };
        self.program.kernels.push(kernel);
        let k = self.program.kernels.len() - 1;
        self.derive_kernels.insert(shape.clone(), k);
        k
    }

    /// `%n{var} = buffer.alloc()` of `shape`, written whole from `from` by a kernel (kept: not
    /// freed, so that it may be yielded).
    fn derived(&mut self, scope: &Scope, var: u32, shape: &Shape, from: BufVar) -> Stmt {
        let kernel = self.derive_kernel(shape);
        self.dispatches += 1;
        let grid = vec![GridSize::Const(shape.elements() + self.rng.between(0, 2) as u64)];
        let scalar = self.scalar(scope);
        let dispatch = Dispatch { kernel, grid, buffers: vec![from, BufVar::Born(var)], scalar };
        Stmt::Alloc { var, shape: shape.clone(), init: Init::Derive(dispatch), dealloc: false }
    }

    /// A fresh buffer carried through `scf.for` (or `scf.while`): each iteration allocates one,
    /// a kernel fills it from the carried one, the loop yields it; after the loop the host reads
    /// the result.
    pub(super) fn fresh_loop(&mut self, scope: &mut Scope, depth: usize, while_loop: bool) -> Vec<Stmt> {
        let init = self.any_buffer(scope);
        let shape = scope.buffer(init).expect("in scope").1.clone();
        let (var, born, result) = (self.id(), self.id(), self.id());
        let carried =
            Carried { init: vec![init], vars: vec![var], next: vec![BufVar::Born(born)], results: vec![result] };
        let may = scope.carried_may(&carried);
        let counter = self.id();
        let (i32, lower) = if while_loop { (false, 0) } else { self.loop_kind(0) };
        let upper = if while_loop { IndexValue::Const(0) } else { self.upper_bound(scope) };
        let mark = scope.mark();
        let index = if while_loop { IndexVar::While(counter) } else { IndexVar::Loop(counter) };
        scope.indices.push(index);
        if lower < 0 {
            scope.signed.insert(index);
        }
        scope.push(BufVar::Carried(var), shape.clone(), may);
        // The new buffer is made before or after the rest of the body (which sees it only in
        // the first case).
        let first = self.rng.chance(70);
        let more = self.rng.chance(40);
        let mut body = Vec::new();
        if !first && more {
            body.extend(self.block(scope, depth + 1));
        }
        let alloc = self.derived(scope, born, &shape, BufVar::Carried(var));
        scope.extend(&alloc);
        body.push(alloc);
        if first && more {
            body.extend(self.block(scope, depth + 1));
        }
        scope.restore(mark);
        let stmt = if while_loop {
            let probe = self.const_access(BufVar::Carried(var), &shape);
            Stmt::While(While {
                counter,
                bound: self.rng.between(1, 4) as u64,
                probe,
                threshold: self.rng.between(-10, 10) as i32,
                before: Vec::new(),
                carried: Some(carried),
                body,
            })
        } else {
            let step = if self.rng.chance(15) { 2 } else { 1 };
            Stmt::For(For { iv: counter, i32, lower, upper, step, carried: Some(carried), body })
        };
        let read = self.const_access(BufVar::Result(result), &shape);
        vec![stmt, Stmt::Load { from: read, to: Sink::Observe }]
    }

    /// A branch of an `scf.if` that yields buffers of `shape`: its statements (perhaps none)
    /// and, for each result, a fresh buffer born at its end or one of `outer`.
    fn yielding_branch(
        &mut self,
        scope: &mut Scope,
        depth: usize,
        shape: &Shape,
        outer: &[BufVar],
        count: usize,
    ) -> (Vec<Stmt>, Vec<BufVar>) {
        let mark = scope.mark();
        let mut body = if self.rng.chance(50) { self.block(scope, depth + 1) } else { Vec::new() };
        let mut values = Vec::new();
        for _ in 0..count {
            if self.rng.chance(50) {
                let var = self.id();
                let alloc = if self.rng.chance(60) {
                    let from = *self.rng.pick(&scope.of_shape(shape));
                    self.derived(scope, var, shape, from)
                } else {
                    match self.alloc_with(scope, var, shape.clone()) {
                        Stmt::Alloc { var, shape, init, .. } => Stmt::Alloc { var, shape, init, dealloc: false },
                        other => other,
                    }
                };
                let Stmt::Alloc { var, .. } = alloc else { unreachable!("an alloc") };
                scope.extend(&alloc);
                body.push(alloc);
                values.push(BufVar::Born(var));
            } else {
                values.push(*self.rng.pick(outer));
            }
        }
        scope.restore(mark);
        (body, values)
    }

    /// `scf.if` yielding one or two buffers, each branch a fresh one or one in scope; then a
    /// kernel and the host use the results.
    pub(super) fn if_results(&mut self, scope: &mut Scope, depth: usize) -> Vec<Stmt> {
        let buffer = self.any_buffer(scope);
        let shape = scope.buffer(buffer).expect("in scope").1.clone();
        let outer = scope.of_shape(&shape);
        let count = if self.rng.chance(70) { 1 } else { 2 };
        let cond = self.cond(scope);
        let (then_body, then_values) = self.yielding_branch(scope, depth, &shape, &outer, count);
        let (else_body, else_values) = self.yielding_branch(scope, depth, &shape, &outer, count);
        let yields = then_values
            .into_iter()
            .zip(else_values)
            .map(|(then_value, else_value)| Yield { result: self.id(), then_value, else_value })
            .collect();
        let stmt = Stmt::If { cond, yields, then_body, else_body };
        self.after_results(scope, stmt)
    }

    /// `scf.if` yielding two buffers, swapped on one path; then a kernel reads the first and
    /// writes the second, and the host reads one.
    pub(super) fn if_swap(&mut self, scope: &mut Scope, depth: usize) -> Vec<Stmt> {
        let Some((a, b)) = self.pair(scope) else { return vec![self.dispatch_stmt(scope)] };
        let cond = self.cond(scope);
        let branch = |gen: &mut Self, scope: &mut Scope| match gen.rng.chance(40) {
            true => gen.block(scope, depth + 1),
            false => Vec::new(),
        };
        let then_body = branch(self, scope);
        let else_body = branch(self, scope);
        let swapped_then = self.rng.chance(50);
        let (first, second) = (self.id(), self.id());
        let yields = vec![
            Yield {
                result: first,
                then_value: if swapped_then { b } else { a },
                else_value: if swapped_then { a } else { b },
            },
            Yield {
                result: second,
                then_value: if swapped_then { a } else { b },
                else_value: if swapped_then { b } else { a },
            },
        ];
        let stmt = Stmt::If { cond, yields, then_body, else_body };
        self.after_results(scope, stmt)
    }

    /// `stmt` (which defines results), then a kernel over its results and a host read of one.
    fn after_results(&mut self, scope: &mut Scope, stmt: Stmt) -> Vec<Stmt> {
        let Stmt::If { yields, .. } = &stmt else { unreachable!("an scf.if") };
        let results: Vec<BufVar> = yields.iter().map(|y| BufVar::Result(y.result)).collect();
        let mark = scope.mark();
        scope.extend(&stmt);
        let shape = scope.buffer(results[0]).expect("in scope").1.clone();
        let mut stmts = vec![stmt];
        match results[..] {
            [src, dst] => stmts.push(Stmt::Dispatch(self.pair_dispatch(scope, src, dst))),
            _ => stmts.push(Stmt::Dispatch(self.dispatch(scope, Some((results[0], 0))))),
        }
        let chosen = *self.rng.pick(&results);
        let read = self.const_access(chosen, &shape);
        stmts.push(Stmt::Load { from: read, to: Sink::Observe });
        scope.restore(mark);
        stmts
    }

    /// Ping-pong (a rotation of two to four buffers) carried by `scf.while`, whose condition the
    /// host reads from the first carried buffer; after it, perhaps, the host reads a result.
    pub(super) fn while_ping_pong(&mut self, scope: &mut Scope, depth: usize) -> Vec<Stmt> {
        let Some(init) = self.rotation(scope) else { return vec![self.while_loop(scope, depth)] };
        let shape = scope.buffer(init[0]).expect("in scope").1.clone();
        let vars: Vec<u32> = init.iter().map(|_| self.id()).collect();
        let results: Vec<u32> = if self.rng.chance(70) { init.iter().map(|_| self.id()).collect() } else { Vec::new() };
        let carried = Carried { init, vars: vars.clone(), next: Vec::new(), results: results.clone() };
        let may = scope.carried_may(&carried);
        let counter = self.id();
        let mark = scope.mark();
        scope.indices.push(IndexVar::While(counter));
        for &id in &vars {
            scope.push(BufVar::Carried(id), shape.clone(), may.clone());
        }
        let (x, y) = (BufVar::Carried(vars[0]), BufVar::Carried(vars[1]));
        let mut body = vec![Stmt::Dispatch(self.pair_dispatch(scope, x, y))];
        if self.rng.chance(40) {
            body.extend(self.block(scope, depth + 1));
        }
        scope.restore(mark);
        let probe = self.const_access(x, &shape);
        let stmt = Stmt::While(While {
            counter,
            bound: self.rng.between(1, 4) as u64,
            probe,
            threshold: self.rng.between(-10, 10) as i32,
            before: Vec::new(),
            carried: Some(carried),
            body,
        });
        let mut stmts = vec![stmt];
        if let Some(&first) = results.first() {
            let read = self.const_access(BufVar::Result(first), &shape);
            stmts.push(Stmt::Load { from: read, to: Sink::Observe });
        }
        stmts
    }

    /// A do-while convergence loop: in the "before" region the host clears a flag element, a
    /// kernel updates a grid and may raise the flag (atomically), and the host reads the flag as
    /// the condition; the host reads the grid after the loop.
    pub(super) fn do_while(&mut self, scope: &mut Scope, depth: usize) -> Vec<Stmt> {
        let grid = self.any_buffer(scope);
        let grid_may = scope.buffer(grid).expect("in scope").2.clone();
        let flags: Vec<BufVar> =
            scope.buffers().iter().filter(|(_, _, may)| may.is_disjoint(&grid_may)).map(|(v, _, _)| *v).collect();
        if flags.is_empty() {
            return vec![self.while_loop(scope, depth)];
        }
        let flag = *self.rng.pick(&flags);
        let (grid_shape, flag_shape) =
            (scope.buffer(grid).expect("in scope").1.clone(), scope.buffer(flag).expect("in scope").1.clone());
        let element = self.rng.below(flag_shape.elements() as usize) as u64;
        let index = match flag_shape.rank() {
            1 => vec![IndexValue::Const(element)],
            _ => vec![IndexValue::Const(element / flag_shape.0[1]), IndexValue::Const(element % flag_shape.0[1])],
        };
        let probe = Access { buffer: flag, index };
        let update = match self.rng.below(3) {
            0 => Role::Write(self.rng.between(-9, 9) as i32),
            _ => Role::ReadWrite(self.rng.between(-9, 9) as i32),
        };
        let params = vec![
            KernelParam { shape: grid_shape.clone(), role: update },
            KernelParam { shape: flag_shape, role: Role::Atomic { kind: "max", element } },
        ];
        let kernel = self.new_kernel(params);
        let step = self.finish_dispatch(scope, kernel, vec![grid, flag]);
        let before = vec![Stmt::Store { value: Value::Const(0), to: probe.clone() }, Stmt::Dispatch(step)];
        let counter = self.id();
        let mark = scope.mark();
        scope.indices.push(IndexVar::While(counter));
        let body = if self.rng.chance(40) { self.block(scope, depth + 1) } else { Vec::new() };
        scope.restore(mark);
        let stmt = Stmt::While(While {
            counter,
            bound: self.rng.between(1, 5) as u64,
            probe,
            threshold: 0,
            before,
            carried: None,
            body,
        });
        let read = self.const_access(grid, &grid_shape);
        vec![stmt, Stmt::Load { from: read, to: Sink::Observe }]
    }

    /// A kernel writes a buffer; the host loads and stores it at an index computed at run time
    /// (from a loaded value or an index name), then reads it at a constant index.
    pub(super) fn runtime_index(&mut self, scope: &mut Scope) -> Vec<Stmt> {
        let buffer = self.any_buffer(scope);
        let shape = scope.buffer(buffer).expect("in scope").1.clone();
        let element = self.rng.below(shape.elements() as usize) as u64;
        let mut stmts = vec![Stmt::Dispatch(self.dispatch(scope, Some((buffer, element))))];
        let index = match self.index_var(scope) {
            Some(var) if self.rng.chance(40) => var,
            _ => {
                let var = self.id();
                let from = self.access(scope);
                stmts.push(Stmt::LoadIndex { var, from });
                IndexVar::Loaded(var)
            }
        };
        // The run-time index in one dimension (or both), constants in the others.
        let at = self.rng.below(shape.rank());
        let both = self.rng.chance(30);
        let index: Vec<IndexValue> = shape
            .0
            .iter()
            .enumerate()
            .map(|(d, &n)| match d == at || both {
                true => IndexValue::Var(index),
                false => IndexValue::Const(self.rng.below(n as usize) as u64),
            })
            .collect();
        let varying = Access { buffer, index };
        if self.rng.chance(35) {
            let value = Value::Const(self.rng.between(-20, 20) as i32);
            stmts.push(Stmt::Store { value, to: varying.clone() });
        }
        if self.rng.chance(80) {
            let to = if self.rng.chance(70) { Sink::Observe } else { Sink::Store(self.access(scope)) };
            stmts.push(Stmt::Load { from: varying, to });
        }
        for _ in 0..self.rng.between(1, 2) {
            let read = self.const_access(buffer, &shape);
            stmts.push(Stmt::Load { from: read, to: Sink::Observe });
        }
        stmts
    }

    /// A buffer, a dispatch of a kernel that writes it, and one of its rows for a host loop: the
    /// indices before the last (drawn) and the last dimension.
    fn written_row(&mut self, scope: &mut Scope) -> (BufVar, Stmt, Vec<u64>, u64) {
        let buffer = self.any_buffer(scope);
        let shape = scope.buffer(buffer).expect("in scope").1.clone();
        let element = self.rng.below(shape.elements() as usize) as u64;
        let dispatch = Stmt::Dispatch(self.dispatch(scope, Some((buffer, element))));
        let last = *shape.0.last().expect("a dimension");
        let fixed: Vec<u64> = shape.0[..shape.rank() - 1].iter().map(|&d| self.rng.below(d as usize) as u64).collect();
        (buffer, dispatch, fixed, last)
    }

    /// A kernel writes a buffer; a host loop reads (or writes) a fixed range of it.
    pub(super) fn host_range(&mut self, scope: &mut Scope) -> Vec<Stmt> {
        let (buffer, dispatch, fixed, last) = self.written_row(scope);
        let lower = self.rng.below(last as usize) as u64;
        let upper = self.rng.between(lower as i64 + 1, last as i64) as u64;
        let store = if self.rng.chance(25) { Some(self.rng.between(-9, 9) as i32) } else { None };
        let range = HostRange { iv: self.id(), buffer, fixed, lower, upper, store, stride: None };
        vec![dispatch, Stmt::HostRange(range)]
    }

    /// A kernel writes a buffer; a host loop stores at run-time indices of it (the loop variable
    /// times a stride, modulo the row's length), up to three times as many times as the row has
    /// elements, so that the same element may be stored several times.
    pub(super) fn host_scatter(&mut self, scope: &mut Scope) -> Vec<Stmt> {
        let (buffer, dispatch, fixed, last) = self.written_row(scope);
        let upper = self.rng.between(1, 3 * last as i64) as u64;
        let store = Some(self.rng.between(-9, 9) as i32);
        let stride = Some(self.rng.between(1, 5) as u64);
        let range = HostRange { iv: self.id(), buffer, fixed, lower: 0, upper, store, stride };
        vec![dispatch, Stmt::HostRange(range)]
    }

    /// A kernel guarded by `id < dim / 2` writes the first half of a buffer (perhaps reading
    /// another); the host reads within that half, by a loop over it or one element.
    pub(super) fn half_write(&mut self, scope: &mut Scope) -> Vec<Stmt> {
        let flat: Vec<BufVar> =
            scope.buffers().iter().filter(|(_, shape, _)| shape.rank() == 1).map(|(v, _, _)| *v).collect();
        let buffer = if flat.is_empty() { self.any_buffer(scope) } else { *self.rng.pick(&flat) };
        let shape = scope.buffer(buffer).expect("in scope").1.clone();
        let mut params = vec![KernelParam { shape: shape.clone(), role: Role::Write(self.rng.between(-9, 9) as i32) }];
        let mut buffers = vec![buffer];
        if self.rng.chance(40) {
            let other = self.any_buffer(scope);
            params.push(KernelParam { shape: scope.buffer(other).expect("in scope").1.clone(), role: Role::Read });
            buffers.push(other);
        }
        let kernel = Kernel {
            params,
            workgroup: [*self.rng.pick(super::WORKGROUPS_1D), 1],
            grid_guard: self.rng.chance(40),
            guard: Guard::HalfOf(0),
            mix_helper: self.rng.chance(25),
            store_helper: self.rng.chance(25),
            dims_from_buffer: self.rng.chance(70),
            ..self.plain_kernel()
        };
        self.program.kernels.push(kernel);
        let kernel = self.program.kernels.len() - 1;
        self.dispatches += 1;
        let grid = vec![GridSize::Const(shape.elements() + self.rng.between(0, 2) as u64)];
        let scalar = self.scalar(scope);
        let dispatch = Stmt::Dispatch(Dispatch { kernel, grid, buffers, scalar });
        // The first `dim(0) / 2` elements in row-major order (in the first row of a 2-D buffer).
        let written = (shape.0[0] / 2).min(*shape.0.last().expect("a dimension"));
        let fixed = vec![0; shape.rank() - 1];
        let read = if self.rng.chance(50) {
            let upper = self.rng.between(1, written as i64) as u64;
            Stmt::HostRange(HostRange { iv: self.id(), buffer, fixed, lower: 0, upper, store: None, stride: None })
        } else {
            let mut index: Vec<IndexValue> = fixed.into_iter().map(IndexValue::Const).collect();
            index.push(IndexValue::Const(self.rng.below(written as usize) as u64));
            Stmt::Load { from: Access { buffer, index }, to: Sink::Observe }
        };
        vec![dispatch, read]
    }

    /// Temporaries only the device sees, in a loop body or a branch: a kernel derives the first
    /// from a buffer in scope, perhaps a second from the first, and another kernel writes a
    /// buffer in scope (other than them) from the last.
    pub(super) fn device_temporaries(&mut self, scope: &mut Scope) -> Vec<Stmt> {
        let from = self.any_buffer(scope);
        let shape = scope.buffer(from).expect("in scope").1.clone();
        let mark = scope.mark();
        let iv = self.id();
        let looped = self.rng.chance(60);
        if looped {
            scope.indices.push(IndexVar::Loop(iv));
        }
        let mut body = Vec::new();
        let mut temporaries = Vec::new();
        let mut last = from;
        for _ in 0..if self.rng.chance(40) { 2 } else { 1 } {
            let var = self.id();
            let alloc = self.derived(scope, var, &shape, last);
            scope.extend(&alloc);
            body.push(alloc);
            last = BufVar::Born(var);
            temporaries.push(last);
        }
        let targets: Vec<BufVar> = scope.of_shape(&shape).into_iter().filter(|b| !temporaries.contains(b)).collect();
        let target = *self.rng.pick(&targets);
        body.push(Stmt::Dispatch(self.pair_dispatch(scope, last, target)));
        scope.restore(mark);
        if looped {
            let upper = self.upper_bound(scope);
            vec![Stmt::For(For { iv, i32: false, lower: 0, upper, step: 1, carried: None, body })]
        } else {
            let cond = self.cond(scope);
            vec![Stmt::If { cond, yields: Vec::new(), then_body: body, else_body: Vec::new() }]
        }
    }
}
