//! The programs `hat-bench aliases` resolves: k buffers rotated through a loop's iter_args,
//! the same rotation chosen by chains of selects on the induction variable modulo k, and a ping-pong loop whose body has n dispatches, each naming its buffers through its own
//! `arith.select`s on the iteration's parity, the spellings taken in turn.

/// A kernel reading its first buffer and writing its second.
const KERNEL: &str = "kernel.func @step(%src: memref<64xi32>, %dst: memref<64xi32>) workgroup(64) {
  %i = kernel.global_id x
  %v = buffer.load %src[%i] : memref<64xi32>
  %one = arith.constant 1 : i32
  %r = arith.addi %v, %one : i32
  buffer.store %r, %dst[%i] : memref<64xi32>
  kernel.return
}
";

const M: &str = "memref<64xi32>";

/// k buffers (the caller's and k - 1 born here) carried through a loop of `%count`
/// iterations, rotated by one each iteration (`yield %x1, ..., %x0`); each iteration reads
/// the first and writes the second; the newest is copied into the caller's after the loop.
pub fn rotation(k: usize) -> String {
    let mut out = String::from(KERNEL);
    out.push_str(&format!("compute.func @main(%grid: {M}, %count: index) {{\n"));
    out.push_str(
        "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c64 = arith.constant 64 : index\n",
    );
    for j in 1..k {
        out.push_str(&format!("  %s{j} = buffer.alloc() : {M}\n"));
    }
    let inits: Vec<String> =
        (0..k).map(|j| format!("%x{j} = {}", if j == 0 { "%grid".to_string() } else { format!("%s{j}") })).collect();
    let types = vec![M; k].join(", ");
    out.push_str(&format!(
        "  %r:{k} = scf.for %g = %c0 to %count step %c1 iter_args({}) -> ({types}) {{\n",
        inits.join(", ")
    ));
    out.push_str(&format!("    compute.dispatch @step[%c64](%x0, %x1) : ({M}, {M})\n"));
    let rotated: Vec<String> = (0..k).map(|j| format!("%x{}", (j + 1) % k)).collect();
    out.push_str(&format!("    scf.yield {} : {types}\n  }}\n", rotated.join(", ")));
    out.push_str(&format!("  buffer.copy %r#0, %grid : {M}\n"));
    for j in 1..k {
        out.push_str(&format!("  buffer.dealloc %s{j} : {M}\n"));
    }
    out.push_str("  compute.return\n}\n");
    out
}

/// A ping-pong loop whose body has `dispatches` dispatches between the caller's grid and a
/// scratch grid, each choosing its source and destination by its own parity test of the
/// induction variable (six spellings in turn).
pub fn ping_pong_body(dispatches: usize) -> String {
    let mut out = String::from(KERNEL);
    out.push_str(&format!("compute.func @main(%grid: {M}, %count: index) {{\n"));
    out.push_str(
        "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c2 = arith.constant 2 : index\n  %c64 = arith.constant 64 : index\n",
    );
    out.push_str(&format!("  %scratch = buffer.alloc() : {M}\n"));
    out.push_str("  scf.for %g = %c0 to %count step %c1 {\n");
    for d in 0..dispatches {
        // `%e{d}` is true when the dispatch reads the grid: on even iterations when d is even.
        let parity = match d % 6 {
            0 => format!("    %p{d} = arith.remsi %g, %c2 : index\n    %e{d} = arith.cmpi eq, %p{d}, %c0 : index\n"),
            1 => format!("    %p{d} = arith.andi %g, %c1 : index\n    %e{d} = arith.cmpi eq, %p{d}, %c1 : index\n"),
            2 => format!(
                "    %h{d} = arith.addi %g, %c1 : index\n    %p{d} = arith.remui %h{d}, %c2 : index\n    %e{d} = arith.cmpi eq, %p{d}, %c1 : index\n"
            ),
            3 => format!("    %p{d} = arith.remui %g, %c2 : index\n    %e{d} = arith.cmpi ne, %c0, %p{d} : index\n"),
            4 => format!("    %p{d} = arith.remsi %g, %c2 : index\n    %e{d} = arith.cmpi eq, %c0, %p{d} : index\n"),
            _ => format!("    %p{d} = arith.andi %g, %c1 : index\n    %e{d} = arith.cmpi ne, %p{d}, %c0 : index\n"),
        };
        out.push_str(&parity);
        out.push_str(&format!(
            "    %a{d} = arith.select %e{d}, %grid, %scratch : {M}\n    %b{d} = arith.select %e{d}, %scratch, %grid : {M}\n"
        ));
        out.push_str(&format!("    compute.dispatch @step[%c64](%a{d}, %b{d}) : ({M}, {M})\n"));
    }
    out.push_str("  }\n");
    out.push_str(&format!("  buffer.dealloc %scratch : {M}\n  compute.return\n}}\n"));
    out
}

/// k buffers (the caller's and k - 1 born here) rotated without carried values: iteration g
/// reads buffer `g mod k` and writes buffer `(g + 1) mod k`, each chosen by a chain of
/// `arith.select`s on `(g [+ 1]) % k == j`.
pub fn rotation_by_selects(k: usize) -> String {
    let buffer = |j: usize| if j == 0 { "%grid".to_string() } else { format!("%s{j}") };
    let mut out = String::from(KERNEL);
    out.push_str(&format!("compute.func @main(%grid: {M}, %count: index) {{\n"));
    out.push_str(&format!(
        "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %ck = arith.constant {k} : index\n  %c64 = arith.constant 64 : index\n"
    ));
    for j in 0..k {
        out.push_str(&format!("  %j{j} = arith.constant {j} : index\n"));
    }
    for j in 1..k {
        out.push_str(&format!("  %s{j} = buffer.alloc() : {M}\n"));
    }
    out.push_str("  scf.for %g = %c0 to %count step %c1 {\n");
    out.push_str("    %r = arith.remsi %g, %ck : index\n    %h = arith.addi %g, %c1 : index\n    %n = arith.remui %h, %ck : index\n");
    for (name, residue) in [("src", "%r"), ("dst", "%n")] {
        // select(res == 0, b0, select(res == 1, b1, ... b(k-1)))
        let mut chosen = buffer(k - 1);
        for j in (0..k - 1).rev() {
            out.push_str(&format!("    %{name}_is{j} = arith.cmpi eq, {residue}, %j{j} : index\n"));
            out.push_str(&format!("    %{name}{j} = arith.select %{name}_is{j}, {}, {chosen} : {M}\n", buffer(j)));
            chosen = format!("%{name}{j}");
        }
        out.push_str(
            &format!("    %{name} = arith.select %c1_true, {chosen}, {chosen} : {M}\n").replace("%c1_true", "%true"),
        );
    }
    out.push_str(&format!("    compute.dispatch @step[%c64](%src, %dst) : ({M}, {M})\n  }}\n"));
    for j in 1..k {
        out.push_str(&format!("  buffer.dealloc %s{j} : {M}\n"));
    }
    out.push_str("  compute.return\n}\n");
    out.replace(
        "  %c0 = arith.constant 0 : index\n",
        "  %c0 = arith.constant 0 : index\n  %true = arith.constant true\n",
    )
}
