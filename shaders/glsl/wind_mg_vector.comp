#version 460
// The conjugate-gradient vector updates on the fine level (`PressureState::pcg` in
// sim/src/fluid/pressure.rs), with α, β and the mean read from the GPU-side scalars. b, r, d,
// q are at the pool offsets in aux; the pressure p is the solver's current pressure buffer.
#include "wind_mg.glsl"
layout(local_size_x = 16, local_size_y = 4, local_size_z = 8) in;

// Whether this pipeline sums d·q or r·r (DOT); a constant so the other pipeline has no barrier.
layout(constant_id = 0) const bool WITH_DOT = false;

const uint OP_RHS = 0u;       // b = −divergence
const uint OP_RESIDUAL = 1u;  // r = b − A p (p = 0 and r = 0 when b = 0)
const uint OP_SUB_MEAN = 2u;  // v −= mean at fluid cells, v at opnd.x
const uint OP_DIRECTION = 3u; // d = z (first iteration) or z + β d, z at opnd.x
const uint OP_APPLY = 4u;     // q = A d (DOT: and d·q per workgroup)
const uint OP_STEP = 5u;      // p += α d, r −= α q (DOT: and r·r per workgroup)

void main() {
    if (skip()) {
        return;
    }
    ivec3 c = ivec3(gl_GlobalInvocationID);
    bool in_level = inside(c, pc.n.xyz);
    float dot_term = 0.0;
    if (in_level) {
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
            float qv = apply_pool(d, i);
            pool[q + i] = qv;
            dot_term = pool[d + i] * qv;
        } else if (o == OP_STEP) {
            float a = s.alpha;
            p[i] += a * pool[d + i];
            float rv = pool[r + i] - a * pool[q + i];
            pool[r + i] = rv;
            dot_term = rv * rv;
        }
    }
    if (WITH_DOT) {
        group_sum(dot_term);
    }
}
