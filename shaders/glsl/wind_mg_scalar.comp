#version 460
// Second pass of a dot product (the opnd.x partial sums of wind_mg_dot.comp), and what the
// conjugate-gradient loop (`PressureState::pcg` in sim/src/fluid/pressure.rs) does with it, in
// one invocation: the norms, the convergence test, β, α, the breakdown test and the mean.
#include "wind_mg.glsl"
layout(local_size_x = 256) in;

const uint OP_COUNT = 0u; // fluid cells (fluid · fluid)
const uint OP_B2 = 1u;    // |b|²; done at once when b = 0 (or not finite)
const uint OP_R2 = 2u;    // |r|², convergence test; INCREMENT: after an iteration
const uint OP_RZ = 3u;    // r·z: β = r·z / the last r·z
const uint OP_DQ = 4u;    // d·q: α = r·z / d·q, or stop (breakdown)
const uint OP_MEAN = 5u;  // mean over the fluid cells

shared float part[256];

void main() {
    uint li = gl_LocalInvocationIndex;
    float v = 0.0;
    for (uint k = li; k < pc.opnd.x; k += 256u) {
        v += partial[k];
    }
    part[li] = v;
    barrier();
    for (uint h = 128u; h > 0u; h >>= 1u) {
        if (li < h) {
            part[li] += part[li + h];
        }
        barrier();
    }
    if (li != 0u) {
        return;
    }
    float sum = part[0];
    uint o = op();
    if (o == OP_COUNT) {
        s.count = sum;
        return;
    }
    if (o == OP_B2) {
        s.b2 = sum;
        if (sum == 0.0) {
            s.done = 1u;
        } else if (isnan(sum) || isinf(sum)) {
            s.done = 2u;
        }
        return;
    }
    if (s.done != 0u) {
        return;
    }
    if (o == OP_R2) {
        s.r2 = sum;
        if ((pc.opnd.w & INCREMENT) != 0u) {
            s.iterations += 1u;
        }
        if (isnan(sum) || isinf(sum)) {
            s.done = 2u;
        } else if (sqrt(sum) <= s.tol * sqrt(s.b2)) {
            s.done = 1u;
        } else if (s.iterations >= s.max_iterations) {
            s.done = 2u;
        }
    } else if (o == OP_RZ) {
        s.beta = s.iterations == 0u ? 0.0 : sum / s.rz;
        s.rz = sum;
    } else if (o == OP_DQ) {
        if (!(sum > 0.0) || isinf(sum)) {
            s.done = 3u;
        } else {
            s.alpha = s.rz / sum;
        }
    } else if (o == OP_MEAN) {
        s.mean = sum / max(s.count, 1.0);
    }
}
