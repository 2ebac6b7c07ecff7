//! The figures `hat-bench gpu` puts beside hat's: the JSON lines of the hand-written Vulkan
//! probe (`vkprobe`), of its CUDA script (`cuda_ref.py`: PyTorch and CuPy) and of the IREE peer
//! (`run_peer.py`), read from files given on the command line.
//!
//! Each reference says where its lines come from: `measured` when the caller says they were
//! produced by the same device command (on the same machine, just before), `recorded` otherwise
//! (a file of an earlier day). A figure that a file lacks is `null`, never guessed.

use serde_json::{json, Value};
use std::path::Path;

/// The lines of one reference file.
#[derive(Clone, Debug, Default)]
pub struct Reference {
    /// The file, as given.
    pub file: String,
    /// Whether the lines were measured in the same command (else recorded earlier).
    pub measured: bool,
    /// Its JSON lines (lines that do not parse are skipped).
    pub lines: Vec<Value>,
}

impl Reference {
    /// Reads `path` (one JSON object per line).
    pub fn read(path: &Path, measured: bool) -> Result<Reference, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let lines = text.lines().filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok()).collect();
        Ok(Reference { file: path.display().to_string(), measured, lines })
    }

    /// `measured` or `recorded`.
    pub fn origin(&self) -> &'static str {
        if self.measured {
            "measured in the same command"
        } else {
            "recorded earlier (not measured in this command)"
        }
    }

    /// The first line whose fields equal every `(key, value)` of `wanted`.
    pub fn find(&self, wanted: &[(&str, Value)]) -> Option<&Value> {
        self.lines.iter().find(|line| wanted.iter().all(|(key, value)| line.get(*key) == Some(value)))
    }

    /// The number `field` of the first line matching `wanted`.
    pub fn number(&self, wanted: &[(&str, Value)], field: &str) -> Option<f64> {
        self.find(wanted).and_then(|line| line.get(field)).and_then(Value::as_f64)
    }

    /// The device the lines name, if any.
    pub fn device(&self) -> Option<String> {
        self.lines.iter().find_map(|line| line.get("device").and_then(Value::as_str)).map(str::to_string)
    }
}

/// The references given: any of them may be missing.
#[derive(Clone, Debug, Default)]
pub struct References {
    /// `vkprobe`'s lines.
    pub probe: Option<Reference>,
    /// `cuda_ref.py`'s lines (PyTorch, CuPy).
    pub cuda: Option<Reference>,
    /// The IREE peer's lines.
    pub iree: Option<Reference>,
}

fn n(value: Option<f64>) -> Value {
    value.map_or(Value::Null, |v| json!((v * 1e4).round() / 1e4))
}

impl References {
    /// The reference figures the report compares with, with where each comes from.
    pub fn to_json(&self) -> Value {
        let mut out = serde_json::Map::new();
        if let Some(probe) = &self.probe {
            let dispatch = |mode: &str, field: &str| {
                n(probe.number(&[("name", json!("dispatch_overhead")), ("mode", json!(mode))], field))
            };
            let life = probe.find(&[("name", json!("life_step"))]);
            out.insert(
                "probe".into(),
                json!({
                    "file": probe.file, "origin": probe.origin(), "device": probe.device(),
                    "square_gpu_gbps": n(probe.number(&[("name", json!("square_kernel"))], "gpu_gbps")),
                    "square_elements": n(probe.number(&[("name", json!("square_kernel"))], "n")),
                    "copy_d2d_gpu_gbps": n(probe.number(&[("name", json!("copy_d2d"))], "gpu_gbps")),
                    "h2d_gpu_gbps": n(probe.number(&[("name", json!("h2d"))], "gpu_gbps")),
                    "d2h_gpu_gbps": n(probe.number(&[("name", json!("d2h"))], "gpu_gbps")),
                    "dispatch_barrier_wall_us": dispatch("barrier", "wall_us_per_dispatch"),
                    "dispatch_no_barrier_wall_us": dispatch("no_barrier", "wall_us_per_dispatch"),
                    "dispatch_submit_wait_loop_us": dispatch("submit_wait", "loop_us_per_dispatch"),
                    "life": life.map(|l| json!({
                        "width": l["width"], "height": l["height"], "gens": l["gens"],
                        "gpu_ms": l["gpu_ms"], "wall_ms": l["wall_ms"], "verified": l["verified"],
                        "semantics": "toroidal (the example's border is dead); grid already on the device, no transfers",
                    })),
                }),
            );
        }
        if let Some(cuda) = &self.cuda {
            let square = |implementation: &str| {
                n(cuda.number(&[("name", json!("square_kernel")), ("impl", json!(implementation))], "gpu_gbps"))
            };
            let life = cuda
                .find(&[("name", json!("life_step")), ("impl", json!("cupy_raw")), ("launch", json!("stream"))])
                .or_else(|| cuda.find(&[("name", json!("life_step"))]));
            let dispatch = |mode: &str, field: &str| {
                n(cuda.number(&[("name", json!("dispatch_overhead")), ("mode", json!(mode))], field))
            };
            out.insert(
                "cuda".into(),
                json!({
                    "file": cuda.file, "origin": cuda.origin(), "device": cuda.device(),
                    "versions": cuda.find(&[("name", json!("device_info"))]).map(|d| json!({
                        "torch": d["torch"], "cuda": d["cuda"], "cupy": d["cupy"], "driver": d["driver"],
                    })),
                    "square_torch_gpu_gbps": square("torch"),
                    "square_cupy_gpu_gbps": square("cupy_raw"),
                    "square_elements": n(cuda.number(&[("name", json!("square_kernel"))], "n")),
                    "life": life.map(|l| json!({
                        "impl": l["impl"], "launch": l["launch"], "width": l["width"], "height": l["height"],
                        "gens": l["gens"], "gpu_ms": l["gpu_ms"], "wall_ms": l["wall_ms"], "verified": l["verified"],
                        "semantics": "toroidal (the example's border is dead); grid already on the device, no transfers",
                    })),
                    "dispatch_stream_wall_us": dispatch("stream", "wall_us_per_dispatch"),
                    "dispatch_graph_wall_us": dispatch("graph", "wall_us_per_dispatch"),
                    "dispatch_submit_wait_loop_us": dispatch("submit_wait", "loop_us_per_dispatch"),
                }),
            );
        }
        if let Some(iree) = &self.iree {
            let figure = |bench: &str, mode: &str| {
                iree.find(&[("bench", json!(bench)), ("mode", json!(mode))]).map(|l| {
                    json!({"ms_median": l["ms_median"], "gens": l.get("gens"), "elements": l.get("N"), "width": l.get("W"),
                           "verified": l["verified"], "target": l["target"]})
                })
            };
            out.insert(
                "iree".into(),
                json!({
                    "file": iree.file, "origin": iree.origin(),
                    "life_e2e": figure("life", "e2e"), "life_device": figure("life", "device"),
                    "square_e2e": figure("square", "e2e"), "square_device": figure("square", "device"),
                    "square_device_dps": figure("square", "device_dps"),
                }),
            );
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_found_by_their_fields_and_missing_ones_are_null() {
        let dir = std::env::temp_dir().join(format!("hat-bench-references-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("probe.jsonl");
        std::fs::write(
            &file,
            "{\"name\":\"square_kernel\",\"device\":\"GPU\",\"gpu_gbps\":2000.5}\nnot json\n\
             {\"name\":\"dispatch_overhead\",\"mode\":\"barrier\",\"wall_us_per_dispatch\":2.1}\n",
        )
        .unwrap();
        let probe = Reference::read(&file, true).unwrap();
        assert_eq!(probe.lines.len(), 2);
        let report = References { probe: Some(probe), ..References::default() }.to_json();
        assert_eq!(report["probe"]["square_gpu_gbps"], json!(2000.5));
        assert_eq!(report["probe"]["dispatch_barrier_wall_us"], json!(2.1));
        assert_eq!(report["probe"]["dispatch_no_barrier_wall_us"], Value::Null);
        assert_eq!(report["probe"]["device"], json!("GPU"));
        assert_eq!(report["probe"]["origin"], json!("measured in the same command"));
        assert!(report.get("iree").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
