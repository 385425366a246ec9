#version 450

layout(location = 0) in float in_speed;
layout(location = 0) out vec4 out_color;

// Unlit, so the field reads the same in sun and shade: blue (calm) through yellow to red
// (the fastest wind on the slice); none of these is a bark, leaf, ground or sky colour.
void main() {
    float t = clamp(in_speed, 0.0, 1.0);
    vec3 calm = vec3(0.10, 0.30, 1.00);
    vec3 mid = vec3(1.00, 0.90, 0.10);
    vec3 fast = vec3(1.00, 0.12, 0.05);
    vec3 c = t < 0.5 ? mix(calm, mid, 2.0 * t) : mix(mid, fast, 2.0 * t - 1.0);
    out_color = vec4(c, 1.0);
}
