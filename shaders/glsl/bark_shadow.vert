#version 450
#include "common.glsl"

layout(location = 0) in vec3 in_pos;
layout(location = 2) in vec4 in_base_radius;
layout(location = 3) in vec4 in_orient;
layout(location = 4) in vec2 in_length_tip;

void main() {
    vec4 q = normalize(in_orient);
    vec3 local = segment_local(in_pos, segment_radius(in_base_radius.w), in_length_tip.y, in_length_tip.x);
    gl_Position = frame.light_view_proj * vec4(in_base_radius.xyz + rotate(q, local), 1.0);
}
