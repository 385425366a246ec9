#version 450
#include "common.glsl"

// Card corner in [0,1]^2: u across the blade, v from the stalk to the tip.
layout(location = 0) in vec2 in_uv;
// Per leaf (sylva_shaders::LeafInstance).
layout(location = 2) in vec4 in_pos_length;   // attachment point xyz, blade length
layout(location = 3) in vec4 in_orient;       // unit quaternion (snorm16): +y along the blade, +z normal
layout(location = 4) in vec2 in_width_shade;  // blade width; palette entry + colour variation in [0, 1)

layout(location = 0) out vec3 out_world;
layout(location = 1) out vec3 out_normal;
layout(location = 2) out vec2 out_uv;
layout(location = 3) out float out_shade;
layout(location = 4) flat out uint out_palette;

void main() {
    vec4 q = normalize(in_orient);
    vec3 local = vec3((in_uv.x - 0.5) * in_width_shade.x, in_uv.y * in_pos_length.w, 0.0);
    out_world = in_pos_length.xyz + rotate(q, local);
    out_normal = rotate(q, vec3(0.0, 0.0, 1.0));
    out_uv = in_uv;
    out_shade = fract(in_width_shade.y);
    out_palette = uint(in_width_shade.y);
    gl_Position = frame.view_proj * vec4(out_world, 1.0);
}
