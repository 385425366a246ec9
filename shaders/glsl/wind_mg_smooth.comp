#version 460
// One damped-Jacobi sweep of the multigrid smoother on A x = r (`Level::smooth` in
// sim/src/fluid/pressure.rs): out = x + ω D⁻¹ (r − A x), or out = ω D⁻¹ r from x = 0
// (FROM_ZERO). Operands: x (opnd.x), out (opnd.y), r (opnd.z); out is not x (ping-pong).
// The DOT pipeline also sums r · out per workgroup.
#include "wind_mg.glsl"
layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

// Whether this pipeline sums r · out (DOT); a constant so the other pipeline has no barrier.
layout(constant_id = 0) const bool WITH_DOT = false;

void main() {
    if (skip()) {
        return;
    }
    ivec3 c = ivec3(gl_GlobalInvocationID);
    bool in_level = inside(c, pc.n.xyz);
    float dot_term = 0.0;
    if (in_level) {
        uint i = pad_of(c, pc.n.xyz);
        precise float w_inv = pc.inv_h2.w * pool[arr(INV) + i];
        float r = pool[pc.opnd.z + i];
        precise float out_value;
        if ((pc.opnd.w & FROM_ZERO) != 0u) {
            out_value = w_inv * r;
        } else {
            out_value = pool[pc.opnd.x + i] + w_inv * (r - apply_pool(pc.opnd.x, i));
        }
        pool[pc.opnd.y + i] = out_value;
        dot_term = r * out_value;
    }
    if (WITH_DOT) {
        group_sum(dot_term);
    }
}
