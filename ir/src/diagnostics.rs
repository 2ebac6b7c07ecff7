//! Diagnostics: errors, warnings, notes and remarks attached to source locations, rendered with the
//! source line and `file:line:col` by `codespan-reporting`.

pub mod expected;

use crate::location::{Location, SourceFile, SourceMap};
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::{Error as FilesError, Files};
use codespan_reporting::term;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

/// How serious a diagnostic is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Extra information.
    Remark,
    /// Attached to another diagnostic, or on its own.
    Note,
    /// Suspicious but valid.
    Warning,
    /// Invalid input: the tool exits with status 1.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Remark => "remark",
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// A message about a place in the input, with optional notes pointing elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// How serious it is.
    pub severity: Severity,
    /// Where it points.
    pub location: Location,
    /// What it says.
    pub message: String,
    /// Attached notes, each with its own location.
    pub notes: Vec<(Location, String)>,
}

impl Diagnostic {
    /// A diagnostic of the given severity.
    pub fn new(severity: Severity, location: Location, message: impl Into<String>) -> Self {
        Diagnostic { severity, location, message: message.into(), notes: Vec::new() }
    }

    /// An error.
    pub fn error(location: Location, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, location, message)
    }

    /// A warning.
    pub fn warning(location: Location, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, location, message)
    }

    /// A remark.
    pub fn remark(location: Location, message: impl Into<String>) -> Self {
        Self::new(Severity::Remark, location, message)
    }

    /// Adds a note pointing at `location`.
    pub fn with_note(mut self, location: Location, message: impl Into<String>) -> Self {
        self.notes.push((location, message.into()));
        self
    }
}

/// Whether any diagnostic in `diagnostics` is an error.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(|d| d.severity == Severity::Error)
}

/// The longest source line (in bytes) a snippet shows whole; a longer one is shown as a window
/// around its labels, cut with `…` (a 50 MB literal on one line would otherwise be echoed, and
/// underlined, in full).
const MAX_LINE_BYTES: usize = 240;
/// Characters of a cut line shown before its first label.
const CONTEXT_BEFORE: usize = 60;
/// Characters of a cut line shown from its last label's start (the underline stops there).
const CONTEXT_AFTER: usize = 100;
/// The longest message (in characters) shown whole; the middle of a longer one (which can echo
/// a huge token) is left out.
const MAX_MESSAGE_CHARS: usize = 1000;

/// Renders diagnostics with source snippets. Each begins `severity: message` and shows
/// `file:line:col` above the source line it points at. Lines longer than [`MAX_LINE_BYTES`] are
/// shown as a window around the location, and messages longer than [`MAX_MESSAGE_CHARS`] lose
/// their middle, so the output stays small whatever the input; `file:line:col` stays exact.
pub fn render(sources: &SourceMap, diagnostics: &[Diagnostic]) -> String {
    let mut out = term::termcolor::NoColor::new(Vec::<u8>::new());
    let config = term::Config::default();
    for diagnostic in diagnostics {
        let (rendered, view) = to_codespan(sources, diagnostic);
        if term::emit(&mut out, &config, &view, &rendered).is_err() {
            // A location outside its file cannot be drawn: fall back to a plain line.
            let plain = format!(
                "{}: {}: {}\n",
                sources.describe(diagnostic.location),
                diagnostic.severity,
                clip_message(&diagnostic.message)
            );
            out.get_mut().extend_from_slice(plain.as_bytes());
        }
    }
    String::from_utf8_lossy(&out.into_inner()).into_owned()
}

/// Renders each diagnostic on one line as MLIR does: `file:line:col: error: message` (long
/// messages clipped as [`render`] clips them).
pub fn render_short(sources: &SourceMap, diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        out.push_str(&format!("{}: {}: {}\n", sources.describe(d.location), d.severity, clip_message(&d.message)));
        for (location, note) in &d.notes {
            out.push_str(&format!("{}: note: {}\n", sources.describe(*location), clip_message(note)));
        }
    }
    out
}

/// `message`, or its first and last parts with how much was left out between them when it is
/// longer than [`MAX_MESSAGE_CHARS`].
fn clip_message(message: &str) -> Cow<'_, str> {
    if message.len() <= MAX_MESSAGE_CHARS {
        return Cow::Borrowed(message);
    }
    let count = message.chars().count();
    if count <= MAX_MESSAGE_CHARS {
        return Cow::Borrowed(message);
    }
    let (head, tail) = (MAX_MESSAGE_CHARS * 2 / 3, MAX_MESSAGE_CHARS / 3);
    let head_end = message.char_indices().nth(head).map_or(message.len(), |(i, _)| i);
    let tail_start = message.char_indices().nth(count - tail).map_or(message.len(), |(i, _)| i);
    Cow::Owned(format!(
        "{}… ({} characters left out) …{}",
        &message[..head_end],
        count - head - tail,
        &message[tail_start..]
    ))
}

fn to_codespan<'s>(sources: &'s SourceMap, diagnostic: &Diagnostic) -> (cs::Diagnostic<usize>, SnippetView<'s>) {
    let severity = match diagnostic.severity {
        Severity::Remark => cs::Severity::Note,
        Severity::Note => cs::Severity::Note,
        Severity::Warning => cs::Severity::Warning,
        Severity::Error => cs::Severity::Error,
    };
    // (file, range in the file, message: none for the primary label)
    let mut spans: Vec<(usize, Range<usize>, Option<String>)> = Vec::new();
    let mut notes = Vec::new();
    match label_range(sources, diagnostic.location) {
        Some((file, range)) => spans.push((file, range, None)),
        None => notes.push("at an unknown location".to_string()),
    }
    for (location, note) in &diagnostic.notes {
        match label_range(sources, *location) {
            Some((file, range)) => spans.push((file, range, Some(clip_message(note).into_owned()))),
            None => notes.push(clip_message(note).into_owned()),
        }
    }
    let view = SnippetView::new(sources, spans.iter().map(|(file, range, _)| (*file, range.clone())));
    let labels = spans
        .into_iter()
        .map(|(file, range, message)| {
            let range = view.shown_range(file, range);
            match message {
                None => cs::Label::primary(file, range),
                Some(message) => cs::Label::secondary(file, range).with_message(message),
            }
        })
        .collect();
    let rendered = cs::Diagnostic::new(severity)
        .with_message(clip_message(&diagnostic.message).into_owned())
        .with_labels(labels)
        .with_notes(notes);
    // codespan has no remark severity: a remark renders as `note[remark]: ...`.
    let rendered = if diagnostic.severity == Severity::Remark { rendered.with_code("remark") } else { rendered };
    (rendered, view)
}

/// The range to underline: the token starting at the location (at least one character).
fn label_range(sources: &SourceMap, location: Location) -> Option<(usize, Range<usize>)> {
    let id = location.source()?;
    let text = sources.file(id).text();
    let start = (location.offset() as usize).min(text.len());
    let rest = &text[start..];
    let token_len = rest
        .char_indices()
        .find(|&(_, c)| c.is_whitespace() || matches!(c, ',' | '(' | ')' | '{' | '}' | '[' | ']' | ':' | '='))
        .map_or(rest.len(), |(i, _)| i);
    let len = if token_len == 0 { rest.chars().next().map_or(0, char::len_utf8) } else { token_len };
    Some((index_of(id), start..start + len))
}

fn index_of(id: crate::location::SourceId) -> usize {
    id.index()
}

/// One source line as a snippet shows it: the bytes `window` of the file, between `…` marks
/// where the line goes on, at `shown` in the view's text.
struct ShownLine {
    /// 0-based line number in the file.
    line: usize,
    /// Where the line is in the view's text (its line ending included).
    shown: Range<usize>,
    /// The bytes of the file shown.
    window: Range<usize>,
    /// Bytes of the `…` before the window (0 when the window starts the line).
    prefix: usize,
}

/// The lines of one file that a snippet shows.
#[derive(Default)]
struct FileView {
    text: String,
    /// Sorted by line.
    lines: Vec<ShownLine>,
}

impl FileView {
    fn line(&self, line: usize) -> Option<&ShownLine> {
        self.lines.binary_search_by_key(&line, |l| l.line).ok().map(|i| &self.lines[i])
    }
}

/// What codespan renders from: for each file, only the lines a diagnostic's labels are on (and
/// a line between two of them, which codespan shows too), each cut to a window when long. Line
/// numbers and columns are those of the file: the view answers them from the [`SourceMap`].
struct SnippetView<'s> {
    sources: &'s SourceMap,
    /// Indexed by file; `None` for a file no label is in.
    files: Vec<Option<FileView>>,
}

/// The first byte offset in `text` at or before `offset` that starts a character, `count`
/// characters back (stopping at `floor`).
fn back_chars(text: &str, offset: usize, count: usize, floor: usize) -> usize {
    text[floor..offset].char_indices().rev().nth(count.saturating_sub(1)).map_or(floor, |(i, _)| floor + i)
}

/// The byte offset `count` characters after `offset` in `text` (stopping at `ceiling`).
fn forward_chars(text: &str, offset: usize, count: usize, ceiling: usize) -> usize {
    text[offset..ceiling].char_indices().nth(count).map_or(ceiling, |(i, _)| offset + i)
}

impl<'s> SnippetView<'s> {
    fn new(sources: &'s SourceMap, spans: impl Iterator<Item = (usize, Range<usize>)>) -> Self {
        let mut starts: Vec<Vec<(usize, usize)>> = Vec::new();
        for (file, range) in spans {
            let Some(source) = sources.files().get(file) else { continue };
            if starts.len() <= file {
                starts.resize_with(file + 1, Vec::new);
            }
            let line = source.line_starts().partition_point(|&s| s as usize <= range.start).saturating_sub(1);
            starts[file].push((line, range.start));
        }
        let files = starts
            .into_iter()
            .enumerate()
            .map(|(file, mut label_starts)| {
                if label_starts.is_empty() {
                    return None;
                }
                label_starts.sort_unstable();
                Some(Self::file_view(&sources.files()[file], &label_starts))
            })
            .collect();
        SnippetView { sources, files }
    }

    /// The view of one file whose labels start at `label_starts` (line, offset), sorted.
    fn file_view(source: &SourceFile, label_starts: &[(usize, usize)]) -> FileView {
        let mut lines: Vec<usize> = label_starts.iter().map(|&(line, _)| line).collect();
        lines.dedup();
        // codespan also shows the one line between two labelled lines.
        let between: Vec<usize> = lines.windows(2).filter(|w| w[1] == w[0] + 2).map(|w| w[0] + 1).collect();
        lines.extend(between);
        lines.sort_unstable();
        let text = &**source.text();
        let line_starts = source.line_starts();
        let mut view = FileView::default();
        for line in lines {
            let start = line_starts[line] as usize;
            let full_end = line_starts.get(line + 1).map_or(text.len(), |&e| e as usize);
            let end = start + text[start..full_end].trim_end_matches(['\n', '\r']).len();
            let shown_start = view.text.len();
            if end - start <= MAX_LINE_BYTES {
                view.text.push_str(&text[start..full_end]);
                view.lines.push(ShownLine {
                    line,
                    shown: shown_start..view.text.len(),
                    window: start..full_end,
                    prefix: 0,
                });
                continue;
            }
            let on_line = label_starts.iter().filter(|&&(l, _)| l == line).map(|&(_, offset)| offset);
            let (first, last) = on_line.fold((end, start), |(lo, hi), offset| (lo.min(offset), hi.max(offset)));
            let (first, last) = if first > last { (start, start) } else { (first, last) };
            let window_start = back_chars(text, first.min(end), CONTEXT_BEFORE, start);
            let window_end = forward_chars(text, last.clamp(window_start, end), CONTEXT_AFTER, end);
            let prefix = if window_start > start { "…" } else { "" };
            view.text.push_str(prefix);
            view.text.push_str(&text[window_start..window_end]);
            if window_end < end {
                view.text.push('…');
            }
            view.text.push('\n');
            view.lines.push(ShownLine {
                line,
                shown: shown_start..view.text.len(),
                window: window_start..window_end,
                prefix: prefix.len(),
            });
        }
        view
    }

    /// Where the file's bytes `range` (on one line, shown by the view) are in the view's text:
    /// cut to the line's window.
    fn shown_range(&self, file: usize, range: Range<usize>) -> Range<usize> {
        let Some(Some(view)) = self.files.get(file) else { return range };
        let source = &self.sources.files()[file];
        let line = source.line_starts().partition_point(|&s| s as usize <= range.start).saturating_sub(1);
        let Some(shown) = view.line(line) else { return range };
        let to_view = |offset: usize| {
            shown.shown.start + shown.prefix + offset.clamp(shown.window.start, shown.window.end) - shown.window.start
        };
        to_view(range.start)..to_view(range.end)
    }

    fn view(&self, id: usize) -> Result<&FileView, FilesError> {
        self.files.get(id).and_then(Option::as_ref).ok_or(FilesError::FileMissing)
    }
}

impl<'a> Files<'a> for SnippetView<'a> {
    type FileId = usize;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: usize) -> Result<&'a str, FilesError> {
        self.sources.files().get(id).map(|f| f.name()).ok_or(FilesError::FileMissing)
    }

    fn source(&'a self, id: usize) -> Result<&'a str, FilesError> {
        Ok(&self.view(id)?.text)
    }

    fn line_index(&'a self, id: usize, byte_index: usize) -> Result<usize, FilesError> {
        let view = self.view(id)?;
        let at = view.lines.partition_point(|l| l.shown.start <= byte_index).saturating_sub(1);
        view.lines.get(at).map(|l| l.line).ok_or(FilesError::FileMissing)
    }

    fn line_range(&'a self, id: usize, line_index: usize) -> Result<Range<usize>, FilesError> {
        let view = self.view(id)?;
        let max = view.lines.last().map_or(0, |l| l.line);
        view.line(line_index).map(|l| l.shown.clone()).ok_or(FilesError::LineTooLarge { given: line_index, max })
    }

    /// The column in the file, not in the view's (possibly cut) line.
    fn column_number(&'a self, id: usize, line_index: usize, byte_index: usize) -> Result<usize, FilesError> {
        let shown = self.view(id)?.line(line_index).ok_or(FilesError::LineTooLarge { given: line_index, max: 0 })?;
        let offset = shown.window.start + byte_index.saturating_sub(shown.shown.start + shown.prefix);
        let offset = offset.min(shown.window.end);
        Ok(self.sources.files()[id].line_col(offset as u32).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_one(text: &str, offset: usize, message: &str) -> String {
        let mut sources = SourceMap::default();
        let id = sources.add("f", text);
        render(&sources, &[Diagnostic::error(Location::new(id, offset as u32), message)])
    }

    #[test]
    fn a_short_line_is_shown_whole() {
        let rendered = render_one("first\n  %x = bad op\n", 13, "oops");
        assert_eq!(rendered, "error: oops\n  ┌─ f:2:8\n  │\n2 │   %x = bad op\n  │        ^^^\n\n", "{rendered}");
    }

    #[test]
    fn a_long_line_is_shown_around_the_error() {
        let text = format!("first\n{} bad {}\nlast\n", "x".repeat(100_000), "z".repeat(100_000));
        let offset = text.find("bad").unwrap();
        let rendered = render_one(&text, offset, "oops");
        assert!(rendered.contains("┌─ f:2:100002\n"), "{rendered}");
        assert!(rendered.len() < 1000, "{} bytes:\n{rendered}", rendered.len());
        let source_line = rendered.lines().find(|l| l.starts_with("2 │")).unwrap();
        assert!(source_line.starts_with("2 │ …xxx") && source_line.contains(" bad ") && source_line.ends_with("zzz…"));
        // The underline is under `bad`, exactly.
        let underline = rendered.lines().find(|l| l.contains('^')).unwrap();
        let column = |line: &str, pattern: &str| line[..line.find(pattern).unwrap()].chars().count();
        assert_eq!(column(underline, "^"), column(source_line, "bad"), "{rendered}");
        assert_eq!(underline.matches('^').count(), 3, "{rendered}");
    }

    #[test]
    fn a_long_token_is_underlined_in_part() {
        let text = format!("%a = {} : i32\n", "1".repeat(1_000_000));
        let rendered = render_one(&text, 5, "integer literal is too large");
        assert!(rendered.contains("┌─ f:1:6\n"), "{rendered}");
        assert!(rendered.len() < 1000, "{} bytes:\n{rendered}", rendered.len());
        let carets = rendered.matches('^').count();
        assert!((10..200).contains(&carets), "{carets} carets:\n{rendered}");
        // Shown from the line's start: no ellipsis before, one after.
        assert!(rendered.contains("1 │ %a = 111"), "{rendered}");
        assert!(rendered.contains("1…\n"), "{rendered}");
    }

    #[test]
    fn a_long_line_between_two_labels_is_clipped_too() {
        // Labels on lines 1 and 3: codespan shows line 2 as well.
        let text = format!("aa bb\n{}\ncc dd\n", "w".repeat(100_000));
        let mut sources = SourceMap::default();
        let id = sources.add("f", text.as_str());
        let at = |offset: usize| Location::new(id, offset as u32);
        let third = text.find("cc").unwrap();
        let diagnostic = Diagnostic::error(at(3), "first").with_note(at(third + 3), "second");
        let rendered = render(&sources, &[diagnostic]);
        assert!(rendered.contains("┌─ f:1:4\n"), "{rendered}");
        assert!(rendered.contains("2 │ wwww") && rendered.contains("w…\n"), "{rendered}");
        assert!(rendered.contains("3 │ cc dd\n"), "{rendered}");
        assert!(rendered.len() < 1000, "{} bytes:\n{rendered}", rendered.len());
    }

    #[test]
    fn multibyte_characters_are_not_split() {
        let text = format!("{}é{}", "é".repeat(50_000), "ü".repeat(50_000));
        let offset = 50_000 * 2;
        let rendered = render_one(&text, offset, "here");
        assert!(rendered.contains("┌─ f:1:50001\n"), "{rendered}");
        assert!(rendered.len() < 2000, "{} bytes:\n{rendered}", rendered.len());
    }

    #[test]
    fn a_long_message_is_clipped() {
        let message = format!("custom op '{}' is unknown", "x".repeat(1_000_000));
        let rendered = render_one("x\n", 0, &message);
        assert!(rendered.len() < 2000, "{} bytes", rendered.len());
        assert!(rendered.starts_with("error: custom op 'xxx"), "{rendered}");
        assert!(rendered.contains("xxx' is unknown\n"), "{rendered}");
        assert!(rendered.contains("characters left out"), "{rendered}");
        let mut sources = SourceMap::default();
        let id = sources.add("f", "x\n");
        let short = render_short(&sources, &[Diagnostic::error(Location::new(id, 0), message)]);
        assert!(short.len() < 2000 && short.starts_with("f:1:1: error: custom op 'xxx"), "{short}");
    }
}
