//! Diagnostics: errors, warnings, notes and remarks attached to source locations, rendered with the
//! source line and `file:line:col` by `codespan-reporting`.

use crate::location::{Location, SourceMap};
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::{Error as FilesError, Files};
use codespan_reporting::term;
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

/// Renders diagnostics with source snippets. Each begins `severity: message` and shows
/// `file:line:col` above the source line it points at.
pub fn render(sources: &SourceMap, diagnostics: &[Diagnostic]) -> String {
    let mut out = term::termcolor::NoColor::new(Vec::<u8>::new());
    let config = term::Config::default();
    let files = RenderFiles(sources);
    for diagnostic in diagnostics {
        let rendered = to_codespan(sources, diagnostic);
        if term::emit(&mut out, &config, &files, &rendered).is_err() {
            // A location outside its file cannot be drawn: fall back to a plain line.
            let plain =
                format!("{}: {}: {}\n", sources.describe(diagnostic.location), diagnostic.severity, diagnostic.message);
            out.get_mut().extend_from_slice(plain.as_bytes());
        }
    }
    String::from_utf8_lossy(&out.into_inner()).into_owned()
}

/// Renders each diagnostic on one line as MLIR does: `file:line:col: error: message`.
pub fn render_short(sources: &SourceMap, diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        out.push_str(&format!("{}: {}: {}\n", sources.describe(d.location), d.severity, d.message));
        for (location, note) in &d.notes {
            out.push_str(&format!("{}: note: {}\n", sources.describe(*location), note));
        }
    }
    out
}

fn to_codespan(sources: &SourceMap, diagnostic: &Diagnostic) -> cs::Diagnostic<usize> {
    let severity = match diagnostic.severity {
        Severity::Remark => cs::Severity::Note,
        Severity::Note => cs::Severity::Note,
        Severity::Warning => cs::Severity::Warning,
        Severity::Error => cs::Severity::Error,
    };
    let mut labels = Vec::new();
    let mut notes = Vec::new();
    match label_range(sources, diagnostic.location) {
        Some((file, range)) => labels.push(cs::Label::primary(file, range)),
        None => notes.push("at an unknown location".to_string()),
    }
    for (location, note) in &diagnostic.notes {
        match label_range(sources, *location) {
            Some((file, range)) => labels.push(cs::Label::secondary(file, range).with_message(note.clone())),
            None => notes.push(note.clone()),
        }
    }
    let rendered =
        cs::Diagnostic::new(severity).with_message(diagnostic.message.clone()).with_labels(labels).with_notes(notes);
    // codespan has no remark severity: a remark renders as `note[remark]: ...`.
    if diagnostic.severity == Severity::Remark {
        rendered.with_code("remark")
    } else {
        rendered
    }
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

struct RenderFiles<'a>(&'a SourceMap);

impl<'a> Files<'a> for RenderFiles<'a> {
    type FileId = usize;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: usize) -> Result<&'a str, FilesError> {
        self.0.files().get(id).map(|f| f.name()).ok_or(FilesError::FileMissing)
    }

    fn source(&'a self, id: usize) -> Result<&'a str, FilesError> {
        self.0.files().get(id).map(|f| &**f.text()).ok_or(FilesError::FileMissing)
    }

    fn line_index(&'a self, id: usize, byte_index: usize) -> Result<usize, FilesError> {
        let file = self.0.files().get(id).ok_or(FilesError::FileMissing)?;
        Ok(file.line_starts().partition_point(|&s| s as usize <= byte_index).saturating_sub(1))
    }

    fn line_range(&'a self, id: usize, line_index: usize) -> Result<Range<usize>, FilesError> {
        let file = self.0.files().get(id).ok_or(FilesError::FileMissing)?;
        let starts = file.line_starts();
        let start =
            *starts.get(line_index).ok_or(FilesError::LineTooLarge { given: line_index, max: starts.len() - 1 })?;
        let end = starts.get(line_index + 1).map_or(file.text().len(), |&e| e as usize);
        Ok(start as usize..end)
    }
}
