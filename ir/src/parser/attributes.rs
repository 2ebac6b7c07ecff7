//! Parsing types and attributes in MLIR's builtin syntax.

use super::{parse_integer_literal, unescape, ParseErrorKind, ParseResult, Parser, TokenKind};
use crate::attributes::AttributeKind;
use crate::types::{FloatKind, Signedness, TypeKind, DYNAMIC};
use crate::{Attribute, Ident, Type};

impl<'a> Parser<'a> {
    /// A type.
    pub(crate) fn parse_type(&mut self) -> ParseResult<Type> {
        self.nested(|parser| parser.parse_type_unguarded())
    }

    fn parse_type_unguarded(&mut self) -> ParseResult<Type> {
        match self.token.kind {
            TokenKind::LParen => self.parse_function_type(),
            TokenKind::BangIdent => {
                let text = self.token_text()[1..].to_string();
                self.advance();
                let body = self.parse_opaque_body()?;
                Ok(self.ctx.intern_type(TypeKind::Opaque(format!("{text}{body}").into())))
            }
            TokenKind::BareIdent => {
                let text = self.token_text();
                if let Some(ty) = self.scalar_type_keyword(text)? {
                    self.advance();
                    return Ok(ty);
                }
                match text {
                    "memref" => {
                        self.advance();
                        self.parse_memref_body()
                    }
                    _ => Err(self.expected("a type")),
                }
            }
            _ => Err(self.expected("a type")),
        }
    }

    /// `i32`, `f32`, `index`, ... or `None` when `text` is no scalar type keyword.
    fn scalar_type_keyword(&mut self, text: &str) -> ParseResult<Option<Type>> {
        let kind = match text {
            "index" => TypeKind::Index,
            "none" => TypeKind::None,
            "f16" => TypeKind::Float(FloatKind::F16),
            "bf16" => TypeKind::Float(FloatKind::BF16),
            "f32" => TypeKind::Float(FloatKind::F32),
            "f64" => TypeKind::Float(FloatKind::F64),
            _ => {
                let (signedness, digits) = if let Some(d) = text.strip_prefix("si") {
                    (Signedness::Signed, d)
                } else if let Some(d) = text.strip_prefix("ui") {
                    (Signedness::Unsigned, d)
                } else if let Some(d) = text.strip_prefix('i') {
                    (Signedness::Signless, d)
                } else {
                    return Ok(None);
                };
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Ok(None);
                }
                let width: u32 =
                    digits.parse().ok().filter(|&w| (1..=(1 << 24)).contains(&w)).ok_or_else(|| {
                        self.error(ParseErrorKind::Message(format!("invalid integer width in '{text}'")))
                    })?;
                TypeKind::Integer { width, signedness }
            }
        };
        Ok(Some(self.ctx.intern_type(kind)))
    }

    fn parse_function_type(&mut self) -> ParseResult<Type> {
        self.expect(TokenKind::LParen, "'('")?;
        let inputs = self.parse_type_list_until(TokenKind::RParen)?;
        self.expect(TokenKind::Arrow, "'->' in a function type")?;
        let results = if self.is(TokenKind::LParen) {
            self.advance();
            self.parse_type_list_until(TokenKind::RParen)?
        } else {
            vec![self.parse_type()?]
        };
        Ok(self.ctx.function_type(&inputs, &results))
    }

    /// Comma-separated types up to and including `close`.
    pub(crate) fn parse_type_list_until(&mut self, close: TokenKind) -> ParseResult<Vec<Type>> {
        let mut types = Vec::new();
        if self.consume_if(close) {
            return Ok(types);
        }
        loop {
            types.push(self.parse_type()?);
            if !self.consume_if(TokenKind::Comma) {
                break;
            }
        }
        if !self.consume_if(close) {
            return Err(self.expected("',' or the end of the type list"));
        }
        Ok(types)
    }

    /// `<4x?xf32>` after `memref`.
    fn parse_memref_body(&mut self) -> ParseResult<Type> {
        self.expect(TokenKind::Less, "'<' after 'memref'")?;
        let mut shape = Vec::new();
        loop {
            let dimension = match self.token.kind {
                TokenKind::Question => DYNAMIC,
                TokenKind::Integer => {
                    let text = self.token_text();
                    if text.starts_with("0x") {
                        // `0xf32` is a zero dimension followed by `xf32`.
                        shape.push(0);
                        self.relex_from(self.token.start as usize + 1);
                        self.expect_dimension_separator()?;
                        continue;
                    }
                    parse_integer_literal(text)
                        .and_then(|v| i64::try_from(v).ok())
                        .ok_or_else(|| self.error(ParseErrorKind::Message("dimension is too large".into())))?
                }
                _ => break,
            };
            shape.push(dimension);
            self.advance();
            self.expect_dimension_separator()?;
        }
        let element = self.parse_type()?;
        if !matches!(self.ctx.type_kind(element), TypeKind::Integer { .. } | TypeKind::Float(_) | TypeKind::Index) {
            return Err(self.error(ParseErrorKind::Message("memref elements must be integers, floats or index".into())));
        }
        if self.is(TokenKind::Comma) {
            return Err(
                self.error(ParseErrorKind::Message("memref layouts and memory spaces are not supported".into()))
            );
        }
        self.expect(TokenKind::Greater, "'>' to end the memref type")?;
        Ok(self.ctx.memref_type(&shape, element))
    }

    /// After a dimension: an identifier starting with `x`; lexing resumes after the `x`.
    fn expect_dimension_separator(&mut self) -> ParseResult<()> {
        if self.is(TokenKind::BareIdent) && self.token_text().starts_with('x') {
            self.relex_from(self.token.start as usize + 1);
            Ok(())
        } else {
            Err(self.expected("'x' in a dimension list"))
        }
    }

    /// `<...>` after a dialect type or attribute name, kept as text (balanced brackets).
    fn parse_opaque_body(&mut self) -> ParseResult<String> {
        if !self.is(TokenKind::Less) {
            return Ok(String::new());
        }
        let start = self.token.start as usize;
        let open = self.location();
        let mut depth = 0usize;
        loop {
            match self.token.kind {
                TokenKind::Less => depth += 1,
                TokenKind::Greater => {
                    depth -= 1;
                    if depth == 0 {
                        let end = self.token.end as usize;
                        self.advance();
                        return Ok(self.text[start..end].to_string());
                    }
                }
                TokenKind::Eof => return Err(self.error_at(open, ParseErrorKind::Message("unbalanced '<'".into()))),
                TokenKind::Error(_) => return Err(self.error(ParseErrorKind::Message(String::new()))),
                _ => {}
            }
            self.advance();
        }
    }

    /// An attribute.
    pub(crate) fn parse_attribute(&mut self) -> ParseResult<Attribute> {
        self.nested(|parser| parser.parse_attribute_unguarded())
    }

    fn parse_attribute_unguarded(&mut self) -> ParseResult<Attribute> {
        match self.token.kind {
            TokenKind::Integer | TokenKind::Float | TokenKind::Minus => self.parse_number_attribute(),
            TokenKind::String => {
                let text = unescape(self.token_text());
                self.advance();
                Ok(self.ctx.string_attr(&text))
            }
            TokenKind::LSquare => {
                self.advance();
                let mut elements = Vec::new();
                if !self.consume_if(TokenKind::RSquare) {
                    loop {
                        elements.push(self.parse_attribute()?);
                        if !self.consume_if(TokenKind::Comma) {
                            break;
                        }
                    }
                    self.expect(TokenKind::RSquare, "',' or ']' in an array attribute")?;
                }
                Ok(self.ctx.array_attr(&elements))
            }
            TokenKind::LBrace => {
                let mut entries = Vec::new();
                self.parse_attribute_dict(&mut entries)?;
                Ok(self.dictionary_attr(entries))
            }
            TokenKind::AtIdent => {
                let mut path = vec![self.parse_symbol_ident()?];
                while self.consume_if(TokenKind::ColonColon) {
                    if !self.is(TokenKind::AtIdent) {
                        return Err(self.expected("a nested symbol reference"));
                    }
                    path.push(self.parse_symbol_ident()?);
                }
                Ok(self.ctx.intern_attribute(AttributeKind::SymbolRef(path.into())))
            }
            TokenKind::HashIdent => {
                let text = self.token_text()[1..].to_string();
                self.advance();
                let body = self.parse_opaque_body()?;
                Ok(self.ctx.intern_attribute(AttributeKind::Opaque(format!("{text}{body}").into())))
            }
            TokenKind::BareIdent => match self.token_text() {
                "unit" => {
                    self.advance();
                    Ok(self.ctx.unit_attr())
                }
                "true" | "false" => {
                    let value = i64::from(self.token_text() == "true");
                    self.advance();
                    let i1 = self.ctx.integer_type(1);
                    Ok(self.ctx.integer_attr(value, i1))
                }
                "array" => self.parse_dense_array(),
                _ => {
                    let ty = self.parse_type()?;
                    Ok(self.ctx.type_attr(ty))
                }
            },
            _ => {
                let ty = self.parse_type().map_err(|_| self.expected("an attribute"))?;
                Ok(self.ctx.type_attr(ty))
            }
        }
    }

    /// `@name` as an identifier.
    pub(crate) fn parse_symbol_ident(&mut self) -> ParseResult<Ident> {
        if !self.is(TokenKind::AtIdent) {
            return Err(self.expected("a symbol name ('@name')"));
        }
        let text = &self.token_text()[1..];
        let name = if text.starts_with('"') { unescape(text) } else { text.to_string() };
        self.advance();
        Ok(self.ctx.ident(&name))
    }

    fn parse_number_attribute(&mut self) -> ParseResult<Attribute> {
        let location = self.location();
        let negative = self.consume_if(TokenKind::Minus);
        let is_float = self.is(TokenKind::Float);
        if !matches!(self.token.kind, TokenKind::Integer | TokenKind::Float) {
            return Err(self.expected("a number"));
        }
        let text = self.token_text();
        self.advance();
        let ty = if self.consume_if(TokenKind::Colon) {
            self.parse_type()?
        } else if is_float {
            self.ctx.float_type(FloatKind::F64)
        } else {
            self.ctx.integer_type(64)
        };
        let kind = self.ctx.type_kind(ty).clone();
        match kind {
            TypeKind::Float(format) => {
                let value = if is_float {
                    text.parse::<f64>()
                        .map_err(|_| self.error_at(location, ParseErrorKind::Message("invalid float literal".into())))?
                } else if text.starts_with("0x") {
                    let bits = parse_integer_literal(text).ok_or_else(|| {
                        self.error_at(location, ParseErrorKind::Message("invalid hexadecimal float".into()))
                    })?;
                    float_from_bits(format, bits).ok_or_else(|| {
                        self.error_at(
                            location,
                            ParseErrorKind::Message("hexadecimal float does not fit its type".into()),
                        )
                    })?
                } else {
                    text.parse::<f64>()
                        .map_err(|_| self.error_at(location, ParseErrorKind::Message("invalid float literal".into())))?
                };
                Ok(self.ctx.float_attr(if negative { -value } else { value }, ty))
            }
            TypeKind::Integer { width, signedness } => {
                if is_float {
                    return Err(self.error_at(
                        location,
                        ParseErrorKind::Message("floating point value not valid for an integer type".into()),
                    ));
                }
                let magnitude = parse_integer_literal(text).ok_or_else(|| {
                    self.error_at(location, ParseErrorKind::Message("integer literal is too large".into()))
                })?;
                let value = integer_value(magnitude, negative, width, signedness).ok_or_else(|| {
                    self.error_at(
                        location,
                        ParseErrorKind::Message(format!("integer constant out of range for its type ({width} bits)")),
                    )
                })?;
                Ok(self.ctx.integer_attr(value, ty))
            }
            TypeKind::Index => {
                if is_float {
                    return Err(self.error_at(
                        location,
                        ParseErrorKind::Message("floating point value not valid for 'index'".into()),
                    ));
                }
                let value = parse_integer_literal(text)
                    .and_then(|m| integer_value(m, negative, 64, Signedness::Signed))
                    .ok_or_else(|| {
                        self.error_at(
                            location,
                            ParseErrorKind::Message("integer constant out of range for 'index'".into()),
                        )
                    })?;
                Ok(self.ctx.integer_attr(value, ty))
            }
            _ => Err(self.error_at(
                location,
                ParseErrorKind::Message("a number's type must be an integer, index or float type".into()),
            )),
        }
    }

    /// `array<i64: 1, 2>`.
    fn parse_dense_array(&mut self) -> ParseResult<Attribute> {
        self.advance();
        self.expect(TokenKind::Less, "'<' after 'array'")?;
        let element = self.parse_type()?;
        let Some(width) = self.ctx.type_kind(element).bit_width().filter(|_| self.ctx.type_kind(element).is_integer())
        else {
            return Err(self.error(ParseErrorKind::Message("only integer dense arrays are supported".into())));
        };
        let mut values = Vec::new();
        if self.consume_if(TokenKind::Colon) {
            loop {
                let location = self.location();
                let negative = self.consume_if(TokenKind::Minus);
                if !self.is(TokenKind::Integer) {
                    return Err(self.expected("an integer"));
                }
                let value = parse_integer_literal(self.token_text())
                    .and_then(|m| integer_value(m, negative, width, Signedness::Signless))
                    .ok_or_else(|| {
                        self.error_at(
                            location,
                            ParseErrorKind::Message("integer out of range for the array's type".into()),
                        )
                    })?;
                self.advance();
                values.push(crate::attributes::sign_extend(value, width));
                if !self.consume_if(TokenKind::Comma) {
                    break;
                }
            }
        }
        self.expect(TokenKind::Greater, "'>' to end the array")?;
        Ok(self.ctx.intern_attribute(AttributeKind::DenseArray { element, values: values.into() }))
    }

    /// `{name = value, flag}` appended to `entries`.
    pub(crate) fn parse_attribute_dict(&mut self, entries: &mut Vec<(Ident, Attribute)>) -> ParseResult<()> {
        self.expect(TokenKind::LBrace, "'{' to begin an attribute dictionary")?;
        if self.consume_if(TokenKind::RBrace) {
            return Ok(());
        }
        loop {
            let name = match self.token.kind {
                TokenKind::BareIdent => self.token_text().to_string(),
                TokenKind::String => unescape(self.token_text()),
                _ => return Err(self.expected("an attribute name")),
            };
            if name.is_empty() {
                return Err(self.error(ParseErrorKind::Message("empty attribute name".into())));
            }
            let location = self.location();
            self.advance();
            let ident = self.ctx.ident(&name);
            if entries.iter().any(|(n, _)| *n == ident) {
                return Err(self.error_at(
                    location,
                    ParseErrorKind::Message(format!("duplicate key '{name}' in dictionary attribute")),
                ));
            }
            let value = if self.consume_if(TokenKind::Equal) { self.parse_attribute()? } else { self.ctx.unit_attr() };
            entries.push((ident, value));
            if !self.consume_if(TokenKind::Comma) {
                break;
            }
        }
        self.expect(TokenKind::RBrace, "',' or '}' in an attribute dictionary")
    }

    fn dictionary_attr(&mut self, mut entries: Vec<(Ident, Attribute)>) -> Attribute {
        entries.sort_by(|a, b| self.ctx.ident_str(a.0).cmp(self.ctx.ident_str(b.0)));
        self.ctx.intern_attribute(AttributeKind::Dictionary(entries.into()))
    }
}

/// A float of `format` from its bit pattern.
fn float_from_bits(format: FloatKind, bits: u64) -> Option<f64> {
    match format {
        FloatKind::F32 => u32::try_from(bits).ok().map(|b| f32::from_bits(b) as f64),
        FloatKind::F64 => Some(f64::from_bits(bits)),
        FloatKind::F16 | FloatKind::BF16 => None,
    }
}

/// The signed value of a literal for an integer type of `width` bits, if it fits.
fn integer_value(magnitude: u64, negative: bool, width: u32, signedness: Signedness) -> Option<i64> {
    let width = width.min(64);
    let unsigned_max: u64 = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
    if negative {
        if signedness == Signedness::Unsigned {
            return None;
        }
        let limit = if width == 64 { 1u64 << 63 } else { 1u64 << (width - 1) };
        if magnitude > limit {
            return None;
        }
        Some((magnitude as i64).wrapping_neg())
    } else {
        if magnitude > unsigned_max {
            return None;
        }
        Some(magnitude as i64)
    }
}
