//! A dispatch's arguments are validated before a backend sees them, by the host executor: their
//! number, and for each parameter of the kernel a buffer whose element type and extents fit the
//! parameter's memref type, or a scalar of its type. The executor checks the static types once,
//! when it compiles a dispatch op ([`KernelSignature::check_types`]); at run time it checks only
//! the extents that the types leave open (an argument of a dynamic extent where the parameter's
//! is fixed: [`ExtentCheck`]), so a dispatch costs nothing more. Backends trust what they are
//! given (as wgpu-core validates and wgpu-hal trusts): the CPU backend and the Vulkan backend
//! only decode arguments, and report one that does not decode as an internal error. A program
//! that drives a backend without the executor checks its arguments with
//! [`KernelSignature::check`] first.

use crate::error::RuntimeError;
use crate::eval::type_name;
use crate::value::{BufferLayout, ElementType};
use hat_ir::interfaces::CallableOpInterface;
use hat_ir::{Context, Op, TypeKind};

/// What a kernel takes: its parameters, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSignature {
    /// The kernel's symbol name.
    pub name: String,
    /// Its parameters, in order.
    pub params: Vec<KernelParameter>,
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelParameter {
    /// A memref.
    Buffer {
        /// `#2 (%image)`, or `#2`.
        name: String,
        /// Its element type.
        element: ElementType,
        /// Its extents (`None` for `?`).
        shape: Vec<Option<u64>>,
    },
    /// A scalar.
    Scalar {
        /// `#2 (%scale)`, or `#2`.
        name: String,
        /// Its type.
        ty: ElementType,
    },
}

/// An argument as the run-time check sees it.
#[derive(Copy, Clone, Debug)]
pub enum Argument<'a> {
    /// A buffer of this layout.
    Buffer(&'a BufferLayout),
    /// A scalar of this type.
    Scalar(ElementType),
}

/// An argument's static type, as the check of a dispatch op sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgumentType {
    /// A memref.
    Buffer {
        /// Its element type.
        element: ElementType,
        /// Its extents (`None` for `?`).
        shape: Vec<Option<u64>>,
    },
    /// A scalar of this type.
    Scalar(ElementType),
}

impl ArgumentType {
    /// The static type of a value of type `ty`, when the runtime holds such values.
    pub fn of(ctx: &Context, ty: hat_ir::Type) -> Option<ArgumentType> {
        match ctx.type_kind(ty) {
            TypeKind::MemRef { shape, element } => Some(ArgumentType::Buffer {
                element: ElementType::of(ctx, *element)?,
                shape: shape.iter().map(|&extent| u64::try_from(extent).ok()).collect(),
            }),
            _ => ElementType::of(ctx, ty).map(ArgumentType::Scalar),
        }
    }
}

/// An extent that the static types leave to run time: the buffer given as argument
/// `argument` must have `extent` elements in dimension `dimension`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtentCheck {
    /// The argument's position.
    pub argument: usize,
    /// The dimension.
    pub dimension: usize,
    /// The extent the parameter's type fixes.
    pub extent: u64,
    /// The parameter's name, for the error.
    pub parameter: String,
    /// The kernel's name, for the error.
    pub kernel: String,
    /// The parameter's type, for the error.
    pub expected: String,
}

impl ExtentCheck {
    /// Whether the buffer given has the extent; the error names the parameter.
    #[inline]
    pub fn check(&self, layout: &BufferLayout) -> Result<(), RuntimeError> {
        match layout.shape.get(self.dimension) {
            Some(&extent) if extent as u64 == self.extent => Ok(()),
            _ => Err(self.mismatch(layout)),
        }
    }

    #[cold]
    fn mismatch(&self, layout: &BufferLayout) -> RuntimeError {
        let actual = describe_memref(layout.element, layout.shape.iter().map(|&s| Some(s as u64)));
        RuntimeError::BadArgument {
            name: self.parameter.clone(),
            message: format!("kernel '{}' expects a buffer of type {}, got {actual}", self.kernel, self.expected),
        }
    }
}

impl KernelParameter {
    /// The parameter's name: `#2 (%scale)`, or `#2`.
    pub fn name(&self) -> &str {
        match self {
            KernelParameter::Buffer { name, .. } | KernelParameter::Scalar { name, .. } => name,
        }
    }
}

impl KernelSignature {
    /// The signature of `kernel` (a callable): its parameters' types, each a memref or a scalar
    /// of a type the runtime holds, named after the body's arguments when it has a body.
    pub fn of(ctx: &Context, kernel: Op) -> Result<KernelSignature, String> {
        let name = hat_ir::verifier::symbol_name(ctx, kernel).unwrap_or("<unnamed>").to_string();
        let callable = ctx.interface::<dyn CallableOpInterface>(kernel);
        let arguments = callable
            .and_then(|c| c.body(ctx, kernel))
            .and_then(|body| ctx.region_blocks(body).first().copied())
            .map(|block| ctx.block_arguments(block));
        let types: Vec<hat_ir::Type> = match (arguments, callable.and_then(|c| c.signature(ctx, kernel))) {
            (Some(arguments), _) => arguments.iter().map(|&argument| ctx.value_type(argument)).collect(),
            (None, Some((inputs, _))) => inputs,
            (None, None) => return Err(format!("kernel '{name}' has neither a body nor a signature")),
        };
        let mut params = Vec::new();
        for (position, &ty) in types.iter().enumerate() {
            let parameter = match arguments.and_then(|a| ctx.argument_name(a[position])) {
                Some(argument) => format!("#{position} (%{argument})"),
                None => format!("#{position}"),
            };
            params.push(match ArgumentType::of(ctx, ty) {
                Some(ArgumentType::Buffer { element, shape }) => {
                    KernelParameter::Buffer { name: parameter, element, shape }
                }
                Some(ArgumentType::Scalar(ty)) => KernelParameter::Scalar { name: parameter, ty },
                None => {
                    let what = if ctx.type_kind(ty).is_memref() { "buffers" } else { "values" };
                    let ty = hat_ir::printer::type_to_string(ctx, ty);
                    return Err(format!("{what} of type '{ty}' are not supported (in kernel '{name}')"));
                }
            });
        }
        Ok(KernelSignature { name, params })
    }

    /// How many of the parameters are buffers (the CPU backend numbers workgroup-local buffers
    /// after them).
    pub fn buffer_count(&self) -> u32 {
        self.params.iter().filter(|p| matches!(p, KernelParameter::Buffer { .. })).count() as u32
    }

    /// Whether arguments of the static types `arguments` fit the parameters; `Err` is a
    /// [`RuntimeError::BadArgument`] naming the parameter, `Ok` the extents left to check when
    /// the dispatch runs (where an argument's extent is dynamic and the parameter's is not).
    pub fn check_types(&self, arguments: &[ArgumentType]) -> Result<Vec<ExtentCheck>, RuntimeError> {
        if arguments.len() != self.params.len() {
            return Err(RuntimeError::BadArgument {
                name: format!("kernel '{}'", self.name),
                message: format!(
                    "takes {} argument(s), but the dispatch passes {}",
                    self.params.len(),
                    arguments.len()
                ),
            });
        }
        let bad = |parameter: &KernelParameter, message: String| RuntimeError::BadArgument {
            name: parameter.name().to_string(),
            message: format!("kernel '{}' {message}", self.name),
        };
        let mut left = Vec::new();
        for (position, (parameter, argument)) in self.params.iter().zip(arguments).enumerate() {
            match (parameter, argument) {
                (
                    KernelParameter::Buffer { element, shape, name },
                    ArgumentType::Buffer { element: given, shape: extents },
                ) => {
                    let expected = describe_memref(*element, shape.iter().copied());
                    let fits = given == element
                        && extents.len() == shape.len()
                        && shape.iter().zip(extents).all(|(s, e)| s.is_none() || e.is_none() || s == e);
                    if !fits {
                        let actual = describe_memref(*given, extents.iter().copied());
                        return Err(bad(parameter, format!("expects a buffer of type {expected}, got {actual}")));
                    }
                    for (dimension, (s, e)) in shape.iter().zip(extents).enumerate() {
                        if let (Some(extent), None) = (s, e) {
                            left.push(ExtentCheck {
                                argument: position,
                                dimension,
                                extent: *extent,
                                parameter: name.clone(),
                                kernel: self.name.clone(),
                                expected: expected.clone(),
                            });
                        }
                    }
                }
                (KernelParameter::Scalar { ty, .. }, ArgumentType::Scalar(given)) => {
                    if ty != given {
                        return Err(bad(parameter, format!("expects {}, got {}", type_name(*ty), type_name(*given))));
                    }
                }
                (KernelParameter::Buffer { .. }, ArgumentType::Scalar(_)) => {
                    return Err(bad(parameter, "expects a buffer, got a scalar".into()))
                }
                (KernelParameter::Scalar { .. }, ArgumentType::Buffer { .. }) => {
                    return Err(bad(parameter, "expects a scalar, got a buffer".into()))
                }
            }
        }
        Ok(left)
    }

    /// Whether run-time `arguments` fit the parameters (for a program that drives a backend
    /// itself); `Err` is a [`RuntimeError::BadArgument`] naming the parameter.
    pub fn check<'a>(&self, arguments: impl IntoIterator<Item = Argument<'a>>) -> Result<(), RuntimeError> {
        let types: Vec<ArgumentType> = arguments
            .into_iter()
            .map(|argument| match argument {
                Argument::Buffer(layout) => ArgumentType::Buffer {
                    element: layout.element,
                    shape: layout.shape.iter().map(|&extent| Some(extent as u64)).collect(),
                },
                Argument::Scalar(ty) => ArgumentType::Scalar(ty),
            })
            .collect();
        let left = self.check_types(&types)?;
        debug_assert!(left.is_empty(), "a layout's extents are all known");
        Ok(())
    }
}

/// `memref<4x?xf32>`.
pub fn describe_memref(element: ElementType, shape: impl Iterator<Item = Option<u64>>) -> String {
    let mut text = String::from("memref<");
    for extent in shape {
        match extent {
            Some(extent) => text += &format!("{extent}x"),
            None => text += "?x",
        }
    }
    text + type_name(element) + ">"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature() -> KernelSignature {
        KernelSignature {
            name: "k".into(),
            params: vec![
                KernelParameter::Buffer {
                    name: "#0 (%a)".into(),
                    element: ElementType::F32,
                    shape: vec![Some(4), None],
                },
                KernelParameter::Scalar { name: "#1 (%n)".into(), ty: ElementType::Index },
            ],
        }
    }

    fn buffer(shape: &[Option<u64>]) -> ArgumentType {
        ArgumentType::Buffer { element: ElementType::F32, shape: shape.to_vec() }
    }

    #[test]
    fn static_types_are_checked_once_and_open_extents_are_left_to_run_time() {
        let signature = signature();
        let index = ArgumentType::Scalar(ElementType::Index);
        assert_eq!(signature.check_types(&[buffer(&[Some(4), Some(9)]), index.clone()]).unwrap(), vec![]);
        let left = signature.check_types(&[buffer(&[None, Some(9)]), index.clone()]).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!((left[0].argument, left[0].dimension, left[0].extent), (0, 0, 4));
        assert!(left[0].check(&BufferLayout { element: ElementType::F32, shape: vec![4, 2] }).is_ok());
        let error = left[0].check(&BufferLayout { element: ElementType::F32, shape: vec![5, 2] }).unwrap_err();
        assert_eq!(
            error.to_string(),
            "argument '#0 (%a)': kernel 'k' expects a buffer of type memref<4x?xf32>, got memref<5x2xf32>"
        );

        let error = signature.check_types(&[buffer(&[Some(3), None]), index.clone()]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "argument '#0 (%a)': kernel 'k' expects a buffer of type memref<4x?xf32>, got memref<3x?xf32>"
        );
        let error = signature.check_types(&[buffer(&[Some(4)]), index.clone()]).unwrap_err();
        assert!(error.to_string().contains("got memref<4xf32>"), "{error}");
        let error =
            signature.check_types(&[buffer(&[Some(4), None]), ArgumentType::Scalar(ElementType::I32)]).unwrap_err();
        assert_eq!(error.to_string(), "argument '#1 (%n)': kernel 'k' expects index, got i32");
        let error = signature.check_types(&[index.clone(), index.clone()]).unwrap_err();
        assert!(error.to_string().contains("expects a buffer, got a scalar"), "{error}");
        let error = signature.check_types(&[buffer(&[Some(4), None])]).unwrap_err();
        assert!(error.to_string().contains("takes 2 argument(s), but the dispatch passes 1"), "{error}");
    }

    #[test]
    fn run_time_arguments_are_checked_by_their_layouts() {
        let signature = signature();
        let fits = BufferLayout { element: ElementType::F32, shape: vec![4, 7] };
        let other = BufferLayout { element: ElementType::I32, shape: vec![4, 7] };
        assert!(signature.check([Argument::Buffer(&fits), Argument::Scalar(ElementType::Index)]).is_ok());
        let error = signature.check([Argument::Buffer(&other), Argument::Scalar(ElementType::Index)]).unwrap_err();
        assert!(error.to_string().contains("expects a buffer of type memref<4x?xf32>, got memref<4x7xi32>"), "{error}");
    }
}
