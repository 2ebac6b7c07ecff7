//! A small dialect for the analyses' unit tests (the hat dialects live in another crate): a
//! module, functions and declarations, calls, returns, a branch and a conditional branch, a loop
//! and an if over regions, all in the generic form. Other ops are unregistered.

use crate::interfaces::{
    BranchOpInterface, CallOpInterface, CallableOpInterface, RegionBranchOpInterface, RegionPoint,
};
use crate::verifier::symbol_name;
use crate::{AttributeKind, Context, Ident, Location, Op, OpDefinition, OpTraits, OperationState, Region};
use smallvec::{smallvec, SmallVec};
use std::ops::Range;

struct Def(&'static str, OpTraits);

impl OpDefinition for Def {
    fn name(&self) -> &str {
        self.0
    }
    fn traits(&self) -> OpTraits {
        self.1
    }
}

struct Function;
impl CallableOpInterface for Function {
    fn body(&self, ctx: &Context, op: Op) -> Option<Region> {
        ctx.regions(op).first().copied().filter(|&r| !ctx.region_blocks(r).is_empty())
    }
    fn is_entry(&self, ctx: &Context, op: Op) -> bool {
        symbol_name(ctx, op) == Some("main")
    }
    fn is_discardable(&self, ctx: &Context, op: Op, module_has_entry: bool) -> bool {
        module_has_entry && !self.is_entry(ctx, op)
    }
}

struct Call;
impl CallOpInterface for Call {
    fn callee(&self, ctx: &Context, op: Op) -> Option<Ident> {
        match ctx.attribute_kind(ctx.attribute(op, "callee")?) {
            AttributeKind::SymbolRef(path) if path.len() == 1 => Some(path[0]),
            _ => None,
        }
    }
}

/// `t.br` passes all its operands to its one successor; `t.cond_br` passes none.
struct Branch;
impl BranchOpInterface for Branch {
    fn successor_operands(&self, ctx: &Context, op: Op, _: usize) -> Range<usize> {
        if ctx.name_str(op) == "t.br" {
            0..ctx.operands(op).len()
        } else {
            1..1
        }
    }
}

/// `t.loop`: a region that runs zero or more times, carrying nothing.
struct Loop;
impl RegionBranchOpInterface for Loop {
    fn successors(&self, _: &Context, _: Op, _: RegionPoint, _: &[Option<i64>]) -> SmallVec<[RegionPoint; 2]> {
        smallvec![RegionPoint::Region(0), RegionPoint::Parent]
    }
    fn entry_operands(&self, _: &Context, _: Op, _: RegionPoint) -> Range<usize> {
        0..0
    }
}

/// `t.if`: one of two regions, once.
struct If;
impl RegionBranchOpInterface for If {
    fn successors(&self, _: &Context, _: Op, from: RegionPoint, _: &[Option<i64>]) -> SmallVec<[RegionPoint; 2]> {
        match from {
            RegionPoint::Parent => smallvec![RegionPoint::Region(0), RegionPoint::Region(1)],
            RegionPoint::Region(_) => smallvec![RegionPoint::Parent],
        }
    }
    fn entry_operands(&self, _: &Context, _: Op, _: RegionPoint) -> Range<usize> {
        1..1
    }
}

/// A context with the test dialect registered and unregistered ops allowed.
pub(crate) fn context() -> Context {
    let mut ctx = Context::new();
    ctx.allow_unregistered = true;
    let module = OpTraits::ISOLATED_FROM_ABOVE
        | OpTraits::SYMBOL_TABLE
        | OpTraits::NO_TERMINATOR
        | OpTraits::SINGLE_BLOCK
        | OpTraits::GRAPH_REGION;
    ctx.register_op(Def("builtin.module", module));
    ctx.register_op(Def("t.func", OpTraits::ISOLATED_FROM_ABOVE | OpTraits::SYMBOL));
    ctx.register_op(Def("t.call", OpTraits::NONE));
    ctx.register_op(Def("t.return", OpTraits::TERMINATOR | OpTraits::RETURN_LIKE));
    ctx.register_op(Def("t.yield", OpTraits::TERMINATOR | OpTraits::RETURN_LIKE));
    ctx.register_op(Def("t.br", OpTraits::TERMINATOR));
    ctx.register_op(Def("t.cond_br", OpTraits::TERMINATOR));
    ctx.register_op(Def("t.loop", OpTraits::NONE));
    ctx.register_op(Def("t.if", OpTraits::NONE));
    ctx.attach_interface::<dyn CallableOpInterface>("t.func", &Function);
    ctx.attach_interface::<dyn CallOpInterface>("t.call", &Call);
    ctx.attach_interface::<dyn BranchOpInterface>("t.br", &Branch);
    ctx.attach_interface::<dyn BranchOpInterface>("t.cond_br", &Branch);
    ctx.attach_interface::<dyn RegionBranchOpInterface>("t.loop", &Loop);
    ctx.attach_interface::<dyn RegionBranchOpInterface>("t.if", &If);
    ctx
}

/// Parses and verifies `text` in a [`context`].
pub(crate) fn parse(text: &str) -> (Context, Op) {
    let mut ctx = context();
    let module = crate::parse_source(&mut ctx, "test.hat", text).unwrap_or_else(|e| panic!("{e:?}"));
    let errors = crate::verify(&ctx, module);
    assert!(errors.is_empty(), "{errors:?}");
    (ctx, module)
}

/// The ops under `root` named `name`, in IR order.
pub(crate) fn ops_named(ctx: &Context, root: Op, name: &str) -> Vec<Op> {
    ctx.walk(root).into_iter().filter(|&o| ctx.name_str(o) == name).collect()
}

/// The one op under `root` with the attribute `tag = "<tag>"`.
pub(crate) fn tagged(ctx: &Context, root: Op, tag: &str) -> Op {
    let found: Vec<Op> = ctx
        .walk(root)
        .into_iter()
        .filter(|&o| ctx.attribute(o, "tag").and_then(|a| ctx.attribute_kind(a).as_str()) == Some(tag))
        .collect();
    assert_eq!(found.len(), 1, "one op tagged {tag}");
    found[0]
}

/// A module of `count` functions, each calling the next.
pub(crate) fn chain(count: usize) -> (Context, Op) {
    let mut ctx = context();
    let location = Location::UNKNOWN;
    let module_name = ctx.op_name("builtin.module");
    let (function, call, ret) = (ctx.op_name("t.func"), ctx.op_name("t.call"), ctx.op_name("t.return"));
    let (sym_name, callee) = (ctx.ident("sym_name"), ctx.ident("callee"));
    let body = ctx.create_region();
    let module_block = ctx.create_block(&[]);
    ctx.append_block(body, module_block);
    for i in 0..count {
        let region = ctx.create_region();
        let block = ctx.create_block(&[]);
        ctx.append_block(region, block);
        if i + 1 < count {
            let mut state = OperationState::new(call, location);
            state.attributes.push((callee, ctx.symbol_ref_attr(&format!("f{}", i + 1))));
            let op = ctx.create_op(state);
            ctx.append_op(block, op);
        }
        let op = ctx.create_op(OperationState::new(ret, location));
        ctx.append_op(block, op);
        let mut state = OperationState::new(function, location);
        let name = if i == 0 { "main".to_string() } else { format!("f{i}") };
        state.attributes.push((sym_name, ctx.string_attr(&name)));
        state.regions.push(region);
        let op = ctx.create_op(state);
        ctx.append_op(module_block, op);
    }
    let mut state = OperationState::new(module_name, location);
    state.regions.push(body);
    let module = ctx.create_op(state);
    (ctx, module)
}

/// A module whose `@main` calls `@helper(%x) -> %x` from `count` call sites.
pub(crate) fn fan_in(count: usize) -> (Context, Op) {
    let mut ctx = context();
    let location = Location::UNKNOWN;
    let i32_type = ctx.integer_type(32);
    let (function, call, ret, def) =
        (ctx.op_name("t.func"), ctx.op_name("t.call"), ctx.op_name("t.return"), ctx.op_name("t.def"));
    let (sym_name, callee) = (ctx.ident("sym_name"), ctx.ident("callee"));
    let body = ctx.create_region();
    let module_block = ctx.create_block(&[]);
    ctx.append_block(body, module_block);
    for name in ["helper", "main"] {
        let region = ctx.create_region();
        let arguments = if name == "helper" { vec![i32_type] } else { Vec::new() };
        let block = ctx.create_block(&arguments);
        ctx.append_block(region, block);
        let mut returned = Vec::new();
        if name == "helper" {
            returned.push(ctx.block_arguments(block)[0]);
        } else {
            let mut state = OperationState::new(def, location);
            state.result_types.push(i32_type);
            let defined = ctx.create_op(state);
            ctx.append_op(block, defined);
            let value = ctx.result(defined, 0);
            for _ in 0..count {
                let mut state = OperationState::new(call, location);
                state.attributes.push((callee, ctx.symbol_ref_attr("helper")));
                state.operands.push(value);
                state.result_types.push(i32_type);
                let op = ctx.create_op(state);
                ctx.append_op(block, op);
            }
        }
        let mut state = OperationState::new(ret, location);
        state.operands = returned;
        let op = ctx.create_op(state);
        ctx.append_op(block, op);
        let mut state = OperationState::new(function, location);
        state.attributes.push((sym_name, ctx.string_attr(name)));
        state.regions.push(region);
        let op = ctx.create_op(state);
        ctx.append_op(module_block, op);
    }
    let mut state = OperationState::new(ctx.op_name("builtin.module"), location);
    state.regions.push(body);
    let module = ctx.create_op(state);
    (ctx, module)
}
