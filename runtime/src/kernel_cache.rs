//! The kernel cache on disk: what a backend keeps between processes so that the second run of a
//! program lowers and compiles nothing (the Vulkan backend keeps its lowered SPIR-V modules and
//! its `VkPipelineCache` there), and what it tells the run report about it
//! ([`KernelCacheStats`]).
//!
//! - **Where.** [`default_directory`]: `$HAT_CACHE_DIR` when set, else `$XDG_CACHE_HOME/hat`,
//!   else `$HOME/.cache/hat`. hat-opt's `--kernel-cache=DIR|off` overrides it.
//! - **Entries.** One file per entry, `DIR/KIND/NAME` ([`entry_path`]), written whole to a
//!   temporary file beside it and renamed over it ([`write_entry`]): a reader sees the old entry
//!   or the new one, never a part, and processes that write the same entry at once do not mix
//!   their bytes (the last rename wins).
//! - **Never trusted.** Each file starts with a header of hat's own: a magic number, the kind,
//!   the format's version, the lengths of the key and the payload and a checksum over both
//!   (64-bit FNV-1a), then the key itself, in full. [`read_entry`] gives the payload only when
//!   every part matches and the key is the one asked for (not merely one with the same file name,
//!   whose name is a hash of the key); anything else is an [`EntryProblem`], and the caller does
//!   the work again and writes the entry anew. What the payload means is the backend's to check
//!   again (a driver's pipeline cache is validated against the device before the driver sees
//!   it).
//! - **Best effort.** A cache that cannot be read or written (no directory, a full disk, no
//!   permission) slows the next run and changes nothing else: no error comes of it.

use serde_json::{json, Value as Json};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The first bytes of every entry.
const MAGIC: [u8; 4] = *b"HATC";
/// The version of the entry layout (header, key, payload); a different one is ignored.
const FORMAT_VERSION: u32 = 1;
/// magic, kind, version, key length, payload length, checksum.
const HEADER_BYTES: usize = 4 + 4 + 4 + 4 + 8 + 8;

/// The directory of the kernel cache when nothing else names one: `$HAT_CACHE_DIR` when set (and
/// not empty), else `$XDG_CACHE_HOME/hat` (an absolute path, as the XDG specification asks), else
/// `$HOME/.cache/hat`; `None` when none of them is set.
pub fn default_directory() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    if let Some(directory) = set("HAT_CACHE_DIR") {
        return Some(directory);
    }
    if let Some(xdg) = set("XDG_CACHE_HOME").filter(|path| path.is_absolute()) {
        return Some(xdg.join("hat"));
    }
    set("HOME").map(|home| home.join(".cache").join("hat"))
}

/// 64-bit FNV-1a of `bytes`, continuing from `hash` (start with [`FNV_OFFSET`]): the checksum of
/// entries and the hash that names them. Stable across processes, builds and platforms.
pub fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        hash ^= byte as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The starting value of [`fnv1a`].
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The file of the entry of kind `kind` (a directory name: `modules`, `pipelines`) whose key is
/// `key`: `DIRECTORY/KIND/HASH.EXTENSION`, the hash of the key in hex.
pub fn entry_path(directory: &Path, kind: &str, key: &[u8], extension: &str) -> PathBuf {
    directory.join(kind).join(format!("{:016x}.{extension}", fnv1a(FNV_OFFSET, key)))
}

/// Why an entry on disk was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryProblem {
    /// There is no such file (or it cannot be read).
    Missing,
    /// The file is there and is not a whole entry of this kind and key: its reason, to report.
    Ignored(String),
}

/// The payload of the entry at `path`, of kind `kind` and key `key`, if the file holds exactly
/// that: see the module documentation.
pub fn read_entry(path: &Path, kind: [u8; 4], key: &[u8]) -> Result<Vec<u8>, EntryProblem> {
    let bytes = fs::read(path).map_err(|_| EntryProblem::Missing)?;
    parse_entry(&bytes, kind, key).map_err(|reason| EntryProblem::Ignored(reason.to_string()))
}

fn parse_entry(bytes: &[u8], kind: [u8; 4], key: &[u8]) -> Result<Vec<u8>, &'static str> {
    if bytes.len() < HEADER_BYTES {
        return Err("shorter than the header");
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    if bytes[0..4] != MAGIC {
        return Err("not a hat cache entry");
    }
    if bytes[4..8] != kind {
        return Err("an entry of another kind");
    }
    if u32_at(8) != FORMAT_VERSION {
        return Err("another version of the entry format");
    }
    let key_len = u32_at(12) as u64;
    let payload_len = u64_at(16);
    let checksum = u64_at(24);
    let body = &bytes[HEADER_BYTES..];
    if key_len.checked_add(payload_len) != Some(body.len() as u64) {
        return Err("truncated, or longer than its header says");
    }
    if fnv1a(FNV_OFFSET, body) != checksum {
        return Err("its checksum does not match");
    }
    let (stored_key, payload) = body.split_at(key_len as usize);
    if stored_key != key {
        return Err("the entry of another key");
    }
    Ok(payload.to_vec())
}

/// Writes the entry of kind `kind` and key `key` with `payload` to `path`, creating its
/// directory: to a temporary file in the same directory, renamed over `path` once written (see
/// the module documentation).
pub fn write_entry(path: &Path, kind: [u8; 4], key: &[u8], payload: &[u8]) -> io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let directory = path.parent().ok_or_else(|| io::Error::other("an entry path without a directory"))?;
    fs::create_dir_all(directory)?;
    let key_len = u32::try_from(key.len()).map_err(|_| io::Error::other("a key of 4 GiB or more"))?;
    let mut checksum = fnv1a(FNV_OFFSET, key);
    checksum = fnv1a(checksum, payload);
    let mut bytes = Vec::with_capacity(HEADER_BYTES + key.len() + payload.len());
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&kind);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&key_len.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&checksum.to_le_bytes());
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(payload);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let temporary =
        directory.join(format!(".{name}.{}.{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let written =
        fs::File::create(&temporary).and_then(|mut file| file.write_all(&bytes).and_then(|()| file.sync_all()));
    match written.and_then(|()| fs::rename(&temporary, path)) {
        Ok(()) => Ok(()),
        Err(error) => {
            let _ = fs::remove_file(&temporary);
            Err(error)
        }
    }
}

/// What became of the pipeline cache a backend keeps on disk for its device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PipelineCacheState {
    /// The kernel cache is off (or the backend keeps no pipeline cache).
    #[default]
    Off,
    /// There was none on disk for this device (the first run).
    Missing,
    /// Loaded: this many bytes of the driver's data, checked against the device.
    Loaded {
        /// Bytes handed to the driver.
        bytes: u64,
    },
    /// There was one, and it was ignored (and is overwritten at the end): why.
    Ignored {
        /// What was wrong with it.
        reason: String,
    },
}

/// What a backend's kernel cache did: how many lowered modules came from disk and how many were
/// lowered, how many pipelines the cache on disk held and how many were compiled, and what the
/// driver said about them. Counted over one run in [`crate::RunReport::kernel_cache`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelCacheStats {
    /// The cache's directory; `None` when the cache is off.
    pub directory: Option<PathBuf>,
    /// Modules read from disk instead of lowered (hits).
    pub modules_from_disk: u64,
    /// Modules lowered (misses, or the cache off).
    pub modules_lowered: u64,
    /// Entries of modules on disk that were ignored (truncated, corrupt, another key or format):
    /// each was lowered again and its entry written anew.
    pub modules_ignored: u64,
    /// Pipelines the backend created.
    pub pipelines_created: u64,
    /// Of those, the ones whose module, entry point and specialisation the pipeline cache loaded
    /// from disk holds (a previous process compiled them into it): not compiled again unless the
    /// driver throws its cache away (see the `driver_*` counts).
    pub pipelines_from_disk: u64,
    /// Of those created, the ones the driver said it found in the pipeline cache
    /// (`VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT`).
    pub driver_cache_hits: u64,
    /// Of those created, the ones the driver said it compiled (its feedback valid, no hit).
    pub driver_cache_misses: u64,
    /// Of those created, the ones the driver said nothing about (no creation feedback).
    pub driver_silent: u64,
    /// The pipeline cache loaded when the backend opened.
    pub pipeline_cache: PipelineCacheState,
}

impl KernelCacheStats {
    /// The counts since `earlier` (an earlier value of the same backend's), the rest as now.
    pub fn since(&self, earlier: &KernelCacheStats) -> KernelCacheStats {
        KernelCacheStats {
            directory: self.directory.clone(),
            modules_from_disk: self.modules_from_disk - earlier.modules_from_disk,
            modules_lowered: self.modules_lowered - earlier.modules_lowered,
            modules_ignored: self.modules_ignored - earlier.modules_ignored,
            pipelines_created: self.pipelines_created - earlier.pipelines_created,
            pipelines_from_disk: self.pipelines_from_disk - earlier.pipelines_from_disk,
            driver_cache_hits: self.driver_cache_hits - earlier.driver_cache_hits,
            driver_cache_misses: self.driver_cache_misses - earlier.driver_cache_misses,
            driver_silent: self.driver_silent - earlier.driver_silent,
            pipeline_cache: self.pipeline_cache.clone(),
        }
    }

    /// Pipelines compiled: those created that the pipeline cache from disk did not hold.
    pub fn pipelines_compiled(&self) -> u64 {
        self.pipelines_created - self.pipelines_from_disk
    }

    /// As JSON:
    ///
    /// ```json
    /// {"directory": "/home/me/.cache/hat",
    ///  "modules": {"from_disk": 1, "lowered": 0, "ignored": 0},
    ///  "pipelines": {"created": 2, "from_disk": 2, "compiled": 0,
    ///                "driver": {"cache_hits": 0, "cache_misses": 2, "silent": 0}},
    ///  "pipeline_cache": {"state": "loaded", "bytes": 12345}}
    /// ```
    ///
    /// `directory` is `null` when the cache is off; `pipeline_cache.state` is `off`, `missing`,
    /// `loaded` (with `bytes`) or `ignored` (with `reason`).
    pub fn to_json(&self) -> Json {
        let pipeline_cache = match &self.pipeline_cache {
            PipelineCacheState::Off => json!({ "state": "off" }),
            PipelineCacheState::Missing => json!({ "state": "missing" }),
            PipelineCacheState::Loaded { bytes } => json!({ "state": "loaded", "bytes": bytes }),
            PipelineCacheState::Ignored { reason } => json!({ "state": "ignored", "reason": reason }),
        };
        json!({
            "directory": self.directory.as_ref().map(|d| d.display().to_string()),
            "modules": {
                "from_disk": self.modules_from_disk,
                "lowered": self.modules_lowered,
                "ignored": self.modules_ignored,
            },
            "pipelines": {
                "created": self.pipelines_created,
                "from_disk": self.pipelines_from_disk,
                "compiled": self.pipelines_compiled(),
                "driver": {
                    "cache_hits": self.driver_cache_hits,
                    "cache_misses": self.driver_cache_misses,
                    "silent": self.driver_silent,
                },
            },
            "pipeline_cache": pipeline_cache,
        })
    }

    /// One line for a person: `modules 1 from disk, 0 lowered; pipelines 2 from disk, 0
    /// compiled anew (the driver: 2 cache hits, 0 misses); pipeline cache loaded (12345 B) from
    /// DIR`.
    pub fn summary(&self) -> String {
        let plural = |count: u64, one: &str, many: &str| format!("{count} {}", if count == 1 { one } else { many });
        let Some(directory) = &self.directory else {
            return format!(
                "off; {} lowered, {} compiled",
                plural(self.modules_lowered, "module", "modules"),
                plural(self.pipelines_created, "pipeline", "pipelines")
            );
        };
        let mut modules = format!("modules {} from disk, {} lowered", self.modules_from_disk, self.modules_lowered);
        if self.modules_ignored > 0 {
            modules.push_str(&format!(" ({} ignored)", plural(self.modules_ignored, "entry", "entries")));
        }
        let driver = if self.driver_silent == self.pipelines_created {
            "the driver said nothing".to_string()
        } else {
            format!(
                "the driver: {}, {}",
                plural(self.driver_cache_hits, "cache hit", "cache hits"),
                plural(self.driver_cache_misses, "miss", "misses")
            )
        };
        let pipeline_cache = match &self.pipeline_cache {
            PipelineCacheState::Off => "no pipeline cache".to_string(),
            PipelineCacheState::Missing => "no pipeline cache on disk".to_string(),
            // The Vulkan header alone is 32 bytes: such a driver keeps no pipelines in its cache.
            PipelineCacheState::Loaded { bytes } if *bytes <= 32 => {
                format!("pipeline cache loaded ({bytes} B: the driver keeps nothing in it)")
            }
            PipelineCacheState::Loaded { bytes } => format!("pipeline cache loaded ({bytes} B)"),
            PipelineCacheState::Ignored { reason } => format!("pipeline cache ignored ({reason})"),
        };
        format!(
            "{modules}; pipelines {} from disk, {} compiled anew ({driver}); {pipeline_cache} from {}",
            self.pipelines_from_disk,
            self.pipelines_compiled(),
            directory.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let directory = std::env::temp_dir().join(format!("hat-kernel-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&directory);
        directory
    }

    #[test]
    fn an_entry_reads_back_only_under_its_own_kind_and_key() {
        let directory = scratch("roundtrip");
        let path = entry_path(&directory, "modules", b"key one", "bin");
        assert_eq!(read_entry(&path, *b"TEST", b"key one"), Err(EntryProblem::Missing));
        write_entry(&path, *b"TEST", b"key one", b"the payload").unwrap();
        assert_eq!(read_entry(&path, *b"TEST", b"key one").unwrap(), b"the payload");
        assert!(matches!(read_entry(&path, *b"TEST", b"key two"), Err(EntryProblem::Ignored(_))));
        assert!(matches!(read_entry(&path, *b"OTHR", b"key one"), Err(EntryProblem::Ignored(_))));
        // Rewritten in place: the new payload, and no temporary file left beside it.
        write_entry(&path, *b"TEST", b"key one", b"another").unwrap();
        assert_eq!(read_entry(&path, *b"TEST", b"key one").unwrap(), b"another");
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
        let _ = fs::remove_dir_all(&directory);
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_ignored() {
        let directory = scratch("corrupt");
        let path = entry_path(&directory, "modules", b"key", "bin");
        write_entry(&path, *b"TEST", b"key", &[7u8; 40]).unwrap();
        let whole = fs::read(&path).unwrap();
        for len in 0..whole.len() {
            assert!(parse_entry(&whole[..len], *b"TEST", b"key").is_err(), "truncated to {len} bytes");
        }
        for at in 0..whole.len() {
            let mut bytes = whole.clone();
            bytes[at] ^= 0x10;
            assert!(parse_entry(&bytes, *b"TEST", b"key").is_err(), "byte {at} flipped");
        }
        let mut longer = whole.clone();
        longer.push(0);
        assert!(parse_entry(&longer, *b"TEST", b"key").is_err());
        assert_eq!(parse_entry(&whole, *b"TEST", b"key").unwrap(), vec![7u8; 40]);
        let _ = fs::remove_dir_all(&directory);
    }

    #[test]
    fn counts_since_an_earlier_value() {
        let earlier = KernelCacheStats { modules_lowered: 1, pipelines_created: 2, ..Default::default() };
        let now = KernelCacheStats {
            modules_lowered: 1,
            modules_from_disk: 1,
            pipelines_created: 5,
            pipelines_from_disk: 2,
            ..Default::default()
        };
        let delta = now.since(&earlier);
        assert_eq!((delta.modules_lowered, delta.modules_from_disk), (0, 1));
        assert_eq!((delta.pipelines_created, delta.pipelines_compiled()), (3, 1));
    }
}
