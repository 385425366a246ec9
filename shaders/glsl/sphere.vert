#version 450
#include "common.glsl"

// Unit sphere mesh.
layout(location = 0) in vec3 in_pos;
layout(location = 1) in vec3 in_normal;
// Per sphere (sylva_shaders::SphereInstance): centre xyz, radius.
layout(location = 2) in vec4 in_center_radius;

layout(location = 0) out vec3 out_world;
layout(location = 1) out vec3 out_normal;

void main() {
    out_world = in_center_radius.xyz + in_pos * in_center_radius.w;
    out_normal = in_normal;
    gl_Position = frame.view_proj * vec4(out_world, 1.0);
}
