//! Recording a frame: its uniforms (camera, sun and shadow projection, palette), then the
//! command buffer: the shadow pass (bark and leaves from the sun, depth only), the main pass
//! (sky and ground, bark and leaves per level of detail, collider spheres, wind arrows, the
//! overlay), GPU timestamps around each, and the blit to the swapchain image and/or the copy
//! back to the CPU.
//!
//! Invariants: every handle recorded belongs to the renderer and stays alive until the slot's
//! fence signals (replaced resources go on the slot's release list); image layout transitions
//! ([`barrier`]) order each image's uses across passes and frames on the one graphics queue;
//! the draws recorded never exceed what [`InstanceLayout::draws`] planned.

use ash::vk;
use glam::{Mat4, Vec3};
use sylva_shaders::{
    ArrowFieldPush, FrameUniforms, LeafInstance, SegmentInstance, SphereInstance, WindArrow, PALETTE_ENTRIES,
};

use super::resources::GpuMesh;
use super::{palette, DrawOptions, Output, Renderer, CARD, SPHERE, SUN_INTENSITY, TIMESTAMPS};
use crate::frame::{RenderFrame, LODS};
use crate::gpu::full_range;

/// Byte offsets of each instance list in a slot's instance buffer.
#[derive(Default, Clone, Copy)]
pub(super) struct InstanceLayout {
    pub(super) segments: [(u64, u32); LODS],
    pub(super) leaves: [(u64, u32); LODS],
    pub(super) spheres: (u64, u32),
    pub(super) wind_balls: (u64, u32),
    pub(super) arrows: (u64, u32),
    pub(super) bytes: u64,
}

impl InstanceLayout {
    pub(super) fn of(frame: &RenderFrame) -> InstanceLayout {
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
        l.wind_balls = place(frame.wind_balls.len(), size_of::<SphereInstance>());
        l.arrows = place(frame.wind_arrows.len(), size_of::<WindArrow>());
        l.bytes = at;
        l
    }

    /// The draws recording this layout makes (the overlay counted when shown).
    pub(super) fn draws(&self, shadows: bool, camera: bool, overlay: bool) -> u32 {
        let nonempty = |r: &[(u64, u32)]| r.iter().filter(|(_, n)| *n > 0).count() as u32;
        let meshes = nonempty(&self.segments) + nonempty(&self.leaves);
        let main = if camera {
            1 + meshes + nonempty(&[self.spheres, self.wind_balls, self.arrows])
        } else {
            0
        };
        let halves: Vec<(u64, u32)> = self.leaves.iter().map(|&(o, n)| (o, n / 2)).collect();
        let shadow = nonempty(&self.segments[..LODS - 1]) + nonempty(&halves);
        main + if shadows { shadow } else { 0 } + u32::from(overlay)
    }
}

fn vec4(v: [f32; 3], w: f32) -> [f32; 4] {
    [v[0], v[1], v[2], w]
}

impl Renderer {
    pub(super) fn uniforms(&self, frame: &RenderFrame, extent: vk::Extent2D) -> FrameUniforms {
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
            // x: 1 when the leaves' edges become coverage (multisampled), 0 when they are cut.
            leaves: [f32::from(self.samples != vk::SampleCountFlags::TYPE_1), 0.0, 0.0, 0.0],
            ground_color: vec4(palette::GROUND, 1.0),
            viewport: [w, h, 1.0 / w, 1.0 / h],
            params: [frame.info.sim_time as f32, 1.5 / (radius * 4.0) * texel, ground, texel],
            inv_view_proj: view_proj.inverse().to_cols_array_2d(),
            palette: {
                let mut palette = [[0.0f32; 4]; 2 * PALETTE_ENTRIES];
                for (k, pair) in palette.chunks_exact_mut(2).enumerate() {
                    let look = frame.looks.get(k).copied().unwrap_or_default();
                    pair[0] = vec4(look.leaf, look.shape as f32);
                    pair[1] = vec4(look.bark, 1.0);
                }
                palette
            },
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn record(
        &self,
        cmd: vk::CommandBuffer,
        si: usize,
        frame: &RenderFrame,
        options: &DrawOptions,
        layout: &InstanceLayout,
        extent: vk::Extent2D,
        output: &Output,
        field_arrows: Option<(ArrowFieldPush, u32)>,
        patched: Option<vk::Buffer>,
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
            // Segments and leaves: patched on the device (a pose on the device), or uploaded
            // with the rest; at the same offsets either way.
            let trees = patched.or(instances);

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
                if let Some(inst) = trees {
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
            // Multisampled: the pass draws into the transient multisampled target and resolves
            // it (the samples' average) into `color` at its end.
            if let Some(ms) = &self.color_ms {
                barrier(
                    dev,
                    cmd,
                    ms.raw,
                    vk::ImageAspectFlags::COLOR,
                    (
                        vk::ImageLayout::UNDEFINED,
                        vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT,
                        vk::AccessFlags2::COLOR_ATTACHMENT_WRITE,
                    ),
                    (
                        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                        vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT,
                        vk::AccessFlags2::COLOR_ATTACHMENT_WRITE,
                    ),
                );
            }
            let clear = vk::ClearValue {
                color: vk::ClearColorValue {
                    float32: [0.0, 0.0, 0.0, 1.0],
                },
            };
            let color_att = [match &self.color_ms {
                None => vk::RenderingAttachmentInfo::default()
                    .image_view(color.view)
                    .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                    .load_op(vk::AttachmentLoadOp::CLEAR)
                    .store_op(vk::AttachmentStoreOp::STORE)
                    .clear_value(clear),
                Some(ms) => vk::RenderingAttachmentInfo::default()
                    .image_view(ms.view)
                    .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                    .load_op(vk::AttachmentLoadOp::CLEAR)
                    .store_op(vk::AttachmentStoreOp::DONT_CARE)
                    .clear_value(clear)
                    .resolve_mode(vk::ResolveModeFlags::AVERAGE)
                    .resolve_image_view(color.view)
                    .resolve_image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL),
            }];
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
            if let (Some(inst), Some(tree)) = (instances.filter(|_| frame.camera.is_some()), trees) {
                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.bark);
                for lod in 0..LODS {
                    draws += self.draw_mesh(cmd, &self.meshes[lod], tree, layout.segments[lod]);
                }
                stamp(2, vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT);
                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.leaf);
                for lod in 0..LODS {
                    draws += self.draw_mesh(cmd, &self.meshes[CARD], tree, layout.leaves[lod]);
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
                    if layout.wind_balls.1 > 0 {
                        dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipelines.wind_ball);
                        draws += self.draw_mesh(cmd, &self.meshes[SPHERE], inst, layout.wind_balls);
                    }
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
}

/// Records an image layout transition with its stages and accesses.
///
/// # Safety
///
/// `cmd` is recording and `image` is a live single-level, single-layer image of this device.
pub(super) unsafe fn barrier(
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
