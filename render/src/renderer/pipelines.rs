//! The renderer's graphics pipelines: environment (sky and ground), bark, leaves, collider
//! spheres, wind arrows (CPU- and GPU-fed), overlay, and the two shadow pipelines.
//!
//! Invariants: each pipeline is stored in [`Pipelines`] as soon as it is created, so the
//! renderer's `Drop` destroys it even if a later one fails; all use the renderer's pipeline
//! layout (set 0: frame uniforms, shadow map, font) except the GPU-field arrows, which add
//! set 1 and push constants (`field_layout`); colour pipelines render to
//! [`COLOR_FORMAT`](super::COLOR_FORMAT) with depth, shadow pipelines to depth only.

use ash::vk;
use sylva_shaders as sh;
use sylva_shaders::{CardVertex, LeafInstance, MeshVertex, OverlayVertex, SegmentInstance, SphereInstance, WindArrow};

use super::{Renderer, COLOR_FORMAT, DEPTH_FORMAT};
use crate::error::Result;
use crate::pipeline::{attr, create_pipeline, per_instance, per_vertex, Blend, PipelineDesc};

#[derive(Default)]
pub(super) struct Pipelines {
    pub(super) environment: vk::Pipeline,
    pub(super) bark: vk::Pipeline,
    pub(super) leaf: vk::Pipeline,
    pub(super) sphere: vk::Pipeline,
    pub(super) wind_ball: vk::Pipeline,
    pub(super) arrow: vk::Pipeline,
    pub(super) arrow_field: vk::Pipeline,
    pub(super) overlay: vk::Pipeline,
    pub(super) bark_shadow: vk::Pipeline,
    pub(super) leaf_shadow: vk::Pipeline,
}
impl Pipelines {
    pub(super) fn all(&self) -> [vk::Pipeline; 10] {
        [
            self.environment,
            self.bark,
            self.leaf,
            self.sphere,
            self.wind_ball,
            self.arrow,
            self.arrow_field,
            self.overlay,
            self.bark_shadow,
            self.leaf_shadow,
        ]
    }
}

impl Renderer {
    pub(super) fn create_pipelines(&mut self) -> Result<()> {
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
            samples: self.samples,
            alpha_to_coverage: false,
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
            // Multisampled, the leaf's outline turns into coverage: smooth cut-out edges.
            alpha_to_coverage: self.samples != vk::SampleCountFlags::TYPE_1,
            blend: Blend::OpaqueRgb,
            ..base
        })?;
        let base = PipelineDesc {
            alpha_to_coverage: false,
            blend: Blend::Opaque,
            ..base
        };
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
        // Wind balls: the sphere mesh, translucent too, in their own colour.
        self.pipelines.wind_ball = make(PipelineDesc {
            name: "vkCreateGraphicsPipelines (wind balls)",
            vertex: &sh::SPHERE_VERT,
            fragment: Some(&sh::WIND_BALL_FRAG),
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
        // The overlay: over everything drawn before it, whatever the depth buffer holds (with
        // the scene's depth test a tree near the camera covered the text).
        self.pipelines.overlay = make(PipelineDesc {
            name: "vkCreateGraphicsPipelines (overlay)",
            vertex: &sh::OVERLAY_VERT,
            fragment: Some(&sh::OVERLAY_FRAG),
            bindings: &overlay_bind,
            attributes: &overlay_attrs,
            depth_test: false,
            depth_write: false,
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
            samples: vk::SampleCountFlags::TYPE_1,
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
}
