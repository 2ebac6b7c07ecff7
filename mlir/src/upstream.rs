//! `--to-mlir=upstream`: a hat module in upstream dialects only, verified by MLIR with no
//! unregistered op.
//!
//! | hat | upstream |
//! |---|---|
//! | `compute.func`, `compute.call`, `compute.return` | `func.func`, `func.call`, `func.return` |
//! | `kernel.func` | `gpu.func ... kernel` in `gpu.module @kernels`, `known_block_size` from `workgroup_size`, plus three `index` arguments: the grid (global size) |
//! | `kernel.helper`, `kernel.call`, `kernel.return` | `func.func` in the `gpu.module`, `func.call`, `gpu.return`/`func.return` |
//! | `kernel.global_id local_id group_id local_size num_groups` | `gpu.global_id thread_id block_id block_dim grid_dim` |
//! | `kernel.global_size` | the kernel's grid argument |
//! | `kernel.barrier`, `kernel.local_alloc`, `kernel.atomic_rmw` | `gpu.barrier`, a `workgroup` attribution, `memref.atomic_rmw` |
//! | `buffer.load store dim alloc dealloc copy` | `memref.load store dim alloc dealloc copy` |
//! | `buffer.arena` | nothing (a comment): each buffer is allocated on its own, as without `plan-memory` |
//! | `buffer.release` | nothing (a comment, which MLIR's printer drops): upstream has no ownership at run time, so the buffer lives until the program ends |
//! | a buffer's device copy | a `gpu.alloc` twin: made at the entry function's start (arguments) or beside `buffer.alloc`, passed to called compute functions as extra arguments |
//! | `buffer.to_device`/`from_device` (ranges too) | `gpu.memcpy` between the buffer and its twin (of `memref.subview`s of the flattened buffers for a range) |
//! | `compute.dispatch @k[grid](args)` | `gpu.launch_func @kernels::@k` with `ceildiv(grid, workgroup)` blocks, the twins for buffers, and the grid |
//! | `compute.sync` | `gpu.wait` |
//!
//! MLIR's `canonicalize` and `cse` then tidy the module (constants folded, host copies that
//! nothing reads dropped), and it is verified again.
//!
//! A work item past the grid (in the last, partial workgroup) does nothing observable in hat:
//! the kernel's body runs under `gpu.global_id < grid`, or, in a kernel with a barrier (which
//! every work item must reach), each access to a buffer argument does.
//!
//! Refused, with an error at the op: ops with no upstream spelling (`compute.host_func` and
//! calls to it, the `track-accesses` hooks), a module that dispatches but has
//! no transfer op (its transfers are not decided yet: run a pipeline such as `-p default`
//! first), buffers carried through `scf.while`, and compute functions returning buffers.
//! Buffers carried through `scf.for` and `scf.if` carry their twins beside them.
//!
//! The translation dispatches on op names: it is a dialect conversion, whose source and target
//! are sets of named ops.

use crate::session::Session;
use hat_ir::printer::{attribute_to_string, type_to_string};
use hat_ir::{AttributeKind, Block, Context, Diagnostic, Op, TypeKind, Value};
use melior::ir::operation::{OperationLike, OperationPrintingFlags};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// `module` in upstream dialects, verified by MLIR (no unregistered dialect allowed).
pub fn export(ctx: &Context, module: Op) -> Result<String, Vec<Diagnostic>> {
    let mut writer = Upstream::new(ctx);
    writer.module(module);
    if !writer.errors.is_empty() {
        return Err(writer.errors);
    }
    let session = Session::new(false);
    let mut parsed = session.parse("<upstream export>", &writer.out).map_err(|errors| internal(ctx, module, errors))?;
    session.verify(&parsed).map_err(|errors| internal(ctx, module, errors))?;
    // MLIR's own canonicalize and cse fold the launch arithmetic and drop the host copies of
    // buffers the host never touches (an alloc whose only user is its dealloc).
    let manager = melior::pass::PassManager::new(&session.context);
    manager.add_pass(melior::pass::transform::create_canonicalizer());
    manager.add_pass(melior::pass::transform::create_cse());
    manager.run(&mut parsed).map_err(|e| {
        let mut errors = session.take_errors();
        errors.push(crate::session::MlirError { position: None, message: format!("canonicalize/cse failed: {e}") });
        internal(ctx, module, errors)
    })?;
    session.verify(&parsed).map_err(|errors| internal(ctx, module, errors))?;
    parsed
        .as_operation()
        .to_string_with_flags(OperationPrintingFlags::new())
        .map_err(|e| vec![Diagnostic::error(ctx.location(module), format!("MLIR could not print the module: {e}"))])
}

/// MLIR's refusal of the translation: a bug of the bridge, reported with the text's position.
fn internal(ctx: &Context, module: Op, errors: Vec<crate::session::MlirError>) -> Vec<Diagnostic> {
    errors
        .into_iter()
        .map(|e| {
            Diagnostic::error(
                ctx.location(module),
                format!("internal error of --to-mlir=upstream, MLIR refuses its translation: {e}"),
            )
        })
        .collect()
}

/// What one kernel needs at its launches.
#[derive(Clone, Copy)]
struct KernelInfo {
    workgroup: [i64; 3],
}

struct Upstream<'c> {
    ctx: &'c Context,
    out: String,
    errors: Vec<Diagnostic>,
    /// Each hat value's name in the text.
    names: HashMap<Value, String>,
    /// Each buffer's device twin (a value name in the text).
    twins: HashMap<Value, String>,
    /// Types that differ from hat's (workgroup memory has an address space).
    types: HashMap<Value, String>,
    next: usize,
    kernels: HashMap<String, KernelInfo>,
    /// Compute functions that some `compute.call` calls: they take their buffers' twins as
    /// extra arguments; the others (entries) make them.
    called: HashSet<String>,
    /// The grid arguments of the kernel being written, by dimension.
    kernel_grid: HashMap<usize, String>,
    /// Whether a helper (not a kernel) is being written.
    in_helper: bool,
}

fn symbol(ctx: &Context, op: Op, name: &str) -> Option<String> {
    let attribute = ctx.attribute(op, name)?;
    match ctx.attribute_kind(attribute) {
        AttributeKind::String(text) => Some(text.to_string()),
        AttributeKind::SymbolRef(path) => path.last().map(|&part| ctx.ident_str(part).to_string()),
        _ => None,
    }
}

impl<'c> Upstream<'c> {
    fn new(ctx: &'c Context) -> Self {
        Upstream {
            ctx,
            out: String::new(),
            errors: Vec::new(),
            names: HashMap::new(),
            twins: HashMap::new(),
            types: HashMap::new(),
            next: 0,
            kernels: HashMap::new(),
            called: HashSet::new(),
            kernel_grid: HashMap::new(),
            in_helper: false,
        }
    }

    fn error(&mut self, op: Op, message: impl Into<String>) {
        self.errors.push(Diagnostic::error(self.ctx.location(op), message));
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%t{}", self.next)
    }

    fn name(&mut self, value: Value) -> String {
        if let Some(name) = self.names.get(&value) {
            return name.clone();
        }
        let name = format!("%v{}", self.names.len());
        self.names.insert(value, name.clone());
        name
    }

    fn ty(&self, value: Value) -> String {
        self.types.get(&value).cloned().unwrap_or_else(|| type_to_string(self.ctx, self.ctx.value_type(value)))
    }

    fn is_buffer(&self, value: Value) -> bool {
        matches!(self.ctx.type_kind(self.ctx.value_type(value)), TypeKind::MemRef { .. })
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn constant_index(&mut self, depth: usize, value: i64) -> String {
        let name = self.fresh();
        self.line(depth, &format!("{name} = arith.constant {value} : index"));
        name
    }

    fn module(&mut self, module: Op) {
        let ctx = self.ctx;
        let body = ctx.body_ops(module);
        let mut has_dispatch = false;
        let mut has_transfer = false;
        for op in ctx.walk(module) {
            match ctx.name_str(op) {
                "compute.call" => {
                    if let Some(callee) = symbol(ctx, op, "callee") {
                        self.called.insert(callee);
                    }
                }
                "compute.dispatch" => has_dispatch = true,
                "buffer.to_device" | "buffer.from_device" => has_transfer = true,
                _ => {}
            }
        }
        if has_dispatch && !has_transfer {
            let first =
                ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "compute.dispatch").unwrap_or(module);
            self.error(
                first,
                "the module dispatches kernels but has no transfer op: its transfers are not decided yet, and upstream \
                 MLIR has no implicit ones (run a pipeline first, e.g. -p default)",
            );
        }
        for &op in &body {
            if ctx.name_str(op) == "kernel.func" {
                let workgroup = hat_dialects::kernel::workgroup_size(ctx, op).unwrap_or([64, 1, 1]);
                if let Some(name) = symbol(ctx, op, "sym_name") {
                    self.kernels.insert(name, KernelInfo { workgroup });
                }
            }
        }
        self.out.push_str("module attributes {gpu.container_module} {\n");
        for &op in &body {
            match ctx.name_str(op) {
                "compute.func" => self.host_function(op),
                "kernel.func" | "kernel.helper" => {}
                "compute.host_func" => self.error(
                    op,
                    "'compute.host_func' has no upstream spelling: a host function with declared effects cannot be a \
                     plain func.func declaration without losing its effects",
                ),
                other => {
                    let message = format!("'{other}' has no upstream spelling");
                    self.error(op, message)
                }
            }
        }
        self.out.push_str("  gpu.module @kernels {\n");
        for &op in &body {
            match ctx.name_str(op) {
                "kernel.func" => self.kernel(op),
                "kernel.helper" => self.helper(op),
                _ => {}
            }
        }
        self.out.push_str("  }\n}\n");
    }

    fn entry_block(&mut self, op: Op) -> Option<Block> {
        let ctx = self.ctx;
        let region = *ctx.regions(op).first()?;
        let blocks = ctx.region_blocks(region);
        if blocks.len() != 1 {
            self.error(op, "a function of several blocks has no upstream spelling here");
            return None;
        }
        Some(blocks[0])
    }

    fn host_function(&mut self, op: Op) {
        let ctx = self.ctx;
        let Some(block) = self.entry_block(op) else { return };
        let name = symbol(ctx, op, "sym_name").unwrap_or_default();
        let entry = !self.called.contains(&name);
        let arguments: Vec<Value> = ctx.block_arguments(block).to_vec();
        let mut parameters: Vec<String> =
            arguments.iter().map(|&a| format!("{}: {}", self.name(a), self.ty(a))).collect();
        let buffers: Vec<Value> = arguments.iter().copied().filter(|&a| self.is_buffer(a)).collect();
        if !entry {
            for &buffer in &buffers {
                let twin = format!("{}_device", self.name(buffer));
                parameters.push(format!("{twin}: {}", self.ty(buffer)));
                self.twins.insert(buffer, twin);
            }
        }
        let results = match ctx.attribute(op, "function_type").map(|a| ctx.attribute_kind(a)) {
            Some(AttributeKind::Type(ty)) => match ctx.type_kind(*ty) {
                TypeKind::Function { results, .. } => results.to_vec(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        if results.iter().any(|&r| matches!(ctx.type_kind(r), TypeKind::MemRef { .. })) {
            self.error(op, "a compute function returning a buffer has no upstream spelling here (its device copy would not come with it)");
        }
        let result_text = match results.len() {
            0 => String::new(),
            _ => format!(" -> ({})", results.iter().map(|&r| type_to_string(ctx, r)).collect::<Vec<_>>().join(", ")),
        };
        self.line(1, &format!("func.func @{name}({}){result_text} {{", parameters.join(", ")));
        let mut owned = Vec::new();
        if entry {
            for &buffer in &buffers {
                let twin = self.device_alloc(2, buffer);
                owned.push((twin.clone(), self.ty(buffer)));
                self.twins.insert(buffer, twin);
            }
        }
        for inner in ctx.block_ops(block) {
            self.host_op(inner, 2, &owned);
        }
        self.line(1, "}");
    }

    /// A `gpu.alloc` of `buffer`'s shape (dynamic sizes from `memref.dim`).
    fn device_alloc(&mut self, depth: usize, buffer: Value) -> String {
        let ctx = self.ctx;
        let buffer_name = self.name(buffer);
        let ty = self.ty(buffer);
        let mut sizes = Vec::new();
        if let TypeKind::MemRef { shape, .. } = ctx.type_kind(ctx.value_type(buffer)) {
            for (dimension, &extent) in shape.clone().iter().enumerate() {
                if extent < 0 {
                    let index = self.constant_index(depth, dimension as i64);
                    let size = self.fresh();
                    self.line(depth, &format!("{size} = memref.dim {buffer_name}, {index} : {ty}"));
                    sizes.push(size);
                }
            }
        }
        let twin = self.fresh();
        self.line(depth, &format!("{twin} = gpu.alloc ({}) : {ty}", sizes.join(", ")));
        twin
    }

    fn twin(&mut self, op: Op, buffer: Value) -> Option<String> {
        match self.twins.get(&buffer) {
            Some(twin) => Some(twin.clone()),
            None => {
                self.error(op, "this buffer has no device copy in the upstream form (it is not an argument, a buffer.alloc or a select of those)");
                None
            }
        }
    }

    /// An op written generically from hat's, with `regions` written by `region`.
    fn generic(&mut self, op: Op, depth: usize, region: &mut dyn FnMut(&mut Self, hat_ir::Region, usize)) {
        let ctx = self.ctx;
        let results: Vec<Value> = ctx.results(op).collect();
        let mut text = String::new();
        if !results.is_empty() {
            let names: Vec<String> = results.iter().map(|&r| self.name(r)).collect();
            let _ = write!(text, "{} = ", names.join(", "));
        }
        let operands: Vec<String> = ctx.operands(op).iter().map(|&v| self.name(v)).collect();
        let _ = write!(text, "\"{}\"({})", ctx.name_str(op), operands.join(", "));
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(&text);
        if !ctx.regions(op).is_empty() {
            self.out.push_str(" (");
            for (i, &r) in ctx.regions(op).iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.out.push_str("{\n");
                region(self, r, depth + 1);
                for _ in 0..depth {
                    self.out.push_str("  ");
                }
                self.out.push('}');
            }
            self.out.push(')');
        }
        let attributes: Vec<String> = ctx
            .attributes(op)
            .iter()
            .map(|&(key, value)| match ctx.attribute_kind(value) {
                AttributeKind::Unit => ctx.ident_str(key).to_string(),
                _ => format!("{} = {}", ctx.ident_str(key), attribute_to_string(ctx, value)),
            })
            .collect();
        if !attributes.is_empty() {
            let _ = write!(self.out, " {{{}}}", attributes.join(", "));
        }
        let operand_types: Vec<String> = ctx.operands(op).iter().map(|&v| self.ty(v)).collect();
        let result_types: Vec<String> = results.iter().map(|&v| self.ty(v)).collect();
        let _ = writeln!(self.out, " : ({}) -> ({})", operand_types.join(", "), result_types.join(", "));
    }

    /// The ops of a region's blocks (one block, arguments named) for `generic`.
    fn region_body(
        &mut self,
        region: hat_ir::Region,
        depth: usize,
        host: bool,
        owned: &[(String, String)],
        guard: Option<&str>,
    ) {
        let ctx = self.ctx;
        for &block in ctx.region_blocks(region) {
            let arguments: Vec<String> =
                ctx.block_arguments(block).iter().map(|&a| format!("{}: {}", self.name(a), self.ty(a))).collect();
            for _ in 0..depth.saturating_sub(1) {
                self.out.push_str("  ");
            }
            let label = format!("^bb{}", self.next);
            self.next += 1;
            if arguments.is_empty() {
                let _ = writeln!(self.out, "{label}:");
            } else {
                let _ = writeln!(self.out, "{label}({}):", arguments.join(", "));
            }
            for inner in ctx.block_ops(block) {
                if host {
                    self.host_op(inner, depth, owned);
                } else {
                    self.kernel_op(inner, depth, guard);
                }
            }
        }
    }

    /// A host op; `owned` are the twins (and types) that an entry function made, freed at its
    /// returns.
    fn host_op(&mut self, op: Op, depth: usize, owned: &[(String, String)]) {
        let ctx = self.ctx;
        let name = ctx.name_str(op).to_string();
        let operands: Vec<Value> = ctx.operands(op).to_vec();
        let names: Vec<String> = operands.iter().map(|&v| self.name(v)).collect();
        match name.as_str() {
            "scf.for" | "scf.if" | "scf.while" | "scf.yield" | "scf.condition" => {
                let carries_buffer = ctx.results(op).any(|r| self.is_buffer(r))
                    || (name != "scf.if" && operands.iter().any(|&v| self.is_buffer(v)));
                if carries_buffer {
                    match name.as_str() {
                        "scf.for" | "scf.if" | "scf.yield" => self.carrying(op, depth, owned),
                        _ => self.error(
                            op,
                            format!("'{name}' carrying a buffer has no upstream spelling here yet (its device copy would have to be carried too)"),
                        ),
                    }
                    return;
                }
                let owned = owned.to_vec();
                self.generic(op, depth, &mut |this, region, d| this.region_body(region, d, true, &owned, None));
            }
            _ if name.starts_with("arith.") || name.starts_with("math.") => {
                self.generic(op, depth, &mut |_, _, _| {});
                if name == "arith.select" && self.is_buffer(ctx.result(op, 0)) {
                    let (Some(a), Some(b)) = (self.twin(op, operands[1]), self.twin(op, operands[2])) else { return };
                    let twin = self.fresh();
                    let ty = self.ty(ctx.result(op, 0));
                    self.line(depth, &format!("{twin} = arith.select {}, {a}, {b} : {ty}", names[0]));
                    self.twins.insert(ctx.result(op, 0), twin);
                }
            }
            "buffer.load" => {
                let result = self.name(ctx.result(op, 0));
                let ty = self.ty(operands[0]);
                self.line(depth, &format!("{result} = memref.load {}[{}] : {ty}", names[0], names[1..].join(", ")));
            }
            "buffer.store" => {
                let ty = self.ty(operands[1]);
                self.line(depth, &format!("memref.store {}, {}[{}] : {ty}", names[0], names[1], names[2..].join(", ")));
            }
            "buffer.dim" => self.dim(op, depth),
            "buffer.alloc" => {
                let result = ctx.result(op, 0);
                let result_name = self.name(result);
                let ty = self.ty(result);
                self.line(depth, &format!("{result_name} = memref.alloc({}) : {ty}", names.join(", ")));
                let twin = self.fresh();
                self.line(depth, &format!("{twin} = gpu.alloc ({}) : {ty}", names.join(", ")));
                self.twins.insert(result, twin);
            }
            "buffer.dealloc" => {
                let ty = self.ty(operands[0]);
                if let Some(twin) = self.twin(op, operands[0]) {
                    self.line(depth, &format!("gpu.dealloc {twin} : {ty}"));
                }
                self.line(depth, &format!("memref.dealloc {} : {ty}", names[0]));
            }
            // Upstream MLIR has no ownership at run time: the buffer is kept until the program
            // ends (correct, later than hat frees it).
            "buffer.release" => self.line(depth, &format!("// hat: buffer.release {}", names[0])),
            // Upstream MLIR allocates each buffer on its own: the plan is hat's runtime's.
            "buffer.arena" => self.line(depth, &format!("// hat: buffer.arena({})", names.join(", "))),
            "buffer.copy" => {
                let ty = self.ty(operands[0]);
                self.line(depth, &format!("memref.copy {}, {} : {ty} to {ty}", names[0], names[1]));
            }
            "buffer.to_device" | "buffer.from_device" => self.transfer(op, depth, name == "buffer.to_device"),
            "compute.dispatch" => self.dispatch(op, depth),
            "compute.call" => {
                let Some(callee) = symbol(ctx, op, "callee") else { return };
                if !self.called.contains(&callee) || self.is_host_declaration(op, &callee) {
                    self.error(
                        op,
                        format!("a call of @{callee}, a host function with declared effects, has no upstream spelling"),
                    );
                    return;
                }
                let mut arguments = names.clone();
                let mut types: Vec<String> = operands.iter().map(|&v| self.ty(v)).collect();
                for &operand in &operands {
                    if self.is_buffer(operand) {
                        if let Some(twin) = self.twin(op, operand) {
                            arguments.push(twin);
                            types.push(self.ty(operand));
                        }
                    }
                }
                let results: Vec<Value> = ctx.results(op).collect();
                let result_names: Vec<String> = results.iter().map(|&r| self.name(r)).collect();
                let result_types: Vec<String> = results.iter().map(|&r| self.ty(r)).collect();
                let prefix = if results.is_empty() { String::new() } else { format!("{} = ", result_names.join(", ")) };
                self.line(
                    depth,
                    &format!(
                        "{prefix}func.call @{callee}({}) : ({}) -> ({})",
                        arguments.join(", "),
                        types.join(", "),
                        result_types.join(", ")
                    ),
                );
            }
            "compute.return" => {
                for (twin, ty) in owned {
                    self.line(depth, &format!("gpu.dealloc {twin} : {ty}"));
                }
                let types: Vec<String> = operands.iter().map(|&v| self.ty(v)).collect();
                if names.is_empty() {
                    self.line(depth, "func.return");
                } else {
                    self.line(depth, &format!("func.return {} : {}", names.join(", "), types.join(", ")));
                }
            }
            "compute.sync" => self.line(depth, "gpu.wait"),
            _ => self.error(op, format!("'{name}' has no upstream spelling")),
        }
    }

    /// `scf.for`, `scf.if` or `scf.yield` carrying buffers: each carried buffer's device twin is
    /// carried beside it (an extra loop argument, result and yielded value).
    fn carrying(&mut self, op: Op, depth: usize, owned: &[(String, String)]) {
        let ctx = self.ctx;
        let name = ctx.name_str(op).to_string();
        let operands: Vec<Value> = ctx.operands(op).to_vec();
        let mut operand_names: Vec<String> = operands.iter().map(|&v| self.name(v)).collect();
        let mut operand_types: Vec<String> = operands.iter().map(|&v| self.ty(v)).collect();
        // Loop-carried (for) or yielded (yield) buffers: their twins go at the end.
        let carried: Vec<Value> = match name.as_str() {
            "scf.for" => operands[3..].to_vec(),
            "scf.yield" => operands.clone(),
            _ => Vec::new(),
        };
        let carried: Vec<Value> = carried.into_iter().filter(|&v| self.is_buffer(v)).collect();
        for value in carried {
            let Some(twin) = self.twin(op, value) else { return };
            operand_names.push(twin);
            operand_types.push(self.ty(value));
        }
        let results: Vec<Value> = ctx.results(op).collect();
        let mut result_names: Vec<String> = results.iter().map(|&r| self.name(r)).collect();
        let mut result_types: Vec<String> = results.iter().map(|&r| self.ty(r)).collect();
        let carried_results: Vec<Value> = results.iter().copied().filter(|&r| self.is_buffer(r)).collect();
        for result in carried_results {
            let twin = self.fresh();
            result_names.push(twin.clone());
            result_types.push(self.ty(result));
            self.twins.insert(result, twin);
        }
        let prefix = if result_names.is_empty() { String::new() } else { format!("{} = ", result_names.join(", ")) };
        if name == "scf.yield" {
            self.line(
                depth,
                &format!("\"scf.yield\"({}) : ({}) -> ()", operand_names.join(", "), operand_types.join(", ")),
            );
            return;
        }
        self.line(depth, &format!("{prefix}\"{name}\"({}) ({{", operand_names.join(", ")));
        for (index, &region) in ctx.regions(op).iter().enumerate() {
            if index > 0 {
                self.line(depth, "}, {");
            }
            for &block in ctx.region_blocks(region) {
                let arguments: Vec<Value> = ctx.block_arguments(block).to_vec();
                let mut parameters: Vec<String> =
                    arguments.iter().map(|&a| format!("{}: {}", self.name(a), self.ty(a))).collect();
                let carried_arguments: Vec<Value> = arguments.iter().copied().filter(|&a| self.is_buffer(a)).collect();
                for argument in carried_arguments {
                    let twin = self.fresh();
                    parameters.push(format!("{twin}: {}", self.ty(argument)));
                    self.twins.insert(argument, twin);
                }
                let label = format!("^bb{}", self.next);
                self.next += 1;
                self.line(depth, &format!("{label}({}):", parameters.join(", ")));
                for inner in ctx.block_ops(block) {
                    self.host_op(inner, depth + 1, owned);
                }
            }
        }
        self.line(depth, &format!("}}) : ({}) -> ({})", operand_types.join(", "), result_types.join(", ")));
    }

    fn is_host_declaration(&self, op: Op, callee: &str) -> bool {
        let ctx = self.ctx;
        let module = std::iter::successors(Some(op), |&o| ctx.parent_op(o)).last().unwrap_or(op);
        ctx.body_ops(module)
            .into_iter()
            .any(|o| ctx.name_str(o) == "compute.host_func" && symbol(ctx, o, "sym_name").as_deref() == Some(callee))
    }

    fn dim(&mut self, op: Op, depth: usize) {
        let ctx = self.ctx;
        let dimension = match ctx.attribute(op, "dimension").map(|a| ctx.attribute_kind(a)) {
            Some(AttributeKind::Integer { value, .. }) => *value,
            _ => 0,
        };
        let buffer = ctx.operand(op, 0);
        let buffer_name = self.name(buffer);
        let ty = self.ty(buffer);
        let index = self.constant_index(depth, dimension);
        let result = self.name(ctx.result(op, 0));
        self.line(depth, &format!("{result} = memref.dim {buffer_name}, {index} : {ty}"));
    }

    fn transfer(&mut self, op: Op, depth: usize, to_device: bool) {
        let ctx = self.ctx;
        let operands: Vec<Value> = ctx.operands(op).to_vec();
        let buffer = operands[0];
        let Some(twin) = self.twin(op, buffer) else { return };
        let host = self.name(buffer);
        let ty = self.ty(buffer);
        let (source, destination, ty) = if operands.len() == 3 {
            let TypeKind::MemRef { shape, element, .. } = ctx.type_kind(ctx.value_type(buffer)).clone() else { return };
            let element = type_to_string(ctx, element);
            let (host_flat, twin_flat, flat_ty) = if shape.len() == 1 {
                (host.clone(), twin.clone(), ty.clone())
            } else {
                let reassociation =
                    format!("[[{}]]", (0..shape.len()).map(|d| d.to_string()).collect::<Vec<_>>().join(", "));
                let total: Option<i64> = shape.iter().try_fold(1i64, |p, &e| (e >= 0).then(|| p * e));
                let flat_ty = match total {
                    Some(total) => format!("memref<{total}x{element}>"),
                    None => format!("memref<?x{element}>"),
                };
                let (h, t) = (self.fresh(), self.fresh());
                self.line(depth, &format!("{h} = memref.collapse_shape {host} {reassociation} : {ty} into {flat_ty}"));
                self.line(depth, &format!("{t} = memref.collapse_shape {twin} {reassociation} : {ty} into {flat_ty}"));
                (h, t, flat_ty)
            };
            let (offset, count) = (self.name(operands[1]), self.name(operands[2]));
            let view_ty = format!("memref<?x{element}, strided<[1], offset: ?>>");
            let (h, t) = (self.fresh(), self.fresh());
            self.line(
                depth,
                &format!("{h} = memref.subview {host_flat}[{offset}] [{count}] [1] : {flat_ty} to {view_ty}"),
            );
            self.line(
                depth,
                &format!("{t} = memref.subview {twin_flat}[{offset}] [{count}] [1] : {flat_ty} to {view_ty}"),
            );
            if to_device {
                (h, t, view_ty)
            } else {
                (t, h, view_ty)
            }
        } else if to_device {
            (host, twin, ty)
        } else {
            (twin, host, ty)
        };
        self.line(depth, &format!("gpu.memcpy {destination}, {source} : {ty}, {ty}"));
    }

    fn dispatch(&mut self, op: Op, depth: usize) {
        let ctx = self.ctx;
        let Some(kernel) = symbol(ctx, op, "kernel") else { return };
        let Some(info) = self.kernels.get(&kernel).copied() else {
            self.error(op, format!("@{kernel} is not a kernel of this module"));
            return;
        };
        let grid_count = match ctx.attribute(op, "operandSegmentSizes").map(|a| ctx.attribute_kind(a)) {
            Some(AttributeKind::DenseArray { values, .. }) => values.first().copied().unwrap_or(1) as usize,
            _ => 1,
        };
        let operands: Vec<Value> = ctx.operands(op).to_vec();
        let mut grid = Vec::new();
        for dimension in 0..3 {
            grid.push(match operands.get(dimension).filter(|_| dimension < grid_count) {
                Some(&value) => self.name(value),
                None => self.constant_index(depth, 1),
            });
        }
        let mut blocks = Vec::new();
        let mut threads = Vec::new();
        for (extent, workgroup) in grid.iter().zip(info.workgroup) {
            let size = self.constant_index(depth, workgroup);
            let count = self.fresh();
            self.line(depth, &format!("{count} = arith.ceildivsi {extent}, {size} : index"));
            blocks.push(count);
            threads.push(size);
        }
        let mut arguments = Vec::new();
        for &argument in &operands[grid_count..] {
            let value = if self.is_buffer(argument) {
                match self.twin(op, argument) {
                    Some(twin) => twin,
                    None => return,
                }
            } else {
                self.name(argument)
            };
            arguments.push(format!("{value} : {}", self.ty(argument)));
        }
        for size in &grid {
            arguments.push(format!("{size} : index"));
        }
        self.line(
            depth,
            &format!(
                "gpu.launch_func @kernels::@{kernel} blocks in ({}) threads in ({}) args({})",
                blocks.join(", "),
                threads.join(", "),
                arguments.join(", ")
            ),
        );
    }

    fn kernel(&mut self, op: Op) {
        let ctx = self.ctx;
        let Some(block) = self.entry_block(op) else { return };
        let name = symbol(ctx, op, "sym_name").unwrap_or_default();
        let workgroup = self.kernels.get(&name).map(|k| k.workgroup).unwrap_or([64, 1, 1]);
        let arguments: Vec<Value> = ctx.block_arguments(block).to_vec();
        let mut parameters: Vec<String> =
            arguments.iter().map(|&a| format!("{}: {}", self.name(a), self.ty(a))).collect();
        let grid: Vec<String> = (0..3).map(|_| self.fresh()).collect();
        parameters.extend(grid.iter().map(|g| format!("{g}: index")));
        let walked = ctx.walk(op);
        let mut attributions = Vec::new();
        for &inner in &walked {
            if ctx.name_str(inner) == "kernel.local_alloc" {
                let result = ctx.result(inner, 0);
                let ty = type_to_string(ctx, ctx.value_type(result));
                let ty = format!("{}, #gpu.address_space<workgroup>>", ty.trim_end_matches('>'));
                self.types.insert(result, ty.clone());
                attributions.push(format!("{}: {ty}", self.name(result)));
            }
        }
        let has_barrier = walked.iter().any(|&inner| ctx.name_str(inner) == "kernel.barrier");
        let workgroup_text =
            if attributions.is_empty() { String::new() } else { format!(" workgroup({})", attributions.join(", ")) };
        self.line(
            2,
            &format!(
                "gpu.func @{name}({}){workgroup_text} kernel attributes {{known_block_size = array<i32: {}, {}, {}>}} {{",
                parameters.join(", "),
                workgroup[0],
                workgroup[1],
                workgroup[2]
            ),
        );
        // Whether this work item is inside the grid.
        let dims = ["x", "y", "z"];
        let mut inside = None;
        for (dimension, size) in grid.iter().enumerate() {
            let id = self.fresh();
            self.line(3, &format!("{id} = gpu.global_id {}", dims[dimension]));
            let below = self.fresh();
            self.line(3, &format!("{below} = arith.cmpi ult, {id}, {size} : index"));
            inside = Some(match inside {
                None => below,
                Some(previous) => {
                    let both = self.fresh();
                    self.line(3, &format!("{both} = arith.andi {previous}, {below} : i1"));
                    both
                }
            });
        }
        let inside = inside.unwrap_or_default();
        for (dimension, size) in grid.iter().enumerate() {
            self.kernel_grid.insert(dimension, size.clone());
        }
        if has_barrier {
            for inner in ctx.block_ops(block) {
                self.kernel_op(inner, 3, Some(&inside));
            }
        } else {
            self.line(3, &format!("scf.if {inside} {{"));
            for inner in ctx.block_ops(block) {
                if ctx.name_str(inner) == "kernel.return" {
                    continue;
                }
                self.kernel_op(inner, 4, None);
            }
            self.line(3, "}");
            self.line(3, "gpu.return");
        }
        self.line(2, "}");
    }

    fn helper(&mut self, op: Op) {
        let ctx = self.ctx;
        let Some(block) = self.entry_block(op) else { return };
        let name = symbol(ctx, op, "sym_name").unwrap_or_default();
        let arguments: Vec<Value> = ctx.block_arguments(block).to_vec();
        let parameters: Vec<String> = arguments.iter().map(|&a| format!("{}: {}", self.name(a), self.ty(a))).collect();
        let results = match ctx.attribute(op, "function_type").map(|a| ctx.attribute_kind(a)) {
            Some(AttributeKind::Type(ty)) => match ctx.type_kind(*ty) {
                TypeKind::Function { results, .. } => results.to_vec(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let result_text = match results.len() {
            0 => String::new(),
            _ => format!(" -> ({})", results.iter().map(|&r| type_to_string(ctx, r)).collect::<Vec<_>>().join(", ")),
        };
        self.line(2, &format!("func.func @{name}({}){result_text} {{", parameters.join(", ")));
        self.in_helper = true;
        for inner in ctx.block_ops(block) {
            self.kernel_op(inner, 3, None);
        }
        self.in_helper = false;
        self.line(2, "}");
    }

    /// A kernel-code op; with `guard`, each access to a buffer outside workgroup memory runs only
    /// where `guard` holds (a kernel with a barrier, see the module documentation).
    fn kernel_op(&mut self, op: Op, depth: usize, guard: Option<&str>) {
        let ctx = self.ctx;
        let name = ctx.name_str(op).to_string();
        let operands: Vec<Value> = ctx.operands(op).to_vec();
        let names: Vec<String> = operands.iter().map(|&v| self.name(v)).collect();
        let dims = ["x", "y", "z"];
        let dimension = || match ctx.attribute(op, "dimension").map(|a| ctx.attribute_kind(a)) {
            Some(AttributeKind::Integer { value, .. }) => *value as usize,
            _ => 0,
        };
        let work_item = match name.as_str() {
            "kernel.global_id" => Some("gpu.global_id"),
            "kernel.local_id" => Some("gpu.thread_id"),
            "kernel.group_id" => Some("gpu.block_id"),
            "kernel.local_size" => Some("gpu.block_dim"),
            "kernel.num_groups" => Some("gpu.grid_dim"),
            _ => None,
        };
        if let Some(upstream) = work_item {
            let result = self.name(ctx.result(op, 0));
            self.line(depth, &format!("{result} = {upstream} {}", dims[dimension().min(2)]));
            return;
        }
        // Accesses to device buffers (not workgroup memory) run only inside the grid.
        let guarded = |this: &Self, buffer: Value| guard.is_some() && !this.types.contains_key(&buffer);
        match name.as_str() {
            "kernel.global_size" => {
                let result = ctx.result(op, 0);
                match self.kernel_grid.get(&dimension().min(2)).cloned() {
                    Some(size) if !self.in_helper => {
                        self.names.insert(result, size);
                    }
                    _ => self.error(op, "'kernel.global_size' in a helper has no upstream spelling here"),
                }
            }
            "kernel.barrier" => self.line(depth, "gpu.barrier"),
            "kernel.local_alloc" => {}
            "kernel.return" => {
                let types: Vec<String> = operands.iter().map(|&v| self.ty(v)).collect();
                let keyword = if self.in_helper { "func.return" } else { "gpu.return" };
                if names.is_empty() {
                    self.line(depth, keyword);
                } else {
                    self.line(depth, &format!("{keyword} {} : {}", names.join(", "), types.join(", ")));
                }
            }
            "kernel.call" => {
                let Some(callee) = symbol(ctx, op, "callee") else { return };
                let types: Vec<String> = operands.iter().map(|&v| self.ty(v)).collect();
                let results: Vec<Value> = ctx.results(op).collect();
                let result_names: Vec<String> = results.iter().map(|&r| self.name(r)).collect();
                let result_types: Vec<String> = results.iter().map(|&r| self.ty(r)).collect();
                let prefix = if results.is_empty() { String::new() } else { format!("{} = ", result_names.join(", ")) };
                self.line(
                    depth,
                    &format!(
                        "{prefix}func.call @{callee}({}) : ({}) -> ({})",
                        names.join(", "),
                        types.join(", "),
                        result_types.join(", ")
                    ),
                );
            }
            "buffer.load" => {
                let result = self.name(ctx.result(op, 0));
                let ty = self.ty(operands[0]);
                let element = self.ty(ctx.result(op, 0));
                let load = format!("memref.load {}[{}] : {ty}", names[0], names[1..].join(", "));
                if guarded(self, operands[0]) {
                    let (value, zero) = (self.fresh(), self.fresh());
                    self.line(depth, &format!("{result} = scf.if {} -> ({element}) {{", guard.unwrap_or_default()));
                    self.line(depth + 1, &format!("{value} = {load}"));
                    self.line(depth + 1, &format!("scf.yield {value} : {element}"));
                    self.line(depth, "} else {");
                    let zero_text = if element.starts_with('f') { "0.0" } else { "0" };
                    self.line(depth + 1, &format!("{zero} = arith.constant {zero_text} : {element}"));
                    self.line(depth + 1, &format!("scf.yield {zero} : {element}"));
                    self.line(depth, "}");
                } else {
                    self.line(depth, &format!("{result} = {load}"));
                }
            }
            "buffer.store" => {
                let ty = self.ty(operands[1]);
                let store = format!("memref.store {}, {}[{}] : {ty}", names[0], names[1], names[2..].join(", "));
                if guarded(self, operands[1]) {
                    self.line(depth, &format!("scf.if {} {{", guard.unwrap_or_default()));
                    self.line(depth + 1, &store);
                    self.line(depth, "}");
                } else {
                    self.line(depth, &store);
                }
            }
            "buffer.dim" => self.dim(op, depth),
            "kernel.atomic_rmw" => {
                let kind = match ctx.attribute(op, "kind").map(|a| ctx.attribute_kind(a)) {
                    Some(AttributeKind::String(kind)) => kind.to_string(),
                    _ => String::new(),
                };
                let element = self.ty(ctx.result(op, 0));
                let float = element.starts_with('f');
                let upstream = match (kind.as_str(), float) {
                    ("add", false) => "addi",
                    ("add", true) => "addf",
                    ("min", false) => "mins",
                    ("min", true) => "minimumf",
                    ("max", false) => "maxs",
                    ("max", true) => "maximumf",
                    ("and", _) => "andi",
                    ("or", _) => "ori",
                    ("xor", _) => "xori",
                    ("exchange", _) => "assign",
                    _ => {
                        self.error(op, format!("'kernel.atomic_rmw {kind}' has no upstream spelling (memref.atomic_rmw has no such kind)"));
                        return;
                    }
                };
                let result = self.name(ctx.result(op, 0));
                let ty = self.ty(operands[0]);
                let value = names.last().cloned().unwrap_or_default();
                let indices = names[1..names.len() - 1].join(", ");
                let atomic = format!(
                    "memref.atomic_rmw {upstream} {value}, {}[{indices}] : ({element}, {ty}) -> {element}",
                    names[0]
                );
                if guarded(self, operands[0]) {
                    let (old, zero) = (self.fresh(), self.fresh());
                    self.line(depth, &format!("{result} = scf.if {} -> ({element}) {{", guard.unwrap_or_default()));
                    self.line(depth + 1, &format!("{old} = {atomic}"));
                    self.line(depth + 1, &format!("scf.yield {old} : {element}"));
                    self.line(depth, "} else {");
                    let zero_text = if float { "0.0" } else { "0" };
                    self.line(depth + 1, &format!("{zero} = arith.constant {zero_text} : {element}"));
                    self.line(depth + 1, &format!("scf.yield {zero} : {element}"));
                    self.line(depth, "}");
                } else {
                    self.line(depth, &format!("{result} = {atomic}"));
                }
            }
            "scf.for" | "scf.if" | "scf.while" | "scf.yield" | "scf.condition" => {
                let guard = guard.map(str::to_string);
                self.generic(op, depth, &mut |this, region, d| {
                    this.region_body(region, d, false, &[], guard.as_deref())
                });
            }
            _ if name.starts_with("arith.") || name.starts_with("math.") => self.generic(op, depth, &mut |_, _, _| {}),
            _ => self.error(op, format!("'{name}' has no upstream spelling in kernel code")),
        }
    }
}
