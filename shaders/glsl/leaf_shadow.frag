#version 450
#include "leafshape.glsl"

layout(location = 0) in vec2 in_uv;

void main() {
    if (outside_leaf(in_uv)) {
        discard;
    }
}
