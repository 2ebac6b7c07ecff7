//! Compiled kernels: compute pipelines, cached by a hash of the SPIR-V module and the entry
//! point, so that the same kernel compiled by several executors is one pipeline (and created
//! with the device's pipeline cache, which a later process loads from disk:
//! `pipeline_cache.rs`); and
//! descriptor sets, cached by the kernel's set layout and the buffers bound, so that a
//! dispatch of the same kernel on the same buffers reuses its set. A set that names a freed buffer is dropped from the cache
//! and freed once the commands that may use it are done (the backend's retired list).
//!
//! Each kernel's layout: descriptor set 0 with one storage buffer per buffer parameter
//! (bindings 0, 1, ... as the lowering numbers them), and the lowering's push-constant block.
//!
//! **Specialisation.** The lowering puts the workgroup size in the module; its one
//! specialisation constant turns the check of each work item against the grid off
//! ([`hat_lowering::EntryPoint::whole_grid_constant`]). A kernel's pipeline leaves it `false`
//! (correct for any grid); a second pipeline with it `true`, for dispatches whose grid is whole
//! workgroups, is made on the first such dispatch ([`Kernels::whole_grid_pipeline`]) and kept
//! with the kernel.

use crate::errors::vk_error;
use crate::pipeline_cache::{self, PipelineCache};
use ash::vk;
use hat_lowering::{EntryPoint, SpirvModule};
use hat_runtime::RuntimeError;
use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;
use std::ffi::CString;
use std::hash::{Hash, Hasher};

/// A module lowered for the device, as the executor hands it back in each kernel's artifact.
#[derive(Debug)]
pub struct SpirvLowered(pub SpirvModule);

impl hat_runtime::LoweredModule for SpirvLowered {
    fn parameter_access(&self, kernel: &str) -> Option<Vec<(bool, bool)>> {
        let entry = self.0.entry_points.iter().find(|e| e.name == kernel)?;
        let count = entry.bindings.len() + entry.push_constants.scalars.len();
        let mut access = vec![(false, false); count];
        for binding in &entry.bindings {
            if let Some(slot) = access.get_mut(binding.parameter) {
                *slot = (binding.access.read, binding.access.write);
            }
        }
        Some(access)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A compiled kernel.
pub(crate) struct Kernel {
    /// The pipeline for any grid.
    pub pipeline: vk::Pipeline,
    /// The pipeline without the check against the grid, once a dispatch needed it.
    pub whole_grid: Option<vk::Pipeline>,
    pub shader: vk::ShaderModule,
    /// The module's stable hash ([`pipeline_cache::words_hash`]).
    pub module_hash: u64,
    pub layout: vk::PipelineLayout,
    pub set_layout: vk::DescriptorSetLayout,
    pub entry: EntryPoint,
}

/// The buffers of a descriptor set: (slot, generation) of each binding's device buffer.
pub(crate) type Bound = SmallVec<[(u32, u32); 8]>;

/// Pipelines, layouts and descriptor sets. See the module documentation.
#[derive(Default)]
pub(crate) struct Kernels {
    pub list: Vec<Kernel>,
    /// By the hash of (module, entry point, specialisation): the kernel's index.
    cache: FxHashMap<u64, u32>,
    /// By the hash of the words: the shader module and its stable hash.
    modules: FxHashMap<u64, (vk::ShaderModule, u64)>,
    /// By (bindings, push-constant bytes).
    layouts: FxHashMap<(u32, u32), (vk::DescriptorSetLayout, vk::PipelineLayout)>,
    pools: Vec<vk::DescriptorPool>,
    /// By (set layout, buffers): the set and the pool it came from.
    sets: FxHashMap<(vk::DescriptorSetLayout, Bound), (vk::DescriptorSet, usize)>,
}

/// Sets per descriptor pool, and storage-buffer descriptors per set on average.
const SETS_PER_POOL: u32 = 1024;
const BUFFERS_PER_SET: u32 = 8;

/// The compute pipeline of `entry` in `shader`; with `whole_grid`, the boolean specialisation
/// constant of that id set `true`.
/// `module_hash` is the module's stable hash ([`pipeline_cache::words_hash`]), by which the
/// pipeline cache lists the pipeline.
fn create_pipeline(
    device: &ash::Device,
    cache: &mut PipelineCache,
    (shader, module_hash): (vk::ShaderModule, u64),
    layout: vk::PipelineLayout,
    entry: &EntryPoint,
    whole_grid: Option<u32>,
) -> Result<vk::Pipeline, RuntimeError> {
    let name = CString::new(entry.name.as_str())
        .map_err(|_| RuntimeError::Backend(format!("vulkan: the kernel name '{}' has a NUL", entry.name)))?;
    // A SPIR-V boolean specialisation constant takes a 32-bit VkBool32.
    let data = vk::TRUE.to_le_bytes();
    let entries = whole_grid.map(|id| [vk::SpecializationMapEntry::default().constant_id(id).offset(0).size(4)]);
    let specialization =
        entries.as_ref().map(|entries| vk::SpecializationInfo::default().map_entries(entries).data(&data));
    let mut stage =
        vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(shader).name(&name);
    if let Some(specialization) = &specialization {
        stage = stage.specialization_info(specialization);
    }
    let info = vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout);
    // The module, the entry point, the specialisation and the layout are valid.
    cache.create(device, info, pipeline_cache::pipeline_key(module_hash, &entry.name, whole_grid))
}

fn module_hash(words: &[u32]) -> u64 {
    let mut hasher = FxHasher::default();
    words.hash(&mut hasher);
    hasher.finish()
}

impl Kernels {
    /// The kernel `entry` of `module`, compiled once per module and entry point.
    pub(crate) fn compile(
        &mut self,
        device: &ash::Device,
        cache: &mut PipelineCache,
        module: &SpirvModule,
        entry: &EntryPoint,
    ) -> Result<u32, RuntimeError> {
        let words_hash = module_hash(&module.words);
        let mut hasher = FxHasher::default();
        (words_hash, module.words.len(), &entry.name).hash(&mut hasher);
        let key = hasher.finish();
        if let Some(&index) = self.cache.get(&key) {
            return Ok(index);
        }
        let (shader, module_hash) = match self.modules.get(&words_hash) {
            Some(&shader) => shader,
            None => {
                let info = vk::ShaderModuleCreateInfo::default().code(&module.words);
                // SAFETY: the words are a module the validator accepted.
                let shader =
                    unsafe { device.create_shader_module(&info, None) }.map_err(vk_error("create a shader module"))?;
                let shader = (shader, pipeline_cache::words_hash(&module.words));
                self.modules.insert(words_hash, shader);
                shader
            }
        };
        let bindings = entry.bindings.len() as u32;
        let push_bytes = entry.push_constants.size;
        let (set_layout, layout) = self.layout(device, bindings, push_bytes)?;
        let pipeline = create_pipeline(device, cache, (shader, module_hash), layout, entry, None)?;
        let entry = entry.clone();
        self.list.push(Kernel { pipeline, whole_grid: None, shader, module_hash, layout, set_layout, entry });
        let index = self.list.len() as u32 - 1;
        self.cache.insert(key, index);
        Ok(index)
    }

    /// The pipeline of kernel `kernel` without the check against the grid, made on first use;
    /// for a dispatch whose grid is, in every dimension, a multiple of the workgroup size times
    /// the work items per invocation, of a kernel whose entry point has the constant.
    pub(crate) fn whole_grid_pipeline(
        &mut self,
        device: &ash::Device,
        cache: &mut PipelineCache,
        kernel: u32,
    ) -> Result<vk::Pipeline, RuntimeError> {
        let kernel = &mut self.list[kernel as usize];
        if let Some(pipeline) = kernel.whole_grid {
            return Ok(pipeline);
        }
        let id = kernel.entry.whole_grid_constant.expect("asked only for kernels with the constant");
        let shader = (kernel.shader, kernel.module_hash);
        let pipeline = create_pipeline(device, cache, shader, kernel.layout, &kernel.entry, Some(id))?;
        kernel.whole_grid = Some(pipeline);
        Ok(pipeline)
    }

    fn layout(
        &mut self,
        device: &ash::Device,
        bindings: u32,
        push_bytes: u32,
    ) -> Result<(vk::DescriptorSetLayout, vk::PipelineLayout), RuntimeError> {
        if let Some(&layouts) = self.layouts.get(&(bindings, push_bytes)) {
            return Ok(layouts);
        }
        let list: Vec<vk::DescriptorSetLayoutBinding> = (0..bindings)
            .map(|binding| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(binding)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&list);
        // SAFETY: valid create infos.
        let set_layout = unsafe { device.create_descriptor_set_layout(&info, None) }
            .map_err(vk_error("create a descriptor set layout"))?;
        let ranges =
            [vk::PushConstantRange::default().stage_flags(vk::ShaderStageFlags::COMPUTE).offset(0).size(push_bytes)];
        let set_layouts = [set_layout];
        let mut info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
        if push_bytes > 0 {
            info = info.push_constant_ranges(&ranges);
        }
        // SAFETY: as above.
        let layout =
            unsafe { device.create_pipeline_layout(&info, None) }.map_err(vk_error("create a pipeline layout"))?;
        self.layouts.insert((bindings, push_bytes), (set_layout, layout));
        Ok((set_layout, layout))
    }

    /// The descriptor set of `kernel` with `buffers` bound (each a `VkBuffer`, an offset and a
    /// range: a window of an arena is part of its `VkBuffer`), made on first use.
    pub(crate) fn set(
        &mut self,
        device: &ash::Device,
        kernel: u32,
        bound: &Bound,
        buffers: &[(vk::Buffer, u64, u64)],
    ) -> Result<vk::DescriptorSet, RuntimeError> {
        let set_layout = self.list[kernel as usize].set_layout;
        if let Some(&(set, _)) = self.sets.get(&(set_layout, bound.clone())) {
            return Ok(set);
        }
        let (set, pool) = self.allocate_set(device, set_layout)?;
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = buffers
            .iter()
            .map(|&(buffer, offset, range)| {
                [vk::DescriptorBufferInfo::default().buffer(buffer).offset(offset).range(range)]
            })
            .collect();
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .enumerate()
            .map(|(binding, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(binding as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: a fresh set, not in use by any command.
        unsafe { device.update_descriptor_sets(&writes, &[]) };
        self.sets.insert((set_layout, bound.clone()), (set, pool));
        Ok(set)
    }

    fn allocate_set(
        &mut self,
        device: &ash::Device,
        set_layout: vk::DescriptorSetLayout,
    ) -> Result<(vk::DescriptorSet, usize), RuntimeError> {
        let layouts = [set_layout];
        if let Some(&pool) = self.pools.last() {
            let info = vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts);
            // SAFETY: a valid pool and layout.
            match unsafe { device.allocate_descriptor_sets(&info) } {
                Ok(sets) => return Ok((sets[0], self.pools.len() - 1)),
                Err(vk::Result::ERROR_OUT_OF_POOL_MEMORY | vk::Result::ERROR_FRAGMENTED_POOL) => {}
                Err(error) => return Err(vk_error("allocate a descriptor set")(error)),
            }
        }
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(SETS_PER_POOL * BUFFERS_PER_SET)];
        let info = vk::DescriptorPoolCreateInfo::default()
            .flags(vk::DescriptorPoolCreateFlags::FREE_DESCRIPTOR_SET)
            .max_sets(SETS_PER_POOL)
            .pool_sizes(&sizes);
        // SAFETY: a valid create info.
        let pool =
            unsafe { device.create_descriptor_pool(&info, None) }.map_err(vk_error("create a descriptor pool"))?;
        self.pools.push(pool);
        let info = vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts);
        // SAFETY: as above.
        let sets = unsafe { device.allocate_descriptor_sets(&info) }.map_err(vk_error("allocate a descriptor set"))?;
        Ok((sets[0], self.pools.len() - 1))
    }

    /// Takes out of the cache the sets that bind the buffer in `slot` of `generation`: they
    /// must be freed (with [`Kernels::free_sets`]) once no command may use them.
    pub(crate) fn evict(&mut self, slot: u32, generation: u32) -> Vec<(vk::DescriptorSet, usize)> {
        let mut evicted = Vec::new();
        self.sets.retain(|(_, bound), &mut set| {
            let keep = !bound.contains(&(slot, generation));
            if !keep {
                evicted.push(set);
            }
            keep
        });
        evicted
    }

    /// Frees sets that no command uses any more.
    pub(crate) fn free_sets(&mut self, device: &ash::Device, sets: &[(vk::DescriptorSet, usize)]) {
        for &(set, pool) in sets {
            // SAFETY: no pending command uses the set (the caller waited for them).
            let _ = unsafe { device.free_descriptor_sets(self.pools[pool], &[set]) };
        }
    }

    /// Compute pipelines made: one per kernel, and one more per kernel that ran a whole grid.
    pub(crate) fn pipeline_count(&self) -> usize {
        self.list.iter().map(|kernel| 1 + kernel.whole_grid.is_some() as usize).sum()
    }

    /// Destroys everything (no command may still run).
    pub(crate) fn destroy(&mut self, device: &ash::Device) {
        // SAFETY: the device is idle; each object is destroyed once.
        unsafe {
            for kernel in self.list.drain(..) {
                device.destroy_pipeline(kernel.pipeline, None);
                if let Some(pipeline) = kernel.whole_grid {
                    device.destroy_pipeline(pipeline, None);
                }
            }
            for (_, (set_layout, layout)) in self.layouts.drain() {
                device.destroy_pipeline_layout(layout, None);
                device.destroy_descriptor_set_layout(set_layout, None);
            }
            for (_, (module, _)) in self.modules.drain() {
                device.destroy_shader_module(module, None);
            }
            for pool in self.pools.drain(..) {
                device.destroy_descriptor_pool(pool, None);
            }
        }
        self.sets.clear();
        self.cache.clear();
    }
}
