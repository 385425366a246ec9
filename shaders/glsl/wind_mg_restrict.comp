#version 460
// The fine level's residual r − A x (x at opnd.x, r at opnd.y), averaged over each coarse
// cell's children into the coarser level's right-hand side (`restrict` in
// sim/src/fluid/pressure.rs). Dispatched over the coarser level's cells.
#include "wind_mg.glsl"
layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

void main() {
    if (skip()) {
        return;
    }
    ivec3 cc = ivec3(gl_GlobalInvocationID);
    if (!inside(cc, pc.aux.xyz)) {
        return;
    }
    ivec3 fnn = ivec3(pc.n.xyz);
    ivec3 lo = cc;
    ivec3 hi = cc;
    for (int a = 0; a < 3; a++) {
        if (((pc.aux.w >> uint(a)) & 1u) != 0u) {
            lo[a] = 2 * cc[a];
            hi[a] = min(2 * cc[a] + 1, fnn[a] - 1);
        }
    }
    precise float sum = 0.0;
    int count = 0;
    for (int k = lo.z; k <= hi.z; k++) {
        for (int j = lo.y; j <= hi.y; j++) {
            for (int i = lo.x; i <= hi.x; i++) {
                uint f = pad_of(ivec3(i, j, k), pc.n.xyz);
                sum += pool[pc.opnd.y + f] - apply_pool(pc.opnd.x, f);
                count++;
            }
        }
    }
    uint ci = pad_of(cc, pc.aux.xyz);
    pool[coarse_arr(R) + ci] = pool[coarse_arr(FLUID) + ci] * sum / float(count);
}
