//! The arguments of `hat-opt --run`: `--arg NAME=VALUE` becomes the value of the entry
//! function's parameter `%NAME`, `--out NAME=PATH` names where a buffer's final host copy goes.
//!
//! A scalar parameter takes a number: an integer for `i1` ... `i64` and `index` (decimal, or hex
//! with `0x`; `true`/`false` for `i1`), a float for `f32`/`f64` (`1.5`, `-2`, `1e-3`, `inf`,
//! `nan`). A buffer parameter takes one of
//!
//! | VALUE | the buffer's elements, row-major, element `k` of `n` |
//! |---|---|
//! | `PATH.npy` | read from a NumPy file whose dtype and shape match the `memref` type exactly |
//! | `PATH.png` | an image: an `HxW` buffer takes a greyscale PNG, an `HxWx4` buffer any PNG as RGBA; pixels convert to the element type as [`crate::png_io`] says (`i8` as is, other integers `0..=255`, floats `s / 255`) |
//! | `zeros` | 0 |
//! | `ones` | 1 |
//! | `iota` | `k` (wrapping at the element type's width; `k mod 2` for `i1`) |
//! | `random` or `random:SEED` | integers uniform in `[0, 100)` (`i1`: 0 or 1), floats uniform in `[0, 1)`, from SplitMix64 seeded with SEED (default 0): the same on every machine and in every version |
//! | `fill:V` | V, read as a scalar of the element type |
//!
//! A generator needs the shape from the type: a buffer with dynamic dimensions (`memref<?xf32>`)
//! takes only a `.npy` or `.png` file.
//!
//! `--out NAME=PATH` writes a `.png` file (8-bit, see [`crate::png_io`]) when PATH ends in
//! `.png`, else a `.npy` file.
//!
//! `.npy` files are read and written with [`npyz`]: a maintained, dependency-light crate (no
//! `ndarray` needed) that reads the header (dtype, shape, C or Fortran order) before any data, so
//! that a mismatch is an error message rather than a misread, and writes n-dimensional arrays of
//! every dtype hat needs (`<i4`, `<f4`, `|b1`, ...). `i1` is NumPy's `bool`, `index` is `<i8`.

use hat_runtime::executor::{ArgValue, HostBuffer, Parameter, ParameterKind};
use hat_runtime::{BufferLayout, ElementType, RuntimeError, Scalar};
use npyz::{DType, TypeChar, WriterBuilder};
use std::io::Read;
use std::path::{Path, PathBuf};

/// `NAME=VALUE` of `--FLAG NAME=VALUE`, with a leading `%` of NAME dropped.
pub fn split_assignment<'t>(flag: &str, text: &'t str) -> Result<(&'t str, &'t str), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim_start_matches('%').is_empty() => Ok((name.trim_start_matches('%'), value)),
        _ => Err(format!("error: --{flag} {text}: expected NAME=VALUE")),
    }
}

/// The type of a parameter as the messages write it.
fn describe(parameter: &Parameter) -> String {
    format!("%{}: {}", parameter.name, parameter.type_text)
}

/// The parameters of the entry, one per line, for messages.
fn parameter_list(entry: &str, parameters: &[Parameter]) -> String {
    if parameters.is_empty() {
        return format!("@{entry} takes no parameters");
    }
    let lines: Vec<String> = parameters.iter().map(|p| format!("  {}", describe(p))).collect();
    format!("the parameters of @{entry}:\n{}", lines.join("\n"))
}

/// The entry's arguments, one per parameter, from the `--arg` assignments. Errors name the
/// parameter and list the entry's parameters where that helps.
pub fn arguments(entry: &str, parameters: &[Parameter], assignments: &[String]) -> Result<Vec<ArgValue>, String> {
    let mut given: Vec<Option<&str>> = vec![None; parameters.len()];
    for assignment in assignments {
        let (name, value) = split_assignment("arg", assignment)?;
        let Some(index) = parameters.iter().position(|p| p.name == name) else {
            return Err(format!(
                "error: --arg {assignment}: @{entry} has no parameter '%{name}'\n{}",
                parameter_list(entry, parameters)
            ));
        };
        if given[index].is_some() {
            return Err(format!("error: --arg {assignment}: '%{name}' is given twice"));
        }
        given[index] = Some(value);
    }
    let missing: Vec<String> = parameters
        .iter()
        .zip(&given)
        .filter(|(_, value)| value.is_none())
        .map(|(p, _)| format!("%{} ({})", p.name, p.type_text))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "error: no --arg for the parameter{} {} of @{entry} (give each as --arg NAME=VALUE)\n{}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            parameter_list(entry, parameters)
        ));
    }
    parameters
        .iter()
        .zip(given)
        .map(|(parameter, value)| {
            let value = value.unwrap_or_default();
            argument(parameter, value).map_err(|message| format!("error: --arg {}={value}: {message}", parameter.name))
        })
        .collect()
}

/// The value of one parameter, checked against it.
fn argument(parameter: &Parameter, text: &str) -> Result<ArgValue, String> {
    let value = match &parameter.kind {
        ParameterKind::Scalar(ty) => ArgValue::Scalar(parse_scalar(*ty, text)?),
        ParameterKind::Buffer(layout) => {
            ArgValue::Buffer(buffer(layout.element, Some(&layout.shape), text, parameter)?)
        }
        ParameterKind::DynamicBuffer { element, .. } => ArgValue::Buffer(buffer(*element, None, text, parameter)?),
    };
    parameter.check(value).map_err(|error| match error {
        RuntimeError::BadArgument { message, .. } => message,
        other => other.to_string(),
    })
}

/// A scalar of type `ty` written as `text`.
pub fn parse_scalar(ty: ElementType, text: &str) -> Result<Scalar, String> {
    let type_name = hat_runtime::eval::type_name(ty);
    if ty.is_float() {
        let value: f64 =
            text.trim().parse().map_err(|_| format!("expected a number of type {type_name}, got '{text}'"))?;
        return Ok(Scalar::Float(if ty == ElementType::F32 { value as f32 as f64 } else { value }));
    }
    let trimmed = text.trim();
    if ty == ElementType::I1 {
        match trimmed {
            "true" => return Ok(Scalar::Int(1)),
            "false" => return Ok(Scalar::Int(0)),
            _ => {}
        }
    }
    let (negative, digits) = match trimmed.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    let magnitude = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => i128::from_str_radix(hex, 16),
        None => digits.parse::<i128>(),
    };
    let expected = || {
        if ty == ElementType::I1 {
            format!("expected 0, 1, true or false (i1), got '{text}'")
        } else {
            format!("expected an integer of type {type_name}, got '{text}'")
        }
    };
    let magnitude = magnitude.map_err(|_| expected())?;
    if digits.starts_with(['+', '-']) {
        return Err(expected());
    }
    let value = if negative { -magnitude } else { magnitude };
    // Signed or unsigned reading of the width, as MLIR's integer literals: i8 takes -128 ... 255.
    let bits = ty.bits();
    let (low, high): (i128, i128) = match bits {
        1 => (0, 1),
        _ => (-(1i128 << (bits - 1)), (1i128 << bits) - 1),
    };
    if value < low || value > high {
        return Err(format!("the value {value} does not fit in {type_name}"));
    }
    Ok(Scalar::Int(hat_runtime::value::sign_extend(value as i64, bits)))
}

/// A buffer generator (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
enum Generator {
    Zeros,
    Ones,
    Iota,
    Random(u64),
    Fill(String),
}

impl Generator {
    fn parse(text: &str) -> Result<Option<Generator>, String> {
        Ok(Some(match text {
            "zeros" => Generator::Zeros,
            "ones" => Generator::Ones,
            "iota" => Generator::Iota,
            "random" => Generator::Random(0),
            _ => {
                if let Some(seed) = text.strip_prefix("random:") {
                    let seed = seed
                        .parse()
                        .map_err(|_| format!("random:SEED needs a non-negative integer seed, got '{seed}'"))?;
                    Generator::Random(seed)
                } else if let Some(value) = text.strip_prefix("fill:") {
                    Generator::Fill(value.to_string())
                } else {
                    return Ok(None);
                }
            }
        }))
    }

    /// The elements of a buffer of `layout` (its type written `type_text`, for messages). The
    /// buffer is allocated fallibly: a size that host memory cannot hold is an error.
    fn generate(&self, layout: &BufferLayout, type_text: &str) -> Result<HostBuffer, String> {
        let element = layout.element;
        let count = layout.len();
        let size = element.size();
        let fill = match self {
            Generator::Fill(text) => Some(parse_scalar(element, text).map_err(|e| format!("fill:{text}: {e}"))?),
            _ => None,
        };
        let mut bytes = host_bytes(layout, type_text)?;
        let mut random = SplitMix64(match self {
            Generator::Random(seed) => *seed,
            _ => 0,
        });
        for (k, chunk) in bytes.chunks_exact_mut(size).enumerate().take(count) {
            let value = match self {
                Generator::Zeros => Scalar::Int(0),
                Generator::Ones => Scalar::Int(1),
                Generator::Iota if element == ElementType::I1 => Scalar::Int(k as i64 & 1),
                Generator::Iota => Scalar::Int(k as i64),
                Generator::Random(_) => match element {
                    ElementType::I1 => Scalar::Int((random.next() >> 63) as i64),
                    _ if element.is_float() => Scalar::Float(random.unit()),
                    _ => Scalar::Int((random.next() % 100) as i64),
                },
                Generator::Fill(_) => fill.unwrap_or(Scalar::Int(0)),
            };
            let value = match (element.is_float(), value) {
                (true, Scalar::Int(v)) => Scalar::Float(v as f64),
                (_, value) => value,
            };
            element.write(value, chunk);
        }
        Ok(HostBuffer { layout: layout.clone(), bytes })
    }
}

/// Zeroed host memory for a buffer of `layout` (of type `type_text`), allocated fallibly: a size
/// that overflows or that host memory cannot hold is an error naming the type and the size.
fn host_bytes(layout: &BufferLayout, type_text: &str) -> Result<Vec<u8>, String> {
    let size = layout.checked_bytes().map_err(|message| format!("{type_text} has {message}"))?;
    // Refused before anything is touched: overcommit would grant it, and filling it would bring
    // the OOM killer instead of this message.
    if let Some(available) = hat_runtime::host_memory::refuses(size as u64) {
        return Err(hat_runtime::host_memory::message(type_text, size as u64, available));
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size).map_err(|e| {
        format!("host allocation of {size} bytes for {type_text} failed: host memory cannot hold it ({e})")
    })?;
    bytes.resize(size, 0);
    Ok(bytes)
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny generator whose output is fixed by its
/// definition, so `random:SEED` gives the same buffer everywhere.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, with 53 random bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The buffer a VALUE gives: a generator, or a `.npy` file. `shape` is `None` for a buffer with
/// dynamic dimensions (the parameter's check then matches the file's shape against it).
fn buffer(
    element: ElementType,
    shape: Option<&[usize]>,
    text: &str,
    parameter: &Parameter,
) -> Result<HostBuffer, String> {
    if let Some(generator) = Generator::parse(text)? {
        let Some(shape) = shape else {
            return Err(format!(
                "'%{}' has dynamic dimensions ({}): give a .npy or .png file, a generator needs the shape",
                parameter.name, parameter.type_text
            ));
        };
        return generator.generate(&BufferLayout { element, shape: shape.to_vec() }, &parameter.type_text);
    }
    let path = Path::new(text);
    if parse_scalar(ElementType::F64, text).is_ok() {
        return Err(format!(
            "'%{}' is a buffer ({}): give a .npy or .png file or a generator (zeros, ones, iota, random[:SEED], fill:V), not a number",
            parameter.name, parameter.type_text
        ));
    }
    if crate::png_io::is_png(path) {
        return crate::png_io::read_png(path, parameter);
    }
    if !path.exists() && path.extension().is_none_or(|e| e != "npy") {
        return Err(format!(
            "expected a .npy or .png file or a generator (zeros, ones, iota, random[:SEED], fill:V) for {}, got '{text}'",
            describe(parameter)
        ));
    }
    read_npy(path, element, shape, &parameter.type_text)
}

/// The NumPy dtype hat uses for an element type.
fn dtype_of(element: ElementType) -> &'static str {
    match element {
        ElementType::I1 => "|b1",
        ElementType::I8 => "|i1",
        ElementType::I16 => "<i2",
        ElementType::I32 => "<i4",
        ElementType::I64 | ElementType::Index => "<i8",
        ElementType::F32 => "<f4",
        ElementType::F64 => "<f8",
    }
}

/// The longest `.npy` header read. NumPy writes headers of a few hundred bytes and itself
/// refuses headers over 10,000 bytes by default (`max_header_size`); the format allows 4 GiB.
const MAX_NPY_HEADER: usize = 1 << 20;

/// The header of a `.npy` file (magic, version, length and text), read into memory, leaving
/// `reader` at the data. Refused, with a message: a header longer than [`MAX_NPY_HEADER`], and
/// a shape whose number of elements overflows (which `npyz` does not check). Anything else
/// that is wrong is left for `npyz` to report.
fn read_npy_header(reader: &mut impl Read, path: &Path) -> Result<Vec<u8>, String> {
    let cannot = |e: std::io::Error| format!("cannot read '{}': {e}", path.display());
    let mut bytes = vec![0u8; 10];
    let read = reader.take(10).read(&mut bytes).map_err(cannot)?;
    bytes.truncate(read);
    if read < 10 || !bytes.starts_with(b"\x93NUMPY") {
        // Not a .npy file, or a truncated one: npyz says which.
        return Ok(bytes);
    }
    let length = if bytes[6] == 1 {
        u16::from_le_bytes([bytes[8], bytes[9]]) as usize
    } else {
        let mut high = [0u8; 2];
        reader.read_exact(&mut high).map_err(cannot)?;
        bytes.extend_from_slice(&high);
        u32::from_le_bytes([bytes[8], bytes[9], high[0], high[1]]) as usize
    };
    if length > MAX_NPY_HEADER {
        return Err(format!(
            "'{}' has a header of {length} bytes, more than the {MAX_NPY_HEADER} hat-opt reads",
            path.display()
        ));
    }
    let start = bytes.len();
    reader.take(length as u64).read_to_end(&mut bytes).map_err(cannot)?;
    let text = String::from_utf8_lossy(&bytes[start..]);
    if let Some(dims) = header_shape(&text) {
        if dims.iter().try_fold(1u64, |total, &d| total.checked_mul(d)).is_none() {
            let dims: Vec<String> = dims.iter().map(u64::to_string).collect();
            return Err(format!(
                "'{}' has shape ({}), whose number of elements overflows",
                path.display(),
                dims.join(", ")
            ));
        }
    }
    Ok(bytes)
}

/// The dimensions of the `'shape': (...)` entry of a `.npy` header's text, when they read as
/// plain integers.
fn header_shape(text: &str) -> Option<Vec<u64>> {
    let after_key = text.split_once("'shape'").or_else(|| text.split_once("\"shape\""))?.1;
    let open = after_key.trim_start().strip_prefix(':')?.trim_start();
    let inner = open.strip_prefix(['(', '['])?;
    let inner = &inner[..inner.find([')', ']'])?];
    inner.split(',').map(str::trim).filter(|d| !d.is_empty()).map(|d| d.parse().ok()).collect()
}

/// Reads a `.npy` file into a buffer of `element`s; its shape must be `shape` (when known).
///
/// Nothing is allocated before the header is checked against the type, and a file that holds
/// less data than its header says is refused before its buffer is allocated (when it is a
/// regular file, whose length is known; otherwise when its data ends). The buffer is
/// allocated fallibly, and the elements go straight into it.
pub fn read_npy(
    path: &Path,
    element: ElementType,
    shape: Option<&[usize]>,
    type_text: &str,
) -> Result<HostBuffer, String> {
    let cannot = |e: std::io::Error| format!("cannot read '{}': {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    // The length of the data: the file's, less the header's. Unknown for a pipe.
    let file_length = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    let mut reader = std::io::BufReader::new(file);
    let header_bytes = read_npy_header(&mut reader, path)?;
    let header = npyz::NpyHeader::from_reader(&header_bytes[..]).map_err(cannot)?;
    let data_length = file_length.map(|length| length.saturating_sub(header_bytes.len() as u64));
    let npy = npyz::NpyFile::with_header(header, reader);
    let file_shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let dtype = npy.dtype();
    let type_str = match &dtype {
        DType::Plain(type_str) => type_str.clone(),
        other => {
            return Err(format!(
                "'{}' holds a structured array ({}); {type_text} needs dtype {}",
                path.display(),
                other.descr(),
                dtype_of(element)
            ))
        }
    };
    let matches = match element {
        ElementType::I1 => type_str.type_char() == TypeChar::Bool,
        _ => {
            let kind = if element.is_float() { TypeChar::Float } else { TypeChar::Int };
            type_str.type_char() == kind && type_str.num_bytes() == Some(element.size())
        }
    };
    if !matches {
        return Err(format!(
            "'{}' has dtype {type_str}, but {type_text} needs {} ({} elements)",
            path.display(),
            dtype_of(element),
            hat_runtime::eval::type_name(element)
        ));
    }
    if let Some(shape) = shape {
        if file_shape != shape {
            return Err(format!(
                "'{}' has shape ({}), but {type_text} needs ({})",
                path.display(),
                shape_text(&file_shape),
                shape_text(shape)
            ));
        }
    }
    let fortran = npy.order() == npyz::Order::Fortran;
    let layout = BufferLayout { element, shape: file_shape };
    let size = element.size();
    let header_says = || {
        format!(
            "'{}' is truncated: its header says shape ({}) of {type_str}: {} elements, {} bytes of data",
            path.display(),
            shape_text(&layout.shape),
            layout.len(),
            layout.bytes()
        )
    };
    let expected_bytes = layout
        .checked_bytes()
        .map_err(|message| format!("'{}' has shape ({}): {message}", path.display(), shape_text(&layout.shape)))?;
    if let Some(found) = data_length.filter(|&found| found < expected_bytes as u64) {
        return Err(format!(
            "{}; the file holds {found} bytes of data ({} elements)",
            header_says(),
            found / size as u64
        ));
    }
    let mut bytes = host_bytes(&layout, type_text)?;
    let read = match element {
        ElementType::I1 => read_elements(npy, element, &mut bytes, |b: bool| Scalar::Int(b as i64)),
        ElementType::I8 => read_elements(npy, element, &mut bytes, |v: i8| Scalar::Int(v as i64)),
        ElementType::I16 => read_elements(npy, element, &mut bytes, |v: i16| Scalar::Int(v as i64)),
        ElementType::I32 => read_elements(npy, element, &mut bytes, |v: i32| Scalar::Int(v as i64)),
        ElementType::I64 | ElementType::Index => read_elements(npy, element, &mut bytes, Scalar::Int),
        ElementType::F32 => read_elements(npy, element, &mut bytes, |v: f32| Scalar::Float(v as f64)),
        ElementType::F64 => read_elements(npy, element, &mut bytes, Scalar::Float),
    };
    match read {
        Ok(()) => {}
        Err((elements, error)) if error.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(format!("{}; the file's data ends after {elements} elements", header_says()))
        }
        Err((_, error)) => return Err(cannot(error)),
    }
    let bytes = if fortran { fortran_to_row_major(&bytes, size, &layout.shape, type_text)? } else { bytes };
    Ok(HostBuffer { layout, bytes })
}

/// Reads the data of `npy` as `T`s, converted to `element`s, into `bytes` (one element's size
/// each, in the file's order); on an error, how many elements were read and the error.
fn read_elements<T: npyz::Deserialize, R: Read>(
    npy: npyz::NpyFile<R>,
    element: ElementType,
    bytes: &mut [u8],
    convert: impl Fn(T) -> Scalar,
) -> Result<(), (usize, std::io::Error)> {
    let values = npy.data::<T>().map_err(|e| (0, std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    for (index, (value, chunk)) in values.zip(bytes.chunks_exact_mut(element.size())).enumerate() {
        element.write(convert(value.map_err(|e| (index, e))?), chunk);
    }
    Ok(())
}

/// The elements of a column-major (Fortran-order) array, each `size` bytes, in row-major order.
fn fortran_to_row_major(bytes: &[u8], size: usize, shape: &[usize], type_text: &str) -> Result<Vec<u8>, String> {
    let count = bytes.len() / size;
    let mut out = Vec::new();
    out.try_reserve_exact(bytes.len()).map_err(|e| {
        format!("host allocation of {} bytes for {type_text} failed: host memory cannot hold it ({e})", bytes.len())
    })?;
    let mut index = vec![0usize; shape.len()];
    for _ in 0..count {
        // Column-major flat index of `index`: the first dimension varies fastest.
        let mut flat = 0;
        for (&i, &extent) in index.iter().zip(shape).rev() {
            flat = flat * extent + i;
        }
        out.extend_from_slice(&bytes[flat * size..(flat + 1) * size]);
        // Next row-major index: the last dimension varies fastest.
        for (i, &extent) in index.iter_mut().zip(shape).rev() {
            *i += 1;
            if *i < extent {
                break;
            }
            *i = 0;
        }
    }
    Ok(out)
}

fn shape_text(shape: &[usize]) -> String {
    match shape {
        [one] => format!("{one},"),
        _ => shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "),
    }
}

/// Writes a buffer as a `.npy` file (C order, the dtype of [`dtype_of`]).
pub fn write_npy(path: &Path, buffer: &HostBuffer) -> Result<(), String> {
    let cannot = |e: std::io::Error| format!("error: cannot write '{}': {e}", path.display());
    let element = buffer.layout.element;
    let shape: Vec<u64> = buffer.layout.shape.iter().map(|&d| d as u64).collect();
    let dtype = DType::parse(&format!("'{}'", dtype_of(element))).map_err(cannot)?;
    let file = std::io::BufWriter::new(std::fs::File::create(path).map_err(cannot)?);
    // The elements go from the buffer's bytes to the file one at a time: no copy as large as
    // the buffer (or larger) is made.
    let scalars = buffer.bytes.chunks_exact(element.size()).map(|chunk| element.read(chunk));
    macro_rules! write_as {
        ($t:ty, $convert:expr) => {{
            let mut writer =
                npyz::WriteOptions::<$t>::new().dtype(dtype).shape(&shape).writer(file).begin_nd().map_err(cannot)?;
            writer.extend(scalars.map(|v| $convert(v))).map_err(cannot)?;
            writer.finish().map_err(cannot)
        }};
    }
    match element {
        ElementType::I1 => write_as!(bool, |v: Scalar| v.as_i64() != 0),
        ElementType::I8 => write_as!(i8, |v: Scalar| v.as_i64() as i8),
        ElementType::I16 => write_as!(i16, |v: Scalar| v.as_i64() as i16),
        ElementType::I32 => write_as!(i32, |v: Scalar| v.as_i64() as i32),
        ElementType::I64 | ElementType::Index => write_as!(i64, |v: Scalar| v.as_i64()),
        ElementType::F32 => write_as!(f32, |v: Scalar| v.as_f64() as f32),
        ElementType::F64 => write_as!(f64, |v: Scalar| v.as_f64()),
    }
}

/// Writes the final host copy `buffer` of `parameter` to `path`: a PNG image when the path ends
/// in `.png` ([`crate::png_io`]), else a `.npy` file. Errors name the flag and the file.
pub fn write_output(path: &Path, parameter: &Parameter, buffer: &HostBuffer) -> Result<(), String> {
    if crate::png_io::is_png(path) {
        return crate::png_io::write_png(path, parameter, buffer)
            .map_err(|message| format!("error: --out {}={}: {message}", parameter.name, path.display()));
    }
    write_npy(path, buffer)
}

/// The `--out NAME=PATH` assignments as (index of the buffer among the entry's buffer
/// parameters, path). NAME must name a buffer parameter, once; a `.png` PATH must name a buffer
/// an image can be made of (checked here, before the program runs).
pub fn outputs(entry: &str, parameters: &[Parameter], assignments: &[String]) -> Result<Vec<(usize, PathBuf)>, String> {
    let buffers: Vec<&Parameter> = parameters.iter().filter(|p| !matches!(p.kind, ParameterKind::Scalar(_))).collect();
    let mut outputs: Vec<(usize, PathBuf)> = Vec::new();
    for assignment in assignments {
        let (name, path) = split_assignment("out", assignment)?;
        let Some(index) = buffers.iter().position(|p| p.name == name) else {
            let what = if parameters.iter().any(|p| p.name == name) {
                "is a scalar, not a buffer"
            } else {
                "is not a parameter"
            };
            let names: Vec<String> = buffers.iter().map(|p| describe(p)).collect();
            return Err(format!(
                "error: --out {assignment}: '%{name}' of @{entry} {what}; the buffer parameters are: {}",
                if names.is_empty() { "(none)".to_string() } else { names.join(", ") }
            ));
        };
        if path.is_empty() {
            return Err(format!("error: --out {assignment}: expected NAME=PATH.npy or NAME=PATH.png"));
        }
        if crate::png_io::is_png(Path::new(path)) {
            crate::png_io::check_output(buffers[index])
                .map_err(|message| format!("error: --out {assignment}: {message}"))?;
        }
        outputs.push((index, PathBuf::from(path)));
    }
    Ok(outputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(element: ElementType, shape: &[usize]) -> BufferLayout {
        BufferLayout { element, shape: shape.to_vec() }
    }

    #[test]
    fn scalars() {
        assert_eq!(parse_scalar(ElementType::I32, "-7"), Ok(Scalar::Int(-7)));
        assert_eq!(parse_scalar(ElementType::I32, "0x10"), Ok(Scalar::Int(16)));
        assert_eq!(parse_scalar(ElementType::I8, "255"), Ok(Scalar::Int(-1)));
        assert!(parse_scalar(ElementType::I8, "256").unwrap_err().contains("does not fit in i8"));
        assert!(parse_scalar(ElementType::I32, "1.5").unwrap_err().contains("expected an integer of type i32"));
        assert!(parse_scalar(ElementType::Index, "--1").is_err());
        assert_eq!(parse_scalar(ElementType::I1, "true"), Ok(Scalar::Int(1)));
        assert!(parse_scalar(ElementType::I1, "2").is_err());
        assert_eq!(parse_scalar(ElementType::F32, "0.1"), Ok(Scalar::Float(0.1f32 as f64)));
        assert_eq!(parse_scalar(ElementType::F64, "3"), Ok(Scalar::Float(3.0)));
        assert!(parse_scalar(ElementType::F32, "x").is_err());
    }

    #[test]
    fn generators() {
        let ints = layout(ElementType::I32, &[2, 3]);
        let iota = Generator::Iota.generate(&ints, "t").unwrap();
        assert_eq!(iota.to_i32().unwrap(), vec![0, 1, 2, 3, 4, 5]);
        let a = Generator::Random(7).generate(&ints, "t").unwrap();
        assert_eq!(a, Generator::Random(7).generate(&ints, "t").unwrap());
        assert_ne!(a, Generator::Random(8).generate(&ints, "t").unwrap());
        assert!(a.to_i32().unwrap().iter().all(|v| (0..100).contains(v)));
        let floats = Generator::Random(1).generate(&layout(ElementType::F32, &[100]), "t").unwrap();
        assert!(floats.to_f32().unwrap().iter().all(|v| (0.0..1.0).contains(v)));
        let fill = Generator::Fill("2.5".into()).generate(&layout(ElementType::F64, &[2]), "t").unwrap();
        assert_eq!(fill.to_f64().unwrap(), vec![2.5, 2.5]);
        assert!(Generator::Fill("2.5".into()).generate(&ints, "t").is_err());
        let bools = Generator::Iota.generate(&layout(ElementType::I1, &[3]), "t").unwrap();
        assert_eq!(bools.bytes, vec![0, 1, 0]);
        assert_eq!(Generator::parse("random:3"), Ok(Some(Generator::Random(3))));
        assert!(Generator::parse("random:x").is_err());
        assert_eq!(Generator::parse("grid.npy"), Ok(None));
    }

    #[test]
    fn fortran_order() {
        // A 2 x 3 array [[0, 1, 2], [3, 4, 5]] stored column-major: 0 3 1 4 2 5.
        let stored: Vec<u8> = [0i16, 3, 1, 4, 2, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
        let expected: Vec<u8> = (0i16..6).flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(fortran_to_row_major(&stored, 2, &[2, 3], "t"), Ok(expected));
    }

    #[test]
    fn npy_round_trip() {
        let directory = std::env::temp_dir().join(format!("hat-opt-args-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        for element in [
            ElementType::I1,
            ElementType::I8,
            ElementType::I16,
            ElementType::I32,
            ElementType::I64,
            ElementType::Index,
            ElementType::F32,
            ElementType::F64,
        ] {
            let buffer = Generator::Random(5).generate(&layout(element, &[3, 4]), "t").unwrap();
            let path = directory.join(format!("{element:?}.npy"));
            write_npy(&path, &buffer).unwrap();
            assert_eq!(read_npy(&path, element, Some(&[3, 4]), "t").unwrap(), buffer);
            assert!(read_npy(&path, element, Some(&[4, 3]), "t").unwrap_err().contains("has shape (3, 4)"));
        }
        let path = directory.join("F32.npy");
        let error = read_npy(&path, ElementType::I32, Some(&[3, 4]), "memref<3x4xi32>").unwrap_err();
        assert!(error.contains("has dtype <f4, but memref<3x4xi32> needs <i4"), "{error}");
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
