#version 450
#include "common.glsl"
#include "leafshape.glsl"

layout(location = 0) in vec2 in_uv;
layout(location = 1) flat in uint in_shape;

void main() {
    if (outside_leaf(in_uv, in_shape)) {
        discard;
    }
}
