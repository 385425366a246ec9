#version 450
#include "common.glsl"

// A wind ball (a Gaussian ball of force in the fluid wind), drawn at its Gaussian radius:
// translucent cyan, apart from the collider's violet and the bark, leaf, ground and sky colours.
layout(location = 0) in vec3 in_world;
layout(location = 1) in vec3 in_normal;
layout(location = 0) out vec4 out_color;

void main() {
    vec3 n = normalize(in_normal);
    vec3 c = shade(vec3(0.25, 0.80, 0.90), n, in_world, 0.6);
    out_color = vec4(c, 0.35);
}
