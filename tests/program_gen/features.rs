//! What a case exercises, by name: the list the differential test must cover (loops with a
//! zero trip count at run time, nested loops, convergence loops, branches on runtime flags, host
//! reads and writes, host copies, each kind of host-function effect, helpers called from
//! several places, each kind of kernel access, atomics, born buffers, aliases, flips, and the
//! [constructs](super::constructs) when they are on). The test checks that the generator keeps
//! making each of them often.

use super::ast::*;
use super::constructs::{Construct, Constructs};
use std::collections::{BTreeMap, BTreeSet};

/// Whether `body` (a loop's without carried buffers, or a branch's without results) makes a
/// buffer a kernel derives, which therefore dies in it.
fn derives_a_temporary(body: &[Stmt]) -> bool {
    body.iter().any(|s| matches!(s, Stmt::Alloc { init: Init::Derive(_), .. }))
}

/// The names of the features `case` exercises.
pub fn features(case: &Case) -> BTreeSet<&'static str> {
    let mut found = Features { case, names: BTreeSet::new(), helper_calls: BTreeMap::new() };
    let program = &case.program;
    found.block(&program.body, 0);
    for helper in &program.helpers {
        found.block(&helper.body, 0);
    }
    let names = &mut found.names;
    if found.helper_calls.values().any(|&n| n >= 2) {
        names.insert("helper called from several places");
    }
    let shapes: BTreeSet<&Shape> = program.buffers.iter().collect();
    if shapes.len() >= 2 {
        names.insert("buffers of different sizes");
    }
    if !program.results.is_empty() {
        names.insert("entry results");
    }
    found.names
}

struct Features<'c> {
    case: &'c Case,
    names: BTreeSet<&'static str>,
    helper_calls: BTreeMap<usize, usize>,
}

impl Features<'_> {
    fn block(&mut self, block: &[Stmt], loops: usize) {
        for stmt in block {
            self.stmt(stmt, loops);
        }
    }

    fn access(&mut self, access: &Access, load: bool) {
        let var = access.index.iter().any(|i| matches!(i, IndexValue::Var(_)));
        self.names.insert(match (load, var) {
            (true, false) => "host load of a constant element",
            (true, true) => "host load of a variable element",
            (false, false) => "host store to a constant element",
            (false, true) => "host store to a variable element",
        });
    }

    fn cond(&mut self, cond: &Cond) {
        self.names.insert(match cond {
            Cond::NonZero(IndexVar::Flag(_)) => "branch on a runtime flag",
            Cond::Probe(..) => "branch on a value the host reads",
            _ => "branch on an index's parity",
        });
    }

    fn dispatch(&mut self, dispatch: &Dispatch) {
        let kernel = &self.case.program.kernels[dispatch.kernel];
        for param in &kernel.params {
            self.names.insert(match param.role {
                Role::Unused => "kernel ignores a buffer",
                Role::Read => "kernel reads",
                Role::ReadShifted(_) => "kernel reads other work items' elements",
                Role::Write(_) => "kernel writes",
                Role::WriteAliased(_) => "kernel writes through a local alias",
                Role::WriteEither { .. } => "kernel writes one of two buffers",
                Role::ReadWrite(_) => "kernel reads and writes",
                Role::Atomic { .. } => "kernel updates atomically",
            });
        }
        let partial = match kernel.guard {
            Guard::None => None,
            Guard::Positive(_) => Some("kernel writes under a data-dependent guard"),
            _ => Some("kernel writes under a guard on its id"),
        };
        self.names.extend(partial);
        if kernel.stride > 1 {
            self.names.insert("kernel with a stride");
        }
        if kernel.dims == 2 {
            self.names.insert("2-D dispatch");
        }
        if kernel.mix_helper || kernel.store_helper {
            self.names.insert("kernel calls a helper");
        }
        let extent = kernel.params.iter().map(|p| p.shape.elements()).max().unwrap_or(0);
        if matches!(dispatch.grid[..], [GridSize::Const(g)] if kernel.dims == 1 && g * kernel.stride < extent) {
            self.names.insert("grid smaller than a buffer");
        }
        if dispatch.grid.iter().any(|g| matches!(g, GridSize::VarPlus(..))) {
            self.names.insert("grid known only at run time");
        }
        let distinct: BTreeSet<&BufVar> = dispatch.buffers.iter().collect();
        if distinct.len() < dispatch.buffers.len() {
            self.names.insert("same buffer passed twice");
        }
        if kernel.guard == Guard::HalfOf(0)
            && kernel.dims == 1
            && kernel.stride == 1
            && kernel.offset == 0
            && matches!(kernel.params[0].role, Role::Write(_))
        {
            self.names.insert("kernel writes the first half");
        }
    }

    fn carried(&mut self, carried: &Carried, body: &[Stmt], loop_kind: &str) {
        let fresh = carried.next.iter().any(|&v| super::check::born_at_top(body, v).is_some());
        self.names.insert(match (fresh, loop_kind) {
            (true, "for") => "fresh buffer carried by a for loop",
            (true, _) => "fresh buffer carried by a while loop",
            (false, "for") => "loop-carried buffers rotate",
            (false, _) => "while loop carries rotating buffers",
        });
    }

    fn stmt(&mut self, stmt: &Stmt, loops: usize) {
        match stmt {
            Stmt::Dispatch(dispatch) => self.dispatch(dispatch),
            Stmt::For(f) => {
                self.names.insert("for loop");
                if loops > 0 {
                    self.names.insert("nested loop");
                }
                if let IndexValue::Var(IndexVar::Trip(k)) = f.upper {
                    self.names.insert(match self.case.args.trips[k as usize] {
                        0 => "loop on a trip-count argument of 0",
                        _ => "loop on a nonzero trip-count argument",
                    });
                }
                if let Some(carried) = &f.carried {
                    self.carried(carried, &f.body, "for");
                } else if derives_a_temporary(&f.body) {
                    self.names.insert("temporary only the device sees, in a loop or a branch");
                }
                if f.i32 {
                    self.names.insert("loop with an i32 induction variable");
                }
                if f.lower < 0 {
                    self.names.insert("loop with a negative lower bound");
                }
                if f.body.iter().any(|s| matches!(s, Stmt::Select { cond: Cond::Even(IndexVar::Loop(iv)) | Cond::Odd(IndexVar::Loop(iv)), .. } if *iv == f.iv)) {
                    self.names.insert("generation flip");
                }
                self.block(&f.body, loops + 1);
            }
            Stmt::While(w) => {
                self.names.insert("while loop on a value a kernel writes");
                if let Some(carried) = &w.carried {
                    self.carried(carried, &w.body, "while");
                }
                if !w.before.is_empty() {
                    self.names.insert("do-while loop");
                }
                self.block(&w.before, loops + 1);
                self.block(&w.body, loops + 1);
            }
            Stmt::If { cond, yields, then_body, else_body } => {
                self.cond(cond);
                if !yields.is_empty() {
                    self.names.insert("branch yields buffers");
                } else if derives_a_temporary(then_body) {
                    self.names.insert("temporary only the device sees, in a loop or a branch");
                }
                if yields.iter().any(|y| {
                    super::check::born_at_top(then_body, y.then_value).is_some()
                        || super::check::born_at_top(else_body, y.else_value).is_some()
                }) {
                    self.names.insert("branch yields a fresh buffer");
                }
                if let [a, b] = &yields[..] {
                    if a.then_value == b.else_value && a.else_value == b.then_value && a.then_value != a.else_value {
                        self.names.insert("branch swaps two buffers");
                    }
                }
                self.block(then_body, loops);
                self.block(else_body, loops);
            }
            Stmt::Load { from, to } => {
                self.access(from, true);
                if let Sink::Store(access) = to {
                    self.access(access, false);
                }
            }
            Stmt::Store { to, .. } => self.access(to, false),
            Stmt::Copy { .. } => {
                self.names.insert("host copy between buffers");
            }
            Stmt::CallHost { func, .. } => {
                for (_, effect) in &self.case.program.host_funcs[*func].params {
                    self.names.insert(match effect {
                        Effect::Read => "host function reads",
                        Effect::Write => "host function writes",
                        Effect::ReadWrite => "host function reads and writes",
                        Effect::Undeclared => "host function with an undeclared effect",
                    });
                }
            }
            Stmt::CallHelper { helper, buffers, .. } => {
                *self.helper_calls.entry(*helper).or_default() += 1;
                let distinct: BTreeSet<&BufVar> = buffers.iter().collect();
                if distinct.len() < buffers.len() {
                    let recursive =
                        self.case.program.helpers[*helper].body.iter().any(|s| matches!(s, Stmt::CallSelf { .. }));
                    self.names.insert(match recursive {
                        true => "recursive helper called with one buffer for several parameters",
                        false => "helper called with one buffer for several parameters",
                    });
                }
            }
            Stmt::CallSelf { .. } => {
                self.names.insert("recursive helper");
            }
            Stmt::LoadIndex { .. } => {
                self.names.insert("host access at a loaded index");
            }
            Stmt::HostRange(range) => {
                self.names.insert(match (range.store, range.stride) {
                    (_, Some(_)) => "host loop stores at run-time indices",
                    (None, None) => "host loop reads a range",
                    (Some(_), None) => "host loop writes a range",
                });
            }
            Stmt::Alloc { init, .. } => {
                self.names.insert(match init {
                    Init::Dispatch(_) => "born buffer filled by a kernel",
                    Init::CopyFrom(_) => "born buffer filled by a host copy",
                    Init::Derive(_) => "born buffer derived by a kernel",
                });
            }
            Stmt::Select { .. } => {
                self.names.insert("select between buffers");
            }
        }
    }
}

/// The features that only `construct` makes (in `on`, the set it is part of: some features need
/// two constructs).
pub fn construct_features(construct: Construct, on: Constructs) -> Vec<&'static str> {
    match construct {
        Construct::FreshFor => vec!["fresh buffer carried by a for loop", "born buffer derived by a kernel"],
        Construct::FreshWhile => vec!["fresh buffer carried by a while loop", "born buffer derived by a kernel"],
        Construct::IfResults => vec!["branch yields buffers", "branch yields a fresh buffer"],
        Construct::IfSwap => vec!["branch yields buffers", "branch swaps two buffers"],
        Construct::WhilePingPong => vec!["while loop carries rotating buffers"],
        Construct::DoWhile => vec!["do-while loop"],
        Construct::SharedHelperArgs => vec!["helper called with one buffer for several parameters"],
        Construct::RecursiveHelpers if on.has(Construct::SharedHelperArgs) => {
            vec!["recursive helper", "recursive helper called with one buffer for several parameters"]
        }
        Construct::RecursiveHelpers => vec!["recursive helper"],
        Construct::I32Loops => vec!["loop with an i32 induction variable"],
        Construct::NegativeBounds => vec!["loop with a negative lower bound"],
        Construct::RuntimeIndex => vec!["host access at a loaded index"],
        Construct::HostRange => vec!["host loop reads a range", "host loop writes a range"],
        Construct::HalfWrite => vec!["kernel writes the first half", "host loop reads a range"],
        Construct::HostScatter => vec!["host loop stores at run-time indices"],
        Construct::DeviceTemporaries => vec!["temporary only the device sees, in a loop or a branch"],
    }
}
