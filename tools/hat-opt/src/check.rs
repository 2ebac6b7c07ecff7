//! `--run-check`: what a run lets anyone observe, and the first observation in which the plan's
//! run and the reference semantics' run differ.
//!
//! The observations are those of the design's definition of a correct plan, less the kernels'
//! reads (a wrong kernel read shows in what the kernel writes, and so in the observations
//! below, or it does not matter):
//! - every call of a host function, in order: its name, its scalar arguments, and the host copy
//!   of each buffer argument it is declared to read (`read` or `readwrite`; a `write` argument's
//!   old contents are not observed, so a plan need not make them valid);
//! - the host copy of every buffer argument of the entry when it returns;
//! - the entry's results.
//!
//! Values are compared bit for bit (a NaN equals the same NaN; `-0.0` differs from `0.0`): the
//! two runs do the same arithmetic, so any difference is a difference in the data they read.

use hat_ir::Location;
use hat_runtime::executor::host_functions::format_scalar;
use hat_runtime::{ArgEffect, ArgValue, ElementType, HostArg, HostBuffer, HostCall, HostFunction, Scalar};
use std::cell::RefCell;

/// One argument of a host call, as observed.
#[derive(Clone, Debug, PartialEq)]
pub enum ObservedArg {
    /// A scalar and its type.
    Scalar(Scalar, ElementType),
    /// The host copy of a buffer the function reads.
    Buffer(HostBuffer),
    /// A buffer the function only writes: its contents before the call are not observed.
    WriteOnly,
}

/// A call of a host function, as observed.
#[derive(Clone, Debug)]
pub struct HostCallRecord {
    /// The function's name (without `@`).
    pub name: String,
    /// Where it was called.
    pub location: Location,
    /// Its arguments.
    pub args: Vec<ObservedArg>,
}

/// The host calls of one run, recorded by the functions [`HostCallLog::recording`] wraps.
#[derive(Default)]
pub struct HostCallLog(RefCell<Vec<HostCallRecord>>);

impl HostCallLog {
    /// `function`, recording each call's observed arguments here before it runs.
    pub fn recording<'a>(&'a self, mut function: HostFunction<'a>) -> HostFunction<'a> {
        Box::new(move |call: &mut HostCall| {
            let args = (0..call.len())
                .map(|index| match (call.arg(index), call.effect(index)) {
                    (Some(HostArg::Buffer(_, _)), Some(ArgEffect::Write)) => ObservedArg::WriteOnly,
                    (Some(HostArg::Buffer(buffer, _)), _) => ObservedArg::Buffer(buffer.clone()),
                    (Some(HostArg::Scalar(value, ty)), _) => ObservedArg::Scalar(value, ty),
                    (None, _) => ObservedArg::WriteOnly,
                })
                .collect();
            self.0.borrow_mut().push(HostCallRecord { name: call.name().to_string(), location: call.location(), args });
            function(call)
        })
    }

    /// The calls recorded.
    pub fn into_calls(self) -> Vec<HostCallRecord> {
        self.0.into_inner()
    }
}

/// A buffer argument of the entry when it returned.
#[derive(Clone, Debug)]
pub struct ObservedBuffer {
    /// `%name`.
    pub name: String,
    /// Its IR type as text.
    pub type_text: String,
    /// Its host copy.
    pub buffer: HostBuffer,
}

/// Everything one run lets anyone observe.
#[derive(Clone, Debug, Default)]
pub struct Observations {
    /// The host calls, in order.
    pub host_calls: Vec<HostCallRecord>,
    /// The entry's buffer arguments when it returned, in parameter order.
    pub buffers: Vec<ObservedBuffer>,
    /// The entry's results.
    pub results: Vec<ObservedResult>,
}

/// A result of the entry.
#[derive(Clone, Debug)]
pub struct ObservedResult {
    /// Its IR type as text.
    pub type_text: String,
    /// Its element type, for a scalar the runtime knows.
    pub element: Option<ElementType>,
    /// Its value.
    pub value: ArgValue,
}

/// How much two runs agreed on (when they agreed on everything).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Agreement {
    /// Host calls compared.
    pub host_calls: usize,
    /// Buffers compared.
    pub buffers: usize,
    /// Results compared.
    pub results: usize,
}

/// The first observation in which two runs differ: where (a host call's location, or unknown)
/// and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The host call at fault, if the difference is in one.
    pub location: Location,
    /// The observation, the element and both values.
    pub message: String,
}

/// Compares the plan's observations with the reference semantics': host calls in order, then
/// buffers, then results.
pub fn compare(plan: &Observations, reference: &Observations) -> Result<Agreement, Difference> {
    for (index, (ours, theirs)) in plan.host_calls.iter().zip(&reference.host_calls).enumerate() {
        compare_calls(index, ours, theirs, &plan.host_calls)?;
    }
    let (planned, referenced) = (plan.host_calls.len(), reference.host_calls.len());
    if planned != referenced {
        let (extra, who) = if planned > referenced {
            (&plan.host_calls[referenced], "the plan's run only")
        } else {
            (&reference.host_calls[planned], "the reference semantics only")
        };
        return Err(Difference {
            location: extra.location,
            message: format!(
                "the plan's run makes {} host calls, the reference semantics {}: call #{} (of @{}) is made by {who}",
                planned,
                referenced,
                planned.min(referenced) + 1,
                extra.name
            ),
        });
    }
    for (ours, theirs) in plan.buffers.iter().zip(&reference.buffers) {
        if let Some(element) = first_difference(&ours.buffer, &theirs.buffer) {
            return Err(Difference {
                location: Location::UNKNOWN,
                message: format!("buffer {} ({}) when the entry returns, {element}", ours.name, ours.type_text),
            });
        }
    }
    for (index, (ours, theirs)) in plan.results.iter().zip(&reference.results).enumerate() {
        let type_text = &ours.type_text;
        let difference = match (&ours.value, &theirs.value) {
            (ArgValue::Scalar(a), ArgValue::Scalar(b)) => {
                let text = |value: Scalar| ours.element.map_or(format!("{value:?}"), |e| format_scalar(value, e));
                (!same_scalar(*a, *b)).then(|| format!("plan {}, reference {}", text(*a), text(*b)))
            }
            (ArgValue::Buffer(a), ArgValue::Buffer(b)) => first_difference(a, b),
            _ => Some("a scalar in one run, a buffer in the other".to_string()),
        };
        if let Some(difference) = difference {
            return Err(Difference {
                location: Location::UNKNOWN,
                message: format!("result #{index} ({type_text}) of the entry, {difference}"),
            });
        }
    }
    Ok(Agreement { host_calls: planned, buffers: plan.buffers.len(), results: plan.results.len() })
}

fn compare_calls(
    index: usize,
    ours: &HostCallRecord,
    theirs: &HostCallRecord,
    calls: &[HostCallRecord],
) -> Result<(), Difference> {
    let number = index + 1;
    if ours.name != theirs.name {
        return Err(Difference {
            location: ours.location,
            message: format!(
                "host call #{number}: the plan's run calls @{}, the reference semantics @{}",
                ours.name, theirs.name
            ),
        });
    }
    // "call 3 of @checkpoint": which of this function's calls it is.
    let nth = calls[..index].iter().filter(|c| c.name == ours.name).count() + 1;
    let call = format!("call {nth} of @{} (host call #{number})", ours.name);
    for (argument, (a, b)) in ours.args.iter().zip(&theirs.args).enumerate() {
        let difference = match (a, b) {
            (ObservedArg::Scalar(x, ty), ObservedArg::Scalar(y, _)) => (!same_scalar(*x, *y))
                .then(|| format!("plan {}, reference {}", format_scalar(*x, *ty), format_scalar(*y, *ty))),
            (ObservedArg::Buffer(x), ObservedArg::Buffer(y)) => first_difference(x, y),
            (ObservedArg::WriteOnly, ObservedArg::WriteOnly) => None,
            _ => Some("the arguments are of different kinds".to_string()),
        };
        if let Some(difference) = difference {
            return Err(Difference {
                location: ours.location,
                message: format!("argument #{argument} of {call}, {difference}"),
            });
        }
    }
    Ok(())
}

fn same_scalar(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::Int(x), Scalar::Int(y)) => x == y,
        (Scalar::Float(x), Scalar::Float(y)) => x.to_bits() == y.to_bits(),
        _ => false,
    }
}

/// The first element in which `plan` and `reference` differ, as `element [i, j]: plan X,
/// reference Y (N of M elements differ)`; `None` when they are equal.
fn first_difference(plan: &HostBuffer, reference: &HostBuffer) -> Option<String> {
    if plan.layout != reference.layout {
        return Some(format!("its shape: plan {:?}, reference {:?}", plan.layout.shape, reference.layout.shape));
    }
    let element = plan.layout.element;
    let size = element.size();
    let pairs = || plan.bytes.chunks_exact(size).zip(reference.bytes.chunks_exact(size));
    let first = pairs().position(|(a, b)| a != b)?;
    let differing = pairs().filter(|(a, b)| a != b).count();
    let (a, b) = pairs().nth(first).expect("the element exists");
    Some(format!(
        "element {}: plan {}, reference {} ({differing} of {} elements differ)",
        element_index(first, &plan.layout.shape),
        format_scalar(element.read(a), element),
        format_scalar(element.read(b), element),
        plan.layout.len()
    ))
}

/// The row-major index `[i, j, ...]` of flat element `flat` of a buffer of `shape`.
fn element_index(flat: usize, shape: &[usize]) -> String {
    let mut rest = flat;
    let mut index = vec![0; shape.len()];
    for (i, &extent) in index.iter_mut().zip(shape).rev() {
        *i = rest % extent.max(1);
        rest /= extent.max(1);
    }
    let parts: Vec<String> = index.iter().map(usize::to_string).collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hat_runtime::BufferLayout;

    fn buffer(shape: &[usize], values: &[i32]) -> HostBuffer {
        let layout = BufferLayout { element: ElementType::I32, shape: shape.to_vec() };
        HostBuffer { layout, bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
    }

    fn observed(name: &str, values: &[i32]) -> ObservedBuffer {
        ObservedBuffer { name: name.to_string(), type_text: "memref<2x3xi32>".into(), buffer: buffer(&[2, 3], values) }
    }

    fn result(type_text: &str, element: ElementType, value: Scalar) -> ObservedResult {
        ObservedResult { type_text: type_text.into(), element: Some(element), value: ArgValue::Scalar(value) }
    }

    fn call(name: &str, args: Vec<ObservedArg>) -> HostCallRecord {
        HostCallRecord { name: name.to_string(), location: Location::UNKNOWN, args }
    }

    #[test]
    fn equal_runs_agree_on_every_observation() {
        let observations = Observations {
            host_calls: vec![call("print", vec![ObservedArg::Scalar(Scalar::Int(3), ElementType::Index)])],
            buffers: vec![observed("%a", &[1, 2, 3, 4, 5, 6])],
            results: vec![result("f32", ElementType::F32, Scalar::Float(f64::NAN))],
        };
        assert_eq!(
            compare(&observations, &observations.clone()),
            Ok(Agreement { host_calls: 1, buffers: 1, results: 1 })
        );
    }

    #[test]
    fn the_first_differing_element_is_named_with_both_values() {
        let plan = Observations { buffers: vec![observed("%a", &[1, 2, 3, 4, 9, 9])], ..Default::default() };
        let reference = Observations { buffers: vec![observed("%a", &[1, 2, 3, 4, 5, 6])], ..Default::default() };
        assert_eq!(
            compare(&plan, &reference).unwrap_err().message,
            "buffer %a (memref<2x3xi32>) when the entry returns, element [1, 1]: plan 9, reference 5 (2 of 6 \
             elements differ)"
        );
    }

    #[test]
    fn host_calls_come_first_and_write_only_arguments_are_not_observed() {
        let scalar = |v| ObservedArg::Scalar(Scalar::Int(v), ElementType::I32);
        let reference = Observations {
            host_calls: vec![
                call("save", vec![ObservedArg::WriteOnly, scalar(0)]),
                call("show", vec![ObservedArg::Buffer(buffer(&[2], &[1, 2]))]),
                call("show", vec![ObservedArg::Buffer(buffer(&[2], &[3, 4]))]),
            ],
            buffers: vec![observed("%a", &[0; 6])],
            ..Default::default()
        };
        let mut plan = reference.clone();
        plan.buffers[0].buffer.bytes[0] = 1;
        plan.host_calls[2].args[0] = ObservedArg::Buffer(buffer(&[2], &[3, 7]));
        assert_eq!(
            compare(&plan, &reference).unwrap_err().message,
            "argument #0 of call 2 of @show (host call #3), element [1]: plan 7, reference 4 (1 of 2 elements differ)"
        );
        plan.host_calls.pop();
        assert_eq!(
            compare(&plan, &reference).unwrap_err().message,
            "the plan's run makes 2 host calls, the reference semantics 3: call #3 (of @show) is made by the \
             reference semantics only"
        );
        plan.host_calls[0].args[1] = scalar(5);
        assert_eq!(
            compare(&plan, &reference).unwrap_err().message,
            "argument #1 of call 1 of @save (host call #1), plan 5, reference 0"
        );
    }

    #[test]
    fn results_are_compared_after_buffers() {
        let reference =
            Observations { results: vec![result("i32", ElementType::I32, Scalar::Int(7))], ..Default::default() };
        let plan =
            Observations { results: vec![result("i32", ElementType::I32, Scalar::Int(-1))], ..Default::default() };
        assert_eq!(
            compare(&plan, &reference).unwrap_err().message,
            "result #0 (i32) of the entry, plan -1, reference 7"
        );
    }

    #[test]
    fn element_indices_are_row_major() {
        assert_eq!(element_index(0, &[4]), "[0]");
        assert_eq!(element_index(5, &[2, 3]), "[1, 2]");
        assert_eq!(element_index(0, &[]), "[]");
    }
}
