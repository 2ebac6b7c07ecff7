//! Makes random well-formed [`Case`]s: programs of the shapes users write (loops with trip
//! counts from arguments, nested loops, convergence loops on a value a kernel wrote, branches
//! on runtime flags, host reads and writes of elements, host copies, host functions with every
//! kind of declared effect, compute helpers called from several places, kernels that read,
//! write, read-write or write only part of a buffer, atomics, buffers born in the program,
//! aliases through `arith.select`, generation flips and rotations of loop-carried buffers) and
//! arguments to run them with.
//!
//! Every choice comes from one [`Rng`] seeded by the caller, so a seed names a case.

use super::ast::*;
use super::check::{racy_param, MaySet, Scope};
use super::constructs::{Construct, Constructs};
use super::rng::Rng;
use std::collections::HashMap;

mod constructs;

/// How big a program to make.
#[derive(Clone, Debug)]
pub struct Config {
    /// The number of `compute.dispatch` ops the text has, at least (the generator stops adding
    /// statements to `@main` once it has this many).
    pub dispatches: usize,
    /// The entry's buffer arguments.
    pub buffers: usize,
    /// The deepest nesting of loops and branches.
    pub max_depth: usize,
    /// The most statements in a nested block.
    pub max_block: usize,
    /// How many compute helpers.
    pub helpers: usize,
    /// The most kernels (past it, dispatches reuse kernels).
    pub max_kernels: usize,
    /// Trip-count arguments are in `0..=max_trip`.
    pub max_trip: u64,
    /// The constructs of [`Construct`] to make besides the others (none: every seed names the
    /// program it named before they existed).
    pub constructs: Constructs,
}

impl Config {
    /// A program with about `size` dispatches over `size` buffer arguments (at least 2, at
    /// most 1,000), in nested loops, branches and helpers: small ones for tests, large ones
    /// for benchmarks.
    pub fn sized(size: usize) -> Config {
        Config {
            dispatches: size.max(1),
            buffers: size.clamp(2, 1000),
            max_depth: 3,
            max_block: 4,
            helpers: if size < 100 { size.min(2) } else { (size / 100).min(64) },
            max_kernels: if size < 100 { 16 } else { 64 },
            max_trip: 3,
            constructs: Constructs::NONE,
        }
    }
}

/// The shapes buffers are drawn from: 1-D and 2-D, sizes that are and are not multiples of
/// the workgroup sizes.
const SHAPES: &[&[u64]] = &[&[4], &[8], &[13], &[16], &[64], &[4, 4], &[3, 5], &[8, 8], &[2, 16]];
const WORKGROUPS_1D: &[u64] = &[1, 4, 8, 64];
const WORKGROUPS_2D: &[[u64; 2]] = &[[1, 1], [4, 4], [8, 8], [4, 2]];
const ATOMICS: &[&str] = &["add", "max", "min"];

/// The case for `seed` as the transfer differential test makes them (and the tests and
/// benchmarks compared with it): 2 to 5 buffers, 2 to 8 dispatches, up to 2 helpers, and
/// `constructs`.
pub fn differential_case(seed: u64, constructs: Constructs) -> Case {
    let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9));
    let mut config = Config::sized(rng.between(2, 8) as usize);
    config.buffers = rng.between(2, 5) as usize;
    config.helpers = rng.between(0, 2) as usize;
    config.constructs = constructs;
    generate_case(seed, &config)
}

/// A random case for `seed`, of the size `config` asks for.
pub fn generate_case(seed: u64, config: &Config) -> Case {
    let mut rng = Rng::new(seed);
    let palette: Vec<Shape> = {
        let count = rng.between(2, 4) as usize;
        (0..count).map(|_| Shape(rng.pick(SHAPES).to_vec())).collect()
    };
    let mut buffers: Vec<Shape> = (0..config.buffers).map(|_| rng.pick(&palette).clone()).collect();
    if buffers.len() >= 2 && rng.chance(60) {
        // Selects, copies and flips need two buffers of one shape.
        buffers[1] = buffers[0].clone();
    }
    let program = Program {
        buffers,
        trips: rng.between(1, 3) as u32,
        flags: rng.between(0, 2) as u32,
        kernels: Vec::new(),
        host_funcs: Vec::new(),
        helpers: Vec::new(),
        body: Vec::new(),
        results: Vec::new(),
    };
    let mut gen = Gen {
        rng,
        config,
        program,
        palette,
        next_id: 0,
        dispatches: 0,
        fill_kernels: HashMap::new(),
        derive_kernels: HashMap::new(),
    };
    gen.helpers();
    // Count only @main's dispatches: a helper's are printed only if something calls it.
    gen.dispatches = 0;
    gen.main();
    let args = gen.args();
    let case = Case { program: gen.program, args };
    if config.dispatches <= 200 {
        if let Err(e) = super::check::check(&case) {
            panic!("the generator made an ill-formed case (seed {seed}): {e}");
        }
    }
    case
}

struct Gen<'c> {
    rng: Rng,
    config: &'c Config,
    program: Program,
    palette: Vec<Shape>,
    next_id: u32,
    dispatches: usize,
    fill_kernels: HashMap<Shape, usize>,
    derive_kernels: HashMap<Shape, usize>,
}

impl Gen<'_> {
    fn id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    fn on(&self, construct: Construct) -> bool {
        self.config.constructs.has(construct)
    }

    fn helpers(&mut self) {
        for h in 0..self.config.helpers {
            let aliasing = self.on(Construct::SharedHelperArgs) && self.rng.chance(50);
            let count = if aliasing { self.rng.between(2, 3) } else { self.rng.between(1, 3) } as usize;
            let mut params: Vec<(u32, Shape)> = (0..count)
                .map(|_| {
                    let shape = self.rng.pick(&self.palette).clone();
                    (self.id(), shape)
                })
                .collect();
            if aliasing {
                // Parameters of one shape, which a caller may pass one buffer for.
                for j in 1..count {
                    if self.rng.chance(70) {
                        params[j].1 = params[0].1.clone();
                    }
                }
            }
            self.program.helpers.push(Helper { params, aliasing, body: Vec::new() });
            let mut scope = Scope::helper(&self.program, h);
            let mut body = self.block(&mut scope, 1);
            if self.on(Construct::RecursiveHelpers) && self.rng.chance(60) {
                let buffers = self.self_call_args(h);
                let at = self.rng.below(body.len() + 1);
                body.insert(at, Stmt::CallSelf { buffers });
            }
            self.program.helpers[h].body = body;
        }
    }

    /// The buffers helper `h` passes to itself: its parameters, those of one shape perhaps
    /// swapped, or (an aliasing helper) one for several.
    fn self_call_args(&mut self, h: usize) -> Vec<BufVar> {
        let helper = &self.program.helpers[h];
        let params: Vec<(u32, Shape)> = helper.params.clone();
        let aliasing = helper.aliasing;
        let mut buffers: Vec<BufVar> = params.iter().map(|(id, _)| BufVar::Param(*id)).collect();
        let same: Vec<(usize, usize)> = (0..params.len())
            .flat_map(|a| (a + 1..params.len()).map(move |b| (a, b)))
            .filter(|&(a, b)| params[a].1 == params[b].1)
            .collect();
        if let Some(&(a, b)) = (!same.is_empty()).then(|| self.rng.pick(&same)) {
            if aliasing && self.rng.chance(60) {
                buffers[b] = buffers[a];
            } else if self.rng.chance(50) {
                buffers.swap(a, b);
            }
        }
        buffers
    }

    fn main(&mut self) {
        let mut scope = Scope::main(&self.program);
        let mut body = Vec::new();
        while self.dispatches < self.config.dispatches || body.is_empty() {
            let stmts = self.stmt(&mut scope, 0);
            for stmt in &stmts {
                scope.extend(stmt);
            }
            body.extend(stmts);
        }
        self.program.body = body;
        let count = self.rng.between(0, 2);
        for _ in 0..count {
            let k = self.rng.below(self.program.buffers.len());
            let shape = self.program.buffers[k].clone();
            let index = shape.0.iter().map(|&d| IndexValue::Const(self.rng.below(d as usize) as u64)).collect();
            self.program.results.push(Access { buffer: BufVar::Entry(k as u32), index });
        }
    }

    fn args(&mut self) -> Args {
        let rng = &mut self.rng;
        let buffers = self
            .program
            .buffers
            .iter()
            .map(|s| (0..s.elements()).map(|_| rng.between(-20, 20) as i32).collect())
            .collect();
        let max_trip = self.config.max_trip as i64;
        let trips = (0..self.program.trips)
            .map(|_| if rng.chance(25) { 0 } else { rng.between(1, max_trip.max(1)) as u64 })
            .collect();
        let flags = (0..self.program.flags).map(|_| rng.below(2) as u64).collect();
        Args { buffers, trips, flags, seed: rng.between(-100, 100) as i32 }
    }

    /// A nested block of 1 to `max_block` statements.
    fn block(&mut self, scope: &mut Scope, depth: usize) -> Vec<Stmt> {
        let mark = scope.mark();
        let count = self.rng.between(1, self.config.max_block as i64);
        let mut body = Vec::new();
        for _ in 0..count {
            let stmts = self.stmt(scope, depth);
            for stmt in &stmts {
                scope.extend(stmt);
            }
            body.extend(stmts);
        }
        scope.restore(mark);
        body
    }

    /// Two distinct buffers of one shape, if there are.
    fn pair(&mut self, scope: &Scope) -> Option<(BufVar, BufVar)> {
        let shapes = scope.shared_shapes();
        if shapes.is_empty() {
            return None;
        }
        let all = scope.of_shape(self.rng.pick::<&Shape>(&shapes));
        let a = self.rng.below(all.len());
        let b = (a + 1 + self.rng.below(all.len() - 1)) % all.len();
        Some((all[a], all[b]))
    }

    /// Two to four distinct buffers of one shape, for a rotation (mostly two: a ping-pong).
    fn rotation(&mut self, scope: &Scope) -> Option<Vec<BufVar>> {
        let (a, b) = self.pair(scope)?;
        let mut init = vec![a, b];
        let want = match self.rng.below(10) {
            0..=5 => 2,
            6..=7 => 3,
            _ => 4,
        };
        let shape = scope.buffer(a).expect("in scope").1.clone();
        let mut others: Vec<BufVar> = scope.of_shape(&shape).into_iter().filter(|v| !init.contains(v)).collect();
        while init.len() < want && !others.is_empty() {
            let next = others.remove(self.rng.below(others.len()));
            init.push(next);
        }
        Some(init)
    }

    /// One statement (or a few that belong together), with the names it defines.
    fn stmt(&mut self, scope: &mut Scope, depth: usize) -> Vec<Stmt> {
        let nest = depth < self.config.max_depth;
        // Names defined in a block stay in scope to its end: keep the outermost blocks of big
        // programs from piling them up.
        let define = scope.buffers().len() < self.config.buffers + 64;
        let weights = [
            30,
            12 * nest as u32,
            4 * nest as u32,
            7 * nest as u32,
            9,
            6,
            4,
            6,
            7,
            5 * define as u32,
            5 * define as u32,
            4 * nest as u32,
        ];
        // The constructs, each with no weight unless asked for (so that without them the
        // draws are those of before).
        let weight = |c: Construct, w: u32| if self.on(c) { w } else { 0 };
        let constructs = [
            weight(Construct::FreshFor, 4 * (nest && define) as u32),
            weight(Construct::FreshWhile, 3 * (nest && define) as u32),
            weight(Construct::IfResults, 4 * (nest && define) as u32),
            weight(Construct::IfSwap, 3 * (nest && define) as u32),
            weight(Construct::WhilePingPong, 3 * nest as u32),
            weight(Construct::DoWhile, 3 * nest as u32),
            weight(Construct::RuntimeIndex, 4),
            weight(Construct::HostRange, 4),
            weight(Construct::HalfWrite, 4),
            weight(Construct::HostScatter, 3),
            weight(Construct::DeviceTemporaries, 4 * nest as u32),
        ];
        let mut weights = weights.to_vec();
        if constructs.iter().any(|&w| w > 0) {
            weights.extend(constructs);
        }
        match self.rng.weighted(&weights) {
            1 => vec![self.for_loop(scope, depth)],
            2 => vec![self.while_loop(scope, depth)],
            3 => {
                let cond = self.cond(scope);
                let then_body = self.block(scope, depth + 1);
                let else_body = if self.rng.chance(40) { Vec::new() } else { self.block(scope, depth + 1) };
                vec![Stmt::If { cond, yields: Vec::new(), then_body, else_body }]
            }
            4 => {
                let from = self.access(scope);
                let to = if self.rng.chance(50) { Sink::Observe } else { Sink::Store(self.access(scope)) };
                vec![Stmt::Load { from, to }]
            }
            5 => {
                let value = match self.rng.below(3) {
                    0 => Value::Const(self.rng.between(-20, 20) as i32),
                    1 if scope.helper.is_none() => Value::Seed,
                    _ => match self.index_var(scope) {
                        Some(var) => Value::Var(var),
                        None => Value::Const(7),
                    },
                };
                vec![Stmt::Store { value, to: self.access(scope) }]
            }
            6 => match self.pair(scope) {
                Some((from, to)) => vec![Stmt::Copy { from, to }],
                None => vec![self.dispatch_stmt(scope)],
            },
            7 => vec![self.call_host(scope)],
            8 => match self.call_helper(scope) {
                Some(stmt) => vec![stmt],
                None => vec![self.dispatch_stmt(scope)],
            },
            9 => vec![self.alloc(scope)],
            10 => match self.pair(scope) {
                Some((if_true, if_false)) => {
                    let cond = self.cond(scope);
                    vec![Stmt::Select { var: self.id(), cond, if_true, if_false }]
                }
                None => vec![self.dispatch_stmt(scope)],
            },
            11 => match self.pair(scope) {
                Some(pair) => self.flip_loop(scope, depth, pair),
                None => vec![self.dispatch_stmt(scope)],
            },
            12 => self.fresh_loop(scope, depth, false),
            13 => self.fresh_loop(scope, depth, true),
            14 => self.if_results(scope, depth),
            15 => self.if_swap(scope, depth),
            16 => self.while_ping_pong(scope, depth),
            17 => self.do_while(scope, depth),
            18 => self.runtime_index(scope),
            19 => self.host_range(scope),
            20 => self.half_write(scope),
            21 => self.host_scatter(scope),
            22 => self.device_temporaries(scope),
            _ => vec![self.dispatch_stmt(scope)],
        }
    }

    // ----- values ---------------------------------------------------------------------------

    fn index_var(&mut self, scope: &Scope) -> Option<IndexVar> {
        if scope.indices.is_empty() {
            None
        } else {
            Some(*self.rng.pick(&scope.indices))
        }
    }

    fn index_value(&mut self, scope: &Scope) -> IndexValue {
        match self.index_var(scope) {
            Some(var) if self.rng.chance(60) => IndexValue::Var(var),
            _ => IndexValue::Const(self.rng.between(0, 4) as u64),
        }
    }

    fn access_of(&mut self, scope: &Scope, buffer: BufVar) -> Access {
        let shape = scope.buffer(buffer).expect("in scope").1.clone();
        let index = shape
            .0
            .iter()
            .map(|&d| match self.index_var(scope) {
                Some(var) if self.rng.chance(40) => IndexValue::Var(var),
                _ => IndexValue::Const(self.rng.below(d as usize) as u64),
            })
            .collect();
        Access { buffer, index }
    }

    fn any_buffer(&mut self, scope: &Scope) -> BufVar {
        self.rng.pick(scope.buffers()).0
    }

    fn access(&mut self, scope: &Scope) -> Access {
        let buffer = self.any_buffer(scope);
        self.access_of(scope, buffer)
    }

    fn cond(&mut self, scope: &Scope) -> Cond {
        let flags: Vec<IndexVar> = scope.indices.iter().copied().filter(|v| matches!(v, IndexVar::Flag(_))).collect();
        match self.rng.below(4) {
            0 if !flags.is_empty() => Cond::NonZero(*self.rng.pick(&flags)),
            1 | 2 if !scope.indices.is_empty() => {
                let var = *self.rng.pick(&scope.indices);
                if self.rng.chance(50) {
                    Cond::Odd(var)
                } else {
                    Cond::Even(var)
                }
            }
            _ => Cond::Probe(self.access(scope), self.rng.between(-10, 10) as i32),
        }
    }

    // ----- control flow ---------------------------------------------------------------------

    fn upper_bound(&mut self, scope: &Scope) -> IndexValue {
        // Mostly a trip count the program cannot know (an argument, a helper's parameter, an
        // outer loop's variable); sometimes a constant, zero included.
        let vars: Vec<IndexVar> = scope
            .indices
            .iter()
            .copied()
            .filter(|v| matches!(v, IndexVar::Trip(_) | IndexVar::Scalar(_) | IndexVar::Loop(_)))
            .collect();
        if !vars.is_empty() && self.rng.chance(80) {
            IndexValue::Var(*self.rng.pick(&vars))
        } else {
            IndexValue::Const(self.rng.between(0, 3) as u64)
        }
    }

    /// Whether a new loop's variable is an `i32`, and its lower bound (`usual` unless it is
    /// made negative), as the constructs on allow.
    fn loop_kind(&mut self, usual: i64) -> (bool, i64) {
        let i32 = self.on(Construct::I32Loops) && self.rng.chance(35);
        let negative = self.on(Construct::NegativeBounds) && self.rng.chance(35);
        (i32, if negative { self.rng.between(-3, -1) } else { usual })
    }

    fn for_loop(&mut self, scope: &mut Scope, depth: usize) -> Stmt {
        let iv = self.id();
        let lower = if self.rng.chance(15) { 1 } else { 0 };
        let step = if self.rng.chance(15) { 2 } else { 1 };
        let upper = self.upper_bound(scope);
        let (i32, lower) = self.loop_kind(lower);
        let carried = match self.rotation(scope) {
            Some(init) if self.rng.chance(20) => {
                let vars = init.iter().map(|_| self.id()).collect();
                Some(Carried { init, vars, next: Vec::new(), results: Vec::new() })
            }
            _ => None,
        };
        let mark = scope.mark();
        scope.indices.push(IndexVar::Loop(iv));
        if lower < 0 {
            scope.signed.insert(IndexVar::Loop(iv));
        }
        let mut body = Vec::new();
        if let Some(c) = &carried {
            let shape = scope.buffer(c.init[0]).expect("in scope").1.clone();
            let may: MaySet = c.init.iter().flat_map(|&b| scope.buffer(b).expect("in scope").2.clone()).collect();
            for &id in &c.vars {
                scope.push(BufVar::Carried(id), shape.clone(), may.clone());
            }
            // The rotation reads one and writes the next, as a ping-pong does.
            let (x, y) = (BufVar::Carried(c.vars[0]), BufVar::Carried(c.vars[1]));
            body.push(Stmt::Dispatch(self.pair_dispatch(scope, x, y)));
        }
        body.extend(self.block(scope, depth + 1));
        scope.restore(mark);
        Stmt::For(For { iv, i32, lower, upper, step, carried, body })
    }

    /// A generation flip: each iteration reads one buffer and writes the other, the two chosen
    /// by the iteration's parity; after the loop, a host copy puts the newest into the first
    /// when the trip count is odd.
    fn flip_loop(&mut self, scope: &mut Scope, depth: usize, (a, b): (BufVar, BufVar)) -> Vec<Stmt> {
        let iv = self.id();
        let upper = self.upper_bound(scope);
        let (i32, lower) = self.loop_kind(0);
        let mark = scope.mark();
        scope.indices.push(IndexVar::Loop(iv));
        if lower < 0 {
            scope.signed.insert(IndexVar::Loop(iv));
        }
        let parity = if self.rng.chance(50) { Cond::Even(IndexVar::Loop(iv)) } else { Cond::Odd(IndexVar::Loop(iv)) };
        let (src, dst) = (self.id(), self.id());
        let mut body = vec![
            Stmt::Select { var: src, cond: parity.clone(), if_true: a, if_false: b },
            Stmt::Select { var: dst, cond: parity, if_true: b, if_false: a },
        ];
        for stmt in &body {
            scope.extend(stmt);
        }
        body.push(Stmt::Dispatch(self.pair_dispatch(scope, BufVar::Select(src), BufVar::Select(dst))));
        if self.rng.chance(50) {
            body.extend(self.block(scope, depth + 1));
        }
        scope.restore(mark);
        let mut stmts = vec![Stmt::For(For { iv, i32, lower, upper, step: 1, carried: None, body })];
        if let IndexValue::Var(var) = upper {
            if self.rng.chance(70) {
                stmts.push(Stmt::If {
                    cond: Cond::Odd(var),
                    yields: Vec::new(),
                    then_body: vec![Stmt::Copy { from: b, to: a }],
                    else_body: vec![],
                });
            }
        }
        stmts
    }

    fn while_loop(&mut self, scope: &mut Scope, depth: usize) -> Stmt {
        let counter = self.id();
        let buffer = self.any_buffer(scope);
        let shape = scope.buffer(buffer).expect("in scope").1.clone();
        let element = self.rng.below(shape.elements() as usize) as u64;
        let index = match shape.rank() {
            1 => vec![IndexValue::Const(element)],
            _ => vec![IndexValue::Const(element / shape.0[1]), IndexValue::Const(element % shape.0[1])],
        };
        let probe = Access { buffer, index };
        let mark = scope.mark();
        scope.indices.push(IndexVar::While(counter));
        let mut body = self.block(scope, depth + 1);
        // The condition is a value a kernel in the body writes.
        let forced = self.dispatch(scope, Some((buffer, element)));
        let at = self.rng.below(body.len() + 1);
        body.insert(at, Stmt::Dispatch(forced));
        scope.restore(mark);
        Stmt::While(While {
            counter,
            bound: self.rng.between(1, 4) as u64,
            probe,
            threshold: self.rng.between(-10, 10) as i32,
            before: Vec::new(),
            carried: None,
            body,
        })
    }

    // ----- calls and buffers ----------------------------------------------------------------

    fn call_host(&mut self, scope: &Scope) -> Stmt {
        let fits = |func: &HostFunc| func.params.iter().all(|(s, _)| scope.has_shape(s));
        let count = self.program.host_funcs.len();
        let reuse = count > 0 && (count >= self.config.max_kernels || self.rng.chance(50));
        let existing =
            (0..if reuse { 6 } else { 0 }).map(|_| self.rng.below(count)).find(|&f| fits(&self.program.host_funcs[f]));
        let func = if let Some(func) = existing {
            func
        } else {
            let count = self.rng.between(1, 2);
            let params = (0..count)
                .map(|_| {
                    let buffer = self.any_buffer(scope);
                    let shape = scope.buffer(buffer).expect("in scope").1.clone();
                    let effect = *self.rng.pick(&[Effect::Read, Effect::Write, Effect::ReadWrite, Effect::Undeclared]);
                    (shape, effect)
                })
                .collect();
            let returns = self.rng.chance(40);
            self.program.host_funcs.push(HostFunc { params, returns });
            self.program.host_funcs.len() - 1
        };
        let shapes: Vec<Shape> = self.program.host_funcs[func].params.iter().map(|(s, _)| s.clone()).collect();
        let buffers = shapes.iter().map(|s| *self.rng.pick(&scope.of_shape(s))).collect();
        Stmt::CallHost { func, buffers, scalar: self.index_value(scope) }
    }

    fn call_helper(&mut self, scope: &Scope) -> Option<Stmt> {
        let limit = scope.helper.unwrap_or(self.program.helpers.len());
        if limit == 0 {
            return None;
        }
        let start = self.rng.below(limit);
        for helper in (0..limit).map(|k| (start + k) % limit) {
            let shapes: Vec<Shape> = self.program.helpers[helper].params.iter().map(|(_, s)| s.clone()).collect();
            if self.program.helpers[helper].aliasing {
                if shapes.iter().all(|s| scope.has_shape(s)) {
                    return Some(self.aliasing_call(scope, helper, &shapes));
                }
                continue;
            }
            let mut chosen: Vec<(BufVar, &MaySet)> = Vec::new();
            for shape in &shapes {
                let free: Vec<(BufVar, &MaySet)> = scope
                    .buffers()
                    .iter()
                    .filter(|(_, s, may)| s == shape && chosen.iter().all(|(_, other)| other.is_disjoint(may)))
                    .map(|(v, _, may)| (*v, may))
                    .collect();
                if free.is_empty() {
                    break;
                }
                chosen.push(*self.rng.pick(&free));
            }
            if chosen.len() == shapes.len() {
                let buffers = chosen.into_iter().map(|(v, _)| v).collect();
                return Some(Stmt::CallHelper { helper, buffers, scalar: self.depth_value(scope) });
            }
        }
        None
    }

    /// A call of an aliasing helper: mostly one buffer for the parameters of one shape.
    fn aliasing_call(&mut self, scope: &Scope, helper: usize, shapes: &[Shape]) -> Stmt {
        let mut buffers: Vec<BufVar> = Vec::new();
        for (j, shape) in shapes.iter().enumerate() {
            let earlier: Vec<BufVar> = (0..j).filter(|&k| shapes[k] == *shape).map(|k| buffers[k]).collect();
            let buffer = if !earlier.is_empty() && self.rng.chance(70) {
                *self.rng.pick(&earlier)
            } else {
                *self.rng.pick(&scope.of_shape(shape))
            };
            buffers.push(buffer);
        }
        Stmt::CallHelper { helper, buffers, scalar: self.depth_value(scope) }
    }

    /// A helper's index argument, which its loops may count to and its grids use: a count
    /// (when every index name in scope is one, the same draws as [`Self::index_value`]).
    fn depth_value(&mut self, scope: &Scope) -> IndexValue {
        let vars = scope.counts();
        match (!vars.is_empty()).then(|| *self.rng.pick(&vars)) {
            Some(var) if self.rng.chance(60) => IndexValue::Var(var),
            _ => IndexValue::Const(self.rng.between(0, 4) as u64),
        }
    }

    fn alloc(&mut self, scope: &Scope) -> Stmt {
        let var = self.id();
        let shape = if self.rng.chance(60) {
            let buffer = self.any_buffer(scope);
            scope.buffer(buffer).expect("in scope").1.clone()
        } else {
            self.rng.pick(&self.palette).clone()
        };
        self.alloc_with(scope, var, shape)
    }

    /// `%n{var} = buffer.alloc()` of `shape`, filled by a kernel or copied from a buffer.
    fn alloc_with(&mut self, scope: &Scope, var: u32, shape: Shape) -> Stmt {
        let sources = scope.of_shape(&shape);
        let init = if !sources.is_empty() && self.rng.chance(40) {
            Init::CopyFrom(*self.rng.pick(&sources))
        } else {
            let kernel = self.fill_kernel(&shape);
            self.dispatches += 1;
            let grid = vec![GridSize::Const(shape.elements() + self.rng.between(0, 2) as u64)];
            let scalar = self.scalar(scope);
            Init::Dispatch(Dispatch { kernel, grid, buffers: vec![BufVar::Born(var)], scalar })
        };
        Stmt::Alloc { var, shape, init, dealloc: self.rng.chance(50) }
    }

    /// A kernel that writes every element of one buffer of `shape`.
    fn fill_kernel(&mut self, shape: &Shape) -> usize {
        if let Some(&k) = self.fill_kernels.get(shape) {
            return k;
        }
        let kernel = Kernel {
            params: vec![KernelParam { shape: shape.clone(), role: Role::Write(self.rng.between(-9, 9) as i32) }],
            dims: 1,
            workgroup: [*self.rng.pick(WORKGROUPS_1D), 1],
            stride: 1,
            offset: 0,
            grid_guard: self.rng.chance(50),
            guard: Guard::None,
            mix_helper: false,
            store_helper: self.rng.chance(30),
            dims_from_buffer: self.rng.chance(50),
        };
        self.program.kernels.push(kernel);
        let k = self.program.kernels.len() - 1;
        self.fill_kernels.insert(shape.clone(), k);
        k
    }

    // ----- dispatches -----------------------------------------------------------------------

    fn dispatch_stmt(&mut self, scope: &Scope) -> Stmt {
        Stmt::Dispatch(self.dispatch(scope, None))
    }

    fn scalar(&mut self, scope: &Scope) -> ScalarArg {
        match self.rng.below(4) {
            0 => ScalarArg::Const(self.rng.between(-9, 9) as i32),
            1 if scope.helper.is_none() => ScalarArg::Seed,
            2 => match self.index_var(scope) {
                Some(var) => ScalarArg::Var(var),
                None => ScalarArg::Const(3),
            },
            _ => ScalarArg::Load(self.access(scope)),
        }
    }

    fn may_sets<'s>(scope: &'s Scope, buffers: &[BufVar]) -> Vec<&'s MaySet> {
        buffers.iter().map(|b| &scope.buffer(*b).expect("in scope").2).collect()
    }

    /// A dispatch of a two-parameter kernel that reads `src` and writes `dst`.
    fn pair_dispatch(&mut self, scope: &Scope, src: BufVar, dst: BufVar) -> Dispatch {
        let shape = scope.buffer(src).expect("in scope").1.clone();
        let read = if self.rng.chance(70) { Role::Read } else { Role::ReadWrite(self.rng.between(-9, 9) as i32) };
        let write = Role::Write(self.rng.between(-9, 9) as i32);
        let params = vec![KernelParam { shape: shape.clone(), role: read }, KernelParam { shape, role: write }];
        let kernel = self.new_kernel(params);
        self.finish_dispatch(scope, kernel, vec![src, dst])
    }

    /// A dispatch; with `forced = (buffer, element)`, one whose kernel writes `buffer` (at
    /// `element` if it does so atomically).
    fn dispatch(&mut self, scope: &Scope, forced: Option<(BufVar, u64)>) -> Dispatch {
        if forced.is_none() && !self.program.kernels.is_empty() {
            let reuse = self.program.kernels.len() >= self.config.max_kernels || self.rng.chance(45);
            for _ in 0..if reuse { 6 } else { 0 } {
                let k = self.rng.below(self.program.kernels.len());
                if self.fill_kernels.values().any(|&f| f == k) && self.rng.chance(70) {
                    continue;
                }
                let shapes: Vec<Shape> = self.program.kernels[k].params.iter().map(|p| p.shape.clone()).collect();
                if !shapes.iter().all(|s| scope.has_shape(s)) {
                    continue;
                }
                let candidates: Vec<Vec<BufVar>> = shapes.iter().map(|s| scope.of_shape(s)).collect();
                // Mostly distinct buffers where the shapes allow (aliases come often enough).
                let mut buffers: Vec<BufVar> = Vec::new();
                for c in &candidates {
                    let fresh: Vec<BufVar> = c.iter().copied().filter(|b| !buffers.contains(b)).collect();
                    let pool = if !fresh.is_empty() && self.rng.chance(85) { &fresh } else { c };
                    buffers.push(*self.rng.pick(pool));
                }
                if racy_param(&self.program.kernels[k], &Self::may_sets(scope, &buffers)).is_none() {
                    return self.finish_dispatch(scope, k, buffers);
                }
            }
        }
        let count = self.rng.between(1, 4) as usize;
        let mut buffers: Vec<BufVar> = Vec::new();
        for _ in 0..count {
            let buffer = if !buffers.is_empty() && self.rng.chance(10) {
                *self.rng.pick(&buffers)
            } else {
                self.any_buffer(scope)
            };
            buffers.push(buffer);
        }
        let forced_at = forced.map(|(buffer, element)| {
            let at = self.rng.below(count);
            buffers[at] = buffer;
            (at, element)
        });
        let shapes: Vec<Shape> = buffers.iter().map(|b| scope.buffer(*b).expect("in scope").1.clone()).collect();
        let mut params: Vec<KernelParam> = shapes
            .iter()
            .enumerate()
            .map(|(j, shape)| {
                let c = self.rng.between(-9, 9) as i32;
                let same: Vec<usize> = (0..shapes.len()).filter(|&k| k != j && shapes[k] == *shape).collect();
                let role = match self.rng.weighted(&[5, 30, 7, 25, 5, 4, 20, 6]) {
                    0 => Role::Unused,
                    1 => Role::Read,
                    2 => Role::ReadShifted(self.rng.between(1, 3) as u64),
                    4 => Role::WriteAliased(c),
                    5 if !same.is_empty() => Role::WriteEither { other: *self.rng.pick(&same), add: c },
                    6 => Role::ReadWrite(c),
                    7 => Role::Atomic {
                        kind: self.rng.pick::<&str>(ATOMICS),
                        element: self.rng.below(shape.elements() as usize) as u64,
                    },
                    _ => Role::Write(c),
                };
                KernelParam { shape: shape.clone(), role }
            })
            .collect();
        if let Some((at, element)) = forced_at {
            let c = self.rng.between(-9, 9) as i32;
            params[at].role = match self.rng.below(3) {
                0 => Role::Write(c),
                1 => Role::ReadWrite(c),
                _ => Role::Atomic { kind: self.rng.pick::<&str>(ATOMICS), element },
            };
        }
        // Keep it race free: demote what may alias.
        loop {
            let probe = Kernel { params: params.clone(), ..self.plain_kernel() };
            match racy_param(&probe, &Self::may_sets(scope, &buffers)) {
                None => break,
                Some(j) => {
                    params[j].role = match params[j].role {
                        Role::Atomic { .. } => Role::ReadWrite(1),
                        _ => Role::Read,
                    }
                }
            }
        }
        let kernel = self.new_kernel(params);
        self.finish_dispatch(scope, kernel, buffers)
    }

    fn plain_kernel(&self) -> Kernel {
        Kernel {
            params: Vec::new(),
            dims: 1,
            workgroup: [1, 1],
            stride: 1,
            offset: 0,
            grid_guard: false,
            guard: Guard::None,
            mix_helper: false,
            store_helper: false,
            dims_from_buffer: false,
        }
    }

    /// A kernel over `params` with random indexing, workgroup and guard.
    fn new_kernel(&mut self, params: Vec<KernelParam>) -> usize {
        let two_d = params.iter().any(|p| p.shape.rank() == 2) && self.rng.chance(40);
        let readers: Vec<usize> =
            (0..params.len()).filter(|&j| matches!(params[j].role, Role::Read | Role::ReadWrite(_))).collect();
        let guard = match self.rng.weighted(&[45, 10, 15, 10, 15]) {
            1 => Guard::Below(self.rng.between(1, 8) as u64),
            2 => Guard::HalfOf(self.rng.below(params.len())),
            3 => Guard::Even,
            4 if !readers.is_empty() => Guard::Positive(*self.rng.pick(&readers)),
            _ => Guard::None,
        };
        let kernel = Kernel {
            dims: if two_d { 2 } else { 1 },
            workgroup: if two_d { *self.rng.pick(WORKGROUPS_2D) } else { [*self.rng.pick(WORKGROUPS_1D), 1] },
            stride: if two_d { 1 } else { *self.rng.pick(&[1, 1, 1, 1, 1, 2, 3]) },
            offset: if two_d || self.rng.chance(85) { 0 } else { self.rng.between(1, 2) as u64 },
            grid_guard: self.rng.chance(40),
            guard,
            mix_helper: self.rng.chance(25),
            store_helper: self.rng.chance(25),
            dims_from_buffer: self.rng.chance(50),
            params,
        };
        self.program.kernels.push(kernel);
        self.program.kernels.len() - 1
    }

    fn finish_dispatch(&mut self, scope: &Scope, kernel: usize, buffers: Vec<BufVar>) -> Dispatch {
        self.dispatches += 1;
        let k = &self.program.kernels[kernel];
        let grid = if k.dims == 1 {
            let extent = k.params.iter().map(|p| p.shape.elements()).max().unwrap_or(1);
            let cover = extent.saturating_sub(k.offset).div_ceil(k.stride).max(1);
            let vars = scope.counts();
            vec![match self.rng.weighted(&[55, 15, 15, 15]) {
                1 => GridSize::Const(self.rng.between(1, cover as i64) as u64),
                2 => GridSize::Const(cover + self.rng.between(1, 3) as u64),
                3 if !vars.is_empty() => {
                    GridSize::VarPlus(*self.rng.pick(&vars), self.rng.between(1, cover as i64) as u64)
                }
                _ => GridSize::Const(cover),
            }]
        } else {
            let rows = k.params.iter().filter(|p| p.shape.rank() == 2).map(|p| p.shape.0[0]).max().unwrap_or(1);
            let cols = k.params.iter().filter(|p| p.shape.rank() == 2).map(|p| p.shape.0[1]).max().unwrap_or(1);
            [cols, rows]
                .into_iter()
                .map(|full| {
                    GridSize::Const(match self.rng.weighted(&[60, 25, 15]) {
                        1 => self.rng.between(1, full as i64) as u64,
                        2 => full + self.rng.between(1, 2) as u64,
                        _ => full,
                    })
                })
                .collect()
        };
        let scalar = self.scalar(scope);
        Dispatch { kernel, grid, buffers, scalar }
    }
}
