//! Whether a dispatch may write one buffer parameter in the storage of another: each work item
//! reads and writes only its own element of the two, reads the one before it writes the other,
//! and writes every element of the other. Then binding both parameters to one buffer gives the
//! same results as binding them to two (what the reader held is read before it is overwritten,
//! by the work item that overwrites it, and nothing else reads it), so a plan whose reader dies
//! with the dispatch may hand its storage on to the writer (`plan-memory`).
//!
//! Proved from the accesses, never assumed:
//! - the reader is not written, the writer is; no access is atomic, none reaches an unknown
//!   buffer (an access that may be to any parameter may be to these);
//! - the two shapes are known and equal, and the dispatch writes every element of the writer
//!   (what it leaves unwritten would otherwise show the reader's old data);
//! - every access to either has one element index, the same for all of them, one-to-one in the
//!   work items: each index is a work-item id (distinct dimensions) plus what the whole
//!   dispatch shares, every dimension of the grid with more than one work item among them; or,
//!   the flat (row-major) element is `Σ a_d × id_d + c` whose coefficients grow faster than
//!   the grid spans below them (mixed radix), as a 1-D dispatch over a 2-D image gives;
//! - within a work item, every read of the reader comes before every write of the writer in
//!   program order, and no loop holds both (a later iteration would read what an earlier one
//!   wrote): every region enclosing both runs at most once per run of its op
//!   (`RegionBranchOpInterface::is_repetitive_region`: an `scf.if`'s, not an `scf.for`'s; an op
//!   without the interface may repeat its regions).

use super::affine::{Affine, Atom};
use super::summary::{Access, Extent, Target};
use super::{Dispatch, KernelEffects};
use hat_ir::interfaces::{enclosing_execution_space, resolve_callee, CallOpInterface, RegionBranchOpInterface};
use hat_ir::{Context, Op};
use rustc_hash::FxHashMap;

impl KernelEffects {
    /// Whether a dispatch of `kernel` described by `dispatch` may bind parameter `write` to the
    /// buffer bound to parameter `read`. See the module documentation.
    pub fn writes_in_place(&self, ctx: &Context, kernel: Op, read: usize, write: usize, dispatch: &Dispatch) -> bool {
        let (Some(r), Some(w)) = (self.params.get(read), self.params.get(write)) else { return false };
        if read == write || !r.is_buffer || !w.is_buffer || r.writes || !w.writes || r.atomic || w.atomic {
            return false;
        }
        let query = self.query(dispatch);
        let (Some(shape), Some(other)) = (query.shape(read), query.shape(write)) else { return false };
        let Some(shape) = shape.into_iter().collect::<Option<Vec<u64>>>() else { return false };
        if other.len() != shape.len() || other.iter().zip(&shape).any(|(o, s)| *o != Some(*s)) {
            return false;
        }
        if !self.writes_every_element_in(write, dispatch) {
            return false;
        }
        let mut index: Option<Vec<Affine>> = None;
        let mut reads: Vec<&Access> = Vec::new();
        let mut writes: Vec<&Access> = Vec::new();
        for access in self.accesses.iter().filter(|a| a.read || a.write) {
            let param = match access.target {
                Target::Any => return false,
                Target::Param(p) if p == read || p == write => p,
                Target::Param(_) => continue,
            };
            let Extent::Element(indices) = query.resolve(access).extent else { return false };
            match &index {
                Some(first) if *first != indices => return false,
                Some(_) => {}
                None => index = Some(indices),
            }
            if param == read {
                reads.push(access);
            } else if access.write {
                writes.push(access);
            }
        }
        let Some(index) = index else { return false };
        if !one_to_one(&index, &shape, dispatch) {
            return false;
        }
        if reads.is_empty() || writes.is_empty() {
            return true; // nothing to order
        }
        let mut order = ProgramOrder::new(kernel);
        let mut place = |accesses: &[&Access]| accesses.iter().map(|a| order.place(ctx, a)).collect::<Option<Vec<_>>>();
        let (Some(reads), Some(writes)) = (place(&reads), place(&writes)) else { return false };
        reads.iter().all(|r| writes.iter().all(|w| r.before_outside_loops(ctx, w)))
    }
}

/// Whether distinct work items of `dispatch` touch distinct elements through `index` (a buffer
/// of `shape`).
fn one_to_one(index: &[Affine], shape: &[u64], dispatch: &Dispatch) -> bool {
    let spans_more_than_one = |d: u8| dispatch.grid_size(d as usize) != Some(1);
    // Per dimension of the index: an id (coefficient ±1) plus what the dispatch shares.
    let mut ids: Vec<u8> = Vec::new();
    let per_dimension = index.iter().all(|form| {
        let mut id = None;
        for (atom, coefficient) in form.terms() {
            match atom {
                Atom::Id(d) if coefficient.abs() == 1 && id.is_none() => id = Some(*d),
                atom if shared(atom) => {}
                _ => return false,
            }
        }
        id.is_some_and(|d| {
            let fresh = !ids.contains(&d);
            ids.push(d);
            fresh
        })
    });
    if per_dimension && (0..3u8).filter(|&d| spans_more_than_one(d)).all(|d| ids.contains(&d)) {
        return true;
    }
    // The flat element as a mixed-radix number in the ids.
    let mut flat = Some(Affine::constant(0));
    let mut stride = 1i64;
    for (form, &size) in index.iter().zip(shape).rev() {
        flat = flat.and_then(|f| f.add(&form.scale(stride)?));
        stride = match i64::try_from(size).ok().and_then(|s| stride.checked_mul(s)) {
            Some(s) => s,
            None => return false,
        };
    }
    let Some(flat) = flat else { return false };
    let mut coefficients: Vec<(i64, Option<u64>)> = Vec::new();
    for (atom, coefficient) in flat.terms() {
        match atom {
            Atom::Id(d) => coefficients.push((coefficient.abs(), dispatch.grid_size(*d as usize))),
            atom if shared(atom) => {}
            _ => return false,
        }
    }
    if (0..3u8).any(|d| spans_more_than_one(d) && !flat.terms().any(|(a, _)| *a == Atom::Id(d))) {
        return false;
    }
    coefficients.sort_unstable();
    // Each coefficient must exceed the most the smaller ones reach together.
    let mut reach: Option<i128> = Some(0);
    for (coefficient, span) in coefficients {
        match reach {
            Some(r) if i128::from(coefficient) > r => {}
            _ => return false,
        }
        reach = span.and_then(|n| reach.map(|r| r + i128::from(coefficient) * (i128::from(n) - 1).max(0)));
    }
    true
}

/// Whether an atom is the same for every work item of a dispatch.
fn shared(atom: &Atom) -> bool {
    matches!(atom, Atom::GridSize(_) | Atom::WorkgroupSize(_) | Atom::Dim { .. } | Atom::Param(_))
}

/// Where one access stands in a work item's program: its order (the position of the kernel's op
/// that leads to it, then of the op itself in its function) and the ops enclosing it, each with
/// the index of its region that holds the access.
struct Placement {
    order: (usize, usize),
    enclosing: Vec<(Op, usize)>,
}

impl Placement {
    /// Whether `self` (a read) surely happens before `write` in one work item and no loop holds
    /// both: an op enclosing both may run them in either order when a region of it holding
    /// either may run again.
    fn before_outside_loops(&self, ctx: &Context, write: &Placement) -> bool {
        let runs_once = |op: Op, region: usize| {
            ctx.interface::<dyn RegionBranchOpInterface>(op)
                .is_some_and(|branch| !branch.is_repetitive_region(ctx, op, region))
        };
        self.order < write.order
            && self.enclosing.iter().all(|&(op, region)| {
                write
                    .enclosing
                    .iter()
                    .filter(|&&(other, _)| other == op)
                    .all(|&(_, other_region)| runs_once(op, region) && runs_once(op, other_region))
            })
    }
}

/// The program order of a kernel and of the helpers it calls: each function's ops numbered in
/// pre-order, once per function.
struct ProgramOrder {
    kernel: Op,
    positions: FxHashMap<Op, FxHashMap<Op, usize>>,
}

impl ProgramOrder {
    fn new(kernel: Op) -> ProgramOrder {
        ProgramOrder { kernel, positions: FxHashMap::default() }
    }

    fn position(&mut self, ctx: &Context, function: Op, op: Op) -> Option<usize> {
        let positions = self
            .positions
            .entry(function)
            .or_insert_with(|| ctx.walk(function).into_iter().enumerate().map(|(i, o)| (o, i)).collect());
        positions.get(&op).copied()
    }

    /// Where `access` stands; `None` when that is not known: its helper is not the one the
    /// kernel's call names directly (a helper calling a helper).
    fn place(&mut self, ctx: &Context, access: &Access) -> Option<Placement> {
        let (function, _) = enclosing_execution_space(ctx, access.op)?;
        let mut enclosing = Vec::new();
        if function != self.kernel {
            ctx.interface::<dyn CallOpInterface>(access.site)?;
            if resolve_callee(ctx, access.site) != Some(function) {
                return None;
            }
            enclosing.extend(ancestors(ctx, access.op, function));
        }
        enclosing.extend(ancestors(ctx, access.site, self.kernel));
        let order = (self.position(ctx, self.kernel, access.site)?, self.position(ctx, function, access.op)?);
        Some(Placement { order, enclosing })
    }
}

/// The ops around `op` up to (not including) `function`, each with the index of its region
/// that holds `op`.
fn ancestors(ctx: &Context, op: Op, function: Op) -> Vec<(Op, usize)> {
    let mut out = Vec::new();
    let mut child = op;
    while let Some(parent) = ctx.parent_op(child).filter(|&p| p != function) {
        let region = ctx.parent_block(child).and_then(|b| ctx.block_parent(b));
        let index = ctx.regions(parent).iter().position(|&r| Some(r) == region).unwrap_or(0);
        out.push((parent, index));
        child = parent;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Dispatch, KernelEffects};
    use hat_ir::parse_source;

    /// Whether a dispatch over `grid` of kernel `@k` (`signature`, `body`) writes parameter 1 in
    /// place of parameter 0, both buffers of `shape`.
    fn in_place(signature: &str, body: &str, grid: &[u64], shape: &[u64]) -> bool {
        let text = format!("kernel.func @k({signature}) workgroup(8, 8) {{\n{body}\n  kernel.return\n}}\n");
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, "in-place.hat", &text).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(hat_ir::verify(&ctx, module).is_empty(), "{text}");
        let kernel = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "kernel.func").unwrap();
        let effects = KernelEffects::of(&ctx, kernel);
        let shape: Vec<Option<u64>> = shape.iter().map(|&s| Some(s)).collect();
        let grid: Vec<Option<u64>> = grid.iter().map(|&g| Some(g)).collect();
        let dispatch = Dispatch::new(&grid).with_shape(0, &shape).with_shape(1, &shape);
        effects.writes_in_place(&ctx, kernel, 0, 1, &dispatch)
    }

    const TWO_D: &str = "%src: memref<16x16xf32>, %dst: memref<16x16xf32>";

    #[test]
    fn each_work_item_reading_then_writing_its_own_element_writes_in_place() {
        let body = "  %x = kernel.global_id x
  %y = kernel.global_id y
  %v = buffer.load %src[%y, %x] : memref<16x16xf32>
  %w = arith.mulf %v, %v : f32
  buffer.store %w, %dst[%y, %x] : memref<16x16xf32>";
        assert!(in_place(TWO_D, body, &[16, 16], &[16, 16]));
        // A grid that leaves elements unwritten: the reader's old data would show.
        assert!(!in_place(TWO_D, body, &[8, 16], &[16, 16]));
    }

    #[test]
    fn a_flat_id_split_into_row_and_column_is_one_to_one() {
        let body = "  %i = kernel.global_id x
  %c16 = arith.constant 16 : index
  %row = arith.divui %i, %c16 : index
  %col = arith.remui %i, %c16 : index
  %v = buffer.load %src[%row, %col] : memref<16x16xf32>
  buffer.store %v, %dst[%row, %col] : memref<16x16xf32>";
        assert!(in_place(TWO_D, body, &[256], &[16, 16]));
    }

    #[test]
    fn a_neighbour_a_repeated_element_or_a_write_before_the_read_is_not_in_place() {
        let neighbour = "  %x = kernel.global_id x
  %y = kernel.global_id y
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %x1 = arith.addi %x, %c1 : index
  %xn = arith.minui %x1, %c15 : index
  %v = buffer.load %src[%y, %xn] : memref<16x16xf32>
  buffer.store %v, %dst[%y, %x] : memref<16x16xf32>";
        assert!(!in_place(TWO_D, neighbour, &[16, 16], &[16, 16]));
        // The work items of column x all touch element x of row 0: not one-to-one.
        let row_only = "  %x = kernel.global_id x
  %c0 = arith.constant 0 : index
  %v = buffer.load %src[%c0, %x] : memref<16x16xf32>
  buffer.store %v, %dst[%c0, %x] : memref<16x16xf32>";
        assert!(!in_place(TWO_D, row_only, &[16, 16], &[16, 16]));
        let write_first = "  %x = kernel.global_id x
  %y = kernel.global_id y
  %zero = arith.constant 0.0 : f32
  buffer.store %zero, %dst[%y, %x] : memref<16x16xf32>
  %v = buffer.load %src[%y, %x] : memref<16x16xf32>
  %w = arith.addf %v, %v : f32
  buffer.store %w, %dst[%y, %x] : memref<16x16xf32>";
        assert!(!in_place(TWO_D, write_first, &[16, 16], &[16, 16]));
    }

    #[test]
    fn a_loop_around_the_read_and_the_write_is_not_in_place() {
        let body = "  %x = kernel.global_id x
  %y = kernel.global_id y
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %k = %c0 to %c3 step %c1 {
    %v = buffer.load %src[%y, %x] : memref<16x16xf32>
    %w = arith.addf %v, %v : f32
    buffer.store %w, %dst[%y, %x] : memref<16x16xf32>
  }";
        assert!(!in_place(TWO_D, body, &[16, 16], &[16, 16]));
        // Reads in a loop, the write after it: every read comes first.
        let reads_in_a_loop = "  %x = kernel.global_id x
  %y = kernel.global_id y
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = buffer.load %src[%y, %x] : memref<16x16xf32>
    %next = arith.addf %acc, %v : f32
    scf.yield %next : f32
  }
  buffer.store %sum, %dst[%y, %x] : memref<16x16xf32>";
        assert!(in_place(TWO_D, reads_in_a_loop, &[16, 16], &[16, 16]));
    }
}
