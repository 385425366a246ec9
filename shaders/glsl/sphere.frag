#version 450
#include "common.glsl"

layout(location = 0) in vec3 in_world;
layout(location = 1) in vec3 in_normal;
layout(location = 0) out vec4 out_color;

void main() {
    vec3 n = normalize(in_normal);
    // Violet: apart from the bark, leaf, ground and sky colours.
    vec3 c = shade(vec3(0.50, 0.22, 0.70), n, in_world, 0.2);
    out_color = vec4(c, 0.55);
}
