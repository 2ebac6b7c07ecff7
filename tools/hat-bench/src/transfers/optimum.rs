//! The optimum transfer plan of every scenario, as a function of its trip count, and the text of
//! its header's `optimal:` line that the function encodes.
//!
//! The functions are a table keyed by file, not parsed from the headers' prose: they are copied
//! from the scenario test (`tests/scenario_transfers.rs`, which checks the default pipeline
//! against them), and the report prints each header's own text beside them so that a reader can
//! see both agree. A file that is not in the table is reported without an optimum.

/// The bytes of an optimal plan: (to the device, from the device).
pub type Bytes = (u64, u64);

/// One scenario's entry.
pub struct Optimum {
    /// The file name in `examples/`.
    pub file: &'static str,
    /// The entry's scalar parameter that is a trip count, if any.
    pub count: Option<&'static str>,
    /// The optimum for a trip count (0 for a scenario without one).
    pub bytes: fn(i64) -> Bytes,
}

const fn fixed(file: &'static str, bytes: fn(i64) -> Bytes) -> Optimum {
    Optimum { file, count: None, bytes }
}

/// Every scenario of `examples/`.
pub const OPTIMA: &[Optimum] = &[
    fixed("01-squares.hat", |_| (256, 256)),
    fixed("02-fill.hat", |_| (0, 256)),
    fixed("02b-fill-masked.hat", |_| (512, 256)),
    Optimum { file: "03-repeat.hat", count: Some("count"), bytes: |c| if c == 0 { (0, 0) } else { (256, 256) } },
    Optimum {
        file: "04-peek.hat",
        count: Some("count"),
        bytes: |c| if c == 0 { (0, 0) } else { (256, 252 + 4 * c as u64) },
    },
    fixed("05-host-edit.hat", |_| (260, 256)),
    Optimum { file: "06-life.hat", count: Some("count"), bytes: |c| if c == 0 { (0, 0) } else { (1024, 1024) } },
    Optimum {
        file: "07-life-display.hat",
        count: Some("count"),
        bytes: |c| if c == 0 { (0, 0) } else { (1024, 1024 * c as u64) },
    },
    fixed("08-mandelbrot.hat", |_| (12, 16384)),
    fixed("09-kernel-chain.hat", |_| (16384, 16384)),
    fixed("10-sobel.hat", |_| (16384, 16384)),
    Optimum { file: "11-morphology.hat", count: Some("rounds"), bytes: |_| (16384, 16384) },
    fixed("12-pooling.hat", |_| (16384, 1024)),
    fixed("13-in-place.hat", |_| (16384, 16384)),
    fixed("14-helpers.hat", |_| (512, 256)),
    fixed("15-alias.hat", |_| (512, 512)),
    fixed("16-races.hat", |_| (260, 520)),
    fixed("17-residency.hat", |_| (768, 256)),
    Optimum {
        file: "18-conditional-escape.hat",
        count: Some("count"),
        bytes: |c| {
            if c == 0 {
                return (0, 0);
            }
            let checkpoints = (c as u64).div_ceil(10);
            let last = if (c - 1) % 10 == 0 { 0 } else { 256 };
            (256, 256 * checkpoints + last)
        },
    },
    fixed("19-separable-blur.hat", |_| (65536, 65536)),
];

/// The entry of `file`, if the table has one.
pub fn optimum_of(file: &str) -> Option<&'static Optimum> {
    OPTIMA.iter().find(|o| o.file == file)
}

/// The `optimal:` statement of a scenario's header comment: its first line and the lines that
/// continue it (indented deeper than the word `optimal:`), without the `//` and with the
/// indentation after `optimal:` kept relative to it. `None` if the header has none.
pub fn header_optimal(source: &str) -> Option<String> {
    let comment: Vec<&str> =
        source.lines().take_while(|l| l.trim_start().starts_with("//")).map(|l| l.trim_start()[2..].as_ref()).collect();
    let start = comment.iter().position(|l| l.trim_start().starts_with("optimal:"))?;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let base = indent(comment[start]);
    let mut lines = vec![comment[start].trim_start().to_string()];
    for line in &comment[start + 1..] {
        if line.trim().is_empty() || indent(line) <= base {
            break;
        }
        lines.push(format!("{}{}", " ".repeat(indent(line) - base), line.trim_start()));
    }
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_optimal_statement_and_its_continuations() {
        let source = "// Scenario.\n//\n// PLAN\n//   optimal: count >= 1: in 1,\n//                        out 2;\n//            count = 0: nothing\n//   count >= 1:\n//     more\n\nkernel.func";
        assert_eq!(
            header_optimal(source).as_deref(),
            Some("optimal: count >= 1: in 1,\n                     out 2;\n         count = 0: nothing")
        );
        assert_eq!(header_optimal("// no plan\nkernel.func @k()"), None);
        assert_eq!(header_optimal("//   optimal: x\n//\n//     not a continuation").as_deref(), Some("optimal: x"));
    }

    #[test]
    fn every_example_has_an_optimum_and_a_header_statement() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .expect("examples/")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| name.ends_with(".hat"))
            .collect();
        files.sort();
        assert_eq!(files.len(), OPTIMA.len(), "{files:?}");
        for file in &files {
            assert!(optimum_of(file).is_some(), "{file} has no optimum in the table");
            let text = std::fs::read_to_string(dir.join(file)).expect("readable");
            assert!(header_optimal(&text).is_some(), "{file}'s header states no optimum");
        }
    }
}
