//! The parser: MLIR's textual IR, in the generic form of every op and the custom forms that
//! registered ops define. It stops at the first error, which carries `file:line:col`.
//!
//! Value names are scoped by region; a region of an op that is isolated from above sees no names
//! from outside. Uses may come before definitions (across blocks); such forward references get a
//! placeholder value that the definition replaces. Nesting is bounded ([`MAX_NESTING`]) and the
//! stack grows on demand, so deep input gives a diagnostic, never a stack overflow.

mod attributes;
mod error;
mod lexer;
mod op_parser;

pub use error::{ParseError, ParseErrorKind, ParseResult};
pub use lexer::{escape_into, is_value_name, unescape, LexError, Lexer, Token, TokenKind};
pub use op_parser::{Argument, OpParser, OperandRef};

use crate::dialect::OpTraits;
use crate::location::{Location, SourceId};
use crate::{Block, Context, Op, OperationState, Region, Type, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// How deeply regions may nest.
pub const MAX_NESTING: usize = 2048;

/// Parses `text` (registered in the context's source map as `name`) into a `builtin.module`.
/// Top-level ops that are not a single module are wrapped in one, as MLIR does.
pub fn parse_source(ctx: &mut Context, name: &str, text: &str) -> ParseResult<Op> {
    let source = ctx.sources.add(name, text);
    let text = ctx.sources.file(source).text().clone();
    Parser::new(ctx, &text, source).parse_top_level()
}

/// Like [`parse_bytes`], taking ownership of the bytes so that only one copy of the text is kept.
pub fn parse_owned_bytes(ctx: &mut Context, name: &str, bytes: Vec<u8>) -> ParseResult<Op> {
    match String::from_utf8(bytes) {
        Ok(text) => {
            let source = ctx.sources.add(name, text);
            let text = ctx.sources.file(source).text().clone();
            Parser::new(ctx, &text, source).parse_top_level()
        }
        Err(error) => parse_bytes(ctx, name, error.as_bytes()),
    }
}

/// Like [`parse_source`], for bytes that may not be UTF-8 (reported with the location of the first
/// bad byte).
pub fn parse_bytes(ctx: &mut Context, name: &str, bytes: &[u8]) -> ParseResult<Op> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_source(ctx, name, text),
        Err(error) => {
            let valid = error.valid_up_to();
            let shown = String::from_utf8_lossy(bytes).into_owned();
            let source = ctx.sources.add(name, shown.as_str());
            // Offsets in the lossy text match up to the first bad byte.
            Err(ParseError { location: Location::new(source, valid as u32), kind: ParseErrorKind::InvalidUtf8 })
        }
    }
}

#[derive(Copy, Clone)]
struct NamedValue {
    first: Value,
    count: u32,
}

struct ForwardRef {
    placeholder: Value,
    location: Location,
}

#[derive(Copy, Clone)]
struct BlockRef {
    block: Block,
    defined: bool,
    location: Location,
}

/// Value names of one scope. Names of up to 8 bytes (`%0` … `%9999999`, most names) are keyed by
/// their bytes packed into a `u64`, which hashes and compares without touching the text.
#[derive(Default)]
struct NameTable<'a> {
    short: FxHashMap<u64, NamedValue>,
    long: FxHashMap<&'a str, NamedValue>,
}

fn pack_name(name: &str) -> Option<u64> {
    let bytes = name.as_bytes();
    (bytes.len() <= 8).then(|| {
        let mut packed = [0u8; 8];
        packed[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(packed)
    })
}

impl<'a> NameTable<'a> {
    fn get(&self, name: &str) -> Option<&NamedValue> {
        match pack_name(name) {
            Some(key) => self.short.get(&key),
            None => self.long.get(name),
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    fn insert(&mut self, name: &'a str, value: NamedValue) {
        match pack_name(name) {
            Some(key) => self.short.insert(key, value),
            None => self.long.insert(name, value),
        };
    }
}

#[derive(Default)]
struct NameScope<'a> {
    values: NameTable<'a>,
    forward: FxHashMap<(&'a str, u32), ForwardRef>,
    blocks: FxHashMap<&'a str, BlockRef>,
    isolated: bool,
}

/// The parser state. Custom forms see it through [`OpParser`].
pub struct Parser<'a> {
    ctx: &'a mut Context,
    text: &'a str,
    source: SourceId,
    lexer: Lexer<'a>,
    token: Token,
    scopes: Vec<NameScope<'a>>,
    /// Placeholder values of forward references, with the operands that use them.
    placeholder_uses: FxHashMap<Value, Vec<(Op, usize)>>,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(ctx: &'a mut Context, text: &'a str, source: SourceId) -> Self {
        let mut lexer = Lexer::new(text);
        let token = lexer.next_token();
        Parser { ctx, text, source, lexer, token, scopes: Vec::new(), placeholder_uses: FxHashMap::default(), depth: 0 }
    }

    // ----- tokens ---------------------------------------------------------------------------

    fn advance(&mut self) {
        self.token = self.lexer.next_token();
    }

    fn token_text(&self) -> &'a str {
        &self.text[self.token.start as usize..self.token.end as usize]
    }

    fn location(&self) -> Location {
        Location::new(self.source, self.token.start)
    }

    fn is(&self, kind: TokenKind) -> bool {
        self.token.kind == kind
    }

    fn describe_token(&self) -> String {
        match self.token.kind {
            TokenKind::Eof => "end of input".to_string(),
            _ => format!("'{}'", self.token_text()),
        }
    }

    fn error(&self, kind: ParseErrorKind) -> ParseError {
        let kind = match self.token.kind {
            TokenKind::Error(lex) => ParseErrorKind::Lex(lex.message()),
            _ => kind,
        };
        ParseError { location: self.location(), kind }
    }

    fn error_at(&self, location: Location, kind: ParseErrorKind) -> ParseError {
        ParseError { location, kind }
    }

    fn expected(&self, what: &str) -> ParseError {
        self.error(ParseErrorKind::Expected { expected: what.to_string(), found: self.describe_token() })
    }

    fn expect(&mut self, kind: TokenKind, what: &str) -> ParseResult<()> {
        if self.is(kind) {
            self.advance();
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    fn consume_if(&mut self, kind: TokenKind) -> bool {
        if self.is(kind) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn is_keyword(&self, keyword: &str) -> bool {
        self.is(TokenKind::BareIdent) && self.token_text() == keyword
    }

    fn consume_keyword(&mut self, keyword: &str) -> bool {
        if self.is_keyword(keyword) {
            self.advance();
            true
        } else {
            false
        }
    }

    /// Re-lexes from `offset` bytes into the source (used inside shapes).
    fn relex_from(&mut self, offset: usize) {
        self.lexer.reset(offset);
        self.advance();
    }

    // ----- top level ------------------------------------------------------------------------

    fn parse_top_level(mut self) -> ParseResult<Op> {
        let location = self.location();
        let module_name = self.ctx.op_name("builtin.module");
        let region = self.ctx.create_region();
        let block = self.ctx.create_block(&[]);
        self.ctx.append_block(region, block);
        self.scopes.push(NameScope { isolated: true, ..Default::default() });
        while !self.is(TokenKind::Eof) {
            self.parse_op(block)?;
        }
        self.finish_scope()?;
        let ops: Vec<Op> = self.ctx.block_ops(block).collect();
        if let [single] = ops[..] {
            if self.ctx.name(single) == module_name {
                self.ctx.detach_op(single);
                return Ok(single);
            }
        }
        let mut state = OperationState::new(module_name, location);
        state.regions.push(region);
        Ok(self.ctx.create_op(state))
    }

    // ----- scopes and values ----------------------------------------------------------------

    fn push_scope(&mut self, isolated: bool) {
        self.scopes.push(NameScope { isolated, ..Default::default() });
    }

    /// Pops the innermost scope: its blocks must all be defined; its unresolved forward
    /// references move out to the enclosing scope, or are errors at an isolation boundary.
    fn finish_scope(&mut self) -> ParseResult<()> {
        let scope = self.scopes.pop().expect("scope stack underflow");
        if let Some((name, block_ref)) =
            scope.blocks.iter().filter(|(_, b)| !b.defined).min_by_key(|(_, b)| b.location.offset())
        {
            return Err(self.error_at(block_ref.location, ParseErrorKind::UndefinedBlock(name.to_string())));
        }
        if scope.forward.is_empty() {
            return Ok(());
        }
        match self.scopes.last_mut() {
            Some(parent) if !scope.isolated => {
                for (key, forward) in scope.forward {
                    parent.forward.entry(key).or_insert(forward);
                }
                Ok(())
            }
            _ => {
                let ((name, number), forward) =
                    scope.forward.iter().min_by_key(|(_, f)| f.location.offset()).expect("checked non-empty");
                let shown = if *number == 0 { name.to_string() } else { format!("{name}#{number}") };
                Err(self.error_at(forward.location, ParseErrorKind::UndefinedValue(shown)))
            }
        }
    }

    /// Scopes visible from the innermost one: up to and including the first isolated scope.
    fn visible_scopes(&self) -> impl Iterator<Item = &NameScope<'a>> {
        let mut done = false;
        self.scopes.iter().rev().take_while(move |scope| {
            if done {
                return false;
            }
            done = scope.isolated;
            true
        })
    }

    fn type_string(&self, ty: Type) -> String {
        crate::printer::type_to_string(self.ctx, ty)
    }

    /// The value `%name#number` of type `ty`, creating a forward reference if it is not defined yet.
    fn resolve_value(&mut self, name: &'a str, number: u32, ty: Type, location: Location) -> ParseResult<Value> {
        let mut found = None;
        let mut found_forward = None;
        for scope in self.visible_scopes() {
            if let Some(named) = scope.values.get(name) {
                found = Some(*named);
                break;
            }
            if let Some(forward) = scope.forward.get(&(name, number)) {
                found_forward = Some(forward.placeholder);
                break;
            }
        }
        let value = if let Some(named) = found {
            if number >= named.count {
                return Err(self.error_at(
                    location,
                    ParseErrorKind::ResultOutOfRange { name: name.to_string(), number, count: named.count },
                ));
            }
            Value::from_index(named.first.index() + number as usize)
        } else if let Some(placeholder) = found_forward {
            placeholder
        } else {
            let block = self.ctx.create_block(&[ty]);
            let placeholder = self.ctx.block_arguments(block)[0];
            self.placeholder_uses.insert(placeholder, Vec::new());
            let scope = self.scopes.last_mut().expect("a scope is open while parsing ops");
            scope.forward.insert((name, number), ForwardRef { placeholder, location });
            return Ok(placeholder);
        };
        let previous = self.ctx.value_type(value);
        if previous != ty {
            let shown = if number == 0 { name.to_string() } else { format!("{name}#{number}") };
            return Err(self.error_at(
                location,
                ParseErrorKind::ValueTypeMismatch {
                    name: shown,
                    expected: self.type_string(ty),
                    previous: self.type_string(previous),
                },
            ));
        }
        Ok(value)
    }

    /// Binds `name` to `count` consecutive values starting at `first`, resolving forward references.
    fn define_value(&mut self, name: &'a str, first: Value, count: u32, location: Location) -> ParseResult<()> {
        for scope in self.visible_scopes() {
            if scope.values.contains(name) {
                return Err(self.error_at(location, ParseErrorKind::RedefinedValue(name.to_string())));
            }
        }
        if !self.placeholder_uses.is_empty() {
            for number in 0..count {
                let mut placeholder = None;
                let visible = self.visible_scope_count();
                let depth = self.scopes.len();
                for scope in &mut self.scopes[depth - visible..] {
                    if let Some(forward) = scope.forward.remove(&(name, number)) {
                        placeholder = Some(forward);
                        break;
                    }
                }
                if let Some(forward) = placeholder {
                    let value = Value::from_index(first.index() + number as usize);
                    let (expected, actual) = (self.ctx.value_type(forward.placeholder), self.ctx.value_type(value));
                    if expected != actual {
                        return Err(self.error_at(
                            forward.location,
                            ParseErrorKind::ValueTypeMismatch {
                                name: name.to_string(),
                                expected: self.type_string(expected),
                                previous: self.type_string(actual),
                            },
                        ));
                    }
                    for (op, index) in self.placeholder_uses.remove(&forward.placeholder).unwrap_or_default() {
                        self.ctx.set_operand(op, index, value);
                    }
                }
            }
        }
        let scope = self.scopes.last_mut().expect("a scope is open while parsing ops");
        scope.values.insert(name, NamedValue { first, count });
        Ok(())
    }

    fn visible_scope_count(&self) -> usize {
        self.visible_scopes().count()
    }

    /// The block named `name` in the innermost region, created (undefined) on first reference.
    fn block_reference(&mut self, name: &'a str, location: Location) -> Block {
        if let Some(block_ref) = self.scopes.last().and_then(|s| s.blocks.get(name)) {
            return block_ref.block;
        }
        let block = self.ctx.create_block(&[]);
        let scope = self.scopes.last_mut().expect("a scope is open while parsing ops");
        scope.blocks.insert(name, BlockRef { block, defined: false, location });
        block
    }

    // ----- operations -----------------------------------------------------------------------

    fn parse_op(&mut self, block: Block) -> ParseResult<Op> {
        stacker::maybe_grow(128 * 1024, 4 * 1024 * 1024, || self.parse_op_unguarded(block))
    }

    fn parse_op_unguarded(&mut self, block: Block) -> ParseResult<Op> {
        // As in MLIR, an op's location is where its statement starts (its results, if any).
        let location = self.location();
        let mut results: SmallVec<[(&'a str, u32, Location); 2]> = SmallVec::new();
        if self.is(TokenKind::PercentIdent) {
            loop {
                let location = self.location();
                let name = self.token_text();
                if name.contains('#') {
                    return Err(
                        self.error(ParseErrorKind::Message(format!("result name '{name}' cannot have a '#' number")))
                    );
                }
                self.expect(TokenKind::PercentIdent, "a result name")?;
                let mut count = 1;
                if self.consume_if(TokenKind::Colon) {
                    count = self.parse_u32("a result count")?;
                    if count == 0 {
                        return Err(self.error_at(
                            location,
                            ParseErrorKind::Message("a result group needs at least one result".into()),
                        ));
                    }
                }
                results.push((name, count, location));
                if !self.consume_if(TokenKind::Comma) {
                    break;
                }
                if !self.is(TokenKind::PercentIdent) {
                    return Err(self.expected("a result name"));
                }
            }
            self.expect(TokenKind::Equal, "'='")?;
        }
        let op = match self.token.kind {
            TokenKind::String => self.parse_generic_op(location)?,
            TokenKind::BareIdent => self.parse_custom_op(location)?,
            _ => return Err(self.expected("an operation name")),
        };
        self.skip_trailing_location()?;
        let expected: u64 = results.iter().map(|r| u64::from(r.1)).sum();
        let actual = self.ctx.result_count(op) as u64;
        if !results.is_empty() && expected != actual {
            return Err(self.error_at(
                results[0].2,
                ParseErrorKind::Message(format!(
                    "operation defines {actual} results but was provided {expected} to bind"
                )),
            ));
        }
        let mut next = 0usize;
        for (name, count, location) in results {
            let first = self.ctx.result(op, next);
            self.define_value(name, first, count, location)?;
            next += count as usize;
        }
        if !self.placeholder_uses.is_empty() {
            for (index, operand) in self.ctx.operands(op).iter().enumerate() {
                if let Some(uses) = self.placeholder_uses.get_mut(operand) {
                    uses.push((op, index));
                }
            }
        }
        self.ctx.append_op(block, op);
        Ok(op)
    }

    fn check_registered(&mut self, name: &str, location: Location) -> ParseResult<()> {
        let known = self.ctx.find_op_name(name).is_some_and(|n| self.ctx.definition(n).is_some());
        if known || self.ctx.allow_unregistered {
            return Ok(());
        }
        let dialect = name.split_once('.').map_or(name, |(d, _)| d);
        let kind = if self.ctx.is_dialect_registered(dialect) {
            ParseErrorKind::UnregisteredOp(name.to_string(), dialect.to_string())
        } else {
            ParseErrorKind::UnregisteredDialect(name.to_string())
        };
        Err(self.error_at(location, kind))
    }

    fn parse_generic_op(&mut self, location: Location) -> ParseResult<Op> {
        let name_text = unescape(self.token_text());
        if name_text.is_empty() {
            return Err(self.error(ParseErrorKind::Message("empty operation name".into())));
        }
        self.check_registered(&name_text, location)?;
        self.advance();
        let name = self.ctx.op_name(&name_text);
        let isolated = self.ctx.definition(name).is_some_and(|d| d.traits().contains(OpTraits::ISOLATED_FROM_ABOVE));
        let mut state = OperationState::new(name, location);

        self.expect(TokenKind::LParen, "'(' before the operand list")?;
        let mut operands: SmallVec<[OperandRef<'a>; 4]> = SmallVec::new();
        if !self.is(TokenKind::RParen) {
            loop {
                operands.push(self.parse_operand_ref()?);
                if !self.consume_if(TokenKind::Comma) {
                    break;
                }
            }
        }
        self.expect(TokenKind::RParen, "')' after the operand list")?;

        if self.consume_if(TokenKind::LSquare) {
            loop {
                if !self.is(TokenKind::CaretIdent) {
                    return Err(self.expected("a successor block"));
                }
                let block = self.block_reference(self.token_text(), self.location());
                self.advance();
                state.successors.push(block);
                if !self.consume_if(TokenKind::Comma) {
                    break;
                }
            }
            self.expect(TokenKind::RSquare, "']' after the successor list")?;
        }
        if self.consume_if(TokenKind::Less) {
            self.parse_attribute_dict(&mut state.attributes)?;
            self.expect(TokenKind::Greater, "'>' after the properties")?;
        }
        if self.consume_if(TokenKind::LParen) {
            loop {
                let region = self.ctx.create_region();
                self.parse_region(region, &[], isolated)?;
                state.regions.push(region);
                if !self.consume_if(TokenKind::Comma) {
                    break;
                }
            }
            self.expect(TokenKind::RParen, "')' after the region list")?;
        }
        if self.is(TokenKind::LBrace) {
            self.parse_attribute_dict(&mut state.attributes)?;
        }
        self.expect(TokenKind::Colon, "':' before the operation's type")?;
        let type_location = self.location();
        let ty = self.parse_type()?;
        let crate::types::TypeKind::Function { inputs, results } = self.ctx.type_kind(ty).clone() else {
            return Err(self.error_at(type_location, ParseErrorKind::Message("expected a function type".into())));
        };
        if inputs.len() != operands.len() {
            return Err(self.error_at(
                type_location,
                ParseErrorKind::Message(format!(
                    "expected {} operand type(s) but had {}",
                    operands.len(),
                    inputs.len()
                )),
            ));
        }
        for (operand, &ty) in operands.iter().zip(inputs.iter()) {
            let value = self.resolve_value(operand.name, operand.number, ty, operand.location)?;
            state.operands.push(value);
        }
        state.result_types = results.to_vec();
        Ok(self.ctx.create_op(state))
    }

    fn parse_custom_op(&mut self, location: Location) -> ParseResult<Op> {
        let text = self.token_text();
        let lookup = |ctx: &Context, name: &str| {
            ctx.find_op_name(name).filter(|&n| ctx.definition(n).is_some_and(|d| d.has_custom_syntax()))
        };
        let name = lookup(self.ctx, text).or_else(|| lookup(self.ctx, &format!("builtin.{text}")));
        let Some(name) = name else {
            return Err(self.error(ParseErrorKind::UnknownCustomOp(text.to_string())));
        };
        self.advance();
        let definition = self.ctx.definition(name).expect("looked up with a definition").clone();
        let mut state = OperationState::new(name, location);
        let mut op_parser = OpParser::new(self, location);
        definition.parse(&mut op_parser, &mut state)?;
        Ok(self.ctx.create_op(state))
    }

    /// `loc(...)` after an op: accepted and skipped (locations come from the source text).
    fn skip_trailing_location(&mut self) -> ParseResult<()> {
        if !self.is_keyword("loc") {
            return Ok(());
        }
        self.advance();
        self.skip_balanced("'(' after 'loc'")
    }

    /// Skips a parenthesised group with everything nested in it.
    fn skip_balanced(&mut self, what: &str) -> ParseResult<()> {
        let open = self.location();
        self.expect(TokenKind::LParen, what)?;
        let mut depth = 1usize;
        while depth > 0 {
            match self.token.kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => depth -= 1,
                TokenKind::Eof => return Err(self.error_at(open, ParseErrorKind::Message("unbalanced '('".into()))),
                TokenKind::Error(_) => return Err(self.error(ParseErrorKind::Message(String::new()))),
                _ => {}
            }
            self.advance();
        }
        Ok(())
    }

    fn parse_operand_ref(&mut self) -> ParseResult<OperandRef<'a>> {
        if !self.is(TokenKind::PercentIdent) {
            return Err(self.expected("an operand"));
        }
        let text = self.token_text();
        let location = self.location();
        self.advance();
        let (name, number) = match text.split_once('#') {
            Some((name, number)) => {
                let number = number
                    .parse::<u32>()
                    .map_err(|_| self.error_at(location, ParseErrorKind::Message("invalid result number".into())))?;
                (name, number)
            }
            None => (text, 0),
        };
        Ok(OperandRef { name, number, location })
    }

    fn parse_u32(&mut self, what: &str) -> ParseResult<u32> {
        if !self.is(TokenKind::Integer) {
            return Err(self.expected(what));
        }
        let value = parse_integer_literal(self.token_text())
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| self.error(ParseErrorKind::Message(format!("{what} is out of range"))))?;
        self.advance();
        Ok(value)
    }

    // ----- regions and blocks ---------------------------------------------------------------

    /// Parses `{ blocks }` into `region`. `entry_arguments` (from a custom form) become the
    /// arguments of the entry block, which then has no label.
    fn parse_region(&mut self, region: Region, entry_arguments: &[Argument<'a>], isolated: bool) -> ParseResult<()> {
        let open = self.location();
        self.expect(TokenKind::LBrace, "'{' to begin a region")?;
        self.push_scope(isolated);
        self.nested(|parser| parser.parse_region_body(region, entry_arguments, open))?;
        self.finish_scope()
    }

    /// Runs a recursive step one nesting level deeper: bounded by [`MAX_NESTING`] (regions, types
    /// and attributes together), with the stack grown on demand.
    fn nested<T>(&mut self, step: impl FnOnce(&mut Self) -> ParseResult<T>) -> ParseResult<T> {
        if self.depth >= MAX_NESTING {
            return Err(self.error_at(self.location(), ParseErrorKind::TooDeep(MAX_NESTING)));
        }
        self.depth += 1;
        let result = stacker::maybe_grow(128 * 1024, 4 * 1024 * 1024, || step(self));
        self.depth -= 1;
        result
    }

    fn parse_region_body(
        &mut self,
        region: Region,
        entry_arguments: &[Argument<'a>],
        open: Location,
    ) -> ParseResult<()> {
        if self.is(TokenKind::RBrace) && entry_arguments.is_empty() {
            self.advance();
            return Ok(());
        }
        if !self.is(TokenKind::CaretIdent) || !entry_arguments.is_empty() {
            if self.is(TokenKind::CaretIdent) {
                return Err(
                    self.error(ParseErrorKind::Message("invalid block name in region with named arguments".into()))
                );
            }
            let types: SmallVec<[Type; 4]> = entry_arguments.iter().map(|a| a.ty).collect();
            let block = self.ctx.create_block(&types);
            self.ctx.set_block_location(block, open);
            self.ctx.append_block(region, block);
            for (index, argument) in entry_arguments.iter().enumerate() {
                let value = self.ctx.block_arguments(block)[index];
                self.ctx.set_argument_name(value, &argument.name[1..]);
                self.define_value(argument.name, value, 1, argument.location)?;
            }
            self.parse_block_ops(block)?;
        }
        while self.is(TokenKind::CaretIdent) {
            self.parse_labelled_block(region)?;
        }
        self.expect(TokenKind::RBrace, "'}' to end the region")
    }

    fn parse_block_ops(&mut self, block: Block) -> ParseResult<()> {
        while !matches!(self.token.kind, TokenKind::CaretIdent | TokenKind::RBrace | TokenKind::Eof) {
            self.parse_op(block)?;
        }
        Ok(())
    }

    fn parse_labelled_block(&mut self, region: Region) -> ParseResult<()> {
        let name = self.token_text();
        let location = self.location();
        self.advance();
        let block = self.block_reference(name, location);
        let scope = self.scopes.last_mut().expect("a scope is open while parsing ops");
        let block_ref = scope.blocks.get_mut(name).expect("just referenced");
        if block_ref.defined {
            return Err(self.error_at(location, ParseErrorKind::RedefinedBlock(name.to_string())));
        }
        block_ref.defined = true;
        block_ref.location = location;
        self.ctx.set_block_location(block, location);
        self.ctx.append_block(region, block);
        if self.consume_if(TokenKind::LParen) && !self.consume_if(TokenKind::RParen) {
            loop {
                let argument = self.parse_argument()?;
                let value = self.ctx.add_block_argument(block, argument.ty);
                self.ctx.set_argument_name(value, &argument.name[1..]);
                self.define_value(argument.name, value, 1, argument.location)?;
                if !self.consume_if(TokenKind::Comma) {
                    break;
                }
            }
            self.expect(TokenKind::RParen, "')' after the block arguments")?;
        }
        self.expect(TokenKind::Colon, "':' after the block label")?;
        self.parse_block_ops(block)
    }

    /// `%name : type` (with an optional trailing `loc(...)`).
    fn parse_argument(&mut self) -> ParseResult<Argument<'a>> {
        if !self.is(TokenKind::PercentIdent) || self.token_text().contains('#') {
            return Err(self.expected("an argument name"));
        }
        let name = self.token_text();
        let location = self.location();
        self.advance();
        self.expect(TokenKind::Colon, "':' after the argument name")?;
        let ty = self.parse_type()?;
        self.skip_trailing_location()?;
        Ok(Argument { name, ty, location })
    }
}

/// The value of an integer token (decimal or `0x` hex).
pub(crate) fn parse_integer_literal(text: &str) -> Option<u64> {
    if let Some(hex) = text.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else {
        text.parse::<u64>().ok()
    }
}
