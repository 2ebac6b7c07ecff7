//! Typed views of ops: a `Copy` wrapper around an [`Op`] of one name, with an accessor per
//! operand, operand group and region, so that passes never decode operands by index.
//!
//! A dialect declares a view with [`op_view!`](crate::op_view); the view is only ever made from
//! an op of its name ([`OpView::wrap`]), and its accessors rely on the op having verified (a
//! view of unverified IR may panic on a missing operand, as indexing would). [`check_view`]
//! checks a view against the registered definition of its op (the name is registered, the region
//! counts agree): each dialect's tests run it on all its views.

use crate::{Context, Op};

/// A typed view of ops named [`NAME`](Self::NAME).
pub trait OpView: Copy {
    /// The full op name.
    const NAME: &'static str;
    /// How many leading operands have their own accessor.
    const FIXED_OPERANDS: usize;
    /// Whether the operands after the fixed ones form a variadic group.
    const VARIADIC_OPERANDS: bool;
    /// How many regions have their own accessor.
    const REGIONS: usize;

    /// Wraps `op` without checking its name.
    fn from_op_unchecked(op: Op) -> Self;

    /// The op.
    fn op(self) -> Op;

    /// `op` as this view, if it has this view's name.
    fn wrap(ctx: &Context, op: Op) -> Option<Self> {
        (ctx.name_str(op) == Self::NAME).then(|| Self::from_op_unchecked(op))
    }
}

/// Checks a view against the registered definition of its op: the name is registered and the
/// definition's fixed region count (if it declares one) equals the view's.
pub fn check_view<V: OpView>(ctx: &Context) -> Result<(), String> {
    let name = ctx.find_op_name(V::NAME).ok_or_else(|| format!("'{}' is not registered", V::NAME))?;
    let definition = ctx.definition(name).ok_or_else(|| format!("'{}' is not registered", V::NAME))?;
    match definition.region_count() {
        Some(count) if count != V::REGIONS => {
            Err(format!("the view of '{}' has {} region(s), the definition {count}", V::NAME, V::REGIONS))
        }
        _ => Ok(()),
    }
}

/// Declares a typed view (see the [module docs](crate::view)):
///
/// ```
/// hat_ir::op_view! {
///     /// `scf.for`: a counted loop.
///     pub struct ForView = "scf.for" {
///         operands: [lower_bound, upper_bound, step; ..init_args],
///         regions: [body],
///     }
/// }
/// ```
///
/// gives `ForView::wrap(ctx, op) -> Option<ForView>`, `view.lower_bound(ctx) -> Value`,
/// `view.init_args(ctx) -> &[Value]`, `view.body(ctx) -> Region` and `view.op()`.
#[macro_export]
macro_rules! op_view {
    (
        $(#[$meta:meta])*
        $vis:vis struct $view:ident = $name:literal {
            operands: [$($operand:ident),* $(; ..$rest:ident)?],
            regions: [$($region:ident),*] $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        $vis struct $view(pub $crate::Op);

        impl $crate::view::OpView for $view {
            const NAME: &'static str = $name;
            const FIXED_OPERANDS: usize = { let names: &[&str] = &[$(stringify!($operand)),*]; names.len() };
            const VARIADIC_OPERANDS: bool = { let names: &[&str] = &[$(stringify!($rest)),*]; !names.is_empty() };
            const REGIONS: usize = { let names: &[&str] = &[$(stringify!($region)),*]; names.len() };

            fn from_op_unchecked(op: $crate::Op) -> Self {
                $view(op)
            }

            fn op(self) -> $crate::Op {
                self.0
            }
        }

        #[allow(dead_code)]
        impl $view {
            /// The op's name.
            pub const NAME: &'static str = $name;

            /// `op` as this view, if it has this view's name.
            pub fn wrap(ctx: &$crate::Context, op: $crate::Op) -> Option<Self> {
                <Self as $crate::view::OpView>::wrap(ctx, op)
            }

            /// The op.
            pub fn op(self) -> $crate::Op {
                self.0
            }

            $crate::op_view!(@operands 0usize; $($operand),*);

            $(
                #[doc = concat!("The `", stringify!($rest), "` operands (after the fixed ones).")]
                pub fn $rest(self, ctx: &$crate::Context) -> &[$crate::Value] {
                    &ctx.operands(self.0)[<Self as $crate::view::OpView>::FIXED_OPERANDS..]
                }
            )?

            $crate::op_view!(@regions 0usize; $($region),*);
        }
    };
    (@operands $index:expr; ) => {};
    (@operands $index:expr; $first:ident $(, $more:ident)*) => {
        #[doc = concat!("The `", stringify!($first), "` operand.")]
        pub fn $first(self, ctx: &$crate::Context) -> $crate::Value {
            ctx.operand(self.0, $index)
        }
        $crate::op_view!(@operands $index + 1usize; $($more),*);
    };
    (@regions $index:expr; ) => {};
    (@regions $index:expr; $first:ident $(, $more:ident)*) => {
        #[doc = concat!("The `", stringify!($first), "` region.")]
        pub fn $first(self, ctx: &$crate::Context) -> $crate::Region {
            ctx.regions(self.0)[$index]
        }
        $crate::op_view!(@regions $index + 1usize; $($more),*);
    };
}
