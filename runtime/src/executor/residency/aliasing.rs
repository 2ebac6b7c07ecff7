//! The argument-aliasing check of a [`Session`](super::session::Session) call: the caller may
//! pass one buffer as two arguments, which the executor's `run` (arguments by value) never sees.
//!
//! - [`SessionMode::Explicit`]: the program's transfer plan was placed for distinct buffers. A
//!   plan that copies one parameter's buffer around a kernel that writes another may leave the
//!   first stale when both are the same buffer (`tests.rs` shows one). Aliased parameters are
//!   accepted only when the program provably only reads every one of them: the entry function's
//!   `hat.arg_effects` (which the transfer-insertion pass computes) says `read` or `none` for
//!   each. Without that attribute nothing is proved and any aliasing is refused.
//! - [`SessionMode::Tracking`]: the plan is made at run time, per buffer: every hook, dispatch
//!   and copy names the buffer it touches, whichever parameter it came through, and the
//!   residency is kept per buffer. Aliasing is therefore right by construction, and accepted.
//!
//! A refusal is [`RuntimeError::BadArgument`] naming both parameters and saying why.

use super::annotations::entry_writes;
use super::session::{ResidentBuffer, SessionMode};
use crate::error::RuntimeError;
use crate::executor::Parameter;
use hat_ir::verifier::symbol_name;
use hat_ir::{Context, Op};

/// Checks the buffers of one call (`(parameter index, handle)`, in parameter order) of the entry
/// `function`. See the module documentation.
pub(crate) fn check_aliasing(
    ctx: &Context,
    function: Op,
    mode: SessionMode,
    parameters: &[Parameter],
    handles: &[(usize, ResidentBuffer)],
) -> Result<(), RuntimeError> {
    if mode == SessionMode::Tracking {
        return Ok(());
    }
    let mut writes: Option<Option<Vec<bool>>> = None;
    for (position, &(second, handle)) in handles.iter().enumerate() {
        let Some(&(first, _)) = handles[..position].iter().find(|(_, h)| *h == handle) else { continue };
        let writes = writes.get_or_insert_with(|| entry_writes(ctx, function, parameters.len()));
        let entry = symbol_name(ctx, function).unwrap_or("?");
        let (a, b) = (&parameters[first].name, &parameters[second].name);
        let why = match writes {
            None => format!(
                "'@{entry}' does not declare what it does to its parameters ('hat.arg_effects'), so its transfer \
                 plan cannot be proved right when they are the same buffer"
            ),
            Some(writes) => match [first, second].into_iter().find(|&p| writes[p]) {
                Some(written) => format!(
                    "'@{entry}' may write '%{}', and its transfer plan assumes distinct buffers",
                    parameters[written].name
                ),
                None => continue,
            },
        };
        return Err(RuntimeError::BadArgument {
            name: b.clone(),
            message: format!("is the same buffer as argument '%{a}': {why}; pass a separate buffer"),
        });
    }
    Ok(())
}
