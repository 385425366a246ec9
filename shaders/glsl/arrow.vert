#version 450
#include "common.glsl"

// Wind-field arrow (sylva_shaders::WindArrow), one instance per arrow, no vertex buffer:
// vertices 0-5 are the shaft quad, 6-8 the head triangle, in a plane that holds the arrow and
// faces the camera as far as it can.
layout(location = 0) in vec4 in_tail_width;
layout(location = 1) in vec4 in_vector_speed;

layout(location = 0) out float out_speed;

// (along the arrow [0, 1] of the way to the head start or the tip, across in half shaft widths)
const vec2 SHAPE[9] = vec2[9](
    vec2(0.0, -1.0), vec2(1.0, -1.0), vec2(1.0, 1.0),
    vec2(0.0, -1.0), vec2(1.0, 1.0), vec2(0.0, 1.0),
    vec2(1.0, -3.0), vec2(2.0, 0.0), vec2(1.0, 3.0)
);

void main() {
    vec3 tail = in_tail_width.xyz;
    float width = in_tail_width.w;
    vec3 v = in_vector_speed.xyz;
    float len = length(v);
    vec3 dir = len > 0.0 ? v / len : vec3(1.0, 0.0, 0.0);
    // The head: at most 40 % of the arrow, at most three shaft widths long.
    float head = min(0.4 * len, 3.0 * width);
    float shaft = len - head;
    vec3 to_eye = frame.camera_pos.xyz - (tail + 0.5 * v);
    vec3 side = cross(dir, to_eye);
    if (dot(side, side) < 1e-8 * max(dot(to_eye, to_eye), 1e-8)) {
        // Seen end on: any side will do.
        side = cross(dir, abs(dir.y) < 0.9 ? vec3(0.0, 1.0, 0.0) : vec3(1.0, 0.0, 0.0));
    }
    side = normalize(side);
    vec2 s = SHAPE[gl_VertexIndex];
    float along = s.x <= 1.0 ? s.x * shaft : shaft + (s.x - 1.0) * head;
    vec3 world = tail + dir * along + side * (0.5 * width * s.y);
    out_speed = in_vector_speed.w;
    gl_Position = frame.view_proj * vec4(world, 1.0);
}
