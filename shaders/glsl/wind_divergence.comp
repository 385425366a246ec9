#version 460
// Divergence of the advected and forced field at each fluid cell, the right-hand side of the
// pressure equation (paper 004, Eq. 9): d = Σ_axes (v⁺ − v⁻) / h; 0 at solid cells.
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
    precise float dv = (vel_out[u + 1u] - vel_out[u]) * pc.inv_h.x
        + (vel_out[v + uint(n.x)] - vel_out[v]) * pc.inv_h.y
        + (vel_out[w + uint(n.x * n.y)] - vel_out[w]) * pc.inv_h.z;
    div[cell_index(c)] = dv * act[pad_index(c)];
}
