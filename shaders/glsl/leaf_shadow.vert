#version 450
#include "common.glsl"

layout(location = 0) in vec2 in_uv;
layout(location = 2) in vec4 in_pos_length;
layout(location = 3) in vec4 in_orient;
layout(location = 4) in vec2 in_width_shade;

layout(location = 0) out vec2 out_uv;
layout(location = 1) flat out uint out_shape;

void main() {
    vec4 q = normalize(in_orient);
    // The shadow pass draws every other leaf (twice the instance stride), each sqrt(2) larger
    // so the foliage casts the same area of shadow.
    const float grow = 1.41421356;
    vec3 local = vec3((in_uv.x - 0.5) * in_width_shade.x, in_uv.y * in_pos_length.w, 0.0) * grow;
    out_uv = in_uv;
    out_shape = uint(frame.palette[2u * uint(in_width_shade.y)].w);
    gl_Position = frame.light_view_proj * vec4(in_pos_length.xyz + rotate(q, local), 1.0);
}
