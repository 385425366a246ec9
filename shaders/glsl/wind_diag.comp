#version 460
// The pressure equation's diagonal (paper 004, Eq. 9), as `Level::new` builds it on the CPU:
// at each fluid cell, Σ over its active faces of 1/h²; stored inverted (0 at solid cells and
// at fluid cells with no active face, so Jacobi leaves their pressure at 0). Also zeroes the
// pressure at solid cells, as the CPU does when it rebuilds its operator.
#include "wind_common.glsl"

void main() {
    ivec3 c = ivec3(gl_GlobalInvocationID);
    if (any(greaterThanEqual(c, cells()))) {
        return;
    }
    uint p = pad_index(c);
    float inv = 0.0;
    if (act[p] != 0.0) {
        // Same order as the CPU: x, then y, then z.
        precise float sum = 0.0;
        for (int a = 0; a < 3; a++) {
            uint s = pad_stride(a);
            sum += pc.inv_h2[a] * (act[p - s] + act[p + s]);
        }
        inv = sum > 0.0 ? 1.0 / sum : 0.0;
    }
    inv_diag[cell_index(c)] = inv;
    p_in[p] *= act[p];
}
