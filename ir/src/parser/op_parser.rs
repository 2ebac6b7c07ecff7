//! [`OpParser`]: what a custom form's parser sees. It reads tokens, types, attributes, operands and
//! regions; operands are parsed by name first and resolved against a type afterwards, as in MLIR.

use super::{ParseError, ParseErrorKind, ParseResult, Parser, TokenKind};
use crate::location::Location;
use crate::{Attribute, Context, Ident, OpName, OperationState, Region, Type, Value};

/// An operand named in the text, not yet resolved to a value.
#[derive(Copy, Clone, Debug)]
pub struct OperandRef<'a> {
    /// `%name` (without `#N`).
    pub name: &'a str,
    /// The result number after `#`, or 0.
    pub number: u32,
    /// Where it was written.
    pub location: Location,
}

/// A named, typed argument: `%name : type`.
#[derive(Copy, Clone, Debug)]
pub struct Argument<'a> {
    /// `%name`.
    pub name: &'a str,
    /// Its type.
    pub ty: Type,
    /// Where it was written.
    pub location: Location,
}

/// The parser as a custom form sees it.
pub struct OpParser<'p, 'a> {
    parser: &'p mut Parser<'a>,
    op_location: Location,
}

impl<'p, 'a> OpParser<'p, 'a> {
    pub(super) fn new(parser: &'p mut Parser<'a>, op_location: Location) -> Self {
        OpParser { parser, op_location }
    }

    /// The context, to build types and attributes.
    pub fn ctx(&mut self) -> &mut Context {
        self.parser.ctx
    }

    /// Where the op's name was written.
    pub fn op_location(&self) -> Location {
        self.op_location
    }

    /// Where the current token starts.
    pub fn location(&self) -> Location {
        self.parser.location()
    }

    /// An error at the current token.
    pub fn error_here(&self, message: impl Into<String>) -> ParseError {
        self.parser.error(ParseErrorKind::Message(message.into()))
    }

    /// An error at a location.
    pub fn error_at(&self, location: Location, message: impl Into<String>) -> ParseError {
        self.parser.error_at(location, ParseErrorKind::Message(message.into()))
    }

    /// An "expected X, found Y" error at the current token.
    pub fn expected(&self, what: &str) -> ParseError {
        self.parser.expected(what)
    }

    /// Whether the current token is of `kind`.
    pub fn peek(&self, kind: TokenKind) -> bool {
        self.parser.is(kind)
    }

    /// The text of the current token.
    pub fn peek_text(&self) -> &'a str {
        self.parser.token_text()
    }

    /// Consumes a token of `kind`, or fails saying `what` was expected.
    pub fn expect(&mut self, kind: TokenKind, what: &str) -> ParseResult<()> {
        self.parser.expect(kind, what)
    }

    /// Consumes a token of `kind` if it is next.
    pub fn consume_if(&mut self, kind: TokenKind) -> bool {
        self.parser.consume_if(kind)
    }

    /// Whether the next token is the keyword.
    pub fn peek_keyword(&self, keyword: &str) -> bool {
        self.parser.is_keyword(keyword)
    }

    /// Consumes the keyword, or fails.
    pub fn expect_keyword(&mut self, keyword: &str) -> ParseResult<()> {
        if self.parser.consume_keyword(keyword) {
            Ok(())
        } else {
            Err(self.parser.expected(&format!("'{keyword}'")))
        }
    }

    /// Consumes the keyword if it is next.
    pub fn consume_keyword(&mut self, keyword: &str) -> bool {
        self.parser.consume_keyword(keyword)
    }

    /// Any bare identifier.
    pub fn parse_keyword(&mut self, what: &str) -> ParseResult<&'a str> {
        if !self.parser.is(TokenKind::BareIdent) {
            return Err(self.parser.expected(what));
        }
        let text = self.parser.token_text();
        self.parser.advance();
        Ok(text)
    }

    /// `%name` or `%name#N`.
    pub fn parse_operand(&mut self) -> ParseResult<OperandRef<'a>> {
        self.parser.parse_operand_ref()
    }

    /// An operand if one is next.
    pub fn parse_optional_operand(&mut self) -> ParseResult<Option<OperandRef<'a>>> {
        if self.parser.is(TokenKind::PercentIdent) {
            self.parse_operand().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Comma-separated operands (possibly none).
    pub fn parse_operand_list(&mut self) -> ParseResult<Vec<OperandRef<'a>>> {
        let mut operands = Vec::new();
        if !self.parser.is(TokenKind::PercentIdent) {
            return Ok(operands);
        }
        loop {
            operands.push(self.parse_operand()?);
            if !self.parser.consume_if(TokenKind::Comma) {
                return Ok(operands);
            }
        }
    }

    /// The value an operand names, which must have type `ty`.
    pub fn resolve_operand(&mut self, operand: &OperandRef<'a>, ty: Type) -> ParseResult<Value> {
        self.parser.resolve_value(operand.name, operand.number, ty, operand.location)
    }

    /// Resolves operands against types, one to one.
    pub fn resolve_operands(
        &mut self,
        operands: &[OperandRef<'a>],
        types: &[Type],
        location: Location,
    ) -> ParseResult<Vec<Value>> {
        if operands.len() != types.len() {
            return Err(
                self.error_at(location, format!("{} operands present, but expected {}", operands.len(), types.len()))
            );
        }
        operands.iter().zip(types).map(|(operand, &ty)| self.resolve_operand(operand, ty)).collect()
    }

    /// A type.
    pub fn parse_type(&mut self) -> ParseResult<Type> {
        self.parser.parse_type()
    }

    /// Comma-separated types (at least one).
    pub fn parse_type_list(&mut self) -> ParseResult<Vec<Type>> {
        let mut types = vec![self.parse_type()?];
        while self.parser.consume_if(TokenKind::Comma) {
            types.push(self.parse_type()?);
        }
        Ok(types)
    }

    /// `(T, U)` (possibly empty).
    pub fn parse_parenthesized_type_list(&mut self) -> ParseResult<Vec<Type>> {
        self.expect(TokenKind::LParen, "'('")?;
        self.parser.parse_type_list_until(TokenKind::RParen)
    }

    /// Result types after `->`: `T` or `(T, U)`; no arrow means none.
    pub fn parse_optional_arrow_types(&mut self) -> ParseResult<Vec<Type>> {
        if !self.parser.consume_if(TokenKind::Arrow) {
            return Ok(Vec::new());
        }
        if self.parser.is(TokenKind::LParen) {
            self.parse_parenthesized_type_list()
        } else {
            Ok(vec![self.parse_type()?])
        }
    }

    /// An attribute.
    pub fn parse_attribute(&mut self) -> ParseResult<Attribute> {
        self.parser.parse_attribute()
    }

    /// `{...}` if next, appended to `attributes`.
    pub fn parse_optional_attr_dict(&mut self, attributes: &mut Vec<(Ident, Attribute)>) -> ParseResult<()> {
        if self.parser.is(TokenKind::LBrace) {
            self.parser.parse_attribute_dict(attributes)?;
        }
        Ok(())
    }

    /// `attributes {...}` if next, appended to `attributes`.
    pub fn parse_optional_attr_dict_with_keyword(
        &mut self,
        attributes: &mut Vec<(Ident, Attribute)>,
    ) -> ParseResult<()> {
        if self.parser.consume_keyword("attributes") {
            self.parser.parse_attribute_dict(attributes)?;
        }
        Ok(())
    }

    /// `@name`.
    pub fn parse_symbol_name(&mut self) -> ParseResult<Ident> {
        self.parser.parse_symbol_ident()
    }

    /// An integer literal, optionally negative.
    pub fn parse_integer(&mut self) -> ParseResult<i64> {
        let location = self.location();
        let negative = self.parser.consume_if(TokenKind::Minus);
        if !self.parser.is(TokenKind::Integer) {
            return Err(self.parser.expected("an integer"));
        }
        let magnitude = super::parse_integer_literal(self.parser.token_text())
            .and_then(|m| i64::try_from(m).ok())
            .ok_or_else(|| self.error_at(location, "integer is too large"))?;
        self.parser.advance();
        Ok(if negative { -magnitude } else { magnitude })
    }

    /// `%name : type`.
    pub fn parse_argument(&mut self) -> ParseResult<Argument<'a>> {
        self.parser.parse_argument()
    }

    /// `(%a: T, %b: U)`.
    pub fn parse_argument_list(&mut self) -> ParseResult<Vec<Argument<'a>>> {
        self.expect(TokenKind::LParen, "'(' to begin the argument list")?;
        let mut arguments = Vec::new();
        if self.parser.consume_if(TokenKind::RParen) {
            return Ok(arguments);
        }
        loop {
            arguments.push(self.parse_argument()?);
            if !self.parser.consume_if(TokenKind::Comma) {
                break;
            }
        }
        self.expect(TokenKind::RParen, "',' or ')' in the argument list")?;
        Ok(arguments)
    }

    /// A region whose entry block gets `arguments`; `isolated` hides names from outside.
    pub fn parse_region(&mut self, arguments: &[Argument<'a>], isolated: bool) -> ParseResult<Region> {
        let region = self.parser.ctx.create_region();
        self.parser.parse_region(region, arguments, isolated)?;
        Ok(region)
    }

    /// A region if `{` is next.
    pub fn parse_optional_region(&mut self, arguments: &[Argument<'a>], isolated: bool) -> ParseResult<Option<Region>> {
        if self.parser.is(TokenKind::LBrace) {
            self.parse_region(arguments, isolated).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Gives `region` a terminator named `terminator` (no operands) where its single block lacks
    /// one, creating the block if the region is empty: the implicit `scf.yield` of MLIR.
    pub fn ensure_terminator(&mut self, region: Region, terminator: &str) {
        ensure_terminator(self.parser.ctx, region, terminator, self.op_location);
    }
}

/// See [`OpParser::ensure_terminator`].
pub fn ensure_terminator(ctx: &mut Context, region: Region, terminator: &str, location: Location) {
    let name: OpName = ctx.op_name(terminator);
    let block = match ctx.region_blocks(region).first() {
        Some(&block) => block,
        None => {
            let block = ctx.create_block(&[]);
            ctx.append_block(region, block);
            block
        }
    };
    let has_terminator = ctx.last_op(block).is_some_and(|op| ctx.has_traits(op, crate::dialect::OpTraits::TERMINATOR));
    if !has_terminator {
        let op = ctx.create_op(OperationState::new(name, location));
        ctx.append_op(block, op);
    }
}
