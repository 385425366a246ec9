//! Records and submits the steps of [`GpuOliapuram`](super::GpuOliapuram) on the compute queue
//! (the dedicated compute family when the device has one), and reads the pose back.
//!
//! One step is one submission: the dynamics dispatch over every segment and leaf, then one
//! integration dispatch per depth level, root to tips, then the pose dispatch, then the
//! breakage rule: each segment's own loads, then the sums over the subtrees (one workgroup per
//! tree, its levels tips to root, in one dispatch; or, for a forest too deep for that, one
//! dispatch per level), and the broken pieces' pose, with a compute → compute barrier between dispatches (each reads what the one before
//! wrote) and a compute → host barrier at the end (the CPU reads the sample points, the status
//! word and the joints over their limits).
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
use sylva_shaders::{OliapuramPatch, OliapuramPush};
use sylva_sim::dynamics::oliapuram::OliapuramExport;

use super::buffers::{pack_leaves, pack_segments, pack_state, DeviceBuffers, Sizes};
use super::pipelines::{Kernel, Pipelines};
use crate::device_pose::DevicePose;
use crate::error::{vk_err, RenderError, Result};
use crate::gpu::Gpu;
use crate::timeline::Timeline;
use crate::timestamps::TimestampClock;

/// Timestamps per step: before the dynamics, after it, after the integration, after the pose,
/// after the breakage rule.
const TIMESTAMPS: u32 = 5;

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
    /// Device time of the breakage rule's dispatches of that step.
    breakage_time: Option<Duration>,
    /// Whether the breakage rule's sums take one dispatch per level even when the forest is
    /// shallow enough for one per tree (the tests compare the two).
    pub per_level: bool,
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
    /// Creates the buffers, pipelines and submission objects, uploads the model's static data,
    /// state and breakage constants (`buffers::pack_breakage`) and computes its pose.
    pub fn new(gpu: &Arc<Gpu>, e: &OliapuramExport, brk: &[[f32; 4]]) -> Result<Device> {
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
            breakage_time: None,
            per_level: false,
        };
        // From here on, `d`'s Drop destroys whatever exists.
        d.bufs = Some(DeviceBuffers::new(gpu, n, m)?);
        d.create_submission()?;
        let no_fluid = d.bufs().no_fluid.raw;
        d.bind_fluid(no_fluid)?;
        d.upload(e, brk, true)?;
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

    /// Uploads the static data and the state of `e` (a forest of this device's size), and the
    /// breakage constants `brk` (`buffers::pack_breakage`; left as they are when empty), and
    /// computes the pose from it. Clears the status word when `fresh` (a new or reset state);
    /// otherwise keeps it, so a state carried over that was not finite is still reported.
    /// Waits for it.
    pub fn upload(&mut self, e: &OliapuramExport, brk: &[[f32; 4]], fresh: bool) -> Result<()> {
        self.writable_pose()?;
        let segs = pack_segments(e)?;
        let leaves = pack_leaves(e);
        let (seg_state, leaf_state) = pack_state(e);
        let bytes = |v: &[u8]| v.len() as u64;
        let parts: [&[u8]; 5] = [
            bytemuck::cast_slice(&segs),
            bytemuck::cast_slice(&leaves),
            bytemuck::cast_slice(&seg_state),
            bytemuck::cast_slice(&leaf_state),
            bytemuck::cast_slice(brk),
        ];
        let total: u64 = parts.iter().map(|p| bytes(p)).sum::<u64>().max(4);
        let mut staging = self.gpu.create_buffer(
            "oliapuram upload",
            total,
            vk::BufferUsageFlags::TRANSFER_SRC,
            MemoryLocation::CpuToGpu,
        )?;
        let mut offsets = [0u64; 5];
        let mut at = 0u64;
        for (k, p) in parts.iter().enumerate() {
            staging.write(at as usize, p);
            offsets[k] = at;
            at += bytes(p);
        }
        if fresh {
            self.bufs_mut().status.write(0, &[0u32; 4]);
        }
        // No joint of the uploaded state was found over its limit (a step finds them).
        self.bufs_mut().over.write(0, &[0u32]);
        self.parity = 0;
        let b = self.bufs();
        let dsts = [
            b.segs.raw,
            b.leaves.raw,
            b.seg_state[0].raw,
            b.leaf_state[0].raw,
            b.brk.raw,
        ];
        let src = staging.raw;
        let gpu = self.gpu.clone();
        let result = self.submit(
            |d, cmd| {
                for k in 0..5 {
                    if parts[k].is_empty() {
                        continue;
                    }
                    let region = [vk::BufferCopy {
                        src_offset: offsets[k],
                        dst_offset: 0,
                        size: bytes(parts[k]),
                    }];
                    // SAFETY: `cmd` is recording; both buffers are alive until the wait below.
                    unsafe { gpu.device.cmd_copy_buffer(cmd, src, dsts[k], &region) };
                }
                barrier(&gpu, cmd, vk::PipelineStageFlags2::TRANSFER, COMPUTE);
                d.record_pose(cmd, &OliapuramPush::default(), false, None);
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
            self.breakage_time = Some(clock.span(ticks[3], ticks[4]));
        }
        Ok(())
    }

    /// Device time of the breakage rule's dispatches of the step [`phase_times`](Self::phase_times)
    /// reports.
    pub fn breakage_time(&self) -> Option<Duration> {
        self.breakage_time
    }

    /// Records the integration (one dispatch per level) and the pose from the current state,
    /// with the step's timestamps 2 and 3 when `timed`; then, with `breakage` = Some(entries),
    /// the breakage rule's sums (one dispatch per level, tips to root) and the broken pieces'
    /// pose (`entries` of the patch buffer), and timestamp 4.
    fn record_pose(&self, cmd: vk::CommandBuffer, base: &OliapuramPush, timed: bool, breakage: Option<u32>) {
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
        if let Some(entries) = breakage {
            barrier(&self.gpu, cmd, COMPUTE, COMPUTE);
            self.pipes
                .dispatch(&self.gpu, cmd, Kernel::Loads, self.parity, &push, self.n);
            barrier(&self.gpu, cmd, COMPUTE, COMPUTE);
            let levels = self.starts.len() as u32 - 1;
            if levels <= sylva_shaders::OLIAPURAM_SUBTREE_LEVELS && !self.per_level {
                // One workgroup per tree, its levels in turn: one dispatch.
                push.counts[2] = levels;
                let trees = self.starts[1] - self.starts[0];
                self.pipes
                    .dispatch(&self.gpu, cmd, Kernel::SubtreeTrees, self.parity, &push, trees);
                barrier(&self.gpu, cmd, COMPUTE, COMPUTE);
            } else {
                for w in self.starts.windows(2).rev() {
                    push.counts[2] = w[0];
                    push.counts[3] = w[1] - w[0];
                    self.pipes
                        .dispatch(&self.gpu, cmd, Kernel::Subtree, self.parity, &push, w[1] - w[0]);
                    barrier(&self.gpu, cmd, COMPUTE, COMPUTE);
                }
            }
            push.counts[2] = entries;
            self.pipes
                .dispatch(&self.gpu, cmd, Kernel::Patch, self.parity, &push, entries);
        }
        if timed {
            self.stamp(cmd, 4);
        }
        barrier(&self.gpu, cmd, COMPUTE, vk::PipelineStageFlags2::HOST);
        barrier(&self.gpu, cmd, COMPUTE, vk::PipelineStageFlags2::TRANSFER);
    }

    /// Records and submits one step (`push` with the wind filled in), after `wind` (the GPU
    /// wind's timeline value) when given; with `breakage` = Some(entries), the breakage rule
    /// after the pose and the `entries` written by [`write_patches`](Self::write_patches).
    /// Clears the count of joints over their limits first. Returns once submitted.
    pub fn step(
        &mut self,
        push: &OliapuramPush,
        wind: Option<(vk::Semaphore, u64)>,
        breakage: Option<u32>,
    ) -> Result<()> {
        let mut push = *push;
        push.counts[0] = self.n;
        push.counts[1] = self.m;
        self.writable_pose()?;
        self.bufs_mut().over.write(0, &[0u32]);
        self.submit(
            |d, cmd| {
                d.stamp(cmd, 0);
                d.pipes
                    .dispatch(&d.gpu, cmd, Kernel::Dynamics, d.parity, &push, d.n + d.m);
                d.stamp(cmd, 1);
                barrier(&d.gpu, cmd, COMPUTE, COMPUTE);
                d.parity = 1 - d.parity;
                d.record_pose(cmd, &push, true, breakage);
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

    /// The joints (level indices) the breakage rule found over their limits in the last step
    /// (waits for it): a count and at most as many indices as segments, read from a
    /// host-visible buffer.
    pub fn over(&self) -> Result<Vec<u32>> {
        self.wait()?;
        let words: &[u32] = bytemuck::cast_slice(self.bufs().over.read());
        let count = (words[0] as usize).min(self.n as usize);
        Ok(words[1..1 + count].to_vec())
    }

    /// Writes the broken pieces' pose for the next step, growing the buffer (and pointing the
    /// sets at the new one) when it is too small. Waits for the last submission.
    pub fn write_patches(&mut self, entries: &[OliapuramPatch]) -> Result<()> {
        self.wait()?;
        if entries.len() > self.bufs().patch_capacity {
            let capacity = entries.len().next_power_of_two();
            let families = [self.gpu.queues.graphics, self.gpu.queues.compute_family()];
            let buffer = self.gpu.create_buffer_shared(
                "oliapuram debris pose",
                (capacity * size_of::<OliapuramPatch>()) as u64,
                vk::BufferUsageFlags::STORAGE_BUFFER,
                MemoryLocation::CpuToGpu,
                &families,
            )?;
            let gpu = self.gpu.clone();
            let b = self.bufs_mut();
            let old = std::mem::replace(&mut b.patch, buffer);
            b.patch_capacity = capacity;
            gpu.destroy_buffer(old);
            self.pipes.write_patch(&gpu, self.bufs().patch.raw);
        }
        if !entries.is_empty() {
            self.bufs_mut().patch.write(0, entries);
        }
        Ok(())
    }

    /// Copies `size` bytes of the device-local buffer `which` back (after the last step):
    /// the breakage rule's loads (`true`) or subtree sums (`false`), for the tests and tools
    /// that check them.
    pub fn read_breakage(&self, loads: bool) -> Result<Vec<f32>> {
        let b = self.bufs();
        let (src, size) = if loads {
            (b.loads.raw, (self.n + self.m) as u64 * 16)
        } else {
            (b.sums.raw, 2 * self.n as u64 * 16)
        };
        let staging = self.gpu.create_buffer(
            "oliapuram breakage read-back",
            size,
            vk::BufferUsageFlags::TRANSFER_DST,
            MemoryLocation::GpuToCpu,
        )?;
        let result = self.copy_back(&[(src, 0, size)], staging.raw);
        let out = result.map(|_| bytemuck::cast_slice::<u8, f32>(&staging.read()[..size as usize]).to_vec());
        if out.is_err() {
            let _ = self.gpu.wait_idle();
        }
        self.gpu.destroy_buffer(staging);
        out
    }

    /// Copies the pose and the state back, after the last step.
    pub fn read_back(&self) -> Result<ReadBack> {
        let b = self.bufs();
        let s = Sizes {
            n: self.n as u64,
            m: self.m as u64,
        };
        let copies = [
            (b.poses.current().raw(), 0, s.pose()),
            (b.seg_state[self.parity].raw, s.pose(), s.seg_state()),
            (b.leaf_state[self.parity].raw, s.pose() + s.seg_state(), s.leaf_state()),
        ];
        self.copy_back(&copies, b.readback.raw)?;
        let floats: &[f32] = bytemuck::cast_slice(b.readback.read());
        let (p, rest) = floats.split_at((s.pose() / 4) as usize);
        let (seg, leaf) = rest.split_at((s.seg_state() / 4) as usize);
        Ok(ReadBack {
            pose: p.to_vec(),
            seg_state: seg.to_vec(),
            leaf_state: leaf[..2 * self.m as usize].to_vec(),
        })
    }

    /// Copies whole buffers (`(source, offset in dst, bytes)`) into the host-visible `dst`
    /// after the last step, and waits for the copy.
    fn copy_back(&self, copies: &[(vk::Buffer, u64, u64)], dst: vk::Buffer) -> Result<()> {
        let rb = self.readback.lock().unwrap_or_else(|e| e.into_inner());
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
            for &(src, dst_offset, size) in copies {
                let region = [vk::BufferCopy {
                    src_offset: 0,
                    dst_offset,
                    size,
                }];
                dev.cmd_copy_buffer(cmd, src, dst, &region);
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
        Ok(())
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
