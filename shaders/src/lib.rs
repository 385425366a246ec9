//! Sylva's shaders: GLSL in `glsl/`, compiled to SPIR-V by `build.rs` with shaderc, and the
//! structs the CPU shares with them.
//!
//! Every shared struct is `#[repr(C)]` + `bytemuck::Pod`, and its size and field offsets are
//! checked at compile time against the layout the shaders declare (std140 for uniforms, std430
//! for push constants and storage buffers, the vertex input formats for instance data).

use bytemuck::{Pod, Zeroable};

/// SPIR-V of one shader stage.
pub struct Spirv {
    pub name: &'static str,
    pub bytes: &'static [u8],
}

macro_rules! spirv {
    ($ident:ident, $file:literal) => {
        pub const $ident: Spirv = Spirv {
            name: $file,
            bytes: include_bytes!(concat!(env!("OUT_DIR"), "/", $file, ".spv")),
        };
    };
}

spirv!(BARK_VERT, "bark.vert");
spirv!(BARK_FRAG, "bark.frag");
spirv!(BARK_SHADOW_VERT, "bark_shadow.vert");
spirv!(LEAF_VERT, "leaf.vert");
spirv!(LEAF_FRAG, "leaf.frag");
spirv!(LEAF_SHADOW_VERT, "leaf_shadow.vert");
spirv!(LEAF_SHADOW_FRAG, "leaf_shadow.frag");
spirv!(ENVIRONMENT_VERT, "environment.vert");
spirv!(ENVIRONMENT_FRAG, "environment.frag");
spirv!(SPHERE_VERT, "sphere.vert");
spirv!(SPHERE_FRAG, "sphere.frag");
spirv!(WIND_BALL_FRAG, "wind_ball.frag");
spirv!(ARROW_VERT, "arrow.vert");
spirv!(ARROW_FRAG, "arrow.frag");
spirv!(ARROW_FIELD_VERT, "arrow_field.vert");
spirv!(OVERLAY_VERT, "overlay.vert");
spirv!(OVERLAY_FRAG, "overlay.frag");
spirv!(WIND_ACT_COMP, "wind_act.comp");
spirv!(WIND_DIAG_COMP, "wind_diag.comp");
spirv!(WIND_CENTRE_COMP, "wind_centre.comp");
spirv!(WIND_ADVECT_COMP, "wind_advect.comp");
spirv!(WIND_FORCES_COMP, "wind_forces.comp");
spirv!(WIND_DIVERGENCE_COMP, "wind_divergence.comp");
spirv!(WIND_JACOBI_COMP, "wind_jacobi.comp");
spirv!(WIND_PROJECT_COMP, "wind_project.comp");
spirv!(WIND_VORT_CURL_COMP, "wind_vort_curl.comp");
spirv!(WIND_VORT_FORCE_COMP, "wind_vort_force.comp");
spirv!(WIND_VORT_APPLY_COMP, "wind_vort_apply.comp");
spirv!(WIND_MG_ACT_COMP, "wind_mg_act.comp");
spirv!(WIND_MG_DIAG_COMP, "wind_mg_diag.comp");
spirv!(WIND_MG_SMOOTH_COMP, "wind_mg_smooth.comp");
spirv!(WIND_MG_RESTRICT_COMP, "wind_mg_restrict.comp");
spirv!(WIND_MG_PROLONG_COMP, "wind_mg_prolong.comp");
spirv!(WIND_MG_VECTOR_COMP, "wind_mg_vector.comp");
spirv!(WIND_MG_DOT_COMP, "wind_mg_dot.comp");
spirv!(WIND_MG_SCALAR_COMP, "wind_mg_scalar.comp");
spirv!(OLIAPURAM_DYNAMICS_COMP, "oliapuram_dynamics.comp");
spirv!(OLIAPURAM_INTEGRATE_COMP, "oliapuram_integrate.comp");
spirv!(OLIAPURAM_POSE_COMP, "oliapuram_pose.comp");
spirv!(OLIAPURAM_LOADS_COMP, "oliapuram_loads.comp");
spirv!(OLIAPURAM_SUBTREE_COMP, "oliapuram_subtree.comp");
spirv!(OLIAPURAM_SUBTREE_TREES_COMP, "oliapuram_subtree_trees.comp");
spirv!(OLIAPURAM_PATCH_COMP, "oliapuram_patch.comp");
spirv!(POSE_PATCH_COMP, "pose_patch.comp");

/// Every stage, for tools that check them all.
pub const ALL: &[Spirv] = &[
    BARK_VERT,
    BARK_FRAG,
    BARK_SHADOW_VERT,
    LEAF_VERT,
    LEAF_FRAG,
    LEAF_SHADOW_VERT,
    LEAF_SHADOW_FRAG,
    ENVIRONMENT_VERT,
    ENVIRONMENT_FRAG,
    SPHERE_VERT,
    SPHERE_FRAG,
    WIND_BALL_FRAG,
    ARROW_VERT,
    ARROW_FRAG,
    ARROW_FIELD_VERT,
    OVERLAY_VERT,
    OVERLAY_FRAG,
    WIND_ACT_COMP,
    WIND_DIAG_COMP,
    WIND_CENTRE_COMP,
    WIND_ADVECT_COMP,
    WIND_FORCES_COMP,
    WIND_DIVERGENCE_COMP,
    WIND_JACOBI_COMP,
    WIND_PROJECT_COMP,
    WIND_VORT_CURL_COMP,
    WIND_VORT_FORCE_COMP,
    WIND_VORT_APPLY_COMP,
    WIND_MG_ACT_COMP,
    WIND_MG_DIAG_COMP,
    WIND_MG_SMOOTH_COMP,
    WIND_MG_RESTRICT_COMP,
    WIND_MG_PROLONG_COMP,
    WIND_MG_VECTOR_COMP,
    WIND_MG_DOT_COMP,
    WIND_MG_SCALAR_COMP,
    OLIAPURAM_DYNAMICS_COMP,
    OLIAPURAM_INTEGRATE_COMP,
    OLIAPURAM_POSE_COMP,
    OLIAPURAM_LOADS_COMP,
    OLIAPURAM_SUBTREE_COMP,
    OLIAPURAM_SUBTREE_TREES_COMP,
    OLIAPURAM_PATCH_COMP,
    POSE_PATCH_COMP,
];

/// Local workgroup size of the wind kernels (`glsl/wind_common.glsl`): the paper's 16×8×4
/// blocks (paper 004 §2.4), 16 along world x, 4 along y (vertical, the short axis), 8 along z.
pub const WIND_LOCAL_SIZE: [u32; 3] = [16, 4, 8];

/// Local workgroup size of Oliapuram & Kumar's kernels (`glsl/oliapuram_common.glsl`).
pub const OLIAPURAM_LOCAL_SIZE: u32 = 64;

/// Push constants of Oliapuram & Kumar's kernels, std430 (`Push` in
/// `glsl/oliapuram_common.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct OliapuramPush {
    /// Segments n, leaves m, first level index of the level, its length (integration and the
    /// breakage sums, `glsl/oliapuram_subtree.comp`); z: the entries to write
    /// (`glsl/oliapuram_patch.comp`).
    pub counts: [u32; 4],
    /// The uniform wind (wind mode 0) \[m/s\]; w: the time step \[s\].
    pub wind: [f32; 4],
    /// x: wind mode (0 uniform, 1 samples, 2 fluid); y, z: offsets of v and w in the fluid's
    /// velocity buffer, in floats.
    pub mode: [u32; 4],
    /// The fluid's cells nx, ny, nz; w: the drag law (0 linear, 1 quadratic,
    /// `sylva_sim::DragLaw`).
    pub cells: [u32; 4],
    /// The fluid domain's minimum corner \[m\].
    pub origin: [f32; 4],
    /// The fluid's cell size \[m\].
    pub h: [f32; 4],
    /// x: every leaf's μ/I; y, z, w: the quadratic drag law's 1/U_match \[s/m\], the leaves'
    /// reconfiguration speed U_r \[m/s\] and 1 + β (β their Vogel exponent), as
    /// `sylva_sim::material` defines them.
    pub leaf: [f32; 4],
}

/// Most depth levels `glsl/oliapuram_subtree_trees.comp` takes in one dispatch (one tree per
/// workgroup); a deeper forest takes `glsl/oliapuram_subtree.comp`, one dispatch per level.
pub const OLIAPURAM_SUBTREE_LEVELS: u32 = 1024;

/// Local workgroup size of `glsl/pose_patch.comp`.
pub const POSE_PATCH_LOCAL_SIZE: u32 = 64;

/// Push constants of `glsl/pose_patch.comp`: segments n, leaves m (0 for rigid leaves, whose
/// pose follows their segments'), then the frame's segment and leaf instances to patch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PosePatchPush {
    pub counts: [u32; 4],
}

/// One segment's static data (`Seg` in `glsl/oliapuram_common.glsl`), level order.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct OliapuramSeg {
    /// Rest weight moment / I; w: centroid distance.
    pub a: [f32; 4],
    /// Wind gain, weight gain, μ/I, ω₀².
    pub b: [f32; 4],
    /// den, propagation, length, 0.
    pub c: [f32; 4],
    /// Rest orientation relative to the parent.
    pub rest: [f32; 4],
    /// The root's base (roots only).
    pub root: [f32; 4],
    /// Parent, first child, end of children, forest index.
    pub topo: [u32; 4],
    /// First leaf, end of leaves.
    pub leaves: [u32; 4],
}

/// One leaf's static data (`Leaf` in `glsl/oliapuram_common.glsl`), model leaf order.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct OliapuramLeaf {
    /// Reaction on the segment per radian; w: wind gain.
    pub a: [f32; 4],
    /// ω₀², den, along, half length.
    pub b: [f32; 4],
    /// Rest orientation in the segment's frame.
    pub rest: [f32; 4],
    /// Segment (level index), forest leaf index.
    pub idx: [u32; 4],
}

/// One entry of the broken pieces' pose (`Patch` in `glsl/oliapuram_common.glsl`): where in
/// the renderer's pose (vec4 slots) the position and the orientation go, and what.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct OliapuramPatch {
    /// The position's slot, the orientation's slot, 0, 0.
    pub slot: [u32; 4],
    /// Position (xyz) \[m\].
    pub p: [f32; 4],
    /// Orientation (x, y, z, w).
    pub q: [f32; 4],
}

impl Spirv {
    /// The SPIR-V words (the bytes are 4-byte aligned copies made on first use).
    pub fn words(&self) -> Vec<u32> {
        self.bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }
}

/// Per-frame uniforms, std140 (`Frame` in `glsl/common.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct FrameUniforms {
    pub view_proj: [[f32; 4]; 4],
    pub light_view_proj: [[f32; 4]; 4],
    /// xyz: camera position.
    pub camera_pos: [f32; 4],
    /// xyz: unit direction towards the sun, w: sun intensity.
    pub light_dir: [f32; 4],
    pub sun_color: [f32; 4],
    pub sky_zenith: [f32; 4],
    pub sky_horizon: [f32; 4],
    /// x: 1 when the leaves' edges go to alpha-to-coverage (multisampled), 0 when they are
    /// cut (their colours are the palette's).
    pub leaves: [f32; 4],
    pub ground_color: [f32; 4],
    /// width, height, 1/width, 1/height (pixels).
    pub viewport: [f32; 4],
    /// x: time, y: shadow depth bias, z: distance at which the ground has faded into the sky,
    /// w: shadow-map texel size.
    pub params: [f32; 4],
    pub inv_view_proj: [[f32; 4]; 4],
    /// Per species look k: `palette[2k]` its leaves' linear colour and leaf shape id (w, see
    /// `leafshape.glsl`), `palette[2k + 1]` its bark's colour. Instances name their entry
    /// ([`PALETTE_BITS`]).
    pub palette: [[f32; 4]; 2 * PALETTE_ENTRIES],
}

/// Species looks the frame's palette holds.
pub const PALETTE_ENTRIES: usize = 32;
/// Low mantissa bits of a segment instance's base radius that carry its palette entry (the
/// radius loses 2⁻¹⁸ of itself at most); a leaf instance carries it as the integer part of
/// its colour variation.
pub const PALETTE_BITS: u32 = 5;

/// One segment drawn as an instance of the tapered-cylinder mesh (vertex locations 2-4).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SegmentInstance {
    /// Base position xyz and radius at the base (location 2, R32G32B32A32_SFLOAT).
    pub base_radius: [f32; 4],
    /// Orientation quaternion xyzw (location 3, R16G16B16A16_SNORM).
    pub orient: [i16; 4],
    /// Length and radius at the tip (location 4, R32G32_SFLOAT).
    pub length_tip: [f32; 2],
}

/// One leaf drawn as an instance of the card (vertex locations 2-4).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LeafInstance {
    /// Attachment point xyz and blade length (location 2, R32G32B32A32_SFLOAT).
    pub pos_length: [f32; 4],
    /// Orientation quaternion xyzw: +y along the blade, +z its normal (location 3,
    /// R16G16B16A16_SNORM).
    pub orient: [i16; 4],
    /// Blade width and colour variation in [0, 1] (location 4, R32G32_SFLOAT).
    pub width_shade: [f32; 2],
}

/// A collider sphere (location 2, R32G32B32A32_SFLOAT): centre xyz, radius.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SphereInstance {
    pub center_radius: [f32; 4],
}

/// A wind-field arrow, drawn as a flat arrow turned towards the camera (no vertex buffer: 9
/// vertices per instance, shaft quad then head triangle).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WindArrow {
    /// Tail xyz \[m\] and shaft width \[m\] (location 0, R32G32B32A32_SFLOAT).
    pub tail_width: [f32; 4],
    /// Tail-to-head vector xyz \[m\] and colour parameter in [0, 1], slow to fast (location 1,
    /// R32G32B32A32_SFLOAT).
    pub vector_speed: [f32; 4],
}

/// Push constants of `glsl/arrow_field.vert`: arrows drawn from the GPU wind solver's velocity
/// buffer (std430).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ArrowFieldPush {
    /// Cells nx, ny, nz and the layer drawn.
    pub n: [u32; 4],
    /// Stride between sample cells, first sample cell, samples along x, unused.
    pub sampling: [u32; 4],
    /// First float of u, v and w in the velocity buffer, unused.
    pub offsets: [u32; 4],
    /// Minimum corner of the domain \[m\], unused.
    pub origin: [f32; 4],
    /// Cell size \[m\], unused.
    pub h: [f32; 4],
    /// Arrow length per m/s \[s\], shaft width \[m\], 1 / the speed at the red end [s/m], unused.
    pub scale: [f32; 4],
}

/// A vertex of the tapered-cylinder and sphere meshes (locations 0-1).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct MeshVertex {
    pub pos: [f32; 3],
    pub normal: [f32; 3],
}

/// A corner of the leaf card (location 0, R32G32_SFLOAT).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct CardVertex {
    pub uv: [f32; 2],
}

/// An overlay vertex: pixels from the top left, atlas coordinates, colour (R8G8B8A8_UNORM).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct OverlayVertex {
    pub pos: [f32; 2],
    pub uv: [f32; 2],
    pub color: [u8; 4],
}

/// Push constants of every wind kernel, std430 (`Push` in `glsl/wind_common.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WindPush {
    /// Cells nx, ny, nz; w: number of wind balls.
    pub n: [u32; 4],
    /// Cell size hx, hy, hz; w: time step.
    pub h: [f32; 4],
    /// 1 / h (w unused).
    pub inv_h: [f32; 4],
    /// 1 / h² (w unused).
    pub inv_h2: [f32; 4],
    /// Minimum corner of the domain (w unused).
    pub origin: [f32; 4],
    /// Border wind; w: vorticity confinement strength.
    pub border: [f32; 4],
    /// x: inflow sides, y: open sides, bit `s` for side `s` (x−, x+, y−, y+, z−, z+); z: first
    /// face slab of the forces dispatch (wind_forces.comp).
    pub sides: [u32; 4],
}

/// Head of the wind balls' storage buffer (`Balls` in `glsl/wind_common.glsl`), followed by
/// the [`GpuWindBall`]s: per velocity component, the range of face slabs (`k`) any ball reaches.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WindBallsHeader {
    pub k_lo: [i32; 4],
    pub k_hi: [i32; 4],
}

/// One wind ball as it acts in a step (`Ball` in `glsl/wind_common.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuWindBall {
    /// Jittered centre xyz; w: the squared reach (3r)².
    pub centre_reach2: [f32; 4],
    /// Acceleration at the centre xyz; w: 1 / r².
    pub accel_inv_r2: [f32; 4],
}

/// Push constants of the converged pressure solver's kernels, std430 (`MgPush` in
/// `glsl/wind_mg.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WindMgPush {
    /// This level's cells (w unused).
    pub n: [u32; 4],
    /// This level's 1/h²; w: the smoother's damping.
    pub inv_h2: [f32; 4],
    /// This level's first pool element and array length, then the coarser level's.
    pub lvl: [u32; 4],
    /// The coarser level's cells and halved axes (bit a), or the pool offsets of the CG vectors
    /// b, r, d, q.
    pub aux: [u32; 4],
    /// Pool offsets of the operands; w: operation and flags.
    pub opnd: [u32; 4],
}

/// The converged pressure solver's scalars on the GPU (`Scalars` in `glsl/wind_mg.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WindMgScalars {
    pub b2: f32,
    pub r2: f32,
    pub rz: f32,
    pub alpha: f32,
    pub beta: f32,
    pub mean: f32,
    pub tol: f32,
    pub iterations: u32,
    /// 0: running, 1: converged, 2: iteration limit or non-finite values, 3: breakdown.
    pub done: u32,
    pub max_iterations: u32,
    /// Fluid cells of the finest level.
    pub count: f32,
}

// Layout checks against the shaders' declarations.
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<FrameUniforms>() == 336 + 2 * PALETTE_ENTRIES * 16);
    assert!(offset_of!(FrameUniforms, palette) == 336);
    // The GLSL declares `vec4 palette[64]`.
    assert!(2 * PALETTE_ENTRIES == 64);
    assert!(offset_of!(FrameUniforms, light_view_proj) == 64);
    assert!(offset_of!(FrameUniforms, camera_pos) == 128);
    assert!(offset_of!(FrameUniforms, light_dir) == 144);
    assert!(offset_of!(FrameUniforms, leaves) == 208);
    assert!(offset_of!(FrameUniforms, viewport) == 240);
    assert!(offset_of!(FrameUniforms, params) == 256);
    assert!(offset_of!(FrameUniforms, inv_view_proj) == 272);
    assert!(size_of::<SegmentInstance>() == 32);
    assert!(offset_of!(SegmentInstance, orient) == 16);
    assert!(offset_of!(SegmentInstance, length_tip) == 24);
    assert!(size_of::<LeafInstance>() == 32);
    assert!(offset_of!(LeafInstance, orient) == 16);
    assert!(offset_of!(LeafInstance, width_shade) == 24);
    assert!(size_of::<SphereInstance>() == 16);
    assert!(size_of::<WindArrow>() == 32);
    assert!(size_of::<ArrowFieldPush>() == 96);
    assert!(offset_of!(ArrowFieldPush, origin) == 48);
    assert!(offset_of!(ArrowFieldPush, scale) == 80);
    assert!(offset_of!(WindArrow, vector_speed) == 16);
    assert!(size_of::<MeshVertex>() == 24);
    assert!(size_of::<CardVertex>() == 8);
    assert!(size_of::<OverlayVertex>() == 20);
    assert!(offset_of!(OverlayVertex, color) == 16);
    assert!(size_of::<WindPush>() == 112);
    assert!(offset_of!(WindPush, h) == 16);
    assert!(offset_of!(WindPush, inv_h) == 32);
    assert!(offset_of!(WindPush, inv_h2) == 48);
    assert!(offset_of!(WindPush, origin) == 64);
    assert!(offset_of!(WindPush, border) == 80);
    assert!(offset_of!(WindPush, sides) == 96);
    assert!(size_of::<WindBallsHeader>() == 32);
    assert!(size_of::<PosePatchPush>() == 16);
    assert!(size_of::<OliapuramPush>() == 112);
    assert!(offset_of!(OliapuramPush, mode) == 32);
    assert!(offset_of!(OliapuramPush, leaf) == 96);
    assert!(size_of::<OliapuramSeg>() == 112);
    assert!(offset_of!(OliapuramSeg, topo) == 80);
    assert!(size_of::<OliapuramLeaf>() == 64);
    assert!(offset_of!(OliapuramLeaf, idx) == 48);
    assert!(offset_of!(WindBallsHeader, k_hi) == 16);
    assert!(size_of::<GpuWindBall>() == 32);
    assert!(offset_of!(GpuWindBall, accel_inv_r2) == 16);
    assert!(size_of::<WindMgPush>() == 80);
    assert!(offset_of!(WindMgPush, opnd) == 64);
    assert!(size_of::<WindMgScalars>() == 44);
    assert!(offset_of!(WindMgScalars, count) == 40);
};

/// Packs a unit quaternion as four signed-normalised 16-bit integers (the snorm16 vertex
/// format), truncating towards zero (an error under 1/32767 per component, which the shaders'
/// normalisation absorbs). Components slightly beyond ±1 saturate.
#[inline(always)]
pub fn pack_snorm4(q: [f32; 4]) -> [i16; 4] {
    let v = glam::Vec4::from_array(q) * 32767.0;
    // `as` saturates out-of-range floats.
    [v.x as i16, v.y as i16, v.z as i16, v.w as i16]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stage_is_spirv() {
        for s in ALL {
            let words = s.words();
            assert!(words.len() > 5, "{}", s.name);
            assert_eq!(words[0], 0x0723_0203, "{} lacks the SPIR-V magic number", s.name);
        }
    }

    #[test]
    fn snorm_packing() {
        assert_eq!(pack_snorm4([1.0, -1.0, 0.0, 0.5]), [32767, -32767, 0, 16383]);
        // Saturated; snorm16 reads both -32768 and -32767 as -1.
        assert_eq!(pack_snorm4([1.0001, -1.0001, 0.0, 0.0])[..2], [32767, -32768]);
    }
}
