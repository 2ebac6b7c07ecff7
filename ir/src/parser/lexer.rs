//! The lexer: MLIR's tokens, produced on demand from a byte position so that the parser can re-lex
//! from inside a token (shapes such as `4x?xf32` lex as `4`, `x?xf32`, and the parser resumes
//! after the `x`, as MLIR's lexer does).

/// The kinds of token.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// End of input.
    Eof,
    /// A character or sequence that is no token; the lexer's message says why.
    Error(LexError),
    /// `foo`, `arith.addi`, `i32`, `x4xf32`.
    BareIdent,
    /// `%name`, `%0`, `%0#1` (value use with a result number).
    PercentIdent,
    /// `^bb0`.
    CaretIdent,
    /// `@name` or `@"quoted name"`.
    AtIdent,
    /// `#name` (attribute alias or dialect attribute).
    HashIdent,
    /// `!name` (type alias or dialect type).
    BangIdent,
    /// `42`, `0x2A`.
    Integer,
    /// `1.5`, `1.0e-3`.
    Float,
    /// `"text"` with escapes.
    String,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LSquare,
    /// `]`
    RSquare,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `<`
    Less,
    /// `>`
    Greater,
    /// `,`
    Comma,
    /// `:`
    Colon,
    /// `::`
    ColonColon,
    /// `=`
    Equal,
    /// `->`
    Arrow,
    /// `?`
    Question,
    /// `*`
    Star,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `...`
    Ellipsis,
}

/// Why some text is not a token.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LexError {
    /// A character that starts no token.
    UnexpectedCharacter,
    /// A string without its closing quote.
    UnterminatedString,
    /// A `\` in a string followed by something that is no escape.
    InvalidEscape,
    /// `%`, `^`, `@`, `#` or `!` followed by no name.
    EmptyIdentifier,
}

impl LexError {
    /// The message a diagnostic shows.
    pub fn message(self) -> &'static str {
        match self {
            LexError::UnexpectedCharacter => "unexpected character",
            LexError::UnterminatedString => "unterminated string literal",
            LexError::InvalidEscape => "invalid escape sequence in string literal",
            LexError::EmptyIdentifier => "expected an identifier after the sigil",
        }
    }
}

/// A token: its kind and its byte range in the source.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

/// Produces tokens from a byte position.
pub struct Lexer<'a> {
    text: &'a [u8],
    position: usize,
}

/// Whether `b` ends a line: LF, or CR (alone, as in old Mac files, or before an LF). The same
/// rule as [`crate::location::SourceFile::line_starts`], so diagnostics count lines as the lexer does.
fn is_line_end(b: u8) -> bool {
    matches!(b, b'\n' | b'\r')
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')
}

fn is_suffix_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-')
}

/// Whether `%name` lexes as one value name without a result number (what an argument's name
/// must be for the printer to write it).
pub fn is_value_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_suffix_continue)
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Lexer { text: text.as_bytes(), position: 0 }
    }

    /// Continues lexing from `position`.
    pub fn reset(&mut self, position: usize) {
        self.position = position;
    }

    fn peek_byte(&self, ahead: usize) -> Option<u8> {
        self.text.get(self.position + ahead).copied()
    }

    fn skip_trivia(&mut self) {
        loop {
            match self.peek_byte(0) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.position += 1,
                Some(b'/') if self.peek_byte(1) == Some(b'/') => {
                    // A comment runs to the line's end: LF, CRLF, or a CR alone (old Mac files),
                    // which would otherwise make the comment swallow the rest of the file.
                    while self.peek_byte(0).is_some_and(|b| !is_line_end(b)) {
                        self.position += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn token(&self, kind: TokenKind, start: usize) -> Token {
        Token { kind, start: start as u32, end: self.position as u32 }
    }

    /// The next token.
    pub fn next_token(&mut self) -> Token {
        self.skip_trivia();
        let start = self.position;
        let Some(b) = self.peek_byte(0) else {
            return self.token(TokenKind::Eof, start);
        };
        self.position += 1;
        let kind = match b {
            b'(' => TokenKind::LParen,
            b')' => TokenKind::RParen,
            b'[' => TokenKind::LSquare,
            b']' => TokenKind::RSquare,
            b'{' => TokenKind::LBrace,
            b'}' => TokenKind::RBrace,
            b'<' => TokenKind::Less,
            b'>' => TokenKind::Greater,
            b',' => TokenKind::Comma,
            b'=' => TokenKind::Equal,
            b'?' => TokenKind::Question,
            b'*' => TokenKind::Star,
            b'+' => TokenKind::Plus,
            b':' => {
                if self.peek_byte(0) == Some(b':') {
                    self.position += 1;
                    TokenKind::ColonColon
                } else {
                    TokenKind::Colon
                }
            }
            b'-' => {
                if self.peek_byte(0) == Some(b'>') {
                    self.position += 1;
                    TokenKind::Arrow
                } else {
                    TokenKind::Minus
                }
            }
            b'.' if self.peek_byte(0) == Some(b'.') && self.peek_byte(1) == Some(b'.') => {
                self.position += 2;
                TokenKind::Ellipsis
            }
            b'"' => self.lex_string_body(),
            b'%' => self.lex_suffix_id(TokenKind::PercentIdent, true),
            b'^' => self.lex_suffix_id(TokenKind::CaretIdent, false),
            b'#' => self.lex_suffix_id(TokenKind::HashIdent, false),
            b'!' => self.lex_suffix_id(TokenKind::BangIdent, false),
            b'@' => {
                if self.peek_byte(0) == Some(b'"') {
                    self.position += 1;
                    match self.lex_string_body() {
                        TokenKind::String => TokenKind::AtIdent,
                        error => error,
                    }
                } else {
                    self.lex_suffix_id(TokenKind::AtIdent, false)
                }
            }
            b'0'..=b'9' => self.lex_number(b),
            b if is_ident_start(b) => {
                while self.peek_byte(0).is_some_and(is_ident_continue) {
                    self.position += 1;
                }
                TokenKind::BareIdent
            }
            _ => {
                // Step over a whole UTF-8 character so the next token starts on a boundary.
                while self.peek_byte(0).is_some_and(|b| (b & 0xC0) == 0x80) {
                    self.position += 1;
                }
                TokenKind::Error(LexError::UnexpectedCharacter)
            }
        };
        self.token(kind, start)
    }

    fn lex_suffix_id(&mut self, kind: TokenKind, allow_result_number: bool) -> TokenKind {
        let begin = self.position;
        while self.peek_byte(0).is_some_and(is_suffix_continue) {
            self.position += 1;
        }
        if self.position == begin {
            return TokenKind::Error(LexError::EmptyIdentifier);
        }
        if allow_result_number
            && self.peek_byte(0) == Some(b'#')
            && self.peek_byte(1).is_some_and(|b| b.is_ascii_digit())
        {
            self.position += 1;
            while self.peek_byte(0).is_some_and(|b| b.is_ascii_digit()) {
                self.position += 1;
            }
        }
        kind
    }

    fn lex_number(&mut self, first: u8) -> TokenKind {
        if first == b'0' && self.peek_byte(0) == Some(b'x') && self.peek_byte(1).is_some_and(|b| b.is_ascii_hexdigit())
        {
            self.position += 1;
            while self.peek_byte(0).is_some_and(|b| b.is_ascii_hexdigit()) {
                self.position += 1;
            }
            return TokenKind::Integer;
        }
        while self.peek_byte(0).is_some_and(|b| b.is_ascii_digit()) {
            self.position += 1;
        }
        if self.peek_byte(0) != Some(b'.') || self.peek_byte(1) == Some(b'.') {
            return TokenKind::Integer;
        }
        self.position += 1;
        while self.peek_byte(0).is_some_and(|b| b.is_ascii_digit()) {
            self.position += 1;
        }
        if matches!(self.peek_byte(0), Some(b'e' | b'E')) {
            let digits_at = if matches!(self.peek_byte(1), Some(b'+' | b'-')) { 2 } else { 1 };
            if self.peek_byte(digits_at).is_some_and(|b| b.is_ascii_digit()) {
                self.position += digits_at;
                while self.peek_byte(0).is_some_and(|b| b.is_ascii_digit()) {
                    self.position += 1;
                }
            }
        }
        TokenKind::Float
    }

    fn lex_string_body(&mut self) -> TokenKind {
        loop {
            match self.peek_byte(0) {
                None => return TokenKind::Error(LexError::UnterminatedString),
                Some(b) if is_line_end(b) => return TokenKind::Error(LexError::UnterminatedString),
                Some(b'"') => {
                    self.position += 1;
                    return TokenKind::String;
                }
                Some(b'\\') => match self.peek_byte(1) {
                    Some(b'"' | b'\\' | b'n' | b't') => self.position += 2,
                    Some(a) if a.is_ascii_hexdigit() && self.peek_byte(2).is_some_and(|b| b.is_ascii_hexdigit()) => {
                        self.position += 3
                    }
                    _ => {
                        self.position += 1;
                        return TokenKind::Error(LexError::InvalidEscape);
                    }
                },
                Some(_) => self.position += 1,
            }
        }
    }
}

/// The contents of a string token (without quotes), escapes decoded. Bytes that do not form UTF-8
/// are replaced.
pub fn unescape(token_text: &str) -> String {
    let inner = &token_text.as_bytes()[1..token_text.len().saturating_sub(1).max(1)];
    let mut bytes = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        if inner[i] == b'\\' && i + 1 < inner.len() {
            match inner[i + 1] {
                b'n' => bytes.push(b'\n'),
                b't' => bytes.push(b'\t'),
                b'"' => bytes.push(b'"'),
                b'\\' => bytes.push(b'\\'),
                _ if i + 2 < inner.len() => {
                    let hex = std::str::from_utf8(&inner[i + 1..i + 3]).unwrap_or("3F");
                    bytes.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                    i += 1;
                }
                other => bytes.push(other),
            }
            i += 2;
        } else {
            bytes.push(inner[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Writes `text` as a string literal, escaping what MLIR escapes.
pub fn escape_into(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<TokenKind> {
        let mut lexer = Lexer::new(text);
        let mut out = Vec::new();
        loop {
            let token = lexer.next_token();
            if token.kind == TokenKind::Eof {
                return out;
            }
            out.push(token.kind);
        }
    }

    #[test]
    fn lexes_an_operation() {
        use TokenKind::*;
        assert_eq!(
            kinds("%0:2 = \"x.y\"(%a#1) {k = 1.5e-3} : (i32) -> () // comment"),
            vec![
                PercentIdent,
                Colon,
                Integer,
                Equal,
                String,
                LParen,
                PercentIdent,
                RParen,
                LBrace,
                BareIdent,
                Equal,
                Float,
                RBrace,
                Colon,
                LParen,
                BareIdent,
                RParen,
                Arrow,
                LParen,
                RParen
            ]
        );
    }

    #[test]
    fn reports_bad_strings_and_characters() {
        assert_eq!(kinds("\"abc"), vec![TokenKind::Error(LexError::UnterminatedString)]);
        assert_eq!(kinds("\"a\\qb\"")[0], TokenKind::Error(LexError::InvalidEscape));
        assert_eq!(kinds("§"), vec![TokenKind::Error(LexError::UnexpectedCharacter)]);
        assert_eq!(kinds("%"), vec![TokenKind::Error(LexError::EmptyIdentifier)]);
    }

    #[test]
    fn every_line_ending_ends_a_comment() {
        use TokenKind::*;
        // CR alone (classic Mac OS), CRLF (Windows) and LF each end a `//` comment.
        for ending in ["\r", "\r\n", "\n"] {
            let text = format!("// comment{ending}%a{ending}// another{ending}%b");
            assert_eq!(kinds(&text), vec![PercentIdent, PercentIdent], "line ending {ending:?}");
        }
    }

    #[test]
    fn a_line_ending_ends_a_string_unterminated() {
        assert_eq!(kinds("\"abc\rdef\"")[0], TokenKind::Error(LexError::UnterminatedString));
        assert_eq!(kinds("\"abc\ndef\"")[0], TokenKind::Error(LexError::UnterminatedString));
    }

    #[test]
    fn escapes_round_trip() {
        let mut out = String::new();
        escape_into(&mut out, "a\"b\\c\nd\u{1}");
        assert_eq!(unescape(&out), "a\"b\\c\nd\u{1}");
    }
}
