//! The attributes through which passes tell the runtime what a program does, and how the runtime
//! reads them. The passes write them (`hat_passes::transfers::track_accesses` for the first four,
//! the transfer-insertion pass for `hat.arg_effects`); the runtime cannot depend on the passes, so
//! the format is fixed here and there, and a test checks that one reads what the other writes.
//!
//! - `hat.tracked` (unit, on the module): the program's host accesses are wrapped in hooks; the
//!   executor's tracking mode runs only such programs.
//! - `hat.must_write` (unit, on `buffer.before_host_write`): the op writes every element of the
//!   hook's range; without it the write may leave elements untouched.
//! - `hat.arg_access` (on a dispatch): one string per kernel argument, `none`, `read`, `write`,
//!   `readwrite`, `write_all` or `readwrite_all` (`_all`: every element written for certain).
//! - `hat.arg_elements` (on a dispatch, optional): one `array<i64: read_begin, read_end,
//!   write_begin, write_end>` per argument, flat element ranges; `-1, -1` is the whole buffer.
//! - `hat.arg_effects` (on an entry function): one string per parameter, `none`, `read`, `write`
//!   or `readwrite`: what a call may do to each buffer argument, through everything it calls.
//!
//! Anything missing or malformed reads as "may do anything": every buffer argument read and
//! partially written, whole.

use hat_ir::{AttributeKind, Context, Op};

/// The module attribute of a program instrumented by `track-accesses`.
pub(crate) const TRACKED: &str = "hat.tracked";
/// The unit attribute of a `buffer.before_host_write` whose op writes every element of its range.
pub(crate) const MUST_WRITE: &str = "hat.must_write";
/// The dispatch attribute: each argument's access.
pub(crate) const ARG_ACCESS: &str = "hat.arg_access";
/// The dispatch attribute: known element ranges per argument.
pub(crate) const ARG_ELEMENTS: &str = "hat.arg_elements";
/// The entry function attribute: each parameter's effect.
pub(crate) const ARG_EFFECTS: &str = "hat.arg_effects";

/// Elements of a buffer a dispatch touches one way.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Span {
    /// None.
    Nothing,
    /// Maybe any.
    Whole,
    /// Only these (flat, half-open).
    Range(u64, u64),
}

/// What a dispatch does to one argument.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArgUse {
    /// The elements it may read.
    pub(crate) read: Span,
    /// The elements it may write.
    pub(crate) write: Span,
    /// Whether it writes every element of the buffer, for certain.
    pub(crate) writes_every_element: bool,
}

impl ArgUse {
    /// Reads and may write anything: the use of an argument nobody described.
    pub(crate) const ANYTHING: ArgUse = ArgUse { read: Span::Whole, write: Span::Whole, writes_every_element: false };

    /// The use an `hat.arg_access` keyword names.
    fn from_keyword(keyword: &str) -> Option<ArgUse> {
        let (read, write, all) = match keyword {
            "none" => (false, false, false),
            "read" => (true, false, false),
            "write" => (false, true, false),
            "readwrite" => (true, true, false),
            "write_all" => (false, true, true),
            "readwrite_all" => (true, true, true),
            _ => return None,
        };
        let span = |used: bool| if used { Span::Whole } else { Span::Nothing };
        Some(ArgUse { read: span(read), write: span(write), writes_every_element: all })
    }
}

/// The string entries of `op`'s array attribute `name`, when it is one.
fn strings<'c>(ctx: &'c Context, op: Op, name: &str) -> Option<Vec<&'c str>> {
    let AttributeKind::Array(entries) = ctx.attribute_kind(ctx.attribute(op, name)?) else { return None };
    entries.iter().map(|&e| ctx.attribute_kind(e).as_str()).collect()
}

/// What dispatch `op` does to each of its `count` arguments, from its annotations.
pub(crate) fn dispatch_uses(ctx: &Context, op: Op, count: usize) -> Vec<ArgUse> {
    let anything = vec![ArgUse::ANYTHING; count];
    let Some(keywords) = strings(ctx, op, ARG_ACCESS).filter(|k| k.len() == count) else { return anything };
    let Some(mut uses) = keywords.into_iter().map(ArgUse::from_keyword).collect::<Option<Vec<_>>>() else {
        return anything;
    };
    if let Some(ranges) = element_ranges(ctx, op).filter(|r| r.len() == count) {
        for (usage, [read_begin, read_end, write_begin, write_end]) in uses.iter_mut().zip(ranges) {
            let narrow = |span: Span, begin: i64, end: i64| match (span, u64::try_from(begin), u64::try_from(end)) {
                (Span::Whole, Ok(begin), Ok(end)) if begin <= end => Span::Range(begin, end),
                _ => span,
            };
            usage.read = narrow(usage.read, read_begin, read_end);
            if !usage.writes_every_element {
                usage.write = narrow(usage.write, write_begin, write_end);
            }
        }
    }
    uses
}

/// The entries of `hat.arg_elements`, when well formed.
fn element_ranges(ctx: &Context, op: Op) -> Option<Vec<[i64; 4]>> {
    let AttributeKind::Array(entries) = ctx.attribute_kind(ctx.attribute(op, ARG_ELEMENTS)?) else { return None };
    entries
        .iter()
        .map(|&e| match ctx.attribute_kind(e) {
            AttributeKind::DenseArray { values, .. } => <[i64; 4]>::try_from(&values[..]).ok(),
            _ => None,
        })
        .collect()
}

/// Whether a call of the entry `function` may write each parameter, from `hat.arg_effects`;
/// `None` when absent or malformed (one entry per parameter, each a known keyword).
pub(crate) fn entry_writes(ctx: &Context, function: Op, parameters: usize) -> Option<Vec<bool>> {
    let keywords = strings(ctx, function, ARG_EFFECTS).filter(|k| k.len() == parameters)?;
    keywords
        .into_iter()
        .map(|k| match k {
            "none" | "read" => Some(false),
            "write" | "readwrite" => Some(true),
            _ => None,
        })
        .collect()
}

/// Whether `module` was instrumented by `track-accesses`.
pub(crate) fn is_tracked(ctx: &Context, module: Op) -> bool {
    ctx.attribute(module, TRACKED).is_some()
}

/// Whether the hook `op` carries `hat.must_write`.
pub(crate) fn must_write(ctx: &Context, op: Op) -> bool {
    ctx.attribute(op, MUST_WRITE).is_some()
}
