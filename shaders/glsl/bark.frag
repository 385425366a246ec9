#version 450
#include "common.glsl"

layout(location = 0) in vec3 in_world;
layout(location = 1) in vec3 in_normal;
layout(location = 2) flat in uint in_palette;
layout(location = 3) in vec2 in_bark;
layout(location = 0) out vec4 out_color;

void main() {
    vec3 n = normalize(in_normal);
    // A little vertical variation so the bark is not flat.
    float grain = 0.9 + 0.1 * sin(in_world.y * 23.0 + in_world.x * 7.0);
    vec3 albedo = frame.palette[2u * in_palette + 1u].rgb * grain * (0.62 + 0.45 * bark_ridges(in_bark));
    out_color = vec4(shade(albedo, n, in_world, 0.1), 1.0);
}
