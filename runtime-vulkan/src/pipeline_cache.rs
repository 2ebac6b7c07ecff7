//! The `VkPipelineCache` on disk (the second layer of the kernel cache,
//! [`hat_runtime::kernel_cache`]): one entry per device, loaded when the backend opens and
//! written back when it closes, so that a second process creates its pipelines from what the
//! first compiled.
//!
//! - **The key** ([`DeviceIdentity`]): the device's vendor and device ids, its driver's version
//!   and its `pipelineCacheUUID` (`VkPhysicalDeviceProperties`): the entry's file is named by
//!   them, and its header holds them in full.
//! - **Never trusted.** Besides the entry's own checks (checksum, key), the driver's data must
//!   begin with the header the Vulkan specification gives (version one: its length, 32 or more;
//!   the version, 1; the vendor id; the device id; the UUID), matching this device, before the
//!   driver sees a byte of it ([`check_header`]). An entry that fails is ignored: the backend
//!   starts with an empty cache and writes the entry anew when it closes. A driver that refuses
//!   data that passed is given an empty cache too.
//! - **Which pipelines it holds.** The entry also lists the pipelines compiled into it, each by
//!   a hash of its SPIR-V module, entry point and specialisation: a pipeline created with a
//!   loaded cache that lists it counts as from disk, any other as compiled
//!   ([`hat_runtime::KernelCacheStats::pipelines_from_disk`]). Where the device has
//!   `VK_EXT_pipeline_creation_feedback`, every pipeline asks the driver too, and the report
//!   gives what the driver said beside it (a driver may keep nothing in its cache: Mesa's
//!   lavapipe of Debian 12 compiles every pipeline again).
//! - **Written back** at teardown ([`PipelineCache::save`]), only when this process compiled a
//!   pipeline the entry did not list or the entry was missing or ignored, whole (a temporary file
//!   renamed over it): two processes that close at once leave one's entry or the other's, each
//!   consistent.

use crate::errors::vk_error;
use ash::vk;
use hat_runtime::kernel_cache::{fnv1a, read_entry, write_entry, EntryProblem, FNV_OFFSET};
use hat_runtime::{PipelineCacheState, RuntimeError};
use rustc_hash::FxHashSet;
use std::path::{Path, PathBuf};

/// The kind of a pipeline-cache entry in its header.
const KIND: [u8; 4] = *b"VKPC";
/// The version of the payload's layout (the list of pipelines, then the driver's data).
const PAYLOAD_VERSION: u32 = 1;
/// Bytes of the Vulkan pipeline-cache header, version one.
const VULKAN_HEADER_BYTES: usize = 32;

/// What a device's pipeline cache is keyed by (`VkPhysicalDeviceProperties`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeviceIdentity {
    pub vendor_id: u32,
    pub device_id: u32,
    pub driver_version: u32,
    pub pipeline_cache_uuid: [u8; vk::UUID_SIZE],
}

impl DeviceIdentity {
    fn uuid_hex(&self) -> String {
        self.pipeline_cache_uuid.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The entry's key.
    fn key(&self) -> Vec<u8> {
        format!(
            "hat {} pipeline cache {PAYLOAD_VERSION}\nvendor {:#x} device {:#x} driver {:#x} uuid {}",
            env!("CARGO_PKG_VERSION"),
            self.vendor_id,
            self.device_id,
            self.driver_version,
            self.uuid_hex()
        )
        .into_bytes()
    }

    /// The entry's file under `directory`: `pipelines/VENDOR-DEVICE-DRIVER-UUID.vkpc`.
    fn path(&self, directory: &Path) -> PathBuf {
        let name =
            format!("{:04x}-{:04x}-{:08x}-{}", self.vendor_id, self.device_id, self.driver_version, self.uuid_hex());
        directory.join("pipelines").join(format!("{name}.vkpc"))
    }
}

/// Whether `data` begins with the Vulkan pipeline-cache header (version one) of `device`: `Err`
/// says what does not match.
pub(crate) fn check_header(data: &[u8], device: &DeviceIdentity) -> Result<(), String> {
    if data.len() < VULKAN_HEADER_BYTES {
        return Err(format!("{} bytes, shorter than a pipeline-cache header", data.len()));
    }
    let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"));
    let length = u32_at(0) as usize;
    if length < VULKAN_HEADER_BYTES || length > data.len() {
        return Err(format!("a header length of {length}"));
    }
    if u32_at(4) != vk::PipelineCacheHeaderVersion::ONE.as_raw() as u32 {
        return Err(format!("header version {}", u32_at(4)));
    }
    if u32_at(8) != device.vendor_id || u32_at(12) != device.device_id {
        return Err(format!("another device's (vendor {:#x}, device {:#x})", u32_at(8), u32_at(12)));
    }
    if data[16..32] != device.pipeline_cache_uuid {
        return Err("another pipeline-cache UUID (another driver build)".to_string());
    }
    Ok(())
}

/// The hash a pipeline is listed by: its module's words, entry point and specialisation (the
/// id of the constant set `true`, if any).
pub(crate) fn pipeline_key(module_hash: u64, entry: &str, whole_grid: Option<u32>) -> u64 {
    let mut hash = fnv1a(FNV_OFFSET, &module_hash.to_le_bytes());
    hash = fnv1a(hash, entry.as_bytes());
    hash = fnv1a(hash, &[whole_grid.is_some() as u8]);
    fnv1a(hash, &whole_grid.unwrap_or(0).to_le_bytes())
}

/// The stable hash of a module's words (the one [`pipeline_key`] takes).
pub(crate) fn words_hash(words: &[u32]) -> u64 {
    words.iter().fold(FNV_OFFSET, |hash, word| fnv1a(hash, &word.to_le_bytes()))
}

/// A device's pipeline cache and what became of it (see the module documentation).
pub(crate) struct PipelineCache {
    /// The cache every pipeline is created with (null when the kernel cache is off).
    pub handle: vk::PipelineCache,
    /// Where its entry lives; `None` when the kernel cache is off.
    file: Option<PathBuf>,
    identity: DeviceIdentity,
    /// Whether the device gives creation feedback (`VK_EXT_pipeline_creation_feedback`).
    feedback: bool,
    /// The pipelines the loaded entry lists.
    held: FxHashSet<u64>,
    /// Pipelines compiled by this process that it did not list.
    added: FxHashSet<u64>,
    pub state: PipelineCacheState,
    pub created: u64,
    pub from_disk: u64,
    pub driver_hits: u64,
    pub driver_misses: u64,
    pub driver_silent: u64,
}

impl PipelineCache {
    /// The cache of the device `identity` names, loaded from `directory` when there is a valid
    /// entry there; no cache at all when `directory` is `None`.
    /// Where the driver cannot make even an empty cache, pipelines are created without one.
    pub(crate) fn open(
        device: &ash::Device,
        identity: DeviceIdentity,
        directory: Option<&Path>,
        feedback: bool,
    ) -> PipelineCache {
        let mut cache = PipelineCache {
            handle: vk::PipelineCache::null(),
            file: directory.map(|d| identity.path(d)),
            identity,
            feedback,
            held: FxHashSet::default(),
            added: FxHashSet::default(),
            state: PipelineCacheState::Off,
            created: 0,
            from_disk: 0,
            driver_hits: 0,
            driver_misses: 0,
            driver_silent: 0,
        };
        let Some(file) = cache.file.clone() else { return cache };
        let payload = read_entry(&file, KIND, &cache.identity.key());
        let loaded = match &payload {
            Ok(payload) => cache.parse(payload),
            Err(EntryProblem::Missing) => Err(PipelineCacheState::Missing),
            Err(EntryProblem::Ignored(reason)) => Err(PipelineCacheState::Ignored { reason: reason.clone() }),
        };
        match loaded {
            Ok((held, data)) => {
                let info = vk::PipelineCacheCreateInfo::default().initial_data(data);
                // SAFETY: the data begins with this device's header (checked); the driver checks
                // the rest.
                match unsafe { device.create_pipeline_cache(&info, None) } {
                    Ok(handle) => {
                        cache.handle = handle;
                        cache.held = held;
                        cache.state = PipelineCacheState::Loaded { bytes: data.len() as u64 };
                        return cache;
                    }
                    Err(_) => cache.state = PipelineCacheState::Ignored { reason: "the driver refused it".into() },
                }
            }
            Err(state) => cache.state = state,
        }
        let info = vk::PipelineCacheCreateInfo::default();
        // SAFETY: a valid, empty create info.
        match unsafe { device.create_pipeline_cache(&info, None) } {
            Ok(handle) => cache.handle = handle,
            Err(error) => {
                cache.file = None;
                cache.state = PipelineCacheState::Ignored { reason: format!("the driver made no cache: {error}") };
            }
        }
        cache
    }

    /// The pipelines listed and the driver's data of a payload, or why it is not used.
    fn parse<'p>(&self, payload: &'p [u8]) -> Result<(FxHashSet<u64>, &'p [u8]), PipelineCacheState> {
        let ignored = |reason: String| PipelineCacheState::Ignored { reason };
        let u64_at = |at: usize| payload.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        if payload.get(0..4) != Some(&PAYLOAD_VERSION.to_le_bytes()[..]) {
            return Err(ignored("another version of the entry's layout".into()));
        }
        let count = u64_at(4).ok_or_else(|| ignored("truncated".into()))?;
        let listed_end =
            count.checked_mul(8).and_then(|bytes| bytes.checked_add(12)).filter(|&end| end <= payload.len() as u64);
        let listed_end = listed_end.ok_or_else(|| ignored("truncated".into()))? as usize;
        let held = (12..listed_end).step_by(8).filter_map(u64_at).collect();
        let data = &payload[listed_end..];
        check_header(data, &self.identity).map_err(ignored)?;
        Ok((held, data))
    }

    /// Creates the compute pipeline `info` describes (the pipeline listed by `key`) with the
    /// cache, asking the driver for feedback where it gives it, and counts it.
    pub(crate) fn create(
        &mut self,
        device: &ash::Device,
        info: vk::ComputePipelineCreateInfo<'_>,
        key: u64,
    ) -> Result<vk::Pipeline, RuntimeError> {
        let mut whole = vk::PipelineCreationFeedback::default();
        let mut stages = [vk::PipelineCreationFeedback::default()];
        let mut feedback = vk::PipelineCreationFeedbackCreateInfo::default()
            .pipeline_creation_feedback(&mut whole)
            .pipeline_stage_creation_feedbacks(&mut stages);
        let info = if self.feedback { info.push_next(&mut feedback) } else { info };
        // SAFETY: the create info and its chain are valid and live across the call; the cache
        // is this device's.
        let pipeline = unsafe { device.create_compute_pipelines(self.handle, &[info], None) }
            .map_err(|(_, e)| vk_error("create a compute pipeline")(e))?[0];
        self.created += 1;
        if self.held.contains(&key) {
            self.from_disk += 1;
        } else if self.file.is_some() {
            self.added.insert(key);
        }
        if !self.feedback || !whole.flags.contains(vk::PipelineCreationFeedbackFlags::VALID) {
            self.driver_silent += 1;
        } else if whole.flags.contains(vk::PipelineCreationFeedbackFlags::APPLICATION_PIPELINE_CACHE_HIT) {
            self.driver_hits += 1;
        } else {
            self.driver_misses += 1;
        }
        Ok(pipeline)
    }

    /// Writes the cache back to its entry when this process added to it, or the entry was
    /// missing or ignored (best effort: an error is dropped). Before the device is destroyed.
    pub(crate) fn save(&self, device: &ash::Device) {
        let Some(file) = &self.file else { return };
        if self.added.is_empty() && matches!(self.state, PipelineCacheState::Loaded { .. }) {
            return;
        }
        // SAFETY: a cache of this device, not in use by another thread.
        let Ok(data) = (unsafe { device.get_pipeline_cache_data(self.handle) }) else { return };
        if check_header(&data, &self.identity).is_err() {
            return;
        }
        let listed: Vec<u64> = self.held.union(&self.added).copied().collect();
        let mut payload = Vec::with_capacity(12 + 8 * listed.len() + data.len());
        payload.extend_from_slice(&PAYLOAD_VERSION.to_le_bytes());
        payload.extend_from_slice(&(listed.len() as u64).to_le_bytes());
        for key in listed {
            payload.extend_from_slice(&key.to_le_bytes());
        }
        payload.extend_from_slice(&data);
        let _ = write_entry(file, KIND, &self.identity.key(), &payload);
    }

    /// Destroys the cache (no pipeline may be being created with it).
    pub(crate) fn destroy(&mut self, device: &ash::Device) {
        if self.handle != vk::PipelineCache::null() {
            // SAFETY: made from this device; destroyed once.
            unsafe { device.destroy_pipeline_cache(self.handle, None) };
            self.handle = vk::PipelineCache::null();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> DeviceIdentity {
        DeviceIdentity { vendor_id: 0x10005, device_id: 0, driver_version: 1, pipeline_cache_uuid: [7; 16] }
    }

    fn header(length: u32, version: u32, vendor: u32, device: u32, uuid: [u8; 16]) -> Vec<u8> {
        let mut data = Vec::new();
        for word in [length, version, vendor, device] {
            data.extend_from_slice(&word.to_le_bytes());
        }
        data.extend_from_slice(&uuid);
        data
    }

    #[test]
    fn only_this_devices_header_passes() {
        let device = identity();
        assert!(check_header(&header(32, 1, 0x10005, 0, [7; 16]), &device).is_ok());
        let mut longer = header(32, 1, 0x10005, 0, [7; 16]);
        longer.extend_from_slice(&[1, 2, 3]);
        assert!(check_header(&longer, &device).is_ok());
        let refused = [
            header(32, 1, 0x10005, 0, [7; 16])[..31].to_vec(),
            header(16, 1, 0x10005, 0, [7; 16]),
            header(64, 1, 0x10005, 0, [7; 16]),
            header(32, 2, 0x10005, 0, [7; 16]),
            header(32, 1, 0x10de, 0, [7; 16]),
            header(32, 1, 0x10005, 1, [7; 16]),
            header(32, 1, 0x10005, 0, [8; 16]),
        ];
        for data in refused {
            assert!(check_header(&data, &device).is_err(), "{data:?}");
        }
    }

    #[test]
    fn pipeline_keys_tell_entry_points_and_specialisations_apart() {
        let module = words_hash(&[0x0723_0203, 1, 2]);
        assert_ne!(module, words_hash(&[0x0723_0203, 1, 3]));
        let keys = [
            pipeline_key(module, "a", None),
            pipeline_key(module, "b", None),
            pipeline_key(module, "a", Some(0)),
            pipeline_key(module + 1, "a", None),
        ];
        let distinct: FxHashSet<u64> = keys.iter().copied().collect();
        assert_eq!(distinct.len(), keys.len());
    }
}
