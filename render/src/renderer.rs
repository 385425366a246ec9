//! The renderer: draws a [`RenderFrame`] with a shadow pass and a main pass into its own colour
//! image, then blits it to a window's swapchain image and/or copies it back to the CPU.
//!
//! Per frame: the shadow map (bark and leaves from the sun), then sky, ground, bark (one
//! instanced draw per level of detail), leaves (likewise), collider spheres and the overlay.
//! GPU timestamps bracket each pass. Two frames are in flight; each frame slot owns its
//! command buffer, fence, uniform, instance and overlay buffers, timestamp queries and release
//! list.

use std::sync::Arc;
use std::time::Instant;

use ash::vk;
use glam::{Mat4, Vec3};
use gpu_allocator::MemoryLocation;
use sylva_engine::FrameTimings;
use sylva_shaders as sh;
use sylva_shaders::{
    ArrowFieldPush, CardVertex, FrameUniforms, LeafInstance, MeshVertex, OverlayVertex, SegmentInstance,
    SphereInstance, WindArrow,
};

use crate::error::{vk_err, RenderError, Result};
use crate::field::gpu_arrows;
use crate::frame::{RenderFrame, LODS};
use crate::gpu::{full_range, Buffer, Gpu, Image, ReleaseList};
use crate::mesh::{self, CYLINDER_SIDES};
use crate::overlay::{FontAtlas, OverlayBuilder};
use crate::pipeline::{attr, create_pipeline, per_instance, per_vertex, Blend, PipelineDesc};
use crate::wind::FieldBuffers;

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
}

impl Default for RendererOptions {
    fn default() -> Self {
        RendererOptions {
            shadow_size: None,
            font_px: 14.0,
        }
    }
}

/// Per-draw choices.
#[derive(Clone, Debug)]
pub struct DrawOptions {
    pub overlay: bool,
    pub shadows: bool,
    /// The key help line at the bottom of the overlay.
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

/// An RGBA8 image (sRGB), rows top to bottom.
#[derive(Clone, Debug, PartialEq)]
pub struct Rgba {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

impl Rgba {
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = 4 * (y as usize * self.width as usize + x as usize);
        [
            self.pixels[i],
            self.pixels[i + 1],
            self.pixels[i + 2],
            self.pixels[i + 3],
        ]
    }
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
}

#[derive(Default)]
struct Pipelines {
    environment: vk::Pipeline,
    bark: vk::Pipeline,
    leaf: vk::Pipeline,
    sphere: vk::Pipeline,
    arrow: vk::Pipeline,
    arrow_field: vk::Pipeline,
    overlay: vk::Pipeline,
    bark_shadow: vk::Pipeline,
    leaf_shadow: vk::Pipeline,
}

impl Pipelines {
    fn all(&self) -> [vk::Pipeline; 9] {
        [
            self.environment,
            self.bark,
            self.leaf,
            self.sphere,
            self.arrow,
            self.arrow_field,
            self.overlay,
            self.bark_shadow,
            self.leaf_shadow,
        ]
    }
}

/// A static indexed mesh on the GPU.
struct GpuMesh {
    vertices: Buffer,
    indices: Buffer,
    index_count: u32,
}

struct Slot {
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    uniforms: Buffer,
    instances: Option<Buffer>,
    overlay: Option<Buffer>,
    set: vk::DescriptorSet,
    /// The GPU wind field's velocity buffer, for `arrow_field.vert` (set 1).
    field_set: vk::DescriptorSet,
    queries: vk::QueryPool,
    /// The queries hold results of a submitted frame not yet read.
    queries_pending: bool,
    release: ReleaseList,
}

/// Byte offsets of each instance list in a slot's instance buffer.
#[derive(Default, Clone, Copy)]
struct InstanceLayout {
    segments: [(u64, u32); LODS],
    leaves: [(u64, u32); LODS],
    spheres: (u64, u32),
    arrows: (u64, u32),
    bytes: u64,
}

impl InstanceLayout {
    fn of(frame: &RenderFrame) -> InstanceLayout {
        let mut l = InstanceLayout::default();
        let mut at = 0u64;
        let mut place = |count: usize, size: usize| {
            let r = (at, count as u32);
            at += (count * size) as u64;
            r
        };
        for (i, v) in frame.segments.iter().enumerate() {
            l.segments[i] = place(v.len(), size_of::<SegmentInstance>());
        }
        for (i, v) in frame.leaves.iter().enumerate() {
            l.leaves[i] = place(v.len(), size_of::<LeafInstance>());
        }
        l.spheres = place(frame.spheres.len(), size_of::<SphereInstance>());
        l.arrows = place(frame.wind_arrows.len(), size_of::<WindArrow>());
        l.bytes = at;
        l
    }

    /// The draws recording this layout makes (the overlay counted when shown).
    fn draws(&self, shadows: bool, camera: bool, overlay: bool) -> u32 {
        let nonempty = |r: &[(u64, u32)]| r.iter().filter(|(_, n)| *n > 0).count() as u32;
        let meshes = nonempty(&self.segments) + nonempty(&self.leaves);
        let main = if camera {
            1 + meshes + nonempty(&[self.spheres, self.arrows])
        } else {
            0
        };
        let halves: Vec<(u64, u32)> = self.leaves.iter().map(|&(o, n)| (o, n / 2)).collect();
        let shadow = nonempty(&self.segments[..LODS - 1]) + nonempty(&halves);
        main + if shadows { shadow } else { 0 } + u32::from(overlay)
    }
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
    slots: Vec<Slot>,
    slot: usize,
    color: Option<Image>,
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

fn vec4(v: [f32; 3], w: f32) -> [f32; 4] {
    [v[0], v[1], v[2], w]
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
            slots: Vec::new(),
            slot: 0,
            color: None,
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

    fn init(&mut self) -> Result<()> {
        let gpu = self.gpu.clone();
        let dev = &gpu.device;
        let stages = vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT;
        let bindings = [
            vk::DescriptorSetLayoutBinding::default()
                .binding(0)
                .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
                .descriptor_count(1)
                .stage_flags(stages),
            vk::DescriptorSetLayoutBinding::default()
                .binding(1)
                .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::FRAGMENT),
            vk::DescriptorSetLayoutBinding::default()
                .binding(2)
                .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::FRAGMENT),
        ];
        // SAFETY: for this block and the creations below, valid device and create infos that live
        // until each call returns; every handle is stored in `self` at once, so `Drop` destroys
        // it if a later step fails.
        unsafe {
            self.set_layout = dev
                .create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None)
                .map_err(vk_err("vkCreateDescriptorSetLayout"))?;
            let set_layouts = [self.set_layout];
            self.layout = dev
                .create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts), None)
                .map_err(vk_err("vkCreatePipelineLayout"))?;
            let field_bindings = [vk::DescriptorSetLayoutBinding::default()
                .binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::VERTEX)];
            self.field_set_layout = dev
                .create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&field_bindings),
                    None,
                )
                .map_err(vk_err("vkCreateDescriptorSetLayout"))?;
            let field_sets = [self.set_layout, self.field_set_layout];
            let push = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::VERTEX)
                .size(size_of::<ArrowFieldPush>() as u32)];
            self.field_layout = dev
                .create_pipeline_layout(
                    &vk::PipelineLayoutCreateInfo::default()
                        .set_layouts(&field_sets)
                        .push_constant_ranges(&push),
                    None,
                )
                .map_err(vk_err("vkCreatePipelineLayout"))?;
            // Hardware 2x2 percentage-closer filtering; a software rasteriser pays four
            // lookups for it on every lit pixel, so it gets single-tap shadows.
            let filter = if gpu.is_software() {
                vk::Filter::NEAREST
            } else {
                vk::Filter::LINEAR
            };
            self.shadow_sampler = dev
                .create_sampler(
                    &vk::SamplerCreateInfo::default()
                        .mag_filter(filter)
                        .min_filter(filter)
                        .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_BORDER)
                        .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_BORDER)
                        .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_BORDER)
                        .border_color(vk::BorderColor::FLOAT_OPAQUE_WHITE)
                        .compare_enable(true)
                        .compare_op(vk::CompareOp::LESS_OR_EQUAL)
                        .max_lod(0.0),
                    None,
                )
                .map_err(vk_err("vkCreateSampler"))?;
            self.font_sampler = dev
                .create_sampler(
                    &vk::SamplerCreateInfo::default()
                        .mag_filter(vk::Filter::NEAREST)
                        .min_filter(vk::Filter::NEAREST)
                        .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                        .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                        .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                        .max_lod(0.0),
                    None,
                )
                .map_err(vk_err("vkCreateSampler"))?;
        }
        let s = self.shadow_size;
        self.shadow = Some(gpu.create_image(
            "shadow map",
            vk::Extent2D { width: s, height: s },
            DEPTH_FORMAT,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | vk::ImageUsageFlags::SAMPLED,
        )?);
        self.font = Some(self.upload_font()?);
        for sides in CYLINDER_SIDES {
            let m = mesh::cylinder(sides);
            let mesh = self.upload_mesh("cylinder", &m.vertices, &m.indices)?;
            self.meshes.push(mesh);
        }
        let card = mesh::card();
        let mesh = self.upload_mesh("card", &card.vertices, &card.indices)?;
        self.meshes.push(mesh);
        let sphere = mesh::sphere(12);
        let mesh = self.upload_mesh("sphere", &sphere.vertices, &sphere.indices)?;
        self.meshes.push(mesh);

        let sizes = [
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::UNIFORM_BUFFER,
                descriptor_count: FRAMES_IN_FLIGHT as u32,
            },
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
                descriptor_count: 2 * FRAMES_IN_FLIGHT as u32,
            },
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: FRAMES_IN_FLIGHT as u32,
            },
        ];
        // SAFETY: as above.
        self.descriptor_pool = unsafe {
            dev.create_descriptor_pool(
                &vk::DescriptorPoolCreateInfo::default()
                    .max_sets(2 * FRAMES_IN_FLIGHT as u32)
                    .pool_sizes(&sizes),
                None,
            )
        }
        .map_err(vk_err("vkCreateDescriptorPool"))?;
        for _ in 0..FRAMES_IN_FLIGHT {
            let slot = self.create_slot()?;
            self.slots.push(slot);
        }
        self.create_pipelines()
    }

    fn create_slot(&self) -> Result<Slot> {
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
            set: vk::DescriptorSet::null(),
            field_set: vk::DescriptorSet::null(),
            queries: vk::QueryPool::null(),
            queries_pending: false,
            release: ReleaseList::default(),
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

    /// Copies `bytes` into a new device-local buffer through a staging buffer.
    fn upload(&self, name: &str, usage: vk::BufferUsageFlags, bytes: &[u8]) -> Result<Buffer> {
        let gpu = &self.gpu;
        let mut staging = gpu.create_buffer(
            "staging",
            bytes.len() as u64,
            vk::BufferUsageFlags::TRANSFER_SRC,
            MemoryLocation::CpuToGpu,
        )?;
        staging.write(0, bytes);
        let result = gpu
            .create_buffer(
                name,
                bytes.len() as u64,
                usage | vk::BufferUsageFlags::TRANSFER_DST,
                MemoryLocation::GpuOnly,
            )
            .and_then(|dst| {
                let copied = gpu.run_once(|cmd| {
                    let region = [vk::BufferCopy {
                        src_offset: 0,
                        dst_offset: 0,
                        size: bytes.len() as u64,
                    }];
                    // SAFETY: both buffers are live and large enough; `cmd` is recording.
                    unsafe { gpu.device.cmd_copy_buffer(cmd, staging.raw, dst.raw, &region) };
                });
                match copied {
                    Ok(()) => Ok(dst),
                    Err(e) => {
                        gpu.destroy_buffer(dst);
                        Err(e)
                    }
                }
            });
        // `run_once` waited for the copy (or the device is idle after its failure).
        gpu.destroy_buffer(staging);
        result
    }

    fn upload_mesh<V: bytemuck::Pod>(&self, name: &str, vertices: &[V], indices: &[u16]) -> Result<GpuMesh> {
        let v = self.upload(
            name,
            vk::BufferUsageFlags::VERTEX_BUFFER,
            bytemuck::cast_slice(vertices),
        )?;
        match self.upload(name, vk::BufferUsageFlags::INDEX_BUFFER, bytemuck::cast_slice(indices)) {
            Ok(i) => Ok(GpuMesh {
                vertices: v,
                indices: i,
                index_count: indices.len() as u32,
            }),
            Err(e) => {
                self.gpu.destroy_buffer(v);
                Err(e)
            }
        }
    }

    fn upload_font(&self) -> Result<Image> {
        let gpu = &self.gpu;
        let a = &self.atlas;
        let extent = vk::Extent2D {
            width: a.width,
            height: a.height,
        };
        let image = gpu.create_image(
            "font atlas",
            extent,
            vk::Format::R8_UNORM,
            vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST,
        )?;
        let staging = gpu.create_buffer(
            "font staging",
            a.pixels.len() as u64,
            vk::BufferUsageFlags::TRANSFER_SRC,
            MemoryLocation::CpuToGpu,
        );
        let mut staging = match staging {
            Ok(s) => s,
            Err(e) => {
                gpu.destroy_image(image);
                return Err(e);
            }
        };
        staging.write(0, &a.pixels);
        let copied = gpu.run_once(|cmd| {
            // SAFETY: `cmd` is recording; the image and buffer are live and sized alike.
            unsafe {
                barrier(
                    &gpu.device,
                    cmd,
                    image.raw,
                    vk::ImageAspectFlags::COLOR,
                    (
                        vk::ImageLayout::UNDEFINED,
                        vk::PipelineStageFlags2::NONE,
                        vk::AccessFlags2::NONE,
                    ),
                    (
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        vk::PipelineStageFlags2::ALL_TRANSFER,
                        vk::AccessFlags2::TRANSFER_WRITE,
                    ),
                );
                let region = [vk::BufferImageCopy {
                    image_subresource: vk::ImageSubresourceLayers {
                        aspect_mask: vk::ImageAspectFlags::COLOR,
                        mip_level: 0,
                        base_array_layer: 0,
                        layer_count: 1,
                    },
                    image_extent: vk::Extent3D {
                        width: extent.width,
                        height: extent.height,
                        depth: 1,
                    },
                    ..Default::default()
                }];
                gpu.device.cmd_copy_buffer_to_image(
                    cmd,
                    staging.raw,
                    image.raw,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    &region,
                );
                barrier(
                    &gpu.device,
                    cmd,
                    image.raw,
                    vk::ImageAspectFlags::COLOR,
                    (
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        vk::PipelineStageFlags2::ALL_TRANSFER,
                        vk::AccessFlags2::TRANSFER_WRITE,
                    ),
                    (
                        vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                        vk::PipelineStageFlags2::FRAGMENT_SHADER,
                        vk::AccessFlags2::SHADER_SAMPLED_READ,
                    ),
                );
            }
        });
        gpu.destroy_buffer(staging);
        match copied {
            Ok(()) => Ok(image),
            Err(e) => {
                gpu.destroy_image(image);
                Err(e)
            }
        }
    }

    fn create_pipelines(&mut self) -> Result<()> {
        let gpu = self.gpu.clone();
        let f32x3 = vk::Format::R32G32B32_SFLOAT;
        let mesh_attrs = [attr(0, 0, f32x3, 0), attr(1, 0, f32x3, 12)];
        let inst_attrs = |first: &[vk::VertexInputAttributeDescription]| {
            let mut v = first.to_vec();
            v.extend([
                attr(2, 1, vk::Format::R32G32B32A32_SFLOAT, 0),
                attr(3, 1, vk::Format::R16G16B16A16_SNORM, 16),
                attr(4, 1, vk::Format::R32G32_SFLOAT, 24),
            ]);
            v
        };
        let bark_attrs = inst_attrs(&mesh_attrs);
        // The shadow pass needs no normals.
        let bark_shadow_attrs = inst_attrs(&mesh_attrs[..1]);
        let leaf_attrs = inst_attrs(&[attr(0, 0, vk::Format::R32G32_SFLOAT, 0)]);
        let sphere_attrs = [
            mesh_attrs[0],
            mesh_attrs[1],
            attr(2, 1, vk::Format::R32G32B32A32_SFLOAT, 0),
        ];
        let overlay_attrs = [
            attr(0, 0, vk::Format::R32G32_SFLOAT, 0),
            attr(1, 0, vk::Format::R32G32_SFLOAT, 8),
            attr(2, 0, vk::Format::R8G8B8A8_UNORM, 16),
        ];
        let bark_bind = [
            per_vertex(0, size_of::<MeshVertex>()),
            per_instance(1, size_of::<SegmentInstance>()),
        ];
        let leaf_bind = [
            per_vertex(0, size_of::<CardVertex>()),
            per_instance(1, size_of::<LeafInstance>()),
        ];
        let leaf_shadow_bind = [
            per_vertex(0, size_of::<CardVertex>()),
            per_instance(1, 2 * size_of::<LeafInstance>()),
        ];
        let sphere_bind = [
            per_vertex(0, size_of::<MeshVertex>()),
            per_instance(1, size_of::<SphereInstance>()),
        ];
        let arrow_attrs = [
            attr(0, 0, vk::Format::R32G32B32A32_SFLOAT, 0),
            attr(1, 0, vk::Format::R32G32B32A32_SFLOAT, 16),
        ];
        let arrow_bind = [per_instance(0, size_of::<WindArrow>())];
        let overlay_bind = [per_vertex(0, size_of::<OverlayVertex>())];
        let base = PipelineDesc {
            name: "vkCreateGraphicsPipelines (environment)",
            vertex: &sh::ENVIRONMENT_VERT,
            fragment: Some(&sh::ENVIRONMENT_FRAG),
            bindings: &[],
            attributes: &[],
            cull: vk::CullModeFlags::NONE,
            color_format: Some(COLOR_FORMAT),
            depth_format: DEPTH_FORMAT,
            // Reversed depth: nearer is greater, and the screen-filling triangle at depth 0
            // passes only where the depth is still the cleared 0.
            depth_test: true,
            depth_write: false,
            depth_compare: vk::CompareOp::GREATER_OR_EQUAL,
            depth_bias: None,
            blend: Blend::Opaque,
        };
        let layout = self.layout;
        let make = |d: PipelineDesc<'_>| create_pipeline(&gpu, layout, &d);
        self.pipelines.environment = make(PipelineDesc { ..base })?;
        let base = PipelineDesc { name: "", ..base };
        self.pipelines.bark = make(PipelineDesc {
            name: "vkCreateGraphicsPipelines (bark)",
            vertex: &sh::BARK_VERT,
            fragment: Some(&sh::BARK_FRAG),
            bindings: &bark_bind,
            attributes: &bark_attrs,
            cull: vk::CullModeFlags::BACK,
            depth_test: true,
            depth_write: true,
            ..base
        })?;
        let base = PipelineDesc { name: "", ..base };
        self.pipelines.leaf = make(PipelineDesc {
            name: "vkCreateGraphicsPipelines (leaf)",
            vertex: &sh::LEAF_VERT,
            fragment: Some(&sh::LEAF_FRAG),
            bindings: &leaf_bind,
            attributes: &leaf_attrs,
            depth_test: true,
            depth_write: true,
            ..base
        })?;
        let base = PipelineDesc { name: "", ..base };
        self.pipelines.sphere = make(PipelineDesc {
            name: "vkCreateGraphicsPipelines (sphere)",
            vertex: &sh::SPHERE_VERT,
            fragment: Some(&sh::SPHERE_FRAG),
            bindings: &sphere_bind,
            attributes: &sphere_attrs,
            cull: vk::CullModeFlags::BACK,
            depth_test: true,
            blend: Blend::Alpha,
            ..base
        })?;
        let base = PipelineDesc { name: "", ..base };
        // Wind arrows: flat, seen from either side, opaque, in the depth buffer like the trees.
        self.pipelines.arrow = make(PipelineDesc {
            name: "vkCreateGraphicsPipelines (wind arrows)",
            vertex: &sh::ARROW_VERT,
            fragment: Some(&sh::ARROW_FRAG),
            bindings: &arrow_bind,
            attributes: &arrow_attrs,
            cull: vk::CullModeFlags::NONE,
            depth_test: true,
            depth_write: true,
            blend: Blend::Opaque,
            ..base
        })?;
        // The same arrows built by the vertex shader from the GPU wind field.
        self.pipelines.arrow_field = create_pipeline(
            &gpu,
            self.field_layout,
            &PipelineDesc {
                name: "vkCreateGraphicsPipelines (wind arrows from the GPU field)",
                vertex: &sh::ARROW_FIELD_VERT,
                fragment: Some(&sh::ARROW_FRAG),
                bindings: &[],
                attributes: &[],
                cull: vk::CullModeFlags::NONE,
                depth_test: true,
                depth_write: true,
                blend: Blend::Opaque,
                ..base
            },
        )?;
        let base = PipelineDesc { name: "", ..base };
        self.pipelines.overlay = make(PipelineDesc {
            name: "vkCreateGraphicsPipelines (overlay)",
            vertex: &sh::OVERLAY_VERT,
            fragment: Some(&sh::OVERLAY_FRAG),
            bindings: &overlay_bind,
            attributes: &overlay_attrs,
            blend: Blend::Alpha,
            ..base
        })?;
        // Shadow passes: depth only, standard depth (1 far), biased against acne; both faces,
        // so thin branches and leaf cards cast shadows whichever way they face the sun.
        let base = PipelineDesc {
            color_format: None,
            depth_test: true,
            depth_write: true,
            depth_compare: vk::CompareOp::LESS_OR_EQUAL,
            depth_bias: Some((1.25, 1.75)),
            ..base
        };
        self.pipelines.bark_shadow = make(PipelineDesc {
            name: "vkCreateGraphicsPipelines (bark shadow)",
            vertex: &sh::BARK_SHADOW_VERT,
            fragment: None,
            bindings: &bark_bind,
            attributes: &bark_shadow_attrs,
            ..base
        })?;
        let base = PipelineDesc { name: "", ..base };
        self.pipelines.leaf_shadow = make(PipelineDesc {
            name: "vkCreateGraphicsPipelines (leaf shadow)",
            vertex: &sh::LEAF_SHADOW_VERT,
            fragment: Some(&sh::LEAF_SHADOW_FRAG),
            bindings: &leaf_shadow_bind,
            attributes: &leaf_attrs,
            ..base
        })?;
        Ok(())
    }

    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
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
        Ok(si)
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
        if layout.bytes > 0 {
            let slot = &mut self.slots[si];
            let buffer = Self::grow(
                &gpu,
                &mut slot.instances,
                &mut slot.release,
                layout.bytes,
                vk::BufferUsageFlags::VERTEX_BUFFER,
                "instances",
            )?;
            for (lod, v) in frame.segments.iter().enumerate() {
                buffer.write(layout.segments[lod].0 as usize, v);
            }
            for (lod, v) in frame.leaves.iter().enumerate() {
                buffer.write(layout.leaves[lod].0 as usize, v);
            }
            buffer.write(layout.spheres.0 as usize, &frame.spheres);
            buffer.write(layout.arrows.0 as usize, &frame.wind_arrows);
            upload += layout.bytes as usize;
        }
        self.overlay_vertices.clear();
        self.stats.draws = layout.draws(options.shadows, frame.camera.is_some(), options.overlay)
            + field_arrows.is_some_and(|(_, n, _)| n > 0) as u32;
        if options.overlay {
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
        let field = field_arrows.map(|(push, n, _)| (push, n));
        let draws = self.record(cmd, si, frame, options, &layout, extent, output, field);
        // SAFETY: the command buffer is recording.
        unsafe { dev.end_command_buffer(cmd) }.map_err(vk_err("vkEndCommandBuffer"))?;
        // SAFETY: the fence is signalled and unused by pending work (waited above).
        unsafe { dev.reset_fences(&[slot.fence]) }.map_err(vk_err("vkResetFences"))?;
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
        let submit = vk::SubmitInfo2::default()
            .command_buffer_infos(&cmds)
            .wait_semaphore_infos(&waits)
            .signal_semaphore_infos(&signals);
        let recorded = start.elapsed();
        gpu.submit(&[submit], slot.fence)?;
        let submitted = start.elapsed() - recorded;
        self.slots[si].queries_pending = gpu.timestamps.is_some();
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
    fn grow<'a>(
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

    fn ensure_targets(&mut self, extent: vk::Extent2D, readback: bool, si: usize) -> Result<()> {
        let gpu = self.gpu.clone();
        if self.color.as_ref().is_none_or(|c| c.extent != extent) {
            let color = gpu.create_image(
                "color",
                extent,
                COLOR_FORMAT,
                vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
            )?;
            let depth = gpu.create_image(
                "depth",
                extent,
                DEPTH_FORMAT,
                vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            )?;
            // Frames already submitted finish before this slot's next fence signals.
            if let Some(old) = self.color.replace(color) {
                self.slots[si].release.push(old);
            }
            if let Some(old) = self.depth.replace(depth) {
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

    fn uniforms(&self, frame: &RenderFrame, extent: vk::Extent2D) -> FrameUniforms {
        let (w, h) = (extent.width as f32, extent.height as f32);
        let (view_proj, eye) = match frame.camera {
            Some(c) => {
                let mut c = c;
                c.aspect = w / h;
                (c.view_proj(), c.eye)
            }
            None => (Mat4::IDENTITY, Vec3::new(0.0, 2.0, 10.0)),
        };
        let sun = if frame.sun.length_squared() > 0.0 {
            frame.sun.normalize()
        } else {
            Vec3::new(0.4, 0.8, 0.3).normalize()
        };
        // The shadow map covers the scene's bounding sphere seen from the sun.
        let (center, radius) = frame.bounds;
        let radius = radius.max(1.0);
        let light_view = glam::camera::rh::view::look_at_mat4(
            center + sun * radius * 2.0,
            center,
            if sun.y.abs() > 0.99 { Vec3::Z } else { Vec3::Y },
        );
        let light_proj =
            glam::camera::rh::proj::vulkan::orthographic(-radius, radius, -radius, radius, 0.0, radius * 4.0);
        let texel = 2.0 * radius / self.shadow_size as f32;
        // The ground fades into the sky well beyond the scene and the camera.
        let ground = (radius * 6.0).max((eye - center).length() * 3.0).max(200.0);
        FrameUniforms {
            view_proj: view_proj.to_cols_array_2d(),
            light_view_proj: (light_proj * light_view).to_cols_array_2d(),
            camera_pos: eye.extend(1.0).to_array(),
            light_dir: sun.extend(SUN_INTENSITY).to_array(),
            sun_color: vec4(palette::SUN, 1.0),
            sky_zenith: vec4(palette::SKY_ZENITH, 1.0),
            sky_horizon: vec4(palette::SKY_HORIZON, 1.0),
            bark_color: vec4(palette::BARK, 1.0),
            leaf_color: vec4(palette::LEAF, 1.0),
            ground_color: vec4(palette::GROUND, 1.0),
            viewport: [w, h, 1.0 / w, 1.0 / h],
            params: [frame.info.sim_time as f32, 1.5 / (radius * 4.0) * texel, ground, texel],
            inv_view_proj: view_proj.inverse().to_cols_array_2d(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        cmd: vk::CommandBuffer,
        si: usize,
        frame: &RenderFrame,
        options: &DrawOptions,
        layout: &InstanceLayout,
        extent: vk::Extent2D,
        output: &Output,
        field_arrows: Option<(ArrowFieldPush, u32)>,
    ) -> u32 {
        let dev = &self.gpu.device;
        let slot = &self.slots[si];
        let color = self.color.as_ref().expect("targets exist");
        let depth = self.depth.as_ref().expect("targets exist");
        let mut draws = 0u32;
        let timestamps = self.gpu.timestamps.is_some();
        let stamp = |i: u32, stage: vk::PipelineStageFlags2| {
            if timestamps {
                // SAFETY: the query pool has TIMESTAMPS queries, reset at the start of this buffer.
                unsafe { dev.cmd_write_timestamp2(cmd, stage, slot.queries, i) };
            }
        };
        // SAFETY: for the whole recording, every handle used belongs to this renderer and stays
        // alive until the slot's fence signals (replaced resources go on the slot's release
        // list); barriers order each image's uses across passes and frames on the one queue.
        unsafe {
            if timestamps {
                dev.cmd_reset_query_pool(cmd, slot.queries, 0, TIMESTAMPS);
            }
            stamp(0, vk::PipelineStageFlags2::TOP_OF_PIPE);
            dev.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::GRAPHICS, self.layout, 0, &[slot.set], &[]);
            let instances = slot.instances.as_ref().map(|b| b.raw);

            // Shadow pass: depth only, from the sun.
            let s = self.shadow_size;
            let shadow = self.shadow.as_ref().expect("created in init");
            barrier(
                dev,
                cmd,
                shadow.raw,
                vk::ImageAspectFlags::DEPTH,
                (
                    vk::ImageLayout::UNDEFINED,
                    vk::PipelineStageFlags2::FRAGMENT_SHADER,
                    vk::AccessFlags2::NONE,
                ),
                (
                    vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                    vk::PipelineStageFlags2::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags2::LATE_FRAGMENT_TESTS,
                    vk::AccessFlags2::DEPTH_STENCIL_ATTACHMENT_WRITE | vk::AccessFlags2::DEPTH_STENCIL_ATTACHMENT_READ,
                ),
            );
            let shadow_depth = vk::RenderingAttachmentInfo::default()
                .image_view(shadow.view)
                .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
                });
            let shadow_info = vk::RenderingInfo::default()
                .render_area(vk::Rect2D {
                    offset: vk::Offset2D::default(),
                    extent: vk::Extent2D { width: s, height: s },
                })
                .layer_count(1)
                .depth_attachment(&shadow_depth);
            dev.cmd_begin_rendering(cmd, &shadow_info);
            set_viewport(dev, cmd, s, s);
            if options.shadows {
                if let Some(inst) = instances {
                    dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.bark_shadow);
                    // A shadow needs no round branches: segments cast with the coarsest
                    // cylinder, and the thinnest ones (under a pixel on screen) not at all.
                    for lod in 0..LODS - 1 {
                        draws += self.draw_mesh(cmd, &self.meshes[LODS - 1], inst, layout.segments[lod]);
                    }
                    // Every other leaf, enlarged (the pipeline's instance stride is two leaves).
                    dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.leaf_shadow);
                    for lod in 0..LODS {
                        let (offset, count) = layout.leaves[lod];
                        draws += self.draw_mesh(cmd, &self.meshes[CARD], inst, (offset, count / 2));
                    }
                }
            }
            dev.cmd_end_rendering(cmd);
            stamp(1, vk::PipelineStageFlags2::LATE_FRAGMENT_TESTS);
            barrier(
                dev,
                cmd,
                shadow.raw,
                vk::ImageAspectFlags::DEPTH,
                (
                    vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                    vk::PipelineStageFlags2::LATE_FRAGMENT_TESTS,
                    vk::AccessFlags2::DEPTH_STENCIL_ATTACHMENT_WRITE,
                ),
                (
                    vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                    vk::PipelineStageFlags2::FRAGMENT_SHADER,
                    vk::AccessFlags2::SHADER_SAMPLED_READ,
                ),
            );

            // Main pass.
            barrier(
                dev,
                cmd,
                color.raw,
                vk::ImageAspectFlags::COLOR,
                (
                    vk::ImageLayout::UNDEFINED,
                    vk::PipelineStageFlags2::ALL_TRANSFER,
                    vk::AccessFlags2::NONE,
                ),
                (
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                    vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT,
                    vk::AccessFlags2::COLOR_ATTACHMENT_WRITE,
                ),
            );
            barrier(
                dev,
                cmd,
                depth.raw,
                vk::ImageAspectFlags::DEPTH,
                (
                    vk::ImageLayout::UNDEFINED,
                    vk::PipelineStageFlags2::LATE_FRAGMENT_TESTS,
                    vk::AccessFlags2::DEPTH_STENCIL_ATTACHMENT_WRITE,
                ),
                (
                    vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                    vk::PipelineStageFlags2::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags2::LATE_FRAGMENT_TESTS,
                    vk::AccessFlags2::DEPTH_STENCIL_ATTACHMENT_WRITE | vk::AccessFlags2::DEPTH_STENCIL_ATTACHMENT_READ,
                ),
            );
            let color_att = [vk::RenderingAttachmentInfo::default()
                .image_view(color.view)
                .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    color: vk::ClearColorValue {
                        float32: [0.0, 0.0, 0.0, 1.0],
                    },
                })];
            let depth_att = vk::RenderingAttachmentInfo::default()
                .image_view(depth.view)
                .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::DONT_CARE)
                // Reversed depth: 0 is infinitely far.
                .clear_value(vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue { depth: 0.0, stencil: 0 },
                });
            let main_info = vk::RenderingInfo::default()
                .render_area(vk::Rect2D {
                    offset: vk::Offset2D::default(),
                    extent,
                })
                .layer_count(1)
                .color_attachments(&color_att)
                .depth_attachment(&depth_att);
            dev.cmd_begin_rendering(cmd, &main_info);
            set_viewport(dev, cmd, extent.width, extent.height);
            // Trees first, then sky and ground only where no tree was drawn.
            if let Some(inst) = instances.filter(|_| frame.camera.is_some()) {
                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.bark);
                for lod in 0..LODS {
                    draws += self.draw_mesh(cmd, &self.meshes[lod], inst, layout.segments[lod]);
                }
                stamp(2, vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT);
                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.leaf);
                for lod in 0..LODS {
                    draws += self.draw_mesh(cmd, &self.meshes[CARD], inst, layout.leaves[lod]);
                }
                if layout.arrows.1 > 0 {
                    // Before the sky and ground, which fill only what is still empty.
                    dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.arrow);
                    dev.cmd_bind_vertex_buffers(cmd, 0, &[inst], &[layout.arrows.0]);
                    dev.cmd_draw(cmd, 9, layout.arrows.1, 0, 0);
                    draws += 1;
                }
            } else {
                stamp(2, vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT);
            }
            if let Some((push, count)) = field_arrows.filter(|(_, n)| *n > 0) {
                let layout = self.field_layout;
                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.arrow_field);
                dev.cmd_bind_descriptor_sets(
                    cmd,
                    vk::PipelineBindPoint::GRAPHICS,
                    layout,
                    0,
                    &[slot.set, slot.field_set],
                    &[],
                );
                dev.cmd_push_constants(cmd, layout, vk::ShaderStageFlags::VERTEX, 0, bytemuck::bytes_of(&push));
                dev.cmd_draw(cmd, 9, count, 0, 0);
                draws += 1;
                // The other pipelines' layout has no push constants: set 0 again for them.
                dev.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::GRAPHICS, self.layout, 0, &[slot.set], &[]);
            }
            stamp(3, vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT);
            if frame.camera.is_some() {
                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.environment);
                dev.cmd_draw(cmd, 3, 1, 0, 0);
                draws += 1;
                if let Some(inst) = instances {
                    dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.sphere);
                    draws += self.draw_mesh(cmd, &self.meshes[SPHERE], inst, layout.spheres);
                }
            }
            stamp(4, vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT);
            if let Some(ov) = slot.overlay.as_ref().filter(|_| !self.overlay_vertices.is_empty()) {
                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.overlay);
                dev.cmd_bind_vertex_buffers(cmd, 0, &[ov.raw], &[0]);
                dev.cmd_draw(cmd, self.overlay_vertices.len() as u32, 1, 0, 0);
                draws += 1;
            }
            dev.cmd_end_rendering(cmd);
            stamp(5, vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT);

            // Epilogue: present and/or read back.
            barrier(
                dev,
                cmd,
                color.raw,
                vk::ImageAspectFlags::COLOR,
                (
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                    vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT,
                    vk::AccessFlags2::COLOR_ATTACHMENT_WRITE,
                ),
                (
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    vk::PipelineStageFlags2::ALL_TRANSFER,
                    vk::AccessFlags2::TRANSFER_READ,
                ),
            );
            if let Some(p) = &output.present {
                barrier(
                    dev,
                    cmd,
                    p.image,
                    vk::ImageAspectFlags::COLOR,
                    (
                        vk::ImageLayout::UNDEFINED,
                        vk::PipelineStageFlags2::BLIT,
                        vk::AccessFlags2::NONE,
                    ),
                    (
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        vk::PipelineStageFlags2::BLIT,
                        vk::AccessFlags2::TRANSFER_WRITE,
                    ),
                );
                let corner = |e: vk::Extent2D| vk::Offset3D {
                    x: e.width as i32,
                    y: e.height as i32,
                    z: 1,
                };
                let layers = vk::ImageSubresourceLayers {
                    aspect_mask: vk::ImageAspectFlags::COLOR,
                    mip_level: 0,
                    base_array_layer: 0,
                    layer_count: 1,
                };
                let regions = [vk::ImageBlit2::default()
                    .src_subresource(layers)
                    .src_offsets([vk::Offset3D::default(), corner(extent)])
                    .dst_subresource(layers)
                    .dst_offsets([vk::Offset3D::default(), corner(p.extent)])];
                let blit = vk::BlitImageInfo2::default()
                    .src_image(color.raw)
                    .src_image_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
                    .dst_image(p.image)
                    .dst_image_layout(vk::ImageLayout::TRANSFER_DST_OPTIMAL)
                    .regions(&regions)
                    .filter(vk::Filter::NEAREST);
                dev.cmd_blit_image2(cmd, &blit);
                barrier(
                    dev,
                    cmd,
                    p.image,
                    vk::ImageAspectFlags::COLOR,
                    (
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        vk::PipelineStageFlags2::BLIT,
                        vk::AccessFlags2::TRANSFER_WRITE,
                    ),
                    (
                        vk::ImageLayout::PRESENT_SRC_KHR,
                        vk::PipelineStageFlags2::NONE,
                        vk::AccessFlags2::NONE,
                    ),
                );
            }
            if output.readback {
                let rb = self.readback.as_ref().expect("ensure_targets made the readback buffer");
                let regions = [vk::BufferImageCopy2::default()
                    .image_subresource(vk::ImageSubresourceLayers {
                        aspect_mask: vk::ImageAspectFlags::COLOR,
                        mip_level: 0,
                        base_array_layer: 0,
                        layer_count: 1,
                    })
                    .image_extent(vk::Extent3D {
                        width: extent.width,
                        height: extent.height,
                        depth: 1,
                    })];
                let copy = vk::CopyImageToBufferInfo2::default()
                    .src_image(color.raw)
                    .src_image_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
                    .dst_buffer(rb.raw)
                    .regions(&regions);
                dev.cmd_copy_image_to_buffer2(cmd, &copy);
                let to_host = [vk::MemoryBarrier2::default()
                    .src_stage_mask(vk::PipelineStageFlags2::ALL_TRANSFER)
                    .src_access_mask(vk::AccessFlags2::TRANSFER_WRITE)
                    .dst_stage_mask(vk::PipelineStageFlags2::HOST)
                    .dst_access_mask(vk::AccessFlags2::HOST_READ)];
                dev.cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&to_host));
            }
        }
        draws
    }

    /// Binds a mesh and draws `count` instances starting at byte `offset` of `instances`.
    fn draw_mesh(
        &self,
        cmd: vk::CommandBuffer,
        mesh: &GpuMesh,
        instances: vk::Buffer,
        (offset, count): (u64, u32),
    ) -> u32 {
        if count == 0 {
            return 0;
        }
        let dev = &self.gpu.device;
        // SAFETY: recording into a command buffer in the recording state; the buffers live
        // until the frame's fence signals; the offsets lie inside the instance buffer.
        unsafe {
            dev.cmd_bind_vertex_buffers(cmd, 0, &[mesh.vertices.raw, instances], &[0, offset]);
            dev.cmd_bind_index_buffer(cmd, mesh.indices.raw, 0, vk::IndexType::UINT16);
            dev.cmd_draw_indexed(cmd, mesh.index_count, count, 0, 0, 0);
        }
        1
    }

    fn compose_overlay(&mut self, frame: &RenderFrame, options: &DrawOptions, extent: vk::Extent2D) {
        let mut vertices = std::mem::take(&mut self.overlay_vertices);
        {
            let a = &self.atlas;
            let mut b = OverlayBuilder {
                atlas: a,
                vertices: &mut vertices,
            };
            let white = [255, 255, 255, 255];
            let dim = [200, 210, 220, 255];
            let lh = a.line_height;
            let (x, mut y) = (10.0, 8.0);
            let info = &frame.info;
            let title = if info.title.is_empty() {
                "Sylva".to_string()
            } else {
                format!("Sylva · {}", info.title)
            };
            b.label(x, y, &title, white);
            y += lh;
            let drawn: usize = frame.trees_drawn.iter().sum();
            let segs: usize = frame.segments.iter().map(Vec::len).sum();
            let leaves: usize = frame.leaves.iter().map(Vec::len).sum();
            let rate = if self.fps > 0.0 {
                format!("{:5.1} fps {:6.2} ms", self.fps, 1000.0 / self.fps)
            } else {
                "(a single frame)".to_string()
            };
            b.label(
                x,
                y,
                &format!(
                    "{rate}   trees {} (drawn {} = {}/{}/{} by LOD)   segments {} of {}   leaves {} of {}   draws {}",
                    info.trees,
                    drawn,
                    frame.trees_drawn[0],
                    frame.trees_drawn[1],
                    frame.trees_drawn[2],
                    segs,
                    info.segments,
                    leaves,
                    info.leaves,
                    self.stats.draws
                ),
                white,
            );
            y += lh;
            let mut sim = String::from("sim ms ");
            for (name, _, mean) in &frame.timings.phases {
                sim.push_str(&format!(" {name} {mean:.2}"));
            }
            sim.push_str(&format!("  wait {:.2}", frame.timings.cache_wait_ms));
            b.label(x, y, &sim, dim);
            y += lh;
            let mut g = String::from("gpu ms ");
            if self.gpu_timings.frames() == 0 {
                g.push_str(if self.gpu.timestamps.is_some() {
                    " (waiting for the first frame)"
                } else {
                    " (no timestamps on this device)"
                });
            } else {
                for id in self.gpu_timings.phase_ids() {
                    g.push_str(&format!(
                        " {} {:.2}",
                        self.gpu_timings.phase_name(id),
                        self.gpu_timings.last(id).as_secs_f32() * 1e3
                    ));
                }
                g.push_str(&format!(
                    "  total {:.2}",
                    self.gpu_timings.last_wall().as_secs_f32() * 1e3
                ));
            }
            b.label(x, y, &g, dim);
            y += lh;
            let state = format!(
                "t {:.1} s  {}  solver {}  wind {:.1} m/s at {:.0}°  LOD bias {:.1}{}",
                info.sim_time,
                if info.paused { "PAUSED" } else { "running" },
                info.solver,
                info.wind_speed,
                info.wind_heading_deg,
                info.lod_bias,
                if info.message.is_empty() {
                    String::new()
                } else {
                    format!("  ·  {}", info.message)
                }
            );
            b.label(x, y, &state, dim);
            y += lh;
            if let Some(f) = &info.field {
                let field = format!(
                    "wind field: {} arrows on layer {} of {} ({:.1} m up), blue calm to red {:.1} m/s",
                    f.arrows,
                    f.layer + 1,
                    f.layers,
                    f.height,
                    f.max_speed
                );
                b.label(x, y, &field, dim);
                y += lh;
            }
            y += 4.0;
            // Frame graph: render frame interval (grey), GPU time (green), simulation frame (orange).
            let frames: Vec<Vec<f32>> = self.graph.iter().map(|f| vec![f[1], (f[0] - f[1]).max(0.0)]).collect();
            let sims: Vec<Vec<f32>> = self.graph.iter().map(|f| vec![f[2]]).collect();
            let max = self
                .graph
                .iter()
                .map(|f| f[0].max(f[2]))
                .fold(16.7f32, f32::max)
                .min(250.0)
                * 1.1;
            let gw = (GRAPH_FRAMES as f32).min(extent.width as f32 - 20.0).max(10.0);
            b.bars(
                x,
                y,
                gw,
                60.0,
                max,
                &frames,
                &[[90, 200, 110, 230], [150, 150, 150, 200]],
                &[16.7, 33.3],
            );
            b.bars(x, y + 62.0, gw, 24.0, max, &sims, &[[240, 150, 60, 230]], &[16.7, 33.3]);
            b.label(x + gw + 8.0, y, &format!("{max:.0} ms"), dim);
            b.label(x + gw + 8.0, y + 62.0, "sim", [240, 150, 60, 255]);
            if !options.help.is_empty() {
                let lines: Vec<&str> = options.help.lines().collect();
                let mut hy = extent.height as f32 - 6.0 - lh * lines.len() as f32;
                for line in lines {
                    b.label(x, hy, line, white);
                    hy += lh;
                }
            }
        }
        self.overlay_vertices = vertices;
    }
}

/// Records an image layout transition with its stages and accesses.
///
/// # Safety
///
/// `cmd` is recording and `image` is a live single-level, single-layer image of this device.
unsafe fn barrier(
    dev: &ash::Device,
    cmd: vk::CommandBuffer,
    image: vk::Image,
    aspect: vk::ImageAspectFlags,
    from: (vk::ImageLayout, vk::PipelineStageFlags2, vk::AccessFlags2),
    to: (vk::ImageLayout, vk::PipelineStageFlags2, vk::AccessFlags2),
) {
    let b = [vk::ImageMemoryBarrier2::default()
        .src_stage_mask(from.1)
        .src_access_mask(from.2)
        .old_layout(from.0)
        .dst_stage_mask(to.1)
        .dst_access_mask(to.2)
        .new_layout(to.0)
        .image(image)
        .subresource_range(full_range(aspect))];
    // SAFETY: as the function's contract states.
    unsafe { dev.cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().image_memory_barriers(&b)) };
}

/// Sets a full-image viewport and scissor.
///
/// # Safety
///
/// `cmd` is recording.
unsafe fn set_viewport(dev: &ash::Device, cmd: vk::CommandBuffer, w: u32, h: u32) {
    let viewport = vk::Viewport {
        x: 0.0,
        y: 0.0,
        width: w as f32,
        height: h as f32,
        min_depth: 0.0,
        max_depth: 1.0,
    };
    // SAFETY: as the function's contract states.
    unsafe {
        dev.cmd_set_viewport(cmd, 0, &[viewport]);
        dev.cmd_set_scissor(
            cmd,
            0,
            &[vk::Rect2D {
                offset: vk::Offset2D::default(),
                extent: vk::Extent2D { width: w, height: h },
            }],
        );
    }
}

impl Drop for Renderer {
    fn drop(&mut self) {
        let gpu = self.gpu.clone();
        let _ = gpu.wait_idle();
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
            for b in [s.instances.take(), s.overlay.take()].into_iter().flatten() {
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

impl Rgba {
    /// Encodes the image as an 8-bit sRGB RGBA PNG.
    pub fn to_png(&self) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
            encoder.set_color(png::ColorType::Rgba);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
            // Writing into a Vec cannot fail on I/O; the header matches the data by construction.
            let mut writer = encoder.write_header().expect("PNG header for an in-memory image");
            writer
                .write_image_data(&self.pixels)
                .expect("PNG data of the stated size");
        }
        out
    }

    /// Decodes an 8-bit RGB or RGBA PNG (as written by [`to_png`](Self::to_png) or a screenshot).
    pub fn from_png(bytes: &[u8]) -> std::result::Result<Rgba, String> {
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().map_err(|e| format!("not a PNG image: {e}"))?;
        let mut buf = vec![0; reader.output_buffer_size().ok_or("PNG image too large")?];
        let info = reader
            .next_frame(&mut buf)
            .map_err(|e| format!("broken PNG image: {e}"))?;
        if info.bit_depth != png::BitDepth::Eight {
            return Err(format!("PNG bit depth {:?}; allowed: 8", info.bit_depth));
        }
        let pixels = match info.color_type {
            png::ColorType::Rgba => buf[..info.buffer_size()].to_vec(),
            png::ColorType::Rgb => buf[..info.buffer_size()]
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect(),
            other => return Err(format!("PNG colour type {other:?}; allowed: RGB, RGBA")),
        };
        Ok(Rgba {
            width: info.width,
            height: info.height,
            pixels,
        })
    }
}
