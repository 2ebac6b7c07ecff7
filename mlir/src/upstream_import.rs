//! Upstream MLIR GPU programs (`func`, `scf`, `arith`, `math`, `memref`, `gpu`) as hat programs.
//!
//! | upstream | hat |
//! |---|---|
//! | `func.func` (host), `func.call`, `func.return` | `compute.func`, `compute.call`, `compute.return` |
//! | `gpu.module` | its functions join the module |
//! | `gpu.func ... kernel` | `kernel.func`, `workgroup_size` from its launches' constant block sizes (or `known_block_size`) |
//! | `func.func` in a `gpu.module`, its calls and returns | `kernel.helper`, `kernel.call`, `kernel.return` |
//! | `gpu.return` | `kernel.return` |
//! | `gpu.global_id thread_id block_id block_dim grid_dim` | `kernel.global_id local_id group_id local_size num_groups` |
//! | `gpu.barrier`, a `workgroup(...)` attribution, `memref.atomic_rmw` | `kernel.barrier`, `kernel.local_alloc`, `kernel.atomic_rmw` |
//! | `memref.alloc`/`alloca`, `gpu.alloc` | `buffer.alloc` (a `gpu.alloc` buffer is a hat buffer the host never reads) |
//! | `memref.dealloc`, `gpu.dealloc` | `buffer.dealloc` |
//! | `memref.load store dim copy` | `buffer.load store dim copy` |
//! | `gpu.memcpy %dst, %src` | a dispatch of a copy kernel: a copy between two buffers, wherever `insert-transfers` finds their bytes — not a forced transfer |
//! | `gpu.launch_func @m::@k blocks in (b) threads in (t) args(...)` | `compute.dispatch @k[b * t](...)` |
//! | `gpu.launch` (inline) | outlined first by MLIR's own `gpu-kernel-outlining` |
//! | `gpu.wait` | `compute.sync`; `gpu.wait async` and async tokens: nothing (hat orders by data) |
//!
//! Copies then go through [`crate::dead_copies`], which erases the copies whose destination
//! is overwritten whole before anything reads it. Everything else is a diagnostic at its op.
//!
//! The translation dispatches on op names: it is a dialect conversion, whose source and target
//! are sets of named ops.

use crate::session::{position, MlirError, Session};
use hat_ir::location::SourceId;
use hat_ir::{Context, Diagnostic, Location, Op};
use melior::ir::block::BlockLike;
use melior::ir::operation::{OperationLike, OperationResult, WalkOrder, WalkResult};
use melior::ir::{BlockRef, Module, OperationRef, RegionLike, Type, Value, ValueLike};
use std::collections::{BTreeMap, HashMap};

/// Whether `module` has ops of `func`, `memref` or `gpu` (which hat reads by translation).
pub fn is_upstream(module: &Module<'_>) -> bool {
    let mut found = false;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        if ["func.", "memref.", "gpu."].iter().any(|prefix| name.starts_with(prefix)) {
            found = true;
        }
        WalkResult::Advance
    });
    found
}

/// Outlines the inline `gpu.launch`es of `module` with MLIR's `gpu-kernel-outlining`.
pub fn outline(session: &Session, module: &mut Module<'_>) -> Result<(), Vec<MlirError>> {
    let mut inline = false;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("gpu.launch") {
            inline = true;
        }
        WalkResult::Advance
    });
    if !inline {
        return Ok(());
    }
    let manager = melior::pass::PassManager::new(&session.context);
    manager.add_pass(melior::pass::gpu::create_gpu_kernel_outlining_pass());
    session.take_errors();
    manager.run(module).map_err(|e| {
        let mut errors = session.take_errors();
        if errors.is_empty() {
            errors.push(MlirError { position: None, message: format!("gpu-kernel-outlining failed: {e}") });
        }
        errors
    })
}

/// The hat program that `module` means, in `ctx`, located in `source`.
pub fn read(ctx: &mut Context, source: SourceId, module: &Module<'_>) -> Result<Op, Vec<Diagnostic>> {
    let mut translator = Translator::new(ctx, source);
    translator.collect_launches(module.as_operation());
    translator.module(module);
    let Translator { out, lines, mut errors, names, .. } = translator;
    if !errors.is_empty() {
        errors.sort_by_key(|d| d.location.offset());
        return Err(errors);
    }
    let parsed = crate::import::parse_translation(ctx, source, &out)?;
    // Each hat op takes the location of the MLIR op its text line came from.
    let translated = ctx.location(parsed).source();
    for op in std::iter::once(parsed).chain(ctx.walk(parsed)) {
        let location = ctx.location(op);
        if location.source() != translated || translated.is_none() {
            continue;
        }
        let (_, line, _) = ctx.sources.file_line_col(location).unwrap_or(("", 0, 0));
        let mapped = lines.range(..=line).next_back().map(|(_, &l)| l).unwrap_or(Location::new(source, 0));
        ctx.set_location(op, mapped);
    }
    let mut arguments = Vec::new();
    crate::import::collect_arguments(ctx, parsed, &mut arguments);
    for (argument, name) in arguments.into_iter().zip(names) {
        if let Some(name) = name {
            ctx.set_argument_name(argument, &name);
        }
    }
    crate::dead_copies::erase(ctx, parsed);
    Ok(parsed)
}

/// What is known of one kernel's launches.
#[derive(Default)]
struct Launches {
    /// The constant block size of every launch, if they agree.
    block: Option<[i64; 3]>,
    /// A launch whose block size is not constant, or differs from another's.
    conflict: Option<String>,
}

struct Translator<'x> {
    ctx: &'x Context,
    source: SourceId,
    out: String,
    /// The MLIR location of the op written at each line of `out` (1-based).
    lines: BTreeMap<usize, Location>,
    line: usize,
    values: HashMap<usize, String>,
    next: usize,
    errors: Vec<Diagnostic>,
    launches: HashMap<String, Launches>,
    /// The copy kernels needed, by memref type: (kernel name, rank).
    copies: BTreeMap<String, String>,
    /// Whether the function being written is kernel code.
    device: bool,
    /// The source name of each region argument written, in the order hat visits them.
    names: Vec<Option<String>>,
    /// Views (`memref.collapse_shape` to one dimension, then `memref.subview` of a range), by
    /// the raw value: what `gpu.memcpy` of a range copies.
    views: HashMap<usize, View>,
    /// The range-copy kernels needed, by (source type, destination type).
    range_copies: BTreeMap<(String, String), String>,
}

/// A flat range of a buffer's elements (row-major), as the upstream export writes transfers of
/// a range.
#[derive(Clone)]
struct View {
    /// The buffer (its hat name) and type.
    base: String,
    base_type: String,
    /// The first element and the count, as hat values; `None`: the whole buffer.
    range: Option<(String, String)>,
}

/// The `value` of an `arith.constant` of integer type that defines `value`, if one does.
fn constant(value: Value<'_, '_>) -> Option<i64> {
    let result = OperationResult::try_from(value).ok()?;
    let op = result.owner();
    if op.name().as_string_ref().as_str() != Ok("arith.constant") {
        return None;
    }
    let text = op.attribute("value").ok()?.to_string();
    let number = text.split(" : ").next()?.trim();
    match number {
        "true" => Some(1),
        "false" => Some(0),
        _ => number.parse().ok(),
    }
}

fn op_name(op: &OperationRef<'_, '_>) -> String {
    op.name().as_string_ref().as_str().unwrap_or("").to_string()
}

fn string_attribute(op: &OperationRef<'_, '_>, name: &str) -> Option<String> {
    let text = op.attribute(name).ok()?.to_string();
    Some(text.trim_matches('"').to_string())
}

impl<'x> Translator<'x> {
    fn new(ctx: &'x Context, source: SourceId) -> Self {
        Translator {
            ctx,
            source,
            out: String::new(),
            lines: BTreeMap::new(),
            line: 1,
            values: HashMap::new(),
            next: 0,
            errors: Vec::new(),
            launches: HashMap::new(),
            copies: BTreeMap::new(),
            device: false,
            names: Vec::new(),
            views: HashMap::new(),
            range_copies: BTreeMap::new(),
        }
    }

    fn location(&self, location: melior::ir::Location<'_>) -> Location {
        let file = self.ctx.sources.file(self.source).name();
        match position(location) {
            Some((f, line, column)) if f == file => crate::locations::location_in(self.ctx, self.source, line, column)
                .unwrap_or(Location::new(self.source, 0)),
            _ => Location::new(self.source, 0),
        }
    }

    fn error(&mut self, op: &OperationRef<'_, '_>, message: impl Into<String>) {
        let location = self.location(op.location());
        self.errors.push(Diagnostic::error(location, message));
    }

    fn refuse(&mut self, op: &OperationRef<'_, '_>, why: &str) {
        let name = op_name(op);
        self.error(op, format!("'{name}' is outside the subset of MLIR that hat reads: {why} (see docs/mlir.md)"));
    }

    /// Writes one line of hat text for the MLIR op `op`.
    fn emit(&mut self, depth: usize, op: &OperationRef<'_, '_>, text: &str) {
        let location = self.location(op.location());
        self.lines.insert(self.line, location);
        self.raw(depth, text);
    }

    fn raw(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
        self.line += 1 + text.matches('\n').count();
    }

    fn value<'v>(&mut self, value: impl ValueLike<'v>) -> String {
        let key = value.to_raw().ptr as usize;
        let next = self.values.len();
        self.values.entry(key).or_insert_with(|| format!("%{next}")).clone()
    }

    /// The name a region argument has in the source: the `%name` at its location, which MLIR
    /// gives as where the argument is defined.
    fn source_name<'v>(&mut self, argument: impl ValueLike<'v>) {
        let file = self.ctx.sources.file(self.source);
        let name = position(argument.location())
            .filter(|(f, _, _)| f == file.name())
            .and_then(|(_, line, column)| crate::locations::location_in(self.ctx, self.source, line, column))
            .and_then(|location| {
                let rest = file.text().get(location.offset() as usize..)?.strip_prefix('%')?;
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.' | '-')))
                    .unwrap_or(rest.len());
                Some(rest[..end].to_string()).filter(|n| !n.is_empty())
            });
        self.names.push(name);
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%t{}", self.next)
    }

    fn is_token(ty: Type<'_>) -> bool {
        ty.to_string() == "!gpu.async.token"
    }

    /// A type in hat's spelling: workgroup memory loses its address space (hat's
    /// `kernel.local_alloc` is workgroup memory by construction); other layouts and spaces are
    /// outside the subset.
    fn ty(&mut self, op: &OperationRef<'_, '_>, ty: Type<'_>) -> String {
        let text = ty.to_string();
        let text = text.replace(", #gpu.address_space<workgroup>", "");
        if text.starts_with("memref<") && (text.contains(", ") || text.contains('#')) {
            self.refuse(op, &format!("the type {text} has a layout or memory space hat has no spelling of"));
        }
        if text.starts_with("tensor") || text.starts_with("vector") || text.starts_with('!') {
            self.refuse(op, &format!("hat has no type {text}"));
        }
        text
    }

    fn operands(&mut self, op: &OperationRef<'_, '_>) -> (Vec<String>, Vec<String>) {
        let mut names = Vec::new();
        let mut types = Vec::new();
        for operand in op.operands() {
            if Self::is_token(operand.r#type()) {
                continue;
            }
            names.push(self.value(operand));
            types.push(self.ty(op, operand.r#type()));
        }
        (names, types)
    }

    fn results(&mut self, op: &OperationRef<'_, '_>) -> (Vec<String>, Vec<String>) {
        let mut names = Vec::new();
        let mut types = Vec::new();
        for result in op.results() {
            if Self::is_token(result.r#type()) {
                continue;
            }
            names.push(self.value(result));
            types.push(self.ty(op, result.r#type()));
        }
        (names, types)
    }

    fn collect_launches(&mut self, top: OperationRef<'_, '_>) {
        let mut found: Vec<(String, Option<[i64; 3]>, String)> = Vec::new();
        top.walk(WalkOrder::PreOrder, |op| {
            if op.name().as_string_ref().as_str() == Ok("gpu.launch_func") {
                let kernel = op.attribute("kernel").map(|a| a.to_string()).unwrap_or_default();
                let kernel = kernel.rsplit("::").next().unwrap_or("").trim_start_matches('@').to_string();
                // Operands: async dependencies, then grid x y z, block x y z, ...
                let tokens = op.operands().take_while(|v| v.r#type().to_string() == "!gpu.async.token").count();
                let block: Option<Vec<i64>> =
                    (0..3).map(|i| op.operand(tokens + 3 + i).ok().and_then(constant)).collect();
                found.push((kernel, block.map(|b| [b[0], b[1], b[2]]), op.location().to_string()));
            }
            WalkResult::Advance
        });
        for (kernel, block, location) in found {
            let entry = self.launches.entry(kernel).or_default();
            match (block, entry.block) {
                (None, _) => {
                    entry.conflict = Some(format!("a launch at {location} has a block size that is not constant"))
                }
                (Some(b), Some(existing)) if b != existing => {
                    entry.conflict = Some(format!("launches disagree on its block size ({existing:?} and {b:?})"))
                }
                (Some(b), _) => entry.block = Some(b),
            }
        }
    }

    fn module(&mut self, module: &Module<'_>) {
        self.raw(0, "\"builtin.module\"() ({");
        let body = module.body();
        let mut op = body.first_operation();
        while let Some(current) = op {
            match op_name(&current).as_str() {
                "func.func" => {
                    self.device = false;
                    self.function(&current, "compute.func");
                }
                "gpu.module" => self.gpu_module(&current),
                _ => self.refuse(&current, "only functions and GPU modules may be at the top level"),
            }
            op = current.next_in_block();
        }
        let copies: Vec<(String, String)> = self.copies.iter().map(|(t, k)| (t.clone(), k.clone())).collect();
        for (ty, kernel) in copies {
            self.copy_kernel(&ty, &kernel);
        }
        let range_copies: Vec<((String, String), String)> =
            self.range_copies.iter().map(|(t, k)| (t.clone(), k.clone())).collect();
        for ((source, destination), kernel) in range_copies {
            self.range_copy_kernel(&source, &destination, &kernel);
        }
        self.raw(0, "}) : () -> ()");
    }

    fn gpu_module(&mut self, module: &OperationRef<'_, '_>) {
        let Ok(region) = module.region(0) else { return };
        let Some(block) = region.first_block() else { return };
        let mut op = block.first_operation();
        while let Some(current) = op {
            self.device = true;
            match op_name(&current).as_str() {
                "gpu.func" => {
                    if current.has_attribute("gpu.kernel") {
                        self.function(&current, "kernel.func");
                    } else {
                        self.refuse(&current, "a gpu.func that is not a kernel (write device functions as func.func)");
                    }
                }
                "func.func" => self.function(&current, "kernel.helper"),
                "gpu.module_end" => {}
                _ => self.refuse(&current, "a GPU module holds only kernels and device functions"),
            }
            op = current.next_in_block();
        }
        self.device = false;
    }

    fn function(&mut self, op: &OperationRef<'_, '_>, hat_name: &str) {
        let name = string_attribute(op, "sym_name").unwrap_or_default();
        let Ok(region) = op.region(0) else { return };
        let Some(entry) = region.first_block() else {
            self.refuse(op, "a function declaration without a body (hat's host functions are compute.host_func)");
            return;
        };
        if entry.next_in_region().is_some() {
            self.refuse(
                op,
                "a function of several blocks (hat's functions are structured: one block, scf for control flow)",
            );
            return;
        }
        let function_type = op.attribute("function_type").map(|a| a.to_string()).unwrap_or_default();
        if function_type.contains('!') || function_type.contains('#') || function_type.contains("tensor") {
            self.refuse(op, &format!("the function type {function_type} has a type hat has no spelling of"));
        }
        let function_type = function_type.replace(", #gpu.address_space<workgroup>", "");
        let mut attributes = vec![format!("function_type = {function_type}"), format!("sym_name = \"{name}\"")];
        if hat_name == "kernel.func" {
            let known = op.attribute("known_block_size").ok().map(|a| a.to_string());
            let (conflict, block) =
                self.launches.get(&name).map(|l| (l.conflict.clone(), l.block)).unwrap_or((None, None));
            let refused = conflict.is_some();
            if let Some(conflict) = conflict {
                self.refuse(op, &format!("hat's workgroup size is a property of the kernel, and {conflict}"));
            }
            let block = block.map(|b| format!("array<i64: {}, {}, {}>", b[0], b[1], b[2]));
            let known = known.map(|k| k.replace("array<i32:", "array<i64:"));
            match block.or(known) {
                Some(size) => attributes.push(format!("workgroup_size = {size}")),
                None if refused => {}
                None => self.refuse(op, "a kernel that is never launched and has no known_block_size"),
            }
        }
        let header = format!("\"{hat_name}\"() ({{");
        self.emit(1, op, &header);
        let workgroup_count = op
            .attribute("workgroup_attributions")
            .ok()
            .and_then(|a| a.to_string().split(" : ").next().and_then(|n| n.trim().parse::<usize>().ok()))
            .unwrap_or(0);
        let arguments = entry.argument_count();
        let inputs = op
            .attribute("function_type")
            .ok()
            .and_then(|a| melior::ir::attribute::TypeAttribute::try_from(a).ok())
            .and_then(|a| melior::ir::r#type::FunctionType::try_from(a.value()).ok())
            .map(|f| f.input_count())
            .unwrap_or(arguments.saturating_sub(workgroup_count));
        if inputs + workgroup_count < arguments {
            self.refuse(op, "private attributions (hat has no per-work-item memory op)");
            return;
        }
        let mut parameters = Vec::new();
        for i in 0..inputs {
            let Ok(argument) = entry.argument(i) else { continue };
            self.source_name(argument);
            let name = self.value(argument);
            let ty = self.ty(op, argument.r#type());
            parameters.push(format!("{name}: {ty}"));
        }
        self.raw(1, &format!("^bb0({}):", parameters.join(", ")));
        for i in inputs..arguments {
            let Ok(argument) = entry.argument(i) else { continue };
            let name = self.value(argument);
            let ty = self.ty(op, argument.r#type());
            self.emit(2, op, &format!("{name} = \"kernel.local_alloc\"() : () -> {ty}"));
        }
        self.block_ops(entry, 2);
        let attributes = attributes.join(", ");
        self.emit(1, op, &format!("}}) {{{attributes}}} : () -> ()"));
    }

    fn block_ops(&mut self, block: BlockRef<'_, '_>, depth: usize) {
        let mut op = block.first_operation();
        while let Some(current) = op {
            self.op(&current, depth);
            op = current.next_in_block();
        }
    }

    fn op(&mut self, op: &OperationRef<'_, '_>, depth: usize) {
        if depth > crate::import::MAX_DEPTH {
            self.refuse(op, &format!("ops nested more than {} deep", crate::import::MAX_DEPTH));
            return;
        }
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.op_unguarded(op, depth))
    }

    fn op_unguarded(&mut self, op: &OperationRef<'_, '_>, depth: usize) {
        let name = op_name(op);
        let device = self.device;
        if !device && self.view_op(op, depth, &name) {
            return;
        }
        let (operands, operand_types) = self.operands(op);
        let simple = |hat: &str, this: &mut Self, attributes: &str| {
            let (results, result_types) = this.results(op);
            let prefix = if results.is_empty() { String::new() } else { format!("{} = ", results.join(", ")) };
            let text = format!(
                "{prefix}\"{hat}\"({}){attributes} : ({}) -> ({})",
                operands.join(", "),
                operand_types.join(", "),
                result_types.join(", ")
            );
            this.emit(depth, op, &text);
        };
        let work_item = match name.as_str() {
            "gpu.global_id" => Some("kernel.global_id"),
            "gpu.thread_id" => Some("kernel.local_id"),
            "gpu.block_id" => Some("kernel.group_id"),
            "gpu.block_dim" => Some("kernel.local_size"),
            "gpu.grid_dim" => Some("kernel.num_groups"),
            _ => None,
        };
        if let Some(hat) = work_item {
            if !device {
                self.refuse(op, "a work-item query in host code");
                return;
            }
            let dimension = op.attribute("dimension").map(|a| a.to_string()).unwrap_or_default();
            let dimension =
                ["#gpu<dim x>", "#gpu<dim y>", "#gpu<dim z>"].iter().position(|d| *d == dimension).unwrap_or(0);
            simple(hat, self, &format!(" {{dimension = {dimension} : i64}}"));
            return;
        }
        match name.as_str() {
            _ if name.starts_with("arith.") || name.starts_with("math.") => {
                if self.ctx.find_op_name(&name).and_then(|n| self.ctx.definition(n)).is_none() {
                    self.refuse(op, "hat has no such op");
                    return;
                }
                let mut attributes = Vec::new();
                for (key, value) in op.attributes() {
                    let key = key.as_string_ref().as_str().unwrap_or("").to_string();
                    let value = value.to_string();
                    match (key.as_str(), value.as_str()) {
                        ("overflowFlags", "#arith.overflow<none>") | ("fastmath", "#arith.fastmath<none>") => {}
                        ("overflowFlags", _) | ("fastmath", _) | ("roundingmode", _) => {
                            self.refuse(op, &format!("{key} = {value}, which hat's '{name}' cannot express"));
                        }
                        _ => attributes.push(format!("{key} = {value}")),
                    }
                }
                let attributes =
                    if attributes.is_empty() { String::new() } else { format!(" {{{}}}", attributes.join(", ")) };
                simple(&name, self, &attributes);
            }
            "scf.for" | "scf.if" | "scf.while" | "scf.yield" | "scf.condition" => {
                self.structured(op, depth, &operands, &operand_types)
            }
            "scf.execute_region" | "scf.parallel" | "scf.forall" | "scf.index_switch" | "scf.reduce" => {
                self.refuse(op, "hat's scf has for, if and while")
            }
            "func.return" | "gpu.return" => simple(if device { "kernel.return" } else { "compute.return" }, self, ""),
            "func.call" => {
                let callee = op.attribute("callee").map(|a| a.to_string()).unwrap_or_default();
                simple(if device { "kernel.call" } else { "compute.call" }, self, &format!(" {{callee = {callee}}}"));
            }
            "memref.load" => simple("buffer.load", self, ""),
            "memref.store" => simple("buffer.store", self, ""),
            "memref.copy" if !device => simple("buffer.copy", self, ""),
            "memref.dim" => {
                let index = op.operand(1).ok().and_then(constant);
                match index {
                    Some(index) => {
                        let (results, result_types) = self.results(op);
                        let text = format!(
                            "{} = \"buffer.dim\"({}) {{dimension = {index} : i64}} : ({}) -> ({})",
                            results.join(", "),
                            operands[0],
                            operand_types[0],
                            result_types.join(", ")
                        );
                        self.emit(depth, op, &text);
                    }
                    None => self.refuse(op, "a dimension that is not a constant"),
                }
            }
            "memref.alloc" | "memref.alloca" | "gpu.alloc" if !device => {
                if op.has_attribute("hostShared") {
                    self.refuse(op, "host_shared memory (hat's buffers have one copy on each side)");
                    return;
                }
                if op.has_attribute("alignment") || op_symbol_operands(op) > 0 {
                    self.refuse(op, "symbol operands or an alignment");
                    return;
                }
                simple("buffer.alloc", self, "");
            }
            "memref.dealloc" | "gpu.dealloc" if !device => simple("buffer.dealloc", self, ""),
            "gpu.memcpy" if !device => self.memcpy(op, depth, &operands, &operand_types),
            "gpu.launch_func" if !device => self.launch(op, depth),
            "gpu.wait" if !device => {
                if op.result_count() == 0 {
                    self.emit(depth, op, "\"compute.sync\"() : () -> ()");
                }
            }
            "gpu.barrier" if device => simple("kernel.barrier", self, ""),
            "memref.atomic_rmw" if device => {
                let kind = op.attribute("kind").map(|a| a.to_string()).unwrap_or_default();
                // The kind prints as its number (arith's AtomicRMWKind) or, in a custom form, its name.
                const KINDS: [&str; 16] = [
                    "addf", "addi", "andi", "assign", "maximumf", "maxnumf", "maxs", "maxu", "minimumf", "minnumf",
                    "mins", "minu", "mulf", "muli", "ori", "xori",
                ];
                let first = kind.split_whitespace().next().unwrap_or("");
                let kind_name = match first.parse::<usize>() {
                    Ok(number) => KINDS.get(number).copied().unwrap_or("unknown").to_string(),
                    Err(_) => kind.split_whitespace().last().unwrap_or("").trim_end_matches('>').to_string(),
                };
                let hat_kind = match kind_name.as_str() {
                    "addi" | "addf" => "add",
                    "mins" | "minimumf" => "min",
                    "maxs" | "maximumf" => "max",
                    "andi" => "and",
                    "ori" => "or",
                    "xori" => "xor",
                    "assign" => "exchange",
                    _ => {
                        self.refuse(op, &format!("hat's atomics have no kind '{kind_name}'"));
                        return;
                    }
                };
                // memref.atomic_rmw's operands are value, memref, indices; hat's are buffer, indices, value.
                let (results, result_types) = self.results(op);
                let mut reordered: Vec<String> = operands[1..].to_vec();
                reordered.push(operands[0].clone());
                let mut types: Vec<String> = operand_types[1..].to_vec();
                types.push(operand_types[0].clone());
                let text = format!(
                    "{} = \"kernel.atomic_rmw\"({}) {{kind = \"{hat_kind}\"}} : ({}) -> ({})",
                    results.join(", "),
                    reordered.join(", "),
                    types.join(", "),
                    result_types.join(", ")
                );
                self.emit(depth, op, &text);
            }
            _ => {
                let why = if device { "not an op of hat's kernel code" } else { "not an op of hat's host code" };
                self.refuse(op, why);
            }
        }
    }

    fn structured(&mut self, op: &OperationRef<'_, '_>, depth: usize, operands: &[String], operand_types: &[String]) {
        let name = op_name(op);
        let (results, result_types) = self.results(op);
        let prefix = if results.is_empty() { String::new() } else { format!("{} = ", results.join(", ")) };
        if op.region_count() == 0 {
            let text = format!(
                "{prefix}\"{name}\"({}) : ({}) -> ({})",
                operands.join(", "),
                operand_types.join(", "),
                result_types.join(", ")
            );
            self.emit(depth, op, &text);
            return;
        }
        self.emit(depth, op, &format!("{prefix}\"{name}\"({}) ({{", operands.join(", ")));
        for (index, region) in op.regions().enumerate() {
            if index > 0 {
                self.raw(depth, "}, {");
            }
            let mut block = region.first_block();
            while let Some(current) = block {
                let mut arguments = Vec::new();
                for i in 0..current.argument_count() {
                    let Ok(argument) = current.argument(i) else { continue };
                    self.source_name(argument);
                    let argument_name = self.value(argument);
                    let ty = self.ty(op, argument.r#type());
                    arguments.push(format!("{argument_name}: {ty}"));
                }
                self.raw(depth, &format!("^bb{}({}):", self.next, arguments.join(", ")));
                self.next += 1;
                self.block_ops(current, depth + 1);
                block = current.next_in_region();
            }
        }
        self.emit(depth, op, &format!("}}) : ({}) -> ({})", operand_types.join(", "), result_types.join(", ")));
    }

    /// `memref.collapse_shape` to one dimension, `memref.subview` of a range, and `gpu.memcpy`
    /// between such views: true when `op` was one of them (and is handled).
    fn view_op(&mut self, op: &OperationRef<'_, '_>, depth: usize, name: &str) -> bool {
        let key = |v: Value<'_, '_>| v.to_raw().ptr as usize;
        match name {
            "memref.collapse_shape" => {
                let (Ok(source), Ok(result)) = (op.operand(0), op.result(0)) else { return false };
                if result.r#type().to_string().matches('x').count() != 1 || self.views.contains_key(&key(source)) {
                    self.refuse(op, "a collapse to more than one dimension, or of a view");
                    return true;
                }
                let base = self.value(source);
                let base_type = self.ty(op, source.r#type());
                self.views.insert(result.to_raw().ptr as usize, View { base, base_type, range: None });
                true
            }
            "memref.subview" => {
                let (Ok(source), Ok(result)) = (op.operand(0), op.result(0)) else { return false };
                let static_of = |attribute: &str| -> Vec<i64> {
                    op.attribute(attribute)
                        .map(|a| a.to_string())
                        .unwrap_or_default()
                        .trim_start_matches("array<i64")
                        .trim_start_matches(':')
                        .trim_end_matches('>')
                        .split(',')
                        .filter_map(|n| n.trim().parse().ok())
                        .collect()
                };
                let (offsets, sizes, strides) =
                    (static_of("static_offsets"), static_of("static_sizes"), static_of("static_strides"));
                if offsets.len() != 1 || sizes.len() != 1 || strides != [1] {
                    self.refuse(op, "a view other than a range of a one-dimensional buffer with stride 1");
                    return true;
                }
                let view = match self.views.get(&key(source)).cloned() {
                    Some(View { range: None, base, base_type }) => View { base, base_type, range: None },
                    Some(_) => {
                        self.refuse(op, "a view of a view of a range");
                        return true;
                    }
                    None => {
                        let base = self.value(source);
                        let base_type = self.ty(op, source.r#type());
                        View { base, base_type, range: None }
                    }
                };
                let mut dynamic = op.operands().skip(1);
                let mut part = |this: &mut Self, value: i64| match value {
                    i64::MIN => dynamic.next().map(|v| this.value(v)).unwrap_or_default(),
                    _ => {
                        let constant = this.fresh();
                        this.emit(
                            depth,
                            op,
                            &format!("{constant} = \"arith.constant\"() {{value = {value} : index}} : () -> index"),
                        );
                        constant
                    }
                };
                let offset = part(self, offsets[0]);
                let count = part(self, sizes[0]);
                self.views.insert(result.to_raw().ptr as usize, View { range: Some((offset, count)), ..view });
                true
            }
            "gpu.memcpy" => {
                let values: Vec<Value> = op.operands().filter(|v| !Self::is_token(v.r#type())).collect();
                let [destination, source] = values[..] else { return false };
                let (d, s) = (self.views.get(&key(destination)).cloned(), self.views.get(&key(source)).cloned());
                let (d, s) = match (d, s) {
                    (None, None) => return false,
                    (Some(d), Some(s)) => (d, s),
                    _ => {
                        self.refuse(op, "a copy between a view and a whole buffer");
                        return true;
                    }
                };
                let whole = |this: &mut Self, view: &View| {
                    let count: usize = view
                        .base_type
                        .trim_start_matches("memref<")
                        .split('x')
                        .filter_map(|e| e.parse::<usize>().ok())
                        .product();
                    let (zero, all) = (this.fresh(), this.fresh());
                    this.emit(depth, op, &format!("{zero} = \"arith.constant\"() {{value = 0 : index}} : () -> index"));
                    this.emit(
                        depth,
                        op,
                        &format!("{all} = \"arith.constant\"() {{value = {count} : index}} : () -> index"),
                    );
                    (zero, all)
                };
                let (source_offset, count) = match s.range.clone() {
                    Some(range) => range,
                    None => whole(self, &s),
                };
                let destination_offset = match d.range.clone() {
                    Some((offset, _)) => offset,
                    None => whole(self, &d).0,
                };
                let next = self.range_copies.len();
                let kernel = self
                    .range_copies
                    .entry((s.base_type.clone(), d.base_type.clone()))
                    .or_insert_with(|| format!("mlir_memcpy_range_{next}"))
                    .clone();
                self.emit(
                    depth,
                    op,
                    &format!(
                        "\"compute.dispatch\"({count}, {}, {}, {source_offset}, {destination_offset}) {{kernel = @{kernel}, operandSegmentSizes = array<i32: 1, 4>}} : (index, {}, {}, index, index) -> ()",
                        s.base, d.base, s.base_type, d.base_type
                    ),
                );
                true
            }
            _ => false,
        }
    }

    /// A kernel that copies `count` (its grid) elements from flat element `source_offset` of a
    /// `source_type` buffer to flat element `destination_offset` of a `destination_type` one.
    fn range_copy_kernel(&mut self, source_type: &str, destination_type: &str, kernel: &str) {
        self.raw(1, "\"kernel.func\"() ({");
        self.raw(
            1,
            &format!("^bb0(%src: {source_type}, %dst: {destination_type}, %src_offset: index, %dst_offset: index):"),
        );
        self.raw(2, "%id = \"kernel.global_id\"() {dimension = 0 : i64} : () -> index");
        self.raw(2, "%count = \"kernel.global_size\"() {dimension = 0 : i64} : () -> index");
        self.raw(2, "%inside = \"arith.cmpi\"(%id, %count) {predicate = 6 : i64} : (index, index) -> i1");
        self.raw(2, "\"scf.if\"(%inside) ({");
        let element = source_type
            .trim_start_matches("memref<")
            .rsplit('x')
            .next()
            .unwrap_or("")
            .trim_end_matches('>')
            .to_string();
        for (side, ty, offset) in [("s", source_type, "%src_offset"), ("d", destination_type, "%dst_offset")] {
            let shape: Vec<&str> = ty.trim_start_matches("memref<").split('x').collect();
            let rank = shape.len() - 1;
            let buffer = if side == "s" { "%src" } else { "%dst" };
            self.raw(3, &format!("%{side}flat = \"arith.addi\"(%id, {offset}) : (index, index) -> index"));
            let mut rest = format!("%{side}flat");
            let mut indices = vec![String::new(); rank];
            for dimension in (0..rank).rev() {
                self.raw(3, &format!("%{side}n{dimension} = \"buffer.dim\"({buffer}) {{dimension = {dimension} : i64}} : ({ty}) -> index"));
                if dimension == 0 {
                    indices[0] = rest.clone();
                } else {
                    self.raw(3, &format!("%{side}i{dimension} = \"arith.remui\"({rest}, %{side}n{dimension}) : (index, index) -> index"));
                    self.raw(3, &format!("%{side}r{dimension} = \"arith.divui\"({rest}, %{side}n{dimension}) : (index, index) -> index"));
                    indices[dimension] = format!("%{side}i{dimension}");
                    rest = format!("%{side}r{dimension}");
                }
            }
            let index_types = vec!["index"; rank].join(", ");
            let comma = if rank > 0 { ", " } else { "" };
            if side == "s" {
                self.raw(
                    3,
                    &format!(
                        "%value = \"buffer.load\"({buffer}{comma}{}) : ({ty}{comma}{index_types}) -> {element}",
                        indices.join(", ")
                    ),
                );
            } else {
                self.raw(
                    3,
                    &format!(
                        "\"buffer.store\"(%value, {buffer}{comma}{}) : ({element}, {ty}{comma}{index_types}) -> ()",
                        indices.join(", ")
                    ),
                );
            }
        }
        self.raw(3, "\"scf.yield\"() : () -> ()");
        self.raw(2, "}, {\n  }) : (i1) -> ()");
        self.raw(2, "\"kernel.return\"() : () -> ()");
        self.raw(
            1,
            &format!(
                "}}) {{function_type = ({source_type}, {destination_type}, index, index) -> (), sym_name = \"{kernel}\", workgroup_size = array<i64: 64, 1, 1>}} : () -> ()"
            ),
        );
    }

    fn memcpy(&mut self, op: &OperationRef<'_, '_>, depth: usize, operands: &[String], types: &[String]) {
        // gpu.memcpy %dst, %src.
        let (destination, source) = (&operands[0], &operands[1]);
        let ty = types[0].clone();
        if types[1] != ty {
            self.refuse(op, "a copy between buffers of different types");
            return;
        }
        let rank = ty.trim_start_matches("memref<").matches('x').count();
        if rank > 3 {
            self.refuse(op, "a copy of more than three dimensions");
            return;
        }
        let next = self.copies.len();
        let kernel = self.copies.entry(ty.clone()).or_insert_with(|| format!("mlir_memcpy_{next}")).clone();
        // The grid: the buffer's extents, x first (innermost dimension); a scalar buffer is one item.
        let mut grid = Vec::new();
        if rank == 0 {
            let one = self.fresh();
            self.emit(depth, op, &format!("{one} = \"arith.constant\"() {{value = 1 : index}} : () -> index"));
            grid.push(one);
        }
        let shape: Vec<&str> = ty.trim_start_matches("memref<").split('x').take(rank).collect();
        for dimension in (0..rank).rev() {
            let extent = self.fresh();
            let text = match shape[dimension].parse::<u64>() {
                Ok(size) => format!("{extent} = \"arith.constant\"() {{value = {size} : index}} : () -> index"),
                Err(_) => format!(
                    "{extent} = \"buffer.dim\"({destination}) {{dimension = {dimension} : i64}} : ({ty}) -> index"
                ),
            };
            self.emit(depth, op, &text);
            grid.push(extent);
        }
        let index_types = vec!["index"; grid.len()].join(", ");
        self.emit(
            depth,
            op,
            &format!(
                "\"compute.dispatch\"({}, {source}, {destination}) {{kernel = @{kernel}, operandSegmentSizes = array<i32: {}, 2>}} : ({index_types}, {ty}, {ty}) -> ()",
                grid.join(", "),
                grid.len()
            ),
        );
    }

    /// A kernel that copies a buffer of type `ty` element by element: item (x, y, z) copies
    /// element [.., z, y, x] (the innermost dimension is x).
    fn copy_kernel(&mut self, ty: &str, kernel: &str) {
        let rank = ty.trim_start_matches("memref<").matches('x').count();
        let workgroup = match rank {
            0 | 1 => "64, 1, 1",
            2 => "8, 8, 1",
            _ => "4, 4, 4",
        };
        let element =
            ty.trim_start_matches("memref<").trim_end_matches('>').rsplit('x').next().unwrap_or("").to_string();
        self.raw(1, "\"kernel.func\"() ({");
        self.raw(1, &format!("^bb0(%src: {ty}, %dst: {ty}):"));
        let mut indices = Vec::new();
        for dimension in (0..rank).rev() {
            let axis = rank - 1 - dimension;
            self.raw(2, &format!("%id{dimension} = \"kernel.global_id\"() {{dimension = {axis} : i64}} : () -> index"));
            indices.push((dimension, format!("%id{dimension}")));
        }
        indices.sort();
        let index_names: Vec<String> = indices.iter().map(|(_, n)| n.clone()).collect();
        let index_types = vec!["index"; rank];
        let load_operands =
            std::iter::once("%src".to_string()).chain(index_names.iter().cloned()).collect::<Vec<_>>().join(", ");
        let store_operands = ["%value".to_string(), "%dst".to_string()]
            .into_iter()
            .chain(index_names.iter().cloned())
            .collect::<Vec<_>>()
            .join(", ");
        let load_types = std::iter::once(ty.to_string())
            .chain(index_types.iter().map(|s| s.to_string()))
            .collect::<Vec<_>>()
            .join(", ");
        let store_types = [element.clone(), ty.to_string()]
            .into_iter()
            .chain(index_types.iter().map(|s| s.to_string()))
            .collect::<Vec<_>>()
            .join(", ");
        // Items past the extents (the last workgroup's) do nothing: the grid is the extents, so
        // none exist in hat; the guard keeps the kernel right for any grid.
        let mut inside = None;
        for (dimension, id) in &indices {
            self.raw(
                2,
                &format!("%n{dimension} = \"buffer.dim\"(%dst) {{dimension = {dimension} : i64}} : ({ty}) -> index"),
            );
            self.raw(2, &format!("%in{dimension} = \"arith.cmpi\"({id}, %n{dimension}) {{predicate = 6 : i64}} : (index, index) -> i1"));
            inside = Some(match inside {
                None => format!("%in{dimension}"),
                Some(previous) => {
                    self.raw(
                        2,
                        &format!("%and{dimension} = \"arith.andi\"({previous}, %in{dimension}) : (i1, i1) -> i1"),
                    );
                    format!("%and{dimension}")
                }
            });
        }
        let copy = [
            format!("%value = \"buffer.load\"({load_operands}) : ({load_types}) -> {element}"),
            format!("\"buffer.store\"({store_operands}) : ({store_types}) -> ()"),
        ];
        match inside {
            Some(inside) => {
                self.raw(2, &format!("\"scf.if\"({inside}) ({{"));
                for line in &copy {
                    self.raw(3, line);
                }
                self.raw(3, "\"scf.yield\"() : () -> ()");
                self.raw(2, "}, {\n  }) : (i1) -> ()");
            }
            None => {
                for line in &copy {
                    self.raw(2, line);
                }
            }
        }
        self.raw(2, "\"kernel.return\"() : () -> ()");
        self.raw(
            1,
            &format!(
                "}}) {{function_type = ({ty}, {ty}) -> (), sym_name = \"{kernel}\", workgroup_size = array<i64: {workgroup}>}} : () -> ()"
            ),
        );
    }

    fn launch(&mut self, op: &OperationRef<'_, '_>, depth: usize) {
        let kernel = op.attribute("kernel").map(|a| a.to_string()).unwrap_or_default();
        let kernel = kernel.rsplit("::").next().unwrap_or("").trim_start_matches('@').to_string();
        if op.has_attribute("clusterSizeX") || op.operand_count() == 0 {
            self.refuse(op, "clusters");
            return;
        }
        let all: Vec<Value> = op.operands().collect();
        let tokens = all.iter().take_while(|v| Self::is_token(v.r#type())).count();
        let segments = op.attribute("operandSegmentSizes").map(|a| a.to_string()).unwrap_or_default();
        let sizes: Vec<usize> = segments
            .trim_start_matches("array<i32:")
            .trim_end_matches('>')
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        // asyncDependencies, grid x y z, block x y z, cluster x y z, dynamicSharedMemorySize,
        // kernelOperands, asyncObject.
        if sizes.len() >= 12
            && (sizes[7..10].iter().any(|&s| s > 0) || sizes[10] > 0 || sizes[12..].iter().any(|&s| s > 0))
        {
            self.refuse(op, "clusters, dynamic shared memory or an async object");
            return;
        }
        let arguments = &all[tokens + 6..];
        let last_used = (0..3)
            .filter(|&d| constant(all[tokens + d]) != Some(1) || constant(all[tokens + 3 + d]) != Some(1))
            .max()
            .unwrap_or(0);
        let mut grid = Vec::new();
        for dimension in 0..=last_used {
            let (blocks, threads) = (all[tokens + dimension], all[tokens + 3 + dimension]);
            let items = self.fresh();
            // A constant grid stays one, so that analyses see the launch's extent.
            match (constant(blocks), constant(threads)) {
                (Some(b), Some(t)) => self.emit(
                    depth,
                    op,
                    &format!("{items} = \"arith.constant\"() {{value = {} : index}} : () -> index", b * t),
                ),
                _ => {
                    let (b, t) = (self.value(blocks), self.value(threads));
                    self.emit(depth, op, &format!("{items} = \"arith.muli\"({b}, {t}) : (index, index) -> index"));
                }
            }
            grid.push(items);
        }
        let mut names = grid.clone();
        let mut types = vec!["index".to_string(); grid.len()];
        for &argument in arguments {
            names.push(self.value(argument));
            types.push(self.ty(op, argument.r#type()));
        }
        self.emit(
            depth,
            op,
            &format!(
                "\"compute.dispatch\"({}) {{kernel = @{kernel}, operandSegmentSizes = array<i32: {}, {}>}} : ({}) -> ()",
                names.join(", "),
                grid.len(),
                arguments.len(),
                types.join(", ")
            ),
        );
    }
}

/// The number of symbol operands of an alloc (beyond its dynamic sizes).
fn op_symbol_operands(op: &OperationRef<'_, '_>) -> usize {
    let segments = op.attribute("operandSegmentSizes").map(|a| a.to_string()).unwrap_or_default();
    let sizes: Vec<usize> = segments
        .trim_start_matches("array<i32:")
        .trim_end_matches('>')
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    // memref.alloc: dynamicSizes, symbolOperands; gpu.alloc: asyncDependencies, dynamicSizes, symbolOperands.
    match op_name(op).as_str() {
        "gpu.alloc" => sizes.get(2).copied().unwrap_or(0),
        _ => sizes.get(1).copied().unwrap_or(0),
    }
}
