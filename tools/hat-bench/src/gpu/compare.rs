//! hat's figures beside the references', and the targets of issue 10, computed from the report
//! alone (so `hat-bench gpu --from-json` recomputes them from a saved report).
//!
//! | target | hat's figure | reference |
//! |---|---|---|
//! | square >= 90% of PyTorch | GB/s over the kernel's steady device time (back to back), else one dispatch's | `cuda_ref.py`'s torch `gpu_gbps` |
//! | Life no slower than CuPy | median end-to-end ms at the largest generation count | CuPy's `gpu_ms`, scaled per generation to that count |
//! | Life >= 50x jic | the same | the jic line extrapolated to that count |
//! | dispatch within 1.2x of the probe | median wall us per dispatch of `chain` on the backend without timestamps (the probe writes none between its dispatches), else with them | the probe's `barrier` wall us |
//! | >= 10x IREE on Life | end to end at IREE's generation count (100) | IREE's `e2e` and `device` ms |
//! | >= 5x IREE on square | the same GB/s, and end to end | IREE's `device_dps` GB/s, `e2e` ms |
//!
//! A ratio is `null` where a figure is missing; a target is `null` then, never `true`.

use super::runs::round4;
use serde_json::{json, Value};

fn num(value: &Value) -> Option<f64> {
    value.as_f64()
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(round4(a / b)),
        _ => None,
    }
}

fn at_least(value: Option<f64>, bound: f64) -> Value {
    value.map_or(Value::Null, |v| json!(v >= bound))
}

fn at_most(value: Option<f64>, bound: f64) -> Value {
    value.map_or(Value::Null, |v| json!(v <= bound))
}

/// The default-pipeline Life run at `gens` generations, if measured.
fn life_run(report: &Value, gens: u64) -> Option<&Value> {
    report["life"]["default"].as_array()?.iter().find(|r| r["generations"].as_u64() == Some(gens))
}

/// The comparisons and targets of `report` (the measured parts and `references`).
pub fn compare(report: &Value) -> Value {
    let refs = &report["references"];
    // Square.
    let square = &report["square"];
    let hat_gbps = num(&square["device_gbps"]["median"]);
    let hat_steady_gbps = num(&square["back_to_back"]["steady_gbps"]);
    let elements = num(&square["elements"]);
    // A reference counts only at hat's size (a small buffer runs at a fraction of the rate).
    let sized = |value: &Value, size: &Value| num(value).filter(|_| elements.is_some() && num(size) == elements);
    let cuda_elements = &refs["cuda"]["square_elements"];
    let torch_gbps = sized(&refs["cuda"]["square_torch_gpu_gbps"], cuda_elements);
    let cupy_gbps = sized(&refs["cuda"]["square_cupy_gpu_gbps"], cuda_elements);
    let probe_gbps = sized(&refs["probe"]["square_gpu_gbps"], &refs["probe"]["square_elements"]);
    let iree_dps_ms = num(&refs["iree"]["square_device_dps"]["ms_median"]);
    let iree_elements = num(&refs["iree"]["square_device_dps"]["elements"]);
    let same_size = iree_elements.is_some() && iree_elements == elements;
    let iree_dps_gbps = match (iree_elements, iree_dps_ms) {
        (Some(n), Some(ms)) if ms > 0.0 && same_size => Some(round4(8.0 * n / (ms * 1e6))),
        _ => None,
    };
    let hat_square_e2e = num(&square["end_to_end_ms"]["median"]);
    let iree_square_e2e = num(&refs["iree"]["square_e2e"]["ms_median"]).filter(|_| same_size);
    // The targets take the kernel timed back to back (as PyTorch's and the probe's are), where
    // measured; else the single dispatch of a run.
    let hat_kernel_gbps = hat_steady_gbps.or(hat_gbps);
    let over_torch = ratio(hat_kernel_gbps, torch_gbps);
    let square_over_iree = ratio(hat_kernel_gbps, iree_dps_gbps);
    let square_e2e_over_iree = ratio(iree_square_e2e, hat_square_e2e);

    // Life.
    let runs = report["life"]["default"].as_array().cloned().unwrap_or_default();
    let largest = runs.iter().filter_map(|r| r["generations"].as_u64()).max();
    let hat_life = largest.and_then(|g| life_run(report, g)).and_then(|r| num(&r["end_to_end_ms"]["median"]));
    let hat_life_device = largest.and_then(|g| life_run(report, g)).and_then(|r| num(&r["device_ms"]["median"]));
    let per_generation = |ms: Option<f64>, gens: Option<f64>| match (ms, gens) {
        (Some(ms), Some(g)) if g > 0.0 => Some(ms / g),
        _ => None,
    };
    let scaled = |ms: Option<f64>, gens: Option<f64>| {
        largest.and_then(|target| per_generation(ms, gens).map(|p| round4(p * target as f64)))
    };
    let size = num(&report["life"]["size"]);
    let at_size = |line: &Value| size.is_some() && num(&line["width"]) == size && num(&line["height"]) == size;
    let cupy = &refs["cuda"]["life"];
    let cupy_ms = scaled(num(&cupy["gpu_ms"]), num(&cupy["gens"])).filter(|_| at_size(cupy));
    let probe_life = &refs["probe"]["life"];
    let probe_ms = scaled(num(&probe_life["gpu_ms"]), num(&probe_life["gens"])).filter(|_| at_size(probe_life));
    let jic_gens = num(&report["life"]["jic"]["extrapolated"]["generations"]);
    let jic_ms = num(&report["life"]["jic"]["extrapolated"]["end_to_end_ms"])
        .filter(|_| jic_gens.is_some() && jic_gens == largest.map(|g| g as f64));
    let over_cupy = ratio(hat_life, cupy_ms);
    let jic_over_hat = ratio(jic_ms, hat_life);
    let iree_at_size = size.is_some() && num(&refs["iree"]["life_e2e"]["width"]) == size;
    let iree_life_gens = num(&refs["iree"]["life_e2e"]["gens"]).filter(|_| iree_at_size);
    let hat_at_iree =
        iree_life_gens.and_then(|g| life_run(report, g as u64)).and_then(|r| num(&r["end_to_end_ms"]["median"]));
    let iree_life_e2e = num(&refs["iree"]["life_e2e"]["ms_median"]).filter(|_| iree_at_size);
    let iree_life_device = num(&refs["iree"]["life_device"]["ms_median"]).filter(|_| iree_at_size);
    let life_over_iree_e2e = ratio(iree_life_e2e, hat_at_iree);
    let life_over_iree_device = ratio(iree_life_device, hat_at_iree);

    // Dispatch.
    let chain_wall = |backend: &str| num(&report["dispatch"][backend]["chain"]["wall_us_per_dispatch"]["median"]);
    let (with, without) = (chain_wall("with_timestamps"), chain_wall("without_timestamps"));
    let hat_dispatch = without.or(with);
    let probe_dispatch = num(&refs["probe"]["dispatch_barrier_wall_us"]);
    let dispatch_over_probe = ratio(hat_dispatch, probe_dispatch);

    json!({
        "square": {
            "hat_device_gbps": hat_gbps, "hat_steady_gbps": hat_steady_gbps,
            "hat_single_dispatch_over_torch": ratio(hat_gbps, torch_gbps), "torch_gbps": torch_gbps, "cupy_gbps": cupy_gbps, "probe_gbps": probe_gbps,
            "iree_device_dps_gbps": iree_dps_gbps,
            "hat_over_torch": over_torch, "hat_over_probe": ratio(hat_gbps, probe_gbps),
            "hat_over_iree_device_dps": square_over_iree,
            "hat_end_to_end_ms": hat_square_e2e, "iree_end_to_end_ms": iree_square_e2e,
            "iree_end_to_end_over_hat": square_e2e_over_iree,
        },
        "life": {
            "generations": largest,
            "hat_end_to_end_ms": hat_life, "hat_device_ms": hat_life_device,
            "cupy_ms_scaled": cupy_ms, "probe_ms_scaled": probe_ms, "jic_ms_extrapolated": jic_ms,
            "hat_over_cupy": over_cupy, "hat_device_over_cupy": ratio(hat_life_device, cupy_ms),
            "hat_over_probe": ratio(hat_life, probe_ms), "jic_over_hat": jic_over_hat,
            "iree_generations": iree_life_gens, "hat_end_to_end_ms_at_iree_generations": hat_at_iree,
            "iree_end_to_end_ms": iree_life_e2e, "iree_device_ms": iree_life_device,
            "iree_end_to_end_over_hat": life_over_iree_e2e, "iree_device_over_hat": life_over_iree_device,
            "note": "CuPy's and the probe's figures are device time with the grid already on the device, scaled \
                     per generation to hat's count; hat's is end to end (transfers included). A reference of \
                     another grid size is left out (null)",
        },
        "dispatch": {
            "hat_chain_wall_us": hat_dispatch, "probe_barrier_wall_us": probe_dispatch,
            "hat_over_probe": dispatch_over_probe,
            "hat_chain_measured": if without.is_some() { "without timestamps" } else { "with timestamps" },
            "hat_chain_wall_us_with_timestamps": with,
        },
        "targets": {
            "square_at_least_0_9_of_torch": at_least(over_torch, 0.9),
            "life_no_slower_than_cupy": at_most(over_cupy, 1.0),
            "life_at_least_50x_jic": at_least(jic_over_hat, 50.0),
            "dispatch_within_1_2x_of_probe": at_most(dispatch_over_probe, 1.2),
            "life_at_least_10x_iree": at_least(life_over_iree_device.min_or(life_over_iree_e2e), 10.0),
            "square_at_least_5x_iree": at_least(square_over_iree, 5.0),
        },
    })
}

/// The lesser of two optional figures (either, where one is missing).
trait MinOr {
    fn min_or(self, other: Option<f64>) -> Option<f64>;
}

impl MinOr for Option<f64> {
    fn min_or(self, other: Option<f64>) -> Option<f64> {
        match (self, other) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_follow_from_the_figures_and_are_null_without_them() {
        let report = json!({
            "square": {"elements": 100, "bytes_counted": 800.0, "device_gbps": {"median": 2700.0},
                       "end_to_end_ms": {"median": 10.0}},
            "life": {"size": 64, "default": [{"generations": 100, "end_to_end_ms": {"median": 40.0}, "device_ms": {"median": 30.0}},
                                  {"generations": 1000, "end_to_end_ms": {"median": 310.0}, "device_ms": {"median": 300.0}}],
                     "jic": {"extrapolated": {"generations": 1000, "end_to_end_ms": 100000.0}}},
            "dispatch": {"with_timestamps": {"chain": {"wall_us_per_dispatch": {"median": 2.4}}}},
            "references": {
                "cuda": {"square_torch_gpu_gbps": 3000.0, "square_elements": 100,
                         "life": {"gpu_ms": 30.0, "gens": 100, "width": 64, "height": 64}},
                "probe": {"dispatch_barrier_wall_us": 2.1, "square_gpu_gbps": 2000.0, "square_elements": 50,
                          "life": {"gpu_ms": 30.0, "gens": 100, "width": 32, "height": 32}},
                "iree": {"life_e2e": {"ms_median": 1200.0, "gens": 100, "width": 64},
                         "life_device": {"ms_median": 600.0, "gens": 100},
                         "square_device_dps": {"ms_median": 6.0, "elements": 100}},
            },
        });
        let c = compare(&report);
        assert_eq!(c["square"]["hat_over_torch"], json!(0.9));
        assert_eq!(c["square"]["probe_gbps"], Value::Null, "the probe ran another size");
        assert_eq!(c["life"]["probe_ms_scaled"], Value::Null, "the probe ran another size");
        assert_eq!(c["targets"]["square_at_least_0_9_of_torch"], json!(true));
        assert_eq!(c["life"]["cupy_ms_scaled"], json!(300.0));
        assert_eq!(c["targets"]["life_no_slower_than_cupy"], json!(false));
        assert_eq!(c["targets"]["life_at_least_50x_jic"], json!(true));
        assert_eq!(c["life"]["iree_device_over_hat"], json!(15.0));
        assert_eq!(c["targets"]["life_at_least_10x_iree"], json!(true));
        assert_eq!(c["targets"]["dispatch_within_1_2x_of_probe"], json!(true));
        assert_eq!(c["targets"]["square_at_least_5x_iree"], json!(true));
        // Without timestamps where that backend ran: the probe writes none between dispatches.
        let mut both = report.clone();
        both["dispatch"]["without_timestamps"] = json!({"chain": {"wall_us_per_dispatch": {"median": 2.6}}});
        let c = compare(&both);
        assert_eq!(c["dispatch"]["hat_chain_wall_us"], json!(2.6));
        assert_eq!(c["dispatch"]["hat_chain_wall_us_with_timestamps"], json!(2.4));
        assert_eq!(c["targets"]["dispatch_within_1_2x_of_probe"], json!(false));
        let empty = compare(&json!({}));
        assert!(empty["targets"].as_object().unwrap().values().all(Value::is_null), "{empty}");
    }
}
