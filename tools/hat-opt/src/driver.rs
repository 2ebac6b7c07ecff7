//! What `hat-opt` does with its options: read, split, parse, verify, print, write.

use crate::op_graph::op_graph;
use crate::report::RunReport;
use crate::strategy::RunPlan;
use crate::{Options, PassFlag, Tool};
use hat_ir::diagnostics::{has_errors, render};
use hat_ir::pass::instrumentation::{IrPrinting, PassFilter, Timing};
use hat_ir::pass::{PassManager, PassManagerOptions, PassRegistry};
use hat_ir::{parse_owned_bytes, print_op_to, verify, Context, Diagnostic, PrintOptions};
use std::cell::RefCell;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

/// Runs hat-opt, writing what goes to standard output to `stdout`; `Err` holds the text to print
/// on stderr before exiting with status 1.
pub fn run(options: &Options, tool: &Tool, pass_flags: &[PassFlag], stdout: &mut dyn Write) -> Result<(), String> {
    let registry = &tool.passes;
    options.mlir.check()?;
    if let Some(irdl) = options.mlir.irdl() {
        let mut output = Output::open(&options.output)?;
        output.sink(stdout).write_all(irdl.as_bytes()).map_err(|e| format!("error: cannot write output: {e}"))?;
        return output.commit(stdout);
    }
    if options.show_dialects || options.list_passes {
        let mut out = String::new();
        if options.show_dialects {
            let ctx = tool.context();
            out.push_str("Available Dialects:\n");
            for dialect in ctx.dialects() {
                out.push_str(&format!("  {:<10} {}\n", dialect.name, dialect.summary));
            }
        }
        if options.list_passes {
            out.push_str(&crate::pass_list(registry));
        }
        let mut output = Output::open(&options.output)?;
        output.sink(stdout).write_all(out.as_bytes()).map_err(|e| format!("error: cannot write output: {e}"))?;
        return output.commit(stdout);
    }
    let plan = match options.run.running() {
        true => {
            let passes_given = options.pass_pipeline.is_some() || !pass_flags.is_empty();
            Some(crate::strategy::run_plan(&options.run, passes_given)?)
        }
        false => None,
    };
    options.emit.check(options.split_input_file, options.output.as_os_str() == "-")?;
    // Build the pipeline once up front, so that a bad pipeline is reported before any input is read.
    build_pass_manager(options, registry, pass_flags, plan.as_ref())?;
    let (name, bytes) = read_input(&options.input)?;
    let chunks = if options.split_input_file { split_input(&bytes) } else { vec![bytes] };
    let mut output = Output::open(&options.output)?;
    let mut report = RunReport::default();
    let mut errors = String::new();
    for (index, chunk) in chunks.into_iter().enumerate() {
        if index > 0 {
            output.sink(stdout).write_all(b"// -----\n").map_err(|e| format!("error: cannot write output: {e}"))?;
        }
        let mut manager = build_pass_manager(options, registry, pass_flags, plan.as_ref())?;
        let chunk = Chunk { name: &name, bytes: chunk, plan: plan.as_ref() };
        if let Err(rendered) = process_chunk(options, tool, &mut manager, chunk, (&mut output, stdout), &mut report) {
            errors.push_str(&rendered);
        }
        report.add_statistics(manager.statistics());
    }
    let mut reports = String::new();
    if options.timing {
        reports.push_str(&report.timing_report(options.timing_display));
    }
    if options.pass_statistics {
        reports.push_str(&report.statistics_report(options.pass_statistics_display));
    }
    if !errors.is_empty() {
        output.discard();
        return Err(format!("{errors}{reports}"));
    }
    output.commit(stdout)?;
    eprint!("{reports}");
    Ok(())
}

/// The pipeline of `--pass-pipeline` and the pass flags, then the one `--run` adds, with the
/// requested instrumentation.
fn build_pass_manager(
    options: &Options,
    registry: &PassRegistry,
    pass_flags: &[PassFlag],
    plan: Option<&RunPlan>,
) -> Result<PassManager, String> {
    let mut manager = PassManager::new("builtin.module", PassManagerOptions { verify_each: options.verify_each });
    if let Some(pipeline) = &options.pass_pipeline {
        manager.add_pipeline(registry, pipeline).map_err(|e| format!("error: {e}"))?;
    }
    for flag in pass_flags {
        manager.add_pass(registry, &flag.name, &flag.options).map_err(|e| format!("error: {e}"))?;
    }
    if let Some(plan) = plan {
        if let Some(pipeline) = plan.pipeline {
            let what = plan.description.as_deref().unwrap_or(pipeline);
            manager.add_pipeline(registry, pipeline).map_err(|e| format!("error: --run, {what}: {e}"))?;
        }
    }
    let filter = |all: bool, named: &[String]| {
        if all {
            PassFilter::All
        } else if named.is_empty() {
            PassFilter::None
        } else {
            PassFilter::Named(named.to_vec())
        }
    };
    let before = filter(options.print_ir_before_all, &options.print_ir_before);
    let mut after = filter(options.print_ir_after_all, &options.print_ir_after);
    if options.print_ir_after_change && after == PassFilter::None {
        after = PassFilter::All;
    }
    if before != PassFilter::None || after != PassFilter::None || options.print_ir_after_failure {
        let mut printing = IrPrinting::new(before, after, Box::new(std::io::stderr()));
        printing.only_after_change = options.print_ir_after_change;
        printing.after_failure = options.print_ir_after_failure;
        printing.print_options = PrintOptions {
            generic: options.print_generic,
            debug_info: options.print_debug_info,
            assume_verified: false,
        };
        manager.add_instrumentation(Box::new(printing));
    }
    Ok(manager)
}

/// One chunk of the input.
struct Chunk<'a> {
    /// The input's name, for locations.
    name: &'a str,
    bytes: Vec<u8>,
    /// With `--run`: what it compiles and how it runs.
    plan: Option<&'a RunPlan>,
}

/// Parses, verifies, transforms and prints one chunk into `sink` (and runs it); `Err` holds
/// rendered diagnostics (or, with `--verify-diagnostics`, the mismatches).
fn process_chunk(
    options: &Options,
    tool: &Tool,
    manager: &mut PassManager,
    chunk: Chunk<'_>,
    (output, stdout): (&mut Output, &mut dyn Write),
    report: &mut RunReport,
) -> Result<(), String> {
    let Chunk { name, bytes, plan } = chunk;
    let new_context = || {
        let mut ctx: Context = tool.context();
        ctx.allow_unregistered = options.allow_unregistered_dialect;
        ctx
    };
    let mut ctx = new_context();
    // The program as written, which --run looks host functions up in and --run-check runs.
    let original_bytes = plan.is_some().then(|| bytes.clone());
    let expectations_text = options.verify_diagnostics.then(|| String::from_utf8_lossy(&bytes).into_owned());
    let started = Instant::now();
    let parsed = match crate::mlir_flags::import(&options.mlir, &mut ctx, name, &bytes) {
        Some(imported) => imported,
        None => parse_owned_bytes(&mut ctx, name, bytes).map_err(|error| vec![Diagnostic::from(error)]),
    };
    report.add_time("Parser", started.elapsed());
    let (module, mut diagnostics) = match parsed {
        Ok(module) => {
            let started = Instant::now();
            let errors = verify(&ctx, module);
            report.add_time("Verifier", started.elapsed());
            (Some(module).filter(|_| errors.is_empty()), errors)
        }
        Err(errors) => (None, errors),
    };
    let mut succeeded = module.is_some();
    if let Some(module) = module {
        let timing = Rc::new(RefCell::new(Timing::new()));
        if options.timing {
            manager.add_instrumentation(Box::new(timing.clone()));
        }
        if plan.is_some() {
            mark_entry(&mut ctx, module, &options.run.entry);
        }
        let result = manager.run(&mut ctx, module);
        report.add_pass_times(&timing.borrow());
        match result {
            Ok(emitted) => diagnostics.extend(emitted),
            Err(emitted) => {
                diagnostics.extend(emitted);
                succeeded = false;
            }
        }
        if succeeded {
            if options.view_op_graph {
                eprint!("{}", op_graph(&ctx, module));
            }
            if options.emit.lowers() {
                let started = Instant::now();
                match crate::emit::emit(&ctx, module, &options.emit, output.sink(stdout)) {
                    Ok(()) => {}
                    Err(crate::emit::EmitError::Diagnostics(emitted)) => {
                        diagnostics.extend(emitted);
                        succeeded = false;
                    }
                    Err(crate::emit::EmitError::Output(message)) => return Err(message),
                }
                report.add_time("Output", started.elapsed());
            } else if let Some(exported) = crate::mlir_flags::export(&options.mlir, &ctx, module) {
                match exported {
                    Ok(text) => output
                        .sink(stdout)
                        .write_all(text.as_bytes())
                        .map_err(|e| format!("error: cannot write output: {e}"))?,
                    Err(emitted) => {
                        diagnostics.extend(emitted);
                        succeeded = false;
                    }
                }
            // With --run the IR goes only to an `-o FILE`; the run's summary goes to stdout.
            } else if !options.run.running() || options.output.as_os_str() != "-" {
                let started = Instant::now();
                let print_options = PrintOptions {
                    generic: options.print_generic,
                    debug_info: options.print_debug_info,
                    assume_verified: options.verify_each,
                };
                print_op_to(&ctx, module, print_options, output.sink(stdout))
                    .map_err(|e| format!("error: cannot write output: {e}"))?;
                report.add_time("Output", started.elapsed());
            }
            if let (Some(plan), Some(original_bytes)) = (plan, original_bytes) {
                let started = Instant::now();
                // It parsed and verified once: it does again.
                let mut original_ctx = new_context();
                let original = match crate::mlir_flags::import(&options.mlir, &mut original_ctx, name, &original_bytes)
                {
                    Some(imported) => imported,
                    None => parse_owned_bytes(&mut original_ctx, name, original_bytes)
                        .map_err(|e| vec![Diagnostic::from(e)]),
                }
                .map_err(|errors| render(&original_ctx.sources, &errors))?;
                let original = hat_ir::verify_module(&original_ctx, original)
                    .map_err(|errors| render(&original_ctx.sources, &errors))?;
                // The executor takes only verified IR (the pipeline may have run without
                // --verify-each).
                let ran = match hat_ir::verify_module(&ctx, module) {
                    Ok(verified) => crate::run::run(verified, original, &options.run, plan, &tool.backends, stdout),
                    Err(errors) => Err(render(&ctx.sources, &errors)),
                };
                report.add_time("Run", started.elapsed());
                if let Err(message) = ran {
                    return Err(format!("{}{message}", render(&ctx.sources, &diagnostics)));
                }
            }
        }
    }
    if let Some(text) = expectations_text {
        return hat_ir::diagnostics::expected::check(&ctx.sources, &text, name, &diagnostics);
    }
    let rendered = render(&ctx.sources, &diagnostics);
    if has_errors(&diagnostics) || !succeeded {
        return Err(rendered);
    }
    eprint!("{rendered}");
    Ok(())
}

fn read_input(path: &Path) -> Result<(String, Vec<u8>), String> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map_err(|e| format!("error: cannot read standard input: {e}"))?;
        return Ok(("<stdin>".to_string(), bytes));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("error: cannot read '{}': {e}", path.display()))?;
    Ok((path.display().to_string(), bytes))
}

/// Splits at lines that are `// -----`. Each chunk keeps its line numbers: the lines before it are
/// replaced by empty lines, so diagnostics point into the original file.
fn split_input(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    let mut current = Vec::new();
    let mut lines_before = 0usize;
    let mut line_count = 0usize;
    for line in hat_ir::location::lines_inclusive(bytes) {
        line_count += 1;
        let trimmed = String::from_utf8_lossy(line);
        if trimmed.trim_end() == "// -----" {
            let mut chunk = vec![b'\n'; lines_before];
            chunk.extend_from_slice(&current);
            chunks.push(chunk);
            current.clear();
            lines_before = line_count;
            continue;
        }
        current.extend_from_slice(line);
    }
    let mut chunk = vec![b'\n'; lines_before];
    chunk.extend_from_slice(&current);
    chunks.push(chunk);
    chunks
}

/// Where the output goes: standard output, or a temporary file beside the target that is renamed
/// over it only when everything succeeded, so a failure never leaves a half-written file (or
/// destroys the input when `-o` names it).
enum Output {
    /// The writer `run` was given.
    Stdout,
    File {
        writer: std::io::BufWriter<std::fs::File>,
        temporary: PathBuf,
        target: PathBuf,
    },
    Discard(std::io::Sink),
}

impl Output {
    fn open(path: &Path) -> Result<Output, String> {
        if path.as_os_str() == "-" {
            return Ok(Output::Stdout);
        }
        if path == Path::new("/dev/null") {
            return Ok(Output::Discard(std::io::sink()));
        }
        let directory = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "output".into());
        let temporary = directory.join(format!(".{file_name}.hat-opt-{}", std::process::id()));
        let file =
            std::fs::File::create(&temporary).map_err(|e| format!("error: cannot write '{}': {e}", path.display()))?;
        Ok(Output::File { writer: std::io::BufWriter::new(file), temporary, target: path.to_path_buf() })
    }

    /// Where the output goes; `stdout` is standard output.
    fn sink<'s>(&'s mut self, stdout: &'s mut dyn Write) -> &'s mut dyn Write {
        match self {
            Output::Stdout => stdout,
            Output::File { writer, .. } => writer,
            Output::Discard(sink) => sink,
        }
    }

    fn commit(self, stdout: &mut dyn Write) -> Result<(), String> {
        match self {
            Output::Stdout => stdout.flush().map_err(|e| format!("error: cannot write output: {e}")),
            Output::File { writer, temporary, target } => {
                let result = writer
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .and_then(|file| file.sync_all())
                    .and_then(|_| std::fs::rename(&temporary, &target));
                result.map_err(|e| {
                    let _ = std::fs::remove_file(&temporary);
                    format!("error: cannot write '{}': {e}", target.display())
                })
            }
            Output::Discard(_) => Ok(()),
        }
    }

    fn discard(self) {
        if let Output::File { temporary, .. } = self {
            let _ = std::fs::remove_file(temporary);
        }
    }
}

/// Marks the function `--run` starts from as an entry (a unit `entry` attribute), so that the
/// pipeline keeps it: `inline` and `dce` erase a module's other compute functions once their
/// calls are inlined.
fn mark_entry(ctx: &mut Context, module: hat_ir::Op, entry: &str) {
    let found = ctx.body_ops(module).into_iter().find(|&op| hat_ir::verifier::symbol_name(ctx, op) == Some(entry));
    if let Some(function) = found {
        let callable = ctx.interface::<dyn hat_ir::interfaces::CallableOpInterface>(function);
        if callable.is_some_and(|c| !c.is_entry(ctx, function)) {
            let key = ctx.ident("entry");
            let unit = ctx.unit_attr();
            ctx.set_attribute(function, key, unit);
        }
    }
}
