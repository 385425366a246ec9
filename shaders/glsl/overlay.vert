#version 450
#include "common.glsl"

// Overlay vertex (sylva_shaders::OverlayVertex): position in pixels from the top left,
// atlas coordinates, colour.
layout(location = 0) in vec2 in_pos;
layout(location = 1) in vec2 in_uv;
layout(location = 2) in vec4 in_color;

layout(location = 0) out vec2 out_uv;
layout(location = 1) out vec4 out_color;

void main() {
    out_uv = in_uv;
    out_color = in_color;
    gl_Position = vec4(in_pos * frame.viewport.zw * 2.0 - 1.0, 0.0, 1.0);
}
