//! `--verify-diagnostics`: the diagnostics a run produced are compared with the ones its input
//! expects, written in the input next to the lines they point at, as in MLIR:
//!
//! ```text
//! %x = arith.addi %a, %b : f32   // expected-error {{integer}}
//! // expected-error@+1 {{redefinition of symbol}}
//! compute.func @f() { ... }
//! // expected-note@-4 {{see existing symbol definition here}}
//! ```
//!
//! A directive is `expected-KIND`, KIND one of `error`, `warning`, `note`, `remark`, then
//! optionally `-re`, then optionally a line designator, then `{{TEXT}}`, which must end the line.
//! Designators: none (this line), `@+N` and `@-N` (N lines below or above), `@above` and `@below`
//! (the nearest line in that direction that holds no directive), `@unknown` (a diagnostic without
//! a location). A diagnostic is expected by a directive of its kind on its line whose TEXT is a
//! substring of its message; with `-re`, the `{{…}}` blocks inside TEXT are regular expressions
//! and the rest is literal. Notes attached to a diagnostic are matched as notes at their own
//! locations.
//!
//! As in MLIR, one directive accepts every diagnostic it matches, so a diagnostic reported twice
//! on one line needs only one directive; where several directives match, an unmatched one is taken
//! first. Unlike MLIR, a directive that looks meant (`expected-error@…` or `expected-error {{…`)
//! but is malformed is an error rather than silently ignored, and a diagnostic of the wrong kind is
//! reported once, not again as a missing expectation.

use super::render;
use crate::location::SourceMap;
use crate::{Diagnostic, Location, Severity};
use regex::Regex;

/// Checks `diagnostics`, produced for the input `source_text` (named `file_name`; with
/// `--split-input-file`, one chunk padded with empty lines so that its line numbers are those of
/// the file), against the expectations written in it. `sources` holds the files the diagnostics
/// point into. `Err` holds every problem, rendered like other diagnostics: expected diagnostics
/// that were not produced, diagnostics that were not expected, and malformed directives.
pub fn check(
    sources: &SourceMap,
    source_text: &str,
    file_name: &str,
    diagnostics: &[Diagnostic],
) -> Result<(), String> {
    let (mut expectations, mut problems) = parse_expectations(source_text);
    for diagnostic in diagnostics {
        let attached = diagnostic.notes.iter().map(|(location, message)| (Severity::Note, *location, message));
        for (severity, location, message) in
            std::iter::once((diagnostic.severity, diagnostic.location, &diagnostic.message)).chain(attached)
        {
            let target = target_of(sources, file_name, location);
            if let Some(problem) = match_diagnostic(&mut expectations, severity, target, location, message) {
                problems.push(problem);
            }
        }
    }
    for expectation in &expectations {
        if !expectation.matched && !expectation.reported {
            problems.push(Problem {
                place: Place::Input(expectation.offset),
                message: format!("expected {} \"{}\" was not produced", expectation.severity, expectation.text),
            });
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let mut input = SourceMap::default();
    let input_id = input.add(file_name, source_text);
    let mut out = String::new();
    for problem in problems {
        out.push_str(&match problem.place {
            Place::Input(offset) => {
                render(&input, &[Diagnostic::error(Location::new(input_id, offset as u32), problem.message)])
            }
            Place::Diagnostic(location) => render(sources, &[Diagnostic::error(location, problem.message)]),
        });
    }
    Err(out)
}

/// Which diagnostics a directive accepts, by location.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Target {
    /// Those on this (1-based) line of the input.
    Line(usize),
    /// Those without a location.
    Unknown,
    /// Those in another file: no directive of the input can accept them.
    Elsewhere,
}

#[derive(Debug)]
enum Pattern {
    Substring,
    Regex(Regex),
}

/// One `expected-*` directive.
#[derive(Debug)]
struct Expectation {
    severity: Severity,
    target: Target,
    /// The text between the outer braces, as written.
    text: String,
    pattern: Pattern,
    /// Byte offset of the directive (`expected-…`) in the input, where problems with it point.
    offset: usize,
    matched: bool,
    /// Already reported (as a diagnostic of the wrong kind).
    reported: bool,
}

impl Expectation {
    fn accepts(&self, target: Target, message: &str) -> bool {
        self.target == target
            && match &self.pattern {
                Pattern::Substring => message.contains(&self.text),
                Pattern::Regex(regex) => regex.is_match(message),
            }
    }
}

/// Where a problem is shown.
enum Place {
    /// At this byte offset of the input.
    Input(usize),
    /// At a diagnostic's location.
    Diagnostic(Location),
}

struct Problem {
    place: Place,
    message: String,
}

fn target_of(sources: &SourceMap, file_name: &str, location: Location) -> Target {
    match sources.file_line_col(location) {
        None => Target::Unknown,
        Some((name, line, _)) if name == file_name => Target::Line(line),
        Some(_) => Target::Elsewhere,
    }
}

/// Marks the expectation that accepts the diagnostic, or returns the problem if none does.
fn match_diagnostic(
    expectations: &mut [Expectation],
    severity: Severity,
    target: Target,
    location: Location,
    message: &str,
) -> Option<Problem> {
    let accepting = |e: &Expectation| e.accepts(target, message);
    let same_kind = |e: &Expectation| e.severity == severity;
    // An unmatched expectation first, so that two directives accept two equal diagnostics.
    let found = expectations
        .iter()
        .position(|e| !e.matched && same_kind(e) && accepting(e))
        .or_else(|| expectations.iter().position(|e| same_kind(e) && accepting(e)));
    if let Some(index) = found {
        expectations[index].matched = true;
        return None;
    }
    let near_miss = expectations
        .iter()
        .position(|e| !e.matched && !e.reported && accepting(e))
        .or_else(|| expectations.iter().position(accepting));
    if let Some(index) = near_miss {
        let expectation = &mut expectations[index];
        expectation.reported = true;
        return Some(Problem {
            place: Place::Input(expectation.offset),
            message: format!("'{severity}' diagnostic emitted when expecting a '{}'", expectation.severity),
        });
    }
    Some(Problem { place: Place::Diagnostic(location), message: format!("unexpected {severity}: {message}") })
}

/// A directive's line designator.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Designator {
    Here,
    Down(usize),
    Up(usize),
    Above,
    Below,
    Unknown,
}

/// A directive as written on one line.
#[derive(Debug)]
struct Directive {
    severity: Severity,
    is_regex: bool,
    designator: Designator,
    text: String,
}

/// Every directive of the input, with their lines resolved, and the problems with malformed ones.
fn parse_expectations(source_text: &str) -> (Vec<Expectation>, Vec<Problem>) {
    let mut expectations: Vec<Expectation> = Vec::new();
    let mut problems = Vec::new();
    // Lines as the diagnostics count them (LF, CRLF or a lone CR), without their endings.
    let lines: Vec<(&str, usize)> = crate::location::lines_inclusive(source_text.as_bytes())
        .map(|line| {
            let text = crate::location::trim_line_ending(line);
            (std::str::from_utf8(text).unwrap_or(""), line.len())
        })
        .chain(
            // Text that ends with a line ending (or is empty) has an empty last line after it.
            (source_text.is_empty() || source_text.ends_with(['\n', '\r'])).then_some(("", 0)),
        )
        .collect();
    // The last line that held no directive (0 before the first line), and the directives waiting
    // for the next such line.
    let mut last_plain_line = 0;
    let mut waiting_for_next_line: Vec<usize> = Vec::new();
    let mut line_start = 0;
    for (index, &(line, length)) in lines.iter().enumerate() {
        let number = index + 1;
        let start = line_start;
        line_start += length;
        let Some((column, parsed)) = parse_line(line) else {
            for waiting in waiting_for_next_line.drain(..) {
                expectations[waiting].target = Target::Line(number);
            }
            last_plain_line = number;
            continue;
        };
        let offset = start + column;
        let directive = match parsed {
            Ok(directive) => directive,
            Err(message) => {
                problems.push(Problem { place: Place::Input(offset), message });
                continue;
            }
        };
        let pattern = if directive.is_regex {
            match compile_pattern(&directive.text) {
                Ok(regex) => Pattern::Regex(regex),
                Err(message) => {
                    problems.push(Problem { place: Place::Input(offset), message });
                    continue;
                }
            }
        } else {
            Pattern::Substring
        };
        let target = match directive.designator {
            Designator::Here => Target::Line(number),
            Designator::Down(n) => Target::Line(number.saturating_add(n)),
            Designator::Up(n) if n < number => Target::Line(number - n),
            Designator::Up(n) => {
                problems.push(Problem {
                    place: Place::Input(offset),
                    message: format!("expected-{}@-{n} points above the first line", directive.severity),
                });
                continue;
            }
            Designator::Above => Target::Line(last_plain_line),
            Designator::Below => {
                waiting_for_next_line.push(expectations.len());
                // Dangling (no line below): a line no diagnostic is on.
                Target::Line(lines.len() + 1)
            }
            Designator::Unknown => Target::Unknown,
        };
        expectations.push(Expectation {
            severity: directive.severity,
            target,
            text: directive.text,
            pattern,
            offset,
            matched: false,
            reported: false,
        });
    }
    (expectations, problems)
}

const PREFIX: &str = "expected-";
const KINDS: [(&str, Severity); 4] = [
    ("error", Severity::Error),
    ("warning", Severity::Warning),
    ("note", Severity::Note),
    ("remark", Severity::Remark),
];

/// The first directive on `line`, with its byte column: `Err` if it is malformed. Text such as
/// `expected-errors` or `expected-error is` is prose, not a directive.
fn parse_line(line: &str) -> Option<(usize, Result<Directive, String>)> {
    let mut malformed = None;
    for (column, _) in line.match_indices(PREFIX) {
        match parse_directive(&line[column + PREFIX.len()..]) {
            None => {}
            Some(Ok(directive)) => return Some((column, Ok(directive))),
            Some(Err(message)) => {
                malformed.get_or_insert((column, Err(message)));
            }
        }
    }
    malformed
}

/// Parses what follows `expected-`.
fn parse_directive(rest: &str) -> Option<Result<Directive, String>> {
    let (kind, severity) = KINDS.iter().copied().find(|(kind, _)| rest.starts_with(kind))?;
    let mut rest = &rest[kind.len()..];
    let is_regex = rest.starts_with("-re") && !rest[3..].starts_with(|c: char| c.is_alphanumeric() || c == '-');
    if is_regex {
        rest = &rest[3..];
    }
    let name = format!("expected-{kind}{}", if is_regex { "-re" } else { "" });
    if !rest.starts_with([' ', '\t', '@', '{']) {
        return None;
    }
    let mut meant = !rest.starts_with([' ', '\t']);
    rest = rest.trim_start_matches([' ', '\t']);
    let mut designator = Designator::Here;
    if let Some(after) = rest.strip_prefix('@') {
        meant = true;
        let word_end = after.find(|c: char| !(c.is_alphanumeric() || c == '+' || c == '-')).unwrap_or(after.len());
        let word = &after[..word_end];
        designator = match word {
            "above" => Designator::Above,
            "below" => Designator::Below,
            "unknown" => Designator::Unknown,
            _ => match (word.strip_prefix('+'), word.strip_prefix('-')) {
                (Some(n), _) if is_number(n) => Designator::Down(n.parse().unwrap_or(usize::MAX)),
                (_, Some(n)) if is_number(n) => Designator::Up(n.parse().unwrap_or(usize::MAX)),
                _ => {
                    return Some(Err(format!(
                        "{name}@{word}: expected a line designator `@+N`, `@-N`, `@above`, `@below` or `@unknown`"
                    )))
                }
            },
        };
        rest = after[word_end..].trim_start_matches([' ', '\t']);
    }
    let Some(body) = rest.strip_prefix("{{") else {
        return meant.then(|| Err(format!("{name}: expected `{{{{message}}}}` after the directive")));
    };
    let body = body.trim_end();
    let Some(text) = body.strip_suffix("}}") else {
        return Some(Err(format!("{name}: the line must end with `}}}}` closing the expected message")));
    };
    Some(Ok(Directive { severity, is_regex, designator, text: text.to_string() }))
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// The regex of an `-re` directive: literal text with `{{regex}}` blocks.
fn compile_pattern(text: &str) -> Result<Regex, String> {
    let mut pattern = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        pattern.push_str(&regex::escape(&rest[..open]));
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| "found start of regex with no end '}}'".to_string())?;
        let block = &after[..close];
        Regex::new(block).map_err(|e| format!("invalid regex: {e}"))?;
        pattern.push_str(&format!("({block})"));
        rest = &after[close + 2..];
    }
    pattern.push_str(&regex::escape(rest));
    Regex::new(&pattern).map_err(|e| format!("invalid regex: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "input.hat";

    /// The input registered in a source map, and a way to point at `(line, column)` in it.
    struct Input {
        sources: SourceMap,
        text: String,
        id: crate::location::SourceId,
    }

    impl Input {
        fn new(text: &str) -> Self {
            let mut sources = SourceMap::default();
            let id = sources.add(FILE, text);
            Input { sources, text: text.to_string(), id }
        }

        fn at(&self, line: usize, column: usize) -> Location {
            let start: usize = self.text.split('\n').take(line - 1).map(|l| l.len() + 1).sum();
            Location::new(self.id, (start + column - 1) as u32)
        }

        fn check(&self, diagnostics: &[Diagnostic]) -> Result<(), String> {
            check(&self.sources, &self.text, FILE, diagnostics)
        }
    }

    fn error_at(input: &Input, line: usize, message: &str) -> Diagnostic {
        Diagnostic::error(input.at(line, 1), message)
    }

    #[test]
    fn nothing_expected_and_nothing_produced_passes() {
        let input = Input::new("module {\n}\n");
        assert_eq!(input.check(&[]), Ok(()));
    }

    #[test]
    fn an_expectation_on_the_same_line_matches_a_substring() {
        let input = Input::new("%x = arith.addi %a, %b : f32 // expected-error {{integer}}\n");
        let diagnostic = Diagnostic::error(input.at(1, 6), "'arith.addi' expects integer operands");
        assert_eq!(input.check(&[diagnostic]), Ok(()));
    }

    #[test]
    fn the_text_must_be_a_substring_of_the_message() {
        let input = Input::new("op // expected-error {{integer}}\n");
        let error = input.check(&[error_at(&input, 1, "float operands")]).unwrap_err();
        assert!(error.contains("unexpected error: float operands"), "{error}");
        assert!(error.contains("expected error \"integer\" was not produced"), "{error}");
    }

    #[test]
    fn an_empty_text_matches_any_message() {
        let input = Input::new("op // expected-error {{}}\n");
        assert_eq!(input.check(&[error_at(&input, 1, "anything")]), Ok(()));
    }

    #[test]
    fn relative_designators_count_lines() {
        let text = "// expected-error@+2 {{two below}}\n// expected-warning@+1 {{one below}}\nop\nop // expected-remark@-1 {{one above}}\n";
        let input = Input::new(text);
        let diagnostics = [
            error_at(&input, 3, "two below"),
            Diagnostic::warning(input.at(3, 1), "one below"),
            Diagnostic::remark(input.at(3, 1), "one above"),
        ];
        assert_eq!(input.check(&diagnostics), Ok(()));
    }

    #[test]
    fn above_and_below_skip_lines_that_hold_directives() {
        let text = "first\n// expected-error@above {{a}}\n// expected-error@above {{b}}\n// expected-error@below {{c}}\n// expected-error@below {{d}}\nsecond\n";
        let input = Input::new(text);
        let diagnostics =
            [error_at(&input, 1, "a"), error_at(&input, 1, "b"), error_at(&input, 6, "c"), error_at(&input, 6, "d")];
        assert_eq!(input.check(&diagnostics), Ok(()));
    }

    #[test]
    fn below_with_no_line_below_is_never_produced() {
        let input = Input::new("op\n// expected-error@below {{dangling}}");
        let error = input.check(&[error_at(&input, 1, "dangling")]).unwrap_err();
        assert!(error.contains("expected error \"dangling\" was not produced"), "{error}");
        assert!(error.contains("unexpected error: dangling"), "{error}");
    }

    #[test]
    fn unknown_matches_diagnostics_without_a_location() {
        let input = Input::new("// expected-error@unknown {{nowhere}}\nop\n");
        assert_eq!(input.check(&[Diagnostic::error(Location::UNKNOWN, "from nowhere")]), Ok(()));
        // ...and only those.
        let error = input.check(&[error_at(&input, 1, "from nowhere")]).unwrap_err();
        assert!(error.contains("unexpected error: from nowhere"), "{error}");
    }

    #[test]
    fn every_kind_is_matched_by_its_own_directive() {
        let text = "op // expected-error {{e}}\nop // expected-warning {{w}}\nop // expected-note {{n}}\nop // expected-remark {{r}}\n";
        let input = Input::new(text);
        let diagnostics = [
            Diagnostic::error(input.at(1, 1), "e"),
            Diagnostic::warning(input.at(2, 1), "w"),
            Diagnostic::new(Severity::Note, input.at(3, 1), "n"),
            Diagnostic::remark(input.at(4, 1), "r"),
        ];
        assert_eq!(input.check(&diagnostics), Ok(()));
    }

    #[test]
    fn a_diagnostic_of_the_wrong_kind_is_reported_once_at_the_directive() {
        let input = Input::new("op // expected-warning {{careful}}\n");
        let error = input.check(&[error_at(&input, 1, "careful")]).unwrap_err();
        assert_eq!(error.matches("error:").count(), 1, "{error}");
        assert!(error.contains("'error' diagnostic emitted when expecting a 'warning'"), "{error}");
        assert!(error.contains("input.hat:1:7"), "{error}");
    }

    #[test]
    fn attached_notes_are_matched_at_their_own_locations() {
        let text =
            "compute.func @f() // expected-note {{previous}}\ncompute.func @f() // expected-error {{redefinition}}\n";
        let input = Input::new(text);
        let diagnostic = error_at(&input, 2, "redefinition of @f").with_note(input.at(1, 1), "previous definition");
        assert_eq!(input.check(std::slice::from_ref(&diagnostic)), Ok(()));
        // Without the note's directive, the note is unexpected.
        let input = Input::new("compute.func @f()\ncompute.func @f() // expected-error {{redefinition}}\n");
        let diagnostic = error_at(&input, 2, "redefinition of @f").with_note(input.at(1, 1), "previous definition");
        let error = input.check(&[diagnostic]).unwrap_err();
        assert!(error.contains("unexpected note: previous definition"), "{error}");
        assert!(error.contains("input.hat:1:1"), "{error}");
    }

    #[test]
    fn a_note_without_location_needs_an_unknown_directive() {
        let input = Input::new("op // expected-error {{bad}}\n// expected-note@unknown {{not defined}}\n");
        let diagnostic = error_at(&input, 1, "bad").with_note(Location::UNKNOWN, "the operand is not defined");
        assert_eq!(input.check(&[diagnostic]), Ok(()));
    }

    #[test]
    fn every_problem_is_reported_in_order() {
        let text = "a // expected-error {{missing one}}\nb\nc // expected-error {{missing two}}\n";
        let input = Input::new(text);
        let error = input.check(&[error_at(&input, 2, "surprise"), error_at(&input, 3, "another")]).unwrap_err();
        let headlines: Vec<&str> = error.lines().filter(|line| line.starts_with("error: ")).collect();
        assert_eq!(
            headlines,
            [
                "error: unexpected error: surprise",
                "error: unexpected error: another",
                "error: expected error \"missing one\" was not produced",
                "error: expected error \"missing two\" was not produced",
            ],
            "{error}"
        );
    }

    #[test]
    fn problems_render_with_the_source_line_and_location() {
        let input = Input::new("op\n  %x = foo // expected-error {{gone}}\n");
        let error = input.check(&[Diagnostic::error(input.at(1, 1), "surprise")]).unwrap_err();
        let expected = "\
error: unexpected error: surprise
  ┌─ input.hat:1:1
  │
1 │ op
  │ ^^

error: expected error \"gone\" was not produced
  ┌─ input.hat:2:15
  │
2 │   %x = foo // expected-error {{gone}}
  │               ^^^^^^^^^^^^^^

";
        assert_eq!(error, expected);
    }

    #[test]
    fn one_directive_accepts_a_repeated_diagnostic() {
        let input = Input::new("op // expected-error {{twice}}\n");
        assert_eq!(input.check(&[error_at(&input, 1, "twice"), error_at(&input, 1, "twice")]), Ok(()));
    }

    #[test]
    fn two_directives_accept_two_equal_diagnostics() {
        let input = Input::new("// expected-error@+2 {{twice}}\n// expected-error@+1 {{twice}}\nop\n");
        assert_eq!(input.check(&[error_at(&input, 3, "twice"), error_at(&input, 3, "twice")]), Ok(()));
    }

    #[test]
    fn regex_directives_mix_literal_text_and_regex_blocks() {
        let input = Input::new("op // expected-error-re {{value {{[0-9]+}} (.*) out of range}}\n");
        assert_eq!(input.check(&[error_at(&input, 1, "value 300 (.*) out of range for i8")]), Ok(()));
        let error = input.check(&[error_at(&input, 1, "value x (.*) out of range")]).unwrap_err();
        assert!(error.contains("expected error \"value {{[0-9]+}} (.*) out of range\" was not produced"), "{error}");
    }

    #[test]
    fn invalid_regexes_are_reported() {
        let input = Input::new("op // expected-error-re {{{{[0-9}}}}\nop // expected-error-re {{{{a}}\n");
        let error = input.check(&[]).unwrap_err();
        assert!(error.contains("invalid regex"), "{error}");
        assert!(error.contains("input.hat:1:7"), "{error}");
    }

    #[test]
    fn malformed_directives_are_reported() {
        let text = "\
a // expected-error@+x {{bad designator}}
b // expected-error {{unclosed
c // expected-error@+1 no braces
d // expected-warning{{fine}}
";
        let input = Input::new(text);
        let error = input.check(&[Diagnostic::warning(input.at(4, 1), "fine")]).unwrap_err();
        assert!(error.contains("expected-error@+x: expected a line designator"), "{error}");
        assert!(error.contains("the line must end with `}}`"), "{error}");
        assert!(error.contains("expected-error: expected `{{message}}`"), "{error}");
        assert_eq!(error.matches("\nerror:").count() + 1, 3, "{error}");
    }

    #[test]
    fn prose_mentioning_directives_is_ignored() {
        let text = "// expected-errors are written next to the line\n// an expected-error is a comment\n// expected-error-related text\n";
        assert_eq!(Input::new(text).check(&[]), Ok(()));
    }

    #[test]
    fn a_directive_later_on_the_line_is_found() {
        let input = Input::new("// see expected-error below; expected-error {{real}}\n");
        assert_eq!(input.check(&[error_at(&input, 1, "real")]), Ok(()));
    }

    #[test]
    fn designators_pointing_above_the_file_are_reported() {
        let input = Input::new("// expected-error@-1 {{nothing up there}}\n");
        let error = input.check(&[]).unwrap_err();
        assert!(error.contains("expected-error@-1 points above the first line"), "{error}");
    }

    #[test]
    fn diagnostics_in_other_files_are_unexpected() {
        let mut input = Input::new("op // expected-error {{elsewhere}}\n");
        let other = input.sources.add("other.hat", "op\n");
        let diagnostic = Diagnostic::error(Location::new(other, 0), "elsewhere");
        let error = input.check(&[diagnostic]).unwrap_err();
        assert!(error.contains("unexpected error: elsewhere"), "{error}");
        assert!(error.contains("other.hat:1:1"), "{error}");
    }

    #[test]
    fn padded_chunks_keep_the_line_numbers_of_the_file() {
        // As --split-input-file passes the second chunk: its lines keep their numbers.
        let text = "\n\n\nop // expected-error {{in chunk two}}\n";
        let input = Input::new(text);
        assert_eq!(input.check(&[error_at(&input, 4, "in chunk two")]), Ok(()));
        let error = input.check(&[]).unwrap_err();
        assert!(error.contains("input.hat:4:7"), "{error}");
    }

    #[test]
    fn windows_line_endings_are_accepted() {
        let input = Input::new("op // expected-error {{crlf}}\r\nop\r\n");
        assert_eq!(input.check(&[error_at(&input, 1, "crlf")]), Ok(()));
    }
}
