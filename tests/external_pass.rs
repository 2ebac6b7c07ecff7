//! Passes defined outside hat's crates, registered beside hat's own and used in pipelines:
//! nesting by op name, typed options, statistics, cached analyses, verify-each, instrumentation.

use hat_ir::pass::instrumentation::{IrPrinting, PassFilter};
use hat_ir::pass::{
    Analysis, AnalysisManager, OptionKind, Pass, PassFailed, PassInfo, PassManager, PassManagerOptions, PassOptionInfo,
    PassOptions, PassRegistry, PassState, PipelineError,
};
use hat_ir::{parse_source, print_op, Context, Diagnostic, Op, PrintOptions};
use std::cell::RefCell;
use std::rc::Rc;

/// Counts the ops under an op (an analysis the passes below share through the cache).
struct OpCount(usize);

impl Analysis for OpCount {
    fn compute(ctx: &Context, op: Op, _: &mut AnalysisManager) -> Self {
        OpCount(ctx.walk(op).len())
    }
}

/// Tags every op it runs on with `tag = "<label>"`.
struct Tag {
    label: String,
}

impl Pass for Tag {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let name = ctx.ident("tag");
        let value = ctx.string_attr(&self.label);
        ctx.set_attribute(op, name, value);
        state.add_statistic("tagged", 1);
        state.preserve::<OpCount>();
        Ok(())
    }
}

/// Reports the op count as a remark; fails when asked to.
struct Count {
    fail: bool,
}

impl Pass for Count {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let count = state.analysis::<OpCount>(ctx, op).0;
        state.add_statistic("ops", count as u64);
        if self.fail {
            state.emit(Diagnostic::error(ctx.location(op), "asked to fail"));
            return Err(PassFailed);
        }
        state.emit(Diagnostic::remark(ctx.location(op), format!("{count} ops")));
        state.preserve_all();
        Ok(())
    }
}

/// Breaks the IR: drops the terminator of the first function.
struct Break;

impl Pass for Break {
    fn run(&mut self, ctx: &mut Context, op: Op, _: &mut PassState<'_>) -> Result<(), PassFailed> {
        let function = ctx.body_ops(op)[0];
        let block = ctx.region_blocks(ctx.regions(function)[0])[0];
        let terminator = ctx.last_op(block).unwrap();
        ctx.detach_op(terminator);
        Ok(())
    }
}

const TAG_OPTIONS: &[PassOptionInfo] =
    &[PassOptionInfo { name: "label", kind: OptionKind::String, default: "seen", help: "the tag's text" }];
const COUNT_OPTIONS: &[PassOptionInfo] =
    &[PassOptionInfo { name: "fail", kind: OptionKind::Bool, default: "false", help: "fail on purpose" }];

fn registry() -> PassRegistry {
    let mut registry = PassRegistry::new();
    registry.register(PassInfo {
        name: "test-tag",
        summary: "Tags ops",
        anchor: None,
        options: TAG_OPTIONS,
        create: |options: &PassOptions| Box::new(Tag { label: options.get("label").to_string() }),
    });
    registry.register(PassInfo {
        name: "test-count",
        summary: "Counts ops",
        anchor: None,
        options: COUNT_OPTIONS,
        create: |options: &PassOptions| Box::new(Count { fail: options.get_bool("fail") }),
    });
    registry.register(PassInfo {
        name: "test-break",
        summary: "Leaves invalid IR",
        anchor: Some("builtin.module"),
        options: &[],
        create: |_: &PassOptions| Box::new(Break),
    });
    registry
}

const PROGRAM: &str = r#"module {
  compute.func @a() {
    compute.return
  }
  compute.func @b() {
    compute.return
  }
}
"#;

fn load() -> (Context, Op) {
    let mut ctx = hat_dialects::context();
    let module = parse_source(&mut ctx, "p.hat", PROGRAM).unwrap();
    (ctx, module)
}

#[test]
fn nested_pipelines_run_on_each_op_of_their_name_with_typed_options() {
    let (mut ctx, module) = load();
    let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
    manager.add_pipeline(&registry(), "builtin.module(compute.func(test-tag{label=fn}),test-count)").unwrap();
    assert_eq!(manager.pipeline_string(), "builtin.module(compute.func(test-tag{label=fn}),test-count{fail=false})");
    let diagnostics = manager.run(&mut ctx, module).unwrap();
    let printed = print_op(&ctx, module, PrintOptions::default());
    assert_eq!(printed.matches(r#"attributes {tag = "fn"}"#).count(), 2, "{printed}");
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0].message, "5 ops");
    let statistics = manager.statistics();
    assert_eq!(statistics[0], ("test-tag".to_string(), vec![("tagged".to_string(), 2)]));
    assert_eq!(statistics[1], ("test-count".to_string(), vec![("ops".to_string(), 5)]));
}

#[test]
fn bad_pipelines_and_options_are_reported() {
    let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
    let registry = registry();
    assert_eq!(
        manager.add_pipeline(&registry, "nope").unwrap_err(),
        PipelineError::UnknownPass { name: "nope".into(), suggestion: None }
    );
    assert_eq!(
        manager.add_pipeline(&registry, "test-count{fail=maybe}").unwrap_err().to_string(),
        "invalid options for pass 'test-count': invalid value 'maybe' for option 'fail': expected true or false"
    );
    assert_eq!(
        manager.add_pipeline(&registry, "test-tag{colour=red}").unwrap_err().to_string(),
        "invalid options for pass 'test-tag': unknown option 'colour' (expected one of: label)"
    );
    assert!(matches!(manager.add_pipeline(&registry, "builtin.module(").unwrap_err(), PipelineError::Syntax(_)));
}

#[test]
fn a_failing_pass_stops_the_pipeline_with_its_error() {
    let (mut ctx, module) = load();
    let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
    manager.add_pipeline(&registry(), "test-count{fail},test-tag").unwrap();
    let errors = manager.run(&mut ctx, module).unwrap_err();
    assert_eq!(errors.iter().map(|d| d.message.as_str()).collect::<Vec<_>>(), ["asked to fail"]);
    assert!(!print_op(&ctx, module, PrintOptions::default()).contains("tag"), "test-tag must not have run");
}

#[test]
fn verify_each_catches_a_pass_that_leaves_invalid_ir() {
    let (mut ctx, module) = load();
    let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
    manager.add_pipeline(&registry(), "test-break").unwrap();
    let errors = manager.run(&mut ctx, module).unwrap_err();
    assert_eq!(errors[0].message, "pass 'test-break' produced invalid IR");
    assert!(errors[1].message.contains("has an empty block"), "{errors:?}");

    let (mut ctx, module) = load();
    let mut manager = PassManager::new("builtin.module", PassManagerOptions { verify_each: false });
    manager.add_pipeline(&registry(), "test-break").unwrap();
    assert!(manager.run(&mut ctx, module).is_ok());
}

/// A sink the test can read after the pass manager took ownership of the printer.
#[derive(Clone, Default)]
struct SharedText(Rc<RefCell<Vec<u8>>>);

impl std::io::Write for SharedText {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn ir_printing_shows_the_ir_around_the_named_passes() {
    let (mut ctx, module) = load();
    let mut manager = PassManager::new("builtin.module", PassManagerOptions::default());
    manager.add_pipeline(&registry(), "test-count,test-tag").unwrap();
    let text = SharedText::default();
    let mut printing =
        IrPrinting::new(PassFilter::Named(vec!["test-tag".into()]), PassFilter::All, Box::new(text.clone()));
    printing.only_after_change = true;
    manager.add_instrumentation(Box::new(printing));
    manager.run(&mut ctx, module).unwrap();
    let dumped = String::from_utf8(text.0.borrow().clone()).unwrap();
    let headers: Vec<&str> = dumped.lines().filter(|l| l.starts_with("// -----//")).collect();
    // test-count changes nothing, so only test-tag's dumps appear.
    assert_eq!(
        headers,
        ["// -----// IR Dump Before test-tag //----- //", "// -----// IR Dump After test-tag //----- //"]
    );
}
