#version 450
#include "common.glsl"
#include "leafshape.glsl"

layout(location = 0) in vec3 in_world;
layout(location = 1) in vec3 in_normal;
layout(location = 2) in vec2 in_uv;
layout(location = 3) in float in_shade;
layout(location = 4) flat in uint in_palette;
layout(location = 0) out vec4 out_color;

void main() {
    vec4 look = frame.palette[2u * in_palette];
    float coverage = leaf_coverage(in_uv, uint(look.w));
    bool to_coverage = frame.leaves.x > 0.5;
    if (to_coverage ? coverage <= 0.0 : coverage < 0.5) {
        discard;
    }
    // Two-sided: light the face that looks at the camera.
    vec3 n = normalize(in_normal);
    vec3 to_eye = frame.camera_pos.xyz - in_world;
    if (dot(n, to_eye) < 0.0) {
        n = -n;
    }
    vec3 albedo = look.rgb * mix(0.75, 1.2, in_shade);
    // A darker midrib.
    albedo *= 1.0 - 0.25 * smoothstep(0.03, 0.0, abs(in_uv.x - 0.5));
    out_color = vec4(shade(albedo, n, in_world, 0.4), to_coverage ? coverage : 1.0);
}
