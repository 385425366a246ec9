#version 460
// Cell-centred velocity, the mean of each cell's two faces per axis: advection (paper 004,
// Eq. 4) takes the components across a face from the two cells beside it.
#include "wind_common.glsl"

void main() {
    ivec3 c = ivec3(gl_GlobalInvocationID);
    ivec3 n = cells();
    if (any(greaterThanEqual(c, n))) {
        return;
    }
    uint u = face_index(0, c);
    uint v = face_index(1, c);
    uint w = face_index(2, c);
    centre[cell_index(c)] = vec4(0.5 * (vel_in[u] + vel_in[u + 1u]),
                                 0.5 * (vel_in[v] + vel_in[v + uint(n.x)]),
                                 0.5 * (vel_in[w] + vel_in[w + uint(n.x * n.y)]),
                                 0.0);
}
