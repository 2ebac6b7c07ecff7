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

    /// Byte offsets where lines start.
    pub fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            std::iter::once(0)
                .chain(self.text.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(i, _)| i as u32 + 1))
                .collect()
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
