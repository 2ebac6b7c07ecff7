//! A dispatch's arguments are validated once, by the host executor, before a backend sees them:
//! their number, and for each parameter of the kernel a buffer whose element type and extents
//! fit the parameter's memref type, or a scalar of its type. Backends trust what they are given
//! (as wgpu-core validates and wgpu-hal trusts): the CPU backend and the Vulkan backend only
//! decode arguments, and report one that does not decode as an internal error. A program that
//! drives a backend without the executor checks its arguments with
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

/// An argument as the check sees it.
#[derive(Copy, Clone, Debug)]
pub enum Argument<'a> {
    /// A buffer of this layout.
    Buffer(&'a BufferLayout),
    /// A scalar of this type.
    Scalar(ElementType),
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
    /// The signature of `kernel` (a callable with a body): its entry block's arguments, each a
    /// memref or a scalar of a type the runtime holds.
    pub fn of(ctx: &Context, kernel: Op) -> Result<KernelSignature, String> {
        let name = hat_ir::verifier::symbol_name(ctx, kernel).unwrap_or("<unnamed>").to_string();
        let body = ctx.interface::<dyn CallableOpInterface>(kernel).and_then(|c| c.body(ctx, kernel));
        let Some(&block) = body.and_then(|body| ctx.region_blocks(body).first()) else {
            return Err(format!("kernel '{name}' has no body"));
        };
        let mut params = Vec::new();
        for (position, &argument) in ctx.block_arguments(block).iter().enumerate() {
            let parameter = match ctx.argument_name(argument) {
                Some(argument) => format!("#{position} (%{argument})"),
                None => format!("#{position}"),
            };
            let ty = ctx.value_type(argument);
            let unsupported = || {
                let ty = hat_ir::printer::type_to_string(ctx, ty);
                format!("values of type '{ty}' are not supported at run time (in kernel '{name}')")
            };
            params.push(match ctx.type_kind(ty) {
                TypeKind::MemRef { shape, element } => KernelParameter::Buffer {
                    name: parameter,
                    element: ElementType::of(ctx, *element).ok_or_else(|| {
                        let ty = hat_ir::printer::type_to_string(ctx, ty);
                        format!("buffers of type '{ty}' are not supported (in kernel '{name}')")
                    })?,
                    shape: shape.iter().map(|&extent| u64::try_from(extent).ok()).collect(),
                },
                _ => KernelParameter::Scalar { name: parameter, ty: ElementType::of(ctx, ty).ok_or_else(unsupported)? },
            });
        }
        Ok(KernelSignature { name, params })
    }

    /// Whether `arguments` fit the parameters; `Err` is a [`RuntimeError::BadArgument`] naming
    /// the parameter.
    pub fn check<'a>(&self, arguments: impl ExactSizeIterator<Item = Argument<'a>>) -> Result<(), RuntimeError> {
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
        for (parameter, argument) in self.params.iter().zip(arguments) {
            match (parameter, argument) {
                (KernelParameter::Buffer { element, shape, .. }, Argument::Buffer(layout)) => {
                    let fits = layout.element == *element
                        && layout.shape.len() == shape.len()
                        && shape.iter().zip(&layout.shape).all(|(s, &m)| s.is_none_or(|s| s == m as u64));
                    if !fits {
                        let expected = describe_memref(*element, shape.iter().copied());
                        let actual = describe_memref(layout.element, layout.shape.iter().map(|&s| Some(s as u64)));
                        return Err(bad(parameter, format!("expects a buffer of type {expected}, got {actual}")));
                    }
                }
                (KernelParameter::Scalar { ty, .. }, Argument::Scalar(given)) => {
                    if *ty != given {
                        return Err(bad(parameter, format!("expects {}, got {}", type_name(*ty), type_name(given))));
                    }
                }
                (KernelParameter::Buffer { .. }, Argument::Scalar(_)) => {
                    return Err(bad(parameter, "expects a buffer, got a scalar".into()))
                }
                (KernelParameter::Scalar { .. }, Argument::Buffer(_)) => {
                    return Err(bad(parameter, "expects a scalar, got a buffer".into()))
                }
            }
        }
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
