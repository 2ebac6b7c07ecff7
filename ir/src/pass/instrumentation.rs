//! Pass instrumentation: hooks around every pass run, and the standard ones — IR printing
//! (`--mlir-print-ir-*`) and timing (`--mlir-timing`).

use crate::printer::{print_op, PrintOptions};
use crate::{Context, Op};
use std::io::Write;
use std::time::{Duration, Instant};

/// Hooks around pass runs.
pub trait PassInstrumentation {
    /// Before `pass` runs on `op`.
    fn before_pass(&mut self, pass: &str, ctx: &Context, op: Op) {
        let _ = (pass, ctx, op);
    }

    /// After `pass` ran on `op` successfully (and the IR verified).
    fn after_pass(&mut self, pass: &str, ctx: &Context, op: Op) {
        let _ = (pass, ctx, op);
    }

    /// After `pass` failed on `op` (or left it invalid).
    fn after_pass_failed(&mut self, pass: &str, ctx: &Context, op: Op) {
        let _ = (pass, ctx, op);
    }

    /// When the whole run is over.
    fn finish(&mut self) {}
}

/// Which passes an IR-printing option applies to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PassFilter {
    /// None.
    #[default]
    None,
    /// Every pass.
    All,
    /// The passes with these names.
    Named(Vec<String>),
}

impl PassFilter {
    fn matches(&self, pass: &str) -> bool {
        match self {
            PassFilter::None => false,
            PassFilter::All => true,
            PassFilter::Named(names) => names.iter().any(|n| n == pass),
        }
    }
}

/// Prints the IR around passes, as `mlir-opt --mlir-print-ir-before/after...` does:
/// `// -----// IR Dump After cse //----- //` followed by the op the pass ran on.
pub struct IrPrinting {
    /// Print before these passes.
    pub before: PassFilter,
    /// Print after these passes.
    pub after: PassFilter,
    /// With `after`: only when the pass changed the IR.
    pub only_after_change: bool,
    /// Print after a pass that failed.
    pub after_failure: bool,
    /// How to print the IR.
    pub print_options: PrintOptions,
    /// Where to.
    pub sink: Box<dyn Write>,
    before_text: Option<String>,
}

impl IrPrinting {
    /// Printing with the given filters into `sink`.
    pub fn new(before: PassFilter, after: PassFilter, sink: Box<dyn Write>) -> Self {
        IrPrinting {
            before,
            after,
            only_after_change: false,
            after_failure: false,
            print_options: PrintOptions::default(),
            sink,
            before_text: None,
        }
    }

    fn dump(&mut self, when: &str, pass: &str, text: &str) {
        let _ = write!(self.sink, "// -----// IR Dump {when} {pass} //----- //\n{text}\n");
    }
}

impl PassInstrumentation for IrPrinting {
    fn before_pass(&mut self, pass: &str, ctx: &Context, op: Op) {
        let needs_text = self.before.matches(pass) || (self.only_after_change && self.after.matches(pass));
        if !needs_text {
            return;
        }
        let text = print_op(ctx, op, self.print_options);
        if self.before.matches(pass) {
            self.dump("Before", pass, &text);
        }
        self.before_text = Some(text);
    }

    fn after_pass(&mut self, pass: &str, ctx: &Context, op: Op) {
        if !self.after.matches(pass) {
            return;
        }
        let text = print_op(ctx, op, self.print_options);
        let unchanged = self.before_text.take().is_some_and(|before| before == text);
        if self.only_after_change && unchanged {
            return;
        }
        self.dump("After", pass, &text);
    }

    fn after_pass_failed(&mut self, pass: &str, ctx: &Context, op: Op) {
        if self.after_failure {
            let options = PrintOptions { generic: true, ..self.print_options };
            let text = print_op(ctx, op, options);
            self.dump("After Failed", pass, &text);
        }
    }

    fn finish(&mut self) {
        let _ = self.sink.flush();
    }
}

/// Wall time of every pass run, for `--mlir-timing`: a list (per pass, summed) or a tree (in
/// pipeline order, nested by the op each pass ran on).
#[derive(Default)]
pub struct Timing {
    started: Vec<Instant>,
    /// `(depth, pass, duration)` of each run, in order.
    runs: Vec<(usize, String, Duration)>,
}

impl Timing {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every run in order: nesting depth (0 for passes on the root op), pass, wall time.
    pub fn runs(&self) -> &[(usize, String, Duration)] {
        &self.runs
    }

    /// Each pass's total time, in order of first run.
    pub fn totals(&self) -> Vec<(String, Duration, usize)> {
        let mut totals: Vec<(String, Duration, usize)> = Vec::new();
        for (_, name, duration) in &self.runs {
            match totals.iter_mut().find(|(n, _, _)| n == name) {
                Some((_, total, count)) => {
                    *total += *duration;
                    *count += 1;
                }
                None => totals.push((name.clone(), *duration, 1)),
            }
        }
        totals
    }
}

impl PassInstrumentation for Timing {
    fn before_pass(&mut self, _: &str, _: &Context, _: Op) {
        self.started.push(Instant::now());
    }

    fn after_pass(&mut self, pass: &str, _: &Context, _: Op) {
        if let Some(start) = self.started.pop() {
            self.runs.push((self.started.len(), pass.to_string(), start.elapsed()));
        }
    }

    fn after_pass_failed(&mut self, pass: &str, ctx: &Context, op: Op) {
        self.after_pass(pass, ctx, op);
    }
}

/// A shared instrumentation: the pass manager owns one handle and the caller keeps another to
/// read the results (timing totals, say) after the run.
impl<T: PassInstrumentation> PassInstrumentation for std::rc::Rc<std::cell::RefCell<T>> {
    fn before_pass(&mut self, pass: &str, ctx: &Context, op: Op) {
        self.borrow_mut().before_pass(pass, ctx, op)
    }

    fn after_pass(&mut self, pass: &str, ctx: &Context, op: Op) {
        self.borrow_mut().after_pass(pass, ctx, op)
    }

    fn after_pass_failed(&mut self, pass: &str, ctx: &Context, op: Op) {
        self.borrow_mut().after_pass_failed(pass, ctx, op)
    }

    fn finish(&mut self) {
        self.borrow_mut().finish()
    }
}
