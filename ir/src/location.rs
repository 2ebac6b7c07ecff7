//! Source files and locations. A [`Location`] is a byte offset into a file of the [`SourceMap`];
//! line and column are computed only when a diagnostic is rendered.

use std::sync::{Arc, OnceLock};

/// Where an operation or a diagnostic comes from: a byte offset in a source file, or unknown.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    source: u32,
    offset: u32,
}

impl Location {
    /// A location with no source (IR built by a program).
    pub const UNKNOWN: Location = Location { source: u32::MAX, offset: 0 };

    /// The location `offset` bytes into `source`.
    pub fn new(source: SourceId, offset: u32) -> Self {
        Location { source: source.0, offset }
    }

    /// The file, unless the location is unknown.
    pub fn source(self) -> Option<SourceId> {
        (self.source != u32::MAX).then_some(SourceId(self.source))
    }

    /// Byte offset into the file.
    pub fn offset(self) -> u32 {
        self.offset
    }
}

/// A file registered in a [`SourceMap`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceId(u32);

impl SourceId {
    /// Position of the file in its map.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A source file: its name, its text and (computed on first use) where its lines start.
#[derive(Debug)]
pub struct SourceFile {
    name: String,
    text: Arc<str>,
    line_starts: OnceLock<Vec<u32>>,
}

impl SourceFile {
    /// The name diagnostics show.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The text.
    pub fn text(&self) -> &Arc<str> {
        &self.text
    }

    /// Byte offsets where lines start. A line ends with LF, CRLF (one line ending) or a CR alone
    /// (old Mac files), as the lexer ends a comment; the line ending belongs to its line.
    pub fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            let bytes = self.text.as_bytes();
            let ends_line = |i: usize| match bytes[i] {
                b'\n' => true,
                b'\r' => bytes.get(i + 1) != Some(&b'\n'),
                _ => false,
            };
            std::iter::once(0).chain((0..bytes.len()).filter(|&i| ends_line(i)).map(|i| i as u32 + 1)).collect()
        })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let starts = self.line_starts();
        let line = starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let start = starts[line] as usize;
        let end = (offset as usize).min(self.text.len());
        let column = self.text.get(start..end).map_or(end - start, |s| s.chars().count());
        (line + 1, column + 1)
    }
}

/// The lines of `bytes`, each with its line ending: LF, CRLF (one ending) or a CR alone, the
/// same rule as [`SourceFile::line_starts`] and the lexer. Tools that work on lines of a source
/// (splitting input, reading directives) use it so that they agree with the diagnostics.
pub fn lines_inclusive(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(i) if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') => i + 2,
            Some(i) => i + 1,
            None => rest.len(),
        };
        let (line, tail) = rest.split_at(end);
        rest = tail;
        Some(line)
    })
}

/// A line without its line ending (see [`lines_inclusive`]).
pub fn trim_line_ending(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The files that locations point into.
#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// Registers a file and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<Arc<str>>) -> SourceId {
        let id = SourceId(self.files.len() as u32);
        self.files.push(SourceFile { name: name.into(), text: text.into(), line_starts: OnceLock::new() });
        id
    }

    /// A registered file.
    pub fn file(&self, id: SourceId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    /// `file:line:col`, or `unknown` for an unknown location.
    pub fn describe(&self, location: Location) -> String {
        match location.source() {
            Some(id) => {
                let file = self.file(id);
                let (line, col) = file.line_col(location.offset());
                format!("{}:{}:{}", file.name(), line, col)
            }
            None => "unknown".to_string(),
        }
    }

    /// File name, line and column of a known location.
    pub fn file_line_col(&self, location: Location) -> Option<(&str, usize, usize)> {
        let file = self.file(location.source()?);
        let (line, col) = file.line_col(location.offset());
        Some((file.name(), line, col))
    }

    pub(crate) fn files(&self) -> &[SourceFile] {
        &self.files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> SourceFile {
        SourceFile { name: "f".into(), text: text.into(), line_starts: OnceLock::new() }
    }

    #[test]
    fn lines_end_at_every_kind_of_line_ending() {
        let lines: Vec<&[u8]> = super::lines_inclusive(b"a\nb\r\nc\rd").collect();
        assert_eq!(lines, [&b"a\n"[..], b"b\r\n", b"c\r", b"d"]);
        let trimmed: Vec<&[u8]> = lines.iter().map(|l| super::trim_line_ending(l)).collect();
        assert_eq!(trimmed, [&b"a"[..], b"b", b"c", b"d"]);
        assert_eq!(super::lines_inclusive(b"").count(), 0);
    }

    #[test]
    fn every_line_ending_counts_once() {
        // Line 3 begins with `c` in each file: LF, CRLF, CR alone, and the three mixed.
        for text in ["a\nb\ncd", "a\r\nb\r\ncd", "a\rb\rcd", "a\r\nb\rcd", "a\rb\ncd", "a\nb\r\ncd"] {
            let f = file(text);
            let c = text.find('c').unwrap() as u32;
            assert_eq!(f.line_col(c), (3, 1), "{text:?}");
            assert_eq!(f.line_col(c + 1), (3, 2), "{text:?}");
            assert_eq!(f.line_col(0), (1, 1), "{text:?}");
            assert_eq!(f.line_starts().len(), 3, "{text:?}");
        }
    }

    #[test]
    fn a_line_ending_belongs_to_its_line() {
        // The CR and the LF of a CRLF are both on line 1, so a diagnostic at either points there.
        let f = file("ab\r\ncd");
        assert_eq!(f.line_col(2), (1, 3));
        assert_eq!(f.line_col(3), (1, 4));
        assert_eq!(f.line_col(4), (2, 1));
        // A CR at the end of the text ends the last line; nothing follows it.
        let f = file("ab\r");
        assert_eq!(f.line_col(2), (1, 3));
        assert_eq!(f.line_col(3), (2, 1));
    }
}
