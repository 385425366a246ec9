//! The pose patch: a compute pass at the start of a frame that fills in the pose of the
//! frame's segment and leaf instances from a pose on the device ([`DevicePose`], the GPU
//! dynamics' output), with `shaders/glsl/pose_patch.comp`, so the pose is drawn where the
//! dynamics left it: never read back, never uploaded.
//!
//! It runs on the graphics queue in the frame's command buffer. The frame's submission waits
//! for the pose's timeline value (the dynamics run on the compute queue, perhaps of another
//! family; the pose buffers are shared `CONCURRENT` between the two families then, so no
//! ownership transfer is needed) before the patch reads the pose, and a barrier makes the
//! patched instances visible to the vertex input of the passes after it.
//!
//! Invariants: one descriptor set per frame slot, rewritten only when the slot's previous
//! frame has finished (after `begin_frame` waited for its fence); the slot keeps the
//! [`DevicePose`] (its buffer and semaphore) until its fence signals again; the segment
//! instances come first in the instance buffer, then the leaf instances (`InstanceLayout`).

use ash::vk;
use sylva_shaders::{PosePatchPush, POSE_PATCH_LOCAL_SIZE};

use super::FRAMES_IN_FLIGHT;
use crate::descriptors::{storage_set_layout, whole, write_storage};
use crate::device_pose::DevicePose;
use crate::error::{vk_err, Result};
use crate::gpu::Gpu;
use crate::wind::compute_pipeline;

/// Bytes of one segment or leaf instance (`SegmentInstance`, `LeafInstance`).
const INSTANCE_BYTES: u64 = 32;
const _: () = assert!(
    size_of::<sylva_shaders::SegmentInstance>() as u64 == INSTANCE_BYTES
        && size_of::<sylva_shaders::LeafInstance>() as u64 == INSTANCE_BYTES
);

/// The patch's pipeline and descriptor sets.
pub(super) struct PosePatch {
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    pool: vk::DescriptorPool,
    sets: [vk::DescriptorSet; FRAMES_IN_FLIGHT],
}

impl PosePatch {
    /// Creates the pipeline and one set per frame slot; on failure, destroys what was made.
    pub(super) fn new(gpu: &Gpu) -> Result<PosePatch> {
        let mut p = PosePatch {
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            pool: vk::DescriptorPool::null(),
            sets: [vk::DescriptorSet::null(); FRAMES_IN_FLIGHT],
        };
        if let Err(e) = p.create(gpu) {
            p.destroy(gpu);
            return Err(e);
        }
        Ok(p)
    }

    fn create(&mut self, gpu: &Gpu) -> Result<()> {
        let dev = &gpu.device;
        self.set_layout = storage_set_layout(dev, 2)?;
        let ranges = [vk::PushConstantRange {
            stage_flags: vk::ShaderStageFlags::COMPUTE,
            offset: 0,
            size: size_of::<PosePatchPush>() as u32,
        }];
        let layouts = [self.set_layout];
        let info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&layouts)
            .push_constant_ranges(&ranges);
        // SAFETY: the set layout was just created from this device.
        self.layout = unsafe { dev.create_pipeline_layout(&info, None) }.map_err(vk_err("vkCreatePipelineLayout"))?;
        self.pipeline = compute_pipeline(gpu, self.layout, &sylva_shaders::POSE_PATCH_COMP, None)?;
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: 2 * FRAMES_IN_FLIGHT as u32,
        }];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(FRAMES_IN_FLIGHT as u32)
            .pool_sizes(&sizes);
        // SAFETY: valid device and create info.
        self.pool = unsafe { dev.create_descriptor_pool(&info, None) }.map_err(vk_err("vkCreateDescriptorPool"))?;
        let layouts = [self.set_layout; FRAMES_IN_FLIGHT];
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(self.pool)
            .set_layouts(&layouts);
        // SAFETY: the pool has room for exactly these sets.
        let sets = unsafe { dev.allocate_descriptor_sets(&alloc) }.map_err(vk_err("vkAllocateDescriptorSets"))?;
        self.sets.copy_from_slice(&sets);
        Ok(())
    }

    /// Records the patch of `segments` segment instances, then `leaves` leaf instances, at the
    /// start of `instances`, from `pose`, with slot `slot`'s set; then the barrier to the
    /// vertex input. Records nothing when there is nothing to patch.
    ///
    /// # Safety
    ///
    /// `cmd` is recording on the graphics family; slot `slot`'s previous frame has finished;
    /// `instances` holds at least that many instances; the frame's submission waits for
    /// `pose`'s timeline value and keeps `pose` until its fence signals.
    pub(super) unsafe fn record(
        &self,
        gpu: &Gpu,
        cmd: vk::CommandBuffer,
        slot: usize,
        pose: &DevicePose,
        instances: vk::Buffer,
        (segments, leaves): (u32, u32),
    ) {
        let count = segments + leaves;
        if count == 0 {
            return;
        }
        let dev = &gpu.device;
        let set = self.sets[slot];
        // The instances patched only (the buffer may be larger than a storage binding can be).
        let patched = [vk::DescriptorBufferInfo {
            buffer: instances,
            offset: 0,
            range: count as u64 * INSTANCE_BYTES,
        }];
        let infos = [(set, 0, whole(pose.buffer.raw())), (set, 1, patched)];
        let push = PosePatchPush {
            counts: [pose.segments, pose.leaves, segments, leaves],
        };
        // SAFETY: the caller's contract: the set is not in use (the slot's frame finished), the
        // buffers are alive, `cmd` is recording; the pipeline, layout and push block match.
        unsafe {
            write_storage(dev, &infos);
            dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipeline);
            dev.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, self.layout, 0, &[set], &[]);
            dev.cmd_push_constants(
                cmd,
                self.layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                bytemuck::bytes_of(&push),
            );
            dev.cmd_dispatch(cmd, count.div_ceil(POSE_PATCH_LOCAL_SIZE), 1, 1);
            let b = [vk::MemoryBarrier2::default()
                .src_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
                .src_access_mask(vk::AccessFlags2::SHADER_STORAGE_WRITE)
                .dst_stage_mask(vk::PipelineStageFlags2::VERTEX_ATTRIBUTE_INPUT)
                .dst_access_mask(vk::AccessFlags2::VERTEX_ATTRIBUTE_READ)];
            dev.cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&b));
        }
    }

    /// Destroys what exists (null handles are skipped). Nothing may use them.
    pub(super) fn destroy(&mut self, gpu: &Gpu) {
        let dev = &gpu.device;
        // SAFETY: no pending work uses these (the caller's guarantee); destroying a null handle
        // is a no-op.
        unsafe {
            dev.destroy_pipeline(self.pipeline, None);
            dev.destroy_pipeline_layout(self.layout, None);
            dev.destroy_descriptor_pool(self.pool, None);
            dev.destroy_descriptor_set_layout(self.set_layout, None);
        }
        self.pipeline = vk::Pipeline::null();
        self.layout = vk::PipelineLayout::null();
        self.pool = vk::DescriptorPool::null();
        self.set_layout = vk::DescriptorSetLayout::null();
    }
}
