//! The pose patch: a compute pass at the start of a frame that fills in the pose of the
//! frame's segment and leaf instances from a pose in a device buffer, with
//! `shaders/glsl/pose_patch.comp`: the GPU dynamics' pose
//! ([`DevicePose`](crate::device_pose::DevicePose), never read back,
//! never uploaded), or a pose on the CPU uploaded with the frame (`HostPose`: the segments'
//! bases and orientations, 32 bytes per segment, written to the frame slot's host-visible
//! buffer), so that the simulation thread copies the pose instead of writing every instance.
//!
//! The frame's segment and leaf instances as filled (indices and static data: the
//! *templates*) depend on the camera and the levels of detail, not on the pose. They are kept
//! in a device-local buffer and uploaded only when they change (compared with the last ones
//! uploaded, [`PosePatch::unchanged`]): with a still camera, a frame uploads no per-instance
//! data at all. The patch reads the templates and writes the instances drawn into the frame
//! slot's device-local buffer.
//!
//! It runs on the graphics queue in the frame's command buffer. For a pose on the device the
//! frame's submission waits for the pose's timeline value (the dynamics run on the compute
//! queue, perhaps of another family; the pose buffers are shared `CONCURRENT` between the two
//! families then, so no ownership transfer is needed) before the patch reads the pose; a pose
//! on the CPU is written before the submission, which makes host writes visible. A barrier
//! makes the patched instances visible to the vertex input of the passes after it.
//!
//! Invariants: one descriptor set per frame slot, rewritten only when the slot's previous
//! frame has finished (after `begin_frame` waited for its fence); the slot keeps the
//! `DevicePose` (its buffer and semaphore), or its uploaded pose buffer, until its fence
//! signals again; the segment instances come first in the instance buffer, then the leaf
//! instances (`InstanceLayout`), and so in the templates and the instances drawn; the
//! templates are shared by the slots and written only on the graphics queue, after a barrier
//! behind every earlier frame's patch (which reads them), so a frame in flight never sees them
//! change; a templates buffer replaced goes on the release list of the slot being recorded.

use ash::vk;
use gpu_allocator::MemoryLocation;
use sylva_shaders::{PosePatchPush, POSE_PATCH_LOCAL_SIZE};

use super::FRAMES_IN_FLIGHT;
use crate::descriptors::{storage_set_layout, whole, write_storage};
use crate::error::{vk_err, Result};
use crate::frame::RenderFrame;
use crate::gpu::{Buffer, Gpu, ReleaseList};
use crate::wind::compute_pipeline;

/// Bytes of one segment or leaf instance (`SegmentInstance`, `LeafInstance`).
const INSTANCE_BYTES: u64 = 32;
const _: () = assert!(
    size_of::<sylva_shaders::SegmentInstance>() as u64 == INSTANCE_BYTES
        && size_of::<sylva_shaders::LeafInstance>() as u64 == INSTANCE_BYTES
);

/// The pose a patch reads: a buffer in `DevicePose`'s layout (or, with `leaves` 0, the
/// segments alone, for rigid leaves; see `HostPose`) and its counts.
#[derive(Clone, Copy, Debug)]
pub(super) struct PatchPose {
    pub(super) buffer: vk::Buffer,
    pub(super) segments: u32,
    pub(super) leaves: u32,
}

/// The patch's pipeline and descriptor sets.
pub(super) struct PosePatch {
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    pool: vk::DescriptorPool,
    sets: [vk::DescriptorSet; FRAMES_IN_FLIGHT],
    /// The templates on the device, and a copy of the last ones uploaded.
    templates: Option<Buffer>,
    uploaded: Vec<u8>,
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
            templates: None,
            uploaded: Vec::new(),
        };
        if let Err(e) = p.create(gpu) {
            p.destroy(gpu);
            return Err(e);
        }
        Ok(p)
    }

    fn create(&mut self, gpu: &Gpu) -> Result<()> {
        let dev = &gpu.device;
        self.set_layout = storage_set_layout(dev, 3)?;
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
            descriptor_count: 3 * FRAMES_IN_FLIGHT as u32,
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

    /// Whether `frame`'s segment and leaf instances are the templates last uploaded.
    pub(super) fn unchanged(&self, frame: &RenderFrame) -> bool {
        let lists = frame
            .segments
            .iter()
            .map(|v| bytemuck::cast_slice::<_, u8>(v))
            .chain(frame.leaves.iter().map(|v| bytemuck::cast_slice::<_, u8>(v)));
        let mut at = 0;
        for bytes in lists {
            if self.uploaded.get(at..at + bytes.len()) != Some(bytes) {
                return false;
            }
            at += bytes.len();
        }
        at == self.uploaded.len()
    }

    /// Records the upload of `frame`'s templates, which the caller wrote at the start of
    /// `staging` (the slot's instance buffer): the copy into the templates buffer (made larger
    /// when needed, the old one onto `release`), behind every earlier frame's patch.
    ///
    /// # Safety
    ///
    /// `cmd` is recording on the graphics family; `staging` holds the templates from offset 0
    /// and stays alive until the frame's fence signals.
    pub(super) unsafe fn record_upload(
        &mut self,
        gpu: &Gpu,
        cmd: vk::CommandBuffer,
        frame: &RenderFrame,
        staging: vk::Buffer,
        release: &mut ReleaseList,
    ) -> Result<()> {
        // Unknown until the frame is submitted ([`confirm`](Self::confirm)): a frame that
        // fails to submit leaves the next one to upload again.
        self.uploaded.clear();
        let bytes = (frame.segments.iter().map(Vec::len).sum::<usize>() * INSTANCE_BYTES as usize
            + frame.leaves.iter().map(Vec::len).sum::<usize>() * INSTANCE_BYTES as usize) as u64;
        if bytes == 0 {
            return Ok(());
        }
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        let templates = grow_device(gpu, &mut self.templates, release, bytes, usage, "pose patch templates")?;
        let dev = &gpu.device;
        let region = [vk::BufferCopy {
            src_offset: 0,
            dst_offset: 0,
            size: bytes,
        }];
        // SAFETY: the caller's contract; both buffers are alive and large enough. The first
        // barrier orders the copy after every earlier frame's patch on this queue (which read
        // the templates), the second makes the copy visible to this frame's patch.
        unsafe {
            let before = [vk::MemoryBarrier2::default()
                .src_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
                .src_access_mask(vk::AccessFlags2::NONE)
                .dst_stage_mask(vk::PipelineStageFlags2::COPY)
                .dst_access_mask(vk::AccessFlags2::TRANSFER_WRITE)];
            dev.cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&before));
            dev.cmd_copy_buffer(cmd, staging, templates.raw, &region);
            let after = [vk::MemoryBarrier2::default()
                .src_stage_mask(vk::PipelineStageFlags2::COPY)
                .src_access_mask(vk::AccessFlags2::TRANSFER_WRITE)
                .dst_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
                .dst_access_mask(vk::AccessFlags2::SHADER_STORAGE_READ)];
            dev.cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&after));
        }
        Ok(())
    }

    /// Notes `frame`'s templates as those on the device, once the frame that uploads them
    /// ([`record_upload`](Self::record_upload)) is submitted.
    pub(super) fn confirm(&mut self, frame: &RenderFrame) {
        self.uploaded.clear();
        for v in &frame.segments {
            self.uploaded.extend_from_slice(bytemuck::cast_slice(v));
        }
        for v in &frame.leaves {
            self.uploaded.extend_from_slice(bytemuck::cast_slice(v));
        }
    }

    /// Records the patch of `segments` segment instances, then `leaves` leaf instances, from
    /// the templates and `pose` into `drawn` (the slot's buffer of instances drawn, made larger
    /// when needed, the old one onto `release`), with slot `slot`'s set; then the barrier to
    /// the vertex input. Returns the buffer drawn from.
    ///
    /// # Safety
    ///
    /// `cmd` is recording on the graphics family; slot `slot`'s previous frame has finished;
    /// the templates hold `segments + leaves` instances (uploaded for this frame or an earlier
    /// one with the same templates); `pose.buffer` holds the pose its counts say, complete
    /// before the patch runs (a pose on the device: the frame's submission waits for its
    /// timeline value) and alive and unwritten until the frame's fence signals.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn record(
        &self,
        gpu: &Gpu,
        cmd: vk::CommandBuffer,
        slot: usize,
        pose: PatchPose,
        drawn: &mut Option<Buffer>,
        release: &mut ReleaseList,
        (segments, leaves): (u32, u32),
    ) -> Result<Option<vk::Buffer>> {
        let count = segments + leaves;
        let Some(templates) = self.templates.as_ref().filter(|_| count > 0) else {
            return Ok(None);
        };
        let bytes = count as u64 * INSTANCE_BYTES;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::VERTEX_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC;
        let drawn = grow_device(gpu, drawn, release, bytes, usage, "pose patch instances")?.raw;
        let dev = &gpu.device;
        let set = self.sets[slot];
        // Only the instances patched (the buffers may be larger than a storage binding can be).
        let range = |buffer| {
            [vk::DescriptorBufferInfo {
                buffer,
                offset: 0,
                range: bytes,
            }]
        };
        let infos = [
            (set, 0, whole(pose.buffer)),
            (set, 1, range(templates.raw)),
            (set, 2, range(drawn)),
        ];
        let push = PosePatchPush {
            counts: [pose.segments, pose.leaves, segments, leaves],
        };
        // SAFETY: the caller's contract: the set is not in use (the slot's frame finished), the
        // buffers are alive, `cmd` is recording; the pipeline, layout and push block match.
        // The slot's previous frame, the last to read `drawn`, has finished.
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
        Ok(Some(drawn))
    }

    /// Destroys what exists (null handles are skipped). Nothing may use them.
    pub(super) fn destroy(&mut self, gpu: &Gpu) {
        if let Some(b) = self.templates.take() {
            gpu.destroy_buffer(b);
        }
        self.uploaded = Vec::new();
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

/// Makes sure `buffer` is a device-local buffer of at least `bytes`, replacing it (onto
/// `release`) if not.
fn grow_device<'a>(
    gpu: &Gpu,
    buffer: &'a mut Option<Buffer>,
    release: &mut ReleaseList,
    bytes: u64,
    usage: vk::BufferUsageFlags,
    name: &str,
) -> Result<&'a mut Buffer> {
    if buffer.as_ref().is_none_or(|b| b.size < bytes) {
        // Room to grow by half again, as the renderer's other per-frame buffers.
        let size = (bytes + bytes / 2).max(64 * 1024);
        let new = gpu.create_buffer(name, size, usage, MemoryLocation::GpuOnly)?;
        if let Some(old) = buffer.replace(new) {
            release.push(old);
        }
    }
    Ok(buffer.as_mut().expect("just ensured"))
}
