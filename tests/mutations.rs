//! Random mutations of real programs never make the parser, the verifier or the printer panic.
//!
//! Each case takes a file of `examples/` or `tests/roundtrip/` (read at run time), as written or
//! in its generic form, applies a few random mutations — delete, duplicate or truncate a byte
//! range, delete or duplicate a line, swap two lines or two tokens, insert random bytes
//! (punctuation, sigils, invalid UTF-8, fragments of syntax), replace an identifier or a number —
//! and then:
//!
//! - parses it (`hat_ir::parse_bytes`); if that succeeds, verifies it, renders the diagnostics and
//!   prints it in the custom and in the generic form (whether or not it verified);
//! - nothing of that may panic;
//! - if the mutant parsed and verified cleanly, print → parse → print is stable in both forms, the
//!   printed text parses and verifies again, and the custom form, parsed, has the same generic
//!   form as the mutant (it loses nothing).
//!
//! 256 cases per run; `PROPTEST_CASES` sets another number. A failure shows the mutated input as
//! a byte-string literal. `known_reproducers` replays inputs that once broke the property (each a
//! minimal case the property found), so that they stay fixed.

use hat_ir::{parse_bytes, print_op, verify, Context, Op, PrintOptions};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

const CUSTOM: PrintOptions = PrintOptions { generic: false, debug_info: false, assume_verified: false };
const GENERIC: PrintOptions = PrintOptions { generic: true, debug_info: false, assume_verified: false };

/// The programs to mutate: `(name, bytes)` of every `.hat` file in the corpus directories.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for directory in ["examples", "tests/roundtrip"] {
        let Ok(entries) = std::fs::read_dir(root.join(directory)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "hat") {
                if let Ok(bytes) = std::fs::read(&path) {
                    files.push((
                        format!("{directory}/{}", path.file_name().unwrap_or_default().to_string_lossy()),
                        bytes,
                    ));
                }
            }
        }
    }
    files.sort();
    files
}

// ----- mutations --------------------------------------------------------------------------------

/// Bytes worth inserting: the punctuation and sigils of the grammar, bytes that are not UTF-8
/// (a lone continuation byte, a lead byte without its continuation, an overlong encoding, 0xFF),
/// and fragments of valid syntax in the wrong place.
const FRAGMENTS: &[&[u8]] = &[
    b"{",
    b"}",
    b"(",
    b")",
    b"[",
    b"]",
    b"<",
    b">",
    b"%",
    b"\"",
    b"^",
    b"@",
    b"#",
    b"!",
    b":",
    b"::",
    b",",
    b"=",
    b"->",
    b"?",
    b"x",
    b"-",
    b"...",
    b"\\",
    b"\\q",
    b"\n",
    b"//",
    b" ",
    b"0",
    b"1",
    b"-1",
    b"0x",
    b"4294967296",
    b"99999999999999999999",
    b"1.5e",
    b"%0",
    b"%0#1",
    b"%x:2",
    b"^bb0:",
    b"^bb1(%a: i32):",
    b"@f",
    b"@\"",
    b"i0",
    b"i32",
    b"f32",
    b"index",
    b"memref<",
    b"memref<?x4xf32>",
    b"array<i64: 1, 2>",
    b"loc(",
    b"{a = ",
    b"\"x.y\"()",
    b"\"scf.yield\"() : () -> ()",
    b" ({\n}) ",
    b"%zz = ",
    b"scf.yield",
    b"({",
    b"})",
    b"\x80",
    b"\xc3",
    b"\xe2\x82",
    b"\xc0\xaf",
    b"\xff",
    b"\xed\xa0\x80",
    b"\0",
    b"\t",
    b"\r",
];

/// Replacements for a number: edge values of the types, and ones that name no dimension or operand.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "7",
    "99",
    "-1",
    "255",
    "256",
    "65536",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "0x10",
    "1.5",
    "-0.0",
    "1e9",
];

/// Replacements for an identifier.
const IDENTIFIERS: &[&str] = &[
    "%undefined",
    "%0",
    "%0#7",
    "%arg0",
    "@missing",
    "@main",
    "^bb9",
    "i1",
    "i64",
    "f32",
    "index",
    "memref<4xi32>",
    "arith.addi",
    "arith.constant",
    "scf.yield",
    "scf.for",
    "compute.return",
    "kernel.return",
    "kernel.func",
    "compute.dispatch",
    "buffer.load",
    "frobnicate",
    "x",
    "true",
    "attributes",
    "iter_args",
    "to",
    "step",
    "else",
    "do",
];

#[derive(Clone, Debug)]
enum Mutation {
    DeleteRange { at: Index, length: usize },
    DuplicateRange { at: Index, length: usize, to: Index },
    SwapLines { a: Index, b: Index },
    SwapTokens { a: Index, b: Index },
    InsertFragment { at: Index, fragment: Index },
    InsertRandomBytes { at: Index, bytes: Vec<u8> },
    Truncate { at: Index },
    DeleteLine { which: Index },
    DuplicateLine { which: Index, to: Index },
    ReplaceNumber { which: Index, replacement: Index },
    ReplaceIdentifier { which: Index, replacement: Index, from_input: bool },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => (any::<Index>(), 1usize..40).prop_map(|(at, length)| Mutation::DeleteRange { at, length }),
        1 => (any::<Index>(), 1usize..60, any::<Index>()).prop_map(|(at, length, to)| Mutation::DuplicateRange { at, length, to }),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapLines { a, b }),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapTokens { a, b }),
        3 => (any::<Index>(), any::<Index>()).prop_map(|(at, fragment)| Mutation::InsertFragment { at, fragment }),
        1 => (any::<Index>(), prop::collection::vec(any::<u8>(), 1..6)).prop_map(|(at, bytes)| Mutation::InsertRandomBytes { at, bytes }),
        1 => any::<Index>().prop_map(|at| Mutation::Truncate { at }),
        2 => any::<Index>().prop_map(|which| Mutation::DeleteLine { which }),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(which, to)| Mutation::DuplicateLine { which, to }),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(which, replacement)| Mutation::ReplaceNumber { which, replacement }),
        2 => (any::<Index>(), any::<Index>(), any::<bool>())
            .prop_map(|(which, replacement, from_input)| Mutation::ReplaceIdentifier { which, replacement, from_input }),
    ]
}

/// Byte ranges of the lines of `text` (each with its newline).
fn lines(text: &[u8]) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for (i, &b) in text.iter().enumerate() {
        if b == b'\n' {
            ranges.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < text.len() {
        ranges.push((start, text.len()));
    }
    ranges
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$' | b'%' | b'@' | b'^' | b'#' | b'-')
}

/// Byte ranges of the tokens of `text`, roughly: runs of word bytes, and single other non-blank bytes.
fn tokens(text: &[u8]) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i].is_ascii_whitespace() {
            i += 1;
        } else if is_word_byte(text[i]) {
            let start = i;
            while i < text.len() && is_word_byte(text[i]) {
                i += 1;
            }
            ranges.push((start, i));
        } else {
            ranges.push((i, i + 1));
            i += 1;
        }
    }
    ranges
}

/// Byte ranges of identifiers: `%name`, `@name`, `^name`, and bare words starting with a letter.
fn identifiers(text: &[u8]) -> Vec<(usize, usize)> {
    tokens(text)
        .into_iter()
        .filter(|&(s, _)| {
            text[s].is_ascii_alphabetic() || (matches!(text[s], b'%' | b'@' | b'^') && s + 1 < text.len())
        })
        .collect()
}

/// Swaps two disjoint ranges of `text` (in any order); overlapping ranges leave it alone.
fn swap_ranges(text: &mut Vec<u8>, a: (usize, usize), b: (usize, usize)) {
    let (first, second) = if a.0 <= b.0 { (a, b) } else { (b, a) };
    if first.1 > second.0 {
        return;
    }
    let mut out = Vec::with_capacity(text.len());
    out.extend_from_slice(&text[..first.0]);
    out.extend_from_slice(&text[second.0..second.1]);
    out.extend_from_slice(&text[first.1..second.0]);
    out.extend_from_slice(&text[first.0..first.1]);
    out.extend_from_slice(&text[second.1..]);
    *text = out;
}

fn apply(text: &mut Vec<u8>, mutation: &Mutation) {
    // Positions 0..=len: inserting at the end is allowed.
    let position = |index: &Index, text: &Vec<u8>| index.index(text.len() + 1);
    match mutation {
        Mutation::DeleteRange { at, length } => {
            let start = position(at, text);
            let end = (start + length).min(text.len());
            text.drain(start..end);
        }
        Mutation::DuplicateRange { at, length, to } => {
            let start = position(at, text);
            let end = (start + length).min(text.len());
            let copy = text[start..end].to_vec();
            let to = position(to, text);
            text.splice(to..to, copy);
        }
        Mutation::SwapLines { a, b } => {
            let ranges = lines(text);
            if ranges.len() >= 2 {
                swap_ranges(text, ranges[a.index(ranges.len())], ranges[b.index(ranges.len())]);
            }
        }
        Mutation::SwapTokens { a, b } => {
            let ranges = tokens(text);
            if ranges.len() >= 2 {
                swap_ranges(text, ranges[a.index(ranges.len())], ranges[b.index(ranges.len())]);
            }
        }
        Mutation::InsertFragment { at, fragment } => {
            let at = position(at, text);
            text.splice(at..at, FRAGMENTS[fragment.index(FRAGMENTS.len())].iter().copied());
        }
        Mutation::InsertRandomBytes { at, bytes } => {
            let at = position(at, text);
            text.splice(at..at, bytes.iter().copied());
        }
        Mutation::Truncate { at } => {
            let at = position(at, text);
            text.truncate(at);
        }
        Mutation::DeleteLine { which } => {
            let ranges = lines(text);
            if !ranges.is_empty() {
                let (start, end) = ranges[which.index(ranges.len())];
                text.drain(start..end);
            }
        }
        Mutation::DuplicateLine { which, to } => {
            let ranges = lines(text);
            if !ranges.is_empty() {
                let (start, end) = ranges[which.index(ranges.len())];
                let mut line = text[start..end].to_vec();
                if line.last() != Some(&b'\n') {
                    line.push(b'\n');
                }
                let at = ranges[to.index(ranges.len())].0;
                text.splice(at..at, line);
            }
        }
        Mutation::ReplaceNumber { which, replacement } => {
            let ranges: Vec<(usize, usize)> =
                tokens(text).into_iter().filter(|&(s, _)| text[s].is_ascii_digit()).collect();
            if !ranges.is_empty() {
                let (start, end) = ranges[which.index(ranges.len())];
                let new = NUMBERS[replacement.index(NUMBERS.len())].as_bytes().iter().copied();
                text.splice(start..end, new);
            }
        }
        Mutation::ReplaceIdentifier { which, replacement, from_input } => {
            let ranges = identifiers(text);
            if ranges.is_empty() {
                return;
            }
            let (start, end) = ranges[which.index(ranges.len())];
            let new: Vec<u8> = if *from_input {
                let (s, e) = ranges[replacement.index(ranges.len())];
                text[s..e].to_vec()
            } else {
                IDENTIFIERS[replacement.index(IDENTIFIERS.len())].as_bytes().to_vec()
            };
            text.splice(start..end, new);
        }
    }
}

// ----- the property -----------------------------------------------------------------------------

/// Parses and verifies text the printer wrote in `form`; `Err` says why it is not a valid module.
fn reparse(form: &str, printed: &str) -> Result<(Context, Op), String> {
    let mut ctx = hat_dialects::context();
    let module = match parse_bytes(&mut ctx, "printed.hat", printed.as_bytes()) {
        Ok(module) => module,
        Err(error) => {
            let rendered = hat_ir::diagnostics::render(&ctx.sources, &[error.into()]);
            return Err(format!(
                "the {form} form of a valid module does not parse:\n{rendered}\n--- printed ---\n{printed}"
            ));
        }
    };
    let diagnostics = verify(&ctx, module);
    if !diagnostics.is_empty() {
        let rendered = hat_ir::diagnostics::render(&ctx.sources, &diagnostics);
        return Err(format!(
            "the {form} form of a valid module does not verify:\n{rendered}\n--- printed ---\n{printed}"
        ));
    }
    Ok((ctx, module))
}

/// A parse → verify → print of `bytes`: `Err` describes a broken round trip. Panics propagate.
fn check(name: &str, bytes: &[u8]) -> Result<(), String> {
    let mut ctx: Context = hat_dialects::context();
    let Ok(module) = parse_bytes(&mut ctx, name, bytes) else {
        return Ok(());
    };
    let diagnostics = verify(&ctx, module);
    // Rendering the diagnostics is part of what must not panic.
    let _ = hat_ir::diagnostics::render(&ctx.sources, &diagnostics);
    let custom = print_op(&ctx, module, CUSTOM);
    let generic = print_op(&ctx, module, GENERIC);
    if !diagnostics.is_empty() {
        return Ok(());
    }
    for (form, options, printed) in [("custom", CUSTOM, &custom), ("generic", GENERIC, &generic)] {
        let (again, reparsed) = reparse(form, printed)?;
        let reprinted = print_op(&again, reparsed, options);
        if &reprinted != printed {
            return Err(format!(
                "the {form} form is not stable under print → parse → print:\n--- first ---\n{printed}\n--- second ---\n{reprinted}"
            ));
        }
        // The custom form must say everything the generic form says.
        let generic_again = print_op(&again, reparsed, GENERIC);
        if generic_again != generic {
            return Err(format!(
                "the {form} form loses information: its generic form differs\n--- generic form ---\n{generic}\n--- {form} form, parsed, in the generic form ---\n{generic_again}"
            ));
        }
    }
    Ok(())
}

/// [`check`], with a panic turned into an error that shows the panic's message.
fn check_without_panic(name: &str, bytes: &[u8]) -> Result<(), String> {
    match catch_unwind(AssertUnwindSafe(|| check(name, bytes))) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic with a non-text payload".to_string());
            Err(format!("panicked: {message}"))
        }
    }
}

/// The generic form of a file that parses.
fn generic_form(name: &str, bytes: &[u8]) -> Option<String> {
    let mut ctx = hat_dialects::context();
    let module = parse_bytes(&mut ctx, name, bytes).ok()?;
    Some(print_op(&ctx, module, GENERIC))
}

/// The input as a Rust byte-string literal, so a failure can be pasted into a test.
fn show(bytes: &[u8]) -> String {
    format!("b\"{}\"", bytes.escape_ascii())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(256)
}

#[test]
fn mutated_programs_never_panic_and_valid_ones_round_trip() {
    let corpus = corpus();
    if corpus.is_empty() {
        eprintln!("no .hat files in examples/ or tests/roundtrip/: nothing to mutate");
        return;
    }
    let config = Config { cases: cases(), failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    // Mutating the generic form too reaches the verifiers more often: its explicit operand and
    // type lists, once mutated, still parse but no longer agree with what the op needs.
    let starts: Vec<(String, Vec<u8>)> = corpus
        .iter()
        .flat_map(|(name, bytes)| {
            let generic = generic_form(name, bytes).map(|text| (format!("{name} (generic form)"), text.into_bytes()));
            std::iter::once((name.clone(), bytes.clone())).chain(generic)
        })
        .collect();
    let strategy = (any::<Index>(), prop::collection::vec(mutation(), 1..5));
    let result = runner.run(&strategy, |(file, mutations)| {
        let (name, original) = &starts[file.index(starts.len())];
        let mut text = original.clone();
        for mutation in &mutations {
            apply(&mut text, mutation);
        }
        check_without_panic(name, &text).map_err(|problem| {
            TestCaseError::fail(format!("{name} mutated by {mutations:?}:\n{problem}\n--- input ---\n{}", show(&text)))
        })
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// Inputs that broke the property once; each must now parse or fail cleanly.
#[test]
fn known_reproducers() {
    let reproducers: &[&[u8]] = &[
        // A result group count so large that summing the counts overflows.
        b"%a:4294967295, %b:1 = arith.constant 1 : i32\n",
        // An empty module: its generic form must keep the (empty) entry block.
        b"",
        b"module @outer {\n  module @inner {\n  }\n}\n",
        // Custom printers given ops that failed verification (the generic form can build them).
        b"%a = arith.constant 1 : i32\n\"arith.addi\"(%a, %a) : (i32, i32) -> ()\n",
        b"%a = arith.constant 1.0 : f32\n\"math.sqrt\"(%a) : (f32) -> ()\n",
        b"%b = \"arith.cmpi\"() {predicate = 0 : i64} : () -> i1\n",
        b"%b = \"arith.index_cast\"() : () -> index\n",
        b"module {\n  \"builtin.module\"() : () -> ()\n}\n",
        // Verified ops that their custom form cannot express: it drops them or does not parse.
        b"%p = arith.constant true\n%c = arith.constant 0 : index\nscf.if %p {\n} else {\n^bb0(%a: i32):\n}\n\
          scf.for %i = %c to %c step %c {\n  %x = arith.addi %i, %i : index\n}\n",
        b"%p = arith.constant true\n%a = arith.constant 1 : i32\n%r = scf.if %p -> (i32) {\n  %x = \"scf.yield\"(%a) : (i32) -> f32\n\
          } else {\n  scf.yield %a : i32\n}\n",
        b"%a = arith.constant 1 : i32\n%b = \"arith.addi\"(%a, %a) ({\n}) : (i32, i32) -> i32\n",
        b"%p = arith.constant true\nscf.if %p {\n  \"scf.yield\"() ({\n  }) : () -> ()\n}\n",
        b"\"builtin.module\"() ({\n^bb0(%a: i32):\n}) : () -> ()\n",
        b"%a = arith.constant 1 : index\n%b = \"arith.cmpi\"(%a, %a) {predicate = 6 : index} : (index, index) -> i1\n",
    ];
    let mut failures = Vec::new();
    for input in reproducers {
        if let Err(problem) = check_without_panic("reproducer.hat", input) {
            failures.push(format!("{}: {problem}", show(input)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
