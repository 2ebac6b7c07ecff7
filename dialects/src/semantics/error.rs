//! Why a scalar op could not be decoded or evaluated.
//!
//! Only [`ScalarError::DivisionByZero`] can happen to an op that verifies, given operands of its
//! types: it is a run-time error of the program. Every other variant means the op, or the types
//! it was evaluated at, is malformed (a caller bug or an unverified module).

use super::scalar::ScalarType;

/// Why a scalar op could not be decoded or evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScalarError {
    /// The name is not a scalar op of `arith` or `math`.
    #[error("'{name}' is not a scalar arith or math op")]
    UnknownOp {
        /// The op's name.
        name: String,
    },
    /// A comparison without its `predicate` attribute.
    #[error("'{op}' has no predicate")]
    MissingPredicate {
        /// The op's name.
        op: &'static str,
    },
    /// A comparison whose predicate has no meaning.
    #[error("'{op}' predicate {predicate} is out of range")]
    PredicateOutOfRange {
        /// The op's name.
        op: &'static str,
        /// The predicate's number.
        predicate: i64,
    },
    /// The wrong number of operands.
    #[error("'{op}' takes {expected} operands, got {actual}")]
    OperandCount {
        /// The op's name.
        op: &'static str,
        /// What it takes.
        expected: usize,
        /// What it got.
        actual: usize,
    },
    /// Operands of a type the op does not take (a float to `addi`, say).
    #[error("'{op}' does not take operands of type {ty}")]
    OperandType {
        /// The op's name.
        op: &'static str,
        /// The operands' type.
        ty: ScalarType,
    },
    /// A result type the op cannot produce (a float from `extsi`, say).
    #[error("'{op}' cannot produce {ty}")]
    ResultType {
        /// The op's name.
        op: &'static str,
        /// The result's type.
        ty: ScalarType,
    },
    /// A `bitcast` between types of different widths.
    #[error("'arith.bitcast' from {from} to {to} changes the width")]
    BitcastWidth {
        /// The source type.
        from: ScalarType,
        /// The result type.
        to: ScalarType,
    },
    /// Integer division or remainder by zero.
    #[error("integer {} by zero ('{op}')", if op.starts_with("arith.rem") { "remainder" } else { "division" })]
    DivisionByZero {
        /// The op's name.
        op: &'static str,
    },
}

impl From<ScalarError> for String {
    /// The message, for callers that report errors as text.
    fn from(error: ScalarError) -> String {
        error.to_string()
    }
}
