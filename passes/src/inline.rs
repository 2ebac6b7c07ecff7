//! `inline`: replaces calls by the bodies of their callees.
//!
//! A `compute.call` of a `compute.func` and a `kernel.call` of a `kernel.helper` are inlined when
//! the callee's body is a single block ending in its return: the body is cloned before the call
//! with the callee's arguments mapped to the call's operands, and the returned values replace the
//! call's results. Never inlined: calls of `compute.host_func` (no body), calls of a function that
//! can reach itself through calls (recursion, direct or not), callees whose body has several
//! blocks.
//!
//! Functions are processed callees first (the call graph's strongly connected components in
//! reverse topological order), so a chain of calls is inlined in one run. A callee that was
//! inlined and that nothing refers to any more is erased if it is a `kernel.helper`, or a
//! `compute.func` that is not an entry (`@main`, or marked `entry`) in a module that has one (the
//! rule of `dce`: without an entry, the module may be a library and its functions are kept).

use crate::support::{collect_nested_symbol_refs, has_entry, is_discardable_function, symbol_ident};
use hat_ir::pass::{Pass, PassFailed, PassInfo, PassState};
use hat_ir::rewrite::{Mapping, Rewriter};
use hat_ir::{AttributeKind, Context, Ident, Op, OpTraits, Value};
use rustc_hash::{FxHashMap, FxHashSet};

/// The registration of `inline`.
pub fn info() -> PassInfo {
    PassInfo {
        name: "inline",
        summary:
            "Inline calls of compute functions and kernel helpers (not recursive ones), erasing callees left unused",
        anchor: None,
        options: &[],
        create: |_| Box::new(Inline),
    }
}

/// The `inline` pass.
pub struct Inline;

impl Pass for Inline {
    fn run(&mut self, ctx: &mut Context, op: Op, state: &mut PassState<'_>) -> Result<(), PassFailed> {
        let tables: Vec<Op> = ctx.walk(op).into_iter().filter(|&o| ctx.has_traits(o, OpTraits::SYMBOL_TABLE)).collect();
        let (mut inlined, mut erased) = (0, 0);
        for table in tables {
            if table != op && ctx.parent_block(table).is_none() {
                continue;
            }
            let (i, e) = inline_calls(ctx, table);
            inlined += i;
            erased += e;
        }
        state.add_statistic("num-inlined", inlined as u64);
        state.add_statistic("num-erased", erased as u64);
        if inlined == 0 {
            state.preserve_all();
        }
        Ok(())
    }
}

/// The callee kind each call op may inline.
fn callee_kind(call_name: &str) -> Option<&'static str> {
    match call_name {
        "compute.call" => Some("compute.func"),
        "kernel.call" => Some("kernel.helper"),
        _ => None,
    }
}

/// The flat symbol a call names in its `callee` attribute.
fn callee_name(ctx: &Context, call: Op) -> Option<Ident> {
    match ctx.attribute_kind(ctx.attribute(call, "callee")?) {
        AttributeKind::SymbolRef(path) if path.len() == 1 => Some(path[0]),
        _ => None,
    }
}

/// Inlines the calls between the functions directly in `table`; returns (calls inlined, callees
/// erased).
pub fn inline_calls(ctx: &mut Context, table: Op) -> (usize, usize) {
    let functions: Vec<Op> = ctx
        .regions(table)
        .iter()
        .flat_map(|&r| ctx.region_blocks(r).to_vec())
        .flat_map(|b| ctx.block_ops(b).collect::<Vec<_>>())
        .filter(|&o| !ctx.regions(o).is_empty() && ctx.has_traits(o, OpTraits::SYMBOL))
        .collect();
    let position: FxHashMap<Ident, usize> =
        functions.iter().enumerate().filter_map(|(i, &f)| Some((symbol_ident(ctx, f)?, i))).collect();
    // Calls of each function to functions of this table, and the call graph.
    let mut calls: Vec<Vec<(Op, usize)>> = vec![Vec::new(); functions.len()];
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); functions.len()];
    for (i, &function) in functions.iter().enumerate() {
        for op in ctx.walk(function) {
            let Some(kind) = callee_kind(ctx.name_str(op)) else { continue };
            let Some(&callee) = callee_name(ctx, op).and_then(|n| position.get(&n)) else { continue };
            if ctx.name_str(functions[callee]) == kind {
                calls[i].push((op, callee));
            }
            edges[i].push(callee);
        }
    }
    let (order, recursive) = components(&edges);
    let mut rewriter = Rewriter::new(ctx, table);
    let mut inlined = 0;
    let mut inlined_callees = FxHashSet::default();
    for function in order {
        for &(call, callee) in &calls[function] {
            if !recursive[callee] && inline_call(&mut rewriter, call, functions[callee]) {
                inlined += 1;
                inlined_callees.insert(callee);
            }
        }
    }
    drop(rewriter);
    if inlined_callees.is_empty() {
        return (0, 0);
    }
    // Erase the inlined callees that nothing else refers to any more.
    let mut referenced: FxHashSet<Ident> = FxHashSet::default();
    let mut refs = Vec::new();
    for &function in &functions {
        refs.clear();
        collect_nested_symbol_refs(ctx, function, &mut refs);
        let own = symbol_ident(ctx, function);
        referenced.extend(refs.iter().copied().filter(|&r| Some(r) != own));
    }
    let others = ctx
        .regions(table)
        .iter()
        .flat_map(|&r| ctx.region_blocks(r).to_vec())
        .flat_map(|b| ctx.block_ops(b).collect::<Vec<_>>())
        .filter(|o| !functions.contains(o))
        .collect::<Vec<_>>();
    for op in others {
        collect_nested_symbol_refs(ctx, op, &mut refs);
    }
    referenced.extend(refs);
    let mut erased = 0;
    let entries_known = has_entry(ctx, table);
    let mut callees: Vec<usize> = inlined_callees.into_iter().collect();
    callees.sort_unstable();
    for callee in callees {
        let function = functions[callee];
        let unreferenced = symbol_ident(ctx, function).is_some_and(|name| !referenced.contains(&name));
        if unreferenced && is_discardable_function(ctx, function, entries_known) {
            ctx.erase_op(function);
            erased += 1;
        }
    }
    (inlined, erased)
}

/// Inlines one call of `callee` if its body allows; whether it did.
fn inline_call(rewriter: &mut Rewriter<'_, hat_ir::rewrite::NoListener>, call: Op, callee: Op) -> bool {
    let ctx = rewriter.ctx();
    let Some(&region) = ctx.regions(callee).first() else { return false };
    let &[block] = ctx.region_blocks(region) else { return false };
    let Some(terminator) = ctx.last_op(block) else { return false };
    if !ctx.has_traits(terminator, OpTraits::RETURN_LIKE) || ctx.operands(terminator).len() != ctx.result_count(call) {
        return false;
    }
    let parameters = ctx.block_arguments(block);
    let arguments = ctx.operands(call);
    if parameters.len() != arguments.len()
        || parameters.iter().zip(arguments).any(|(&p, &a)| ctx.value_type(p) != ctx.value_type(a))
    {
        return false;
    }
    let mut mapping = Mapping::new();
    for (&parameter, &argument) in parameters.iter().zip(arguments) {
        mapping.map_value(parameter, argument);
    }
    let body: Vec<Op> = ctx.block_ops(block).filter(|&o| o != terminator).collect();
    for op in body {
        let copy = rewriter.clone_op(op, &mut mapping);
        rewriter.insert_op_before(call, copy);
    }
    let returned: Vec<Value> = rewriter.ctx().operands(terminator).iter().map(|&v| mapping.lookup(v)).collect();
    rewriter.replace_op(call, &returned);
    true
}

/// The strongly connected components of a graph (Tarjan's algorithm, iterative): the nodes in
/// an order where every node comes after the nodes it reaches (outside its own component), and,
/// per node, whether it can reach itself.
fn components(edges: &[Vec<usize>]) -> (Vec<usize>, Vec<bool>) {
    const UNVISITED: usize = usize::MAX;
    let n = edges.len();
    let mut index = vec![UNVISITED; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut order = Vec::with_capacity(n);
    let mut recursive = vec![false; n];
    let mut counter = 0;
    for start in 0..n {
        if index[start] != UNVISITED {
            continue;
        }
        // (node, next edge to look at)
        let mut frames = vec![(start, 0usize)];
        index[start] = counter;
        low[start] = counter;
        counter += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (node, ref mut next)) = frames.last_mut() {
            if let Some(&target) = edges[node].get(*next) {
                *next += 1;
                if target == node {
                    recursive[node] = true;
                }
                if index[target] == UNVISITED {
                    index[target] = counter;
                    low[target] = counter;
                    counter += 1;
                    stack.push(target);
                    on_stack[target] = true;
                    frames.push((target, 0));
                } else if on_stack[target] {
                    low[node] = low[node].min(index[target]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = Vec::new();
                loop {
                    let member = stack.pop().expect("the component's nodes are on the stack");
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    for &member in &component {
                        recursive[member] = true;
                    }
                }
                order.extend(component.into_iter().rev());
            }
        }
    }
    (order, recursive)
}

#[cfg(test)]
mod tests {
    use super::components;
    use crate::testing::{assert_pipeline, run_pipeline};

    #[test]
    fn components_order_callees_first_and_find_cycles() {
        // 0 → 1 → 2, 2 → 1 (cycle 1-2), 3 → 3 (self), 4 alone.
        let (order, recursive) = components(&[vec![1], vec![2], vec![1], vec![3], vec![]]);
        let at = |n: usize| order.iter().position(|&x| x == n).unwrap();
        assert!(at(1) < at(0) && at(2) < at(0));
        assert_eq!(recursive, vec![false, true, true, true, false]);
    }

    #[test]
    fn inlines_a_helper_and_erases_it() {
        assert_pipeline(
            "inline",
            "kernel.helper @square(%x: i32) -> i32 {\n  %0 = arith.muli %x, %x : i32\n  kernel.return %0 : i32\n}\nkernel.func @k(%a: i32, %m: memref<4xi32>, %i: index) {\n  %0 = kernel.call @square(%a) : (i32) -> i32\n  buffer.store %0, %m[%i] : memref<4xi32>\n  kernel.return\n}",
            "kernel.func @k(%a: i32, %m: memref<4xi32>, %i: index) {\n    %0 = arith.muli %a, %a : i32\n    buffer.store %0, %m[%i] : memref<4xi32>\n    kernel.return\n  }",
        );
    }

    #[test]
    fn chains_inline_in_one_run() {
        let text = "compute.func @a(%x: i32) -> i32 {\n  %0 = compute.call @b(%x) : (i32) -> i32\n  %1 = arith.addi %0, %x : i32\n  compute.return %1 : i32\n}\n\
                    compute.func @b(%x: i32) -> i32 {\n  %0 = arith.muli %x, %x : i32\n  compute.return %0 : i32\n}\n\
                    compute.func @main(%x: i32) -> i32 {\n  %0 = compute.call @a(%x) : (i32) -> i32\n  compute.return %0 : i32\n}";
        let out = run_pipeline("inline", text);
        assert!(!out.contains("compute.call"), "{out}");
        assert!(!out.contains("@a") && !out.contains("@b"), "{out}");
        assert!(out.contains("arith.muli") && out.contains("arith.addi"), "{out}");
    }

    #[test]
    fn recursion_and_host_functions_are_not_inlined() {
        let text = "compute.host_func @show(read memref<4xi32>)\n\
                    compute.func @even(%x: i32) -> i32 {\n  %0 = compute.call @odd(%x) : (i32) -> i32\n  compute.return %0 : i32\n}\n\
                    compute.func @odd(%x: i32) -> i32 {\n  %0 = compute.call @even(%x) : (i32) -> i32\n  compute.return %0 : i32\n}\n\
                    compute.func @main(%x: i32, %m: memref<4xi32>) -> i32 {\n  compute.call @show(%m) : (memref<4xi32>) -> ()\n  %0 = compute.call @even(%x) : (i32) -> i32\n  compute.return %0 : i32\n}";
        let out = run_pipeline("inline", text);
        assert_eq!(out.matches("compute.call").count(), 4, "{out}");
        assert!(out.contains("compute.func @even") && out.contains("compute.func @odd"), "{out}");
    }

    #[test]
    fn an_entry_is_inlined_but_kept() {
        let text = "compute.func @main(%x: i32) -> i32 {\n  compute.return %x : i32\n}\n\
                    compute.func @caller(%x: i32) -> i32 attributes {entry} {\n  %0 = compute.call @main(%x) : (i32) -> i32\n  compute.return %0 : i32\n}";
        let out = run_pipeline("inline", text);
        assert!(!out.contains("compute.call"), "{out}");
        assert!(out.contains("compute.func @main"), "{out}");
    }
}
