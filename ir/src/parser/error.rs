//! Parse errors: one typed enum, each error carrying the location it points at.

use crate::diagnostics::Diagnostic;
use crate::location::Location;
use thiserror::Error;

/// What went wrong while parsing.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseErrorKind {
    /// The text at the location is no token.
    #[error("{0}")]
    Lex(&'static str),
    /// The input is not UTF-8.
    #[error("input is not valid UTF-8")]
    InvalidUtf8,
    /// Something other than what the grammar needs.
    #[error("expected {expected}, found {found}")]
    Expected {
        /// What the grammar needs.
        expected: String,
        /// What was there.
        found: String,
    },
    /// A value name used but never defined where the use can see it.
    #[error("use of undeclared SSA value name '{0}'")]
    UndefinedValue(String),
    /// A value name defined twice in one scope.
    #[error("redefinition of SSA value '{0}'")]
    RedefinedValue(String),
    /// Two uses (or a use and the definition) disagree on a value's type.
    #[error("use of value '{name}' expects different type than prior uses: '{expected}' vs '{previous}'")]
    ValueTypeMismatch {
        /// The value.
        name: String,
        /// The type this use wants.
        expected: String,
        /// The type it had.
        previous: String,
    },
    /// `%x#N` where the op has fewer results.
    #[error("result number {number} of '{name}' is out of range: it has {count} result(s)")]
    ResultOutOfRange {
        /// The value.
        name: String,
        /// The number asked for.
        number: u32,
        /// How many there are.
        count: u32,
    },
    /// A block label referenced but not defined in the region.
    #[error("reference to an undefined block '{0}'")]
    UndefinedBlock(String),
    /// A block label defined twice.
    #[error("redefinition of block '{0}'")]
    RedefinedBlock(String),
    /// A custom-form op name that nothing registered.
    #[error("custom op '{0}' is unknown")]
    UnknownCustomOp(String),
    /// An op of a dialect that is not registered.
    #[error("operation '{0}' belongs to an unregistered dialect (use --allow-unregistered-dialect to accept it)")]
    UnregisteredDialect(String),
    /// An unknown op of a registered dialect.
    #[error("unregistered operation '{0}' found in dialect '{1}' that does not allow unknown operations")]
    UnregisteredOp(String, String),
    /// Regions nested deeper than the parser allows.
    #[error("input is nested deeper than {0} levels (regions, types and attributes)")]
    TooDeep(usize),
    /// Any other message.
    #[error("{0}")]
    Message(String),
}

/// A parse error at a location.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{kind}")]
pub struct ParseError {
    /// Where.
    pub location: Location,
    /// What.
    pub kind: ParseErrorKind,
}

impl From<ParseError> for Diagnostic {
    fn from(error: ParseError) -> Diagnostic {
        Diagnostic::error(error.location, error.kind.to_string())
    }
}

/// The result of a parsing step.
pub type ParseResult<T> = Result<T, ParseError>;
