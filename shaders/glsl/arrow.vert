#version 450
#include "common.glsl"
#include "arrow.glsl"

// Wind-field arrow (sylva_shaders::WindArrow) built on the CPU, one instance per arrow, no
// vertex buffer.
layout(location = 0) in vec4 in_tail_width;
layout(location = 1) in vec4 in_vector_speed;

layout(location = 0) out float out_speed;

void main() {
    vec3 world = arrow_corner(in_tail_width.xyz, in_vector_speed.xyz, in_tail_width.w, gl_VertexIndex);
    out_speed = in_vector_speed.w;
    gl_Position = frame.view_proj * vec4(world, 1.0);
}
