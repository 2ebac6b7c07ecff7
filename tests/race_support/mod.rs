//! Running kernels under the CPU backend's race check (`CpuBackend::set_check_races`) for the
//! race tests: the grids the static lint looks at a kernel over, buffers filled by a rule, and
//! the check's verdict.

#![allow(dead_code)]

use hat_ir::types::DYNAMIC;
use hat_ir::{Context, Op, TypeKind};
use hat_passes::race_lint::{dimensions, launched_kernel, sample_grid};
use hat_passes::transfers::kernel_effects::print::launch;
use hat_passes::transfers::kernel_effects::KernelEffects;
use hat_runtime::{Backend, BufferLayout, CpuBackend, ElementType, KernelArg, RuntimeError, Scalar};

/// How buffers are filled before a run.
#[derive(Copy, Clone, Debug)]
pub enum Fill {
    /// Every element 0 (data-dependent indices and guards then agree in every work item).
    Zeros,
    /// Element `k` is `k` (`k % 2` for `i1`).
    Iota,
    /// Element `k` is `k % 16` (`k % 2` for `i1`): indices read from data stay in small buffers.
    Mod16,
}

/// What the race check said of one dispatch.
#[derive(Clone, Debug)]
pub enum Verdict {
    /// It ran to the end with no race.
    Clean,
    /// The race it reported.
    Race(String),
    /// It stopped at an out-of-bounds access (no race before it).
    OutOfBounds(String),
}

impl Verdict {
    /// Whether it is a race.
    pub fn is_race(&self) -> bool {
        matches!(self, Verdict::Race(_))
    }
}

/// The `kernel.func`s of `module`.
pub fn kernels(ctx: &Context, module: Op) -> Vec<Op> {
    ctx.body_ops(module).into_iter().filter(|&op| ctx.name_str(op) == "kernel.func").collect()
}

/// The symbol name of `op`.
pub fn symbol(ctx: &Context, op: Op) -> String {
    hat_ir::verifier::symbol_name(ctx, op).unwrap_or("?").to_string()
}

/// The grids the static lint looks at `kernel` over: those of its launches with a constant
/// grid, and the sample grid (`race_lint::sample_grid`) where there is none or some launch's grid
/// is not a constant. Each as x, y, z.
pub fn grids(ctx: &Context, module: Op, kernel: Op) -> Vec<[u64; 3]> {
    let mut grids = Vec::new();
    let mut unknown_grid = false;
    for op in ctx.walk(module) {
        if let Some((k, dispatch)) = launch(ctx, op) {
            if k == kernel {
                grids.push(dispatch.grid.clone());
            }
        } else if launched_kernel(ctx, op) == Some(kernel) {
            unknown_grid = true;
        }
    }
    if grids.is_empty() || unknown_grid {
        let effects = KernelEffects::of(ctx, kernel);
        grids.push(sample_grid(dimensions(ctx, kernel, &effects)));
    }
    grids
        .into_iter()
        .filter_map(|grid| {
            let mut xyz = [1u64; 3];
            for (d, size) in grid.iter().enumerate().take(3) {
                xyz[d] = (*size)?;
            }
            Some(xyz)
        })
        .collect()
}

/// Runs `kernel` (in verified `module`) once on `backend` over `grid`, its buffers filled by
/// `fill` (dynamic dimensions 64) and its scalars 0; the final bytes of each buffer argument.
pub fn run_on(
    backend: &mut dyn Backend,
    verified: hat_ir::Verified<'_>,
    kernel: Op,
    grid: [u64; 3],
    fill: Fill,
) -> Result<Vec<Vec<u8>>, RuntimeError> {
    let ctx = verified.ctx();
    let handle = backend.compile_kernel(verified.nested(kernel).expect("a verified kernel"))?;
    let body = ctx.regions(kernel)[0];
    let entry = ctx.region_blocks(body)[0];
    let mut args = Vec::new();
    let mut buffers = Vec::new();
    for &parameter in ctx.block_arguments(entry) {
        let ty = ctx.value_type(parameter);
        match ctx.type_kind(ty) {
            TypeKind::MemRef { shape, element } => {
                let element = ElementType::of(ctx, *element).expect("a known element type");
                let shape: Vec<usize> = shape.iter().map(|&s| if s == DYNAMIC { 64 } else { s as usize }).collect();
                let layout = BufferLayout { element, shape };
                let buffer = backend.allocate(&layout)?;
                let mut bytes = vec![0u8; layout.bytes()];
                for (k, chunk) in bytes.chunks_mut(element.size()).enumerate() {
                    let k = k as i64;
                    let value = match (fill, element) {
                        (Fill::Zeros, _) => 0,
                        (_, ElementType::I1) => k % 2,
                        (Fill::Iota, _) => k,
                        (Fill::Mod16, _) => k % 16,
                    };
                    let value = if element.is_float() { Scalar::Float(value as f64) } else { Scalar::Int(value) };
                    element.write(value, chunk);
                }
                backend.copy_to_device(buffer, 0, &bytes)?;
                args.push(KernelArg::Buffer(buffer));
                buffers.push((buffer, bytes.len()));
            }
            _ => {
                let element = ElementType::of(ctx, ty).expect("a scalar type");
                let zero = if element.is_float() { Scalar::Float(0.0) } else { Scalar::Int(0) };
                args.push(KernelArg::Scalar(zero, element));
            }
        }
    }
    backend.dispatch(handle, grid, &args)?;
    let mut contents = Vec::new();
    for (buffer, len) in buffers {
        let mut bytes = vec![0u8; len];
        backend.copy_from_device(buffer, 0, &mut bytes)?;
        contents.push(bytes);
    }
    Ok(contents)
}

/// Runs `kernel` (in verified `module`) once over `grid` on the CPU backend with the race check
/// on (see [`run_on`]).
pub fn check(verified: hat_ir::Verified<'_>, kernel: Op, grid: [u64; 3], fill: Fill) -> Verdict {
    let mut backend = CpuBackend::new();
    backend.set_check_races(true);
    match run_on(&mut backend, verified, kernel, grid, fill) {
        Ok(_) => Verdict::Clean,
        Err(error @ RuntimeError::DataRace(_)) => Verdict::Race(error.to_string()),
        Err(error @ RuntimeError::DeviceOutOfBounds { .. }) => Verdict::OutOfBounds(error.to_string()),
        Err(error) => panic!("@{}: {error}", symbol(verified.ctx(), kernel)),
    }
}

/// The race check's verdict on `kernel` over each grid the lint looks at, with buffers of
/// zeros, then of `iota`: the first race, else the first other verdict.
pub fn verdict(verified: hat_ir::Verified<'_>, module: Op, kernel: Op) -> Verdict {
    let mut first = None;
    for grid in grids(verified.ctx(), module, kernel) {
        for fill in [Fill::Zeros, Fill::Iota] {
            let verdict = check(verified, kernel, grid, fill);
            if verdict.is_race() {
                return verdict;
            }
            first.get_or_insert(verdict);
        }
    }
    first.unwrap_or(Verdict::Clean)
}
