#version 460
// One Jacobi iteration on the pressure equation (paper 004, Eq. 9; the paper runs 4 from the
// previous step's pressure): p = (Σ_axes (p[c+s] + p[c−s]) / h² − d) / diag. Pressure is 0 at
// ghosts and solid cells, so every neighbour is added and the diagonal alone (see
// wind_diag.comp) tells which faces are active. Reads `p_in`, writes `p_out` (ping-pong).
#include "wind_common.glsl"

void main() {
    ivec3 c = ivec3(gl_GlobalInvocationID);
    if (any(greaterThanEqual(c, cells()))) {
        return;
    }
    uint p = pad_index(c);
    uint sy = pad_stride(1);
    uint sz = pad_stride(2);
    precise float nb = pc.inv_h2.x * (p_in[p - 1u] + p_in[p + 1u])
        + pc.inv_h2.y * (p_in[p - sy] + p_in[p + sy])
        + pc.inv_h2.z * (p_in[p - sz] + p_in[p + sz]);
    uint cell = cell_index(c);
    precise float r = (nb - div[cell]) * inv_diag[cell];
    p_out[p] = r;
}
