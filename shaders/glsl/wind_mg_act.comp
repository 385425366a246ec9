#version 460
// Activity of the coarser level (padded, ghosts included): the largest of the fine cells' it
// covers, fine ghosts standing for coarse ghosts (`Level::coarser` in sim/src/fluid/pressure.rs).
// Dispatched over the coarser level's padded extent.
#include "wind_mg.glsl"
layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

void main() {
    ivec3 c = ivec3(gl_GlobalInvocationID) - 1;
    ivec3 cn = ivec3(pc.aux.xyz);
    ivec3 fnn = ivec3(pc.n.xyz);
    if (any(greaterThan(c, cn))) {
        return;
    }
    ivec3 lo;
    ivec3 hi;
    for (int a = 0; a < 3; a++) {
        if (c[a] < 0) {
            lo[a] = -1;
            hi[a] = -1;
        } else if (c[a] >= cn[a]) {
            lo[a] = fnn[a];
            hi[a] = fnn[a];
        } else if (((pc.aux.w >> uint(a)) & 1u) != 0u) {
            lo[a] = 2 * c[a];
            hi[a] = min(2 * c[a] + 1, fnn[a] - 1);
        } else {
            lo[a] = c[a];
            hi[a] = c[a];
        }
    }
    float any_act = 0.0;
    for (int k = lo.z; k <= hi.z; k++) {
        for (int j = lo.y; j <= hi.y; j++) {
            for (int i = lo.x; i <= hi.x; i++) {
                any_act = max(any_act, pool[arr(ACT) + pad_of(ivec3(i, j, k), pc.n.xyz)]);
            }
        }
    }
    pool[coarse_arr(ACT) + pad_of(c, pc.aux.xyz)] = any_act;
}
