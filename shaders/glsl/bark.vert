#version 450
#include "common.glsl"

// Unit tapered-cylinder mesh: x, z on the unit circle, y in [0, 1].
layout(location = 0) in vec3 in_pos;
layout(location = 1) in vec3 in_normal;
// Per segment (sylva_shaders::SegmentInstance).
layout(location = 2) in vec4 in_base_radius;   // base xyz, radius at the base
layout(location = 3) in vec4 in_orient;        // unit quaternion (snorm16)
layout(location = 4) in vec2 in_length_tip;    // length, radius at the tip

layout(location = 0) out vec3 out_world;
layout(location = 1) out vec3 out_normal;
layout(location = 2) flat out uint out_palette;
layout(location = 3) out vec2 out_bark;

void main() {
    vec4 q = normalize(in_orient);
    float r_base = segment_radius(in_base_radius.w);
    vec3 local = segment_local(in_pos, r_base, in_length_tip.y, in_length_tip.x);
    // The taper tilts the side's normal along the axis; a dome's normal is its own.
    float slope = (r_base - in_length_tip.y) / max(in_length_tip.x, 1e-6);
    vec3 n = in_normal.y == 0.0 ? normalize(vec3(in_normal.x, slope, in_normal.z)) : in_normal;
    out_world = in_base_radius.xyz + rotate(q, local);
    out_normal = rotate(q, n);
    out_palette = segment_palette(in_base_radius.w);
    // Round the stem and along it in circumferences of its base, for the bark's furrows.
    out_bark = vec2(atan(in_pos.z, in_pos.x) * 0.15915494, local.y / (6.2831853 * max(r_base, 1e-4)));
    gl_Position = frame.view_proj * vec4(out_world, 1.0);
}
