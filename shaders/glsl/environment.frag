#version 450
#include "common.glsl"

// Sky and ground in one pass: each pixel's view ray either meets the ground plane (y = 0),
// shaded as a meadow that receives the trees' shadows, or goes on into the sky.

layout(location = 0) in vec2 in_ndc;
layout(location = 0) out vec4 out_color;

// A value in [0, 1) per integer lattice point (an integer hash: far cheaper than sin()).
float hash(vec2 p) {
    uvec2 q = uvec2(ivec2(p)) * uvec2(1597334673u, 3812015801u);
    uint n = (q.x ^ q.y) * 1597334673u;
    return float(n >> 8) * (1.0 / 16777216.0);
}

// Smooth value noise in [0, 1].
float noise(vec2 p) {
    vec2 i = floor(p);
    vec2 f = fract(p);
    vec2 u = f * f * (3.0 - 2.0 * f);
    return mix(mix(hash(i), hash(i + vec2(1, 0)), u.x), mix(hash(i + vec2(0, 1)), hash(i + vec2(1, 1)), u.x), u.y);
}

void main() {
    // Reversed depth: ndc z = 1 is the near plane.
    vec4 near = frame.inv_view_proj * vec4(in_ndc, 1.0, 1.0);
    vec3 eye = frame.camera_pos.xyz;
    vec3 dir = normalize(near.xyz / near.w - eye);
    if (dir.y >= 0.0 || eye.y <= 0.0) {
        out_color = vec4(sky(dir), 1.0);
        return;
    }
    float t = -eye.y / dir.y;
    vec3 world = eye + dir * t;
    // Patchy meadow: value noise at two scales.
    float patches = 0.65 * noise(world.xz * 0.35) + 0.35 * noise(world.xz * 1.7);
    vec3 albedo = frame.ground_color.rgb * mix(0.8, 1.15, patches);
    vec3 c = shade(albedo, vec3(0.0, 1.0, 0.0), world, 0.0);
    // Fade into the sky towards the horizon.
    float d = length(world.xz - eye.xz) / frame.params.z;
    out_color = vec4(mix(c, sky(vec3(dir.x, 0.0, dir.z)), smoothstep(0.3, 1.0, d)), 1.0);
}
