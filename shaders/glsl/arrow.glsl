// Flat wind arrows turned towards the camera: vertices 0-5 are the shaft quad, 6-8 the head
// triangle, in the plane that holds the arrow and faces the eye as far as it can. Needs
// common.glsl. A zero vector gives zero-area triangles (nothing drawn).

// (along: 0 to 1 over the shaft, 1 to 2 over the head; across: in half shaft widths)
const vec2 ARROW_SHAPE[9] = vec2[9](
    vec2(0.0, -1.0), vec2(1.0, -1.0), vec2(1.0, 1.0),
    vec2(0.0, -1.0), vec2(1.0, 1.0), vec2(0.0, 1.0),
    vec2(1.0, -3.0), vec2(2.0, 0.0), vec2(1.0, 3.0)
);

// World position of corner `vertex` of the arrow from `tail` along `v` with shaft `width`.
vec3 arrow_corner(vec3 tail, vec3 v, float width, int vertex) {
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
    vec2 s = ARROW_SHAPE[vertex];
    float along = s.x <= 1.0 ? s.x * shaft : shaft + (s.x - 1.0) * head;
    return tail + dir * along + side * (0.5 * width * s.y);
}
