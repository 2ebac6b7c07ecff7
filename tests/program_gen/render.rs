//! Writes a [`Program`] as hat text (custom forms, as a user writes them).
//!
//! The program must be well formed ([`check`](super::check)). Only what `@main` reaches is
//! written: the compute helpers it calls (transitively), the kernels they dispatch, the host
//! functions they call, and the kernel helpers those kernels use. Callees come before callers.

use super::ast::*;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

mod kernel;
use kernel::KernelWriter;

/// The hat text of `program`.
pub fn render(program: &Program) -> String {
    let shapes = buffer_shapes(program);
    let mut writer = Writer {
        program,
        shapes,
        out: String::new(),
        indent: 0,
        next: 0,
        used: Used::default(),
        parities: 0,
        flags: Default::default(),
        i32_loops: Default::default(),
        before: Default::default(),
        results: Default::default(),
        helper: None,
    };
    writer.main();
    let main = std::mem::take(&mut writer.out);
    // Helpers first reached from main, then from each other (a helper calls only lower ones).
    let mut helper_texts = Vec::new();
    let mut done = BTreeSet::new();
    while let Some(&helper) = writer.used.helpers.iter().rev().find(|h| !done.contains(*h)) {
        done.insert(helper);
        writer.helper(helper);
        helper_texts.push((helper, std::mem::take(&mut writer.out)));
    }
    helper_texts.sort();
    let kernels: Vec<usize> = writer.used.kernels.iter().copied().collect();
    let mut kernel_texts = Vec::new();
    for kernel in kernels {
        writer.kernel(kernel);
        kernel_texts.push(std::mem::take(&mut writer.out));
    }
    let mut text = String::new();
    if writer.used.observe {
        text.push_str("compute.host_func @observe(i32)\n");
    }
    for &func in &writer.used.host_funcs {
        text.push_str(&host_func_declaration(func, &program.host_funcs[func]));
    }
    if writer.used.mix {
        text.push_str(MIX_HELPER);
    }
    for shape in &writer.used.put_helpers {
        text.push_str(&put_helper(shape));
    }
    for kernel in kernel_texts {
        text.push_str(&kernel);
    }
    for (_, helper) in helper_texts {
        text.push_str(&helper);
    }
    text.push_str(&main);
    text
}

/// The shape of every buffer name of the program (names are unique in it).
pub fn buffer_shapes(program: &Program) -> HashMap<BufVar, Shape> {
    let mut shapes = HashMap::new();
    for (k, shape) in program.buffers.iter().enumerate() {
        shapes.insert(BufVar::Entry(k as u32), shape.clone());
    }
    for helper in &program.helpers {
        for (id, shape) in &helper.params {
            shapes.insert(BufVar::Param(*id), shape.clone());
        }
    }
    let mut blocks: Vec<&[Stmt]> = program.helpers.iter().map(|h| &h.body[..]).collect();
    blocks.push(&program.body);
    // Definitions come before uses in program order, so one pass in that order resolves
    // selects and carried buffers through the names they are made from.
    fn walk(block: &[Stmt], shapes: &mut HashMap<BufVar, Shape>) {
        for stmt in block {
            match stmt {
                Stmt::Alloc { var, shape, .. } => {
                    shapes.insert(BufVar::Born(*var), shape.clone());
                }
                Stmt::Select { var, if_true, .. } => {
                    if let Some(shape) = shapes.get(if_true).cloned() {
                        shapes.insert(BufVar::Select(*var), shape);
                    }
                }
                Stmt::For(For { carried, body, .. }) | Stmt::While(While { carried, body, .. }) => {
                    if let Some(carried) = carried {
                        if let Some(shape) = shapes.get(&carried.init[0]).cloned() {
                            for &id in carried.vars.iter().chain(&carried.results) {
                                let var = match carried.vars.contains(&id) {
                                    true => BufVar::Carried(id),
                                    false => BufVar::Result(id),
                                };
                                shapes.insert(var, shape.clone());
                            }
                        }
                    }
                    if let Stmt::While(w) = stmt {
                        walk(&w.before, shapes);
                    }
                    walk(body, shapes);
                }
                Stmt::If { then_body, else_body, yields, .. } => {
                    walk(then_body, shapes);
                    walk(else_body, shapes);
                    for y in yields {
                        if let Some(shape) = shapes.get(&y.then_value).cloned() {
                            shapes.insert(BufVar::Result(y.result), shape);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    for block in blocks {
        walk(block, &mut shapes);
    }
    shapes
}

/// `%b0`, `%n3`, ...
pub fn buf_name(var: BufVar) -> String {
    match var {
        BufVar::Entry(k) => format!("%b{k}"),
        BufVar::Born(id) => format!("%n{id}"),
        BufVar::Select(id) => format!("%s{id}"),
        BufVar::Param(id) => format!("%p{id}"),
        BufVar::Carried(id) => format!("%x{id}"),
        BufVar::Result(id) => format!("%r{id}"),
    }
}

/// `%t0`, `%i2`, ...
pub fn index_name(var: IndexVar) -> String {
    match var {
        IndexVar::Trip(k) => format!("%t{k}"),
        IndexVar::Flag(k) => format!("%f{k}"),
        IndexVar::Loop(id) => format!("%i{id}"),
        IndexVar::While(id) => format!("%w{id}"),
        IndexVar::Scalar(h) => format!("%z{h}"),
        IndexVar::Loaded(id) => format!("%l{id}"),
    }
}

fn effect_keyword(effect: Effect) -> &'static str {
    match effect {
        Effect::Read => "read ",
        Effect::Write => "write ",
        Effect::ReadWrite => "readwrite ",
        Effect::Undeclared => "",
    }
}

fn host_func_declaration(index: usize, func: &HostFunc) -> String {
    let mut params: Vec<String> =
        func.params.iter().map(|(shape, effect)| format!("{}{}", effect_keyword(*effect), shape.memref())).collect();
    params.push("index".to_string());
    let result = if func.returns { " -> i32" } else { "" };
    format!("compute.host_func @h{index}({}){result}\n", params.join(", "))
}

const MIX_HELPER: &str = "kernel.helper @mix(%a: i32, %b: i32) -> i32 {
  %three = arith.constant 3 : i32
  %scaled = arith.muli %a, %three : i32
  %sum = arith.addi %scaled, %b : i32
  kernel.return %sum : i32
}
";

fn put_helper(shape: &Shape) -> String {
    let indices: Vec<String> = (0..shape.rank()).map(|d| format!("%i{d}")).collect();
    let params: Vec<String> = indices.iter().map(|i| format!("{i}: index")).collect();
    let ty = shape.memref();
    format!(
        "kernel.helper @put_{}(%buf: {ty}, {}, %v: i32) {{\n  buffer.store %v, %buf[{}] : {ty}\n  kernel.return\n}}\n",
        shape.tag(),
        params.join(", "),
        indices.join(", ")
    )
}

#[derive(Default)]
struct Used {
    helpers: BTreeSet<usize>,
    kernels: BTreeSet<usize>,
    host_funcs: BTreeSet<usize>,
    put_helpers: BTreeSet<Shape>,
    observe: bool,
    mix: bool,
}

struct Writer<'p> {
    program: &'p Program,
    shapes: HashMap<BufVar, Shape>,
    out: String,
    indent: usize,
    next: u32,
    used: Used,
    /// How many parities have been written: each takes the next of the spellings, so a program
    /// mixes them (`cond`).
    parities: usize,
    /// The loops whose induction variable's parity is carried as an `i1` (`%q{iv}`: the
    /// variable is even), instead of computed from the variable.
    flags: HashSet<u32>,
    /// The loops whose induction variable is an `i32` (`%j{iv}`, cast to `%i{iv}`).
    i32_loops: HashSet<u32>,
    /// The carried names written as a `scf.while`'s "before" region names them (`%xb{id}`).
    before: HashSet<u32>,
    /// How each result `%r{id}` is written (`%r{first}#j` for one of several).
    results: HashMap<u32, String>,
    /// The helper being written, if any.
    helper: Option<usize>,
}

impl Writer<'_> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%v{}", self.next)
    }

    /// Emits `name = text` for a fresh name, and returns the name.
    fn def(&mut self, text: &str) -> String {
        let name = self.fresh();
        self.line(&format!("{name} = {text}"));
        name
    }

    fn index(&mut self, value: u64) -> String {
        self.def(&format!("arith.constant {value} : index"))
    }

    fn int(&mut self, value: i32) -> String {
        self.def(&format!("arith.constant {value} : i32"))
    }

    /// How `var` is written here.
    fn name(&self, var: BufVar) -> String {
        match var {
            BufVar::Carried(id) if self.before.contains(&id) => format!("%xb{id}"),
            BufVar::Result(id) => self.results.get(&id).cloned().unwrap_or_else(|| buf_name(var)),
            _ => buf_name(var),
        }
    }

    /// Names the results `ids` of an op with `count` results (the ids first), and returns how
    /// the op's results are written before its `=`.
    fn name_results(&mut self, ids: &[u32], count: usize) -> String {
        let group = match ids.first() {
            Some(first) => format!("%r{first}"),
            None => self.fresh(),
        };
        if count == 1 {
            if let Some(&id) = ids.first() {
                self.results.insert(id, group.clone());
            }
            return group;
        }
        for (j, &id) in ids.iter().enumerate() {
            self.results.insert(id, format!("{group}#{j}"));
        }
        format!("{group}:{count}")
    }

    fn shape(&self, var: BufVar) -> Shape {
        self.shapes.get(&var).cloned().unwrap_or_else(|| panic!("no shape for {}", buf_name(var)))
    }

    // ----- compute code ---------------------------------------------------------------------

    fn main(&mut self) {
        let program = self.program;
        let mut params: Vec<String> =
            program.buffers.iter().enumerate().map(|(k, s)| format!("%b{k}: {}", s.memref())).collect();
        params.extend((0..program.trips).map(|k| format!("%t{k}: index")));
        params.extend((0..program.flags).map(|k| format!("%f{k}: index")));
        params.push("%seed: i32".to_string());
        let results = match program.results.len() {
            0 => String::new(),
            1 => " -> i32".to_string(),
            n => format!(" -> ({})", vec!["i32"; n].join(", ")),
        };
        self.line(&format!("compute.func @main({}){results} {{", params.join(", ")));
        self.indent += 1;
        self.block(&program.body);
        let values: Vec<String> = program.results.iter().map(|access| self.load(access)).collect();
        if values.is_empty() {
            self.line("compute.return");
        } else {
            let types = vec!["i32"; values.len()].join(", ");
            self.line(&format!("compute.return {} : {types}", values.join(", ")));
        }
        self.indent -= 1;
        self.line("}");
    }

    fn helper(&mut self, index: usize) {
        let helper = &self.program.helpers[index];
        self.helper = Some(index);
        let mut params: Vec<String> =
            helper.params.iter().map(|(id, shape)| format!("%p{id}: {}", shape.memref())).collect();
        params.push(format!("%z{index}: index"));
        self.line(&format!("compute.func @f{index}({}) {{", params.join(", ")));
        self.indent += 1;
        self.block(&helper.body);
        self.helper = None;
        self.line("compute.return");
        self.indent -= 1;
        self.line("}");
    }

    /// The statements of a block, then the deallocations it owes.
    fn block(&mut self, stmts: &[Stmt]) {
        let mut freed = Vec::new();
        for stmt in stmts {
            self.stmt(stmt);
            if let Stmt::Alloc { var, dealloc: true, shape, .. } = stmt {
                freed.push((*var, shape.clone()));
            }
        }
        for (var, shape) in freed.into_iter().rev() {
            self.line(&format!("buffer.dealloc %n{var} : {}", shape.memref()));
        }
    }

    fn index_value(&mut self, value: IndexValue) -> String {
        match value {
            IndexValue::Const(k) => self.index(k),
            IndexValue::Var(var) => index_name(var),
        }
    }

    /// The index operands of an element access (`Var` indices reduced modulo the dimension).
    fn indices(&mut self, access: &Access) -> String {
        let shape = self.shape(access.buffer);
        let mut names = Vec::new();
        for (d, index) in access.index.iter().enumerate() {
            names.push(match *index {
                IndexValue::Const(k) => self.index(k),
                IndexValue::Var(var) => {
                    let dim = self.index(shape.0[d]);
                    self.def(&format!("arith.remui {}, {dim} : index", index_name(var)))
                }
            });
        }
        names.join(", ")
    }

    fn load(&mut self, access: &Access) -> String {
        let indices = self.indices(access);
        let ty = self.shape(access.buffer).memref();
        self.def(&format!("buffer.load {}[{indices}] : {ty}", self.name(access.buffer)))
    }

    fn store(&mut self, value: &str, access: &Access) {
        let indices = self.indices(access);
        let ty = self.shape(access.buffer).memref();
        self.line(&format!("buffer.store {value}, {}[{indices}] : {ty}", self.name(access.buffer)));
    }

    fn cond(&mut self, cond: &Cond) -> String {
        match cond {
            Cond::NonZero(var) => {
                let zero = self.index(0);
                self.def(&format!("arith.cmpi ne, {}, {zero} : index", index_name(*var)))
            }
            Cond::Odd(var) | Cond::Even(var) => {
                let odd = matches!(cond, Cond::Odd(_));
                if let IndexVar::Loop(iv) = var {
                    if self.flags.contains(iv) {
                        if !odd {
                            return format!("%q{iv}");
                        }
                        let true_ = self.def("arith.constant true");
                        return self.def(&format!("arith.xori %q{iv}, {true_} : i1"));
                    }
                }
                if let IndexVar::Loop(iv) = var {
                    if self.i32_loops.contains(iv) {
                        // On the `i32` variable itself: `v % 2 == w` signed, or `(v & 1) == w`.
                        self.parities += 1;
                        let (op, operand) = if self.parities.is_multiple_of(2) { ("remsi", 2) } else { ("andi", 1) };
                        let operand = self.int(operand);
                        let bit = self.def(&format!("arith.{op} %j{iv}, {operand} : i32"));
                        let want = self.int(i32::from(odd));
                        return self.def(&format!("arith.cmpi eq, {bit}, {want} : i32"));
                    }
                }
                // The same parity, spelled six ways (the spellings resolve-aliases must see
                // through): `v % 2 == w` unsigned and signed (the variables are never negative),
                // `(v & 1) == w`, `(v + 1) % 2 == 1 - w`, `1 - w != v % 2`, `w == v % 2`.
                let name = index_name(*var);
                let want = u64::from(odd);
                self.parities += 1;
                match self.parities % 6 {
                    0 => {
                        let two = self.index(2);
                        let rem = self.def(&format!("arith.remui {name}, {two} : index"));
                        let want = self.index(want);
                        self.def(&format!("arith.cmpi eq, {rem}, {want} : index"))
                    }
                    1 => {
                        let two = self.index(2);
                        let rem = self.def(&format!("arith.remsi {name}, {two} : index"));
                        let want = self.index(want);
                        self.def(&format!("arith.cmpi eq, {rem}, {want} : index"))
                    }
                    2 => {
                        let one = self.index(1);
                        let bit = self.def(&format!("arith.andi {name}, {one} : index"));
                        let want = self.index(want);
                        self.def(&format!("arith.cmpi eq, {bit}, {want} : index"))
                    }
                    3 => {
                        let (one, two) = (self.index(1), self.index(2));
                        let next = self.def(&format!("arith.addi {name}, {one} : index"));
                        let rem = self.def(&format!("arith.remui {next}, {two} : index"));
                        let want = self.index(1 - want);
                        self.def(&format!("arith.cmpi eq, {rem}, {want} : index"))
                    }
                    4 => {
                        let two = self.index(2);
                        let rem = self.def(&format!("arith.remui {name}, {two} : index"));
                        let other = self.index(1 - want);
                        self.def(&format!("arith.cmpi ne, {other}, {rem} : index"))
                    }
                    _ => {
                        let two = self.index(2);
                        let rem = self.def(&format!("arith.remsi {name}, {two} : index"));
                        let want = self.index(want);
                        self.def(&format!("arith.cmpi eq, {want}, {rem} : index"))
                    }
                }
            }
            Cond::Probe(access, threshold) => {
                let value = self.load(access);
                let threshold = self.int(*threshold);
                self.def(&format!("arith.cmpi sgt, {value}, {threshold} : i32"))
            }
        }
    }

    fn buffers(&self, buffers: &[BufVar]) -> (Vec<String>, Vec<String>) {
        buffers.iter().map(|b| (self.name(*b), self.shape(*b).memref())).unzip()
    }

    fn dispatch(&mut self, dispatch: &Dispatch) {
        self.used.kernels.insert(dispatch.kernel);
        let grid: Vec<String> = dispatch
            .grid
            .iter()
            .map(|size| match *size {
                GridSize::Const(k) => self.index(k),
                GridSize::VarPlus(var, k) => {
                    let k = self.index(k);
                    self.def(&format!("arith.addi {}, {k} : index", index_name(var)))
                }
            })
            .collect();
        let scalar = match &dispatch.scalar {
            ScalarArg::Const(k) => self.int(*k),
            ScalarArg::Seed => "%seed".to_string(),
            ScalarArg::Var(var) => self.def(&format!("arith.index_cast {} : index to i32", index_name(*var))),
            ScalarArg::Load(access) => self.load(access),
        };
        let (mut names, mut types) = self.buffers(&dispatch.buffers);
        names.push(scalar);
        types.push("i32".to_string());
        self.line(&format!(
            "compute.dispatch @k{}[{}]({}) : ({})",
            dispatch.kernel,
            grid.join(", "),
            names.join(", "),
            types.join(", ")
        ));
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Dispatch(dispatch) => self.dispatch(dispatch),
            Stmt::For(f) => self.for_loop(f),
            Stmt::While(w) => self.while_loop(w),
            Stmt::If { cond, yields, then_body, else_body } => {
                let cond = self.cond(cond);
                if yields.is_empty() {
                    self.line(&format!("scf.if {cond} {{"));
                    self.indent += 1;
                    self.block(then_body);
                    self.indent -= 1;
                    if else_body.is_empty() {
                        self.line("}");
                    } else {
                        self.line("} else {");
                        self.indent += 1;
                        self.block(else_body);
                        self.indent -= 1;
                        self.line("}");
                    }
                    return;
                }
                let types: Vec<String> = yields.iter().map(|y| self.shape(BufVar::Result(y.result)).memref()).collect();
                let types = types.join(", ");
                let ids: Vec<u32> = yields.iter().map(|y| y.result).collect();
                let results = self.name_results(&ids, ids.len());
                self.line(&format!("{results} = scf.if {cond} -> ({types}) {{"));
                self.indent += 1;
                self.block(then_body);
                let values: Vec<String> = yields.iter().map(|y| self.name(y.then_value)).collect();
                self.line(&format!("scf.yield {} : {types}", values.join(", ")));
                self.indent -= 1;
                self.line("} else {");
                self.indent += 1;
                self.block(else_body);
                let values: Vec<String> = yields.iter().map(|y| self.name(y.else_value)).collect();
                self.line(&format!("scf.yield {} : {types}", values.join(", ")));
                self.indent -= 1;
                self.line("}");
            }
            Stmt::Load { from, to } => {
                let value = self.load(from);
                match to {
                    Sink::Observe => {
                        self.used.observe = true;
                        self.line(&format!("compute.call @observe({value}) : (i32) -> ()"));
                    }
                    Sink::Store(access) => self.store(&value, access),
                }
            }
            Stmt::Store { value, to } => {
                let value = match value {
                    Value::Const(k) => self.int(*k),
                    Value::Var(var) => self.def(&format!("arith.index_cast {} : index to i32", index_name(*var))),
                    Value::Seed => "%seed".to_string(),
                };
                self.store(&value, to);
            }
            Stmt::Copy { from, to } => {
                let ty = self.shape(*from).memref();
                self.line(&format!("buffer.copy {}, {} : {ty}", self.name(*from), self.name(*to)));
            }
            Stmt::CallHost { func, buffers, scalar } => {
                self.used.host_funcs.insert(*func);
                let scalar = self.index_value(*scalar);
                let (mut names, mut types) = self.buffers(buffers);
                names.push(scalar);
                types.push("index".to_string());
                let call = format!("compute.call @h{func}({}) : ({})", names.join(", "), types.join(", "));
                if self.program.host_funcs[*func].returns {
                    let result = self.def(&format!("{call} -> i32"));
                    self.used.observe = true;
                    self.line(&format!("compute.call @observe({result}) : (i32) -> ()"));
                } else {
                    self.line(&format!("{call} -> ()"));
                }
            }
            Stmt::CallHelper { helper, buffers, scalar } => {
                self.used.helpers.insert(*helper);
                let scalar = self.index_value(*scalar);
                let (mut names, mut types) = self.buffers(buffers);
                names.push(scalar);
                types.push("index".to_string());
                self.line(&format!("compute.call @f{helper}({}) : ({}) -> ()", names.join(", "), types.join(", ")));
            }
            Stmt::Alloc { var, shape, init, .. } => {
                self.line(&format!("%n{var} = buffer.alloc() : {}", shape.memref()));
                match init {
                    Init::Dispatch(dispatch) => self.dispatch(dispatch),
                    Init::CopyFrom(from) => {
                        self.line(&format!("buffer.copy {}, %n{var} : {}", self.name(*from), shape.memref()))
                    }
                    Init::Derive(dispatch) => self.dispatch(dispatch),
                }
            }
            Stmt::LoadIndex { var, from } => {
                let value = self.load(from);
                self.line(&format!("%l{var} = arith.index_cast {value} : i32 to index"));
            }
            Stmt::HostRange(range) => self.host_range(range),
            Stmt::CallSelf { buffers } => {
                let h = self.helper.expect("a recursive call is in a helper");
                let zero = self.index(0);
                let deeper = self.def(&format!("arith.cmpi sgt, %z{h}, {zero} : index"));
                self.line(&format!("scf.if {deeper} {{"));
                self.indent += 1;
                let one = self.index(1);
                let down = self.def(&format!("arith.subi %z{h}, {one} : index"));
                let (mut names, mut types) = self.buffers(buffers);
                names.push(down);
                types.push("index".to_string());
                self.line(&format!("compute.call @f{h}({}) : ({}) -> ()", names.join(", "), types.join(", ")));
                self.indent -= 1;
                self.line("}");
            }
            Stmt::Select { var, cond, if_true, if_false } => {
                let cond = self.cond(cond);
                let ty = self.shape(*if_true).memref();
                self.line(&format!(
                    "%s{var} = arith.select {cond}, {}, {} : {ty}",
                    self.name(*if_true),
                    self.name(*if_false)
                ));
            }
        }
    }

    fn for_loop(&mut self, f: &For) {
        let (lower, upper, step, iv, suffix) = if f.i32 {
            let lower = self.def(&format!("arith.constant {} : i32", f.lower));
            let upper = match f.upper {
                IndexValue::Const(k) => self.def(&format!("arith.constant {k} : i32")),
                IndexValue::Var(var) => self.def(&format!("arith.index_cast {} : index to i32", index_name(var))),
            };
            let step = self.def(&format!("arith.constant {} : i32", f.step));
            self.i32_loops.insert(f.iv);
            (lower, upper, step, format!("%j{}", f.iv), " : i32")
        } else {
            let lower = self.def(&format!("arith.constant {} : index", f.lower));
            let upper = self.index_value(f.upper);
            let step = self.index(f.step);
            (lower, upper, step, format!("%i{}", f.iv), "")
        };
        let head = format!("scf.for {iv} = {lower} to {upper} step {step}");
        let cast = |w: &mut Self| {
            if f.i32 {
                w.line(&format!("%i{} = arith.index_cast %j{} : i32 to index", f.iv, f.iv));
            }
        };
        // A generation flip's parity is, in a third of the loops, carried as an `i1` flipped
        // each iteration (by `xori true` or `cmpi eq false`) rather than computed.
        let flips = f.body.iter().any(|s| {
            matches!(s, Stmt::Select { cond: Cond::Even(IndexVar::Loop(iv)) | Cond::Odd(IndexVar::Loop(iv)), .. } if *iv == f.iv)
        });
        match &f.carried {
            None if flips && f.iv.is_multiple_of(3) => {
                let even = self.def(&format!("arith.constant {}", f.lower % 2 == 0));
                let result = self.fresh();
                self.line(&format!("{result} = {head} iter_args(%q{} = {even}) -> (i1){suffix} {{", f.iv));
                self.indent += 1;
                cast(self);
                self.flags.insert(f.iv);
                self.block(&f.body);
                let next = if f.step.is_multiple_of(2) {
                    format!("%q{}", f.iv)
                } else if f.iv.is_multiple_of(2) {
                    let true_ = self.def("arith.constant true");
                    self.def(&format!("arith.xori %q{}, {true_} : i1", f.iv))
                } else {
                    let false_ = self.def("arith.constant false");
                    self.def(&format!("arith.cmpi eq, %q{}, {false_} : i1", f.iv))
                };
                self.line(&format!("scf.yield {next} : i1"));
            }
            None => {
                self.line(&format!("{head}{suffix} {{"));
                self.indent += 1;
                cast(self);
                self.block(&f.body);
            }
            Some(carried) => {
                let ty = self.shape(carried.init[0]).memref();
                let k = carried.vars.len();
                let result = self.name_results(&carried.results, k);
                let args: Vec<String> =
                    carried.vars.iter().zip(&carried.init).map(|(v, &i)| format!("%x{v} = {}", self.name(i))).collect();
                let types = vec![ty.clone(); k].join(", ");
                self.line(&format!("{result} = {head} iter_args({}) -> ({types}){suffix} {{", args.join(", ")));
                self.indent += 1;
                cast(self);
                self.block(&f.body);
                let next: Vec<String> = (0..k).map(|j| self.name(carried.yielded(j))).collect();
                self.line(&format!("scf.yield {} : {types}", next.join(", ")));
            }
        }
        self.indent -= 1;
        self.line("}");
    }

    fn while_loop(&mut self, w: &While) {
        let zero = self.index(0);
        let id = w.counter;
        let empty = Carried { init: vec![], vars: vec![], next: vec![], results: vec![] };
        let carried = w.carried.as_ref().unwrap_or(&empty);
        let k = carried.vars.len();
        let ty = carried.init.first().map(|&b| self.shape(b).memref()).unwrap_or_default();
        let mut types = vec![ty; k];
        types.push("index".to_string());
        let types = types.join(", ");
        let result = self.name_results(&carried.results, k + 1);
        let mut inits: Vec<String> =
            carried.vars.iter().zip(&carried.init).map(|(v, &i)| format!("%xb{v} = {}", self.name(i))).collect();
        inits.push(format!("%wb{id} = {zero}"));
        let arrow = if k == 0 { "index".to_string() } else { format!("({types})") };
        self.line(&format!("{result} = scf.while ({}) : ({types}) -> {arrow} {{", inits.join(", ")));
        self.indent += 1;
        self.before.extend(&carried.vars);
        self.block(&w.before);
        let value = self.load(&w.probe);
        let threshold = self.int(w.threshold);
        let above = self.def(&format!("arith.cmpi sgt, {value}, {threshold} : i32"));
        let bound = self.index(w.bound);
        let more = self.def(&format!("arith.cmpi ult, %wb{id}, {bound} : index"));
        let go = self.def(&format!("arith.andi {above}, {more} : i1"));
        let mut passed: Vec<String> = carried.vars.iter().map(|v| format!("%xb{v}")).collect();
        passed.push(format!("%wb{id}"));
        self.line(&format!("scf.condition({go}) {} : {types}", passed.join(", ")));
        for v in &carried.vars {
            self.before.remove(v);
        }
        self.indent -= 1;
        self.line("} do {");
        let mut args: Vec<String> =
            carried.vars.iter().map(|v| format!("%x{v}: {}", self.shape(BufVar::Carried(*v)).memref())).collect();
        args.push(format!("%w{id}: index"));
        self.line(&format!("^bb0({}):", args.join(", ")));
        self.indent += 1;
        self.block(&w.body);
        let one = self.index(1);
        let next = self.def(&format!("arith.addi %w{id}, {one} : index"));
        let mut yielded: Vec<String> = (0..k).map(|j| self.name(carried.yielded(j))).collect();
        yielded.push(next);
        self.line(&format!("scf.yield {} : {types}", yielded.join(", ")));
        self.indent -= 1;
        self.line("}");
    }

    /// A host loop over a fixed range of a buffer, summing its elements to `@observe` or
    /// storing to them.
    fn host_range(&mut self, range: &HostRange) {
        let ty = self.shape(range.buffer).memref();
        let buffer = self.name(range.buffer);
        let fixed: Vec<String> = range.fixed.iter().map(|&i| self.index(i)).collect();
        let (lower, upper, one) = (self.index(range.lower), self.index(range.upper), self.index(1));
        let head = format!("scf.for %h{} = {lower} to {upper} step {one}", range.iv);
        // The last index, in the loop's body: the loop variable, or `(h * stride) mod length`.
        let last_index = |this: &mut Self| match range.stride {
            None => format!("%h{}", range.iv),
            Some(stride) => {
                let (stride, length) =
                    (this.index(stride), this.index(*this.shape(range.buffer).0.last().expect("a dimension")));
                let scaled = this.def(&format!("arith.muli %h{}, {stride} : index", range.iv));
                this.def(&format!("arith.remui {scaled}, {length} : index"))
            }
        };
        match range.store {
            None => {
                let zero = self.int(0);
                let sum = self.def(&format!("{head} iter_args(%a{} = {zero}) -> (i32) {{", range.iv));
                self.indent += 1;
                let indices = [fixed.clone(), vec![last_index(self)]].concat().join(", ");
                let value = self.def(&format!("buffer.load {buffer}[{indices}] : {ty}"));
                let next = self.def(&format!("arith.addi %a{}, {value} : i32", range.iv));
                self.line(&format!("scf.yield {next} : i32"));
                self.indent -= 1;
                self.line("}");
                self.used.observe = true;
                self.line(&format!("compute.call @observe({sum}) : (i32) -> ()"));
            }
            Some(c) => {
                self.line(&format!("{head} {{"));
                self.indent += 1;
                let indices = [fixed.clone(), vec![last_index(self)]].concat().join(", ");
                let h = self.def(&format!("arith.index_cast %h{} : index to i32", range.iv));
                let value = self.plus(&h, c);
                self.line(&format!("buffer.store {value}, {buffer}[{indices}] : {ty}"));
                self.indent -= 1;
                self.line("}");
            }
        }
    }

    fn plus(&mut self, value: &str, c: i32) -> String {
        let c = self.int(c);
        self.def(&format!("arith.addi {value}, {c} : i32"))
    }

    // ----- kernels --------------------------------------------------------------------------

    fn kernel(&mut self, index: usize) {
        let kernel = &self.program.kernels[index];
        let mut params: Vec<String> =
            kernel.params.iter().enumerate().map(|(j, p)| format!("%q{j}: {}", p.shape.memref())).collect();
        params.push("%sc: i32".to_string());
        let workgroup = match kernel.dims {
            1 => format!("{}", kernel.workgroup[0]),
            _ => format!("{}, {}", kernel.workgroup[0], kernel.workgroup[1]),
        };
        self.line(&format!("kernel.func @k{index}({}) workgroup({workgroup}) {{", params.join(", ")));
        self.indent += 1;
        KernelWriter::new(self, kernel).body();
        self.line("kernel.return");
        self.indent -= 1;
        self.line("}");
    }
}

/// Writes `text` with a line-number gutter (for failure messages).
pub fn numbered(text: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let _ = writeln!(out, "{:4} | {line}", i + 1);
    }
    out
}
