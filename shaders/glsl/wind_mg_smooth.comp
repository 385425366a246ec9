#version 460
// One damped-Jacobi sweep of the multigrid smoother on A x = r (`Level::smooth` in
// sim/src/fluid/pressure.rs): out = x + ω D⁻¹ (r − A x), or out = ω D⁻¹ r from x = 0
// (FROM_ZERO). Operands: x (opnd.x), out (opnd.y), r (opnd.z); out is not x (ping-pong).
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
    uint i = pad_of(c, pc.n.xyz);
    precise float w_inv = pc.inv_h2.w * pool[arr(INV) + i];
    if ((pc.opnd.w & FROM_ZERO) != 0u) {
        pool[pc.opnd.y + i] = w_inv * pool[pc.opnd.z + i];
    } else {
        precise float x = pool[pc.opnd.x + i] + w_inv * (pool[pc.opnd.z + i] - apply_pool(pc.opnd.x, i));
        pool[pc.opnd.y + i] = x;
    }
}
