//! The call graph: which callables call which, found through the interfaces only.
//!
//! Nodes are the ops nested in the root (the root included) that implement
//! [`CallableOpInterface`], with or without a body, plus one [`CallGraph::EXTERNAL`] node that
//! stands for code outside what the graph sees. Edges are call sites: ops implementing
//! [`CallOpInterface`], from the nearest callable enclosing the call to the callable its symbol
//! resolves to (in the symbol tables enclosing the call, as [`crate::interfaces::resolve_callee`]
//! does). A call whose symbol does not resolve, resolves to something that is not a callable, or
//! resolves outside the root goes to `EXTERNAL`. `EXTERNAL` has no outgoing edges: what outside
//! code calls back is described per node by [`CallGraph::callers_known`] instead, so that no false
//! cycle goes through it. A declaration (a callable without a body) is a node with no outgoing
//! edges.
//!
//! Strongly connected components come in post-order: every callee's component before its
//! callers' (Tarjan's algorithm, iterative). Building is linear in the size of the IR under the
//! root: symbol tables are built once ([`SymbolResolver`]).

use super::symbol_resolver::SymbolResolver;
use crate::interfaces::{CallOpInterface, CallableOpInterface};
use crate::{Context, Op, Region};
use rustc_hash::FxHashMap;

/// A node of a [`CallGraph`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallGraphNode(u32);

impl CallGraphNode {
    /// The position of the node in [`CallGraph::nodes`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A call site: an edge of the graph.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The call op.
    pub call: Op,
    /// The callable whose body holds the call (`None` for a call outside every callable).
    pub caller: Option<CallGraphNode>,
    /// What it calls ([`CallGraph::EXTERNAL`] when unresolved).
    pub callee: CallGraphNode,
}

#[derive(Clone, Debug)]
struct NodeData {
    callable: Option<Op>,
    body: Option<Region>,
    callers_known: bool,
    /// Indices into `sites` of the calls made from this node's body, in IR order.
    calls: Vec<u32>,
    /// Indices into `sites` of the calls of this node, in IR order.
    callers: Vec<u32>,
}

/// The call graph of the callables nested in an op (see the module documentation).
#[derive(Clone, Debug)]
pub struct CallGraph {
    nodes: Vec<NodeData>,
    node_of: FxHashMap<Op, CallGraphNode>,
    sites: Vec<CallSite>,
    site_of: FxHashMap<Op, u32>,
    /// Components in post-order (callees first), and the component of each node.
    components: Vec<Vec<CallGraphNode>>,
    component_of: Vec<u32>,
    /// Whether each component calls itself (several nodes, or one that calls itself).
    recursive: Vec<bool>,
}

impl CallGraph {
    /// The node for code outside the graph: the callee of unresolved calls.
    pub const EXTERNAL: CallGraphNode = CallGraphNode(0);

    /// The call graph of everything nested in `root` (`root` included).
    pub fn new(ctx: &Context, root: Op) -> Self {
        let ops = ctx.walk(root);
        let mut graph = CallGraph {
            nodes: vec![NodeData {
                callable: None,
                body: None,
                callers_known: false,
                calls: Vec::new(),
                callers: Vec::new(),
            }],
            node_of: FxHashMap::default(),
            sites: Vec::new(),
            site_of: FxHashMap::default(),
            components: Vec::new(),
            component_of: Vec::new(),
            recursive: Vec::new(),
        };
        for &op in &ops {
            if let Some(callable) = ctx.interface::<dyn CallableOpInterface>(op) {
                let node = CallGraphNode(graph.nodes.len() as u32);
                graph.node_of.insert(op, node);
                graph.nodes.push(NodeData {
                    callable: Some(op),
                    body: callable.body(ctx, op),
                    callers_known: false,
                    calls: Vec::new(),
                    callers: Vec::new(),
                });
            }
        }
        let mut resolver = SymbolResolver::new();
        // Callables referred to other than as the callee of a call: something may call them
        // in a way the graph cannot see (a launch, a table of functions).
        let mut referenced = vec![false; graph.nodes.len()];
        for &op in &ops {
            let call = ctx.interface::<dyn CallOpInterface>(op);
            let mut target = None;
            if let Some(call) = call {
                let callee = call
                    .callee(ctx, op)
                    .and_then(|name| resolver.resolve(ctx, op, &[name]))
                    .and_then(|target| graph.node_of.get(&target).copied())
                    .unwrap_or(Self::EXTERNAL);
                target = Some(callee);
                let caller = graph.enclosing_callable(ctx, root, op);
                let index = graph.sites.len() as u32;
                graph.sites.push(CallSite { call: op, caller, callee });
                graph.site_of.insert(op, index);
                if let Some(caller) = caller {
                    graph.nodes[caller.index()].calls.push(index);
                }
                graph.nodes[callee.index()].callers.push(index);
            }
            let mut callee_reference_seen = false;
            SymbolResolver::for_each_reference(ctx, op, |_, path| {
                let Some(node) = resolver.resolve(ctx, op, path).and_then(|t| graph.node_of.get(&t).copied()) else {
                    return;
                };
                if target == Some(node) && path.len() == 1 && !callee_reference_seen {
                    callee_reference_seen = true;
                } else {
                    referenced[node.index()] = true;
                }
            });
        }
        let mut table_has_entry: FxHashMap<Option<Op>, bool> = FxHashMap::default();
        for (index, &referenced) in referenced.iter().enumerate().skip(1) {
            let op = graph.nodes[index].callable.expect("only EXTERNAL has no op");
            let interface = ctx.interface::<dyn CallableOpInterface>(op).expect("a callable");
            let table = crate::interfaces::nearest_symbol_table(ctx, op);
            let has_entry = *table_has_entry.entry(table).or_insert_with(|| {
                table.is_some_and(|t| {
                    ctx.body_ops(t)
                        .into_iter()
                        .any(|o| ctx.interface::<dyn CallableOpInterface>(o).is_some_and(|c| c.is_entry(ctx, o)))
                })
            });
            graph.nodes[index].callers_known = op != root
                && !referenced
                && !interface.is_entry(ctx, op)
                && interface.is_discardable(ctx, op, has_entry);
        }
        graph.compute_components();
        graph
    }

    fn enclosing_callable(&self, ctx: &Context, root: Op, op: Op) -> Option<CallGraphNode> {
        let mut current = op;
        while current != root {
            current = ctx.parent_op(current)?;
            if let Some(&node) = self.node_of.get(&current) {
                return Some(node);
            }
        }
        None
    }

    /// Every node, `EXTERNAL` first, then the callables in IR order (pre-order).
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = CallGraphNode> {
        (0..self.nodes.len() as u32).map(CallGraphNode)
    }

    /// The node of a callable, if it is one nested in the root.
    pub fn node(&self, callable: Op) -> Option<CallGraphNode> {
        self.node_of.get(&callable).copied()
    }

    /// The callable op of a node (`None` for `EXTERNAL`).
    pub fn callable(&self, node: CallGraphNode) -> Option<Op> {
        self.nodes[node.index()].callable
    }

    /// The body of a node's callable (`None` for a declaration and for `EXTERNAL`).
    pub fn body(&self, node: CallGraphNode) -> Option<Region> {
        self.nodes[node.index()].body
    }

    /// Whether every call of this callable is a call site of the graph: it is not the root, not
    /// an entry, may be erased once unreferenced (its interface's `is_discardable`, so nothing
    /// outside the IR calls it by name), and no attribute other than a call's callee refers to it.
    /// When false, an analysis must assume calls from code it does not see.
    pub fn callers_known(&self, node: CallGraphNode) -> bool {
        self.nodes[node.index()].callers_known
    }

    /// The call sites inside a node's body, in IR order.
    pub fn calls(&self, node: CallGraphNode) -> impl Iterator<Item = &CallSite> + '_ {
        self.nodes[node.index()].calls.iter().map(|&i| &self.sites[i as usize])
    }

    /// The call sites that call a node, in IR order.
    pub fn callers(&self, node: CallGraphNode) -> impl Iterator<Item = &CallSite> + '_ {
        self.nodes[node.index()].callers.iter().map(|&i| &self.sites[i as usize])
    }

    /// Every call site, in IR order.
    pub fn call_sites(&self) -> &[CallSite] {
        &self.sites
    }

    /// The call site of a call op.
    pub fn call_site(&self, call: Op) -> Option<&CallSite> {
        self.site_of.get(&call).map(|&i| &self.sites[i as usize])
    }

    /// What a call op calls: a node, `EXTERNAL` when unresolved; `None` when `call` is not a call
    /// nested in the root.
    pub fn callee(&self, call: Op) -> Option<CallGraphNode> {
        self.call_site(call).map(|site| site.callee)
    }

    /// The callable a call op calls, when it resolves to one nested in the root.
    pub fn resolved_callee(&self, call: Op) -> Option<Op> {
        self.callee(call).and_then(|node| self.callable(node))
    }

    /// The strongly connected components, in post-order: a callee's component comes before the
    /// components of its callers (within a component, in IR order).
    pub fn components(&self) -> &[Vec<CallGraphNode>] {
        &self.components
    }

    /// The component of a node, as an index into [`components`](Self::components).
    pub fn component(&self, node: CallGraphNode) -> usize {
        self.component_of[node.index()] as usize
    }

    /// Whether a node is part of a recursion: its component has several nodes, or it calls itself.
    pub fn is_recursive(&self, node: CallGraphNode) -> bool {
        self.recursive[self.component(node)]
    }

    /// Whether any callable is recursive.
    pub fn has_recursion(&self) -> bool {
        self.recursive.iter().any(|&r| r)
    }

    /// Tarjan's algorithm with an explicit stack (a chain of 10,000 calls must not overflow).
    fn compute_components(&mut self) {
        const UNVISITED: u32 = u32::MAX;
        let count = self.nodes.len();
        let mut index = vec![UNVISITED; count];
        let mut low = vec![0u32; count];
        let mut on_stack = vec![false; count];
        let mut stack: Vec<u32> = Vec::new();
        let mut next_index = 0u32;
        self.component_of = vec![0; count];
        // Frames: (node, position in its list of calls).
        let mut frames: Vec<(u32, usize)> = Vec::new();
        for start in 0..count as u32 {
            if index[start as usize] != UNVISITED {
                continue;
            }
            frames.push((start, 0));
            index[start as usize] = next_index;
            low[start as usize] = next_index;
            next_index += 1;
            stack.push(start);
            on_stack[start as usize] = true;
            while let Some(&mut (node, ref mut position)) = frames.last_mut() {
                let calls = &self.nodes[node as usize].calls;
                if let Some(&site) = calls.get(*position) {
                    *position += 1;
                    let callee = self.sites[site as usize].callee.0;
                    if index[callee as usize] == UNVISITED {
                        index[callee as usize] = next_index;
                        low[callee as usize] = next_index;
                        next_index += 1;
                        stack.push(callee);
                        on_stack[callee as usize] = true;
                        frames.push((callee, 0));
                    } else if on_stack[callee as usize] {
                        low[node as usize] = low[node as usize].min(index[callee as usize]);
                    }
                    continue;
                }
                frames.pop();
                if let Some(&(parent, _)) = frames.last() {
                    low[parent as usize] = low[parent as usize].min(low[node as usize]);
                }
                if low[node as usize] == index[node as usize] {
                    let mut component = Vec::new();
                    loop {
                        let member = stack.pop().expect("the component's root is on the stack");
                        on_stack[member as usize] = false;
                        self.component_of[member as usize] = self.components.len() as u32;
                        component.push(CallGraphNode(member));
                        if member == node {
                            break;
                        }
                    }
                    component.sort();
                    let recursive = component.len() > 1
                        || self.nodes[node as usize].calls.iter().any(|&s| self.sites[s as usize].callee.0 == node);
                    self.components.push(component);
                    self.recursive.push(recursive);
                }
            }
        }
    }
}

impl crate::pass::Analysis for CallGraph {
    fn compute(ctx: &Context, op: Op, _: &mut crate::pass::AnalysisManager) -> Self {
        CallGraph::new(ctx, op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{chain, ops_named, parse, tagged};

    const PROGRAM: &str = r#"
"t.func"() ({
  "t.call"() {callee = @a, tag = "main->a"} : () -> ()
  "t.call"() {callee = @missing, tag = "main->missing"} : () -> ()
  "t.call"() {callee = @decl, tag = "main->decl"} : () -> ()
  "t.call"() {callee = @leaf} : () -> ()
  "t.return"() : () -> ()
}) {sym_name = "main"} : () -> ()
"t.func"() ({
  "t.call"() {callee = @b} : () -> ()
  "t.return"() : () -> ()
}) {sym_name = "a"} : () -> ()
"t.func"() ({
  "t.call"() {callee = @a} : () -> ()
  "t.call"() {callee = @leaf} : () -> ()
  "t.return"() : () -> ()
}) {sym_name = "b"} : () -> ()
"t.func"() ({
  "t.call"() {callee = @self} : () -> ()
  "t.return"() : () -> ()
}) {sym_name = "self"} : () -> ()
"t.func"() ({
  "t.return"() : () -> ()
}) {sym_name = "leaf"} : () -> ()
"t.func"() ({
  "t.return"() : () -> ()
}) {sym_name = "launched"} : () -> ()
"t.func"() ({
}) {sym_name = "decl"} : () -> ()
"t.launch"() {kernel = @launched} : () -> ()
"#;

    fn node(ctx: &Context, graph: &CallGraph, module: Op, name: &str) -> CallGraphNode {
        let op = ops_named(ctx, module, "t.func")
            .into_iter()
            .find(|&f| crate::verifier::symbol_name(ctx, f) == Some(name))
            .unwrap();
        graph.node(op).unwrap()
    }

    #[test]
    fn calls_resolve_through_interfaces_and_unresolved_ones_go_to_external() {
        let (ctx, module) = parse(PROGRAM);
        let graph = CallGraph::new(&ctx, module);
        let [main, a, decl, leaf] = ["main", "a", "decl", "leaf"].map(|n| node(&ctx, &graph, module, n));
        assert_eq!(graph.callee(tagged(&ctx, module, "main->a")), Some(a));
        assert_eq!(graph.callee(tagged(&ctx, module, "main->missing")), Some(CallGraph::EXTERNAL));
        assert_eq!(graph.callee(tagged(&ctx, module, "main->decl")), Some(decl));
        assert_eq!(graph.body(decl), None, "a declaration has no body");
        assert_eq!(graph.calls(main).count(), 4);
        assert_eq!(graph.callers(leaf).count(), 2);
        assert!(graph.callers(leaf).all(|site| site.callee == leaf));
        assert_eq!(graph.callers(CallGraph::EXTERNAL).count(), 1);
        assert_eq!(graph.calls(CallGraph::EXTERNAL).count(), 0, "external calls nothing: no false cycles");
    }

    #[test]
    fn components_come_callees_first_and_recursion_is_found() {
        let (ctx, module) = parse(PROGRAM);
        let graph = CallGraph::new(&ctx, module);
        let [main, a, b, itself, leaf] = ["main", "a", "b", "self", "leaf"].map(|n| node(&ctx, &graph, module, n));
        assert_eq!(graph.components()[graph.component(a)], [a, b]);
        assert!(graph.is_recursive(a) && graph.is_recursive(b) && graph.is_recursive(itself));
        assert!(!graph.is_recursive(main) && !graph.is_recursive(leaf));
        assert!(graph.component(leaf) < graph.component(a), "a callee before its callers");
        assert!(graph.component(a) < graph.component(main));
        assert!(graph.component(CallGraph::EXTERNAL) < graph.component(main));
        assert!(graph.has_recursion());
    }

    #[test]
    fn callers_are_known_only_for_functions_nothing_else_names() {
        let (ctx, module) = parse(PROGRAM);
        let graph = CallGraph::new(&ctx, module);
        let [main, a, launched] = ["main", "a", "launched"].map(|n| node(&ctx, &graph, module, n));
        assert!(graph.callers_known(a));
        assert!(!graph.callers_known(main), "an entry is called from outside");
        assert!(!graph.callers_known(launched), "an attribute other than a callee names it");
        assert!(!graph.callers_known(CallGraph::EXTERNAL));
    }

    #[test]
    fn a_chain_of_ten_thousand_functions_is_linear() {
        let (ctx, module) = chain(10_000);
        let start = std::time::Instant::now();
        let graph = CallGraph::new(&ctx, module);
        let elapsed = start.elapsed();
        assert_eq!(graph.call_sites().len(), 9_999);
        assert_eq!(graph.components().len(), 10_001);
        assert!(!graph.has_recursion());
        let functions = ops_named(&ctx, module, "t.func");
        let (first, last) = (graph.node(functions[0]).unwrap(), graph.node(functions[9_999]).unwrap());
        assert!(graph.component(last) < graph.component(first));
        assert!(graph.callers_known(last) && !graph.callers_known(first));
        assert!(elapsed.as_secs_f64() < 1.0, "10,000 functions took {elapsed:?}");
    }
}
