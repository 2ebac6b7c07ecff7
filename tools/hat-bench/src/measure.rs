//! Measuring child processes: wall time (from spawn to reaping) and peak resident memory, which
//! `wait4` reports for exactly that child (`ru_maxrss`, KiB on Linux).
//!
//! Linux folds the high-water RSS of the address space a process leaves at `exec` into its
//! `ru_maxrss`; a child spawned by `vfork`/`posix_spawn` leaves its parent's, so it would inherit
//! this process's peak (the generated text, the in-process runs). So the child is spawned from a
//! fresh, small helper instead: this binary re-executed as `hat-bench measure-child -- PROGRAM
//! ARGS...`, which runs it, reaps it with `wait4` and reports the [`Run`] as JSON on stdout.

use serde_json::{json, Value};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One run of a child process.
#[derive(Clone, Debug)]
pub struct Run {
    /// From spawn to reaping.
    pub wall: Duration,
    /// `ru_maxrss` of the child, in KiB.
    pub max_rss_kib: u64,
    /// The exit code, or `None` when killed by a signal.
    pub exit_code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// The end of what it wrote to stderr.
    pub stderr_tail: String,
}

impl Run {
    /// Whether it exited with status 0.
    pub fn ok(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Runs `program args...` once, its stdout discarded, and measures it.
pub fn run_once(program: &Path, args: &[&str]) -> Result<Run, String> {
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    // Drain stderr on a thread so that a chatty child never blocks on a full pipe.
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain old data, for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = loop {
        // SAFETY: `pid` is our own child, not yet reaped (we never call `Child::wait`), and both
        // out-pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break r;
    };
    let wall = start.elapsed();
    if reaped != pid {
        return Err(format!("wait4 on {}: {}", program.display(), std::io::Error::last_os_error()));
    }
    let bytes = reader.join().unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let tail: String = {
        let chars: Vec<char> = text.chars().collect();
        chars[chars.len().saturating_sub(2000)..].iter().collect()
    };
    let (exit_code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    Ok(Run { wall, max_rss_kib: usage.ru_maxrss.max(0) as u64, exit_code, signal, stderr_tail: tail })
}

impl Run {
    /// The run as JSON, as the helper reports it.
    pub fn to_helper_json(&self) -> Value {
        json!({
            "wall_ns": self.wall.as_nanos() as u64,
            "max_rss_kib": self.max_rss_kib,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "stderr_tail": self.stderr_tail,
        })
    }

    fn from_helper_json(value: &Value) -> Option<Run> {
        Some(Run {
            wall: Duration::from_nanos(value["wall_ns"].as_u64()?),
            max_rss_kib: value["max_rss_kib"].as_u64()?,
            exit_code: value["exit_code"].as_i64().map(|c| c as i32),
            signal: value["signal"].as_i64().map(|s| s as i32),
            stderr_tail: value["stderr_tail"].as_str()?.to_string(),
        })
    }
}

/// Runs `program args...` once through the helper (see the module documentation), so that its
/// peak memory is its own.
pub fn run_isolated(program: &Path, args: &[&str]) -> Result<Run, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate hat-bench itself: {e}"))?;
    let output = Command::new(&exe)
        .arg("measure-child")
        .arg("--")
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!("measuring {} failed: {}", program.display(), text.trim()));
    }
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| Run::from_helper_json(&v))
        .ok_or_else(|| format!("measuring {}: unexpected helper output '{}'", program.display(), text.trim()))
}

/// Every run of one command, repeated.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The command line, for the report.
    pub command: Vec<String>,
    /// The runs, in order; the first failing one ends the series.
    pub runs: Vec<Run>,
    /// Why the series stopped early (could not spawn, or a run failed).
    pub error: Option<String>,
}

impl Measurement {
    /// Whether every run succeeded.
    pub fn ok(&self) -> bool {
        self.error.is_none() && !self.runs.is_empty() && self.runs.iter().all(Run::ok)
    }

    /// The fastest wall time, in seconds.
    pub fn best_seconds(&self) -> Option<f64> {
        self.runs.iter().map(|r| r.wall.as_secs_f64()).min_by(f64::total_cmp)
    }

    /// The median wall time, in seconds.
    pub fn median_seconds(&self) -> Option<f64> {
        median(self.runs.iter().map(|r| r.wall.as_secs_f64()).collect())
    }

    /// The largest peak RSS over the runs, in MiB.
    pub fn peak_rss_mib(&self) -> Option<f64> {
        self.runs.iter().map(|r| r.max_rss_kib).max().map(|kib| kib as f64 / 1024.0)
    }

    /// The JSON report.
    pub fn to_json(&self) -> Value {
        let mut report = json!({
            "command": self.command,
            "ok": self.ok(),
            "seconds": self.best_seconds().map(round3),
            "seconds_median": self.median_seconds().map(round3),
            "peak_rss_mib": self.peak_rss_mib().map(round1),
            "runs": self.runs.iter().map(|r| json!({
                "seconds": round3(r.wall.as_secs_f64()),
                "peak_rss_mib": round1(r.max_rss_kib as f64 / 1024.0),
                "exit_code": r.exit_code,
                "signal": r.signal,
            })).collect::<Vec<_>>(),
        });
        if let Some(error) = &self.error {
            report["error"] = json!(error);
        }
        report
    }
}

/// Runs `program args...` `repeat` times through the helper (stopping at the first failure).
pub fn measure(program: &Path, args: &[&str], repeat: usize) -> Measurement {
    measure_with(run_isolated, program, args, repeat)
}

/// Runs `program args...` `repeat` times with `run_one` (stopping at the first failure).
fn measure_with(
    run_one: fn(&Path, &[&str]) -> Result<Run, String>,
    program: &Path,
    args: &[&str],
    repeat: usize,
) -> Measurement {
    let mut command = vec![program.display().to_string()];
    command.extend(args.iter().map(|a| a.to_string()));
    let mut runs = Vec::new();
    let mut error = None;
    for _ in 0..repeat.max(1) {
        match run_one(program, args) {
            Ok(run) if run.ok() => runs.push(run),
            Ok(run) => {
                let how = match (run.exit_code, run.signal) {
                    (Some(code), _) => format!("exit status {code}"),
                    (None, Some(signal)) => format!("signal {signal}"),
                    _ => "unknown status".to_string(),
                };
                error = Some(format!("{} failed ({how}): {}", program.display(), run.stderr_tail.trim_end()));
                runs.push(run);
                break;
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    Measurement { command, runs, error }
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 })
}

/// Rounded to milliseconds.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Rounded to one decimal.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Whether `path` is an executable file.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// `name` on `PATH`, if there.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_child() {
        let sh = Path::new("/bin/sh");
        let run = run_once(sh, &["-c", "echo oops >&2; exit 3"]).expect("sh runs");
        assert_eq!(run.exit_code, Some(3));
        assert_eq!(run.stderr_tail.trim(), "oops");
        assert!(run.max_rss_kib > 0);
        // (`measure` itself goes through this binary's helper subcommand, which a test binary
        // lacks; `hat-bench parse` exercises it.)
        let m = measure_with(run_once, sh, &["-c", "true"], 2);
        assert!(m.ok());
        assert_eq!(m.runs.len(), 2);
        let m = measure_with(run_once, sh, &["-c", "exit 1"], 3);
        assert!(!m.ok());
        assert_eq!(m.runs.len(), 1);
        assert!(m.error.is_some());
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
