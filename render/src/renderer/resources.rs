//! What the renderer creates once: descriptor set and pipeline layouts, the shadow and font
//! samplers, the shadow map, the font atlas image, the meshes (a cylinder per level of
//! detail, the leaf card, the sphere), the descriptor pool, the frame slots and the
//! pipelines; and the staging uploads that fill device-local buffers and images.
//!
//! Invariants: every handle is stored in the renderer the moment it is created, so a failure
//! part way leaves the renderer's `Drop` to destroy what exists; an upload waits for its copy
//! (`Gpu::run_once`) before its staging buffer is destroyed, and destroys what it made on
//! failure.

use ash::vk;
use gpu_allocator::MemoryLocation;
use sylva_shaders::ArrowFieldPush;

use super::passes::barrier;
use super::{Renderer, DEPTH_FORMAT, FRAMES_IN_FLIGHT};
use crate::error::{vk_err, Result};
use crate::gpu::{Buffer, Image};
use crate::mesh::{self, CYLINDER_SIDES};

/// A static indexed mesh on the GPU.
pub(super) struct GpuMesh {
    pub(super) vertices: Buffer,
    pub(super) indices: Buffer,
    pub(super) index_count: u32,
}

impl Renderer {
    pub(super) fn init(&mut self) -> Result<()> {
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
}
