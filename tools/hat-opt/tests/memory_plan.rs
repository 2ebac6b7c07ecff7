//! Issue 23's acceptance for `plan-memory`, through hat-opt as a user runs it: peak device memory
//! that does not grow with a loop's trip count, arenas at the lower bound, and planned programs
//! that give the reference results on the CPU backend (which refuses a window over one in use)
//! and on Vulkan.

mod support;

use support::root;

use serde_json::Value as Json;
use std::process::Command;

/// Runs hat-opt on `backend`, which must succeed: (standard output, standard error).
fn hat_opt(backend: &str, args: &[&str]) -> (String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_hat-opt"))
        .current_dir(root())
        .args(args)
        .env("HAT_BACKEND", backend)
        .output()
        .expect("hat-opt runs");
    let (out, err) =
        (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned());
    assert!(output.status.success(), "hat-opt {args:?} failed:\n{err}");
    (out, err)
}

/// The JSON report of a `--run-check --report=json` run, whose check must be equal.
fn checked_run(backend: &str, args: &[&str]) -> Json {
    let mut all = args.to_vec();
    all.extend(["--run-check", "--report=json"]);
    let (out, _) = hat_opt(backend, &all);
    let report: Json = serde_json::from_str(out.trim()).expect("a JSON report");
    assert_eq!(report["check"]["equal"], true, "{args:?}: {report}");
    report
}

fn peak(report: &Json) -> (u64, u64) {
    let memory = &report["device_memory"];
    (memory["peak_bytes"].as_u64().unwrap(), memory["allocations"].as_u64().unwrap())
}

/// `plan-memory`'s statistics for `file` after the default pipeline: (planned, naive, lower bound).
fn statistics(file: &str) -> (u64, u64, u64) {
    let (_, err) = hat_opt("cpu", &[file, "-p", "default", "--mlir-pass-statistics", "-o", "/dev/null"]);
    let statistic = |name: &str| -> u64 {
        err.lines()
            .find(|line| line.trim_end().ends_with(name))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no statistic {name} in:\n{err}"))
    };
    (statistic("planned-peak-bytes"), statistic("naive-peak-bytes"), statistic("lower-bound-bytes"))
}

#[test]
fn the_morphology_chain_has_one_peak_for_any_number_of_rounds_and_its_arena_is_the_lower_bound() {
    let file = "examples/11-morphology.hat";
    let (planned, naive, lower_bound) = statistics(file);
    // The round's two scratch images (16 KiB each).
    assert_eq!((planned, naive, lower_bound), (32_768, 32_768, 32_768));
    let mut peaks = Vec::new();
    for rounds in ["1", "4", "16", "64"] {
        let rounds = format!("rounds={rounds}");
        let report = checked_run("cpu", &[file, "--arg", "img=random", "--arg", "out=zeros", "--arg", &rounds]);
        peaks.push(peak(&report));
    }
    // %img, %out and the arena; three allocations.
    assert!(peaks.iter().all(|&p| p == (2 * 16_384 + planned, 3)), "{peaks:?}");
}

#[test]
fn a_temporary_born_in_a_loop_body_takes_one_buffer_for_one_iteration_as_for_a_thousand() {
    let file = "tests/filetests/plan-memory/loop-temporary.hat";
    let one = checked_run("cpu", &[file, "--arg", "data=iota", "--arg", "n=1"]);
    let thousand = checked_run("cpu", &[file, "--arg", "data=iota", "--arg", "n=1000"]);
    // %data and one temporary of 16 KiB: the arena of the function, allocated once.
    assert_eq!(peak(&one), (2 * 16_384, 2));
    assert_eq!(peak(&thousand), (2 * 16_384, 2));
}

#[test]
fn pooling_reuses_the_memory_of_dead_images_of_other_sizes_and_gives_the_reference_results() {
    let file = "examples/12-pooling.hat";
    let (planned, naive, lower_bound) = statistics(file);
    assert_eq!(planned, lower_bound);
    assert!(planned < naive, "the pooled image reuses the memory of the dead blurred one");
    let args = [file, "--arg", "img=tests/data/images/shapes.png", "--arg", "out=zeros"];
    let report = checked_run("cpu", &args);
    // %img (16 KiB), %out (1 KiB) and the arena.
    assert_eq!(peak(&report), (16_384 + 1_024 + planned, 3));
    if support::has_vulkan() {
        let report = checked_run("vulkan", &args);
        assert_eq!(report["backend"], "vulkan");
        assert_eq!(peak(&report), (16_384 + 1_024 + planned, 3), "an arena is one VkBuffer");
    }
}

#[test]
fn buffers_sized_at_run_time_are_packed_when_the_call_runs_for_every_image_size() {
    let file = "tests/filetests/plan-memory/run-time-sizes.hat";
    let mut backends = vec!["cpu"];
    if support::has_vulkan() {
        backends.push("vulkan");
    }
    // The image, %out and an arena of two of the three temporaries (the first and the third are
    // never needed at once): 4 images' bytes, where each temporary on its own would take 5.
    for (image, bytes) in [("shapes.png", 64 * 64 * 4), ("grey16.png", 8 * 8 * 4)] {
        let path = format!("tests/data/images/{image}");
        let (img, out) = (format!("img={path}"), format!("out={path}"));
        for backend in &backends {
            let report = checked_run(backend, &[file, "--arg", &img, "--arg", &out]);
            assert_eq!(report["backend"], *backend);
            assert_eq!(peak(&report), (4 * bytes, 3), "{backend}, {image}");
        }
    }
}

#[test]
fn a_dispatch_that_writes_in_place_hands_the_dying_buffer_on() {
    let file = "examples/13-in-place.hat";
    let (_, err) = hat_opt("cpu", &[file, "-p", "default", "--mlir-pass-statistics", "-o", "/dev/null"]);
    assert!(err.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["(S)", "1", "num-in-place"]), "{err}");
    // %soft's storage holds %toned too: one intermediate of 16 KiB.
    assert_eq!(statistics(file).0, 16_384);
    let args = [file, "--arg", "in=tests/data/images/shapes.png", "--arg", "out=zeros", "--arg", "level=0.3"];
    let report = checked_run("cpu", &args);
    assert_eq!(peak(&report), (3 * 16_384, 3));
    if support::has_vulkan() {
        let report = checked_run("vulkan", &args);
        assert_eq!(peak(&report), (3 * 16_384, 3));
    }
}
