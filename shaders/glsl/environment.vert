#version 450

layout(location = 0) out vec2 out_ndc;

// One triangle covering the screen at infinite depth (0 with reversed depth), so the depth
// test keeps it only where no tree was drawn.
void main() {
    vec2 p = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2) * 2.0 - 1.0;
    out_ndc = p;
    gl_Position = vec4(p, 0.0, 1.0);
}
