//! PNG images as buffers: `--arg NAME=PATH.png` reads an image into a buffer parameter, `--out
//! NAME=PATH.png` writes a buffer's final host copy as an image.
//!
//! # Shapes
//!
//! | buffer | image |
//! |---|---|
//! | `memref<HxWxT>` (rank 2) | greyscale: element `[y, x]` is the pixel in row `y`, column `x` |
//! | `memref<HxWx4xT>` (rank 3, last dimension 4) | RGBA: element `[y, x, c]` is channel `c` (red, green, blue, alpha) of that pixel |
//!
//! A dynamic dimension (`memref<?x?xf32>`) takes the image's size; a static one must equal it.
//! Any other shape is refused with a message naming the flag and the file.
//!
//! # Colour types read
//!
//! - Into a greyscale (`HxW`) buffer: greyscale images only (of any bit depth; 1, 2 and 4 bits
//!   are expanded to 8). A colour image, or one with an alpha channel or a transparent colour,
//!   is refused rather than converted: turning colour into grey has several conventions (Rec. 601
//!   or 709 luma, an average) and dropping alpha loses data, and hat-opt should not pick one
//!   silently. Convert the image first, or give the program an `HxWx4` buffer.
//! - Into an RGBA (`HxWx4`) buffer: every colour type. Greyscale `L` becomes `(L, L, L, 255)`,
//!   grey with alpha `(L, L, L, A)`, RGB `(R, G, B, 255)`, palette images their palette's
//!   colours; a transparent colour (`tRNS`) becomes alpha 0. This is what an image viewer shows.
//!
//! # Pixel values and element types
//!
//! | element | reading a sample `s` of an 8-bit image | writing an element `v` |
//! |---|---|---|
//! | `i8` | `s` as is (the byte; read as signed, 200 is -56) | the byte as is |
//! | `i16`, `i32`, `i64` | `s`, in `0..=255` | `v` clamped to `0..=255` |
//! | `f32`, `f64` | `s / 255`, in `[0, 1]` | `round(clamp(v, 0, 1) * 255)`; NaN gives 0 |
//!
//! `i1` and `index` buffers are refused (neither is a pixel). 16-bit images are read at their
//! precision into floats (`s / 65535`), and reduced to 8 bits for integers
//! (`round(s * 255 / 65535)`, exact for a 16-bit image made from an 8-bit one), so that a kernel
//! written for `0..=255` sees the same range whatever the file's depth. `--out` always writes
//! 8-bit images. So an 8-bit image read into any element type and written back is the same
//! image, bit for bit.
//!
//! # Why the `png` crate
//!
//! hat-opt needs PNG only: the `png` crate (image-rs's own PNG codec, which the `image` crate
//! uses underneath) decodes every colour type and depth, interlaced images and palettes, with
//! five small dependencies; `image`, even with only its PNG codec, adds its pixel and buffer
//! types and conversions that hat-opt would not use, for the same decoder.

use hat_runtime::executor::{HostBuffer, Parameter, ParameterKind};
use hat_runtime::{BufferLayout, ElementType, Scalar};
use std::path::Path;

/// Whether `path` names a PNG file (by its extension, in any case).
pub fn is_png(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"))
}

/// How the pixels of an image lie in a buffer of a given shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Pixels {
    /// `HxW`: one grey sample per pixel.
    Grey,
    /// `HxWx4`: red, green, blue and alpha per pixel.
    Rgba,
}

impl Pixels {
    fn channels(self) -> usize {
        match self {
            Pixels::Grey => 1,
            Pixels::Rgba => 4,
        }
    }
}

/// The element type and the shape (`None` where dynamic) of a buffer parameter.
fn element_and_shape(parameter: &Parameter) -> Option<(ElementType, Vec<Option<usize>>)> {
    match &parameter.kind {
        ParameterKind::Scalar(_) => None,
        ParameterKind::Buffer(layout) => Some((layout.element, layout.shape.iter().map(|&d| Some(d)).collect())),
        ParameterKind::DynamicBuffer { element, shape } => Some((*element, shape.clone())),
    }
}

/// How a buffer of `element`s and `shape` holds an image, or why it cannot.
fn pixels_of(element: ElementType, shape: &[Option<usize>], type_text: &str) -> Result<Pixels, String> {
    if matches!(element, ElementType::I1 | ElementType::Index) {
        return Err(format!(
            "{type_text} cannot hold an image: its elements are {}; PNG pixels go into i8, i16, i32, i64, f32 or f64",
            hat_runtime::eval::type_name(element)
        ));
    }
    match shape {
        [_, _] => Ok(Pixels::Grey),
        [_, _, Some(4)] => Ok(Pixels::Rgba),
        _ => Err(format!(
            "{type_text} cannot hold an image: a PNG goes into an HxW buffer (greyscale) or an HxWx4 buffer (RGBA)"
        )),
    }
}

/// Checks, before the program runs, that the buffer parameter can be written as a PNG.
pub fn check_output(parameter: &Parameter) -> Result<(), String> {
    let (element, shape) = element_and_shape(parameter).ok_or_else(|| format!("%{} is a scalar", parameter.name))?;
    pixels_of(element, &shape, &format!("%{}: {}", parameter.name, parameter.type_text)).map(drop)
}

/// The colour type of a decoded image, in words.
fn describe_colour(colour: png::ColorType, depth: png::BitDepth) -> String {
    let what = match colour {
        png::ColorType::Grayscale => "a greyscale image",
        png::ColorType::GrayscaleAlpha => "a greyscale image with alpha (or a transparent colour)",
        png::ColorType::Rgb => "an RGB image",
        png::ColorType::Rgba => "an RGBA image (or an image with a transparent colour)",
        png::ColorType::Indexed => "a palette image",
    };
    format!("{what} ({}-bit)", depth as u8)
}

/// Reads the PNG file at `path` into a buffer for `parameter` (see the module documentation).
/// Errors name the file; the caller adds the flag.
pub fn read_png(path: &Path, parameter: &Parameter) -> Result<HostBuffer, String> {
    let type_text = format!("%{}: {}", parameter.name, parameter.type_text);
    let (element, shape) =
        element_and_shape(parameter).ok_or_else(|| format!("%{} is a scalar, not an image", parameter.name))?;
    let pixels = pixels_of(element, &shape, &type_text)?;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    // Palettes to RGB, grey of 1, 2 and 4 bits to 8, a transparent colour to an alpha channel.
    decoder.set_transformations(png::Transformations::EXPAND);
    let not_png = |e: png::DecodingError| format!("'{}' is not a PNG image hat-opt can read: {e}", path.display());
    let mut reader = decoder.read_info().map_err(not_png)?;
    let (width, height) = reader.info().size();
    let (colour, depth) = reader.output_color_type();
    if pixels == Pixels::Grey && colour != png::ColorType::Grayscale {
        return Err(format!(
            "'{}' is {}, but {type_text} takes a greyscale image (an HxWx4 buffer takes colour)",
            path.display(),
            describe_colour(colour, depth)
        ));
    }
    let (height, width) = (height as usize, width as usize);
    let size_fits = [height, width].iter().zip(&shape).all(|(&d, &expected)| expected.is_none_or(|e| e == d));
    if !size_fits {
        let expected: Vec<String> =
            shape[..2].iter().map(|d| d.map_or_else(|| "?".to_string(), |d| d.to_string())).collect();
        return Err(format!(
            "'{}' is {height} x {width} pixels (H x W), but {type_text} needs {}",
            path.display(),
            expected.join(" x ")
        ));
    }
    let raw_size = reader.output_buffer_size().ok_or_else(|| {
        format!("'{}' is {height} x {width} pixels: too large for this machine's memory", path.display())
    })?;
    let mut raw = Vec::new();
    raw.try_reserve_exact(raw_size)
        .map_err(|e| format!("cannot allocate {raw_size} bytes to decode '{}': {e}", path.display()))?;
    raw.resize(raw_size, 0);
    let frame = reader.next_frame(&mut raw).map_err(not_png)?;
    let samples_per_pixel = colour.samples();
    let sixteen = depth == png::BitDepth::Sixteen;
    let sample_bytes = if sixteen { 2 } else { 1 };

    let layout_shape = match pixels {
        Pixels::Grey => vec![height, width],
        Pixels::Rgba => vec![height, width, 4],
    };
    let layout = BufferLayout { element, shape: layout_shape };
    let size = layout.checked_bytes().map_err(|message| format!("'{}' as {type_text}: {message}", path.display()))?;
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size).map_err(|e| {
        format!("host allocation of {size} bytes for {type_text} failed: host memory cannot hold it ({e})")
    })?;
    bytes.resize(size, 0);
    let element_size = element.size();
    let channels = pixels.channels();
    for y in 0..height {
        let row = &raw[y * frame.line_size..][..width * samples_per_pixel * sample_bytes];
        for x in 0..width {
            let pixel = &row[x * samples_per_pixel * sample_bytes..][..samples_per_pixel * sample_bytes];
            let sample = |k: usize| -> u16 {
                if sixteen {
                    u16::from_be_bytes([pixel[2 * k], pixel[2 * k + 1]])
                } else {
                    pixel[k] as u16
                }
            };
            let opaque = if sixteen { u16::MAX } else { u8::MAX as u16 };
            let rgba: [u16; 4] = match samples_per_pixel {
                1 => [sample(0), sample(0), sample(0), opaque],
                2 => [sample(0), sample(0), sample(0), sample(1)],
                3 => [sample(0), sample(1), sample(2), opaque],
                _ => [sample(0), sample(1), sample(2), sample(3)],
            };
            for (c, &value) in rgba[..channels].iter().enumerate() {
                let index = (y * width + x) * channels + c;
                element.write(to_element(element, value, sixteen), &mut bytes[index * element_size..][..element_size]);
            }
        }
    }
    Ok(HostBuffer { layout, bytes })
}

/// The element a sample becomes (see the module documentation).
fn to_element(element: ElementType, sample: u16, sixteen: bool) -> Scalar {
    if element.is_float() {
        let max = if sixteen { 65535.0 } else { 255.0 };
        return Scalar::Float(sample as f64 / max);
    }
    let eight = if sixteen { ((sample as u32 * 255 + 32767) / 65535) as u8 } else { sample as u8 };
    match element {
        // The byte as is: `write` keeps the low 8 bits.
        ElementType::I8 => Scalar::Int(eight as i8 as i64),
        _ => Scalar::Int(eight as i64),
    }
}

/// The 8-bit sample an element becomes (see the module documentation).
fn to_sample(element: ElementType, value: Scalar) -> u8 {
    match (element, value) {
        (ElementType::I8, value) => value.as_i64() as u8,
        (_, Scalar::Float(v)) if v.is_nan() => 0,
        (_, Scalar::Float(v)) => (v.clamp(0.0, 1.0) * 255.0).round() as u8,
        (_, Scalar::Int(v)) => v.clamp(0, 255) as u8,
    }
}

/// Writes `buffer` (the final host copy of `parameter`) as an 8-bit PNG file at `path`: grey for
/// an `HxW` buffer, RGBA for an `HxWx4` one.
pub fn write_png(path: &Path, parameter: &Parameter, buffer: &HostBuffer) -> Result<(), String> {
    let type_text = format!("%{}: {}", parameter.name, parameter.type_text);
    let element = buffer.layout.element;
    let shape: Vec<Option<usize>> = buffer.layout.shape.iter().map(|&d| Some(d)).collect();
    let pixels = pixels_of(element, &shape, &type_text)?;
    let (height, width) = (buffer.layout.shape[0], buffer.layout.shape[1]);
    let too_large = || format!("{type_text} is {height} x {width}: a PNG is at most 2^31 - 1 pixels on a side");
    let (png_width, png_height) = (
        u32::try_from(width).ok().filter(|&w| w < 1 << 31).ok_or_else(too_large)?,
        u32::try_from(height).ok().filter(|&h| h < 1 << 31).ok_or_else(too_large)?,
    );
    if width == 0 || height == 0 {
        return Err(format!("{type_text} is {height} x {width}: a PNG has at least one pixel"));
    }
    let samples: Vec<u8> =
        buffer.bytes.chunks_exact(element.size()).map(|chunk| to_sample(element, element.read(chunk))).collect();
    let cannot = |e: &dyn std::fmt::Display| format!("cannot write '{}': {e}", path.display());
    let file = std::fs::File::create(path).map_err(|e| cannot(&e))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), png_width, png_height);
    encoder.set_color(match pixels {
        Pixels::Grey => png::ColorType::Grayscale,
        Pixels::Rgba => png::ColorType::Rgba,
    });
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| cannot(&e))?;
    writer.write_image_data(&samples).map_err(|e| cannot(&e))?;
    writer.finish().map_err(|e| cannot(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parameter(type_text: &str, element: ElementType, shape: &[Option<usize>]) -> Parameter {
        let kind = match shape.iter().copied().collect::<Option<Vec<usize>>>() {
            Some(shape) => ParameterKind::Buffer(BufferLayout { element, shape }),
            None => ParameterKind::DynamicBuffer { element, shape: shape.to_vec() },
        };
        Parameter { name: "img".into(), kind, type_text: type_text.into() }
    }

    fn scratch(test: &str) -> std::path::PathBuf {
        let directory = std::env::temp_dir().join(format!("hat-opt-png-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        directory
    }

    /// Writes a PNG of `colour` and `depth` with the raw (big-endian) `data`.
    fn write_raw(path: &Path, width: u32, height: u32, colour: png::ColorType, depth: png::BitDepth, data: &[u8]) {
        let file = std::fs::File::create(path).unwrap();
        let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), width, height);
        encoder.set_color(colour);
        encoder.set_depth(depth);
        let mut writer = encoder.write_header().unwrap();
        writer.write_image_data(data).unwrap();
        writer.finish().unwrap();
    }

    #[test]
    fn samples_become_elements_and_back() {
        // u8 as is, ints as 0..=255, floats as s / 255.
        assert_eq!(to_element(ElementType::I8, 200, false), Scalar::Int(-56));
        assert_eq!(to_sample(ElementType::I8, Scalar::Int(-56)), 200);
        assert_eq!(to_element(ElementType::I32, 200, false), Scalar::Int(200));
        assert_eq!(to_element(ElementType::F32, 255, false), Scalar::Float(1.0));
        assert_eq!(to_element(ElementType::F32, 51, false), Scalar::Float(0.2));
        for s in 0..=255u16 {
            for element in [ElementType::I8, ElementType::I16, ElementType::I32, ElementType::F32, ElementType::F64] {
                let mut bytes = vec![0u8; element.size()];
                element.write(to_element(element, s, false), &mut bytes);
                assert_eq!(to_sample(element, element.read(&bytes)) as u16, s, "{element:?} {s}");
            }
        }
        // Clamping and rounding on the way out.
        assert_eq!(to_sample(ElementType::I32, Scalar::Int(-5)), 0);
        assert_eq!(to_sample(ElementType::I32, Scalar::Int(300)), 255);
        assert_eq!(to_sample(ElementType::F32, Scalar::Float(-0.5)), 0);
        assert_eq!(to_sample(ElementType::F32, Scalar::Float(7.0)), 255);
        assert_eq!(to_sample(ElementType::F32, Scalar::Float(0.5)), 128);
        assert_eq!(to_sample(ElementType::F32, Scalar::Float(0.499 / 255.0)), 0);
        assert_eq!(to_sample(ElementType::F32, Scalar::Float(0.501 / 255.0)), 1);
        assert_eq!(to_sample(ElementType::F32, Scalar::Float(f64::NAN)), 0);
        // 16 bits: full precision for floats, reduced to 8 for integers.
        assert_eq!(to_element(ElementType::F64, 65535, true), Scalar::Float(1.0));
        assert_eq!(to_element(ElementType::F64, 257 * 3, true), Scalar::Float(3.0 / 255.0));
        assert_eq!(to_element(ElementType::I32, 257 * 200, true), Scalar::Int(200));
        assert_eq!(to_element(ElementType::I32, 128, true), Scalar::Int(0));
        assert_eq!(to_element(ElementType::I32, 129, true), Scalar::Int(1));
    }

    #[test]
    fn grey_and_rgba_round_trip_for_every_element_type() {
        let directory = scratch("round-trip");
        let grey: Vec<u8> = (0..6 * 5).map(|k| (k * 37 % 256) as u8).collect();
        let rgba: Vec<u8> = (0..6 * 5 * 4).map(|k| (k * 53 % 256) as u8).collect();
        let grey_path = directory.join("grey.png");
        let rgba_path = directory.join("rgba.png");
        write_raw(&grey_path, 5, 6, png::ColorType::Grayscale, png::BitDepth::Eight, &grey);
        write_raw(&rgba_path, 5, 6, png::ColorType::Rgba, png::BitDepth::Eight, &rgba);
        for element in [ElementType::I8, ElementType::I16, ElementType::I32, ElementType::I64, ElementType::F32] {
            for (path, shape) in [(&grey_path, vec![Some(6), Some(5)]), (&rgba_path, vec![Some(6), Some(5), Some(4)])] {
                let parameter = parameter("t", element, &shape);
                let buffer = read_png(path, &parameter).unwrap();
                let out = directory.join("out.png");
                write_png(&out, &parameter, &buffer).unwrap();
                let again = read_png(&out, &parameter).unwrap();
                assert_eq!(again, buffer, "{element:?} {}", path.display());
            }
        }
        // Element [y, x] is row y, column x; [y, x, c] channel c.
        let ints = read_png(&grey_path, &parameter("t", ElementType::I32, &[Some(6), Some(5)])).unwrap();
        assert_eq!(ints.to_i32().unwrap()[5 + 2], grey[5 + 2] as i32);
        let floats = read_png(&rgba_path, &parameter("t", ElementType::F32, &[None, None, Some(4)])).unwrap();
        assert_eq!(floats.layout.shape, vec![6, 5, 4]);
        assert_eq!(floats.to_f32().unwrap()[(5 + 2) * 4 + 3], rgba[(5 + 2) * 4 + 3] as f32 / 255.0);
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn other_colour_types_into_rgba_and_mismatches() {
        let directory = scratch("colour-types");
        let rgba = parameter("memref<2x2x4xi32>", ElementType::I32, &[Some(2), Some(2), Some(4)]);
        let grey = parameter("memref<2x2xi32>", ElementType::I32, &[Some(2), Some(2)]);
        // RGB: alpha 255.
        let path = directory.join("rgb.png");
        write_raw(&path, 2, 2, png::ColorType::Rgb, png::BitDepth::Eight, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        let values = read_png(&path, &rgba).unwrap().to_i32().unwrap();
        assert_eq!(&values[..8], &[1, 2, 3, 255, 4, 5, 6, 255]);
        let error = read_png(&path, &grey).unwrap_err();
        assert!(
            error.contains("is an RGB image (8-bit), but %img: memref<2x2xi32> takes a greyscale image"),
            "{error}"
        );
        // Grey with alpha: (L, L, L, A); refused for a grey buffer.
        let path = directory.join("grey-alpha.png");
        write_raw(&path, 2, 2, png::ColorType::GrayscaleAlpha, png::BitDepth::Eight, &[10, 20, 30, 40, 50, 60, 70, 80]);
        assert_eq!(&read_png(&path, &rgba).unwrap().to_i32().unwrap()[..4], &[10, 10, 10, 20]);
        assert!(read_png(&path, &grey).unwrap_err().contains("greyscale image with alpha"));
        // Grey into RGBA: (L, L, L, 255); 16-bit grey into grey.
        let path = directory.join("grey16.png");
        let samples: Vec<u8> = [0u16, 257, 65535, 32896].iter().flat_map(|s| s.to_be_bytes()).collect();
        write_raw(&path, 2, 2, png::ColorType::Grayscale, png::BitDepth::Sixteen, &samples);
        assert_eq!(read_png(&path, &grey).unwrap().to_i32().unwrap(), vec![0, 1, 255, 128]);
        assert_eq!(&read_png(&path, &rgba).unwrap().to_i32().unwrap()[4..8], &[1, 1, 1, 255]);
        let floats = parameter("memref<2x2xf32>", ElementType::F32, &[Some(2), Some(2)]);
        assert_eq!(read_png(&path, &floats).unwrap().to_f32().unwrap()[3], (32896.0 / 65535.0) as f32);
        // 1-bit grey is expanded to 0 and 255.
        let path = directory.join("grey1.png");
        write_raw(&path, 2, 2, png::ColorType::Grayscale, png::BitDepth::One, &[0b1000_0000, 0b0100_0000]);
        assert_eq!(read_png(&path, &grey).unwrap().to_i32().unwrap(), vec![255, 0, 0, 255]);
        // The wrong size, a shape or element type that holds no image, a file that is no PNG.
        let big = parameter("memref<3x2xi32>", ElementType::I32, &[Some(3), Some(2)]);
        let error = read_png(&path, &big).unwrap_err();
        assert!(error.contains("is 2 x 2 pixels (H x W), but %img: memref<3x2xi32> needs 3 x 2"), "{error}");
        let flat = parameter("memref<4xi32>", ElementType::I32, &[Some(4)]);
        assert!(read_png(&path, &flat).unwrap_err().contains("an HxW buffer (greyscale) or an HxWx4 buffer (RGBA)"));
        let three = parameter("memref<2x2x3xi32>", ElementType::I32, &[Some(2), Some(2), Some(3)]);
        assert!(check_output(&three).is_err());
        let bools = parameter("memref<2x2xi1>", ElementType::I1, &[Some(2), Some(2)]);
        assert!(read_png(&path, &bools).unwrap_err().contains("its elements are i1"));
        let text = directory.join("text.png");
        std::fs::write(&text, b"not an image").unwrap();
        assert!(read_png(&text, &grey).unwrap_err().contains("is not a PNG image"));
        let missing = directory.join("missing.png");
        assert!(read_png(&missing, &grey).unwrap_err().contains("cannot read"));
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
