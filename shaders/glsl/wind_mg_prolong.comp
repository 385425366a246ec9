#version 460
// Adds the coarser level's correction (opnd.y), constant over each coarse cell's children, to
// the fine level's x (opnd.x) at fluid cells (`prolong_add` in sim/src/fluid/pressure.rs).
// Dispatched over the fine level's cells.
#include "wind_mg.glsl"
layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

void main() {
    if (skip()) {
        return;
    }
    ivec3 c = ivec3(gl_GlobalInvocationID);
    if (!inside(c, pc.n.xyz)) {
        return;
    }
    ivec3 parent = c;
    for (int a = 0; a < 3; a++) {
        if (((pc.aux.w >> uint(a)) & 1u) != 0u) {
            parent[a] = c[a] / 2;
        }
    }
    uint f = pad_of(c, pc.n.xyz);
    pool[pc.opnd.x + f] += pool[arr(FLUID) + f] * pool[pc.opnd.y + pad_of(parent, pc.aux.xyz)];
}
