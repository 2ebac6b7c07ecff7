//! The Vulkan instance and device: loading the loader, listing the devices, choosing one, and
//! creating the logical device with the features the lowering can use.
//!
//! - **Which devices count.** A physical device of Vulkan 1.1 or later (SPIR-V 1.3) with a
//!   compute queue.
//! - **Which one is chosen.** The one `HAT_VULKAN_DEVICE` (or [`crate::VulkanOptions::device`])
//!   names, by its index in [`list_devices`] or by a part of its name; otherwise a hardware
//!   device before a CPU one (lavapipe), and among those the one with the most device-local
//!   memory.
//! - **Features.** Every optional feature the lowering knows that the device has is enabled
//!   (`shaderInt64`, `storageBuffer8BitAccess`, ...), and `robustBufferAccess` where the device
//!   has it (an access out of a buffer's bounds is then harmless, as the lowering's docs ask);
//!   the lowering is told exactly these ([`Gpu::lowering_options`]), so a kernel that needs one
//!   the device lacks is a diagnostic naming the feature.
//! - **Validation** (tests): the Khronos validation layer with synchronisation validation,
//!   and a debug-utils messenger that records every warning and error (`validation.rs`).

use crate::errors::vk_error;
use crate::pipeline_cache::DeviceIdentity;
use crate::validation::Messages;
use ash::vk;
use hat_lowering::{DeviceFeatures, Feature, IndexWidth, LoweringOptions};
use hat_runtime::RuntimeError;
use std::ffi::CStr;

/// A Vulkan device the loader reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceDescription {
    /// Its index in the list.
    pub index: usize,
    /// Its name (`llvmpipe (LLVM 15.0.6, 256 bits)`, `NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Whether it is a CPU implementation (lavapipe, SwiftShader).
    pub is_cpu: bool,
    /// Bytes of device-local memory (the sum of its device-local heaps).
    pub device_local_bytes: u64,
    /// Its Vulkan version (major, minor).
    pub api_version: (u32, u32),
}

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// The loader, or why there is none.
fn load_entry() -> Result<ash::Entry, RuntimeError> {
    // SAFETY: loading the system's Vulkan loader runs its initialisation, which is what it is for.
    unsafe { ash::Entry::load() }
        .map_err(|e| RuntimeError::Backend(format!("vulkan: no Vulkan loader (libvulkan.so.1): {e}")))
}

fn create_instance(entry: &ash::Entry, validation: bool) -> Result<ash::Instance, RuntimeError> {
    let app = vk::ApplicationInfo::default().application_name(c"hat").api_version(vk::API_VERSION_1_2);
    let mut layers = Vec::new();
    let mut extensions = Vec::new();
    if validation {
        // SAFETY: a plain query of the loader.
        let available = unsafe { entry.enumerate_instance_layer_properties() }.map_err(vk_error("list the layers"))?;
        if !available.iter().any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER)) {
            return Err(RuntimeError::Backend(
                "vulkan: validation asked for, but the Khronos validation layer is not installed \
                 (Debian: vulkan-validationlayers)"
                    .into(),
            ));
        }
        layers.push(VALIDATION_LAYER.as_ptr());
        extensions.push(ash::ext::debug_utils::NAME.as_ptr());
        extensions.push(ash::ext::validation_features::NAME.as_ptr());
    }
    let enabled = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
    let mut features = vk::ValidationFeaturesEXT::default().enabled_validation_features(&enabled);
    let mut info = vk::InstanceCreateInfo::default()
        .application_info(&app)
        .enabled_layer_names(&layers)
        .enabled_extension_names(&extensions);
    if validation {
        info = info.push_next(&mut features);
    }
    // SAFETY: the create info and everything it points to live across the call.
    unsafe { entry.create_instance(&info, None) }.map_err(vk_error("create the instance"))
}

fn describe(instance: &ash::Instance, index: usize, device: vk::PhysicalDevice) -> DeviceDescription {
    // SAFETY: queries of a physical device the instance enumerated.
    let (properties, memory) = unsafe {
        (instance.get_physical_device_properties(device), instance.get_physical_device_memory_properties(device))
    };
    let device_local_bytes = memory.memory_heaps[..memory.memory_heap_count as usize]
        .iter()
        .filter(|heap| heap.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
        .map(|heap| heap.size)
        .sum();
    DeviceDescription {
        index,
        name: properties.device_name_as_c_str().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        is_cpu: properties.device_type == vk::PhysicalDeviceType::CPU,
        device_local_bytes,
        api_version: (vk::api_version_major(properties.api_version), vk::api_version_minor(properties.api_version)),
    }
}

/// The queue family with compute (a compute-only one is not preferred: the copies and the
/// dispatches share one queue, so the executor's order is the device's).
fn compute_family(instance: &ash::Instance, device: vk::PhysicalDevice) -> Option<(u32, u32)> {
    // SAFETY: a query of a physical device the instance enumerated.
    let families = unsafe { instance.get_physical_device_queue_family_properties(device) };
    families
        .iter()
        .enumerate()
        .find(|(_, f)| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .map(|(i, f)| (i as u32, f.timestamp_valid_bits))
}

/// Every Vulkan device that could run hat's kernels (Vulkan 1.1 or later, with a compute queue),
/// in the loader's order; empty when there is no loader or no device.
pub fn list_devices() -> Vec<DeviceDescription> {
    let Ok(entry) = load_entry() else { return Vec::new() };
    let Ok(instance) = create_instance(&entry, false) else { return Vec::new() };
    let list = usable_devices(&instance).into_iter().map(|(description, _)| description).collect();
    // SAFETY: nothing made from the instance outlives it.
    unsafe { instance.destroy_instance(None) };
    list
}

fn usable_devices(instance: &ash::Instance) -> Vec<(DeviceDescription, vk::PhysicalDevice)> {
    // SAFETY: a query of the instance.
    let devices = unsafe { instance.enumerate_physical_devices() }.unwrap_or_default();
    devices
        .into_iter()
        .enumerate()
        .map(|(index, device)| (describe(instance, index, device), device))
        .filter(|(d, device)| d.api_version >= (1, 1) && compute_family(instance, *device).is_some())
        .collect()
}

/// The device `wanted` names (an index, or a part of the name, case-insensitive), or else the
/// best: hardware before CPU, then the most device-local memory.
pub(crate) fn choose<'d>(
    devices: &'d [DeviceDescription],
    wanted: Option<&str>,
) -> Result<&'d DeviceDescription, String> {
    if let Some(wanted) = wanted.map(str::trim).filter(|w| !w.is_empty()) {
        if let Ok(index) = wanted.parse::<usize>() {
            return devices
                .iter()
                .find(|d| d.index == index)
                .ok_or_else(|| format!("no Vulkan device #{index} (there are {}: {})", devices.len(), names(devices)));
        }
        let lower = wanted.to_lowercase();
        return devices
            .iter()
            .find(|d| d.name.to_lowercase().contains(&lower))
            .ok_or_else(|| format!("no Vulkan device named like '{wanted}' (there are: {})", names(devices)));
    }
    devices
        .iter()
        .max_by_key(|d| (!d.is_cpu, d.device_local_bytes, std::cmp::Reverse(d.index)))
        .ok_or_else(|| "no Vulkan device (Vulkan 1.1 or later, with a compute queue) was found".to_string())
}

fn names(devices: &[DeviceDescription]) -> String {
    let list: Vec<String> = devices.iter().map(|d| format!("#{} {}", d.index, d.name)).collect();
    if list.is_empty() {
        "none".to_string()
    } else {
        list.join(", ")
    }
}

/// The device's limits that the runtime checks.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    pub max_storage_buffer_range: u64,
    pub max_allocation_size: u64,
    /// The alignment of a storage buffer descriptor's offset (at most 256 by the spec).
    pub min_storage_buffer_offset_alignment: u64,
    pub max_workgroup_count: [u32; 3],
    pub max_push_constant_bytes: u32,
    pub max_workgroup_memory_bytes: u32,
    pub max_workgroup_invocations: u32,
    pub max_workgroup_size: [u32; 3],
    /// Nanoseconds per timestamp tick.
    pub timestamp_period: f64,
    /// Valid bits of the queue's timestamps (0: none).
    pub timestamp_bits: u32,
}

/// An open device: the instance, the logical device and its queue, and what the runtime needs
/// to know about them. Dropping it destroys them (everything made from the device first: the
/// backend sees to it).
pub(crate) struct Gpu {
    _entry: ash::Entry,
    pub instance: ash::Instance,
    pub physical: vk::PhysicalDevice,
    pub device: ash::Device,
    pub queue: vk::Queue,
    pub family: u32,
    pub description: DeviceDescription,
    pub limits: Limits,
    pub features: DeviceFeatures,
    pub messages: Option<Messages>,
    /// What the device's pipeline cache is keyed by.
    pub identity: DeviceIdentity,
    /// Whether `VK_EXT_pipeline_creation_feedback` is enabled (the driver says whether a
    /// pipeline came from the cache).
    pub creation_feedback: bool,
}

impl Gpu {
    /// Opens the device `wanted` names (see [`choose`]), with validation when asked.
    pub(crate) fn open(wanted: Option<&str>, validation: bool, withhold: &[Feature]) -> Result<Gpu, RuntimeError> {
        let entry = load_entry()?;
        let instance = create_instance(&entry, validation)?;
        let opened = Self::open_on(&entry, &instance, wanted, validation, withhold);
        match opened {
            Ok(parts) => {
                let (physical, device, queue, family, description, limits, features, messages) = parts.0;
                let (identity, creation_feedback) = parts.1;
                Ok(Gpu {
                    _entry: entry,
                    instance,
                    physical,
                    device,
                    queue,
                    family,
                    description,
                    limits,
                    features,
                    messages,
                    identity,
                    creation_feedback,
                })
            }
            Err(error) => {
                // SAFETY: nothing made from the instance survived the failure.
                unsafe { instance.destroy_instance(None) };
                Err(error)
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn open_on(
        entry: &ash::Entry,
        instance: &ash::Instance,
        wanted: Option<&str>,
        validation: bool,
        withhold: &[Feature],
    ) -> Result<
        (
            (
                vk::PhysicalDevice,
                ash::Device,
                vk::Queue,
                u32,
                DeviceDescription,
                Limits,
                DeviceFeatures,
                Option<Messages>,
            ),
            (DeviceIdentity, bool),
        ),
        RuntimeError,
    > {
        let messages = if validation { Some(Messages::install(entry, instance)?) } else { None };
        let devices = usable_devices(instance);
        let descriptions: Vec<DeviceDescription> = devices.iter().map(|(d, _)| d.clone()).collect();
        let chosen = choose(&descriptions, wanted).map_err(|m| RuntimeError::Backend(format!("vulkan: {m}")))?;
        let physical = devices[descriptions.iter().position(|d| d == chosen).expect("chosen from the list")].1;
        let (family, timestamp_bits) = compute_family(instance, physical).expect("usable devices have one");

        // What the device has.
        let mut has11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut has12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut has = vk::PhysicalDeviceFeatures2::default().push_next(&mut has11);
        let v12 = chosen.api_version >= (1, 2);
        if v12 {
            has = has.push_next(&mut has12);
        }
        // SAFETY: the chain points to live structs.
        unsafe { instance.get_physical_device_features2(physical, &mut has) };
        let mut core = has.features;
        // Withheld features count as absent.
        let off = |feature: Feature| withhold.contains(&feature);
        if off(Feature::Int64) {
            core.shader_int64 = 0;
        }
        if off(Feature::Int16) {
            core.shader_int16 = 0;
        }
        if off(Feature::Float64) {
            core.shader_float64 = 0;
        }
        if off(Feature::StorageBuffer16Bit) {
            has11.storage_buffer16_bit_access = 0;
        }
        if off(Feature::Int8) {
            has12.shader_int8 = 0;
        }
        if off(Feature::Float16) {
            has12.shader_float16 = 0;
        }
        if off(Feature::StorageBuffer8Bit) {
            has12.storage_buffer8_bit_access = 0;
        }
        if off(Feature::Int64Atomics) {
            has12.shader_buffer_int64_atomics = 0;
        }
        let mut features = DeviceFeatures::none();
        let mut enable = vk::PhysicalDeviceFeatures::default().robust_buffer_access(core.robust_buffer_access != 0);
        let mut enable11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut enable12 = vk::PhysicalDeviceVulkan12Features::default();
        if core.shader_int64 != 0 {
            enable = enable.shader_int64(true);
            features.enable(Feature::Int64);
        }
        if core.shader_int16 != 0 {
            enable = enable.shader_int16(true);
            features.enable(Feature::Int16);
        }
        if core.shader_float64 != 0 {
            enable = enable.shader_float64(true);
            features.enable(Feature::Float64);
        }
        if has11.storage_buffer16_bit_access != 0 {
            enable11 = enable11.storage_buffer16_bit_access(true);
            features.enable(Feature::StorageBuffer16Bit);
        }
        if v12 {
            if has12.shader_int8 != 0 {
                enable12 = enable12.shader_int8(true);
                features.enable(Feature::Int8);
            }
            if has12.shader_float16 != 0 {
                enable12 = enable12.shader_float16(true);
                features.enable(Feature::Float16);
            }
            if has12.storage_buffer8_bit_access != 0 {
                enable12 = enable12.storage_buffer8_bit_access(true);
                features.enable(Feature::StorageBuffer8Bit);
            }
            if has12.shader_buffer_int64_atomics != 0 {
                enable12 = enable12.shader_buffer_int64_atomics(true);
                features.enable(Feature::Int64Atomics);
            }
        }
        // SAFETY: a plain query of a physical device the instance enumerated.
        let extensions = unsafe { instance.enumerate_device_extension_properties(physical) }.unwrap_or_default();
        let feedback_name = ash::ext::pipeline_creation_feedback::NAME;
        let creation_feedback = extensions.iter().any(|e| e.extension_name_as_c_str() == Ok(feedback_name));
        let enabled_extensions = if creation_feedback { vec![feedback_name.as_ptr()] } else { Vec::new() };
        let priorities = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
        let mut info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_features(&enable)
            .enabled_extension_names(&enabled_extensions);
        info = info.push_next(&mut enable11);
        if v12 {
            info = info.push_next(&mut enable12);
        }
        // SAFETY: the create info and its chain live across the call.
        let device = unsafe { instance.create_device(physical, &info, None) }.map_err(vk_error("create the device"))?;
        // SAFETY: queue 0 of a family the device was created with.
        let queue = unsafe { device.get_device_queue(family, 0) };

        // SAFETY: plain queries.
        let properties = unsafe { instance.get_physical_device_properties(physical) };
        let mut maintenance3 = vk::PhysicalDeviceMaintenance3Properties::default();
        let mut properties2 = vk::PhysicalDeviceProperties2::default().push_next(&mut maintenance3);
        unsafe { instance.get_physical_device_properties2(physical, &mut properties2) };
        let l = properties.limits;
        let limits = Limits {
            max_storage_buffer_range: l.max_storage_buffer_range as u64,
            max_allocation_size: maintenance3.max_memory_allocation_size,
            min_storage_buffer_offset_alignment: l.min_storage_buffer_offset_alignment,
            max_workgroup_count: l.max_compute_work_group_count,
            max_push_constant_bytes: l.max_push_constants_size,
            max_workgroup_memory_bytes: l.max_compute_shared_memory_size,
            max_workgroup_invocations: l.max_compute_work_group_invocations,
            max_workgroup_size: l.max_compute_work_group_size,
            timestamp_period: l.timestamp_period as f64,
            timestamp_bits: if l.timestamp_compute_and_graphics != 0 || timestamp_bits > 0 {
                timestamp_bits
            } else {
                0
            },
        };
        let identity = DeviceIdentity {
            vendor_id: properties.vendor_id,
            device_id: properties.device_id,
            driver_version: properties.driver_version,
            pipeline_cache_uuid: properties.pipeline_cache_uuid,
        };
        Ok((
            (physical, device, queue, family, chosen.clone(), limits, features, messages),
            (identity, creation_feedback),
        ))
    }

    /// What the lowering may assume: the features enabled and the device's limits; `index` is
    /// 32 bits (docs/lowering.md says why).
    pub(crate) fn lowering_options(&self) -> LoweringOptions {
        LoweringOptions {
            features: self.features.clone(),
            index_width: IndexWidth::Bits32,
            max_push_constant_bytes: self.limits.max_push_constant_bytes,
            max_workgroup_memory_bytes: self.limits.max_workgroup_memory_bytes,
            max_workgroup_invocations: self.limits.max_workgroup_invocations,
            max_workgroup_size: self.limits.max_workgroup_size,
            choose_workgroup_shape: false,
            vectorize_accesses: false,
            coarsen_rows: 1,
        }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: the backend destroyed everything made from the device before dropping it; the
        // messenger goes before the instance.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            if let Some(messages) = self.messages.take() {
                messages.uninstall();
            }
            self.instance.destroy_instance(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(index: usize, name: &str, is_cpu: bool, device_local_bytes: u64) -> DeviceDescription {
        DeviceDescription { index, name: name.into(), is_cpu, device_local_bytes, api_version: (1, 3) }
    }

    #[test]
    fn hardware_before_lavapipe_then_the_most_memory_unless_named() {
        let devices = [
            device(0, "llvmpipe (LLVM 15)", true, 64 << 30),
            device(1, "Small GPU", false, 4 << 30),
            device(2, "NVIDIA H100", false, 80 << 30),
        ];
        assert_eq!(choose(&devices, None).unwrap().index, 2);
        assert_eq!(choose(&devices, Some("llvmpipe")).unwrap().index, 0);
        assert_eq!(choose(&devices, Some("1")).unwrap().index, 1);
        assert_eq!(choose(&devices, Some("small")).unwrap().index, 1);
        let error = choose(&devices, Some("radeon")).unwrap_err();
        assert!(error.contains("#2 NVIDIA H100"), "{error}");
        assert!(choose(&devices, Some("7")).is_err());
        assert!(choose(&devices[..1], None).unwrap().is_cpu, "lavapipe when it is all there is");
        assert!(choose(&[], None).is_err());
    }
}
