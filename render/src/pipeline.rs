//! Graphics pipelines for dynamic rendering (no render pass objects): a description per
//! pipeline and one function that builds it.

use ash::vk;
use sylva_shaders::Spirv;

use crate::error::{RenderError, Result};
use crate::gpu::Gpu;

/// Blending of the colour attachment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blend {
    Opaque,
    /// Opaque, the colour's alpha not written: it goes to coverage (alpha-to-coverage), and the
    /// picture's alpha stays opaque.
    OpaqueRgb,
    /// Non-premultiplied alpha.
    Alpha,
}

/// Everything that differs between Sylva's pipelines.
pub struct PipelineDesc<'a> {
    pub name: &'static str,
    pub vertex: &'a Spirv,
    /// `None` for depth-only passes that need no fragment work.
    pub fragment: Option<&'a Spirv>,
    pub bindings: &'a [vk::VertexInputBindingDescription],
    pub attributes: &'a [vk::VertexInputAttributeDescription],
    pub cull: vk::CullModeFlags,
    /// `None` for depth-only passes.
    pub color_format: Option<vk::Format>,
    pub depth_format: vk::Format,
    pub depth_test: bool,
    pub depth_write: bool,
    pub depth_compare: vk::CompareOp,
    /// Constant and slope depth bias (shadow map passes).
    pub depth_bias: Option<(f32, f32)>,
    pub blend: Blend,
    /// Samples per pixel of the targets (multisampling).
    pub samples: vk::SampleCountFlags,
    /// Turn the fragment's alpha into sample coverage (cut-out leaves with smooth edges under
    /// multisampling).
    pub alpha_to_coverage: bool,
}

/// Builds a graphics pipeline with dynamic viewport and scissor.
pub fn create_pipeline(gpu: &Gpu, layout: vk::PipelineLayout, d: &PipelineDesc<'_>) -> Result<vk::Pipeline> {
    let vs = gpu.shader_module(d.vertex)?;
    let fs = match d.fragment.map(|f| gpu.shader_module(f)).transpose() {
        Ok(fs) => fs,
        Err(e) => {
            // SAFETY: the module was just created and is not used by any pipeline.
            unsafe { gpu.device.destroy_shader_module(vs, None) };
            return Err(e);
        }
    };
    let mut stages = vec![vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::VERTEX)
        .module(vs)
        .name(c"main")];
    if let Some(fs) = fs {
        stages.push(
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(fs)
                .name(c"main"),
        );
    }
    let vertex_input = vk::PipelineVertexInputStateCreateInfo::default()
        .vertex_binding_descriptions(d.bindings)
        .vertex_attribute_descriptions(d.attributes);
    let assembly = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
    let viewport = vk::PipelineViewportStateCreateInfo::default()
        .viewport_count(1)
        .scissor_count(1);
    let mut raster = vk::PipelineRasterizationStateCreateInfo::default()
        .polygon_mode(vk::PolygonMode::FILL)
        .cull_mode(d.cull)
        // Meshes wind counter-clockwise seen from outside; the projection's y flip keeps that
        // counter-clockwise in framebuffer space.
        .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
        .line_width(1.0);
    if let Some((constant, slope)) = d.depth_bias {
        raster = raster
            .depth_bias_enable(true)
            .depth_bias_constant_factor(constant)
            .depth_bias_slope_factor(slope);
    }
    let multisample = vk::PipelineMultisampleStateCreateInfo::default()
        .rasterization_samples(d.samples)
        .alpha_to_coverage_enable(d.alpha_to_coverage);
    let depth = vk::PipelineDepthStencilStateCreateInfo::default()
        .depth_test_enable(d.depth_test)
        .depth_write_enable(d.depth_write)
        .depth_compare_op(d.depth_compare);
    let attachment = match d.blend {
        Blend::Opaque => {
            vk::PipelineColorBlendAttachmentState::default().color_write_mask(vk::ColorComponentFlags::RGBA)
        }
        Blend::OpaqueRgb => vk::PipelineColorBlendAttachmentState::default()
            .color_write_mask(vk::ColorComponentFlags::R | vk::ColorComponentFlags::G | vk::ColorComponentFlags::B),
        Blend::Alpha => vk::PipelineColorBlendAttachmentState::default()
            .blend_enable(true)
            .src_color_blend_factor(vk::BlendFactor::SRC_ALPHA)
            .dst_color_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
            .color_blend_op(vk::BlendOp::ADD)
            .src_alpha_blend_factor(vk::BlendFactor::ONE)
            .dst_alpha_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
            .alpha_blend_op(vk::BlendOp::ADD)
            .color_write_mask(vk::ColorComponentFlags::RGBA),
    };
    let attachments = [attachment];
    let color_blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(if d.color_format.is_some() {
        &attachments
    } else {
        &[]
    });
    let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
    let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
    let color_formats: Vec<vk::Format> = d.color_format.into_iter().collect();
    let mut rendering = vk::PipelineRenderingCreateInfo::default()
        .color_attachment_formats(&color_formats)
        .depth_attachment_format(d.depth_format);
    let info = vk::GraphicsPipelineCreateInfo::default()
        .stages(&stages)
        .vertex_input_state(&vertex_input)
        .input_assembly_state(&assembly)
        .viewport_state(&viewport)
        .rasterization_state(&raster)
        .multisample_state(&multisample)
        .depth_stencil_state(&depth)
        .color_blend_state(&color_blend)
        .dynamic_state(&dynamic)
        .layout(layout)
        .push_next(&mut rendering);
    // SAFETY: every structure the create info points to lives until the call returns; the
    // shader modules are valid SPIR-V whose interfaces match the vertex input description.
    let result = unsafe {
        gpu.device
            .create_graphics_pipelines(vk::PipelineCache::null(), &[info], None)
    };
    // SAFETY: modules may be destroyed once pipelines are created from them.
    unsafe {
        gpu.device.destroy_shader_module(vs, None);
        if let Some(fs) = fs {
            gpu.device.destroy_shader_module(fs, None);
        }
    }
    match result {
        Ok(p) => Ok(p[0]),
        Err((_, e)) => Err(RenderError::from_vk(d.name, e)),
    }
}

/// Per-vertex binding `binding` with `stride` bytes.
pub fn per_vertex(binding: u32, stride: usize) -> vk::VertexInputBindingDescription {
    vk::VertexInputBindingDescription {
        binding,
        stride: stride as u32,
        input_rate: vk::VertexInputRate::VERTEX,
    }
}

/// Per-instance binding `binding` with `stride` bytes.
pub fn per_instance(binding: u32, stride: usize) -> vk::VertexInputBindingDescription {
    vk::VertexInputBindingDescription {
        binding,
        stride: stride as u32,
        input_rate: vk::VertexInputRate::INSTANCE,
    }
}

/// Attribute at `location` of `binding`.
pub fn attr(location: u32, binding: u32, format: vk::Format, offset: usize) -> vk::VertexInputAttributeDescription {
    vk::VertexInputAttributeDescription {
        location,
        binding,
        format,
        offset: offset as u32,
    }
}
