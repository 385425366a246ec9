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

void main() {
    vec4 q = normalize(in_orient);
    vec3 local = segment_local(in_pos, in_base_radius.w, in_length_tip.y, in_length_tip.x);
    // The taper tilts the side's normal along the axis; a dome's normal is its own.
    float slope = (in_base_radius.w - in_length_tip.y) / max(in_length_tip.x, 1e-6);
    vec3 n = in_normal.y == 0.0 ? normalize(vec3(in_normal.x, slope, in_normal.z)) : in_normal;
    out_world = in_base_radius.xyz + rotate(q, local);
    out_normal = rotate(q, n);
    gl_Position = frame.view_proj * vec4(out_world, 1.0);
}
