//! PNG images in and out of `hat-opt --run` (`--arg NAME=FILE.png`, `--out NAME=FILE.png`), on
//! every image example: the run equals the reference semantics (`--run-check`); the image written
//! is the `.npy` of the same buffer converted as documented (ints clamped to 0..=255, floats
//! `round(clamp(v, 0, 1) * 255)`); and a closing and the separable blur are recomputed here from
//! the input image. On Vulkan (lavapipe in CI) the images equal the CPU backend's, within one
//! level of rounding for floats. Bad images and shapes are errors naming the flag and the file,
//! with status 1, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;

use support::has_vulkan;
use support::root;

fn scratch(test: &str) -> PathBuf {
    let directory = Path::new(env!("CARGO_TARGET_TMPDIR")).join("images").join(test);
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).expect("scratch directory");
    directory
}

fn hat_opt(args: &[String], backend: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hat-opt"))
        .current_dir(root())
        .args(args)
        .arg(format!("--backend={backend}"))
        .arg("--kernel-cache=off")
        .env("RUST_BACKTRACE", "0")
        .env_remove("HAT_BACKEND")
        .output()
        .expect("hat-opt runs")
}

fn succeed(args: &[String], backend: &str) -> String {
    let output = hat_opt(args, backend);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "hat-opt {args:?} --backend={backend} failed:\n{stderr}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn fail(args: &[String], expected: &[&str]) -> String {
    let output = hat_opt(args, "cpu");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "hat-opt {args:?}: status\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for text in expected {
        assert!(stderr.contains(text), "hat-opt {args:?}: stderr lacks `{text}`:\n{stderr}");
    }
    stderr
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// A PNG's size, channels and 8-bit samples (row-major, channels interleaved).
fn read_png(path: &Path) -> (usize, usize, usize, Vec<u8>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file)).read_info().expect("a PNG");
    let mut data = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut data).expect("its pixels");
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "hat-opt writes 8-bit images");
    data.truncate(info.buffer_size());
    (info.height as usize, info.width as usize, info.color_type.samples(), data)
}

/// The values of an `f32` or `i32` `.npy` file, as floats.
fn read_npy(path: &Path) -> (Vec<u64>, String, Vec<f64>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).expect("an npy file");
    let shape = npy.shape().to_vec();
    let descr = npy.dtype().descr();
    let values = match descr.as_str() {
        "'<f4'" => npy.into_vec::<f32>().expect("f32 data").into_iter().map(f64::from).collect(),
        "'<i4'" => npy.into_vec::<i32>().expect("i32 data").into_iter().map(f64::from).collect(),
        other => panic!("unexpected dtype {other}"),
    };
    (shape, descr, values)
}

/// The sample a value becomes, as docs/user-guide.md says.
fn expected_sample(value: f64, float: bool) -> u8 {
    if float {
        if value.is_nan() {
            0
        } else {
            (value.clamp(0.0, 1.0) * 255.0).round() as u8
        }
    } else {
        value.clamp(0.0, 255.0) as u8
    }
}

/// One image example: its command line, the output buffer and its `.png`.
struct Case {
    name: &'static str,
    run: &'static str,
    out: &'static str,
}

const CASES: [Case; 5] = [
    Case {
        name: "sobel",
        run: "examples/10-sobel.hat --arg img=tests/data/images/shapes.png --arg mag=zeros",
        out: "mag",
    },
    Case {
        name: "morphology",
        run: "examples/11-morphology.hat --arg img=tests/data/images/shapes.png --arg out=zeros --arg rounds=3",
        out: "out",
    },
    Case {
        name: "pooling",
        run: "examples/12-pooling.hat --arg img=tests/data/images/shapes.png --arg out=zeros",
        out: "out",
    },
    Case {
        name: "in-place",
        run: "examples/13-in-place.hat --arg in=tests/data/images/shapes.png --arg out=zeros --arg level=0.3",
        out: "out",
    },
    Case {
        name: "separable-blur",
        run: "examples/19-separable-blur.hat --arg img=tests/data/images/colour.png --arg out=zeros",
        out: "out",
    },
];

/// Runs `case` with `--run-check` on `backend`, writing its output as `.png` and `.npy` into
/// `directory`; gives both paths.
fn run_case(case: &Case, backend: &str, directory: &Path) -> (PathBuf, PathBuf) {
    let png = directory.join(format!("{}-{backend}.png", case.name));
    let npy = directory.join(format!("{}-{backend}.npy", case.name));
    let mut args = words(case.run);
    args.push("--run-check".into());
    args.push(format!("--out={}={}", case.out, png.display()));
    args.push(format!("--out={}={}", case.out, npy.display()));
    let report = succeed(&args, backend);
    assert!(report.contains("check:      the same as the reference semantics"), "{report}");
    (png, npy)
}

#[test]
fn every_image_example_writes_the_image_of_its_buffer() {
    let directory = scratch("every-example");
    for case in &CASES {
        let (png, npy) = run_case(case, "cpu", &directory);
        let (height, width, channels, samples) = read_png(&png);
        let (shape, descr, values) = read_npy(&npy);
        let expected_shape: Vec<u64> = match channels {
            1 => vec![height as u64, width as u64],
            _ => vec![height as u64, width as u64, channels as u64],
        };
        assert_eq!(shape, expected_shape, "{}", case.name);
        let float = descr == "'<f4'";
        let expected: Vec<u8> = values.iter().map(|&v| expected_sample(v, float)).collect();
        assert_eq!(samples, expected, "{}: the PNG is the .npy converted", case.name);
        // Not a blank image: the example computed something.
        assert!(samples.iter().any(|&s| s != samples[0]), "{}: a flat image", case.name);
    }
}

/// The grey samples of a test image.
fn input_samples(name: &str) -> (usize, usize, usize, Vec<u8>) {
    read_png(&root().join("tests/data/images").join(name))
}

#[test]
fn a_closing_recomputed_from_the_input_image_equals_the_output_image() {
    let directory = scratch("closing");
    let (png, _) = run_case(&CASES[1], "cpu", &directory);
    let (h, w, channels, mut image) = input_samples("shapes.png");
    assert_eq!(channels, 1);
    let window = |image: &[u8], y: usize, x: usize, pick: fn(u8, u8) -> u8| {
        let mut best = image[y * w + x];
        for dy in -1i64..=1 {
            for dx in -1i64..=1 {
                let row = (y as i64 + dy).clamp(0, h as i64 - 1) as usize;
                let col = (x as i64 + dx).clamp(0, w as i64 - 1) as usize;
                best = pick(best, image[row * w + col]);
            }
        }
        best
    };
    for _ in 0..3 {
        let dilated: Vec<u8> = (0..h * w).map(|k| window(&image, k / w, k % w, u8::max)).collect();
        image = (0..h * w).map(|k| window(&dilated, k / w, k % w, u8::min)).collect();
    }
    assert_eq!(read_png(&png).3, image, "three closings of shapes.png");
}

#[test]
fn the_separable_blur_recomputed_from_the_input_image_equals_the_output_image() {
    let directory = scratch("blur");
    let (png, _) = run_case(&CASES[4], "cpu", &directory);
    let (h, w, channels, input) = input_samples("colour.png");
    assert_eq!(channels, 4);
    let value = |y: usize, x: usize, c: usize| input[(y * w + x) * 4 + c] as f32 / 255.0;
    let weights = [1.0f32, 4.0, 6.0, 4.0, 1.0];
    let clamp = |i: i64, n: usize| i.clamp(0, n as i64 - 1) as usize;
    let rows: Vec<f32> = (0..h * w * 4)
        .map(|k| {
            let (y, x, c) = (k / (w * 4), k / 4 % w, k % 4);
            weights.iter().enumerate().map(|(i, wt)| wt * value(y, clamp(x as i64 + i as i64 - 2, w), c)).sum::<f32>()
                / 16.0
        })
        .collect();
    let output = read_png(&png).3;
    for (k, &sample) in output.iter().enumerate() {
        let (y, x, c) = (k / (w * 4), k / 4 % w, k % 4);
        let blurred: f32 = weights
            .iter()
            .enumerate()
            .map(|(i, wt)| wt * rows[(clamp(y as i64 + i as i64 - 2, h) * w + x) * 4 + c])
            .sum::<f32>()
            / 16.0;
        let expected = (blurred.clamp(0.0, 1.0) * 255.0).round() as i32;
        // The kernel sums in another order: a value on a rounding boundary may round the other way.
        assert!((sample as i32 - expected).abs() <= 1, "pixel ({y}, {x}) channel {c}: {sample} vs {expected}");
    }
}

#[test]
fn on_vulkan_every_image_example_gives_the_cpu_backends_image() {
    if !has_vulkan() {
        return;
    }
    let directory = scratch("vulkan");
    for case in &CASES {
        let (cpu, _) = run_case(case, "cpu", &directory);
        let (gpu, _) = run_case(case, "vulkan", &directory);
        let (cpu, gpu) = (read_png(&cpu), read_png(&gpu));
        assert_eq!((cpu.0, cpu.1, cpu.2), (gpu.0, gpu.1, gpu.2), "{}", case.name);
        for (k, (&a, &b)) in cpu.3.iter().zip(&gpu.3).enumerate() {
            // Floats may round differently on the device (sqrt, fused multiply-adds).
            assert!((a as i32 - b as i32).abs() <= 1, "{}: sample {k}: cpu {a}, vulkan {b}", case.name);
        }
    }
}

#[test]
fn every_colour_type_reads_into_an_rgba_buffer() {
    // A program that copies an RGBA image through the device: what comes out is what went in.
    let directory = scratch("colour-types");
    let program = directory.join("copy.hat");
    std::fs::write(
        &program,
        r#"
kernel.func @copy(%src: memref<?x?x4xi32>, %dst: memref<?x?x4xi32>) {
  %i = kernel.global_id x
  %n = buffer.dim %src, 0 : memref<?x?x4xi32>
  %m = buffer.dim %src, 1 : memref<?x?x4xi32>
  %c4 = arith.constant 4 : index
  %row = arith.divui %i, %m : index
  %col = arith.remui %i, %m : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %inside = arith.cmpi ult, %row, %n : index
  scf.if %inside {
    %r = buffer.load %src[%row, %col, %c0] : memref<?x?x4xi32>
    %g = buffer.load %src[%row, %col, %c1] : memref<?x?x4xi32>
    %b = buffer.load %src[%row, %col, %c2] : memref<?x?x4xi32>
    %a = buffer.load %src[%row, %col, %c3] : memref<?x?x4xi32>
    buffer.store %r, %dst[%row, %col, %c0] : memref<?x?x4xi32>
    buffer.store %g, %dst[%row, %col, %c1] : memref<?x?x4xi32>
    buffer.store %b, %dst[%row, %col, %c2] : memref<?x?x4xi32>
    buffer.store %a, %dst[%row, %col, %c3] : memref<?x?x4xi32>
  }
  kernel.return
}
compute.func @main(%img: memref<?x?x4xi32>, %out: memref<?x?x4xi32>, %pixels: index) {
  compute.dispatch @copy[%pixels](%img, %out) : (memref<?x?x4xi32>, memref<?x?x4xi32>)
  compute.return
}
"#,
    )
    .unwrap();
    let images = root().join("tests/data/images");
    for (name, expected_pixel_9) in [
        ("rgb.png", [9u8, 101, 199, 255]),
        ("grey-alpha.png", [9, 9, 9, 247]),
        ("grey16.png", [9, 9, 9, 255]),
        ("palette.png", [0, 255, 0, 255]),
    ] {
        let out = directory.join(name);
        let args = vec![
            program.display().to_string(),
            "--run-check".into(),
            format!("--arg=img={}", images.join(name).display()),
            format!("--arg=out={}", images.join(name).display()),
            "--arg=pixels=64".into(),
            format!("--out=out={}", out.display()),
        ];
        succeed(&args, "cpu");
        let (h, w, channels, samples) = read_png(&out);
        assert_eq!((h, w, channels), (8, 8, 4), "{name}");
        assert_eq!(&samples[9 * 4..10 * 4], &expected_pixel_9, "{name}: pixel (1, 1)");
    }
    // An 8-bit sample s into f32 is s / 255.
    let npy = directory.join("img.npy");
    let args = words(&format!(
        "examples/10-sobel.hat --run --arg img=tests/data/images/shapes.png --arg mag=zeros --out img={}",
        npy.display()
    ));
    succeed(&args, "cpu");
    assert_eq!(read_npy(&npy).2[0], (20.0f32 / 255.0) as f64, "shapes.png's first pixel is 20");
}

#[test]
fn mismatched_images_and_shapes_are_errors_naming_the_flag_and_the_file() {
    let directory = scratch("errors");
    let sobel = |img: &str| words(&format!("examples/10-sobel.hat --run --arg img={img} --arg mag=zeros"));
    // An RGBA image for a 2-D buffer.
    fail(
        &sobel("tests/data/images/colour.png"),
        &[
            "--arg img=tests/data/images/colour.png",
            "'tests/data/images/colour.png' is an RGBA image",
            "%img: memref<64x64xf32> takes a greyscale image",
        ],
    );
    // Grey with alpha for a 2-D buffer, and the wrong size when the size is static.
    fail(&sobel("tests/data/images/grey-alpha.png"), &["greyscale image with alpha"]);
    fail(
        &sobel("tests/data/images/grey16.png"),
        &["'tests/data/images/grey16.png' is 8 x 8 pixels (H x W), but %img: memref<64x64xf32> needs 64 x 64"],
    );
    // A file that is not a PNG, and one that does not exist.
    let fake = directory.join("fake.png");
    std::fs::write(&fake, b"GIF89a").unwrap();
    fail(&sobel(&fake.display().to_string()), &["is not a PNG image hat-opt can read"]);
    fail(&sobel("no/such/image.png"), &["--arg img=no/such/image.png", "cannot read 'no/such/image.png'"]);
    // An image into a buffer that is neither HxW nor HxWx4; an output that cannot be an image,
    // refused before the program runs.
    fail(
        &words("examples/01-squares.hat --run --arg data=tests/data/images/shapes.png"),
        &["--arg data=tests/data/images/shapes.png", "an HxW buffer (greyscale) or an HxWx4 buffer (RGBA)"],
    );
    let out = directory.join("squares.png");
    let stderr = fail(
        &words(&format!("examples/01-squares.hat --run --arg data=iota --out data={}", out.display())),
        &["--out data=", "%data: memref<64xi32> cannot hold an image"],
    );
    assert!(!stderr.contains("ran @main"), "{stderr}");
    assert!(!out.exists(), "nothing is written");
}
