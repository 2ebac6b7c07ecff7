//! The clairvoyant optimum of one run: the fewest bytes — and among plans of the fewest bytes,
//! the fewest copies — that any transfer plan could move on that run, knowing in advance
//! everything the run will do. No strategy can beat it on the run; how far each one is from it
//! is what `hat-bench transfers --oracle` reports (docs/transfers-oracle.md).
//!
//! # The trace
//!
//! A run under the reference semantics, on the CPU reference backend with
//! [`CpuBackend::set_record_accesses`](crate::CpuBackend::set_record_accesses), traced by the
//! executor ([`Executor::set_trace`](crate::Executor::set_trace)), gives a [`Trace`]: per
//! buffer, in order, the accesses that concern where data must be:
//! - **on the host**: a `buffer.load` reads its element, a `buffer.store` writes it; a
//!   `buffer.copy` reads every element of the source and writes every element of the
//!   destination (a copy of a buffer onto itself only reads); a host-function call takes its
//!   declaration's word, as every plan must, since the function is opaque: a `read` argument is
//!   read whole; a `write` or `readwrite` one may be written anywhere but not necessarily
//!   everywhere (the executor does not require more), so what the call leaves must be there
//!   before it: it is read whole, then written whole;
//! - **on the device**: each dispatch's exact element accesses, as the CPU backend records them
//!   while it interprets the kernel (not the kernel-effects analysis' may-sets): the elements it
//!   read before writing them are read, the elements it wrote are written;
//! - **the return**: the caller observes every buffer argument and every returned buffer: each
//!   is read whole on the host.
//!
//! An argument's contents start on the host only; a buffer born in the run starts undefined,
//! which both copies hold alike (no plan needs to copy what nobody defined). Elements are the
//! unit: a copy moves a range of elements.
//!
//! # The fewest bytes
//!
//! Every write makes a new *version* of its element, held by the side that wrote it. A read on
//! side `S` sees the current version, so `S` must hold it: when `S` did not write it and has
//! not received it yet, the plan must copy that version to `S` once (a second copy of the same
//! version to the same side is never needed: nothing but a write changes what `S` holds, and a
//! write makes a new version). So the needed copies are exactly, per element, the versions read
//! on the side that did not write them, each to that side once; every correct plan makes at
//! least these (a plan that does not lets that read see an older value — the rule is by
//! access, not by value: a write of the value already there still makes a new version, since no
//! plan can count on it), and a plan that makes exactly these is correct. The fewest bytes are
//! their number times the element size.
//!
//! # The fewest copies among those
//!
//! Each needed copy has a *window* of points (see [`trace`]): after the write that made the
//! version, up to the first read of it on the other side (no other write of the element falls
//! in between). A plan of the fewest bytes moves nothing else, so each of its copy ops moves,
//! at one point, one contiguous range of one buffer's elements in one direction, every element
//! of which has a needed copy whose window contains the point. Buffers and directions are
//! independent. For each, [`Optimum::copies`] is the count of a plan found by greedy sweeps by
//! earliest deadline (an upper bound on the fewest), and [`Optimum::copies_lower_bound`] a
//! lower bound (stabbing points, and joins of neighbouring elements as a matching); where the
//! two meet ([`Optimum::copies_exact`]) the count is the fewest. `copies.rs` says how, and why
//! each is what it claims.
//!
//! # What it is not
//!
//! The oracle is per run: a plan is a program, and its copies are the same on every run, so no
//! static plan can meet the oracle on programs whose needs depend on data (a branch on a
//! loaded value, a trip count) unless it tests at run time. Nor does it know what a host
//! function does beyond its declaration. It counts copies as the runtime's report does: each
//! copy op once, whatever its size.

pub mod copies;
pub mod optimum;
pub mod ratios;
pub mod trace;

pub use optimum::{check_plan, optimum, Moved, Optimum, PlannedCopy};
pub use ratios::RatioSummary;
pub use trace::{Access, Event, Origin, Side, Trace, TracedBuffer};

#[cfg(test)]
mod tests;
