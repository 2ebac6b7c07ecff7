//! The kernel-effects analysis checked against the CPU reference backend on random kernels.
//!
//! Each case is a kernel that loads from `%src` and stores what it loaded plus one into `%dst`,
//! at indices drawn from a small grammar (affine in the global, local and group ids and a loop
//! variable; divisions, remainders, clamps; indices read from data), under random guards (on
//! ids, on buffer dimensions, on loaded data), possibly inside a counted loop, possibly through
//! a helper; and a random grid and workgroup size — often a grid that is not a multiple of the
//! workgroup size, whose last workgroup has work items past the grid, which must touch no buffer
//! (docs/lowering.md, "Which work items exist"), and sometimes a barrier, with which those work
//! items run, their buffer accesses skipped. The case runs on the CPU backend, whose fresh device
//! memory holds a poison pattern:
//!
//! - `%src` gets real values only inside the range the analysis says the kernel may read, and
//!   keeps poison elsewhere: a stored value of poison + 1 means a read outside that range;
//! - `%dst` gets nothing: an element that is no longer poison was written, and must lie in the
//!   range the analysis says the kernel may write;
//! - when the analysis says the dispatch writes every element of `%dst`, no poison may remain.
//!
//! A dispatch that fails (an index out of bounds: a kernel bug) is only checked for the
//! elements it wrote. `wrong_claims_are_caught` shows that the checks fail on wrong claims. `PROPTEST_CASES` sets the number of cases (default 256).
//! The generator of cases is `tests/kernel_gen/`.

mod kernel_gen;

use hat_ir::{parse_source, verify_module, Op};
use hat_passes::transfers::kernel_effects::{Dispatch, KernelEffects};
use hat_runtime::{Backend, BufferLayout, CpuBackend, ElementType, KernelArg};
use kernel_gen::{case, kernel_text, Case, Index, Variable};
use proptest::prelude::*;
use std::ops::Range;

const POISON: i32 = 0xDEAD_BEEFu32 as i32;

fn elements(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn find_kernel(ctx: &hat_ir::Context, module: Op) -> Op {
    ctx.walk(module).into_iter().find(|&op| hat_ir::verifier::symbol_name(ctx, op) == Some("k")).expect("@k")
}

/// What the analysis claims of a dispatch.
#[derive(Clone, Debug)]
struct Claims {
    read: Option<Range<u64>>,
    written: Option<Range<u64>>,
    every: bool,
}

/// What a run showed: `%dst` after the dispatch, and whether the dispatch succeeded.
struct Run {
    text: String,
    values: Vec<i32>,
    succeeded: bool,
}

/// The analysis' claims on `case`.
fn claims(case: &Case) -> Claims {
    let text = kernel_text(case);
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "case.hat", &text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let effects = KernelEffects::of(&ctx, find_kernel(&ctx, module));
    let dispatch = dispatch(case);
    Claims {
        read: effects.read_elements_in(0, &dispatch),
        written: effects.written_elements_in(1, &dispatch),
        every: effects.writes_every_element_in(1, &dispatch),
    }
}

fn dispatch(case: &Case) -> Dispatch {
    let shape = |s: &[usize]| -> Vec<Option<u64>> { s.iter().map(|&d| Some(d as u64)).collect() };
    Dispatch::new(&[Some(case.grid[0]), Some(case.grid[1])])
        .with_shape(0, &shape(&case.src_shape))
        .with_shape(1, &shape(&case.dst_shape))
}

/// Runs `case` on the CPU backend, `%src` holding values only in `readable` (poison elsewhere).
fn run(case: &Case, readable: &Option<Range<u64>>) -> Run {
    let text = kernel_text(case);
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "case.hat", &text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let verified = verify_module(&ctx, module).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let kernel = find_kernel(&ctx, module);
    let mut backend = CpuBackend::new();
    backend.set_parallel(false);
    let layout = |s: &[usize]| BufferLayout { element: ElementType::I32, shape: s.to_vec() };
    let src = backend.allocate(&layout(&case.src_shape)).expect("allocates");
    let dst = backend.allocate(&layout(&case.dst_shape)).expect("allocates");
    let src_len = elements(&case.src_shape);
    let readable: Range<usize> = match readable {
        Some(r) => (r.start as usize).min(src_len)..(r.end as usize).min(src_len),
        None => 0..src_len,
    };
    if !readable.is_empty() {
        let values: Vec<i32> = readable.clone().map(|i| i as i32 + 1).collect();
        backend.copy_to_device(src, readable.start * 4, &bytes(&values)).expect("copies");
    }
    let handle = backend.compile_kernel(verified.nested(kernel).expect("nested")).expect("compiles");
    let grid = [case.grid[0], case.grid[1], 1];
    let succeeded = backend.dispatch(handle, grid, &[KernelArg::Buffer(src), KernelArg::Buffer(dst)]).is_ok();
    let mut out = vec![0u8; elements(&case.dst_shape) * 4];
    backend.copy_from_device(dst, 0, &mut out).expect("copies back");
    let values = out.chunks(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    Run { text, values, succeeded }
}

/// Whether what the run showed agrees with the claims (the run filled `%src` per `claims.read`).
fn judge(claims: &Claims, run: &Run) -> Result<(), String> {
    let context = || format!("{}claims {claims:?}, dispatch succeeded: {}", run.text, run.succeeded);
    for (element, &value) in run.values.iter().enumerate() {
        if value == POISON {
            if claims.every && run.succeeded {
                return Err(format!("element {element} was not written\n{}", context()));
            }
            continue;
        }
        if value == POISON.wrapping_add(1) {
            return Err(format!("element {element} got a value read outside the read range\n{}", context()));
        }
        if claims.written.as_ref().is_some_and(|w| !w.contains(&(element as u64))) {
            return Err(format!("element {element} was written outside the write range\n{}", context()));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_analysis_is_sound_on_the_cpu_backend(case in case()) {
        let claims = claims(&case);
        let run = run(&case, &claims.read);
        judge(&claims, &run).map_err(TestCaseError::fail)?;
    }
}

/// The checks can fail: claims narrower than what the kernel does are caught.
#[test]
fn wrong_claims_are_caught() {
    let at_x = Index::Affine { variable: Variable::X, coefficient: 1, offset: 0 };
    let case = Case {
        src_shape: vec![8],
        dst_shape: vec![8],
        grid: [4, 1],
        workgroup: [4, 1],
        guards: Vec::new(),
        any: false,
        for_loop: None,
        data_guard: None,
        read_in_bounds: false,
        write_in_bounds: false,
        read: vec![at_x.clone()],
        write: vec![at_x],
        through_helper: false,
        barrier: false,
    };
    let truth = claims(&case);
    assert_eq!((truth.read.clone(), truth.written.clone(), truth.every), (Some(0..4), Some(0..4), false));
    assert_eq!(judge(&truth, &run(&case, &truth.read)), Ok(()));
    let narrower_write = Claims { written: Some(0..3), ..truth.clone() };
    assert!(judge(&narrower_write, &run(&case, &truth.read)).unwrap_err().contains("written outside"));
    let narrower_read = Claims { read: Some(0..3), ..truth.clone() };
    assert!(judge(&narrower_read, &run(&case, &narrower_read.read)).unwrap_err().contains("read outside"));
    let every = Claims { every: true, ..truth };
    assert!(judge(&every, &run(&case, &every.read)).unwrap_err().contains("not written"));
}

/// A grid of 6 in workgroups of 4, writing `%dst[x]` of 8 elements unguarded: the analysis
/// claims elements 0..6, not every element, and the CPU backend's work items 6 and 7 (past the
/// grid, in the last workgroup) write nothing, with or without a barrier (with one they run, as
/// padding, and their load of `%src` gives zero instead of reading poison past the read range).
#[test]
fn work_items_past_the_grid_touch_no_buffer() {
    let at_x = Index::Affine { variable: Variable::X, coefficient: 1, offset: 0 };
    for barrier in [false, true] {
        let case = Case {
            src_shape: vec![8],
            dst_shape: vec![8],
            grid: [6, 1],
            workgroup: [4, 1],
            guards: Vec::new(),
            any: false,
            for_loop: None,
            data_guard: None,
            read_in_bounds: false,
            write_in_bounds: false,
            read: vec![at_x.clone()],
            write: vec![at_x.clone()],
            through_helper: false,
            barrier,
        };
        let claims = claims(&case);
        assert_eq!((claims.read.clone(), claims.written.clone(), claims.every), (Some(0..6), Some(0..6), false));
        let run = run(&case, &claims.read);
        assert!(run.succeeded);
        assert_eq!(&run.values[6..], &[POISON, POISON], "barrier {barrier}");
        assert_eq!(judge(&claims, &run), Ok(()));
    }
}
