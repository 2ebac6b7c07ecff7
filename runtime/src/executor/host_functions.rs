//! Host functions: the opaque functions a program declares with `compute.host_func` and the
//! embedding program provides ([`Executor::register_host_function`](super::Executor::register_host_function)),
//! and the standard ones `hat-opt` registers: [`print()`] and [`display()`].
//!
//! A host function receives a [`HostCall`]: its scalar arguments, and its buffer arguments as
//! views of their host copies. The declared effect of each buffer argument decides the view: a
//! `read` argument can only be read ([`HostCall::buffer`]); `write` and `readwrite` arguments can
//! also be written ([`HostCall::buffer_mut`]). So a function cannot change what its declaration
//! says it only reads, and a transfer plan built on the declaration stays right.

use crate::value::{ElementType, Scalar};
use crate::HostBuffer;
use hat_dialects::compute::ArgEffect;
use hat_ir::Location;
use std::io::Write;

/// A host function: gets the call, returns its results (one scalar per result the program
/// expects) or a message, which becomes [`RuntimeError::HostFunctionFailed`](crate::RuntimeError::HostFunctionFailed).
pub type HostFunction<'a> = Box<dyn FnMut(&mut HostCall) -> Result<Vec<Scalar>, String> + 'a>;

/// The names of the standard host functions ([`print()`] and [`display()`]).
pub const STANDARD_HOST_FUNCTIONS: &[&str] = &["print", "display"];

#[derive(Clone, Debug)]
enum Slot {
    Scalar(Scalar, ElementType),
    /// A buffer: the index of its view in `HostCall::buffers`. The same buffer passed twice has
    /// one view.
    Buffer(usize, ArgEffect),
}

/// One argument of a host call.
#[derive(Copy, Clone, Debug)]
pub enum HostArg<'c> {
    /// A scalar and its type.
    Scalar(Scalar, ElementType),
    /// A buffer's host copy and the effect the declaration gives it.
    Buffer(&'c HostBuffer, ArgEffect),
}

/// A call of a host function: what the function sees. See the module documentation.
#[derive(Debug)]
pub struct HostCall {
    name: String,
    location: Location,
    slots: Vec<Slot>,
    pub(crate) buffers: Vec<HostBuffer>,
    results: Vec<ElementType>,
}

impl HostCall {
    pub(crate) fn new(name: &str, location: Location, results: Vec<ElementType>) -> Self {
        HostCall { name: name.to_string(), location, slots: Vec::new(), buffers: Vec::new(), results }
    }

    pub(crate) fn push_scalar(&mut self, value: Scalar, ty: ElementType) {
        self.slots.push(Slot::Scalar(value, ty));
    }

    /// Adds a buffer argument with a new view (the buffer's host copy, taken out of the run).
    pub(crate) fn push_new_buffer(&mut self, buffer: HostBuffer, effect: ArgEffect) {
        self.buffers.push(buffer);
        self.slots.push(Slot::Buffer(self.buffers.len() - 1, effect));
    }

    /// Adds a buffer argument that is the same buffer as the one of view `view`.
    pub(crate) fn push_same_buffer(&mut self, view: usize, effect: ArgEffect) {
        self.slots.push(Slot::Buffer(view, effect));
    }

    /// The function's name (without `@`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the call is.
    pub fn location(&self) -> Location {
        self.location
    }

    /// The number of arguments.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The types of the results the program expects.
    pub fn result_types(&self) -> &[ElementType] {
        &self.results
    }

    /// Argument `index`.
    pub fn arg(&self, index: usize) -> Option<HostArg<'_>> {
        Some(match *self.slots.get(index)? {
            Slot::Scalar(value, ty) => HostArg::Scalar(value, ty),
            Slot::Buffer(view, effect) => HostArg::Buffer(&self.buffers[view], effect),
        })
    }

    /// All arguments, in order.
    pub fn args(&self) -> impl Iterator<Item = HostArg<'_>> + '_ {
        (0..self.len()).filter_map(|i| self.arg(i))
    }

    /// The declared effect of argument `index` (`none` for a scalar).
    pub fn effect(&self, index: usize) -> Option<ArgEffect> {
        Some(match self.slots.get(index)? {
            Slot::Scalar(..) => ArgEffect::None,
            Slot::Buffer(_, effect) => *effect,
        })
    }

    /// The scalar argument `index`, or a message saying why not.
    pub fn scalar(&self, index: usize) -> Result<Scalar, String> {
        match self.slots.get(index) {
            Some(Slot::Scalar(value, _)) => Ok(*value),
            Some(Slot::Buffer(..)) => Err(format!("argument #{index} is a buffer, not a scalar")),
            None => Err(self.missing(index)),
        }
    }

    /// The buffer argument `index` (its host copy), or a message saying why not.
    pub fn buffer(&self, index: usize) -> Result<&HostBuffer, String> {
        match self.slots.get(index) {
            Some(Slot::Buffer(view, _)) => Ok(&self.buffers[*view]),
            Some(Slot::Scalar(..)) => Err(format!("argument #{index} is a scalar, not a buffer")),
            None => Err(self.missing(index)),
        }
    }

    /// The buffer argument `index` to write, when its declared effect is `write` or `readwrite`;
    /// otherwise a message saying why not. Its layout and size must not change.
    pub fn buffer_mut(&mut self, index: usize) -> Result<&mut HostBuffer, String> {
        match self.slots.get(index) {
            Some(Slot::Buffer(view, effect)) if *effect != ArgEffect::Read => Ok(&mut self.buffers[*view]),
            Some(Slot::Buffer(..)) => {
                Err(format!("argument #{index} is declared 'read' by '@{}': it cannot be written", self.name))
            }
            Some(Slot::Scalar(..)) => Err(format!("argument #{index} is a scalar, not a buffer")),
            None => Err(self.missing(index)),
        }
    }

    fn missing(&self, index: usize) -> String {
        format!("argument #{index} is missing ('@{}' got {} arguments)", self.name, self.len())
    }

    /// The views, in the order they were added, to hand back to the run after the call.
    pub(crate) fn into_views(self) -> Vec<HostBuffer> {
        self.buffers
    }
}

// ----- standard host functions -----------------------------------------------------------------

/// Writes a scalar of type `ty`: integers in decimal, `i1` as `true`/`false`, floats in the
/// shortest form that reads back (`f32` as an `f32`).
pub fn format_scalar(value: Scalar, ty: ElementType) -> String {
    match ty {
        ElementType::I1 => (if value.as_i64() & 1 != 0 { "true" } else { "false" }).to_string(),
        ElementType::F32 => format!("{:?}", value.as_f64() as f32),
        ElementType::F64 => format!("{:?}", value.as_f64()),
        _ => value.as_i64().to_string(),
    }
}

/// Writes a buffer's elements as nested lists, one level per dimension: `[[1, 2], [3, 4]]`
/// (a rank-0 buffer as its one element).
pub fn format_buffer(buffer: &HostBuffer) -> String {
    fn nest(out: &mut String, values: &[String], shape: &[usize]) {
        match shape.split_first() {
            None => out.push_str(values.first().map_or("", |v| v.as_str())),
            Some((&extent, rest)) => {
                let stride: usize = rest.iter().product();
                out.push('[');
                for i in 0..extent {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    nest(out, &values[(i * stride).min(values.len())..], rest);
                }
                out.push(']');
            }
        }
    }
    let element = buffer.layout.element;
    let values: Vec<String> = buffer.to_scalars().into_iter().map(|v| format_scalar(v, element)).collect();
    let mut out = String::new();
    nest(&mut out, &values, &buffer.layout.shape);
    out
}

/// The standard `print`: writes its arguments on one line, separated by spaces — scalars as
/// [`format_scalar`] writes them, buffers as [`format_buffer`] does. Any signature; no results.
pub fn print<'a>(mut out: impl Write + 'a) -> HostFunction<'a> {
    Box::new(move |call: &mut HostCall| {
        let parts: Vec<String> = call
            .args()
            .map(|arg| match arg {
                HostArg::Scalar(value, ty) => format_scalar(value, ty),
                HostArg::Buffer(buffer, _) => format_buffer(buffer),
            })
            .collect();
        writeln!(out, "{}", parts.join(" ")).map_err(|e| e.to_string())?;
        Ok(Vec::new())
    })
}

/// The standard `display`: draws each buffer argument as a grid of characters, `#` for a
/// non-zero element and `.` for zero, one line per row (a 1-D buffer is one row; a buffer of
/// higher rank is drawn as its 2-D slices, one after another). Scalar arguments (say, the
/// generation) come first as a header line `-- 3 --`. Every drawing ends with an empty line.
/// Any signature with at least one buffer; no results.
pub fn display<'a>(mut out: impl Write + 'a) -> HostFunction<'a> {
    Box::new(move |call: &mut HostCall| {
        let scalars: Vec<String> = call
            .args()
            .filter_map(|arg| match arg {
                HostArg::Scalar(value, ty) => Some(format_scalar(value, ty)),
                HostArg::Buffer(..) => None,
            })
            .collect();
        let mut text = String::new();
        if !scalars.is_empty() {
            text.push_str(&format!("-- {} --\n", scalars.join(" ")));
        }
        let mut buffers = 0;
        for arg in call.args() {
            let HostArg::Buffer(buffer, _) = arg else { continue };
            buffers += 1;
            let shape = &buffer.layout.shape;
            let columns = shape.last().copied().unwrap_or(1).max(1);
            let rows_per_slice = if shape.len() >= 2 { shape[shape.len() - 2].max(1) } else { 1 };
            for (row, values) in buffer.to_scalars().chunks(columns).enumerate() {
                if row > 0 && row % rows_per_slice == 0 {
                    text.push('\n');
                }
                text.extend(values.iter().map(|v| if is_zero(*v) { '.' } else { '#' }));
                text.push('\n');
            }
            text.push('\n');
        }
        if buffers == 0 {
            return Err("expects at least one buffer argument to draw".to_string());
        }
        out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| e.to_string())?;
        Ok(Vec::new())
    })
}

fn is_zero(value: Scalar) -> bool {
    match value {
        Scalar::Int(v) => v == 0,
        Scalar::Float(v) => v == 0.0,
    }
}
