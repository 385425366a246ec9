//! The compute pipelines of [`GpuOliapuram`](super::GpuOliapuram) and their descriptors: one set
//! layout of [`BINDINGS`] storage buffers (listed in `shaders/glsl/oliapuram_common.glsl`), one
//! push block ([`OliapuramPush`]), the seven kernels (the step's three and the breakage rule's
//! four), and two descriptor sets, one per parity
//! of the state: set `p` reads state copy `p` and writes copy `1 − p`.
//!
//! Invariant: a set is rewritten ([`Pipelines::write`]) only while no submission that uses it
//! is pending (the driver waits for its previous submission before recording the next).

use ash::vk;
use sylva_shaders::OliapuramPush;

use super::buffers::DeviceBuffers;
use crate::descriptors::{storage_set_layout, whole, write_storage};
use crate::error::{vk_err, RenderError, Result};
use crate::gpu::Gpu;
use crate::wind::compute_pipeline;

/// Storage buffers the kernels bind.
pub(super) const BINDINGS: u32 = 17;

/// The kernels, in the order of [`Pipelines::pipelines`].
#[derive(Clone, Copy)]
pub(super) enum Kernel {
    Dynamics,
    Integrate,
    Pose,
    /// The breakage rule's subtree sums and moments, one level (`oliapuram_subtree.comp`).
    Subtree,
    /// The broken pieces' pose into the renderer's (`oliapuram_patch.comp`).
    Patch,
    /// The breakage rule's sums and moments, one tree per workgroup
    /// (`oliapuram_subtree_trees.comp`).
    SubtreeTrees,
    /// The breakage rule's loads per segment with its leaves (`oliapuram_loads.comp`).
    Loads,
}

/// Layouts, pipelines and the two descriptor sets.
pub(super) struct Pipelines {
    pub set_layout: vk::DescriptorSetLayout,
    pub layout: vk::PipelineLayout,
    pub pipelines: [vk::Pipeline; 7],
    pub pool: vk::DescriptorPool,
    pub sets: [vk::DescriptorSet; 2],
}

impl Pipelines {
    /// Creates everything; on failure, destroys what was made.
    pub fn new(gpu: &Gpu) -> Result<Pipelines> {
        let limits = &gpu.properties.limits;
        if limits.max_per_stage_descriptor_storage_buffers < BINDINGS {
            return Err(RenderError::NoDevice(format!(
                "{} binds {} storage buffers per shader stage, the GPU dynamics need {BINDINGS}",
                gpu.name(),
                limits.max_per_stage_descriptor_storage_buffers
            )));
        }
        let mut p = Pipelines {
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipelines: [vk::Pipeline::null(); 7],
            pool: vk::DescriptorPool::null(),
            sets: [vk::DescriptorSet::null(); 2],
        };
        if let Err(e) = p.create(gpu) {
            p.destroy(gpu);
            return Err(e);
        }
        Ok(p)
    }

    fn create(&mut self, gpu: &Gpu) -> Result<()> {
        let dev = &gpu.device;
        self.set_layout = storage_set_layout(dev, BINDINGS)?;
        let ranges = [vk::PushConstantRange {
            stage_flags: vk::ShaderStageFlags::COMPUTE,
            offset: 0,
            size: size_of::<OliapuramPush>() as u32,
        }];
        let layouts = [self.set_layout];
        let info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&layouts)
            .push_constant_ranges(&ranges);
        // SAFETY: the set layout was just created from this device.
        self.layout = unsafe { dev.create_pipeline_layout(&info, None) }.map_err(vk_err("vkCreatePipelineLayout"))?;
        let shaders = [
            &sylva_shaders::OLIAPURAM_DYNAMICS_COMP,
            &sylva_shaders::OLIAPURAM_INTEGRATE_COMP,
            &sylva_shaders::OLIAPURAM_POSE_COMP,
            &sylva_shaders::OLIAPURAM_SUBTREE_COMP,
            &sylva_shaders::OLIAPURAM_PATCH_COMP,
            &sylva_shaders::OLIAPURAM_SUBTREE_TREES_COMP,
            &sylva_shaders::OLIAPURAM_LOADS_COMP,
        ];
        for (k, spirv) in shaders.into_iter().enumerate() {
            // The kernels declare the layout's storage buffers and push block.
            self.pipelines[k] = compute_pipeline(gpu, self.layout, spirv, None)?;
        }
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: 2 * BINDINGS,
        }];
        let info = vk::DescriptorPoolCreateInfo::default().max_sets(2).pool_sizes(&sizes);
        // SAFETY: valid device and create info.
        self.pool = unsafe { dev.create_descriptor_pool(&info, None) }.map_err(vk_err("vkCreateDescriptorPool"))?;
        let layouts = [self.set_layout; 2];
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(self.pool)
            .set_layouts(&layouts);
        // SAFETY: the pool has room for exactly these sets.
        let sets = unsafe { dev.allocate_descriptor_sets(&alloc) }.map_err(vk_err("vkAllocateDescriptorSets"))?;
        self.sets.copy_from_slice(&sets);
        Ok(())
    }

    /// Points both sets at `b`, with `fluid` (the GPU wind's velocities, or `b.no_fluid`) at
    /// binding 10. No submission using the sets may be pending.
    pub fn write(&self, gpu: &Gpu, b: &DeviceBuffers, fluid: vk::Buffer) {
        let mut infos = Vec::with_capacity(2 * BINDINGS as usize);
        for p in 0..2 {
            let order = [
                b.segs.raw,
                b.leaves.raw,
                b.seg_state[p].raw,
                b.seg_state[1 - p].raw,
                b.leaf_state[p].raw,
                b.leaf_state[1 - p].raw,
                b.level.raw,
                b.poses.current().raw(),
                b.samples.raw,
                b.points.raw,
                fluid,
                b.status.raw,
                b.loads.raw,
                b.brk.raw,
                b.sums.raw,
                b.over.raw,
                b.patch.raw,
            ];
            for (i, buffer) in order.into_iter().enumerate() {
                infos.push((self.sets[p], i as u32, whole(buffer)));
            }
        }
        // SAFETY: every set and buffer is alive; no pending submission uses the sets (the
        // caller's guarantee).
        unsafe { write_storage(&gpu.device, &infos) };
    }

    /// Points binding 7 (the renderer's pose) of both sets at `pose`. No submission using the
    /// sets may be pending.
    pub fn write_pose(&self, gpu: &Gpu, pose: vk::Buffer) {
        let infos = [(self.sets[0], 7, whole(pose)), (self.sets[1], 7, whole(pose))];
        // SAFETY: the sets and the buffer are alive; no pending submission uses the sets (the
        // caller's guarantee).
        unsafe { write_storage(&gpu.device, &infos) };
    }

    /// Points binding 16 (the broken pieces' pose) of both sets at `patch`. No submission
    /// using the sets may be pending.
    pub fn write_patch(&self, gpu: &Gpu, patch: vk::Buffer) {
        let infos = [(self.sets[0], 16, whole(patch)), (self.sets[1], 16, whole(patch))];
        // SAFETY: the sets and the buffer are alive; no pending submission uses the sets (the
        // caller's guarantee).
        unsafe { write_storage(&gpu.device, &infos) };
    }

    /// Records one dispatch of `kernel` over `count` invocations with set `parity`
    /// ([`Kernel::SubtreeTrees`]: `count` workgroups).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        cmd: vk::CommandBuffer,
        kernel: Kernel,
        parity: usize,
        push: &OliapuramPush,
        count: u32,
    ) {
        if count == 0 {
            return;
        }
        let dev = &gpu.device;
        // SAFETY: `cmd` is recording on the compute family; the pipeline, layout and set are
        // alive and compatible; the push block matches the layout's range.
        unsafe {
            dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipelines[kernel as usize]);
            dev.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.layout,
                0,
                &[self.sets[parity]],
                &[],
            );
            dev.cmd_push_constants(
                cmd,
                self.layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                bytemuck::bytes_of(push),
            );
            let groups = match kernel {
                Kernel::SubtreeTrees => count,
                _ => count.div_ceil(sylva_shaders::OLIAPURAM_LOCAL_SIZE),
            };
            dev.cmd_dispatch(cmd, groups, 1, 1);
        }
    }

    /// Destroys what exists (null handles are skipped by Vulkan). Nothing may use them.
    pub fn destroy(&mut self, gpu: &Gpu) {
        let dev = &gpu.device;
        // SAFETY: no pending submission uses these (the caller's guarantee); destroying a null
        // handle is a no-op.
        unsafe {
            for p in self.pipelines {
                dev.destroy_pipeline(p, None);
            }
            dev.destroy_pipeline_layout(self.layout, None);
            dev.destroy_descriptor_pool(self.pool, None);
            dev.destroy_descriptor_set_layout(self.set_layout, None);
        }
        *self = Pipelines {
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipelines: [vk::Pipeline::null(); 7],
            pool: vk::DescriptorPool::null(),
            sets: [vk::DescriptorSet::null(); 2],
        };
    }
}
