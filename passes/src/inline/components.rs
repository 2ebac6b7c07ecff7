//! The strongly connected components of the call graph (Tarjan's algorithm, iterative: a chain of
//! thousands of calls needs no deep stack): the order in which `inline` visits functions, and
//! which functions are recursive.

/// The strongly connected components of a graph (Tarjan's algorithm, iterative): the nodes in
/// an order where every node comes after the nodes it reaches (outside its own component), and,
/// per node, whether it can reach itself.
pub(super) fn components(edges: &[Vec<usize>]) -> (Vec<usize>, Vec<bool>) {
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

    #[test]
    fn components_order_callees_first_and_find_cycles() {
        // 0 → 1 → 2, 2 → 1 (cycle 1-2), 3 → 3 (self), 4 alone.
        let (order, recursive) = components(&[vec![1], vec![2], vec![1], vec![3], vec![]]);
        let at = |n: usize| order.iter().position(|&x| x == n).unwrap();
        assert!(at(1) < at(0) && at(2) < at(0));
        assert_eq!(recursive, vec![false, true, true, true, false]);
    }
}
