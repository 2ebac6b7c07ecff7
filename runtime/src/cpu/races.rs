//! The dynamic race check of the CPU backend ([`super::CpuBackend::set_check_races`]): while a
//! dispatch runs, which work item stored to and loaded each element of each buffer argument
//! and of each workgroup-local buffer, so that the first access that conflicts with an earlier
//! one stops the dispatch with [`RuntimeError::DataRace`], naming the kernel, the element and
//! both work items.
//!
//! Two accesses conflict when they touch one element, at least one stores, they come from
//! different work items, and nothing orders them: they are in different workgroups (no barrier
//! orders those), or in one workgroup between the same two barriers (a `kernel.barrier` makes
//! what was written before it visible after it, for every buffer; docs/dialects/kernel.md).
//! Atomics (`kernel.atomic_rmw`) are never recorded: they are exempt. Work items past the grid
//! touch no buffer argument (see `interp.rs`), so only workgroup-local memory records them.
//!
//! The check runs workgroups one after the other in linear order and, in a workgroup, its work
//! items in the order the interpreter runs them, so "first" is that order and the report is the
//! same on every run. What each element keeps is bounded (not a list of all its readers):
//! - from earlier workgroups: one work item that stored and one that loaded (any earlier
//!   workgroup's access conflicts with any later one by another work item);
//! - from the current workgroup: the last store with its barrier round, and the loads of the
//!   latest round, up to two distinct work items — a later store by one of them still
//!   conflicts with the other.
//!
//! Workgroup-local memory is fresh in every workgroup, so its records are dropped when the next
//! workgroup starts.

use crate::error::{DataRace, RuntimeError};
use hat_ir::Location;
use rustc_hash::FxHashMap;

/// One recorded access.
#[derive(Copy, Clone, Debug)]
struct Touch {
    item: [u64; 3],
    /// The barrier round of its workgroup (0 before the first barrier).
    round: u32,
    location: Location,
}

/// What one element keeps (see the module documentation).
#[derive(Clone, Debug, Default)]
struct Cell {
    /// The workgroup (linear index) the fields below `past_read` describe.
    group: u64,
    past_store: Option<Touch>,
    past_load: Option<Touch>,
    store: Option<Touch>,
    loads: [Option<Touch>; 2],
    any_load: Option<Touch>,
}

/// The names and shapes the report needs of one buffer handle.
#[derive(Clone, Debug)]
pub(crate) struct BufferName {
    /// `%name` of a buffer argument, or what a local buffer is.
    pub name: String,
    /// Its shape, to turn a flat index back into indices.
    pub shape: Vec<usize>,
    /// Whether it is workgroup-local memory.
    pub local: bool,
}

/// The records of one dispatch.
#[derive(Debug)]
pub(crate) struct Recorder {
    kernel: String,
    buffers: Vec<BufferName>,
    cells: FxHashMap<(u32, usize), Cell>,
    group: u64,
    round: u32,
}

impl Recorder {
    /// A recorder for a dispatch of `kernel` whose buffer handles are `buffers` (arguments,
    /// then workgroup-local buffers).
    pub fn new(kernel: &str, buffers: Vec<BufferName>) -> Recorder {
        Recorder { kernel: kernel.to_string(), buffers, cells: FxHashMap::default(), group: 0, round: 0 }
    }

    /// The workgroup of linear index `group` starts (groups start in increasing order).
    pub fn start_group(&mut self, group: u64) {
        self.group = group;
        self.round = 0;
    }

    /// Every work item of the workgroup passed a barrier.
    pub fn barrier(&mut self) {
        self.round += 1;
    }

    /// Records that work item `item` stores (`store`) or loads element `flat` of buffer
    /// `handle`, at `location`; the race when it conflicts with an earlier access.
    pub fn touch(
        &mut self,
        handle: u32,
        flat: usize,
        item: [u64; 3],
        store: bool,
        location: Location,
    ) -> Result<(), RuntimeError> {
        let (group, round) = (self.group, self.round);
        let local = self.buffers.get(handle as usize).is_some_and(|b| b.local);
        let cell = self.cells.entry((handle, flat)).or_insert_with(|| Cell { group, ..Cell::default() });
        if cell.group != group {
            *cell = if local {
                Cell { group, ..Cell::default() }
            } else {
                Cell {
                    group,
                    past_store: cell.past_store.or(cell.store),
                    past_load: cell.past_load.or(cell.any_load),
                    ..Cell::default()
                }
            };
        }
        let now = Touch { item, round, location };
        // Within the workgroup, an access of an earlier round is ordered by a barrier.
        let unordered = |other: &Touch| other.item != item && other.round == round;
        let earlier_store = cell.past_store.or(cell.store.filter(unordered));
        if let Some(other) = earlier_store {
            return Err(self.race(handle, flat, (other, true), (now, store)));
        }
        if store {
            let earlier_load = cell.past_load.or_else(|| cell.loads.iter().flatten().copied().find(unordered));
            if let Some(other) = earlier_load {
                return Err(self.race(handle, flat, (other, false), (now, true)));
            }
            cell.store = Some(now);
        } else {
            cell.any_load = cell.any_load.or(Some(now));
            if cell.loads[0].is_some_and(|t| t.round != round) {
                cell.loads = [None, None];
            }
            match cell.loads {
                [None, _] => cell.loads[0] = Some(now),
                [Some(first), None] if first.item != item => cell.loads[1] = Some(now),
                _ => {}
            }
        }
        Ok(())
    }

    fn race(&self, handle: u32, flat: usize, first: (Touch, bool), second: (Touch, bool)) -> RuntimeError {
        let (buffer, shape) = match self.buffers.get(handle as usize) {
            Some(b) => (b.name.clone(), b.shape.as_slice()),
            None => (format!("buffer #{handle}"), &[][..]),
        };
        RuntimeError::DataRace(Box::new(DataRace {
            kernel: self.kernel.clone(),
            buffer,
            element: unflatten(flat, shape),
            first: first.0.item,
            first_stores: first.1,
            first_location: first.0.location,
            second: second.0.item,
            second_stores: second.1,
            location: second.0.location,
        }))
    }
}

/// The indices of the `flat`-th element (row-major) of a buffer of `shape`.
fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<u64> {
    if shape.is_empty() {
        return vec![flat as u64];
    }
    let mut indices = vec![0u64; shape.len()];
    for (index, &extent) in indices.iter_mut().zip(shape).rev() {
        let extent = extent.max(1);
        *index = (flat % extent) as u64;
        flat /= extent;
    }
    indices
}
