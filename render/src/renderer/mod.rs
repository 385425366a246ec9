//! The renderer: draws a [`RenderFrame`] with a shadow pass and a main pass into its own colour
//! image, then blits it to a window's swapchain image and/or copies it back to the CPU.
//!
//! Per frame: the shadow map (bark and leaves from the sun), then sky, ground, bark (one
//! instanced draw per level of detail), leaves (likewise), collider spheres, wind balls and the
//! overlay.
//! GPU timestamps bracket each pass. Two frames are in flight; each frame slot owns its
//! command buffer, fence, uniform, instance and overlay buffers, timestamp queries and release
//! list.
//!
//! This file holds the public types and [`Renderer`] itself: creation, [`Renderer::draw`]
//! (uploads, recording, submission, readback) and destruction. The rest is one file per part:
//!
//! * `resources`: what the renderer creates once (descriptor and pipeline layouts, samplers,
//!   shadow map, font atlas, meshes, descriptor pool) and the uploads that fill them;
//! * `pipelines`: the graphics pipelines;
//! * `slot`: the frame slots (command buffer, fence, per-frame buffers, queries, release
//!   list), waiting for them, growing their buffers, the render targets and GPU timestamps;
//! * `passes`: the frame's uniforms and the recording of its passes;
//! * `pose_patch`: the compute pass that fills in a frame's instances from a pose on the
//!   device (the GPU dynamics'), before the passes draw them (the instances to patch kept on
//!   the device, uploaded when the camera changes them);
//! * `hud`: the overlay's text and frame graph;
//! * `image`: [`Rgba`], the image read back, and PNG.
//!
//! Invariants: every Vulkan handle the renderer creates is stored in it (or in a slot) as soon
//! as it exists, so `Drop` destroys it even when creation fails part way (null handles are
//! ignored); a slot's resources are reused or released only after its fence has signalled
//! ([`Renderer::begin_frame`] waits for it), and a resource replaced while frames may still
//! use it goes on that slot's release list.

mod hud;
mod image;
mod passes;
mod pipelines;
mod pose_patch;
mod resources;
mod slot;

use std::sync::Arc;
use std::time::Instant;

use ash::vk;
use glam::Vec3;
use sylva_engine::FrameTimings;
use sylva_shaders::{FrameUniforms, LeafInstance, OverlayVertex, SegmentInstance};

use crate::error::{vk_err, RenderError, Result};
use crate::field::gpu_arrows;
use crate::frame::{RenderFrame, LODS};
use crate::gpu::{Buffer, Gpu, Image};
use crate::overlay::FontAtlas;
use crate::wind::FieldBuffers;

pub use image::Rgba;
use passes::InstanceLayout;
use pipelines::Pipelines;
use pose_patch::{PatchPose, PosePatch};
use resources::GpuMesh;
use slot::Slot;

/// Frames the CPU may record ahead of the GPU.
pub const FRAMES_IN_FLIGHT: usize = 2;
/// The GPU passes timed with timestamps, in order.
pub const GPU_PHASES: [&str; 5] = ["shadow", "bark", "leaves", "sky+ground", "overlay"];
/// The colour image format (8-bit sRGB: shaders write linear colour).
pub const COLOR_FORMAT: vk::Format = vk::Format::R8G8B8A8_SRGB;
const DEPTH_FORMAT: vk::Format = vk::Format::D32_SFLOAT;
/// Frames of history the overlay graph shows.
pub const GRAPH_FRAMES: usize = 300;
/// Sunlight scale: bright enough for shaded sides to read, not so bright that lit ground clips.
const SUN_INTENSITY: f32 = 1.7;
const CARD: usize = LODS;
const SPHERE: usize = LODS + 1;

/// Scene colours (linear RGB). Chosen so bark, leaves, ground and sky are told apart by hue:
/// the headless image tests classify pixels by them.
pub mod palette {
    pub const BARK: [f32; 3] = [0.28, 0.18, 0.11];
    pub const LEAF: [f32; 3] = [0.11, 0.30, 0.05];
    pub const GROUND: [f32; 3] = [0.30, 0.29, 0.18];
    pub const SKY_ZENITH: [f32; 3] = [0.20, 0.38, 0.80];
    pub const SKY_HORIZON: [f32; 3] = [0.62, 0.72, 0.86];
    pub const SUN: [f32; 3] = [1.0, 0.96, 0.88];
}

/// Renderer settings fixed at creation.
#[derive(Clone, Debug)]
pub struct RendererOptions {
    /// Shadow map side in texels (256 to 8192); `None`: 2048, or 1024 on a software device.
    pub shadow_size: Option<u32>,
    /// Overlay font size in pixels.
    pub font_px: f32,
    /// Samples per pixel of the scene (multisample anti-aliasing, alpha-to-coverage for the
    /// leaves' cut-out edges): 1, 2, 4 or 8, as the device allows; `None`: 4 on a hardware
    /// device, 1 on a software one (where every sample costs CPU time).
    pub samples: Option<u32>,
}

impl Default for RendererOptions {
    fn default() -> Self {
        RendererOptions {
            shadow_size: None,
            font_px: 14.0,
            samples: None,
        }
    }
}

/// The sample count `asked` (or the default for `gpu`: 4 on hardware, 1 in software) as
/// Vulkan's flag, refused with the counts the device allows when it cannot render it.
fn sample_count(gpu: &Gpu, asked: Option<u32>) -> Result<vk::SampleCountFlags> {
    let n = asked.unwrap_or(if gpu.is_software() { 1 } else { 4 });
    let allowed = gpu.sample_counts();
    let flag = match n {
        1 => vk::SampleCountFlags::TYPE_1,
        2 => vk::SampleCountFlags::TYPE_2,
        4 => vk::SampleCountFlags::TYPE_4,
        8 => vk::SampleCountFlags::TYPE_8,
        _ => vk::SampleCountFlags::empty(),
    };
    if flag.is_empty() || !allowed.contains(flag) {
        let list: Vec<String> = [1u32, 2, 4, 8, 16, 32, 64]
            .into_iter()
            .filter(|&c| allowed.contains(vk::SampleCountFlags::from_raw(c)))
            .map(|c| c.to_string())
            .collect();
        return Err(RenderError::Invalid {
            what: "samples per pixel",
            value: n.to_string(),
            allowed: format!("{} on this device (of 1, 2, 4 and 8)", list.join(", ")),
        });
    }
    Ok(flag)
}

/// Per-draw choices.
#[derive(Clone, Debug)]
pub struct DrawOptions {
    pub overlay: bool,
    pub shadows: bool,
    /// The key help line at the bottom of the overlay, drawn whether the overlay is shown or
    /// not (empty: none).
    pub help: String,
    /// Wind arrows read straight from the GPU wind solver's buffers.
    pub gpu_field: Option<GpuFieldArrows>,
}

impl Default for DrawOptions {
    fn default() -> Self {
        DrawOptions {
            overlay: true,
            shadows: true,
            help: String::new(),
            gpu_field: None,
        }
    }
}

/// Wind arrows drawn from the GPU wind solver's velocity buffer ([`crate::field::gpu_arrows`]):
/// the frame's submission waits for `wait` (the solver's timeline semaphore and the value its
/// last step signals, [`GpuFluid::timeline`](crate::wind::GpuFluid::timeline)) before its
/// vertex shaders read the field. The caller keeps the field's buffer unchanged until the
/// frame is done (see the solver's module docs).
#[derive(Clone, Copy, Debug)]
pub struct GpuFieldArrows {
    pub field: FieldBuffers,
    pub wait: (vk::Semaphore, u64),
    /// The grid's minimum corner and cell size \[m\].
    pub origin: Vec3,
    pub h: Vec3,
    /// The cell layer drawn (0 at the ground).
    pub layer: usize,
    /// The speed drawn red [m/s].
    pub max_speed: f32,
}

impl GpuFieldArrows {
    /// Arrows on `layer` of `fluid`'s field after its last submitted step, red at `max_speed`.
    pub fn of(fluid: &crate::wind::GpuFluid, layer: usize, max_speed: f32) -> GpuFieldArrows {
        let (origin, h) = fluid.placement();
        GpuFieldArrows {
            field: fluid.field_buffers(),
            wait: fluid.timeline(),
            origin,
            h,
            layer,
            max_speed,
        }
    }
}

/// Where a frame goes after it is drawn.
pub struct Output {
    pub extent: vk::Extent2D,
    /// A swapchain image to blit the frame to (in `UNDEFINED` layout; left in
    /// `PRESENT_SRC_KHR`), with the semaphore its acquisition signals and the one to signal
    /// for presentation.
    pub present: Option<PresentTarget>,
    /// Copy the frame back to the CPU (returned by [`Renderer::draw`] once finished).
    pub readback: bool,
}

#[derive(Clone, Copy)]
pub struct PresentTarget {
    pub image: vk::Image,
    pub extent: vk::Extent2D,
    pub acquired: vk::Semaphore,
    pub rendered: vk::Semaphore,
}

/// Figures of the last frame drawn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrawStats {
    pub draws: u32,
    pub instances: usize,
    /// Bytes written to GPU-visible memory for the frame (instances, uniforms, overlay).
    pub upload_bytes: usize,
    /// CPU time to upload and record, from the start of [`Renderer::draw`] \[ms\].
    pub record_ms: f32,
    /// CPU time of the queue submission (on a software device, the drawing itself) \[ms\].
    pub submit_ms: f32,
    /// Instances whose pose was filled in on the device from the frame's pose on the device
    /// (0 when the frame carried a pose on the CPU).
    pub patched: usize,
    /// Of `upload_bytes`, the segment and leaf instances: all of them with a pose on the CPU;
    /// with a pose on the device, 0 when the instances to patch are those already on the
    /// device (a still camera), else the instances to patch.
    pub tree_upload_bytes: usize,
}

const TIMESTAMPS: u32 = GPU_PHASES.len() as u32 + 1;

/// The renderer and its GPU resources.
pub struct Renderer {
    gpu: Arc<Gpu>,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    /// Set 1 of the GPU-field arrows (one storage buffer) and their layout (sets 0 and 1, push
    /// constants).
    field_set_layout: vk::DescriptorSetLayout,
    field_layout: vk::PipelineLayout,
    descriptor_pool: vk::DescriptorPool,
    pipelines: Pipelines,
    shadow_sampler: vk::Sampler,
    font_sampler: vk::Sampler,
    shadow: Option<Image>,
    shadow_size: u32,
    font: Option<Image>,
    atlas: FontAtlas,
    /// The cylinder per level of detail, then the card and the sphere.
    meshes: Vec<GpuMesh>,
    /// The pose patch, made for the first frame that needs it.
    pose_patch: Option<PosePatch>,
    slots: Vec<Slot>,
    slot: usize,
    /// The slot and instance layout of the last frame submitted, and whether its trees were
    /// drawn from the slot's buffer of patched instances.
    last_instances: Option<(usize, InstanceLayout, bool)>,
    /// Samples per pixel of the main pass.
    samples: vk::SampleCountFlags,
    /// The resolved picture (single-sampled): what is presented and read back.
    color: Option<Image>,
    /// The multisampled colour target the main pass draws into and resolves to `color`
    /// (`None` at one sample per pixel, where the pass draws into `color` itself).
    color_ms: Option<Image>,
    /// The main pass's depth, with `samples` samples.
    depth: Option<Image>,
    readback: Option<Buffer>,
    overlay_vertices: Vec<OverlayVertex>,
    /// GPU pass times, one frame per completed frame.
    gpu_timings: FrameTimings,
    /// Render-thread frame intervals, GPU totals and simulation frame times [ms], for the graph.
    graph: std::collections::VecDeque<[f32; 3]>,
    last_frame: Option<Instant>,
    fps: f32,
    frames: u64,
    stats: DrawStats,
}

impl Renderer {
    pub fn new(gpu: Arc<Gpu>, options: &RendererOptions) -> Result<Renderer> {
        let shadow_size = options
            .shadow_size
            .unwrap_or(if gpu.is_software() { 1024 } else { 2048 });
        if !(256..=8192).contains(&shadow_size) {
            return Err(RenderError::Invalid {
                what: "shadow map size",
                value: shadow_size.to_string(),
                allowed: "256 to 8192 texels".into(),
            });
        }
        let samples = sample_count(&gpu, options.samples)?;
        let atlas = FontAtlas::new(options.font_px).map_err(|e| RenderError::Invalid {
            what: "overlay font",
            value: format!("{} px", options.font_px),
            allowed: e,
        })?;
        let mut r = Renderer {
            gpu,
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            field_set_layout: vk::DescriptorSetLayout::null(),
            field_layout: vk::PipelineLayout::null(),
            descriptor_pool: vk::DescriptorPool::null(),
            pipelines: Pipelines::default(),
            shadow_sampler: vk::Sampler::null(),
            font_sampler: vk::Sampler::null(),
            shadow: None,
            shadow_size,
            font: None,
            atlas,
            meshes: Vec::new(),
            pose_patch: None,
            slots: Vec::new(),
            slot: 0,
            last_instances: None,
            samples,
            color: None,
            color_ms: None,
            depth: None,
            readback: None,
            overlay_vertices: Vec::new(),
            gpu_timings: FrameTimings::new(&GPU_PHASES),
            graph: std::collections::VecDeque::with_capacity(GRAPH_FRAMES),
            last_frame: None,
            fps: 0.0,
            frames: 0,
            stats: DrawStats::default(),
        };
        // On failure `r` drops, destroying whatever `init` had created.
        r.init()?;
        Ok(r)
    }

    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Samples per pixel of the scene (multisampling; 1: none).
    pub fn samples(&self) -> u32 {
        self.samples.as_raw()
    }

    /// GPU pass timings of completed frames (empty when the device has no timestamps).
    pub fn gpu_timings(&self) -> &FrameTimings {
        &self.gpu_timings
    }

    /// Figures of the last frame.
    pub fn stats(&self) -> &DrawStats {
        &self.stats
    }

    /// Frames per second over recent frames (render thread).
    pub fn fps(&self) -> f32 {
        self.fps
    }

    /// Draws `frame` to `output`. With `output.readback`, waits for the GPU and returns the image.
    pub fn draw(&mut self, frame: &RenderFrame, options: &DrawOptions, output: &Output) -> Result<Option<Rgba>> {
        let start = Instant::now();
        let extent = output.extent;
        let gpu = self.gpu.clone();
        let dev = &gpu.device;
        let field_arrows = match &options.gpu_field {
            Some(g) if frame.camera.is_some() => {
                let (push, count) = gpu_arrows(&g.field, g.origin, g.h, g.layer, g.max_speed)?;
                Some((push, count, g))
            }
            _ => None,
        };
        // The pose the instances are patched from: the GPU dynamics', or one on the CPU
        // uploaded with the frame (`pose_patch.rs`).
        let device_pose = frame.device_pose.as_ref();
        let host_pose = frame.host_pose.as_ref().filter(|_| device_pose.is_none());
        let patching = device_pose.is_some() || host_pose.is_some();
        if let Some(pose) = device_pose {
            pose.check(&gpu)?;
        }
        if let Some(pose) = host_pose {
            let need = 2 * (pose.segments as usize + pose.leaves as usize);
            if pose.vec4s.len() != need {
                return Err(RenderError::Invalid {
                    what: "pose uploaded with the frame",
                    value: format!(
                        "{} vec4s for {} segments and {} leaves",
                        pose.vec4s.len(),
                        pose.segments,
                        pose.leaves
                    ),
                    allowed: format!("{need}: a base and an orientation for each"),
                });
            }
        }
        if patching {
            let instances =
                frame.segments.iter().map(Vec::len).sum::<usize>() + frame.leaves.iter().map(Vec::len).sum::<usize>();
            let bytes = instances as u64 * size_of::<SegmentInstance>() as u64;
            let pose_bytes = host_pose.map_or(0, |p| p.bytes() as u64);
            let limit = gpu.properties.limits.max_storage_buffer_range as u64;
            if bytes.max(pose_bytes) > limit {
                return Err(RenderError::Invalid {
                    what: "frame drawn from a pose patched on the device",
                    value: format!(
                        "{instances} segment and leaf instances ({bytes} bytes), a pose of {pose_bytes} bytes"
                    ),
                    allowed: format!(
                        "at most {limit} bytes of each on {} (maxStorageBufferRange): fewer trees or coarser levels of detail",
                        gpu.name()
                    ),
                });
            }
            if self.pose_patch.is_none() {
                self.pose_patch = Some(PosePatch::new(&gpu)?);
            }
        }
        let si = self.begin_frame()?;
        if let Some((_, _, g)) = field_arrows {
            let info = [vk::DescriptorBufferInfo {
                buffer: g.field.velocity,
                offset: 0,
                range: vk::WHOLE_SIZE,
            }];
            let write = vk::WriteDescriptorSet::default()
                .dst_set(self.slots[si].field_set)
                .dst_binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(&info);
            // SAFETY: the slot's previous frame has finished (`begin_frame` waited for its
            // fence), so its set is not in use; the buffer is the caller's live field buffer.
            unsafe { dev.update_descriptor_sets(&[write], &[]) };
        }
        self.ensure_targets(extent, output.readback, si)?;
        if let Some(last) = self.last_frame.replace(start) {
            let dt = (start - last).as_secs_f32();
            self.fps = if self.fps == 0.0 {
                1.0 / dt.max(1e-6)
            } else {
                self.fps * 0.9 + 0.1 / dt.max(1e-6)
            };
            let gpu_ms = if self.gpu_timings.frames() > 0 {
                self.gpu_timings.last_wall().as_secs_f32() * 1e3
            } else {
                0.0
            };
            let sim_ms = frame.timings.history_ms.last().copied().unwrap_or(0.0);
            if self.graph.len() == GRAPH_FRAMES {
                self.graph.pop_front();
            }
            self.graph.push_back([dt * 1e3, gpu_ms, sim_ms]);
        }

        // Uploads.
        let layout = InstanceLayout::of(frame);
        let mut upload = size_of::<FrameUniforms>();
        let uniforms = self.uniforms(frame, extent);
        self.slots[si].uniforms.write(0, &[uniforms]);
        // Segment and leaf instances: bytes, and whether they are uploaded (always, but for a
        // frame drawn from a pose on the device whose instances to patch are those already on
        // the device, `pose_patch.rs`).
        let tree_bytes = layout.spheres.0;
        let upload_trees = match (patching, &self.pose_patch) {
            (true, Some(patch)) => !patch.unchanged(frame),
            _ => true,
        };
        if layout.bytes > 0 {
            let slot = &mut self.slots[si];
            let buffer = Self::grow(
                &gpu,
                &mut slot.instances,
                &mut slot.release,
                layout.bytes,
                // The source of the pose patch's templates too.
                vk::BufferUsageFlags::VERTEX_BUFFER | vk::BufferUsageFlags::TRANSFER_SRC,
                "instances",
            )?;
            if upload_trees {
                for (lod, v) in frame.segments.iter().enumerate() {
                    buffer.write(layout.segments[lod].0 as usize, v);
                }
                for (lod, v) in frame.leaves.iter().enumerate() {
                    buffer.write(layout.leaves[lod].0 as usize, v);
                }
                upload += tree_bytes as usize;
            }
            buffer.write(layout.spheres.0 as usize, &frame.spheres);
            buffer.write(layout.wind_balls.0 as usize, &frame.wind_balls);
            buffer.write(layout.arrows.0 as usize, &frame.wind_arrows);
            upload += (layout.bytes - tree_bytes) as usize;
        }
        if let Some(pose) = host_pose.filter(|p| !p.vec4s.is_empty()) {
            let slot = &mut self.slots[si];
            let bytes = pose.bytes();
            let buffer = Self::grow(
                &gpu,
                &mut slot.host_pose,
                &mut slot.release,
                bytes as u64,
                vk::BufferUsageFlags::STORAGE_BUFFER,
                "uploaded pose",
            )?;
            buffer.write(0, &pose.vec4s);
            upload += bytes;
        }
        self.overlay_vertices.clear();
        // The key help stays when the overlay is hidden.
        let overlay = options.overlay || !options.help.is_empty();
        self.stats.draws = layout.draws(options.shadows, frame.camera.is_some(), overlay)
            + field_arrows.is_some_and(|(_, n, _)| n > 0) as u32;
        if overlay {
            self.compose_overlay(frame, options, extent);
        }
        if !self.overlay_vertices.is_empty() {
            let bytes = size_of_val(self.overlay_vertices.as_slice()) as u64;
            let slot = &mut self.slots[si];
            let buffer = Self::grow(
                &gpu,
                &mut slot.overlay,
                &mut slot.release,
                bytes,
                vk::BufferUsageFlags::VERTEX_BUFFER,
                "overlay",
            )?;
            buffer.write(0, &self.overlay_vertices);
            upload += bytes as usize;
        }

        // Recording.
        // The slot keeps the pose its frame reads until its fence signals.
        self.slots[si].pose = device_pose.cloned();
        let slot = &self.slots[si];
        let cmd = slot.cmd;
        // SAFETY: the slot's fence has signalled, so its command buffer is no longer pending.
        unsafe {
            dev.reset_command_pool(slot.pool, vk::CommandPoolResetFlags::empty())
                .map_err(vk_err("vkResetCommandPool"))?;
            dev.begin_command_buffer(
                cmd,
                &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            )
            .map_err(vk_err("vkBeginCommandBuffer"))?;
        }
        let mut trees = None;
        let mut patched = 0;
        if let (true, Some(patch)) = (patching, self.pose_patch.as_mut()) {
            let segments: u32 = layout.segments.iter().map(|&(_, n)| n).sum();
            let leaves: u32 = layout.leaves.iter().map(|&(_, n)| n).sum();
            let slot = &mut self.slots[si];
            let pose = match (device_pose, host_pose, &slot.host_pose) {
                (Some(p), _, _) => Some(PatchPose {
                    buffer: p.buffer.raw(),
                    segments: p.segments,
                    leaves: p.leaves,
                }),
                (None, Some(p), Some(b)) if !p.vec4s.is_empty() => Some(PatchPose {
                    buffer: b.raw,
                    segments: p.segments,
                    leaves: p.leaves,
                }),
                // An empty forest: nothing to patch.
                _ => None,
            };
            if let Some(staging) = slot.instances.as_ref().filter(|_| upload_trees) {
                // SAFETY: `cmd` is recording on the graphics family; the slot's instance buffer
                // holds the frame's segment then leaf instances from offset 0 (written above,
                // `InstanceLayout`) and lives until the slot's fence signals.
                unsafe { patch.record_upload(&gpu, cmd, frame, staging.raw, &mut slot.release)? };
            }
            if let Some(pose) = pose {
                // SAFETY: `cmd` is recording on the graphics family; the slot's previous frame
                // finished (`begin_frame`); the templates are this frame's (uploaded above, or
                // unchanged since an earlier frame); for a pose on the device the submission below
                // waits for its timeline value and the slot keeps it until its fence; a pose on
                // the CPU was written to the slot's buffer above, before the submission (which
                // makes host writes visible).
                trees = unsafe {
                    patch.record(
                        &gpu,
                        cmd,
                        si,
                        pose,
                        &mut slot.drawn,
                        &mut slot.release,
                        (segments, leaves),
                    )?
                };
            }
            if trees.is_some() {
                patched = (segments + leaves) as usize;
            }
        }
        let field = field_arrows.map(|(push, n, _)| (push, n));
        let draws = self.record(cmd, si, frame, options, &layout, extent, output, field, trees);
        // SAFETY: the command buffer is recording.
        unsafe { dev.end_command_buffer(cmd) }.map_err(vk_err("vkEndCommandBuffer"))?;
        // SAFETY: the fence is signalled and unused by pending work (waited above).
        unsafe { dev.reset_fences(&[self.slots[si].fence]) }.map_err(vk_err("vkResetFences"))?;
        let cmds = [vk::CommandBufferSubmitInfo::default().command_buffer(cmd)];
        let mut waits = Vec::new();
        let mut signals = Vec::new();
        if let Some(p) = &output.present {
            waits.push(
                vk::SemaphoreSubmitInfo::default()
                    .semaphore(p.acquired)
                    .stage_mask(vk::PipelineStageFlags2::BLIT),
            );
            signals.push(
                vk::SemaphoreSubmitInfo::default()
                    .semaphore(p.rendered)
                    .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS),
            );
        }
        if let Some((_, _, g)) = field_arrows {
            waits.push(
                vk::SemaphoreSubmitInfo::default()
                    .semaphore(g.wait.0)
                    .value(g.wait.1)
                    .stage_mask(vk::PipelineStageFlags2::VERTEX_SHADER),
            );
        }
        if let Some(pose) = device_pose.filter(|p| patched > 0 && p.value > 0) {
            // The patch reads the pose the dynamics' step completes at this value.
            waits.push(
                vk::SemaphoreSubmitInfo::default()
                    .semaphore(pose.timeline.raw())
                    .value(pose.value)
                    .stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER),
            );
        }
        let submit = vk::SubmitInfo2::default()
            .command_buffer_infos(&cmds)
            .wait_semaphore_infos(&waits)
            .signal_semaphore_infos(&signals);
        let recorded = start.elapsed();
        gpu.submit(&[submit], self.slots[si].fence)?;
        if let Some(patch) = self.pose_patch.as_mut().filter(|_| patching && upload_trees) {
            patch.confirm(frame);
        }
        let submitted = start.elapsed() - recorded;
        self.slots[si].queries_pending = gpu.timestamps.is_some();
        self.last_instances = Some((si, layout, trees.is_some()));
        self.slot = (si + 1) % FRAMES_IN_FLIGHT;
        self.frames += 1;
        debug_assert!(
            draws <= self.stats.draws,
            "recorded {draws} draws, planned {}",
            self.stats.draws
        );
        self.stats = DrawStats {
            draws,
            instances: frame.instance_count(),
            upload_bytes: upload,
            record_ms: recorded.as_secs_f32() * 1e3,
            submit_ms: submitted.as_secs_f32() * 1e3,
            patched,
            tree_upload_bytes: if upload_trees { tree_bytes as usize } else { 0 },
        };

        if !output.readback {
            return Ok(None);
        }
        // SAFETY: waiting on the fence just submitted.
        unsafe { dev.wait_for_fences(&[self.slots[si].fence], true, u64::MAX) }.map_err(vk_err("vkWaitForFences"))?;
        let rb = self.readback.as_ref().expect("ensure_targets made the readback buffer");
        let bytes = (extent.width * extent.height * 4) as usize;
        Ok(Some(Rgba {
            width: extent.width,
            height: extent.height,
            pixels: rb.read()[..bytes].to_vec(),
        }))
    }
}

impl Renderer {
    /// The segment and leaf instances the last frame drew, per list of the frame, as the GPU
    /// read them: with a pose on the device, after the pose patch (copied back from the
    /// device). Waits for that frame. Empty before the first frame.
    #[allow(clippy::type_complexity)]
    pub fn drawn_instances(&mut self) -> Result<([Vec<SegmentInstance>; LODS], [Vec<LeafInstance>; LODS])> {
        let mut out: ([Vec<SegmentInstance>; LODS], [Vec<LeafInstance>; LODS]) = Default::default();
        let Some((si, layout, patched)) = self.last_instances else {
            return Ok(out);
        };
        let fence = self.slots[si].fence;
        // SAFETY: the fence belongs to this device.
        unsafe { self.gpu.device.wait_for_fences(&[fence], true, u64::MAX) }.map_err(vk_err("vkWaitForFences"))?;
        let trees = layout.spheres.0;
        if trees == 0 {
            return Ok(out);
        }
        let copied;
        let bytes: &[u8] = match (&self.slots[si].drawn, &self.slots[si].instances) {
            (Some(drawn), _) if patched => {
                let gpu = &self.gpu;
                let staging = gpu.create_buffer(
                    "drawn instances",
                    trees,
                    vk::BufferUsageFlags::TRANSFER_DST,
                    gpu_allocator::MemoryLocation::GpuToCpu,
                )?;
                let region = [vk::BufferCopy {
                    src_offset: 0,
                    dst_offset: 0,
                    size: trees,
                }];
                // SAFETY: both buffers are alive and large enough; the frame that wrote `drawn`
                // has finished (its fence waited above); `run_once` waits for the copy.
                let done =
                    gpu.run_once(|cmd| unsafe { gpu.device.cmd_copy_buffer(cmd, drawn.raw, staging.raw, &region) });
                copied = staging.read()[..trees as usize].to_vec();
                gpu.destroy_buffer(staging);
                done?;
                &copied
            }
            (_, Some(b)) => b.read(),
            _ => return Ok(out),
        };
        fn take<T: bytemuck::Pod>(bytes: &[u8], (at, n): (u64, u32)) -> Vec<T> {
            let size = size_of::<T>();
            bytes[at as usize..at as usize + n as usize * size]
                .chunks_exact(size)
                .map(bytemuck::pod_read_unaligned)
                .collect()
        }
        for lod in 0..LODS {
            out.0[lod] = take(bytes, layout.segments[lod]);
            out.1[lod] = take(bytes, layout.leaves[lod]);
        }
        Ok(out)
    }
}

impl Drop for Renderer {
    fn drop(&mut self) {
        let gpu = self.gpu.clone();
        let _ = gpu.wait_idle();
        if let Some(mut p) = self.pose_patch.take() {
            p.destroy(&gpu);
        }
        let dev = &gpu.device;
        // SAFETY: the device is idle; every handle was created from it by this renderer and is
        // used by nothing else. Null handles (a renderer whose creation failed part way) are
        // ignored by vkDestroy*.
        unsafe {
            for p in self.pipelines.all() {
                dev.destroy_pipeline(p, None);
            }
            dev.destroy_sampler(self.shadow_sampler, None);
            dev.destroy_sampler(self.font_sampler, None);
            dev.destroy_descriptor_pool(self.descriptor_pool, None);
            dev.destroy_pipeline_layout(self.layout, None);
            dev.destroy_descriptor_set_layout(self.set_layout, None);
            dev.destroy_pipeline_layout(self.field_layout, None);
            dev.destroy_descriptor_set_layout(self.field_set_layout, None);
            for s in &self.slots {
                dev.destroy_command_pool(s.pool, None);
                dev.destroy_fence(s.fence, None);
                dev.destroy_query_pool(s.queries, None);
            }
        }
        for mut s in self.slots.drain(..) {
            gpu.destroy_buffer(s.uniforms);
            for b in [s.instances.take(), s.overlay.take(), s.drawn.take(), s.host_pose.take()]
                .into_iter()
                .flatten()
            {
                gpu.destroy_buffer(b);
            }
            s.release.free(&gpu);
        }
        for m in self.meshes.drain(..) {
            gpu.destroy_buffer(m.vertices);
            gpu.destroy_buffer(m.indices);
        }
        for i in [
            self.shadow.take(),
            self.font.take(),
            self.color.take(),
            self.color_ms.take(),
            self.depth.take(),
        ]
        .into_iter()
        .flatten()
        {
            gpu.destroy_image(i);
        }
        if let Some(b) = self.readback.take() {
            gpu.destroy_buffer(b);
        }
    }
}
