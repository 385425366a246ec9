//! Frame slots: what each of the [`FRAMES_IN_FLIGHT`] frames owns (command pool and buffer,
//! fence, uniform, instance and overlay buffers, descriptor sets, timestamp queries, release
//! list, the pose its frame patched from, on the device or uploaded), waiting for a slot, growing its buffers, the render targets, and reading its GPU
//! timestamps.
//!
//! Invariants: a slot is reused only after its fence has signalled; a buffer or target
//! replaced while earlier frames may still read it goes on the release list of the slot being
//! recorded, freed when that slot's fence next signals (frames finish in submission order on
//! the one queue); a slot's queries are read once, after its fence, and only when its frame
//! wrote them (`queries_pending`).

use ash::vk;
use gpu_allocator::MemoryLocation;
use sylva_shaders::FrameUniforms;

use super::{Renderer, COLOR_FORMAT, DEPTH_FORMAT, FRAMES_IN_FLIGHT, TIMESTAMPS};
use crate::device_pose::DevicePose;
use crate::error::{vk_err, Result};
use crate::gpu::{Buffer, Gpu, ReleaseList};

pub(super) struct Slot {
    pub(super) pool: vk::CommandPool,
    pub(super) cmd: vk::CommandBuffer,
    pub(super) fence: vk::Fence,
    pub(super) uniforms: Buffer,
    pub(super) instances: Option<Buffer>,
    pub(super) overlay: Option<Buffer>,
    /// The segment and leaf instances the pose patch wrote for the slot's frame (device-local).
    pub(super) drawn: Option<Buffer>,
    /// The pose on the CPU uploaded for the pose patch of the slot's frame (host-visible).
    pub(super) host_pose: Option<Buffer>,
    pub(super) set: vk::DescriptorSet,
    /// The GPU wind field's velocity buffer, for `arrow_field.vert` (set 1).
    pub(super) field_set: vk::DescriptorSet,
    pub(super) queries: vk::QueryPool,
    /// The queries hold results of a submitted frame not yet read.
    pub(super) queries_pending: bool,
    pub(super) release: ReleaseList,
    /// The pose on the device the slot's frame read (its buffer and semaphore kept alive and
    /// unwritten until the frame's fence signals).
    pub(super) pose: Option<DevicePose>,
}

impl Renderer {
    pub(super) fn create_slot(&self) -> Result<Slot> {
        let gpu = &self.gpu;
        let dev = &gpu.device;
        let uniforms = gpu.create_buffer(
            "frame uniforms",
            size_of::<FrameUniforms>() as u64,
            vk::BufferUsageFlags::UNIFORM_BUFFER,
            MemoryLocation::CpuToGpu,
        )?;
        let mut slot = Slot {
            pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            uniforms,
            instances: None,
            overlay: None,
            drawn: None,
            host_pose: None,
            set: vk::DescriptorSet::null(),
            field_set: vk::DescriptorSet::null(),
            queries: vk::QueryPool::null(),
            queries_pending: false,
            release: ReleaseList::default(),
            pose: None,
        };
        let made = (|| {
            // SAFETY: valid device and create infos; the handles go into `slot`, which the
            // caller destroys on failure (below) or the renderer owns.
            unsafe {
                slot.pool = dev
                    .create_command_pool(
                        &vk::CommandPoolCreateInfo::default().queue_family_index(gpu.queues.graphics),
                        None,
                    )
                    .map_err(vk_err("vkCreateCommandPool"))?;
                slot.cmd = dev
                    .allocate_command_buffers(
                        &vk::CommandBufferAllocateInfo::default()
                            .command_pool(slot.pool)
                            .level(vk::CommandBufferLevel::PRIMARY)
                            .command_buffer_count(1),
                    )
                    .map_err(vk_err("vkAllocateCommandBuffers"))?[0];
                slot.fence = dev
                    .create_fence(
                        &vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED),
                        None,
                    )
                    .map_err(vk_err("vkCreateFence"))?;
                if gpu.timestamps.is_some() {
                    slot.queries = dev
                        .create_query_pool(
                            &vk::QueryPoolCreateInfo::default()
                                .query_type(vk::QueryType::TIMESTAMP)
                                .query_count(TIMESTAMPS),
                            None,
                        )
                        .map_err(vk_err("vkCreateQueryPool"))?;
                }
                let layouts = [self.set_layout];
                slot.set = dev
                    .allocate_descriptor_sets(
                        &vk::DescriptorSetAllocateInfo::default()
                            .descriptor_pool(self.descriptor_pool)
                            .set_layouts(&layouts),
                    )
                    .map_err(vk_err("vkAllocateDescriptorSets"))?[0];
                let field_layouts = [self.field_set_layout];
                slot.field_set = dev
                    .allocate_descriptor_sets(
                        &vk::DescriptorSetAllocateInfo::default()
                            .descriptor_pool(self.descriptor_pool)
                            .set_layouts(&field_layouts),
                    )
                    .map_err(vk_err("vkAllocateDescriptorSets"))?[0];
                let ubo = [vk::DescriptorBufferInfo {
                    buffer: slot.uniforms.raw,
                    offset: 0,
                    range: vk::WHOLE_SIZE,
                }];
                let shadow = [vk::DescriptorImageInfo {
                    sampler: self.shadow_sampler,
                    image_view: self.shadow.as_ref().expect("created before slots").view,
                    image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                }];
                let font = [vk::DescriptorImageInfo {
                    sampler: self.font_sampler,
                    image_view: self.font.as_ref().expect("created before slots").view,
                    image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                }];
                let writes = [
                    vk::WriteDescriptorSet::default()
                        .dst_set(slot.set)
                        .dst_binding(0)
                        .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
                        .buffer_info(&ubo),
                    vk::WriteDescriptorSet::default()
                        .dst_set(slot.set)
                        .dst_binding(1)
                        .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                        .image_info(&shadow),
                    vk::WriteDescriptorSet::default()
                        .dst_set(slot.set)
                        .dst_binding(2)
                        .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                        .image_info(&font),
                ];
                dev.update_descriptor_sets(&writes, &[]);
            }
            Ok(())
        })();
        match made {
            Ok(()) => Ok(slot),
            Err(e) => {
                // SAFETY: nothing was submitted with these objects; null handles are ignored.
                unsafe {
                    dev.destroy_command_pool(slot.pool, None);
                    dev.destroy_fence(slot.fence, None);
                    dev.destroy_query_pool(slot.queries, None);
                }
                gpu.destroy_buffer(slot.uniforms);
                Err(e)
            }
        }
    }

    /// Waits until the next frame slot is free (its previous frame finished) and returns its
    /// index, for [`Swapchain::acquire`](crate::swapchain::Swapchain::acquire).
    ///
    /// It also reads the slot's timestamps and frees its release list. Call it before taking
    /// the render command cache's read side: reading timestamps can wait for the GPU (lavapipe
    /// finishes all earlier work first), and the simulation must not wait for that.
    /// [`draw`](Self::draw) calls it too (then it returns at once).
    pub fn begin_frame(&mut self) -> Result<usize> {
        let si = self.slot;
        let fence = self.slots[si].fence;
        // SAFETY: the fence belongs to this device.
        unsafe { self.gpu.device.wait_for_fences(&[fence], true, u64::MAX) }.map_err(vk_err("vkWaitForFences"))?;
        self.collect_timestamps(si)?;
        let gpu = self.gpu.clone();
        self.slots[si].release.free(&gpu);
        // The frame that read this pose is done: the dynamics may write it again.
        self.slots[si].pose = None;
        Ok(si)
    }

    /// Waits for every frame in flight and reads their timestamps.
    pub fn finish(&mut self) -> Result<()> {
        let fences: Vec<vk::Fence> = self.slots.iter().map(|s| s.fence).collect();
        // SAFETY: the fences belong to this device.
        unsafe { self.gpu.device.wait_for_fences(&fences, true, u64::MAX) }.map_err(vk_err("vkWaitForFences"))?;
        for k in 1..=FRAMES_IN_FLIGHT {
            let si = (self.slot + k) % FRAMES_IN_FLIGHT;
            self.collect_timestamps(si)?;
        }
        Ok(())
    }

    /// Makes sure `slot`'s buffer holds `bytes`, replacing it (onto the release list) if not.
    pub(super) fn grow<'a>(
        gpu: &Gpu,
        buffer: &'a mut Option<Buffer>,
        release: &mut ReleaseList,
        bytes: u64,
        usage: vk::BufferUsageFlags,
        name: &str,
    ) -> Result<&'a mut Buffer> {
        if buffer.as_ref().is_none_or(|b| b.size < bytes) {
            // Room to grow by half again, so a slowly growing scene does not reallocate often.
            let size = (bytes + bytes / 2).max(64 * 1024);
            let new = gpu.create_buffer(name, size, usage, MemoryLocation::CpuToGpu)?;
            if let Some(old) = buffer.replace(new) {
                release.push(old);
            }
        }
        Ok(buffer.as_mut().expect("just ensured"))
    }

    pub(super) fn ensure_targets(&mut self, extent: vk::Extent2D, readback: bool, si: usize) -> Result<()> {
        let gpu = self.gpu.clone();
        if self.color.as_ref().is_none_or(|c| c.extent != extent) {
            let color = gpu.create_image(
                "color",
                extent,
                COLOR_FORMAT,
                vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
            )?;
            let depth = gpu.create_image_samples(
                "depth",
                extent,
                DEPTH_FORMAT,
                vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
                self.samples,
            )?;
            let color_ms = if self.samples == vk::SampleCountFlags::TYPE_1 {
                None
            } else {
                Some(gpu.create_image_samples(
                    "color (multisampled)",
                    extent,
                    COLOR_FORMAT,
                    vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSIENT_ATTACHMENT,
                    self.samples,
                )?)
            };
            // Frames already submitted finish before this slot's next fence signals.
            if let Some(old) = self.color.replace(color) {
                self.slots[si].release.push(old);
            }
            if let Some(old) = self.depth.replace(depth) {
                self.slots[si].release.push(old);
            }
            if let Some(old) = std::mem::replace(&mut self.color_ms, color_ms) {
                self.slots[si].release.push(old);
            }
        }
        let bytes = extent.width as u64 * extent.height as u64 * 4;
        if readback && self.readback.as_ref().is_none_or(|b| b.size < bytes) {
            let new = gpu.create_buffer(
                "readback",
                bytes,
                vk::BufferUsageFlags::TRANSFER_DST,
                MemoryLocation::GpuToCpu,
            )?;
            if let Some(old) = self.readback.replace(new) {
                self.slots[si].release.push(old);
            }
        }
        Ok(())
    }

    fn collect_timestamps(&mut self, si: usize) -> Result<()> {
        if !self.slots[si].queries_pending {
            return Ok(());
        }
        self.slots[si].queries_pending = false;
        let Some(clock) = self.gpu.timestamps else {
            return Ok(());
        };
        let mut ticks = [0u64; TIMESTAMPS as usize];
        // SAFETY: the slot's pool has TIMESTAMPS queries, written on the graphics queue by the
        // frame that used the slot, which has completed (its fence was waited).
        if !unsafe { clock.read(&self.gpu.device, self.slots[si].queries, &mut ticks, false) }? {
            return Ok(());
        }
        for (p, id) in self.gpu_timings.phase_ids().collect::<Vec<_>>().into_iter().enumerate() {
            self.gpu_timings.add(id, clock.span(ticks[p], ticks[p + 1]));
        }
        self.gpu_timings
            .end_frame(clock.span(ticks[0], ticks[TIMESTAMPS as usize - 1]));
        Ok(())
    }
}
