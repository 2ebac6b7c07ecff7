//! The host functions a `--run` provides: the standard `print` and `display`, and those the
//! command line binds with `--host-func NAME=print|ignore|bump`.
//!
//! - A binding names a host function the module declares (a callable without a body that does
//!   not run on the device: `compute.host_func`, or a vendor's declaration), once, and binds it
//!   to `print` (its arguments written as the standard `print` writes them), `ignore` (nothing
//!   happens) or `bump` (adds 1 to element 0 of every buffer argument the declaration lets it
//!   write — `write`, `readwrite` or undeclared — and prints nothing: a host function that
//!   changes data, so that `--run-check` catches a plan that leaves its input stale on the host
//!   or its output stale on the device). None returns a value, so a function declared with
//!   results cannot be bound: that is an error before anything runs, as is a name the module
//!   does not declare.
//! - A binding replaces a standard function of the same name (`--host-func display=ignore`
//!   silences a display).
//! - A declared host function that nothing provides is an error only when a run calls it (the
//!   executor's [`RuntimeError::UnknownHostFunction`](hat_runtime::RuntimeError::UnknownHostFunction)),
//!   and the message names the flag.

use crate::check::HostCallLog;
use hat_ir::interfaces::{execution_space, CallableOpInterface, ExecutionSpace};
use hat_ir::printer::type_to_string;
use hat_ir::{Context, Op};
use hat_runtime::executor::host_functions;
use hat_runtime::{ElementType, HostCall, HostFunction, Scalar};
use std::cell::RefCell;
use std::io::Write;

/// What a bound host function does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Binding {
    /// Writes its arguments on one line, as the standard `print`.
    Print,
    /// Nothing.
    Ignore,
    /// Adds 1 to element 0 of every buffer argument it may write (see [`bump`]); prints nothing.
    Bump,
}

/// The host functions a run provides, by name: the standard ones, then the bindings (which
/// replace a standard one of the same name).
#[derive(Clone, Debug, Default)]
pub struct HostBindings {
    bindings: Vec<(String, Binding)>,
}

/// The host functions `module` declares: name and declaration, in module order.
pub fn declared_host_functions(ctx: &Context, module: Op) -> Vec<(String, Op)> {
    ctx.body_ops(module)
        .into_iter()
        .filter(|&op| execution_space(ctx, op) != Some(ExecutionSpace::Device))
        .filter(|&op| ctx.interface::<dyn CallableOpInterface>(op).is_some_and(|c| c.body(ctx, op).is_none()))
        .filter_map(|op| Some((hat_ir::verifier::symbol_name(ctx, op)?.to_string(), op)))
        .collect()
}

impl HostBindings {
    /// The `--host-func` assignments, checked against the host functions `module` declares.
    pub fn parse(ctx: &Context, module: Op, assignments: &[String]) -> Result<HostBindings, String> {
        let declared = declared_host_functions(ctx, module);
        let mut bindings: Vec<(String, Binding)> = Vec::new();
        for assignment in assignments {
            let usage = || format!("error: --host-func {assignment}: expected NAME=print, NAME=ignore or NAME=bump");
            let (name, action) = assignment.split_once('=').ok_or_else(usage)?;
            let name = name.trim_start_matches('@');
            let binding = match action {
                "print" => Binding::Print,
                "ignore" => Binding::Ignore,
                "bump" => Binding::Bump,
                _ => return Err(usage()),
            };
            if name.is_empty() {
                return Err(usage());
            }
            let Some(&(_, declaration)) = declared.iter().find(|(n, _)| n == name) else {
                let names: Vec<String> = declared.iter().map(|(n, _)| format!("@{n}")).collect();
                let known = if names.is_empty() { "none".to_string() } else { names.join(", ") };
                return Err(format!(
                    "error: --host-func {assignment}: the module declares no host function '@{name}' (it declares: \
                     {known})"
                ));
            };
            let results = ctx
                .interface::<dyn CallableOpInterface>(declaration)
                .and_then(|c| c.signature(ctx, declaration))
                .map(|(_, results)| results)
                .unwrap_or_default();
            if !results.is_empty() {
                let types: Vec<String> = results.iter().map(|&t| type_to_string(ctx, t)).collect();
                return Err(format!(
                    "error: --host-func {assignment}: '@{name}' returns {}; print, ignore and bump bind \
                     only host functions that return nothing",
                    types.join(", ")
                ));
            }
            if bindings.iter().any(|(n, _)| n == name) {
                return Err(format!("error: --host-func {assignment}: '@{name}' is bound twice"));
            }
            bindings.push((name.to_string(), binding));
        }
        Ok(HostBindings { bindings })
    }

    /// The functions to register: each writes to `output`, and, with a `log`, records each
    /// call's observed arguments there before it runs.
    pub fn functions<'a, 'w: 'a>(
        &self,
        output: &'a RefCell<&'w mut dyn Write>,
        log: Option<&'a HostCallLog>,
    ) -> Vec<(String, HostFunction<'a>)> {
        let mut functions: Vec<(String, HostFunction<'a>)> = vec![
            ("print".to_string(), host_functions::print(SharedOutput(output))),
            ("display".to_string(), host_functions::display(SharedOutput(output))),
        ];
        for (name, binding) in &self.bindings {
            let function: HostFunction<'a> = match binding {
                Binding::Print => host_functions::print(SharedOutput(output)),
                Binding::Ignore => Box::new(|_| Ok(Vec::new())),
                Binding::Bump => Box::new(|call: &mut HostCall| {
                    bump(call);
                    Ok(Vec::new())
                }),
            };
            functions.retain(|(n, _)| n != name);
            functions.push((name.clone(), function));
        }
        match log {
            Some(log) => functions.into_iter().map(|(name, function)| (name, log.recording(function))).collect(),
            None => functions,
        }
    }
}

/// What `bump` does: adds 1 to element 0 of every buffer argument whose declared effect lets
/// the call write it (`write`, `readwrite`, or undeclared, which is `readwrite`); `read`
/// arguments, scalars and empty buffers are left alone. Integers wrap at their width (an `i1`
/// flips); floats add 1.0. A buffer passed twice as writable is bumped twice.
fn bump(call: &mut HostCall) {
    for index in 0..call.len() {
        let Ok(buffer) = call.buffer_mut(index) else { continue };
        let origin = vec![0; buffer.layout.shape.len()];
        let Some(value) = buffer.get(&origin) else { continue };
        let element = buffer.layout.element;
        let bumped = if element.is_float() {
            Scalar::Float(value.as_f64() + 1.0)
        } else if element == ElementType::I1 {
            Scalar::Int((value.as_i64() + 1) & 1)
        } else {
            Scalar::Int(value.as_i64().wrapping_add(1))
        };
        buffer.set(&origin, bumped);
    }
}

/// One writer shared by every host function of a run (and, after it, the summary).
struct SharedOutput<'a, 'w>(&'a RefCell<&'w mut dyn Write>);

impl Write for SharedOutput<'_, '_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.borrow_mut().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "
        compute.host_func @checkpoint(read memref<4xi32>, index)
        compute.host_func @measure(read memref<4xi32>) -> f32
        compute.host_func @display(read memref<4xi32>)
        compute.func @main() {
          compute.return
        }
    ";

    fn parse(assignments: &[&str]) -> Result<Vec<(String, Binding)>, String> {
        let mut ctx = hat_dialects::context();
        let module = hat_ir::parse_source(&mut ctx, "m.hat", MODULE).unwrap();
        let assignments: Vec<String> = assignments.iter().map(|a| a.to_string()).collect();
        HostBindings::parse(&ctx, module, &assignments).map(|b| b.bindings)
    }

    #[test]
    fn declared_functions_bind_to_print_ignore_or_bump() {
        assert_eq!(
            parse(&["checkpoint=print", "@display=ignore"]).unwrap(),
            [("checkpoint".to_string(), Binding::Print), ("display".to_string(), Binding::Ignore)]
        );
        assert_eq!(parse(&["checkpoint=bump"]).unwrap(), [("checkpoint".to_string(), Binding::Bump)]);
    }

    #[test]
    fn bad_bindings_are_errors_before_the_run() {
        let error = |assignments: &[&str]| parse(assignments).unwrap_err();
        assert_eq!(
            error(&["checkpoint"]),
            "error: --host-func checkpoint: expected NAME=print, NAME=ignore or NAME=bump"
        );
        assert_eq!(
            error(&["checkpoint=log"]),
            "error: --host-func checkpoint=log: expected NAME=print, NAME=ignore or NAME=bump"
        );
        assert_eq!(
            error(&["save=print"]),
            "error: --host-func save=print: the module declares no host function '@save' (it declares: @checkpoint, \
             @measure, @display)"
        );
        assert_eq!(
            error(&["measure=ignore"]),
            "error: --host-func measure=ignore: '@measure' returns f32; print, ignore and bump bind only host \
             functions that return nothing"
        );
        assert_eq!(
            error(&["checkpoint=print", "checkpoint=ignore"]),
            "error: --host-func checkpoint=ignore: '@checkpoint' is bound twice"
        );
        // A compute function is not a host function.
        assert!(error(&["main=ignore"]).contains("declares no host function '@main'"));
    }
}
