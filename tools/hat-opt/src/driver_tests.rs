//! hat-opt's command line run in process against a test tool (hat-opt's registry), whose `default` pipeline is an
//! alias of `canonicalize`: how `--run` picks its pipeline and mode, `--run-check`,
//! `--host-func`, the text report, and named pipelines as flags, `-p` and `--list-passes`.
//!
//! `canonicalize` places no transfers, so a program without transfers run in explicit mode
//! after the test `default` leaves the kernels' work on the device: exactly what `--run-check`
//! must catch. A program whose transfers are written by hand runs right.

use crate::{Failure, Tool};
use std::path::PathBuf;

/// `canonicalize`, `cse`, ..., the test passes, and `default` standing for `canonicalize`.
fn test_tool() -> Tool {
    let mut tool = Tool::hat();
    tool.passes_mut().register_pipeline("default", "Test alias of canonicalize", "builtin.module(canonicalize)");
    tool
}

/// What a command line did: `Ok(stdout)` or `Err((stdout, stderr text))`.
type Outcome = Result<String, (String, String)>;

/// Runs hat-opt on `program` (written to a file of its own) with `arguments`.
fn hat_opt(tool: &Tool, program: &str, arguments: &[&str]) -> Outcome {
    let path = input_file(program);
    let mut line: Vec<std::ffi::OsString> = vec!["hat-opt".into(), path.clone().into()];
    line.extend(arguments.iter().map(|a| a.into()));
    // These tests are of the command line, on the CPU backend whatever devices exist.
    line.push("--backend=cpu".into());
    let mut stdout = Vec::new();
    let result = match crate::run(tool, line, &mut stdout) {
        Err(Failure::CommandLine(error)) => return Err((String::new(), error.to_string())),
        Err(Failure::Message(message)) => Err(message),
        Ok(()) => Ok(()),
    };
    let _ = std::fs::remove_file(path);
    let stdout = String::from_utf8(stdout).expect("UTF-8 output");
    match result {
        Ok(()) => Ok(stdout),
        Err(stderr) => Err((stdout, stderr)),
    }
}

/// A fresh file holding `program`.
fn input_file(program: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("hat-opt-driver-{}-{}.hat", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, program).expect("write the input");
    path
}

fn succeed(tool: &Tool, program: &str, arguments: &[&str]) -> String {
    match hat_opt(tool, program, arguments) {
        Ok(stdout) => stdout,
        Err((stdout, stderr)) => panic!("hat-opt {arguments:?} failed:\n{stderr}\nstdout:\n{stdout}"),
    }
}

fn fail(tool: &Tool, program: &str, arguments: &[&str]) -> (String, String) {
    match hat_opt(tool, program, arguments) {
        Ok(stdout) => panic!("hat-opt {arguments:?} succeeded:\n{stdout}"),
        Err(outcome) => outcome,
    }
}

/// The report without its time, the one line that changes from run to run.
fn timeless(report: &str) -> String {
    report.lines().filter(|l| !l.starts_with("time:")).map(|l| format!("{l}\n")).collect()
}

const SQUARES: &str = "kernel.func @square(%data: memref<12xi32>) workgroup(4) {
  %i = kernel.global_id x
  %v = buffer.load %data[%i] : memref<12xi32>
  %r = arith.muli %v, %v : i32
  buffer.store %r, %data[%i] : memref<12xi32>
  kernel.return
}

compute.func @main(%data: memref<12xi32>, %scale: i32) -> i32 {
  %c12 = arith.constant 12 : index
  %c3 = arith.constant 3 : index
  TRANSFER_IN
  compute.dispatch @square[%c12](%data) : (memref<12xi32>)
  TRANSFER_OUT
  %v = buffer.load %data[%c3] : memref<12xi32>
  %r = arith.muli %v, %scale : i32
  compute.return %r : i32
}
";

/// [`SQUARES`] without transfers: right only by the reference semantics.
fn squares() -> String {
    SQUARES.replace("  TRANSFER_IN\n", "").replace("  TRANSFER_OUT\n", "")
}

/// [`SQUARES`] with its transfers written by hand.
fn squares_with_transfers() -> String {
    SQUARES
        .replace("TRANSFER_IN", "buffer.to_device %data : memref<12xi32>")
        .replace("TRANSFER_OUT", "buffer.from_device %data : memref<12xi32>")
}

const ARGS: [&str; 2] = ["--arg", "data=iota"];

#[test]
fn run_with_no_pass_runs_the_default_pipeline_then_explicit_mode() {
    let tool = test_tool();
    let report = succeed(&tool, &squares_with_transfers(), &[&ARGS[..], &["--arg", "scale=2", "--run"]].concat());
    assert_eq!(
        timeless(&report),
        "ran @main (explicit transfers, cpu backend)
compiled:   static strategy (pipeline 'default')
results:    18 : i32
buffers:    %data: memref<12xi32> = [0, 1, 4, 9, 16, 25, 36, 49, ...]
transfers:  to device 1 copy (48 B), from device 1 copy (48 B)
              %data: to device 1 copy (48 B), from device 1 copy (48 B)
dispatches: 1 (@square 1)
"
    );
    assert!(report.lines().last().unwrap().starts_with("time:       "), "{report}");
    // Explicit mode: a program without transfers leaves the kernel's work on the device.
    let report = succeed(&tool, &squares(), &[&ARGS[..], &["--arg", "scale=2", "--run"]].concat());
    assert!(report.contains("results:    6 : i32\n"), "{report}");
    assert!(report.contains("%data: memref<12xi32> = [0, 1, 2, 3, 4, 5, 6, 7, ...]\n"), "{report}");
    assert!(report.contains("transfers:  none\n              %data: none\n"), "{report}");
}

#[test]
fn run_mode_reference_adds_no_pipeline_and_is_right_without_transfers() {
    let tool = test_tool();
    let report =
        succeed(&tool, &squares(), &[&ARGS[..], &["--arg", "scale=2", "--run", "--run-mode=reference"]].concat());
    assert!(report.starts_with("ran @main (reference transfers, cpu backend)\nresults:    18 : i32\n"), "{report}");
    // The oracle ignores the program's own transfers.
    let report = succeed(
        &tool,
        &squares_with_transfers(),
        &[&ARGS[..], &["--arg", "scale=1", "--run", "--run-mode", "reference"]].concat(),
    );
    assert!(report.contains("from device 1 copy (48 B)\n"), "{report}");
}

#[test]
fn run_check_names_the_first_observation_that_differs() {
    let tool = test_tool();
    let arguments = [&ARGS[..], &["--arg", "scale=2", "--run-check"]].concat();
    let report = succeed(&tool, &squares_with_transfers(), &arguments);
    assert!(
        report
            .contains("check:      the same as the reference semantics (0 host calls, 1 buffer, 1 result compared)\n"),
        "{report}"
    );
    let (report, error) = fail(&tool, &squares(), &arguments);
    assert!(report.contains("check:      DIFFERS from the reference semantics (see the error)\n"), "{report}");
    assert_eq!(
        error,
        "error: --run-check: the plan differs from the reference semantics: buffer %data (memref<12xi32>) when the \
         entry returns, element [2]: plan 2, reference 4 (10 of 12 elements differ)"
    );
    let (_, error) = fail(&tool, &squares(), &["--arg", "data=fill:3", "--arg", "scale=1", "--run-check"]);
    assert!(error.contains("buffer %data (memref<12xi32>) when the entry returns, element [0]: plan 3, reference 9"));
}

const CHECKPOINT: &str = "compute.host_func @checkpoint(read memref<4xi32>, index)
compute.host_func @fill(write memref<4xi32>)

kernel.func @bump(%state: memref<4xi32>) workgroup(4) {
  %i = kernel.global_id x
  %v = buffer.load %state[%i] : memref<4xi32>
  %one = arith.constant 1 : i32
  %r = arith.addi %v, %one : i32
  buffer.store %r, %state[%i] : memref<4xi32>
  kernel.return
}

compute.func @main(%state: memref<4xi32>, %count: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %it = %c0 to %count step %c1 {
    TRANSFER_IN
    compute.dispatch @bump[%c4](%state) : (memref<4xi32>)
    TRANSFER_OUT
    compute.call @checkpoint(%state, %it) : (memref<4xi32>, index) -> ()
  }
  compute.return
}

compute.func @overwrite(%state: memref<4xi32>) {
  compute.call @fill(%state) : (memref<4xi32>) -> ()
  compute.return
}
";

#[test]
fn host_func_binds_a_declared_function_to_print_or_ignore() {
    let tool = test_tool();
    let program = CHECKPOINT
        .replace("TRANSFER_IN", "buffer.to_device %state : memref<4xi32>")
        .replace("TRANSFER_OUT", "buffer.from_device %state : memref<4xi32>");
    let arguments = ["--arg", "state=iota", "--arg", "count=2", "--run-check"];
    let report = succeed(&tool, &program, &[&arguments[..], &["--host-func", "checkpoint=print"]].concat());
    assert!(report.starts_with("[1, 2, 3, 4] 0\n[2, 3, 4, 5] 1\nran @main"), "{report}");
    assert!(report.contains("host calls: 2\ncheck:      the same as the reference semantics (2 host calls, 1 buffer, 0 results compared)\n"), "{report}");
    let report = succeed(&tool, &program, &[&arguments[..], &["--host-func=@checkpoint=ignore"]].concat());
    assert!(report.starts_with("ran @main"), "{report}");
    // Unbound, it is an error when a run reaches it, naming the flag.
    let (_, error) = fail(&tool, &program, &arguments);
    assert!(error.contains("error: host function '@checkpoint' is not registered"), "{error}");
    assert!(error.contains("bind '@checkpoint' with --host-func checkpoint=print (writes its arguments) or --host-func checkpoint=ignore"), "{error}");
    // ... and only then: with no iteration, nothing calls it.
    succeed(&tool, &program, &["--arg", "state=iota", "--arg", "count=0", "--run-check"]);
}

#[test]
fn host_func_bump_writes_element_zero_of_what_the_declaration_lets_it_write() {
    let tool = test_tool();
    let program = "compute.host_func @touch(read memref<4xi32>, write memref<4xi32>, memref<2xf32>, index)
compute.host_func @observe(read memref<4xi32>)

compute.func @main(%seen: memref<4xi32>, %out: memref<4xi32>, %both: memref<2xf32>) {
  %c3 = arith.constant 3 : index
  compute.call @touch(%seen, %out, %both, %c3) : (memref<4xi32>, memref<4xi32>, memref<2xf32>, index) -> ()
  compute.call @observe(%out) : (memref<4xi32>) -> ()
  compute.return
}
";
    let arguments = ["--arg", "seen=iota", "--arg", "out=iota", "--arg", "both=fill:2.5", "--run-check"];
    let report = succeed(
        &tool,
        program,
        &[&arguments[..], &["--host-func", "touch=bump", "--host-func", "observe=print"]].concat(),
    );
    // The `write` and the undeclared (`readwrite`) arguments are bumped; the `read` one is not,
    // and bump prints nothing (only @observe's line precedes the summary).
    assert!(report.starts_with("[1, 1, 2, 3]\nran @main"), "{report}");
    assert!(report.contains("%seen: memref<4xi32> = [0, 1, 2, 3]"), "{report}");
    assert!(report.contains("%out:  memref<4xi32> = [1, 1, 2, 3]"), "{report}");
    assert!(report.contains("%both: memref<2xf32> = [3.5, 2.5]"), "{report}");
    // Bound to a function that returns a value, it is an error before the run.
    let (_, error) = fail(
        &tool,
        "compute.host_func @measure(memref<4xi32>) -> i32\ncompute.func @main() {\n  compute.return\n}\n",
        &["--run", "--host-func", "measure=bump"],
    );
    assert!(error.contains("print, ignore and bump bind only host functions that return nothing"), "{error}");
}

#[test]
fn run_check_compares_what_host_functions_read() {
    let tool = test_tool();
    // The copy in is there, the copy back is not: @checkpoint reads a stale host copy.
    let program =
        CHECKPOINT.replace("TRANSFER_IN", "buffer.to_device %state : memref<4xi32>").replace("    TRANSFER_OUT\n", "");
    let (stdout, error) = fail(
        &tool,
        &program,
        &["--arg", "state=iota", "--arg", "count=3", "--run-check", "--host-func", "checkpoint=print"],
    );
    assert!(stdout.starts_with("[0, 1, 2, 3] 0\n[0, 1, 2, 3] 1\n[0, 1, 2, 3] 2\nran @main"), "{stdout}");
    assert!(
        error.starts_with(
            "error: --run-check: the plan differs from the reference semantics: argument #0 of call 1 of @checkpoint \
             (host call #1), element [0]: plan 0, reference 1 (4 of 4 elements differ)\n"
        ),
        "{error}"
    );
    assert!(error.contains("compute.call @checkpoint(%state, %it)"), "the call's line is shown: {error}");
    // A `write` argument's old contents are not observed: @fill's call cannot differ.
    let report = succeed(
        &tool,
        &program,
        &["--entry", "overwrite", "--arg", "state=iota", "--run-check", "--host-func", "fill=ignore"],
    );
    assert!(
        report.contains("check:      the same as the reference semantics (1 host call, 1 buffer, 0 results compared)"),
        "{report}"
    );
}

#[test]
fn strategies_and_modes_that_cannot_go_together_are_errors() {
    let tool = test_tool();
    let error = |arguments: &[&str]| fail(&tool, &squares(), &[&ARGS[..], &["--arg", "scale=1"], arguments].concat()).1;
    assert_eq!(
        error(&["--run", "--strategy=kernel", "--canonicalize"]),
        "error: --strategy=kernel picks the pipeline of a --run that is given no passes; with passes given, they are \
         the pipeline (add insert-transfers{strategy=kernel} to them)"
    );
    assert_eq!(
        error(&["--run", "--strategy=jic", "--run-mode=reference"]),
        "error: --strategy=jic needs a transfer plan, but --run-mode=reference runs the reference semantics, which \
         ignores transfers"
    );
    assert_eq!(
        error(&["--run-check", "--run-mode=reference"]),
        "error: --run-check compares a transfer plan with the reference semantics; --run-mode=reference has no plan"
    );
    // The strategy's pipeline names insert-transfers: without it, the error says so.
    let mut bare = Tool::new("hat-opt", hat_dialects::context, hat_ir::pass::PassRegistry::new());
    bare.passes_mut().register_pipeline("default", "", "builtin.module()");
    assert_eq!(
        fail(&bare, &squares(), &[&ARGS[..], &["--arg", "scale=1", "--run", "--strategy=kernel"]].concat()).1,
        "error: --run, kernel strategy (insert-transfers{strategy=kernel}): 'insert-transfers' does not refer to a \
         registered pass or pipeline"
    );
    let error = fail(&tool, &squares(), &["--strategy=kernel"]).1;
    assert!(error.contains("--strategy") && error.contains("--run"), "{error}");
}

#[test]
fn a_strategy_runs_insert_transfers_with_it_and_the_default_pipeline_can_be_the_real_one() {
    let mut tool = test_tool();
    let arguments = [&ARGS[..], &["--arg", "scale=2", "--run-check"]].concat();
    for strategy in ["jic", "kernel"] {
        let report = succeed(&tool, &squares(), &[&arguments[..], &[&format!("--strategy={strategy}")]].concat());
        assert!(
            report.contains(&format!("compiled:   {strategy} strategy (insert-transfers{{strategy={strategy}}})\n")),
            "{report}"
        );
        assert!(report.contains("results:    18 : i32\n"), "{report}");
    }
    tool.passes_mut().register_pipeline(
        "default",
        "",
        "builtin.module(insert-transfers{strategy=static},canonicalize)",
    );
    let report = succeed(&tool, &squares(), &arguments);
    assert!(report.contains("compiled:   static strategy (pipeline 'default')\n"), "{report}");
    assert!(report.contains("check:      the same as the reference semantics"), "{report}");
}

#[test]
fn passes_given_with_run_are_the_pipeline_and_the_program_runs_in_explicit_mode() {
    let tool = test_tool();
    let report =
        succeed(&tool, &squares_with_transfers(), &[&ARGS[..], &["--arg", "scale=1", "--run", "--cse"]].concat());
    assert!(
        report.starts_with("ran @main (explicit transfers, cpu backend)\ncompiled:   the passes given\n"),
        "{report}"
    );
}

const FOLDABLE: &str = "compute.func @f() -> i32 {
  %a = arith.constant 2 : i32
  %b = arith.constant 3 : i32
  %c = arith.addi %a, %b : i32
  compute.return %c : i32
}
";

#[test]
fn a_pipeline_name_stands_for_its_passes_as_a_flag_and_in_pipelines() {
    let tool = test_tool();
    let folded = succeed(&tool, FOLDABLE, &["--canonicalize"]);
    assert!(folded.contains("arith.constant 5 : i32") && !folded.contains("arith.addi"), "{folded}");
    for arguments in
        [&["--default"][..], &["-p", "default"], &["--pass-pipeline=builtin.module(default)"], &["-p", "cse,default"]]
    {
        assert_eq!(succeed(&tool, FOLDABLE, arguments), folded, "{arguments:?}");
    }
    assert!(succeed(&tool, FOLDABLE, &[]).contains("arith.addi"), "no pipeline, no folding");
    assert_eq!(
        fail(&tool, FOLDABLE, &["--default=x=1"]).1,
        "error: 'default' is a pipeline: it takes no options (give options to the passes it runs)"
    );
    assert_eq!(
        fail(&tool, FOLDABLE, &["-p", "builtin.module(defualt)"]).1,
        "error: 'defualt' does not refer to a registered pass or pipeline; did you mean 'default'?"
    );
    assert_eq!(
        fail(&tool, FOLDABLE, &["-p", "canonicalise"]).1,
        "error: 'canonicalise' does not refer to a registered pass or pipeline; did you mean 'canonicalize'?"
    );
}

#[test]
fn list_passes_shows_passes_with_their_options_and_pipelines_with_their_text() {
    let tool = test_tool();
    let list = succeed(&tool, "", &["--list-passes"]);
    assert!(list.starts_with("Available Passes:\n  --canonicalize "), "{list}");
    assert!(list.contains("\n      max-iterations=uint"), "{list}");
    assert!(
        list.ends_with(
            "Available Pass Pipelines:\n  --default              Test alias of canonicalize\n      = \
             builtin.module(canonicalize)\n"
        ),
        "{list}"
    );
    let help = crate::command(&tool).render_long_help().to_string();
    assert!(help.contains("Pass pipelines (one flag each"), "{help}");
    assert!(help.contains("--default[=<OPTIONS>]"), "{help}");
}

#[test]
fn a_pass_named_like_an_option_of_the_tool_is_refused_not_shadowed() {
    let mut tool = test_tool();
    tool.passes_mut().register_pipeline("run", "Shadows --run", "builtin.module(canonicalize)");
    let (_, error) = fail(&tool, FOLDABLE, &[]);
    assert_eq!(
        error,
        "error: hat-opt: the pass or pipeline names '--run' are options of the tool itself; register them under \
         other names"
    );
}
