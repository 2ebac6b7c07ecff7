//! How much host memory the process may still take, so that a buffer larger than that is refused
//! before anything is touched. An allocation the kernel's overcommit grants is not memory the
//! process has: filling it touches every page, and the machine's OOM killer ends this process
//! (and others with it) instead of an error reaching the user.
//!
//! Available memory is the kernel's estimate (`MemAvailable` in `/proc/meminfo`), and, where a
//! control group limits the process (cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`), the
//! limit less what the group uses, whichever is smaller. A request fits when it leaves a margin
//! ([`margin`]) for everything else the process needs. Where none of these files exists (not
//! Linux), nothing is known and every request is let through to the allocator.

use std::path::Path;

/// Requests below this size are not checked (reading `/proc` for each small buffer would cost
/// more than it can save).
pub const CHECKED_FROM: u64 = 64 << 20;

/// The bytes the process may still allocate, when known. See the module documentation.
pub fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| mem_available(&text));
    let cgroup = cgroup_room(Path::new("/sys/fs/cgroup"));
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What a request must leave free: 64 MiB and a twentieth of what is available.
pub fn margin(available: u64) -> u64 {
    (64 << 20) + available / 20
}

/// `None` when `bytes` fit in host memory now; else the bytes available (see the module
/// documentation).
pub fn refuses(bytes: u64) -> Option<u64> {
    if bytes < CHECKED_FROM {
        return None;
    }
    let available = available()?;
    (bytes > available.saturating_sub(margin(available))).then_some(available)
}

/// `what needs 400 GB of host memory; 22.8 GB are available`.
pub fn message(what: &str, bytes: u64, available: u64) -> String {
    format!("{what} needs {} of host memory; {} are available", human(bytes), human(available))
}

/// A size in decimal units, three significant digits: `400 GB`, `22.8 GB`, `512 B`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} B"),
        _ if value >= 100.0 => format!("{value:.0} {}", UNITS[unit]),
        _ if value >= 10.0 => format!("{value:.1} {}", UNITS[unit]),
        _ => format!("{value:.2} {}", UNITS[unit]),
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The room left under the process's control group's memory limit, when one is set: cgroup v2
/// at the root of `root` (a process in a container sees its own group there), else v1's memory
/// controller.
fn cgroup_room(root: &Path) -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(root.join(name)).ok();
    let number = |text: Option<String>| text.and_then(|t| t.trim().parse::<u64>().ok());
    // v2: "max" means no limit.
    if let Some(limit) = read("memory.max") {
        let limit: u64 = limit.trim().parse().ok()?;
        let used = number(read("memory.current")).unwrap_or(0);
        return Some(limit.saturating_sub(used));
    }
    // v1: an unlimited group reports a huge number (rounded `i64::MAX`).
    let limit = number(read("memory/memory.limit_in_bytes")).filter(|&l| l < 1 << 60)?;
    let used = number(read("memory/memory.usage_in_bytes")).unwrap_or(0);
    Some(limit.saturating_sub(used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(400_000_000_000), "400 GB");
        assert_eq!(human(22_812_345_678), "22.8 GB");
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1_500_000), "1.50 MB");
    }

    #[test]
    fn meminfo_and_cgroup_files_are_read() {
        let text = "MemTotal:       32000000 kB\nMemFree:  100 kB\nMemAvailable:   23626564 kB\n";
        assert_eq!(mem_available(text), Some(23_626_564 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        let directory = std::env::temp_dir().join(format!("hat-cgroup-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        std::fs::write(directory.join("memory.max"), "max\n").unwrap();
        assert_eq!(cgroup_room(&directory), None, "no limit");
        std::fs::write(directory.join("memory.max"), "1000000000\n").unwrap();
        std::fs::write(directory.join("memory.current"), "250000000\n").unwrap();
        assert_eq!(cgroup_room(&directory), Some(750_000_000));
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn a_request_beyond_what_is_available_is_refused_and_a_small_one_is_not() {
        assert_eq!(refuses(1024), None);
        if available().is_some() {
            let asked = available().unwrap().saturating_mul(2).max(CHECKED_FROM);
            assert!(refuses(asked).is_some(), "{asked} bytes");
        }
    }
}
