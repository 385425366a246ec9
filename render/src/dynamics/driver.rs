//! Records and submits the steps of [`GpuOliapuram`](super::GpuOliapuram) on the compute queue
//! (the dedicated compute family when the device has one), and reads the pose back.
//!
//! One step is one submission: the dynamics dispatch over every segment and leaf, then one
//! integration dispatch per depth level, root to tips, then the pose dispatch, with a compute →
//! compute barrier between dispatches (each reads what the one before wrote) and a compute →
//! host barrier at the end (the CPU reads the sample points and the status word).
//!
//! Synchronisation: every submission waits for the timeline value of the one before and
//! signals the next; a step that reads the GPU wind's field also waits for the wind's timeline
//! value. The driver has one command buffer: before recording, it waits on the host for its
//! previous submission, so at most one is in flight and the descriptor sets and host-visible
//! buffers may be written. Read-back ([`Device::read_back`]) records a copy in a command buffer
//! of its own (behind a mutex, so the pose can be read through `&self`) that waits for the
//! last step on the device, and waits for it with a fence.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ash::vk;
use gpu_allocator::MemoryLocation;
use sylva_shaders::OliapuramPush;
use sylva_sim::dynamics::oliapuram::OliapuramExport;

use super::buffers::{pack_leaves, pack_segments, pack_state, DeviceBuffers, Sizes};
use super::pipelines::{Kernel, Pipelines};
use crate::device_pose::DevicePose;
use crate::error::{vk_err, RenderError, Result};
use crate::gpu::Gpu;
use crate::timeline::Timeline;
use crate::timestamps::TimestampClock;

/// Timestamps per step: before the dynamics, after it, after the integration, after the pose.
const TIMESTAMPS: u32 = 4;

/// The read-back command buffer and its fence.
struct Readback {
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
}

/// What a read-back copies: the pose and the state, as `f32`s in the buffers' layouts.
pub(super) struct ReadBack {
    pub pose: Vec<f32>,
    pub seg_state: Vec<f32>,
    pub leaf_state: Vec<f32>,
}

/// Everything the GPU model owns on the device.
pub(super) struct Device {
    pub gpu: Arc<Gpu>,
    pub bufs: Option<DeviceBuffers>,
    pub pipes: Pipelines,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    /// The timeline every submission signals (shared with the frames that draw the pose).
    timeline: Arc<Timeline>,
    /// Last timeline value submitted.
    value: u64,
    readback: Mutex<Readback>,
    /// Which state copy holds the current state.
    pub parity: usize,
    pub n: u32,
    pub m: u32,
    /// Where each depth level starts (level indices), one more entry than levels.
    starts: Vec<u32>,
    /// The fluid buffer the sets point at.
    bound_fluid: vk::Buffer,
    /// The compute queue's timestamp clock (`None` when it records no timestamps).
    clock: Option<TimestampClock>,
    queries: vk::QueryPool,
    /// Whether the last submission wrote timestamps not read yet.
    timed: bool,
    /// Device time of the dynamics, integration and pose dispatches of the last step whose
    /// timestamps were read.
    phase_times: Option<[Duration; 3]>,
}

fn barrier(gpu: &Gpu, cmd: vk::CommandBuffer, src: vk::PipelineStageFlags2, dst: vk::PipelineStageFlags2) {
    let (src_access, dst_access) = (
        if src == vk::PipelineStageFlags2::TRANSFER {
            vk::AccessFlags2::TRANSFER_WRITE
        } else {
            vk::AccessFlags2::SHADER_STORAGE_WRITE
        },
        if dst == vk::PipelineStageFlags2::HOST {
            vk::AccessFlags2::HOST_READ
        } else if dst == vk::PipelineStageFlags2::TRANSFER {
            vk::AccessFlags2::TRANSFER_READ
        } else {
            vk::AccessFlags2::SHADER_STORAGE_READ | vk::AccessFlags2::SHADER_STORAGE_WRITE
        },
    );
    let b = [vk::MemoryBarrier2::default()
        .src_stage_mask(src)
        .src_access_mask(src_access)
        .dst_stage_mask(dst)
        .dst_access_mask(dst_access)];
    // SAFETY: `cmd` is recording.
    unsafe {
        gpu.device
            .cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&b))
    };
}

const COMPUTE: vk::PipelineStageFlags2 = vk::PipelineStageFlags2::COMPUTE_SHADER;

impl Device {
    /// Creates the buffers, pipelines and submission objects, uploads the model's static data
    /// and state and computes its pose.
    pub fn new(gpu: &Arc<Gpu>, e: &OliapuramExport) -> Result<Device> {
        let (n, m) = (e.order.len(), e.leaves.len());
        let groups = (n + m).div_ceil(sylva_shaders::OLIAPURAM_LOCAL_SIZE as usize) as u64;
        let limit = gpu.properties.limits.max_compute_work_group_count[0] as u64;
        if groups > limit || n + m > u32::MAX as usize / 2 {
            return Err(RenderError::Invalid {
                what: "forest for the GPU dynamics",
                value: format!("{n} segments and {m} leaves"),
                allowed: format!(
                    "at most {} segments and leaves together on {}",
                    limit * sylva_shaders::OLIAPURAM_LOCAL_SIZE as u64,
                    gpu.name()
                ),
            });
        }
        // Made first: if a later step fails, dropping it is all there is to undo.
        let timeline = Timeline::new(gpu)?;
        let pipes = Pipelines::new(gpu)?;
        let mut d = Device {
            gpu: gpu.clone(),
            bufs: None,
            pipes,
            pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
            timeline,
            value: 0,
            readback: Mutex::new(Readback {
                pool: vk::CommandPool::null(),
                cmd: vk::CommandBuffer::null(),
                fence: vk::Fence::null(),
            }),
            parity: 0,
            n: n as u32,
            m: m as u32,
            starts: e.starts.clone(),
            bound_fluid: vk::Buffer::null(),
            clock: TimestampClock::of_family(
                &gpu.instance,
                gpu.physical,
                gpu.queues.compute_family(),
                gpu.properties.limits.timestamp_period,
            ),
            queries: vk::QueryPool::null(),
            timed: false,
            phase_times: None,
        };
        // From here on, `d`'s Drop destroys whatever exists.
        d.bufs = Some(DeviceBuffers::new(gpu, n, m)?);
        d.create_submission()?;
        let no_fluid = d.bufs().no_fluid.raw;
        d.bind_fluid(no_fluid)?;
        d.upload(e, true)?;
        Ok(d)
    }

    pub fn bufs(&self) -> &DeviceBuffers {
        self.bufs.as_ref().expect("buffers exist while the device does")
    }

    fn bufs_mut(&mut self) -> &mut DeviceBuffers {
        self.bufs.as_mut().expect("buffers exist while the device does")
    }

    fn create_submission(&mut self) -> Result<()> {
        let dev = &self.gpu.device;
        let family = self.gpu.queues.compute_family();
        let make_pool = || {
            let info = vk::CommandPoolCreateInfo::default()
                .queue_family_index(family)
                .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
            // SAFETY: valid device and create info.
            unsafe { dev.create_command_pool(&info, None) }.map_err(vk_err("vkCreateCommandPool"))
        };
        let alloc = |pool| {
            let info = vk::CommandBufferAllocateInfo::default()
                .command_pool(pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            // SAFETY: the pool was created from this device.
            unsafe { dev.allocate_command_buffers(&info) }
                .map(|v| v[0])
                .map_err(vk_err("vkAllocateCommandBuffers"))
        };
        self.pool = make_pool()?;
        self.cmd = alloc(self.pool)?;
        {
            let rb = self.readback.get_mut().unwrap_or_else(|e| e.into_inner());
            rb.pool = make_pool()?;
            rb.cmd = alloc(rb.pool)?;
            // SAFETY: valid device.
            rb.fence =
                unsafe { dev.create_fence(&vk::FenceCreateInfo::default(), None) }.map_err(vk_err("vkCreateFence"))?;
        }
        if self.clock.is_some() {
            let info = vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(TIMESTAMPS);
            // SAFETY: valid device and create info.
            self.queries = unsafe { dev.create_query_pool(&info, None) }.map_err(vk_err("vkCreateQueryPool"))?;
        }
        Ok(())
    }

    /// Points binding 10 at `fluid` when it is not already (waits for the last submission).
    pub fn bind_fluid(&mut self, fluid: vk::Buffer) -> Result<()> {
        if fluid != self.bound_fluid {
            self.wait()?;
            self.pipes.write(&self.gpu, self.bufs(), fluid);
            self.bound_fluid = fluid;
        }
        Ok(())
    }

    /// Makes the pose buffer the next submission writes one no frame holds (see
    /// `pose_ring.rs`), pointing the sets at it when it changes. Waits for the last
    /// submission.
    fn writable_pose(&mut self) -> Result<()> {
        self.wait()?;
        let gpu = self.gpu.clone();
        if self.bufs_mut().poses.make_writable(&gpu)? {
            let pose = self.bufs().poses.current().raw();
            self.pipes.write_pose(&gpu, pose);
        }
        Ok(())
    }

    /// The pose after the last submission, for a reader on the device: the current pose
    /// buffer (not written again while the returned value holds it) and the timeline value
    /// that completes it.
    pub fn device_pose(&self) -> DevicePose {
        DevicePose {
            buffer: self.bufs().poses.current().clone(),
            timeline: self.timeline.clone(),
            value: self.value,
            segments: self.n,
            leaves: self.m,
        }
    }

    /// Pose buffers made so far (see `pose_ring.rs`).
    pub fn pose_buffers(&self) -> usize {
        self.bufs().poses.len()
    }

    /// Forgets which fluid buffer the sets point at, so the next
    /// [`bind_fluid`](Self::bind_fluid) writes them (the buffer may be freed, and a new one
    /// may get its handle).
    pub fn forget_fluid(&mut self) {
        self.bound_fluid = vk::Buffer::null();
    }

    /// Uploads the static data and the state of `e` (a forest of this device's size) and
    /// computes the pose from it. Clears the status word when `fresh` (a new or reset state);
    /// otherwise keeps it, so a state carried over that was not finite is still reported.
    /// Waits for it.
    pub fn upload(&mut self, e: &OliapuramExport, fresh: bool) -> Result<()> {
        self.writable_pose()?;
        let segs = pack_segments(e)?;
        let leaves = pack_leaves(e);
        let (seg_state, leaf_state) = pack_state(e);
        let bytes = |v: &[u8]| v.len() as u64;
        let parts: [&[u8]; 4] = [
            bytemuck::cast_slice(&segs),
            bytemuck::cast_slice(&leaves),
            bytemuck::cast_slice(&seg_state),
            bytemuck::cast_slice(&leaf_state),
        ];
        let total: u64 = parts.iter().map(|p| bytes(p)).sum();
        let mut staging = self.gpu.create_buffer(
            "oliapuram upload",
            total,
            vk::BufferUsageFlags::TRANSFER_SRC,
            MemoryLocation::CpuToGpu,
        )?;
        let mut offsets = [0u64; 4];
        let mut at = 0u64;
        for (k, p) in parts.iter().enumerate() {
            staging.write(at as usize, p);
            offsets[k] = at;
            at += bytes(p);
        }
        if fresh {
            self.bufs_mut().status.write(0, &[0u32; 4]);
        }
        self.parity = 0;
        let b = self.bufs();
        let dsts = [b.segs.raw, b.leaves.raw, b.seg_state[0].raw, b.leaf_state[0].raw];
        let src = staging.raw;
        let gpu = self.gpu.clone();
        let result = self.submit(
            |d, cmd| {
                for k in 0..4 {
                    let region = [vk::BufferCopy {
                        src_offset: offsets[k],
                        dst_offset: 0,
                        size: bytes(parts[k]),
                    }];
                    // SAFETY: `cmd` is recording; both buffers are alive until the wait below.
                    unsafe { gpu.device.cmd_copy_buffer(cmd, src, dsts[k], &region) };
                }
                barrier(&gpu, cmd, vk::PipelineStageFlags2::TRANSFER, COMPUTE);
                d.record_pose(cmd, &OliapuramPush::default(), false);
            },
            None,
        );
        let result = result.and_then(|_| self.wait());
        if result.is_err() {
            // The copy may still be pending: wait before freeing its source.
            let _ = self.gpu.wait_idle();
        }
        self.gpu.destroy_buffer(staging);
        result
    }

    /// Writes timestamp `k` of the step after the work recorded so far (when timed).
    fn stamp(&self, cmd: vk::CommandBuffer, k: u32) {
        if self.clock.is_none() {
            return;
        }
        // SAFETY: `cmd` is recording; the pool holds TIMESTAMPS queries, reset at the start of
        // this command buffer; its previous submission has completed.
        unsafe {
            if k == 0 {
                self.gpu.device.cmd_reset_query_pool(cmd, self.queries, 0, TIMESTAMPS);
            }
            self.gpu
                .device
                .cmd_write_timestamp2(cmd, vk::PipelineStageFlags2::COMPUTE_SHADER, self.queries, k);
        }
    }

    /// Device time of the dynamics, integration and pose dispatches of the newest step whose
    /// timestamps were read (when the step after it was recorded, or by [`wait`](Self::wait)
    /// through [`collect`](Self::collect)); `None` without timestamps.
    pub fn phase_times(&self) -> Option<[Duration; 3]> {
        self.phase_times
    }

    /// Reads the last submission's timestamps, once it has completed.
    pub fn collect(&mut self) -> Result<()> {
        if !self.timed {
            return Ok(());
        }
        self.wait()?;
        self.timed = false;
        let Some(clock) = self.clock else {
            return Ok(());
        };
        let mut ticks = [0u64; TIMESTAMPS as usize];
        // SAFETY: the pool has TIMESTAMPS queries, written on the compute queue by the last
        // submission, which has completed (waited above).
        if unsafe { clock.read(&self.gpu.device, self.queries, &mut ticks, false) }? {
            self.phase_times = Some([0, 1, 2].map(|k| clock.span(ticks[k], ticks[k + 1])));
        }
        Ok(())
    }

    /// Records the integration (one dispatch per level) and the pose from the current state,
    /// with the step's timestamps 2 and 3 when `timed`.
    fn record_pose(&self, cmd: vk::CommandBuffer, base: &OliapuramPush, timed: bool) {
        let mut push = *base;
        push.counts[0] = self.n;
        push.counts[1] = self.m;
        for w in self.starts.windows(2) {
            push.counts[2] = w[0];
            push.counts[3] = w[1] - w[0];
            self.pipes
                .dispatch(&self.gpu, cmd, Kernel::Integrate, self.parity, &push, w[1] - w[0]);
            barrier(&self.gpu, cmd, COMPUTE, COMPUTE);
        }
        if timed {
            self.stamp(cmd, 2);
        }
        self.pipes
            .dispatch(&self.gpu, cmd, Kernel::Pose, self.parity, &push, self.n + self.m);
        if timed {
            self.stamp(cmd, 3);
        }
        barrier(&self.gpu, cmd, COMPUTE, vk::PipelineStageFlags2::HOST);
        barrier(&self.gpu, cmd, COMPUTE, vk::PipelineStageFlags2::TRANSFER);
    }

    /// Records and submits one step (`push` with the wind filled in), after `wind` (the GPU
    /// wind's timeline value) when given. Returns once submitted.
    pub fn step(&mut self, push: &OliapuramPush, wind: Option<(vk::Semaphore, u64)>) -> Result<()> {
        let mut push = *push;
        push.counts[0] = self.n;
        push.counts[1] = self.m;
        self.writable_pose()?;
        self.submit(
            |d, cmd| {
                d.stamp(cmd, 0);
                d.pipes
                    .dispatch(&d.gpu, cmd, Kernel::Dynamics, d.parity, &push, d.n + d.m);
                d.stamp(cmd, 1);
                barrier(&d.gpu, cmd, COMPUTE, COMPUTE);
                d.parity = 1 - d.parity;
                d.record_pose(cmd, &push, true);
            },
            wind,
        )?;
        self.timed = true;
        Ok(())
    }

    /// Waits for the previous submission, records one with `record`, and submits it after
    /// that one (and after `extra`), signalling the next timeline value.
    fn submit(
        &mut self,
        record: impl FnOnce(&mut Device, vk::CommandBuffer),
        extra: Option<(vk::Semaphore, u64)>,
    ) -> Result<()> {
        self.wait()?;
        self.collect()?;
        let cmd = self.cmd;
        // SAFETY: the previous submission has completed (waited above), so `cmd` is not
        // pending; its pool allows resetting it.
        unsafe {
            let dev = &self.gpu.device;
            dev.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                .map_err(vk_err("vkResetCommandBuffer"))?;
            let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            dev.begin_command_buffer(cmd, &begin)
                .map_err(vk_err("vkBeginCommandBuffer"))?;
        }
        record(self, cmd);
        // SAFETY: the buffer is recording.
        unsafe { self.gpu.device.end_command_buffer(cmd) }.map_err(vk_err("vkEndCommandBuffer"))?;
        let next = self.value + 1;
        let mut waits = Vec::with_capacity(2);
        if self.value > 0 {
            waits.push(
                vk::SemaphoreSubmitInfo::default()
                    .semaphore(self.timeline.raw())
                    .value(self.value)
                    .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS),
            );
        }
        if let Some((semaphore, value)) = extra {
            if value > 0 {
                waits.push(
                    vk::SemaphoreSubmitInfo::default()
                        .semaphore(semaphore)
                        .value(value)
                        .stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER),
                );
            }
        }
        let signals = [vk::SemaphoreSubmitInfo::default()
            .semaphore(self.timeline.raw())
            .value(next)
            .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
        let cmds = [vk::CommandBufferSubmitInfo::default().command_buffer(cmd)];
        let submit = vk::SubmitInfo2::default()
            .wait_semaphore_infos(&waits)
            .command_buffer_infos(&cmds)
            .signal_semaphore_infos(&signals);
        self.gpu.submit_compute(&[submit], vk::Fence::null())?;
        self.value = next;
        Ok(())
    }

    /// Blocks until the last submission has finished.
    pub fn wait(&self) -> Result<()> {
        self.timeline.wait(self.value)
    }

    /// The timeline semaphore and the value the last submitted step signals (a reader of the
    /// pose buffer on the device waits for it).
    pub fn timeline(&self) -> (vk::Semaphore, u64) {
        (self.timeline.raw(), self.value)
    }

    /// The kernels' status word (waits for the last submission).
    pub fn status(&self) -> Result<u32> {
        self.wait()?;
        let bytes = self.bufs().status.read();
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// Where the CPU samples the wind for the next step, segments then leaves, as vec4s
    /// (waits for the last submission).
    pub fn points(&self) -> Result<&[[f32; 4]]> {
        self.wait()?;
        let len = (self.n + self.m) as usize;
        Ok(&bytemuck::cast_slice::<u8, [f32; 4]>(self.bufs().points.read())[..len])
    }

    /// Writes the wind the CPU sampled (segments then leaves) for the next step. Waits for the
    /// last submission.
    pub fn write_samples(&mut self, samples: &[[f32; 4]]) -> Result<()> {
        self.wait()?;
        self.bufs_mut().samples.write(0, samples);
        Ok(())
    }

    /// Copies the pose and the state back, after the last step.
    pub fn read_back(&self) -> Result<ReadBack> {
        let rb = self.readback.lock().unwrap_or_else(|e| e.into_inner());
        let b = self.bufs();
        let s = Sizes {
            n: self.n as u64,
            m: self.m as u64,
        };
        let dev = &self.gpu.device;
        let cmd = rb.cmd;
        // SAFETY: the read-back buffer's last use was waited on with its fence (below, under
        // the same lock), so it is not pending.
        unsafe {
            dev.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                .map_err(vk_err("vkResetCommandBuffer"))?;
            let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            dev.begin_command_buffer(cmd, &begin)
                .map_err(vk_err("vkBeginCommandBuffer"))?;
            let copies = [
                (b.poses.current().raw(), 0, s.pose()),
                (b.seg_state[self.parity].raw, s.pose(), s.seg_state()),
                (b.leaf_state[self.parity].raw, s.pose() + s.seg_state(), s.leaf_state()),
            ];
            for (src, dst_offset, size) in copies {
                let region = [vk::BufferCopy {
                    src_offset: 0,
                    dst_offset,
                    size,
                }];
                dev.cmd_copy_buffer(cmd, src, b.readback.raw, &region);
            }
            barrier(
                &self.gpu,
                cmd,
                vk::PipelineStageFlags2::TRANSFER,
                vk::PipelineStageFlags2::HOST,
            );
            dev.end_command_buffer(cmd).map_err(vk_err("vkEndCommandBuffer"))?;
        }
        let waits = [vk::SemaphoreSubmitInfo::default()
            .semaphore(self.timeline.raw())
            .value(self.value)
            .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
        let waits: &[vk::SemaphoreSubmitInfo<'_>] = if self.value > 0 { &waits } else { &[] };
        let cmds = [vk::CommandBufferSubmitInfo::default().command_buffer(cmd)];
        let submit = vk::SubmitInfo2::default()
            .wait_semaphore_infos(waits)
            .command_buffer_infos(&cmds);
        self.gpu.submit_compute(&[submit], rb.fence)?;
        // SAFETY: the fence was just submitted; it is reset once signalled.
        unsafe {
            dev.wait_for_fences(&[rb.fence], true, u64::MAX)
                .map_err(vk_err("vkWaitForFences"))?;
            dev.reset_fences(&[rb.fence]).map_err(vk_err("vkResetFences"))?;
        }
        let floats: &[f32] = bytemuck::cast_slice(b.readback.read());
        let (p, rest) = floats.split_at((s.pose() / 4) as usize);
        let (seg, leaf) = rest.split_at((s.seg_state() / 4) as usize);
        Ok(ReadBack {
            pose: p.to_vec(),
            seg_state: seg.to_vec(),
            leaf_state: leaf[..2 * self.m as usize].to_vec(),
        })
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // Everything submitted must finish before its objects go: the timeline, then the
        // queues themselves (a driver may still be retiring a submission whose signal a host
        // wait already saw).
        let _ = self.wait();
        let _ = self.gpu.wait_idle();
        let gpu = self.gpu.clone();
        self.pipes.destroy(&gpu);
        let rb = self.readback.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: nothing is pending (waited above; a read-back waits for its fence before
        // returning); null handles are skipped. The timeline goes with the last frame that
        // waits for it (see `timeline.rs`).
        unsafe {
            gpu.device.destroy_fence(rb.fence, None);
            gpu.device.destroy_command_pool(rb.pool, None);
            gpu.device.destroy_command_pool(self.pool, None);
            gpu.device.destroy_query_pool(self.queries, None);
        }
        if let Some(b) = self.bufs.take() {
            b.destroy(&gpu);
        }
    }
}
