//! `--view-op-graph`: the IR under an op as a Graphviz DOT digraph, after MLIR's pass of that name.
//!
//! Every op is a node labelled with its name, its result types and its attributes (so a constant
//! shows its value), filled with its dialect's colour (dialects take the colours of a fixed
//! palette in the order they first appear). An op with regions is instead a
//! cluster carrying that label, holding an invisible anchor node (the endpoint of its edges, cut at
//! the cluster's border) and one dashed cluster per region; a block gets a cluster of its own
//! (`^bbN`) when its region has several blocks or a branch targets it. Block arguments are ellipse
//! nodes. Solid edges carry data from the op (or block argument) defining a value to each user,
//! labelled with the operand index when the user has several operands and with the result index
//! at the tail when the definer has several results; dashed edges go from a terminator to its
//! successor blocks. Values defined outside the graph get a dashed node of their own.
//!
//! Node and cluster numbers follow a pre-order walk of the IR, so the text depends only on the IR.
//! Every node is declared before the edges, which all come last at the top level.

use hat_ir::printer::{attribute_to_string, type_to_string};
use hat_ir::{Block, Context, Op, Region, Value, ValueDef};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// Attribute values longer than this many characters are cut, as MLIR's `max-label-len` does.
const MAX_ATTRIBUTE_LENGTH: usize = 40;

/// Fill colours, one per dialect in order of first appearance (then again from the start).
const PALETTE: [&str; 10] =
    ["#d9d9d9", "#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#ffff99", "#8dd3c7", "#bebada", "#fccde5"];

/// The DOT text of the IR under `root` (`root` included).
pub fn op_graph(ctx: &Context, root: Op) -> String {
    let mut graph = Graph::new(ctx);
    graph.out.push_str("digraph G {\n  compound = true;\n  fontname = \"monospace\";\n");
    graph.out.push_str("  node [shape = box, style = filled, fontname = \"monospace\"];\n");
    graph.emit_tree(root);
    graph.emit_edges();
    graph.out.push_str("}\n");
    graph.out
}

/// Where edges to or from an op or a block end: a node, inside a cluster whose border cuts them.
#[derive(Clone)]
struct Endpoint {
    node: String,
    cluster: Option<String>,
}

/// An edge waiting for every node to be declared.
enum PendingEdge {
    /// Operand `index` of `user` is `value`.
    Data { value: Value, user: Op, index: usize },
    /// `terminator` branches to `block`.
    Control { terminator: Op, block: Block },
}

/// What is left to emit, innermost last.
enum Work {
    Op(Op),
    Region { region: Region, depth: usize },
    Block { block: Block, own_cluster: bool, depth: usize },
    Close { depth: usize },
}

struct Graph<'a> {
    ctx: &'a Context,
    out: String,
    next_number: usize,
    ops: HashMap<Op, Endpoint>,
    blocks: HashMap<Block, Endpoint>,
    arguments: HashMap<Value, String>,
    edges: Vec<PendingEdge>,
    successor_targets: HashSet<Block>,
    /// Dialects in order of first appearance: the index picks the colour.
    dialects: Vec<String>,
}

impl<'a> Graph<'a> {
    fn new(ctx: &'a Context) -> Self {
        Graph {
            ctx,
            out: String::new(),
            next_number: 0,
            ops: HashMap::new(),
            blocks: HashMap::new(),
            arguments: HashMap::new(),
            edges: Vec::new(),
            successor_targets: HashSet::new(),
            dialects: Vec::new(),
        }
    }

    fn number(&mut self) -> usize {
        self.next_number += 1;
        self.next_number - 1
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..=depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Declares every node and cluster under `root`, iteratively: deep nesting is fine.
    fn emit_tree(&mut self, root: Op) {
        for op in self.ctx.walk(root) {
            self.successor_targets.extend(self.ctx.successors(op).iter().copied());
        }
        // Ops are emitted by their enclosing block; `depth` is the indentation inside `digraph`.
        let mut stack = vec![Work::Op(root)];
        let mut depths: HashMap<Op, usize> = HashMap::from([(root, 0)]);
        while let Some(work) = stack.pop() {
            match work {
                Work::Op(op) => {
                    let depth = depths[&op];
                    self.emit_op(op, depth, &mut stack);
                }
                Work::Region { region, depth } => {
                    let number = self.number();
                    self.line(depth, &format!("subgraph cluster_{number} {{"));
                    self.line(depth + 1, "label = \"\";");
                    self.line(depth + 1, "style = dashed;");
                    stack.push(Work::Close { depth });
                    let blocks = self.ctx.region_blocks(region);
                    for &block in blocks.iter().rev() {
                        let own_cluster = blocks.len() > 1 || self.successor_targets.contains(&block);
                        stack.push(Work::Block { block, own_cluster, depth: depth + 1 });
                    }
                }
                Work::Block { block, own_cluster, depth } => {
                    let mut inner = depth;
                    if own_cluster {
                        let number = self.number();
                        let cluster = format!("cluster_{number}");
                        let anchor = format!("block{number}");
                        let position = self.block_position(block);
                        self.line(depth, &format!("subgraph {cluster} {{"));
                        self.line(depth + 1, &format!("label = \"^bb{position}\";"));
                        self.line(depth + 1, &format!("{anchor} [label = \"\", shape = point, style = invis];"));
                        self.blocks.insert(block, Endpoint { node: anchor, cluster: Some(cluster) });
                        stack.push(Work::Close { depth });
                        inner = depth + 1;
                    }
                    for (index, &argument) in self.ctx.block_arguments(block).iter().enumerate() {
                        let node = format!("arg{}", self.number());
                        let ty = type_to_string(self.ctx, self.ctx.value_type(argument));
                        let label = escape(&format!("arg{index} : {ty}"));
                        self.line(inner, &format!("{node} [label = \"{label}\", shape = ellipse, style = solid];"));
                        self.arguments.insert(argument, node);
                    }
                    let ops: Vec<Op> = self.ctx.block_ops(block).collect();
                    for &op in ops.iter().rev() {
                        depths.insert(op, inner);
                        stack.push(Work::Op(op));
                    }
                }
                Work::Close { depth } => self.line(depth, "}"),
            }
        }
    }

    /// Declares `op` (a node, or a cluster if it has regions) and queues its regions and edges.
    fn emit_op(&mut self, op: Op, depth: usize, stack: &mut Vec<Work>) {
        let number = self.number();
        let node = format!("op{number}");
        let label = escape(&self.op_label(op));
        let color = self.dialect_color(op);
        let regions = self.ctx.regions(op);
        if regions.is_empty() {
            self.line(depth, &format!("{node} [label = \"{label}\", fillcolor = \"{color}\"];"));
            self.ops.insert(op, Endpoint { node, cluster: None });
        } else {
            let cluster = format!("cluster_{node}");
            self.line(depth, &format!("subgraph {cluster} {{"));
            self.line(depth + 1, &format!("label = \"{label}\";"));
            self.line(depth + 1, "style = filled;");
            self.line(depth + 1, &format!("fillcolor = \"{color}40\";"));
            self.line(depth + 1, &format!("{node} [label = \"\", shape = point, style = invis];"));
            self.ops.insert(op, Endpoint { node, cluster: Some(cluster) });
            stack.push(Work::Close { depth });
            for &region in regions.iter().rev() {
                stack.push(Work::Region { region, depth: depth + 1 });
            }
        }
        for (index, &value) in self.ctx.operands(op).iter().enumerate() {
            self.edges.push(PendingEdge::Data { value, user: op, index });
        }
        for &block in self.ctx.successors(op) {
            self.edges.push(PendingEdge::Control { terminator: op, block });
        }
    }

    /// `name : (result types)`, then one `name: value` line per attribute.
    fn op_label(&self, op: Op) -> String {
        let ctx = self.ctx;
        let mut label = ctx.name_str(op).to_string();
        if ctx.result_count(op) > 0 {
            let types: Vec<String> = ctx.results(op).map(|r| type_to_string(ctx, ctx.value_type(r))).collect();
            let _ = write!(label, " : ({})", types.join(", "));
        }
        for &(name, attribute) in ctx.attributes(op) {
            let _ = write!(label, "\n{}: {}", ctx.ident_str(name), shorten(attribute_to_string(ctx, attribute)));
        }
        label
    }

    /// The colour of the dialect of `op` (the text of its name before the first `.`).
    fn dialect_color(&mut self, op: Op) -> &'static str {
        let name = self.ctx.name_str(op);
        let dialect = name.split('.').next().unwrap_or(name);
        let index = match self.dialects.iter().position(|d| d == dialect) {
            Some(index) => index,
            None => {
                self.dialects.push(dialect.to_string());
                self.dialects.len() - 1
            }
        };
        PALETTE[index % PALETTE.len()]
    }

    fn block_position(&self, block: Block) -> usize {
        self.ctx
            .block_parent(block)
            .and_then(|region| self.ctx.region_blocks(region).iter().position(|&b| b == block))
            .unwrap_or(0)
    }

    /// The node a value comes from, declaring one for values defined outside the graph.
    fn source_of(&mut self, value: Value, outside: &mut Vec<String>) -> (Endpoint, Option<usize>) {
        match self.ctx.value_def(value) {
            ValueDef::Result { op, index } if self.ops.contains_key(&op) => {
                let several = self.ctx.result_count(op) > 1;
                (self.ops[&op].clone(), several.then_some(index as usize))
            }
            ValueDef::BlockArgument { .. } if self.arguments.contains_key(&value) => {
                (Endpoint { node: self.arguments[&value].clone(), cluster: None }, None)
            }
            _ => {
                let node = format!("value{}", self.number());
                let ty = type_to_string(self.ctx, self.ctx.value_type(value));
                let label = escape(&format!("defined outside : {ty}"));
                outside.push(format!("  {node} [label = \"{label}\", shape = ellipse, style = dashed];\n"));
                self.arguments.insert(value, node.clone());
                (Endpoint { node, cluster: None }, None)
            }
        }
    }

    /// Writes the edges, after every node has been declared.
    fn emit_edges(&mut self) {
        let mut outside = Vec::new();
        let mut lines = Vec::new();
        for edge in std::mem::take(&mut self.edges) {
            match edge {
                PendingEdge::Data { value, user, index } => {
                    let (from, result) = self.source_of(value, &mut outside);
                    let to = &self.ops[&user];
                    let mut attributes = Vec::new();
                    if self.ctx.operands(user).len() > 1 {
                        attributes.push(format!("label = \"{index}\""));
                    }
                    if let Some(result) = result {
                        attributes.push(format!("taillabel = \"#{result}\""));
                    }
                    lines.push(edge_line(&from, to, attributes));
                }
                PendingEdge::Control { terminator, block } => {
                    let from = &self.ops[&terminator];
                    // A successor outside the graph has no node: there is nothing to point at.
                    if let Some(to) = self.blocks.get(&block) {
                        lines.push(edge_line(from, to, vec!["style = dashed".to_string()]));
                    }
                }
            }
        }
        for line in outside.into_iter().chain(lines) {
            self.out.push_str(&line);
        }
    }
}

fn edge_line(from: &Endpoint, to: &Endpoint, mut attributes: Vec<String>) -> String {
    if let Some(cluster) = &from.cluster {
        attributes.push(format!("ltail = {cluster}"));
    }
    if let Some(cluster) = &to.cluster {
        attributes.push(format!("lhead = {cluster}"));
    }
    if attributes.is_empty() {
        format!("  {} -> {};\n", from.node, to.node)
    } else {
        format!("  {} -> {} [{}];\n", from.node, to.node, attributes.join(", "))
    }
}

fn shorten(text: String) -> String {
    if text.chars().count() <= MAX_ATTRIBUTE_LENGTH {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_ATTRIBUTE_LENGTH - 3).collect();
    cut.push_str("...");
    cut
}

/// Escapes text for a double-quoted DOT string; line breaks become `\n` (centred lines).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hat_ir::parse_source;
    use std::collections::BTreeSet;

    fn graph_of(text: &str, allow_unregistered: bool) -> String {
        let mut ctx = hat_dialects::context();
        ctx.allow_unregistered = allow_unregistered;
        let module = match parse_source(&mut ctx, "graph.hat", text) {
            Ok(module) => module,
            Err(error) => panic!("{}", hat_ir::diagnostics::render(&ctx.sources, &[error.into()])),
        };
        op_graph(&ctx, module)
    }

    /// The DOT statements outside quoted strings, for structural checks.
    fn unquoted(dot: &str) -> String {
        let mut out = String::new();
        let mut in_string = false;
        let mut escaped = false;
        for c in dot.chars() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_string = false;
                    out.push('"');
                }
                continue;
            }
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
        assert!(!in_string, "unterminated string in\n{dot}");
        out
    }

    /// Checks what Graphviz would reject or draw wrongly: unbalanced braces, edges to undeclared
    /// nodes, duplicate node or cluster names.
    fn assert_well_formed(dot: &str) {
        let text = unquoted(dot);
        assert!(text.starts_with("digraph G {"), "{dot}");
        let mut depth = 0i64;
        for c in text.chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    assert!(depth >= 0, "unbalanced braces in\n{dot}");
                }
                _ => {}
            }
        }
        assert_eq!(depth, 0, "unbalanced braces in\n{dot}");
        let mut nodes = BTreeSet::new();
        let mut clusters = BTreeSet::new();
        let mut edges = Vec::new();
        for line in text.lines().map(str::trim) {
            if let Some((from, rest)) = line.split_once(" -> ") {
                let to = rest.split([' ', ';']).next().unwrap();
                edges.push((from.to_string(), to.to_string(), line.to_string()));
            } else if let Some(name) = line.strip_prefix("subgraph ") {
                let name = name.trim_end_matches(" {");
                assert!(clusters.insert(name.to_string()), "cluster {name} declared twice");
            } else if let Some((name, _)) = line.split_once(" [") {
                if name != "node" {
                    assert!(nodes.insert(name.to_string()), "node {name} declared twice");
                }
            }
        }
        for (from, to, line) in &edges {
            assert!(nodes.contains(from), "edge from undeclared {from}: {line}");
            assert!(nodes.contains(to), "edge to undeclared {to}: {line}");
            for key in ["ltail", "lhead"] {
                if let Some(rest) = line.split(&format!("{key} = ")).nth(1) {
                    let cluster = rest.split([',', ']']).next().unwrap();
                    assert!(clusters.contains(cluster), "{key} names undeclared {cluster}: {line}");
                }
            }
        }
    }

    /// Runs Graphviz's `dot` on the text when it is installed.
    fn check_with_graphviz(dot: &str) {
        use std::io::Write as _;
        use std::process::{Command, Stdio};
        let Ok(mut child) = Command::new("dot")
            .arg("-Tcanon")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        else {
            eprintln!("graphviz `dot` is not installed: skipping its check");
            return;
        };
        child.stdin.take().unwrap().write_all(dot.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success() && stderr.trim().is_empty(), "dot rejected the graph: {stderr}\n{dot}");
    }

    const PROGRAM: &str = r#"
kernel.func @square(%data: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %n = buffer.dim %data, 0 : memref<64xi32>
  %in_range = arith.cmpi ult, %i, %n : index
  scf.if %in_range {
    %v = buffer.load %data[%i] : memref<64xi32>
    %sq = arith.muli %v, %v : i32
    buffer.store %sq, %data[%i] : memref<64xi32>
  }
  kernel.return
}
compute.host_func @update(readwrite memref<64xi32>, f32) -> (i32, f32)
compute.func @main(%data: memref<64xi32>, %x: f32) -> f32 {
  %c64 = arith.constant 64 : index
  compute.dispatch @square[%c64](%data) : (memref<64xi32>)
  %r:2 = compute.call @update(%data, %x) : (memref<64xi32>, f32) -> (i32, f32)
  %s = arith.addf %r#1, %x : f32
  compute.return %s : f32
}
"#;

    #[test]
    fn the_graph_is_well_formed_dot() {
        let dot = graph_of(PROGRAM, false);
        assert_well_formed(&dot);
        check_with_graphviz(&dot);
    }

    #[test]
    fn the_graph_is_deterministic() {
        assert_eq!(graph_of(PROGRAM, false), graph_of(PROGRAM, false));
    }

    #[test]
    fn constants_show_their_value_and_results_their_types() {
        let dot = graph_of(PROGRAM, false);
        assert!(dot.contains("[label = \"arith.constant : (index)\\nvalue: 64 : index\""), "{dot}");
        assert!(dot.contains("label = \"compute.call : (i32, f32)\\ncallee: @update\""), "{dot}");
    }

    #[test]
    fn ops_with_regions_are_clusters_with_a_cluster_per_region() {
        let dot = graph_of(PROGRAM, false);
        let text = unquoted(&dot);
        // The module, two functions and scf.if; scf.if has two regions (the else region empty).
        assert_eq!(text.matches("subgraph cluster_op").count(), 4, "{dot}");
        assert_eq!(text.matches("style = dashed;").count(), 5, "{dot}");
    }

    #[test]
    fn edges_carry_operand_and_result_indices() {
        let dot = graph_of(PROGRAM, false);
        // %r#1 (second result of the call) is operand 0 of the addf; %x is operand 1.
        let call = dot.lines().find(|l| l.contains("compute.call")).unwrap().trim().split(' ').next().unwrap();
        assert!(dot.contains(&format!("{call} -> ")), "{dot}");
        assert!(dot.lines().any(|l| l.starts_with(&format!("  {call} -> "))
            && l.contains("label = \"0\"")
            && l.contains("taillabel = \"#1\"")));
        // A single-operand user gets no label: scf.if's condition (its anchor is in a cluster).
        assert!(dot.lines().any(|l| l.contains(" -> ") && l.contains("lhead = cluster_op") && !l.contains("label")));
    }

    #[test]
    fn blocks_of_multi_block_regions_get_clusters_and_branch_edges() {
        let text = r#"
"test.graph"() ({
^bb0(%a: i32):
  "test.br"(%a)[^bb1] : (i32) -> ()
^bb1:
  "test.use"(%a, %a) : (i32, i32) -> ()
  "test.return"() : () -> ()
}) : () -> ()
"#;
        let dot = graph_of(text, true);
        assert_well_formed(&dot);
        check_with_graphviz(&dot);
        assert!(dot.contains("label = \"^bb0\";") && dot.contains("label = \"^bb1\";"), "{dot}");
        assert!(dot.lines().any(|l| l.contains(" -> block") && l.contains("style = dashed")), "{dot}");
        assert!(dot.contains("[label = \"arg0 : i32\", shape = ellipse"), "{dot}");
    }

    #[test]
    fn values_defined_outside_the_root_get_their_own_nodes() {
        let mut ctx = hat_dialects::context();
        let module = parse_source(&mut ctx, "graph.hat", PROGRAM).unwrap();
        let main = ctx.walk(module).into_iter().find(|&op| ctx.name_str(op) == "arith.addf").unwrap();
        let dot = op_graph(&ctx, main);
        assert_well_formed(&dot);
        assert_eq!(dot.matches("defined outside : ").count(), 2, "{dot}");
    }

    #[test]
    fn labels_are_escaped() {
        let dot = graph_of(r#""test.op"() {text = "a \"quoted\" \\ word"} : () -> ()"#, true);
        assert_well_formed(&dot);
        check_with_graphviz(&dot);
        assert!(dot.contains(r#"text: \"a \\\"quoted\\\" \\\\ word\""#), "{dot}");
    }

    #[test]
    fn the_format_of_a_small_graph() {
        let dot = graph_of(
            "compute.func @f(%a: i32) -> i32 {\n  %b = arith.addi %a, %a : i32\n  compute.return %b : i32\n}\n",
            false,
        );
        let expected = r##"digraph G {
  compound = true;
  fontname = "monospace";
  node [shape = box, style = filled, fontname = "monospace"];
  subgraph cluster_op0 {
    label = "builtin.module";
    style = filled;
    fillcolor = "#d9d9d940";
    op0 [label = "", shape = point, style = invis];
    subgraph cluster_1 {
      label = "";
      style = dashed;
      subgraph cluster_op2 {
        label = "compute.func\nfunction_type: (i32) -> i32\nsym_name: \"f\"";
        style = filled;
        fillcolor = "#a6cee340";
        op2 [label = "", shape = point, style = invis];
        subgraph cluster_3 {
          label = "";
          style = dashed;
          arg4 [label = "arg0 : i32", shape = ellipse, style = solid];
          op5 [label = "arith.addi : (i32)", fillcolor = "#b2df8a"];
          op6 [label = "compute.return", fillcolor = "#a6cee3"];
        }
      }
    }
  }
  arg4 -> op5 [label = "0"];
  arg4 -> op5 [label = "1"];
  op5 -> op6;
}
"##;
        assert_eq!(dot, expected);
    }
}
