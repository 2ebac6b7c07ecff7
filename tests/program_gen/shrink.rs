//! Shrinking a failing case to a small one that still fails: greedy, by edits that make the
//! program or its arguments smaller (delete a statement, unwrap a loop or branch, lower a trip
//! count, simplify a kernel, drop a result, zero an argument), keeping an edit when the result
//! is well formed ([`check`]) and still fails.
//!
//! "Smaller" is a well-founded order ([`measure`]: the text's length, then the arguments), so
//! shrinking ends.

use super::ast::*;
use super::check::check;
use super::render::render;

/// How big a case is: its text's length, then the sum of its trip counts and flags, then the
/// sum of the magnitudes of its buffer arguments' elements.
pub fn measure(case: &Case) -> (usize, u64, u64) {
    let args = &case.args;
    let counts = args.trips.iter().chain(&args.flags).sum();
    let values =
        args.buffers.iter().flatten().map(|v| v.unsigned_abs() as u64).sum::<u64>() + args.seed.unsigned_abs() as u64;
    (render(&case.program).len(), counts, values)
}

/// The smallest case reached from `case` by edits that `fails` still accepts, trying at most
/// `max_tries` candidates.
pub fn shrink(case: Case, mut fails: impl FnMut(&Case) -> bool, max_tries: usize) -> Case {
    let mut best = case;
    let mut tries = 0;
    'progress: loop {
        let size = measure(&best);
        let mut candidates: Vec<((usize, u64, u64), Case)> = candidates(&best)
            .into_iter()
            .filter(|c| check(c).is_ok())
            .map(|c| (measure(&c), c))
            .filter(|(m, _)| *m < size)
            .collect();
        candidates.sort_by_key(|(m, _)| *m);
        candidates.dedup_by(|a, b| a.1 == b.1);
        for (_, candidate) in candidates {
            if tries == max_tries {
                break 'progress;
            }
            tries += 1;
            if fails(&candidate) {
                best = candidate;
                continue 'progress;
            }
        }
        break;
    }
    best
}

/// Every one-edit variant of `case` (some perhaps ill formed).
pub fn candidates(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let with_program = |program: Program| Case { program, args: case.args.clone() };
    let program = &case.program;
    for body in block_variants(&program.body) {
        out.push(with_program(Program { body, ..program.clone() }));
    }
    for (h, helper) in program.helpers.iter().enumerate() {
        for body in block_variants(&helper.body) {
            let mut p = program.clone();
            p.helpers[h].body = body;
            out.push(with_program(p));
        }
    }
    for (h, helper) in program.helpers.iter().enumerate() {
        if helper.aliasing {
            let mut p = program.clone();
            p.helpers[h].aliasing = false;
            out.push(with_program(p));
        }
    }
    for r in 0..program.results.len() {
        let mut p = program.clone();
        p.results.remove(r);
        out.push(with_program(p));
    }
    for (k, kernel) in program.kernels.iter().enumerate() {
        for simpler in kernel_variants(kernel) {
            let mut p = program.clone();
            p.kernels[k] = simpler;
            out.push(with_program(p));
        }
    }
    let args = &case.args;
    let mut with_args = |edit: &dyn Fn(&mut Args)| {
        let mut a = args.clone();
        edit(&mut a);
        if a != *args {
            out.push(Case { program: program.clone(), args: a });
        }
    };
    for t in 0..args.trips.len() {
        with_args(&|a| a.trips[t] = 0);
        with_args(&|a| a.trips[t] = a.trips[t].min(1));
    }
    for f in 0..args.flags.len() {
        with_args(&|a| a.flags[f] = 0);
    }
    with_args(&|a| a.seed = 0);
    for b in 0..args.buffers.len() {
        with_args(&|a| a.buffers[b].iter_mut().for_each(|v| *v = 0));
        with_args(&|a| a.buffers[b].iter_mut().for_each(|v| *v = v.signum()));
    }
    out
}

/// The variants of a block: each statement deleted or replaced by one of its variants.
fn block_variants(block: &[Stmt]) -> Vec<Vec<Stmt>> {
    let mut out = Vec::new();
    for i in 0..block.len() {
        let mut deleted = block.to_vec();
        deleted.remove(i);
        out.push(deleted);
        for replacement in stmt_variants(&block[i]) {
            let mut b = block[..i].to_vec();
            b.extend(replacement);
            b.extend_from_slice(&block[i + 1..]);
            out.push(b);
        }
    }
    out
}

/// The variants of a statement: what may replace it (a list of statements).
fn stmt_variants(stmt: &Stmt) -> Vec<Vec<Stmt>> {
    let mut out: Vec<Vec<Stmt>> = Vec::new();
    let mut one = |s: Stmt| out.push(vec![s]);
    match stmt {
        Stmt::For(f) => {
            let edit = |change: &dyn Fn(&mut For)| {
                let mut g = f.clone();
                change(&mut g);
                Stmt::For(g)
            };
            if f.upper != IndexValue::Const(0) {
                one(edit(&|g| g.upper = IndexValue::Const(0)));
                one(edit(&|g| g.upper = IndexValue::Const(1)));
            }
            if f.lower != 0 {
                one(edit(&|g| g.lower = 0));
            }
            if f.step != 1 {
                one(edit(&|g| g.step = 1));
            }
            if f.i32 {
                one(edit(&|g| g.i32 = false));
            }
            if f.carried.is_some() {
                one(edit(&|g| g.carried = None));
            }
            for body in block_variants(&f.body) {
                one(Stmt::For(For { body, ..f.clone() }));
            }
            out.push(f.body.clone());
        }
        Stmt::While(w) => {
            if w.bound > 1 {
                one(Stmt::While(While { bound: 1, ..w.clone() }));
            }
            for body in block_variants(&w.body) {
                one(Stmt::While(While { body, ..w.clone() }));
            }
            for before in block_variants(&w.before) {
                one(Stmt::While(While { before, ..w.clone() }));
            }
            if w.carried.is_some() {
                one(Stmt::While(While { carried: None, ..w.clone() }));
            }
            let mut unwrapped = w.before.clone();
            unwrapped.extend(w.body.iter().cloned());
            out.push(unwrapped);
        }
        Stmt::If { cond, yields, then_body, else_body } => {
            let with = |then_body: Vec<Stmt>, else_body: Vec<Stmt>| Stmt::If {
                cond: cond.clone(),
                yields: yields.clone(),
                then_body,
                else_body,
            };
            for body in block_variants(then_body) {
                one(with(body, else_body.clone()));
            }
            for body in block_variants(else_body) {
                one(with(then_body.clone(), body));
            }
            for y in 0..yields.len() {
                let mut fewer = yields.clone();
                fewer.remove(y);
                one(Stmt::If {
                    cond: cond.clone(),
                    yields: fewer,
                    then_body: then_body.clone(),
                    else_body: else_body.clone(),
                });
            }
            out.push(then_body.clone());
            out.push(else_body.clone());
        }
        Stmt::HostRange(range) => {
            if range.stride.is_some() {
                one(Stmt::HostRange(HostRange { stride: None, ..range.clone() }));
            }
            if range.store.is_some() {
                one(Stmt::HostRange(HostRange { store: None, ..range.clone() }));
            }
            if range.upper > range.lower + 1 {
                one(Stmt::HostRange(HostRange { upper: range.lower + 1, ..range.clone() }));
            }
        }
        Stmt::Load { from, to: Sink::Store(_) } => one(Stmt::Load { from: from.clone(), to: Sink::Observe }),
        Stmt::Dispatch(d) => {
            for simpler in dispatch_variants(d) {
                one(Stmt::Dispatch(simpler));
            }
        }
        Stmt::CallHost { func, buffers, scalar } if *scalar != IndexValue::Const(0) => {
            one(Stmt::CallHost { func: *func, buffers: buffers.clone(), scalar: IndexValue::Const(0) })
        }
        Stmt::CallHelper { helper, buffers, scalar } if *scalar != IndexValue::Const(0) => {
            one(Stmt::CallHelper { helper: *helper, buffers: buffers.clone(), scalar: IndexValue::Const(0) })
        }
        Stmt::Alloc { var, shape, init, dealloc: true } => {
            one(Stmt::Alloc { var: *var, shape: shape.clone(), init: init.clone(), dealloc: false })
        }
        _ => {}
    }
    out
}

fn dispatch_variants(d: &Dispatch) -> Vec<Dispatch> {
    let mut out = Vec::new();
    if d.scalar != ScalarArg::Const(0) {
        out.push(Dispatch { scalar: ScalarArg::Const(0), ..d.clone() });
    }
    for (i, size) in d.grid.iter().enumerate() {
        if let GridSize::VarPlus(_, c) = size {
            let mut e = d.clone();
            e.grid[i] = GridSize::Const(*c);
            out.push(e);
        }
    }
    out
}

fn kernel_variants(kernel: &Kernel) -> Vec<Kernel> {
    let mut out = Vec::new();
    let mut edit = |change: &dyn Fn(&mut Kernel)| {
        let mut k = kernel.clone();
        change(&mut k);
        if k != *kernel {
            out.push(k);
        }
    };
    edit(&|k| k.guard = Guard::None);
    edit(&|k| k.stride = 1);
    edit(&|k| k.offset = 0);
    edit(&|k| k.grid_guard = false);
    edit(&|k| k.mix_helper = false);
    edit(&|k| k.store_helper = false);
    edit(&|k| k.dims_from_buffer = false);
    edit(&|k| k.workgroup = [1, 1]);
    for j in 0..kernel.params.len() {
        edit(&|k| k.params[j].role = Role::Unused);
        edit(&|k| {
            k.params[j].role = match k.params[j].role {
                Role::ReadShifted(_) => Role::Read,
                Role::WriteAliased(c) | Role::WriteEither { add: c, .. } => Role::Write(c),
                Role::Atomic { kind, element } if kind != "add" => Role::Atomic { kind: "add", element },
                role => role,
            }
        });
    }
    out
}
