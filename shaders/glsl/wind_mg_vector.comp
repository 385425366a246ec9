#version 460
// The conjugate-gradient vector updates on the fine level (`PressureState::pcg` in
// sim/src/fluid/pressure.rs), with α, β and the mean read from the GPU-side scalars. b, r, d,
// q are at the pool offsets in aux; the pressure p is the solver's current pressure buffer.
#include "wind_mg.glsl"
layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

const uint OP_RHS = 0u;       // b = −divergence
const uint OP_RESIDUAL = 1u;  // r = b − A p (p = 0 and r = 0 when b = 0)
const uint OP_SUB_MEAN = 2u;  // v −= mean at fluid cells, v at opnd.x
const uint OP_DIRECTION = 3u; // d = z (first iteration) or z + β d, z at opnd.x
const uint OP_APPLY = 4u;     // q = A d
const uint OP_STEP = 5u;      // p += α d, r −= α q

void main() {
    if (skip()) {
        return;
    }
    ivec3 c = ivec3(gl_GlobalInvocationID);
    if (!inside(c, pc.n.xyz)) {
        return;
    }
    uint i = pad_of(c, pc.n.xyz);
    uint b = pc.aux.x;
    uint r = pc.aux.y;
    uint d = pc.aux.z;
    uint q = pc.aux.w;
    uint o = op();
    if (o == OP_RHS) {
        pool[b + i] = -div[uint(c.x) + pc.n.x * (uint(c.y) + pc.n.y * uint(c.z))];
    } else if (o == OP_RESIDUAL) {
        if (s.b2 == 0.0) {
            p[i] = 0.0;
            pool[r + i] = 0.0;
        } else {
            pool[r + i] = pool[b + i] - apply_p(i);
        }
    } else if (o == OP_SUB_MEAN) {
        pool[pc.opnd.x + i] -= s.mean * pool[arr(FLUID) + i];
    } else if (o == OP_DIRECTION) {
        float z = pool[pc.opnd.x + i];
        pool[d + i] = s.iterations == 0u ? z : z + s.beta * pool[d + i];
    } else if (o == OP_APPLY) {
        pool[q + i] = apply_pool(d, i);
    } else if (o == OP_STEP) {
        float a = s.alpha;
        p[i] += a * pool[d + i];
        pool[r + i] -= a * pool[q + i];
    }
}
