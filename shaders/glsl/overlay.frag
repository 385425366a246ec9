#version 450

layout(set = 0, binding = 2) uniform sampler2D font_atlas;
layout(location = 0) in vec2 in_uv;
layout(location = 1) in vec4 in_color;
layout(location = 0) out vec4 out_color;

// Glyph coverage from the atlas; solid shapes use a fully covered texel.
void main() {
    float coverage = texture(font_atlas, in_uv).r;
    out_color = vec4(in_color.rgb, in_color.a * coverage);
}
