//! The 18 scenarios of the design (`examples/*.hat`), run through the host executor on the CPU
//! reference backend under the reference semantics ("copy everything, every time"), each
//! checked against results computed here, independently, in plain Rust: a separate Life, a
//! separate Mandelbrot, Sobel, morphology, pooling, ... — and, for Life, known patterns (a
//! blinker has period 2, a glider moves one cell diagonally every 4 generations).
//!
//! Each scenario also checks the reference semantics' accounting that its file's comment gives
//! ("reference semantics: N transfers, B bytes"), and squares checks the poison oracle: run in
//! explicit mode with a missing transfer, the results differ.
//!
//! Floats: where the kernel's arithmetic is a chain of f32 operations the expectation repeats the
//! same operations in the same order (IEEE arithmetic is deterministic, so the results are equal
//! bit for bit); where a different but equivalent formula is clearer, a tolerance is used.
//!
//! Scenario 16 (races): the racy kernels' results depend on the schedule; only the
//! deterministic parts are checked (the correct stencil's output, the guarded store when exactly
//! one element matches or none does, the range of the last writer's id).

use hat_ir::{parse_source, verify, Context, Op};
use hat_runtime::{
    ArgValue, CpuBackend, Executor, ExecutorOptions, HostArg, HostBuffer, HostCall, RunOutput, Scalar, TransferMode,
};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

// ----- running a program ------------------------------------------------------------------------

/// A parsed, verified program.
struct Program {
    ctx: Context,
    module: Op,
}

impl Program {
    /// `examples/NAME`.
    fn example(name: &str) -> Program {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Program::from_text(&format!("examples/{name}"), &text)
    }

    fn from_text(name: &str, text: &str) -> Program {
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, name, text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let errors = verify(&ctx, module);
        assert!(errors.is_empty(), "{name} does not verify: {errors:?}");
        Program { ctx, module }
    }

    /// Runs `@main` under the reference semantics.
    fn run(&self, args: Vec<ArgValue>) -> RunOutput {
        self.run_with(TransferMode::Reference, args, |_| {})
    }

    /// Runs `@main` in `mode`, after `register` has registered host functions.
    fn run_with(&self, mode: TransferMode, args: Vec<ArgValue>, register: impl FnOnce(&mut Executor<'_>)) -> RunOutput {
        let mut backend = CpuBackend::new();
        let module = hat_ir::verify_module(&self.ctx, self.module).expect("verified when parsed");
        let mut executor = Executor::new(module, &mut backend, ExecutorOptions { mode });
        register(&mut executor);
        executor.run("main", args).unwrap_or_else(|e| panic!("run failed: {e}"))
    }
}

/// What a host function saw, call by call: its index argument and its buffer's elements.
type CallLog = Rc<RefCell<Vec<(i64, Vec<i32>)>>>;

fn int(v: i64) -> ArgValue {
    ArgValue::Scalar(Scalar::Int(v))
}

fn float(v: f32) -> ArgValue {
    ArgValue::Scalar(Scalar::Float(v as f64))
}

fn i32s(shape: &[usize], values: &[i32]) -> ArgValue {
    ArgValue::Buffer(HostBuffer::from_i32(shape, values).expect("values fit the shape"))
}

fn f32s(shape: &[usize], values: &[f32]) -> ArgValue {
    ArgValue::Buffer(HostBuffer::from_f32(shape, values).expect("values fit the shape"))
}

fn out_i32(output: &RunOutput, index: usize) -> Vec<i32> {
    output.buffers[index].to_i32().expect("an i32 buffer")
}

fn out_f32(output: &RunOutput, index: usize) -> Vec<f32> {
    output.buffers[index].to_f32().expect("an f32 buffer")
}

/// Checks the totals of the run's report: (count, bytes) each way, and dispatches.
fn assert_moved(output: &RunOutput, to_device: (u64, u64), from_device: (u64, u64), dispatches: u64) {
    let report = &output.report;
    assert_eq!((report.to_device.count, report.to_device.bytes), to_device, "to_device (count, bytes)");
    assert_eq!((report.from_device.count, report.from_device.bytes), from_device, "from_device (count, bytes)");
    assert_eq!(report.dispatches, dispatches, "dispatches");
}

/// A small deterministic generator for inputs (a 64-bit LCG, high bits).
struct Inputs(u64);

impl Inputs {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }

    /// Integers in `[low, high)`.
    fn ints(&mut self, n: usize, low: i32, high: i32) -> Vec<i32> {
        (0..n).map(|_| low + (self.next() % (high - low) as u32) as i32).collect()
    }

    /// Floats in `[low, high)`, multiples of 1/64 (exact in f32).
    fn floats(&mut self, n: usize, low: f32, high: f32) -> Vec<f32> {
        let steps = ((high - low) * 64.0) as u32;
        (0..n).map(|_| low + (self.next() % steps) as f32 / 64.0).collect()
    }
}

fn assert_close(actual: &[f32], expected: &[f32], tolerance: f32, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!((a - e).abs() <= tolerance * (1.0 + e.abs()), "{what}[{i}]: got {a}, expected {e}");
    }
}

// ----- 1. squares --------------------------------------------------------------------------------

fn squares_input() -> Vec<i32> {
    let mut data: Vec<i32> = (0..64).map(|i| i * 37 - 1000).collect();
    data[63] = 100_000; // squares past i32: wraps
    data
}

#[test]
fn s01_squares() {
    let program = Program::example("01-squares.hat");
    let data = squares_input();
    let output = program.run(vec![i32s(&[64], &data)]);
    let expected: Vec<i32> = data.iter().map(|v| v.wrapping_mul(*v)).collect();
    assert_eq!(out_i32(&output, 0), expected);
    assert!(output.results.is_empty());
    // Reference semantics: one copy in and one out per dispatch, 256 B each.
    assert_moved(&output, (1, 256), (1, 256), 1);
    let data_moves = output.report.buffer("data").expect("data is in the report");
    assert_eq!((data_moves.to_device.count, data_moves.to_device.bytes), (1, 256));
    assert_eq!((data_moves.from_device.count, data_moves.from_device.bytes), (1, 256));
}

/// The poison oracle: in explicit mode, a program with missing transfers gives different results.
#[test]
fn s01_squares_explicit_mode_shows_missing_transfers() {
    let data = squares_input();
    let expected: Vec<i32> = data.iter().map(|v| v.wrapping_mul(*v)).collect();

    // No transfers at all: the kernel squares poison on the device, the host copy never changes.
    let program = Program::example("01-squares.hat");
    let output = program.run_with(TransferMode::Explicit, vec![i32s(&[64], &data)], |_| {});
    assert_eq!(out_i32(&output, 0), data);
    assert_ne!(out_i32(&output, 0), expected);
    assert_moved(&output, (0, 0), (0, 0), 1);

    // Only the copy back: the caller gets squared poison.
    let kernel = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/01-squares.hat"))
        .expect("example");
    let kernel = &kernel[kernel.find("kernel.func").expect("a kernel")..kernel.find("compute.func").expect("@main")];
    let variant = |body: &str| {
        format!(
            "{kernel}compute.func @main(%data: memref<64xi32>) {{\n  %c64 = arith.constant 64 : index\n{body}  compute.return\n}}\n"
        )
    };
    let dispatch = "  compute.dispatch @square[%c64](%data) : (memref<64xi32>)\n";
    let copy_in = "  buffer.to_device %data : memref<64xi32>\n";
    let copy_out = "  buffer.from_device %data : memref<64xi32>\n";
    let missing_in = Program::from_text("missing-in.hat", &variant(&format!("{dispatch}{copy_out}")));
    let output = missing_in.run_with(TransferMode::Explicit, vec![i32s(&[64], &data)], |_| {});
    let poison = 0xDEAD_BEEFu32 as i32;
    assert_eq!(out_i32(&output, 0), vec![poison.wrapping_mul(poison); 64]);
    assert_moved(&output, (0, 0), (1, 256), 1);

    // Both transfers: explicit mode gives the reference results.
    let complete = Program::from_text("complete.hat", &variant(&format!("{copy_in}{dispatch}{copy_out}")));
    let output = complete.run_with(TransferMode::Explicit, vec![i32s(&[64], &data)], |_| {});
    assert_eq!(out_i32(&output, 0), expected);
    assert_moved(&output, (1, 256), (1, 256), 1);
    // And the reference semantics ignore the program's own transfers.
    let output = complete.run(vec![i32s(&[64], &data)]);
    assert_eq!(out_i32(&output, 0), expected);
    assert_moved(&output, (1, 256), (1, 256), 1);
}

// ----- 2. fill -----------------------------------------------------------------------------------

#[test]
fn s02_fill() {
    let program = Program::example("02-fill.hat");
    let old = Inputs(2).ints(64, -1000, 1000);
    for (value, step) in [(-7i32, 3i32), (5, 0), (i32::MAX, 1)] {
        let output = program.run(vec![i32s(&[64], &old), int(value as i64), int(step as i64)]);
        let expected: Vec<i32> = (0..64).map(|i| value.wrapping_add(step.wrapping_mul(i))).collect();
        assert_eq!(out_i32(&output, 0), expected, "value {value}, step {step}");
        assert_moved(&output, (1, 256), (1, 256), 1);
    }
}

#[test]
fn s02b_fill_masked() {
    let program = Program::example("02b-fill-masked.hat");
    let data: Vec<i32> = (0..64).map(|i| 1000 + i).collect();
    let mask: Vec<i32> = (0..64)
        .map(|i| {
            if i % 3 == 0 {
                1
            } else if i % 7 == 0 {
                -5
            } else {
                0
            }
        })
        .collect();
    let output = program.run(vec![i32s(&[64], &data), i32s(&[64], &mask), int(42)]);
    let expected: Vec<i32> = data.iter().zip(&mask).map(|(&d, &m)| if m != 0 { 42 } else { d }).collect();
    assert_eq!(out_i32(&output, 0), expected);
    assert_eq!(out_i32(&output, 1), mask);
    // Reference semantics: 4 transfers, 1024 B.
    assert_moved(&output, (2, 512), (2, 512), 1);
}

// ----- 3, 4. repeat, peek ------------------------------------------------------------------------

fn collatz(v: i32) -> i32 {
    if v <= 1 {
        v
    } else if v % 2 != 0 {
        v.wrapping_mul(3).wrapping_add(1)
    } else {
        v / 2
    }
}

fn collatz_input() -> Vec<i32> {
    let mut data: Vec<i32> = (0..64).map(|i| i - 3).collect();
    data[0] = 27;
    data[63] = 1_000_000_001;
    data
}

#[test]
fn s03_repeat() {
    let program = Program::example("03-repeat.hat");
    let data = collatz_input();
    for count in [0usize, 1, 7] {
        let output = program.run(vec![i32s(&[64], &data), int(count as i64)]);
        let mut expected = data.clone();
        for _ in 0..count {
            expected = expected.into_iter().map(collatz).collect();
        }
        assert_eq!(out_i32(&output, 0), expected, "count {count}");
        let n = count as u64;
        assert_moved(&output, (n, 256 * n), (n, 256 * n), n);
    }
}

#[test]
fn s04_peek() {
    let program = Program::example("04-peek.hat");
    let data = collatz_input();
    for count in [0usize, 1, 5, 20] {
        let output = program.run(vec![i32s(&[64], &data), int(count as i64)]);
        let mut expected = data.clone();
        let mut sum = 0i32;
        for _ in 0..count {
            expected = expected.into_iter().map(collatz).collect();
            sum = sum.wrapping_add(expected[0]);
        }
        assert_eq!(out_i32(&output, 0), expected, "count {count}");
        assert_eq!(output.results, vec![int(sum as i64)], "count {count}");
        let n = count as u64;
        assert_moved(&output, (n, 256 * n), (n, 256 * n), n);
    }
    // 27's trajectory: 82, 41, 124, 62, 31.
    let output = program.run(vec![i32s(&[64], &data), int(5)]);
    assert_eq!(output.results, vec![int(82 + 41 + 124 + 62 + 31)]);
}

// ----- 5. host edit ------------------------------------------------------------------------------

#[test]
fn s05_host_edit() {
    let program = Program::example("05-host-edit.hat");
    let data = Inputs(5).ints(64, -500, 500);
    let output = program.run(vec![i32s(&[64], &data), int(1234)]);
    let mut expected: Vec<i32> = data.iter().enumerate().map(|(i, &x)| 3 * x + 1 + i as i32).collect();
    expected[0] = 1234;
    let expected: Vec<i32> = expected.iter().enumerate().map(|(i, &x)| 2 * x - 5 + i as i32).collect();
    assert_eq!(out_i32(&output, 0), expected);
    assert_eq!(expected[0], 2 * 1234 - 5);
    assert_moved(&output, (2, 512), (2, 512), 2);
}

// ----- 6, 7. Life --------------------------------------------------------------------------------

const N: usize = 16;

/// One generation of Life on an N x N grid whose outermost ring is always dead; any non-zero
/// cell is alive; the result holds 0 and 1.
fn life_step(grid: &[i32]) -> Vec<i32> {
    let mut next = vec![0; N * N];
    for y in 1..N - 1 {
        for x in 1..N - 1 {
            let mut neighbours = 0;
            for (dy, dx) in [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)] {
                let (ny, nx) = ((y as i64 + dy) as usize, (x as i64 + dx) as usize);
                neighbours += (grid[ny * N + nx] != 0) as i32;
            }
            let alive = grid[y * N + x] != 0;
            next[y * N + x] = (neighbours == 3 || (alive && neighbours == 2)) as i32;
        }
    }
    next
}

fn life(grid: &[i32], generations: usize) -> Vec<i32> {
    (0..generations).fold(grid.to_vec(), |g, _| life_step(&g))
}

/// A grid with the given live cells (row, column).
fn grid_with(cells: &[(usize, usize)]) -> Vec<i32> {
    let mut grid = vec![0; N * N];
    for &(y, x) in cells {
        grid[y * N + x] = 1;
    }
    grid
}

fn shifted(cells: &[(usize, usize)], dy: usize, dx: usize) -> Vec<(usize, usize)> {
    cells.iter().map(|&(y, x)| (y + dy, x + dx)).collect()
}

const BLINKER: [(usize, usize); 3] = [(6, 5), (6, 6), (6, 7)];
const BLINKER_VERTICAL: [(usize, usize); 3] = [(5, 6), (6, 6), (7, 6)];
/// A glider moving down and to the right (+1 row, +1 column every 4 generations).
const GLIDER: [(usize, usize); 5] = [(1, 2), (2, 3), (3, 1), (3, 2), (3, 3)];

fn random_grid() -> Vec<i32> {
    // About a third alive, some live cells with values other than 1, the border included.
    let mut inputs = Inputs(6);
    (0..N * N)
        .map(|_| match inputs.next() % 6 {
            0 => 1,
            1 => 7,
            _ => 0,
        })
        .collect()
}

fn run_life(program: &Program, grid: &[i32], count: usize) -> Vec<i32> {
    let output = program.run(vec![i32s(&[N, N], grid), int(count as i64)]);
    // Reference semantics: 4 x count transfers of 1024 B.
    let n = count as u64;
    assert_moved(&output, (2 * n, 2048 * n), (2 * n, 2048 * n), n);
    out_i32(&output, 0)
}

#[test]
fn s06_life_known_patterns() {
    let program = Program::example("06-life.hat");
    let blinker = grid_with(&BLINKER);
    assert_eq!(run_life(&program, &blinker, 0), blinker, "count 0: the grid is unchanged");
    assert_eq!(run_life(&program, &blinker, 1), grid_with(&BLINKER_VERTICAL), "a blinker turns");
    assert_eq!(run_life(&program, &blinker, 2), blinker, "a blinker has period 2");
    assert_eq!(run_life(&program, &blinker, 7), grid_with(&BLINKER_VERTICAL));
    let glider = grid_with(&GLIDER);
    assert_eq!(run_life(&program, &glider, 4), grid_with(&shifted(&GLIDER, 1, 1)), "a glider moves by (1, 1)");
    assert_eq!(run_life(&program, &glider, 8), grid_with(&shifted(&GLIDER, 2, 2)));
    assert_eq!(run_life(&program, &glider, 33), life(&glider, 33));
    // A block is still; so is a lone cell's death.
    let block = grid_with(&[(4, 4), (4, 5), (5, 4), (5, 5)]);
    assert_eq!(run_life(&program, &block, 3), block);
    assert_eq!(run_life(&program, &grid_with(&[(8, 8)]), 1), vec![0; N * N]);
}

#[test]
fn s06_life_random_grid() {
    let program = Program::example("06-life.hat");
    let grid = random_grid();
    for count in [0usize, 1, 2, 5, 6] {
        let expected = if count == 0 { grid.clone() } else { life(&grid, count) };
        assert_eq!(run_life(&program, &grid, count), expected, "count {count}");
    }
}

#[test]
fn s07_life_display() {
    let program = Program::example("07-life-display.hat");
    let grid = random_grid();
    for count in [0usize, 1, 4, 5] {
        let shown: CallLog = Rc::default();
        let log = shown.clone();
        let output = program.run_with(TransferMode::Reference, vec![i32s(&[N, N], &grid), int(count as i64)], |e| {
            e.register_host_function(
                "display",
                Box::new(move |call: &mut HostCall| {
                    let grid = call.buffer(0)?.to_i32().ok_or("not i32")?;
                    let generation = call.scalar(1)?.as_i64();
                    assert!(matches!(call.arg(0), Some(HostArg::Buffer(..))));
                    log.borrow_mut().push((generation, grid));
                    Ok(Vec::new())
                }),
            )
        });
        let expected = if count == 0 { grid.clone() } else { life(&grid, count) };
        assert_eq!(out_i32(&output, 0), expected, "count {count}");
        let shown = shown.borrow();
        assert_eq!(shown.len(), count, "one display per generation");
        for (g, (generation, drawn)) in shown.iter().enumerate() {
            assert_eq!(*generation, g as i64);
            assert_eq!(*drawn, life(&grid, g + 1), "display of generation {g}");
        }
        assert_eq!(output.report.host_calls, count as u64);
        let n = count as u64;
        assert_moved(&output, (2 * n, 2048 * n), (2 * n, 2048 * n), n);
    }
}

// ----- 8. Mandelbrot -----------------------------------------------------------------------------

/// The escape count of pixel (x, y) of a 64 x 64 image over the view (centre, scale), in f32.
fn escape_count(x: usize, y: usize, centre: (f32, f32), scale: f32, max_iter: i32) -> i32 {
    let c_re = centre.0 + (x as f32 / 64.0 - 0.5) * scale;
    let c_im = centre.1 + (y as f32 / 64.0 - 0.5) * scale;
    let (mut zr, mut zi, mut n) = (0.0f32, 0.0f32, 0);
    while zr * zr + zi * zi <= 4.0 && n < max_iter {
        let re = zr * zr - zi * zi + c_re;
        zi = (zr * zi + zr * zi) + c_im;
        zr = re;
        n += 1;
    }
    n
}

#[test]
fn s08_mandelbrot() {
    let program = Program::example("08-mandelbrot.hat");
    let view = [-0.5f32, 0.0, 3.0];
    let max_iter = 60;
    let output = program.run(vec![f32s(&[3], &view), i32s(&[64, 64], &[0; 64 * 64]), int(max_iter as i64)]);
    // The host zoomed: the scale halved, and the caller sees it.
    assert_eq!(out_f32(&output, 0), vec![-0.5, 0.0, 1.5]);
    let image = out_i32(&output, 1);
    let mut differences = Vec::new();
    for y in 0..64 {
        for x in 0..64 {
            let expected = escape_count(x, y, (-0.5, 0.0), 1.5, max_iter);
            if image[y * 64 + x] != expected {
                differences.push((x, y, image[y * 64 + x], expected));
            }
        }
    }
    assert!(differences.is_empty(), "pixels that differ (x, y, got, expected): {differences:?}");
    // Known points: the centre (-0.5 + 0i) is in the set; the top-left corner (-1.25 - 0.75i)
    // escapes within a few steps.
    assert_eq!(image[32 * 64 + 32], max_iter);
    assert!(image[0] < 5, "corner: {}", image[0]);
    // Reference semantics: 4 transfers, 32792 B.
    assert_moved(&output, (2, 16396), (2, 16396), 1);
}

// ----- 9. kernel chain ---------------------------------------------------------------------------

const W: usize = 64;

fn at(image: &[f32], width: usize, y: usize, x: usize) -> f32 {
    image[y * width + x]
}

#[test]
fn s09_kernel_chain() {
    let program = Program::example("09-kernel-chain.hat");
    let input = Inputs(9).floats(W * W, -2.0, 2.0);
    let (gain, bias) = (1.5f32, -0.25f32);
    let output = program.run(vec![f32s(&[W, W], &input), f32s(&[W, W], &[9.0; W * W]), float(gain), float(bias)]);
    let lit: Vec<f32> = input.iter().map(|v| v * gain + bias).collect();
    let mut expected = vec![0.0f32; W * W];
    for y in 0..W {
        for x in 0..W {
            let left = at(&lit, W, y, x.saturating_sub(1));
            let right = at(&lit, W, y, (x + 1).min(W - 1));
            let mean = (left + at(&lit, W, y, x) + right) / 3.0;
            expected[y * W + x] = mean.max(0.0);
        }
    }
    assert_close(&out_f32(&output, 1), &expected, 1e-6, "out");
    assert_eq!(out_f32(&output, 0), input, "the input is unchanged");
    // Reference semantics: 12 transfers, 196608 B.
    assert_moved(&output, (6, 98304), (6, 98304), 3);
}

// ----- 10. Sobel ---------------------------------------------------------------------------------

#[test]
fn s10_sobel() {
    let program = Program::example("10-sobel.hat");
    let image = Inputs(10).floats(W * W, 0.0, 4.0);
    let output = program.run(vec![f32s(&[W, W], &image), f32s(&[W, W], &[0.0; W * W])]);
    let mut expected = vec![0.0f32; W * W];
    for y in 1..W - 1 {
        for x in 1..W - 1 {
            let p = |dy: i32, dx: i32| at(&image, W, (y as i32 + dy) as usize, (x as i32 + dx) as usize);
            let gx = (p(-1, 1) + 2.0 * p(0, 1) + p(1, 1)) - (p(-1, -1) + 2.0 * p(0, -1) + p(1, -1));
            let gy = (p(1, -1) + 2.0 * p(1, 0) + p(1, 1)) - (p(-1, -1) + 2.0 * p(-1, 0) + p(-1, 1));
            expected[y * W + x] = (gx * gx + gy * gy).sqrt();
        }
    }
    let magnitude = out_f32(&output, 1);
    assert_close(&magnitude, &expected, 1e-5, "mag");
    assert!((0..W).all(|i| magnitude[i] == 0.0 && magnitude[(W - 1) * W + i] == 0.0), "border rows are 0");
    // Reference semantics: 14 transfers, 229376 B.
    assert_moved(&output, (7, 114688), (7, 114688), 3);
}

// ----- 11. morphology ----------------------------------------------------------------------------

/// 3 x 3 maximum (`pick` = max) or minimum, edges clamped.
fn neighbourhood(image: &[i32], pick: fn(i32, i32) -> i32) -> Vec<i32> {
    let mut out = vec![0; W * W];
    for y in 0..W {
        for x in 0..W {
            let mut best = image[y * W + x];
            for ny in y.saturating_sub(1)..=(y + 1).min(W - 1) {
                for nx in x.saturating_sub(1)..=(x + 1).min(W - 1) {
                    best = pick(best, image[ny * W + nx]);
                }
            }
            out[y * W + x] = best;
        }
    }
    out
}

#[test]
fn s11_morphology() {
    let program = Program::example("11-morphology.hat");
    let image = Inputs(11).ints(W * W, 0, 100);
    for rounds in [0usize, 1, 3] {
        let output = program.run(vec![i32s(&[W, W], &image), i32s(&[W, W], &vec![-1; W * W]), int(rounds as i64)]);
        let mut expected = image.clone();
        for _ in 0..rounds {
            expected = neighbourhood(&neighbourhood(&expected, i32::max), i32::min);
        }
        assert_eq!(out_i32(&output, 1), expected, "rounds {rounds}");
        assert_eq!(out_i32(&output, 0), image);
        // Reference semantics: 4 x (2 x rounds + 1) transfers of 16384 B.
        let n = 2 * (2 * rounds as u64 + 1);
        assert_moved(&output, (n, n * 16384), (n, n * 16384), 2 * rounds as u64 + 1);
    }
    // A closing fills a one-pixel hole and keeps a flat image flat.
    let mut holed = vec![50; W * W];
    holed[20 * W + 20] = 0;
    let output = program.run(vec![i32s(&[W, W], &holed), i32s(&[W, W], &vec![0; W * W]), int(1)]);
    assert_eq!(out_i32(&output, 1), vec![50; W * W]);
}

// ----- 12. pooling -------------------------------------------------------------------------------

fn box_blur(image: &[f32], n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; n * n];
    for y in 0..n {
        for x in 0..n {
            let mut sum = 0.0;
            for dy in -1i32..=1 {
                for dx in -1i32..=1 {
                    let ny = (y as i32 + dy).clamp(0, n as i32 - 1) as usize;
                    let nx = (x as i32 + dx).clamp(0, n as i32 - 1) as usize;
                    sum += image[ny * n + nx];
                }
            }
            out[y * n + x] = sum / 9.0;
        }
    }
    out
}

fn max_pool(image: &[f32], n: usize) -> Vec<f32> {
    let half = n / 2;
    let mut out = vec![0.0f32; half * half];
    for y in 0..half {
        for x in 0..half {
            let quad = [(2 * y, 2 * x), (2 * y, 2 * x + 1), (2 * y + 1, 2 * x), (2 * y + 1, 2 * x + 1)];
            out[y * half + x] = quad.iter().map(|&(r, c)| image[r * n + c]).fold(f32::NEG_INFINITY, f32::max);
        }
    }
    out
}

#[test]
fn s12_pooling() {
    let program = Program::example("12-pooling.hat");
    let image = Inputs(12).floats(W * W, -1.0, 3.0);
    let output = program.run(vec![f32s(&[W, W], &image), f32s(&[16, 16], &[0.0; 256])]);
    let expected = max_pool(&box_blur(&max_pool(&box_blur(&image, 64), 64), 32), 32);
    assert_close(&out_f32(&output, 1), &expected, 1e-5, "out");
    // Reference semantics: 8 transfers in, 8 out, 133120 B in all.
    assert_moved(&output, (8, 66560), (8, 66560), 4);
}

// ----- 13. in place ------------------------------------------------------------------------------

#[test]
fn s13_in_place() {
    let program = Program::example("13-in-place.hat");
    let input = Inputs(13).floats(W * W, -2.0, 2.0);
    let level = 0.2f32;
    let output = program.run(vec![f32s(&[W, W], &input), f32s(&[W, W], &[7.0; W * W]), float(level)]);
    let toned: Vec<f32> = box_blur(&input, W).iter().map(|v| v / (1.0 + v.abs())).collect();
    let out = out_f32(&output, 1);
    let mut checked = 0;
    for (i, (&got, &tone)) in out.iter().zip(&toned).enumerate() {
        assert!(got == 0.0 || got == 1.0, "out[{i}] = {got}");
        // Values within rounding of the level may fall either way.
        if (tone - level).abs() > 1e-5 {
            assert_eq!(got, if tone > level { 1.0 } else { 0.0 }, "out[{i}], tone-mapped {tone}");
            checked += 1;
        }
    }
    assert!(checked > W * W - 10);
    assert!(out.contains(&1.0) && out.contains(&0.0));
    // Reference semantics: 12 transfers, 196608 B.
    assert_moved(&output, (6, 98304), (6, 98304), 3);
}

// ----- 14. helpers -------------------------------------------------------------------------------

#[test]
fn s14_helpers() {
    let program = Program::example("14-helpers.hat");
    let mut inputs = Inputs(14);
    let x = inputs.floats(64, -0.5, 1.5);
    let y = inputs.floats(64, -0.5, 1.5);
    let t = 0.25f32;
    let output = program.run(vec![f32s(&[64], &x), f32s(&[64], &y), f32s(&[64], &[0.0; 64]), float(t)]);
    let clamp01 = |v: f32| v.clamp(0.0, 1.0);
    let expected: Vec<f32> = x
        .iter()
        .zip(&y)
        .map(|(&a, &b)| {
            let s = clamp01(a + (b - a) * t);
            let smooth = s * s * (3.0 - 2.0 * s);
            clamp01(smooth * 1.5 - 0.25)
        })
        .collect();
    assert_close(&out_f32(&output, 2), &expected, 1e-6, "out");
    // Reference semantics: 8 transfers, 2048 B.
    assert_moved(&output, (4, 1024), (4, 1024), 2);
}

// ----- 15. alias ---------------------------------------------------------------------------------

#[test]
fn s15_alias() {
    let program = Program::example("15-alias.hat");
    let mut inputs = Inputs(15);
    let src = inputs.ints(64, -1000, 1000);
    let dst = inputs.ints(64, -1000, 1000);
    let acc = inputs.ints(64, -1000, 1000);
    let output = program.run(vec![i32s(&[64], &src), i32s(&[64], &dst), i32s(&[64], &acc)]);
    let doubled: Vec<i32> = src.iter().map(|v| 2 * v).collect();
    let accumulated: Vec<i32> = acc.iter().zip(&doubled).map(|(a, d)| a + d).collect();
    assert_eq!(out_i32(&output, 0), src);
    assert_eq!(out_i32(&output, 1), doubled);
    assert_eq!(out_i32(&output, 2), accumulated);
    // Reference semantics: 8 transfers, 2048 B.
    assert_moved(&output, (4, 1024), (4, 1024), 2);
}

// ----- 16. races ---------------------------------------------------------------------------------

/// The correct stencil: (left + centre + right) / 3, ends clamped, division truncating.
fn smooth(data: &[i32]) -> Vec<i32> {
    (0..data.len())
        .map(|i| {
            let left = data[i.saturating_sub(1)];
            let right = data[(i + 1).min(data.len() - 1)];
            (left + data[i] + right) / 3
        })
        .collect()
}

#[test]
fn s16_races_deterministic_parts() {
    let program = Program::example("16-races.hat");
    let mut data = Inputs(16).ints(64, -100, 100);
    data.iter_mut().filter(|v| **v == 500).for_each(|v| *v = 0);
    data[37] = 500; // the key, exactly once
    for (key, expected_found) in [(500, 37), (12345, -1)] {
        let output = program.run(vec![
            i32s(&[64], &data),
            i32s(&[64], &[0; 64]),
            i32s(&[1], &[-9]),
            i32s(&[1], &[-1]),
            int(key),
        ]);
        // @smooth runs before @smooth_in_place changes %data: its output is deterministic.
        assert_eq!(out_i32(&output, 1), smooth(&data));
        // Some work item wrote last.
        let winner = out_i32(&output, 2)[0];
        assert!((0..64).contains(&winner), "winner {winner}");
        // One match: its index; none: the caller's value survives the copy back.
        assert_eq!(out_i32(&output, 3), vec![expected_found], "key {key}");
        // %data after the racy in-place stencil depends on the schedule; each element is still a
        // mean of values that were in range.
        assert!(out_i32(&output, 0).iter().all(|v| (-100..=500).contains(v)));
        // Reference semantics: 12 transfers, 2064 B.
        assert_moved(&output, (6, 1032), (6, 1032), 4);
    }
}

// ----- 17. residency -----------------------------------------------------------------------------

#[test]
fn s17_residency() {
    let program = Program::example("17-residency.hat");
    let mut inputs = Inputs(17);
    let w = inputs.floats(64, -2.0, 2.0);
    let x = inputs.floats(64, -2.0, 2.0);
    let acc = inputs.floats(64, -8.0, 8.0);
    let output = program.run(vec![f32s(&[64], &w), f32s(&[64], &x), f32s(&[64], &acc)]);
    let expected: Vec<f32> = (0..64).map(|i| (0..100).fold(acc[i], |a, _| a + w[i] * x[i])).collect();
    assert_eq!(out_f32(&output, 2), expected);
    assert_eq!(out_f32(&output, 0), w);
    assert_eq!(out_f32(&output, 1), x);
    // Reference semantics: 100 x 6 transfers, 153600 B.
    assert_moved(&output, (300, 76800), (300, 76800), 100);
}

// ----- 18. conditional escape --------------------------------------------------------------------

fn lcg(s: i32) -> i32 {
    s.wrapping_mul(1103515245).wrapping_add(12345)
}

#[test]
fn s18_conditional_escape() {
    let program = Program::example("18-conditional-escape.hat");
    let state = Inputs(18).ints(64, 0, 1 << 30);
    for count in [0usize, 1, 10, 11, 25] {
        let seen: CallLog = Rc::default();
        let log = seen.clone();
        let output = program.run_with(TransferMode::Reference, vec![i32s(&[64], &state), int(count as i64)], |e| {
            e.register_host_function(
                "checkpoint",
                Box::new(move |call: &mut HostCall| {
                    let state = call.buffer(0)?.to_i32().ok_or("not i32")?;
                    log.borrow_mut().push((call.scalar(1)?.as_i64(), state));
                    Ok(Vec::new())
                }),
            )
        });
        let mut expected = state.clone();
        let mut checkpoints = Vec::new();
        for it in 0..count {
            expected = expected.into_iter().map(lcg).collect();
            if it % 10 == 0 {
                checkpoints.push((it as i64, expected.clone()));
            }
        }
        assert_eq!(out_i32(&output, 0), expected, "count {count}");
        assert_eq!(*seen.borrow(), checkpoints, "count {count}");
        assert_eq!(checkpoints.len(), count.div_ceil(10));
        let n = count as u64;
        assert_moved(&output, (n, 256 * n), (n, 256 * n), n);
    }
}
