//! What the lowering may assume about the device: its optional features and its limits.
//!
//! The defaults are what every Vulkan 1.1 device guarantees (no optional feature, the minimum
//! limits), so a module lowered with [`LoweringOptions::default`] runs on any device. A runtime
//! that knows its device fills the options from the device's features and limits; a kernel that
//! needs a feature the options lack is a diagnostic that names the feature
//! ([`Feature::vulkan_name`]), never a module the device would reject.

use std::fmt;

/// An optional device feature a kernel may need.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// 8-bit integer arithmetic (`i8` values).
    Int8,
    /// 16-bit integer arithmetic (`i16` values).
    Int16,
    /// 64-bit integer arithmetic (`i64` values, and `index` when it is 64 bits wide).
    Int64,
    /// 16-bit float arithmetic (`f16` values).
    Float16,
    /// 64-bit float arithmetic (`f64` values).
    Float64,
    /// 8-bit elements in storage buffers (`i1` and `i8` buffers).
    StorageBuffer8Bit,
    /// 16-bit elements in storage buffers (`i16` and `f16` buffers).
    StorageBuffer16Bit,
    /// 64-bit atomics (`kernel.atomic_rmw` on `i64` or `f64` elements).
    Int64Atomics,
}

impl Feature {
    /// Every feature.
    pub const ALL: [Feature; 8] = [
        Feature::Int8,
        Feature::Int16,
        Feature::Int64,
        Feature::Float16,
        Feature::Float64,
        Feature::StorageBuffer8Bit,
        Feature::StorageBuffer16Bit,
        Feature::Int64Atomics,
    ];

    /// The Vulkan feature's name, as `VkPhysicalDevice*Features` spells it.
    pub fn vulkan_name(self) -> &'static str {
        match self {
            Feature::Int8 => "shaderInt8",
            Feature::Int16 => "shaderInt16",
            Feature::Int64 => "shaderInt64",
            Feature::Float16 => "shaderFloat16",
            Feature::Float64 => "shaderFloat64",
            Feature::StorageBuffer8Bit => "storageBuffer8BitAccess",
            Feature::StorageBuffer16Bit => "storageBuffer16BitAccess",
            Feature::Int64Atomics => "shaderBufferInt64Atomics",
        }
    }

    /// What the feature is, in words.
    pub fn description(self) -> &'static str {
        match self {
            Feature::Int8 => "8-bit integers",
            Feature::Int16 => "16-bit integers",
            Feature::Int64 => "64-bit integers",
            Feature::Float16 => "16-bit floats",
            Feature::Float64 => "64-bit floats",
            Feature::StorageBuffer8Bit => "8-bit elements in storage buffers",
            Feature::StorageBuffer16Bit => "16-bit elements in storage buffers",
            Feature::Int64Atomics => "64-bit atomics",
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (Vulkan feature '{}')", self.description(), self.vulkan_name())
    }
}

/// The optional features a device has.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceFeatures {
    enabled: Vec<Feature>,
}

impl DeviceFeatures {
    /// No optional feature: what every Vulkan 1.1 device has.
    pub fn none() -> Self {
        DeviceFeatures::default()
    }

    /// Every feature the lowering knows.
    pub fn all() -> Self {
        DeviceFeatures { enabled: Feature::ALL.to_vec() }
    }

    /// These features.
    pub fn with(features: impl IntoIterator<Item = Feature>) -> Self {
        let mut enabled = DeviceFeatures::none();
        for feature in features {
            enabled.enable(feature);
        }
        enabled
    }

    /// Adds a feature.
    pub fn enable(&mut self, feature: Feature) {
        if !self.enabled.contains(&feature) {
            self.enabled.push(feature);
        }
    }

    /// Whether the device has `feature`.
    pub fn has(&self, feature: Feature) -> bool {
        self.enabled.contains(&feature)
    }
}

/// The width of `index` on the device (see the crate docs for why 32 bits is the default).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum IndexWidth {
    /// 32-bit `index`: the GPU's native integer width.
    #[default]
    Bits32,
    /// 64-bit `index`, as on the host; needs [`Feature::Int64`].
    Bits64,
}

impl IndexWidth {
    /// The width in bits.
    pub fn bits(self) -> u32 {
        match self {
            IndexWidth::Bits32 => 32,
            IndexWidth::Bits64 => 64,
        }
    }
}

/// How to lower: the device's features and limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoweringOptions {
    /// The optional features the device has.
    pub features: DeviceFeatures,
    /// The width of `index` on the device.
    pub index_width: IndexWidth,
    /// The most bytes of push constants a kernel may use (`maxPushConstantsSize`; Vulkan
    /// guarantees 128).
    pub max_push_constant_bytes: u32,
    /// The most bytes of workgroup memory a kernel may allocate (`maxComputeSharedMemorySize`;
    /// Vulkan guarantees 16384).
    pub max_workgroup_memory_bytes: u32,
    /// The most work items in a workgroup (`maxComputeWorkGroupInvocations`; Vulkan guarantees
    /// 128).
    pub max_workgroup_invocations: u32,
    /// The largest workgroup size per dimension (`maxComputeWorkGroupSize`; Vulkan guarantees
    /// 128 x 128 x 64).
    pub max_workgroup_size: [u32; 3],
    /// Whether the lowering may give a kernel that cannot observe its workgroup (no barrier, no
    /// workgroup memory, no local or group id, workgroup size or group count, in it or what it
    /// calls) another shape: a multi-dimensional workgroup 4 to 31 wide in x becomes 32 x 8
    /// (docs/lowering.md, "The workgroup's shape"). Off by default: the module keeps the
    /// declared sizes.
    pub choose_workgroup_shape: bool,
    /// Whether a kernel whose every buffer access is at its own global id in x may run four
    /// work items per invocation with `vec4` accesses (`EntryPoint::items_per_invocation`;
    /// docs/lowering.md, "Wide kernels"). Off by default.
    pub vectorize_accesses: bool,
    /// How many consecutive rows of work items a stencil kernel may run per invocation,
    /// sharing the loads of buffers it never writes (`EntryPoint::rows_per_invocation`;
    /// docs/lowering.md, "Coarsened kernels"). 1 (the default) leaves every kernel alone.
    pub coarsen_rows: u32,
}

impl Default for LoweringOptions {
    fn default() -> Self {
        LoweringOptions {
            features: DeviceFeatures::none(),
            index_width: IndexWidth::Bits32,
            max_push_constant_bytes: 128,
            max_workgroup_memory_bytes: 16384,
            max_workgroup_invocations: 128,
            max_workgroup_size: [128, 128, 64],
            choose_workgroup_shape: false,
            vectorize_accesses: false,
            coarsen_rows: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_name_the_vulkan_feature() {
        assert_eq!(Feature::Int64.to_string(), "64-bit integers (Vulkan feature 'shaderInt64')");
        let features = DeviceFeatures::with([Feature::Float64, Feature::Float64]);
        assert!(features.has(Feature::Float64));
        assert!(!features.has(Feature::Int64));
        assert!(Feature::ALL.iter().all(|&f| DeviceFeatures::all().has(f)));
    }
}
