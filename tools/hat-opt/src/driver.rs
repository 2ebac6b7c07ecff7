//! What `hat-opt` does with its options: read, split, parse, verify, print, write.

use crate::Options;
use hat_ir::diagnostics::{has_errors, render};
use hat_ir::{parse_owned_bytes, print_op_to, verify, Context, Diagnostic, PrintOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Runs hat-opt; `Err` holds the text to print on stderr before exiting with status 1.
pub fn run(options: &Options) -> Result<(), String> {
    if options.show_dialects {
        let ctx = hat_dialects::context();
        let mut out = String::from("Available Dialects:\n");
        for dialect in ctx.dialects() {
            out.push_str(&format!("  {:<10} {}\n", dialect.name, dialect.summary));
        }
        let mut output = Output::open(&options.output)?;
        output.sink().write_all(out.as_bytes()).map_err(|e| format!("error: cannot write output: {e}"))?;
        return output.commit();
    }
    let (name, bytes) = read_input(&options.input)?;
    let chunks = if options.split_input_file { split_input(&bytes) } else { vec![bytes] };
    let mut output = Output::open(&options.output)?;
    let mut errors = String::new();
    for (index, chunk) in chunks.into_iter().enumerate() {
        if index > 0 {
            output.sink().write_all(b"// -----\n").map_err(|e| format!("error: cannot write output: {e}"))?;
        }
        if let Err(rendered) = process_chunk(options, &name, chunk, output.sink()) {
            errors.push_str(&rendered);
        }
    }
    if !errors.is_empty() {
        output.discard();
        return Err(errors);
    }
    output.commit()
}

/// Parses, verifies and prints one chunk into `sink`; `Err` holds rendered diagnostics.
fn process_chunk(options: &Options, name: &str, bytes: Vec<u8>, sink: &mut dyn Write) -> Result<(), String> {
    let mut ctx: Context = hat_dialects::context();
    ctx.allow_unregistered = options.allow_unregistered_dialect;
    let module = match parse_owned_bytes(&mut ctx, name, bytes) {
        Ok(module) => module,
        Err(error) => return Err(render(&ctx.sources, &[Diagnostic::from(error)])),
    };
    let diagnostics = verify(&ctx, module);
    if has_errors(&diagnostics) {
        return Err(render(&ctx.sources, &diagnostics));
    }
    // Verified just above.
    let print_options =
        PrintOptions { generic: options.print_generic, debug_info: options.print_debug_info, assume_verified: true };
    print_op_to(&ctx, module, print_options, sink).map_err(|e| format!("error: cannot write output: {e}"))
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

/// Where the output goes: standard output, or a temporary file beside the target that is renamed
/// over it only when everything succeeded, so a failure never leaves a half-written file (or
/// destroys the input when `-o` names it).
enum Output {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    File { writer: std::io::BufWriter<std::fs::File>, temporary: PathBuf, target: PathBuf },
    Discard(std::io::Sink),
}

impl Output {
    fn open(path: &Path) -> Result<Output, String> {
        if path.as_os_str() == "-" {
            return Ok(Output::Stdout(std::io::BufWriter::new(std::io::stdout())));
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

    fn sink(&mut self) -> &mut dyn Write {
        match self {
            Output::Stdout(writer) => writer,
            Output::File { writer, .. } => writer,
            Output::Discard(sink) => sink,
        }
    }

    fn commit(self) -> Result<(), String> {
        match self {
            Output::Stdout(mut writer) => writer.flush().map_err(|e| format!("error: cannot write output: {e}")),
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
