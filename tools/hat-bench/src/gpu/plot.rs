//! The plot of a `hat-bench gpu` report: an SVG of three panels of horizontal bars, drawn by
//! hand (no plotting library): the square's GB/s (linear), Life's milliseconds per generation
//! and the microseconds per dispatch (both logarithmic, as they span orders of magnitude).
//! hat's bars are dark, the references' light; a figure recorded earlier rather than measured
//! in the same command says so in its label. A missing figure is a labelled gap, not a zero.

use serde_json::Value;
use std::fmt::Write as _;

/// One bar.
struct Bar {
    label: String,
    value: Option<f64>,
    hat: bool,
}

fn bar(label: impl Into<String>, value: Option<f64>, hat: bool) -> Bar {
    Bar { label: label.into(), value, hat }
}

const WIDTH: f64 = 980.0;
const LABEL: f64 = 330.0;
const AREA: f64 = 520.0;
const ROW: f64 = 22.0;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn format_value(value: f64, unit: &str) -> String {
    let digits = if value >= 100.0 {
        0
    } else if value >= 1.0 {
        2
    } else {
        3
    };
    format!("{value:.digits$} {unit}")
}

/// The least of 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten at or above `value` (a
/// round axis end).
fn nice_ceiling(value: f64) -> f64 {
    if value <= 0.0 {
        return 1.0;
    }
    let power = 10f64.powf(value.log10().floor());
    [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|&v| v >= value)
        .unwrap_or(10.0 * power)
}

/// Draws a panel at `top`; returns its height.
fn panel(svg: &mut String, top: f64, title: &str, unit: &str, log: bool, bars: &[Bar]) -> f64 {
    let values: Vec<f64> = bars.iter().filter_map(|b| b.value).filter(|v| *v > 0.0).collect();
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let (low, high) = if log {
        (10f64.powf(min.log10().floor()), 10f64.powf(max.log10().ceil()))
    } else {
        (0.0, nice_ceiling(max * 1.05))
    };
    let x = |v: f64| {
        if log {
            LABEL + AREA * (v.log10() - low.log10()) / (high.log10() - low.log10()).max(1e-9)
        } else {
            LABEL + AREA * v / high.max(1e-9)
        }
    };
    writeln!(svg, r#"<text x="10" y="{:.1}" font-size="15" font-weight="bold">{}</text>"#, top + 18.0, escape(title))
        .expect("writing to a String");
    let first = top + 30.0;
    for (index, b) in bars.iter().enumerate() {
        let y = first + index as f64 * ROW;
        writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="12">{}</text>"#,
            LABEL - 8.0,
            y + 14.0,
            escape(&b.label)
        )
        .expect("writing to a String");
        match b.value.filter(|v| *v > 0.0 && !values.is_empty()) {
            Some(v) => {
                let fill = if b.hat { "#1f4e9a" } else { "#9bb7d9" };
                let end = x(v).max(LABEL + 1.0);
                writeln!(
                    svg,
                    r#"<rect x="{LABEL:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}"/><text x="{:.1}" y="{:.1}" font-size="12">{}</text>"#,
                    y + 3.0,
                    end - LABEL,
                    ROW - 6.0,
                    end + 5.0,
                    y + 14.0,
                    escape(&format_value(v, unit))
                )
                .expect("writing to a String");
            }
            None => writeln!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" font-size="12" fill="#888">no figure (or another size)</text>"##,
                LABEL + 5.0,
                y + 14.0
            )
            .expect("writing to a String"),
        }
    }
    let axis = first + bars.len() as f64 * ROW + 4.0;
    writeln!(svg, r##"<line x1="{LABEL:.1}" y1="{:.1}" x2="{LABEL:.1}" y2="{axis:.1}" stroke="#333"/>"##, first)
        .expect("writing to a String");
    let ticks: Vec<f64> = if log && !values.is_empty() {
        let mut t = low;
        let mut ticks = Vec::new();
        while t <= high * 1.0001 {
            ticks.push(t);
            t *= 10.0;
        }
        ticks
    } else if !values.is_empty() {
        (0..=4).map(|i| high * i as f64 / 4.0).collect()
    } else {
        Vec::new()
    };
    for t in ticks {
        writeln!(
            svg,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#ccc"/><text x="{0:.1}" y="{3:.1}" font-size="10" text-anchor="middle" fill="#555">{4}</text>"##,
            x(t),
            first,
            axis,
            axis + 12.0,
            if t >= 1.0 { format!("{t:.0}") } else { format!("{t}") }
        )
        .expect("writing to a String");
    }
    axis + 24.0 - top
}

fn num(value: &Value) -> Option<f64> {
    value.as_f64()
}

fn origin(refs: &Value, name: &str) -> &'static str {
    match refs[name]["origin"].as_str() {
        Some(text) if text.starts_with("measured") => "",
        Some(_) => " (recorded)",
        None => "",
    }
}

/// The SVG of `report` (a `hat-bench gpu` report with its `comparison`).
pub fn svg(report: &Value) -> String {
    let refs = &report["references"];
    let c = &report["comparison"];
    let device = report["device"].as_str().unwrap_or("?");
    let (cuda, probe, iree) = (origin(refs, "cuda"), origin(refs, "probe"), origin(refs, "iree"));
    let square = vec![
        bar("hat (Vulkan), back to back", num(&c["square"]["hat_steady_gbps"]), true),
        bar("hat (Vulkan), one dispatch per run", num(&c["square"]["hat_device_gbps"]), true),
        bar(format!("vkprobe (hand-written Vulkan){probe}"), num(&c["square"]["probe_gbps"]), false),
        bar(format!("PyTorch torch.mul{cuda}"), num(&c["square"]["torch_gbps"]), false),
        bar(format!("CuPy raw kernel{cuda}"), num(&c["square"]["cupy_gbps"]), false),
        bar(format!("IREE Vulkan, device_dps{iree}"), num(&c["square"]["iree_device_dps_gbps"]), false),
    ];
    let life = &c["life"];
    let gens = num(&life["generations"]).unwrap_or(1.0);
    let per = |v: Option<f64>, g: f64| v.map(|v| v / g);
    let iree_gens = num(&life["iree_generations"]).unwrap_or(1.0);
    let life_bars = vec![
        bar(format!("hat default, end to end ({gens:.0} gens)"), per(num(&life["hat_end_to_end_ms"]), gens), true),
        bar("hat default, device time", per(num(&life["hat_device_ms"]), gens), true),
        bar(format!("CuPy raw kernel, device{cuda}"), per(num(&life["cupy_ms_scaled"]), gens), false),
        bar(format!("vkprobe, device{probe}"), per(num(&life["probe_ms_scaled"]), gens), false),
        bar("hat jic, end to end (extrapolated)", per(num(&life["jic_ms_extrapolated"]), gens), true),
        bar(format!("IREE Vulkan, end to end{iree}"), per(num(&life["iree_end_to_end_ms"]), iree_gens), false),
        bar(format!("IREE Vulkan, device{iree}"), per(num(&life["iree_device_ms"]), iree_gens), false),
    ];
    let on = &report["dispatch"]["with_timestamps"];
    let off = &report["dispatch"]["without_timestamps"];
    let wall = |v: &Value| num(&v["wall_us_per_dispatch"]["median"]);
    let dispatch = vec![
        bar("hat chain (dependent), timestamps", wall(&on["chain"]), true),
        bar("hat chain (dependent), no timestamps", wall(&off["chain"]), true),
        bar(format!("vkprobe barrier{probe}"), num(&refs["probe"]["dispatch_barrier_wall_us"]), false),
        bar("hat independent, timestamps", wall(&on["independent"]), true),
        bar("hat independent, no timestamps", wall(&off["independent"]), true),
        bar(format!("vkprobe no_barrier{probe}"), num(&refs["probe"]["dispatch_no_barrier_wall_us"]), false),
        bar(format!("CUDA stream launches (CuPy){cuda}"), num(&refs["cuda"]["dispatch_stream_wall_us"]), false),
        bar(format!("CUDA graph (CuPy){cuda}"), num(&refs["cuda"]["dispatch_graph_wall_us"]), false),
        bar("hat synced (sync after each)", wall(&on["synced"]), true),
        bar(format!("vkprobe submit_wait{probe}"), num(&refs["probe"]["dispatch_submit_wait_loop_us"]), false),
        bar(format!("CUDA submit_wait{cuda}"), num(&refs["cuda"]["dispatch_submit_wait_loop_us"]), false),
    ];
    let mut body = String::new();
    let mut top = 34.0;
    let elements = num(&report["square"]["elements"]).unwrap_or(0.0);
    top += panel(
        &mut body,
        top,
        &format!("Elementwise square over {elements:.0} f32: GB/s (read + write), higher is better"),
        "GB/s",
        false,
        &square,
    );
    let size = num(&report["life"]["size"]).unwrap_or(0.0);
    top += panel(
        &mut body,
        top,
        &format!("Game of Life {size:.0} x {size:.0}: ms per generation (log scale), lower is better"),
        "ms",
        true,
        &life_bars,
    );
    let dispatches = num(&on["chain"]["dispatches"]).unwrap_or(0.0);
    top += panel(
        &mut body,
        top,
        &format!(
            "Wall time per dispatch, chains of {dispatches:.0} (synced: 1 per submit): us (log scale), lower is better"
        ),
        "us",
        true,
        &dispatch,
    );
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{top:.0}\" font-family=\"sans-serif\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"20\" font-size=\"13\" fill=\"#333\">hat-bench gpu on {}; dark: hat, light: references</text>\n{body}</svg>\n",
        escape(device)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn draws_every_bar_and_marks_missing_and_recorded_figures() {
        let report = json!({
            "device": "a <GPU>",
            "square": {"elements": 1024},
            "life": {"size": 64},
            "references": {"iree": {"origin": "recorded earlier"}, "probe": {"origin": "measured in the same command",
                           "dispatch_barrier_wall_us": 2.0}},
            "comparison": {"square": {"hat_steady_gbps": 2500.0, "torch_gbps": 3000.0},
                           "life": {"generations": 1000, "hat_end_to_end_ms": 400.0, "iree_generations": 100,
                                    "iree_end_to_end_ms": 1200.0}},
            "dispatch": {"with_timestamps": {"chain": {"dispatches": 10000, "wall_us_per_dispatch": {"median": 2.5}}}},
        });
        let svg = svg(&report);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("a &lt;GPU&gt;"));
        assert!(svg.contains("IREE Vulkan, end to end (recorded)"));
        assert!(svg.contains("0.400 ms"), "hat's Life per generation");
        assert!(svg.contains("12.00 ms"), "IREE's per generation, over its own count");
        assert!(svg.contains("no figure"));
        assert_eq!(svg.matches("<rect").count(), 1 + 6, "the background and one bar per known figure");
    }
}
