//! What `hat-opt` does with its options: read, split, parse, verify, print, write.

use crate::Options;
use hat_ir::diagnostics::{has_errors, render};
use hat_ir::{parse_bytes, print_op, verify, Context, Diagnostic, PrintOptions};
use std::io::{Read, Write};
use std::path::Path;

/// Runs hat-opt; `Err` holds the text to print on stderr before exiting with status 1.
pub fn run(options: &Options) -> Result<(), String> {
    if options.show_dialects {
        let ctx = hat_dialects::context();
        let mut out = String::from("Available Dialects:\n");
        for dialect in ctx.dialects() {
            out.push_str(&format!("  {:<10} {}\n", dialect.name, dialect.summary));
        }
        return write_output(&options.output, &out);
    }
    let (name, bytes) = read_input(&options.input)?;
    let chunks = if options.split_input_file { split_input(&bytes) } else { vec![bytes] };
    let mut output = String::new();
    let mut failed = false;
    let mut errors = String::new();
    for (index, chunk) in chunks.iter().enumerate() {
        if index > 0 {
            output.push_str("// -----\n");
        }
        match process_chunk(options, &name, chunk) {
            Ok(text) => output.push_str(&text),
            Err(rendered) => {
                failed = true;
                errors.push_str(&rendered);
            }
        }
    }
    if failed {
        return Err(errors);
    }
    write_output(&options.output, &output)
}

/// Parses, verifies and prints one chunk; `Err` holds rendered diagnostics.
fn process_chunk(options: &Options, name: &str, bytes: &[u8]) -> Result<String, String> {
    let mut ctx: Context = hat_dialects::context();
    ctx.allow_unregistered = options.allow_unregistered_dialect;
    let module = match parse_bytes(&mut ctx, name, bytes) {
        Ok(module) => module,
        Err(error) => return Err(render(&ctx.sources, &[Diagnostic::from(error)])),
    };
    let diagnostics = verify(&ctx, module);
    if has_errors(&diagnostics) {
        return Err(render(&ctx.sources, &diagnostics));
    }
    let print_options = PrintOptions { generic: options.print_generic, debug_info: options.print_debug_info };
    Ok(print_op(&ctx, module, print_options))
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
    for line in bytes.split_inclusive(|&b| b == b'\n') {
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

/// Writes the output atomically: into a temporary file beside the target, then renamed over it,
/// so a failure never leaves a half-written file (or destroys the input when `-o` names it).
fn write_output(path: &Path, text: &str) -> Result<(), String> {
    if path.as_os_str() == "-" {
        let mut stdout = std::io::stdout().lock();
        return stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()).map_err(|e| format!("error: cannot write output: {e}"));
    }
    if path == Path::new("/dev/null") {
        return Ok(());
    }
    let directory = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "output".into());
    let temporary = directory.join(format!(".{file_name}.hat-opt-{}", std::process::id()));
    std::fs::write(&temporary, text).map_err(|e| format!("error: cannot write '{}': {e}", temporary.display()))?;
    std::fs::rename(&temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        format!("error: cannot write '{}': {e}", path.display())
    })
}
